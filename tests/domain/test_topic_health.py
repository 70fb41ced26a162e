"""core.health.topic_health: a topic's health summed from its partitions' rows (issue 25 item 2: the Topics page
drew its own copy, which did not cap min.insync.replicas at the replica count on Kafka 3.7+ while the partition
table below it did, so the list said "under min ISR" for a topic the table called ok)."""

from __future__ import annotations

from core import health
from core.broker_defaults import BrokerDefaults
from core.model import Broker, ClusterSnapshot, Partition, Topic


def P(topic, n, replicas, leader=None, isr=None, adding=()):
    replicas = tuple(replicas)
    return Partition(topic=topic, partition=n, replicas=replicas, leader=replicas[0] if leader is None else leader,
                     isr=replicas if isr is None else tuple(isr), adding_replicas=tuple(adding))


def snap(*topics, alive=(1, 2, 3), dead=(), broker_configs=None) -> ClusterSnapshot:
    brokers = [Broker(id=b) for b in alive] + [Broker(id=b, alive=False) for b in dead]
    return ClusterSnapshot(cluster="t", captured_at="2026-01-01T00:00:00Z", source="zk:2181",
                           brokers=tuple(sorted(brokers, key=lambda b: b.id)), topics=tuple(topics),
                           broker_configs=broker_configs or {})


def of(s: ClusterSnapshot, name: str, defaults: BrokerDefaults | None = None) -> health.TopicHealth:
    return health.topic_health(s.topic(name), s.alive_broker_ids, health.min_isr_rule(s, defaults))


def test_counts_and_the_worst_status():
    t = Topic("orders", (P("orders", 0, [1, 2, 3]),                           # ok
                         P("orders", 1, [1, 2, 3], isr=[1, 2]),               # under-replicated, at min ISR 2
                         P("orders", 2, [2, 3, 1], leader=2, isr=[2]),        # under min ISR, off preferred
                         P("orders", 3, [1, 2, 4], adding=[4], isr=[1, 2])),  # moving: RF 2, in sync
              config={"min.insync.replicas": "2"})
    h = of(snap(t), "orders")
    assert (h.partitions, h.replication_factor) == (4, 3)
    assert (h.under_replicated, h.unavailable, h.under_min_isr, h.at_min_isr) == (2, 0, 1, 2)
    assert (h.off_preferred_leader, h.out_of_sync_replicas, h.min_isr) == (0, 4, (2,))
    assert h.status == "under min ISR"
    gone = snap(Topic("x", (P("x", 0, [4, 1], isr=[4]),)), dead=(4,))  # leader on a dead broker
    assert of(gone, "x").status == "unavailable" and of(gone, "x").unavailable == 1
    assert of(snap(Topic("y", (P("y", 0, [1, 2], isr=[1]),))), "y").status == "under-replicated"
    assert of(snap(Topic("z", (P("z", 0, [1, 2]),))), "z").status == "ok"


def test_the_topic_and_its_partition_rows_agree():
    replicas = [[1 + n % 3, 1 + (n + 1) % 3] for n in range(6)]
    t = Topic("t", tuple(P("t", n, r, isr=r[: 1 + n % 2]) for n, r in enumerate(replicas)))  # even n: one in sync
    s = snap(t)
    h = of(s, "t")
    rows = list(health.iter_partition_health(s))
    assert h.under_replicated == sum(r.under_replicated for r in rows) == 3
    assert h.under_min_isr == sum(r.under_min_isr for r in rows)
    assert h.out_of_sync_replicas == sum(len(r.out_of_sync) for r in rows)


def test_min_isr_is_capped_at_the_replica_count_on_kafka_3_7():
    # RF 2 under min.insync.replicas=3: Kafka 3.7+ leaders accept acks=all writes (effectiveMinIsr = 2)
    t = Topic("small", (P("small", 0, [1, 2]), P("small", 1, [2, 3])), config={"min.insync.replicas": "3"})
    s = snap(t)
    new = BrokerDefaults(version=(3, 7, 0))
    assert (of(s, "small", new).status, of(s, "small", new).min_isr, of(s, "small", new).under_min_isr) == \
        ("ok", (2,), 0)
    assert [r.under_min_isr for r in health.iter_partition_health(s, new)] == [False, False]  # the partition table
    old = of(s, "small", BrokerDefaults(version=(3, 6, 2)))
    assert (old.status, old.min_isr, old.under_min_isr) == ("under min ISR", (3,), 2)


def test_min_isr_per_leader_and_a_topic_without_partitions():
    # no override: each partition is checked against its leader's value
    s = snap(Topic("t", (P("t", 0, [1, 2]), P("t", 1, [2, 1]))), Topic("empty", ()),
             broker_configs={"1": {"min.insync.replicas": "2"}})
    assert of(s, "t").min_isr == (1, 2)
    assert of(s, "empty").min_isr == (1,) and of(s, "empty").status == "ok" and of(s, "empty").partitions == 0


def test_partition_flags_in_words():
    s = snap(Topic("t", (P("t", 0, [1, 2, 3], leader=2, isr=[2]), P("t", 1, [1, 2]))),
             broker_configs={"<default>": {"min.insync.replicas": "2"}})
    first, second = health.iter_partition_health(s)
    assert health.partition_flags(first) == ["under min ISR", "under-replicated", "leader off preferred",
                                             "replicas out of sync"]
    assert health.partition_flags(second) == []
