"""Keel's topic writes (create-topic, add-partitions, alter-config, delete-topic) carried out by a real Kafka.

Keel writes ZooKeeper; Kafka's controller and brokers must then do exactly what Keel asked: the partitions exist
with Keel's placement (Admin API metadata), data flows through every partition, the topic id is the one Keel
wrote (Kafka 2.8+; before, neither Keel nor Kafka writes one), a config change is applied by the brokers, a deleted
topic's logs go away.
"""

from __future__ import annotations

import time
import uuid

from core.assignment import add_partitions_assignment, assign_replicas, brokers_for_mode
from tests.kafka.realkafka import RealKafka, eventually, has_topic_ids


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def assert_kafka_has(kafka: RealKafka, topic: str, assignment: dict[int, list[int]], timeout: float = 20) -> dict:
    """Kafka's metadata shows exactly `assignment`, each partition led by its first replica with a full ISR."""

    def check() -> dict:
        meta = kafka.kafka_topics().get(topic)
        assert meta is not None, f"{topic} not in Kafka's metadata yet"
        assert {p: v[1] for p, v in meta["partitions"].items()} == assignment
        assert {p: v[0] for p, v in meta["partitions"].items()} == {p: r[0] for p, r in assignment.items()}
        assert {p: v[2] for p, v in meta["partitions"].items()} == assignment
        return meta

    return eventually(check, timeout=timeout)


def produce_and_consume_each_partition(kafka: RealKafka, topic: str, partitions: int) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", linger_ms=0)
    try:
        sent = {p: f"{topic}/{p}".encode() for p in range(partitions)}
        for p, value in sent.items():
            meta = producer.send(topic, value, partition=p).get(timeout=20)
            assert (meta.partition, meta.offset) == (p, 0)
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        got: dict[int, bytes] = {}
        deadline = time.monotonic() + 20
        while len(got) < partitions and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    got[tp.partition] = r.value
        assert got == sent
    finally:
        consumer.close()


def test_create_topic_rack_aware_is_placed_by_kafka_exactly_as_keel_wrote(healthy: RealKafka):
    topic = name("w-rack")
    healthy.keel_ok("create-topic", "--topic", topic, "--partitions", "6", "--replication-factor", "3",
                    "--fixed-start-index", "1", "--config", "min.insync.replicas=2")
    written = healthy.assignment(topic)
    snap = healthy.snapshot()
    racks = {b.id: b.rack for b in snap.brokers}
    # Keel's placement is Kafka's algorithm (rack-aware, start index 1) over the three racks ...
    assert written == assign_replicas(brokers_for_mode(snap.brokers, "enforced"), 6, 3, 1)
    assert all(len({racks[b] for b in r}) == 3 for r in written.values())
    # ... and Kafka's controller creates exactly that, with the topic id Keel wrote
    meta = assert_kafka_has(healthy, topic, written)
    zk_id = healthy.topic_znodes(topic)["topic"].get("topic_id")
    assert bool(zk_id) == has_topic_ids(healthy.cluster.version)  # Kafka 2.8+ only (realkafka.has_topic_ids)
    assert meta["id"] == zk_id == snap.topic(topic).topic_id
    produce_and_consume_each_partition(healthy, topic, 6)


def test_create_topic_with_explicit_assignment(healthy: RealKafka):
    topic = name("w-explicit")
    healthy.keel_ok("create-topic", "--topic", topic, "--replica-assignment", "3:1,1:2,2:3,3:2,1:3")
    expected = {0: [3, 1], 1: [1, 2], 2: [2, 3], 3: [3, 2], 4: [1, 3]}
    assert healthy.assignment(topic) == expected
    meta = assert_kafka_has(healthy, topic, expected)
    zk_id = healthy.topic_znodes(topic)["topic"].get("topic_id")
    assert bool(zk_id) == has_topic_ids(healthy.cluster.version) and meta["id"] == zk_id
    produce_and_consume_each_partition(healthy, topic, 5)


def test_kafkas_own_random_placement_is_one_of_keels(healthy: RealKafka):
    """Kafka's CreateTopics (random start index and shift) lands on one of the placements Keel's algorithm gives."""
    from kafka.admin import NewTopic

    topic = name("w-kafka")
    healthy.admin.create_topics([NewTopic(topic, 7, 2)])
    theirs = eventually(lambda: healthy.assignment(topic))
    brokers = brokers_for_mode(healthy.snapshot().brokers, "enforced")

    class Draws:  # the two random draws of AdminUtils.assignReplicasToBrokers, fixed
        def __init__(self, start: int, shift: int):
            self.values = [start, shift]

        def randrange(self, n: int) -> int:
            return self.values.pop(0)

    family = [assign_replicas(brokers, 7, 2, rng=Draws(s, h)) for s in range(3) for h in range(3)]
    assert theirs in family


