"""Planners: one parametrised suite of hard constraints over every strategy, then what each promises on its own,
plus sizes, metrics and waves. Pure and fast: hand-built and generated snapshots, no ZooKeeper."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from core.assignment import RackAwareMode, assign_replicas, brokers_for_mode
from core.balance import STRATEGIES, PlanRequest, PlanResult
from core.balance.metrics import byte_targets, fair_shares, lower_bound, rack_violations, replica_means
from core.balance.sizes import parse_log_dirs
from core.balance.waves import split_waves
from core.errors import AdminOperationError, PlanError
from core.model import Broker, ClusterSnapshot, Partition, Topic
from core.plans import parse_reassignment, validate_reassignment

ROOT = Path(__file__).resolve().parents[2]


# --- snapshots ------------------------------------------------------------------------------------


def snapshot(brokers: dict[int, str | None], topics: dict[str, list[tuple[int, ...]]],
             dead: tuple[int, ...] = ()) -> ClusterSnapshot:
    return ClusterSnapshot(
        "c", "", "test", tuple(Broker(b, rack, alive=b not in dead) for b, rack in sorted(brokers.items())),
        tuple(Topic(name, tuple(Partition(name, i, tuple(r), r[0], tuple(r)) for i, r in enumerate(parts)))
              for name, parts in sorted(topics.items())))


def kafka_placed(n_old: int, n_new: int, racks: int, n_topics: int, seed: int = 1, rf: int = 3,
                 sizes: bool = False) -> tuple[ClusterSnapshot, dict[tuple[str, int], int]]:
    """Topics placed by Kafka's assignment over brokers 0..n_old-1; n_new empty brokers after them; rack = id % racks
    (racks=0: no racks). Sizes: per topic, +-20% per partition."""
    rng = random.Random(seed)
    rack = {b: (f"r{b % racks}" if racks else None) for b in range(n_old + n_new)}
    old = [(b, rack[b]) for b in range(n_old)]
    topics, size = {}, {}
    for i in range(n_topics):
        n = rng.choice([1, 2, 5, 8, 16, 30, 60, 120])
        assignment = assign_replicas(old, n, rf, rng=rng)
        topics[f"topic-{i:03d}"] = [tuple(assignment[p]) for p in range(n)]
        base = 10 ** rng.uniform(5, 9)
        size.update({(f"topic-{i:03d}", p): int(base * rng.uniform(0.8, 1.2)) for p in range(n)})
    return snapshot(rack, topics), (size if sizes else {})


def applied(snap: ClusterSnapshot, result: PlanResult) -> ClusterSnapshot:
    return replace(snap, topics=tuple(
        replace(t, partitions=tuple(replace(p, replicas=result.target.get((p.topic, p.partition), p.replicas))
                                    for p in t.partitions)) for t in snap.topics))


def every_topic(snap: ClusterSnapshot) -> tuple[str, ...]:
    return tuple(t.name for t in snap.topics)


def per_broker(assignment, brokers) -> list[int]:
    load = Counter(b for r in assignment for b in r)
    return [load.get(b, 0) for b in brokers]


# --- one suite, every strategy: the hard constraints -----------------------------------------------

SCENARIOS = {
    "expand": lambda: (kafka_placed(18, 3, 3, 30)[0], {}),
    "drain": lambda: (kafka_placed(21, 0, 3, 30)[0], {"drain_brokers": (0, 4)}),
    "targets": lambda: (kafka_placed(21, 0, 3, 30)[0], {"target_brokers": tuple(range(3, 21))}),
    "rf-up": lambda: (kafka_placed(12, 0, 3, 20, rf=2)[0], {"replication_factor": 3}),
    "rf-down": lambda: (kafka_placed(12, 0, 3, 20, rf=3)[0], {"replication_factor": {"topic-001": 2, "topic-004": 1}}),
    "no-racks": lambda: (kafka_placed(10, 2, 0, 20)[0], {}),
    "racks-off": lambda: (kafka_placed(10, 2, 2, 20)[0], {"rack_aware": False}),
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_hard_constraints(strategy, scenario):
    snap, options = SCENARIOS[scenario]()
    request = PlanRequest(topics=every_topic(snap), seed=3, **options)
    result = STRATEGIES[strategy](snap, request)
    targets = set(request.target_brokers or snap.alive_broker_ids) - set(request.drain_brokers)
    asked = request.replication_factor
    for p in snap.partitions():
        replicas = result.target[(p.topic, p.partition)]
        rf = asked if isinstance(asked, int) else (asked or {}).get(p.topic, len(p.replicas))
        assert len(replicas) == rf, (p, replicas)
        assert len(set(replicas)) == len(replicas), (p, replicas)
        assert set(replicas) <= targets, (p, replicas)
    assert result.report.replicas_left_on_non_targets == 0
    rack_of = {b.id: b.rack for b in snap.brokers} if request.rack_aware else {}
    assert rack_violations(list(result.target.values()), rack_of, sorted(targets)) == 0
    assert result.report.rack_violations[1] == 0
    if result.proposed:  # what it proposes is a reassignment Kafka would accept (this raises otherwise)
        validate_reassignment(parse_reassignment(result.reassignment_json()), snap)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_rollback_is_the_current_assignment_of_what_changes(strategy):
    snap, _ = kafka_placed(18, 3, 3, 10)
    result = STRATEGIES[strategy](snap, PlanRequest(topics=every_topic(snap)))
    assert result.rollback.keys() == result.proposed.keys()
    for (topic, partition), replicas in result.rollback.items():
        assert snap.topic(topic).partitions[partition].replicas == replicas


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_same_inputs_same_plan(strategy):
    snap, sizes = kafka_placed(18, 3, 3, 30, sizes=True)
    shuffled = replace(snap, brokers=snap.brokers[::-1], topics=snap.topics[::-1])
    request = PlanRequest(topics=every_topic(snap)[::-1], seed=11, partition_sizes=sizes)
    first, second = STRATEGIES[strategy](snap, request), STRATEGIES[strategy](shuffled, request)
    assert first.target == second.target and first.report == second.report


def plan_digests(hash_seed: str) -> str:
    """Both strategies' plans, hashed, computed in a fresh interpreter with the given PYTHONHASHSEED."""
    code = ("import hashlib, sys; sys.path.insert(0, 'tests/domain'); from test_balance import kafka_placed, every_topic;"
            "from core.balance import STRATEGIES, PlanRequest;"
            "s, z = kafka_placed(18, 3, 3, 30, sizes=True);"
            "request = PlanRequest(topics=every_topic(s), seed=5, partition_sizes=z, per_topic_spread=True);"
            "print([hashlib.sha256(plan(s, request).reassignment_json().encode()).hexdigest()"
            "       for plan in STRATEGIES.values()])")
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_plans_do_not_depend_on_hash_order():
    """Topic names are strings: any iteration over a set or dict of them would change with the hash seed."""
    assert plan_digests("1") == plan_digests("2")


