"""Controller emulator: plays Kafka's ZooKeeper-mode controller (and the broker processes) over a real ZooKeeper.

This module is the event loop: it watches ZooKeeper, queues every event (callbacks only enqueue) and reacts
in one worker thread, dispatching each event to the module that owns it, all of them sharing one
ControllerContext (sandbox.emulator.context: the session, what the controller knows, the conditional writes,
each multi guarded by a check on /controller_epoch as Kafka's controller does). Its handler table is the map:

- /keel-sandbox/brokers (intents): broker "processes", ZooKeeper sessions of their own: a broker dying is its
  session closing, exactly how a registration disappears (sandbox.emulator.broker_sessions);
- /brokers/topics: new topics and partitions get their first leader and ISR (sandbox.emulator.topic_changes);
- /brokers/ids: brokers failing and starting, leaders moving off dead brokers, the controller moving with
  them (sandbox.emulator.broker_changes, sandbox.emulator.controllership);
- /admin/reassign_partitions (acted on when created; sandbox.emulator.admin_reassign);
- /admin/delete_topics/<t> (sandbox.emulator.admin_deletion);
- /admin/preferred_replica_election (acted on when created) and, optionally, the auto leader rebalance every
  leader.imbalance.check.interval.seconds (sandbox.emulator.admin_election).

Each handler module reads, calls pure decisions and writes conditionally; the decisions follow the Scala
source and do no I/O: sandbox.emulator.leadership (offline elections, ISR changes, new partitions),
sandbox.emulator.reassign, sandbox.emulator.election and sandbox.emulator.deletion.

ZooKeeper outages (a restart, a stall): kazoo re-registers no watch when it reconnects, so after every
reconnect the emulator re-reads what it watches and re-arms each watch (intents, registrations, topics,
/admin nodes), reacting to whatever changed meanwhile. When its own session expired, /controller and its
status node went with it: it claims them again (a controller failover: epoch + 1) unless another controller
took over, in which case it resigns. A broker "process" whose session expired registers again on its new
session, as a Kafka broker does.
"""

from __future__ import annotations

import queue
import threading
import time
from functools import partial
from typing import Callable, Mapping

from core import zkformat as zf
from core.errors import KeelError, ValidationError
from sandbox.emulator import admin_deletion, admin_election, admin_reassign, broker_changes, broker_sessions
from sandbox.emulator import election as el
from sandbox.emulator import reassign as ra
from sandbox.emulator import topic_changes as topics
from sandbox.emulator.context import ControllerContext, ControllerMovedError, StateChange, ids, log, plural
from sandbox.emulator.controllership import ControllerActiveError, claim, publish, reclaim, take_over
from sandbox.emulator.leadership import (  # re-exported: they were defined here, and tests use them from here
    after_brokers_down,
    after_brokers_up,
    elect_if_offline,
    initial_state,
    leader_shrinks_isr,
    new_leader_and_isr,
    offline_leader,
    reconcile,
    remove_replica_from_isr,
)
from sandbox.emulator.znodes import INTENTS
from core.zk.session import ZkSession

_STOP = ("", "stop")
_RESYNC = "<resync>"  # queued path: the emulator's session is back after an outage
_RESYNC_RETRY_SECONDS = 2.0


