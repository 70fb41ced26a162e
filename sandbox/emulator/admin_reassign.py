"""/admin/reassign_partitions: the emulator's partition reassignment (the decisions are in sandbox.emulator.reassign).

Mirrors KafkaController (2.4+, KIP-455): processZkPartitionReassignment acts on the node when it is created:
U1 topic node RS = target ++ origin, adding and removing replicas, leader epoch + 1; each new replica catches
up after a "copy time" (base delay + size over the follower throttle, scaled) and joins the ISR; then the
leader moves into the target if needed, the removed replicas leave the ISR, RS = target, and the partition
leaves the node (maybeRemoveFromZkReassignment; the node is deleted when empty). A target broker that is down
keeps its partition in progress until it comes back (maybeResumeReassignments on broker startup and on
controller failover). Topic and partition states are written together in one multi, version-checked.
"""

from __future__ import annotations

from typing import Collection, Mapping, Sequence

from core import zkformat as zf
from core.errors import CorruptZnodeError, KeelError, ZkBadVersionError, ZkNoNodeError
from core.model import PartitionState
from sandbox.emulator import election as el
from sandbox.emulator import reassign as ra
from sandbox.emulator.admin_deletion import resume_deletions
from sandbox.emulator.context import RETRIES, ControllerContext, csv, encode_state, ids, plural, tps
from core.zk.session import Op


def on_reassign_node(ctx: ControllerContext, _arg: str | None, *, initial: bool = False) -> set[tuple[str, int]]:
    """processZkPartitionReassignment: start every partition of a new /admin/reassign_partitions."""
    if not ctx.act_on(zf.REASSIGN, initial):
        return set()
    node = ctx.zk.get(zf.REASSIGN)
    if not node.exists:
        return set()
    try:
        requested = ra.latest_entries(zf.decode_reassignment(node.data))
    except CorruptZnodeError as e:
        ctx.say(f"ignoring {zf.REASSIGN}: {e.reason}")
        return set()
    failed: dict[tuple[str, int], str] = {}
    by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
    for (t, p), target in sorted(requested.items()):
        why = ra.invalid_target(target)
        if why is None and t in ctx.deleting:
            why = el.TOPIC_BEING_DELETED
        if why is None and (t not in ctx.assignments or p not in ctx.assignments[t].partitions):
            why = el.UNKNOWN_PARTITION
        if why:
            failed[(t, p)] = why
        else:
            by_topic.setdefault(t, {})[p] = target
    steps: dict[tuple[str, int], ra.Step] = {}
    for t, targets in sorted(by_topic.items()):
        for p, outcome in reassign_topic(ctx, t, targets).items():
            if isinstance(outcome, ra.Step):
                steps[(t, p)] = outcome
            else:
                failed[(t, p)] = outcome
    ctx.say(_describe_start(ctx, len(requested), steps, failed))
    after_steps(ctx, steps, failed)
    return set(requested)


def reassign_topic(ctx: ControllerContext, topic: str, requests: Mapping[int, Sequence[int] | None], *,
                   only_if_complete: bool = False) -> dict[int, "ra.Step | str"]:
    """onPartitionReassignment for partitions of one topic, from fresh reads, in one multi: the topic
    node (version-checked) and the partition states (version-checked). A request of None resumes the
    partition's ongoing reassignment; with only_if_complete, only partitions whose target replicas are
    all in the ISR are acted on (maybeCompleteReassignment). Failures come back as reasons."""
    for _ in range(RETRIES):
        tnode = ctx.zk.get(zf.topic_path(topic))
        if not tnode.exists:
            return {p: el.UNKNOWN_PARTITION for p in requests}
        current_topic = zf.decode_topic(topic, tnode.data)
        ctx.assignments[topic] = current_topic
        keys = sorted(requests)
        snodes = dict(zip(keys, ctx.zk.get_many([zf.state_path(topic, p) for p in keys])))
        live = set(ctx.live)
        out: dict[int, ra.Step | str] = {}
        new_topic = current_topic
        ops: list[Op] = []
        for p in keys:
            if p not in current_topic.partitions:
                out[p] = el.UNKNOWN_PARTITION
                continue
            snode = snodes[p]
            try:
                state = zf.decode_partition_state(snode.data, snode.path) if snode.exists else None
            except CorruptZnodeError as e:
                out[p] = f"unreadable state ({e.reason})"
                continue
            current = ra.ReplicaAssignment.of(current_topic, p)
            if only_if_complete and not (current.being_reassigned and ra.is_complete(current, state)):
                continue
            if state is None:
                out[p] = el.NO_STATE  # Kafka: "Cannot update leader epoch ... leaderAndIsr path is empty"
                continue
            target = requests[p]
            new = current if target is None else current.reassign_to(target)
            step = ra.on_partition_reassignment(current, new, state, live, ctx.epoch)
            out[p] = step
            new_topic = ra.with_partition(new_topic, p, step.assignment)
            if step.state != state:
                ops.append(Op("set", snode.path, encode_state(step.state), version=snode.version))
        if new_topic != current_topic:
            ops.insert(0, Op("set", zf.topic_path(topic), ra.encode_topic_node(new_topic), version=tnode.version))
        if not ops:
            return out
        try:
            ctx.multi(ops)
        except (ZkBadVersionError, ZkNoNodeError):
            continue  # the topic or a state changed under us: read again
        ctx.assignments[topic] = new_topic
        return out
    raise KeelError(f"gave up reassigning partitions of {topic}: its znodes kept changing under us")


