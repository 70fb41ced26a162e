"""Keep a cluster snapshot live: one-shot ZooKeeper watches, re-reading only what changed.

Every znode the reader loads carries a watch. When one fires, a single worker thread re-reads
that znode (setting the next watch) and updates the shared ClusterTree: a leader change costs one
read, a new topic costs its own nodes.

After ANY reconnect the whole tree is read again (every watch re-armed), not only after the session
expired: kazoo (2.11) sends no SetWatches when it resumes a session, the server dropped the watches
with the old connection, and kazoo clears its own watcher tables when the connection is lost (firing
each watcher once with a path-less "none" event). A watch armed before a ZooKeeper restart or stall
would never fire again. While it re-reads, the status is "resyncing"; `resync_note` then says how
long the connection was down and that the view was re-read.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable

from core import zkformat as zf
from core.errors import KeelError
from core.model import ClusterSnapshot, Controller, utc_now_iso
from core.outline import Outline
from core.zk.reader import Progress, _ids, load_tree
from core.zk.session import ZkSession
from core.zk.tree import ClusterTree

log = logging.getLogger(__name__)

_RESYNC = ("<resync>", "none")
_STOP = ("<stop>", "none")
RESYNC_RETRY_SECONDS = 2.0  # a re-read that failed while connected is tried again after this long


class LiveCluster:
    """A ClusterTree kept current by watches. Thread-safe reads via `snapshot()`."""

    def __init__(self, session: ZkSession, cluster: str = ""):
        self.session = session
        self.cluster = cluster
        self.tree = ClusterTree()
        self.status = "connecting"  # connected | resyncing | suspended | lost | connecting | stopped
        self.error: str | None = None
        self.last_good_at: str | None = None
        # Reconnects: when the connection went (monotonic), how many full re-reads were asked for and done,
        # and what the last one found ("reconnected to ZooKeeper after 4 s: re-read the cluster").
        self.down_since: float | None = None
        self.resyncs = 0
        self.resync_note: str | None = None
        self.resynced_at: str | None = None
        self.resynced_monotonic: float | None = None
        self._wanted = 0  # re-reads asked for (one per reconnect)
        self._done = 0  # the value of _wanted the last completed re-read started from
        self._gap = 0.0
        self._expired = False
        self._state_lock = threading.Lock()
        self._events: queue.Queue[tuple[str, str]] = queue.Queue()
        self._changed = threading.Condition()
        self._lost = False
        self._thread: threading.Thread | None = None
        # the first read's outline (issue 31): topic names and, once read, partitions per topic; None after it
        self._outline: tuple[list[str], dict[str, int] | None] | None = None
        session.on_state_change(self._on_state)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, progress: Progress | None = None) -> "LiveCluster":
        """Initial load (raises on failure), then watch in a background thread. While it reads, `outline()`
        says what is known already."""
        load_tree(self.session, self.tree, watch=self._on_event, progress=progress, outline=self._set_outline)
        self._outline = None
        with self._state_lock:
            if self._wanted > self._done:  # the connection dropped and came back during the load
                self.status = "resyncing"
            elif self.session.connected:
                self.status = "connected"
            else:
                self.status = "suspended"
                if self.down_since is None:
                    self.down_since = time.monotonic()
        self.last_good_at = utc_now_iso()
        self._thread = threading.Thread(target=self._run, name=f"keel-watch-{self.cluster}", daemon=True)
        self._thread.start()
        return self

    def _set_outline(self, topics: list[str], partitions: dict[str, int] | None) -> None:
        self._outline = (topics, partitions)  # one assignment: readers see the old pair or the new one

    def outline(self, progress: tuple[str, int, int] | None = None) -> Outline | None:
        """What the first read has learnt so far (brokers, controller, topic names, partition counts), before the
        states are read; None before the topic names are known and once the read is over."""
        known = self._outline
        if known is None:
            return None
        t = self.tree
        with t.lock:
            brokers = tuple(t.brokers[b] for b in sorted(t.brokers))
            controller = None if t.controller_broker is None and t.controller_epoch is None else Controller(
                t.controller_broker, t.controller_epoch, t.kraft_controller_epoch)
        topics, partitions = known
        return Outline(self.cluster, brokers, controller, tuple(topics), partitions, progress)

    def stop(self) -> None:
        self.status = "stopped"
        self._events.put(_STOP)
        if self._thread:
            self._thread.join(timeout=5)

    def snapshot(self) -> ClusterSnapshot:
        return self.tree.build(cluster=self.cluster, source=str(self.session.target))

    @property
    def generation(self) -> int:
        return self.tree.generation

    def wait_for(self, predicate: Callable[[ClusterSnapshot], bool], timeout: float = 10.0) -> ClusterSnapshot:
        """Block until predicate(snapshot) holds; raises TimeoutError with the last snapshot otherwise."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                snap = self.snapshot()
                if predicate(snap):
                    return snap
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"condition not reached within {timeout} s")
                self._changed.wait(min(left, 0.5))

    # --- events ----------------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        with self._state_lock:
            if self.status == "stopped":
                return
            if state == "connected":
                if self.down_since is not None or self._lost:
                    # Every watch is gone (see the module docstring): read everything again.
                    self._gap = time.monotonic() - self.down_since if self.down_since is not None else 0.0
                    self._expired = self._expired or self._lost
                    self.down_since, self._lost = None, False
                    self._wanted += 1
                    self.status, self.error = "resyncing", None
                    self._events.put(_RESYNC)
                elif self._wanted <= self._done:
                    self.status, self.error = "connected", None
            elif state == "suspended":
                if self.down_since is None:
                    self.down_since = time.monotonic()
                self.status, self.error = "suspended", "connection to ZooKeeper lost; retrying"
            elif state == "lost":
                if self.down_since is None:
                    self.down_since = time.monotonic()
                self._lost = True
                self.status, self.error = "lost", "ZooKeeper session expired; reloading when it reconnects"
        self._notify()

    def _on_event(self, path: str, kind: str) -> None:
        if kind == "none":  # connection events reach us through _on_state; kazoo also sends one per watch
            return
        self._events.put((path, kind))

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            path, kind = self._events.get()
            if (path, kind) == _STOP:
                return
            if (path, kind) == _RESYNC:
                self._resync()
                self._notify()
                continue
            try:
                if kind != "none":
                    self._handle(path)
                with self._state_lock:
                    if self.session.connected and not self._lost and self._wanted <= self._done:
                        self.status, self.error = "connected", None
                        self.last_good_at = utc_now_iso()
            except KeelError as e:
                self.error = str(e)
                log.warning("watch update for %s failed: %s", path, e)
            except Exception as e:  # keep watching whatever one event did
                self.error = f"{type(e).__name__}: {e}"
                log.exception("watch update for %s failed", path)
            self._notify()

    def _resync(self) -> None:
        """Re-read the whole tree after a reconnect (re-arming every watch), then swap it in."""
        with self._state_lock:
            wanted = self._wanted
            if wanted <= self._done or self.status == "stopped":
                return  # coalesced: an earlier re-read already started after this reconnect
            gap, expired = self._gap, self._expired
        try:
            self._reload()
        except Exception as e:  # ZooKeeper went again (its reconnect asks anew) or refused: try again
            message = str(e) if isinstance(e, KeelError) else f"{type(e).__name__}: {e}"
            log.warning("re-reading the cluster after a reconnect failed: %s", message)
            with self._state_lock:
                if self.status == "resyncing":
                    self.error = f"re-reading the cluster after a reconnect failed: {message}; retrying"
            if self.session.connected:
                retry = threading.Timer(RESYNC_RETRY_SECONDS, self._events.put, args=(_RESYNC,))
                retry.daemon = True
                retry.start()
            return
        with self._state_lock:
            self._done = wanted
            self.record_resync(gap, "ZooKeeper session expired; reconnected with a new session" if expired
                               else "reconnected to ZooKeeper")
            if self._wanted <= self._done:
                self._expired = False
                if self.session.connected and self.status != "stopped":
                    self.status, self.error = "connected", None
                    self.last_good_at = self.resynced_at
        log.info("cluster %s: %s", self.cluster, self.resync_note)

    def record_resync(self, gap: float, how: str = "reconnected to ZooKeeper") -> None:
        """Note that the whole tree was (re-)read after ZooKeeper was unreachable for `gap` seconds:
        resync_note = "<how> after <gap> s: re-read the cluster"."""
        self.resyncs += 1
        self.resynced_at, self.resynced_monotonic = utc_now_iso(), time.monotonic()
        self.resync_note = f"{how} after {gap:.0f} s: re-read the cluster"

    def _reload(self) -> None:
        old = self.tree
        fresh = ClusterTree()
        load_tree(self.session, fresh, watch=self._on_event)
        fresh.remember(old)  # a broker that went down meanwhile keeps its last registration (rack, endpoints)
        with fresh.lock:  # generations only grow: callers key caches on them
            fresh.generation += old.generation + 1
        self.tree = fresh

    # --- re-reading one path ---------------------------------------------------------------

    def _handle(self, path: str) -> None:
        s, t, w = self.session, self.tree, self._on_event
        parts = path.strip("/").split("/")
        if path == zf.BROKER_IDS:
            ids = set(_ids(s.children(path, watch=w)))
            t.set_broker_ids(ids)
            for node in s.get_many([zf.broker_path(b) for b in sorted(ids - set(t.brokers))], watch=w):
                t.set_broker(int(node.path.rsplit("/", 1)[1]), node.data)
        elif parts[:2] == ["brokers", "ids"] and len(parts) == 3:
            t.set_broker(int(parts[2]), s.get(path, watch=w).data)
        elif path == zf.TOPICS:
            names = set(s.children(path, watch=w) or ())
            for gone in set(t.assignments) - names:
                t.set_topic(gone, None)
            self._load_topics(sorted(names - set(t.assignments)))
        elif parts[:2] == ["brokers", "topics"] and len(parts) == 3:
            topic = parts[2]
            known = set(t.states.get(topic, {}))
            pids = t.set_topic(topic, s.get(path, watch=w).data)
            new = [p for p in pids if p not in known]
            for p, node in zip(new, s.get_many([zf.state_path(topic, p) for p in new], watch=w)):
                t.set_state(topic, p, node.data)
        elif parts[:2] == ["brokers", "topics"] and len(parts) == 6 and parts[5] == "state":
            if parts[2] in t.assignments:
                t.set_state(parts[2], int(parts[4]), s.get(path, watch=w).data)
        elif path == zf.CONTROLLER:
            t.set_controller(s.get(path, watch=w).data)
        elif path == zf.CONTROLLER_EPOCH:
            t.set_controller_epoch(s.get(path, watch=w).data)
        elif path == zf.CLUSTER_ID:
            t.set_cluster_id(s.get(path, watch=w).data)
        elif path == zf.REASSIGN:
            t.set_reassignment(s.get(path, watch=w).data)
        elif path == zf.PREFERRED_ELECTION:
            t.set_election(s.get(path, watch=w).data)
        elif path == zf.DELETE_TOPICS:
            t.set_deletion(s.children(path, watch=w))
        elif path == zf.CONFIG_TOPICS:
            names = s.children(path, watch=w) or ()
            fresh = [n for n in names if n in t.assignments and n not in t.topic_configs]
            for n, node in zip(fresh, s.get_many([zf.topic_config_path(n) for n in fresh], watch=w)):
                t.set_topic_config(n, node.data)
        elif parts[:2] == ["config", "topics"] and len(parts) == 3:
            if parts[2] in t.assignments:
                t.set_topic_config(parts[2], s.get(path, watch=w).data)
        elif path == zf.CONFIG_BROKERS:
            names = s.children(path, watch=w) or ()
            fresh = [n for n in names if n not in t.broker_configs]
            for n, node in zip(fresh, s.get_many([zf.broker_config_path(n) for n in fresh], watch=w)):
                t.set_broker_config(n, node.data)
        elif parts[:2] == ["config", "brokers"] and len(parts) == 3:
            t.set_broker_config(parts[2], s.get(path, watch=w).data)

    def _load_topics(self, topics: list[str]) -> None:
        s, t, w = self.session, self.tree, self._on_event
        for topic, node in zip(topics, s.get_many([zf.topic_path(x) for x in topics], watch=w)):
            pids = t.set_topic(topic, node.data)
            for p, st in zip(pids, s.get_many([zf.state_path(topic, p) for p in pids], watch=w)):
                t.set_state(topic, p, st.data)
            cfg = s.get(zf.topic_config_path(topic), watch=w)
            t.set_topic_config(topic, cfg.data)
