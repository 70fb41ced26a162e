"""Plan documents: every parse and validation message (Kafka's wording where Kafka has one), formatting, rollback."""

from __future__ import annotations

import json

import pytest

from core import plans
from core.errors import PlanError
from core.model import Broker, ClusterSnapshot, Partition, Topic
from core.plans import (ReassignmentEntry, ReassignmentPlan, format_election, format_reassignment, parse_election,
                        parse_reassignment, parse_topics_to_move, rollback_for, validate_reassignment)


def snapshot() -> ClusterSnapshot:
    """Brokers 1-3 alive, 4 dead (still in an assignment); topics "t" (2 partitions) and "a-b" (1)."""
    brokers = (Broker(1), Broker(2), Broker(3), Broker(4, alive=False))
    topics = (Topic("a-b", (Partition("a-b", 0, (3, 1)),)),
              Topic("t", (Partition("t", 0, (1, 2)), Partition("t", 1, (2, 4)))))
    return ClusterSnapshot("c", "", "test", brokers, topics)


def reassignment(*entries: dict, **extra) -> str:
    return json.dumps({"version": 1, "partitions": list(entries), **extra})


def raises(call, message: str) -> PlanError:
    with pytest.raises(PlanError) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)
    return info.value


# --- topics to move -----------------------------------------------------------------------------


def test_topics_to_move_parse_keeps_file_order_and_defaults_the_version():
    assert parse_topics_to_move('{"topics":[{"topic":"t"},{"topic":"a-b"}],"version":1}') == ("t", "a-b")
    assert parse_topics_to_move(b'{"topics":[{"topic":"t"}]}') == ("t",)


@pytest.mark.parametrize("text, message", [
    ('{"topics":[{"topic":"t"}],"version":2}', "Not supported version field value 2"),
    ('{"topics":[{"topic":"t"}],"version":"1"}', '"version" must be an integer, got "1"'),
    ('{"topics":[{"topic":"t"},{"topic":"u"},{"topic":"t"}]}', "List of topics to reassign contains duplicate "
                                                               "entries: t"),
    ('{"topics":[]}', "List of topics to reassign is empty"),
    ('{"version":1}', "List of topics to reassign is empty"),
    ('{"topics":{"topic":"t"}}', '"topics" must be a list, got an object'),
    ('{"topics":["t"]}', 'topics[0] must be a JSON object, got "t"'),
    ('{"topics":[{"name":"t"}]}', 'topics[0] {"name": "t"}: missing "topic"'),
    ('{"topics":[{"topic":7}]}', 'topics[0] {"topic": 7}: "topic" must be a non-empty string, got 7'),
    ('{"topics":[{"topic":""}]}', 'topics[0] {"topic": ""}: "topic" must be a non-empty string'),
    ("[]", "topics-to-move data must be a JSON object, got a list"),
    ("{nope", "The input string is not a valid JSON"),
    ("  ", "topics-to-move data is empty"),
])
def test_topics_to_move_refusals(text, message):
    raises(lambda: parse_topics_to_move(text), message)


# --- reassignment ---------------------------------------------------------------------------------


def test_reassignment_parse_with_and_without_log_dirs():
    plan = parse_reassignment(reassignment({"topic": "t", "partition": 1, "replicas": [3, 1]},
                                           {"topic": "t", "partition": 0, "replicas": [2, 3],
                                            "log_dirs": ["any", "/data/kafka"]}))
    assert plan.entries == (ReassignmentEntry("t", 1, (3, 1)),
                            ReassignmentEntry("t", 0, (2, 3), ("any", "/data/kafka")))
    assert plan.assignment() == {("t", 1): (3, 1), ("t", 0): (2, 3)}
    assert plan.log_dirs() == {("t", 0, 3): "/data/kafka"}
    assert parse_reassignment('{"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}').entries[0].replicas == (1,)


