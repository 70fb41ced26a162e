"""The Reassign page's running reassignment in bytes (issue 28): a progress bar of the bytes the new replicas hold
against their leaders, the copy rate and ETA, a per-broker table and the slowest partitions first, then the throttle
changed while it runs.

Thin: the samples are taken by core.cluster.reassign_progress (the running partitions from ZooKeeper or the
controller, their log sizes from the brokers: one describeLogDirs request per broker holding a moving replica) and
measured by core.reassign_progress.progress, the function `python -m core status` prints; the page keeps the
samples of the last WINDOW seconds in the session, so its rate is measured over time across reruns, and samples
every SAMPLE_EVERY seconds at most (its own fragment reruns that often). The throttle change goes through the engine
(core.cluster.engines: change_throttle) behind the gate, as `python -m core throttle` does.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from core.cluster import engines
from core.errors import KeelError
from core.reassign_progress import WINDOW, Progress, Sample, format_bytes, format_seconds, progress, record
from dashboard import actions, frame, ui
from dashboard.text import md, md_text

SAMPLES = "ra_bytes_samples"  # (cluster name, samples): kept across reruns
SAMPLE_ERROR = "ra_bytes_error"
THROTTLE_RESULT = "ra_throttle_result"
SAMPLE_EVERY = 5.0  # s between two samples of one session (each costs a describeLogDirs round)
TIMEOUT = 5.0  # s: a page waits no longer for the brokers' sizes
SHOWN = 20  # slowest partitions listed


def samples(ctx: frame.PageContext) -> tuple[Sample, ...]:
    """This session's samples of `ctx`'s cluster, with a new one if the last is SAMPLE_EVERY old."""
    held = st.session_state.get(SAMPLES)
    kept: tuple[Sample, ...] = held[1] if held and held[0] == ctx.cluster.name else ()
    if kept and time.time() - kept[-1].at < SAMPLE_EVERY:
        return kept
    from core.cluster import reassign_progress as sampler
    from core.kafka.admin import KafkaAdmin  # kafka-python is loaded only for a cluster with brokers to ask

    try:
        handle = ctx.conn.write_session()  # the live session (or the brokers' admin): a read, not a write
        earlier = kept[-1] if kept else None
        if engines.through_brokers(handle):
            taken = sampler.take(handle, handle, earlier)
        else:
            with KafkaAdmin.for_cluster(ctx.cluster, timeout=min(TIMEOUT, ctx.cluster.connect_timeout * 2)) as admin:
                taken = sampler.take(handle, admin, earlier)
    except KeelError as e:
        st.session_state[SAMPLE_ERROR] = str(e)
        return kept
    st.session_state.pop(SAMPLE_ERROR, None)
    kept = record(kept, taken, WINDOW)
    st.session_state[SAMPLES] = (ctx.cluster.name, kept)
    return kept


def broker_table(d: dict) -> pd.DataFrame:
    """Per target broker, from Progress.to_dict(): the numbers `status --json` prints, rounded as it rounds them."""
    return pd.DataFrame([{"Broker": b["broker"], "Partitions": b["partitions"], "Copied (bytes)": b["copied"],
                          "Total (bytes)": b["total"], "%": b["percent"], "Rate (B/s)": b["rate"]}
                         for b in d["brokers"]],
                        columns=["Broker", "Partitions", "Copied (bytes)", "Total (bytes)", "%", "Rate (B/s)"])


def partition_table(d: dict) -> pd.DataFrame:
    return pd.DataFrame([{"Topic": x["topic"], "Partition": x["partition"], "To broker(s)": ",".join(
        str(r["broker"]) for r in x["replicas"]), "Leader": x["leader"], "Copied (bytes)": x["copied"],
        "Total (bytes)": x["total"], "%": x["percent"], "Rate (B/s)": x["rate"],
        "State": "finished" if x["finished"] else "copying"} for x in d["partitions"][:SHOWN]],
        columns=["Topic", "Partition", "To broker(s)", "Leader", "Copied (bytes)", "Total (bytes)", "%", "Rate (B/s)",
                 "State"])


def _change_throttle(ctx: frame.PageContext, remove: bool) -> None:
    """on_click: the rate in the box at click time (not when the button was drawn), or none."""
    rate = None if remove else int(round(float(st.session_state.get("ra_throttle_mb") or 0) * 1e6))

    def work() -> str:
        h = ctx.conn.write_session()
        done = engines.reassignments(h).change_throttle(h, actions.store(), rate, cluster=ctx.cluster.name,
                                                        actor=actions.actor())
        was = f"{done.previous:,} B/s" if done.previous is not None else "unthrottled" \
            if not any(done.previous_rates.values()) else "mixed rates"
        now = f"{rate:,} B/s" if rate else "removed"
        return (f"Throttle {now} on broker(s) {','.join(map(str, done.throttles.brokers))} "
                f"({done.partitions:,} moving partition(s); it was {was}; action #{done.action_id} in History). "
                "The copy rate above follows it within a window.")

    actions.run(THROTTLE_RESULT, work, cfg=ctx.config, action="change the throttle", scope="reassign-throttle")


def _throttle_form(ctx: frame.PageContext, current: int | None) -> None:
    reason = actions.blocked_reason(ctx.config, "change the throttle")
    # one wrapping row of fixed-width parts: at 900 px the buttons move to the next line instead of being cut to
    # "Cha…" in a third of a narrow column
    c = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
    c.number_input("Replication throttle (MB/s per broker)", min_value=0.001, max_value=1e6, width=260,
                     value=round(current / 1e6, 3) if current else 10.0, step=1.0, format="%.3f",
                     key="ra_throttle_mb", disabled=reason is not None,
                     help="leader/follower.replication.throttled.rate on every broker that moves data, as "
                          "kafka-reassign-partitions --execute --additional --throttle sets it")
    c.button("Change throttle", key="ra_throttle_change", icon=":material/speed:", on_click=_change_throttle,
             args=(ctx, False), disabled=reason is not None, width="content",
             help=reason or "Recorded in History with the rate it replaces")
    c.button("Remove throttle", key="ra_throttle_remove", on_click=_change_throttle, args=(ctx, True),
             disabled=reason is not None or not current, width="content",
             help=reason or "Run unthrottled until the end (Verify removes the throttle anyway once complete)")
    actions.show(THROTTLE_RESULT, scope="reassign-throttle")


AUTO_RESULT = "ra_auto_result"


def _start_auto(ctx: frame.PageContext) -> None:
    """on_click: the loop in a background thread of this Streamlit server (core.cluster.auto_throttle), on a
    KafkaAdmin of its own; through ZooKeeper it writes on the connection's live session."""
    from core.auto_throttle import policy
    from core.cluster import auto_throttle as loop
    from core.kafka.admin import KafkaAdmin

    budget = int(round(float(st.session_state.get("ra_auto_mb") or 0) * 1e6))

    def work() -> str:
        pol = policy(budget)
        admin = KafkaAdmin.for_cluster(ctx.cluster)
        through = engines.through_brokers(ctx.conn.write_session())
        handles = (lambda: (admin, admin)) if through else (lambda: (ctx.conn.write_session(), admin))
        loop_id = loop.start_background(handles, actions.store(), pol, cluster=ctx.cluster.name,
                                        actor=actions.actor(), close=admin.close)
        return (f"Auto-throttle loop #{loop_id} started: budget {format_bytes(pol.budget)}/s per receiving broker, "
                f"floor {format_bytes(pol.floor)}/s, ceiling {format_bytes(pol.ceiling)}/s, every {pol.interval:g} s")

    actions.run(AUTO_RESULT, work, cfg=ctx.config, action="change the throttle", scope="reassign-auto")


