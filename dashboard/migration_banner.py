"""The ZooKeeper -> KRaft migration banner on every page, and the reason every write is disabled meanwhile.

The state comes from core.zk.migration_state (the /migration znode) next to the live snapshot's /controller, read at
most every CACHE_SECONDS per cluster (one ZooKeeper read, shared by all sessions through the connection's memo).
Everything shown from the cluster goes through dashboard.text.
"""

from __future__ import annotations

import logging
import time

import streamlit as st

from core.errors import KeelError
from core.migration import MigrationStatus, migration_status
from core.cluster.connection import Connection
from dashboard.text import md, md_text

log = logging.getLogger(__name__)

CACHE_SECONDS = 5.0


def status(conn: Connection) -> MigrationStatus | None:
    """The cluster's migration state, or None (a plain ZooKeeper-mode cluster, or nothing loaded yet)."""
    snap = conn.snapshot()
    if snap is None or conn.cluster.through_brokers:  # no ZooKeeper to migrate from
        return None
    memo = conn.memo("migration")
    now = time.monotonic()
    hit = memo.get("znode")
    if hit is None or now - hit[0] > CACHE_SECONDS:
        znode = hit[1] if hit is not None else None
        live = conn.live
        if live is not None and live.status == "connected":
            try:
                from core.zk.migration_state import read_migration

                znode = read_migration(live.session)
            except KeelError as e:  # corrupt /migration: named in the banner, writes stay disabled
                memo["error"] = str(e)
                znode = None
            except Exception as e:  # a dropped connection: keep the last answer, try again next time
                log.info("could not read /migration: %s", e)
            else:
                memo.pop("error", None)
        memo["znode"] = (now, znode)
    znode = memo["znode"][1]
    return migration_status(snap, znode)


def block_text(conn: Connection) -> str | None:
    """Why ZooKeeper writes are disabled on this cluster (plain text), or None. A cluster read through its brokers
    (KRaft) is written through them: the gate asks its controller quorum at click time (core.kafka.probe)."""
    s = status(conn)
    if s is not None:
        return s.write_block_reason
    error = conn.memo("migration").get("error")
    return f"Writes are disabled: /migration cannot be read ({error})" if error else None


def block_reason(conn: Connection) -> str | None:
    """block_text as markdown (it can quote a znode's content)."""
    text = block_text(conn)
    return None if text is None else md_text(text)


def banner(conn: Connection) -> None:
    """The banner over every page while a migration is under way (or a KRaft controller owns the cluster)."""
    s = status(conn)
    error = conn.memo("migration").get("error")
    if s is None:
        if error:
            st.warning(f"**/migration is unreadable:** {md_text(error)}. ZooKeeper writes are disabled until it is "
                       "repaired.", icon=":material/report:")
        return
    head = (f"**ZooKeeper → KRaft migration: {md(s.phase)}**" + (f" · KRaft controller **{s.kraft_controller}**"
                                                                 if s.kraft_controller is not None else ""))
    lines = [head, md_text(s.detail)]
    if s.kraft_brokers:
        lines.append(f"Broker(s) {md(', '.join(map(str, s.kraft_brokers)))} left /brokers/ids for KRaft and lead "
                     f"{s.kraft_led:,} partition(s): shown as down by ZooKeeper, but **not an outage**.")
    lines.append(f":material/lock: {md_text(s.write_block_reason)}")
    (st.error if s.kraft_controller_active else st.warning)("  \n".join(lines), icon=":material/swap_calls:")


__all__ = ["status", "block_text", "block_reason", "banner"]
