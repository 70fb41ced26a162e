"""Broker: one broker's page. Its replicas and leaders by topic, rack, endpoints, dynamic configs
(`/config/brokers/<id>` and the cluster default `/config/brokers/<default>`), the partitions where it is the only
in-sync replica (they go offline if it stops), and its share of the cluster.

The broker is in the URL (`?broker=3`): Overview, Brokers and Topics link here. Selecting a topic row opens it.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from core import health
from core.restarts import only_in_sync_on
from core.shares import even_share
from core.model import NO_LEADER, ClusterSnapshot
from dashboard import broker_defaults, frame, topic_sizes, ui
from dashboard.text import md

TOPIC_COLUMNS = ["Topic", "Replicas", "Leaders", "Preferred", "Partitions", "Share %"]
ONLY_ISR_COLUMNS = ["Topic", "Partition", "Replicas", "ISR", "Leader"]
CONFIG_COLUMNS = ["Key", "Value", "Source"]

ctx = frame.page_context()
conn = ctx.conn
st.title("Broker", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}** · one broker's load, configs and the partitions that depend on it")
frame.live_snapshot(conn, in_fragment=False)


@dataclass(frozen=True)
class BrokerView:
    """One broker's numbers, from a snapshot (pure)."""

    by_topic: pd.DataFrame
    only_isr: pd.DataFrame
    replicas: int
    leaders: int
    preferred: int
    total_replicas: int
    total_leaders: int


def broker_view(snap: ClusterSnapshot, broker_id: int) -> BrokerView:
    reps: Counter[str] = Counter()
    leads: Counter[str] = Counter()
    pref: Counter[str] = Counter()
    size: dict[str, int] = {}
    only = []
    alive = snap.alive_broker_ids
    total_replicas = total_leaders = 0
    for t in snap.topics:
        size[t.name] = len(t.partitions)
        for p in t.partitions:
            total_replicas += len(p.replicas)
            total_leaders += p.leader != NO_LEADER
            if broker_id not in p.replicas:
                continue
            reps[t.name] += 1
            leads[t.name] += p.leader == broker_id
            pref[t.name] += p.replicas[0] == broker_id
            if only_in_sync_on(p, broker_id, alive):  # as restart-check counts it (core.restarts)
                only.append({"Topic": t.name, "Partition": p.partition, "Replicas": ui_ids(p.replicas),
                             "ISR": ui_ids(p.isr), "Leader": "none" if p.leader == NO_LEADER else str(p.leader)})
    rows = [{"Topic": name, "Replicas": n, "Leaders": leads[name], "Preferred": pref[name],
             "Partitions": size[name], "Share %": round(100.0 * n / max(1, size[name]), 1)}
            for name, n in sorted(reps.items(), key=lambda kv: (-kv[1], kv[0]))]
    return BrokerView(pd.DataFrame(rows, columns=TOPIC_COLUMNS), pd.DataFrame(only, columns=ONLY_ISR_COLUMNS),
                      sum(reps.values()), sum(leads.values()), sum(pref.values()), total_replicas, total_leaders)


def ui_ids(xs) -> str:
    return ", ".join(map(str, xs)) if xs else "—"


def config_table(snap: ClusterSnapshot, broker_id: int) -> pd.DataFrame:
    """The broker's dynamic configs: its own (/config/brokers/<id>) over the cluster default (<default>)."""
    own = dict(snap.broker_configs.get(str(broker_id), {}))
    default = dict(snap.broker_configs.get("<default>", {}))
    # KRaft keeps them in its metadata log, not in znodes: only the ZooKeeper paths are worth naming
    mine, shared = (("", "") if snap.is_kraft else (f" (/config/brokers/{broker_id})", " (/config/brokers/<default>)"))
    rows = [{"Key": k, "Value": v, "Source": f"broker {broker_id}{mine}"} for k, v in sorted(own.items())]
    rows += [{"Key": k, "Value": v, "Source": f"cluster default{shared}"}
             for k, v in sorted(default.items()) if k not in own]
    return pd.DataFrame(rows, columns=CONFIG_COLUMNS)


def _open_topic(names: list[str]) -> None:
    try:
        rows = st.session_state["broker_topics"]["selection"]["rows"]
    except (KeyError, TypeError):
        return
    if rows and rows[0] < len(names):
        st.session_state["broker_open_topic"] = names[rows[0]]


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "0%"


