"""History: every action Keel recorded for the selected cluster (who, what, when, result), newest first,
with the exact payload written and the rollback on selection. Reads the audit store only."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from core.store import Action
from dashboard import actions, frame
from dashboard.text import md, md_text

LIMITS = (200, 1000, 5000)
COLUMNS = ["ID", "Time", "Actor", "Kind", "Target", "Status", "Summary", "Result"]
STATUS_STYLE = {"applied": "color: #2CA02C; font-weight: 600", "failed": "color: #D62728; font-weight: 600",
                "pending": "color: #E69F00; font-weight: 600"}

ctx = frame.page_context()
st.title("History", anchor=False)


def table(rows: list[Action]) -> pd.DataFrame:
    return pd.DataFrame([{
        "ID": a.id, "Time": a.at.replace("T", " ").rstrip("Z"), "Actor": a.actor, "Kind": a.kind,
        "Target": a.target, "Summary": a.summary,
        "Status": a.status,
        # an applied action's result repeats its summary: only say something when there is something else to say
        "Result": "" if a.status == "applied" and a.result == a.summary else (a.result or ""),
    } for a in rows], columns=COLUMNS)


def readable(payload):
    """Znode data recorded as JSON text is shown as JSON."""
    if not isinstance(payload, list):
        return payload
    out = []
    for op in payload:
        if isinstance(op, dict) and isinstance(op.get("data"), str) and op["data"][:1] in "{[":
            try:
                op = {**op, "data": json.loads(op["data"])}
            except ValueError:
                pass
        out.append(op)
    return out


try:
    store = actions.store()
except Exception as e:  # an unreadable store must not take the page down
    st.error(md_text(f"Cannot open the audit store: {type(e).__name__}: {e}"), icon=":material/database:")
    st.stop()
st.caption(f"Cluster **{ctx.cluster.name}** · actions recorded in `{store.path}` · you act as "
           f"**{md(actions.actor())}** (`$KEEL_ACTOR`, else the OS user)")

f1, f2, f3, f4 = st.columns([2, 2, 1, 1], vertical_alignment="bottom")
limit = f3.selectbox("Newest", LIMITS, key="hist_limit", format_func=lambda n: f"{n:,} actions")
f4.button("Refresh", icon=":material/refresh:", key="hist_refresh", width="stretch")
try:
    recorded = store.actions(ctx.cluster.name, limit=limit)
except Exception as e:
    st.error(md_text(f"Cannot read the audit store {store.path}: {type(e).__name__}: {e}"), icon=":material/database:")
    st.stop()

kinds = sorted({a.kind for a in recorded})
chosen_kinds = f1.multiselect("Kind", kinds, key="hist_kinds", placeholder="all kinds")
chosen_status = f2.multiselect("Status", ["applied", "failed", "pending"], key="hist_status",
                               placeholder="any status")
rows = [a for a in recorded if (not chosen_kinds or a.kind in chosen_kinds)
        and (not chosen_status or a.status in chosen_status)]

if not recorded:
    st.info(f"No action has been recorded for cluster {ctx.cluster.name} yet.", icon=":material/history:")
    st.stop()

counts = {s: sum(a.status == s for a in recorded) for s in ("applied", "failed", "pending")}
m = st.columns(4)
m[0].metric("Actions", f"{len(recorded):,}" + ("+" if len(recorded) == limit else ""), border=True)
m[1].metric("Applied", f"{counts['applied']:,}", border=True)
m[2].metric("Failed", f"{counts['failed']:,}", border=True)
m[3].metric("Pending", f"{counts['pending']:,}", border=True,
            help="Recorded but never finished: the write may or may not have happened (Keel stopped mid-way). "
                 "Check the cluster.")

df = table(rows)
st.caption(f"{len(rows):,} of {len(recorded):,} actions, newest first. Select a row for its payload and rollback.")
event = st.dataframe(
    df.style.map(lambda v: STATUS_STYLE.get(v, ""), subset=["Status"]) if len(df) <= 2000 else df,
    hide_index=True, key="history_table", on_select="rerun", selection_mode="single-row",
    height=min(460, 38 + 35 * max(len(df), 1)),
    column_config={"ID": st.column_config.NumberColumn(format="%d", width="small"),
                   "Time": st.column_config.TextColumn("Time (UTC)", width="medium"),
                   "Summary": st.column_config.TextColumn(width="large"),
                   "Result": st.column_config.TextColumn(width="medium",
                                                         help="Why it failed (empty when applied as summarised)")})

selected = event.selection.rows if event is not None else []
if not selected or selected[0] >= len(rows):
    st.stop()
action = rows[selected[0]]
# summaries, targets and results quote topic names and config values: text, not markdown
st.subheader(f"Action #{action.id}: {md(action.kind)} {md(action.target)}", anchor=False)
status_note = {"applied": "", "failed": "", "pending": " — never finished: the write may or may not have "
                                                        "happened; check the cluster"}[action.status]
result = "" if action.result in (None, "", action.summary) else f": {md_text(action.result)}"
(st.success if action.status == "applied" else st.error if action.status == "failed" else st.warning)(
    f"**{md(action.status)}**{result}{status_note}")
st.markdown(f"{md_text(action.summary)}  \nBy **{md(action.actor)}** at {md(action.at)}"
            + (f", finished {md(action.finished)}" if action.finished else ""))
left, right = st.columns(2)
with left:
    st.markdown("**Payload** (what was written, in order)")
    st.json(readable(action.payload), expanded=3)
with right:
    st.markdown("**Rollback**")
    if action.rollback is None:
        st.caption("No rollback recorded for this action.")
    else:
        st.json(action.rollback, expanded=2)
        st.download_button("Download rollback JSON", json.dumps(action.rollback, indent=2) + "\n",
                           file_name=f"keel-rollback-{action.id}.json", mime="application/json",
                           key="hist_rollback_download", icon=":material/download:")