def after_steps(ctx: ControllerContext, steps: Mapping[tuple[str, int], ra.Step],
                failed: Mapping[tuple[str, int], str] | None = None) -> None:
    """B7 (completed and failed partitions leave the /admin node), A2 (new replicas start copying),
    and deletions waiting for these reassignments resume."""
    completed = {k: s.assignment.replicas for k, s in steps.items() if s.complete}
    if failed or completed:
        prune_reassign_node(ctx, set(failed or ()), completed)
    rates: dict[tuple[int, int], int | None] = {}
    for (t, p), step in sorted(steps.items()):
        for r in step.superseded:
            ctx.copies.pop((t, p, r), None)
        if not step.complete:
            start_copies(ctx, t, p, step.assignment, step.state, rates)
    if ctx.deleting & {t for t, _ in completed}:
        resume_deletions(ctx)


def prune_reassign_node(ctx: ControllerContext, failed: set[tuple[str, int]],
                        completed: Mapping[tuple[str, int], Sequence[int]]) -> None:
    """maybeRemoveFromZkReassignment: rewrite the node without them (version-checked), delete it when empty."""
    for _ in range(RETRIES):
        node = ctx.zk.get(zf.REASSIGN)
        if not node.exists:
            return
        try:
            entries = zf.decode_reassignment(node.data)
        except CorruptZnodeError:
            return
        kept = ra.prune_entries(ra.latest_entries(entries), failed=failed, completed=completed)
        if len(kept) == len(entries):
            return
        try:
            if kept:
                ctx.multi([Op("set", zf.REASSIGN, ra.encode_entries(kept), version=node.version)])
            else:
                ctx.multi([Op("delete", zf.REASSIGN, version=node.version)])
                ctx.created[zf.REASSIGN] = True  # as Kafka does: look again for a new request
                ctx.say(f"{zf.REASSIGN} deleted: every partition in it is done")
            return
        except (ZkBadVersionError, ZkNoNodeError):
            continue
    ctx.say(f"gave up updating {zf.REASSIGN}: it kept changing under us")


def start_copies(ctx: ControllerContext, topic: str, partition: int, assignment: ra.ReplicaAssignment,
                 state: PartitionState | None, rates: dict[tuple[int, int], int | None]) -> None:
    """A2: each live new replica fetches from a live leader; it joins the ISR after its copy time."""
    if state is None or state.leader not in ctx.live:
        return  # resumes once the partition has a live leader again
    for r in assignment.adding:
        key = (topic, partition, r)
        if r in state.isr or r not in ctx.live or key in ctx.copies:
            continue
        if (r, state.leader) not in rates:
            rates[(r, state.leader)] = throttle(ctx, r, state.leader)
        size = ctx.partition_sizes.get((topic, partition), ctx.default_partition_bytes)
        delay = ra.copy_seconds(size, rates[(r, state.leader)], base_delay=ctx.reassign_base_delay,
                                time_scale=ctx.time_scale)
        ctx.copies[key] = ctx.schedule(delay, "copy", key)


def throttle(ctx: ControllerContext, follower: int, leader: int) -> int | None:
    """follower.replication.throttled.rate of the new replica's broker and leader.replication.throttled.rate
    of the leader's, each falling back to the cluster default (/config/brokers/<default>)."""
    paths = [zf.broker_config_path(zf.BROKER_DEFAULT_ENTITY), zf.broker_config_path(follower),
             zf.broker_config_path(leader)]
    configs = []
    for node in ctx.zk.get_many(paths):
        try:
            configs.append(zf.decode_config(node.data, node.path) if node.exists else {})
        except CorruptZnodeError:
            configs.append({})
    default, follower_config, leader_config = configs
    return ra.throttle_rate({**default, **follower_config}, {**default, **leader_config})


