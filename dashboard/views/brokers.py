"""Brokers: load and preferred-leader imbalance per broker, against the controller's threshold."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import health
from dashboard import charts, frame

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
        "Imbalance %": None if b.imbalance_ratio is None else round(b.imbalance_ratio * 100, 1),
        "Over threshold": "YES" if b.over_threshold else "no",
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
    return df.style.apply(row, axis=1).format({"Imbalance %": lambda v: "n/a" if pd.isna(v) else f"{v:.1f}%"})


@st.fragment(run_every=frame.REFRESH_SECONDS)
def live() -> None:
    snap = frame.live_snapshot(conn, in_fragment=True)
    summary: health.ClusterSummary = conn.derived("summary", snap, health.summarize)
    threshold = summary.leader_imbalance_threshold

    m = st.columns(4)
    m[0].metric("Brokers alive", f"{summary.brokers_alive} / {summary.brokers_total}", border=True)
    m[1].metric("Imbalance threshold", f"{threshold}%", border=True,
                help="leader.imbalance.per.broker.percentage as the controller applies it (Kafka default 10)")
    m[2].metric("Brokers over threshold", len(summary.brokers_over_threshold), border=True)
    m[3].metric("Partitions off preferred leader", f"{summary.preferred_replica_imbalance:,}", border=True,
                help="The controller's PreferredReplicaImbalanceCount")
    if summary.brokers_over_threshold:
        ids = ", ".join(map(str, summary.brokers_over_threshold))
        msg = f"Leader imbalance over {threshold}% on broker(s) {ids}."
        if summary.reassignment_in_progress:
            msg += " The controller will not rebalance leaders while a reassignment is in progress."
        else:
            msg += " A preferred-leader election would move leadership back."
        st.warning(msg, icon=":material/balance:")

    df = conn.derived("brokers.table", snap, lambda s: broker_table(summary))
    st.dataframe(_style(df), hide_index=True, key="broker_loads",
                 column_config={"Broker": st.column_config.NumberColumn(format="%d")})
    st.caption("Imbalance = partitions whose preferred (first) replica is the broker but whose leader is not, "
               "divided by the partitions whose preferred replica is the broker; topics being deleted are left out. "
               "Electable: of those, the ones whose preferred replica is alive and in the ISR. "
               "No imbalance (None): the broker is the preferred replica of nothing, so the controller does not "
               "check it.")

    loads = summary.brokers
    st.plotly_chart(
        charts.imbalance_chart([b.broker_id for b in loads], [b.imbalance_ratio for b in loads],
                               [b.alive for b in loads], threshold),
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
