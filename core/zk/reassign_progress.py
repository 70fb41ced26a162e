"""Which reassignments run, read from ZooKeeper for core.reassign_progress: /admin/reassign_partitions (the targets),
then only the topic nodes (replicas, adding / removing replicas) and partition states (leader, ISR) of the partitions
in it: 1 + topics + partitions reads, whatever the size of the cluster. None when the node does not exist (a
reassignment started through the Admin API leaves none: the caller asks the controller then)."""

from __future__ import annotations

from core import zkformat as zf
from core.model import ClusterSnapshot, InProgress, Partition, Topic
from core.reassign_progress import Moving, running_of
from core.zk.session import ZkSession


def running(session: ZkSession) -> tuple[Moving, ...] | None:
    node = session.get(zf.REASSIGN)
    if not node.exists:
        return None
    targets = zf.decode_reassignment(node.data)
    if not targets:
        return ()
    topics = sorted({r.topic for r in targets})
    nodes = dict(zip(topics, session.get_many([zf.topic_path(t) for t in topics])))
    keys = sorted({(r.topic, r.partition) for r in targets})
    states = dict(zip(keys, session.get_many([zf.state_path(t, p) for t, p in keys])))
    parts: dict[str, list[Partition]] = {}
    for t, p in keys:
        topic = nodes[t]
        if not topic.exists:  # deleted while it was being reassigned: nothing to copy
            continue
        assignment = zf.decode_topic(t, topic.data)
        if p not in assignment.partitions:
            continue
        state = zf.decode_partition_state(states[(t, p)].data, zf.state_path(t, p))
        parts.setdefault(t, []).append(Partition(
            t, p, assignment.partitions[p], leader=state.leader if state else -1, isr=state.isr if state else (),
            adding_replicas=assignment.adding_replicas.get(p, ()),
            removing_replicas=assignment.removing_replicas.get(p, ())))
    snap = ClusterSnapshot(cluster="", captured_at="", source="", brokers=(),
                           topics=tuple(Topic(t, tuple(v)) for t, v in sorted(parts.items())),
                           in_progress=InProgress(reassignment=targets))
    return running_of(snap)
