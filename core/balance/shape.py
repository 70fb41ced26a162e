"""A plan shaped for reading it: per-broker loads before and after, replicas per (topic, broker) with the long
tail folded, the brokers a view shows, and what a plan moves. The Reassign page draws these; `plan --report`
writes the loads. Pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from core.model import ClusterSnapshot
from core.plans import ReassignmentPlan

Key = tuple[str, int]
TOP_TOPICS = 20  # heatmap rows at most, the "other" row included
MAX_HEATMAP_CELLS = 6000  # per heatmap; more brokers get fewer topic rows


def moves_of(plan: ReassignmentPlan, before: Mapping[Key, Sequence[int]]) -> tuple[int, int]:
    """(partitions whose replica set changes, replicas moved = new replicas placed)."""
    changing = moved = 0
    for e in plan.entries:
        old = set(before.get((e.topic, e.partition), ()))
        if set(e.replicas) != old:
            changing += 1
            moved += len(set(e.replicas) - old)
    return changing, moved


def replicas_per_broker(snapshot: ClusterSnapshot) -> Counter[int]:
    return Counter(b for p in snapshot.partitions() for b in p.replicas)


def empty_brokers(snapshot: ClusterSnapshot) -> list[int]:
    """Alive brokers holding no replica at all: what "fill new brokers" fills."""
    held = replicas_per_broker(snapshot)
    return sorted(b.id for b in snapshot.brokers if b.alive and not held.get(b.id))


def shown_brokers(snapshot: ClusterSnapshot, *assignments: Mapping[Key, Sequence[int]]) -> list[int]:
    """Every broker the snapshot knows (dead ones referenced by assignments included) and any an assignment names."""
    ids = {b.id for b in snapshot.brokers}
    for a in assignments:
        for replicas in a.values():
            ids.update(replicas)
    return sorted(ids)


def broker_marks(snapshot: ClusterSnapshot, drain: Iterable[int] = (), empty: Iterable[int] = ()) -> dict[int, str]:
    """Label suffixes: "drain" for brokers being drained, "empty" for alive brokers holding nothing yet."""
    marks = {b: "empty" for b in empty}
    marks.update({b: "drain" for b in drain})
    return marks


@dataclass(frozen=True)
class BrokerLoads:
    brokers: list[int]
    replicas: tuple[list[int], list[int]]  # (before, after), aligned with brokers
    leaders: tuple[list[int], list[int]]  # preferred leaders (first replica)
    bytes: tuple[list[int], list[int]] | None


def broker_loads(before: Mapping[Key, Sequence[int]], after: Mapping[Key, Sequence[int]], brokers: Sequence[int],
                 sizes: Mapping[Key, int] | None) -> BrokerLoads:
    def count(assignment):
        reps: Counter[int] = Counter()
        leads: Counter[int] = Counter()
        size: Counter[int] = Counter()
        for key, replicas in assignment.items():
            reps.update(replicas)
            if replicas:
                leads[replicas[0]] += 1
            if sizes is not None:
                n = sizes.get(key, 0)
                for b in replicas:
                    size[b] += n
        return ([reps.get(b, 0) for b in brokers], [leads.get(b, 0) for b in brokers],
                [size.get(b, 0) for b in brokers])
    rb, lb, sb = count(before)
    ra, la, sa = count(after)
    return BrokerLoads(list(brokers), (rb, ra), (lb, la), None if sizes is None else (sb, sa))


@dataclass(frozen=True)
class Heatmap:
    topics: list[str]  # row labels, the folded "other (n topics)" row last
    brokers: list[int]  # columns
    before: list[list[int]]
    after: list[list[int]]

    @property
    def cells(self) -> int:
        return len(self.topics) * len(self.brokers)


def topic_broker_counts(before: Mapping[Key, Sequence[int]], after: Mapping[Key, Sequence[int]],
                        brokers: Sequence[int], *, top: int = TOP_TOPICS,
                        max_cells: int = MAX_HEATMAP_CELLS) -> Heatmap:
    """Replicas per (topic, broker) before and after, the topics with the most replicas as rows and the rest folded
    into one "other" row, so that rows x brokers stays within `max_cells` (and `top` rows)."""
    rows = max(1, min(top, max_cells // max(1, len(brokers))))
    cb: Counter[tuple[str, int]] = Counter()
    ca: Counter[tuple[str, int]] = Counter()
    totals: Counter[str] = Counter()
    for counter, assignment in ((cb, before), (ca, after)):
        for (topic, _), replicas in assignment.items():
            for b in replicas:
                counter[(topic, b)] += 1
    for (topic, _), replicas in before.items():
        totals[topic] += len(replicas)
    for (topic, _), replicas in after.items():
        totals.setdefault(topic, 0)
    ranked = sorted(totals, key=lambda t: (-totals[t], t))
    if len(ranked) <= rows:
        named, rest = ranked, []
    else:
        named, rest = ranked[:rows - 1], ranked[rows - 1:]
    col = {b: i for i, b in enumerate(brokers)}

    def matrix(counter: Counter[tuple[str, int]]) -> list[list[int]]:
        out = [[0] * len(brokers) for _ in range(len(named) + (1 if rest else 0))]
        row = {t: i for i, t in enumerate(named)}
        other = len(named)
        for (topic, b), n in counter.items():
            if b in col:
                out[row.get(topic, other)][col[b]] += n
        return out
    labels = list(named) + ([f"other ({len(rest):,} topics)"] if rest else [])
    return Heatmap(labels, list(brokers), matrix(cb), matrix(ca))




__all__ = ["BrokerLoads", "Heatmap", "MAX_HEATMAP_CELLS", "TOP_TOPICS", "broker_loads", "broker_marks",
           "empty_brokers", "moves_of", "replicas_per_broker", "shown_brokers", "topic_broker_counts"]
