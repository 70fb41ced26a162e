"""Read a whole Kafka tree from ZooKeeper into a ClusterTree, with pipelined reads.

A Kafka cluster of 200,000 partitions is 200,000 state znodes; one synchronous `get` at a time
pays a network round trip for each. The reader issues them through ZkSession.get_many, which
keeps thousands of requests in flight. Corrupt znodes land in the tree's problems, not in an
exception, so one bad payload never hides the rest of the cluster.
"""

from __future__ import annotations

from typing import Callable, Iterable

from core import zkformat as zf
from core.errors import CorruptZnodeError, NoKafkaError
from core.model import ClusterSnapshot
from core.zk.session import WatchFn, ZkSession
from core.zk.tree import ClusterTree
from core.zk.wire import read_parallel

# progress(stage, done, total): stage is "brokers", "topics", "states" or "configs".
Progress = Callable[[str, int, int], None]
# outline(topic_names, partitions per topic or None): see load_tree
OutlineHook = Callable[[list[str], "dict[str, int] | None"], None]


def _ids(names: list[str] | None) -> list[int]:
    return sorted(int(n) for n in names or () if n.lstrip("-").isdigit())


def load_tree(session: ZkSession, tree: ClusterTree, *, watch: WatchFn | None = None,
              progress: Progress | None = None, with_states: bool = True,
              outline: OutlineHook | None = None) -> ClusterTree:
    """Fill `tree` from ZooKeeper. With `watch`, every znode read also gets a one-shot watch.

    `with_states=False` skips the partition states (the bulk of a large cluster): enough for
    validating writes, which depend on brokers, topics, configs and /admin nodes only.

    The tree records the stat version of every topic, state and config znode it holds: a write
    computed from it checks those versions (see core.zk.topic_admin).

    `outline(topic_names, partition_counts)` is called once the brokers, controller and topic names are in the tree
    (counts None), and again once the topic znodes are (counts per topic), before the states: what a page can draw
    first (core.outline, issue 31)."""
    report = progress or (lambda stage, done, total: None)

    broker_names = session.children(zf.BROKER_IDS, watch=watch)
    topic_names = session.children(zf.TOPICS, watch=watch)
    if not broker_names and not topic_names:
        where = session.target.chroot or "/"
        raise NoKafkaError(
            f"no Kafka brokers are registered under {where} on {session.target.hosts_text}: "
            "check the chroot of the connect string (Kafka's zookeeper.connect, e.g. host:2181/kafka)"
        )
    broker_ids = _ids(broker_names)
    topics = sorted(topic_names or ())

    # Single nodes and the small lists, all in one pipelined batch.
    singles = [zf.CONTROLLER, zf.CONTROLLER_EPOCH, zf.CLUSTER_ID, zf.REASSIGN, zf.PREFERRED_ELECTION]
    single = {n.path: n for n in session.get_many(singles, watch=watch)}
    lists = session.children_many([zf.DELETE_TOPICS, zf.CONFIG_TOPICS, zf.CONFIG_BROKERS], watch=watch)

    report("brokers", 0, len(broker_ids))
    broker_nodes = list(session.get_many([zf.broker_path(b) for b in broker_ids], watch=watch))
    report("brokers", len(broker_ids), len(broker_ids))

    with tree.lock:  # the outline's part first: a page can draw it while the rest is read
        tree.set_broker_ids(set(broker_ids))
        for b, node in zip(broker_ids, broker_nodes):
            tree.set_broker(b, node.data)
        tree.set_controller(single[zf.CONTROLLER].data)
        tree.set_controller_epoch(single[zf.CONTROLLER_EPOCH].data)
        tree.set_cluster_id(single[zf.CLUSTER_ID].data)
        tree.set_reassignment(single[zf.REASSIGN].data)
        tree.set_election(single[zf.PREFERRED_ELECTION].data)
        tree.set_deletion(lists[zf.DELETE_TOPICS])
    if outline is not None:
        outline(topics, None)

    report("topics", 0, len(topics))
    topic_nodes = list(session.get_many([zf.topic_path(t) for t in topics], watch=watch,
                                        progress=lambda n: report("topics", n, len(topics))))

    counts: dict[str, int] = {}
    with tree.lock:
        state_keys: list[tuple[str, int]] = []
        for t, node in zip(topics, topic_nodes):
            if node.data is None:  # deleted between the listing and the read
                continue
            pids = tree.set_topic(t, node.data, node.version)
            counts[t] = len(pids)
            state_keys.extend((t, p) for p in pids)
    if outline is not None:
        outline([t for t in topics if t in counts], counts)

    if not with_states:
        state_keys = []
    report("states", 0, len(state_keys))
    state_paths = [zf.state_path(t, p) for t, p in state_keys]
    if watch is not None or not _read_states_bulk(session, tree, state_keys, state_paths, report):
        for (t, p), node in zip(state_keys, session.get_many(
                state_paths, watch=watch, progress=lambda n: report("states", n, len(state_keys)))):
            tree.set_state(t, p, node.data, node.version)

    config_topics = [t for t in topics if t in set(lists[zf.CONFIG_TOPICS] or ())]
    config_brokers = sorted(lists[zf.CONFIG_BROKERS] or ())
    report("configs", 0, len(config_topics) + len(config_brokers))
    for t, node in zip(config_topics, session.get_many([zf.topic_config_path(t) for t in config_topics], watch=watch)):
        tree.set_topic_config(t, node.data, node.version)
    for e, node in zip(config_brokers, session.get_many([zf.broker_config_path(e) for e in config_brokers],
                                                        watch=watch)):
        tree.set_broker_config(e, node.data, node.version)
    report("configs", len(config_topics) + len(config_brokers), len(config_topics) + len(config_brokers))
    return tree


