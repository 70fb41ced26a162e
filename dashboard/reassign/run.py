"""The Reassign page's execution side: Execute (a whole plan or its first wave), then the progress panel that follows
the run live, executes the next waves, verifies (removing the throttles) and rolls back.

Every write goes through core.zk.reassign, which re-reads live state, refuses while /admin/reassign_partitions
exists and records the action and its rollback in the audit store (History lists them). The run a session follows
is a FollowedRun in its session state under RUN, so a reload keeps it; one recorded earlier can be picked up again
with follow_earlier. The progress panel is a 2 s fragment over the live snapshot.

A partition whose topic no longer exists (deleted while it moved, or never created) is "gone": nothing will happen to
it, so it counts as finished, like a complete one, and Verify removes the throttles without waiting for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import streamlit as st

from core.errors import KeelError
from core.plans import ReassignmentPlan, parse_reassignment
from core.store import Action
from core.zk import reassign
from dashboard import actions, frame
from dashboard.reassign import plan_view as rs
from dashboard.text import md_text

RESULT = "ra_result"  # the outcome of Execute
RUN_RESULT = "ra_run_result"  # the outcome of Verify / Next wave / Rollback
RUN = "ra_run"  # the FollowedRun this session follows
STATUS_STYLE = {reassign.COMPLETE: "color: #2CA02C; font-weight: 600",
                reassign.IN_FLIGHT: "color: #E69F00; font-weight: 600",
                reassign.NOT_AT_TARGET: "color: #D62728; font-weight: 600",
                reassign.GONE: "color: #7F7F7F; font-style: italic"}


# --- the followed run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waves:
    """A plan executed one wave at a time: the whole plan, its partitions per wave, the wave being followed."""

    plan: ReassignmentPlan
    keys: tuple[tuple[rs.Key, ...], ...]
    index: int = 0

    @classmethod
    def of(cls, plan: ReassignmentPlan, keys) -> Waves:
        return cls(plan, tuple(tuple((str(t), int(p)) for t, p in wave) for wave in keys))

    @property
    def label(self) -> str:
        return f"Wave {self.index + 1} of {len(self.keys)}"

    @property
    def doc(self) -> ReassignmentPlan:
        """What this wave writes."""
        return rs.subset(self.plan, self.keys[self.index])

    @property
    def has_next(self) -> bool:
        return self.index + 1 < len(self.keys)

    def next(self) -> Waves:
        return replace(self, index=self.index + 1)


@dataclass(frozen=True)
class Verified:
    """The last Verify of a run, from this session."""

    complete: bool
    throttles_removed: bool
    at: float


@dataclass(frozen=True)
class FollowedRun:
    """The reassignment a session follows: what was written, how, and what the session did with it since."""

    action_id: int
    label: str
    plan: ReassignmentPlan  # the document written (one wave of a plan executed in waves)
    rollback: ReassignmentPlan | None  # the replicas before, as the store saved them
    throttle: int | None
    partitions: int
    moving: int | None  # partitions whose replica set changes; None when picked up from the store
    throttled_brokers: tuple[int, ...]
    waves: Waves | None = None
    started: float | None = None  # time.time() of Execute in this session
    verified: Verified | None = None
    settled_seen: bool = False  # the page was redrawn once the run stopped moving

    @classmethod
    def executed(cls, done: reassign.Executed, plan: ReassignmentPlan, throttle: int | None, label: str,
                 waves: Waves | None = None) -> FollowedRun:
        return cls(action_id=done.action_id, label=label, plan=plan, rollback=done.rollback, throttle=throttle,
                   partitions=done.partitions, moving=done.moving,
                   throttled_brokers=tuple(done.throttles.brokers) if done.throttles else (), waves=waves,
                   started=time.time())

    @classmethod
    def recorded(cls, action: Action) -> FollowedRun:
        """A reassignment from the audit store (KeelError when its stored plan does not parse)."""
        plan = parse_reassignment(action.payload["plan"])
        try:
            rollback = parse_reassignment(action.rollback) if action.rollback else None
        except KeelError:
            rollback = None
        return cls(action_id=action.id, label=f"Action #{action.id}", plan=plan, rollback=rollback,
                   throttle=action.payload.get("throttle"), partitions=len(plan.entries), moving=None,
                   throttled_brokers=())


def _track(run: FollowedRun) -> None:
    st.session_state[RUN] = run
    actions.clear(RUN_RESULT)


def _update(run: FollowedRun, **changes) -> FollowedRun:
    """`run` with `changes` (applied to the session's copy, and stored, if the session still follows it)."""
    current = st.session_state.get(RUN)
    if isinstance(current, FollowedRun) and current.action_id == run.action_id:
        run = st.session_state[RUN] = replace(current, **changes)
        return run
    return replace(run, **changes)


# --- the writes -------------------------------------------------------------------------------------------------


def _await_start(ctx: frame.PageContext, doc: ReassignmentPlan) -> None:
    """Let the live view catch up with the write (the node appears, or the controller already finished)."""
    keys = {(e.topic, e.partition) for e in doc.entries}

    def caught_up(s) -> bool:
        return (any((r.topic, r.partition) in keys for r in s.in_progress.reassignment)
                or all(p.status.finished for p in reassign.reassignment_status(doc, s)))
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


def execute(ctx: frame.PageContext, doc: ReassignmentPlan, throttle: int | None, context: str, label: str,
            waves: Waves | None) -> None:
    """on_click of Execute: write `doc` (the plan, or its first wave) with the throttle, then follow it."""
    def work() -> str:
        done = reassign.execute(ctx.conn.write_session(), actions.store(), doc, cluster=ctx.cluster.name,
                                throttle=throttle, actor=actions.actor())
        _track(FollowedRun.executed(done, doc, throttle, label, waves))
        _await_start(ctx, doc)
        return _started(done, label)

    actions.run(RESULT, work, cfg=ctx.config, action="execute a reassignment", scope="reassign", context=context)


def _next_wave(ctx: frame.PageContext, run: FollowedRun) -> None:
    waves = run.waves.next()

    def work() -> str:
        doc = waves.doc
        done = reassign.execute(ctx.conn.write_session(), actions.store(), doc, cluster=ctx.cluster.name,
                                throttle=run.throttle, actor=actions.actor())
        _track(FollowedRun.executed(done, doc, run.throttle, waves.label, waves))
        _await_start(ctx, doc)
        return _started(done, waves.label)

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="execute the next wave", scope="reassign-run")


