"""Brokers: load and preferred-leader imbalance per broker, against the controller's threshold. A row opens the
broker's own page (views/broker.py). A down broker is never "over threshold" (nothing can be elected onto it), and
a broker that is the preferred replica of nothing has an imbalance of 0."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import health
from dashboard import broker_defaults, charts, frame, ui

BROKER_COLUMNS = ["Broker", "Status", "Rack", "Replicas", "Leaders", "Preferred", "Preferred not leading",
                  "Imbalance %", "Over threshold", "Electable"]

ctx = frame.page_context()
conn = ctx.conn
st.title("Brokers", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}**")
frame.live_snapshot(conn, in_fragment=False)


def broker_table(summary: health.ClusterSummary) -> pd.DataFrame:
    rows = [{
        "Broker": b.broker_id,
        "Status": "alive" if b.alive else "DOWN",
        "Rack": b.rack or "—",
        "Replicas": b.replicas,
        "Leaders": b.leaders,
        "Preferred": b.preferred,
        "Preferred not leading": b.preferred_not_leading,
        "Imbalance %": 0.0 if b.imbalance_ratio is None else round(b.imbalance_ratio * 100, 1),
        "Over threshold": ("YES" if b.over_threshold else "no") if b.alive else "down",
        "Electable": b.electable,
    } for b in summary.brokers]
    return pd.DataFrame(rows, columns=BROKER_COLUMNS)


def _style(df: pd.DataFrame):
    def row(r):
        if r["Status"] == "DOWN":
            return ["background-color: rgba(214,39,40,0.16)"] * len(r)
        if r["Over threshold"] == "YES":
            return ["background-color: rgba(255,160,0,0.22)"] * len(r)
        return [""] * len(r)
    return df.style.apply(row, axis=1).format({"Imbalance %": lambda v: f"{v:.1f}%"})


@frame.live_fragment("live-brokers")
def live() -> None:
    snap = frame.live_snapshot(conn, in_fragment=True)
    summary: health.ClusterSummary = broker_defaults.summary(ctx, snap)
    threshold = summary.leader_imbalance_threshold

    over = [b.broker_id for b in summary.brokers if b.over_threshold and b.alive]
    m = ui.metric_row()
    ui.metric(m, "Alive", f"{summary.brokers_alive} / {summary.brokers_total}", help="Brokers alive / known")
    ui.metric(m, "Threshold", f"{threshold}%",
              help="Imbalance threshold: leader.imbalance.per.broker.percentage as the controller applies it (Kafka "
                   "default 10)")
    ui.metric(m, "Over threshold", f"{len(over):,}",
              help="Alive brokers over the threshold (a down broker leads nothing until it returns)")
    ui.metric(m, "Off preferred", f"{summary.preferred_replica_imbalance:,}",
              help="Partitions off their preferred leader: the controller's PreferredReplicaImbalanceCount")
    down_over = [b.broker_id for b in summary.brokers if b.over_threshold and not b.alive]
    if down_over:
        st.info(f"Broker(s) {', '.join(map(str, down_over))} are down: their partitions are led by other replicas "
                "until they return. No election can move leadership to a down broker.", icon=":material/dns:")
    if over:
        ids = ", ".join(map(str, over))
        msg = f"Leader imbalance over {threshold}% on broker(s) {ids}."
        if summary.reassignment_in_progress:
            msg += " The controller will not rebalance leaders while a reassignment is in progress."
        else:
            msg += " A preferred-leader election would move leadership back."
        st.warning(msg, icon=":material/balance:")

    df = conn.derived("brokers.table", snap, lambda s: broker_table(summary), key=summary)
    # a stable key keeps the browser's sort and selection across the 2 s live updates
    event = st.dataframe(_style(df), hide_index=True, key="broker_loads", on_select="rerun",
                         selection_mode="single-row",
                         column_config={"Broker": st.column_config.NumberColumn(format="%d")})
    picked = ui.selected_row(event, df)
    if picked is not None:
        st.switch_page(ui.BROKER, query_params={"broker": str(int(picked["Broker"]))})
    st.caption("Select a row to open the broker. Imbalance = partitions whose preferred (first) replica is the "
               "broker but whose leader is not, divided by the partitions whose preferred replica is the broker; "
               "topics being deleted are left out; 0 for a broker that is the preferred replica of nothing. "
               "Electable: of those, the ones whose preferred replica is alive and in the ISR.")
    ui.broker_links([b.broker_id for b in summary.brokers], alive=snap.alive_broker_ids)

    loads = summary.brokers
    st.plotly_chart(conn.derived("imbalance_chart", snap, lambda s: charts.imbalance_chart(
        [b.broker_id for b in loads], [b.imbalance_ratio for b in loads], [b.alive for b in loads], threshold),
        key=summary),
        key="imbalance_chart", config={"displayModeBar": False})

    if summary.racks or summary.brokers_without_rack:
        st.subheader("Racks", anchor=False)
        by_rack: dict[str, dict] = {}
        for b in loads:
            r = by_rack.setdefault(b.rack or charts.NO_RACK,
                                   {"Rack": b.rack or charts.NO_RACK, "Brokers": 0, "Down": 0, "Replicas": 0,
                                    "Leaders": 0})
            r["Brokers"] += 1
            r["Down"] += 0 if b.alive else 1
            r["Replicas"] += b.replicas
            r["Leaders"] += b.leaders
        # st.dataframe, not st.table: table cells are markdown, and a rack is whatever a broker registered
        st.dataframe(pd.DataFrame(sorted(by_rack.values(), key=lambda r: r["Rack"])), hide_index=True,
                     key="broker_racks")


live()