def _stop_auto(ctx: frame.PageContext) -> None:
    """on_click: stop the page's loop and say what stays (the rate it last set), as Ctrl-C of the CLI's does."""
    from core.audit.store import ThrottleLoops
    from core.cluster import auto_throttle as loop

    def work() -> str:
        mine = loop.background(ctx.cluster.name)
        if mine is None or not loop.stop_background(ctx.cluster.name):
            return "No auto-throttle loop of this dashboard runs for this cluster any more."
        [row] = [r for r in ThrottleLoops(actions.store()).of(ctx.cluster.name) if r.id == mine.loop_id] or [None]
        rate = f"{format_bytes(row.rate)}/s" if row is not None and row.rate else "the rate in force"
        return (f"Auto-throttle loop #{mine.loop_id} stopped: the last rate ({rate}) stays in place; Verify removes "
                "it once the reassignment is complete.")

    actions.run(AUTO_RESULT, work, cfg=ctx.config, action="change the throttle", scope="reassign-auto")


def _auto_throttle(ctx: frame.PageContext, running: bool) -> None:
    """The loops of this cluster (started here or from the CLI: their heartbeat rows), and the page's own."""
    from core.auto_throttle import ALIVE
    from core.cluster import auto_throttle as loop

    try:
        report = loop.loops_report(actions.store(), ctx.cluster.name)
    except KeelError as e:
        st.caption(f":material/warning: The auto-throttle loops could not be read: {md_text(str(e))}")
        return
    for row, state, line in report:
        icon = ":material/autorenew:" if state == ALIVE else ":material/warning:"
        st.caption(f"{icon} {md_text(line)}" + (f" — last decision: {md_text(row.note)}" if row.note else ""))
    mine = loop.background(ctx.cluster.name)
    if mine is not None and mine.thread.is_alive():
        reason = actions.blocked_reason(ctx.config, "change the throttle")
        st.button("Stop auto-throttle", key="ra_auto_stop", on_click=_stop_auto, args=(ctx,),
                  icon=":material/stop_circle:", disabled=reason is not None,
                  help=reason or "The last rate stays in place (Verify removes it once the reassignment is complete)")
    elif running and not any(state == ALIVE for _, state, _ in report):
        reason = actions.blocked_reason(ctx.config, "change the throttle")
        c = st.container(horizontal=True, vertical_alignment="bottom", gap="small")  # wraps at 900 px
        c.number_input("Auto-throttle budget (MB/s inbound per receiving broker)", min_value=0.001, width=380,
                       max_value=1e6, value=50.0, step=1.0, format="%.3f", key="ra_auto_mb",
                          disabled=reason is not None,
                          help="Every 30 s: throttle = budget − the broker's other inbound (produce, replication), "
                               "within budget/10 and the budget; runs in this dashboard's server process")
        c.button("Start auto-throttle", key="ra_auto_start", icon=":material/autorenew:", on_click=_start_auto,
                 args=(ctx,), disabled=reason is not None, width="content", help=reason or "Recorded in History")
    actions.show(AUTO_RESULT, scope="reassign-auto")


