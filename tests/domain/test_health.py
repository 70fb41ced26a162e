"""core.health: Kafka's describe predicates, the controller's leader-imbalance check, the summary."""

from __future__ import annotations

import pytest

from core import health
from core.errors import ValidationError
from core.health import (
    broker_loads,
    compile_topic_regex,
    filter_partitions,
    is_at_min_isr,
    is_off_preferred_leader,
    is_under_min_isr,
    is_under_replicated,
    is_unavailable,
    leader_imbalance_threshold,
    matching_topics,
    min_isr,
    out_of_sync_replicas,
    partition_health,
    replication_factor,
    summarize,
)
from core.model import (
    Broker,
    ClusterSnapshot,
    Controller,
    InProgress,
    Partition,
    Problem,
    Topic,
    TopicPartitionReplicas,
)


def P(topic, n, replicas, leader=None, isr=None, adding=(), removing=(), state=True):
    replicas = tuple(replicas)
    p = Partition(topic=topic, partition=n, replicas=replicas,
                  leader=replicas[0] if leader is None else leader,
                  isr=replicas if isr is None else tuple(isr),
                  adding_replicas=tuple(adding), removing_replicas=tuple(removing))
    return p if state else p.with_state(None)


def T(name, *parts, config=None):
    return Topic(name=name, partitions=tuple(parts), config=dict(config or {}))


def snap(topics, brokers=(1, 2, 3), dead=(), racks=None, controller=1, broker_configs=None,
         in_progress=InProgress(), problems=()):
    racks = racks or {}
    bs = [Broker(id=b, rack=racks.get(b)) for b in brokers] + [Broker(id=b, rack=racks.get(b), alive=False) for b in dead]
    return ClusterSnapshot(
        cluster="test", captured_at="2026-01-01T00:00:00Z", source="zk:2181",
        brokers=tuple(sorted(bs, key=lambda b: b.id)), topics=tuple(sorted(topics, key=lambda t: t.name)),
        controller=None if controller is None else Controller(broker_id=controller, epoch=1),
        in_progress=in_progress, broker_configs=broker_configs or {}, problems=tuple(problems),
    )


def rows(s):
    return {(h.topic, h.partition): h for h in partition_health(s)}


ALIVE = frozenset({1, 2, 3})


# --- under-replicated ------------------------------------------------------------------------


def test_under_replicated_is_isr_smaller_than_replicas():
    assert is_under_replicated(P("t", 0, [1, 2, 3], isr=[1, 2])) is True
    assert is_under_replicated(P("t", 0, [1, 2, 3], isr=[3, 1, 2])) is False
    assert is_under_replicated(P("t", 0, [1], isr=[1])) is False


def test_under_replicated_ignores_adding_replicas_of_a_reassignment():
    # moving [1,2,3] -> [2,3,4]: replicas = target ∪ origin, adding = {4}, removing = {1}
    p_ok = P("t", 0, [2, 3, 4, 1], leader=2, isr=[1, 2, 3], adding=[4], removing=[1])
    assert replication_factor(p_ok) == 3
    assert is_under_replicated(p_ok) is False
    p_bad = P("t", 0, [2, 3, 4, 1], leader=2, isr=[2, 3], adding=[4], removing=[1])
    assert is_under_replicated(p_bad) is True
    # two adding replicas: RF is 5 - 2 = 3
    p_two = P("t", 0, [4, 5, 1, 2, 3], leader=1, isr=[1, 2, 3], adding=[4, 5], removing=[1, 2])
    assert replication_factor(p_two) == 3
    assert is_under_replicated(p_two) is False


def test_adding_replica_not_in_replicas_does_not_reduce_rf():
    # Kafka only discounts adding replicas that are still part of the replica list
    p = P("t", 0, [1, 2, 3], isr=[1, 2], adding=[9])
    assert replication_factor(p) == 3
    assert is_under_replicated(p) is True


# --- unavailable -----------------------------------------------------------------------------


def test_unavailable_leader_minus_one_dead_or_unknown():
    assert is_unavailable(P("t", 0, [1, 2], leader=-1, isr=[1]), ALIVE) is True
    assert is_unavailable(P("t", 0, [4, 2], leader=4, isr=[4, 2]), ALIVE) is True  # 4 not registered
    assert is_unavailable(P("t", 0, [1, 2]), ALIVE) is False


