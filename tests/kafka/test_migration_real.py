"""A REAL ZooKeeper -> KRaft migration of a three-broker Kafka 3.9.1 cluster with data in it, Keel reading at
every step (sandbox.processes.migration follows Kafka 3.9's documented procedure), and the documented way back
from dual-write.

Each test runs its own cluster in its own chroot of the session's ZooKeeper (never the shared `kafka` fixture's
cluster) and prints, per step, the phase Keel names and how long the step took. xdist group `kraft` (tests/conftest.py):
after the KRaft clusters' tests, beside the ZooKeeper-mode cluster's.
"""

from __future__ import annotations

import contextlib
import io
import json

import sys
import time
import uuid
import warnings

import pytest

from core import zkformat as zf
from core.cluster.connection import Connection
from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import read_snapshot as read_kafka_snapshot
from core.cli import main
from core.migration import migration_status
from core.zk.migration_state import read_migration
from core.zk.reader import read_snapshot
from core.policy.config import ClusterConfig
from core.zk.session import ZkSession
from sandbox.processes import kafka as kafka_runner
from sandbox.processes.migration import FIRST_CONTROLLER_ID, Migration
from tests.kafka.realkafka import kafka_version, needs_kafka
from tests.kafka.test_migrated_connection import settle

pytestmark = needs_kafka("3.9", "the ZooKeeper -> KRaft migration as Kafka 3.9 documents it")

TOPIC = "migrated"
MESSAGES = 300
DASHED_CLUSTER_ID = "-fzyYT4TRBGWAlOX9S7RPg"  # the id CI's cluster drew when "-t <id>" failed the format
PARTITIONS = 6


@pytest.fixture
def zk_cluster(zk_server: str, tmp_path):
    """A fresh three-broker ZooKeeper-mode cluster of its own (own chroot), stopped (with its controllers) after."""
    version = kafka_version()
    try:
        kafka_runner.lib_dir(version)
    except kafka_runner.KafkaNotFetchedError:
        kafka_runner.fetch(version)
    chroot = f"/migration-{uuid.uuid4().hex[:8]}"
    connect = f"{zk_server}{chroot}"
    # Kafka keeps a /cluster/id it finds. ZooKeeper mode's ids start with "-" once in 64 clusters, and such an id
    # must reach the KRaft controllers' storage format intact: every migration here runs on one.
    with ZkSession.open(zk_server) as session:
        session.create(chroot + zf.CLUSTER_ID, zf.encode_cluster_id(DASHED_CLUSTER_ID), makepath=True)
    cluster = kafka_runner.KafkaCluster.create(tmp_path / "cluster", connect, brokers=3, detach=False,
                                               version=version)
    started = time.monotonic()
    cluster.start(timeout=120)
    print(f"\nZooKeeper-mode cluster up in {time.monotonic() - started:.1f} s ({cluster.bootstrap_servers}, "
          f"{connect})", file=sys.stderr)
    migration = Migration(cluster, controllers=1)
    try:
        yield migration
    finally:
        migration.stop()


def produce(bootstrap: str) -> list[bytes]:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    values = [f"message-{i:04d}".encode() for i in range(MESSAGES)]
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10, linger_ms=5)
    try:
        for i, v in enumerate(values):
            producer.send(TOPIC, key=str(i).encode(), value=v)
        producer.flush(timeout=60)
    finally:
        producer.close()
    return values


def consume_all(bootstrap: str, expected: int, timeout: float = 60.0) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None, consumer_timeout_ms=5000)
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                got.extend(r.value for r in batch)
    finally:
        consumer.close()
    return got