# --- shared request handling ------------------------------------------------------------------------


def test_request_refusals():
    snap, _ = kafka_placed(6, 0, 3, 3)
    plan = STRATEGIES["balanced"]
    with pytest.raises(PlanError, match="^Topic nope not found.$"):
        plan(snap, PlanRequest(topics=("topic-000", "nope")))
    with pytest.raises(PlanError, match="^List of topics to reassign contains duplicate entries: topic-000$"):
        plan(snap, PlanRequest(topics=("topic-000", "topic-000")))
    with pytest.raises(PlanError, match="^Broker list contains duplicate entries: 1,2$"):
        plan(snap, PlanRequest(target_brokers=(1, 2, 1, 2, 3)))
    with pytest.raises(PlanError, match=r"^Replication factor: 4 larger than available brokers: 3\.$"):
        plan(snap, PlanRequest(target_brokers=(0, 1, 2), replication_factor=4))
    with pytest.raises(PlanError, match=r"^Replication factor must be larger than 0\.$"):
        plan(snap, PlanRequest(replication_factor=0))
    with pytest.raises(PlanError, match="not being planned: zz"):
        plan(snap, PlanRequest(replication_factor={"zz": 2}))
    with pytest.raises(PlanError, match="no target brokers left"):
        plan(snap, PlanRequest(target_brokers=(0, 1), drain_brokers=(0, 1)))
    with pytest.raises(PlanError, match="needs the topics to move"):
        STRATEGIES["kafka-generate"](snap, PlanRequest())
    with pytest.raises(PlanError, match="the move budget must be 0 or more, got -1"):
        plan(snap, PlanRequest(max_moves=-1))
    with pytest.raises(PlanError, match="wave limits must be at least 1"):
        plan(snap, PlanRequest(target_brokers=(0, 1, 2), wave_partitions=0))


