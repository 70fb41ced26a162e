"""core.migration_phases: one phase per state of Kafka 3.9's KRaftMigrationDriver as ZooKeeper (and the Admin API)
show it, with the docs' revert row and steps."""

from __future__ import annotations

import pytest

from core.migration import ZkMigration, migration_status, write_block_reason
from core.migration_phases import (REVERT_MIGRATING_BROKERS, REVERT_MIGRATION_MODE, REVERT_PREPARING,
                                   REVERT_PROVISIONING, phase_of)
from core.model import Broker, ClusterSnapshot, Controller, Partition, Topic

EMPTY = ZkMigration(0, -1, -1, -1, -1)  # what a migration-enabled KRaft controller creates first
CLAIMED = ZkMigration(0, 3000, 5, -1, -1)  # BECOME_CONTROLLER: id and epoch, no offset yet
COPIED = ZkMigration(0, 3000, 5, 1234, 7)  # the initial copy done: dual-write
ZK_CTRL = Controller(1, 1)
KRAFT_CTRL = Controller(3000, 2, kraft_controller_epoch=5)


def snap(alive=(1, 2, 3), controller=ZK_CTRL, leaders=None, mode="zookeeper") -> ClusterSnapshot:
    """Topic t, one partition per broker 1-3, led by its first replica; `alive`: registered under /brokers/ids."""
    leaders = leaders or {0: 1, 1: 2, 2: 3}
    parts = tuple(Partition("t", p, (p + 1, (p + 1) % 3 + 1), leader=leaders[p], isr=(leaders[p],)) for p in range(3))
    brokers = tuple(Broker(b, None, "h", 9092 + b, alive=b in alive) for b in (1, 2, 3))
    return ClusterSnapshot("c", "2026-01-01T00:00:00Z", "zk", brokers, (Topic("t", parts),), controller, mode=mode)


def test_no_migration():
    p = phase_of(snap(), None)
    assert p.key == "none" and not p.begun and p.rollback_steps == REVERT_PREPARING
    assert migration_status(snap(), None) is None
    assert write_block_reason(ZK_CTRL, None) is None


def test_controllers_provisioned_waiting_for_brokers():
    p = phase_of(snap(), EMPTY)
    assert p.key == "controllers-ready" and p.rollback_possible and p.rollback_steps == REVERT_PROVISIONING
    assert p.rollback_from == "Provisioning the KRaft controller quorum"
    assert any("Admin API" in n for n in p.notes)  # which brokers have the flag: not in ZooKeeper
    assert "zookeeper.metadata.migration.enable=true" in p.next_step


def test_brokers_entering_migration_mode_names_who_is_and_is_not():
    p = phase_of(snap(), EMPTY, {1: True, 2: False, 3: True})
    assert p.key == "brokers-entering" and p.brokers_with_flag == (1, 3) and p.brokers_without_flag == (2,)
    assert "Restart broker(s) 2" in p.next_step
    assert p.rollback_steps[0].startswith("Back out: restart broker(s) 1, 3") and \
        p.rollback_steps[1:] == REVERT_PROVISIONING
    every = phase_of(snap(), EMPTY, {1: True, 2: True, 3: True})
    assert every.key == "controllers-ready" and "claim /controller shortly" in every.kafka_does
    early = phase_of(snap(), None, {1: True, 2: False, 3: False})  # flags before any controller
    assert early.key == "brokers-entering" and early.begun


def test_initial_metadata_load():
    p = phase_of(snap(controller=KRAFT_CTRL), CLAIMED)
    assert p.key == "metadata-load" and p.name == "Initial metadata load"
    assert p.rollback_from == "Enter Migration Mode on the brokers" and p.rollback_steps == REVERT_MIGRATION_MODE
    assert any("rmr /migration" in s for s in p.rollback_steps)


def test_hybrid_dual_write_with_brokers_in_zookeeper_mode():
    p = phase_of(snap(controller=KRAFT_CTRL), COPIED)
    assert p.key == "hybrid" and p.rollback_steps == REVERT_MIGRATION_MODE and p.kraft_brokers == ()
    assert "KRaft offset 1234" in p.kafka_does and "process.roles=broker" in p.next_step


def test_brokers_being_rolled_to_kraft():
    # broker 3 restarted as a KRaft broker: gone from /brokers/ids, still leading partition 2
    p = phase_of(snap(alive=(1, 2), controller=KRAFT_CTRL), COPIED)
    assert p.key == "brokers-to-kraft" and p.kraft_brokers == (3,) and p.zk_brokers == (1, 2)
    assert p.rollback_from == "Migrating brokers to KRaft" and p.rollback_steps == REVERT_MIGRATING_BROKERS
    assert "Restart broker(s) 1, 2 as KRaft brokers" in p.next_step
    s = migration_status(snap(alive=(1, 2), controller=KRAFT_CTRL), COPIED)
    assert s.phase_key == "brokers-to-kraft" and s.kraft_brokers == (3,) and s.kraft_led == 1


def test_dual_write_every_broker_in_kraft_says_it_cannot_tell_finalized():
    p = phase_of(snap(alive=(), controller=KRAFT_CTRL), COPIED)
    assert p.key == "dual-write" and p.rollback_possible and p.rollback_steps == REVERT_MIGRATING_BROKERS
    assert p.next_step.startswith("Finalize") and "no way back" in p.next_step
    assert any("POST_MIGRATION" in n and "cannot tell" in n for n in p.notes)


def test_finalized_seen_through_the_brokers():
    p = phase_of(snap(mode="kraft", controller=Controller(3000)), None)
    assert p.key == "finalized" and not p.rollback_possible and p.rollback_steps == ()


@pytest.mark.parametrize("migration,row", [(COPIED, REVERT_MIGRATING_BROKERS), (CLAIMED, REVERT_MIGRATION_MODE)])
def test_reverting_after_rmr_controller(migration, row):
    p = phase_of(snap(), migration)  # a ZooKeeper-mode broker is the controller again, /migration left
    assert p.key == "reverting" and p.rollback_steps == row and "KRaft controller 3000" in p.kafka_does


def test_kraft_controller_without_migration_node():
    p = phase_of(snap(controller=KRAFT_CTRL), None)
    assert p.key == "kraft-controller-only" and not p.rollback_possible


@pytest.mark.parametrize("controller,migration", [
    (ZK_CTRL, EMPTY), (ZK_CTRL, CLAIMED), (ZK_CTRL, COPIED), (KRAFT_CTRL, CLAIMED), (KRAFT_CTRL, COPIED),
    (KRAFT_CTRL, None)])
def test_every_phase_after_the_start_refuses_zookeeper_writes(controller, migration):
    assert phase_of(snap(controller=controller), migration).begun
    assert "Writes through ZooKeeper are disabled" in write_block_reason(controller, migration)


def test_to_dict_carries_the_rollback_steps():
    d = migration_status(snap(alive=(), controller=KRAFT_CTRL), COPIED).to_dict()
    assert d["key"] == "dual-write" and d["rollback"]["steps"] == list(REVERT_MIGRATING_BROKERS)
    assert d["rollback"]["from_section"] == "Migrating brokers to KRaft" and d["kraft_brokers"] == [1, 2, 3]