def test_dead_listed_broker_as_leader_is_unavailable_and_under_min_isr():
    s = snap([T("t", P("t", 0, [4, 1], leader=4, isr=[4, 1]))], dead=(4,))
    h = rows(s)[("t", 0)]
    assert (h.unavailable, h.under_min_isr, h.under_replicated) == (True, True, False)


# --- min.insync.replicas ---------------------------------------------------------------------


@pytest.mark.parametrize("config,expected", [
    ({}, 1),
    ({"min.insync.replicas": "2"}, 2),
    ({"min.insync.replicas": " 3 "}, 3),
    ({"min.insync.replicas": "abc"}, 1),
    ({"min.insync.replicas": "0"}, 1),
    ({"min.insync.replicas": "-2"}, 1),
    ({"min.insync.replicas": ""}, 1),
])
def test_min_isr_values(config, expected):
    assert min_isr(T("t", config=config)) == expected


def test_min_isr_falls_back_to_the_leaders_dynamic_config_then_the_cluster_default():
    # Kafka: the leader enforces its own value; broker 1's /config/brokers/1 beats /config/brokers/<default>
    # (this test expected 2 for partitions led by broker 1 before issue 23: the per-broker layer was ignored)
    s = snap([T("a", P("a", 0, [1, 2, 3]), P("a", 1, [2, 3, 1])),
              T("b", P("b", 0, [1, 2, 3]), config={"min.insync.replicas": "bad"}),
              T("c", P("c", 0, [1, 2, 3]), config={"min.insync.replicas": "1"})],
             broker_configs={"<default>": {"min.insync.replicas": "2"}, "1": {"min.insync.replicas": "3"}})
    r = rows(s)
    assert (r[("a", 0)].min_isr, r[("a", 1)].min_isr, r[("b", 0)].min_isr, r[("c", 0)].min_isr) == (3, 2, 3, 1)


# --- under / at min ISR ----------------------------------------------------------------------


def test_under_and_at_min_isr():
    assert is_under_min_isr(P("t", 0, [1, 2, 3], isr=[1]), 2, ALIVE) is True
    assert is_under_min_isr(P("t", 0, [1, 2, 3], isr=[1, 2]), 2, ALIVE) is False
    assert is_at_min_isr(P("t", 0, [1, 2, 3], isr=[1, 2]), 2) is True
    assert is_at_min_isr(P("t", 0, [1, 2, 3], isr=[1, 2, 3]), 2) is False
    # no leader: under min ISR whatever the ISR; at-min-ISR has no leader check in Kafka
    leaderless = P("t", 0, [1, 2, 3], leader=-1, isr=[1, 2])
    assert is_under_min_isr(leaderless, 2, ALIVE) is True
    assert is_at_min_isr(leaderless, 2) is True


def test_partition_health_rows_use_topic_min_isr():
    s = snap([T("t", P("t", 0, [1, 2, 3], isr=[1, 2]), P("t", 1, [2, 3, 1], isr=[2]),
                P("t", 2, [3, 1, 2]), config={"min.insync.replicas": "2"})])
    r = rows(s)
    got = {k: (h.under_replicated, h.unavailable, h.under_min_isr, h.at_min_isr) for k, h in r.items()}
    assert got == {("t", 0): (True, False, False, True),
                   ("t", 1): (True, False, True, False),
                   ("t", 2): (False, False, False, False)}
    assert r[("t", 1)].out_of_sync == (3, 1)
    assert [h.healthy for h in partition_health(s)] == [False, False, True]


# --- missing state ---------------------------------------------------------------------------


def test_missing_state_partition():
    p = P("t", 0, [1, 2, 3], state=False)
    assert (p.leader, p.isr, p.has_state) == (-1, (), False)
    s = snap([T("t", p)])
    h = rows(s)[("t", 0)]
    assert (h.under_replicated, h.unavailable, h.under_min_isr, h.at_min_isr) == (True, True, True, False)
    assert h.off_preferred_leader is False  # no leadership info: the controller does not count it
    assert h.out_of_sync == (1, 2, 3)
    summary = summarize(s)
    assert (summary.missing_state, summary.offline, summary.unavailable) == (1, 1, 1)
    b1 = broker_loads(s)[0]
    assert (b1.broker_id, b1.preferred, b1.preferred_not_leading, b1.imbalance_ratio) == (1, 1, 0, 0.0)


# --- replica verification --------------------------------------------------------------------