def test_unregistered_targets_are_left_out_with_a_warning_as_kafka_filters_them():
    snap, _ = kafka_placed(6, 0, 0, 3)
    snap = replace(snap, brokers=tuple(replace(b, alive=b.id != 5) for b in snap.brokers))
    for strategy in STRATEGIES:
        result = STRATEGIES[strategy](snap, PlanRequest(topics=every_topic(snap), target_brokers=(0, 1, 2, 3, 4, 5, 9)))
        assert "left out, not registered in ZooKeeper: broker(s) 5,9" in result.warnings
        assert all(9 not in r for r in result.target.values())
        # down broker 5 is not drained: its partitions are left as they are (see the tests on down brokers)
        assert all(5 not in r for r in result.proposed.values())
        assert all(result.target[(p.topic, p.partition)] == p.replicas for p in snap.partitions() if 5 in p.replicas)


def test_partial_racks_are_refused_unless_rack_awareness_is_off():
    snap = snapshot({0: "a", 1: "b", 2: None}, {"t": [(0, 1), (1, 2)]})
    for strategy in STRATEGIES:
        with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
            STRATEGIES[strategy](snap, PlanRequest(topics=("t",)))
        STRATEGIES[strategy](snap, PlanRequest(topics=("t",), rack_aware=False))


def test_topics_being_deleted_are_left_out():
    snap, _ = kafka_placed(6, 0, 0, 3)
    snap = replace(snap, in_progress=replace(snap.in_progress, deletion=("topic-001",)))
    result = STRATEGIES["balanced"](snap, PlanRequest())
    assert "left out, queued for deletion: topic-001" in result.warnings
    assert all(t != "topic-001" for t, _ in result.target)


# --- kafka-generate -----------------------------------------------------------------------------------


def test_kafka_generate_is_kafkas_assignment_per_topic():
    snap, _ = kafka_placed(12, 3, 3, 12)
    topics = ("topic-007", "topic-002", "topic-010")
    result = STRATEGIES["kafka-generate"](snap, PlanRequest(topics=topics, seed=42, drain_brokers=(14,)))
    brokers = brokers_for_mode([(b.id, b.rack) for b in snap.brokers if b.id != 14], RackAwareMode.ENFORCED)
    rng = random.Random(42)
    expected = {}
    for name in sorted(topics):
        parts = snap.topic(name).partitions
        for p, replicas in assign_replicas(brokers, len(parts), len(parts[0].replicas), rng=rng).items():
            expected[(name, p)] = tuple(replicas)
    assert result.target == expected


def test_kafka_generate_uses_the_first_partitions_rf_and_warns_when_they_differ():
    snap = snapshot({b: None for b in range(4)}, {"t": [(0, 1), (1, 2, 3), (2, 3)]})
    result = STRATEGIES["kafka-generate"](snap, PlanRequest(topics=("t",)))
    assert {len(r) for r in result.target.values()} == {2}
    assert any("different replication factors [2, 3]" in w for w in result.warnings)


