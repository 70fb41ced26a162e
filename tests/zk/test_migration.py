"""ZooKeeper -> KRaft migration (core.migration, core.zk.migration_state, zkformat's /migration) on a tree written as
Kafka 3.9's migrating KRaft controller writes it.

The payloads are Kafka 3.9.1's own bytes: `kafka.zk.MigrationZNode.encode(new ZkMigrationLeadershipState(3000, 5,
1234L, 7, ...))`, `MigrationZNode.encode(ZkMigrationLeadershipState.EMPTY)` and `kafka.zk.ControllerZNode.encode(3000,
1700000000000L, 5)`, printed by a few lines of Java against the fetched kafka_2.13-3.9.1 / kafka-metadata-3.9.1 jars.
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.cli import main
from core.errors import CorruptZnodeError, KRaftControllerError
from core.migration import kraft_brokers, migration_status
from core.zk.migration_state import read_migration, read_migration_status
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic

KAFKA_MIGRATION = b'{"version":0,"kraft_metadata_offset":1234,"kraft_controller_id":3000,"kraft_metadata_epoch":7,' \
                  b'"kraft_controller_epoch":5}'
KAFKA_MIGRATION_EMPTY = b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,"kraft_metadata_epoch":-1,' \
                        b'"kraft_controller_epoch":-1}'
KAFKA_KRAFT_CONTROLLER = b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":5}'


def test_codec_matches_kafkas_bytes():
    m = zf.decode_migration(KAFKA_MIGRATION)
    assert (m.kraft_controller_id, m.kraft_controller_epoch, m.kraft_metadata_offset, m.kraft_metadata_epoch) == \
        (3000, 5, 1234, 7) and m.initial_migration_complete
    assert zf.encode_migration(3000, 5, 1234, 7) == KAFKA_MIGRATION
    assert zf.encode_migration(-1, -1, -1, -1) == KAFKA_MIGRATION_EMPTY
    assert not zf.decode_migration(KAFKA_MIGRATION_EMPTY).initial_migration_complete
    assert zf.encode_controller(3000, 1700000000000, 5) == KAFKA_KRAFT_CONTROLLER
    with pytest.raises(CorruptZnodeError, match="Encountered unknown version 1 when parsing migration json"):
        zf.decode_migration(b'{"version":1}')
    with pytest.raises(CorruptZnodeError, match="kraft_controller_id"):
        zf.decode_migration(b'{"version":0,"kraft_metadata_offset":1}')


@pytest.fixture
def session(zk_connect):
    with ZkSession.open(zk_connect) as s:
        yield s


def dual_write_tree(s: ZkSession) -> None:
    """Brokers 1 and 2 still in ZooKeeper mode (registered), broker 3 restarted as a KRaft broker (gone from
    /brokers/ids, yet leader and in the ISRs the KRaft controller writes back); KRaft controller 3000 active."""
    write_cluster(s, {1: "r1", 2: "r2"})
    s.create(zf.CONTROLLER, KAFKA_KRAFT_CONTROLLER)
    s.create(zf.MIGRATION, KAFKA_MIGRATION)
    write_topic(s, "orders", {0: [3, 1, 2], 1: [1, 2, 3], 2: [2, 3, 1]},
                states={0: (3, [3, 1, 2]), 1: (1, [1, 2, 3]), 2: (2, [2, 3, 1])})


def test_dual_write_tree_is_a_migration_with_brokers_that_left_for_kraft(session, zk_connect, capsys):
    dual_write_tree(session)
    snap = read_snapshot(session)
    assert snap.controller.is_kraft and snap.controller.broker_id == 3000
    status = read_migration_status(session, snap)
    # brokers 1, 2 in ZooKeeper mode and 3 in KRaft: the docs' hybrid phase, brokers being rolled to KRaft
    assert status.phase_key == "brokers-to-kraft" and status.kraft_controller == 3000 \
        and status.kraft_controller_epoch == 5
    assert "KRaft offset 1234" in status.detail and "KRaft controller 3000" in status.detail
    assert status.kraft_brokers == (3,) and status.kraft_led == 1
    assert "Writes through ZooKeeper are disabled" in status.write_block_reason
    assert main(["migration", "--zk", zk_connect]) == 0
    out = capsys.readouterr().out
    assert "phase: Hybrid phase: brokers being rolled to KRaft" in out and "left /brokers/ids for KRaft: 3 (they lead 1 partition(s): not an outage)" \
        in out
    assert main(["migration", "--zk", zk_connect, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"]["migration_znode"]["kraft_metadata_offset"] == 1234
    # the writes refuse (the engine's own check of /controller)
    from core.topics import draft_create_topic
    with pytest.raises(KRaftControllerError, match="KRaft controller"):
        draft_create_topic(snap, "x", 1, 1)


def test_migrating_and_rolled_back_states(session):
    write_cluster(session, {1: None, 2: None}, controller=1)
    assert read_migration(session) is None
    assert read_migration_status(session, read_snapshot(session)) is None  # plain ZooKeeper mode
    session.create(zf.MIGRATION, KAFKA_MIGRATION_EMPTY)
    rolled = read_migration_status(session, read_snapshot(session))
    assert rolled.phase_key == "controllers-ready" and not rolled.kraft_controller_active
    assert rolled.kraft_brokers == () and "roll back" in rolled.write_block_reason
    session.set(zf.CONTROLLER, KAFKA_KRAFT_CONTROLLER)
    migrating = read_migration_status(session, read_snapshot(session))
    assert migrating.phase_key == "metadata-load" and migrating.kraft_controller == 3000  # offset -1: copying


def test_kraft_controller_without_migration_node(session):
    write_cluster(session, {1: None})
    session.create(zf.CONTROLLER, KAFKA_KRAFT_CONTROLLER)
    snap = read_snapshot(session)
    status = migration_status(snap, None)
    assert status.phase_key == "kraft-controller-only" and "may be stale" in status.detail
    assert kraft_brokers(snap) == ()
