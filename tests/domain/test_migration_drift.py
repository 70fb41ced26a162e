"""Issue 27, item 3: drift between ZooKeeper and the brokers during a migration's dual-write (core.migration_drift),
on hand-built snapshots: every kind of difference is named with both values; what the two reads legitimately do not
share is not a difference; the tracker ages differences, forgets those that go away, and tells a leader epoch behind
for a moment from a setting that stays different."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import ValidationError
from core.model import Broker, ClusterSnapshot, InProgress, Partition, Problem, Topic
from core.migration_drift import (BROKER_CONFIG, PARTITION, TOPIC, TOPIC_CONFIG, Drift, DriftTracker, differences)

BROKERS = (Broker(1, "a", "h1", 9092, ("PLAINTEXT://h1:9092",)), Broker(2, "b", "h2", 9092, ("PLAINTEXT://h2:9092",)),
           Broker(3, "c", "h3", 9092, ("PLAINTEXT://h3:9092",)))


def part(topic: str, n: int, replicas, leader: int, isr, epoch: int = 0, **kw) -> Partition:
    return Partition(topic, n, tuple(replicas), leader, tuple(isr), epoch, **kw)


def orders(**config) -> Topic:
    return Topic("orders", (part("orders", 0, [1, 2, 3], 1, [1, 2, 3], 4), part("orders", 1, [2, 3, 1], 2, [2, 3], 7)),
                 topic_id="XxSDxOt2QTq6z0aypmXIew", config=config or {"retention.ms": "3600000"})


def zk_side(*topics: Topic, **kw) -> ClusterSnapshot:
    return ClusterSnapshot("c", "2026-11-26T00:00:00Z", "zk", kw.pop("brokers", BROKERS), topics or (orders(),),
                           broker_configs=kw.pop("broker_configs", {"<default>": {"log.cleaner.threads": "2"},
                                                                    "2": {"follower.replication.throttled.rate": "9"}}),
                           **kw)


def broker_side(*topics: Topic, **kw) -> ClusterSnapshot:
    """What core.kafka.metadata builds: endpoints as host:port, no controller epoch, ELR where KRaft has it."""
    brokers = kw.pop("brokers", tuple(replace(b, endpoints=(f"{b.host}:{b.port}",)) for b in BROKERS))
    return ClusterSnapshot("c", "2026-11-26T00:00:01Z", "h1:9092", brokers, topics or (orders(),),
                           broker_configs=kw.pop("broker_configs", {"<default>": {"log.cleaner.threads": "2"},
                                                                    "2": {"follower.replication.throttled.rate": "9"}}),
                           mode=kw.pop("mode", "kraft"), **kw)


def test_the_same_cluster_read_both_ways_has_no_drift():
    assert differences(zk_side(), broker_side()) == []


def test_what_only_one_side_has_is_not_drift():
    # ISR order, ELR (KRaft), a topic id ZooKeeper's v1/v2 znode lacks, a KRaft broker gone from /brokers/ids, the
    # settings of a broker that is not running, sensitive settings the brokers withhold, an emptied znode
    t = orders()
    theirs = replace(t, topic_id="XxSDxOt2QTq6z0aypmXIew", partitions=(
        replace(t.partitions[0], isr=(3, 1, 2), elr=(2,)), t.partitions[1]))
    zk = zk_side(replace(t, topic_id=None), brokers=BROKERS[:2] + (Broker(3, alive=False),),
                 broker_configs={"<default>": {"log.cleaner.threads": "2"},
                                 "2": {"follower.replication.throttled.rate": "9",
                                       "listener.name.internal.ssl.keystore.password": "[encrypted]"},
                                 "4": {"log.cleaner.threads": "8"}, "1": {}})
    brokers = broker_side(theirs, brokers=tuple(replace(b, endpoints=()) for b in BROKERS[:3]))
    assert differences(zk, brokers) == []
    # a topic ZooKeeper is deleting, which the brokers dropped already
    gone = Topic("old", (part("old", 0, [1], 1, [1]),))
    assert differences(zk_side(orders(), gone, in_progress=InProgress(deletion=("old",))), broker_side()) == []
    # a topic the brokers answered an error for, or whose settings they did not describe: not said, not compared
    errs = broker_side(replace(orders(), config={}), problems=(Problem("topic orders: settings", "not described"),))
    assert differences(zk_side(), errs) == []
    assert differences(zk_side(orders(), gone), broker_side(problems=(Problem("topic old", "error 3"),))) == []


def test_every_difference_is_named_with_both_values():
    t = orders()
    ours = replace(t, config={"retention.ms": "3600000", "cleanup.policy": "compact"}, partitions=(
        t.partitions[0], replace(t.partitions[1], leader=3, isr=(3,), leader_epoch=6)))
    theirs = replace(t, topic_id="AAAAAAAAAAAAAAAAAAAAAQ", config={"retention.ms": "60000"}, partitions=(
        replace(t.partitions[0], replicas=(1, 2)), t.partitions[1], part("orders", 2, [3, 1], 3, [3, 1])))
    fresh = Topic("fresh", (part("fresh", 0, [1], 1, [1]),))
    stale = Topic("stale", (part("stale", 0, [2], 2, [2]), part("stale", 1, [3], 3, [3])))
    zk = zk_side(ours, stale, broker_configs={"<default>": {"log.cleaner.threads": "2"}, "1": {"x.rate": "5"}})
    brokers = broker_side(theirs, fresh, broker_configs={"<default>": {"log.cleaner.threads": "3"},
                                                         "2": {"follower.replication.throttled.rate": "9"}})
    found = {(d.what, d.key, d.field): (d.zookeeper, d.brokers) for d in differences(zk, brokers)}
    assert found == {
        (TOPIC, "fresh", "exists"): ("no topic", "1 partition(s)"),
        (TOPIC, "stale", "exists"): ("2 partition(s)", "no topic"),
        (TOPIC, "orders", "topic id"): ("XxSDxOt2QTq6z0aypmXIew", "AAAAAAAAAAAAAAAAAAAAAQ"),
        (PARTITION, "orders-0", "replicas"): ("[1, 2, 3]", "[1, 2]"),
        (PARTITION, "orders-1", "leader"): ("3", "2"),
        (PARTITION, "orders-1", "ISR"): ("[3]", "[2, 3]"),
        (PARTITION, "orders-1", "leader epoch"): ("6", "7"),
        (PARTITION, "orders-2", "exists"): ("no partition", "replicas [3, 1]"),
        (TOPIC_CONFIG, "orders", "cleanup.policy"): ("compact", "(not set)"),
        (TOPIC_CONFIG, "orders", "retention.ms"): ("3600000", "60000"),
        (BROKER_CONFIG, "broker <default>", "log.cleaner.threads"): ("2", "3"),
        (BROKER_CONFIG, "broker 1", "x.rate"): ("5", "(not set)"),
        (BROKER_CONFIG, "broker 2", "follower.replication.throttled.rate"): ("(not set)", "9"),
    }
    d = Drift(PARTITION, "orders-1", "leader epoch", "6", "7")
    assert d.text == "partition orders-1 leader epoch: ZooKeeper 6, brokers 7"


def test_a_missing_or_unreadable_znode_is_named_as_such():
    t = orders()
    no_state = replace(t, partitions=(t.partitions[0].with_state(None), t.partitions[1]))
    zk = zk_side(no_state, problems=(Problem("/config/topics/orders", "not JSON"),))
    found = {(d.what, d.key, d.field): (d.zookeeper, d.brokers) for d in differences(zk, broker_side())}
    assert found == {
        (PARTITION, "orders-0", "state"): ("no state znode", "leader 1, ISR [1, 2, 3], leader epoch 4"),
        (TOPIC_CONFIG, "orders", "settings"): ("unreadable (not JSON)", "retention.ms=3600000"),
    }


def test_a_leader_epoch_behind_for_a_moment_does_not_last():
    tracker = DriftTracker(lasting_after=30)
    t = orders()
    behind = zk_side(replace(t, partitions=(replace(t.partitions[0], leader_epoch=3), t.partitions[1])))
    first = tracker.update(differences(behind, broker_side()), now=100.0)
    assert [(a.drift.field, a.age, a.lasting) for a in first.aged] == [("leader epoch", 0.0, False)]
    caught_up = tracker.update(differences(zk_side(), broker_side()), now=102.0)
    assert caught_up.aged == () and caught_up.lasting == ()
    # it comes back later: a new difference, aged from then, not from the first sighting
    again = tracker.update(differences(behind, broker_side()), now=140.0)
    assert [(a.age, a.lasting) for a in again.aged] == [(0.0, False)] and again.reads == 3


def test_a_setting_that_stays_different_lasts():
    tracker = DriftTracker()  # 30 s by default
    stuck = zk_side(orders(**{"retention.ms": "1000"}))
    reports = [tracker.update(differences(stuck, broker_side()), now=t) for t in (0.0, 10.0, 29.9, 30.0, 45.0)]
    assert [[(round(a.age, 1), a.lasting) for a in r.aged] for r in reports] == [
        [(0.0, False)], [(10.0, False)], [(29.9, False)], [(30.0, True)], [(45.0, True)]]
    last = reports[-1]
    assert [a.drift.text for a in last.lasting] == ["topic config orders retention.ms: ZooKeeper 1000, brokers 3600000"]
    assert last.to_dict()["differences"][0] | {} == {
        "what": "topic config", "key": "orders", "field": "retention.ms", "zookeeper": "1000", "brokers": "3600000",
        "age_seconds": 45.0, "lasting": True}
    # a value that moves while the difference stays is still the same difference: its age goes on
    moved = tracker.update(differences(zk_side(orders(**{"retention.ms": "2000"})), broker_side()), now=50.0)
    assert [(a.age, a.lasting, a.drift.zookeeper) for a in moved.aged] == [(50.0, True, "2000")]


def test_oldest_difference_first_and_a_bad_threshold_refused():
    tracker = DriftTracker(lasting_after=5)
    tracker.update([Drift(TOPIC, "b", "exists", "x", "y")], now=0.0)
    report = tracker.update([Drift(TOPIC, "a", "exists", "x", "y"), Drift(TOPIC, "b", "exists", "x", "y")], now=6.0)
    assert [(a.drift.key, a.lasting) for a in report.aged] == [("b", True), ("a", False)]
    with pytest.raises(ValidationError, match="0 seconds or more"):
        DriftTracker(lasting_after=-1)
