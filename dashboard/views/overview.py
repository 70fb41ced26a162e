"""Overview: brokers, controller, size, health counters, load per broker and admin operations in flight. Each broker
links to its page (views/broker.py); metrics wrap onto more lines in a narrow window (dashboard.ui)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import health
from core.model import ClusterSnapshot
from core.outline import Outline
from dashboard import outline_view
from dashboard import broker_defaults, charts, frame, ops_panels, ui
from dashboard.text import md, md_cells

MAX_LISTED = 200  # rows shown per in-progress operation / problem list; the rest is counted

ctx = frame.page_context()
conn = ctx.conn
st.title(f"{ctx.cluster.name}", anchor=False)
if ctx.cluster.description:
    st.caption(ctx.cluster.description)
frame.live_view(conn, in_fragment=False)  # an outline while a large cluster is read (issue 31)


def broker_table(snap: ClusterSnapshot, summary: health.ClusterSummary) -> pd.DataFrame:
    ctrl = snap.controller.broker_id if snap.controller else None
    rows = []
    for load in summary.brokers:
        b = snap.broker_by_id.get(load.broker_id)
        rows.append({
            "Broker": load.broker_id,
            "Status": "alive" if load.alive else "DOWN",
            "Rack": (b.rack if b else None) or "—",
            "Host": (b.host if b else None) or "—",
            "Port": str(b.port) if b and b.port not in (None, -1) else "—",
            "Role": "controller" if load.broker_id == ctrl else "",
            "Replicas": load.replicas,
            "Leaders": load.leaders,
        })
    return pd.DataFrame(rows, columns=["Broker", "Status", "Rack", "Host", "Port", "Role", "Replicas", "Leaders"])


def load_charts(summary: health.ClusterSummary):
    """The replicas and leaders per broker: built once per snapshot for every session (issue 24)."""
    colors = charts.rack_colors(b.rack for b in summary.brokers)
    ids = [b.broker_id for b in summary.brokers]
    racks = [b.rack for b in summary.brokers]
    alive = [b.alive for b in summary.brokers]
    return (charts.per_broker_bars(ids, [b.replicas for b in summary.brokers], racks, alive,
                                   title="Replicas per broker", y_title="Replicas", colors=colors),
            charts.per_broker_bars(ids, [b.leaders for b in summary.brokers], racks, alive,
                                   title="Leaders per broker", y_title="Leaders", colors=colors))


def quorum_table(snap: ClusterSnapshot) -> pd.DataFrame:
    """KRaft's controller quorum as kafka-metadata-quorum --describe --replication shows it."""
    q = snap.quorum
    rows = [{"Node": r.id, "Role": ("leader" if r.id == q.leader else "voter") if voter else "observer",
             "Log end offset": r.log_end_offset, "Lag": q.lag(r),
             "Last caught up": frame.hhmmss(_iso(r.last_caught_up_ms)) if r.last_caught_up_ms else "—"}
            for voter, members in ((True, q.voters), (False, q.observers)) for r in members]
    return pd.DataFrame(rows, columns=["Node", "Role", "Log end offset", "Lag", "Last caught up"])


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def quorum_section(snap: ClusterSnapshot) -> None:
    q = snap.quorum
    st.subheader("Controller quorum", anchor=False)
    st.caption(f"The metadata log's leader is the active controller: node {q.leader if q.leader is not None else 'none'}"
               f", epoch {q.epoch}, high watermark {q.high_watermark:,}; {len(q.voters)} voter(s), "
               f"{len(q.observers)} observer(s). Offsets as of the last change Keel saw.")
    st.dataframe(quorum_table(snap), hide_index=True, width="stretch")


def _style_brokers(df: pd.DataFrame):
    def row(r):
        down = r["Status"] == "DOWN"
        return ["background-color: rgba(214,39,40,0.16); font-weight: 600" if down else "" for _ in r]
    return df.style.apply(row, axis=1)