def test_kafka_generate_over_budget_is_refused():
    snap, _ = kafka_placed(12, 3, 3, 12)
    with pytest.raises(PlanError, match="over the budget of 5"):
        STRATEGIES["kafka-generate"](snap, PlanRequest(topics=every_topic(snap), max_moves=5))


# --- balanced ----------------------------------------------------------------------------------------


def test_expansion_reaches_spread_one_at_the_lower_bound():
    snap, _ = kafka_placed(21, 3, 3, 60)
    result = STRATEGIES["balanced"](snap, PlanRequest())
    r = result.report
    assert r.replicas[1].spread <= 1 and r.leaders[1].spread <= 1
    assert r.rack_violations == (0, 0)
    assert r.lower_bound > 0 and r.replicas_moved <= 1.05 * r.lower_bound
    baseline = STRATEGIES["kafka-generate"](snap, PlanRequest(topics=every_topic(snap))).report
    assert baseline.replicas_moved > 3 * r.replicas_moved


def test_drain_moves_the_drained_replicas_and_little_more():
    snap, _ = kafka_placed(24, 0, 3, 60)
    balanced = applied(snap, STRATEGIES["balanced"](snap, PlanRequest()))
    result = STRATEGIES["balanced"](balanced, PlanRequest(drain_brokers=(0, 1, 5)))
    on_drained = sum(b in (0, 1, 5) for p in balanced.partitions() for b in p.replicas)
    r = result.report
    assert r.lower_bound == on_drained
    assert on_drained <= r.replicas_moved <= 1.05 * on_drained
    assert r.brokers_off_target[1] == 0 and r.leaders[1].spread <= 1 and r.rack_violations[1] == 0


def test_dead_brokers_are_emptied_when_drained():
    snap, _ = kafka_placed(9, 0, 3, 20)
    snap = replace(snap, brokers=tuple(replace(b, alive=b.id != 4) for b in snap.brokers))
    result = STRATEGIES["balanced"](snap, PlanRequest(drain_brokers=(4,)))
    assert all(4 not in r for r in result.target.values())
    on_dead = sum(4 in p.replicas for p in snap.partitions())
    assert on_dead <= result.report.replicas_moved <= 1.05 * result.report.lower_bound


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_goal_moves_only_what_it_names_a_down_broker_keeps_its_replicas_unless_drained(strategy):
    """Issue 16: "Fill new brokers" with broker 2 down moved every replica off broker 2, and the run never finished
    (partitions whose only copies were on broker 2 cannot catch up; a target keeping a down replica never completes,
    since the broker never rejoins the ISR). A partition holding a down broker's replica is left as it is, with a
    warning naming the drain goal; draining the broker moves them."""
    snap, _ = kafka_placed(8, 1, 0, 20)  # brokers 0-7 hold everything, 8 is empty
    snap = replace(snap, brokers=tuple(replace(b, alive=b.id != 2) for b in snap.brokers))
    request = PlanRequest(topics=every_topic(snap) if strategy == "kafka-generate" else None, seed=1)
    result = STRATEGIES[strategy](snap, request)
    on_down = [p for p in snap.partitions() if 2 in p.replicas]
    assert on_down
    for p in on_down:  # untouched: not moved, not even reordered
        assert (p.topic, p.partition) not in result.proposed
    assert sum(2 in r for r in result.target.values()) == len(on_down)
    assert all(2 not in r for r in result.proposed.values())
    assert any(f"{len(on_down)} partition(s) with a replica on down broker(s) 2 are left as they are" in w
               and "--exclude-brokers 2" in w for w in result.warnings)
    held = Counter(b for r in result.target.values() for b in r)
    assert held[8] > 0  # the goal itself is met: the empty broker gets replicas
    if strategy == "balanced":
        live = [b for b in range(9) if b != 2]
        r = result.report
        assert r.brokers_off_target[1] == 0 and max(held[b] for b in live) - min(held[b] for b in live) <= 1
        assert r.lower_bound > 0 and r.replicas_moved <= 1.05 * r.lower_bound
    drained = STRATEGIES[strategy](snap, replace(request, drain_brokers=(2,)))
    assert all(2 not in r for r in drained.target.values())
    assert not any("down broker" in w for w in drained.warnings)


