"""A rollback on real brokers runs at the throttle its reassignment ran with (issue 23, item 6), and a dry run of
log-dirs-execute writes nothing (issue 23, item 7; the other dry runs are in tests/cli/test_dry_runs.py).

A reassignment executed with --throttle, verified (the throttles go), then rolled back without --throttle: the
brokers report (describe_configs) the reassignment's rate as their leader/follower.replication.throttled.rate and the
topic's throttled-replica lists name the rollback's moves, as Kafka's --execute --throttle sets them. Rolling that
back with --throttle sets the rate given; with --no-throttle, none. The topic holds no data: its moves finish at
once, and the throttles stay until verify removes them, which is what is read here.
"""

from __future__ import annotations

import json
import uuid

import pytest

from core import zkformat as zf
from tests.kafka.realkafka import (
    RealKafka,
    require,
    started_action,
    broker_rates_shown,
    config_znodes,
    create_topic,
    eventually,
    keel_zk_ok,
    produce,
    running_reassignments,
    throttle_entries,
    throttles_seen_by_kafka,
)

ORIGINAL = {0: [1, 2], 1: [2, 1]}
TARGET = {0: [3, 2], 1: [3, 1]}  # moving back involves every broker: leaders 3,2 and 3,1; followers 1 and 2
RATE = 3_000_000
# Kafka's lists for a move: leaders = the current replicas, followers = the replicas added
BACK = ({"0:3", "0:2", "1:3", "1:1"}, {"0:1", "1:2"})  # TARGET -> ORIGINAL
FORTH = ({"0:1", "0:2", "1:2", "1:1"}, {"0:3", "1:3"})  # ORIGINAL -> TARGET


def _finished(kafka: RealKafka, topic: str, assignment: dict[int, list[int]]) -> None:
    """Kafka runs no reassignment of `topic`, which is on `assignment`; verify then removes the throttles."""
    require(not running_reassignments(kafka, topic) and not kafka.zk.exists(zf.REASSIGN), "still running")
    assert kafka.assignment(topic) == assignment


def _verified(kafka: RealKafka, plan: str, topic: str, assignment: dict[int, list[int]]) -> None:
    eventually(lambda: _finished(kafka, topic, assignment), timeout=60)
    keel_zk_ok(kafka, "verify", "--reassignment-json-file", plan)
    eventually(lambda: require(throttles_seen_by_kafka(kafka, [topic]) == {}, "throttles left"))


def _throttled_at(kafka: RealKafka, topic: str, rate: int, lists: tuple[set[str], set[str]]) -> None:
    """Every broker applies `rate` to both directions (describe_configs; before Kafka 2.6 the value is hidden and
    ZooKeeper is read too), and the topic's lists name the rollback's leaders and followers."""
    seen = throttles_seen_by_kafka(kafka, [topic])
    shown = broker_rates_shown(kafka.cluster.version, rate)
    rates = {"leader.replication.throttled.rate": shown, "follower.replication.throttled.rate": shown}
    assert {k: v for k, v in seen.items() if k.startswith("broker")} == {f"broker {b}": rates for b in (1, 2, 3)}
    on_topic = seen[f"topic {topic}"]
    assert (throttle_entries(on_topic["leader.replication.throttled.replicas"]),
            throttle_entries(on_topic["follower.replication.throttled.replicas"])) == lists
    in_zk = {p: {k: v for k, v in c.items() if k.endswith("throttled.rate")} for p, c in
             config_znodes(kafka, []).items()}
    assert in_zk == {zf.broker_config_path(b): {"leader.replication.throttled.rate": str(rate),
                                                "follower.replication.throttled.rate": str(rate)} for b in (1, 2, 3)}


def test_rollback_without_throttle_runs_at_the_rate_the_reassignment_ran_with(healthy: RealKafka, tmp_path):
    kafka = healthy
    topic = f"rollthr-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, ORIGINAL)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in TARGET.items()]}))
    out = keel_zk_ok(kafka, "execute", "--reassignment-json-file", str(plan), "--throttle", str(RATE))
    executed = started_action(out)
    _verified(kafka, str(plan), topic, TARGET)

    # the rollback, no --throttle: the reassignment's rate, said so
    out = keel_zk_ok(kafka, "rollback", "--action", str(executed))
    eventually(lambda: _throttled_at(kafka, topic, RATE, BACK))
    assert (f"Rollback throttled at 3,000,000 B/s, the rate action #{executed} ran with, on brokers 1,2,3 until "
            "verify; --throttle BYTES_PER_S to change it, --no-throttle to run it unthrottled.") in out
    back = tmp_path / "back.json"
    back.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in ORIGINAL.items()]}))
    _verified(kafka, str(back), topic, ORIGINAL)
    rolled = started_action(out)

    # rolling the rollback back at a rate given
    out = keel_zk_ok(kafka, "rollback", "--action", str(rolled), "--throttle", "4500000")
    assert f"Rollback throttled at 4,500,000 B/s (action #{rolled} ran at 3,000,000 B/s)" in out
    eventually(lambda: _throttled_at(kafka, topic, 4_500_000, FORTH))
    _verified(kafka, str(plan), topic, TARGET)
    again = started_action(out)

    # and unthrottled when told
    out = keel_zk_ok(kafka, "rollback", "--action", str(again), "--no-throttle")
    assert f"Rollback unthrottled (action #{again} ran at 4,500,000 B/s)." in out
    eventually(lambda: _finished(kafka, topic, ORIGINAL), timeout=60)
    assert throttles_seen_by_kafka(kafka, [topic]) == {}


def test_log_dirs_execute_dry_run_writes_nothing(healthy: RealKafka, tmp_path):
    from core.kafka.admin import KafkaAdmin
    from core.kafka.jbod import describe

    kafka = healthy
    topic = f"drylogdir-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, {0: [1, 2]})
    produce(kafka, topic, {0: 100_000})
    with KafkaAdmin(kafka.bootstrap) as admin:
        source = describe(admin).location()[(topic, 0, 1)]
    target = next(str(d) for d in kafka.cluster.log_dirs(1) if str(d) != source)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}]}))
    store = tmp_path / "history" / "keel.sqlite"
    code, out, err = kafka.keel("log-dirs-execute", "--bootstrap-server", kafka.bootstrap, "--zk", kafka.zk_connect,
                                "--reassignment-json-file", str(plan), "--dry-run", "--store", str(store))
    assert code == 0, err
    assert f"would move {topic}-0 on broker 1: {source} -> {target}" in out
    assert not (tmp_path / "history").exists()
    with KafkaAdmin(kafka.bootstrap) as admin:
        assert describe(admin).location()[(topic, 0, 1)] == source


@pytest.fixture(autouse=True)
def _no_reassignment_left(healthy: RealKafka):
    """A failed test must not leave a reassignment or its throttles behind for the next module."""
    yield
    if healthy.zk.exists(zf.REASSIGN) or running_reassignments(healthy):
        eventually(lambda: require(not healthy.zk.exists(zf.REASSIGN), "reassignment left"), timeout=120)
    from core.zk.reader import read_for_write
    from core.zk.reassign_writes import remove_throttles

    snap, tree = read_for_write(healthy.zk)
    remove_throttles(healthy.zk, [t.name for t in snap.topics if t.name.startswith("rollthr-")], snap, tree)