class Keel:
    """What Keel reads from the cluster's ZooKeeper, step after step: the phase it names, and its write gate."""

    def __init__(self, connect: str, store):
        self.connect, self.store = connect, store
        self.phases: list[tuple[str, str]] = []
        self.keys: list[str] = []  # core.migration_phases' key of each phase read, in order

    def record(self, step: str):
        with ZkSession.open(self.connect) as session:
            status = migration_status(read_snapshot(session), read_migration(session))
            held = {path: session.get(path) for path in (zf.CONTROLLER, zf.MIGRATION)}
        phase = "no migration" if status is None else status.phase
        self.phases.append((step, phase))
        self.keys.append("none" if status is None else status.phase_key)
        zk = ", ".join(f"{p}={n.data.decode() if n.exists else '(none)'}" for p, n in held.items())
        print(f"  after {step!r}: ZooKeeper {zk}\n    Keel: {phase}"
              + ("" if status is None else f" — {status.detail}"), file=sys.stderr)
        return status

    def zk_write_refused(self, step: str) -> None:
        """`python -m core create-topic --zk ...` in-process: refused (exit 1, the migration named) and nothing
        of what it would write appears in ZooKeeper."""
        from core.cli import main

        topic = f"keel-{len(self.phases)}"
        before = self._tree()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["create-topic", "--topic", topic, "--partitions", "1", "--replication-factor", "1",
                         "--zk", self.connect, "--store", str(self.store)])
        assert code == 1, f"{step}: Keel's ZooKeeper write was not refused ({code}): {out.getvalue()} {err.getvalue()}"
        assert "migration" in err.getvalue().lower(), f"{step}: refused, but not for the migration: {err.getvalue()}"
        after = self._tree()
        assert topic not in after["topics"] and topic not in after["configs"], f"{step}: {topic} reached ZooKeeper"
        assert after == before, f"{step}: the ZooKeeper tree changed under a refused write: {before} -> {after}"

    def _tree(self) -> dict:
        with ZkSession.open(self.connect) as s:
            return {"topics": sorted(s.children("/brokers/topics") or ()),
                    "configs": sorted(s.children("/config/topics") or ()),
                    "admin": sorted(s.children("/admin") or ()),
                    "changes": sorted(s.children("/config/changes") or ())}


def drift(cluster, *extra: str) -> tuple[int, dict, str]:
    """`python -m core migration-drift --zk ... --bootstrap-server ... --json` in-process: (exit, report, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["migration-drift", "--zk", cluster.zk_connect, "--bootstrap-server", cluster.bootstrap_servers,
                     "--json", *extra])
    assert code in (0, 3), f"migration-drift failed ({code}): {err.getvalue()}"
    return code, json.loads(out.getvalue()), err.getvalue()


def drift_behind_the_controller(cluster) -> None:
    """Dual-write, every broker in KRaft mode (they answer DescribeConfigs from their metadata image, not from
    ZooKeeper as a ZooKeeper-mode broker would): a topic setting written into ZooKeeper behind the KRaft controller's
    back (it reads nothing from ZooKeeper once in dual-write) is listed with its age, which grows read after read
    until it lasts (--lasting 2 over three reads a second apart: the default 30 s would only cost time), exit 3.
    Put back, the difference goes."""
    path = zf.topic_config_path(TOPIC)
    with ZkSession.open(cluster.zk_connect) as session:
        held = session.get(path).data
        planted = {**zf.decode_config(held, path), "retention.ms": "4242"}
        session.set(path, zf.encode_config(planted))
        try:
            code, report, err = drift(cluster, "--watch", "1", "--reads", "3", "--lasting", "2")
        finally:
            session.set(path, held)
    print(f"  drift behind the KRaft controller: {report}", file=sys.stderr)
    assert code == 3 and report["reads"] == 3 and report["lasting"] == 1, (report, err)
    assert [{k: d[k] for k in ("what", "key", "field", "zookeeper", "brokers", "lasting")}
            for d in report["differences"]] == [{"what": "topic config", "key": TOPIC, "field": "retention.ms",
                                                 "zookeeper": "4242", "brokers": "(not set)", "lasting": True}]
    assert report["differences"][0]["age_seconds"] >= 2
    # the age grew from read to read: new (not lasting) at the first, lasting at the last
    reads = [line.split(": ", 1)[1] for line in err.splitlines() if line.startswith("read ")]
    assert len(reads) == 3 and reads[0] == "1 difference(s), 0 lasting" and reads[-1] == "1 difference(s), 1 " \
        "lasting" and reads == sorted(reads), err
    code, report, err = drift(cluster)
    assert code == 0 and report["differences"] == [], report


def quorum_from_the_controllers(m: Migration, tmp_path) -> None:
    """Readiness's quorum check asked of the KRaft controllers (--bootstrap-controller) while the brokers still
    run in ZooKeeper mode (they never answer DescribeQuorum): ok, as the controllers' leader tells."""
    out, err = io.StringIO(), io.StringIO()
    address = ",".join(c.controller_endpoint for c in m.controllers.brokers)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["migration", "--zk", m.cluster.zk_connect, "--bootstrap-server", m.cluster.bootstrap_servers,
                     "--bootstrap-controller", address, "--store", str(tmp_path / "readiness.sqlite"), "--json"])
    assert code == 0, err.getvalue()
    quorum = {c["key"]: c for c in json.loads(out.getvalue())["readiness"]}["quorum"]
    assert quorum["verdict"] == "ok" and f"Leader {FIRST_CONTROLLER_ID}" in quorum["detail"], quorum


