"""Issue 27 item 4: a keel.toml cluster with both `zk` and `bootstrap` whose migration to KRaft has moved every broker
off ZooKeeper is read and written through its brokers (core.cluster.connection): ZooKeeper is then only a copy kept
for a revert, or frozen after finalization. Real ZooKeeper (a chroot holding what a migrating KRaft controller leaves
there: /controller with kraftControllerEpoch, /migration, the brokers' registrations) and real KRaft brokers (the
`kraft` fixture) answering at the cluster's `bootstrap`."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core import zkformat as zf
from core.cluster.connection import Connection, Phase
from core.kafka.admin import KafkaAdmin
from core.policy.config import ClusterConfig, load_config
from core.zk.session import ZkSession
from dashboard import frame, migration_banner
from sandbox.processes.common import free_port
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import eventually
from tests.kafka.test_kraft_dashboard import create_on_page
from tests.support.kafka_tree import write_broker, write_cluster, write_topic

pytestmark = pytest.mark.kraft
APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def migrated_tree(s: ZkSession, *, zk_brokers: dict[int, str | None]) -> None:
    """What ZooKeeper holds in dual-write (and keeps, frozen, after finalization): the KRaft controller's
    /controller and /migration, a topic, and the brokers still registered in ZooKeeper mode (`zk_brokers`)."""
    write_cluster(s, zk_brokers)
    s.create(zf.CONTROLLER, zf.encode_controller(3000, 1700000000000, 5))
    s.create(zf.MIGRATION, zf.encode_migration(3000, 5, 1234, 7))
    write_topic(s, "orders", {0: [1, 2, 3]})


def settle(conn: Connection, predicate, timeout: float = 30.0) -> None:
    """Call ensure() as the dashboard's ticker does until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, (conn.phase, conn.error, conn.through_brokers, conn.switch_note)
        conn.ensure()
        time.sleep(0.2)


@pytest.fixture
def session(zk_connect):
    with ZkSession.open(zk_connect) as s:
        yield s


def test_the_reader_moves_to_the_brokers_when_every_broker_left_zookeeper_and_back_on_a_revert(
        kraft: KraftCluster, zk_connect: str, session: ZkSession):
    migrated_tree(session, zk_brokers={1: None})
    conn = Connection(ClusterConfig(name="m", zk=zk_connect, bootstrap=kraft.bootstrap_servers, poll_interval=0.5,
                                    connect_timeout=10))
    try:
        settle(conn, lambda: conn.phase == Phase.READY)
        time.sleep(1.0)
        conn.ensure()
        # broker 1 still in ZooKeeper mode: the brokers-to-KRaft phase, read (and refused) through ZooKeeper
        assert not conn.through_brokers and conn.snapshot().mode == "zookeeper"
        assert isinstance(conn.write_session(), ZkSession)
        assert migration_banner.phase(conn).key == "brokers-to-kraft"

        session.delete(zf.broker_path(1))  # the last broker restarted as a KRaft broker
        settle(conn, lambda: conn.through_brokers)
        snap = conn.snapshot()
        assert snap.is_kraft and sorted(snap.alive_broker_ids) == sorted(kraft.broker_ids)
        assert conn.zk_live is not None and conn.zk_live.snapshot().mode == "zookeeper"
        assert isinstance(conn.write_session(), KafkaAdmin)  # the pages write through the brokers now
        assert "every broker has left ZooKeeper" in conn.switch_note
        # the phase still comes from ZooKeeper (dual-write: a revert is possible; finalization cannot be told)
        phase = migration_banner.phase(conn)
        assert phase.key == "dual-write" and phase.rollback_possible
        assert migration_banner.block_text(conn) is None

        write_broker(session, 1, ephemeral=False)  # a revert rolled broker 1 back to ZooKeeper mode
        settle(conn, lambda: not conn.through_brokers)
        assert conn.snapshot().mode == "zookeeper" and "a revert to ZooKeeper mode" in conn.switch_note
        assert isinstance(conn.write_session(), ZkSession)
        assert "Writes through ZooKeeper are disabled" in migration_banner.block_text(conn)
    finally:
        conn.close()


def test_a_decommissioned_zookeeper_with_kraft_brokers_reads_the_brokers(kraft: KraftCluster):
    """After finalization the operator stops ZooKeeper and keeps the entry as it was: its brokers are read."""
    nobody = f"127.0.0.1:{free_port()}"
    conn = Connection(ClusterConfig(name="m", zk=nobody, bootstrap=kraft.bootstrap_servers, poll_interval=0.5,
                                    connect_timeout=2))
    try:
        settle(conn, lambda: conn.phase in (Phase.READY, Phase.FAILED))
        assert conn.phase == Phase.READY and conn.through_brokers, conn.error
        assert conn.snapshot().is_kraft and conn.zk_live is None
        assert "ZooKeeper cannot be reached" in conn.switch_note
        assert migration_banner.phase(conn).key == "finalized"
    finally:
        conn.close()


def test_a_zookeeper_mode_cluster_with_bootstrap_stays_on_zookeeper(kraft: KraftCluster, zk_connect: str,
                                                                    session: ZkSession):
    """No KRaft controller in /controller: nothing has migrated, whatever the bootstrap answers (even with no
    broker registered: a ZooKeeper-mode cluster whose brokers are all down)."""
    write_cluster(session, {}, controller=1)
    write_topic(session, "orders", {0: [1, 2, 3]})
    conn = Connection(ClusterConfig(name="m", zk=zk_connect, bootstrap=kraft.bootstrap_servers, connect_timeout=10))
    try:
        settle(conn, lambda: conn.phase == Phase.READY)
        for _ in range(3):
            conn.ensure()
            time.sleep(0.3)
        assert not conn.through_brokers and conn.snapshot().mode == "zookeeper"
    finally:
        conn.close()


def test_the_dashboard_of_a_migrated_cluster_reads_and_writes_through_the_brokers(
        kraft: KraftCluster, zk_connect: str, session: ZkSession, tmp_path, monkeypatch):
    migrated_tree(session, zk_brokers={})
    (tmp_path / "keel.toml").write_text(
        f'[keel]\nrole = "admin"\nread_only = false\n\n[clusters.m]\nzk = "{zk_connect}"\n'
        f'bootstrap = "{kraft.bootstrap_servers}"\npoll_interval = 0.5\n')
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.toml"))
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    st.cache_resource.clear()
    try:
        conn = frame.connection(load_config().clusters["m"])  # the connection the app's pages get
        settle(conn, lambda: conn.through_brokers)
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        shown = "\n".join(str(e.value) for kind in (at.markdown, at.caption, at.info) for e in kind)
        assert "Mode **KRaft" in shown and "migrated from" in shown
        assert "Keel reads and writes this cluster through its brokers" in shown
        assert not [e.value for e in at.error], [e.value for e in at.error]

        name = f"mc-{uuid.uuid4().hex[:6]}"
        create_on_page(at.switch_page("views/create_topic.py").run(), name)  # through the gate and the brokers
        with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
            eventually(lambda: admin.topic_partitions([name]), timeout=30, interval=0.5)
        assert not session.get(zf.topic_path(name)).exists  # nothing written to the frozen ZooKeeper copy
    finally:
        st.cache_resource.clear()
