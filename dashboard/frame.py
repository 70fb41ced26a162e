"""The frame every page shares: the Keel config, the selected cluster, the page context, the sidebar's status line,
and the dashboard's side of the live connections: one `core.cluster.connection.Connection` per configured cluster, shared by
every browser session through `st.cache_resource` (released with `st.cache_resource.clear()`, which stops the
watcher thread and closes the session), and the banners drawn from its state: the wait for a first snapshot
(bounded by the cluster's `connect_timeout`; a large cluster's outline is drawn meanwhile, issue 31), failures,
staleness while ZooKeeper is away, and the note after a reconnect re-read the cluster. The connection logic itself is engine code in core/cluster/connection.py.

Errors quote znode paths, hence topic names (data written by whoever can write to ZooKeeper): they go through
dashboard.text.md_text before they meet markdown. Streamlit is only imported in dashboard/; `core` never imports it.

Live views (issue 24). A page's live part is a fragment declared with `live_fragment(key)`; nothing reruns it on a
timer. One small ticker per browser session (`ticker`, mounted by the router) asks every REFRESH_SECONDS, and only
while its tab is visible (the Page Visibility API), whether `view_stamp()` (the connection's view, the brokers'
settings read in the background) moved since the session's live fragments drew; only then it reruns them. An
unchanged cluster costs a session one tiny fragment run per tick (nothing recomputed, nothing resent) and a hidden
tab costs nothing; a tab shown again asks at once."""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.policy.config import ClusterConfig, ConfigError, KeelConfig, load_config
from core.model import ClusterSnapshot
from core.outline import STAGES as _STAGES
from core.outline import Outline
from core.cluster.connection import RETRY_SECONDS, Connection, ErrorKind, Phase, hhmmss  # noqa: F401  (re-exported)
from dashboard import broker_defaults
from dashboard.text import md, md_text

log = logging.getLogger(__name__)

REFRESH_SECONDS = 2.0  # how often a visible session asks whether its live fragments are out of date
LOAD_WAIT_SECONDS = 60.0  # how long one script run waits for a first snapshot before rerunning
OUTLINE = "keel_outline_drawn"  # session_state: this session drew an outline; a snapshot now redraws the page
CLUSTER_KEY = "keel_cluster"  # session_state key of the sidebar cluster picker

LIVE = "keel_live"  # session_state: the keys of the live fragments drawn in this run
DRAWN = "keel_live_drawn"  # session_state: the connection's view_stamp() the live fragments show
FULL_RERUN = "keel_live_full_rerun"  # session_state: the page stopped for want of a snapshot; one exists now
WAITING = "keel_live_waiting"  # session_state: the last full run stopped because there was no snapshot yet
TICKER_KEY = "keel-ticker"


# --- st.cache_resource: one Connection per configured cluster, process-wide ---------------------


def _cache_key(c: ClusterConfig) -> str:
    secret = hashlib.sha256((c.digest or "").encode()).hexdigest()[:16]
    return repr((c.name, c.zk, c.bootstrap, secret, c.tls, c.connect_timeout, c.poll_interval))


def reached_through(conn: Connection) -> str:
    """How Keel reads the cluster, for a banner: its ZooKeeper, or its brokers (KRaft, or migrated to it)."""
    c = conn.cluster
    return f"the brokers at `{c.bootstrap}`" if conn.through_brokers else f"ZooKeeper at `{c.zk}`"


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
    """While the first connect / load runs, show what it is doing; returns when it is over, or when an outline
    of the cluster has been known for a moment (issue 31: a page draws what is known within 2 s, whatever the size).

    Bounded: the connect fails after `connect_timeout`; a load that takes longer than
    LOAD_WAIT_SECONDS reruns the script (which picks the wait up again with fresh progress).
    A small cluster is read whole before its outline is due: its pages never show one.
    """
    if conn.phase not in (Phase.CONNECTING, Phase.LOADING):
        return
    box = st.empty()
    deadline = time.monotonic() + LOAD_WAIT_SECONDS
    while conn.phase in (Phase.CONNECTING, Phase.LOADING):
        if outline_due(conn):
            break
        with box.container():
            if conn.phase == Phase.CONNECTING:
                st.info(f"Connecting to {reached_through(conn)} "
                        f"(gives up after {conn.cluster.connect_timeout:g} s)…", icon=":material/sync:")
            else:
                stage, done, total = conn.progress or ("brokers", 0, 0)
                frac = done / total if total else 0.0
                st.progress(min(frac, 1.0), text=f"Loading the first snapshot of **{conn.cluster.name}**: "
                                                 f"{_STAGES.get(stage, stage)} ({done:,} / {total:,})")
        if time.monotonic() >= deadline:
            time.sleep(0.5)
            st.rerun()
        time.sleep(0.05)
    box.empty()


def outline_due(conn: Connection) -> bool:
    """Whether pages draw the outline now (core.outline.Outline.worth_drawing: a large cluster at once, a small one
    only if its read is still running after a moment)."""
    since = conn.loading_since
    if conn.phase != Phase.LOADING or since is None:
        return False
    outline = conn.outline()
    return outline is not None and outline.worth_drawing(time.monotonic() - since)