def _read_states_bulk(session: ZkSession, tree: ClusterTree, keys: list[tuple[str, int]], paths: list[str],
                      report: Progress) -> bool:
    """The states without watches: several sessions at once (core.zk.wire.read_parallel), each window decoded
    into the tree as it arrives. False when the session has no pipelined reader (kazoo reads them then)."""
    if not session._wire_usable():
        return False
    read = 0

    def consume(offset: int, chunk: list[tuple[str, bytes | None, int, int]]) -> None:
        nonlocal read
        tree.set_states(keys[offset:offset + len(chunk)], chunk)
        read += len(chunk)
        report("states", read, len(keys))

    # Through the session's reader lock, reopened once if its connection lapsed (ZkSession._wire_call); kept
    # out of session.py, which is at the 600-line limit.
    session._wire_call(lambda wire: read_parallel(wire, paths, consume))
    return True


def read_snapshot(session: ZkSession, *, cluster: str = "", progress: Progress | None = None,
                  with_states: bool = True) -> ClusterSnapshot:
    """One consistent-enough pass over the tree (ZooKeeper offers no multi-node snapshot read)."""
    tree = load_tree(session, ClusterTree(), progress=progress, with_states=with_states)
    return tree.build(cluster=cluster, source=str(session.target))


def read_for_write(session: ZkSession, *, with_states: bool = True) -> tuple[ClusterSnapshot, ClusterTree]:
    """Live state to validate and compute a write from: synced first, so the bulk reader's own session
    (which may sit on another, lagging server of the ensemble) sees every write committed before now.
    The tree's `versions` are what the write must check.

    Every write of the engine starts here, so this is where a ZooKeeper -> KRaft migration refuses it, whatever
    the front end (core.policy.gate asks the same question earlier, with the actor's identity, to record the
    refusal)."""
    from core.zk.migration_state import refuse_during_migration

    session.sync()
    tree = load_tree(session, ClusterTree(), with_states=with_states)
    snapshot = tree.build(source=str(session.target))
    if not any(p.path == zf.CONTROLLER for p in snapshot.problems):  # corrupt: refuse_corrupt names it
        refuse_during_migration(session, snapshot.controller)
    return snapshot, tree


def refuse_corrupt(snapshot: ClusterSnapshot, paths: Iterable[str], action: str) -> None:
    """Refuse a write computed from an unreadable znode, naming it.

    A corrupt znode is left out of the snapshot (core.zk.tree), which is right for showing the cluster and
    wrong for writing to it: a config rewritten from an unreadable one loses what it held, a reassignment of a
    partition whose state is unreadable is one the controller cannot carry out, and an unreadable /controller
    may hide a KRaft controller. `paths` are the znodes the write is computed from or acted on by; the first
    unreadable one is named (with a count of the others), and nothing is written."""
    wanted = set(paths)
    found = [p for p in snapshot.problems if p.path in wanted]
    if not found:
        return
    first = found[0]
    err = CorruptZnodeError(first.path, first.error)
    more = f" (and {len(found) - 1} more unreadable znode(s): {', '.join(p.path for p in found[1:4])}" \
           f"{' ...' if len(found) > 4 else ''})" if len(found) > 1 else ""
    err.message += f"{more}; refusing to {action}, which depends on it: nothing was written"
    err.hint = "repair or delete the znode, then try again"
    raise err
