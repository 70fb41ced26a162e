"""The controller emulator's one shared context (Kafka's ControllerContext) and the writes every duty shares.

Every module of the emulator (sandbox.emulator.controller and the handler modules it dispatches to) works on one
`ControllerContext`: the emulator's ZooKeeper session, the broker sessions, what the controller keeps in memory
(live brokers, topic assignments, its epoch, /admin state), its timers and its reactions log. Only the worker
thread touches it once the emulator runs (ZooKeeper callbacks only enqueue).

The shared writes follow Kafka's controller: partition states are read with their znode version, decided,
and written back conditionally (`update`), each multi guarded by a check on /controller_epoch as
KafkaZkClient does (`multi`); a bad version on /controller_epoch means another controller took over
(ControllerMovedError, Kafka's ControllerMovedException). Unclean leader election is read from the topic's
config, else the cluster default, only when a clean election found nobody (`decider`).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Mapping, Sequence

from core import zkformat as zf
from core.errors import (
    CorruptZnodeError,
    KeelError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkOperationError,
)
from core.model import PartitionState
from sandbox.emulator import election as el
from sandbox.emulator import reassign as ra
from core.zk.session import Op, ZkSession, ZkSettings

# One logger for the whole emulator, whichever of its modules speaks.
log = logging.getLogger("sandbox.emulator.controller")

CHUNK = 200  # state writes per multi
DELETE_CHUNK = 1000  # deletes per multi when a topic goes
RETRIES = 5


class ControllerMovedError(KeelError):
    """/controller_epoch changed under us: another controller took over (Kafka's ControllerMovedException)."""


@dataclass(frozen=True)
class StateChange:
    topic: str
    partition: int
    old: PartitionState | None
    new: PartitionState


@dataclass
class _Write:
    topic: str
    partition: int
    exists: bool  # the state znode exists (set) or not (create)
    version: int
    old: PartitionState | None
    new: PartitionState


Decide = Callable[[str, int, tuple[int, ...], PartitionState | None], PartitionState | None]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def ids(broker_ids: Iterable[int]) -> str:
    broker_ids = sorted(broker_ids)
    return f"broker{'' if len(broker_ids) == 1 else 's'} {', '.join(map(str, broker_ids))}"


def csv(broker_ids: Iterable[int]) -> str:
    return ",".join(map(str, broker_ids))


def tps(keys: Sequence[tuple[str, int]], limit: int = 5) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def encode_state(s: PartitionState) -> bytes:
    return zf.encode_partition_state(s.leader, s.leader_epoch, s.controller_epoch, s.isr, s.leader_recovery_state)


@dataclass(eq=False, repr=False)
class ControllerContext:
    """What the emulator knows and shares. Options mirror the broker settings the controller reads
    (delete.topic.enable, auto.leader.rebalance.enable, leader.imbalance.*); see ControllerEmulator."""

    settings: ZkSettings
    where: str                                   # the tree, as people write it (connect string with chroot)
    bump: bool = True                            # bump /controller_epoch when taking over an existing tree
    on_reaction: Callable[[str], None] | None = None
    delete_topic_enable: bool = True
    auto_leader_rebalance: bool = False
    rebalance_interval: float = float(el.DEFAULT_CHECK_INTERVAL_SECONDS)
    imbalance_percentage: float = float(el.DEFAULT_IMBALANCE_PERCENTAGE)
    reassign_base_delay: float = 0.2
    time_scale: float = 1.0
    partition_sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    default_partition_bytes: int = ra.DEFAULT_PARTITION_BYTES
    # sessions: the emulator's own (for /controller, its watches and its writes) and one per broker
    zk: ZkSession | None = None
    brokers: dict[int, ZkSession] = field(default_factory=dict)  # broker id -> the session holding its registration
    owners: dict[int, int] = field(default_factory=dict)  # registered broker -> ephemeral owner (detects bounces)
    # the controller's view (Kafka's ControllerContext)
    live: set[int] = field(default_factory=set)
    assignments: dict[str, zf.TopicAssignment] = field(default_factory=dict)
    epoch: int = 0
    epoch_version: int = -1
    controller_id: int | None = None
    reactions: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=1000))
    handled: int = 0  # event batches processed
    # /admin state the controller keeps in memory
    deleting: set[str] = field(default_factory=set)  # topics queued for deletion
    # topic -> the (partition, replica) pairs already deleted
    deleted_replicas: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    waits: dict[str, str] = field(default_factory=dict)  # topic -> last "deletion waits" line
    last_election: dict[tuple[str, int], el.ElectionOutcome] = field(default_factory=dict)
    last_rebalance: list[el.BrokerImbalance] = field(default_factory=list)
    copies: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (topic, partition, new replica) -> timer
    # Kafka acts on /admin/reassign_partitions and /admin/preferred_replica_election when they are
    # created (and re-checks after deleting them itself); data changes are ignored.
    created: dict[str, bool] = field(default_factory=lambda: {zf.REASSIGN: False, zf.PREFERRED_ELECTION: False})
    seen: dict[str, bool] = field(default_factory=lambda: {zf.REASSIGN: False, zf.PREFERRED_ELECTION: False})
    # Outages: when our session went (monotonic), whether it expired, the session ids whose ephemeral
    # nodes we own(ed), and brokers whose session expired (re-registered once it is back).
    down_since: float | None = None
    expired: bool = False
    session_id: int | None = None
    broker_sids: dict[int, int | None] = field(default_factory=dict)
    broker_registrations: dict[int, bytes] = field(default_factory=dict)
    brokers_expired: set[int] = field(default_factory=set)
    # the event loop: ZooKeeper callbacks put (path, kind) here; one worker thread handles them
    events: queue.Queue[tuple[str, str]] = field(default_factory=queue.Queue)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: bool = False
    # One callable object for every watch (ZkSession keeps one kazoo wrapper per callback): set by the emulator.
    watch: Callable[[str, str], None] | None = None
    # Timers, only touched by the worker thread (and by start() before it runs): (due, seq, kind, arg).
    timers: list[tuple[float, int, str, object]] = field(default_factory=list)
    seq: itertools.count = field(default_factory=itertools.count)

    # --- reactions and timers ------------------------------------------------------------------

    def say(self, line: str) -> None:
        log.info(line)
        self.reactions.append(line)
        if self.on_reaction is not None:
            try:
                self.on_reaction(line)
            except Exception:
                log.exception("reaction callback failed")

    def schedule(self, delay: float, kind: str, arg: object) -> int:
        seq = next(self.seq)
        heapq.heappush(self.timers, (time.monotonic() + max(0.0, delay), seq, kind, arg))
        return seq

    def timer_timeout(self) -> float | None:
        return None if not self.timers else max(0.0, self.timers[0][0] - time.monotonic())

    def due_timers(self) -> dict[str, list[tuple[int, object]]]:
        now = time.monotonic()
        due: dict[str, list[tuple[int, object]]] = {}
        while self.timers and self.timers[0][0] <= now:
            _, seq, kind, arg = heapq.heappop(self.timers)
            due.setdefault(kind, []).append((seq, arg))
        return due

    # --- what the controller holds -------------------------------------------------------------

    def all_keys(self) -> list[tuple[str, int]]:
        return [(t, p) for t, a in self.assignments.items() for p in a.partitions]

    def reassignments(self) -> dict[tuple[str, int], ra.ReplicaAssignment]:
        """Partitions being reassigned (adding or removing replicas), as last read or written."""
        return {(t, p): ra.ReplicaAssignment.of(a, p) for t, a in sorted(self.assignments.items())
                for p in ra.in_progress(a)}

    # --- /admin nodes ----------------------------------------------------------------------------

    def act_on(self, path: str, initial: bool) -> bool:
        """Re-arm the exists-watch on an /admin node; True when it exists and was created since we last
        looked (or we deleted it ourselves and must look again, or the controller is starting)."""
        created, self.created[path] = self.created[path], False
        exists = self.seen[path] = self.zk.exists(path, watch=self.watch)
        return exists and (created or initial)

    def delete_admin_node(self, path: str, version: int) -> None:
        for _ in range(RETRIES):
            try:
                self.multi([Op("delete", path, version=version)])
                self.created[path] = True  # as Kafka does: look again for a new request
                return
            except ZkNoNodeError:
                return
            except ZkBadVersionError:  # rewritten meanwhile: Kafka deletes it whatever it holds
                node = self.zk.get(path)
                if not node.exists:
                    return
                version = node.version
        self.say(f"gave up deleting {path}: it kept changing under us")

    # --- guarded writes --------------------------------------------------------------------------

    def multi(self, ops: list[Op]) -> None:
        """One atomic multi guarded by /controller_epoch, as every write of Kafka's controller is."""
        try:
            self.zk.multi([Op("check", zf.CONTROLLER_EPOCH, version=self.epoch_version)] + ops)
        except ZkOperationError as e:
            self.epoch_guard(e)
            raise

    def epoch_guard(self, e: ZkOperationError) -> None:
        if isinstance(e, ZkBadVersionError) and e.path == zf.CONTROLLER_EPOCH:
            raise ControllerMovedError(f"/controller_epoch moved past {self.epoch}: another controller took over")

    # --- partition state writes ------------------------------------------------------------------

    def unclean(self, topic: str) -> bool:
        """unclean.leader.election.enable: the topic's override, else the cluster default, else false."""
        for path in (zf.topic_config_path(topic), zf.broker_config_path(zf.BROKER_DEFAULT_ENTITY)):
            node = self.zk.get(path)
            try:
                value = zf.decode_config(node.data, path).get("unclean.leader.election.enable") if node.exists else None
            except CorruptZnodeError:
                value = None
            if value is not None:
                return value.strip().lower() == "true"
        return False

    def decider(self, fn: Callable[[tuple[int, ...], PartitionState | None, bool], PartitionState | None],
                live: Collection[int] | None = None) -> Decide:
        """Decide cleanly; read the topic's unclean setting only when a clean election found nobody."""
        return self.keyed_decider(lambda _t, _p, r, s, unclean: fn(r, s, unclean), live)

    def keyed_decider(self, fn: Callable[[str, int, tuple[int, ...], PartitionState | None, bool],
                                         PartitionState | None],
                      live: Collection[int] | None = None) -> Decide:
        def decide(topic: str, p: int, replicas: tuple[int, ...], state: PartitionState | None):
            alive = self.live if live is None else live
            new = fn(topic, p, replicas, state, False)
            result = new or state
            if (result is not None and result.leader not in alive and any(r in alive for r in replicas)
                    and self.unclean(topic)):
                new = fn(topic, p, replicas, state, True)
            return new
        return decide

    def update(self, keys: Iterable[tuple[str, int]], decide: Decide) -> list[StateChange]:
        """Read, decide, write conditionally; partitions that changed under us are read and decided again."""
        done: list[StateChange] = []
        pending = sorted(set(keys))
        for _ in range(RETRIES):
            if not pending:
                break
            writes = []
            for (t, p), node in zip(pending, self.zk.get_many([zf.state_path(t, p) for t, p in pending])):
                a = self.assignments.get(t)
                replicas = a.partitions.get(p) if a else None
                if not replicas:
                    continue
                try:
                    old = zf.decode_partition_state(node.data, node.path) if node.exists else None
                except CorruptZnodeError as e:
                    self.say(f"skipping {node.path}: {e.reason}")
                    continue
                new = decide(t, p, tuple(replicas), old)
                if new is not None and new != old:
                    writes.append(_Write(t, p, node.exists, node.version, old, new))
            ok, pending = self._write(writes)
            done += [StateChange(w.topic, w.partition, w.old, w.new) for w in ok]
        if pending:
            self.say(f"gave up on {plural(len(pending), 'partition state')} that kept changing under us")
        return done

    @staticmethod
    def _ops(w: _Write, parents: Mapping[str, set[str] | None], made: set[str]) -> list[Op]:
        data = zf.encode_partition_state(w.new.leader, w.new.leader_epoch, w.new.controller_epoch, w.new.isr,
                                         w.new.leader_recovery_state)
        if w.exists:
            return [Op("set", zf.state_path(w.topic, w.partition), data, version=w.version)]
        ops = []
        existing = parents.get(w.topic)
        for path, present in ((zf.partitions_path(w.topic), existing is not None),
                              (zf.partition_path(w.topic, w.partition), existing is not None and str(w.partition) in existing)):
            if not present and path not in made:
                made.add(path)
                ops.append(Op("create", path))
        ops.append(Op("create", zf.state_path(w.topic, w.partition), data))
        return ops

    def _write(self, writes: list[_Write]) -> tuple[list[_Write], list[tuple[str, int]]]:
        creating = sorted({w.topic for w in writes if not w.exists})
        parents = self.zk.children_many([zf.partitions_path(t) for t in creating]) if creating else {}
        parents = {t: (set(parents[zf.partitions_path(t)]) if parents[zf.partitions_path(t)] is not None else None)
                   for t in creating}
        check = Op("check", zf.CONTROLLER_EPOCH, version=self.epoch_version)
        ok: list[_Write] = []
        retry: list[tuple[str, int]] = []
        for i in range(0, len(writes), CHUNK):
            chunk = writes[i:i + CHUNK]
            made: set[str] = set()
            try:
                self.zk.multi([check] + [op for w in chunk for op in self._ops(w, parents, made)])
                ok += chunk
                continue
            except ZkOperationError as e:
                self.epoch_guard(e)
            for w in chunk:  # one lost race fails the whole multi: redo the chunk one partition at a time
                try:
                    self.zk.multi([check] + self._ops(w, parents, set()))
                    ok.append(w)
                except (ZkBadVersionError, ZkNodeExistsError) as e:
                    self.epoch_guard(e)
                    retry.append((w.topic, w.partition))
                except ZkNoNodeError:
                    pass  # the topic went away meanwhile
        return ok, retry


__all__ = ["ControllerContext", "ControllerMovedError", "StateChange", "Decide", "log", "plural", "ids", "csv", "tps",
           "encode_state", "CHUNK", "DELETE_CHUNK", "RETRIES"]