def show_failure(conn: Connection) -> None:
    """The banner for a cluster with no snapshot at all."""
    c = conn.cluster
    error = md_text(conn.error)
    if conn.error_kind == ErrorKind.NO_KAFKA:
        st.error(f"**No Kafka cluster at `{c.zk}`.** {error}", icon=":material/search_off:")
    elif conn.error_kind == ErrorKind.UNREACHABLE:
        st.error(f"**{'Brokers' if conn.through_brokers else 'ZooKeeper'} unreachable** for cluster **{c.name}**: "
                 f"{error}. "
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
    if since is not None and conn.through_brokers:
        st.warning(f"**The brokers cannot be read** ({md_text(live.error or 'no answer')}). Showing the last good "
                   f"snapshot, from **{hhmmss(since)}**; it is not live. Keel asks again every "
                   f"{conn.cluster.poll_interval:g} s.", icon=":material/cloud_off:")
    elif since is not None:
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
    view = live_view(conn, in_fragment=in_fragment)
    if isinstance(view, Outline):  # a page that cannot draw from an outline: the progress and what is known
        outline_panel(conn)
        if not in_fragment:
            st.session_state[WAITING] = True  # the ticker reruns the whole page once a snapshot exists
        st.stop()
    return view


def live_view(conn: Connection, *, in_fragment: bool) -> ClusterSnapshot | Outline:
    """The snapshot to draw after the banners, or, while a large cluster's first read runs, its outline (issue 31:
    brokers, controller, topic names and counts; no health). Stops the run (or the fragment) when there is neither.
    A fragment that drew an outline reruns the whole page once the snapshot exists."""
    had_live = conn.live is not None
    conn.ensure(retry_after=RETRY_SECONDS)  # the router already retried at once on this full run
    if not in_fragment:
        wait_for_first_snapshot(conn)
    snap = conn.snapshot()
    if snap is None and outline_due(conn):
        outline = conn.outline()
        if outline is not None:
            st.session_state[OUTLINE] = True
            return outline
    if snap is not None and st.session_state.pop(OUTLINE, False) and in_fragment:
        st.rerun()  # the page drew an outline: the whole of it draws the snapshot now
    if snap is None:
        if not in_fragment:
            st.session_state[WAITING] = True  # the ticker reruns the whole page once a snapshot exists
        if conn.error is not None:  # kept until an attempt succeeds, so a retry does not blank it
            show_failure(conn)
        if conn.phase in (Phase.CONNECTING, Phase.LOADING):
            st.caption(f"Connecting to {reached_through(conn)}… (attempt {conn.attempts})")
        st.stop()
    if in_fragment and not had_live:
        st.rerun()  # the first snapshot arrived while the page showed an error: draw the whole page
    show_staleness(conn)
    return snap


def outline_panel(conn: Connection) -> None:
    """A page that needs the partition states, while they are read: how far the read is and what is known."""
    _outline_fragment(conn)


@st.fragment(key="keel-outline")
def _outline_fragment(conn: Connection) -> None:
    live = st.session_state.setdefault(LIVE, [])
    if "keel-outline" not in live:
        live.append("keel-outline")
    outline = conn.outline()
    if outline is None:
        if conn.snapshot() is not None:
            st.rerun()  # the read is over: draw the page
        return
    reading_progress(outline)
    brokers = ", ".join(str(b.id) for b in outline.brokers) or "none"
    ctrl = outline.controller.broker_id if outline.controller and outline.controller.broker_id is not None else None
    parts = outline.partition_count
    st.caption(f"Known so far: {len(outline.brokers):,} registered broker(s) ({brokers}) · controller "
               f"{'none' if ctrl is None or ctrl < 0 else f'broker {ctrl}'} · {len(outline.topics):,} topic(s)"
               + (f" · {parts:,} partition(s)" if parts is not None else "")
               + ". This page needs every partition's state; it draws once they are read.")


def reading_progress(outline: Outline) -> None:
    """The progress bar of a first read that is still running."""
    st.progress(outline.fraction(), text=f"Reading **{md(outline.cluster)}** from ZooKeeper: "
                                         f"{outline.progress_text()}. Partition health is not known until every "
                                         "state is read.")


def status_line(conn: Connection) -> tuple[str, str]:
    """(colour, text) for the sidebar: green connected, orange stale, red failed, grey connecting."""
    live = conn.live
    if live is not None:
        if live.status == "connected":
            snap = live.snapshot()
            up = len(snap.alive_broker_ids)
            text = f"Live · {up}/{len(snap.brokers)} brokers up · generation {live.generation}"
            if conn.through_brokers:  # no watches: say how fresh the view is
                text = (f"Live · {up}/{len(snap.brokers)} brokers up · read every {live.effective_interval:.3g} s, "
                        f"last at {hhmmss(live.last_good_at)}")
            if conn.resync_notice() is not None:
                text += f" · re-read after a reconnect at {hhmmss(live.resynced_at)}"
            return "green", text
        if live.status == "resyncing":
            return "orange", f"Reconnected · re-reading the cluster (stale since {hhmmss(conn.stale_since())})"
        return "orange", f"Stale since {hhmmss(conn.stale_since())} · {live.status}"
    outline = conn.outline()
    if outline is not None:  # not "Live": nothing of the partitions' health is known yet
        return "gray", f"Reading the cluster · {outline.fraction():.0%} · {outline.progress_text()}"
    if conn.phase in (Phase.CONNECTING, Phase.LOADING, Phase.IDLE):
        return "gray", "Connecting…"
    return "red", {ErrorKind.NO_KAFKA: "No Kafka at this path",
                   ErrorKind.UNREACHABLE: "Brokers unreachable" if conn.through_brokers else
                   "ZooKeeper unreachable",
                   ErrorKind.AUTH: "Access denied"}.get(conn.error_kind, "Connection failed")


# --- live fragments and the ticker that refreshes them (issue 24) --------------------------------------

F = TypeVar("F", bound=Callable)

# One timer per page, whatever mounts it again; a hidden tab asks for nothing, a tab shown again asks at once.
_TICKER_JS = """
export default function ({ data, setTriggerValue }) {
  const ms = Math.max(250, Number(data && data.ms) || 2000);
  const state = (window.__keelLiveTicker = window.__keelLiveTicker || {});
  if (state.stop) state.stop();
  let last = 0;
  const tick = () => {
    if (document.visibilityState !== "visible") return;
    last = Date.now();
    setTriggerValue("tick", last);
  };
  const timer = setInterval(tick, ms);
  const shown = () => {
    if (document.visibilityState === "visible" && Date.now() - last >= ms) tick();
  };
  document.addEventListener("visibilitychange", shown);
  const stop = () => {
    clearInterval(timer);
    document.removeEventListener("visibilitychange", shown);
    if (state.stop === stop) state.stop = null;
  };
  state.stop = stop;
  return stop;
}
"""
_ticker_component = st.components.v2.component("keel_live_ticker", js=_TICKER_JS)


def live_fragment(key: str) -> Callable[[F], F]:
    """Declare a page's live part: `@frame.live_fragment("overview")` where a page had
    `@st.fragment(run_every=REFRESH_SECONDS)`. The fragment reruns on its own widgets' changes, and when the
    ticker sees that the connection's view moved since the session last drew it. `key` is unique among the live
    fragments drawn in one run."""
    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def body(*args, **kwargs):
            live = st.session_state.setdefault(LIVE, [])
            if key not in live:
                live.append(key)
            return fn(*args, **kwargs)
        return st.fragment(body, key=key)  # type: ignore[return-value]
    return decorate


def start_run(conn: Connection) -> None:
    """The router, at the top of every full run: forget the live fragments of the previous run (each registers
    again when it draws) and note the view this run draws."""
    st.session_state[LIVE] = []
    st.session_state[DRAWN] = view_stamp(conn)
    st.session_state.pop(WAITING, None)
    st.session_state.pop(FULL_RERUN, None)


def view_stamp(conn: Connection) -> object:
    """Everything the live views draw that can change without a click, compared with ==: the connection's view
    (a new snapshot, its state) and the brokers' own settings as last read in the background (issue 23)."""
    snap = conn.snapshot()
    return conn.view_stamp(), None if snap is None else broker_defaults.current(conn.cluster, snap)


def ticker(conn: Connection) -> None:
    """Mount the session's ticker (the router does, in the sidebar)."""
    _ticker_fragment(conn)


@st.fragment(key=TICKER_KEY)
def _ticker_fragment(conn: Connection) -> None:
    if st.session_state.pop(FULL_RERUN, False):
        st.rerun()  # the page stopped for want of a snapshot: draw all of it now
    _ticker_component(key="keel_live_tick", data={"ms": int(REFRESH_SECONDS * 1000)},
                      on_tick_change=functools.partial(_on_tick, conn))


def _on_tick(conn: Connection) -> None:
    """A visible session's tick (a widget callback): rerun the live fragments when the view moved since the session
    drew them, else nothing but the ticker. Also what keeps a failed or lost connection retried while someone looks
    (Connection.ensure)."""
    conn.ensure(retry_after=RETRY_SECONDS)
    if (st.session_state.get(WAITING) or st.session_state.get(OUTLINE)) and conn.snapshot() is not None:
        # the page stopped for want of a snapshot, or drew an outline (issue 31): all of it draws the snapshot now
        st.session_state[WAITING] = False
        st.session_state.pop(OUTLINE, None)
        st.session_state[FULL_RERUN] = True  # the ticker's own rerun turns it into a full one
        return
    stamp = view_stamp(conn)
    if stamp == st.session_state.get(DRAWN):
        return  # only the ticker reruns: one small message (a keyed rerun of an empty fragment would cost two runs)
    st.session_state[DRAWN] = stamp
    keys = st.session_state.get(LIVE) or []
    if keys:
        try:
            st.rerun(list(keys))
        except StreamlitAPIException:  # a fragment of the last run is gone: redraw the page instead
            st.session_state[FULL_RERUN] = True
