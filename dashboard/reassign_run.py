"""The Reassign page's execution side: Execute (a whole plan or its first wave), then the progress panel that follows
the run live, executes the next waves, verifies (removing the throttles) and rolls back.

Every write goes through core.zk.reassign, which re-reads live state, refuses while /admin/reassign_partitions
exists and records the action and its rollback in the audit store (History lists them). The run a session follows
lives in its session state under RUN, so a reload keeps it; one recorded earlier can be picked up again with
follow_earlier. The progress panel is a 2 s fragment over the live snapshot.
"""

from __future__ import annotations

import time

import streamlit as st

from core.errors import KeelError
from core.plans import ReassignmentPlan, parse_reassignment
from core.zk import reassign
from dashboard import actions, state
from dashboard import reassign_state as rs
from dashboard.text import md_text

RESULT = "ra_result"  # the outcome of Execute
RUN_RESULT = "ra_run_result"  # the outcome of Verify / Next wave / Rollback
RUN = "ra_run"  # the reassignment this session follows
RUN_PLAN = "ra_run_plan"  # (action id, parsed plan) of RUN
STATUS_STYLE = {reassign.COMPLETE: "color: #2CA02C; font-weight: 600",
                reassign.IN_FLIGHT: "color: #E69F00; font-weight: 600",
                reassign.NOT_AT_TARGET: "color: #D62728; font-weight: 600"}


def _track(done: reassign.Executed, doc: ReassignmentPlan, throttle: int | None, label: str,
           waves: dict | None = None) -> None:
    st.session_state[RUN] = {
        "action_id": done.action_id, "label": label, "plan_json": doc.to_json(),
        "rollback_json": done.rollback.to_json(), "throttle": throttle, "partitions": done.partitions,
        "moving": done.moving, "throttled_brokers": list(done.throttles.brokers) if done.throttles else [],
        "waves": waves, "started": time.time(), "verified": None,
    }
    st.session_state.pop(RUN_PLAN, None)
    actions.clear(RUN_RESULT)


def _run_plan(run: dict) -> ReassignmentPlan:
    cached = st.session_state.get(RUN_PLAN)
    if cached is None or cached[0] != run["action_id"]:
        cached = (run["action_id"], parse_reassignment(run["plan_json"]))
        st.session_state[RUN_PLAN] = cached
    return cached[1]


def _await_start(ctx: state.PageContext, doc: ReassignmentPlan) -> None:
    """Let the live view catch up with the write (the node appears, or the controller already finished)."""
    keys = {(e.topic, e.partition) for e in doc.entries}

    def caught_up(s) -> bool:
        return (any((r.topic, r.partition) in keys for r in s.in_progress.reassignment)
                or all(p.status == reassign.COMPLETE for p in reassign.reassignment_status(doc, s)))
    ctx.conn.await_change(caught_up, timeout=3)


def _started(done: reassign.Executed, what: str) -> str:
    text = (f"{what} started: {done.partitions:,} partition(s) written to /admin/reassign_partitions, "
            f"{done.moving:,} with replicas moving")
    if done.throttles:
        text += (f", throttled at {done.throttles.rate:,} B/s on broker(s) {rs.ids(done.throttles.brokers)} "
                 "until Verify")
    text += f" (action #{done.action_id} in History)."
    if done.warnings:
        text += "".join(f"\nNote: {w}" for w in done.warnings)  # plain text: actions.run escapes it, line by line
    return text


def execute(ctx: state.PageContext, doc: ReassignmentPlan, throttle: int | None, context: str, label: str,
            waves: dict | None) -> None:
    """on_click of Execute: write `doc` (the plan, or its first wave) with the throttle, then follow it."""
    def work() -> str:
        done = reassign.execute(ctx.conn.write_session(), actions.store(), doc, cluster=ctx.cluster.name,
                                throttle=throttle, actor=actions.actor())
        _track(done, doc, throttle, label, waves)
        _await_start(ctx, doc)
        return _started(done, label)

    actions.run(RESULT, work, cfg=ctx.config, action="execute a reassignment", scope="reassign", context=context)


def _next_wave(ctx: state.PageContext, run: dict) -> None:
    waves = run["waves"]
    index = waves["index"] + 1

    def work() -> str:
        doc = rs.subset(parse_reassignment(waves["plan_json"]), [tuple(k) for k in waves["keys"][index]])
        done = reassign.execute(ctx.conn.write_session(), actions.store(), doc, cluster=ctx.cluster.name,
                                throttle=run["throttle"], actor=actions.actor())
        label = f"Wave {index + 1} of {len(waves['keys'])}"
        _track(done, doc, run["throttle"], label, {**waves, "index": index})
        _await_start(ctx, doc)
        return _started(done, label)

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="execute the next wave", scope="reassign-run")


