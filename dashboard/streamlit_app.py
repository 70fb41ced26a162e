"""Keel's entry point: `streamlit run dashboard/streamlit_app.py`.

The router: `st.navigation` over the pages, and the frame every page shares in the sidebar
(cluster picker from keel.toml, who is signed in and their role on that cluster, live connection status;
dashboard.frame, dashboard.identity).
Pages live in views/ (one file each) or, for a feature with its own helpers, in its package (reassign/, fleet/);
their `page.py` files get an explicit url_path (the inferred one would be "page" for both).
"""

from __future__ import annotations

import streamlit as st  # Keel is installed into the venv (make venv), so `core` imports wherever streamlit runs


from core.policy.config import ConfigError
from dashboard import frame, identity, migration_banner
from dashboard.text import md, md_text

st.set_page_config(page_title="Keel", page_icon=":material/anchor:", layout="wide")

# Sections by what an SRE opens most, and every page always listed: Streamlit folds a sidebar menu of more than
# twelve pages to ten plus "View N more" (st.navigation's `expanded`), which hid Reassign, History and Fleet on
# every page. expanded=True keeps the whole menu open at any window size.
PAGES = {
    "Cluster": [
        st.Page("views/overview.py", title="Overview", icon=":material/monitor_heart:", default=True),
        st.Page("views/topics.py", title="Topics", icon=":material/topic:"),
        st.Page("views/brokers.py", title="Brokers", icon=":material/dns:"),
        st.Page("views/broker.py", title="Broker", icon=":material/storage:"),  # one broker (?broker=N)
        st.Page("views/leaders.py", title="Leaders", icon=":material/how_to_vote:"),
        st.Page("views/security.py", title="Security", icon=":material/shield:"),  # issue 29: ACLs, quotas
    ],
    "Change": [
        st.Page("views/create_topic.py", title="Create topic", icon=":material/add_circle:"),
        st.Page("reassign/page.py", title="Reassign", icon=":material/swap_horiz:", url_path="reassign"),
        st.Page("views/history.py", title="History", icon=":material/history:"),
    ],
    "Fleet": [
        FLEET := st.Page("fleet/page.py", title="Fleet heatmaps", icon=":material/grid_view:", url_path="fleet"),
    ],
    "Operations": [  # issue 18
        st.Page("views/restart.py", title="Rolling restart", icon=":material/restart_alt:"),
        st.Page("views/log_dirs.py", title="Log dirs (JBOD)", icon=":material/storage:"),
        st.Page("views/consumer_groups.py", title="Consumer groups", icon=":material/group:"),
        st.Page("views/state_changes.py", title="State-change logs", icon=":material/timeline:"),
        st.Page("views/migration.py", title="KRaft migration", icon=":material/swap_calls:"),  # issue 27
    ],
}
page = st.navigation(PAGES, expanded=True)
needs_cluster = page is not FLEET  # the Fleet page reads a fleet store, not a live cluster

cfg = frame.config()

if isinstance(cfg, ConfigError):
    with st.sidebar:
        st.markdown("## :material/anchor: Keel")
        st.error("Configuration error", icon=":material/settings_alert:")
    st.title("Keel", anchor=False)
    st.error(md_text(cfg), icon=":material/settings_alert:")
    if not needs_cluster:
        page.run()
    st.stop()

identity.require(cfg)  # who is at the keyboard (oidc / proxy / none); the sign-in screen or a refusal stops here

with st.sidebar:
    st.markdown("## :material/anchor: Keel")
    names = list(cfg.clusters)
    wanted = st.query_params.get("cluster")
    if frame.CLUSTER_KEY not in st.session_state and wanted in cfg.clusters:
        st.session_state[frame.CLUSTER_KEY] = wanted
    choice = st.selectbox(
        "Cluster", names, key=frame.CLUSTER_KEY,
        format_func=lambda n: n if not cfg.clusters[n].description else f"{n} — {cfg.clusters[n].description}",
        help=f"Clusters configured in {cfg.path}",
    )
    cluster = cfg.clusters[choice]
    if len(names) > 1 and st.query_params.get("cluster") != choice:
        st.query_params["cluster"] = choice  # every view's URL names its cluster (paste it: same view)
    if cluster.through_brokers:
        st.caption(f"KRaft · brokers `{cluster.bootstrap}`")
    elif frame.connection(cluster).through_brokers:  # migrated to KRaft: its brokers are read now
        st.caption(f"KRaft · brokers `{cluster.bootstrap}` · ZooKeeper `{cluster.zk}` (migrated from)")
    else:
        st.caption(f"ZooKeeper `{cluster.zk}`" + (f" · digest user `{cluster.digest_user}`" if cluster.digest else "")
                   + (" · TLS" if cluster.tls else ""))
    identity.sidebar(cfg, choice)  # signed in as whom, the role on this cluster, Sign out
    status_box = st.empty()

conn = frame.connection(cluster)
frame.start_run(conn)  # the live fragments this run draws register again; the ticker compares with this view
if conn.snapshot() is None:
    status_box.markdown(f"**Connection**  \n:gray[●] Connecting to `{cluster.name}`…")
conn.ensure()  # a failed connect is retried at once on every full rerun
if needs_cluster:
    frame.wait_for_first_snapshot(conn)  # progress in the main area; bounded by connect_timeout
    migration_banner.banner(conn)  # a ZooKeeper -> KRaft migration: on every page, with why writes are disabled


@frame.live_fragment("keel-status")
def connection_status() -> None:
    conn.ensure(retry_after=frame.RETRY_SECONDS)
    color, text = frame.status_line(conn)
    st.markdown(f"**Connection**  \n:{color}[●] {text}")
    snap = conn.snapshot()
    if snap is not None:
        st.caption(f"Last change {frame.hhmmss(snap.captured_at)}"
                   + (f" · cluster id {md(snap.cluster_id)}" if snap.cluster_id else ""))  # ZooKeeper's, not ours


with status_box.container():
    connection_status()
    frame.ticker(conn)  # redraws the live fragments when the cluster changes, while the tab is visible

page.run()
