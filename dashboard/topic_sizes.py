"""Sizes, offsets and message counts on the Topics and Broker pages (issue 30 item 1): read from the brokers in the
background (core.kafka.offsets.read_topic_sizes: one refresh = ListOffsets per leader and spec, describeLogDirs per
broker), shared by every session of a connection, read again after TTL seconds (RETRY after a failure). A page never
waits longer than WAIT seconds: it draws the last read (or says one is under way) and the next rerun shows the new.
Without `bootstrap` the columns say what they need (core.topic_sizes.NO_BOOTSTRAP).

Pages draw; what the figures mean is core.topic_sizes'.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from core.errors import KeelError
from core.model import ClusterSnapshot
from core.topic_sizes import NO_BOOTSTRAP, TopicSizes, biggest_first, broker_share
from dashboard import ui

MEMO = "topic_sizes"  # Connection.memo: the reader
TTL = 30.0  # s between two reads at least: offsets move with every produce
SPACING = 10  # ... and at least 10x the last read's time: a refresh of 100,000 partitions costs ~5 s of client CPU
# (bench/topic_sizes.py), so the background reads never take more than a tenth of a core
RETRY = 15.0  # s after a failed read
WAIT = 1.5  # s a page waits for a read in flight when it has nothing to show yet
TIMEOUT = 10.0  # s per request

LIST_COLUMNS = ["Size", "On disk", "Messages", "Newest"]  # added to the Topics list


@dataclass(frozen=True)
class Shown:
    """What a page draws: the last read (or None) and a note (why none, a read under way, a failure)."""

    sizes: TopicSizes | None
    note: str | None
    every: float = TTL  # s between two reads


def _leaders(snap: ClusterSnapshot) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition): p.leader for t in snap.topics for p in t.partitions}


class Reader:
    """The latest TopicSizes of one cluster, read in a background thread. Thread-safe."""

    def __init__(self, cluster, *, ttl: float = TTL, retry: float = RETRY, read=None):
        self.cluster, self.ttl, self.retry = cluster, ttl, retry
        self._read_fn = read or self._read_brokers
        self._lock = threading.Condition()
        self._latest: TopicSizes | None = None
        self._error: str | None = None
        self._ended = 0.0
        self._took = 0.0  # s the last read took
        self._running = False

    @property
    def every(self) -> float:
        """Seconds between two reads."""
        return max(self.ttl, SPACING * self._took)

    def _read_brokers(self, leaders: dict[tuple[str, int], int]) -> TopicSizes:
        from core.kafka.admin import KafkaAdmin  # kafka-python is loaded only where a cluster has brokers to ask
        from core.kafka.offsets import read_topic_sizes

        with KafkaAdmin.for_cluster(self.cluster, timeout=min(TIMEOUT, self.cluster.connect_timeout * 2)) as admin:
            return read_topic_sizes(admin, leaders)

    def get(self, snap: ClusterSnapshot, *, wait: float = WAIT, force: bool = False) -> Shown:
        with self._lock:
            age = time.monotonic() - self._ended
            due = force or self._ended == 0.0 or age >= (self.every if self._error is None else self.retry)
            if due and not self._running:
                self._running = True
                threading.Thread(target=self._run, args=(_leaders(snap),), daemon=True,
                                 name=f"keel-topic-sizes-{self.cluster.name}").start()
            if self._running and self._latest is None and self._error is None:
                self._lock.wait_for(lambda: not self._running, timeout=wait)
            latest, error, running = self._latest, self._error, self._running
        if latest is None:
            return Shown(None, f"Sizes could not be read through {self.cluster.bootstrap}: {error}" if error else
                         f"Sizes are being read through {self.cluster.bootstrap}…" if running else None)
        note = f"The last read failed ({error}); showing the one before." if error else None
        return Shown(latest, note, self.every)

    def _run(self, leaders: dict[tuple[str, int], int]) -> None:
        started = time.monotonic()
        try:
            got, error = self._read_fn(leaders), None
        except KeelError as e:
            got, error = None, e.message
        except Exception as e:  # a note on the page, never a dead thread
            got, error = None, f"{type(e).__name__}: {e}"
        with self._lock:
            if got is not None:
                self._latest = got
            self._error, self._ended, self._running = error, time.monotonic(), False
            self._took = self._ended - started
            self._lock.notify_all()


def shown(conn, cluster, snap: ClusterSnapshot, *, force: bool = False, wait: float = WAIT) -> Shown:
    """The sizes to draw for `cluster` (a keel.toml cluster), or why there are none."""
    if not getattr(cluster, "bootstrap", None):
        return Shown(None, NO_BOOTSTRAP)
    memo = conn.memo(MEMO)
    reader = memo.get(cluster.bootstrap)
    if reader is None:
        reader = memo.setdefault(cluster.bootstrap, Reader(cluster))
    return reader.get(snap, force=force, wait=wait)


def _when(ms: int | None) -> str:
    return "" if ms is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The size columns right after Health: visible without scrolling at 900 px."""
    rest = [c for c in df.columns if c not in LIST_COLUMNS]
    at = rest.index("Health") + 1 if "Health" in rest else 1
    return df[rest[:at] + LIST_COLUMNS + rest[at:]]


