"""Issue 28 items 1-2 on real brokers (the ZooKeeper-mode cluster with bootstrap): a throttled reassignment of a known
size followed in bytes (core.reassign_progress, sampled through core.cluster.reassign_progress as `status` and the
Reassign page do), its throttle raised while it runs (`python -m core throttle`), and the refusals.

What keeps the copy near the throttle: Kafka's replication quota is measured over replication.quota.window.num (11)
windows of 1 s, and a fetch of up to replica.fetch.max.bytes (1 MB per partition) goes through whenever the measured
rate is under the quota, so the first seconds copy a burst (about ten windows' worth) and the copy then runs at the
throttle. Both partitions move to broker 3, whose follower throttle caps what it receives: the total copy rate is
the throttle.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from core import zkformat as zf
from core.audit.store import Store
from core.cluster import reassign_progress as sampler
from core.kafka.admin import KafkaAdmin
from core.reassign_progress import progress, record
from tests.kafka.realkafka import (
    RealKafka,
    require,
    config_znodes,
    create_topic,
    eventually,
    keel_zk,
    keel_zk_ok,
    needs_kafka,
    produce,
    running_reassignments,
)

pytestmark = needs_kafka("2.4", "the Admin API's listPartitionReassignments and describeLogDirs sizes")

ORIGINAL = {0: [1, 2], 1: [2, 1]}
TARGET = {0: [3, 2], 1: [3, 1]}  # broker 3 is added to both: its follower throttle caps the total copy rate
PARTITION_BYTES = 4_000_000
RATE = 500_000  # B/s: 8 MB in about 15 s


def _plan(tmp_path, topic: str) -> str:
    path = tmp_path / f"{topic}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in TARGET.items()]}))
    return str(path)


def _moving(kafka: RealKafka, tmp_path, prefix: str, rate: int = RATE, size: int = PARTITION_BYTES) -> tuple[str, str]:
    """A topic of 2 x `size` bytes moving to broker 3 at `rate`: (topic, plan file)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, ORIGINAL)
    produce(kafka, topic, {0: size, 1: size})
    plan = _plan(tmp_path, topic)
    keel_zk_ok(kafka, "execute", "--reassignment-json-file", plan, "--throttle", str(rate))
    return topic, plan


def _finish(kafka: RealKafka, plan: str, topic: str) -> None:
    eventually(lambda: require(not running_reassignments(kafka, topic), "still running"), timeout=90)
    keel_zk_ok(kafka, "verify", "--reassignment-json-file", plan)


def _follow(kafka: RealKafka, admin: KafkaAdmin, *, until, every: float = 1.0, window: float = 60.0):
    """Sample every `every` s until `until(progress)`: [(progress, samples)] in order."""
    samples, seen = (), []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        samples = record(samples, sampler.take(kafka.zk, admin, samples[-1] if samples else None), window)
        p = progress(samples, window)
        seen.append((p, samples))
        if until(p):
            return seen
        time.sleep(every)
    raise AssertionError(f"not done in 120 s: {seen[-1][0].to_dict()}")


def test_a_reassignment_of_known_size_is_followed_in_bytes_to_100_percent(healthy: RealKafka, tmp_path):
    kafka = healthy
    with KafkaAdmin(kafka.bootstrap) as admin:
        topic, plan = _moving(kafka, tmp_path, "bytes")
        started = time.time()
        seen = _follow(kafka, admin, until=lambda p: p.partitions and not p.running, window=8.0)
        _finish(kafka, plan, topic)
    series = [p for p, _ in seen]
    for p in series:
        print(f"{p.at - started:6.2f} s {p.copied:>10,} / {p.total:>10,} rate {p.rate} eta {p.eta} ({p.eta_note})")
    copied = [p.copied for p in series]
    assert copied == sorted(copied), "the bytes copied only grow"
    last = series[-1]
    assert last.fraction == 1.0 and last.running == 0 and len(last.partitions) == 2
    assert last.total == pytest.approx(2 * PARTITION_BYTES, rel=0.05), "each new replica holds its leader's bytes"
    assert [b.broker for b in last.brokers] == [3] and last.brokers[0].partitions == 2
    end = next(p.at for p in series if p.fraction >= 1.0)
    # the rate over the steady part (after the first burst, before the end) is the throttle's
    steady = [p for p in series if p.fraction >= 0.5 and p.at <= end - 2 and p.window >= 6]
    assert steady, "no sample in the steady part"
    rates = [p.rate for p in steady]
    assert RATE * 0.6 <= sum(rates) / len(rates) <= RATE * 1.5, rates
    # an ETA after the first third, within 30 % of what was left, give or take one burst: Kafka's replication quota
    # lets fetches through until its 1 s windows are over the rate, then lets nothing through until they are under
    # it again, so a copy this small arrives in a few large steps (1.6 MB every 3-5 s on a quiet machine, once 4 MB
    # after a 7 s stall) and its end is known only to within the time one step takes at the throttle
    third = next(p for p in series if p.fraction >= 1 / 3 and p.eta is not None and p.window >= 6)
    actual = end - third.at
    burst = max(b - a for a, b in zip(copied, copied[1:])) / RATE
    assert abs(third.eta - actual) <= 0.3 * actual + 1.0 + burst, (third.eta, actual, third.fraction, burst)