@pytest.mark.parametrize("text, message", [
    (reassignment(), "Partition reassignment data file is empty"),
    ('{"version":1}', "Partition reassignment data file is empty"),
    (reassignment({"topic": "t", "partition": 0, "replicas": []}), "Partition replica list cannot be empty"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, "replicas": [2]},
                  {"topic": "a-b", "partition": 0, "replicas": [1]}, {"topic": "a-b", "partition": 0, "replicas": [2]}),
     "Partition reassignment contains duplicate topic partitions: a-b-0,t-0"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, 2, 1]},
                  {"topic": "t", "partition": 1, "replicas": [3, 3, 2, 2]}),
     "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1. "
     "t-1 contains multiple entries for 2,3"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1]}, version=2), "Not supported version field value 2"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}),
     "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["data"]}),
     "partitions[0] (t-0): log dir 'data' must be \"any\" or an absolute path"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": "any"}),
     'partitions[0] (t-0): "log_dirs" must be a list of strings, got "any"'),
    (reassignment({"topic": "t", "partition": "0", "replicas": [1]}),
     'partitions[0] {"topic": "t", "partition": "0", "replicas": [1]}: "partition" must be an integer from 0 to'),
    (reassignment({"topic": "t", "partition": True, "replicas": [1]}), 'partitions[0] {"topic": "t", "partition": '
                                                                      'true, "replicas": [1]}: "partition" must be'),
    (reassignment({"topic": "t", "partition": -1, "replicas": [1]}), 'partitions[0] {"topic": "t", "partition": -1, '
                                                                    '"replicas": [1]}: "partition" must be an integer'),
    (reassignment({"topic": "t", "partition": 0.0, "replicas": [1]}), "partitions[0]"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, -2]}),
     'partitions[0] (t-0): "replicas" must hold broker ids from 0 to 2147483647, got -2'),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, 2**31]}), "partitions[0] (t-0): \"replicas\" must"),
    (reassignment({"topic": "t", "partition": 0, "replicas": "1,2"}),
     'partitions[0] (t-0): "replicas" must be a list of broker ids, got "1,2"'),
    (reassignment({"topic": "t", "partition": 0}), 'partitions[0] (t-0): missing "replicas"'),
    (reassignment({"partition": 0, "replicas": [1]}), 'partitions[0] {"partition": 0, "replicas": [1]}: missing '
                                                      '"topic"'),
    (reassignment([1]), "partitions[0] must be a JSON object, got [1]"),
    ('{"version":1,"partitions":{}}', '"partitions" must be a list, got an object'),
    ('"just a string"', "partition reassignment data must be a JSON object, got a string"),
    ('{"version":1,"partitions":[', "The input string is not a valid JSON"),
    (b"\xff\xfe", "partition reassignment data is not UTF-8"),
])
def test_reassignment_refusals(text, message):
    raises(lambda: parse_reassignment(text), message)


def test_oversized_documents_are_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(plans, "MAX_PLAN_BYTES", 100)
    big = reassignment(*({"topic": "t", "partition": i, "replicas": [1]} for i in range(10)))
    raises(lambda: parse_reassignment(big),
           f"partition reassignment data is {len(big):,} bytes; the limit is 100 bytes")
    raises(lambda: parse_election(big), "preferred replica election data is 520 bytes; the limit is 100 bytes")


def test_the_cap_is_64_mib():
    assert plans.MAX_PLAN_BYTES == 64 * 1024 * 1024
    big = b" " * (plans.MAX_PLAN_BYTES + 1)
    raises(lambda: parse_topics_to_move(big), f"topics-to-move data is {len(big):,} bytes; the limit is 64 MiB")


def test_validation_against_the_snapshot():
    snap = snapshot()
    ok = parse_reassignment(reassignment({"topic": "t", "partition": 1, "replicas": [3, 2]}))
    assert validate_reassignment(ok, snap) == []
    missing = parse_reassignment(reassignment({"topic": "zz", "partition": 0, "replicas": [1]},
                                              {"topic": "t", "partition": 9, "replicas": [1]},
                                              {"topic": "t", "partition": 0, "replicas": [1]}))
    raises(lambda: validate_reassignment(missing, snap),
           "The proposed assignment contains non-existent partitions: t-9,zz-0")
    # Broker 4 is in the snapshot but dead: Kafka checks the registered brokers (/brokers/ids), so it is refused.
    dead = parse_reassignment(reassignment({"topic": "t", "partition": 0, "replicas": [9, 4, 1]}))
    raises(lambda: validate_reassignment(dead, snap), "The proposed assignment contains non-existent brokerIDs: 4,9")


