"""Preferred-leader elections on real brokers (issue 15, item 2).

Brokers 3 and then 2 are stopped (controlled shutdown: their leaderships move) and started again; with
auto.leader.rebalance.enable=false they lead nothing until an election. `elect --topic`, `--broker`, a JSON file and
`--all` then restore the preferred leaders exactly where Kafka's metadata says the preferred replica is alive and in
the ISR, and nowhere else. Before each election, Keel's prediction is taken as the Leaders page computes it
(core.elections.select for the scope, leaders_per_broker(snapshot, selection.partitions) for "leaders after"); after
it, the Admin API's metadata must show exactly that: every partition's leader, and the leaders per broker.

Kafka before 2.4 (KAFKA-3143, fixed in 2.4.0): a controller that takes over does not take the replicas of brokers that
are already down offline. So when the broker stopped here was the controller, its successor leaves the partitions
whose only in-sync replica it was (the RF-1 partitions other tests left on it) with that broker as leader and ISR in
ZooKeeper until it returns; the brokers' metadata reports them without a leader. Keel shows ZooKeeper's leader (as
that version's controller and `kafka-topics --zookeeper` do) and counts the partition unavailable; the comparison
with the metadata reads such a leader as "no leader".
"""

from __future__ import annotations

import json
import sys
import uuid

from core import elections
from core.model import NO_LEADER
from sandbox.processes.kafka import version_at_least
from tests.kafka.realkafka import RealKafka, create_topic, eventually, keel_zk, leaders

E1 = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [2, 1, 3], 4: [3, 2, 1]}
E2 = {0: [2, 1, 3], 1: [3, 2, 1], 2: [1, 3, 2], 3: [2, 3, 1], 4: [3, 1, 2], 5: [2, 3, 1]}


def _isr_full(kafka: RealKafka) -> None:
    snap = kafka.snapshot()
    short = [(p.topic, p.partition) for p in snap.partitions() if set(p.isr) != set(p.replicas)]
    assert all(b.alive for b in snap.brokers) and not short, short


def _bounce(kafka: RealKafka, broker: int) -> None:
    kafka.cluster.stop_broker(broker)
    kafka.cluster.start_broker(broker)
    eventually(lambda: _isr_full(kafka), timeout=60, interval=0.5)


def _predict(kafka: RealKafka, **scope):
    """What the Leaders page shows before the click: the selection, each partition's leader after, and the
    leaders per broker after."""
    snap = kafka.snapshot()
    selection = elections.select(snap, **scope)
    chosen = set(selection.partitions)
    after = {(p.topic, p.partition): p.preferred_leader if (p.topic, p.partition) in chosen else p.leader
             for p in snap.partitions()}
    return snap, selection, after, elections.leaders_per_broker(snap, selection.partitions)


def _per_broker(actual: dict, brokers) -> dict[int, int]:
    counts = {b: 0 for b in brokers}
    for leader in actual.values():
        if leader != NO_LEADER:
            counts[leader] = counts.get(leader, 0) + 1
    return dict(sorted(counts.items()))


def _dead_leaders(snap) -> dict[tuple[str, int], int]:
    """Partitions ZooKeeper says a broker that is down leads (Kafka < 2.4 only, see the module docstring)."""
    alive = snap.alive_broker_ids
    return {(p.topic, p.partition): p.leader for p in snap.partitions() if p.leader != NO_LEADER and p.leader not in alive}


def _elect_and_compare(kafka: RealKafka, args: list[str], **scope):
    snap, selection, after, per_broker = _predict(kafka, **scope)
    assert selection.eligible, f"nothing to elect for {selection.scope}: the test set-up is wrong"
    dead = _dead_leaders(snap)  # the metadata gives those no leader
    assert not dead or not version_at_least(kafka.cluster.version, "2.4"), dead
    after = {k: NO_LEADER if k in dead else v for k, v in after.items()}
    per_broker = {b: n - sum(1 for v in dead.values() if v == b) for b, n in per_broker.items()}
    code, out, err = keel_zk(kafka, "elect", *args)
    assert code == 0, out + err

    def matches() -> dict:
        actual = leaders(kafka)
        mine = {k: v for k, v in actual.items() if k in after}
        assert set(mine) == set(after), set(after) - set(mine)
        assert mine == after, {k: (after[k], v) for k, v in mine.items() if v != after[k]}
        assert _per_broker(mine, (b.id for b in snap.brokers)) == per_broker
        return mine

    actual = eventually(matches, timeout=15)
    # exactly where Kafka's metadata says the preferred replica is alive and in the ISR: elected; elsewhere not
    meta = kafka.kafka_topics()
    alive = set(kafka.kafka_cluster()["brokers"])
    for (t, p) in selection.requested:
        replicas, isr = meta[t]["partitions"][p][1], meta[t]["partitions"][p][2]
        was = snap.topic(t).partitions[p].leader
        if was != replicas[0] and replicas[0] in alive and replicas[0] in isr:
            assert actual[(t, p)] == replicas[0], (t, p)
        elif was != replicas[0]:
            assert actual[(t, p)] == was, (t, p)
    return selection, actual


