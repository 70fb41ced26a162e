"""Partition reassignment as Kafka's ZooKeeper-mode controller runs it (2.4+, KIP-455): pure decisions.

Follows kafka.controller.KafkaController (onPartitionReassignment, updateCurrentReassignment,
isReassignmentComplete, moveReassignedPartitionLeaderIfRequired, stopRemovedReplicasOfReassignedPartition,
maybeRemoveFromZkReassignment) and kafka.controller.ReplicaAssignment (reassignTo, originReplicas,
targetReplicas):

- U1: the topic node gets RS = (TRS ++ ORS).distinct (target first, then the rest of the origin),
  AR = RS - ORS, RR = RS - TRS.
- Phase A (TRS not all in the ISR): the leader epoch is bumped (updateLeaderEpoch), the adding replicas
  start copying. The emulator models the copy as a delay after which the leader adds the replica to the
  ISR (leader epoch unchanged: it is the leader's ISR expansion, not a controller election).
- Phase B (TRS within the ISR): B3 the leader moves to the first target replica that is alive and in the
  ISR when the old one is not in TRS or is dead (ReassignPartitionLeaderElectionStrategy,
  `LeaderAndIsr.newLeader`: ISR unchanged, epoch + 1), else the epoch is bumped; B4 every removed replica
  goes OfflineReplica (out of the ISR, epoch + 1 each, `doRemoveReplicasFromIsr`); B6 RS = TRS with AR
  and RR cleared; B7 the partition leaves /admin/reassign_partitions when its entry asks for exactly TRS.

No I/O here: the emulator's handler (sandbox.emulator.admin_reassign) reads, calls these and writes conditionally.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Collection, Iterable, Mapping, Sequence

from core import zkformat as zf
from core.model import NO_LEADER, PartitionState, TopicPartitionReplicas

DEFAULT_PARTITION_BYTES = 1_000_000      # assumed size of a partition the emulator has no size for
UNTHROTTLED_BYTES_PER_SECOND = 100_000_000  # "fast": an unthrottled follower copies ~100 MB/s
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_RATE = "leader.replication.throttled.rate"


def _diff(a: Sequence[int], b: Iterable[int]) -> tuple[int, ...]:
    """Scala's Seq.diff for lists without duplicates: a's elements not in b, in a's order."""
    drop = set(b)
    return tuple(x for x in a if x not in drop)