def _verify(ctx: frame.PageContext, run: FollowedRun) -> None:
    def work() -> str:
        result = reassign.verify(ctx.conn.write_session(), actions.store(), run.plan, cluster=ctx.cluster.name,
                                 actor=actions.actor())
        counts = rs.status_counts(result.partitions)
        _update(run, verified=Verified(result.complete, result.throttles_removed, time.time()))
        total, gone = len(result.partitions), counts[reassign.GONE]
        removed = ("Throttles removed (topic throttled-replica lists and broker rates)." if result.throttles_removed
                   else "No throttle was left to remove.")
        if result.complete and not gone:
            return f"Verified: all {total:,} partition(s) are at their target. {removed}"
        if result.complete:
            return (f"Verified: all {total:,} partition(s) are finished: {counts[reassign.COMPLETE]:,} at their "
                    f"target, {gone:,} gone (their topic no longer exists). {removed}")
        raise KeelError(f"Not complete yet: {counts[reassign.COMPLETE]:,} of {total:,} partition(s) at their target, "
                        f"{counts[reassign.IN_FLIGHT]:,} in progress, {counts[reassign.NOT_AT_TARGET]:,} not at "
                        "target" + (f", {gone:,} gone (their topic no longer exists)" if gone else "")
                        + ". The throttles stay until all are finished.")

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="verify the reassignment", scope="reassign-run")


def _rollback(ctx: frame.PageContext, run: FollowedRun) -> None:
    def work() -> str:
        done = reassign.rollback(ctx.conn.write_session(), actions.store(), run.action_id, cluster=ctx.cluster.name,
                                 throttle=run.throttle, actor=actions.actor())
        label = f"Rollback of action #{run.action_id}"
        _track(FollowedRun.executed(done, run.rollback, run.throttle, label))
        _await_start(ctx, run.rollback)
        return _started(done, label)

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="roll back the reassignment", scope="reassign-run")


def _follow(ctx: frame.PageContext, action_id: int) -> None:
    def refuse(message: str) -> None:
        st.session_state[RUN_RESULT] = actions.Result(False, md_text(message), "reassign-run")

    try:
        action = actions.store().action(action_id)
    except Exception as e:  # an unreadable store is a message, not a traceback
        return refuse(f"Cannot read the audit store: {e}")
    if action is None or action.kind != "reassignment" or not isinstance(action.payload, dict) \
            or "plan" not in action.payload:
        return refuse(f"Action #{action_id} is not a recorded reassignment.")
    try:
        run = FollowedRun.recorded(action)
    except KeelError as e:
        return refuse(f"Action #{action_id}: its stored plan cannot be read: {e}")
    _track(run)


def _dismiss() -> None:
    for key in (RUN, RUN_RESULT, RESULT):
        st.session_state.pop(key, None)


# --- the progress panel -----------------------------------------------------------------------------------------


