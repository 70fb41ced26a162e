"""History: every action Keel recorded (who, how they were identified, their role, what, where, when, result),
newest first, filtered by cluster (the selected one by default), actor, kind and status, exported as CSV; the
selected row (or the one `?action=N` names: other pages link here) with the exact payload written and its rollback
as JSON, and the links between a reassignment and its rollbacks. Reads the audit store only."""

from __future__ import annotations

import json

import streamlit as st

from core.errors import NumberFormatError
from core.numbers import parse_int
from core.audit.store import NO_CLUSTER, Action
from dashboard import actions, frame, identity, ui
from dashboard.audit import readable, table, to_csv
from dashboard.text import md, md_text

LIMITS = (200, 1000, 5000)
STATUS_STYLE = {"applied": "color: #2CA02C; font-weight: 600", "failed": "color: #D62728; font-weight: 600",
                "pending": "color: #E69F00; font-weight: 600"}
NO_CLUSTER_LABEL = "(no cluster: sign-ins, fleet collections)"
# What a row says first, then who and where: the summary within the first ~400 px, so that it is on screen at 1600 px
# (after Actor, Source, Role and Cluster it was past the right edge). The CSV keeps dashboard.audit's order.
SHOWN = ["ID", "Time", "Status", "Kind", "Summary", "Target", "Actor", "Role", "Source", "Cluster", "Result",
         "Completed", "Link"]
PAGE = "views/history.py"
MAX_ACTION_ID = 2 ** 63 - 1  # SQLite's largest integer

ctx = frame.page_context()
st.title("History", anchor=False)


def wanted_action() -> int | None:
    """`?action=N`: an action id, read by core.numbers (bounded: 30 digits would overflow SQLite's integer)."""
    raw = st.query_params.get("action")
    try:
        return parse_int(raw, "?action", minimum=1, maximum=MAX_ACTION_ID, optional=True)
    except NumberFormatError as e:
        st.warning(md_text(e.message), icon=":material/link_off:")
        return None


try:
    store = actions.store()
except Exception as e:  # an unreadable store must not take the page down
    st.error(md_text(f"Cannot open the audit store: {type(e).__name__}: {e}"), icon=":material/database:")
    st.stop()
who = identity.session_identity()
st.caption(f"Cluster **{ctx.cluster.name}** · actions recorded in `{store.path}` · you act as "
           f"**{md(actions.actor())}** ({who.source})")

try:
    facets = store.facets()
except Exception as e:
    st.error(md_text(f"Cannot read the audit store {store.path}: {type(e).__name__}: {e}"), icon=":material/database:")
    st.stop()
clusters = sorted(set(facets["cluster"]) | set(ctx.config.clusters), key=lambda c: (c == NO_CLUSTER, c))
f1, f2, f3, f4, f5 = st.columns([3, 3, 3, 2, 2], vertical_alignment="bottom")
chosen_clusters = f1.multiselect("Cluster", clusters, default=[ctx.cluster.name], key=f"hist_clusters::{ctx.cluster.name}",
                                 format_func=lambda c: NO_CLUSTER_LABEL if c == NO_CLUSTER else c,
                                 placeholder="every cluster")
chosen_actors = f2.multiselect("Actor", facets["actor"], key="hist_actors", placeholder="anyone")
limit = f5.selectbox("Newest", LIMITS, key="hist_limit", format_func=lambda n: f"{n:,} actions")
try:
    recorded = store.actions(chosen_clusters or None, actor=chosen_actors or None, limit=limit)
except Exception as e:
    st.error(md_text(f"Cannot read the audit store {store.path}: {type(e).__name__}: {e}"), icon=":material/database:")
    st.stop()
kinds = sorted({a.kind for a in recorded})
chosen_kinds = f3.multiselect("Action", kinds, key="hist_kinds", placeholder="all kinds")
chosen_status = f4.multiselect("Status", ["applied", "failed", "pending"], key="hist_status", placeholder="any status")
rows = [a for a in recorded if (not chosen_kinds or a.kind in chosen_kinds)
        and (not chosen_status or a.status in chosen_status)]
wanted = wanted_action()

if not recorded and wanted is None:
    where = f"cluster {ctx.cluster.name}" if chosen_clusters == [ctx.cluster.name] else "these filters"
    st.info(md_text(f"No action has been recorded for {where} yet."), icon=":material/history:")
    st.stop()

counts = {s: sum(a.status == s for a in recorded) for s in ("applied", "failed", "pending")}
row = ui.metric_row()  # wraps instead of cutting labels at 900 px
ui.metric(row, "Actions", f"{len(recorded):,}" + ("+" if len(recorded) == limit else ""))
ui.metric(row, "Applied", f"{counts['applied']:,}")
ui.metric(row, "Failed", f"{counts['failed']:,}",
          help="Failed writes, actions refused for lack of role, and refused sign-ins")
