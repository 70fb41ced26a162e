"""Issue 27 on real ZooKeeper trees as Kafka 3.9's migration driver leaves them: `migration` names each phase with
the next step and the docs' revert steps, keeps a timeline of the phases it saw, reports readiness (a malformed
/migration, a reassignment, a deletion, colliding controller ids), and every ZooKeeper write stays refused in every
phase after the migration begins."""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.audit.migration_timeline import timeline
from core.audit.store import Store
from core.cli import main
from core.model import TopicPartitionReplicas
from core.migration_phases import REVERT_MIGRATING_BROKERS, REVERT_MIGRATION_MODE, REVERT_PROVISIONING
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.zk.test_migration import KAFKA_KRAFT_CONTROLLER, KAFKA_MIGRATION, KAFKA_MIGRATION_EMPTY

CLAIMED = zf.encode_migration(3000, 5, -1, -1)  # BECOME_CONTROLLER: controller id and epoch, no offset yet


def plant(s: ZkSession, phase: str) -> None:
    """Brokers 1-3 (those still in ZooKeeper mode registered), topic orders on all three."""
    for child in s.children("/") or ():
        if child != "zookeeper":
            s.delete(f"/{child}", recursive=True)
    registered = {"brokers-to-kraft": (1, 2), "dual-write": ()}.get(phase, (1, 2, 3))
    write_cluster(s, {b: None for b in registered})
    kraft = phase in ("metadata-load", "hybrid", "brokers-to-kraft", "dual-write")
    s.create(zf.CONTROLLER, KAFKA_KRAFT_CONTROLLER if kraft else zf.encode_controller(1, 1))
    node = {"controllers-ready": KAFKA_MIGRATION_EMPTY, "metadata-load": CLAIMED, "reverting": KAFKA_MIGRATION}
    if phase != "none":
        s.create(zf.MIGRATION, node.get(phase, KAFKA_MIGRATION))
    write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})


PHASES = {"none": None, "controllers-ready": REVERT_PROVISIONING, "metadata-load": REVERT_MIGRATION_MODE,
          "hybrid": REVERT_MIGRATION_MODE, "brokers-to-kraft": REVERT_MIGRATING_BROKERS,
          "dual-write": REVERT_MIGRATING_BROKERS, "reverting": REVERT_MIGRATING_BROKERS}


@pytest.mark.parametrize("phase", list(PHASES))
def test_each_phase_named_with_next_step_and_revert_steps(phase, zk_connect, tmp_path, capsys):
    with ZkSession.open(zk_connect) as s:
        plant(s, phase)
    store = str(tmp_path / "k.sqlite")
    assert main(["migration", "--zk", zk_connect, "--store", store, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["key"] == phase and doc["next_step"] and doc["kafka_does"]
    if PHASES[phase] is not None:
        assert doc["rollback"]["possible"] and doc["rollback"]["steps"] == list(PHASES[phase])
    assert main(["migration", "--zk", zk_connect, "--store", store]) == 0
    out = capsys.readouterr().out
    assert f"phase: {doc['name']}" in out and "next step: " in out and "readiness:" in out
    if phase != "none":
        assert "rollback: possible" in out and "Writes through ZooKeeper are disabled" in out


@pytest.mark.parametrize("phase", [p for p in PHASES if p != "none"])
def test_zookeeper_writes_refused_in_every_phase_after_the_start(phase, zk_connect, tmp_path, capsys):
    with ZkSession.open(zk_connect) as s:
        plant(s, phase)
        before = dump_tree(s)
    code = main(["create-topic", "--zk", zk_connect, "--topic", "fresh", "--partitions", "1",
                 "--replication-factor", "1", "--store", str(tmp_path / "k.sqlite")])
    assert code == 1 and "Writes through ZooKeeper are disabled" in capsys.readouterr().err
    with ZkSession.open(zk_connect) as s:
        assert dump_tree(s) == before


def test_timeline_records_each_phase_change_once(zk_connect, tmp_path, capsys):
    store = tmp_path / "k.sqlite"
    seen = []
    for phase in ("none", "controllers-ready", "controllers-ready", "metadata-load", "hybrid", "brokers-to-kraft"):
        with ZkSession.open(zk_connect) as s:
            plant(s, phase)
        assert main(["migration", "--zk", zk_connect, "--store", str(store), "--cluster", "prod"]) == 0
        seen.append(capsys.readouterr().out)
    rows = timeline(Store(store), "prod")
    assert [r.key for r in rows] == ["none", "controllers-ready", "metadata-load", "hybrid", "brokers-to-kraft"]
    assert "timeline (phases Keel has seen):" in seen[-1] and "Initial metadata load" in seen[-1]
    assert all(a.actor == "keel" for a in Store(store).actions("prod", kind="migration-phase"))


def test_readiness_from_zookeeper(zk_connect, tmp_path, capsys):
    with ZkSession.open(zk_connect) as s:
        plant(s, "none")
        s.create(zf.MIGRATION, b'{"version":0,"kraft_metadata_offset":"x"}')  # KAFKA-19480: malformed
        s.create(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas("orders", 0, (2, 3, 1))]))
        s.create(f"{zf.DELETE_TOPICS}/orders")
    assert main(["migration", "--zk", zk_connect, "--store", str(tmp_path / "k.sqlite"), "--json",
                 "--controller-ids", "3,3000"]) == 0
    doc = json.loads(capsys.readouterr().out)
    verdicts = {c["key"]: c["verdict"] for c in doc["readiness"]}
    assert verdicts["migration-node"] == "fail" and verdicts["reassignment"] == "fail"
    assert verdicts["deletion"] == "fail" and verdicts["controller-ids"] == "fail" and verdicts["versions"] == "unknown"
    assert doc["migration_znode_error"] and not doc["ready"]
    assert main(["migration", "--zk", zk_connect, "--controller-ids", "x"]) != 0
    assert "KRaft controller ids must be comma-separated non-negative node ids" in capsys.readouterr().err