def test_add_partitions_kafka_creates_keels_placement_and_kafka_would_place_them_the_same(healthy: RealKafka):
    from kafka.admin import NewPartitions, NewTopic

    ours, theirs = name("w-grow-keel"), name("w-grow-kafka")
    start = {0: [2, 3], 1: [3, 1], 2: [1, 2]}
    healthy.admin.create_topics([NewTopic(t, replica_assignments=start) for t in (ours, theirs)])
    assert_kafka_has(healthy, ours, start)

    healthy.keel_ok("add-partitions", "--topic", ours, "--partitions", "7")
    grown = healthy.assignment(ours)
    assert {p: r for p, r in grown.items() if p < 3} == start
    assert {p: r for p, r in grown.items() if p >= 3} == add_partitions_assignment(
        start, brokers_for_mode(healthy.snapshot().brokers, "enforced"), 7)
    assert_kafka_has(healthy, ours, grown)
    produce_and_consume_each_partition(healthy, ours, 7)

    # Kafka's own CreatePartitions on an identical topic places the new partitions exactly as Keel did
    healthy.admin.create_partitions({theirs: NewPartitions(7)})

    def grown_by_kafka() -> dict[int, list[int]]:
        placed = healthy.assignment(theirs)
        assert len(placed) == 7
        return placed

    assert eventually(grown_by_kafka) == grown


def test_alter_config_takes_effect_on_the_brokers(healthy: RealKafka):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError

    topic = name("w-config")
    healthy.keel_ok("create-topic", "--topic", topic, "--replica-assignment", "1:2:3")
    assert_kafka_has(healthy, topic, {0: [1, 2, 3]})
    big = b"x" * 4000
    producer = KafkaProducer(bootstrap_servers=healthy.bootstrap, acks="all", retries=0, linger_ms=0)
    try:
        producer.send(topic, big).get(timeout=20)

        healthy.keel_ok("alter-config", "--topic", topic, "--add-config", "max.message.bytes=2048",
                        "--add-config", "retention.ms=7200000")
        configs = eventually(lambda: _has(healthy.topic_configs(topic), {"max.message.bytes": "2048",
                                                                         "retention.ms": "7200000"}))
        assert configs["max.message.bytes"] == ("2048", "DYNAMIC_TOPIC_CONFIG")

        # describe_configs reads ZooKeeper; the leader applies a change once it has read the change notification
        # Keel wrote, a moment later: both checks below are retried until then
        def accepted() -> bool:
            try:
                producer.send(topic, big).get(timeout=20)
            except MessageSizeTooLargeError:
                return False
            return True

        def refused() -> None:  # the leader applied the new limit
            assert not accepted(), "the leader still accepts a 4000-byte message"

        eventually(refused, timeout=15)

        healthy.keel_ok("alter-config", "--topic", topic, "--delete-config", "max.message.bytes")
        configs = eventually(lambda: _has(healthy.topic_configs(topic), {"retention.ms": "7200000"},
                                          gone=["max.message.bytes"]))
        assert configs["max.message.bytes"][1] == "DEFAULT_CONFIG"
        eventually(lambda: _assert_true(accepted(), "the leader still refuses a 4000-byte message"), timeout=15)
    finally:
        producer.close()


def _assert_true(value: bool, message: str) -> None:
    assert value, message


def _has(configs: dict[str, tuple[str, str]], want: dict[str, str], gone: list[str] = ()) -> dict:
    assert {k: configs[k][0] for k in want} == want
    for k in gone:
        assert configs[k][1] != "DYNAMIC_TOPIC_CONFIG", (k, configs[k])
    return configs


def test_delete_topic_removes_it_from_metadata_and_its_logs_from_both_log_dirs(healthy: RealKafka):
    topic = name("w-delete")
    healthy.keel_ok("create-topic", "--topic", topic, "--partitions", "6", "--replication-factor", "3")
    assert_kafka_has(healthy, topic, healthy.assignment(topic))
    produce_and_consume_each_partition(healthy, topic, 6)
    folders = healthy.log_folders(topic)
    assert len(folders) == 18
    assert {f.split("/")[-2] for f in folders} == {"data-0", "data-1"}  # JBOD: both log.dirs hold replicas

    out = healthy.keel_ok("delete-topic", "--topic", topic)
    assert f"marked topic {topic} for deletion" in out

    def gone() -> None:
        assert topic not in healthy.admin.list_topics()
        znodes = healthy.topic_znodes(topic)
        assert znodes["topic"] is None and znodes["config"] is None
        assert not healthy.zk.exists(f"/admin/delete_topics/{topic}")
        assert healthy.log_folders(topic) == []

    eventually(gone, timeout=30)
    assert healthy.snapshot().topic(topic) is None
