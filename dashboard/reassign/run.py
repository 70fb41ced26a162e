"""The Reassign page's execution side: Execute (a whole plan or its first wave), then the progress panel that follows
the run live, executes the next waves, verifies (removing the throttles) and rolls back (by default at the rate
the reassignment ran with, which the panel lets the operator change: dashboard/reassign/rollback.py).

Every write goes through the cluster's engine (core.cluster.engines: ZooKeeper, or the Admin API for KRaft), which
re-reads live state, refuses while a reassignment runs and records the action and its rollback (History). The run a
session follows is a FollowedRun under RUN (a reload keeps it; follow_earlier picks up an earlier one); its panel is a
2 s fragment over the live snapshot.

One run panel at a time, headed by its action number: the Execute message lives in the run it started (gone after
Verify, Roll back or a change of goal), Verify's outcome is shown only in the panel of the action it verified. A
partition that is not finishing says why (core.plans.stuck_reasons: no live source, target broker down, not yet
in the ISR) and what to do. A write whose plan has risks (core.plans.plan_risks) needs one box ticked per risk.

A partition whose topic no longer exists is "gone": finished, and Verify removes the throttles without waiting for it.

Cancel (Kafka 2.4+, needs `bootstrap` in keel.toml) stops the followed run's partitions, or every running one, through
the Admin API as `python -m core cancel` does (core.cluster.engines.cancel). When Kafka put partitions back in another
replica order, the reassignment restoring it (no data moves) is offered, as the CLI prints it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

from core.errors import KeelError
from core.plans import (
    ReassignmentEntry,
    ReassignmentPlan,
    StuckReason,
    parse_reassignment,
    plan_risks,
    reassignment_status,
    stuck_reasons,
)
from core.audit.store import Action
from core import writes as reassign_writes  # the results, messages and rollback throttle of both engines
from core.cluster import engines
from dashboard.reassign.plan_view import COMPLETE, GONE, IN_FLIGHT, NOT_AT_TARGET  # the partition statuses
from dashboard import actions, frame, ui
from dashboard.reassign import plan_view, progress as bytes_view, rollback as rollback_view
from dashboard.text import md, md_text

RESULT = "ra_result"  # the outcome of Execute
RUN_RESULT = "ra_run_result"  # the outcome of Verify / Next wave / Rollback
RUN = "ra_run"  # the FollowedRun this session follows
CANCEL_RESULT = "ra_cancel_result"  # the outcome of Cancel
REORDER = "ra_reorder_plan"  # (cluster, plan, text): restores the replica order a cancel changed
REORDER_RESULT = "ra_reorder_result"
STATUS_STYLE = {COMPLETE: "color: #2CA02C; font-weight: 600",
                IN_FLIGHT: "color: #E69F00; font-weight: 600",
                NOT_AT_TARGET: "color: #D62728; font-weight: 600",
                GONE: "color: #7F7F7F; font-style: italic"}


# --- the followed run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waves:
    """A plan executed one wave at a time: the whole plan, its partitions per wave, the wave being followed."""

    plan: ReassignmentPlan
    keys: tuple[tuple[plan_view.Key, ...], ...]
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
        return plan_view.subset(self.plan, self.keys[self.index])

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
    note: str | None = None  # what Execute said (markdown): shown in the panel until Verify, Roll back or a new goal
    cancelled: int | None = None  # the action id of the cancel of its running partitions, from this session

    @classmethod
    def executed(cls, done: reassign_writes.Executed, plan: ReassignmentPlan, throttle: int | None, label: str,
                 waves: Waves | None = None, note: str | None = None) -> FollowedRun:
        return cls(action_id=done.action_id, label=label, plan=plan, rollback=done.rollback, throttle=throttle,
                   partitions=done.partitions, moving=done.moving,
                   throttled_brokers=tuple(done.throttles.brokers) if done.throttles else (), waves=waves,
                   started=time.time(), note=note)

    @classmethod
    def recorded(cls, action: Action) -> FollowedRun:
        """A reassignment (or rollback) from the audit store (KeelError when its stored plan does not parse). One
        that Verify found complete (its completed_at) is followed as verified: Verify removed its throttles then."""
        plan = parse_reassignment(action.payload["plan"])
        try:
            rollback = parse_reassignment(action.rollback) if action.rollback else None
        except KeelError:
            rollback = None
        verified = Verified(True, True, plan_view.epoch(action.completed_at)) if action.completed_at else None
        label = f"Rollback of action #{action.rollback_of}" if action.rollback_of else f"Action #{action.id}"
        return cls(action_id=action.id, label=label, plan=plan, rollback=rollback,
                   throttle=reassign_writes.recorded_throttle(action), partitions=len(plan.entries), moving=None,
                   throttled_brokers=(), verified=verified)


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
                or all(p.status.finished for p in reassignment_status(doc, s)))
    ctx.conn.await_change(caught_up, timeout=3)


def _started(done: reassign_writes.Executed, what: str) -> str:
    text = (f"{what} started: {done.partitions:,} partition(s) written to /admin/reassign_partitions, "
            f"{done.moving:,} with replicas moving")
    if done.throttles:
        text += (f", throttled at {done.throttles.rate:,} B/s on broker(s) {plan_view.ids(done.throttles.brokers)} "
                 "until Verify")
    text += f" (action #{done.action_id} in History)."
    if done.warnings:
        text += "".join(f"\nNote: {w}" for w in done.warnings)  # plain text: actions.run escapes it, line by line
    return text


def risk_boxes(risks, context: str, *, disabled: bool) -> list[str]:
    """One confirmation per risk, keyed by its text: a different risk is never covered by an earlier tick.
    Returns the risks ticked (passed to the engine word for word)."""
    return [risk for risk in risks
            if st.checkbox(f"I understand: {md(risk)}", key=f"ra_risk_{actions.fingerprint(context, risk)}",
                           disabled=disabled)]


def goal_changed() -> None:
    """on_change of the goal: messages about the previous plan go."""
    actions.clear(RESULT)
    run = st.session_state.get(RUN)
    if isinstance(run, FollowedRun) and run.note:
        st.session_state[RUN] = replace(run, note=None)


def _start(ctx: frame.PageContext, doc: ReassignmentPlan, throttle: int | None, label: str, waves: Waves | None,
           accepted) -> str:
    h = ctx.conn.write_session()
    done = engines.reassignments(h).execute(h, actions.store(), doc, cluster=ctx.cluster.name, throttle=throttle,
                                            actor=actions.actor(), accept_risks=list(accepted))
    message = _started(done, label)
    _track(FollowedRun.executed(done, doc, throttle, label, waves, note=md_text(message)))
    _await_start(ctx, doc)
    return message


def execute(ctx: frame.PageContext, doc: ReassignmentPlan, throttle: int | None, context: str, label: str,
            waves: Waves | None, accepted=(), form: actions.FormGuard | None = None) -> None:
    """on_click of Execute: write `doc` (the plan, or its first wave) with the throttle, then follow it. The
    success message goes with the run (its panel shows it); a refusal stays by the button."""
    if actions.run(RESULT, lambda: _start(ctx, doc, throttle, label, waves, accepted), cfg=ctx.config,
                   action="execute a reassignment", scope="reassign", context=context, form=form):
        actions.clear(RESULT)


def _next_wave(ctx: frame.PageContext, run: FollowedRun, accepted=()) -> None:
    waves = run.waves.next()
    if actions.run(RUN_RESULT, lambda: _start(ctx, waves.doc, run.throttle, waves.label, waves, accepted),
                   cfg=ctx.config, action="execute the next wave", scope="reassign-run",
                   context=str(run.action_id)):
        actions.clear(RUN_RESULT)


def _verify(ctx: frame.PageContext, run: FollowedRun) -> None:
    def work() -> str:
        h = ctx.conn.write_session()
        result = engines.reassignments(h).verify(h, actions.store(), run.plan, cluster=ctx.cluster.name,
                                                 actor=actions.actor())
        counts = plan_view.status_counts(result.partitions)
        _update(run, verified=Verified(result.complete, result.throttles_removed, time.time()), note=None)
        total, gone = len(result.partitions), counts[GONE]
        removed = ("Throttles removed (topic throttled-replica lists and broker rates)." if result.throttles_removed
                   else "No throttle was left to remove.")
        if result.complete and not gone:
            return f"Verified: all {total:,} partition(s) are at their target. {removed}"
        if result.complete:
            return (f"Verified: all {total:,} partition(s) are finished: {counts[COMPLETE]:,} at their "
                    f"target, {gone:,} gone (their topic no longer exists). {removed}")
        raise KeelError(f"Not complete yet: {counts[COMPLETE]:,} of {total:,} partition(s) at their target, "
                        f"{counts[IN_FLIGHT]:,} in progress, {counts[NOT_AT_TARGET]:,} not at "
                        "target" + (f", {gone:,} gone (their topic no longer exists)" if gone else "")
                        + ". The throttles stay until all are finished.")

    actions.run(RUN_RESULT, work, cfg=ctx.config, action="verify the reassignment", scope="reassign-run",
                context=str(run.action_id))


def _rollback(ctx: frame.PageContext, run: FollowedRun, throttle: int | None, accepted=(),
              form: actions.FormGuard | None = None) -> None:
    """on_click of Roll back: the saved rollback at `throttle` B/s (None: unthrottled), as chosen on the panel."""
    def work() -> str:
        h = ctx.conn.write_session()
        done = engines.reassignments(h).rollback(h, actions.store(), run.action_id, throttle=throttle,
                                                 cluster=ctx.cluster.name, actor=actions.actor(),
                                                 accept_risks=list(accepted))
        label = f"Rollback of action #{run.action_id}"
        message = _started(done, label)
        _track(FollowedRun.executed(done, run.rollback, throttle, label, note=md_text(message)))
        _await_start(ctx, run.rollback)
        return message

    if actions.run(RUN_RESULT, work, cfg=ctx.config, action="roll back the reassignment", scope="reassign-run",
                   context=str(run.action_id), form=form):
        actions.clear(RUN_RESULT)


def _follow(ctx: frame.PageContext, action_id: int) -> None:
    def refuse(message: str) -> None:
        st.session_state[RUN_RESULT] = actions.Result(False, md_text(message), "reassign-run")

    try:
        action = actions.store().action(action_id)
    except Exception as e:  # an unreadable store is a message, not a traceback
        return refuse(f"Cannot read the audit store: {e}")
    if action is None or action.kind not in ("reassignment", "rollback") or not isinstance(action.payload, dict) \
            or "plan" not in action.payload:
        return refuse(f"Action #{action_id} is not a recorded reassignment.")
    try:
        run = FollowedRun.recorded(action)
    except KeelError as e:
        return refuse(f"Action #{action_id}: its stored plan cannot be read: {e}")
    _track(run)


def _dismiss() -> None:
    for key in (RUN, RUN_RESULT, RESULT, CANCEL_RESULT, REORDER, REORDER_RESULT):
        st.session_state.pop(key, None)


# --- cancel (Kafka 2.4+, the Admin API) ---------------------------------------------------------------------


def running_keys(snap) -> frozenset[plan_view.Key]:
    """Partitions whose reassignment runs: in /admin/reassign_partitions, or adding / removing replicas (one started
    through Kafka's Admin API leaves no /admin node)."""
    return frozenset({(r.topic, r.partition) for r in snap.in_progress.reassignment}
                     | {(p.topic, p.partition) for p in snap.partitions() if p.adding_replicas or p.removing_replicas})


def _names(keys, limit: int = 20) -> str:
    keys = list(keys)
    more = f" and {len(keys) - limit:,} more" if len(keys) > limit else ""
    return ", ".join(f"{t}-{p}" for t, p in keys[:limit]) + more


def cancelled_text(done: reassign_writes.Cancelled) -> str:
    """What a cancel did, in plain text (the CLI's words where it has some)."""
    if done.cancelled:
        lines = [f"Cancelled the running reassignment of {len(done.cancelled):,} partition(s): "
                 f"{_names(done.cancelled)} (action #{done.action_id} in History). Kafka moves each back to its "
                 "original replicas."]
    else:
        lines = ["None of the specified partition reassignments are active: nothing was cancelled."]
    if done.not_running and done.cancelled:
        lines.append(f"Not running (nothing to cancel): {_names(done.not_running)}.")
    lines.append("Throttles removed (topic throttled-replica lists and broker rates)." if done.throttles_removed
                 else "No throttle was left to remove.")
    if done.reordered:
        lines.append(f"The replica order of {len(done.reordered):,} partition(s) changed: see below.")
    return "\n".join(lines)


def _cancel(ctx: frame.PageContext, run: FollowedRun | None) -> None:
    """on_click of Cancel: the partitions of `run` (None: every running reassignment), then the throttles."""
    def work() -> str:
        from core.kafka.admin import KafkaAdmin  # kafka-python is loaded only for a cancel

        h = ctx.conn.write_session()
        with KafkaAdmin.for_cluster(ctx.cluster) as admin:  # with its command_config: SASL / TLS
            done = engines.cancel(h, actions.store(), admin, cluster=ctx.cluster.name,
                                  partitions=None if run is None else list(run.plan.assignment()),
                                  actor=actions.actor())
        if done.reordered:
            plan = ReassignmentPlan(tuple(ReassignmentEntry(t, p, tuple(was)) for (t, p), _, was, _ in done.reordered))
            text = ", ".join(f"{t}-{p} ({','.join(map(str, now))} instead of {','.join(map(str, was))})"
                             for (t, p), now, was, _ in done.reordered)
            st.session_state[REORDER] = (ctx.cluster.name, plan, text)
        if run is not None and done.cancelled:
            _update(run, cancelled=done.action_id, note=None)
        gone = set(done.cancelled)
        ctx.conn.await_change(lambda s: not gone & running_keys(s), timeout=5)
        return cancelled_text(done)

    for key in (REORDER, REORDER_RESULT):
        st.session_state.pop(key, None)
    actions.run(CANCEL_RESULT, work, cfg=ctx.config, action="cancel the reassignment", scope="reassign-cancel",
                context="all" if run is None else str(run.action_id))


def _restore_order(ctx: frame.PageContext, plan: ReassignmentPlan, accepted=()) -> None:
    def work() -> str:
        message = _start(ctx, plan, None, "Replica order restore", None, accepted)
        for key in (REORDER, CANCEL_RESULT):
            st.session_state.pop(key, None)
        return message

    if actions.run(REORDER_RESULT, work, cfg=ctx.config, action="execute a reassignment", scope="reassign-reorder"):
        actions.clear(REORDER_RESULT)


def _reorder_offer(ctx: frame.PageContext, live) -> None:
    held = st.session_state.get(REORDER)
    if not held or held[0] != ctx.cluster.name or live is None:
        return
    _, plan, text = held
    st.warning(f"Kafka puts a cancelled partition back on its original replicas in the order of the reassignment "
               f"(target first), not in their original order, so its preferred leader changed for: {md(text)}. This "
               "reassignment restores the order without moving data:", icon=":material/swap_vert:")
    st.code(plan.to_json(), language="json", wrap_lines=True)
    reason = actions.blocked_reason(ctx.config, "execute a reassignment")
    risks = plan_risks(plan, live)
    for risk in risks:
        st.error(f"**The restore may never finish.** {md(risk)}.", icon=":material/report:")
    # the confirmation on its own line, the button under it: a label in a column is cut at 900 px
    confirm = st.checkbox(f"Restore the replica order of {len(plan.entries):,} partition(s)",
                          key=f"ra_reorder_confirm_{actions.fingerprint(plan.to_json())}", disabled=reason is not None)
    accepted = risk_boxes(risks, f"reorder:{actions.fingerprint(plan.to_json())}", disabled=reason is not None)
    busy = bool(live.in_progress.reassignment)
    st.button("Restore order", key="ra_restore_order", icon=":material/swap_vert:", on_click=_restore_order,
              args=(ctx, plan, accepted),
              disabled=reason is not None or busy or not confirm or len(accepted) < len(risks),
              help=reason or ("Offered once no reassignment is running" if busy else
                              "Execute this reassignment: the same replicas, in their order before the cancel"))
    actions.show(REORDER_RESULT, scope="reassign-reorder")


def cancel_section(ctx: frame.PageContext, run: FollowedRun | None = None, live=None) -> bool:
    """Cancel the running reassignment of `run`'s partitions (None: every running one, the CLI's --all), with a
    confirmation, or say what cancelling needs; then what the last cancel did and the order restore it calls for.
    True when something about a running reassignment was drawn."""
    live = ctx.conn.snapshot() if live is None else live
    context = "all" if run is None else str(run.action_id)
    # a run's: what its panel counts as in progress (one count, one source); else every running partition
    keys = [] if live is None else plan_view.in_progress(_statuses(ctx, run, live)) if run is not None else \
        sorted(ctx.conn.derived("reassign.running", live, running_keys))
    if keys and not ctx.cluster.bootstrap:
        st.caption(":material/info: Cancelling a running reassignment needs the cluster's `bootstrap` servers in "
                   "keel.toml (Kafka's Admin API, Kafka 2.4+). From a shell:")
        which = ["--all"] if run is None else ["--reassignment-json-file", "plan.json"]
        ui.commands(["python", "-m", "core", "cancel", "--zk", ctx.cluster.zk, "--bootstrap-server", "HOST:PORT",
                     *which, "--cluster", ctx.cluster.name])
    elif keys:
        reason = actions.blocked_reason(ctx.config, "cancel the reassignment")
        whose = "of every running reassignment" if run is None else f"of action #{run.action_id}"
        confirm = st.checkbox(f"Cancel the {len(keys):,} running partition(s) {whose}: Kafka moves them back to "
                              "their original replicas, then the throttles are removed",
                              key=f"ra_cancel_confirm_{context}", disabled=reason is not None)
        st.button("Cancel reassignment", key="ra_cancel", icon=":material/cancel:", on_click=_cancel, args=(ctx, run),
                  disabled=reason is not None or not confirm,
                  help=reason or "kafka-reassign-partitions --cancel (Kafka 2.4+, through the brokers' Admin API at "
                                 f"{md(ctx.cluster.bootstrap)})")
    actions.show(CANCEL_RESULT, scope="reassign-cancel", context=context, only_current=True)
    _reorder_offer(ctx, live)
    return bool(keys)


# --- the progress panel -----------------------------------------------------------------------------------------


def _statuses(ctx: frame.PageContext, run: FollowedRun, live):
    return ctx.conn.derived("reassign.status", live, lambda s: reassignment_status(run.plan, s),
                            key=run.action_id)


def finished(ctx: frame.PageContext, run: FollowedRun) -> bool:
    """Nothing of `run` is still moving or off target (every partition complete or gone); once cancelled, nothing
    of it is still moving (its partitions are back on their original replicas, off this plan's target)."""
    live = ctx.conn.snapshot()
    if live is None:
        return False
    if run.cancelled is not None:
        return all(p.status != IN_FLIGHT for p in _statuses(ctx, run, live))
    return all(p.status.finished for p in _statuses(ctx, run, live))


STUCK_COLUMNS = ["Topic", "Partition", "Why", "Brokers", "What to do"]


def _stuck_panel(ctx: frame.PageContext, run: FollowedRun, live) -> None:
    """Per partition still in progress: why it has not finished, and what to do (core.plans.stuck_reasons)."""
    stuck = ctx.conn.derived("reassign.stuck", live, lambda s: stuck_reasons(run.plan, s), key=run.action_id)
    if not stuck:
        return
    blocked = [x for x in stuck if x.reason in (StuckReason.NO_LIVE_SOURCE, StuckReason.TARGET_DOWN)]
    if blocked:
        first = blocked[0]
        st.error(f"**{len(blocked):,} partition(s) cannot finish** ({md(first.reason)}: {md(first.topic)}-"
                 f"{first.partition}{' and more' if len(blocked) > 1 else ''}). {md(first.advice)} Kafka accepts no "
                 "other reassignment until this one completes.", icon=":material/block:")
    table = ctx.conn.derived("reassign.stuck_table", live, lambda s: pd.DataFrame(
        [{"Topic": x.topic, "Partition": x.partition, "Why": str(x.reason), "Brokers": plan_view.ids(x.brokers),
          "What to do": x.advice} for x in stuck], columns=STUCK_COLUMNS), key=run.action_id)
    with st.expander(f"Why {len(stuck):,} partition(s) are not finished yet", expanded=bool(blocked),
                     icon=":material/help:"):
        st.dataframe(table.head(500), hide_index=True, key="ra_stuck",
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                    "What to do": st.column_config.TextColumn(width="large")})
        if len(table) > 500:
            st.caption(f"First 500 of {len(table):,}, the most blocked first.")


