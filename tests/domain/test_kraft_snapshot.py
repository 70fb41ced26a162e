"""The snapshot of a KRaft cluster (issue 26): its mode, controller quorum, fenced brokers and eligible leader
replicas survive the snapshot file; a ZooKeeper-mode snapshot's JSON is unchanged by them; bad values are refused."""

from __future__ import annotations

import json

import pytest

from core.errors import SnapshotFormatError
from core.kafka.metadata import quorum_of, snapshot_of
from core.model import Broker, ClusterSnapshot, Quorum, QuorumReplica

CLUSTER = {"cluster_id": "abc", "controller_id": 2, "brokers": [
    {"broker_id": 1, "host": "h1", "port": 9092, "rack": "a"},
    {"broker_id": 2, "host": "h2", "port": 9092, "rack": "b"},
    {"broker_id": 3, "host": "h3", "port": 9092, "rack": "c", "is_fenced": True}]}
TOPICS = [{"name": "t", "topic_id": "5f1483c4-eb76-413a-bacf-46b2a665c87b", "partitions": [
    {"partition_index": 0, "leader_id": 1, "leader_epoch": 4, "replica_nodes": [1, 3], "isr_nodes": [1],
     "eligible_leader_replicas": [3]},
    {"partition_index": 1, "leader_id": -1, "leader_epoch": 2, "replica_nodes": [4, 3], "isr_nodes": []}]}]
QUORUM = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{
    "partition_index": 0, "leader_id": 1, "leader_epoch": 7, "high_watermark": 120,
    "current_voters": [{"replica_id": 2, "log_end_offset": 118, "last_caught_up_timestamp": 1000},
                       {"replica_id": 1, "log_end_offset": 120, "last_caught_up_timestamp": 2000}],
    "observers": [{"replica_id": 3, "log_end_offset": -1, "last_caught_up_timestamp": -1}]}]}]}


def kraft_snapshot() -> ClusterSnapshot:
    return snapshot_of(CLUSTER, TOPICS, quorum=quorum_of(QUORUM), captured_at="2026-11-26T00:00:00Z")


def test_the_admin_api_answers_become_a_kraft_snapshot():
    snap = kraft_snapshot()
    assert snap.mode == "kraft" and snap.is_kraft
    # the active controller is the quorum's leader, not DescribeCluster's controller id (a random broker)
    assert snap.controller.broker_id == 1 and snap.controller.epoch == 7
    assert snap.quorum == Quorum(1, 7, 120, (QuorumReplica(1, 120, 2000), QuorumReplica(2, 118, 1000)),
                                 (QuorumReplica(3, None, None),))
    assert [snap.quorum.lag(v) for v in snap.quorum.voters] == [0, 2]
    assert snap.broker_by_id[3] == Broker(3, "c", "h3", 9092, ("h3:9092",), alive=False, fenced=True)
    assert snap.broker_by_id[4] == Broker(4, alive=False)  # a replica on a broker nobody lists: down, kept
    t = snap.topic("t")
    assert t.topic_id == "XxSDxOt2QTq6z0aypmXIew"
    assert t.partitions[0].elr == (3,) and t.partitions[1].leader == -1


def test_the_snapshot_file_keeps_all_of_it():
    snap = kraft_snapshot()
    doc = json.loads(snap.to_json())
    assert doc["mode"] == "kraft" and doc["quorum"]["leader"] == 1
    assert ClusterSnapshot.from_json(snap.to_json()) == snap


def test_a_zookeeper_snapshot_file_is_unchanged():
    snap = snapshot_of({k: v for k, v in CLUSTER.items()}, [], captured_at="2026-11-26T00:00:00Z")
    doc = json.loads(snap.to_json())
    assert snap.mode == "zookeeper" and "mode" not in doc and "quorum" not in doc
    assert all("fenced" not in b for b in doc["brokers"] if b["id"] != 3)


@pytest.mark.parametrize("change, fragment", [
    (lambda d: d.update(mode="zk"), "'mode' must be"),
    (lambda d: d["brokers"][0].update(fenced=True), "'fenced' must be true only"),
    (lambda d: d["quorum"].update(epoch="x"), "quorum"),
    (lambda d: d["quorum"]["voters"][0].update(id=None), "quorum.voters[0]"),
])
def test_bad_kraft_fields_are_refused(change, fragment):
    doc = json.loads(kraft_snapshot().to_json())
    change(doc)
    with pytest.raises(SnapshotFormatError) as e:
        ClusterSnapshot.from_json(json.dumps(doc))
    assert fragment in str(e.value)
