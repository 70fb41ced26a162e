"""The frame every page shares: the Keel config, the selected cluster, the page context, the sidebar's status line,
and the dashboard's side of the live connections: one `core.zk.live.Connection` per configured cluster, shared by
every browser session through `st.cache_resource` (released with `st.cache_resource.clear()`, which stops the
watcher thread and closes the session), and the banners drawn from its state: the wait for a first snapshot
(bounded by the cluster's `connect_timeout`), failures, staleness while ZooKeeper is away, and the note after a
reconnect re-read the cluster. The connection logic itself is engine code in core/zk/live.py.

Errors quote znode paths, hence topic names (data written by whoever can write to ZooKeeper): they go through
dashboard.text.md_text before they meet markdown. Streamlit is only imported in dashboard/; `core` never imports it."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

import streamlit as st

from core.config import ClusterConfig, ConfigError, KeelConfig, load_config
from core.model import ClusterSnapshot
from core.zk.live import RETRY_SECONDS, Connection, ErrorKind, Phase, hhmmss  # noqa: F401  (re-exported)
from dashboard.text import md_text

log = logging.getLogger(__name__)

REFRESH_SECONDS = 2.0  # run_every of the live fragments
LOAD_WAIT_SECONDS = 60.0  # how long one script run waits for a first snapshot before rerunning
CLUSTER_KEY = "keel_cluster"  # session_state key of the sidebar cluster picker

_STAGES = {"brokers": "Reading brokers", "topics": "Reading topic assignments",
           "states": "Reading partition states", "configs": "Reading configs"}


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
        st.error(md_text(cfg), icon=":material/settings_alert:")
        st.stop()
    cluster = selected_cluster(cfg)
    return PageContext(cfg, cluster, connection(cluster))


# --- drawing the connection state ---------------------------------------------------------------


def wait_for_first_snapshot(conn: Connection) -> None:
    """While the first connect / load runs, show what it is doing; returns when it is over.

    Bounded: the connect fails after `connect_timeout`; a load that takes longer than
    LOAD_WAIT_SECONDS reruns the script (which picks the wait up again with fresh progress).
    """
    if conn.phase not in (Phase.CONNECTING, Phase.LOADING):
        return
    box = st.empty()
    deadline = time.monotonic() + LOAD_WAIT_SECONDS
    while conn.phase in (Phase.CONNECTING, Phase.LOADING):
        with box.container():
            if conn.phase == Phase.CONNECTING:
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
    error = md_text(conn.error)
    if conn.error_kind == ErrorKind.NO_KAFKA:
        st.error(f"**No Kafka cluster at `{c.zk}`.** {error}", icon=":material/search_off:")
    elif conn.error_kind == ErrorKind.UNREACHABLE:
        st.error(f"**ZooKeeper unreachable** for cluster **{c.name}**: {error}. "
                 f"Keel retries every {RETRY_SECONDS:g} s and on every refresh.", icon=":material/cloud_off:")
    elif conn.error_kind == ErrorKind.AUTH:
        st.error(f"**ZooKeeper denied access** for cluster **{c.name}**: {error}", icon=":material/lock:")
    elif conn.error_kind == ErrorKind.CONFIG:
        st.error(f"**Invalid cluster config**: {error}", icon=":material/settings_alert:")
    else:
        st.error(f"**Cannot load cluster {c.name}**: {error}", icon=":material/error:")


def show_staleness(conn: Connection) -> None:
    """Banner over a page that shows a snapshot while the session is not connected."""
    live = conn.live
    if live is None:
        return
    since = conn.stale_since()
    if live.status == "resyncing":
        st.info(f"**Reconnected to ZooKeeper: re-reading the cluster…** Its watches were lost with the "
                f"connection, so everything is read again. Showing the snapshot from **{hhmmss(since)}** "
                "until that is done.", icon=":material/sync:")
        if live.error:
            st.caption(md_text(live.error))
        return
    notice = conn.resync_notice()
    if notice is not None:
        st.info(notice, icon=":material/sync:")
    if since is not None:
        what = {"suspended": "connection to ZooKeeper lost", "lost": "ZooKeeper session lost"}.get(
            live.status, f"ZooKeeper session {live.status}")
        retry = " Reconnecting…" if conn.reconnecting else f" Retrying every {RETRY_SECONDS:g} s."
        last = f" Last attempt: {md_text(conn.error)}." if conn.error else ""
        st.warning(f"**ZooKeeper unreachable ({what}).** Showing the last good snapshot, from "
                   f"**{hhmmss(since)}**; it is not live.{retry}{last}", icon=":material/cloud_off:")
    elif live.error:
        st.warning(f"The last watch update failed: {md_text(live.error)}. The view may be partly stale.",
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
        if conn.phase in (Phase.CONNECTING, Phase.LOADING):
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
            text = f"Live · {up}/{len(snap.brokers)} brokers up · generation {live.generation}"
            if conn.resync_notice() is not None:
                text += f" · re-read after a reconnect at {hhmmss(live.resynced_at)}"
            return "green", text
        if live.status == "resyncing":
            return "orange", f"Reconnected · re-reading the cluster (stale since {hhmmss(conn.stale_since())})"
        return "orange", f"Stale since {hhmmss(conn.stale_since())} · {live.status}"
    if conn.phase in (Phase.CONNECTING, Phase.LOADING, Phase.IDLE):
        return "gray", "Connecting…"
    return "red", {ErrorKind.NO_KAFKA: "No Kafka at this path", ErrorKind.UNREACHABLE: "ZooKeeper unreachable",
                   ErrorKind.AUTH: "Access denied"}.get(conn.error_kind, "Connection failed")