def timing_table(migration: Migration, phases: list[tuple[str, str]]) -> str:
    rows = [f"{'step':<52} {'seconds':>8}"]
    rows += [f"{name:<52} {secs:>8.1f}" for name, secs in migration.timings.items()]
    rows.append(f"{'total':<52} {sum(migration.timings.values()):>8.1f}")
    rows += ["", f"{'after step':<30} Keel's phase"] + [f"{s:<30} {p}" for s, p in phases]
    return "\n".join(rows)


def test_zookeeper_to_kraft_migration_keeps_every_message(zk_cluster: Migration, tmp_path):
    m = zk_cluster
    cluster = m.cluster
    values = produce(cluster.bootstrap_servers)
    keel = Keel(cluster.zk_connect, tmp_path / "keel.sqlite")
    assert keel.record("ZooKeeper mode") is None

    m.start_controllers()
    status = keel.record("controllers started")
    assert status is not None and not status.kraft_controller_active  # a ZooKeeper broker still controls
    assert status.migration is not None and not status.migration.initial_migration_complete
    assert status.write_block_reason
    keel.zk_write_refused("controllers started")
    quorum_from_the_controllers(m, tmp_path)

    m.roll_brokers_for_migration()
    status = keel.record("brokers rolled for migration")  # the migration starts by itself after the last one
    assert status is not None and status.write_block_reason
    keel.zk_write_refused("brokers rolled for migration")

    m.wait_migrated()
    status = keel.record("metadata migrated")
    assert status.kraft_controller_active and status.kraft_controller == FIRST_CONTROLLER_ID
    assert status.migration.initial_migration_complete and status.migration.kraft_metadata_offset > 0
    assert status.kraft_brokers == ()  # every broker still registered in ZooKeeper
    keel.zk_write_refused("metadata migrated")
    # the copy done, ZooKeeper and the brokers' metadata (sent by the KRaft controller) agree
    started = time.monotonic()
    code, report, _ = drift(cluster)
    assert code == 0 and report["differences"] == [], report
    drift_seconds = time.monotonic() - started

    m.roll_brokers_to_kraft()
    status = keel.record("brokers rolled to KRaft")
    assert status.kraft_controller_active and status.migration.initial_migration_complete
    assert status.kraft_brokers == tuple(cluster.broker_ids)  # gone from /brokers/ids, yet leaders and in ISRs
    keel.zk_write_refused("brokers rolled to KRaft")
    started = time.monotonic()
    code, report, _ = drift(cluster)  # the KRaft brokers' metadata image against ZooKeeper's dual-written copy
    assert code == 0 and report["differences"] == [], report
    drift_behind_the_controller(cluster)
    drift_seconds += time.monotonic() - started
    print(f"  the drift checks took {drift_seconds:.1f} s", file=sys.stderr)

    m.finalize()
    status = keel.record("finalized")
    assert status is not None and status.write_block_reason  # ZooKeeper keeps the last dual-write state
    keel.zk_write_refused("finalized")

    got = consume_all(cluster.bootstrap_servers, len(values))
    assert len(got) == len(values) and sorted(got) == sorted(values)
    with KafkaAdmin(cluster.bootstrap_servers, timeout=20) as admin:
        snapshot = read_kafka_snapshot(admin)
    assert snapshot.mode == "kraft" and snapshot.cluster_id == DASHED_CLUSTER_ID  # ZooKeeper mode's id, kept
    assert {b.id for b in snapshot.brokers if b.alive} == set(cluster.broker_ids)
    # through the brokers, Keel names the end of the story, and the cluster is written through them from now on
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["migration", "--bootstrap-server", cluster.bootstrap_servers, "--json"]) == 0
    assert json.loads(out.getvalue())["key"] == "finalized"
    # the dashboard's connection to a keel.toml entry with both zk and bootstrap reads the brokers now
    conn = Connection(ClusterConfig(name="mig", zk=cluster.zk_connect, bootstrap=cluster.bootstrap_servers,
                                    poll_interval=0.5, connect_timeout=20))
    try:
        settle(conn, lambda: conn.through_brokers, timeout=60)
        assert conn.snapshot().is_kraft and isinstance(conn.write_session(), KafkaAdmin)
    finally:
        conn.close()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["create-topic", "--bootstrap-server", cluster.bootstrap_servers, "--topic", "after-kraft",
                     "--partitions", "3", "--replication-factor", "3", "--store", str(tmp_path / "after.sqlite")])
    assert code == 0, err.getvalue()
    print("\nmigration to KRaft, measured:\n" + timing_table(m, keel.phases), file=sys.stderr)
    # the phase Keel named after each step, as Kafka 3.9's docs name it; finalization leaves ZooKeeper as dual-write
    # left it, so from ZooKeeper alone it reads as dual-write (the brokers' DescribeQuorum tells: mode "kraft" above)
    # (right after the roll the controller may still be copying: metadata-load, seen under load; done, hybrid)
    assert keel.keys[2] in ("metadata-load", "hybrid"), keel.phases
    assert keel.keys[:2] + keel.keys[3:] == ["none", "controllers-ready", "hybrid", "dual-write", "dual-write"], \
        keel.phases


