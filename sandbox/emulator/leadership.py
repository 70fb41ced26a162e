"""Leader and ISR decisions of Kafka's ZooKeeper-mode controller for one partition: pure, no I/O.

Given a partition's replicas, its current state and the live brokers, what does Kafka's KafkaController write
next? They follow the Scala source: `Election.leaderForOffline` (first replica in replica order that is alive
and in the ISR; the ISR keeps its live members), `ZkReplicaStateMachine.doRemoveReplicasFromIsr` (leader -1
when the removed replica led, an ISR of one is kept), `LeaderAndIsr.newLeaderAndIsr` (every controller write
bumps the leader epoch) and `initializeLeaderAndIsrForPartitions` (new partition: first live replica leads,
ISR = live replicas). Unit-testable in microseconds; the controller emulator (sandbox.emulator.controller and its
handler modules) applies them to ZooKeeper, and the seeder (sandbox.seed) reuses them to build the demo's
history, so the demo is a state the real controller could have left behind.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Collection, Iterable, Sequence

from core.model import NO_LEADER, PartitionState


def new_leader_and_isr(state: PartitionState, leader: int, isr: Iterable[int], controller_epoch: int) -> PartitionState:
    """`LeaderAndIsr.newLeaderAndIsr`: a controller-made change always bumps the leader epoch."""
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + 1, controller_epoch=controller_epoch,
                   isr=tuple(isr))


def offline_leader(replicas: Sequence[int], isr: Collection[int], live: Collection[int], *,
                   unclean: bool = False) -> int | None:
    """`offlinePartitionLeaderElection`: the first replica alive and in the ISR; with unclean leader election
    enabled, else the first live replica; None when nobody can lead."""
    for r in replicas:
        if r in live and r in isr:
            return r
    if unclean:
        return next((r for r in replicas if r in live), None)
    return None


def initial_state(replicas: Sequence[int], live: Collection[int], controller_epoch: int) -> PartitionState | None:
    """NewPartition -> OnlinePartition; None when no replica is alive (Kafka leaves it NewPartition)."""
    alive = [r for r in replicas if r in live]
    if not alive:
        return None
    return PartitionState(leader=alive[0], leader_epoch=0, controller_epoch=controller_epoch, isr=tuple(alive))


def elect_if_offline(replicas: Sequence[int], state: PartitionState, live: Collection[int], controller_epoch: int,
                     *, unclean: bool = False) -> PartitionState:
    """`Election.leaderForOffline` for a partition whose leader is not alive (-1 included)."""
    if state.leader in live:
        return state
    leader = offline_leader(replicas, state.isr, live, unclean=unclean)
    if leader is None:
        return state  # stays OfflinePartition: nothing is written
    isr = [r for r in state.isr if r in live] if leader in state.isr else [leader]
    return new_leader_and_isr(state, leader, isr, controller_epoch)


def remove_replica_from_isr(state: PartitionState, replica: int, controller_epoch: int) -> PartitionState:
    """`doRemoveReplicasFromIsr` for one offline replica: leader -1 if it led, an ISR of one is kept as is."""
    if replica not in state.isr:
        return state
    leader = NO_LEADER if state.leader == replica else state.leader
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    if leader == state.leader and isr == state.isr:
        # Kafka rewrites (epoch + 1) even when nothing changes, e.g. on controller failover; skipping the
        # no-op keeps a restarted emulator from bumping epochs of partitions that are already offline.
        return state
    return new_leader_and_isr(state, leader, isr, controller_epoch)


def after_brokers_down(replicas: Sequence[int], state: PartitionState | None, dead: Collection[int],
                       live: Collection[int], controller_epoch: int, *, unclean: bool = False) -> PartitionState | None:
    """`onReplicasBecomeOffline` for one partition: elect away from a dead leader, then drop each dead replica
    from the ISR (in id order). None when nothing is to be written."""
    if state is None:
        return None
    new = elect_if_offline(replicas, state, live, controller_epoch, unclean=unclean)
    for d in sorted(set(dead) & set(replicas)):
        if d not in live:
            new = remove_replica_from_isr(new, d, controller_epoch)
    return None if new == state else new


def after_brokers_up(replicas: Sequence[int], state: PartitionState | None, new_brokers: Collection[int],
                     live: Collection[int], controller_epoch: int, *, unclean: bool = False,
                     catching_up: Collection[int] = ()) -> PartitionState | None:
    """`onBrokerStartup` for one partition, then the leader's ISR expansion once the broker caught up.

    A new partition is initialised; an offline one elects (leader epoch + 1); where the leader is alive the
    returning replicas are appended to the ISR with the leader epoch unchanged (the leader's own change).
    The returning broker leads nothing it did not have to: preferred leadership needs an election.
    `catching_up` are replicas still copying (the adding replicas of a reassignment): they do not join yet.
    """
    if state is None:
        return initial_state(replicas, live, controller_epoch)
    new = elect_if_offline(replicas, state, live, controller_epoch, unclean=unclean)
    if new.leader in live:
        joining = tuple(r for r in replicas
                        if r in new_brokers and r in live and r not in new.isr and r not in catching_up)
        if joining:
            new = replace(new, isr=new.isr + joining, controller_epoch=controller_epoch)
    return None if new == state else new


def reconcile(replicas: Sequence[int], state: PartitionState | None, live: Collection[int], controller_epoch: int,
              *, unclean: bool = False) -> PartitionState | None:
    """What a controller taking over does to one partition: initialise it if new, elect if its leader is
    gone, take dead replicas out of its ISR. A state the controller left behind is a fixed point."""
    if state is None:
        return initial_state(replicas, live, controller_epoch)
    dead = [r for r in replicas if r not in live]
    return after_brokers_down(replicas, state, dead, live, controller_epoch, unclean=unclean)


def leader_shrinks_isr(state: PartitionState, follower: int) -> PartitionState:
    """A leader drops a follower that fell behind (replica.lag.time.max.ms): the ISR shrinks, the leader epoch
    does not change (`Partition.maybeShrinkIsr`)."""
    if follower == state.leader or follower not in state.isr:
        return state
    return replace(state, isr=tuple(r for r in state.isr if r != follower))


__all__ = [
    "new_leader_and_isr", "offline_leader", "initial_state", "elect_if_offline", "remove_replica_from_isr",
    "after_brokers_down", "after_brokers_up", "reconcile", "leader_shrinks_isr",
]