def test_isr_set_vs_replica_set():
    differs = rows(snap([T("t", P("t", 0, [1, 2, 3], isr=[3, 2, 1]), P("t", 1, [1, 2, 3], isr=[1, 2]),
                           P("t", 2, [1, 2], isr=[1, 2, 3]))]))  # 2: an ISR member outside the assignment
    assert [differs[("t", n)].isr_differs for n in range(3)] == [False, True, True]
    assert out_of_sync_replicas(P("t", 0, [3, 1, 2], isr=[1])) == (3, 2)
    s = snap([T("t", P("t", 0, [1, 2, 3], isr=[2, 1, 3]), P("t", 1, [1, 2, 3], isr=[1, 3]),
                P("t", 2, [2, 3, 4, 1], leader=2, isr=[1, 2, 3], adding=[4], removing=[1]))])
    assert [(h.partition, h.out_of_sync) for h in partition_health(s) if h.isr_differs] == [(1, (2,)), (2, (4,))]
    assert summarize(s).isr_differs == 2


# --- leader imbalance ------------------------------------------------------------------------


def _imbalance_snapshot(not_led_by_1, total=10, **kw):
    """Broker 1 is the preferred replica of `total` partitions; `not_led_by_1` of them are led by 2."""
    parts = [P("t", i, [1, 2], leader=2 if i < not_led_by_1 else 1) for i in range(total)]
    return snap([T("t", *parts)], brokers=(1, 2), **kw)


def test_imbalance_ratio_and_strict_threshold():
    b1, b2 = broker_loads(_imbalance_snapshot(1))
    assert (b1.preferred, b1.preferred_not_leading, b1.imbalance_ratio, b1.over_threshold) == (10, 1, 0.1, False)
    assert (b2.preferred, b2.imbalance_ratio, b2.over_threshold) == (0, None, False)
    b1, _ = broker_loads(_imbalance_snapshot(2))
    assert (b1.preferred_not_leading, b1.imbalance_ratio, b1.over_threshold) == (2, 0.2, True)
    assert summarize(_imbalance_snapshot(2)).brokers_over_threshold == (1,)


def test_leader_minus_one_counts_as_not_leading():
    s = snap([T("t", P("t", 0, [1, 2], leader=-1, isr=[1]), P("t", 1, [1, 2]))], brokers=(1, 2))
    b1 = broker_loads(s)[0]
    assert (b1.preferred, b1.preferred_not_leading, b1.imbalance_ratio, b1.over_threshold) == (2, 1, 0.5, True)
    assert b1.electable == 1  # preferred 1 is alive and in the ISR


def test_threshold_resolution():
    s = _imbalance_snapshot(2)
    assert leader_imbalance_threshold(s) == 10
    # the controller's own value applies to every broker
    s_ctrl = _imbalance_snapshot(2, broker_configs={"1": {"leader.imbalance.per.broker.percentage": "25"}})
    assert leader_imbalance_threshold(s_ctrl) == 25
    assert broker_loads(s_ctrl)[0].over_threshold is False
    # a value set for a non-controller broker is ignored, even for that broker's own row
    s_other = _imbalance_snapshot(2, controller=2,
                                  broker_configs={"1": {"leader.imbalance.per.broker.percentage": "25"}})
    assert leader_imbalance_threshold(s_other) == 10
    assert broker_loads(s_other)[0].over_threshold is True
    # the cluster default applies to the controller when it has no value of its own
    s_def = _imbalance_snapshot(2, controller=2,
                                broker_configs={"<default>": {"leader.imbalance.per.broker.percentage": "20"},
                                                "1": {"leader.imbalance.per.broker.percentage": "5"}})
    assert leader_imbalance_threshold(s_def) == 20
    assert broker_loads(s_def)[0].over_threshold is False  # 0.2 is not > 0.2
    # no controller known: <default> only
    s_none = _imbalance_snapshot(2, controller=None,
                                 broker_configs={"<default>": {"leader.imbalance.per.broker.percentage": "30"}})
    assert leader_imbalance_threshold(s_none) == 30
    # invalid -> Kafka's default; explicit override wins
    s_bad = _imbalance_snapshot(2, broker_configs={"1": {"leader.imbalance.per.broker.percentage": "ten"}})
    assert leader_imbalance_threshold(s_bad) == 10
    assert leader_imbalance_threshold(s_ctrl, override=15) == 15
    assert broker_loads(s_ctrl, threshold_percent=15)[0].over_threshold is True
    assert summarize(s_ctrl, threshold_percent=15).leader_imbalance_threshold == 15


