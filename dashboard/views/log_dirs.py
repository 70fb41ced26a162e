"""JBOD log dirs: per broker and per directory the partitions and bytes (the brokers' describeLogDirs, or an uploaded
`kafka-log-dirs.sh --describe` output), a broker x directory heatmap, the imbalance between the directories of one
broker, and a plan that moves replicas between directories of the same broker (Kafka's reassignment JSON with
`log_dirs`), executed through the Admin API's alterReplicaLogDirs as Kafka's tool does (core.kafka.jbod)."""

from __future__ import annotations

import json
import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.errors import KeelError
from core.logdirs import JbodView, parse_log_dirs_view, plan_balance
from dashboard import actions, frame, migration_banner, ui
from dashboard.text import md, md_text, plotly

VIEW = "ld_view"  # (source label, JbodView, when)
RESULT = "ld_result"
SOURCES = ("The brokers (Admin API)", "An uploaded kafka-log-dirs --describe file")

ctx = frame.page_context()
conn, cfg, cluster = ctx.conn, ctx.config, ctx.cluster
st.title("Log dirs (JBOD)", anchor=False)
st.caption(f"Cluster **{md(cluster.name)}** · brokers with several log.dirs: where the bytes are, and moves between "
           "the directories of one broker")
snap = frame.live_snapshot(conn, in_fragment=False)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def _admin():
    from core.kafka.admin import KafkaAdmin

    return KafkaAdmin.for_cluster(cluster)


def _read_brokers() -> None:
    from core.kafka.jbod import describe

    try:
        with _admin() as admin:
            st.session_state[VIEW] = ("the brokers", describe(admin), time.strftime("%H:%M:%S"))
    except KeelError as e:
        st.session_state[VIEW] = e


source = st.radio("Read the log dirs from", SOURCES, horizontal=True, key="ld_source",
                  index=0 if cluster.bootstrap else 1)
if source == SOURCES[0]:
    if not cluster.bootstrap:
        st.info("This cluster has no `bootstrap` servers in keel.toml: Keel reaches only its ZooKeeper. Add "
                '`bootstrap = "broker1:9092,..."` to its table, or upload a file.', icon=":material/info:")
        st.stop()
    c = st.columns([1, 4], vertical_alignment="center")
    c[0].button("Read from the brokers", icon=":material/refresh:", key="ld_refresh", on_click=_read_brokers)
    if VIEW not in st.session_state or (isinstance(st.session_state[VIEW], tuple)
                                        and st.session_state[VIEW][0] != "the brokers"):
        _read_brokers()
else:
    up = st.file_uploader("kafka-log-dirs.sh --describe output (JSON)", type=["json", "txt", "log"], key="ld_upload")
    if up is None:
        st.info("Upload the output of this command (any broker as bootstrap server):", icon=":material/upload:")
        ui.commands(["kafka-log-dirs.sh", "--bootstrap-server", cluster.bootstrap or actions.bootstrap_servers(snap),
                     "--describe"])
        st.stop()
    try:
        st.session_state[VIEW] = (f"file {up.name}", parse_log_dirs_view(up.getvalue()), time.strftime("%H:%M:%S"))
    except KeelError as e:
        st.session_state[VIEW] = e

got = st.session_state.get(VIEW)
if isinstance(got, KeelError):
    st.error(md_text(got), icon=":material/error:")
    st.stop()
label, view, when = got
view: JbodView
st.caption(f"From {md(label)} at {when} · {len(view.brokers)} broker(s), {len(view.dirs)} director(ies)")
if not view.dirs:
    st.info("No log directory reported.")
    st.stop()

# --- heatmap and tables ------------------------------------------------------------------------------------

brokers, cols, values, paths = view.heatmap()
fig = go.Figure(go.Heatmap(z=values, x=cols, y=[str(b) for b in brokers], colorscale="Blues",
                           customdata=[[plotly(p) for p in row] for row in paths],
                           text=[[_size(v) if v is not None else "offline / none" for v in row] for row in values],
                           texttemplate="%{text}", hovertemplate="broker %{y} · %{customdata}<br>%{text}<extra></extra>",
                           colorbar={"title": "bytes"}))
fig.update_layout(height=120 + 40 * len(brokers), margin={"t": 30, "b": 10}, title="Bytes per broker and directory",
                  xaxis_title="directory (by path)", yaxis_title="broker", yaxis={"type": "category"})
st.plotly_chart(fig, key="ld_heatmap", config={"displayModeBar": False})

per = view.per_broker()
st.subheader("Imbalance between the directories of one broker", anchor=False)
imb = pd.DataFrame([{"Broker": b.broker, "Directories": len(b.dirs), "Online": len(b.online), "Bytes": b.total,
                     "Size": _size(b.total), "Fullest - emptiest": _size(b.spread),
                     "Imbalance (of the mean)": f"{b.imbalance:.0%}"} for b in per])
st.dataframe(imb, hide_index=True, key="ld_imbalance")
rows = [{"Broker": d.broker, "Log dir": d.path, "Partitions": d.partitions, "Bytes": d.bytes, "Size": _size(d.bytes),
         "State": f"OFFLINE: {d.error}" if d.error else "online",
         "Moves in flight": len(d.future)} for d in view.dirs]
st.dataframe(pd.DataFrame(rows), hide_index=True, key="ld_dirs",
             column_config={"Log dir": st.column_config.TextColumn(width="large")})