def _verify(ctx: state.PageContext, run: dict) -> None:
    def work() -> str:
        result = reassign.verify(ctx.conn.write_session(), actions.store(), _run_plan(run), cluster=ctx.cluster.name,
                                 actor=actions.actor())
        counts = rs.status_counts(result.partitions)
        run["verified"] = {"complete": result.complete, "removed": result.throttles_removed, "at": time.time()}
        if result.complete:
            return (f"Verified: all {len(result.partitions):,} partition(s) are at their target. "
                    + ("Throttles removed (topic throttled-replica lists and broker rates)."
                       if result.throttles_removed else "No throttle was left to remove."))
        raise KeelError(f"Not complete yet: {counts[reassign.COMPLETE]:,} of {len(result.partitions):,} partition(s) "
                        f"at their target, {counts[reassign.IN_FLIGHT]:,} in progress, "
                        f"{counts[reassign.NOT_AT_TARGET]:,} not at target. The throttles stay until all are "
                        "complete.")

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="verify the reassignment", scope="reassign-run")


def _rollback(ctx: state.PageContext, run: dict) -> None:
    def work() -> str:
        done = reassign.rollback(ctx.conn.write_session(), actions.store(), run["action_id"], cluster=ctx.cluster.name,
                                 throttle=run["throttle"], actor=actions.actor())
        doc = parse_reassignment(run["rollback_json"])
        label = f"Rollback of action #{run['action_id']}"
        _track(done, doc, run["throttle"], label)
        _await_start(ctx, doc)
        return _started(done, label)

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="roll back the reassignment", scope="reassign-run")


def _follow(ctx: state.PageContext, action_id: int) -> None:
    try:
        action = actions.store().action(action_id)
    except Exception as e:  # an unreadable store is a message, not a traceback
        st.session_state[RUN_RESULT] = actions.Result(False, md_text(f"Cannot read the audit store: {e}"),
                                                      "reassign-run")
        return
    if action is None or action.kind != "reassignment" or not isinstance(action.payload, dict):
        st.session_state[RUN_RESULT] = actions.Result(False, md_text(f"Action #{action_id} is not a recorded "
                                                                      "reassignment."),
                                                      "reassign-run")
        return
    plan = parse_reassignment(action.payload["plan"])
    st.session_state[RUN] = {
        "action_id": action.id, "label": f"Action #{action.id}", "plan_json": plan.to_json(),
        "rollback_json": action.rollback, "throttle": action.payload.get("throttle"),
        "partitions": len(plan.entries), "moving": None, "throttled_brokers": [], "waves": None,
        "started": None, "verified": None,
    }
    st.session_state.pop(RUN_PLAN, None)
    actions.clear(RUN_RESULT)


def _dismiss() -> None:
    for key in (RUN, RUN_PLAN, RUN_RESULT, RESULT):
        st.session_state.pop(key, None)


