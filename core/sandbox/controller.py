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
"""

from __future__ import annotations

import collections
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Collection, Iterable, Sequence

from core import zkformat as zf
from core.errors import (
    BusyError,
    CorruptZnodeError,
    KeelError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkOperationError,
)
from core.model import NO_LEADER, PartitionState
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
                     live: Collection[int], controller_epoch: int, *, unclean: bool = False) -> PartitionState | None:
    """`onBrokerStartup` for one partition, then the leader's ISR expansion once the broker caught up.

    A new partition is initialised; an offline one elects (leader epoch + 1); where the leader is alive the
    returning replicas are appended to the ISR with the leader epoch unchanged (the leader's own change).
    The returning broker leads nothing it did not have to: preferred leadership needs an election.
    """
    if state is None:
        return initial_state(replicas, live, controller_epoch)
    new = elect_if_offline(replicas, state, live, controller_epoch, unclean=unclean)
    if new.leader in live:
        joining = tuple(r for r in replicas if r in new_brokers and r in live and r not in new.isr)
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
_CHUNK = 200  # state writes per multi
_RETRIES = 5


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _ids(ids: Iterable[int]) -> str:
    ids = sorted(ids)
    return f"broker{'' if len(ids) == 1 else 's'} {', '.join(map(str, ids))}"


class ControllerEmulator:
    """`with ControllerEmulator(session) as emu: ...` or start()/stop(). The session only lends its settings:
    the emulator opens its own session (for /controller, its watches and its writes) and one per broker."""

    def __init__(self, session: ZkSession, *, controller_epoch_bump: bool = True,
                 on_reaction: Callable[[str], None] | None = None):
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
        # One callable object for every watch: ZkSession keeps one kazoo wrapper per callback.
        self._watch = self._enqueue
        # Dispatch table, in processing order within a batch: (path, children?, handler). Later issues add
        # REASSIGN, PREFERRED_ELECTION and DELETE_TOPICS here, and a watch on them in start().
        self._handlers: list[tuple[str, bool, Callable[[str | None], None]]] = [
            (INTENTS, False, self._on_intent_list),
            (INTENTS, True, self._on_intent),
            (zf.TOPICS, False, self._on_topic_list),
            (zf.TOPICS, True, self._on_topic),
            (zf.BROKER_IDS, False, self._on_broker_ids),
        ]

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

    # --- events ----------------------------------------------------------------------------

    def _enqueue(self, path: str, kind: str) -> None:
        if kind != "none":  # session events come through on_state_change
            self._queue.put((path, kind))

    def _on_session_state(self, state: str) -> None:
        if state == "lost" and not self._stopped:  # closing our own session in stop() reports "lost" too
            self.failed = "the emulator's ZooKeeper session expired: its /controller and watches are gone"
            self._queue.put(_STOP)

    def _route(self, path: str) -> tuple[int, str | None] | None:
        parent, _, name = path.rpartition("/")
        for i, (base, children, _fn) in enumerate(self._handlers):
            if (not children and path == base) or (children and parent == base and name):
                return i, (name if children else None)
        return None

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch or self._stopped:
                return
            self._busy = True
            try:
                jobs = sorted({r for r in map(self._route, (p for p, _ in batch)) if r is not None},
                              key=lambda r: (r[0], r[1] or ""))
                for i, arg in jobs:
                    try:
                        self._handlers[i][2](arg)
                    except ControllerMovedError as e:
                        self.failed = str(e)
                        self._say(f"resigning: {e}")
                        return
                    except KeelError as e:
                        self._say(f"error handling {self._handlers[i][0]}{'/' + arg if arg else ''}: {e}")
                    except Exception as e:  # the emulator must outlive one bad event
                        log.exception("handler failed")
                        self._say(f"error handling {self._handlers[i][0]}: {type(e).__name__}: {e}")
                self.handled += 1
                self._publish()
            finally:
                self._busy = False

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

    def _register(self, bid: int, registration: str) -> None:
        old = self._brokers.pop(bid, None)
        if old is not None:
            old.close()
        data = registration.encode()
        try:  # a fresh timestamp, as a starting broker writes one
            reg = zf.decode_broker(bid, data)
            data = zf.encode_broker(reg.endpoints, version=reg.version, rack=reg.rack, jmx_port=reg.jmx_port,
                                    timestamp_ms=int(time.time() * 1000),
                                    listener_security_protocol_map=reg.listener_security_protocol_map or None,
                                    features=reg.features)
        except (CorruptZnodeError, ValueError):
            pass
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
        self._say(f"broker {bid} started: registered /brokers/ids/{bid}")

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

    def _brokers_down(self, dead: set[int], live: set[int]) -> None:
        keys = [(t, p) for t, a in self.assignments.items() for p, r in a.partitions.items() if not dead.isdisjoint(r)]
        changes = self._update(keys, self._decider(
            lambda r, s, unclean: after_brokers_down(r, s, dead, live, self.epoch, unclean=unclean), live))
        moved = sum(1 for c in changes if c.old and c.old.leader in dead and c.new.leader in live)
        offline = sum(1 for c in changes if c.new.leader == NO_LEADER and c.old and c.old.leader != NO_LEADER)
        left = sum(1 for c in changes if c.old for d in dead if d in c.old.isr and d not in c.new.isr)
        self._say(f"{_ids(dead)} down: {_plural(moved, 'leader')} moved, {_plural(offline, 'partition')} offline, "
                  f"left {_plural(left, 'ISR')}")

    def _brokers_up(self, new: set[int]) -> None:
        keys = [(t, p) for t, a in self.assignments.items() for p, r in a.partitions.items() if not new.isdisjoint(r)]
        live = set(self.live)
        changes = self._update(keys, self._decider(
            lambda r, s, unclean: after_brokers_up(r, s, new, live, self.epoch, unclean=unclean)))
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
            if added:
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
        def decide(topic: str, _p: int, replicas: tuple[int, ...], state: PartitionState | None):
            alive = self.live if live is None else live
            new = fn(replicas, state, False)
            result = new or state
            if (result is not None and result.leader not in alive and any(r in alive for r in replicas)
                    and self._unclean(topic)):
                new = fn(replicas, state, True)
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