with st.expander("Replicas per directory", icon=":material/folder:"):
    pick = st.selectbox("Broker", list(view.brokers), key="ld_broker")
    reps = [{"Log dir": d.path, "Topic": r.topic, "Partition": r.partition, "Bytes": r.size, "Offset lag": r.offset_lag,
             "Future (moving here)": r.is_future} for d in view.broker(pick).dirs for r in d.replicas]
    st.dataframe(pd.DataFrame(reps), hide_index=True, key="ld_replicas")

# --- plan -----------------------------------------------------------------------------------------------

st.subheader("Plan: even out each broker's directories", anchor=False)
c = st.columns(2)
only = c[0].multiselect("Brokers", list(view.brokers), key="ld_plan_brokers", placeholder="all")
# a text field read exactly; no min: the engine says "the move budget must be 0 or more"
budget = ui.int_field("Most moves", 20, key="ld_plan_budget", container=c[1], help="0 or more; the largest gaps first")
if budget.invalid:
    st.stop()  # its message is under it; no plan, no Execute
budget = budget.value
replicas = {(p.topic, p.partition): p.replicas for p in snap.partitions()}
busy = {(p.topic, p.partition) for p in snap.partitions() if p.adding_replicas or p.removing_replicas}
busy |= {(r.topic, r.partition) for r in snap.in_progress.reassignment}
try:
    plan = plan_balance(view, replicas, brokers=set(only) or None, max_moves=budget, busy=busy)
except KeelError as e:
    st.error(md_text(e), icon=":material/error:")
    st.stop()
if not plan.moves:
    # an Execute that just evened the directories out leaves nothing to plan: its outcome first (issue 24)
    actions.show(RESULT)
    st.success("Nothing to move: no replica narrows the gap between a broker's directories.",
               icon=":material/check_circle:")
    st.stop()
doc = plan.document(replicas)
st.dataframe(pd.DataFrame([{"Topic": m.topic, "Partition": m.partition, "Broker": m.broker, "From": m.source,
                            "To": m.target, "Bytes": m.size, "Size": _size(m.size)} for m in plan.moves]),
             hide_index=True, key="ld_moves")
spread = []
for b in sorted({b for b, _ in plan.before}):
    before = [v for (x, _), v in plan.before.items() if x == b]
    after = [v for (x, _), v in plan.after.items() if x == b]
    if len(before) > 1:
        spread.append({"Broker": b, "Spread before": _size(max(before) - min(before)),
                       "Spread after": _size(max(after) - min(after))})
st.dataframe(pd.DataFrame(spread), hide_index=True, key="ld_spread")
text = json.dumps(doc, indent=1)
st.download_button("Download the plan (reassignment JSON with log_dirs)", text + "\n", file_name="log-dirs-plan.json",
                   mime="application/json", icon=":material/download:", key="ld_download")
st.caption(f"{len(plan.moves)} move(s), {_size(plan.bytes_moved)}. Kafka's own tool runs it too (replicas "
           "unchanged, only their directories):")
ui.commands(["kafka-reassign-partitions.sh", "--bootstrap-server", cluster.bootstrap or actions.bootstrap_servers(snap),
             "--reassignment-json-file", "log-dirs-plan.json", "--execute"])

# --- execute ------------------------------------------------------------------------------------------------

context = actions.fingerprint(doc)
SHOWN_MOVES = 20


def moved_text(requests, done, pending, notes, action_id: int) -> str:
    """What an Execute did, in plain text (one line each): the count, each move, where to find it in History."""
    lines = [f"Moved {len(done)} of {len(requests)} replica(s) between log directories (action #{action_id} in "
             "History)" + (f"; {len(pending)} still copying: check again with Read from the brokers" if pending
                           else "") + ":"]
    finished = {(r.topic, r.partition, r.broker) for r in done}
    for r in requests[:SHOWN_MOVES]:
        lines.append(f"{r.topic}-{r.partition} on broker {r.broker}: {r.current} → {r.target}"
                     + ("" if (r.topic, r.partition, r.broker) in finished else " (still copying)"))
    if len(requests) > SHOWN_MOVES:
        lines.append(f"… and {len(requests) - SHOWN_MOVES:,} more (History has them all).")
    return "\n".join(lines + list(notes))


def _execute(document: dict, form: actions.FormGuard) -> None:
    def work() -> str:
        from core.kafka.jbod import execute, wait_moved

        with _admin() as admin:  # the plan re-checked against the live assignment and directories
            moves = execute(admin, actions.store(), document, conn.snapshot(), cluster=cluster.name,
                            actor=actions.actor())
            if not moves.requests:
                return "Nothing to move: every replica is already in its target directory."
            done, pending = wait_moved(admin, moves.requests, timeout=30)
        st.session_state.pop(VIEW, None)  # read again
        return moved_text(list(moves.requests), done, pending, moves.notes, moves.action_id)

    actions.run(RESULT, work, cfg=cfg, action="move replicas between log directories", context=context, form=form)


if not cluster.bootstrap:
    st.caption(":material/lock: Executing needs the cluster's `bootstrap` servers (keel.toml): download the plan "
               "and run it with Kafka's tool instead.")
    st.stop()
reason = actions.blocked_reason(cfg, "move replicas between log directories") or migration_banner.block_reason(conn)
actions.show_blocked(reason)
ok = st.checkbox(f"I have reviewed the {len(plan.moves)} move(s) ({_size(plan.bytes_moved)} copied inside the "
                 "brokers)", key=f"ld_confirm_{context}", disabled=reason is not None)
st.button("Execute (alterReplicaLogDirs)", type="primary", icon=":material/drive_file_move:", key="ld_execute",
          disabled=reason is not None or not ok, help=reason, on_click=_execute,
          args=(doc, actions.guard(prefixes=("ld_plan_",), confirm=f"ld_confirm_{context}")))
actions.show(RESULT, context=context)