def test_raising_the_throttle_mid_run_raises_the_copy_rate_and_is_recorded(healthy: RealKafka, tmp_path):
    kafka = healthy
    low, high = 300_000, 1_500_000
    with KafkaAdmin(kafka.bootstrap) as admin:
        topic, plan = _moving(kafka, tmp_path, "rethrottle", rate=low, size=6_000_000)
        t0 = time.time()
        # the rate over the last 7 s, 10 s in: past the first fetches, which go through before the quota bites
        slow = _follow(kafka, admin, until=lambda p: p.at - t0 >= 10, window=7.0)[-1][0]
        assert slow.running == 2, "finished before the throttle was raised"
        out = keel_zk_ok(kafka, "throttle", "--rate", str(high))
        changed = time.time()
        assert f"The inter-broker throttle limit was set to {high} B/s on brokers 1,2,3" in out, out
        assert f"it was {low:,} B/s" in out and f"throttle --zk {kafka.zk_connect} --rate {low}" in out, out
        rates = {p: {k: v for k, v in c.items() if k.endswith("throttled.rate")}
                 for p, c in config_znodes(kafka, []).items()}
        assert rates == {zf.broker_config_path(b): {"leader.replication.throttled.rate": str(high),
                                                    "follower.replication.throttled.rate": str(high)}
                         for b in (1, 2, 3)}
        # the rate since the change (fresh samples, a window longer than the run)
        after = _follow(kafka, admin, until=lambda p: p.at - changed >= 5 or not p.running, window=60.0)
        fast = after[-1][0]
        _finish(kafka, plan, topic)
    print(f"copy rate at {low:,} B/s: {slow.rate:,.0f} B/s; after raising it to {high:,} B/s: {fast.rate:,.0f} B/s "
          f"over {fast.window:.1f} s")
    assert fast.rate >= 2 * slow.rate, (slow.rate, fast.rate)
    [row] = Store(kafka.store).actions(kind="throttle", limit=1)
    assert (row.status, row.payload["throttle"], row.payload["previous_throttle"]) == ("applied", high, low)
    assert row.payload["previous"]["brokers"]["3"] == {"leader.replication.throttled.rate": str(low),
                                                       "follower.replication.throttled.rate": str(low)}


def test_throttle_refused_when_no_reassignment_runs_and_status_says_what_it_needs(healthy: RealKafka):
    kafka = healthy
    before = config_znodes(kafka, [])
    code, out, err = keel_zk(kafka, "throttle", "--rate", "1000")
    assert code == 1 and "No reassignment is running: there is no throttle to change; nothing was written" in err
    assert config_znodes(kafka, []) == before
    code, out, err = kafka.keel("status", "--zk", kafka.zk_connect)
    assert code == 1 and "give --bootstrap-server" in err, err
    out = kafka.keel_ok("status", "--zk", kafka.zk_connect, "--bootstrap-server", kafka.bootstrap, "--json")
    doc = json.loads(out)
    assert (doc["running"], doc["partitions"], doc["eta_note"]) == (0, [], "No reassignment is running")
