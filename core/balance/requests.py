"""What to plan: the engine's request, built the same way for the Reassign page and `python -m core plan`, and
`plan`, which plans on the cluster as it will be once a running reassignment is done (core.plans.settled). Both
front ends build their request and plan through here, so the same inputs give the same plan. Pure."""

from __future__ import annotations

from typing import Mapping, Sequence

from core.balance import STRATEGIES
from core.balance.base import PlanRequest, PlanResult, TopicPartition
from core.balance.rates import DEFAULT_RATE_TOLERANCE
from core.model import ClusterSnapshot
from core.plans import settled

DEFAULT_STRATEGY = "balanced"


def plan_request(snapshot: ClusterSnapshot, strategy: str, *, topics: Sequence[str] | None = None,
                 drain: Sequence[int] = (), replication_factor: int | None = None,
                 target_brokers: Sequence[int] | None = None, sizes: Mapping[TopicPartition, int] | None = None,
                 max_moves: int | None = None, seed: int = 0, rack_aware: bool = True,
                 per_topic_spread: bool = False, wave_partitions: int | None = None,
                 wave_broker_moves: int | None = None, rates: Mapping[TopicPartition, float] | None = None,
                 rate_tolerance: float = DEFAULT_RATE_TOLERANCE) -> PlanRequest:
    """The request: `topics` (None or empty: every topic), replicas leaving the `drain` brokers, every planned
    topic's replication factor changed to `replication_factor`, replicas placed on `target_brokers` only (None:
    every alive broker not drained). `rates` (bytes/s per partition) adds the write-rate goal within
    `rate_tolerance`.

    kafka-generate moves the topics it is given, as `--generate` needs `--topics-to-move-json-file`: "every topic"
    is then listed (every topic not queued for deletion), so that both strategies plan the same scope."""
    chosen: tuple[str, ...] | None = tuple(sorted(topics)) if topics else None
    if chosen is None and strategy != DEFAULT_STRATEGY:
        deleting = set(snapshot.in_progress.deletion)
        chosen = tuple(t.name for t in snapshot.topics if t.name not in deleting and t.partitions)
    return PlanRequest(topics=chosen, target_brokers=tuple(target_brokers) if target_brokers is not None else None,
                       drain_brokers=tuple(sorted(int(b) for b in drain)),
                       replication_factor=int(replication_factor) if replication_factor is not None else None,
                       partition_sizes=dict(sizes) if sizes is not None else None, max_moves=max_moves,
                       seed=int(seed), rack_aware=rack_aware, per_topic_spread=per_topic_spread,
                       wave_partitions=wave_partitions, wave_broker_moves=wave_broker_moves,
                       partition_rates=dict(rates) if rates is not None else None, rate_tolerance=rate_tolerance)


def plan(snapshot: ClusterSnapshot, strategy: str, request: PlanRequest) -> PlanResult:
    """Plan with `strategy` on the cluster as it will be: a running reassignment counted as finished (a moving
    partition holds target + origin replicas meanwhile, and a planner counting those would move replicas that
    are about to go)."""
    return STRATEGIES[strategy](settled(snapshot), request)


__all__ = ["DEFAULT_STRATEGY", "plan", "plan_request"]