@frame.live_fragment("live-reassign-run")
def progress_panel(ctx: frame.PageContext) -> None:
    run: FollowedRun | None = st.session_state.get(RUN)
    if not isinstance(run, FollowedRun):
        return
    live = frame.live_snapshot(ctx.conn, in_fragment=True)
    statuses = _statuses(ctx, run, live)
    counts = plan_view.status_counts(statuses)
    total = len(statuses)
    done, gone, moving = counts[COMPLETE], counts[GONE], counts[IN_FLIGHT]
    finished_ = done + gone
    running = live.in_progress.reassignment
    reason = actions.blocked_reason(ctx.config, "change the cluster")
    if not running and not moving and not run.settled_seen:
        # the plan above was drawn while it ran: redraw the whole page once it is over
        _update(run, settled_seen=True)
        st.rerun()

    heading = run.label if run.label == f"Action #{run.action_id}" else f"Action #{run.action_id}: {run.label}"
    st.subheader(heading, anchor=False)
    with st.container(border=True, key="ra_progress"):
        head = st.columns([4, 1], vertical_alignment="center")
        throttle = f"throttle {run.throttle:,} B/s" if run.throttle else "unthrottled"
        if run.throttle and run.throttled_brokers:
            throttle += f" on broker(s) {plan_view.ids(run.throttled_brokers)}"
        with head[0]:
            links = st.container(horizontal=True, vertical_alignment="center", gap="small")
            links.markdown(f"**{md(run.label)}** · {total:,} partition(s) · {throttle}")
            ui.action_link(run.action_id, container=links)
        head[1].button("Dismiss", key="ra_dismiss", on_click=_dismiss, width="stretch",
                       help="Stop following it here (History keeps the action)")
        if run.note:
            st.success(run.note, icon=":material/check_circle:")
        st.progress(finished_ / total if total else 1.0, text=f"{done:,} of {total:,} partition(s) complete"
                    + (f", {gone:,} gone" if gone else ""))
        m = ui.metric_row()
        ui.metric(m, "Complete", f"{done:,}", help="Replicas equal the target, nothing in flight")
        ui.metric(m, "In progress", f"{moving:,}",
                  help="Still in /admin/reassign_partitions, or adding / removing replicas")
        ui.metric(m, "Not at target", f"{counts[NOT_AT_TARGET]:,}",
                  help="Not moving, and not on the target replicas")
        if gone:
            ui.metric(m, "Gone", f"{gone:,}",
                      help="Their topic no longer exists (deleted since, or never created): nothing to wait for")
        verified = run.verified
        if moving:
            st.info("Running: the controller is copying the new replicas and removes each partition from "
                    "/admin/reassign_partitions when it is done. This panel follows it live.",
                    icon=":material/hourglass_top:")
            bytes_view.section(ctx)  # in bytes, with its throttle (dashboard/reassign/progress.py)
            _stuck_panel(ctx, run, live)
        elif finished_ == total:
            every = "every partition is at its target" + (" or gone" if gone else "")
            if verified and verified.complete:
                st.success(f"Complete and verified: {every} and the throttles are gone.",
                           icon=":material/check_circle:")
            else:
                st.success(f"Complete: {every}." + (" Verify to remove the throttles." if run.throttle else
                                                     " Verify to confirm it."), icon=":material/check_circle:")
        elif run.cancelled is not None:
            st.info(f"Cancelled (action #{run.cancelled}): Kafka moved the cancelled partitions back to their original "
                    f"replicas; {counts[NOT_AT_TARGET]:,} partition(s) are not at this plan's target.",
                    icon=":material/cancel:")
        else:
            st.warning(f"{counts[NOT_AT_TARGET]:,} partition(s) are neither at their target nor moving: the "
                       "controller did not (or could not) apply them, or something changed them since.",
                       icon=":material/warning:")
        if gone:
            st.caption(f":material/delete: {gone:,} partition(s) belong to topics that no longer exist (deleted while "
                       "the reassignment ran, or never created): there is nothing to wait for, and Verify counts "
                       "them as finished.")
        if running and not moving:
            st.caption(f"Another reassignment of {len(running):,} partition(s) is running.")

        table = ctx.conn.derived("reassign.status_table", live, lambda s: plan_view.status_table(statuses),
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
            risks = ctx.conn.derived("reassign.next_risks", live, lambda s: plan_risks(nxt.doc, s),
                                     key=(run.action_id, nxt.index))
            for risk in risks:
                st.error(f"**The next wave may never finish.** {md(risk)}.", icon=":material/report:")
            accepted = risk_boxes(risks, f"wave:{run.action_id}:{nxt.index}", disabled=reason is not None)
            b[1].button(f"Execute {nxt.label.lower()}", key="ra_next_wave", type="primary",
                        icon=":material/skip_next:", on_click=_next_wave, args=(ctx, run, accepted), width="stretch",
                        disabled=reason is not None or finished_ != total or bool(running)
                        or len(accepted) < len(risks),
                        help=reason or f"{len(nxt.keys[nxt.index]):,} partition(s), once this wave is complete")
        cancelling = cancel_section(ctx, run, live)
        if run.rollback is not None:
            roll_help = reason or (reassign_writes.CANNOT_CANCEL + "." if running else
                                   "Execute the saved rollback: the replicas these partitions had before "
                                   f"action #{run.action_id}")
            risks = [] if running else ctx.conn.derived(
                "reassign.rollback_risks", live, lambda s: plan_risks(run.rollback, s), key=run.action_id)
            for risk in risks:
                st.error(f"**The rollback may never finish.** {md(risk)}.", icon=":material/report:")
            blocked = reason is not None or bool(running)
            # by default at the rate the reassignment ran with (dashboard/reassign/rollback.py)
            rate, confirm, form = rollback_view.confirmation(run.action_id, total, run.throttle, disabled=blocked)
            accepted = risk_boxes(risks, f"rollback:{run.action_id}", disabled=reason is not None)
            st.button("Roll back", key="ra_rollback", icon=":material/undo:", on_click=_rollback, help=roll_help,
                      args=(ctx, run, rate, accepted, form),
                      disabled=blocked or not confirm or len(accepted) < len(risks))
        if running and not cancelling:
            st.caption(f":material/info: {reassign_writes.CANNOT_CANCEL}. Rollback is enabled once no reassignment is "
                       "running.")
        actions.show(RUN_RESULT, scope="reassign-run", context=str(run.action_id), only_current=True)


def follow_earlier(ctx: frame.PageContext) -> None:
    """Pick a reassignment recorded earlier (another session, before a reload) to follow, verify or roll back."""
    try:
        recorded = [a for a in actions.store().actions(ctx.cluster.name, kind=("reassignment", "rollback"),
                                                       limit=20)
                    if a.status == "applied"]
    except Exception:
        return
    if not recorded:
        return
    with st.expander("Follow an earlier reassignment"):
        c = st.columns([4, 1], vertical_alignment="bottom")
        labels = {a.id: plan_view.run_label(a) for a in recorded}
        chosen = c[0].selectbox("Reassignment", list(labels), key="ra_follow_id", format_func=labels.__getitem__)
        c[1].button("Follow", key="ra_follow", on_click=_follow, args=(ctx, chosen), width="stretch")
