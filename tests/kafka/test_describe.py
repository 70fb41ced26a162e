"""Keel's reads (snapshot, `describe` and its four filters) against what Kafka itself says about a healthy cluster.

Kafka's side: the Admin API's metadata (kafka-python) and Kafka's own TopicCommand (`kafka-topics --describe`)
run from the fetched jars. (The same filters with a broker down: test_live_and_broker_down.py.)
"""

from __future__ import annotations

import pytest

from core.model import ClusterSnapshot
from tests.kafka.realkafka import (RealKafka, assert_snapshot_matches_kafka, by_topic, describe_lines, has_topic_ids,
                                   run_filters, without_configs)


@pytest.fixture(scope="module")
def topics(kafka: RealKafka) -> RealKafka:
    from kafka.admin import NewTopic

    kafka.ensure_healthy()
    kafka.admin.create_topics([
        NewTopic("d-rf3", 4, 3, topic_configs={"min.insync.replicas": "2", "retention.ms": "3600000"}),
        NewTopic("d-rf1", replica_assignments={0: [1], 1: [2], 2: [3]}),
        NewTopic("d-rf2.min2", replica_assignments={0: [1, 2], 1: [2, 3], 2: [3, 1]},
                 topic_configs={"min.insync.replicas": "2"}),
    ])
    kafka.ensure_healthy()
    return kafka


def test_snapshot_equals_the_admin_api_metadata(topics: RealKafka):
    snap = assert_snapshot_matches_kafka(topics)
    # the cluster the fixture built: 3 racks, two log.dirs, our topics with ids (none before Kafka 2.8)
    assert {b.id: b.rack for b in snap.brokers} == {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    assert {"d-rf3", "d-rf1", "d-rf2.min2"} <= {t.name for t in snap.topics}
    assert [bool(t.topic_id) for t in snap.topics] == [has_topic_ids(topics.cluster.version)] * len(snap.topics)


def test_snapshot_command_equals_the_admin_api_metadata(topics: RealKafka):
    def via_cli() -> ClusterSnapshot:
        return ClusterSnapshot.from_json(topics.keel_ok("snapshot", "-o", "-"))

    snap = assert_snapshot_matches_kafka(topics, via_cli)
    assert snap.topic("d-rf3").config == {"min.insync.replicas": "2", "retention.ms": "3600000"}


def test_describe_prints_what_kafka_topics_prints(topics: RealKafka):
    """Same lines as `kafka-topics --describe` (Kafka's ELR columns aside), whole cluster and with --topic."""
    for args in ((), ("--topic", "d-rf.*")):
        kafka_lines = describe_lines(topics.topic_command("--describe", *args))
        keel_lines = describe_lines(topics.keel_ok("describe", *args))
        assert keel_lines == by_topic(keel_lines)  # Keel: sorted by topic
        assert without_configs(keel_lines) == without_configs(by_topic(kafka_lines))
        # Configs: Kafka lists every non-default value, the brokers' static settings included; Keel (reading
        # ZooKeeper) lists the topic's overrides, which are exactly Kafka's DYNAMIC_TOPIC_CONFIG entries.
        for line in keel_lines:
            if line.startswith("Topic: "):
                name = line.split("\t")[0].removeprefix("Topic: ")
                configs = line.split("\tConfigs: ")[1]
                dynamic = sorted(f"{k}={v}" for k, (v, src) in topics.topic_configs(name).items()
                                 if src == "DYNAMIC_TOPIC_CONFIG")
                assert configs == ",".join(dynamic), name


def test_describe_filters_list_what_kafka_topics_lists_on_a_healthy_cluster(topics: RealKafka):
    results = run_filters(topics)
    for flag, (keel, theirs) in results.items():
        assert theirs is None or keel == by_topic(theirs), flag  # None: not a filter of this Kafka's tool (< 2.3)
    # not vacuous: every partition of replication factor 1 (min.insync.replicas 1) is "at min ISR"
    assert [line.split("\t")[1:3] for line in results["--at-min-isr-partitions"][0] if "d-rf1" in line] == \
        [["Topic: d-rf1", f"Partition: {p}"] for p in range(3)]
    assert results["--under-replicated-partitions"][0] == []
