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
from core.migration_phases import MigrationPhase, phase_of
from core.cluster.connection import Connection
from dashboard.text import md, md_text

log = logging.getLogger(__name__)

CACHE_SECONDS = 5.0


def _zk(conn: Connection):
    """(ZooKeeper view, its snapshot) or (None, None): the live view, or the one kept beside the brokers' once a
    migrated cluster is read through them (Connection.zk_live)."""
    live = conn.zk_live
    snap = None if live is None else live.snapshot()
    return (live, snap) if snap is not None else (None, None)


def status(conn: Connection) -> MigrationStatus | None:
    """The cluster's migration state, or None (a plain ZooKeeper-mode cluster, a cluster without ZooKeeper, or
    nothing loaded yet)."""
    live, snap = _zk(conn)
    if snap is None:  # no ZooKeeper to migrate from (or not read yet)
        return None
    memo = conn.memo("migration")
    now = time.monotonic()
    hit = memo.get("znode")
    if hit is None or now - hit[0] > CACHE_SECONDS:
        znode = hit[1] if hit is not None else None
        if live.status == "connected":
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
    (KRaft, or migrated to it) is written through them: the gate asks its controller quorum at click time
    (core.kafka.probe)."""
    if conn.through_brokers:
        return None
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
    if conn.through_brokers:  # every broker in KRaft mode: read and written through the brokers now
        st.info(f"**ZooKeeper → KRaft migration: {md(s.phase)}** · every broker runs in KRaft mode: Keel reads and "
                f"writes this cluster through its brokers (`{md(conn.cluster.bootstrap or '')}`) now; ZooKeeper is "
                "only a copy kept for a revert (or frozen, once the controllers are finalized). See the KRaft "
                "migration page.", icon=":material/swap_calls:")
        return
    head = (f"**ZooKeeper → KRaft migration: {md(s.phase)}**" + (f" · KRaft controller **{s.kraft_controller}**"
                                                                 if s.kraft_controller is not None else ""))
    lines = [head, md_text(s.detail)]
    if s.kraft_brokers:
        lines.append(f"Broker(s) {md(', '.join(map(str, s.kraft_brokers)))} left /brokers/ids for KRaft and lead "
                     f"{s.kraft_led:,} partition(s): shown as down by ZooKeeper, but **not an outage**.")
    lines.append(f":material/lock: {md_text(s.write_block_reason)}")
    (st.error if s.kraft_controller_active else st.warning)("  \n".join(lines), icon=":material/swap_calls:")


def phase(conn: Connection, flags: dict[int, bool] | None = None) -> MigrationPhase | None:
    """The phase (core.migration_phases) from the snapshot and the /migration status() read; None before the
    first snapshot. `flags`: each broker's zookeeper.metadata.migration.enable, when readiness read the brokers."""
    _, zk_snap = _zk(conn)
    if zk_snap is None:  # no ZooKeeper (a KRaft cluster, or one not reachable): what the brokers say
        snap = conn.snapshot()
        return None if snap is None else phase_of(snap, None)
    status(conn)  # refreshes the memo's /migration
    return phase_of(zk_snap, conn.memo("migration")["znode"][1], flags)


def collect_readiness(conn: Connection, controller_ids: tuple[int, ...] | None, controllers: str | None = None):
    """(readiness checks, each broker's migration flag or None): ZooKeeper's facts from the live session, the
    brokers' through the cluster's `bootstrap` (unknown, with why, without one), the quorum from the KRaft
    controllers at `controllers` ("host:port,...", with the cluster's Kafka security settings) when given.
    A malformed `controllers` raises ValidationError before anything is read."""
    from core.kafka.controller_quorum import quorum_fact
    from core.migration_readiness import readiness, with_controller_quorum
    from core.zk.migration_state import readiness_facts

    controllers = (controllers or "").strip() or None
    if controllers is not None:
        from core.kafka.bootstrap import parse_bootstrap

        parse_bootstrap(controllers, "The controllers' address")

    live, snap = _zk(conn)
    if snap is None or live.status != "connected":
        raise KeelError("ZooKeeper is not connected: readiness reads ZooKeeper now"
                        + (" (this cluster has no `zk` in keel.toml)" if conn.cluster.zk is None else ""))
    broker, admin_error = None, None
    if conn.cluster.bootstrap:
        from core.kafka.admin import KafkaAdmin
        from core.kafka.migration_facts import broker_facts

        try:
            with KafkaAdmin.for_cluster(conn.cluster) as admin:
                broker = broker_facts(admin, sorted(snap.alive_broker_ids))
        except KeelError as e:
            admin_error = str(e)
    else:
        admin_error = "this cluster has no `bootstrap` in keel.toml"
    facts = readiness_facts(live.session, snap, controller_ids=controller_ids, broker=broker, admin_error=admin_error)
    facts = with_controller_quorum(facts, *quorum_fact(controllers, security=conn.cluster.kafka_security,
                                                       timeout=min(10.0, conn.cluster.connect_timeout * 2)))
    return readiness(facts), (broker.migration_flags if broker is not None else None)


__all__ = ["status", "block_text", "block_reason", "banner", "phase", "collect_readiness"]