@st.fragment(run_every=frame.REFRESH_SECONDS)
def progress_panel(ctx: frame.PageContext) -> None:
    run: FollowedRun | None = st.session_state.get(RUN)
    if not isinstance(run, FollowedRun):
        return
    live = frame.live_snapshot(ctx.conn, in_fragment=True)
    statuses = ctx.conn.derived("reassign.status", live, lambda s: reassign.reassignment_status(run.plan, s),
                                key=run.action_id)
    counts = rs.status_counts(statuses)
    total = len(statuses)
    done, gone, moving = counts[reassign.COMPLETE], counts[reassign.GONE], counts[reassign.IN_FLIGHT]
    finished = done + gone
    running = live.in_progress.reassignment
    reason = actions.blocked_reason(ctx.config, "change the cluster")
    if not running and not moving and not run.settled_seen:
        # the plan above was drawn while it ran: redraw the whole page once it is over
        _update(run, settled_seen=True)
        st.rerun()

    with st.container(border=True, key="ra_progress"):
        head = st.columns([5, 1], vertical_alignment="center")
        throttle = f"throttle {run.throttle:,} B/s" if run.throttle else "unthrottled"
        if run.throttle and run.throttled_brokers:
            throttle += f" on broker(s) {rs.ids(run.throttled_brokers)}"
        head[0].markdown(f"**{run.label}** · action #{run.action_id} · {total:,} partition(s) · {throttle}")
        head[1].button("Dismiss", key="ra_dismiss", on_click=_dismiss, width="stretch",
                       help="Stop following it here (History keeps the action)")
        st.progress(finished / total if total else 1.0, text=f"{done:,} of {total:,} partition(s) complete"
                    + (f", {gone:,} gone" if gone else ""))
        m = st.columns(4 if gone else 3)
        m[0].metric("Complete", f"{done:,}", border=True, help="Replicas equal the target, nothing in flight")
        m[1].metric("In progress", f"{moving:,}", border=True,
                    help="Still in /admin/reassign_partitions, or adding / removing replicas")
        m[2].metric("Not at target", f"{counts[reassign.NOT_AT_TARGET]:,}", border=True,
                    help="Not moving, and not on the target replicas")
        if gone:
            m[3].metric("Gone", f"{gone:,}", border=True,
                        help="Their topic no longer exists (deleted since, or never created): nothing to wait for")
        verified = run.verified
        if moving:
            st.info("Running: the controller is copying the new replicas and removes each partition from "
                    "/admin/reassign_partitions when it is done. This panel follows it live.",
                    icon=":material/hourglass_top:")
        elif finished == total:
            every = "every partition is at its target" + (" or gone" if gone else "")
            if verified and verified.complete:
                st.success(f"Complete and verified: {every} and the throttles are gone.",
                           icon=":material/check_circle:")
            else:
                st.success(f"Complete: {every}. Verify to remove the throttles.", icon=":material/check_circle:")
        else:
            st.warning(f"{counts[reassign.NOT_AT_TARGET]:,} partition(s) are neither at their target nor moving: the "
                       "controller did not (or could not) apply them, or something changed them since.",
                       icon=":material/warning:")
        if gone:
            st.caption(f":material/delete: {gone:,} partition(s) belong to topics that no longer exist (deleted while "
                       "the reassignment ran, or never created): there is nothing to wait for, and Verify counts "
                       "them as finished.")
        if running and not moving:
            st.caption(f"Another reassignment of {len(running):,} partition(s) is running.")

        table = ctx.conn.derived("reassign.status_table", live, lambda s: rs.status_table(statuses),
                                 key=run.action_id)
        shown = actions.page_of(table, "ra_status_pages", label="partitions")
        st.dataframe(shown.style.map(lambda v: STATUS_STYLE.get(v, ""), subset=["Status"]), hide_index=True,
                     key="ra_status", height=min(360, 38 + 35 * max(len(shown), 1)),
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small")})

        b = st.columns(2, vertical_alignment="bottom")
        b[0].button("Verify", key="ra_verify", icon=":material/fact_check:", on_click=_verify, args=(ctx, run),
                    disabled=reason is not None, width="stretch",
                    help=reason or "kafka-reassign-partitions --verify: reports every partition and, once all are "
                                   "finished, removes the throttles")
        waves = run.waves
        if waves is not None and waves.has_next:
            nxt = waves.next()
            b[1].button(f"Execute {nxt.label.lower()}", key="ra_next_wave", type="primary",
                        icon=":material/skip_next:", on_click=_next_wave, args=(ctx, run), width="stretch",
                        disabled=reason is not None or finished != total or bool(running),
                        help=reason or f"{len(nxt.keys[nxt.index]):,} partition(s), once this wave is complete")
        if run.rollback is not None:
            roll_help = reason or (reassign.CANNOT_CANCEL + "." if running else
                                   "Execute the saved rollback: the replicas these partitions had before "
                                   f"action #{run.action_id}")
            r = st.columns([3, 1], vertical_alignment="center")  # its own row: the label is a sentence
            confirm = r[0].checkbox(f"Restore the {total:,} partition(s) to their replicas before "
                                    f"action #{run.action_id}", key=f"ra_roll_confirm_{run.action_id}",
                                    disabled=reason is not None or bool(running))
            r[1].button("Roll back", key="ra_rollback", icon=":material/undo:", on_click=_rollback, args=(ctx, run),
                        disabled=reason is not None or bool(running) or not confirm, help=roll_help, width="stretch")
        st.caption(f":material/info: {reassign.CANNOT_CANCEL}. Rollback is enabled once no reassignment is running.")
        actions.show(RUN_RESULT, scope="reassign-run")


def follow_earlier(ctx: frame.PageContext) -> None:
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