def test_a_replication_factor_change_replaces_the_down_replicas_of_the_topics_it_names():
    snap = snapshot({b: None for b in range(5)}, {"t": [(0, 1), (1, 2), (2, 3), (3, 0)], "u": [(0, 1), (1, 2)]},
                    dead=(2,))
    result = STRATEGIES["balanced"](snap, PlanRequest(topics=("t",), replication_factor=3))
    assert all(len(r) == 3 and 2 not in r for (t, _), r in result.target.items())


def test_an_already_balanced_cluster_gets_no_moves():
    snap, sizes = kafka_placed(21, 3, 3, 60, sizes=True)
    request = PlanRequest(partition_sizes=sizes)
    balanced = applied(snap, STRATEGIES["balanced"](snap, request))
    again = STRATEGIES["balanced"](balanced, request)
    assert again.proposed == {} and again.report.replicas_moved == 0 and again.report.lower_bound == 0


def test_leader_balance_is_reached_by_reordering_only_when_replicas_are_balanced():
    # Every 3-broker window of 6 brokers, listed smallest id first: replicas are balanced, leaders are not.
    windows = [tuple(sorted(((i + j) % 6 for j in range(3)))) for i in range(6)]
    snap = snapshot({b: None for b in range(6)}, {"t": windows * 10})
    result = STRATEGIES["balanced"](snap, PlanRequest())
    r = result.report
    assert r.leaders[0].spread > 10
    assert r.replicas_moved == 0 and r.leaders[1].spread <= 1 and r.leader_changes > 0
    for key, replicas in result.proposed.items():
        assert sorted(replicas) == sorted(result.rollback[key])


def test_bytes_within_five_percent_when_sizes_are_known():
    snap, sizes = kafka_placed(21, 3, 3, 60, sizes=True)
    # Make sizes vary within topics too, so spreading topics is not enough.
    rng = random.Random(9)
    sizes = {k: int(v * rng.choice([0.2, 1, 1, 3])) for k, v in sizes.items()}
    result = STRATEGIES["balanced"](snap, PlanRequest(partition_sizes=sizes))
    r = result.report
    assert r.bytes[1].max <= 1.05 * r.bytes[1].mean and r.bytes[1].min >= 0.95 * r.bytes[1].mean
    assert r.replicas[1].spread <= 1 and r.leaders[1].spread <= 1
    assert r.bytes_moved > 0 and not any("byte target" in w for w in result.warnings)


def test_per_topic_spread_is_reached_and_its_price_reported():
    snap, _ = kafka_placed(18, 3, 3, 40)
    plain = STRATEGIES["balanced"](snap, PlanRequest()).report
    spread = STRATEGIES["balanced"](snap, PlanRequest(per_topic_spread=True)).report
    assert plain.moves_without_topic_spread is None
    assert spread.moves_without_topic_spread == plain.replicas_moved
    assert spread.replicas_moved >= plain.replicas_moved
    assert spread.topic_skew[1] <= 1 < plain.topic_skew[0]
    assert spread.replicas[1].spread <= 1 and spread.leaders[1].spread <= 1


def test_rack_violations_are_repaired():
    racks = {b: f"r{b % 3}" for b in range(6)}
    snap = snapshot(racks, {"t": [(0, 3, 1), (1, 4, 2), (2, 0, 4)]})  # first two: a rack twice
    assert rack_violations([p.replicas for p in snap.partitions()], racks, list(racks)) == 2
    result = STRATEGIES["balanced"](snap, PlanRequest())
    assert result.report.rack_violations == (2, 0)


