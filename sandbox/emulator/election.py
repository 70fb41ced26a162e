"""Preferred leader election and auto leader rebalance as Kafka's ZooKeeper-mode controller runs them: pure.

From kafka.controller.KafkaController (processReplicaLeaderElection, onReplicaElection,
checkAndTriggerAutoLeaderRebalance, canPreferredReplicaBeLeader), kafka.controller.Election
(leaderForPreferredReplica) and PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection:

- only the first replica of the assignment can be elected, and only when it is alive and in the ISR; the
  ISR is kept and the leader epoch goes up by one (`LeaderAndIsr.newLeader`);
- a partition already led by its preferred replica needs no election (ELECTION_NOT_NEEDED), an unknown
  partition or one of a topic queued for deletion is skipped; a partition being reassigned is *not*
  skipped by an explicit election (its preferred replica is then the first target replica);
- auto rebalance: per preferred broker, imbalance = partitions it should lead but does not (leader -1
  included, partitions without a state not) / partitions it should lead; above
  leader.imbalance.per.broker.percentage, its partitions whose preferred replica can lead are elected,
  unless any reassignment is in progress. Topics queued for deletion are left out entirely.

No I/O here: the emulator's handler (sandbox.emulator.admin_election) reads, calls these and writes conditionally.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Collection, Iterable, Mapping, Sequence

from core.model import PartitionState

DEFAULT_IMBALANCE_PERCENTAGE = 10   # leader.imbalance.per.broker.percentage
DEFAULT_CHECK_INTERVAL_SECONDS = 300  # leader.imbalance.check.interval.seconds

ELECTED = "elected"
ALREADY_PREFERRED = "already led by its preferred replica"
UNKNOWN_PARTITION = "unknown partition"
TOPIC_BEING_DELETED = "topic being deleted"
NO_STATE = "no leader and ISR state"

TP = tuple[str, int]


def preferred_leader(replicas: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    """`preferredReplicaPartitionLeaderElection`: the head of the assignment if alive and in the ISR."""
    if replicas and replicas[0] in live and replicas[0] in isr:
        return replicas[0]
    return None


def why_not_preferred(replicas: Sequence[int], state: PartitionState, live: Collection[int]) -> str:
    preferred = replicas[0]
    if preferred not in live:
        return f"preferred replica {preferred} down"
    return f"preferred replica {preferred} not in ISR"


def elect_preferred(replicas: Sequence[int], state: PartitionState | None, live: Collection[int],
                    controller_epoch: int) -> tuple[PartitionState | None, str]:
    """(new state or None when nothing is written, reason) for one partition of a preferred election."""
    if not replicas:
        return None, UNKNOWN_PARTITION
    if state is None:
        return None, NO_STATE
    if state.leader == replicas[0]:
        return None, ALREADY_PREFERRED
    leader = preferred_leader(replicas, state.isr, live)
    if leader is None:
        return None, why_not_preferred(replicas, state, live)
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, controller_epoch=controller_epoch), \
        ELECTED


@dataclass(frozen=True)
class ElectionOutcome:
    topic: str
    partition: int
    elected: bool
    leader: int | None  # the leader afterwards; None when the partition is unknown or has no state
    reason: str


def _names(keys: Sequence[TP], limit: int = 5) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def summarize(outcomes: Iterable[ElectionOutcome], what: str = "preferred election") -> str:
    """One reactions line, e.g. "preferred election: 3 elected, 2 not eligible (preferred replica 4 down:
    t-3; preferred replica 2 down: t-1), 3 already led by their preferred replica"."""
    outcomes = sorted(outcomes, key=lambda o: (o.topic, o.partition))
    elected = [(o.topic, o.partition) for o in outcomes if o.elected]
    already = [o for o in outcomes if o.reason == ALREADY_PREFERRED]
    not_eligible: dict[str, list[TP]] = {}
    skipped: dict[str, list[TP]] = {}
    for o in outcomes:
        if not o.elected and o.reason != ALREADY_PREFERRED:
            bucket = skipped if o.reason in (UNKNOWN_PARTITION, TOPIC_BEING_DELETED) else not_eligible
            bucket.setdefault(o.reason, []).append((o.topic, o.partition))

    def grouped(reasons: dict[str, list[TP]]) -> str:
        return "; ".join(f"{reason}: {_names(keys)}" for reason, keys in sorted(reasons.items()))

    parts = [f"{len(elected)} elected" + (f" ({_names(elected)})" if elected else "")]
    if not_eligible:
        parts.append(f"{sum(map(len, not_eligible.values()))} not eligible ({grouped(not_eligible)})")
    if already:
        parts.append(f"{len(already)} already led by {'its' if len(already) == 1 else 'their'} preferred replica")
    if skipped:
        parts.append(f"{sum(map(len, skipped.values()))} skipped ({grouped(skipped)})")
    return f"{what}: " + ", ".join(parts)


@dataclass(frozen=True)
class BrokerImbalance:
    broker: int
    not_preferred: tuple[TP, ...]  # partitions this broker should lead but does not
    total: int                     # partitions whose preferred replica it is
    candidates: tuple[TP, ...]     # what the controller elects for it (empty below the threshold)

    @property
    def ratio(self) -> float:
        return len(self.not_preferred) / self.total if self.total else 0.0


def leader_imbalance(assignments: Mapping[TP, Sequence[int]], states: Mapping[TP, PartitionState | None]
                     ) -> dict[int, tuple[list[TP], int]]:
    """Per preferred broker: (partitions it should lead but does not, partitions it should lead)."""
    out: dict[int, tuple[list[TP], int]] = {}
    for key in sorted(assignments):
        replicas = assignments[key]
        if not replicas:
            continue
        off, total = out.get(replicas[0], ([], 0))
        state = states.get(key)
        if state is not None and state.leader != replicas[0]:
            off.append(key)
        out[replicas[0]] = (off, total + 1)
    return out


def auto_rebalance(assignments: Mapping[TP, Sequence[int]], states: Mapping[TP, PartitionState | None],
                   live: Collection[int], *, threshold_percent: float = DEFAULT_IMBALANCE_PERCENTAGE,
                   reassigning: bool = False) -> list[BrokerImbalance]:
    """`checkAndTriggerAutoLeaderRebalance` over partitions of topics not queued for deletion: the brokers
    above the threshold, each with the partitions to elect (none while a reassignment is in progress)."""
    out = []
    for broker, (off, total) in sorted(leader_imbalance(assignments, states).items()):
        if not total or len(off) / total <= threshold_percent / 100:
            continue
        candidates = () if reassigning else tuple(
            k for k in off if (s := states.get(k)) is not None and preferred_leader(assignments[k], s.isr, live) is not None)
        out.append(BrokerImbalance(broker, tuple(off), total, candidates))
    return out


__all__ = [
    "ElectionOutcome", "BrokerImbalance", "preferred_leader", "why_not_preferred", "elect_preferred", "summarize",
    "leader_imbalance", "auto_rebalance", "ELECTED", "ALREADY_PREFERRED", "UNKNOWN_PARTITION",
    "TOPIC_BEING_DELETED", "NO_STATE", "DEFAULT_IMBALANCE_PERCENTAGE", "DEFAULT_CHECK_INTERVAL_SECONDS",
]