class _Shared:
    """An attribute of the emulator kept in its ControllerContext (read and written through)."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(obj.ctx, self.field)

    def __set__(self, obj, value) -> None:
        setattr(obj.ctx, self.field, value)


class ControllerEmulator:
    """`with ControllerEmulator(session) as emu: ...` or start()/stop(). The session only lends its settings:
    the emulator opens its own session (for /controller, its watches and its writes) and one per broker.

    What it did is readable while it runs: `reactions` (one line per reaction), `last_election` (the
    outcome of every partition of the last /admin/preferred_replica_election), `last_rebalance` (brokers
    above the imbalance threshold at the last auto rebalance check), `reassignments()` (partitions in flight) and
    `deleting` (topics queued for deletion)."""

    # What the controller knows, kept in the shared context (see sandbox.emulator.context).
    live = _Shared("live")
    assignments = _Shared("assignments")
    epoch = _Shared("epoch")
    controller_id = _Shared("controller_id")
    reactions = _Shared("reactions")
    handled = _Shared("handled")  # event batches processed
    deleting = _Shared("deleting")
    last_election = _Shared("last_election")
    last_rebalance = _Shared("last_rebalance")
    delete_topic_enable = _Shared("delete_topic_enable")
    auto_leader_rebalance = _Shared("auto_leader_rebalance")
    rebalance_interval = _Shared("rebalance_interval")
    imbalance_percentage = _Shared("imbalance_percentage")
    reassign_base_delay = _Shared("reassign_base_delay")
    time_scale = _Shared("time_scale")
    partition_sizes = _Shared("partition_sizes")
    default_partition_bytes = _Shared("default_partition_bytes")
    _zk = _Shared("zk")
    _brokers = _Shared("brokers")   # broker id -> the session holding its registration
    _stopped = _Shared("stopped")

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
        self.ctx = ctx = ControllerContext(
            settings=session.settings, where=str(session.target), bump=controller_epoch_bump, on_reaction=on_reaction,
            delete_topic_enable=delete_topic_enable, auto_leader_rebalance=auto_leader_rebalance,
            rebalance_interval=float(leader_imbalance_check_interval_seconds),
            imbalance_percentage=float(leader_imbalance_per_broker_percentage),
            reassign_base_delay=float(reassign_base_delay), time_scale=float(time_scale),
            partition_sizes=dict(partition_sizes or {}), default_partition_bytes=int(default_partition_bytes))
        self.failed: str | None = None
        self.resyncs = 0  # re-reads after a reconnect
        self._thread: threading.Thread | None = None
        self._started = False
        self._busy = False
        # One callable object for every watch: ZkSession keeps one kazoo wrapper per callback.
        ctx.watch = self._enqueue
        # Dispatch table, in processing order within a batch: (path, children?, handler).
        self._handlers: list[tuple[str, bool, Callable[[str | None], None]]] = [
            (INTENTS, False, partial(broker_sessions.on_intent_list, ctx)),
            (INTENTS, True, partial(broker_sessions.on_intent, ctx)),
            (zf.TOPICS, False, partial(topics.on_topic_list, ctx)),
            (zf.TOPICS, True, partial(topics.on_topic, ctx)),
            (zf.BROKER_IDS, False, partial(broker_changes.on_broker_ids, ctx)),
            (zf.REASSIGN, False, partial(admin_reassign.on_reassign_node, ctx)),
            (zf.DELETE_TOPICS, False, partial(admin_deletion.on_delete_topics, ctx)),
            (zf.PREFERRED_ELECTION, False, partial(admin_election.on_election_node, ctx)),
        ]
        self._timer_handlers: dict[str, Callable[[list[tuple[int, object]]], None]] = {
            "copy": partial(admin_reassign.on_copies_done, ctx),
            "rebalance": partial(admin_election.on_rebalance_timer, ctx),
            "resync": lambda _items: self._resync(),
        }

    def reassignments(self) -> dict[tuple[str, int], ra.ReplicaAssignment]:
        """Partitions being reassigned (adding or removing replicas), as last read or written."""
        return self.ctx.reassignments()

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
        ctx = self.ctx
        ctx.zk = ZkSession.open(ctx.settings)
        try:
            claim(ctx)
            ctx.session_id = ctx.zk.session_id
            ctx.zk.on_state_change(self._on_session_state)
            broker_sessions.on_intent_list(ctx, None)  # broker processes come up
            ctx.owners = broker_changes.read_registrations(ctx)
            ctx.live = set(ctx.owners)
            take_over(ctx)
            topics.load_topics(ctx)
            changes = ctx.update(ctx.all_keys(), ctx.decider(
                lambda r, s, unclean: reconcile(r, s, ctx.live, ctx.epoch, unclean=unclean)))
            ctx.say(f"controller emulator started on {ctx.where}: live {ids(ctx.live) if ctx.live else 'none'}, "
                    f"controller {ctx.controller_id}, epoch {ctx.epoch}, "
                    f"{len(ctx.assignments)} topics, {plural(len(changes), 'partition state')} updated")
            # onControllerFailover: pending reassignments (the /admin node, then the ones recorded in topic
            # nodes), topic deletions, pending preferred elections, then the auto rebalance schedule.
            handled: set[tuple[str, int]] = set()
            self._call(zf.REASSIGN, lambda: handled.update(
                admin_reassign.on_reassign_node(ctx, None, initial=True) or ()))
            self._call("resuming reassignments", lambda: admin_reassign.resume_reassignments(ctx, skip=handled))
            self._call(zf.DELETE_TOPICS, admin_deletion.on_delete_topics, ctx, None)
            self._call(zf.PREFERRED_ELECTION, lambda: admin_election.on_election_node(ctx, None, initial=True))
            if ctx.auto_leader_rebalance:
                ctx.schedule(min(5.0, ctx.rebalance_interval), "rebalance", None)
            publish(ctx)
        except BaseException:
            self._close_sessions()
            raise
        self._thread = threading.Thread(target=self._run, name="keel-controller-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Like a whole-cluster shutdown: broker sessions close (registrations vanish), /controller goes."""
        with self.ctx.lock:
            if self.ctx.stopped:
                return
            self.ctx.stopped = True
        self.ctx.events.put(_STOP)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
        self._close_sessions()

    def _close_sessions(self) -> None:
        for session in list(self.ctx.brokers.values()):
            try:
                session.close()
            except Exception:  # closing must go on for the others
                log.exception("closing a broker session failed")
        self.ctx.brokers.clear()
        if self.ctx.zk is not None:
            try:
                self.ctx.zk.close()
            except Exception:
                log.exception("closing the emulator session failed")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once no event is queued or being handled (events still in flight from ZooKeeper are not seen)."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            quiet = quiet + 1 if self.ctx.events.empty() and not self._busy else 0
            if quiet >= 3:
                return True
            time.sleep(0.03)
        return False

    # --- riding through ZooKeeper outages ---------------------------------------------------------

    def _resync(self) -> None:
        """After a reconnect: re-read everything watched and re-arm every watch (kazoo re-registers none, so
        without this the emulator would never hear of a change again), reacting to what changed meanwhile.
        After an expired session it is a controller failover: the status node and /controller are claimed
        again (epoch + 1), every partition reconciled and pending /admin requests resumed."""
        ctx = self.ctx
        if ctx.stopped or not ctx.zk.connected:
            return  # the next reconnect queues another
        down, ctx.down_since = ctx.down_since, None
        expired, ctx.expired = ctx.expired, False
        gap = time.monotonic() - down if down is not None else 0.0
        try:
            if expired:
                reclaim(ctx)
            # broker processes meant to be up and not registered register again
            broker_sessions.on_intent_list(ctx, None)
            broker_changes.on_broker_ids(ctx, None)  # brokers gone or back meanwhile; /controller if it has to move
            topics.resync_topics(ctx)
            # A fixed point for states this controller left behind; after an outage it also covers reactions
            # that failed while ZooKeeper was away (onControllerFailover does the same after an expiry).
            ctx.update(ctx.all_keys(), ctx.decider(
                lambda r, s, unclean: reconcile(r, s, ctx.live, ctx.epoch, unclean=unclean)))
            for path in (zf.REASSIGN, zf.PREFERRED_ELECTION):
                if not ctx.seen[path]:
                    ctx.created[path] = True  # it may have been created while nothing watched it
            handled = admin_reassign.on_reassign_node(ctx, None, initial=expired) or set()
            if expired:
                admin_reassign.resume_reassignments(ctx, skip=handled)
            admin_deletion.on_delete_topics(ctx, None)
            admin_election.on_election_node(ctx, None, initial=expired)
        except ControllerMovedError:
            raise
        except BaseException:
            ctx.expired = ctx.expired or expired
            if ctx.down_since is None:
                ctx.down_since = down
            if ctx.zk.connected and not ctx.stopped:
                ctx.schedule(_RESYNC_RETRY_SECONDS, "resync", None)
            raise
        self.resyncs += 1
        what = (f"ZooKeeper session expired; new session after {gap:.0f} s: claimed /controller again "
                f"(controller {ctx.controller_id}, epoch {ctx.epoch})" if expired
                else f"reconnected to ZooKeeper after {gap:.0f} s")
        ctx.say(f"{what}: re-read the cluster and re-armed every watch; live "
                f"{ids(ctx.live) if ctx.live else 'none'}, {len(ctx.assignments)} topics")

    # --- events ----------------------------------------------------------------------------

    def _enqueue(self, path: str, kind: str) -> None:
        if kind == "none":  # session events come through on_state_change
            return
        if kind == "created" and path in self.ctx.created:
            self.ctx.created[path] = True  # before the put: the worker must see it with the event
        self.ctx.events.put((path, kind))

    def _on_session_state(self, state: str) -> None:
        """Ride through ZooKeeper outages: every reconnect queues a re-read (see _resync)."""
        ctx = self.ctx
        if ctx.stopped:  # closing our own session in stop() reports "lost" too
            return
        if state in ("suspended", "lost"):
            if ctx.down_since is None:
                ctx.down_since = time.monotonic()
            if state == "lost":
                ctx.expired = True
        elif state == "connected" and (ctx.down_since is not None or ctx.expired):
            ctx.events.put((_RESYNC, "connected"))

    def _route(self, path: str) -> tuple[int, str | None] | None:
        parent, _, name = path.rpartition("/")
        for i, (base, children, _fn) in enumerate(self._handlers):
            if (not children and path == base) or (children and parent == base and name):
                return i, (name if children else None)
        return None

    def _run(self) -> None:
        ctx = self.ctx
        while True:
            try:
                batch = [ctx.events.get(timeout=ctx.timer_timeout())]
            except queue.Empty:
                batch = []
            while True:
                try:
                    batch.append(ctx.events.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch or ctx.stopped:
                return
            due = ctx.due_timers()
            if not batch and not due:
                continue
            self._busy = True
            try:
                jobs = sorted({r for r in map(self._route, (p for p, _ in batch)) if r is not None},
                              key=lambda r: (r[0], r[1] or ""))
                calls: list[tuple[str, Callable, tuple]] = []
                if any(p == _RESYNC for p, _ in batch):
                    calls.append(("the re-read after a reconnect", self._resync, ()))
                calls += [(f"the new session of broker {b}", broker_sessions.reregister, (ctx, int(b)))
                          for b in sorted({k for p, k in batch if p == broker_sessions.BROKER_SESSION}, key=int)]
                calls += [
                    (self._handlers[i][0] + ("/" + arg if arg else ""), self._handlers[i][2], (arg,)) for i, arg in jobs]
                calls += [(f"timer {kind}", self._timer_handlers[kind], (items,)) for kind, items in due.items()]
                for label, fn, args in calls:
                    try:
                        self._call(label, fn, *args)
                    except ControllerMovedError as e:
                        self.failed = str(e)
                        ctx.say(f"resigning: {e}")
                        return
                if batch:
                    ctx.handled += 1
                publish(ctx)
            finally:
                self._busy = False

    def _call(self, label: str, fn: Callable, *args) -> None:
        """Run one handler; the emulator must outlive one bad event (ControllerMovedError ends it)."""
        try:
            fn(*args)
        except ControllerMovedError:
            raise
        except KeelError as e:
            self.ctx.say(f"error handling {label}: {e}")
        except Exception as e:
            log.exception("handler failed")
            self.ctx.say(f"error handling {label}: {type(e).__name__}: {e}")


__all__ = [
    "ControllerEmulator", "ControllerActiveError", "ControllerMovedError", "StateChange",
    "new_leader_and_isr", "offline_leader", "initial_state", "elect_if_offline", "remove_replica_from_isr",
    "after_brokers_down", "after_brokers_up", "reconcile", "leader_shrinks_isr",
]