def add_list_columns(table: pd.DataFrame, sizes: TopicSizes | None, missing: str = "needs bootstrap"
                     ) -> pd.DataFrame:
    """The Topics list with Size / On disk / Messages / Newest, biggest topics first (unknown: empty cells)."""
    out = table.copy()
    if sizes is None:  # the cells say what they need (the caption says it in full)
        for c in LIST_COLUMNS:
            out[c] = missing
        return _ordered(out)
    totals = sizes.topics
    out["Size"] = out["Topic"].map(lambda t: totals[t].size if t in totals else None)
    out["On disk"] = out["Topic"].map(lambda t: totals[t].on_disk if t in totals else None)
    out["Messages"] = out["Topic"].map(lambda t: totals[t].messages if t in totals else None)
    out["Newest"] = out["Topic"].map(lambda t: _when(totals[t].newest_timestamp) if t in totals else "")
    order = {t.topic: i for i, t in enumerate(biggest_first(totals))}
    out["_order"] = out["Topic"].map(lambda t: order.get(t, len(order)))
    out = out.sort_values(["_order", "Topic"], kind="stable").drop(columns="_order").reset_index(drop=True)
    return _ordered(out)


HELP = {
    "Size": "One copy: the largest replica of each partition, summed (describeLogDirs, as kafka-log-dirs --describe "
            "reports it)",
    "On disk": "Every replica's bytes, summed",
    "Messages": "Latest minus earliest offset, summed over the partitions (ListOffsets, as GetOffsetShell --time -1 / "
                "-2 prints them). A compacted or transactional topic holds fewer records",
    "Newest": "The highest record timestamp (ListOffsets MAX_TIMESTAMP, KIP-734, Kafka 3.0+)",
}


def missing_label(cluster, s: Shown) -> str:
    """What an empty size cell says."""
    if not getattr(cluster, "bootstrap", None):
        return "needs bootstrap"
    return "unknown" if s.note and "could not" in s.note else "reading…"


def column_config(known: bool) -> dict:
    """st.dataframe column_config of the size columns: bytes and counts when read, text saying why when not."""
    if not known:
        return {c: st.column_config.TextColumn(c, help=HELP[c]) for c in LIST_COLUMNS}
    return {"Size": st.column_config.NumberColumn("Size", format="bytes", help=HELP["Size"]),
            "On disk": st.column_config.NumberColumn("On disk", format="bytes", help=HELP["On disk"]),
            "Messages": st.column_config.NumberColumn("Messages", format="localized", help=HELP["Messages"]),
            "Newest": st.column_config.TextColumn("Newest", help=HELP["Newest"])}


