"""The cluster read through the brokers' Admin API (core.kafka.metadata, the reader for clusters without ZooKeeper)
is the cluster ZooKeeper holds: the same brokers and racks, topics and ids, leaders, ISR and epochs, overrides,
dynamic broker settings, running reassignments and down brokers, on real ZooKeeper-mode brokers read both ways.

What only ZooKeeper says is named and left out of the comparison: the controller's epoch, the listener name of an
endpoint (the Admin API gives host and port), a down broker's last registration."""

from __future__ import annotations

import dataclasses
import json
import uuid

from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import kafka_topic_id, read_snapshot
from core.model import ClusterSnapshot
from tests.kafka.realkafka import RealKafka, config_command, create_topic, eventually, keel_zk_ok, produce


def _admin_snapshot(kafka: RealKafka) -> ClusterSnapshot:
    with KafkaAdmin(kafka.bootstrap, timeout=20) as admin:
        return read_snapshot(admin)


def _comparable(snap: ClusterSnapshot) -> dict:
    """What both readers can know, as plain data."""
    return {
        "cluster_id": snap.cluster_id,
        "controller": snap.controller.broker_id if snap.controller else None,
        "brokers": [(b.id, b.rack, b.host, b.port, b.alive) for b in snap.brokers],
        "endpoints": {b.id: [e.split("://")[-1] for e in b.endpoints] for b in snap.brokers if b.alive},
        "topics": [dataclasses.asdict(t) | {"config": dict(t.config)} for t in snap.topics],
        "reassignment": [dataclasses.asdict(r) for r in snap.in_progress.reassignment],
        # an emptied /config/brokers/<default> znode stays in ZooKeeper: no settings either way
        "broker_configs": {k: dict(v) for k, v in snap.broker_configs.items() if v},
    }


def _same(kafka: RealKafka) -> tuple[ClusterSnapshot, ClusterSnapshot]:
    """Both readers agree (the brokers' metadata follows ZooKeeper within moments: asked again until it does)."""
    def agree():
        ours, zk = _admin_snapshot(kafka), kafka.snapshot()
        assert _comparable(ours) == _comparable(zk)
        return ours, zk
    return eventually(agree, timeout=30, interval=0.5)


def _alter_broker(kafka: RealKafka, entity: str, key: str, value: str | None) -> None:
    """Kafka's own kafka-configs on one broker (or the cluster default, entity "")."""
    which = ["--entity-default"] if entity == "" else ["--entity-name", entity]
    change = ["--add-config", f"{key}={value}"] if value is not None else ["--delete-config", key]
    config_command(kafka, "--alter", "--entity-type", "brokers", *which, *change)


def test_topic_ids_are_shown_as_kafka_prints_them():
    assert kafka_topic_id("5f1483c4-eb76-413a-bacf-46b2a665c87b") == "XxSDxOt2QTq6z0aypmXIew"
    assert kafka_topic_id("XxSDxOt2QTq6z0aypmXIew") == "XxSDxOt2QTq6z0aypmXIew"
    assert kafka_topic_id("00000000-0000-0000-0000-000000000000") is None
    assert kafka_topic_id(None) is None


def test_the_admin_api_reads_what_zookeeper_holds(healthy: RealKafka):
    suffix = uuid.uuid4().hex[:6]
    create_topic(healthy, f"ar-a-{suffix}", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                 **{"min.insync.replicas": "2", "retention.ms": "3600000"})
    create_topic(healthy, f"ar-b-{suffix}", {0: [2], 1: [3]})
    try:
        _alter_broker(healthy, "2", "follower.replication.throttled.rate", "7000000")
        _alter_broker(healthy, "", "log.cleaner.threads", "2")
        ours, zk = _same(healthy)
    finally:
        _alter_broker(healthy, "2", "follower.replication.throttled.rate", None)
        _alter_broker(healthy, "", "log.cleaner.threads", None)
    assert ours.topic(f"ar-a-{suffix}").config == {"min.insync.replicas": "2", "retention.ms": "3600000"}
    assert ours.broker_configs["2"]["follower.replication.throttled.rate"] == "7000000"
    assert ours.broker_configs["<default>"]["log.cleaner.threads"] == "2"
    assert ours.topic(f"ar-a-{suffix}").topic_id == zk.topic(f"ar-a-{suffix}").topic_id is not None


def test_a_running_reassignment_and_a_down_broker_read_the_same_both_ways(healthy: RealKafka, tmp_path):
    topic = f"ar-move-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3]})
    produce(healthy, topic, {0: 4_000_000})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [3, 2]}]}))
    keel_zk_ok(healthy, "execute", "--reassignment-json-file", str(plan), "--throttle", "100000")
    try:
        ours, _ = _same(healthy)
        moving = ours.topic(topic).partitions[0]
        assert (moving.adding_replicas, moving.removing_replicas) == ((3,), (1,))
        assert [(r.topic, r.partition, r.replicas) for r in ours.in_progress.reassignment] == [(topic, 0, (3, 2))]
    finally:
        keel_zk_ok(healthy, "cancel", "--reassignment-json-file", str(plan), "--bootstrap-server", healthy.bootstrap)

    healthy.cluster.stop_broker(3)
    try:
        def down():
            ours, zk = _same(healthy)
            assert [b.id for b in ours.brokers if not b.alive] == [3]  # listed by no one, still shown
            return ours
        ours = eventually(down, timeout=60, interval=1)
        assert all(3 not in p.isr for p in ours.topic(topic).partitions)
    finally:
        healthy.cluster.start_broker(3)
