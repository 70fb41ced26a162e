"""/admin/preferred_replica_election and the auto leader rebalance (the decisions are in sandbox.emulator.election).

Mirrors KafkaController.processReplicaLeaderElection (ZkTriggered) and onReplicaElection: acted on when the
node is created; the first replica is elected when alive and in the ISR; every outcome goes to `reactions`
and `last_election`; the node is deleted (left in place when unreadable, as Kafka fails the event). With
auto.leader.rebalance.enable, checkAndTriggerAutoLeaderRebalance runs every
leader.imbalance.check.interval.seconds and elects the preferred replicas of brokers above
leader.imbalance.per.broker.percentage (outcome in `last_rebalance`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from core import zkformat as zf
from core.errors import CorruptZnodeError
from core.model import PartitionState
from sandbox.emulator import election as el
from sandbox.emulator import reassign as ra
from sandbox.emulator.context import ControllerContext


def on_election_node(ctx: ControllerContext, _arg: str | None, *, initial: bool = False) -> None:
    """processReplicaLeaderElection (ZkTriggered): elect, record every outcome, delete the node."""
    if not ctx.act_on(zf.PREFERRED_ELECTION, initial):
        return
    node = ctx.zk.get(zf.PREFERRED_ELECTION)
    if not node.exists:
        return
    try:
        keys = sorted(set(zf.decode_preferred_election(node.data)))
    except CorruptZnodeError as e:  # Kafka fails the event and leaves the node: so do we
        ctx.say(f"ignoring {zf.PREFERRED_ELECTION}: {e.reason}")
        return
    outcomes = elect_preferred(ctx, keys)
    ctx.last_election = outcomes
    ctx.say(el.summarize(outcomes.values()))
    ctx.delete_admin_node(zf.PREFERRED_ELECTION, node.version)


def elect_preferred(ctx: ControllerContext, keys: Sequence[tuple[str, int]]
                    ) -> dict[tuple[str, int], el.ElectionOutcome]:
    outcomes: dict[tuple[str, int], el.ElectionOutcome] = {}
    electable = []
    for t, p in keys:
        a = ctx.assignments.get(t)
        if a is None or p not in a.partitions:
            outcomes[(t, p)] = el.ElectionOutcome(t, p, False, None, el.UNKNOWN_PARTITION)
        elif t in ctx.deleting:
            outcomes[(t, p)] = el.ElectionOutcome(t, p, False, None, el.TOPIC_BEING_DELETED)
        else:
            electable.append((t, p))
    live = set(ctx.live)
    decided: dict[tuple[str, int], el.ElectionOutcome] = {}

    def decide(t: str, p: int, replicas: tuple[int, ...], state: PartitionState | None):
        new, reason = el.elect_preferred(replicas, state, live, ctx.epoch)
        after = new or state
        decided[(t, p)] = el.ElectionOutcome(t, p, new is not None, after.leader if after else None, reason)
        return new

    written = {(c.topic, c.partition) for c in ctx.update(electable, decide)}
    for key in electable:
        outcome = decided.get(key) or el.ElectionOutcome(*key, False, None, el.NO_STATE)
        if outcome.elected and key not in written:
            outcome = replace(outcome, elected=False, leader=None, reason="its state kept changing")
        outcomes[key] = outcome
    return outcomes


def on_rebalance_timer(ctx: ControllerContext, _items: list[tuple[int, object]]) -> None:
    try:
        check_leader_balance(ctx)
    finally:
        if not ctx.stopped:
            ctx.schedule(ctx.rebalance_interval, "rebalance", None)


def check_leader_balance(ctx: ControllerContext) -> None:
    """checkAndTriggerAutoLeaderRebalance."""
    keys = sorted((t, p) for t, a in ctx.assignments.items() if t not in ctx.deleting for p in a.partitions)
    states: dict[tuple[str, int], PartitionState | None] = {}
    for key, node in zip(keys, ctx.zk.get_many([zf.state_path(t, p) for t, p in keys])):
        try:
            states[key] = zf.decode_partition_state(node.data, node.path) if node.exists else None
        except CorruptZnodeError:
            states[key] = None
    assignments = {(t, p): tuple(ctx.assignments[t].partitions[p]) for t, p in keys}
    reassigning = any(ra.in_progress(a) for a in ctx.assignments.values())
    imbalanced = el.auto_rebalance(assignments, states, ctx.live, threshold_percent=ctx.imbalance_percentage,
                                   reassigning=reassigning)
    ctx.last_rebalance = imbalanced
    candidates = [k for b in imbalanced for k in b.candidates]
    if not candidates:
        return
    outcomes = elect_preferred(ctx, candidates)
    above = ", ".join(f"broker {b.broker} {b.ratio:.0%}" for b in imbalanced if b.candidates)
    ctx.say(el.summarize(outcomes.values(), what=f"auto leader rebalance (leader imbalance above "
                                                 f"{ctx.imbalance_percentage:g}%: {above})"))


__all__ = ["on_election_node", "elect_preferred", "on_rebalance_timer", "check_leader_balance"]