def test_rollback_from_dual_write_ends_in_zookeeper_mode(zk_cluster: Migration, tmp_path):
    m = zk_cluster
    cluster = m.cluster
    values = produce(cluster.bootstrap_servers)
    keel = Keel(cluster.zk_connect, tmp_path / "keel.sqlite")
    m.start_controllers()
    m.roll_brokers_for_migration()
    m.wait_migrated()
    m.roll_brokers_to_kraft()
    status = keel.record("dual-write, every broker KRaft")
    assert status.kraft_controller_active and status.kraft_brokers == tuple(cluster.broker_ids)
    # a zk + bootstrap entry: read through the brokers in dual-write, through ZooKeeper again once they go back
    conn = Connection(ClusterConfig(name="mig", zk=cluster.zk_connect, bootstrap=cluster.bootstrap_servers,
                                    poll_interval=0.5, connect_timeout=20))
    try:
        settle(conn, lambda: conn.through_brokers, timeout=60)
        assert conn.snapshot().is_kraft

        m.rollback_brokers_to_zookeeper()
        status = keel.record("rollback: brokers in ZooKeeper mode")
        assert status.kraft_controller_active and status.kraft_brokers == ()
        settle(conn, lambda: not conn.through_brokers, timeout=60)
        assert conn.snapshot().mode == "zookeeper" and isinstance(conn.write_session(), ZkSession)
    finally:
        conn.close()
    keel.zk_write_refused("rollback: brokers in ZooKeeper mode")

    m.deprovision_controllers()
    keel.record("rollback: controllers gone")
    keel.zk_write_refused("rollback: controllers gone")  # /controller still names the KRaft controller

    held = m.delete_controller_znode()
    assert held is not None and zf.decode_controller(held).is_kraft
    keel.record("rollback: /controller deleted")
    keel.zk_write_refused("rollback: /controller deleted")  # /migration still there

    held = m.clear_migration_znode()
    assert held is not None and zf.decode_migration(held).initial_migration_complete

    m.roll_brokers_to_zookeeper()
    for note in m.interventions:  # in the warnings summary: how often Kafka needed the harness's controller move
        warnings.warn(f"migration harness: {note}", stacklevel=1)
    assert keel.record("rollback: ZooKeeper mode") is None
    assert cluster.controller() in cluster.broker_ids and cluster.registered() == set(cluster.broker_ids)
    got = consume_all(cluster.bootstrap_servers, len(values))
    assert len(got) == len(values) and sorted(got) == sorted(values)
    with KafkaAdmin(cluster.bootstrap_servers, timeout=20) as admin:
        assert admin.quorum() is None  # ZooKeeper-mode brokers answer no DescribeQuorum
    print("\nrollback from dual-write, measured:\n" + timing_table(m, keel.phases), file=sys.stderr)
    # /controller is a persistent node the stopped KRaft controller leaves behind: hybrid until it is deleted
    assert keel.keys == ["dual-write", "hybrid", "hybrid", "reverting", "none"], keel.phases