def test_topics_being_deleted_are_left_out_of_imbalance_but_not_of_load():
    s = snap([T("keep", P("keep", 0, [1, 2]), P("keep", 1, [1, 2])),
              T("gone", P("gone", 0, [1, 2], leader=2), P("gone", 1, [1, 2], leader=2))],
             brokers=(1, 2), in_progress=InProgress(deletion=("gone",)))
    b1, b2 = broker_loads(s)
    assert (b1.preferred, b1.preferred_not_leading, b1.over_threshold) == (2, 0, False)
    assert (b1.replicas, b1.leaders, b2.replicas, b2.leaders) == (4, 2, 4, 2)
    summary = summarize(s)
    assert summary.topics_pending_deletion == 1
    assert summary.off_preferred_leader == 2  # the plain count still sees them
    assert summary.preferred_replica_imbalance == 0  # the controller metric does not


def test_reassignment_stays_in_ratio_but_blocks_auto_rebalance():
    parts = [P("t", 0, [1, 2], leader=2), P("t", 1, [1, 2], leader=2), P("t", 2, [1, 2]),
             P("t", 3, [1, 2, 3], leader=2, isr=[1, 2], adding=[3], removing=[])]
    s = snap([T("t", *parts)])
    b1 = broker_loads(s)[0]
    assert (b1.preferred, b1.preferred_not_leading, b1.imbalance_ratio) == (4, 3, 0.75)
    summary = summarize(s)
    assert (summary.reassigning_partitions, summary.reassignment_in_progress) == (1, True)
    # an /admin/reassign_partitions entry alone also blocks it
    pending = snap([T("t", *parts[:3], P("t", 3, [1, 2, 3], leader=2))],
                   in_progress=InProgress(reassignment=(TopicPartitionReplicas("t", 3, (3, 2, 1)),)))
    assert summarize(pending).reassignment_in_progress is True


def test_auto_rebalance_needs_preferred_alive_and_in_isr():
    parts = [P("t", 0, [1, 2], leader=2, isr=[2, 1]),   # electable
             P("t", 1, [1, 2], leader=2, isr=[2]),      # 1 not in ISR
             P("t", 2, [1, 2]), P("t", 3, [1, 2])]
    s = snap([T("t", *parts)], brokers=(1, 2))
    b1 = broker_loads(s)[0]
    assert (b1.preferred_not_leading, b1.electable, b1.over_threshold) == (2, 1, True)
    # preferred replica dead: nothing to elect
    s_dead = snap([T("t", P("t", 0, [4, 2], leader=2, isr=[2, 4]))], brokers=(2,), dead=(4,))
    b4 = [b for b in broker_loads(s_dead) if b.broker_id == 4][0]
    assert (b4.alive, b4.over_threshold, b4.electable) == (False, True, 0)


def test_preferred_replica_imbalance_metric_with_adding_preferred():
    # preferred replica 4 is still being added and not in the ISR: not counted
    not_yet = P("t", 0, [4, 1, 2], leader=1, isr=[1, 2], adding=[4], removing=[2])
    # once 4 has joined the ISR it counts (ControllerContext.hasPreferredLeader)
    joined = P("t", 1, [4, 1, 2], leader=1, isr=[1, 2, 4], adding=[4], removing=[2])
    plain = P("t", 2, [1, 2], leader=2)
    s = snap([T("t", not_yet, joined, plain)], brokers=(1, 2, 4))
    summary = summarize(s)
    assert (summary.preferred_replica_imbalance, summary.off_preferred_leader) == (2, 3)


# --- brokers ---------------------------------------------------------------------------------


def test_broker_rows_include_zero_replica_and_unregistered_dead_brokers():
    s = snap([T("t", P("t", 0, [1, 5], isr=[1]), P("t", 1, [5, 1], leader=1, isr=[1]))],
             brokers=(1, 2), dead=(3,), racks={1: "ra", 2: "rb", 3: "ra"})
    got = [(b.broker_id, b.rack, b.alive, b.listed, b.replicas, b.leaders, b.preferred, b.preferred_not_leading)
           for b in broker_loads(s)]
    assert got == [(1, "ra", True, True, 2, 2, 1, 0),
                   (2, "rb", True, True, 0, 0, 0, 0),
                   (3, "ra", False, True, 0, 0, 0, 0),
                   (5, None, False, False, 2, 0, 1, 1)]