def test_elections_restore_preferred_leaders_exactly_where_kafka_allows(healthy: RealKafka, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    e1, e2 = f"elect-a-{suffix}", f"elect-b-{suffix}"
    create_topic(healthy, e1, E1)
    create_topic(healthy, e2, E2)
    _bounce(healthy, 3)  # 3 is back, in every ISR, and leads nothing
    assert all(v != 3 for (t, _), v in leaders(healthy).items() if t in (e1, e2))
    was_controller = healthy.cluster.controller() == 2
    healthy.cluster.stop_broker(2)  # 2's leaderships move to 1 and 3
    eventually(lambda: _down(healthy, 2, was_controller), timeout=30)
    print(f"\nbroker 2 stopped ({'the controller' if was_controller else 'not the controller'}); ZooKeeper still names "
          f"it leader of {len(_dead_leaders(healthy.snapshot()))} partition(s)", file=sys.stderr)
    try:
        # broker 2 down: its preferred partitions cannot be elected, Kafka keeps their leaders
        selection, _ = _elect_and_compare(healthy, ["--topic", e1], topic=e1)
        assert {c.key for c in selection.ineligible} == {(e1, p) for p, r in E1.items() if r[0] == 2}
        assert all(c.reason == "preferred broker 2 is down" for c in selection.ineligible)
        _elect_and_compare(healthy, ["--broker", "3"], broker=3)
    finally:
        healthy.cluster.start_broker(2)
    eventually(lambda: _isr_full(healthy), timeout=60, interval=0.5)

    # broker 2 back, in sync, leading nothing: a JSON file with some of its partitions, then everything else
    chosen = [(e2, p) for p, r in E2.items() if r[0] == 2][:2]
    doc = tmp_path / "election.json"
    doc.write_text(json.dumps({"partitions": [{"topic": t, "partition": p} for t, p in chosen]}))
    selection, _ = _elect_and_compare(healthy, ["--path-to-json-file", str(doc)], partitions=chosen)
    assert [c.key for c in selection.eligible] == chosen
    selection, actual = _elect_and_compare(healthy, ["--all"], all_partitions=True)
    assert not selection.ineligible
    snap = healthy.snapshot()
    assert all(actual[(p.topic, p.partition)] == p.preferred_leader for p in snap.partitions())


def _down(kafka: RealKafka, broker: int, was_controller: bool) -> None:
    """The broker is gone and the controller is done with it: no partition led by it any more in ZooKeeper (a
    partition whose only in-sync replica it was gets leader -1 a moment after the broker deregisters), and
    ZooKeeper's leaders are what the brokers' metadata says. Before Kafka 2.4, when the broker was the controller,
    exactly the partitions whose only in-sync replica it was keep it as leader in ZooKeeper (KAFKA-3143, module
    docstring), and the metadata gives them no leader."""
    assert broker not in kafka.kafka_cluster()["brokers"]
    snap = kafka.snapshot()
    assert broker not in {b.id for b in snap.brokers if b.alive}
    still_led = {(p.topic, p.partition) for p in snap.partitions() if p.leader == broker}
    if was_controller and not version_at_least(kafka.cluster.version, "2.4"):
        assert still_led == {(p.topic, p.partition) for p in snap.partitions() if p.isr == (broker,)}
    else:
        assert not still_led, sorted(still_led)
    actual = leaders(kafka)
    assert {(p.topic, p.partition): NO_LEADER if (p.topic, p.partition) in still_led else p.leader
            for p in snap.partitions() if (p.topic, p.partition) in actual} == \
        {k: v for k, v in actual.items() if k in {(p.topic, p.partition) for p in snap.partitions()}}
