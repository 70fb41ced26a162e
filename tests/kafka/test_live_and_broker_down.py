"""A broker killed with -9 and started again, watched by Keel's live view and compared with Kafka's own tools.

One story, in order (module scope): the fixture creates topics whose health changes when broker `victim` dies and
starts a LiveCluster; then `kill -9`; Keel's live view must show the broker down with every ISR shrunk within
replica.lag.time.max.ms + 5 s; `describe` and its four filters must list exactly what TopicCommand lists; a
topic created meanwhile by another client must appear without a reload; after a restart the broker is back. The
module leaves the cluster healthy (all brokers up, full ISRs) whatever happens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from sandbox.processes.kafka import BROKER_SETTINGS
from core.zk.session import ZkSession
from core.zk.watcher import LiveCluster
from tests.kafka.realkafka import (RealKafka, assert_snapshot_matches_kafka, by_topic, describe_lines, run_filters,
                                   without_configs)
from tests.support.kafka_tree import dump_tree

DETECTION_LIMIT = int(BROKER_SETTINGS["replica.lag.time.max.ms"]) / 1000 + 5


@dataclass
class Story:
    kafka: RealKafka
    live: LiveCluster
    victim: int
    killed_at: float
    detected_after: float | None = None


def _down(victim: int):
    def predicate(snap) -> bool:
        broker = next((b for b in snap.brokers if b.id == victim), None)
        parts = [p for t in snap.topics for p in t.partitions]
        return (broker is not None and not broker.alive
                and all(victim not in p.isr or p.isr == (victim,) for p in parts)  # a sole replica keeps its ISR
                and all(p.leader != victim for p in parts))
    return predicate


@pytest.fixture(scope="module")
def story(kafka: RealKafka):
    from kafka.admin import NewTopic

    kafka.ensure_healthy()
    kafka.admin.create_topics([
        NewTopic("h-rf1", replica_assignments={0: [1], 1: [2], 2: [3]}),
        NewTopic("h-rf2.min2", replica_assignments={0: [1, 2], 1: [2, 3], 2: [3, 1]},
                 topic_configs={"min.insync.replicas": "2"}),
        NewTopic("h-rf3.min2", replica_assignments={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                 topic_configs={"min.insync.replicas": "2"}),
        NewTopic("h-rf3.min3", replica_assignments={0: [2, 1, 3], 1: [3, 2, 1]},
                 topic_configs={"min.insync.replicas": "3"}),
    ])
    for name, n in (("h-rf1", 3), ("h-rf2.min2", 3), ("h-rf3.min2", 3), ("h-rf3.min3", 2)):
        kafka.wait_online(name, n)
    kafka.ensure_healthy()

    session = ZkSession.open(kafka.zk_connect)
    live = LiveCluster(session, cluster="real").start()
    controller = kafka.snapshot().controller.broker_id
    victim = max(b for b in kafka.cluster.broker_ids if b != controller)  # not the controller: no failover here
    try:
        assert not _down(victim)(live.snapshot())
        killed_at = time.monotonic()
        assert kafka.cluster.kill_broker(victim)
        yield Story(kafka, live, victim, killed_at)
    finally:
        live.stop()
        session.close()
        kafka.ensure_healthy()


def _wait_down(story: Story) -> None:
    if story.detected_after is None:
        story.live.wait_for(_down(story.victim), timeout=max(0.0, story.killed_at + 60 - time.monotonic()))
        story.detected_after = time.monotonic() - story.killed_at


def test_live_view_shows_the_killed_broker_down_with_isrs_shrunk(story: Story):
    snap = story.live.wait_for(_down(story.victim), timeout=DETECTION_LIMIT + 30)
    story.detected_after = time.monotonic() - story.killed_at
    assert story.detected_after <= DETECTION_LIMIT, \
        f"broker {story.victim} shown down after {story.detected_after:.1f} s (limit {DETECTION_LIMIT:g} s)"
    assert story.live.status == "connected" and story.live.resyncs == 0
    # the partitions the victim led now have a new leader from the ISR, or none when it was the only replica
    rf1 = snap.topic("h-rf1").partitions[story.victim - 1]
    assert (rf1.leader, rf1.isr) == (-1, (story.victim,))
    # and the live view is what Kafka's Admin API says (and what a fresh snapshot says)
    assert_snapshot_matches_kafka(story.kafka, story.live.snapshot)
    assert_snapshot_matches_kafka(story.kafka)


def test_describe_and_its_filters_list_what_kafka_topics_lists_with_a_broker_down(story: Story):
    _wait_down(story)
    kafka = story.kafka
    assert_snapshot_matches_kafka(kafka)  # the brokers' metadata has caught up with ZooKeeper
    results = run_filters(kafka)
    for flag, (keel, theirs) in results.items():
        assert theirs is None or keel == by_topic(theirs), flag  # None: not a filter of this Kafka's tool (< 2.3)
    assert without_configs(describe_lines(kafka.keel_ok("describe"))) == \
        without_configs(by_topic(describe_lines(kafka.topic_command("--describe"))))

    def listed(flag: str, topic: str) -> list[int]:
        return [int(line.split("\tPartition: ")[1].split("\t")[0]) for line in results[flag][0]
                if f"Topic: {topic}\t" in line]

    v = story.victim  # not vacuous: every filter lists something, and the right things
    assert listed("--unavailable-partitions", "h-rf1") == [v - 1]
    assert listed("--under-replicated-partitions", "h-rf3.min2") == [0, 1, 2]
    assert listed("--at-min-isr-partitions", "h-rf3.min2") == [0, 1, 2]
    assert listed("--under-min-isr-partitions", "h-rf3.min3") == [0, 1]
    assert listed("--under-min-isr-partitions", "h-rf2.min2") == sorted(
        p for p, r in {0: [1, 2], 1: [2, 3], 2: [3, 1]}.items() if v in r)


def test_replication_factor_above_the_live_brokers_is_refused_like_kafka(story: Story):
    from kafka.admin import NewTopic

    _wait_down(story)
    kafka = story.kafka
    theirs = kafka.admin.create_topics([NewTopic("h-too-wide", 1, 3)], validate_only=True,
                                       raise_errors=False)["topics"][0]["error_message"]
    assert theirs == "Replication factor: 3 larger than available brokers: 2."
    before = dump_tree(kafka.zk, "/")
    code, _, err = kafka.keel("create-topic", "--topic", "h-too-wide", "--partitions", "1",
                              "--replication-factor", "3")
    assert (code, err.strip()) == (1, f"error: {theirs}")
    assert dump_tree(kafka.zk, "/") == before


def test_topic_created_by_another_client_appears_without_a_reload(story: Story):
    from kafka.admin import NewTopic

    _wait_down(story)
    generation = story.live.generation
    story.kafka.admin.create_topics([NewTopic("h-new", 4, 2)])  # placed by Kafka over the two live brokers

    def present(snap) -> bool:
        t = snap.topic("h-new")
        return t is not None and len(t.partitions) == 4 and all(p.has_state and p.leader >= 0 for p in t.partitions)

    snap = story.live.wait_for(present, timeout=15)
    assert story.live.resyncs == 0 and story.live.generation > generation
    assert story.victim not in {b for p in snap.topic("h-new").partitions for b in p.replicas}
    assert_snapshot_matches_kafka(story.kafka, story.live.snapshot)


def test_restarted_broker_is_back_in_the_live_view(story: Story):
    _wait_down(story)
    kafka, v = story.kafka, story.victim
    kafka.cluster.start_broker(v)

    def back(snap) -> bool:
        broker = next(b for b in snap.brokers if b.id == v)
        parts = [p for t in snap.topics for p in t.partitions]
        return broker.alive and all(set(p.isr) == set(p.replicas) for p in parts)

    story.live.wait_for(back, timeout=60)
    snap = story.live.snapshot()
    assert snap.topic("h-rf1").partitions[v - 1].leader == v  # its only replica is back: led again
    assert story.live.resyncs == 0
    assert_snapshot_matches_kafka(kafka, story.live.snapshot)
