"""Panels that several pages embed (issue 18): the partition-count advice (Create topic, a topic's page) and the
uneven-rack warning (Overview, Create topic, Reassign), and the KRaft labels of the Overview's broker table.
Each is one call from its page; the figures come from core.capacity / core.migration."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.capacity import advise_partitions, cluster_rack_skew, typical_replication_factor
from core.errors import KeelError
from core.model import ClusterSnapshot
from core.cluster.connection import Connection
from dashboard import migration_banner, ui
from dashboard.text import md, md_text, plotly

KRAFT_STATUS = "KRaft (left ZooKeeper)"


# --- how many partitions ---------------------------------------------------------------------------------


def partition_advice(key: str, *, brokers: int | None, replication_factor: int | None = None,
                     current: int | None = None, expanded: bool = False) -> None:
    """An expander: target / producer / consumer throughput in, the advised partition count and its trade-offs out.
    Inputs are text fields read by dashboard.ui.float_field, unbounded: the engine says what is wrong with them."""
    with st.expander("How many partitions? (from throughput)", expanded=expanded, icon=":material/calculate:"):
        c = st.columns(3)
        below = st.container()
        fields = (ui.float_field("Target MB/s", 100.0, key=f"{key}_adv_target", container=c[0], errors=below,
                                 help="The throughput the topic must carry (Tt)"),
                  ui.float_field("Producer MB/s per partition", 10.0, key=f"{key}_adv_producer", container=c[1],
                                 errors=below,
                                 help="Measured on a topic of one partition (kafka-producer-perf-test): Tp"),
                  ui.float_field("Consumer MB/s per partition", 20.0, key=f"{key}_adv_consumer", container=c[2],
                                 errors=below,
                                 help="Measured on a topic of one partition (kafka-consumer-perf-test): Tc"))
        if ui.invalid(*fields):
            return
        tt, tp, tc = (f.value for f in fields)
        try:
            a = advise_partitions(tt, tp, tc, brokers=brokers or None, replication_factor=replication_factor,
                                  current=current)
        except KeelError as e:
            st.error(md_text(e), icon=":material/error:")
            return
        # text, not st.metric: the pages' metric rows describe the cluster or the draft, not this calculator
        st.markdown(f"**Advised partitions: {a.partitions:,}** · max({tt:g} / {tp:g}, {tt:g} / {tc:g}) = "
                    f"{a.minimum} (bound by {a.bound_by}); {md(a.rounding)}.")
        if a.current_note:
            (st.success if current is not None and current >= a.minimum else st.warning)(
                md_text(a.current_note[0].upper() + a.current_note[1:]) + ".")
        for w in a.warnings:
            st.warning(md_text(w), icon=":material/warning:")
        st.markdown("**Trade-offs of more partitions**  \n" + "  \n".join(f"• {md(t)}" for t in a.tradeoffs))
        ui.commands(["python", "-m", "core", "advise-partitions", "--target-mbps", f"{tt:g}", "--producer-mbps",
                     f"{tp:g}", "--consumer-mbps", f"{tc:g}"] + (["--brokers", str(brokers)] if brokers else []))


# --- uneven racks -----------------------------------------------------------------------------------------


def _skew(conn: Connection | None, snap: ClusterSnapshot, rf: int | None, partitions: int | None):
    brokers = tuple((b.id, b.rack) for b in snap.brokers if b.alive)
    if not brokers or len({r for _, r in brokers}) < 2:
        return None
    memo = conn.memo("rack_skew") if conn is not None else {}
    key = (brokers, rf or typical_replication_factor([t.replication_factor for t in snap.topics], 10**9), partitions)
    if key not in memo:
        try:  # the engine's inputs, as the CLI's rack-skew: an RF the brokers cannot hold is no answer
            memo[key] = cluster_rack_skew(snap, rf, partitions)
        except KeelError:
            memo[key] = None
        if len(memo) > 64:
            memo.pop(next(iter(memo)))
    return memo[key]


def rack_warning(conn: Connection | None, snap: ClusterSnapshot, *, key: str, rf: int | None = None,
                 partitions: int | None = None, chart: bool = True) -> None:
    """When racks hold different numbers of brokers: a warning with the extra load per broker of the small rack
    (Kafka's rack-aware placement run over the live brokers: what a new topic or a plan gets now) and, in an
    expander, the rack-unaware comparison (a table, and with `chart` a bar chart)."""
    skew = _skew(conn, snap, rf, partitions)
    if skew is None or not skew.matters:
        return
    down = sorted(b.id for b in snap.brokers if not b.alive)
    st.warning(md_text(skew.summary()) + (f"  \nComputed over the {len(skew.shares)} live brokers (Kafka places "
                                          f"on live brokers only; down: {md(', '.join(map(str, down)))})."
                                          if down else ""), icon=":material/balance:")
    with st.expander("Rack-aware vs rack-unaware placement, per broker", icon=":material/compare_arrows:"):
        df = pd.DataFrame([{"Broker": s.broker, "Rack": s.rack, "Brokers in rack": s.rack_brokers,
                            "Rack-aware replicas": s.aware, "Rack-unaware replicas": s.unaware,
                            "Even share": s.even, "Extra load (rack-aware)": f"{s.extra:+.0%}"}
                           for s in skew.shares])
        st.dataframe(df, hide_index=True, key=f"{key}_rack_skew_table")
        st.caption(f"Rack-unaware placement is even, but two replicas of about {skew.unaware_shared:.0f} of the "
                   f"{skew.partitions} partitions share a rack: losing that rack loses both. Balance the racks "
                   "(add brokers to the small rack) to get both. " + " ".join(md(n) for n in skew.notes))
        if not chart:
            return
        fig = go.Figure()
        labels = [plotly(f"{s.broker} ({s.rack})") for s in skew.shares]
        fig.add_bar(x=labels, y=[s.aware for s in skew.shares], name="rack-aware (Kafka's default)")
        fig.add_bar(x=labels, y=[s.unaware for s in skew.shares], name="rack-unaware (--disable-rack-aware)")
        fig.add_scatter(x=labels, y=[s.even for s in skew.shares], mode="lines", name="even share",
                        line={"dash": "dash"})
        fig.update_layout(barmode="group", height=320, margin={"t": 30, "b": 10},
                          title=f"Replicas per broker for a topic of {skew.partitions} partitions, RF "
                                f"{skew.replication_factor}", yaxis_title="replicas", xaxis_title="broker (rack)")
        st.plotly_chart(fig, key=f"{key}_rack_skew_chart", config={"displayModeBar": False})


# --- KRaft migration: brokers that left ZooKeeper -----------------------------------------------------------


def label_kraft_brokers(conn: Connection, df: pd.DataFrame) -> pd.DataFrame:
    """The Overview's broker table with brokers that left /brokers/ids for KRaft marked as such (not DOWN)."""
    s = migration_banner.status(conn)
    if s is None or not s.kraft_brokers or "Status" not in df.columns:
        return df
    df = df.copy()
    df.loc[df["Broker"].isin(s.kraft_brokers), "Status"] = KRAFT_STATUS
    return df


def kraft_health_note(conn: Connection) -> None:
    s = migration_banner.status(conn)
    if s is not None and s.kraft_led:
        st.info(f"{s.kraft_led:,} partition(s) counted unavailable above are led by broker(s) "
                f"{md(', '.join(map(str, s.kraft_brokers)))}, which left /brokers/ids for KRaft during the "
                "migration: ZooKeeper no longer sees them, but they serve their partitions. Not an outage.",
                icon=":material/swap_calls:")


__all__ = ["partition_advice", "rack_warning", "label_kraft_brokers", "kraft_health_note", "KRAFT_STATUS"]
