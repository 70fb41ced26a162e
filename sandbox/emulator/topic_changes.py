"""/brokers/topics: new topics and new partitions get their first leader and ISR.

Mirrors KafkaController's TopicChange and PartitionModifications handlers (processTopicChange,
processPartitionModifications, onNewPartitionCreation): the controller watches the topic list and every
topic node; the partitions of a new topic, and partitions added to an existing one, go NewPartition ->
OnlinePartition with `initializeLeaderAndIsrForPartitions` (first live replica leads, ISR = live replicas,
sandbox.emulator.leadership.initial_state); a partition with no live replica keeps no state. New partitions of
a topic queued for deletion are skipped. The controller keeps every topic's assignment in memory
(`ctx.assignments`); a corrupt topic node is reported and ignored.
"""

from __future__ import annotations

from typing import Sequence

from core import zkformat as zf
from core.errors import CorruptZnodeError
from sandbox.emulator.context import ControllerContext, plural
from sandbox.emulator.leadership import initial_state


def load_topics(ctx: ControllerContext) -> None:
    names = sorted(ctx.zk.children(zf.TOPICS, watch=ctx.watch) or ())
    read_topics(ctx, names)


def read_topics(ctx: ControllerContext, names: Sequence[str]) -> list[str]:
    read = []
    for name, node in zip(names, ctx.zk.get_many([zf.topic_path(t) for t in names], watch=ctx.watch)):
        if not node.exists:
            ctx.assignments.pop(name, None)
            continue
        try:
            ctx.assignments[name] = zf.decode_topic(name, node.data)
            read.append(name)
        except CorruptZnodeError as e:
            ctx.say(f"ignoring topic {name}: {e.reason}")
    return read


def on_topic_list(ctx: ControllerContext, _arg: str | None) -> None:
    names = set(ctx.zk.children(zf.TOPICS, watch=ctx.watch) or ())
    for gone in set(ctx.assignments) - names:
        del ctx.assignments[gone]
    for name in read_topics(ctx, sorted(names - set(ctx.assignments))):
        init_partitions(ctx, name, sorted(ctx.assignments[name].partitions), "new topic")


def on_topic(ctx: ControllerContext, name: str | None) -> None:
    if not name:
        return
    before = set(ctx.assignments[name].partitions) if name in ctx.assignments else set()
    if name in read_topics(ctx, [name]):
        added = sorted(set(ctx.assignments[name].partitions) - before)
        if added and name in ctx.deleting:  # processPartitionModifications skips them
            ctx.say(f"skipping new partitions {', '.join(map(str, added))} of {name}: the topic is being deleted")
        elif added:
            init_partitions(ctx, name, added, "new topic" if not before else "new partitions in")


def resync_topics(ctx: ControllerContext) -> None:
    """Re-read every topic node (re-arming its watch); initialise topics and partitions added meanwhile."""
    before = {t: set(a.partitions) for t, a in ctx.assignments.items()}
    names = set(ctx.zk.children(zf.TOPICS, watch=ctx.watch) or ())
    for gone in set(ctx.assignments) - names:
        del ctx.assignments[gone]
    for name in read_topics(ctx, sorted(names)):
        added = sorted(set(ctx.assignments[name].partitions) - before.get(name, set()))
        if not added:
            continue
        if name not in before:
            init_partitions(ctx, name, added, "new topic")
        elif name in ctx.deleting:
            ctx.say(f"skipping new partitions {', '.join(map(str, added))} of {name}: the topic is being deleted")
        else:
            init_partitions(ctx, name, added, "new partitions in")


def init_partitions(ctx: ControllerContext, topic: str, partitions: Sequence[int], what: str) -> None:
    live = set(ctx.live)
    changes = ctx.update([(topic, p) for p in partitions], lambda t, p, r, s: (
        initial_state(r, live, ctx.epoch) if s is None else None))
    created = sum(1 for c in changes if c.old is None)
    line = f"{what} {topic}: {plural(created, 'partition state')} created"
    leaderless = len(partitions) - created
    if leaderless:
        line += f", {leaderless} without one (no live replica)"
    ctx.say(line)


__all__ = ["load_topics", "read_topics", "on_topic_list", "on_topic", "resync_topics", "init_partitions"]
