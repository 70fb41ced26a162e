"""The decoded Kafka tree, kept up to date piece by piece, assembled into ClusterSnapshots.

The reader fills a ClusterTree once; the watcher keeps filling the same tree as znodes change.
Building a snapshot reuses the Topic objects of topics that did not change, so a leader change in
one partition of a 200,000-partition cluster costs one topic's rebuild, not the whole cluster's.
No I/O here: callers hand in the bytes they read.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Iterable

from core import zkformat as zf
from core.errors import CorruptZnodeError
from core.model import (
    Broker,
    ClusterSnapshot,
    Controller,
    InProgress,
    Partition,
    PartitionState,
    Problem,
    Topic,
    TopicPartitionReplicas,
    utc_now_iso,
)


class ClusterTree:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.brokers: dict[int, Broker] = {}
        # The last registration read of every broker id, kept when /brokers/ids/<id> goes: a down broker that
        # still holds replicas is shown with the rack and endpoints it had (Broker.remembered), not under "no rack".
        self.last_seen: dict[int, Broker] = {}
        self.controller_broker: int | None = None
        self.kraft_controller_epoch: int | None = None
        self.controller_epoch: int | None = None
        self.cluster_id: str | None = None
        self.assignments: dict[str, zf.TopicAssignment] = {}
        self.states: dict[str, dict[int, PartitionState | None]] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.reassignment: tuple[TopicPartitionReplicas, ...] = ()
        self.election: tuple[tuple[str, int], ...] = ()
        self.deletion: set[str] = set()
        self.problems: dict[str, str] = {}
        # znode path -> the stat version of the data this tree holds (-1: read as absent). A write computed
        # from this tree checks exactly these versions, so a change made after the read is never overwritten.
        self.versions: dict[str, int] = {}
        self.generation = 0  # bumped on every change; lets readers cache snapshots
        self._topic_cache: dict[str, Topic] = {}
        self._snapshot_cache: tuple[int, ClusterSnapshot] | None = None

    # --- updates: each takes raw bytes (None = the znode is absent) --------------------------

    def _touch(self, topic: str | None = None) -> None:
        self.generation += 1
        if topic is not None:
            self._topic_cache.pop(topic, None)

    def _version(self, path: str, data: bytes | None, version: int | None) -> None:
        if version is None:  # unknown (a caller that does not track versions): never guess
            self.versions.pop(path, None)
        else:
            self.versions[path] = -1 if data is None else version

    def _decode(self, path: str, fn, *args):
        try:
            value = fn(*args)
        except CorruptZnodeError as e:
            self.problems[path] = e.reason
            return _CORRUPT
        self.problems.pop(path, None)
        return value

    def set_broker(self, broker_id: int, data: bytes | None) -> None:
        with self.lock:
            path = zf.broker_path(broker_id)
            self._touch()
            if data is None:
                self.brokers.pop(broker_id, None)
                self.problems.pop(path, None)
                return
            reg = self._decode(path, zf.decode_broker, broker_id, data, path)
            # A registered broker is alive even when its payload is unreadable.
            self.brokers[broker_id] = Broker(broker_id) if reg is _CORRUPT else reg.to_broker()
            if reg is not _CORRUPT:
                self.last_seen[broker_id] = self.brokers[broker_id]

    def remember(self, older: "ClusterTree") -> None:
        """Keep what `older` (the tree this one replaces after a reconnect) saw of brokers this one has not seen:
        a broker that went down while ZooKeeper was unreachable keeps its last registration."""
        with self.lock, older.lock:
            for bid, b in older.last_seen.items():
                self.last_seen.setdefault(bid, b)
            self._touch()

    def set_broker_ids(self, ids: set[int]) -> None:
        with self.lock:
            for gone in set(self.brokers) - ids:
                self.set_broker(gone, None)

    def set_controller(self, data: bytes | None) -> None:
        with self.lock:
            self._touch()
            if data is None:
                self.controller_broker, self.kraft_controller_epoch = None, None
                self.problems.pop(zf.CONTROLLER, None)
                return
            c = self._decode(zf.CONTROLLER, zf.decode_controller, data)
            if c is _CORRUPT:
                self.controller_broker, self.kraft_controller_epoch = None, None
            else:
                self.controller_broker, self.kraft_controller_epoch = c.broker_id, c.kraft_controller_epoch

    def set_controller_epoch(self, data: bytes | None) -> None:
        with self.lock:
            self._touch()
            epoch = None if data is None else self._decode(zf.CONTROLLER_EPOCH, zf.decode_controller_epoch, data)
            self.controller_epoch = None if epoch is _CORRUPT else epoch

    def set_cluster_id(self, data: bytes | None) -> None:
        with self.lock:
            self._touch()
            cid = None if data is None else self._decode(zf.CLUSTER_ID, zf.decode_cluster_id, data)
            self.cluster_id = None if cid is _CORRUPT else cid

    def set_topic(self, topic: str, data: bytes | None, version: int | None = None) -> list[int]:
        """Returns the partition ids of the (new) assignment, so callers can read their states."""
        with self.lock:
            path = zf.topic_path(topic)
            self._touch(topic)
            self._version(path, data, version)
            if data is None:
                self.assignments.pop(topic, None)
                self.states.pop(topic, None)
                self.problems.pop(path, None)
                for p in [p for p in self.problems if p.startswith(path + "/")]:
                    del self.problems[p]
                return []
            a = self._decode(path, zf.decode_topic, topic, data, path)
            if a is _CORRUPT:
                self.assignments.pop(topic, None)
                return []
            if a.gap:  # shown, and named as a problem: hiding the topic would hide its partitions' health too
                self.problems[path] = a.gap
            self.assignments[topic] = a
            states = self.states.setdefault(topic, {})
            for gone in set(states) - set(a.partitions):
                del states[gone]
            return sorted(a.partitions)

    def set_state(self, topic: str, partition: int, data: bytes | None, version: int | None = None) -> None:
        with self.lock:
            path = zf.state_path(topic, partition)
            self._touch(topic)
            self._version(path, data, version)
            state = None if data is None else self._decode(path, zf.decode_partition_state, data, path)
            self.states.setdefault(topic, {})[partition] = None if state is _CORRUPT else state
            if data is None:
                self.problems.pop(path, None)

    def set_states(self, keys: Iterable[tuple[str, int]], reads: Iterable[tuple[str, bytes | None, int]]) -> None:
        """set_state for many partitions at once: keys[i] = (topic, partition), reads[i] = (state path, data or
        None, stat version, ...). One lock and one generation bump for the lot (a 200,000-partition read hands
        them in by the thousand); the same states, problems and versions as set_state one by one."""
        decode = zf.decode_partition_state
        with self.lock:
            self.generation += 1
            states, versions, problems, cache = self.states, self.versions, self.problems, self._topic_cache
            held, held_topic = None, None
            for (topic, partition), (path, data, version, *_) in zip(keys, reads):
                if topic != held_topic:
                    cache.pop(topic, None)
                    held = states.get(topic)
                    if held is None:
                        held = states[topic] = {}
                    held_topic = topic
                if data is None:
                    versions[path] = -1
                    held[partition] = None
                    problems.pop(path, None)
                    continue
                versions[path] = version
                try:
                    held[partition] = decode(data, path)
                except CorruptZnodeError as e:
                    problems[path] = e.reason
                    held[partition] = None
                else:
                    if problems:
                        problems.pop(path, None)

    def set_topic_config(self, topic: str, data: bytes | None, version: int | None = None) -> None:
        with self.lock:
            path = zf.topic_config_path(topic)
            self._touch(topic)
            self._version(path, data, version)
            cfg = {} if data is None else self._decode(path, zf.decode_config, data, path)
            if data is None:
                self.problems.pop(path, None)
            self.topic_configs[topic] = {} if cfg is _CORRUPT else cfg

    def set_broker_config(self, entity: str, data: bytes | None, version: int | None = None) -> None:
        with self.lock:
            path = zf.broker_config_path(entity)
            self._touch()
            self._version(path, data, version)
            if data is None:
                self.broker_configs.pop(entity, None)
                self.problems.pop(path, None)
                return
            cfg = self._decode(path, zf.decode_config, data, path)
            self.broker_configs[entity] = {} if cfg is _CORRUPT else cfg

    def set_reassignment(self, data: bytes | None) -> None:
        with self.lock:
            self._touch()
            r = () if data is None else self._decode(zf.REASSIGN, zf.decode_reassignment, data)
            self.reassignment = () if r is _CORRUPT else r
            if data is None:
                self.problems.pop(zf.REASSIGN, None)

    def set_election(self, data: bytes | None) -> None:
        with self.lock:
            self._touch()
            e = () if data is None else self._decode(zf.PREFERRED_ELECTION, zf.decode_preferred_election, data)
            self.election = () if e is _CORRUPT else e
            if data is None:
                self.problems.pop(zf.PREFERRED_ELECTION, None)

    def set_deletion(self, topics: list[str] | None) -> None:
        with self.lock:
            self._touch()
            self.deletion = set(topics or ())

    # --- assembly --------------------------------------------------------------------------

    def _topic(self, name: str) -> Topic:
        cached = self._topic_cache.get(name)
        if cached is not None:
            return cached
        a = self.assignments[name]
        states = self.states.get(name, {})
        parts = []
        adding, removing = a.adding_replicas, a.removing_replicas
        for pid in sorted(a.partitions):
            # One constructor call per partition (no dataclasses.replace): 200,000 of them per large snapshot.
            st = states.get(pid)
            if st is None:
                p = Partition(name, pid, a.partitions[pid], adding_replicas=adding.get(pid, ()),
                              removing_replicas=removing.get(pid, ()), has_state=False)
            else:
                p = Partition(name, pid, a.partitions[pid], st.leader, st.isr, st.leader_epoch,
                              adding.get(pid, ()), removing.get(pid, ()))
            parts.append(p)
        topic = Topic(name=name, partitions=tuple(parts), topic_id=a.topic_id,
                      config=dict(self.topic_configs.get(name, {})))
        self._topic_cache[name] = topic
        return topic

    def build(self, cluster: str = "", source: str = "", captured_at: str | None = None) -> ClusterSnapshot:
        with self.lock:
            if self._snapshot_cache and self._snapshot_cache[0] == self.generation and captured_at is None:
                snap = self._snapshot_cache[1]
                if snap.cluster == cluster and snap.source == source:
                    return snap
            topics = tuple(self._topic(n) for n in sorted(self.assignments))
            referenced = {r for t in topics for p in t.partitions for r in p.replicas}
            brokers = dict(self.brokers)
            for bid in referenced - set(brokers):
                seen = self.last_seen.get(bid)
                brokers[bid] = Broker(bid, alive=False) if seen is None else replace(seen, alive=False,
                                                                                      remembered=True)
            snap = ClusterSnapshot(
                cluster=cluster,
                captured_at=captured_at or utc_now_iso(),
                source=source,
                brokers=tuple(brokers[b] for b in sorted(brokers)),
                topics=topics,
                controller=None if self.controller_broker is None and self.controller_epoch is None else Controller(
                    broker_id=self.controller_broker, epoch=self.controller_epoch,
                    kraft_controller_epoch=self.kraft_controller_epoch),
                in_progress=InProgress(reassignment=self.reassignment, preferred_election=self.election,
                                       deletion=tuple(sorted(self.deletion))),
                cluster_id=self.cluster_id,
                broker_configs={k: dict(v) for k, v in self.broker_configs.items()},
                problems=tuple(Problem(p, e) for p, e in sorted(self.problems.items())),
            )
            self._snapshot_cache = (self.generation, snap)
            return snap


_CORRUPT = object()
