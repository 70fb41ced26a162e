"""Consumer groups (needs the cluster's `bootstrap` servers): every group with its state, members and total lag;
per partition the committed offset, the log end offset and the lag; totals per group and topic. Tables sort by any
column (click its header). Read through the Admin API (core.kafka.groups). An operator resets a group's offsets,
deletes them or the empty group, and undoes that (dashboard.group_reset)."""

from __future__ import annotations

import shlex
import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.consumer_groups import lag_rows, totals
from core.errors import KeelError
from dashboard import frame, group_reset
from dashboard.text import md, md_text, plotly

CACHE = "cg_groups"  # (when, groups | error)
MAX_AGE = 10.0

ctx = frame.page_context()
cluster = ctx.cluster
st.title("Consumer groups", anchor=False)
st.caption(f"Cluster **{md(cluster.name)}** · lag = log end offset − committed offset, as kafka-consumer-groups "
           "--describe shows it")
frame.live_snapshot(ctx.conn, in_fragment=False)
if not cluster.bootstrap:
    st.info("Consumer groups live in the brokers, not in ZooKeeper: add the cluster's `bootstrap` servers to its "
            'table in keel.toml (`bootstrap = "broker1:9092,..."`).', icon=":material/info:")
    st.stop()


def _load() -> None:
    from core.kafka.admin import KafkaAdmin
    from core.kafka.groups import consumer_groups

    try:
        with KafkaAdmin.for_cluster(cluster, timeout=10.0) as admin:
            st.session_state[CACHE] = (time.monotonic(), consumer_groups(admin), time.strftime("%H:%M:%S"))
    except KeelError as e:
        st.session_state[CACHE] = (time.monotonic(), e, time.strftime("%H:%M:%S"))


head = st.container(horizontal=True, vertical_alignment="center", gap="medium")  # wraps: the button stays whole
head.button("Refresh", icon=":material/refresh:", key="cg_refresh", on_click=_load, width="content")
got = st.session_state.get(CACHE)
if got is None or time.monotonic() - got[0] > MAX_AGE:
    _load()
    got = st.session_state[CACHE]
_, groups, when = got
if isinstance(groups, KeelError):
    st.error(md_text(groups), icon=":material/error:")
    st.stop()
head.caption(f"Read at {when} from {md(cluster.bootstrap)}")
if not groups:
    st.info("No consumer group in this cluster.")
    st.stop()

st.dataframe(pd.DataFrame([{"Group": g.group_id, "State": g.state, "Members": len(g.members), "Topics": len(g.topics),
                            "Partitions": len(g.partitions), "Total lag": g.total_lag} for g in groups])
             .sort_values(["Total lag", "Group"], ascending=[False, True]),
             hide_index=True, key="cg_groups")

st.subheader("Lag per group and topic", anchor=False)
st.dataframe(pd.DataFrame(totals(groups)).rename(columns={"group": "Group", "state": "State", "topic": "Topic",
                                                          "partitions": "Partitions", "committed": "Committed",
                                                          "lag": "Lag", "members": "Members"}),
             hide_index=True, key="cg_totals")

st.subheader("A group", anchor=False)
pick = st.selectbox("Group", [g.group_id for g in groups], key="cg_group")
g = next(x for x in groups if x.group_id == pick)
m = st.columns(3)
m[0].metric("State", md(g.state), border=True)
m[1].metric("Members", len(g.members), border=True)
m[2].metric("Total lag", f"{g.total_lag:,}", border=True)
rows = lag_rows([g])
df = pd.DataFrame([{"Topic": r.topic, "Partition": r.partition, "Committed": r.committed, "Log end": r.log_end,
                    "Lag": r.lag, "Consumer": r.member_id or "—", "Host": r.host or "—", "Client": r.client_id or "—"}
                   for r in rows])
st.dataframe(df, hide_index=True, key="cg_partitions")
if rows:
    fig = go.Figure(go.Bar(x=[plotly(f"{r.topic}-{r.partition}") for r in rows], y=[r.lag or 0 for r in rows],
                           hovertemplate="%{x}: lag %{y}<extra></extra>"))
    fig.update_layout(height=280, margin={"t": 30, "b": 10}, title=plotly(f"Lag per partition of {g.group_id}"),
                      yaxis_title="messages behind")
    st.plotly_chart(fig, key="cg_chart", config={"displayModeBar": False})
if g.members:
    with st.expander(f"{len(g.members)} member(s)", icon=":material/group:"):
        st.dataframe(pd.DataFrame([{"Member": mb.member_id, "Client": mb.client_id, "Host": mb.host,
                                    "Partitions": ", ".join(f"{t}-{p}" for t, p in mb.assignment)}
                                   for mb in g.members]), hide_index=True, key="cg_members")
# a code block: markdown escapes would show in a code span (they are literal there); a group id is any string
st.code(f"python -m core consumer-groups --bootstrap-server {shlex.quote(cluster.bootstrap)} "
        f"--group {shlex.quote(g.group_id)}", language="bash", wrap_lines=True)
# issue 30: reset / delete the group's offsets, delete it when empty, undo (operator, through the write gate)
group_reset.draw(ctx.config, cluster, g, lambda: st.session_state.pop(CACHE, None))