@dataclass(frozen=True)
class ReplicaAssignment:
    """kafka.controller.ReplicaAssignment: the full replica set with the in-flight adding/removing replicas."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        """ORS = RS - AR."""
        return _diff(self.replicas, self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """TRS = RS - RR."""
        return _diff(self.replicas, self.removing)

    @property
    def being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> "ReplicaAssignment":
        """`reassignTo`: RS = (target ++ origin).distinct, AR = RS - origin, RR = RS - target."""
        full = tuple(dict.fromkeys([*target, *self.origin]))
        return ReplicaAssignment(full, _diff(full, self.origin), _diff(full, target))

    @classmethod
    def of(cls, topic: zf.TopicAssignment, partition: int) -> "ReplicaAssignment":
        return cls(tuple(topic.partitions.get(partition, ())), tuple(topic.adding_replicas.get(partition, ())),
                   tuple(topic.removing_replicas.get(partition, ())))


def in_progress(topic: zf.TopicAssignment) -> list[int]:
    """Partitions of a topic node with adding or removing replicas (Kafka's isBeingReassigned)."""
    return sorted(p for p in topic.partitions if topic.adding_replicas.get(p) or topic.removing_replicas.get(p))


def with_partition(topic: zf.TopicAssignment, partition: int, assignment: ReplicaAssignment) -> zf.TopicAssignment:
    """The topic node with one partition's assignment replaced (updateReplicaAssignmentForPartition)."""
    def put(m: Mapping[int, tuple[int, ...]], value: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
        out = {p: tuple(r) for p, r in m.items() if p != partition}
        if value:
            out[partition] = value
        return out

    return replace(topic, partitions=put(topic.partitions, assignment.replicas),
                   adding_replicas=put(topic.adding_replicas, assignment.adding),
                   removing_replicas=put(topic.removing_replicas, assignment.removing))


def encode_topic_node(topic: zf.TopicAssignment) -> bytes:
    """Rewrite a topic node keeping its topic_id; v1 cannot hold the in-flight maps, so Kafka 2.4+ writes v2."""
    in_flight = bool(topic.adding_replicas or topic.removing_replicas)
    version = 2 if topic.version < 2 and in_flight else topic.version
    return zf.encode_topic(topic.partitions, version=version, adding_replicas=topic.adding_replicas,
                           removing_replicas=topic.removing_replicas, topic_id=topic.topic_id)


def invalid_target(target: Sequence[int]) -> str | None:
    """Why a requested replica list cannot be used (the checks of Kafka's validateReplicas that do not
    depend on liveness: the ZooKeeper path itself accepts anything, kafka-reassign-partitions refuses these)."""
    if not target:
        return "empty replica list"
    if len(set(target)) != len(target):
        return f"duplicate replica ids in {list(target)}"
    if any(r < 0 for r in target):
        return f"invalid broker id in {list(target)}"
    return None


def is_complete(assignment: ReplicaAssignment, state: PartitionState | None) -> bool:
    """`isReassignmentComplete`: nothing in flight, or every target replica is in the ISR."""
    if not assignment.being_reassigned:
        return True
    return state is not None and set(assignment.target) <= set(state.isr)


def bump_leader_epoch(state: PartitionState, controller_epoch: int) -> PartitionState:
    """`updateLeaderEpoch`: same leader and ISR, leader epoch + 1."""
    return replace(state, leader_epoch=state.leader_epoch + 1, controller_epoch=controller_epoch)


def reassign_leader(target: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    """`reassignPartitionLeaderElection`: the first target replica alive and in the ISR."""
    return next((r for r in target if r in live and r in isr), None)


def remove_from_isr(state: PartitionState, replica: int, controller_epoch: int) -> PartitionState:
    """`doRemoveReplicasFromIsr` for one replica in the ISR: leader -1 if it led, an ISR of one is kept."""
    if replica not in state.isr:
        return state
    leader = NO_LEADER if state.leader == replica else state.leader
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    return replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1,
                   controller_epoch=controller_epoch)


def stop_replicas(state: PartitionState, replicas: Iterable[int], controller_epoch: int) -> PartitionState:
    """OfflineReplica for several replicas, one after the other in id order (each write bumps the epoch)."""
    for r in sorted(set(replicas)):
        state = remove_from_isr(state, r, controller_epoch)
    return state


def complete_state(assignment: ReplicaAssignment, state: PartitionState, live: Collection[int],
                   controller_epoch: int) -> PartitionState:
    """Phase B3 + B4 for a partition whose target replicas are all in the ISR."""
    target = assignment.target
    if state.leader not in target or state.leader not in live:
        leader = reassign_leader(target, state.isr, live)
        if leader is not None:  # `newLeader`: ISR unchanged, epoch + 1; no leader: the election fails, no write
            state = replace(state, leader=leader, leader_epoch=state.leader_epoch + 1,
                            controller_epoch=controller_epoch)
    else:
        state = bump_leader_epoch(state, controller_epoch)
    return stop_replicas(state, assignment.removing, controller_epoch)


@dataclass(frozen=True)
class Step:
    """What onPartitionReassignment writes for one partition."""

    assignment: ReplicaAssignment      # the partition's assignment in the topic node afterwards
    state: PartitionState              # its leader and ISR afterwards
    complete: bool                     # phase B ran: RS = TRS, the entry leaves /admin/reassign_partitions
    superseded: tuple[int, ...] = ()   # replicas of a replaced reassignment that were stopped


def on_partition_reassignment(current: ReplicaAssignment, new: ReplicaAssignment, state: PartitionState,
                              live: Collection[int], controller_epoch: int) -> Step:
    """`onPartitionReassignment(tp, new)` from the partition's current assignment and state.

    `new` is `current.reassign_to(target)` for a fresh request, or `current` itself when an ongoing
    reassignment is resumed (a target broker came back, the controller failed over).
    """
    superseded = _diff(current.replicas, new.replicas)  # U3: adding replicas of a replaced reassignment
    if superseded:
        state = stop_replicas(state, superseded, controller_epoch)
    if not is_complete(new, state):
        return Step(new, bump_leader_epoch(state, controller_epoch), False, superseded)   # A1
    done = ReplicaAssignment(new.target)
    return Step(done, complete_state(new, state, live, controller_epoch), True, superseded)


def join_isr(state: PartitionState, replica: int) -> PartitionState:
    """A follower caught up: the leader appends it to the ISR (`Partition.maybeExpandIsr`: no epoch bump)."""
    if replica in state.isr or state.leader == NO_LEADER:
        return state
    return replace(state, isr=state.isr + (replica,))


def latest_entries(entries: Iterable[TopicPartitionReplicas]) -> dict[tuple[str, int], tuple[int, ...]]:
    """The node's entries as Kafka reads them into a map: a partition listed twice keeps its last entry."""
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for e in entries:
        out[(e.topic, e.partition)] = tuple(e.replicas)
    return out


def prune_entries(entries: Mapping[tuple[str, int], Sequence[int]], *, failed: Collection[tuple[str, int]] = (),
                  completed: Mapping[tuple[str, int], Sequence[int]] | None = None
                  ) -> dict[tuple[str, int], tuple[int, ...]]:
    """`maybeRemoveFromZkReassignment`: drop failed partitions, and completed ones whose entry asks for
    exactly the replicas they reached."""
    completed = completed or {}
    return {key: tuple(replicas) for key, replicas in entries.items()
            if key not in failed and not (key in completed and tuple(replicas) == tuple(completed[key]))}


def encode_entries(entries: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    return zf.encode_reassignment(TopicPartitionReplicas(t, p, tuple(r)) for (t, p), r in sorted(entries.items()))


def _rate(config: Mapping[str, str] | None, key: str) -> int | None:
    try:
        value = int((config or {}).get(key, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def throttle_rate(follower_config: Mapping[str, str] | None, leader_config: Mapping[str, str] | None) -> int | None:
    """Bytes/s a new replica copies at: the follower broker's follower.replication.throttled.rate and the
    leader broker's leader.replication.throttled.rate, the lower one; None when neither is set."""
    rates = [r for r in (_rate(follower_config, FOLLOWER_RATE), _rate(leader_config, LEADER_RATE)) if r]
    return min(rates) if rates else None


def copy_seconds(size_bytes: int | None, rate: int | None, *, base_delay: float = 0.2, time_scale: float = 1.0,
                 unthrottled_rate: int = UNTHROTTLED_BYTES_PER_SECOND) -> float:
    """How long a new replica takes to catch up: a fixed start-up delay plus size over rate, scaled."""
    size = DEFAULT_PARTITION_BYTES if size_bytes is None else max(0, size_bytes)
    return max(0.0, (base_delay + size / (rate or unthrottled_rate)) * time_scale)


__all__ = [
    "ReplicaAssignment", "Step", "in_progress", "with_partition", "encode_topic_node", "invalid_target",
    "is_complete", "bump_leader_epoch", "reassign_leader", "remove_from_isr", "stop_replicas", "complete_state",
    "on_partition_reassignment", "join_isr", "prune_entries", "latest_entries", "encode_entries", "throttle_rate", "copy_seconds",
    "DEFAULT_PARTITION_BYTES", "UNTHROTTLED_BYTES_PER_SECOND",
]
