"""The live connection to one configured cluster, whichever way Keel reaches it: a LiveCluster (a ZooKeeper session
whose watches keep a ClusterSnapshot current) or, for a cluster with `bootstrap` and no `zk` (KRaft), a PolledCluster
(core.kafka.poller: the brokers' Admin API read every poll_interval), opened, retried and replaced in the background.
Engine code, no UI: the dashboard holds one per cluster in `st.cache_resource` and draws banners from its phase,
error and times; its writes go through `write_session()` (core.cluster.engines picks the engine by what it returns).

* Connecting and the first full read run in a background thread (`ensure`); callers poll `phase` and
  `progress`. The connect itself is bounded by the cluster's `connect_timeout`. While the first read runs,
  `outline()` gives what it knows before the partition states (brokers, controller, topic names and partition
  counts: core.outline), for pages that draw something within 2 s whatever the size (issue 31).
* A failed first connect is retried when `ensure(retry_after=...)` is called again after that long.
* When ZooKeeper goes away after the first snapshot, the last good snapshot stays available; kazoo gives a
  session up for good after a short outage, so a fresh session is opened in the background (every
  `RETRY_SECONDS`) and swapped in once its first snapshot has loaded.
* Derived data is cached per snapshot object with `derived`: `LiveCluster.snapshot()` returns the same object
  until a watch changes something, so a refresh of an unchanged cluster recomputes nothing. The cache is shared
  by every session (one value per name and key for the current snapshot), and a value that several sessions ask
  for at once is computed once: the others wait for it.
* `view_stamp()` changes exactly when something a page draws from the connection may have changed (a new
  snapshot, the session's status, a failure, a reconnect notice): the dashboard redraws a live view only then.
* A cluster configured with both `zk` and `bootstrap` that migrates to KRaft (issue 27) is read through its brokers
  once ZooKeeper shows the KRaft controller in charge and no broker left in ZooKeeper mode, and the brokers answer
  DescribeQuorum: from dual-write on ZooKeeper is only a copy kept for a revert, and after finalization it is frozen.
  The ZooKeeper view stays open beside it (`zk_live`: the migration banner reads /migration through it) and a broker
  back in /brokers/ids (a revert) switches the reading back. When ZooKeeper cannot be reached at all (decommissioned
  after the migration) but the brokers answer as KRaft, the brokers are read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from enum import StrEnum
from typing import Any, Callable, Hashable

from core.policy.config import ClusterConfig
from core.errors import (
    ConnectStringError,
    KeelError,
    NoKafkaError,
    ZooKeeperAuthError,
    ZooKeeperUnreachableError,
)
from core.model import ClusterSnapshot, utc_now_iso
from core.outline import Outline
from core.cluster.derived_cache import Slot
from core.zk.session import ZkSession, ZkSettings
from core.zk.watcher import LiveCluster

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0  # minimum gap between background (re)connect attempts
REPLACE_AFTER_SECONDS = 2.0  # a session down this long gets a fresh one opened beside it
RESYNC_NOTICE_SECONDS = 120.0  # how long `resync_notice` reports a re-read after a reconnect
KEPT_MEMOS = ("migration", "migration_drift")  # memos that outlive a switch of reader: they are about the migration


class Phase(StrEnum):
    IDLE = "idle"
    CONNECTING = "connecting"
    LOADING = "loading"  # connected, reading the first snapshot
    READY = "ready"  # a live view exists (it may be stale: see `live.status`)
    FAILED = "failed"  # no live view; `failure` says why
    CLOSED = "closed"


class ErrorKind(StrEnum):
    UNREACHABLE = "unreachable"
    NO_KAFKA = "no_kafka"
    AUTH = "auth"
    CONFIG = "config"
    ERROR = "error"


def hhmmss(iso: str | None) -> str:
    """'2026-11-22T03:00:00Z' -> '03:00:00 UTC' (the date too when it is not today)."""
    from datetime import datetime, timezone

    if not iso:
        return "unknown"
    try:
        t = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return iso
    if t.date() == datetime.now(timezone.utc).date():
        return t.strftime("%H:%M:%S UTC")
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


class Connection:
    """The live view of one configured cluster. Thread-safe; shared by all sessions."""

    def __init__(self, cluster: ClusterConfig):
        self.cluster = cluster
        self._lock = threading.Lock()
        self.live: LiveCluster | None = None
        self.phase = Phase.IDLE
        self.failure: KeelError | None = None  # why the last (re)connect attempt failed
        self.error_kind: ErrorKind | None = None
        self.progress: tuple[str, int, int] | None = None
        self._loading: LiveCluster | None = None  # the first read in flight: its outline is what pages draw first
        self.loading_since: float | None = None  # monotonic time the first read started (pages wait a moment)
        self.attempts = 0
        self.disconnected_at: str | None = None  # when the live session last left "connected"
        self.reconnecting = False
        self._down_since: float | None = None
        self._last_attempt_end = 0.0
        self._worker: threading.Thread | None = None
        self._derived: dict[str, Slot] = {}
        self._derived_lock = threading.Lock()
        self.computed: Counter[str] = Counter()  # derived values computed, per name (tests and benches read it)
        self._memo: dict[str, dict] = {}
        self._write_admin = None  # KafkaAdmin of the writes to a cluster read through its brokers
        # a zk + bootstrap cluster read through its brokers after its migration: the ZooKeeper view kept beside
        # (None when ZooKeeper could not be reached); `_via_brokers` says the reader was switched
        self._via_brokers = False
        self._zk_side: LiveCluster | None = None
        self._last_switch_try = float("-inf")
        self.switch_note: str | None = None  # why the reader is what it is, for a banner
    # --- lifecycle -----------------------------------------------------------------------

    def ensure(self, retry_after: float = 0.0) -> None:
        """Start a background connect when none is running and one is due.

        No live view yet: connect now (or, after a failure, once `retry_after` seconds passed).
        A live view whose session has been down for a while: open a replacement session beside it.
        """
        with self._lock:
            if self.phase == Phase.CLOSED or (self._worker is not None and self._worker.is_alive()):
                return
            now = time.monotonic()
            if self.live is None:
                if self.phase == Phase.FAILED and now - self._last_attempt_end < retry_after:
                    return
                replacing = False
            else:
                if self.through_brokers:  # the poller keeps trying by itself
                    back = self._switch_back_due()
                    if back is None:
                        return
                    self._worker = threading.Thread(target=self._switch_back, args=(back,), daemon=True,
                                                    name=f"keel-switch-{self.cluster.name}")
                    self._worker.start()
                    return
                if self._switch_due(now):
                    self._last_switch_try = now
                    self._worker = threading.Thread(target=self._attempt_switch, daemon=True,
                                                    name=f"keel-switch-{self.cluster.name}")
                    self._worker.start()
                    return
                if self.live.status in ("connected", "connecting", "resyncing") or self._down_since is None:
                    return
                if now - self._down_since < REPLACE_AFTER_SECONDS:
                    return
                if now - self._last_attempt_end < max(retry_after, RETRY_SECONDS):
                    return
                replacing = True
            self.attempts += 1
            if replacing:
                self.reconnecting = True
            else:
                self.phase, self.progress = Phase.CONNECTING, None
            self._worker = threading.Thread(target=self._attempt, args=(replacing,),
                                            name=f"keel-connect-{self.cluster.name}", daemon=True)
            self._worker.start()

    def close(self) -> None:
        with self._lock:
            self.phase = Phase.CLOSED
            live, self.live = self.live, None
            worker = self._worker
        if live is not None:
            _stop_live(live)
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=self.cluster.connect_timeout + 5)
        # a worker that finished after we took `live` may have installed another one
        with self._lock:
            late, self.live = self.live, None
            side, self._zk_side = self._zk_side, None
        for view in (late, side):
            if view is not None:
                _stop_live(view)
        with self._lock:
            admin, self._write_admin = self._write_admin, None
        if admin is not None:
            admin.close()

    def _attempt(self, replacing: bool) -> None:
        if self.cluster.through_brokers:
            self._attempt_brokers()
            return
        session: ZkSession | None = None
        live: LiveCluster | None = None
        try:
            session = ZkSession.open(ZkSettings.from_cluster(self.cluster))
            live = LiveCluster(session, cluster=self.cluster.name)
            with self._lock:
                if not replacing and self.phase != Phase.CLOSED:
                    self.phase = Phase.LOADING
                    self._loading, self.loading_since = live, time.monotonic()
            live.start(progress=None if replacing else self._on_progress)
        except Exception as e:  # everything becomes a message on the page
            self._loading = None
            if live is not None:
                live.stop()
            if session is not None:
                try:
                    session.close()
                except Exception:
                    pass
            kind, failure = _describe(e, self.cluster)
            if (not replacing and kind == ErrorKind.UNREACHABLE and self.cluster.bootstrap
                    and self._read_brokers_instead(failure)):
                return
            with self._lock:
                self.failure, self.error_kind = failure, kind
                self._last_attempt_end = time.monotonic()
                self.reconnecting = False
                if not replacing and self.phase != Phase.CLOSED:
                    self.phase = Phase.FAILED
            log.warning("cluster %s: connect failed: %s", self.cluster.name, failure)
            return

        session.on_state_change(lambda state, live=live: self._on_session_state(live, state))
        with self._lock:
            if self.phase == Phase.CLOSED:
                old = live  # closed meanwhile: throw the new one away
            elif replacing and self.live is not None and self.live.status in ("connected", "resyncing"):
                old = live  # the old session came back meanwhile and re-reads by itself: keep it
                self.failure, self.error_kind, self.reconnecting = None, None, False
                self._last_attempt_end = time.monotonic()
            else:
                old, self.live = self.live, live
                if old is not None:  # a broker that went down meanwhile keeps its last registration
                    live.tree.remember(old.tree)
                if replacing and old is not None and self._down_since is not None:
                    live.record_resync(time.monotonic() - self._down_since,
                                       "reconnected to ZooKeeper with a new session")
                self.phase, self.failure, self.error_kind = Phase.READY, None, None
                self._loading = None
                self.disconnected_at = None
                self._down_since = None if session.connected else time.monotonic()
                self.reconnecting = False
                self._last_attempt_end = time.monotonic()
                with self._derived_lock:
                    self._derived.clear()
                self._memo.clear()
        if old is not None:
            _stop_live(old)
        try:  # settle the audit rows an interrupted run left pending (core.zk.reconcile)
            from core.audit.store import Store
            from core.zk.reconcile import reconcile_pending

            snap = live.snapshot()
            cluster_id = snap.cluster_id if snap is not None else None
            for r in (reconcile_pending(session, Store(), self.cluster.name, cluster_id=cluster_id)
                      if self.live is live else ()):
                log.warning("cluster %s: %s", self.cluster.name, r.note.removeprefix("note: "))
        except Exception:
            log.exception("cluster %s: could not reconcile pending actions", self.cluster.name)

    def _attempt_brokers(self) -> None:
        """A cluster without ZooKeeper (keel.toml: bootstrap, no zk): its brokers' Admin API, polled
        (core.kafka.poller). The poller retries by itself; a failed first read is retried like a failed connect."""
        from core.kafka.admin import KafkaAdmin
        from core.kafka.poller import PolledCluster

        admin = None
        try:
            admin = KafkaAdmin.for_cluster(self.cluster)
            with self._lock:
                if self.phase != Phase.CLOSED:
                    self.phase = Phase.LOADING
            live = PolledCluster(admin, cluster=self.cluster.name, interval=self.cluster.poll_interval).start()
        except Exception as e:
            if admin is not None:
                admin.close()
            kind, failure = _describe(e, self.cluster)
            with self._lock:
                self.failure, self.error_kind = failure, kind
                self._last_attempt_end = time.monotonic()
                if self.phase != Phase.CLOSED:
                    self.phase = Phase.FAILED
            log.warning("cluster %s: reading the brokers failed: %s", self.cluster.name, failure)
            return
        with self._lock:
            if self.phase == Phase.CLOSED:
                closed = True
            else:
                closed = False
                self.live = live
                self.phase, self.failure, self.error_kind = Phase.READY, None, None
                self._last_attempt_end = time.monotonic()
                with self._derived_lock:
                    self._derived.clear()
                self._memo.clear()
        if closed:
            _stop_live(live)

    # --- a migrated cluster read through its brokers (issue 27) ---------------------------------------------

    @property
    def through_brokers(self) -> bool:
        """Whether the view pages draw (and writes) go through the brokers' Admin API: a cluster without `zk`, or
        one whose migration to KRaft has moved every broker off ZooKeeper."""
        return self.cluster.through_brokers or self._via_brokers

    @property
    def zk_live(self) -> LiveCluster | None:
        """The ZooKeeper view (where /migration is read): the live view itself, or the one kept beside the brokers'
        after a switch; None for a cluster without ZooKeeper, or one whose ZooKeeper could not be reached."""
        live = self.live
        return live if isinstance(live, LiveCluster) else self._zk_side

    def _switch_due(self, now: float) -> bool:
        """Under the lock: a zk + bootstrap cluster whose ZooKeeper shows the KRaft controller in charge and no
        broker in ZooKeeper mode, not tried in the last RETRY_SECONDS."""
        live = self.live
        if (not self.cluster.bootstrap or not isinstance(live, LiveCluster) or live.status != "connected"
                or now - self._last_switch_try < RETRY_SECONDS):
            return False
        return _all_brokers_left_zookeeper(live.snapshot())

    def _switch_back_due(self) -> str | None:
        """Under the lock: why a switched reader goes back to ZooKeeper (a broker registered there again, or the
        brokers no longer answer as KRaft), else None."""
        if not self._via_brokers:
            return None
        side, live = self._zk_side, self.live
        if side is not None and side.status == "connected":
            zk_snap = side.snapshot()
            if zk_snap is not None and not _all_brokers_left_zookeeper(zk_snap):
                return "a broker registered in ZooKeeper again (a revert to ZooKeeper mode)"
        snap = None if live is None else live.snapshot()
        if side is not None and live is not None and live.status == "connected" and snap is not None \
                and not snap.is_kraft:  # a switch made without ZooKeeper has nothing to go back to
            return "the brokers no longer answer DescribeQuorum"
        return None

    def _open_brokers(self):
        """A started PolledCluster of the cluster's bootstrap whose first read says KRaft mode, else None."""
        from core.kafka.admin import KafkaAdmin
        from core.kafka.poller import PolledCluster

        admin = None
        try:
            admin = KafkaAdmin.for_cluster(self.cluster)
            polled = PolledCluster(admin, cluster=self.cluster.name, interval=self.cluster.poll_interval).start()
        except Exception as e:
            if admin is not None:
                admin.close()
            log.info("cluster %s: the brokers could not be read: %s", self.cluster.name, e)
            return None
        snap = polled.snapshot()
        if snap is None or not snap.is_kraft:
            _stop_live(polled)
            return None
        return polled

    def _install_brokers(self, polled, side: LiveCluster | None, note: str) -> bool:
        """Make `polled` the view pages read (`side`, the ZooKeeper view, kept beside); False when closed."""
        with self._lock:
            if self.phase == Phase.CLOSED:
                closed = True
            else:
                closed = False
                self.live, self._zk_side, self._via_brokers = polled, side, True
                self.switch_note = note
                self.phase, self.failure, self.error_kind = Phase.READY, None, None
                self._last_attempt_end = time.monotonic()
                self._reset_caches()
        if closed:
            _stop_live(polled)
            return False
        log.warning("cluster %s: %s", self.cluster.name, note)
        return True

    def _attempt_switch(self) -> None:
        live = self.live
        polled = self._open_brokers()
        if polled is None or not isinstance(live, LiveCluster):
            return
        self._install_brokers(polled, live, "every broker has left ZooKeeper for KRaft: the cluster is read through "
                                            "its brokers now (ZooKeeper is only a copy kept for a revert, or frozen "
                                            "after finalization)")

    def _read_brokers_instead(self, failure: KeelError) -> bool:
        """ZooKeeper unreachable on the first connect of a zk + bootstrap cluster: its brokers, when they answer
        as KRaft (ZooKeeper decommissioned after the migration)."""
        polled = self._open_brokers()
        if polled is None:
            return False
        return self._install_brokers(polled, None, f"ZooKeeper cannot be reached ({failure}) but the brokers answer "
                                                   "as a KRaft cluster: read through them")

    def _switch_back(self, why: str) -> None:
        with self._lock:
            polled, side = self.live, self._zk_side
            if self.phase == Phase.CLOSED or not self._via_brokers or side is None:
                return
            self.live, self._zk_side, self._via_brokers = side, None, False
            self.switch_note = f"read through ZooKeeper again: {why}"
            self._reset_caches()
        log.warning("cluster %s: %s", self.cluster.name, self.switch_note)
        if polled is not None:
            _stop_live(polled)

    def _reset_caches(self) -> None:
        """Under the lock: what was derived from the old view goes (the migration's own memos stay)."""
        with self._derived_lock:
            self._derived.clear()
        for name in [n for n in self._memo if n not in KEPT_MEMOS]:
            del self._memo[name]

    def _on_progress(self, stage: str, done: int, total: int) -> None:
        self.progress = (stage, done, total)

    def _on_session_state(self, live: LiveCluster, state: str) -> None:
        if live is not self.live:
            return
        if state == "connected":
            self._down_since = None
        elif self._down_since is None:
            self._down_since = time.monotonic()
            self.disconnected_at = utc_now_iso()

    @property
    def error(self) -> str | None:
        """The last failure's message, for display."""
        return None if self.failure is None else str(self.failure)

    # --- reading -------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        live = self.live
        return live is not None and live.status == "connected"

    def snapshot(self) -> ClusterSnapshot | None:
        live = self.live
        return None if live is None else live.snapshot()

    def outline(self) -> Outline | None:
        """While the first snapshot is read (no live view yet), what is known already: brokers, controller, topic
        names, then partition counts, with the read's progress (core.outline). None once a snapshot exists, before
        the topic names are read, and for a cluster read through its brokers (one Admin API round gives it all)."""
        loading = self._loading
        if loading is None or self.live is not None or self.phase != Phase.LOADING:
            return None
        return loading.outline(self.progress)

    def derived(self, name: str, snapshot: ClusterSnapshot, fn: Callable[[ClusterSnapshot], Any], *,
                key: Any = None) -> Any:
        """fn(snapshot), computed once per snapshot object (i.e. once per change of the cluster) and `key`, for
        every session: the value is shared, and a session asking while another computes it waits for that value.

        Values of older snapshots are dropped when a newer one is asked for (the old snapshots are not held on to);
        per name, the DERIVED_KEYS most recently used keys are kept. An exception is raised to every caller
        waiting for it and not cached.
        """
        with self._derived_lock:
            slot = self._derived.get(name)
            if slot is None or slot.snapshot is not snapshot:
                slot = self._derived[name] = Slot(snapshot)
            cell = slot.take(key)
        with cell.lock:  # one computes, the others wait for its value
            if not cell.done:
                cell.value = fn(snapshot)
                cell.done = True
                with self._derived_lock:
                    self.computed[name] += 1
            return cell.value

    def memo(self, name: str) -> dict:
        """A dict that lives as long as the live view: for caches finer than one snapshot (e.g. per topic)."""
        return self._memo.setdefault(name, {})

    def view_stamp(self) -> Hashable:
        """What a drawn view of this connection depends on, cheaply: equal stamps mean nothing to redraw."""
        live = self.live
        if live is None:  # while the first read runs, its progress: the outline and its progress bar redraw
            return (self.phase, self.error_kind, self.error, self.attempts, self.progress)
        return (id(live), live.generation, live.status, live.error, self.phase, self.error, self.reconnecting,
                self.disconnected_at, self.resync_notice() is not None)

    def write_session(self):
        """What the action pages write through (core.cluster.engines picks the engine by it): the live view's
        ZooKeeper session, or for a cluster read through its brokers a KafkaAdmin of this connection's own (the
        poller keeps its client to itself). The engines re-read live state through it before writing. Refused
        unless the view is connected."""
        if self.through_brokers:
            return self._brokers_for_writes()
        live = self.live
        if live is not None and live.status == "resyncing":
            raise ZooKeeperUnreachableError(
                f"the live view of cluster {self.cluster.name} is re-reading ZooKeeper after a reconnect; "
                "nothing was written", hint="try again in a few seconds, once the sidebar shows it as live")
        if live is None or live.status != "connected":
            raise ZooKeeperUnreachableError(
                f"not connected to ZooKeeper for cluster {self.cluster.name} ({self.cluster.zk}); nothing was written",
                hint="wait until the sidebar shows the connection as live, then try again")
        return live.session

    def _brokers_for_writes(self):
        from core.kafka.admin import KafkaAdmin, KafkaUnreachableError

        live = self.live
        if live is None or live.status != "connected":
            raise KafkaUnreachableError(
                f"the brokers of cluster {self.cluster.name} ({self.cluster.bootstrap}) did not answer the last "
                "read; nothing was written", hint="wait until the sidebar shows the view as live, then try again")
        with self._lock:
            if self._write_admin is None:
                self._write_admin = KafkaAdmin.for_cluster(self.cluster)
            return self._write_admin

    def await_change(self, predicate: Callable[[ClusterSnapshot], bool], timeout: float = 5.0) -> bool:
        """Wait until the live view shows what a write just did (its watches fire, or the brokers are read again
        at once); False on timeout."""
        live = self.live
        if live is None:
            return False
        if hasattr(live, "poll_now"):
            live.poll_now()
        try:
            live.wait_for(predicate, timeout=timeout)
            return True
        except TimeoutError:
            return False

    def stale_since(self) -> str | None:
        """ISO time the shown snapshot was last known good, when the session is not connected."""
        live = self.live
        if live is None or live.status == "connected":
            return None
        return self.disconnected_at or live.last_good_at

    def resync_notice(self) -> str | None:
        """'Reconnected to ZooKeeper after 4 s: re-read the cluster at 03:00:05 UTC.' for a while after the
        live view re-read everything on a reconnect; None otherwise."""
        live = self.live
        if live is None or live.status != "connected" or not live.resync_note or live.resynced_monotonic is None:
            return None
        if time.monotonic() - live.resynced_monotonic > RESYNC_NOTICE_SECONDS:
            return None
        note = live.resync_note[0].upper() + live.resync_note[1:]
        return f"{note} at {hhmmss(live.resynced_at)}."


