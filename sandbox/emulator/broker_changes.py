"""/brokers/ids: brokers failing and starting, and the leadership moves the controller makes for them.

Mirrors KafkaController.processBrokerChange with onBrokerFailure / onReplicasBecomeOffline (a dead leader's
partitions elect the next live ISR member, `Election.leaderForOffline`; every dead replica drops out of the
ISR) and onBrokerStartup (offline partitions come back, returning replicas rejoin ISRs but lead nothing
until an election; a new replica still copying for a reassignment does not join yet). A broker that
re-registered between two looks is a bounce: failed, then started, as Kafka does. Topics queued for deletion
take no part; the controller itself moves when its broker dies (sandbox.emulator.controllership), and
reassignments and deletions waiting for a starting broker resume. The decisions are in sandbox.emulator.leadership.
"""

from __future__ import annotations

from core import zkformat as zf
from core.model import NO_LEADER
from sandbox.emulator import reassign as ra
from sandbox.emulator.admin_deletion import resume_deletions
from sandbox.emulator.admin_reassign import resume_reassignments
from sandbox.emulator.context import ControllerContext, ids, plural
from sandbox.emulator.controllership import move_controller
from sandbox.emulator.leadership import after_brokers_down, after_brokers_up


def read_registrations(ctx: ControllerContext) -> dict[int, int]:
    names = ctx.zk.children(zf.BROKER_IDS, watch=ctx.watch) or []
    broker_ids = sorted(int(n) for n in names if n.lstrip("-").isdigit())
    nodes = ctx.zk.get_many([zf.broker_path(b) for b in broker_ids])
    return {b: n.ephemeral_owner for b, n in zip(broker_ids, nodes) if n.exists}


def on_broker_ids(ctx: ControllerContext, _arg: str | None) -> None:
    current = read_registrations(ctx)
    # A broker that re-registered between two looks is a bounce: Kafka fails it, then starts it.
    bounced = {b for b in current.keys() & ctx.owners.keys() if current[b] != ctx.owners[b]}
    dead = (ctx.owners.keys() - current.keys()) | bounced
    new = (current.keys() - ctx.owners.keys()) | bounced
    ctx.owners = current
    ctx.live = set(current)
    move_controller(ctx)
    if dead:
        brokers_down(ctx, set(dead), ctx.live - bounced)
    if new:
        brokers_up(ctx, set(new))
        resume_reassignments(ctx, new_brokers=set(new))
        if ctx.deleting:
            resume_deletions(ctx)


def brokers_down(ctx: ControllerContext, dead: set[int], live: set[int]) -> None:
    # Topics queued for deletion take no part in elections (their replicas fail deletion instead).
    keys = [(t, p) for t, a in ctx.assignments.items() if t not in ctx.deleting
            for p, r in a.partitions.items() if not dead.isdisjoint(r)]
    for key in [k for k in ctx.copies if k[2] in dead]:
        del ctx.copies[key]  # a new replica that dies stops copying; it starts over when it returns
    changes = ctx.update(keys, ctx.decider(
        lambda r, s, unclean: after_brokers_down(r, s, dead, live, ctx.epoch, unclean=unclean), live))
    moved = sum(1 for c in changes if c.old and c.old.leader in dead and c.new.leader in live)
    offline = sum(1 for c in changes if c.new.leader == NO_LEADER and c.old and c.old.leader != NO_LEADER)
    left = sum(1 for c in changes if c.old for d in dead if d in c.old.isr and d not in c.new.isr)
    ctx.say(f"{ids(dead)} down: {plural(moved, 'leader')} moved, {plural(offline, 'partition')} offline, "
            f"left {plural(left, 'ISR')}")


def brokers_up(ctx: ControllerContext, new: set[int]) -> None:
    keys = [(t, p) for t, a in ctx.assignments.items() if t not in ctx.deleting
            for p, r in a.partitions.items() if not new.isdisjoint(r)]
    live = set(ctx.live)
    adding = {(t, p): a.adding_replicas.get(p, ()) for t, a in ctx.assignments.items() for p in ra.in_progress(a)}
    changes = ctx.update(keys, ctx.keyed_decider(
        lambda t, p, r, s, unclean: after_brokers_up(r, s, new, live, ctx.epoch, unclean=unclean,
                                                     catching_up=adding.get((t, p), ()))))
    joined = sum(1 for c in changes if c.old for b in new if b not in c.old.isr and b in c.new.isr)
    elected = sum(1 for c in changes if c.old and c.old.leader not in live and c.new.leader in live)
    created = sum(1 for c in changes if c.old is None)
    line = f"{ids(new)} up: rejoined {plural(joined, 'ISR')}, {plural(elected, 'offline partition')} back online"
    if created:
        line += f", {plural(created, 'new partition')} initialised"
    ctx.say(line)


__all__ = ["read_registrations", "on_broker_ids", "brokers_down", "brokers_up"]