def on_copies_done(ctx: ControllerContext, items: list[tuple[int, object]]) -> None:
    """New replicas caught up: their leaders add them to the ISR; complete what can be completed."""
    joined: dict[str, dict[int, list[int]]] = {}
    for seq, key in items:
        if ctx.copies.get(key) != seq:
            continue  # cancelled or superseded
        del ctx.copies[key]
        t, p, r = key
        a = ctx.assignments.get(t)
        if a is None or r not in a.adding_replicas.get(p, ()) or r not in ctx.live:
            continue
        joined.setdefault(t, {}).setdefault(p, []).append(r)
    for t, parts in sorted(joined.items()):
        live = set(ctx.live)

        def join(_t: str, p: int, _r: tuple[int, ...], s: PartitionState | None, parts=parts, live=live):
            if s is None or s.leader not in live:
                return None
            for r in parts[p]:
                s = ra.join_isr(s, r)
            return s

        ctx.update([(t, p) for p in parts], join)
        complete_reassignments(ctx, t, sorted(parts))


def complete_reassignments(ctx: ControllerContext, topic: str, partitions: Sequence[int]) -> None:
    outcomes = reassign_topic(ctx, topic, {p: None for p in partitions}, only_if_complete=True)
    steps = {(topic, p): s for p, s in outcomes.items() if isinstance(s, ra.Step)}
    if steps:
        shown = "; ".join(f"{t}-{p} -> {csv(s.assignment.replicas)} (leader {s.state.leader}, ISR {csv(s.state.isr)})"
                          for (t, p), s in sorted(steps.items())[:5])
        more = f"; and {len(steps) - 5} more" if len(steps) > 5 else ""
        ctx.say(f"reassignment completed for {plural(len(steps), 'partition')}: {shown}{more}")
        after_steps(ctx, steps)


def resume_reassignments(ctx: ControllerContext, *, new_brokers: set[int] | None = None,
                         skip: Collection[tuple[str, int]] = ()) -> None:
    """maybeResumeReassignments: every ongoing reassignment at failover, or those whose target holds a
    broker that just started (leader epoch + 1, or completion); then every new replica that can fetch
    again (its broker and its partition's leader alive) restarts copying."""
    resume: dict[str, dict[int, None]] = {}
    for (t, p), assignment in ctx.reassignments().items():
        if (t, p) not in skip and (new_brokers is None or not new_brokers.isdisjoint(assignment.target)):
            resume.setdefault(t, {})[p] = None
    steps: dict[tuple[str, int], ra.Step] = {}
    for t, parts in sorted(resume.items()):
        for p, outcome in reassign_topic(ctx, t, parts).items():
            if isinstance(outcome, ra.Step):
                steps[(t, p)] = outcome
    if steps:
        done = sum(1 for s in steps.values() if s.complete)
        why = "controller failover" if new_brokers is None else \
            f"{ids(new_brokers & {r for s in steps.values() for r in s.assignment.replicas})} up"
        ctx.say(f"reassignment resumed for {plural(len(steps), 'partition')} ({why})"
                + (f", {done} completed" if done else ""))
    after_steps(ctx, steps)
    restart_copies(ctx)


def restart_copies(ctx: ControllerContext) -> None:
    pending = ctx.reassignments()
    waiting = [k for k, a in pending.items() if any((k[0], k[1], r) not in ctx.copies for r in a.adding)]
    if not waiting:
        return
    rates: dict[tuple[int, int], int | None] = {}
    for (t, p), node in zip(waiting, ctx.zk.get_many([zf.state_path(t, p) for t, p in waiting])):
        try:
            state = zf.decode_partition_state(node.data, node.path) if node.exists else None
        except CorruptZnodeError:
            continue
        start_copies(ctx, t, p, pending[(t, p)], state, rates)


def _describe_start(ctx: ControllerContext, requested: int, steps: Mapping[tuple[str, int], ra.Step],
                    failed: Mapping[tuple[str, int], str]) -> str:
    started = sorted(k for k, s in steps.items() if not s.complete)
    done = sorted(k for k, s in steps.items() if s.complete)
    parts = []
    if started:
        text = f"{len(started)} started ({tps(started)})"
        adding = sorted({r for k in started for r in steps[k].assignment.adding})
        if adding:
            text += f", new replicas on {ids(adding)}"
        down = sorted({r for k in started for r in steps[k].assignment.target if r not in ctx.live})
        if down:
            text += f", waiting for {ids(down)} (down)"
        parts.append(text)
    if done:
        parts.append(f"{len(done)} completed at once ({tps(done)})")
    if failed:
        reasons: dict[str, list[tuple[str, int]]] = {}
        for k, why in sorted(failed.items()):
            reasons.setdefault(why, []).append(k)
        parts.append(f"{len(failed)} removed from the node ("
                     + "; ".join(f"{why}: {tps(keys)}" for why, keys in sorted(reasons.items())) + ")")
    return f"reassignment of {plural(requested, 'partition')} requested: " + ("; ".join(parts) or "nothing to do")


__all__ = ["on_reassign_node", "reassign_topic", "after_steps", "prune_reassign_node", "start_copies", "throttle",
           "on_copies_done", "complete_reassignments", "resume_reassignments", "restart_copies"]
