"""/admin/delete_topics/<t>: the emulator's topic deletion (the decisions are in sandbox.emulator.deletion).

Mirrors KafkaController.processTopicDeletion and TopicDeletionManager (resumeDeletions,
completeDeleteTopic): the topic's znodes, config and admin node are deleted once no reassignment of it runs
and every broker holding a replica is up; its live replicas first go OfflineReplica (out of the ISR) and are
deleted at once. A request for a topic that does not exist only loses its admin node; with
delete_topic_enable=False (delete.topic.enable=false) every admin node goes and the topics stay. Deletions
resume when a broker starts or a reassignment of the topic completes.
"""

from __future__ import annotations

from typing import Sequence

from core import zkformat as zf
from core.errors import KeelError, ZkNoNodeError, ZkNotEmptyError
from sandbox.emulator import reassign as ra
from sandbox.emulator.context import DELETE_CHUNK, RETRIES, ControllerContext, ids, plural
from sandbox.emulator.deletion import plan_deletion, split_requests
from core.zk.session import Op


def on_delete_topics(ctx: ControllerContext, _arg: str | None) -> None:
    """processTopicDeletion."""
    names = ctx.zk.children(zf.DELETE_TOPICS, watch=ctx.watch)
    if names is None:  # no /admin/delete_topics yet: be told when it appears
        ctx.zk.exists(zf.DELETE_TOPICS, watch=ctx.watch)
        return
    drop, queued = split_requests(names, ctx.assignments.keys(), enabled=ctx.delete_topic_enable)
    if drop:
        delete_deletion_nodes(ctx, drop)
        nodes = ", ".join(zf.delete_topic_path(t) for t in drop)
        if ctx.delete_topic_enable:
            ctx.say(f"ignoring deletion of non-existing topic{'' if len(drop) == 1 else 's'} "
                    f"{', '.join(drop)}: removed {nodes}")
        else:
            ctx.say(f"topic deletion is disabled (delete.topic.enable=false): removed {nodes}; "
                    f"the topic{'' if len(drop) == 1 else 's'} stay{'s' if len(drop) == 1 else ''}")
    new = [t for t in queued if t not in ctx.deleting]
    if new:
        ctx.deleting.update(new)
        ctx.say(f"topic{'' if len(new) == 1 else 's'} queued for deletion: {', '.join(new)}")
    if ctx.deleting:
        resume_deletions(ctx)


def delete_deletion_nodes(ctx: ControllerContext, topics: Sequence[str]) -> None:
    try:
        ctx.multi([Op("delete", zf.delete_topic_path(t)) for t in topics])
    except ZkNoNodeError:  # some went meanwhile: the others one by one
        for t in topics:
            try:
                ctx.multi([Op("delete", zf.delete_topic_path(t))])
            except ZkNoNodeError:
                pass


def resume_deletions(ctx: ControllerContext) -> None:
    """resumeDeletions: start, continue or finish the deletion of every queued topic that can go."""
    for t in sorted(ctx.deleting):
        a = ctx.assignments.get(t)
        if a is None:  # gone by other hands
            forget_deletion(ctx, t)
            if ctx.zk.exists(zf.delete_topic_path(t)):
                delete_deletion_nodes(ctx, [t])
            continue
        plan = plan_deletion(t, a, ctx.live, ctx.deleted_replicas.get(t, ()))
        if plan.waiting_for:
            _wait(ctx, t, f"deletion of {t} waits: {plan.waiting_for}")
            continue
        if plan.to_stop:  # OfflineReplica: out of the ISR, then StopReplica(delete) succeeds at once
            stop = plan.to_stop
            ctx.update([(t, p) for p in stop], lambda _t, p, _r, s: (
                ra.stop_replicas(s, stop[p], ctx.epoch) if s is not None else None))
            ctx.deleted_replicas.setdefault(t, set()).update((p, r) for p, rs in stop.items() for r in rs)
        if plan.dead_brokers:
            _wait(ctx, t, f"deletion of {t} waits for {ids(plan.dead_brokers)} to come back (offline replicas)")
            continue
        delete_topic_znodes(ctx, t, a)


def _wait(ctx: ControllerContext, topic: str, line: str) -> None:
    if ctx.waits.get(topic) != line:
        ctx.waits[topic] = line
        ctx.say(line)


def forget_deletion(ctx: ControllerContext, topic: str) -> None:
    ctx.deleting.discard(topic)
    ctx.deleted_replicas.pop(topic, None)
    ctx.waits.pop(topic, None)


def delete_topic_znodes(ctx: ControllerContext, topic: str, assignment: zf.TopicAssignment) -> None:
    """completeDeleteTopic: /brokers/topics/<t> and everything below it, /config/topics/<t>, then
    /admin/delete_topics/<t>, deepest first, in multis guarded by /controller_epoch."""
    root = zf.topic_path(topic)
    tails = [zf.topic_config_path(topic), zf.delete_topic_path(topic)]
    for _ in range(RETRIES):
        tree: list[list[str]] = []
        level = [root]
        while level:
            kids = ctx.zk.children_many(level)
            level = [p for p in level if kids[p] is not None]
            tree.append(level)
            level = [f"{p}/{c}" for p in level for c in sorted(kids[p])]
        paths = [p for lvl in reversed(tree) for p in lvl]
        paths += [p for p, node in zip(tails, ctx.zk.get_many(tails)) if node.exists]
        ops = [Op("delete", p) for p in paths]
        try:
            for i in range(0, len(ops), DELETE_CHUNK):
                ctx.multi(ops[i:i + DELETE_CHUNK])
            break
        except (ZkNotEmptyError, ZkNoNodeError):
            continue  # something was added or removed meanwhile: list again
    else:
        raise KeelError(f"gave up deleting topic {topic}: its znodes kept changing under us")
    ctx.assignments.pop(topic, None)
    forget_deletion(ctx, topic)
    ctx.say(f"topic {topic} deleted: {root} with its {plural(len(assignment.partitions), 'partition')} "
            f"({len(paths)} znodes in all), /config/topics/{topic} and /admin/delete_topics/{topic} removed")


__all__ = ["on_delete_topics", "delete_deletion_nodes", "resume_deletions", "forget_deletion", "delete_topic_znodes"]