@frame.live_fragment("live-overview")
def live() -> None:
    snap = frame.live_view(conn, in_fragment=True)
    if isinstance(snap, Outline):  # the states are still being read: what is known, no health
        outline_view.overview(snap)
        return
    summary: health.ClusterSummary = broker_defaults.summary(ctx, snap)
    ctrl = snap.controller

    mode = ("KRaft (no ZooKeeper: read through the brokers' Admin API)" if snap.is_kraft
            else "ZooKeeper" if not ctx.conn.through_brokers else "ZooKeeper (read through the brokers)")
    st.caption(f"Mode **{mode}** · source `{snap.source}` · last change seen {frame.hhmmss(snap.captured_at)}"
               + (f" · cluster id {md(snap.cluster_id)}" if snap.cluster_id else ""))

    # --- size and controller -----------------------------------------------------------------
    c = ui.metric_row()
    ui.metric(c, "Brokers alive", f"{summary.brokers_alive} / {summary.brokers_total}",
              delta=None if not summary.brokers_dead else f"{summary.brokers_dead} down", delta_color="red",
              delta_arrow="off")
    if ctrl is None or ctrl.broker_id is None or ctrl.broker_id < 0:
        ui.metric(c, "Controller", "none", delta="no active controller", delta_color="red", delta_arrow="off")
    else:
        ui.metric(c, "Active controller" if snap.is_kraft else "Controller",
                  f"node {ctrl.broker_id}" if snap.is_kraft else f"broker {ctrl.broker_id}",
                  delta=(f"quorum epoch {ctrl.epoch}" if snap.is_kraft else f"epoch {ctrl.epoch}")
                  if ctrl.epoch is not None else "epoch unknown", delta_color="gray", delta_arrow="off")
    ui.metric(c, "Topics", f"{summary.topics:,}")
    ui.metric(c, "Partitions", f"{summary.partitions:,}")
    ui.metric(c, "Replicas", f"{summary.replicas:,}")
    if ctrl is not None and ctrl.is_kraft:
        st.error(f"A KRaft controller owns this cluster (kraftControllerEpoch {ctrl.kraft_controller_epoch}); "
                 "ZooKeeper data may be stale and Keel will refuse writes.", icon=":material/block:")

    if snap.quorum is not None:
        quorum_section(snap)

    # --- health ------------------------------------------------------------------------------
    st.subheader("Partition health", anchor=False)
    bad = summary.under_replicated + summary.unavailable + summary.under_min_isr
    if summary.partitions == 0:
        st.info("No topics yet.")
    elif bad == 0 and not summary.missing_state and not summary.problems:
        st.success(f"All {summary.partitions:,} partitions have a live leader and a full ISR.",
                   icon=":material/check_circle:")
    else:
        issues = [f"{n:,} {what}" for n, what in (
            (summary.unavailable, "unavailable"), (summary.under_min_isr, "under min ISR"),
            (summary.under_replicated, "under-replicated"), (summary.missing_state, "without state"),
            (summary.problems, "corrupt znode(s)")) if n]
        alert = st.error if (summary.unavailable or summary.under_min_isr) else st.warning
        alert("Partitions need attention: " + ", ".join(issues) + ". See Topics for the partitions.",
              icon=":material/warning:")
        ops_panels.kraft_health_note(conn)  # issue 18: leaders that left ZooKeeper for KRaft are no outage
    h = ui.metric_row()
    ui.metric(h, "Under-replicated", f"{summary.under_replicated:,}",
                help="ISR smaller than the replication factor (kafka-topics --under-replicated-partitions)")
    ui.metric(h, "Unavailable", f"{summary.unavailable:,}",
                help=f"No live leader (kafka-topics --unavailable-partitions); "
                     f"{summary.offline:,} of them offline (leader -1)")
    ui.metric(h, "Under min ISR", f"{summary.under_min_isr:,}",
                help="ISR smaller than min.insync.replicas, or no live leader: producers with acks=all fail")
    ui.metric(h, "At min ISR", f"{summary.at_min_isr:,}",
                help="ISR exactly min.insync.replicas: one more failure blocks acks=all producers")
    ui.metric(h, "Without state", f"{summary.missing_state:,}",
                help="Partitions whose state znode is missing (not initialised by the controller)")
    ui.metric(h, "Problems", f"{summary.problems:,}",
                help="Znodes whose payload Keel could not decode; the rest of the cluster still loaded")
    broker_defaults.show_min_isr(summary.min_isr_basis)  # what "min ISR" means here: the brokers' own settings
    if snap.problems:
        with st.expander(f"{len(snap.problems):,} corrupt znode(s)", expanded=True, icon=":material/report:"):
            st.dataframe(pd.DataFrame([{"Path": p.path, "Problem": p.error} for p in snap.problems[:MAX_LISTED]]),
                         hide_index=True, column_config={"Problem": st.column_config.TextColumn(width="large")})
            if len(snap.problems) > MAX_LISTED:
                st.caption(f"… and {len(snap.problems) - MAX_LISTED:,} more")

    # --- brokers -----------------------------------------------------------------------------
    st.subheader("Brokers", anchor=False)
    df = conn.derived("overview.brokers", snap, lambda s: broker_table(s, summary), key=summary)
    df = ops_panels.label_kraft_brokers(conn, df)  # issue 18: "KRaft (left ZooKeeper)", not DOWN
    down = df[df["Status"] == "DOWN"]["Broker"].tolist()
    if down:
        st.error(f"Broker{'s' if len(down) > 1 else ''} down: {', '.join(map(str, down))}", icon=":material/dns:")
    # st.table (its cells are in the DOM, for readers and the end-to-end test), so its text cells are escaped:
    # hosts and racks are whatever the brokers registered
    st.table(_style_brokers(md_cells(df)), hide_index=True, alt="Brokers of the cluster")
    ui.broker_links(df["Broker"].tolist(), alive=snap.alive_broker_ids)

    replicas_fig, leaders_fig = conn.derived("overview.charts", snap, lambda s: load_charts(summary),
                                             key=summary)  # the summary depends on the brokers' settings too
    left, right = st.columns(2)
    left.plotly_chart(replicas_fig, key="replicas_chart", config={"displayModeBar": False})
    right.plotly_chart(leaders_fig, key="leaders_chart", config={"displayModeBar": False})
    ops_panels.rack_warning(conn, snap, key="ov", chart=False)  # issue 18: uneven racks load the small rack more

    # --- admin operations --------------------------------------------------------------------
    st.subheader("Admin operations in progress", anchor=False)
    ip = snap.in_progress
    o = ui.metric_row()
    ui.metric(o, "Reassignment", f"{len(ip.reassignment):,}",
                help=("Partitions the controller is reassigning (ListPartitionReassignments)" if snap.is_kraft
                      else "Partitions listed in /admin/reassign_partitions")
                     + (f"; {summary.reassigning_partitions:,} with adding/removing replicas"
                        if summary.reassigning_partitions else ""))
    if not snap.is_kraft:  # KRaft elects and deletes at once: no /admin node to wait on
        ui.metric(o, "Preferred election", f"{len(ip.preferred_election):,}",
                    help="Partitions listed in /admin/preferred_replica_election")
        ui.metric(o, "Topic deletions", f"{len(ip.deletion):,}", help="Topics under /admin/delete_topics")
    if not (ip.reassignment or ip.preferred_election or ip.deletion or summary.reassigning_partitions):
        st.caption("None: no reassignment is running." if snap.is_kraft else "None: no /admin node is pending.")
    if ip.reassignment:
        with st.expander(f"Reassignment of {len(ip.reassignment):,} partition(s)", icon=":material/swap_horiz:"):
            rows = [{"Topic": r.topic, "Partition": r.partition, "Target replicas": ", ".join(map(str, r.replicas))}
                    for r in ip.reassignment[:MAX_LISTED]]
            st.dataframe(pd.DataFrame(rows), hide_index=True)
            if len(ip.reassignment) > MAX_LISTED:
                st.caption(f"… and {len(ip.reassignment) - MAX_LISTED:,} more")
    if ip.preferred_election:
        with st.expander(f"Preferred-leader election of {len(ip.preferred_election):,} partition(s)",
                         icon=":material/how_to_vote:"):
            st.dataframe(pd.DataFrame([{"Topic": t, "Partition": p} for t, p in ip.preferred_election[:MAX_LISTED]]),
                         hide_index=True)
            if len(ip.preferred_election) > MAX_LISTED:
                st.caption(f"… and {len(ip.preferred_election) - MAX_LISTED:,} more")
    if ip.deletion:
        with st.expander(f"Deletion of {len(ip.deletion):,} topic(s)", icon=":material/delete:"):
            st.dataframe(pd.DataFrame({"Topic": list(ip.deletion[:MAX_LISTED])}), hide_index=True)
            if len(ip.deletion) > MAX_LISTED:
                st.caption(f"… and {len(ip.deletion) - MAX_LISTED:,} more")


live()