def test_unequal_racks_force_unequal_shares():
    racks = {0: "big", 1: "big", 2: "big", 3: "big", 4: "small", 5: "tiny"}
    snap = snapshot(racks, {"t": [(0, 1, 2)] * 12})  # every partition in one rack: 12 violations
    result = STRATEGIES["balanced"](snap, PlanRequest())
    # RF 3 over 3 racks: every partition has a replica on 4 and on 5; the big rack shares the rest.
    assert per_broker(result.target.values(), range(6)) == [3, 3, 3, 3, 12, 12]
    assert result.report.rack_violations == (12, 0) and result.report.brokers_off_target[1] == 0


def test_replication_factor_changes():
    snap, _ = kafka_placed(9, 0, 3, 10, rf=2)
    up = STRATEGIES["balanced"](snap, PlanRequest(replication_factor=3)).report
    assert up.replicas_moved == up.lower_bound == snap.partition_count  # one new replica per partition
    snap3, _ = kafka_placed(9, 0, 3, 10, rf=3)
    down = STRATEGIES["balanced"](snap3, PlanRequest(replication_factor=2))
    assert down.report.replicas_moved == 0 and down.report.replicas[1].spread <= 1


def test_move_budget():
    snap, _ = kafka_placed(21, 3, 3, 60)
    result = STRATEGIES["balanced"](snap, PlanRequest(max_moves=40))
    assert result.report.replicas_moved == 40
    assert any("move budget (40)" in w for w in result.warnings)
    drain = PlanRequest(drain_brokers=(0,), max_moves=10)
    with pytest.raises(PlanError, match="alone move .* replicas; the budget is 10"):
        STRATEGIES["balanced"](snap, drain)