def _current_rate(ctx: frame.PageContext, p: Progress) -> int | None:
    """The follower rate of the first target broker, as the live view read it (None: unthrottled or unknown)."""
    live = ctx.conn.snapshot()
    if live is None or not p.brokers:
        return None
    value = live.broker_configs.get(str(p.brokers[0].broker), {}).get("follower.replication.throttled.rate")
    return int(value) if value and value.isdigit() else None


@st.fragment(run_every=SAMPLE_EVERY)
def section(ctx: frame.PageContext) -> None:
    """The running reassignment in bytes, and its throttle; nothing when none runs and none was followed."""
    if not ctx.cluster.bootstrap:
        st.caption(":material/info: Progress in bytes needs the cluster's `bootstrap` servers in keel.toml (only the "
                   "brokers report log sizes: describeLogDirs). From a shell:")
        ui.commands(["python", "-m", "core", "status", "--zk", ctx.cluster.zk or "ZK", "--bootstrap-server",
                     "HOST:PORT", "--watch"])
        return
    p = progress(held) if (held := samples(ctx)) else None
    error = st.session_state.get(SAMPLE_ERROR)
    if error:
        st.caption(f":material/warning: The log sizes could not be read just now: {md_text(error)}")
    if p is None or not p.partitions:
        actions.show(THROTTLE_RESULT, scope="reassign-throttle")  # a click's outcome stays when the run has ended
        return
    d = p.to_dict()  # what `status --json` prints: the page draws the same numbers
    with st.container(border=True, key="ra_bytes"):
        st.progress(min(p.fraction, 1.0), text=f"{format_bytes(d['copied'])} of {format_bytes(d['total'])} copied "
                                               f"({d['percent']:.1f} %) into the new replicas")
        m = ui.metric_row()
        ui.metric(m, "Copied", format_bytes(d["copied"]), help=f"{d['copied']:,} bytes: what the new replicas hold, "
                                                               "at most their leader's log size each")
        ui.metric(m, "Remaining", format_bytes(d["remaining"]), help=f"{d['remaining']:,} bytes: leader sizes minus "
                                                                     "new replica sizes (leaders grow under traffic)")
        ui.metric(m, "Copy rate", "—" if d["rate"] is None else f"{format_bytes(d['rate'])}/s",
                  help=f"over the last {p.window:.0f} s of samples" if d["rate"] is not None else p.eta_note)
        ui.metric(m, "ETA", format_seconds(d["eta_seconds"]), help=p.eta_note)
        if p.eta is None:
            st.caption(f"No ETA yet: {md(p.eta_note)}.")
        st.caption(f"Measured from {p.samples} sample(s) of the replicas' log sizes, one every {SAMPLE_EVERY:g} s at "
                   f"most (describeLogDirs: one request per broker holding a moving replica); {p.running:,} "
                   f"partition(s) copying, {len(p.partitions) - p.running:,} finished. `python -m core status` "
                   "prints the same.")
        st.dataframe(broker_table(d), hide_index=True, key="ra_bytes_brokers")
        more = f", first {SHOWN}" if len(p.partitions) > SHOWN else ""
        st.caption(f"Slowest partitions first (the least copied){more}:")
        st.dataframe(partition_table(d), hide_index=True, key="ra_bytes_partitions")
        if p.running:
            _throttle_form(ctx, _current_rate(ctx, p))
        else:  # the copy ended as the throttle was changed: say what the click did all the same
            actions.show(THROTTLE_RESULT, scope="reassign-throttle")
        _auto_throttle(ctx, bool(p.running))