@st.fragment(run_every=state.REFRESH_SECONDS)
def progress_panel(ctx: state.PageContext) -> None:
    run = st.session_state.get(RUN)
    if not run:
        return
    live = state.live_snapshot(ctx.conn, in_fragment=True)
    plan = _run_plan(run)
    statuses = ctx.conn.derived("reassign.status", live, lambda s: reassign.reassignment_status(plan, s),
                            key=run["action_id"])
    counts = rs.status_counts(statuses)
    total = len(statuses)
    done = counts[reassign.COMPLETE]
    running = live.in_progress.reassignment
    waves = run.get("waves")
    reason = actions.blocked_reason(ctx.config, "change the cluster")
    if not running and not counts[reassign.IN_FLIGHT] and not run.get("settled_seen"):
        # the plan above was drawn while it ran: redraw the whole page once it is over
        run["settled_seen"] = True
        st.rerun()

    with st.container(border=True, key="ra_progress"):
        head = st.columns([5, 1], vertical_alignment="center")
        throttle = f"throttle {run['throttle']:,} B/s" if run.get("throttle") else "unthrottled"
        head[0].markdown(f"**{run['label']}** · action #{run['action_id']} · {total:,} partition(s) · {throttle}")
        head[1].button("Dismiss", key="ra_dismiss", on_click=_dismiss, width="stretch",
                       help="Stop following it here (History keeps the action)")
        st.progress(done / total if total else 1.0, text=f"{done:,} of {total:,} partition(s) complete")
        m = st.columns(3)
        m[0].metric("Complete", f"{done:,}", border=True, help="Replicas equal the target, nothing in flight")
        m[1].metric("In progress", f"{counts[reassign.IN_FLIGHT]:,}", border=True,
                    help="Still in /admin/reassign_partitions, or adding / removing replicas")
        m[2].metric("Not at target", f"{counts[reassign.NOT_AT_TARGET]:,}", border=True,
                    help="Not moving, and not on the target replicas")
        verified = run.get("verified")
        if counts[reassign.IN_FLIGHT]:
            st.info("Running: the controller is copying the new replicas and removes each partition from "
                    "/admin/reassign_partitions when it is done. This panel follows it live.",
                    icon=":material/hourglass_top:")
        elif done == total:
            if verified and verified["complete"]:
                st.success("Complete and verified: every partition is at its target and the throttles are gone.",
                           icon=":material/check_circle:")
            else:
                st.success("Complete: every partition is at its target. Verify to remove the throttles.",
                           icon=":material/check_circle:")
        else:
            st.warning(f"{counts[reassign.NOT_AT_TARGET]:,} partition(s) are neither at their target nor moving: the "
                       "controller did not (or could not) apply them, or something changed them since.",
                       icon=":material/warning:")
        if running and not counts[reassign.IN_FLIGHT]:
            st.caption(f"Another reassignment of {len(running):,} partition(s) is running.")

        table = ctx.conn.derived("reassign.status_table", live, lambda s: rs.status_table(statuses),
                             key=run["action_id"])
        shown = actions.page_of(table, "ra_status_pages", label="partitions")
        st.dataframe(shown.style.map(lambda v: STATUS_STYLE.get(v, ""), subset=["Status"]), hide_index=True,
                     key="ra_status", height=min(360, 38 + 35 * max(len(shown), 1)),
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small")})

        b = st.columns(2, vertical_alignment="bottom")
        b[0].button("Verify", key="ra_verify", icon=":material/fact_check:", on_click=_verify, args=(ctx, run),
                    disabled=reason is not None, width="stretch",
                    help=reason or "kafka-reassign-partitions --verify: reports every partition and, once all are "
                                   "complete, removes the throttles")
        if waves and waves["index"] + 1 < len(waves["keys"]):
            nxt = waves["index"] + 1
            b[1].button(f"Execute wave {nxt + 1} of {len(waves['keys'])}", key="ra_next_wave", type="primary",
                        icon=":material/skip_next:", on_click=_next_wave, args=(ctx, run), width="stretch",
                        disabled=reason is not None or done != total or bool(running),
                        help=reason or f"{len(waves['keys'][nxt]):,} partition(s), once this wave is complete")
        can_roll = run.get("rollback_json") is not None
        if can_roll:
            roll_help = reason or (reassign.CANNOT_CANCEL + "." if running else
                                   "Execute the saved rollback: the replicas these partitions had before "
                                   f"action #{run['action_id']}")
            r = st.columns([3, 1], vertical_alignment="center")  # its own row: the label is a sentence
            confirm = r[0].checkbox(f"Restore the {total:,} partition(s) to their replicas before "
                                    f"action #{run['action_id']}", key=f"ra_roll_confirm_{run['action_id']}",
                                    disabled=reason is not None or bool(running))
            r[1].button("Roll back", key="ra_rollback", icon=":material/undo:", on_click=_rollback, args=(ctx, run),
                        disabled=reason is not None or bool(running) or not confirm, help=roll_help, width="stretch")
        st.caption(f":material/info: {reassign.CANNOT_CANCEL}. Rollback is enabled once no reassignment is running.")
        actions.show(RUN_RESULT, scope="reassign-run")


def follow_earlier(ctx: state.PageContext) -> None:
    """Pick a reassignment recorded earlier (another session, before a reload) to follow, verify or roll back."""
    try:
        recorded = [a for a in actions.store().actions(ctx.cluster.name, kind="reassignment", limit=20)
                    if a.status == "applied"]
    except Exception:
        return
    if not recorded:
        return
    with st.expander("Follow an earlier reassignment"):
        c = st.columns([4, 1], vertical_alignment="bottom")
        chosen = c[0].selectbox("Reassignment", [a.id for a in recorded], key="ra_follow_id",
                                format_func=lambda i: next(f"#{a.id} · {a.at} · {a.actor} · {a.summary}"
                                                           for a in recorded if a.id == i))
        c[1].button("Follow", key="ra_follow", on_click=_follow, args=(ctx, chosen), width="stretch")