# --- filters ---------------------------------------------------------------------------------


def _filter_snapshot():
    return snap([
        T("orders", P("orders", 0, [1, 2, 3]), P("orders", 1, [2, 3, 1], isr=[2, 3]),
          P("orders", 2, [3, 1, 2], leader=-1, isr=[3]), config={"min.insync.replicas": "2"}),
        T("orders-dlq", P("orders-dlq", 0, [1, 2], isr=[1])),
        T("payments", P("payments", 0, [1, 2, 3], isr=[1, 2, 3]), P("payments", 1, [4, 1], leader=4, isr=[4, 1])),
        T("__consumer_offsets", P("__consumer_offsets", 0, [1, 2, 3], isr=[1])),
    ])


def _keys(s):
    return [(p.topic, p.partition) for p in s.partitions()]


def test_filter_no_flags_keeps_everything_of_selected_topics():
    s = _filter_snapshot()
    assert _keys(filter_partitions(s)) == _keys(s)
    assert _keys(filter_partitions(s, topic_regex="orders")) == [("orders", 0), ("orders", 1), ("orders", 2)]


def test_filter_flags_each():
    s = _filter_snapshot()
    assert _keys(filter_partitions(s, under_replicated=True)) == [
        ("__consumer_offsets", 0), ("orders", 1), ("orders", 2), ("orders-dlq", 0)]
    assert _keys(filter_partitions(s, unavailable=True)) == [("orders", 2), ("payments", 1)]
    assert _keys(filter_partitions(s, under_min_isr=True)) == [("orders", 2), ("payments", 1)]
    assert _keys(filter_partitions(s, at_min_isr=True)) == [
        ("__consumer_offsets", 0), ("orders", 1), ("orders-dlq", 0)]


def test_filter_flags_combine_as_or():
    s = _filter_snapshot()
    got = filter_partitions(s, topic_regex="orders.*|payments", under_replicated=True, unavailable=True)
    assert _keys(got) == [("orders", 1), ("orders", 2), ("orders-dlq", 0), ("payments", 1)]
    assert [t.name for t in got.topics] == ["orders", "orders-dlq", "payments"]


def test_topic_regex_like_kafka_topics():
    s = _filter_snapshot()
    assert matching_topics(s, "orders") == ["orders"]  # whole-name match, not a search
    assert matching_topics(s, "order") == []
    assert matching_topics(s, "orders.*") == ["orders", "orders-dlq"]
    assert matching_topics(s, "orders, payments") == ["orders", "payments"]  # ',' -> '|', spaces dropped
    assert matching_topics(s, "'payments'") == ["payments"]  # quotes stripped
    assert matching_topics(s, ".*") == ["__consumer_offsets", "orders", "orders-dlq", "payments"]
    assert matching_topics(s, ".*", exclude_internal=True) == ["orders", "orders-dlq", "payments"]
    assert _keys(filter_partitions(s, exclude_internal=True, under_replicated=True)) == [
        ("orders", 1), ("orders", 2), ("orders-dlq", 0)]


def test_invalid_regex_is_a_validation_error():
    with pytest.raises(ValidationError) as e:
        filter_partitions(_filter_snapshot(), topic_regex="orders(")
    assert e.value.message == "orders( is an invalid regex."
    with pytest.raises(ValidationError):
        compile_topic_regex("[a-")


# --- summary ---------------------------------------------------------------------------------


def test_summary_counts_exact():
    s = snap(
        [T("a", P("a", 0, [1, 2, 3]), P("a", 1, [2, 3, 1], isr=[2, 3]), P("a", 2, [3, 1, 2], leader=1),
           config={"min.insync.replicas": "2"}),
         T("b", P("b", 0, [4, 1], leader=4, isr=[4, 1]), P("b", 1, [1, 4], leader=-1, isr=[1]),
           P("b", 2, [2, 4], state=False))],
        brokers=(1, 2, 3, 6), dead=(4,), racks={1: "r1", 2: "r1", 3: "r2"},
        problems=[Problem("/brokers/topics/x", "bad json")],
    )
    sm = summarize(s)
    assert (sm.brokers_total, sm.brokers_alive, sm.brokers_dead) == (5, 4, 1)
    assert (sm.topics, sm.partitions, sm.replicas) == (2, 6, 15)
    # a1 URP + at-min; b0 dead leader; b1 leaderless (ISR [1] = min 1: also at-min); b2 no state
    assert (sm.under_replicated, sm.unavailable, sm.under_min_isr, sm.at_min_isr) == (3, 3, 3, 2)
    assert (sm.offline, sm.missing_state, sm.isr_differs) == (2, 1, 3)
    assert (sm.off_preferred_leader, sm.preferred_replica_imbalance) == (2, 2)
    assert sm.leaders_per_broker == {1: 2, 2: 1, 3: 0, 4: 1, 6: 0}
    assert sm.replicas_per_broker == {1: 5, 2: 4, 3: 3, 4: 3, 6: 0}
    assert sm.racks == {"r1": (1, 2), "r2": (3,)}
    assert sm.brokers_without_rack == (4, 6)
    assert [b.broker_id for b in sm.brokers] == [1, 2, 3, 4, 6]
    assert (sm.controller_id, sm.problems, sm.reassignment_in_progress) == (1, 1, False)
    assert sm.brokers_over_threshold == (1, 3)  # 1: b1 leaderless (1/2); 3: a2 led by 1 (1/1)