def partition_columns(parts: pd.DataFrame, sizes: TopicSizes | None, topic: str) -> pd.DataFrame:
    """A topic's partition table with its offsets, messages, sizes and newest timestamp per partition."""
    out = parts.copy()
    mine = {p.partition: p for p in sizes.partitions_of(topic)} if sizes is not None else {}

    def col(f):
        return out["Partition"].map(lambda n: f(mine[n]) if n in mine else None)
    out["Earliest"] = col(lambda p: p.earliest)
    out["Latest"] = col(lambda p: p.latest)
    out["Messages"] = col(lambda p: p.messages)
    out["Size"] = col(lambda p: p.size)
    out["Replica bytes"] = col(lambda p: ", ".join(f"{b}: {n:,}" for b, n in p.replicas) or (p.error or ""))
    out["Newest"] = col(lambda p: _when(p.newest_timestamp))
    return out


def partition_config() -> dict:
    return {"Earliest": st.column_config.NumberColumn(format="%d", help="Log start offset (GetOffsetShell --time -2)"),
            "Latest": st.column_config.NumberColumn(format="%d", help="Log end offset (GetOffsetShell --time -1)"),
            "Messages": st.column_config.NumberColumn(format="localized", help="Latest minus earliest"),
            "Size": st.column_config.NumberColumn(format="bytes", help="The largest replica"),
            "Replica bytes": st.column_config.TextColumn(help="broker: bytes of its replica (describeLogDirs)"),
            "Newest": st.column_config.TextColumn(help=HELP["Newest"])}


def topic_metrics(row, s: Shown, topic: str) -> None:
    """Size, on disk, messages and newest of one topic, in the topic's metric row."""
    t = s.sizes.topics.get(topic) if s.sizes is not None else None
    if t is None:
        ui.metric(row, "Size", "—", help=s.note or "not read yet")
        return
    ui.metric(row, "Size", human_bytes(t.size), help=HELP["Size"])
    ui.metric(row, "On disk", human_bytes(t.on_disk), help=HELP["On disk"])
    ui.metric(row, "Messages", f"{t.messages:,}", help=HELP["Messages"] + (
        f"; {t.unknown:,} partition(s) not read" if t.unknown else ""))
    ui.metric(row, "Newest", _when(t.newest_timestamp) or "—",
              help=s.sizes.timestamps_note or HELP["Newest"])


def broker_metric(row, s: Shown, broker: int) -> None:
    """The bytes a broker holds (describeLogDirs) and its share of every replica's bytes, in its metric row."""
    held, share = broker_share(s.sizes, broker) if s.sizes is not None else (None, None)
    if held is None:
        why = s.note or ("the broker did not answer describeLogDirs (down?)" if s.sizes is not None else
                         "not read yet")
        ui.metric(row, "Bytes", "—", help=why)
        return
    ui.metric(row, "Bytes", human_bytes(held), delta=f"{share:.1%} of all", delta_color="gray", delta_arrow="off",
              help="Bytes of the replicas in its log directories (describeLogDirs, as kafka-log-dirs --describe "
                   "reports them), and its share of every broker's")


def human_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return str(n)


def caption(s: Shown) -> str:
    """One line under a table: when the figures were read and what cost, or why there are none."""
    if s.sizes is None:
        return s.note or ""
    r = s.sizes
    cost = ", ".join(f"{n:,} {k}" for k, n in r.requests.items())
    parts = [f"Sizes and offsets read at {time.strftime('%H:%M:%S UTC', time.gmtime(r.read_at))} ({cost}), "
             f"again every {s.every:.0f} s."]
    if r.timestamps_note:
        parts.append(f"Newest: {r.timestamps_note}.")
    parts += list(r.problems)
    if s.note:
        parts.append(s.note)
    return " ".join(parts)


__all__ = ["LIST_COLUMNS", "column_config", "missing_label", "Reader", "Shown", "add_list_columns", "caption",
           "human_bytes", "partition_columns", "partition_config", "shown", "topic_metrics", "broker_metric"]
