"""The planner interface: `plan(snapshot, request) -> PlanResult`, the request, the result, and the shared input
resolution every strategy goes through (which partitions, which brokers, racks, replication factors, sizes).

Choices (documented because an SRE will ask):
* topics None: every topic, internal ones included (`__consumer_offsets` holds replicas like any other), except
  topics queued for deletion. `kafka-generate` refuses None, as `--generate` needs --topics-to-move-json-file.
* target brokers None: every alive (registered) broker. Listed brokers that are not registered are left out
  with a warning, as Kafka's `getBrokerMetadatas` silently filters them.
* a goal moves only what it names: a down broker's replicas stay where they are unless the broker is drained
  (`drain_brokers`). A partition holding one is left as it is (`Scope.frozen`), since Kafka completes a
  reassignment only once every target replica is in the ISR, which a down broker never joins; and moving it off
  is the drain goal, chosen explicitly. Replication-factor changes are the exception: they name the topic, and
  its down replicas are replaced like any off-target replica.
* balance is measured over the partitions in scope: a topic subset is balanced on its own.
Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Mapping, Protocol

from core.assignment import RackAwareMode, brokers_for_mode
from core.balance.metrics import MetricsReport, lower_bound, replica_means, report
from core.balance.rates import DEFAULT_RATE_TOLERANCE, traffic_report
from core.balance.waves import split_waves
from core.errors import PlanError
from core.model import ClusterSnapshot
from core.plans import ReassignmentEntry, ReassignmentPlan, format_reassignment

TopicPartition = tuple[str, int]
Assignment = dict[TopicPartition, tuple[int, ...]]


@dataclass(frozen=True)
class PlanRequest:
    topics: tuple[str, ...] | None = None
    target_brokers: tuple[int, ...] | None = None
    drain_brokers: tuple[int, ...] = ()  # every replica leaves them; they are not targets
    replication_factor: int | Mapping[str, int] | None = None  # an int for every topic, or topic -> RF
    partition_sizes: Mapping[TopicPartition, int] | None = None  # bytes, see sizes.parse_log_dirs
    max_moves: int | None = None
    seed: int = 0
    rack_aware: bool = True
    per_topic_spread: bool = False
    wave_partitions: int | None = None  # set either wave limit to get waves
    wave_broker_moves: int | None = None
    # bytes/s written into each partition (core.balance.rates): the balanced planner evens out the bytes written per
    # broker (the sum over the replicas it holds) within rate_tolerance of each broker's target
    partition_rates: Mapping[TopicPartition, float] | None = None
    rate_tolerance: float = DEFAULT_RATE_TOLERANCE


@dataclass(frozen=True)
class PlanResult:
    strategy: str
    proposed: Assignment  # the partitions that change, sorted by topic then partition
    target: Assignment  # every partition in scope, after the plan
    rollback: Assignment  # the current replicas of the partitions that change
    report: MetricsReport
    waves: tuple[tuple[TopicPartition, ...], ...] | None
    warnings: tuple[str, ...]

    @property
    def plan(self) -> ReassignmentPlan:
        """The changes as the document Execute writes (sorted by topic, then partition)."""
        return ReassignmentPlan(tuple(ReassignmentEntry(t, p, r) for (t, p), r in sorted(self.proposed.items())))

    def reassignment_json(self) -> str:
        return format_reassignment(self.proposed)

    def rollback_json(self) -> str:
        return format_reassignment(self.rollback)

    def to_dict(self) -> dict:
        """The report as JSON-ready data (what `plan --report` writes and the page offers for download)."""
        report = asdict(self.report)
        report["moves_over_lower_bound"] = self.report.moves_over_lower_bound
        return {"strategy": self.strategy, "partitions_changed": len(self.proposed), "report": report,
                "waves": [[f"{t}-{p}" for t, p in wave] for wave in self.waves] if self.waves else None,
                "warnings": list(self.warnings)}


class Planner(Protocol):
    def __call__(self, snapshot: ClusterSnapshot, request: PlanRequest) -> PlanResult: ...


@dataclass
class Scope:
    """The resolved inputs, as aligned lists (one entry per partition, sorted by topic then partition)."""

    keys: list[TopicPartition]
    current: list[tuple[int, ...]]
    new_rf: list[int]
    topic_of: list[int]
    topics: list[str]
    sizes: list[int] | None
    targets: tuple[int, ...]  # sorted broker ids
    rack_of: dict[int, str | None]  # every broker id seen; all None when planning without racks
    warnings: list[str] = field(default_factory=list)
    pinned: frozenset[int] = frozenset()  # down brokers not drained: their replicas stay
    frozen: list[bool] = field(default_factory=list)  # per partition: it holds a pinned replica, left as it is
    rates: list[float] | None = None  # bytes/s written per partition, when rates are given
    unrated: int = 0  # partitions in scope without a rate (0 B/s)

    def live_replicas(self, replicas) -> tuple[int, ...]:
        """`replicas` without those on pinned brokers (what the targets share)."""
        return tuple(b for b in replicas if b not in self.pinned) if self.pinned else tuple(replicas)


def resolve(snapshot: ClusterSnapshot, request: PlanRequest, *, topics_required: bool = False) -> Scope:
    if request.max_moves is not None and request.max_moves < 0:
        raise PlanError(f"the move budget must be 0 or more, got {request.max_moves}")
    warnings: list[str] = []
    names = _topics(snapshot, request, topics_required, warnings)
    targets = _targets(snapshot, request, warnings)
    rack_of = _racks(snapshot, targets, request.rack_aware)
    keys, current, topic_of = [], [], []
    for t, name in enumerate(names):
        for p in sorted(snapshot.topic_by_name[name].partitions, key=lambda p: p.partition):
            keys.append((name, p.partition))
            current.append(p.replicas)
            topic_of.append(t)
    for replicas in current:
        for b in replicas:
            rack_of.setdefault(b, None)
    new_rf = _replication_factors(request, names, topic_of, current, len(targets))
    sizes = None
    if request.partition_sizes is not None:
        sizes = [request.partition_sizes.get(k, 0) for k in keys]
        unknown = sum(1 for k in keys if k not in request.partition_sizes)
        if unknown:
            warnings.append(f"no size for {unknown} of {len(keys)} partitions; they count as 0 bytes")
    rates, unrated = None, 0
    if request.partition_rates is not None:
        if not 0 < request.rate_tolerance <= 10:
            raise PlanError(f"the write-rate tolerance must be above 0 (0.1 = 10 %), got {request.rate_tolerance}")
        got = request.partition_rates.get
        rates = list(map(got, keys))
        unrated = rates.count(None)
        rates = [0.0 if r is None else float(r) for r in rates] if unrated else rates
        if unrated:
            warnings.append(f"no write rate for {unrated} of {len(keys)} partitions; they count as 0 B/s")
    pinned, frozen = _pinned(snapshot, request, current, new_rf, warnings)
    if snapshot.in_progress.reassignment:
        warnings.append(f"a reassignment of {len(snapshot.in_progress.reassignment)} partition(s) is in progress: "
                        "their replica lists include the replicas being added, and Kafka accepts a new "
                        "reassignment only after it completes")
    return Scope(keys, current, new_rf, topic_of, names, sizes, targets, rack_of, warnings, pinned, frozen, rates,
                 unrated)


def _pinned(snapshot: ClusterSnapshot, request: PlanRequest, current: list[tuple[int, ...]], new_rf: list[int],
            warnings: list[str]) -> tuple[frozenset[int], list[bool]]:
    """Down brokers that are not drained, and per partition whether it holds one of their replicas (and keeps its
    replication factor): such a partition is left as it is, with a warning saying how to move it."""
    alive = snapshot.alive_broker_ids
    drain = set(request.drain_brokers)
    pinned = frozenset(b for replicas in current for b in replicas if b not in alive and b not in drain)
    if not pinned:
        return pinned, [False] * len(current)
    frozen = [len(r) == rf and any(b in pinned for b in r) for r, rf in zip(current, new_rf)]
    n = sum(frozen)
    if n:
        ids = ",".join(map(str, sorted(pinned)))
        warnings.append(f"{n} partition(s) with a replica on down broker(s) {ids} are left as they are: a "
                        "reassignment keeping a down broker's replica cannot complete (it never rejoins the ISR), "
                        f"and moving replicas off a down broker is the drain goal (--exclude-brokers {ids}, "
                        "Drain brokers on the Reassign page)")
    return pinned, frozen


def finish(scope: Scope, after: list[tuple[int, ...]], strategy: str, request: PlanRequest,
           warnings: list[str], moves_without_topic_spread: int | None = None,
           rates_why: str | None = None,
           rate_loads: tuple[dict[int, float], dict[int, float]] | None = None) -> PlanResult:
    """Score `after` against the scope and package it (`rate_loads`: see rates.traffic_report)."""
    # Replicas left on pinned (down, not drained) brokers are not the targets' to share.
    live_after = [scope.live_replicas(r) for r in after] if scope.pinned else after
    rf_counts: dict[int, int] = {}
    for replicas in live_after:
        if replicas:
            rf_counts[len(replicas)] = rf_counts.get(len(replicas), 0) + 1
    means = replica_means(rf_counts, scope.targets, scope.rack_of)
    live_before = [scope.live_replicas(r) for r in scope.current] if scope.pinned else scope.current
    bound = lower_bound(live_before, [len(r) for r in live_after], means, scope.rack_of)
    metrics = report(scope.current, after, scope.topic_of, scope.topics, scope.targets, scope.rack_of,
                     scope.sizes, means, bound)
    if moves_without_topic_spread is not None:
        metrics = replace(metrics, moves_without_topic_spread=moves_without_topic_spread)
    if scope.rates is not None:
        metrics = replace(metrics, traffic=traffic_report(
            scope.current, after, scope.rates, means, scope.rack_of, request.rate_tolerance,
            rates_why or "this strategy does not balance write rates", scope.unrated, rate_loads))
    proposed = {k: new for k, old, new in zip(scope.keys, scope.current, after) if old != new}
    rollback = {k: old for k, old, new in zip(scope.keys, scope.current, after) if old != new}
    waves = None
    if request.wave_partitions is not None or request.wave_broker_moves is not None:
        unlimited = max(1, len(proposed))
        waves = split_waves(rollback, proposed,
                            unlimited if request.wave_partitions is None else request.wave_partitions,
                            unlimited if request.wave_broker_moves is None else request.wave_broker_moves)
    return PlanResult(strategy, proposed, dict(zip(scope.keys, after)), rollback, metrics, waves,
                      tuple(scope.warnings + warnings))


def _topics(snapshot: ClusterSnapshot, request: PlanRequest, required: bool, warnings: list[str]) -> list[str]:
    if request.topics is None:
        if required:
            raise PlanError("this strategy needs the topics to move, as --generate needs --topics-to-move-json-file")
        wanted = sorted(snapshot.topic_by_name)
    else:
        repeated = sorted(t for t, n in Counter(request.topics).items() if n > 1)
        if repeated:
            raise PlanError(f"List of topics to reassign contains duplicate entries: {','.join(repeated)}")
        missing = sorted(set(request.topics) - set(snapshot.topic_by_name))
        if missing:
            raise PlanError(f"Topic {missing[0]} not found.")
        wanted = sorted(request.topics)
    deleting = sorted(set(wanted) & set(snapshot.in_progress.deletion))
    if deleting:
        warnings.append(f"left out, queued for deletion: {','.join(deleting)}")
    names = [t for t in wanted if t not in deleting and snapshot.topic_by_name[t].partitions]
    if not names:
        raise PlanError("no partitions to plan: the topics selected have none")
    return names


def _targets(snapshot: ClusterSnapshot, request: PlanRequest, warnings: list[str]) -> tuple[int, ...]:
    alive = snapshot.alive_broker_ids
    if request.target_brokers is None:
        listed = sorted(alive)
    else:
        listed = list(request.target_brokers)
        repeated = sorted(b for b, n in Counter(listed).items() if n > 1)
        if repeated:
            raise PlanError(f"Broker list contains duplicate entries: {','.join(map(str, repeated))}")
        gone = sorted(set(listed) - alive)
        if gone:
            warnings.append(f"left out, not registered in ZooKeeper: broker(s) {','.join(map(str, gone))}")
    drain = set(request.drain_brokers)
    unknown = sorted(drain - set(snapshot.broker_by_id))
    if unknown:
        warnings.append(f"drain: broker(s) {','.join(map(str, unknown))} unknown to the snapshot")
    targets = tuple(sorted(b for b in set(listed) & alive if b not in drain))
    if not targets:
        raise PlanError("no target brokers left: list alive brokers that are not being drained")
    return targets


def _racks(snapshot: ClusterSnapshot, targets: tuple[int, ...], rack_aware: bool) -> dict[int, str | None]:
    """Rack per broker id; all None unless rack-aware and every target broker has a rack (else Kafka's error)."""
    mode = RackAwareMode.ENFORCED if rack_aware else RackAwareMode.DISABLED
    pairs = brokers_for_mode([(b, snapshot.broker_by_id[b].rack) for b in targets], mode)
    if all(rack is None for _, rack in pairs):
        return {b.id: None for b in snapshot.brokers}
    return {b.id: b.rack for b in snapshot.brokers}


def _replication_factors(request: PlanRequest, names: list[str], topic_of: list[int], current: list[tuple[int, ...]],
                         n_targets: int) -> list[int]:
    asked = request.replication_factor
    if asked is None:
        per_topic: dict[str, int] = {}
    elif isinstance(asked, int):
        per_topic = dict.fromkeys(names, asked)
    else:
        stray = sorted(set(asked) - set(names))
        if stray:
            raise PlanError(f"replication factor given for topic(s) not being planned: {','.join(stray)}")
        per_topic = dict(asked)
    new_rf = [per_topic.get(names[t], len(r)) for t, r in zip(topic_of, current)]
    for rf in sorted(set(new_rf)):
        if rf <= 0:
            raise PlanError("Replication factor must be larger than 0.")
        if rf > n_targets:
            raise PlanError(f"Replication factor: {rf} larger than available brokers: {n_targets}.")
    return new_rf
