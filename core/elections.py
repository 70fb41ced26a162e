"""Preferred-leader elections: who is off their preferred leader, who can be moved back, and what follows.

Kafka's controller elects the preferred (first) replica only when it is alive and in the ISR, and skips
partitions of topics being deleted and partitions being reassigned. This module predicts exactly that
from a snapshot, so the operator sees before clicking which partitions will move, which will not and
why, and how many partitions each broker will lead afterwards. Pure: snapshot in, data out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from core.errors import ValidationError
from core.model import NO_LEADER, ClusterSnapshot, Partition

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Candidate:
    """A partition whose leader is not its preferred replica."""

    topic: str
    partition: int
    preferred: int
    leader: int
    eligible: bool
    reason: str  # why not, or "" when eligible

    @property
    def key(self) -> TopicPartition:
        return self.topic, self.partition


def _why_not(p: Partition, snapshot: ClusterSnapshot, reassigning: set[TopicPartition], deleting: set[str]) -> str:
    preferred = p.preferred_leader
    if p.topic in deleting:
        return "topic is being deleted"
    if (p.topic, p.partition) in reassigning or p.adding_replicas or p.removing_replicas:
        return "partition is being reassigned"
    if not p.has_state:
        return "partition has no leader state yet"
    if preferred not in snapshot.alive_broker_ids:
        return f"preferred broker {preferred} is down"
    if preferred not in p.isr:
        return f"preferred broker {preferred} is not in the ISR"
    return ""


def candidates(snapshot: ClusterSnapshot, partitions: Iterable[Partition] | None = None) -> list[Candidate]:
    """Every partition (of `partitions`, default all) not led by its preferred replica, sorted."""
    reassigning = {(r.topic, r.partition) for r in snapshot.in_progress.reassignment}
    deleting = set(snapshot.in_progress.deletion)
    out = []
    for p in snapshot.partitions() if partitions is None else partitions:
        if not p.replicas or p.leader == p.preferred_leader:
            continue
        reason = _why_not(p, snapshot, reassigning, deleting)
        out.append(Candidate(p.topic, p.partition, p.preferred_leader, p.leader, not reason, reason))
    return sorted(out, key=lambda c: c.key)


# --- choosing the partitions of an election --------------------------------------------------


@dataclass(frozen=True)
class Selection:
    scope: str
    requested: tuple[TopicPartition, ...]  # every partition in scope
    eligible: tuple[Candidate, ...]  # what will be written to /admin/preferred_replica_election
    ineligible: tuple[Candidate, ...]  # off preferred but will stay so, with the reason
    already_preferred: int  # in scope and already led by their preferred replica

    @property
    def partitions(self) -> list[TopicPartition]:
        return [c.key for c in self.eligible]


def _partition_index(snapshot: ClusterSnapshot) -> dict[TopicPartition, Partition]:
    return {(p.topic, p.partition): p for p in snapshot.partitions()}


def select(snapshot: ClusterSnapshot, *, all_partitions: bool = False, topic: str | None = None,
           broker: int | None = None, partitions: Sequence[TopicPartition] | None = None) -> Selection:
    """The partitions of one election: all, one topic, one broker's preferred partitions, or a chosen set.

    Unknown topics or partitions and duplicates are refused (nothing would be written)."""
    chosen = [all_partitions, topic is not None, broker is not None, partitions is not None]
    if sum(chosen) != 1:
        raise ValidationError("choose exactly one of: all partitions, a topic, a broker, or a list of partitions")
    index = _partition_index(snapshot)
    if all_partitions:
        scope, keys = "all partitions", list(index)
    elif topic is not None:
        t = snapshot.topic(topic)
        if t is None:
            raise ValidationError(f"Topic '{topic}' does not exist")
        scope, keys = f"topic {topic}", [(topic, p.partition) for p in t.partitions]
    elif broker is not None:
        if broker not in snapshot.broker_by_id:
            known = ", ".join(str(b.id) for b in snapshot.brokers)
            raise ValidationError(f"broker {broker} is not part of this cluster (brokers: {known})")
        scope = f"partitions whose preferred leader is broker {broker}"
        keys = [k for k, p in index.items() if p.preferred_leader == broker]
    else:
        keys = [(str(t), int(p)) for t, p in partitions]
        dupes = sorted({f"{t}-{p}" for (t, p), n in Counter(keys).items() if n > 1})
        if dupes:
            raise ValidationError(f"Preferred replica election data contains duplicate partitions: {', '.join(dupes)}")
        unknown = [f"{t}-{p}" for t, p in keys if (t, p) not in index]
        if unknown:
            raise ValidationError(f"The following partitions do not exist in the cluster: {', '.join(unknown)}")
        scope = f"{len(keys)} chosen partitions"
    if not keys:
        raise ValidationError(f"the selection ({scope}) holds no partitions")
    found = candidates(snapshot, (index[k] for k in keys))
    return Selection(
        scope=scope, requested=tuple(sorted(keys)),
        eligible=tuple(c for c in found if c.eligible),
        ineligible=tuple(c for c in found if not c.eligible),
        already_preferred=len(keys) - len(found),
    )


def leaders_per_broker(snapshot: ClusterSnapshot, elected: Iterable[TopicPartition] = ()) -> dict[int, int]:
    """Partitions led per broker now, or after electing the preferred replica of `elected`."""
    moved = set(elected)
    counts = Counter({b.id: 0 for b in snapshot.brokers})
    for p in snapshot.partitions():
        leader = p.preferred_leader if (p.topic, p.partition) in moved else p.leader
        if leader != NO_LEADER:
            counts[leader] += 1
    return dict(sorted(counts.items()))


# --- after the controller acted ----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    topic: str
    partition: int
    elected: bool
    leader: int
    detail: str


def outcomes(snapshot: ClusterSnapshot, keys: Iterable[TopicPartition]) -> list[Outcome]:
    """For each partition of an election: is it now led by its preferred replica, and if not, why."""
    index = _partition_index(snapshot)
    reassigning = {(r.topic, r.partition) for r in snapshot.in_progress.reassignment}
    deleting = set(snapshot.in_progress.deletion)
    out = []
    for key in sorted(set(keys)):
        p = index.get(key)
        if p is None:
            out.append(Outcome(*key, False, NO_LEADER, "partition no longer exists"))
        elif p.leader == p.preferred_leader:
            out.append(Outcome(*key, True, p.leader, f"led by preferred broker {p.leader}"))
        else:
            why = _why_not(p, snapshot, reassigning, deleting) or "the controller has not acted yet"
            out.append(Outcome(*key, False, p.leader, why))
    return out