def test_validation_warnings():
    snap = snapshot()
    plan = parse_reassignment(reassignment({"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                                            "log_dirs": ["any", "/d", "any"]}))
    warnings = validate_reassignment(plan, snap)
    assert any("log_dirs" in w for w in warnings)
    assert any("1 partition(s) change replication factor, e.g. t-0" in w for w in warnings)


def test_format_is_kafkas_shape_sorted_by_topic_then_partition():
    text = format_reassignment({("t", 10): (1, 2), ("t", 2): (2, 3), ("a-b", 0): (3,)}, {("t", 2, 3): "/d"})
    assert text == ('{"version":1,"partitions":['
                    '{"topic":"a-b","partition":0,"replicas":[3],"log_dirs":["any"]},'
                    '{"topic":"t","partition":2,"replicas":[2,3],"log_dirs":["any","/d"]},'
                    '{"topic":"t","partition":10,"replicas":[1,2],"log_dirs":["any","any"]}]}')
    plan = parse_reassignment(text)
    assert plan.to_json() == text


def test_rollback_is_the_current_assignment_of_the_plans_partitions():
    snap = snapshot()
    plan = parse_reassignment(reassignment({"topic": "t", "partition": 1, "replicas": [1, 3]},
                                           {"topic": "a-b", "partition": 0, "replicas": [1, 2]}))
    back = rollback_for(plan, snap)
    assert back == ReassignmentPlan((ReassignmentEntry("a-b", 0, (3, 1)), ReassignmentEntry("t", 1, (2, 4))))
    assert back.to_json() == ('{"version":1,"partitions":[{"topic":"a-b","partition":0,"replicas":[3,1],'
                              '"log_dirs":["any","any"]},{"topic":"t","partition":1,"replicas":[2,4],'
                              '"log_dirs":["any","any"]}]}')
    gone = ReassignmentPlan((ReassignmentEntry("t", 5, (1,)),))
    raises(lambda: rollback_for(gone, snap), "The proposed assignment contains non-existent partitions: t-5")


# --- election ---------------------------------------------------------------------------------------


def test_election_parse_sorts_and_format_round_trips():
    text = '{"partitions":[{"topic":"t","partition":1},{"topic":"a-b","partition":0}]}'
    assert parse_election(text) == (("a-b", 0), ("t", 1))
    assert format_election(parse_election(text)) == ('{"partitions":[{"topic":"a-b","partition":0},'
                                                      '{"topic":"t","partition":1}]}')


@pytest.mark.parametrize("text, message", [
    ('{"version":1}', "Preferred replica election data is empty"),
    ("not json", "Preferred replica election data is empty"),
    ('{"partitions":[]}', "Preferred replica election data is empty"),
    ('{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0},{"topic":"t","partition":1}]}',
     "Preferred replica election data contains duplicate partitions: t-0"),
    ('{"partitions":[{"topic":"t"}]}', 'partitions[0] {"topic": "t"}: missing "partition"'),
    ('{"partitions":[{"topic":"t","partition":-3}]}', 'partitions[0] {"topic": "t", "partition": -3}: "partition" '
                                                      "must be an integer"),
])
def test_election_refusals(text, message):
    raises(lambda: parse_election(text), message)


# --- what keeps a reassignment from finishing (issue 16) ----------------------------------------------------


def stuck_cluster(**states) -> ClusterSnapshot:
    """Brokers 1-4 alive, 2 down. "t-0" [2,3] has only 2 in its ISR (no live in-sync replica); "t-1" [1,3] is
    healthy; states override (replicas, leader, isr, adding) per partition name."""
    base = {"t-0": ((2, 3), -1, (2,), ()), "t-1": ((1, 3), 1, (1, 3), ()), "t-2": ((3, 4), 3, (3, 4), ())}
    base.update(states)
    parts = tuple(Partition("t", int(k[2:]), r, leader, isr, adding_replicas=adding)
                  for k, (r, leader, isr, adding) in sorted(base.items()))
    brokers = (Broker(1), Broker(2, alive=False), Broker(3), Broker(4))
    return ClusterSnapshot("c", "", "test", brokers, (Topic("t", parts),))


def test_plan_risks_name_the_partitions_with_no_live_in_sync_replica():
    snap = stuck_cluster()
    plan = ReassignmentPlan((ReassignmentEntry("t", 0, (3, 4)), ReassignmentEntry("t", 1, (4, 3))))
    risks = plans.plan_risks(plan, snap)
    assert len(risks) == 1
    assert risks[0].startswith("1 partition(s) have no live in-sync replica (t-0)") and "down broker(s) 2" in risks[0]
    assert "cannot complete" in risks[0]
    assert plans.plan_risks(ReassignmentPlan((ReassignmentEntry("t", 1, (4, 3)),)), snap) == []
    # an entry that changes nothing writes nothing for that partition: no risk
    assert plans.plan_risks(ReassignmentPlan((ReassignmentEntry("t", 0, (2, 3)),)), snap) == []


def test_stuck_reasons_say_why_each_partition_in_progress_waits_and_what_to_do():
    plan = ReassignmentPlan((ReassignmentEntry("t", 0, (3, 4)), ReassignmentEntry("t", 1, (1, 4)),
                             ReassignmentEntry("t", 2, (4, 3))))
    snap = stuck_cluster(**{"t-0": ((3, 4, 2), -1, (2,), (4,)), "t-1": ((1, 4, 3), 1, (1, 3), (4,))})
    snap = ClusterSnapshot(snap.cluster, snap.captured_at, snap.source, snap.brokers, snap.topics,
                           in_progress=plans_in_progress(("t", 0, (3, 4)), ("t", 1, (1, 4))))
    stuck = plans.stuck_reasons(plan, snap)
    assert [(s.topic, s.partition, s.reason, s.brokers) for s in stuck] == [
        ("t", 0, plans.StuckReason.NO_LIVE_SOURCE, (2,)),
        ("t", 1, plans.StuckReason.NOT_IN_ISR, (4,)),
    ]
    assert "Start broker(s) 2" in stuck[0].advice and "Wait" in stuck[1].advice
    # broker 4 goes down while it is a target
    down = ClusterSnapshot(snap.cluster, snap.captured_at, snap.source,
                           snap.brokers[:3] + (Broker(4, alive=False),), snap.topics, in_progress=snap.in_progress)
    reasons = {(s.topic, s.partition): s for s in plans.stuck_reasons(plan, down)}
    assert reasons[("t", 1)].reason == plans.StuckReason.TARGET_DOWN and reasons[("t", 1)].brokers == (4,)
    assert "Start broker(s) 4" in reasons[("t", 1)].advice


def plans_in_progress(*entries):
    from core.model import InProgress, TopicPartitionReplicas

    return InProgress(reassignment=tuple(TopicPartitionReplicas(t, p, r) for t, p, r in entries))
