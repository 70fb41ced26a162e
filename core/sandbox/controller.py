"""Controller emulator: plays Kafka's ZooKeeper-mode controller (and the broker processes) over a real ZooKeeper.

Two halves, kept apart on purpose:

- pure decisions (top of this file): given a partition's replicas, its current state and the live brokers,
  what does Kafka's KafkaController write next? They follow the Scala source: `Election.leaderForOffline`
  (first replica in replica order that is alive and in the ISR; the ISR keeps its live members),
  `ZkReplicaStateMachine.doRemoveReplicasFromIsr` (leader -1 when the removed replica led, an ISR of one is
  kept), `LeaderAndIsr.newLeaderAndIsr` (every controller write bumps the leader epoch) and
  `initializeLeaderAndIsrForPartitions` (new partition: first live replica leads, ISR = live replicas).
  No I/O: unit-testable in microseconds, and reused by the seeder to build the demo's history.
- the ControllerEmulator: watches ZooKeeper, queues every event (callbacks only enqueue) and reacts in one
  worker thread, reading states with their znode version and writing them back conditionally, each multi
  guarded by a check on /controller_epoch as Kafka's controller does. Broker "processes" are ZooKeeper
  sessions of their own: a broker dying is its session closing, exactly how a registration disappears.

The /admin handlers (decisions in core.sandbox.reassign, .election and .deletion, same split):

- /admin/reassign_partitions (acted on when created): U1 topic node RS = target ++ origin, adding and
  removing replicas, leader epoch + 1; each new replica catches up after a "copy time" (base delay + size
  over the follower throttle, scaled) and joins the ISR; then the leader moves into the target if needed,
  the removed replicas leave the ISR, RS = target, and the partition leaves the node (deleted when empty).
  A target broker that is down keeps its partition in progress until it comes back.
- /admin/preferred_replica_election (acted on when created): the first replica is elected when alive and
  in the ISR; every outcome goes to `reactions` and `last_election`; the node is deleted.
- /admin/delete_topics/<t>: the topic's znodes, config and admin node are deleted once no reassignment of
  it runs and every broker holding a replica is up; with delete_topic_enable=False only the admin node goes.
- optional auto leader rebalance every leader.imbalance.check.interval.seconds.

ZooKeeper outages (a restart, a stall): kazoo re-registers no watch when it reconnects, so after every
reconnect the emulator re-reads what it watches and re-arms each watch (intents, registrations, topics,
/admin nodes), reacting to whatever changed meanwhile. When its own session expired, /controller and its
status node went with it: it claims them again (a controller failover: epoch + 1) unless another controller
took over, in which case it resigns. A broker "process" whose session expired registers again on its new
session, as a Kafka broker does.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Collection, Iterable, Mapping, Sequence

from core import zkformat as zf
from core.errors import (
    BusyError,
    CorruptZnodeError,
    KeelError,
    ValidationError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkNotEmptyError,
    ZkOperationError,
)
from core.model import NO_LEADER, PartitionState
from core.sandbox import election as el
from core.sandbox import reassign as ra
from core.sandbox.deletion import plan_deletion, split_requests
from core.sandbox.seed import EMULATOR, INTENTS, BrokerIntent, decode_intent, intent_path
from core.zk.session import Op, ZkSession

log = logging.getLogger(__name__)

# --- pure decisions ------------------------------------------------------------------------------


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


# --- the emulator ------------------------------------------------------------------------------


class ControllerActiveError(BusyError):
    """Another controller (a Kafka broker or an emulator) owns this tree."""


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
_STOP = ("", "stop")
_RESYNC = "<resync>"  # queued path: the emulator's session is back after an outage
_BROKER_SESSION = "<broker-session>"  # queued path (kind: the broker id): a broker's session was renewed
_RESYNC_RETRY_SECONDS = 2.0
_CHUNK = 200  # state writes per multi
_DELETE_CHUNK = 1000  # deletes per multi when a topic goes
_RETRIES = 5


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _ids(ids: Iterable[int]) -> str:
    ids = sorted(ids)
    return f"broker{'' if len(ids) == 1 else 's'} {', '.join(map(str, ids))}"


def _csv(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _tps(keys: Sequence[tuple[str, int]], limit: int = 5) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _encode_state(s: PartitionState) -> bytes:
    return zf.encode_partition_state(s.leader, s.leader_epoch, s.controller_epoch, s.isr, s.leader_recovery_state)


class ControllerEmulator:
    """`with ControllerEmulator(session) as emu: ...` or start()/stop(). The session only lends its settings:
    the emulator opens its own session (for /controller, its watches and its writes) and one per broker.

    What it did is readable while it runs: `reactions` (one line per reaction), `last_election` (the
    outcome of every partition of the last /admin/preferred_replica_election), `last_rebalance` (brokers
    above the imbalance threshold at the last auto rebalance check), `reassignments()` (partitions in flight) and
    `deleting` (topics queued for deletion)."""

    def __init__(self, session: ZkSession, *, controller_epoch_bump: bool = True,
                 on_reaction: Callable[[str], None] | None = None,
                 delete_topic_enable: bool = True,
                 auto_leader_rebalance: bool = False,
                 leader_imbalance_check_interval_seconds: float = el.DEFAULT_CHECK_INTERVAL_SECONDS,
                 leader_imbalance_per_broker_percentage: float = el.DEFAULT_IMBALANCE_PERCENTAGE,
                 reassign_base_delay: float = 0.2,
                 time_scale: float = 1.0,
                 partition_sizes: Mapping[tuple[str, int], int] | None = None,
                 default_partition_bytes: int = ra.DEFAULT_PARTITION_BYTES):
        """Options mirror the broker settings the controller reads: delete.topic.enable,
        auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
        leader.imbalance.per.broker.percentage. A new replica of a reassignment catches up after
        (reassign_base_delay + size / rate) * time_scale seconds, size from `partition_sizes` (bytes by
        (topic, partition)) else `default_partition_bytes`, rate the follower.replication.throttled.rate
        (and the leader's leader.replication.throttled.rate) from /config/brokers, else unthrottled."""
        if not leader_imbalance_check_interval_seconds > 0:
            raise ValidationError("leader_imbalance_check_interval_seconds must be positive, "
                                  f"got {leader_imbalance_check_interval_seconds}")
        for name, value in (("reassign_base_delay", reassign_base_delay), ("time_scale", time_scale),
                            ("default_partition_bytes", default_partition_bytes)):
            if not value >= 0:
                raise ValidationError(f"{name} must be zero or more, got {value}")
        if not 0 <= leader_imbalance_per_broker_percentage <= 100:
            raise ValidationError("leader_imbalance_per_broker_percentage must be between 0 and 100, "
                                  f"got {leader_imbalance_per_broker_percentage}")
        self.delete_topic_enable = delete_topic_enable
        self.auto_leader_rebalance = auto_leader_rebalance
        self.rebalance_interval = float(leader_imbalance_check_interval_seconds)
        self.imbalance_percentage = float(leader_imbalance_per_broker_percentage)
        self.reassign_base_delay = float(reassign_base_delay)
        self.time_scale = float(time_scale)
        self.partition_sizes = dict(partition_sizes or {})
        self.default_partition_bytes = int(default_partition_bytes)
        self._settings = session.settings
        self._where = str(session.target)
        self._bump = controller_epoch_bump
        self._on_reaction = on_reaction
        self._zk: ZkSession | None = None
        self._brokers: dict[int, ZkSession] = {}   # broker id -> the session holding its registration
        self._owners: dict[int, int] = {}          # registered broker -> ephemeral owner (detects bounces)
        self.live: set[int] = set()
        self.assignments: dict[str, zf.TopicAssignment] = {}
        self.epoch = 0
        self._epoch_version = -1
        self.controller_id: int | None = None
        self.reactions: collections.deque[str] = collections.deque(maxlen=1000)
        self.failed: str | None = None
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started = self._stopped = False
        self._busy = False
        self.handled = 0  # event batches processed
        # /admin state the controller keeps in memory (Kafka's ControllerContext)
        self.deleting: set[str] = set()                          # topics queued for deletion
        self._deleted_replicas: dict[str, set[tuple[int, int]]] = {}  # topic -> (partition, replica) gone
        self._waits: dict[str, str] = {}                          # topic -> last "deletion waits" line
        self.last_election: dict[tuple[str, int], el.ElectionOutcome] = {}
        self.last_rebalance: list[el.BrokerImbalance] = []
        # Timers, only touched by the worker thread (and by start() before it runs): (due, seq, kind, arg).
        self._timers: list[tuple[float, int, str, object]] = []
        self._seq = itertools.count()
        self._copies: dict[tuple[str, int, int], int] = {}  # (topic, partition, new replica) -> timer seq
        # Kafka acts on /admin/reassign_partitions and /admin/preferred_replica_election when they are
        # created (and re-checks after deleting them itself); data changes are ignored.
        self._created = {zf.REASSIGN: False, zf.PREFERRED_ELECTION: False}
        self._seen = {zf.REASSIGN: False, zf.PREFERRED_ELECTION: False}  # existed when last looked at
        # Outages: when our session went (monotonic), whether it expired, the session ids whose ephemeral
        # nodes we own(ed), and brokers whose session expired (re-registered once it is back).
        self._down_since: float | None = None
        self._expired = False
        self._session_id: int | None = None
        self._broker_sids: dict[int, int | None] = {}
        self._broker_registrations: dict[int, bytes] = {}
        self._brokers_expired: set[int] = set()
        self.resyncs = 0  # re-reads after a reconnect
        # One callable object for every watch: ZkSession keeps one kazoo wrapper per callback.
        self._watch = self._enqueue
        # Dispatch table, in processing order within a batch: (path, children?, handler).
        self._handlers: list[tuple[str, bool, Callable[[str | None], None]]] = [
            (INTENTS, False, self._on_intent_list),
            (INTENTS, True, self._on_intent),
            (zf.TOPICS, False, self._on_topic_list),
            (zf.TOPICS, True, self._on_topic),
            (zf.BROKER_IDS, False, self._on_broker_ids),
            (zf.REASSIGN, False, self._on_reassign_node),
            (zf.DELETE_TOPICS, False, self._on_delete_topics),
            (zf.PREFERRED_ELECTION, False, self._on_election_node),
        ]
        self._timer_handlers: dict[str, Callable[[list[tuple[int, object]]], None]] = {
            "copy": self._on_copies_done,
            "rebalance": self._on_rebalance_timer,
            "resync": lambda _items: self._resync(),
        }

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> "ControllerEmulator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and not self._stopped and self._thread is not None and self._thread.is_alive()

    def start(self) -> "ControllerEmulator":
        if self._started:
            return self
        self._started = True
        self._zk = ZkSession.open(self._settings)
        try:
            self._claim()
            self._session_id = self._zk.session_id
            self._zk.on_state_change(self._on_session_state)
            self._on_intent_list(None)               # broker processes come up
            self._owners = self._read_registrations()
            self.live = set(self._owners)
            self._take_over()
            self._load_topics()
            changes = self._update(self._all_keys(), self._decider(
                lambda r, s, unclean: reconcile(r, s, self.live, self.epoch, unclean=unclean)))
            self._say(f"controller emulator started on {self._where}: live {_ids(self.live) if self.live else 'none'}, "
                      f"controller {self.controller_id}, epoch {self.epoch}, "
                      f"{len(self.assignments)} topics, {_plural(len(changes), 'partition state')} updated")
            # onControllerFailover: pending reassignments (the /admin node, then the ones recorded in topic
            # nodes), topic deletions, pending preferred elections, then the auto rebalance schedule.
            handled: set[tuple[str, int]] = set()
            self._call(zf.REASSIGN, lambda: handled.update(self._on_reassign_node(None, initial=True) or ()))
            self._call("resuming reassignments", lambda: self._resume_reassignments(skip=handled))
            self._call(zf.DELETE_TOPICS, self._on_delete_topics, None)
            self._call(zf.PREFERRED_ELECTION, lambda: self._on_election_node(None, initial=True))
            if self.auto_leader_rebalance:
                self._schedule(min(5.0, self.rebalance_interval), "rebalance", None)
            self._publish()
        except BaseException:
            self._close_sessions()
            raise
        self._thread = threading.Thread(target=self._run, name="keel-controller-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Like a whole-cluster shutdown: broker sessions close (registrations vanish), /controller goes."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._queue.put(_STOP)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
        self._close_sessions()

    def _close_sessions(self) -> None:
        for session in list(self._brokers.values()):
            try:
                session.close()
            except Exception:  # closing must go on for the others
                log.exception("closing a broker session failed")
        self._brokers.clear()
        if self._zk is not None:
            try:
                self._zk.close()
            except Exception:
                log.exception("closing the emulator session failed")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once no event is queued or being handled (events still in flight from ZooKeeper are not seen)."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            quiet = quiet + 1 if self._queue.empty() and not self._busy else 0
            if quiet >= 3:
                return True
            time.sleep(0.03)
        return False

    def _claim(self) -> None:
        zk = self._zk
        if not zk.exists("/"):
            raise KeelError(f"{self._where} does not exist: seed a sandbox first with "
                            f"`python -m core sandbox up --zk {self._where}`")
        node = zk.get(zf.CONTROLLER)
        if node.exists:
            try:
                holder = f"broker {zf.decode_controller(node.data).broker_id}"
            except CorruptZnodeError:
                holder = "an unreadable /controller"
            raise ControllerActiveError(f"another controller is active on {self._where} ({holder} holds "
                                        "/controller): stop it, or wait for its session to expire")
        try:
            zk.create(EMULATOR, self._status(), ephemeral=True, makepath=True)
        except ZkNodeExistsError:
            raise ControllerActiveError(f"a sandbox controller emulator is already running on {self._where} "
                                        f"({EMULATOR} exists)") from None

    # --- riding through ZooKeeper outages ---------------------------------------------------------

    def _resync(self) -> None:
        """After a reconnect: re-read everything watched and re-arm every watch (kazoo re-registers none, so
        without this the emulator would never hear of a change again), reacting to what changed meanwhile.
        After an expired session it is a controller failover: the status node and /controller are claimed
        again (epoch + 1), every partition reconciled and pending /admin requests resumed."""
        if self._stopped or not self._zk.connected:
            return  # the next reconnect queues another
        down, self._down_since = self._down_since, None
        expired, self._expired = self._expired, False
        gap = time.monotonic() - down if down is not None else 0.0
        try:
            if expired:
                self._reclaim()
            self._on_intent_list(None)  # broker processes meant to be up and not registered register again
            self._on_broker_ids(None)  # brokers gone or back meanwhile; /controller if it has to move
            self._resync_topics()
            # A fixed point for states this controller left behind; after an outage it also covers reactions
            # that failed while ZooKeeper was away (onControllerFailover does the same after an expiry).
            self._update(self._all_keys(), self._decider(
                lambda r, s, unclean: reconcile(r, s, self.live, self.epoch, unclean=unclean)))
            for path in (zf.REASSIGN, zf.PREFERRED_ELECTION):
                if not self._seen[path]:
                    self._created[path] = True  # it may have been created while nothing watched it
            handled = self._on_reassign_node(None, initial=expired) or set()
            if expired:
                self._resume_reassignments(skip=handled)
            self._on_delete_topics(None)
            self._on_election_node(None, initial=expired)
        except ControllerMovedError:
            raise
        except BaseException:
            self._expired = self._expired or expired
            if self._down_since is None:
                self._down_since = down
            if self._zk.connected and not self._stopped:
                self._schedule(_RESYNC_RETRY_SECONDS, "resync", None)
            raise
        self.resyncs += 1
        what = (f"ZooKeeper session expired; new session after {gap:.0f} s: claimed /controller again "
                f"(controller {self.controller_id}, epoch {self.epoch})" if expired
                else f"reconnected to ZooKeeper after {gap:.0f} s")
        self._say(f"{what}: re-read the cluster and re-armed every watch; live "
                  f"{_ids(self.live) if self.live else 'none'}, {len(self.assignments)} topics")

    def _reclaim(self) -> None:
        """Our session expired: the ephemeral status node and /controller went with it. Claim the status node
        again and forget /controller (the next election registers it), unless someone else took over."""
        old, self._session_id = self._session_id, self._zk.session_id
        for path in (EMULATOR, zf.CONTROLLER):
            node = self._zk.get(path)
            if node.exists and old is not None and node.ephemeral_owner == old:
                try:  # left over from our expired session: ours to remove
                    self._zk.delete(path, version=node.version)
                except ZkNoNodeError:
                    pass
        node = self._zk.get(EMULATOR)
        if not node.exists:
            try:
                self._zk.create(EMULATOR, self._status(), ephemeral=True, makepath=True)
                node = None
            except ZkNodeExistsError:
                node = self._zk.get(EMULATOR)
        if node is not None and node.exists and node.ephemeral_owner != self._session_id:
            raise ControllerMovedError(f"another sandbox controller emulator started on {self._where} while our "
                                       "ZooKeeper session was expired")
        node = self._zk.get(zf.CONTROLLER)
        if node.exists and node.ephemeral_owner != self._session_id:
            try:
                holder = f"broker {zf.decode_controller(node.data).broker_id}"
            except CorruptZnodeError:
                holder = "someone"
            raise ControllerMovedError(f"{holder} registered /controller while our ZooKeeper session was expired")
        if not node.exists:
            self.controller_id = None

    def _resync_topics(self) -> None:
        """Re-read every topic node (re-arming its watch); initialise topics and partitions added meanwhile."""
        before = {t: set(a.partitions) for t, a in self.assignments.items()}
        names = set(self._zk.children(zf.TOPICS, watch=self._watch) or ())
        for gone in set(self.assignments) - names:
            del self.assignments[gone]
        for name in self._read_topics(sorted(names)):
            added = sorted(set(self.assignments[name].partitions) - before.get(name, set()))
            if not added:
                continue
            if name not in before:
                self._init_partitions(name, added, "new topic")
            elif name in self.deleting:
                self._say(f"skipping new partitions {', '.join(map(str, added))} of {name}: the topic is being deleted")
            else:
                self._init_partitions(name, added, "new partitions in")

    # --- events ----------------------------------------------------------------------------

    def _enqueue(self, path: str, kind: str) -> None:
        if kind == "none":  # session events come through on_state_change
            return
        if kind == "created" and path in self._created:
            self._created[path] = True  # before the put: the worker must see it with the event
        self._queue.put((path, kind))

    def _on_session_state(self, state: str) -> None:
        """Ride through ZooKeeper outages: every reconnect queues a re-read (see _resync)."""
        if self._stopped:  # closing our own session in stop() reports "lost" too
            return
        if state in ("suspended", "lost"):
            if self._down_since is None:
                self._down_since = time.monotonic()
            if state == "lost":
                self._expired = True
        elif state == "connected" and (self._down_since is not None or self._expired):
            self._queue.put((_RESYNC, "connected"))

    def _on_broker_session(self, bid: int, session: ZkSession, state: str) -> None:
        if self._stopped or self._brokers.get(bid) is not session:
            return  # a session we closed ourselves (broker stopped, emulator stopping)
        if state == "lost":
            self._brokers_expired.add(bid)
        elif state == "connected" and bid in self._brokers_expired:
            self._brokers_expired.discard(bid)
            self._queue.put((_BROKER_SESSION, str(bid)))

    def _route(self, path: str) -> tuple[int, str | None] | None:
        parent, _, name = path.rpartition("/")
        for i, (base, children, _fn) in enumerate(self._handlers):
            if (not children and path == base) or (children and parent == base and name):
                return i, (name if children else None)
        return None

    def _run(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=self._timer_timeout())]
            except queue.Empty:
                batch = []
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch or self._stopped:
                return
            due = self._due_timers()
            if not batch and not due:
                continue
            self._busy = True
            try:
                jobs = sorted({r for r in map(self._route, (p for p, _ in batch)) if r is not None},
                              key=lambda r: (r[0], r[1] or ""))
                calls: list[tuple[str, Callable, tuple]] = []
                if any(p == _RESYNC for p, _ in batch):
                    calls.append(("the re-read after a reconnect", self._resync, ()))
                calls += [(f"the new session of broker {b}", self._reregister, (int(b),))
                          for b in sorted({k for p, k in batch if p == _BROKER_SESSION}, key=int)]
                calls += [
                    (self._handlers[i][0] + ("/" + arg if arg else ""), self._handlers[i][2], (arg,)) for i, arg in jobs]
                calls += [(f"timer {kind}", self._timer_handlers[kind], (items,)) for kind, items in due.items()]
                for label, fn, args in calls:
                    try:
                        self._call(label, fn, *args)
                    except ControllerMovedError as e:
                        self.failed = str(e)
                        self._say(f"resigning: {e}")
                        return
                if batch:
                    self.handled += 1
                self._publish()
            finally:
                self._busy = False

    def _call(self, label: str, fn: Callable, *args) -> None:
        """Run one handler; the emulator must outlive one bad event (ControllerMovedError ends it)."""
        try:
            fn(*args)
        except ControllerMovedError:
            raise
        except KeelError as e:
            self._say(f"error handling {label}: {e}")
        except Exception as e:
            log.exception("handler failed")
            self._say(f"error handling {label}: {type(e).__name__}: {e}")

    # --- timers (worker thread only) -------------------------------------------------------------

    def _schedule(self, delay: float, kind: str, arg: object) -> int:
        seq = next(self._seq)
        heapq.heappush(self._timers, (time.monotonic() + max(0.0, delay), seq, kind, arg))
        return seq

    def _timer_timeout(self) -> float | None:
        return None if not self._timers else max(0.0, self._timers[0][0] - time.monotonic())

    def _due_timers(self) -> dict[str, list[tuple[int, object]]]:
        now = time.monotonic()
        due: dict[str, list[tuple[int, object]]] = {}
        while self._timers and self._timers[0][0] <= now:
            _, seq, kind, arg = heapq.heappop(self._timers)
            due.setdefault(kind, []).append((seq, arg))
        return due

    def _say(self, line: str) -> None:
        log.info(line)
        self.reactions.append(line)
        if self._on_reaction is not None:
            try:
                self._on_reaction(line)
            except Exception:
                log.exception("reaction callback failed")

    def _status(self) -> bytes:
        return json.dumps({"version": 1, "live_brokers": sorted(self.live), "controller": self.controller_id,
                           "epoch": self.epoch, "handled": self.handled}, separators=(",", ":")).encode()

    def _publish(self) -> None:
        """brokers.py waits on this: a stop/start is done once the emulator reports the new live set."""
        if self._expired:
            return  # the status node went with the session; _resync creates it again
        try:
            self._zk.set(EMULATOR, self._status())
        except ZkOperationError as e:
            log.warning("could not publish the emulator status: %s", e)

    # --- broker processes (intents) ----------------------------------------------------------

    def _on_intent_list(self, _arg: str | None) -> None:
        for name in sorted(self._zk.children(INTENTS, watch=self._watch) or ()):
            if name.isdigit():
                self._on_intent(name)

    def _on_intent(self, name: str | None) -> None:
        if not name or not name.isdigit():
            return
        node = self._zk.get(intent_path(int(name)), watch=self._watch)
        intent = decode_intent(int(name), node.data) if node.exists else None
        if intent is not None:
            self._apply_intent(intent)

    def _apply_intent(self, intent: BrokerIntent) -> None:
        bid = intent.broker_id
        registered = self._zk.exists(zf.broker_path(bid))
        if intent.up and not registered:
            self._register(bid, intent.registration)
        elif not intent.up and registered:
            session = self._brokers.pop(bid, None)
            if session is not None:
                session.close()  # the broker process dies: ZooKeeper drops its ephemeral registration
                self._say(f"broker {bid} stopped: its ZooKeeper session closed")
            else:
                self._zk.delete(zf.broker_path(bid))
                self._say(f"broker {bid} stopped: deleted its registration (not created by the sandbox)")

    @staticmethod
    def _fresh_registration(bid: int, data: bytes) -> bytes:
        try:  # a fresh timestamp, as a starting broker writes one
            reg = zf.decode_broker(bid, data)
            return zf.encode_broker(reg.endpoints, version=reg.version, rack=reg.rack, jmx_port=reg.jmx_port,
                                    timestamp_ms=int(time.time() * 1000),
                                    listener_security_protocol_map=reg.listener_security_protocol_map or None,
                                    features=reg.features)
        except (CorruptZnodeError, ValueError):
            return data

    def _register(self, bid: int, registration: str) -> None:
        old = self._brokers.pop(bid, None)
        if old is not None:
            old.close()
        data = self._fresh_registration(bid, registration.encode())
        session = ZkSession.open(self._settings)
        try:
            session.create(zf.broker_path(bid), data, ephemeral=True, makepath=True)
        except ZkNodeExistsError:
            session.close()
            self._say(f"broker {bid} is already registered by another session: left as it is")
            return
        except BaseException:
            session.close()
            raise
        self._brokers[bid] = session
        self._broker_sids[bid] = session.session_id
        self._broker_registrations[bid] = data
        self._brokers_expired.discard(bid)
        session.on_state_change(lambda state, bid=bid, session=session: self._on_broker_session(bid, session, state))
        self._say(f"broker {bid} started: registered /brokers/ids/{bid}")

    def _reregister(self, bid: int) -> None:
        """A broker whose ZooKeeper session expired registers again on its new session (Kafka's broker does so
        when its ZooKeeper client re-initialises), unless it was stopped meanwhile."""
        session = self._brokers.get(bid)
        if session is None or not session.connected or self._expired or self._down_since is not None:
            return  # our own session is not back yet: its re-read (_resync) registers the broker
        intent = self._zk.get(intent_path(bid))
        if intent.exists and (decoded := decode_intent(bid, intent.data)) is not None and not decoded.up:
            return
        path = zf.broker_path(bid)
        node = session.get(path)
        if node.exists:
            if node.ephemeral_owner == session.session_id:
                return  # already registered on this session
            if node.ephemeral_owner != self._broker_sids.get(bid):
                self._say(f"broker {bid} is registered by another session after its own expired: left as it is")
                return
            try:  # our expired session's node, not yet removed: it is ours to remove
                session.delete(path, version=node.version)
            except ZkNoNodeError:
                pass
        try:
            session.create(path, self._fresh_registration(bid, self._broker_registrations.get(bid, b"")),
                           ephemeral=True, makepath=True)
        except ZkNodeExistsError:
            self._say(f"broker {bid} was registered by another session meanwhile: left as it is")
            return
        self._broker_sids[bid] = session.session_id
        self._say(f"broker {bid} registered again: its ZooKeeper session had expired")

    # --- the controller proper -----------------------------------------------------------------

    def _read_registrations(self) -> dict[int, int]:
        names = self._zk.children(zf.BROKER_IDS, watch=self._watch) or []
        ids = sorted(int(n) for n in names if n.lstrip("-").isdigit())
        nodes = self._zk.get_many([zf.broker_path(b) for b in ids])
        return {b: n.ephemeral_owner for b, n in zip(ids, nodes) if n.exists}

    def _take_over(self) -> None:
        """Register /controller for the lowest live broker and bump /controller_epoch, in one multi (as
        KafkaZkClient.registerControllerAndIncrementControllerEpoch does)."""
        node = self._zk.get(zf.CONTROLLER_EPOCH)
        current = zf.decode_controller_epoch(node.data) if node.exists else 0
        if not self.live:  # nobody can be controller yet; the first broker to register becomes it
            self.epoch, self._epoch_version = current, node.version
            if not node.exists:
                self._zk.create(zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(0), makepath=True)
                self._epoch_version = 0
            return
        self._become_controller(min(self.live), node, bump=self._bump or not node.exists)

    def _become_controller(self, broker_id: int, epoch_node, *, bump: bool) -> None:
        current = zf.decode_controller_epoch(epoch_node.data) if epoch_node.exists else 0
        epoch = current + 1 if bump else current
        ops = []
        if not epoch_node.exists:
            ops.append(Op("create", zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(epoch)))
            version = 0
        elif bump:
            ops.append(Op("set", zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(epoch), version=epoch_node.version))
            version = epoch_node.version + 1
        else:
            ops.append(Op("check", zf.CONTROLLER_EPOCH, version=epoch_node.version))
            version = epoch_node.version
        if self.controller_id is not None:
            ops.append(Op("delete", zf.CONTROLLER))
        ops.append(Op("create", zf.CONTROLLER, zf.encode_controller(broker_id, int(time.time() * 1000)),
                      ephemeral=True))
        try:
            self._zk.multi(ops)
        except (ZkBadVersionError, ZkNodeExistsError) as e:
            raise ControllerMovedError(f"another controller registered first ({e})") from None
        self.epoch, self._epoch_version, self.controller_id = epoch, version, broker_id

    def _move_controller(self) -> None:
        """The broker hosting the controller died: the lowest live broker wins the next election."""
        if self.controller_id in self.live:
            return
        if not self.live:
            if self.controller_id is not None:
                try:
                    self._zk.delete(zf.CONTROLLER)
                except ZkNoNodeError:
                    pass
                self._say(f"no live broker: broker {self.controller_id} no longer controller")
                self.controller_id = None
            return
        self._become_controller(min(self.live), self._zk.get(zf.CONTROLLER_EPOCH), bump=True)
        self._say(f"controller moved to broker {self.controller_id} (epoch {self.epoch})")

    def _on_broker_ids(self, _arg: str | None) -> None:
        current = self._read_registrations()
        # A broker that re-registered between two looks is a bounce: Kafka fails it, then starts it.
        bounced = {b for b in current.keys() & self._owners.keys() if current[b] != self._owners[b]}
        dead = (self._owners.keys() - current.keys()) | bounced
        new = (current.keys() - self._owners.keys()) | bounced
        self._owners = current
        self.live = set(current)
        self._move_controller()
        if dead:
            self._brokers_down(set(dead), self.live - bounced)
        if new:
            self._brokers_up(set(new))
            self._resume_reassignments(new_brokers=set(new))
            if self.deleting:
                self._resume_deletions()

    def _brokers_down(self, dead: set[int], live: set[int]) -> None:
        # Topics queued for deletion take no part in elections (their replicas fail deletion instead).
        keys = [(t, p) for t, a in self.assignments.items() if t not in self.deleting
                for p, r in a.partitions.items() if not dead.isdisjoint(r)]
        for key in [k for k in self._copies if k[2] in dead]:
            del self._copies[key]  # a new replica that dies stops copying; it starts over when it returns
        changes = self._update(keys, self._decider(
            lambda r, s, unclean: after_brokers_down(r, s, dead, live, self.epoch, unclean=unclean), live))
        moved = sum(1 for c in changes if c.old and c.old.leader in dead and c.new.leader in live)
        offline = sum(1 for c in changes if c.new.leader == NO_LEADER and c.old and c.old.leader != NO_LEADER)
        left = sum(1 for c in changes if c.old for d in dead if d in c.old.isr and d not in c.new.isr)
        self._say(f"{_ids(dead)} down: {_plural(moved, 'leader')} moved, {_plural(offline, 'partition')} offline, "
                  f"left {_plural(left, 'ISR')}")

    def _brokers_up(self, new: set[int]) -> None:
        keys = [(t, p) for t, a in self.assignments.items() if t not in self.deleting
                for p, r in a.partitions.items() if not new.isdisjoint(r)]
        live = set(self.live)
        adding = {(t, p): a.adding_replicas.get(p, ()) for t, a in self.assignments.items() for p in ra.in_progress(a)}
        changes = self._update(keys, self._keyed_decider(
            lambda t, p, r, s, unclean: after_brokers_up(r, s, new, live, self.epoch, unclean=unclean,
                                                         catching_up=adding.get((t, p), ()))))
        joined = sum(1 for c in changes if c.old for b in new if b not in c.old.isr and b in c.new.isr)
        elected = sum(1 for c in changes if c.old and c.old.leader not in live and c.new.leader in live)
        created = sum(1 for c in changes if c.old is None)
        line = f"{_ids(new)} up: rejoined {_plural(joined, 'ISR')}, {_plural(elected, 'offline partition')} back online"
        if created:
            line += f", {_plural(created, 'new partition')} initialised"
        self._say(line)

    # --- topics ----------------------------------------------------------------------------

    def _load_topics(self) -> None:
        names = sorted(self._zk.children(zf.TOPICS, watch=self._watch) or ())
        self._read_topics(names)

    def _read_topics(self, names: Sequence[str]) -> list[str]:
        read = []
        for name, node in zip(names, self._zk.get_many([zf.topic_path(t) for t in names], watch=self._watch)):
            if not node.exists:
                self.assignments.pop(name, None)
                continue
            try:
                self.assignments[name] = zf.decode_topic(name, node.data)
                read.append(name)
            except CorruptZnodeError as e:
                self._say(f"ignoring topic {name}: {e.reason}")
        return read

    def _on_topic_list(self, _arg: str | None) -> None:
        names = set(self._zk.children(zf.TOPICS, watch=self._watch) or ())
        for gone in set(self.assignments) - names:
            del self.assignments[gone]
        for name in self._read_topics(sorted(names - set(self.assignments))):
            self._init_partitions(name, sorted(self.assignments[name].partitions), "new topic")

    def _on_topic(self, name: str | None) -> None:
        if not name:
            return
        before = set(self.assignments[name].partitions) if name in self.assignments else set()
        if name in self._read_topics([name]):
            added = sorted(set(self.assignments[name].partitions) - before)
            if added and name in self.deleting:  # processPartitionModifications skips them
                self._say(f"skipping new partitions {', '.join(map(str, added))} of {name}: the topic is being deleted")
            elif added:
                self._init_partitions(name, added, "new topic" if not before else "new partitions in")

    def _init_partitions(self, topic: str, partitions: Sequence[int], what: str) -> None:
        live = set(self.live)
        changes = self._update([(topic, p) for p in partitions], lambda t, p, r, s: (
            initial_state(r, live, self.epoch) if s is None else None))
        created = sum(1 for c in changes if c.old is None)
        line = f"{what} {topic}: {_plural(created, 'partition state')} created"
        leaderless = len(partitions) - created
        if leaderless:
            line += f", {leaderless} without one (no live replica)"
        self._say(line)

    def _all_keys(self) -> list[tuple[str, int]]:
        return [(t, p) for t, a in self.assignments.items() for p in a.partitions]

    # --- /admin/reassign_partitions ----------------------------------------------------------------

    def reassignments(self) -> dict[tuple[str, int], ra.ReplicaAssignment]:
        """Partitions being reassigned (adding or removing replicas), as last read or written."""
        return {(t, p): ra.ReplicaAssignment.of(a, p) for t, a in sorted(self.assignments.items())
                for p in ra.in_progress(a)}

    def _act_on(self, path: str, initial: bool) -> bool:
        """Re-arm the exists-watch on an /admin node; True when it exists and was created since we last
        looked (or we deleted it ourselves and must look again, or the controller is starting)."""
        created, self._created[path] = self._created[path], False
        exists = self._seen[path] = self._zk.exists(path, watch=self._watch)
        return exists and (created or initial)

    def _multi(self, ops: list[Op]) -> None:
        """One atomic multi guarded by /controller_epoch, as every write of Kafka's controller is."""
        try:
            self._zk.multi([Op("check", zf.CONTROLLER_EPOCH, version=self._epoch_version)] + ops)
        except ZkOperationError as e:
            self._epoch_guard(e)
            raise

    def _on_reassign_node(self, _arg: str | None, *, initial: bool = False) -> set[tuple[str, int]]:
        """processZkPartitionReassignment: start every partition of a new /admin/reassign_partitions."""
        if not self._act_on(zf.REASSIGN, initial):
            return set()
        node = self._zk.get(zf.REASSIGN)
        if not node.exists:
            return set()
        try:
            requested = ra.latest_entries(zf.decode_reassignment(node.data))
        except CorruptZnodeError as e:
            self._say(f"ignoring {zf.REASSIGN}: {e.reason}")
            return set()
        failed: dict[tuple[str, int], str] = {}
        by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
        for (t, p), target in sorted(requested.items()):
            why = ra.invalid_target(target)
            if why is None and t in self.deleting:
                why = el.TOPIC_BEING_DELETED
            if why is None and (t not in self.assignments or p not in self.assignments[t].partitions):
                why = el.UNKNOWN_PARTITION
            if why:
                failed[(t, p)] = why
            else:
                by_topic.setdefault(t, {})[p] = target
        steps: dict[tuple[str, int], ra.Step] = {}
        for t, targets in sorted(by_topic.items()):
            for p, outcome in self._reassign_topic(t, targets).items():
                if isinstance(outcome, ra.Step):
                    steps[(t, p)] = outcome
                else:
                    failed[(t, p)] = outcome
        self._say(self._describe_start(len(requested), steps, failed))
        self._after_steps(steps, failed)
        return set(requested)

    def _reassign_topic(self, topic: str, requests: Mapping[int, Sequence[int] | None], *,
                        only_if_complete: bool = False) -> dict[int, "ra.Step | str"]:
        """onPartitionReassignment for partitions of one topic, from fresh reads, in one multi: the topic
        node (version-checked) and the partition states (version-checked). A request of None resumes the
        partition's ongoing reassignment; with only_if_complete, only partitions whose target replicas are
        all in the ISR are acted on (maybeCompleteReassignment). Failures come back as reasons."""
        for _ in range(_RETRIES):
            tnode = self._zk.get(zf.topic_path(topic))
            if not tnode.exists:
                return {p: el.UNKNOWN_PARTITION for p in requests}
            current_topic = zf.decode_topic(topic, tnode.data)
            self.assignments[topic] = current_topic
            keys = sorted(requests)
            snodes = dict(zip(keys, self._zk.get_many([zf.state_path(topic, p) for p in keys])))
            live = set(self.live)
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
                step = ra.on_partition_reassignment(current, new, state, live, self.epoch)
                out[p] = step
                new_topic = ra.with_partition(new_topic, p, step.assignment)
                if step.state != state:
                    ops.append(Op("set", snode.path, _encode_state(step.state), version=snode.version))
            if new_topic != current_topic:
                ops.insert(0, Op("set", zf.topic_path(topic), ra.encode_topic_node(new_topic), version=tnode.version))
            if not ops:
                return out
            try:
                self._multi(ops)
            except (ZkBadVersionError, ZkNoNodeError):
                continue  # the topic or a state changed under us: read again
            self.assignments[topic] = new_topic
            return out
        raise KeelError(f"gave up reassigning partitions of {topic}: its znodes kept changing under us")

    def _after_steps(self, steps: Mapping[tuple[str, int], ra.Step],
                     failed: Mapping[tuple[str, int], str] | None = None) -> None:
        """B7 (completed and failed partitions leave the /admin node), A2 (new replicas start copying),
        and deletions waiting for these reassignments resume."""
        completed = {k: s.assignment.replicas for k, s in steps.items() if s.complete}
        if failed or completed:
            self._prune_reassign_node(set(failed or ()), completed)
        rates: dict[tuple[int, int], int | None] = {}
        for (t, p), step in sorted(steps.items()):
            for r in step.superseded:
                self._copies.pop((t, p, r), None)
            if not step.complete:
                self._start_copies(t, p, step.assignment, step.state, rates)
        if self.deleting & {t for t, _ in completed}:
            self._resume_deletions()

    def _prune_reassign_node(self, failed: set[tuple[str, int]], completed: Mapping[tuple[str, int], Sequence[int]]) -> None:
        """maybeRemoveFromZkReassignment: rewrite the node without them (version-checked), delete it when empty."""
        for _ in range(_RETRIES):
            node = self._zk.get(zf.REASSIGN)
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
                    self._multi([Op("set", zf.REASSIGN, ra.encode_entries(kept), version=node.version)])
                else:
                    self._multi([Op("delete", zf.REASSIGN, version=node.version)])
                    self._created[zf.REASSIGN] = True  # as Kafka does: look again for a new request
                    self._say(f"{zf.REASSIGN} deleted: every partition in it is done")
                return
            except (ZkBadVersionError, ZkNoNodeError):
                continue
        self._say(f"gave up updating {zf.REASSIGN}: it kept changing under us")

    def _start_copies(self, topic: str, partition: int, assignment: ra.ReplicaAssignment,
                      state: PartitionState | None, rates: dict[tuple[int, int], int | None]) -> None:
        """A2: each live new replica fetches from a live leader; it joins the ISR after its copy time."""
        if state is None or state.leader not in self.live:
            return  # resumes once the partition has a live leader again
        for r in assignment.adding:
            key = (topic, partition, r)
            if r in state.isr or r not in self.live or key in self._copies:
                continue
            if (r, state.leader) not in rates:
                rates[(r, state.leader)] = self._throttle(r, state.leader)
            size = self.partition_sizes.get((topic, partition), self.default_partition_bytes)
            delay = ra.copy_seconds(size, rates[(r, state.leader)], base_delay=self.reassign_base_delay,
                                    time_scale=self.time_scale)
            self._copies[key] = self._schedule(delay, "copy", key)

    def _throttle(self, follower: int, leader: int) -> int | None:
        """follower.replication.throttled.rate of the new replica's broker and leader.replication.throttled.rate
        of the leader's, each falling back to the cluster default (/config/brokers/<default>)."""
        paths = [zf.broker_config_path(zf.BROKER_DEFAULT_ENTITY), zf.broker_config_path(follower),
                 zf.broker_config_path(leader)]
        configs = []
        for node in self._zk.get_many(paths):
            try:
                configs.append(zf.decode_config(node.data, node.path) if node.exists else {})
            except CorruptZnodeError:
                configs.append({})
        default, follower_config, leader_config = configs
        return ra.throttle_rate({**default, **follower_config}, {**default, **leader_config})

    def _on_copies_done(self, items: list[tuple[int, object]]) -> None:
        """New replicas caught up: their leaders add them to the ISR; complete what can be completed."""
        joined: dict[str, dict[int, list[int]]] = {}
        for seq, key in items:
            if self._copies.get(key) != seq:
                continue  # cancelled or superseded
            del self._copies[key]
            t, p, r = key
            a = self.assignments.get(t)
            if a is None or r not in a.adding_replicas.get(p, ()) or r not in self.live:
                continue
            joined.setdefault(t, {}).setdefault(p, []).append(r)
        for t, parts in sorted(joined.items()):
            live = set(self.live)

            def join(_t: str, p: int, _r: tuple[int, ...], s: PartitionState | None, parts=parts, live=live):
                if s is None or s.leader not in live:
                    return None
                for r in parts[p]:
                    s = ra.join_isr(s, r)
                return s

            self._update([(t, p) for p in parts], join)
            self._complete_reassignments(t, sorted(parts))

    def _complete_reassignments(self, topic: str, partitions: Sequence[int]) -> None:
        outcomes = self._reassign_topic(topic, {p: None for p in partitions}, only_if_complete=True)
        steps = {(topic, p): s for p, s in outcomes.items() if isinstance(s, ra.Step)}
        if steps:
            shown = "; ".join(f"{t}-{p} -> {_csv(s.assignment.replicas)} (leader {s.state.leader}, ISR {_csv(s.state.isr)})"
                              for (t, p), s in sorted(steps.items())[:5])
            more = f"; and {len(steps) - 5} more" if len(steps) > 5 else ""
            self._say(f"reassignment completed for {_plural(len(steps), 'partition')}: {shown}{more}")
            self._after_steps(steps)

    def _resume_reassignments(self, *, new_brokers: set[int] | None = None,
                              skip: Collection[tuple[str, int]] = ()) -> None:
        """maybeResumeReassignments: every ongoing reassignment at failover, or those whose target holds a
        broker that just started (leader epoch + 1, or completion); then every new replica that can fetch
        again (its broker and its partition's leader alive) restarts copying."""
        resume: dict[str, dict[int, None]] = {}
        for (t, p), assignment in self.reassignments().items():
            if (t, p) not in skip and (new_brokers is None or not new_brokers.isdisjoint(assignment.target)):
                resume.setdefault(t, {})[p] = None
        steps: dict[tuple[str, int], ra.Step] = {}
        for t, parts in sorted(resume.items()):
            for p, outcome in self._reassign_topic(t, parts).items():
                if isinstance(outcome, ra.Step):
                    steps[(t, p)] = outcome
        if steps:
            done = sum(1 for s in steps.values() if s.complete)
            why = "controller failover" if new_brokers is None else f"{_ids(new_brokers & {r for s in steps.values() for r in s.assignment.replicas})} up"
            self._say(f"reassignment resumed for {_plural(len(steps), 'partition')} ({why})"
                      + (f", {done} completed" if done else ""))
        self._after_steps(steps)
        self._restart_copies()

    def _restart_copies(self) -> None:
        pending = self.reassignments()
        waiting = [k for k, a in pending.items() if any((k[0], k[1], r) not in self._copies for r in a.adding)]
        if not waiting:
            return
        rates: dict[tuple[int, int], int | None] = {}
        for (t, p), node in zip(waiting, self._zk.get_many([zf.state_path(t, p) for t, p in waiting])):
            try:
                state = zf.decode_partition_state(node.data, node.path) if node.exists else None
            except CorruptZnodeError:
                continue
            self._start_copies(t, p, pending[(t, p)], state, rates)

    def _describe_start(self, requested: int, steps: Mapping[tuple[str, int], ra.Step],
                        failed: Mapping[tuple[str, int], str]) -> str:
        started = sorted(k for k, s in steps.items() if not s.complete)
        done = sorted(k for k, s in steps.items() if s.complete)
        parts = []
        if started:
            text = f"{len(started)} started ({_tps(started)})"
            adding = sorted({r for k in started for r in steps[k].assignment.adding})
            if adding:
                text += f", new replicas on {_ids(adding)}"
            down = sorted({r for k in started for r in steps[k].assignment.target if r not in self.live})
            if down:
                text += f", waiting for {_ids(down)} (down)"
            parts.append(text)
        if done:
            parts.append(f"{len(done)} completed at once ({_tps(done)})")
        if failed:
            reasons: dict[str, list[tuple[str, int]]] = {}
            for k, why in sorted(failed.items()):
                reasons.setdefault(why, []).append(k)
            parts.append(f"{len(failed)} removed from the node ("
                         + "; ".join(f"{why}: {_tps(keys)}" for why, keys in sorted(reasons.items())) + ")")
        return f"reassignment of {_plural(requested, 'partition')} requested: " + ("; ".join(parts) or "nothing to do")

    # --- /admin/preferred_replica_election and auto leader rebalance -------------------------------

    def _on_election_node(self, _arg: str | None, *, initial: bool = False) -> None:
        """processReplicaLeaderElection (ZkTriggered): elect, record every outcome, delete the node."""
        if not self._act_on(zf.PREFERRED_ELECTION, initial):
            return
        node = self._zk.get(zf.PREFERRED_ELECTION)
        if not node.exists:
            return
        try:
            keys = sorted(set(zf.decode_preferred_election(node.data)))
        except CorruptZnodeError as e:  # Kafka fails the event and leaves the node: so do we
            self._say(f"ignoring {zf.PREFERRED_ELECTION}: {e.reason}")
            return
        outcomes = self._elect_preferred(keys)
        self.last_election = outcomes
        self._say(el.summarize(outcomes.values()))
        self._delete_admin_node(zf.PREFERRED_ELECTION, node.version)

    def _delete_admin_node(self, path: str, version: int) -> None:
        for _ in range(_RETRIES):
            try:
                self._multi([Op("delete", path, version=version)])
                self._created[path] = True  # as Kafka does: look again for a new request
                return
            except ZkNoNodeError:
                return
            except ZkBadVersionError:  # rewritten meanwhile: Kafka deletes it whatever it holds
                node = self._zk.get(path)
                if not node.exists:
                    return
                version = node.version
        self._say(f"gave up deleting {path}: it kept changing under us")

    def _elect_preferred(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], el.ElectionOutcome]:
        outcomes: dict[tuple[str, int], el.ElectionOutcome] = {}
        electable = []
        for t, p in keys:
            a = self.assignments.get(t)
            if a is None or p not in a.partitions:
                outcomes[(t, p)] = el.ElectionOutcome(t, p, False, None, el.UNKNOWN_PARTITION)
            elif t in self.deleting:
                outcomes[(t, p)] = el.ElectionOutcome(t, p, False, None, el.TOPIC_BEING_DELETED)
            else:
                electable.append((t, p))
        live = set(self.live)
        decided: dict[tuple[str, int], el.ElectionOutcome] = {}

        def decide(t: str, p: int, replicas: tuple[int, ...], state: PartitionState | None):
            new, reason = el.elect_preferred(replicas, state, live, self.epoch)
            after = new or state
            decided[(t, p)] = el.ElectionOutcome(t, p, new is not None, after.leader if after else None, reason)
            return new

        written = {(c.topic, c.partition) for c in self._update(electable, decide)}
        for key in electable:
            outcome = decided.get(key) or el.ElectionOutcome(*key, False, None, el.NO_STATE)
            if outcome.elected and key not in written:
                outcome = replace(outcome, elected=False, leader=None, reason="its state kept changing")
            outcomes[key] = outcome
        return outcomes

    def _on_rebalance_timer(self, _items: list[tuple[int, object]]) -> None:
        try:
            self._check_leader_balance()
        finally:
            if not self._stopped:
                self._schedule(self.rebalance_interval, "rebalance", None)

    def _check_leader_balance(self) -> None:
        """checkAndTriggerAutoLeaderRebalance."""
        keys = sorted((t, p) for t, a in self.assignments.items() if t not in self.deleting for p in a.partitions)
        states: dict[tuple[str, int], PartitionState | None] = {}
        for key, node in zip(keys, self._zk.get_many([zf.state_path(t, p) for t, p in keys])):
            try:
                states[key] = zf.decode_partition_state(node.data, node.path) if node.exists else None
            except CorruptZnodeError:
                states[key] = None
        assignments = {(t, p): tuple(self.assignments[t].partitions[p]) for t, p in keys}
        reassigning = any(ra.in_progress(a) for a in self.assignments.values())
        imbalanced = el.auto_rebalance(assignments, states, self.live, threshold_percent=self.imbalance_percentage,
                                       reassigning=reassigning)
        self.last_rebalance = imbalanced
        candidates = [k for b in imbalanced for k in b.candidates]
        if not candidates:
            return
        outcomes = self._elect_preferred(candidates)
        above = ", ".join(f"broker {b.broker} {b.ratio:.0%}" for b in imbalanced if b.candidates)
        self._say(el.summarize(outcomes.values(), what=f"auto leader rebalance (leader imbalance above "
                                                       f"{self.imbalance_percentage:g}%: {above})"))

    # --- /admin/delete_topics ------------------------------------------------------------------------

    def _on_delete_topics(self, _arg: str | None) -> None:
        """processTopicDeletion."""
        names = self._zk.children(zf.DELETE_TOPICS, watch=self._watch)
        if names is None:  # no /admin/delete_topics yet: be told when it appears
            self._zk.exists(zf.DELETE_TOPICS, watch=self._watch)
            return
        drop, queued = split_requests(names, self.assignments.keys(), enabled=self.delete_topic_enable)
        if drop:
            self._delete_deletion_nodes(drop)
            nodes = ", ".join(zf.delete_topic_path(t) for t in drop)
            if self.delete_topic_enable:
                self._say(f"ignoring deletion of non-existing topic{'' if len(drop) == 1 else 's'} "
                          f"{', '.join(drop)}: removed {nodes}")
            else:
                self._say(f"topic deletion is disabled (delete.topic.enable=false): removed {nodes}; "
                          f"the topic{'' if len(drop) == 1 else 's'} stay{'s' if len(drop) == 1 else ''}")
        new = [t for t in queued if t not in self.deleting]
        if new:
            self.deleting.update(new)
            self._say(f"topic{'' if len(new) == 1 else 's'} queued for deletion: {', '.join(new)}")
        if self.deleting:
            self._resume_deletions()

    def _delete_deletion_nodes(self, topics: Sequence[str]) -> None:
        try:
            self._multi([Op("delete", zf.delete_topic_path(t)) for t in topics])
        except ZkNoNodeError:  # some went meanwhile: the others one by one
            for t in topics:
                try:
                    self._multi([Op("delete", zf.delete_topic_path(t))])
                except ZkNoNodeError:
                    pass

    def _resume_deletions(self) -> None:
        """resumeDeletions: start, continue or finish the deletion of every queued topic that can go."""
        for t in sorted(self.deleting):
            a = self.assignments.get(t)
            if a is None:  # gone by other hands
                self._forget_deletion(t)
                if self._zk.exists(zf.delete_topic_path(t)):
                    self._delete_deletion_nodes([t])
                continue
            plan = plan_deletion(t, a, self.live, self._deleted_replicas.get(t, ()))
            if plan.waiting_for:
                self._wait(t, f"deletion of {t} waits: {plan.waiting_for}")
                continue
            if plan.to_stop:  # OfflineReplica: out of the ISR, then StopReplica(delete) succeeds at once
                stop = plan.to_stop
                self._update([(t, p) for p in stop], lambda _t, p, _r, s: (
                    ra.stop_replicas(s, stop[p], self.epoch) if s is not None else None))
                self._deleted_replicas.setdefault(t, set()).update((p, r) for p, rs in stop.items() for r in rs)
            if plan.dead_brokers:
                self._wait(t, f"deletion of {t} waits for {_ids(plan.dead_brokers)} to come back (offline replicas)")
                continue
            self._delete_topic_znodes(t, a)

    def _wait(self, topic: str, line: str) -> None:
        if self._waits.get(topic) != line:
            self._waits[topic] = line
            self._say(line)

    def _forget_deletion(self, topic: str) -> None:
        self.deleting.discard(topic)
        self._deleted_replicas.pop(topic, None)
        self._waits.pop(topic, None)

    def _delete_topic_znodes(self, topic: str, assignment: zf.TopicAssignment) -> None:
        """completeDeleteTopic: /brokers/topics/<t> and everything below it, /config/topics/<t>, then
        /admin/delete_topics/<t>, deepest first, in multis guarded by /controller_epoch."""
        root = zf.topic_path(topic)
        tails = [zf.topic_config_path(topic), zf.delete_topic_path(topic)]
        for _ in range(_RETRIES):
            tree: list[list[str]] = []
            level = [root]
            while level:
                kids = self._zk.children_many(level)
                level = [p for p in level if kids[p] is not None]
                tree.append(level)
                level = [f"{p}/{c}" for p in level for c in sorted(kids[p])]
            paths = [p for lvl in reversed(tree) for p in lvl]
            paths += [p for p, node in zip(tails, self._zk.get_many(tails)) if node.exists]
            ops = [Op("delete", p) for p in paths]
            try:
                for i in range(0, len(ops), _DELETE_CHUNK):
                    self._multi(ops[i:i + _DELETE_CHUNK])
                break
            except (ZkNotEmptyError, ZkNoNodeError):
                continue  # something was added or removed meanwhile: list again
        else:
            raise KeelError(f"gave up deleting topic {topic}: its znodes kept changing under us")
        self.assignments.pop(topic, None)
        self._forget_deletion(topic)
        self._say(f"topic {topic} deleted: {root} with its {_plural(len(assignment.partitions), 'partition')} "
                  f"({len(paths)} znodes in all), /config/topics/{topic} and /admin/delete_topics/{topic} removed")

    # --- state writes ------------------------------------------------------------------------

    def _unclean(self, topic: str) -> bool:
        """unclean.leader.election.enable: the topic's override, else the cluster default, else false."""
        for path in (zf.topic_config_path(topic), zf.broker_config_path(zf.BROKER_DEFAULT_ENTITY)):
            node = self._zk.get(path)
            try:
                value = zf.decode_config(node.data, path).get("unclean.leader.election.enable") if node.exists else None
            except CorruptZnodeError:
                value = None
            if value is not None:
                return value.strip().lower() == "true"
        return False

    def _decider(self, fn: Callable[[tuple[int, ...], PartitionState | None, bool], PartitionState | None],
                 live: Collection[int] | None = None) -> Decide:
        """Decide cleanly; read the topic's unclean setting only when a clean election found nobody."""
        return self._keyed_decider(lambda _t, _p, r, s, unclean: fn(r, s, unclean), live)

    def _keyed_decider(self, fn: Callable[[str, int, tuple[int, ...], PartitionState | None, bool],
                                          PartitionState | None],
                       live: Collection[int] | None = None) -> Decide:
        def decide(topic: str, p: int, replicas: tuple[int, ...], state: PartitionState | None):
            alive = self.live if live is None else live
            new = fn(topic, p, replicas, state, False)
            result = new or state
            if (result is not None and result.leader not in alive and any(r in alive for r in replicas)
                    and self._unclean(topic)):
                new = fn(topic, p, replicas, state, True)
            return new
        return decide

    def _update(self, keys: Iterable[tuple[str, int]], decide: Decide) -> list[StateChange]:
        """Read, decide, write conditionally; partitions that changed under us are read and decided again."""
        done: list[StateChange] = []
        pending = sorted(set(keys))
        for _ in range(_RETRIES):
            if not pending:
                break
            writes = []
            for (t, p), node in zip(pending, self._zk.get_many([zf.state_path(t, p) for t, p in pending])):
                a = self.assignments.get(t)
                replicas = a.partitions.get(p) if a else None
                if not replicas:
                    continue
                try:
                    old = zf.decode_partition_state(node.data, node.path) if node.exists else None
                except CorruptZnodeError as e:
                    self._say(f"skipping {node.path}: {e.reason}")
                    continue
                new = decide(t, p, tuple(replicas), old)
                if new is not None and new != old:
                    writes.append(_Write(t, p, node.exists, node.version, old, new))
            ok, pending = self._write(writes)
            done += [StateChange(w.topic, w.partition, w.old, w.new) for w in ok]
        if pending:
            self._say(f"gave up on {_plural(len(pending), 'partition state')} that kept changing under us")
        return done

    def _ops(self, w: _Write, parents: dict[str, set[str] | None], made: set[str]) -> list[Op]:
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
        parents = self._zk.children_many([zf.partitions_path(t) for t in creating]) if creating else {}
        parents = {t: (set(parents[zf.partitions_path(t)]) if parents[zf.partitions_path(t)] is not None else None)
                   for t in creating}
        check = Op("check", zf.CONTROLLER_EPOCH, version=self._epoch_version)
        ok: list[_Write] = []
        retry: list[tuple[str, int]] = []
        for i in range(0, len(writes), _CHUNK):
            chunk = writes[i:i + _CHUNK]
            made: set[str] = set()
            try:
                self._zk.multi([check] + [op for w in chunk for op in self._ops(w, parents, made)])
                ok += chunk
                continue
            except ZkOperationError as e:
                self._epoch_guard(e)
            for w in chunk:  # one lost race fails the whole multi: redo the chunk one partition at a time
                try:
                    self._zk.multi([check] + self._ops(w, parents, set()))
                    ok.append(w)
                except (ZkBadVersionError, ZkNodeExistsError) as e:
                    self._epoch_guard(e)
                    retry.append((w.topic, w.partition))
                except ZkNoNodeError:
                    pass  # the topic went away meanwhile
        return ok, retry

    def _epoch_guard(self, e: ZkOperationError) -> None:
        if isinstance(e, ZkBadVersionError) and e.path == zf.CONTROLLER_EPOCH:
            raise ControllerMovedError(f"/controller_epoch moved past {self.epoch}: another controller took over")


__all__ = [
    "ControllerEmulator", "ControllerActiveError", "ControllerMovedError", "StateChange",
    "new_leader_and_isr", "offline_leader", "initial_state", "elect_if_offline", "remove_replica_from_isr",
    "after_brokers_down", "after_brokers_up", "reconcile", "leader_shrinks_isr",
]