def random_cluster(seed: int) -> tuple[ClusterSnapshot, PlanRequest]:
    """Any shape: 3-30 brokers, 0-4 racks of any size, RF 1-4, skewed or Kafka placement, dead and drained brokers."""
    rng = random.Random(seed)
    n = rng.randint(3, 30)
    n_racks = rng.choice([0, 1, 2, 3, 3, 4])
    racks = {b: (f"r{rng.randrange(n_racks)}" if n_racks else None) for b in range(n)}
    if n_racks and len(set(racks.values())) < 2:
        racks = {b: f"r{b % n_racks}" for b in range(n)}
    old = sorted(rng.sample(range(n), rng.randint(max(2, n // 2), n)))
    topics, sizes = {}, {}
    for t in range(rng.randint(1, 25)):
        rf = min(rng.choice([1, 2, 3, 3, 3, 4]), len(old))
        count = rng.choice([1, 3, 7, 20, 50])
        if rng.random() < 0.5:
            placed = assign_replicas([(b, None) for b in old], count, rf, rng=rng)
            topics[f"t{t}"] = [tuple(placed[p]) for p in range(count)]
        else:
            topics[f"t{t}"] = [tuple(rng.sample(old, rf)) for _ in range(count)]
        base = rng.lognormvariate(10, 1.5)
        sizes.update({(f"t{t}", p): int(base * rng.uniform(0.5, 1.5)) for p in range(count)})
    dead = tuple(b for b in old if rng.random() < 0.05)
    alive = [b for b in range(n) if b not in dead]
    drain = tuple(rng.sample(alive, rng.randint(0, max(0, len(alive) // 4)))) if rng.random() < 0.3 else ()
    drain += dead  # a down broker's replicas move only when it is drained (test_a_goal_moves_only_what_it_names_...)
    request = PlanRequest(partition_sizes=sizes if rng.random() < 0.5 else None, drain_brokers=drain,
                          per_topic_spread=rng.random() < 0.2)
    return snapshot(racks, topics, dead=dead), request


@pytest.mark.parametrize("seed", [*range(40), 112, 235, 251])
def test_random_clusters_meet_the_hard_constraints_and_replica_balance(seed):
    snap, request = random_cluster(seed)
    targets = snap.alive_broker_ids - set(request.drain_brokers)
    if max(len(p.replicas) for p in snap.partitions()) > len(targets):
        pytest.skip("RF above the brokers left")
    result = STRATEGIES["balanced"](snap, request)
    for p in snap.partitions():
        replicas = result.target[(p.topic, p.partition)]
        assert len(replicas) == len(p.replicas) == len(set(replicas)) and set(replicas) <= targets
    r = result.report
    assert r.rack_violations[1] == 0 and r.brokers_off_target[1] == 0


def test_single_replica_partitions_move_when_reordering_cannot_balance_leaders():
    # Broker 0 holds 12 RF-1 partitions (it must lead them); brokers 1-3 share RF-2 partitions. Replica counts are
    # even (12 each) but broker 0 leads 12 of 30.
    pairs = [(1, 2), (2, 3), (3, 1)] * 6
    snap = snapshot({b: None for b in range(4)}, {"single": [(0,)] * 12, "pairs": pairs})
    r = STRATEGIES["balanced"](snap, PlanRequest()).report
    assert r.leaders[0].max == 12
    assert r.leaders[1].spread <= 1 and r.replicas[1].spread <= 1 and r.replicas_moved > 0


# --- metrics --------------------------------------------------------------------------------------------


def test_fair_shares_and_replica_means():
    assert fair_shares(10, [1, 1, 1], [0, 0, 0], [2, 100, 100]) == [2, 4, 4]
    even = replica_means({3: 10}, [0, 1, 2, 3, 4, 5], {b: f"r{b % 3}" for b in range(6)})
    assert set(even.values()) == {5}
    uneven = replica_means({3: 12}, range(6), {0: "a", 1: "a", 2: "a", 3: "a", 4: "b", 5: "c"})
    assert [uneven[b] for b in range(6)] == [3, 3, 3, 3, 12, 12]
    two_racks = replica_means({2: 10}, range(3), {0: "a", 1: "a", 2: "b"})  # RF 2 over 2 racks: one each
    assert [two_racks[b] for b in range(3)] == [5, 5, 10]


def test_byte_targets_are_per_rack():
    rack_of = {0: "a", 1: "a", 2: "b"}
    means = {0: 1.0, 1: 1.0, 2: 2.0}
    # RF 2 over 2 racks: rack a holds every partition once (30 bytes), so does rack b.
    assert byte_targets([(0, 2), (1, 2)], [10, 20], means, rack_of) == {0: 15.0, 1: 15.0, 2: 30.0}
    assert byte_targets([(0, 2), (1, 2)], [10, 20], means, {}) == {0: 15.0, 1: 15.0, 2: 30.0}  # 60 bytes, 4 shares


def test_lower_bound():
    means = {0: 2.0, 1: 2.0, 2: 2.0}
    assert lower_bound([(0, 1), (0, 1), (0, 1)], [2, 2, 2], means) == 2  # broker 2 must get 2
    assert lower_bound([(0, 9), (1, 9), (2, 9)], [2, 2, 2], means) == 3  # every replica on off-target 9
    assert lower_bound([(0,), (1,), (2,)], [2, 2, 2], means) == 3  # RF up: one new replica each


# --- sizes ----------------------------------------------------------------------------------------------


LOG_DIRS = """Querying brokers for log directories information
Received log directory information from brokers 0,1
{"version":1,"brokers":[
 {"broker":0,"logDirs":[{"logDir":"/d0","error":null,"partitions":[
   {"partition":"my-topic-1-0","size":100,"offsetLag":0,"isFuture":false},
   {"partition":"t-3","size":5,"offsetLag":0,"isFuture":false}]}]},
 {"broker":1,"logDirs":[
   {"logDir":"/d1","error":null,"partitions":[
     {"partition":"my-topic-1-0","size":120,"offsetLag":0,"isFuture":false},
     {"partition":"t-3","size":999,"offsetLag":0,"isFuture":true}]},
   {"logDir":"/bad","error":"KafkaStorageException","partitions":[
     {"partition":"t-3","size":7777,"offsetLag":0,"isFuture":false}]}]}]}
"""


def test_log_dirs_sizes():
    # max over replicas, future replicas and failed dirs ignored, topic split on the last '-'
    assert parse_log_dirs(LOG_DIRS) == {("my-topic-1", 0): 120, ("t", 3): 5}
    assert parse_log_dirs(LOG_DIRS.encode()) == parse_log_dirs(LOG_DIRS)


@pytest.mark.parametrize("text, message", [
    ("no json here", "log-dirs data holds no JSON object"),
    ("{not json", "log-dirs data is not valid JSON"),
    ('{"version":1}', 'log-dirs data must be an object with a "brokers" list'),
    ('{"brokers":[{"broker":0}]}', 'brokers[0] must be an object with a "logDirs" list'),
    ('{"brokers":[{"logDirs":[{"error":null,"partitions":[{"partition":"t0","size":1}]}]}]}',
     'brokers[0].logDirs[0].partitions[0]: "partition" must look like "<topic>-<number>", got "t0"'),
    ('{"brokers":[{"logDirs":[{"error":null,"partitions":[{"partition":"t-0","size":-1}]}]}]}',
     'brokers[0].logDirs[0].partitions[0]: "size" must be a non-negative integer, got -1'),
])
def test_log_dirs_refusals(text, message):
    with pytest.raises(PlanError) as info:
        parse_log_dirs(text)
    assert str(info.value).startswith(message)


# --- waves ----------------------------------------------------------------------------------------------


def test_waves_respect_both_limits_and_cover_the_plan_once():
    snap, _ = kafka_placed(21, 3, 3, 60)
    result = STRATEGIES["balanced"](snap, PlanRequest(wave_partitions=25, wave_broker_moves=4))
    waves = result.waves
    assert sorted(k for wave in waves for k in wave) == sorted(result.proposed)
    for wave in waves:
        assert len(wave) <= 25
        load = Counter(b for k in wave for b in set(result.proposed[k]) ^ set(result.rollback[k]))
        assert max(load.values(), default=0) <= 4
    # Close to the bound: the busiest broker's moves / L.
    busiest = max(Counter(b for k in result.proposed for b in set(result.proposed[k]) ^ set(result.rollback[k]))
                  .values())
    assert len(waves) <= -(-busiest // 4) + 2
    assert split_waves(result.rollback, result.proposed, 25, 4) == waves  # deterministic


def test_reordering_counts_toward_the_partition_limit_only():
    before = {("t", i): (1, 2) for i in range(5)}
    after = {("t", i): (2, 1) for i in range(5)}
    assert split_waves(before, after, 2, 1) == ((("t", 0), ("t", 1)), (("t", 2), ("t", 3)), (("t", 4),))
    with pytest.raises(PlanError, match="wave limits"):
        split_waves(before, after, 0, 1)


def test_excess_over_even_is_the_fleet_heatmaps_cell():
    """Issue 25 item 2: the fleet chart's spread metric is the engine's (core.balance.metrics)."""
    import numpy as np

    from core.balance.metrics import excess_over_even
    from dashboard.fleet.charts import topic_excess

    counts = [[4, 1, 1, 0], [2, 2, 2, 3]]  # topic 0: 6 replicas, topic 1: 9; broker 3 dead
    alive = [True, True, True, False]
    assert excess_over_even(counts, alive) == [[2.0, -1.0, -1.0, 0.0], [-1.0, -1.0, -1.0, 3.0]]  # 9 / 3 alive
    assert excess_over_even(counts, [False] * 4) == [[4.0, 1.0, 1.0, 0.0], [2.0, 2.0, 2.0, 3.0]]
    assert topic_excess(np.array(counts), np.array(alive)).tolist() == excess_over_even(counts, alive)