def test_empty_cluster():
    sm = summarize(snap([], brokers=(1,)))
    assert (sm.partitions, sm.replicas, sm.brokers_total, sm.under_replicated) == (0, 0, 1, 0)
    assert sm.replicas_per_broker == {1: 0}
    assert partition_health(snap([])) == []


def test_summary_survives_snapshot_json_round_trip():
    s = _filter_snapshot()
    assert summarize(ClusterSnapshot.from_json(s.to_json())) == summarize(s)


def test_module_is_pure():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(health.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "re", "dataclasses", "typing", "core"}
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "open" not in calls


def test_reassigning_partition_in_rows_and_summary():
    s = snap([T("t", P("t", 0, [2, 3, 4, 1], leader=2, isr=[1, 2, 3], adding=[4], removing=[1]),
                P("t", 1, [2, 3, 4, 1], leader=2, isr=[2, 3], adding=[4], removing=[1]))], brokers=(1, 2, 3, 4))
    r = rows(s)
    assert (r[("t", 0)].under_replicated, r[("t", 1)].under_replicated) == (False, True)
    assert (r[("t", 0)].reassigning, r[("t", 0)].isr_differs) == (True, True)
    assert summarize(s).under_replicated == 1
    assert _keys(filter_partitions(s, under_replicated=True)) == [("t", 1)]


def test_summary_rows_and_filters_agree_on_a_random_cluster():
    import random

    rng = random.Random(7)
    topics = []
    for ti in range(30):
        parts = []
        for pi in range(20):
            reps = rng.sample(range(1, 9), 3)
            isr = [r for r in reps if rng.random() < 0.8]
            leader = rng.choice(isr) if isr and rng.random() < 0.9 else -1
            adding = [reps[-1]] if rng.random() < 0.1 else []
            parts.append(P(f"t{ti}", pi, reps, leader=leader, isr=isr, adding=adding, state=rng.random() < 0.97))
        topics.append(T(f"t{ti}", *parts, config={"min.insync.replicas": str(rng.choice([1, 2, 3, "x"]))}))
    s = snap(topics, brokers=(1, 2, 3, 4, 5, 6), dead=(7,), in_progress=InProgress(deletion=("t3",)))
    sm = summarize(s)
    hs = partition_health(s)
    assert sm.partitions == len(hs) == 600
    for field, flag in (("under_replicated", "under_replicated"), ("unavailable", "unavailable"),
                        ("under_min_isr", "under_min_isr"), ("at_min_isr", "at_min_isr")):
        n_rows = sum(getattr(h, field) for h in hs)
        assert getattr(sm, field) == n_rows
        assert filter_partitions(s, **{flag: True}).partition_count == n_rows
    assert sm.isr_differs == sum(h.isr_differs for h in hs)
    assert sm.off_preferred_leader == sum(h.off_preferred_leader for h in hs)
    assert sum(b.replicas for b in sm.brokers) == sm.replicas
    assert sm.under_replicated > 0 and sm.unavailable > 0 and sm.at_min_isr > 0


def test_off_preferred_leader_predicate():
    assert is_off_preferred_leader(P("t", 0, [1, 2], leader=2)) is True
    assert is_off_preferred_leader(P("t", 0, [1, 2], leader=-1, isr=[2])) is True
    assert is_off_preferred_leader(P("t", 0, [1, 2])) is False
    assert is_off_preferred_leader(P("t", 0, [1, 2], state=False)) is False
