"""core.migration_readiness: each pre-flight check passes on a ready cluster and fails (with its fix) on the
problem Kafka 3.9's migration documentation names; a fact nobody read is "unknown", never a pass."""

from __future__ import annotations

from dataclasses import replace

from core.migration_readiness import FAIL, OK, UNKNOWN, ReadinessFacts, readiness, ready
from core.model import Quorum, QuorumReplica

CFG = {"inter.broker.protocol.version": "3.9-IV0", "reserved.broker.max.id": "1000",
       "zookeeper.metadata.migration.enable": "false"}
READY = ReadinessFacts(
    broker_ids=(1, 2, 3), assigned_ids=(1, 2, 3), migration_node="absent", controller_ids=(3000, 3001, 3002),
    versions={1: (3, 9), 2: (3, 9), 3: (3, 9)}, configs={b: dict(CFG) for b in (1, 2, 3)}, offline_dirs=(),
    quorum=Quorum(3000, 4, 500, (QuorumReplica(3000, 500), QuorumReplica(3001, 499), QuorumReplica(3002, 500))))


def verdicts(facts: ReadinessFacts) -> dict[str, str]:
    return {c.key: c.verdict for c in readiness(facts)}


def one(facts: ReadinessFacts, key: str):
    return next(c for c in readiness(facts) if c.key == key)


def test_a_ready_cluster_passes_every_check():
    assert set(verdicts(READY).values()) == {OK} and ready(readiness(READY))


def test_a_broker_not_on_3_9():
    c = one(replace(READY, versions={1: (3, 9), 2: (3, 8), 3: None}), "versions")
    assert c.verdict == FAIL and "2: 3.8" in c.detail and "3: unknown" in c.detail and "Upgrade" in c.fix


def test_inter_broker_protocol_not_3_9():
    configs = {b: dict(CFG) for b in (1, 2, 3)}
    configs[2]["inter.broker.protocol.version"] = "3.8-IV0"
    configs[3] = "no answer in time"
    c = one(replace(READY, configs=configs), "ibp")
    assert c.verdict == FAIL and "2: 3.8-IV0" in c.detail and "3: no answer in time" in c.detail
    assert "inter.broker.protocol.version=3.9" in c.fix


def test_controller_ids_colliding_with_a_broker_and_not_given():
    c = one(replace(READY, controller_ids=(2, 3000)), "controller-ids")
    assert c.verdict == FAIL and "Controller id(s) 2 are broker ids" in c.detail
    down = one(replace(READY, broker_ids=(1, 2), controller_ids=(3,)), "controller-ids")  # 3 is down, still a broker
    assert down.verdict == FAIL
    assert one(replace(READY, controller_ids=None), "controller-ids").verdict == UNKNOWN


def test_broker_id_above_reserved_broker_max_id():
    configs = {b: dict(CFG) for b in (1, 2, 1001)}
    c = one(replace(READY, broker_ids=(1, 2, 1001), configs=configs), "reserved-ids")
    assert c.verdict == FAIL and "1001 > 1000" in c.detail and "broker.id explicitly" in c.fix
    # without the Admin API, a generated id above the default still fails
    assert one(replace(READY, broker_ids=(1, 1001), configs=None), "reserved-ids").verdict == FAIL
    assert one(replace(READY, configs=None, admin_error="x"), "reserved-ids").verdict == UNKNOWN


def test_offline_log_dir():
    c = one(replace(READY, offline_dirs=((2, "/data/b", "KafkaStorageError"),)), "log-dirs")
    assert c.verdict == FAIL and "broker 2 /data/b: KafkaStorageError" in c.detail and "KAFKA-16431" in c.detail


def test_malformed_migration_node():
    c = one(replace(READY, migration_node="Failed to parse the migration json"), "migration-node")
    assert c.verdict == FAIL and "KAFKA-19480" in c.detail and "rmr /migration" in c.fix
    assert one(replace(READY, migration_node="ok"), "migration-node").verdict == OK


def test_reassignment_and_deletion_in_flight():
    c = one(replace(READY, reassigning=("orders-0",)), "reassignment")
    assert c.verdict == FAIL and "orders-0" in c.detail and "cancel" in c.fix
    d = one(replace(READY, deleting=("old",)), "deletion")
    assert d.verdict == FAIL and "old" in d.detail


def test_a_stale_reassignment_entry_is_removed_then_the_controller_moved():
    """KafkaController re-registers its watch on /admin/reassign_partitions only when it deletes the node itself
    (PartitionReassignmentHandler.handleDeletion does nothing): after a hand deletion, the next reassignment written
    there waits for another controller."""
    c = one(replace(READY, reassigning=("gone-0 (topic deleted: a stale entry)",)), "reassignment")
    assert c.verdict == FAIL and "rmr /admin/reassign_partitions" in c.fix and "rmr /controller" in c.fix
    assert "rmr /controller" not in one(replace(READY, reassigning=("orders-0",)), "reassignment").fix


def test_quorum_without_leader_behind_or_unseen():
    assert one(replace(READY, quorum=Quorum(None, 4, 0, READY.quorum.voters)), "quorum").verdict == FAIL
    behind = Quorum(3000, 4, 50_000, (QuorumReplica(3000, 50_000), QuorumReplica(3001, None),
                                       QuorumReplica(3002, 50_000)))
    c = one(replace(READY, quorum=behind), "quorum")
    assert c.verdict == FAIL and "3001 (never fetched)" in c.detail
    assert one(replace(READY, quorum=None), "quorum").verdict == UNKNOWN


def test_without_the_admin_api_its_checks_are_unknown_with_the_reason():
    facts = replace(READY, versions=None, configs=None, offline_dirs=None, quorum=None,
                    admin_error="no Kafka broker of h:1 answered")
    v = verdicts(facts)
    assert {v[k] for k in ("versions", "ibp", "reserved-ids", "log-dirs", "quorum")} == {UNKNOWN}
    assert "no Kafka broker of h:1 answered" in one(facts, "versions").detail
    assert not ready(readiness(facts))
