"""Connections for the dashboard: one live view per configured cluster, shared by every browser session.

How it works
------------
* `Connection` owns one `core.zk.watcher.LiveCluster` (a ZooKeeper session whose watches keep a
  `ClusterSnapshot` current). It is created by `connection()` through `st.cache_resource`, so every
  browser session and every rerun share the same object; `st.cache_resource.clear()` releases it
  (stops the watcher thread and closes the ZooKeeper session through `on_release`).
* Connecting and the first full read run in a background thread. The script waits for it with a
  progress bar, bounded by the cluster's `connect_timeout` for the connect itself; an unreachable
  ZooKeeper therefore gives an error banner within about that time instead of a hung page.
* A failed first connect is retried on the next full rerun (any click, a reload) and, from the live
  fragments, every `RETRY_SECONDS`.
* When ZooKeeper goes away after the first snapshot, the last good snapshot stays on screen under a
  banner saying since when it is stale. kazoo gives a session up for good after a short outage, so
  a fresh session is opened in the background (every `RETRY_SECONDS`) and swapped in once its first
  snapshot has loaded.
* Derived data (health summary, tables) is cached per snapshot object with `Connection.derived`:
  `LiveCluster.snapshot()` returns the same object until a watch changes something, so a 2 s
  fragment refresh of an unchanged cluster recomputes nothing.

Streamlit is only imported here and in the pages; `core` never imports streamlit.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import streamlit as st

from core.config import ClusterConfig, ConfigError, KeelConfig, load_config
from core.errors import (
    ConnectStringError,
    KeelError,
    NoKafkaError,
    ZooKeeperAuthError,
    ZooKeeperUnreachableError,
)
from core.model import ClusterSnapshot, utc_now_iso
from core.zk.session import TlsOptions, ZkSession, ZkSettings
from core.zk.watcher import LiveCluster

log = logging.getLogger(__name__)

REFRESH_SECONDS = 2.0  # run_every of the live fragments
RETRY_SECONDS = 5.0  # minimum gap between background (re)connect attempts
REPLACE_AFTER_SECONDS = 2.0  # a session down this long gets a fresh one opened beside it
LOAD_WAIT_SECONDS = 60.0  # how long one script run waits for a first snapshot before rerunning
CLUSTER_KEY = "keel_cluster"  # session_state key of the sidebar cluster picker

_STAGES = {"brokers": "Reading brokers", "topics": "Reading topic assignments",
           "states": "Reading partition states", "configs": "Reading configs"}


# --- one cluster's connection ------------------------------------------------------------------


class Connection:
    """The live view of one configured cluster. Thread-safe; shared by all sessions."""

    def __init__(self, cluster: ClusterConfig):
        self.cluster = cluster
        self._lock = threading.Lock()
        self.live: LiveCluster | None = None
        self.phase = "idle"  # idle | connecting | loading | ready | failed | closed
        self.error: str | None = None  # why the last (re)connect attempt failed
        self.error_kind: str | None = None  # unreachable | no_kafka | auth | config | error
        self.progress: tuple[str, int, int] | None = None
        self.attempts = 0
        self.connected_at: str | None = None
        self.disconnected_at: str | None = None  # when the live session last left "connected"
        self.reconnecting = False
        self._down_since: float | None = None
        self._last_attempt_end = 0.0
        self._worker: threading.Thread | None = None
        self._derived: dict[str, tuple[Any, Any, Any]] = {}
        self._memo: dict[str, dict] = {}

    # --- lifecycle -----------------------------------------------------------------------

    def ensure(self, retry_after: float = 0.0) -> None:
        """Start a background connect when none is running and one is due.

        No live view yet: connect now (or, after a failure, once `retry_after` seconds passed).
        A live view whose session has been down for a while: open a replacement session beside it.
        """
        with self._lock:
            if self.phase == "closed" or (self._worker is not None and self._worker.is_alive()):
                return
            now = time.monotonic()
            if self.live is None:
                if self.phase == "failed" and now - self._last_attempt_end < retry_after:
                    return
                replacing = False
            else:
                if self.live.status in ("connected", "connecting") or self._down_since is None:
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
                self.phase, self.progress = "connecting", None
            self._worker = threading.Thread(target=self._attempt, args=(replacing,),
                                            name=f"keel-connect-{self.cluster.name}", daemon=True)
            self._worker.start()

    def close(self) -> None:
        with self._lock:
            self.phase = "closed"
            live, self.live = self.live, None
            worker = self._worker
        if live is not None:
            _stop_live(live)
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=self.cluster.connect_timeout + 5)
        # a worker that finished after we took `live` may have installed another one
        with self._lock:
            late, self.live = self.live, None
        if late is not None:
            _stop_live(late)

    def _settings(self) -> ZkSettings:
        c = self.cluster
        tls = None
        if c.tls is not None:
            tls = TlsOptions(ca=c.tls.ca, cert=c.tls.cert, key=c.tls.key, key_password=c.tls.key_password,
                             verify=c.tls.verify)
        return ZkSettings(connect=c.zk, digest=c.digest, tls=tls, connect_timeout=c.connect_timeout)

    def _attempt(self, replacing: bool) -> None:
        session: ZkSession | None = None
        live: LiveCluster | None = None
        try:
            session = ZkSession.open(self._settings())
            live = LiveCluster(session, cluster=self.cluster.name)
            with self._lock:
                if not replacing and self.phase != "closed":
                    self.phase = "loading"
            live.start(progress=None if replacing else self._on_progress)
        except Exception as e:  # everything becomes a message on the page
            if live is not None:
                live.stop()
            if session is not None:
                try:
                    session.close()
                except Exception:
                    pass
            kind, message = _describe(e, self.cluster)
            with self._lock:
                self.error, self.error_kind = message, kind
                self._last_attempt_end = time.monotonic()
                self.reconnecting = False
                if not replacing and self.phase != "closed":
                    self.phase = "failed"
            log.warning("cluster %s: connect failed: %s", self.cluster.name, message)
            return

        session.on_state_change(lambda state, live=live: self._on_session_state(live, state))
        with self._lock:
            if self.phase == "closed":
                old = live  # closed meanwhile: throw the new one away
            else:
                old, self.live = self.live, live
                self.phase, self.error, self.error_kind = "ready", None, None
                self.connected_at = utc_now_iso()
                self.disconnected_at = None
                self._down_since = None if session.connected else time.monotonic()
                self.reconnecting = False
                self._last_attempt_end = time.monotonic()
                self._derived.clear()
                self._memo.clear()
        if old is not None:
            _stop_live(old)

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

    # --- reading -------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        live = self.live
        return live is not None and live.status == "connected"

    def snapshot(self) -> ClusterSnapshot | None:
        live = self.live
        return None if live is None else live.snapshot()

    def derived(self, name: str, snapshot: ClusterSnapshot, fn: Callable[[ClusterSnapshot], Any], *,
                key: Any = None) -> Any:
        """fn(snapshot), computed once per snapshot object (i.e. once per change of the cluster) and `key`.

        One slot per name: only the latest value is kept, so old snapshots are not held on to.
        """
        hit = self._derived.get(name)
        if hit is not None and hit[0] is snapshot and hit[1] == key:
            return hit[2]
        value = fn(snapshot)
        self._derived[name] = (snapshot, key, value)
        return value

    def memo(self, name: str) -> dict:
        """A dict that lives as long as the live view: for caches finer than one snapshot (e.g. per topic)."""
        return self._memo.setdefault(name, {})

    def write_session(self) -> ZkSession:
        """The live view's ZooKeeper session, for the writes of the action pages (core.zk.topic_admin,
        core.zk.election): they re-read live state through it before writing. Refused unless connected."""
        live = self.live
        if live is None or live.status != "connected":
            raise ZooKeeperUnreachableError(
                f"not connected to ZooKeeper for cluster {self.cluster.name} ({self.cluster.zk}); nothing was written",
                hint="wait until the sidebar shows the connection as live, then try again")
        return live.session

    def await_change(self, predicate: Callable[[ClusterSnapshot], bool], timeout: float = 5.0) -> bool:
        """Wait until the live view shows what a write just did (its watches fire); False on timeout."""
        live = self.live
        if live is None:
            return False
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


def _stop_live(live: LiveCluster) -> None:
    try:
        live.stop()
    finally:
        try:
            live.session.close()
        except Exception:
            pass


def _describe(e: Exception, cluster: ClusterConfig) -> tuple[str, str]:
    if isinstance(e, NoKafkaError):
        return "no_kafka", str(e)
    if isinstance(e, ZooKeeperUnreachableError):
        return "unreachable", str(e)
    if isinstance(e, ZooKeeperAuthError):
        return "auth", str(e)
    if isinstance(e, ConnectStringError):
        return "config", f"clusters.{cluster.name}.zk: {e}"
    if isinstance(e, KeelError):
        return "error", str(e)
    return "error", f"{type(e).__name__}: {e}"


# --- st.cache_resource: one Connection per configured cluster, process-wide ---------------------


def _cache_key(c: ClusterConfig) -> str:
    secret = hashlib.sha256((c.digest or "").encode()).hexdigest()[:16]
    return repr((c.name, c.zk, secret, c.tls, c.connect_timeout))


@st.cache_resource(show_spinner=False, on_release=lambda conn: conn.close())
def _connection(key: str, _cluster: ClusterConfig) -> Connection:
    return Connection(_cluster)


def connection(cluster: ClusterConfig) -> Connection:
    return _connection(_cache_key(cluster), cluster)


# --- config and the selected cluster -------------------------------------------------------------


def config() -> KeelConfig | ConfigError:
    """The Keel config (KEEL_CONFIG or keel.toml), or the error that explains why there is none."""
    try:
        return load_config()
    except ConfigError as e:
        return e


def selected_cluster(cfg: KeelConfig) -> ClusterConfig:
    name = st.session_state.get(CLUSTER_KEY)
    if name not in cfg.clusters:
        name = cfg.default_cluster
    return cfg.clusters[name]


@dataclass(frozen=True)
class PageContext:
    config: KeelConfig
    cluster: ClusterConfig
    conn: Connection


def page_context() -> PageContext:
    """Config + selected cluster + its connection for a page; shows the error and stops if there is none."""
    cfg = config()
    if isinstance(cfg, ConfigError):
        st.error(str(cfg))
        st.stop()
    cluster = selected_cluster(cfg)
    return PageContext(cfg, cluster, connection(cluster))


# --- drawing the connection state ---------------------------------------------------------------


def hhmmss(iso: str | None) -> str:
    """'2026-11-22T03:00:00Z' -> '03:00:00 UTC' (the date too when it is not today)."""
    if not iso:
        return "unknown"
    try:
        t = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return iso
    if t.date() == datetime.now(timezone.utc).date():
        return t.strftime("%H:%M:%S UTC")
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def wait_for_first_snapshot(conn: Connection) -> None:
    """While the first connect / load runs, show what it is doing; returns when it is over.

    Bounded: the connect fails after `connect_timeout`; a load that takes longer than
    LOAD_WAIT_SECONDS reruns the script (which picks the wait up again with fresh progress).
    """
    if conn.phase not in ("connecting", "loading"):
        return
    box = st.empty()
    deadline = time.monotonic() + LOAD_WAIT_SECONDS
    while conn.phase in ("connecting", "loading"):
        with box.container():
            if conn.phase == "connecting":
                st.info(f"Connecting to ZooKeeper at `{conn.cluster.zk}` "
                        f"(gives up after {conn.cluster.connect_timeout:g} s)…", icon=":material/sync:")
            else:
                stage, done, total = conn.progress or ("brokers", 0, 0)
                frac = done / total if total else 0.0
                st.progress(min(frac, 1.0), text=f"Loading the first snapshot of **{conn.cluster.name}**: "
                                                 f"{_STAGES.get(stage, stage)} ({done:,} / {total:,})")
        if time.monotonic() >= deadline:
            time.sleep(0.5)
            st.rerun()
        time.sleep(0.2)
    box.empty()


def show_failure(conn: Connection) -> None:
    """The banner for a cluster with no snapshot at all."""
    c = conn.cluster
    if conn.error_kind == "no_kafka":
        st.error(f"**No Kafka cluster at `{c.zk}`.** {conn.error}", icon=":material/search_off:")
    elif conn.error_kind == "unreachable":
        st.error(f"**ZooKeeper unreachable** for cluster **{c.name}**: {conn.error}. "
                 f"Keel retries every {RETRY_SECONDS:g} s and on every refresh.", icon=":material/cloud_off:")
    elif conn.error_kind == "auth":
        st.error(f"**ZooKeeper denied access** for cluster **{c.name}**: {conn.error}", icon=":material/lock:")
    elif conn.error_kind == "config":
        st.error(f"**Invalid cluster config**: {conn.error}", icon=":material/settings_alert:")
    else:
        st.error(f"**Cannot load cluster {c.name}**: {conn.error}", icon=":material/error:")


def show_staleness(conn: Connection) -> None:
    """Banner over a page that shows a snapshot while the session is not connected."""
    live = conn.live
    if live is None:
        return
    since = conn.stale_since()
    if since is not None:
        what = {"suspended": "connection to ZooKeeper lost", "lost": "ZooKeeper session lost"}.get(
            live.status, f"ZooKeeper session {live.status}")
        retry = " Reconnecting…" if conn.reconnecting else f" Retrying every {RETRY_SECONDS:g} s."
        last = f" Last attempt: {conn.error}." if conn.error else ""
        st.warning(f"**ZooKeeper unreachable ({what}).** Showing the last good snapshot, from "
                   f"**{hhmmss(since)}**; it is not live.{retry}{last}", icon=":material/cloud_off:")
    elif live.error:
        st.warning(f"The last watch update failed: {live.error}. The view may be partly stale.",
                   icon=":material/warning:")


def live_snapshot(conn: Connection, *, in_fragment: bool) -> ClusterSnapshot:
    """The snapshot to draw, after the banners; stops the run (or the fragment) when there is none.

    A full run waits for a connect in flight (the router starts one at once after a failure); a
    fragment run only kicks off a retry every RETRY_SECONDS and triggers a full rerun once a
    snapshot exists.
    """
    had_live = conn.live is not None
    conn.ensure(retry_after=RETRY_SECONDS)  # the router already retried at once on this full run
    if not in_fragment:
        wait_for_first_snapshot(conn)
    snap = conn.snapshot()
    if snap is None:
        if conn.error is not None:  # kept until an attempt succeeds, so a retry does not blank it
            show_failure(conn)
        if conn.phase in ("connecting", "loading"):
            st.caption(f"Connecting to `{conn.cluster.zk}`… (attempt {conn.attempts})")
        st.stop()
    if in_fragment and not had_live:
        st.rerun()  # the first snapshot arrived while the page showed an error: draw the whole page
    show_staleness(conn)
    return snap


def status_line(conn: Connection) -> tuple[str, str]:
    """(colour, text) for the sidebar: green connected, orange stale, red failed, grey connecting."""
    live = conn.live
    if live is not None:
        if live.status == "connected":
            snap = live.snapshot()
            up = len(snap.alive_broker_ids)
            return "green", f"Live · {up}/{len(snap.brokers)} brokers up · generation {live.generation}"
        return "orange", f"Stale since {hhmmss(conn.stale_since())} · {live.status}"
    if conn.phase in ("connecting", "loading", "idle"):
        return "gray", "Connecting…"
    return "red", {"no_kafka": "No Kafka at this path", "unreachable": "ZooKeeper unreachable",
                   "auth": "Access denied"}.get(conn.error_kind or "", "Connection failed")
