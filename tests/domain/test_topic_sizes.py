"""core.topic_sizes (pure): per partition, per topic and per broker figures from one refresh's answers; the page
helpers' ordering and the background reader's caching (dashboard.topic_sizes, with a reader function instead of the
brokers: the real read is tests/kafka/test_topic_sizes_real.py)."""

from __future__ import annotations

import threading
import time

import pandas as pd

from core.topic_sizes import (NO_MAX_TIMESTAMP, Offsets, biggest_first, broker_share, build)

OFFSETS = {
    ("a", 0): Offsets(10, 30, 1_700_000_029_000, 29),
    ("a", 1): Offsets(0, 3, 1_700_000_009_000, 1),
    ("a", 2): Offsets(0, 0),  # empty: no newest
    ("b", 0): Offsets(None, None, error="no leader"),
    ("c", 0): Offsets(0, 1000),
}
REPLICAS = {(1, "a", 0): 500, (2, "a", 0): 480, (2, "a", 1): 100, (3, "a", 1): 100, (3, "a", 2): 0, (1, "a", 2): 0,
            (1, "b", 0): 70, (2, "c", 0): 300, (3, "c", 0): 300}


def test_partitions_topics_and_brokers_add_up():
    s = build(OFFSETS, REPLICAS, partitions=list(OFFSETS) + [("d", 0)], read_at=5.0,
              requests={"ListOffsets": 9, "DescribeLogDirs": 3})
    a0 = s.partitions[("a", 0)]
    assert (a0.earliest, a0.latest, a0.messages, a0.size, a0.replicas) == (10, 30, 20, 500, ((1, 500), (2, 480)))
    assert (a0.newest_timestamp, a0.newest_offset) == (1_700_000_029_000, 29)
    b0 = s.partitions[("b", 0)]
    assert (b0.messages, b0.size, b0.error) == (None, 70, "no leader")  # unknown, not zero; its bytes still known
    d0 = s.partitions[("d", 0)]  # asked for, never answered
    assert (d0.messages, d0.size, d0.replicas, d0.error) == (None, None, (), "not read")
    a = s.topics["a"]
    assert (a.partitions, a.messages, a.size, a.on_disk, a.newest_timestamp, a.unknown) == \
        (3, 23, 600, 1180, 1_700_000_029_000, 0)
    assert (s.topics["b"].messages, s.topics["b"].unknown) == (0, 1)
    assert s.topics["c"].newest_timestamp is None  # brokers that cannot tell, or an empty topic
    assert dict(s.brokers) == {1: 570, 2: 880, 3: 400}
    assert [p.partition for p in s.partitions_of("a")] == [0, 1, 2]
    assert s.requests == {"ListOffsets": 9, "DescribeLogDirs": 3}


def test_biggest_first_then_most_messages_then_name():
    s = build({("x", 0): Offsets(0, 5), ("y", 0): Offsets(0, 9), ("z", 0): Offsets(0, 1), ("w", 0): Offsets(0, 9)},
              {(1, "x", 0): 10, (1, "y", 0): 10, (1, "z", 0): 50, (1, "w", 0): 10})
    assert [t.topic for t in biggest_first(s.topics)] == ["z", "w", "y", "x"]


def test_broker_share_and_a_broker_that_did_not_answer():
    s = build(OFFSETS, REPLICAS)
    held, share = broker_share(s, 2)
    assert held == 880 and abs(share - 880 / 1850) < 1e-9
    assert broker_share(s, 9) == (None, None)
    assert broker_share(build({}, {(1, "a", 0): 0}), 1) == (0, 0.0)


def test_old_brokers_note_names_the_version_and_kip():
    assert NO_MAX_TIMESTAMP.format(version="2.8.2") == ("the brokers (Kafka 2.8.2) cannot tell the newest message's "
                                                        "timestamp: ListOffsets MAX_TIMESTAMP (KIP-734) needs "
                                                        "Kafka 3.0+")


# --- the page helpers (dashboard.topic_sizes) -------------------------------------------------------------


def test_list_columns_sorted_biggest_first_and_unknown_says_why():
    from dashboard.topic_sizes import LIST_COLUMNS, add_list_columns

    table = pd.DataFrame({"Topic": ["a", "b", "c", "new"], "Health": ["ok"] * 4, "Partitions": [3, 1, 1, 1]})
    s = build(OFFSETS, REPLICAS)
    out = add_list_columns(table, s)
    assert list(out.columns) == ["Topic", "Health", *LIST_COLUMNS, "Partitions"]
    assert list(out["Topic"]) == ["a", "c", "b", "new"]  # 600, 300, 70 bytes; a topic not read yet last
    assert out.loc[0, "Size"] == 600 and out.loc[0, "On disk"] == 1180 and out.loc[0, "Messages"] == 23
    assert out.loc[0, "Newest"] == "2023-11-14 22:13:49 UTC"
    assert pd.isna(out.loc[3, "Size"])
    none = add_list_columns(table, None, "needs bootstrap")
    assert list(none["Topic"]) == ["a", "b", "c", "new"] and set(none["Size"]) == {"needs bootstrap"}


class _Cluster:
    name, bootstrap, connect_timeout = "c", "127.0.0.1:1", 5.0


def test_reader_reads_once_per_ttl_in_the_background_and_keeps_the_last_good_read(monkeypatch):
    from dashboard.topic_sizes import Reader
    from core.errors import KeelError
    from core.model import ClusterSnapshot

    calls = []
    gate = threading.Event()

    def read(leaders):
        calls.append(leaders)
        gate.wait(5)
        if len(calls) == 2:
            raise KeelError("no broker answered")
        return build(OFFSETS, REPLICAS, read_at=float(len(calls)))

    snap = ClusterSnapshot.from_json('{"format": "keel.snapshot/1", "cluster": "c", "captured_at": "", "source": "", "brokers": [], "topics": []}')
    monkeypatch.setattr("dashboard.topic_sizes.SPACING", 0)  # the TTL alone (the spacing: the test below)
    r = Reader(_Cluster(), ttl=0.3, retry=0.3, read=read)
    first = r.get(snap, wait=0.05)
    assert first.sizes is None and "being read" in first.note  # never holds the page longer than `wait`
    gate.set()
    got = r.get(snap, wait=2)
    assert got.sizes is not None and got.sizes.read_at == 1.0 and got.note is None
    assert r.get(snap).sizes.read_at == 1.0 and len(calls) == 1  # fresh: no second read
    time.sleep(0.35)
    r.get(snap)  # stale: a read starts, the page draws the last one meanwhile
    deadline = time.monotonic() + 3
    while len(calls) < 2 or r._running:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    failed = r.get(snap)
    assert failed.sizes.read_at == 1.0 and "no broker answered" in failed.note


def test_a_slow_read_spaces_the_next_ones():
    """Reads never take more than a tenth of the time: 10x the last read's duration between two."""
    from dashboard.topic_sizes import SPACING, Reader
    from core.model import ClusterSnapshot

    def read(leaders):
        time.sleep(0.1)
        return build(OFFSETS, REPLICAS)

    snap = ClusterSnapshot.from_json('{"format": "keel.snapshot/1", "cluster": "c", "captured_at": "", "source": "", '
                                     '"brokers": [], "topics": []}')
    r = Reader(_Cluster(), ttl=0.01, read=read)
    got = r.get(snap, wait=2)
    assert got.sizes is not None and got.every >= SPACING * 0.1