@frame.live_fragment("live-broker")
def live() -> None:
    snap = frame.live_snapshot(conn, in_fragment=True)
    summary: health.ClusterSummary = broker_defaults.summary(ctx, snap)
    loads = {b.broker_id: b for b in summary.brokers}
    ids = sorted(loads)
    # no format_func: a bound widget writes its label to the URL, so the label is the broker id itself
    broker_id = st.selectbox("Broker", ids, key="broker", bind="query-params", placeholder="Choose a broker…",
                             index=0 if ids else None)
    if broker_id is None:
        st.caption("No broker in this cluster.")
        return
    wanted = st.session_state.pop("broker_open_topic", None)
    if wanted is not None:
        st.switch_page(ui.TOPICS, query_params={"topic": wanted})
    load = loads[broker_id]
    b = snap.broker_by_id.get(broker_id)
    view: BrokerView = conn.derived("broker.view", snap, lambda s: broker_view(s, broker_id), key=broker_id)
    ctrl = snap.controller.broker_id if snap.controller else None

    m = ui.metric_row()
    ui.metric(m, "Status", "alive" if load.alive else "DOWN",
              help="Registered under /brokers/ids (alive), or only named in assignments (down)")
    ui.metric(m, "Rack", md(load.rack or "—"),
              help="As its last registration said, before it went down" if b is not None and b.remembered else None)
    ui.metric(m, "Replicas", f"{view.replicas:,}", delta=f"{_pct(view.replicas, view.total_replicas)} of all",
              delta_color="gray", delta_arrow="off", help="Replicas it holds, and its share of all replicas")
    ui.metric(m, "Leaders", f"{view.leaders:,}", delta=f"{_pct(view.leaders, view.total_leaders)} of all",
              delta_color="gray", delta_arrow="off", help="Partitions it leads now, and its share of all leaders")
    ui.metric(m, "Preferred", f"{view.preferred:,}",
              help="Partitions whose preferred (first) replica it is")
    ui.metric(m, "Imbalance", f"{(load.imbalance_ratio or 0) * 100:.1f}%",
              help="Of the partitions it is preferred for, the share it does not lead (the controller's "
                   "leader-imbalance ratio)")
    ui.metric(m, "Only in-sync", f"{len(view.only_isr):,}",
              help="Partitions where it is the only in-sync replica: they go offline if it stops")
    topic_sizes.broker_metric(m, topic_sizes.shown(conn, ctx.cluster, snap), broker_id)  # issue 30: its bytes
    if ctrl == broker_id:
        st.caption(":material/star: This broker is the controller.")
    share = conn.derived("even_share", snap, even_share)
    if share.brokers:
        down = (f", {len(share.down_holding)} of them down but holding replicas" if share.down_holding else "")
        st.caption(f"An even share would be {share.per_broker:,.0f} replicas per broker ({share.replicas:,} replicas "
                   f"over {share.brokers} brokers{down}).")

    left, right = st.columns(2, gap="medium")
    with left:
        st.subheader("Endpoints", anchor=False)
        if b is not None and b.remembered:
            st.warning(f"Broker {broker_id} is down: it is not registered under /brokers/ids. Its endpoints and rack "
                       "below are from its last registration Keel saw.", icon=":material/dns:")
            endpoints = list(b.endpoints) or ([f"{b.host}:{b.port}"] if b.host else [])
            st.dataframe(pd.DataFrame({"Endpoint (last seen)": endpoints or ["—"]}), hide_index=True,
                         key="broker_endpoints")
        elif b is None or not b.alive:
            st.warning(f"Broker {broker_id} is down: it is not registered under /brokers/ids, so its endpoints and "
                       "rack are unknown until it returns.", icon=":material/dns:")
        else:
            endpoints = list(b.endpoints) or ([f"{b.host}:{b.port}"] if b.host else [])
            st.dataframe(pd.DataFrame({"Endpoint": endpoints or ["—"]}), hide_index=True, key="broker_endpoints")
    with right:
        st.subheader("Dynamic configs", anchor=False)
        configs = config_table(snap, broker_id)
        if configs.empty:
            st.caption("None: neither this broker's dynamic settings nor the cluster default set anything "
                       "(kafka-configs --entity-type brokers; server.properties is not shown)." if snap.is_kraft else
                       "None: neither /config/brokers/" + str(broker_id) + " nor /config/brokers/<default> sets "
                       "anything (server.properties is not in ZooKeeper).")
        else:
            st.dataframe(configs, hide_index=True, key="broker_configs",
                         column_config={"Source": st.column_config.TextColumn(width="medium")})

    st.subheader("Replicas and leaders by topic", anchor=False)
    if view.by_topic.empty:
        st.info(f"Broker {broker_id} holds no replica.", icon=":material/inbox:")
    else:
        st.caption(f"{len(view.by_topic):,} topic(s) · select a row to open the topic")
        st.dataframe(view.by_topic, hide_index=True, key="broker_topics",
                     on_select=partial(_open_topic, view.by_topic["Topic"].tolist()),
                     selection_mode="single-row",
                     height=min(420, 38 + 35 * max(len(view.by_topic), 1)),
                     column_config={"Share %": st.column_config.ProgressColumn(
                         "Share %", help="Of the topic's partitions, the share with a replica here", format="%.0f%%",
                         min_value=0, max_value=100)})

    st.subheader("Only in-sync replica", anchor=False)
    if view.only_isr.empty:
        st.success("No partition depends on this broker alone: every partition it holds has another in-sync replica.",
                   icon=":material/check_circle:")
    else:
        st.warning(f"{len(view.only_isr):,} partition(s) have broker {broker_id} as their only in-sync replica: "
                   "they go offline if it stops.", icon=":material/warning:")
        st.dataframe(view.only_isr, hide_index=True, key="broker_only_isr",
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small")})


live()
