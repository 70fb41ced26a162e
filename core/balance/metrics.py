"""What a plan costs and what it achieves: per-broker targets, the lower bound on moves, the report.

Inputs are plain aligned lists (one entry per partition) so the same code scores every strategy.
A "move" is a replica placed on a broker that did not hold that partition before (data is copied);
reordering replicas and dropping them move no data.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from core.balance.rates import TrafficReport

Replicas = Sequence[int]
BYTES_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Distribution:
    """A per-broker quantity over the target brokers."""

    min: float
    max: float
    mean: float
    stdev: float

    @property
    def spread(self) -> float:
        return self.max - self.min

    @property
    def max_over_mean(self) -> float:
        return self.max / self.mean if self.mean else 0.0


@dataclass(frozen=True)
class MetricsReport:
    replicas_moved: int
    bytes_moved: int | None
    leader_changes: int  # partitions whose first replica (preferred leader) changes
    partitions_changed: int
    lower_bound: int
    replicas: tuple[Distribution, Distribution]  # (before, after)
    leaders: tuple[Distribution, Distribution]
    bytes: tuple[Distribution, Distribution] | None
    rack_violations: tuple[int, int]  # partitions spanning fewer than min(RF, racks) racks
    topic_skew: tuple[int, int]  # worst topic's (max - min) replicas per target broker
    topic_skew_after: Mapping[str, int] = field(default_factory=dict)
    # target brokers outside floor/ceil of their replica mean (uneven racks make `replicas` spread misleading)
    brokers_off_target: tuple[int, int] = (0, 0)
    # target brokers more than BYTES_TOLERANCE from their byte target (see byte_targets); None without sizes
    bytes_off_target: tuple[int, int] | None = None
    replicas_left_on_non_targets: int = 0
    moves_without_topic_spread: int | None = None  # the price of per_topic_spread, when it was asked for
    traffic: "TrafficReport | None" = None  # bytes written per broker, when partition rates were given (rates.py)

    @property
    def moves_over_lower_bound(self) -> float | None:
        if self.lower_bound:
            return self.replicas_moved / self.lower_bound
        return 1.0 if self.replicas_moved == 0 else None


# --- targets ----------------------------------------------------------------------------------


def fair_shares(total: float, weights: Sequence[float], lows: Sequence[float], highs: Sequence[float]) -> list[float]:
    """Water-filling: shares proportional to `weights`, each clamped to [low, high], summing to `total`."""
    def filled(level: float) -> float:
        return sum(min(max(w * level, lo), hi) for w, lo, hi in zip(weights, lows, highs))

    low, high = 0.0, max((hi / w for w, hi in zip(weights, highs) if w > 0), default=0.0)
    for _ in range(100):  # bisection on the common level: deterministic, and exact enough for floor/ceil
        mid = (low + high) / 2
        low, high = (mid, high) if filled(mid) < total else (low, mid)
    return [round(min(max(w * high, lo), hi), 6) for w, lo, hi in zip(weights, lows, highs)]


def replica_means(rf_counts: Mapping[int, int], brokers: Sequence[int], rack_of: Mapping[int, str | None]
                  ) -> dict[int, float]:
    """The replicas each target broker should hold (a real number; balanced = within its floor and ceiling).

    With racks, every partition must span min(RF, racks) racks, which bounds what any set of racks can hold:
    RF >= racks puts at least one replica of every partition in every rack, RF <= racks at most one, and a
    partition spanning 3 of 4 racks has at least one replica in any 2 of them. Racks get their broker-proportional
    share within those bounds (water-filling, then the most violated set of racks fixed at its bound, recursively),
    brokers an equal part of their rack's.
    """
    total = sum(rf * n for rf, n in rf_counts.items())
    by_rack: dict[str | None, list[int]] = {}
    for b in brokers:
        by_rack.setdefault(rack_of.get(b), []).append(b)
    racks = sorted(by_rack, key=lambda r: (r is None, r or ""))
    if len(racks) <= 1:
        return {b: round(total / len(brokers), 6) for b in brokers}
    sizes = [len(by_rack[r]) for r in racks]
    shares = _rack_shares(rf_counts, sizes, list(range(len(racks))), float(total))
    return {b: round(shares[i] / sizes[i], 6) for i, r in enumerate(racks) for b in by_rack[r]}


def _rack_bounds(rf_counts: Mapping[int, int], k: int, j: int, members: int) -> tuple[float, float]:
    """Fewest and most replicas a set of j of the k racks, holding `members` brokers, can hold."""
    low = high = 0
    for rf, n in rf_counts.items():
        if rf <= k:  # one rack each, rf of them
            low += n * max(0, rf - (k - j))
            high += n * min(rf, j, members)
        else:  # every rack at least one
            low += n * j
            high += n * min(rf - (k - j), members)
    return float(low), float(high)


def _rack_shares(rf_counts: Mapping[int, int], sizes: list[int], subset: list[int], total: float) -> dict[int, float]:
    k = len(sizes)
    bounds = [_rack_bounds(rf_counts, k, 1, sizes[i]) for i in subset]
    shares = dict(zip(subset, fair_shares(total, [sizes[i] for i in subset], [lo for lo, _ in bounds],
                                          [hi for _, hi in bounds])))
    if k > 10 or len(subset) < 3:
        return shares  # 2**k sets; and with two racks the single-rack bounds say it all
    worst, fixed = 1e-6, None
    for mask in range(1, 2 ** len(subset) - 1):
        group = [i for bit, i in enumerate(subset) if mask >> bit & 1]
        if len(group) < 2:
            continue
        low, high = _rack_bounds(rf_counts, k, len(group), sum(sizes[i] for i in group))
        held = sum(shares[i] for i in group)
        for gap, bound in ((low - held, low), (held - high, high)):
            if gap > worst:
                worst, fixed = gap, (group, bound)
    if fixed is None:
        return shares
    group, bound = fixed
    rest = [i for i in subset if i not in group]
    return _rack_shares(rf_counts, sizes, group, bound) | _rack_shares(rf_counts, sizes, rest, total - bound)


def leader_means(n_partitions: int, replicas_held: Mapping[int, int]) -> dict[int, float]:
    """Preferred leaders each broker should hold: an equal share, capped by the replicas it holds."""
    brokers = sorted(replicas_held)
    shares = fair_shares(n_partitions, [1.0] * len(brokers), [0.0] * len(brokers),
                         [float(replicas_held[b]) for b in brokers])
    return dict(zip(brokers, shares))


def byte_targets(assignment: Sequence[Replicas], sizes: Sequence[int], means: Mapping[int, float],
                 rack_of: Mapping[int, str | None]) -> dict[int, float]:
    """The bytes each target broker should hold: an equal part of its rack's bytes (without racks: of all bytes).

    Per rack, because the rack rule fixes most of a rack's bytes: with RF = racks every partition has exactly one
    replica in every rack, so each rack holds all the bytes once whatever the placement. (The balanced planner
    first tries to even bytes across racks too, where partitions allow.)"""
    load: dict[str | None, int] = {}
    for replicas, size in zip(assignment, sizes):
        for b in replicas:
            if b in means:
                load[rack_of.get(b)] = load.get(rack_of.get(b), 0) + size
    share: dict[str | None, float] = {}
    for b, m in means.items():
        share[rack_of.get(b)] = share.get(rack_of.get(b), 0.0) + m
    return {b: load.get(rack_of.get(b), 0) * m / share[rack_of.get(b)] if m else 0.0 for b, m in means.items()}


def lower_bound(before: Sequence[Replicas], new_rf: Sequence[int], means: Mapping[int, float],
                rack_of: Mapping[int, str | None] | None = None) -> int:
    """No plan reaching the targets moves fewer replicas than this.

    The largest of: what must leave (every broker's excess over the ceiling of its mean, every replica on a
    broker outside the targets, less the replicas an RF decrease drops); what must arrive (every broker's
    shortfall under the floor of its mean); the replicas an RF increase adds; and, with racks, the racks
    missing from partitions that span too few (each costs a move).
    """
    load = Counter(chain.from_iterable(before))
    leave = sum(n if b not in means else max(0, n - math.ceil(means[b])) for b, n in load.items())
    arrive = sum(max(0, math.floor(m) - load.get(b, 0)) for b, m in means.items())
    dropped = sum(max(0, len(r) - rf) for r, rf in zip(before, new_rf))
    added = sum(max(0, rf - len(r)) for r, rf in zip(before, new_rf))
    return max(leave - dropped, arrive, added, _missing_racks(before, new_rf, means, rack_of or {}), 0)


def _missing_racks(before: Sequence[Replicas], new_rf: Sequence[int], means: Mapping[int, float],
                   rack_of: Mapping[int, str | None]) -> int:
    k = len({rack_of.get(b) for b in means})
    if k <= 1:
        return 0
    return sum(max(0, min(rf, k) - len({rack_of.get(b) for b in r if b in means})) for r, rf in zip(before, new_rf))


# --- the report -------------------------------------------------------------------------------


def report(before: Sequence[Replicas], after: Sequence[Replicas], topic_of: Sequence[int], topics: Sequence[str],
           brokers: Sequence[int], rack_of: Mapping[int, str | None], sizes: Sequence[int] | None,
           means: Mapping[int, float], bound: int) -> MetricsReport:
    moved = leader_changes = changed = 0
    bytes_moved = 0
    for i, (old, new) in enumerate(zip(before, after)):
        if old == new:
            continue
        changed += 1
        arrivals = len(set(new).difference(old))
        moved += arrivals
        if sizes is not None:
            bytes_moved += arrivals * sizes[i]
        if (old[0] if old else None) != (new[0] if new else None):
            leader_changes += 1
    targets = set(brokers)
    left = sum(n for b, n in Counter(chain.from_iterable(after)).items() if b not in targets)
    skew_before, _ = _topic_skew(before, topic_of, topics, brokers)
    skew_after, per_topic = _topic_skew(after, topic_of, topics, brokers)
    return MetricsReport(
        replicas_moved=moved, bytes_moved=bytes_moved if sizes is not None else None, leader_changes=leader_changes,
        partitions_changed=changed, lower_bound=bound,
        replicas=(_replicas(before, brokers), _replicas(after, brokers)),
        leaders=(_leaders(before, brokers), _leaders(after, brokers)),
        bytes=None if sizes is None else (_bytes(before, sizes, brokers), _bytes(after, sizes, brokers)),
        rack_violations=(rack_violations(before, rack_of, brokers), rack_violations(after, rack_of, brokers)),
        topic_skew=(skew_before, skew_after), topic_skew_after=per_topic,
        brokers_off_target=(_off_target(before, means), _off_target(after, means)),
        bytes_off_target=None if sizes is None else (_bytes_off_target(before, sizes, means, rack_of),
                                                     _bytes_off_target(after, sizes, means, rack_of)),
        replicas_left_on_non_targets=left)


def rack_violations(assignment: Sequence[Replicas], rack_of: Mapping[int, str | None], brokers: Sequence[int]) -> int:
    """Partitions whose replicas span fewer than min(RF, racks of the target brokers) racks."""
    k = len({rack_of.get(b) for b in brokers})
    if k <= 1:
        return 0
    # A broker without a rack counts as a rack of its own: it can never prove a spread.
    rack = {b: r if r is not None else f"\0{b}" for b, r in rack_of.items()}
    return sum(1 for r in assignment if len({rack.get(b, f"\0{b}") for b in r}) < min(len(r), k))


def _off_target(assignment: Sequence[Replicas], means: Mapping[int, float]) -> int:
    load = Counter(chain.from_iterable(assignment))
    return sum(1 for b, m in means.items() if not math.floor(m) <= load.get(b, 0) <= math.ceil(m))


def _bytes_off_target(assignment: Sequence[Replicas], sizes: Sequence[int], means: Mapping[int, float],
                      rack_of: Mapping[int, str | None]) -> int:
    targets = byte_targets(assignment, sizes, means, rack_of)
    load = dict.fromkeys(means, 0)
    for replicas, size in zip(assignment, sizes):
        for b in replicas:
            if b in load:
                load[b] += size
    return sum(1 for b, t in targets.items() if abs(load[b] - t) > BYTES_TOLERANCE * t)


def distribution(values: Sequence[float]) -> Distribution:
    if not values:
        return Distribution(0, 0, 0, 0)
    return Distribution(min(values), max(values), statistics.fmean(values), statistics.pstdev(values))


def _replicas(assignment: Sequence[Replicas], brokers: Sequence[int]) -> Distribution:
    load = Counter(chain.from_iterable(assignment))
    return distribution([load.get(b, 0) for b in brokers])


def _leaders(assignment: Sequence[Replicas], brokers: Sequence[int]) -> Distribution:
    load = Counter(r[0] for r in assignment if r)
    return distribution([load.get(b, 0) for b in brokers])


def _bytes(assignment: Sequence[Replicas], sizes: Sequence[int], brokers: Sequence[int]) -> Distribution:
    load: dict[int, int] = dict.fromkeys(brokers, 0)
    for replicas, size in zip(assignment, sizes):
        for b in replicas:
            if b in load:
                load[b] += size
    return distribution([load[b] for b in brokers])


def _topic_skew(assignment: Sequence[Replicas], topic_of: Sequence[int], topics: Sequence[str],
                brokers: Sequence[int]) -> tuple[int, dict[str, int]]:
    targets = set(brokers)
    counts = Counter((t, b) for t, replicas in zip(topic_of, assignment) for b in replicas if b in targets)
    per_topic: dict[str, list[int]] = {}
    for (t, _), n in counts.items():
        per_topic.setdefault(topics[t], []).append(n)
    skew = {name: max(ns) - (min(ns) if len(ns) == len(brokers) else 0) for name, ns in sorted(per_topic.items())}
    return max(skew.values(), default=0), skew


def excess_over_even(counts: Sequence[Sequence[float]], alive: Sequence[bool]) -> list[list[float]]:
    """Per (topic, broker): replicas above (+) or below (-) an even spread of the topic over the alive brokers, the
    fleet heatmap's cell. An even spread gives each alive broker floor(T/n) or ceil(T/n) of the topic's T
    replicas: a broker within those bounds has 0, one above ceil has count - ceil, one below floor count - floor.
    A dead broker should hold nothing: all its replicas are excess."""
    n_alive = sum(1 for a in alive if a)
    out = []
    for row in counts:
        if n_alive == 0:
            out.append([float(c) for c in row])
            continue
        share = sum(row) / n_alive
        lo, hi = math.floor(share), math.ceil(share)
        out.append([float(c) if not up else float(c - hi) if c > hi else float(c - lo) if c < lo else 0.0
                    for c, up in zip(row, alive)])
    return out