ui.metric(row, "Pending", f"{counts['pending']:,}",
          help="Recorded but never finished: the write may or may not have happened (Keel stopped mid-way). "
               "Check the cluster.")

df = table(rows)
c1, c2, c3 = st.columns([6, 1, 1], vertical_alignment="bottom")
c1.caption(f"{len(rows):,} of {len(recorded):,} actions, newest first. Select a row for its payload and rollback "
           "(its link: `?action=N`).")
c2.button("Refresh", icon=":material/refresh:", key="hist_refresh", width="stretch")
c3.download_button("CSV", to_csv(df), file_name="keel-history.csv", mime="text/csv", key="hist_csv",
                   icon=":material/download:", width="stretch", help="The rows shown, as CSV")
event = st.dataframe(
    df.style.map(lambda v: STATUS_STYLE.get(v, ""), subset=["Status"]) if len(df) <= 2000 else df,
    hide_index=True, key="history_table", on_select="rerun", selection_mode="single-row",
    height=min(460, 38 + 35 * max(len(df), 1)), column_order=SHOWN,
    column_config={"ID": st.column_config.NumberColumn(format="%d", width=50),
                   "Time": st.column_config.TextColumn("Time (UTC)", width=150),
                   "Source": st.column_config.TextColumn(width="small", help="How the actor was identified: oidc, "
                                                         "proxy, cli or none (not signed in: the local user)"),
                   "Role": st.column_config.TextColumn(width="small", help="The actor's role on the cluster then"),
                   "Summary": st.column_config.TextColumn(width="large"),
                   "Result": st.column_config.TextColumn(width="medium",
                                                         help="Why it failed (empty when applied as summarised)"),
                   "Completed": st.column_config.TextColumn("Completed (UTC)", width="medium",
                                                            help="A reassignment: when verify found it complete")})

selected = event.selection.rows if event is not None else []
action: Action | None = None
if selected and selected[0] < len(rows):
    action = rows[selected[0]]
    if wanted != action.id:
        st.query_params["action"] = str(action.id)  # the URL names the row shown: paste it into a chat
elif wanted is not None:
    action = store.action(wanted)
    if action is None:
        st.warning(f"No action #{wanted} in the audit store {md(str(store.path))}.", icon=":material/link_off:")
if action is None:
    st.stop()

# summaries, targets and results quote topic names and config values: text, not markdown
st.subheader(f"Action #{action.id}: {md(action.kind)} {md(action.target)}", anchor=False)
status_note = {"applied": "", "failed": "", "pending": " — never finished: the write may or may not have "
                                                        "happened; check the cluster"}[action.status]
result = "" if action.result in (None, "", action.summary) else f": {md_text(action.result)}"
(st.success if action.status == "applied" else st.error if action.status == "failed" else st.warning)(
    f"**{md(action.status)}**{result}{status_note}")
how = ", ".join(x for x in (action.source and f"via {action.source}", action.role and f"role {action.role}") if x)
st.markdown(f"{md_text(action.summary)}  \nBy **{md(action.actor)}**" + (f" ({md(how)})" if how else "")
            + (f" on cluster **{md(action.cluster)}**" if action.cluster else "") + f" at {md(action.at)}"
            + (f", finished {md(action.finished)}" if action.finished else "")
            + (f", completed {md(action.completed_at)}" if action.completed_at else ""))
if action.rollback_of or action.rolled_back_by:
    links = st.container(horizontal=True)
    if action.rollback_of:
        links.page_link(PAGE, label=f"Rollback of action #{action.rollback_of}", icon=":material/undo:",
                        query_params={"action": str(action.rollback_of)})
    for i in action.rolled_back_by:
        links.page_link(PAGE, label=f"Rolled back by action #{i}", icon=":material/redo:",
                        query_params={"action": str(i)})
left, right = st.columns(2)
with left:
    st.markdown("**Payload** (what was written, in order)")
    st.json(readable(action.payload), expanded=3)
with right:
    st.markdown("**Rollback**")
    if action.rollback is None:
        st.caption("No rollback recorded for this action.")
    else:
        rollback = readable(action.rollback)
        st.json(rollback, expanded=2)
        st.download_button("Download rollback JSON", json.dumps(rollback, indent=2) + "\n",
                           file_name=f"keel-rollback-{action.id}.json", mime="application/json",
                           key="hist_rollback_download", icon=":material/download:")