def _stop_live(live) -> None:
    """Stop a live view and close what it reads through (a ZooKeeper session, or the poller's Admin client)."""
    try:
        live.stop()
    finally:
        try:
            (live.session if isinstance(live, LiveCluster) else live.admin).close()
        except Exception:
            pass


def _all_brokers_left_zookeeper(snap: ClusterSnapshot | None) -> bool:
    """ZooKeeper shows a KRaft controller in charge (/controller with kraftControllerEpoch) and no broker registered
    in /brokers/ids: every broker runs in KRaft mode (dual-write, or finalized)."""
    return (snap is not None and snap.controller is not None and snap.controller.is_kraft
            and not snap.alive_broker_ids)


def _describe(e: Exception, cluster: ClusterConfig) -> tuple[ErrorKind, KeelError]:
    """What kind of failure `e` is, as a KeelError (anything else is wrapped, with its type named)."""
    if isinstance(e, NoKafkaError):
        return ErrorKind.NO_KAFKA, e
    from core.kafka.admin import KafkaUnreachableError

    if isinstance(e, (ZooKeeperUnreachableError, KafkaUnreachableError)):
        return ErrorKind.UNREACHABLE, e
    if isinstance(e, ZooKeeperAuthError):
        return ErrorKind.AUTH, e
    if isinstance(e, ConnectStringError):
        return ErrorKind.CONFIG, ConnectStringError(f"clusters.{cluster.name}.zk: {e}")
    if isinstance(e, KeelError):
        return ErrorKind.ERROR, e
    return ErrorKind.ERROR, KeelError(f"{type(e).__name__}: {e}")


