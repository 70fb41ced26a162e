"""The Reassign page's pure helpers (dashboard/reassign/plan_view.py): requests, imported plans, the cluster as it will
be once a running reassignment completes, the heatmap folding, waves and the time estimate. No ZooKeeper, no
Streamlit: the page's AppTests (tests/dashboard/test_dashboard_reassign.py) cover the drawing."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.balance import STRATEGIES, PlanRequest
from core.errors import PlanError
from core.model import InProgress, TopicPartitionReplicas
from dashboard.reassign import plan_view
from tests.domain.test_balance import snapshot

RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


def cluster():
    """Brokers 1-4 hold everything, 5 and 6 are new and empty."""
    return snapshot(RACKS, {
        "orders": [(1, 3, 2), (3, 2, 4), (2, 4, 1), (4, 1, 3)],
        "logs": [(1, 3), (3, 1), (2, 4)],
    })


def test_requests_wait_for_their_goals_input():
    snap = cluster()
    assert plan_view.build_request(snap, plan_view.GOAL_DRAIN, "balanced") is None
    assert plan_view.build_request(snap, plan_view.GOAL_RF, "balanced", topics=["logs"]) is None
    assert plan_view.build_request(snap, plan_view.GOAL_IMPORT, "balanced") is None
    drain = plan_view.build_request(snap, plan_view.GOAL_DRAIN, "balanced", drain=[4, 2], topics=["ignored"])
    assert drain.drain_brokers == (2, 4) and drain.topics is None
    rf = plan_view.build_request(snap, plan_view.GOAL_RF, "balanced", topics=["logs"], replication_factor=3)
    assert (rf.topics, rf.replication_factor) == (("logs",), 3)
    # kafka-generate, like --generate, needs the topics listed: "all" becomes every topic
    assert plan_view.build_request(snap, plan_view.GOAL_FILL, "kafka-generate").topics == ("logs", "orders")
    assert plan_view.build_request(snap, plan_view.GOAL_FILL, "balanced").topics is None


def test_request_keys_change_with_every_input_but_not_with_the_sizes_object():
    snap = cluster()
    base = plan_view.build_request(snap, plan_view.GOAL_REBALANCE, "balanced")
    key = plan_view.request_key("balanced", base, None)
    assert plan_view.request_key("balanced", replace(base, seed=1), None) != key
    assert plan_view.request_key("kafka-generate", base, None) != key
    assert plan_view.request_key("balanced", base, "abc") != key
    assert plan_view.request_key("balanced", replace(base, partition_sizes={("logs", 0): 1}), None) == key


def test_fill_plan_matches_the_engine_and_its_diff_table():
    snap = cluster()
    assert plan_view.empty_brokers(snap) == [5, 6]
    request = plan_view.build_request(snap, plan_view.GOAL_FILL, "balanced")
    planned = plan_view.run_planner(snap, "balanced", request)
    expected = STRATEGIES["balanced"](snap, PlanRequest())
    assert planned.plan_json == expected.reassignment_json()
    assert planned.rollback_json == expected.rollback_json()
    table = plan_view.diff_table(planned)
    assert len(table) == len(expected.proposed)
    assert table["Moves"].sum() == expected.report.replicas_moved
    row = table.iloc[0]
    key = (row["Topic"], int(row["Partition"]))
    assert row["Before"] == plan_view.ids(expected.rollback[key])
    assert row["After"] == plan_view.ids(expected.proposed[key])


def test_an_imported_plan_is_validated_as_kafka_does_and_scored_as_given():
    snap = cluster()
    with pytest.raises(PlanError, match="non-existent brokerIDs: 9"):
        plan_view.import_plan(snap, json.dumps({"version": 1, "partitions": [
            {"topic": "logs", "partition": 0, "replicas": [9, 1]}]}))
    doc = json.dumps({"version": 1, "partitions": [{"topic": "logs", "partition": 0, "replicas": [5, 6]}]})
    planned = plan_view.import_plan(snap, doc)
    assert planned.source == plan_view.IMPORTED
    assert planned.result.report.replicas_moved == 2
    assert json.loads(planned.rollback_json)["partitions"] == [
        {"topic": "logs", "partition": 0, "replicas": [1, 3], "log_dirs": ["any", "any"]}]
    assert plan_view.moves_of(planned.plan, planned.before) == (1, 2)


def test_settled_puts_moving_partitions_at_their_target():
    snap = cluster()
    assert plan_view.settled(snap) is snap
    moving = snap.topics[0].partitions[0]  # logs-0 on (1, 3), moving to (5, 3) via target + origin
    topics = (replace(snap.topics[0], partitions=(replace(moving, replicas=(5, 3, 1), adding_replicas=(5,),
                                                          removing_replicas=(1,)),
                                                  *snap.topics[0].partitions[1:])), *snap.topics[1:])
    running = replace(snap, topics=topics,
                      in_progress=InProgress(reassignment=(TopicPartitionReplicas("logs", 0, (5, 3)),)))
    settled = plan_view.settled(running)
    assert settled.topic_by_name["logs"].partitions[0].replicas == (5, 3)
    assert settled.in_progress.reassignment == ()
    # a partition still removing replicas after its /admin entry is gone: the removed ones do not count
    pruned = replace(running, in_progress=InProgress())
    assert plan_view.settled(pruned).topic_by_name["logs"].partitions[0].replicas == (5, 3)


def test_heatmap_folds_the_long_tail_into_one_row_and_keeps_the_sums():
    before = {(f"t{i}", 0): (1, 2) for i in range(30)} | {("big", p): (1, 3) for p in range(5)}
    after = {k: (3, 2) if k[0] == "big" else v for k, v in before.items()}
    heat = plan_view.topic_broker_counts(before, after, [1, 2, 3], top=5)
    assert heat.topics[0] == "big" and heat.topics[-1] == "other (27 topics)" and len(heat.topics) == 5
    assert heat.before[0] == [5, 0, 5] and heat.after[0] == [0, 5, 5]
    assert heat.before[-1] == [27, 27, 0]
    assert sum(map(sum, heat.before)) == sum(map(sum, heat.after)) == 2 * 35
    small = plan_view.topic_broker_counts(before, after, list(range(1, 101)), max_cells=300)
    assert small.cells <= 300


def test_waves_and_the_time_at_the_throttle():
    snap = cluster()
    sizes = {(p.topic, p.partition): 10_000_000 for p in snap.partitions()}
    request = plan_view.build_request(snap, plan_view.GOAL_FILL, "balanced", sizes=sizes, wave_partitions=1)
    planned = plan_view.run_planner(snap, "balanced", request)
    waves = plan_view.wave_keys(planned)
    assert len(waves) == plan_view.wave_count(planned) == len(planned.plan.entries)
    assert sorted(k for w in waves for k in w) == sorted((e.topic, e.partition) for e in planned.plan.entries)
    first = plan_view.subset(planned.plan, waves[0])
    assert [(e.topic, e.partition) for e in first.entries] == waves[0]
    # one partition per wave: its leader sends 10 MB per new replica at 1 MB/s (a reorder copies nothing)
    per_wave = [len(set(planned.result.proposed[k]) - set(planned.result.rollback[k])) for [k] in waves]
    assert 0 in per_wave and 2 in per_wave
    assert plan_view.estimate_seconds(planned, snap, 1_000_000) == pytest.approx(10.0 * sum(per_wave))
    assert plan_view.estimate_seconds(planned, snap, None) is None
    unsized = plan_view.run_planner(snap, "balanced", plan_view.build_request(snap, plan_view.GOAL_FILL, "balanced"))
    assert plan_view.estimate_seconds(unsized, snap, 1_000_000) is None


@pytest.mark.parametrize("seconds, text", [(None, "unknown"), (0.2, "< 1 s"), (59, "59 s"), (61, "1 min 01 s"),
                                           (3600 * 5 + 60, "5 h 01 min"), (86400 * 2 + 3600, "2 d 1 h")])
def test_durations(seconds, text):
    assert plan_view.human_duration(seconds) == text


@pytest.mark.parametrize("n, text", [(None, "unknown"), (999, "999 B"), (1_500_000, "1.50 MB"),
                                     (2.5e15, "2.50 PB")])
def test_bytes(n, text):
    assert plan_view.human_bytes(n) == text
