"""Traffic-aware plans: write rates estimated from log-size samples (drops, units, too few samples), the --rates
file, and the balanced planner's write-rate goal (a planted hot topic spread within the tolerance, replica counts
and racks kept, bytes kept within their tolerance, deterministic, the report). Pure and fast."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from core.balance import STRATEGIES, PlanRequest
from core.balance.metrics import BYTES_TOLERANCE, byte_targets, rack_violations, replica_means
from core.balance.rates import estimate, max_deviation, parse_rates, sample
from core.errors import PlanError, RatesError
from tests.domain.test_balance import kafka_placed, snapshot

# --- the estimator ------------------------------------------------------------------------------------------------


def test_rate_is_the_leaders_growth_in_bytes_per_second():
    # t-0 on brokers 1 (leader, largest) and 2 (a lagging follower); u-0 grows 500 B over 4 s
    s0 = sample(100.0, {(1, "t", 0): 1000, (2, "t", 0): 900, (3, "u", 0): 0})
    s1 = sample(102.0, {(1, "t", 0): 3000, (2, "t", 0): 2800, (3, "u", 0): 200})
    s2 = sample(104.0, {(1, "t", 0): 5000, (2, "t", 0): 5000, (3, "u", 0): 500})
    est = estimate([s2, s0, s1])  # any order
    assert est.rates == {("t", 0): 1000.0, ("u", 0): 125.0}
    assert est.seconds == 4.0 and est.samples == 3 and est.dropped == () and est.unmeasured == ()
    doc = est.to_dict()
    assert doc["format"] == "keel.rates/1"
    assert parse_rates(json.dumps(doc)) == est.rates  # what --rates-output writes, --rates reads


def test_a_size_drop_is_retention_not_negative_traffic():
    # t-0 grows 1000 B/s; between 2 s and 4 s a 4000 B segment is deleted (size falls): that interval is left out
    sizes = [1000, 3000, 1000, 3000]
    est = estimate([sample(2.0 * i, {(1, "t", 0): s}) for i, s in enumerate(sizes)])
    assert est.rates == {("t", 0): 1000.0}
    assert est.dropped == (("t", 0),)
    # every interval dropped: no rate, said so
    est = estimate([sample(0.0, {(1, "t", 0): 9000}), sample(5.0, {(1, "t", 0): 10})])
    assert est.rates == {} and est.unmeasured == (("t", 0),)


def test_one_sample_gives_no_rate():
    with pytest.raises(RatesError, match="give no rate") as e:
        estimate([sample(1.0, {(1, "t", 0): 10})])
    assert "at least 2 samples" in e.value.hint
    with pytest.raises(RatesError):  # two samples at the same instant
        estimate([sample(1.0, {(1, "t", 0): 10}), sample(1.0, {(1, "t", 0): 20})])
    assert issubclass(RatesError, PlanError)


def test_rates_file_forms_and_refusals():
    assert parse_rates('{"orders-0": 1200.5, "a-b-1": 0}') == {("orders", 0): 1200.5, ("a-b", 1): 0.0}
    assert parse_rates(b'[{"topic": "t", "partition": 2, "bytes_per_s": 7}]') == {("t", 2): 7.0}
    for text, message in (("nope", "not valid JSON"), ("3", "object or list"),
                          ('{"orders": 1}', "<topic>-<partition>"), ('{"t-0": -1}', "non-negative"),
                          ('{"t-0": "fast"}', "non-negative"), ('{"t-0": true}', "non-negative"),
                          ('[{"topic": "t", "partition": -1, "bytes_per_s": 1}]', '"partition"'),
                          ('[{"partition": 0, "bytes_per_s": 1}]', '"topic"'), ("[1]", "must be an object"),
                          ('[{"topic": "t", "partition": 0, "bytes_per_s": 1}, '
                           '{"topic": "t", "partition": 0, "bytes_per_s": 2}]', "given twice")):
        with pytest.raises(RatesError, match=message) as e:
            parse_rates(text)
        assert e.value.hint


# --- the planner goal ---------------------------------------------------------------------------------------------


def hot_cluster(racks: int = 0):
    """6 brokers, 12 cool topics spread evenly, and one hot topic (6 partitions, RF 2) all on brokers 0 and 1
    (or, with racks, 0 and 1 in two racks). The hot topic writes 200 kB/s a partition, the others 2 kB/s."""
    snap0, _ = kafka_placed(6, 0, racks, 12, seed=3, rf=2)
    topics = {t.name: [p.replicas for p in t.partitions] for t in snap0.topics}
    topics["hot"] = [(0, 1) if p % 2 == 0 else (1, 0) for p in range(6)]
    rack = {b.id: b.rack for b in snap0.brokers}
    snap = snapshot(rack, topics)
    rates = {(t, p): (200_000.0 if t == "hot" else 2_000.0) for t, parts in topics.items() for p in range(len(parts))}
    return snap, rates


@pytest.mark.parametrize("racks", [0, 2, 3])  # 3 racks, RF 2: racks do not fix the writes per rack
def test_a_planted_hot_topic_is_spread_within_the_tolerance(racks):
    snap, rates = hot_cluster(racks)
    plain = STRATEGIES["balanced"](snap, PlanRequest())
    result = STRATEGIES["balanced"](snap, PlanRequest(partition_rates=rates))
    t = result.report.traffic
    assert t is not None and t.tolerance == 0.10
    assert t.max_deviation[0] > 1.0  # brokers 0 and 1 write many times their share
    assert t.max_deviation[1] <= 0.10 and t.within_tolerance and t.why is None
    # the hot topic is spread: no broker holds more than 3 of its 12 replicas
    hot = Counter(b for (name, _), r in result.target.items() if name == "hot" for b in r)
    assert max(hot.values()) <= 3, hot
    # replica counts within floor/ceil and racks as the plan without rates
    assert result.report.brokers_off_target[1] == 0 and result.report.rack_violations[1] == 0
    assert result.report.replicas[1].spread <= plain.report.replicas[1].spread
    # the per-broker rates, before and after, sum to the same traffic
    assert math.isclose(sum(t.before), sum(t.after)) and len(t.brokers) == 6
    # the report is JSON (what plan --report writes)
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["report"]["traffic"]["within_tolerance"] is True
    # deterministic
    again = STRATEGIES["balanced"](snap, PlanRequest(partition_rates=dict(reversed(list(rates.items())))))
    assert again.proposed == result.proposed


def test_bytes_stay_within_their_tolerance_while_rates_are_evened():
    snap, sizes = kafka_placed(9, 3, 3, 40, seed=5, sizes=True)
    rates = {k: (50_000.0 if k[0] in ("topic-001", "topic-007") else 500.0) for k in sizes}
    request = PlanRequest(partition_sizes=sizes, partition_rates=rates, rate_tolerance=0.15)
    result = STRATEGIES["balanced"](snap, request)
    r = result.report
    assert r.bytes_off_target[1] == 0 and r.brokers_off_target[1] == 0 and r.rack_violations[1] == 0
    assert r.traffic.max_deviation[1] < r.traffic.max_deviation[0]
    after = [result.target[k] for k in sorted(result.target)]
    means = replica_means(Counter(len(x) for x in after), sorted(b.id for b in snap.brokers),
                          {b.id: b.rack for b in snap.brokers})
    load, dev = max_deviation(after, [rates[k] for k in sorted(result.target)], means,
                              {b.id: b.rack for b in snap.brokers}, per_rack=True)  # RF 3 = racks
    assert math.isclose(dev, r.traffic.max_deviation[1], abs_tol=1e-6)
    targets = byte_targets(after, [sizes[k] for k in sorted(result.target)], means, {b.id: b.rack for b in snap.brokers})
    assert all(abs(sum(sizes[k] for k in result.target if b in result.target[k]) - t) <= BYTES_TOLERANCE * t
               for b, t in targets.items())
    assert rack_violations(after, {b.id: b.rack for b in snap.brokers}, list(means)) == 0


def test_an_unreachable_tolerance_says_why():
    # one partition writes more than every other together: no placement is within 10 %
    snap = snapshot({0: None, 1: None, 2: None}, {"big": [(0,)], "small": [(1,), (2,), (0,), (1,), (2,), (0,)]})
    rates = {("big", 0): 1_000_000.0} | {("small", p): 10.0 for p in range(6)}
    result = STRATEGIES["balanced"](snap, PlanRequest(partition_rates=rates))
    t = result.report.traffic
    assert not t.within_tolerance and "big-0 alone writes" in t.why
    assert any("write-rate target" in w for w in result.warnings)
    # without rates the report has no traffic section; kafka-generate reports but does not balance
    assert STRATEGIES["balanced"](snap, PlanRequest()).report.traffic is None
    generated = STRATEGIES["kafka-generate"](snap, PlanRequest(topics=("big", "small"), partition_rates=rates))
    assert generated.report.traffic.why == "this strategy does not balance write rates"
    with pytest.raises(PlanError, match="tolerance"):
        STRATEGIES["balanced"](snap, PlanRequest(partition_rates=rates, rate_tolerance=0))


def test_partitions_without_a_rate_count_as_zero_with_a_warning():
    snap, rates = hot_cluster()
    partial = {k: v for k, v in rates.items() if k[0] == "hot"}
    result = STRATEGIES["balanced"](snap, PlanRequest(partition_rates=partial))
    assert result.report.traffic.unmeasured > 0
    assert any("no write rate for" in w for w in result.warnings)


# The same moves for the same inputs, across versions of the planner: the digest of the plans below was taken before
# the write-rate phase was made faster (same moves, less time). Rates with ties (many 0 B/s partitions, repeated
# values) exercise the order of equal rates; sizes, racks, a move budget and the per-topic spread the other paths.
PLAN_DIGESTS = {
    "racks": "214c18478aaf0390",
    "no racks, spread": "126dcb6646d87c4d",
    "budget": "955113c5abf0e8a0",
}


def _digest(result) -> str:
    import hashlib
    return hashlib.sha1(repr(sorted(result.proposed.items())).encode()).hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(PLAN_DIGESTS))
def test_the_write_rate_goal_makes_the_same_moves_as_before(case):
    racks = 0 if case.startswith("no racks") else 3
    snap, sizes = kafka_placed(12, 3, racks, 60, seed=11, sizes=True)
    rates = {}
    for i, k in enumerate(sorted(sizes)):  # a few hot topics, ties: every 3rd partition 0 B/s, others rounded
        hot = k[0] in ("topic-003", "topic-017", "topic-040")
        rates[k] = 0.0 if i % 3 == 0 else float(round((90_000 if hot else 1_000) * (1 + (i % 7) / 10)))
    request = PlanRequest(partition_sizes=sizes, partition_rates=rates, rate_tolerance=0.08,
                          per_topic_spread=case == "no racks, spread", max_moves=1160 if case == "budget" else None)
    result = STRATEGIES["balanced"](snap, request)
    assert result.report.traffic.max_deviation[1] < result.report.traffic.max_deviation[0]
    assert _digest(result) == PLAN_DIGESTS[case], (case, _digest(result), result.report.traffic.summary())
    # the report's per-broker rates are the planner's own totals: the same as a pass over every replica gives
    t = result.report.traffic
    keys = sorted(sizes)
    after = [result.target.get(k, next(p.replicas for p in snap.topic(k[0]).partitions if p.partition == k[1]))
             for k in keys]
    load, _ = max_deviation(after, [rates[k] for k in keys], {}, {})
    assert all(math.isclose(a, load.get(b, 0.0), rel_tol=1e-9, abs_tol=1e-3) for b, a in zip(t.brokers, t.after))
    before = [next(p.replicas for p in snap.topic(k[0]).partitions if p.partition == k[1]) for k in keys]
    load, _ = max_deviation(before, [rates[k] for k in keys], {}, {})
    assert t.before == tuple(round(load.get(b, 0.0), 3) for b in t.brokers)  # summed in the same order: equal
