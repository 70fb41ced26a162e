"""Reassign: plan a partition reassignment (rebalance, fill new brokers, drain brokers, change the replication factor,
or import a plan), see what it costs and what it changes, download Kafka's JSON, execute it with a throttle, follow
it live, verify it (which removes the throttles) and roll it back.

Every input that shapes the plan is in the URL (`?goal=Drain+brokers&drain=2`): widgets bound to query parameters.
Fast: everything derived from a snapshot or a plan is computed once (conn.derived / Planned.derived) and only the
view picked under "Before and after" is drawn (one figure instead of six).

Thin: the plan comes from core.balance (an imported document is parsed and validated by core.plans, then scored with
the same metrics), shaped for drawing by dashboard.reassign.plan_view. Plans are cached per (snapshot generation,
request) in the connection's memo, shared by every session, so a rerun re-plans nothing. Execute binds the document
on screen to the button; dashboard.reassign.run writes it through core.zk.reassign_writes and follows the run.
"""

from __future__ import annotations

import json
import time

import streamlit as st

from core.balance.sizes import parse_log_dirs
from core.errors import KeelError
from core.plans import plan_risks
from core import writes as reassign_writes
from dashboard import actions, charts, frame, ops_panels, ui
from dashboard.reassign import plan_view
from dashboard.reassign import progress as bytes_view, rates as write_rates, run as reassign_run
from dashboard.reassign.sizes import from_brokers as broker_sizes_of
from dashboard.text import md, md_text

SIZES = "ra_sizes_cache"  # (digest, parsed sizes)
SIZES_REREAD = "ra_sizes_reread_asked"  # "Read again" was pressed: the next run reads the brokers' sizes anew
PLANS = "reassign.plans"  # Connection.memo: (generation, request key) -> (snapshot, Planned | None, error | None)
MAX_CACHED_PLANS = 6
CHART = {"displayModeBar": False}

ctx = frame.page_context()
conn = ctx.conn
cfg = ctx.config
st.title("Reassign", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}** · plan, execute, verify and roll back partition reassignments as "
           "kafka-reassign-partitions.sh does in ZooKeeper mode")
live_snap = frame.live_snapshot(conn, in_fragment=False)
generation = conn.live.generation if conn.live is not None else 0
# Plans are made on the cluster as it will be once a running reassignment completes (see plan_view.settled).
snap = conn.derived("reassign.settled", live_snap, plan_view.settled)


# --- inputs -----------------------------------------------------------------------------------------------


def topic_picker(label: str, key: str, placeholder: str) -> list[str]:
    parts = conn.derived("reassign.topic_sizes", snap, lambda s: {t.name: len(t.partitions) for t in s.topics})
    if key == "topics":  # bound to the URL, which holds the label: plain names
        return st.multiselect(label, list(parts), key=key, placeholder=placeholder, bind="query-params")
    return st.multiselect(label, list(parts), key=key, placeholder=placeholder,
                          format_func=lambda n: f"{n} ({parts[n]:,} partitions)")


def read_input(upload, text: str | None) -> bytes | str | None:
    if upload is not None:
        return upload.getvalue()
    return text if text and text.strip() else None


def _read_sizes_again() -> None:
    st.session_state[SIZES_REREAD] = True


def broker_sizes() -> tuple[dict | None, str | None]:
    """(sizes, their key) read from the cluster's brokers (dashboard.reassign.sizes: one read per connection,
    kept a few minutes), with a line saying where they come from; (None, None) with a note when the brokers cannot
    be read. Issue 24: without this, Bytes moved and Est. time showed "—" on a cluster with `bootstrap`."""
    force = st.session_state.pop(SIZES_REREAD, False)
    with st.spinner("Reading partition sizes from the brokers (describeLogDirs)…"):
        got = broker_sizes_of(conn, ctx.cluster, force=force)
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    if got.sizes is None:
        row.caption(f":material/warning: Partition sizes could not be read from the brokers: "
                    f"{md_text(got.error).rstrip('.')}. Bytes moved and the time estimate are unknown; upload `kafka-log-dirs.sh --describe` output "
                    "under Partition sizes, or read again.")
    else:
        row.caption(f"Partition sizes: {len(got.sizes):,} partitions, {plan_view.human_bytes(sum(got.sizes.values()))} "
                    f"(largest replica per partition), read from the brokers at "
                    f"{time.strftime('%H:%M:%S UTC', time.gmtime(got.at))} (describeLogDirs, as `kafka-log-dirs.sh "
                    "--describe` shows them).")
    row.button("Read again", key="ra_sizes_reread", icon=":material/refresh:", on_click=_read_sizes_again,
               help="Read the partition sizes from the brokers now")
    return (got.sizes, got.key) if got.sizes is not None else (None, None)


def sizes_input() -> tuple[dict | None, str | None, bool]:
    """(sizes, digest of their data, bad input): an uploaded or pasted kafka-log-dirs output, else with the cluster's
    `bootstrap` the brokers' own."""
    with st.expander("Partition sizes (optional: bytes moved, byte balance, time estimate)"):
        up = st.file_uploader("kafka-log-dirs.sh --describe output", type=["json", "txt"], key="ra_sizes_file",
                              help="kafka-log-dirs.sh --bootstrap-server B --describe > sizes.json; its two "
                                   "progress lines may stay in"
                                   + ("; it replaces the sizes read from the brokers" if ctx.cluster.bootstrap
                                      else ""))
        text = st.text_area("…or paste it", key="ra_sizes_text", height=90,
                            placeholder='{"version":1,"brokers":[{"broker":1,"logDirs":[...]}]}')
        data = read_input(up, text)
        if data is not None:
            key = plan_view.digest(data)
            cached = st.session_state.get(SIZES)
            if cached is None or cached[0] != key:
                try:
                    cached = (key, parse_log_dirs(data))
                except KeelError as e:
                    st.error(md_text(f"Partition sizes: {e}"), icon=":material/error:")
                    return None, None, True
                st.session_state[SIZES] = cached
            sizes = cached[1]
            st.caption(f"{len(sizes):,} partition sizes, {plan_view.human_bytes(sum(sizes.values()))} in total "
                       f"(largest replica per partition)" + (" · from the uploaded file" if up is not None else ""))
            return sizes, key, False
        if ctx.cluster.bootstrap:
            st.caption("Without a file, the sizes come from the brokers (the line under this box).")
        else:
            st.caption("Without sizes the plan balances replica counts; bytes moved and the time estimate are "
                       "unknown. With the cluster's `bootstrap` in keel.toml, Keel reads them from the brokers.")
    if not ctx.cluster.bootstrap:
        return None, None, False
    sizes, key = broker_sizes()
    return sizes, key, False


def broker_label(b: int, held: dict[int, int]) -> str:
    broker = snap.broker_by_id.get(b)
    parts = [str(b)]
    if broker is not None and broker.rack:
        parts.append(broker.rack)
    parts.append(f"{held.get(b, 0):,} replicas")
    if broker is None or not broker.alive:
        parts.append("DOWN")
    return " · ".join(parts)


st.subheader("Goal", anchor=False)
goal = st.radio("Goal", plan_view.GOALS, horizontal=True, key="goal", label_visibility="collapsed", bind="query-params",
                on_change=reassign_run.goal_changed)
held = conn.derived("reassign.held", snap, plan_view.replicas_per_broker)
empties = conn.derived("reassign.empty", snap, plan_view.empty_brokers)
alive_count = len(snap.alive_broker_ids)
topics: list[str] = []
drain: list[int] = []
rf = None
import_data = None
if goal == plan_view.GOAL_REBALANCE:
    # the topic list (thousands of names on a large cluster) is sent to the browser only when asked for
    some = st.toggle("Only some topics", key="ra_some_topics", value=bool(st.query_params.get_all("topics")),
                     help="Off: every topic. On: choose them (the list is in the URL: ?topics=a&topics=b)")
    if some:
        topics = topic_picker("Topics", "topics", "Choose topics…")
    st.caption("Balance replicas and preferred leaders of " + ("these topics" if some else "every topic")
               + " over every alive broker, moving as few replicas as the goal needs.")
elif goal == plan_view.GOAL_FILL:
    if empties:
        st.info(f"**{len(empties)} alive broker(s) hold no replica yet: {plan_view.ids(empties)}.** The plan gives "
                "them their share of every topic's replicas.", icon=":material/fiber_new:")
    else:
        st.info("Every alive broker already holds replicas: this balances every topic over all alive brokers.",
                icon=":material/balance:")
elif goal == plan_view.GOAL_DRAIN:
    # broker ids as labels: the URL holds them (?drain=2&drain=5); the details are listed below
    drain = st.multiselect("Brokers to drain", [b.id for b in snap.brokers], key="drain", bind="query-params",
                           placeholder="Choose brokers…",
                           help="Every replica leaves them; they are not targets. A down broker can be drained too: "
                                "the other goals leave its replicas where they are.")
    st.caption(" · ".join(md(broker_label(b.id, held)) for b in snap.brokers))
    if not drain:
        st.info("Choose the broker(s) to drain.", icon=":material/edit:")
elif goal == plan_view.GOAL_RF:
    c = st.columns([4, 1], vertical_alignment="bottom")
    with c[0]:
        topics = topic_picker("Topics", "ra_rf_topics", "Choose topics…")
    # a text field read exactly, no min / max: the engine says "Replication factor: 9 larger than available
    # brokers: 5." (a number input silently kept the previous value for one outside its bounds)
    rf_field = ui.int_field("Replication factor", min(3, max(1, alive_count)), key="ra_rf", container=c[1],
                            errors=st.container(), help=f"{alive_count} broker(s) alive")
    rf = rf_field.value
    if topics and rf is not None:
        current = sorted({snap.topic_by_name[t].replication_factor for t in topics})
        st.caption(f"Current replication factor: {', '.join(map(str, current))} → {rf}. New replicas go where they "
                   "balance the brokers; dropped ones leave the fullest brokers.")
    else:
        st.info("Choose the topics whose replication factor changes.", icon=":material/edit:")
else:
    c = st.columns(2)
    upload = c[0].file_uploader("Reassignment JSON", type=["json", "txt"], key="ra_import_file",
                                help="As kafka-reassign-partitions.sh --generate prints it, or a plan saved here")
    text = c[1].text_area("…or paste it", key="ra_import_text", height=110,
                          placeholder='{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    import_data = read_input(upload, text)
    if import_data is None:
        st.info("Upload or paste a reassignment JSON: it is validated against the live cluster as Kafka does.",
                icon=":material/upload_file:")
    elif upload is not None and text and text.strip():
        st.caption("Using the uploaded file (the pasted text is ignored while a file is uploaded).")

if goal in (plan_view.GOAL_REBALANCE, plan_view.GOAL_FILL):
    down_held = [b for b in sorted(held) if b not in snap.alive_broker_ids and held[b]]
    if down_held:
        st.info(f"**Down broker(s) {plan_view.ids(down_held)} keep their replicas** "
                f"({', '.join(f'{held[b]:,} on {b}' for b in down_held)}): this goal leaves the partitions holding "
                "them as they are, since a reassignment keeping a down broker's replica could never complete. To move "
                "them off, choose **Drain brokers**.", icon=":material/dns:")

st.subheader("Strategy and options", anchor=False)
importing = goal == plan_view.GOAL_IMPORT
# one wrapping row of fixed-width inputs: readable at 900 px (they move to the next line) and at 1600 px
c = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
strategy = c.selectbox("Strategy", plan_view.strategies(), key="strategy", disabled=importing, bind="query-params",
                       width=190,
                       help="balanced: moves only what the goal needs (fewest replicas). kafka-generate: what "
                            "kafka-reassign-partitions.sh --generate proposes (every partition re-placed).")
# text fields read exactly (dashboard.ui.int_field): a number input silently clamped or kept the previous value for
# one outside its min / max. Bounds here only where the engine has none (seed, throttle); max moves and the wave
# limits reach the engine as typed and are refused with its message.
below = st.container()  # the fields' messages, under the row
option_fields = (
    ui.int_field("Seed", 0, key="ra_seed", container=c, errors=below, min=0, disabled=importing, width=120,
                 help="Same snapshot, options and seed: same plan"),
    ui.int_field("Max moves", None, key="ra_max_moves", container=c, errors=below, optional=True, width=140,
                 placeholder="no limit", disabled=importing,
                 help="Move at most this many replicas (balanced stops early; kafka-generate refuses)"),
    ui.int_field("Wave: K partitions", None, key="ra_wave_k", container=c, errors=below, name="Wave K",
                 optional=True, width=170, placeholder="no limit",
                 help="Waves: at most K partitions reassigning at once"),
    ui.int_field("Wave: L per broker", None, key="ra_wave_l", container=c, errors=below, name="Wave L",
                 optional=True, width=170, placeholder="no limit",
                 help="Waves: at most L replicas moving into or out of any broker at once"),
    ui.float_field("Throttle (MB/s)", plan_view.DEFAULT_THROTTLE_MB, key="ra_throttle", container=c, errors=below,
                   min=0.001, max=(2 ** 63 - 1) // plan_view.MB, width=150,  # Kafka's rate: a LONG of bytes/s
                   disabled=not st.session_state.get("ra_throttle_on", True)))
bad_options = ui.invalid(*option_fields)  # no plan (so no Execute) until every option is a number
seed, max_moves, wave_k, wave_l, throttle_mb = (f.value for f in option_fields)
seed = seed or 0  # disabled while importing (unused)
t = st.container(horizontal=True, gap="large")
throttle_on = t.toggle("Throttle replication", value=True, key="ra_throttle_on",
                       help="Kafka's --throttle: leader and follower replication rates on the brokers involved, "
                            "removed by Verify once complete")
rack_aware = t.toggle("Rack-aware", value=True, key="ra_rack_aware", disabled=importing,
                      help="Every partition across min(RF, racks) racks (off: --disable-rack-aware)")
spread = t.toggle("Per-topic spread", value=False, key="ra_spread", disabled=importing,
                  help="Also spread each topic evenly over the brokers (costs more moves)")
throttle = int(round(throttle_mb * plan_view.MB)) if throttle_on and throttle_mb is not None else None
if not (throttle_on and throttle_mb is None):  # a throttle that is no number has its message above
    st.caption(f"Throttle: {f'{throttle:,} bytes/s per broker (--throttle {throttle})' if throttle else 'none'}.")
sizes, sizes_key, bad_sizes = sizes_input()
rates, rates_key = write_rates.panel(conn, ctx.cluster)


# --- the plan ---------------------------------------------------------------------------------------------


def plan_entry(key: str, compute, what: str) -> tuple[plan_view.Planned | None, Exception | None, bool]:
    """(plan, error, just computed): one per (snapshot generation, request), shared by every session."""
    memo = conn.memo(PLANS)
    slot = (generation, key)
    hit = memo.get(slot)
    if hit is not None and hit[0] is snap:
        return hit[1], hit[2], False
    with st.spinner(what, show_time=True):
        try:
            planned, error = compute(), None
        except KeelError as e:
            planned, error = None, e
        except Exception as e:  # still a message on the page, never a traceback
            planned, error = None, KeelError(f"Planning failed: {type(e).__name__}: {e}")
    memo[slot] = (snap, planned, error)
    while len(memo) > MAX_CACHED_PLANS:
        memo.pop(next(iter(memo)))
    return planned, error, True


if rack_aware and not importing:  # issue 18: racks of different sizes load the small rack's brokers more
    # the table says it all; its chart cost ~0.5 s of every opening of this page
    ops_panels.rack_warning(conn, snap, key="ra", chart=False)

st.subheader("Plan", anchor=False)
if snap is not live_snap:
    st.info(f"A reassignment of {len(live_snap.in_progress.reassignment):,} partition(s) is running. Plans start "
            "from the cluster as it will be once it completes (those partitions at their target replicas); Kafka "
            "accepts a new reassignment only after it completes.", icon=":material/hourglass_top:")
planned: plan_view.Planned | None = None
request = None
if bad_options:
    st.info("Fix the options above to plan.", icon=":material/edit:")
elif bad_sizes:
    st.info("Fix or remove the partition sizes to plan.", icon=":material/edit:")
elif not importing and not snap.partition_count:  # a new cluster: nothing to plan is no error
    st.info("Nothing to plan: the cluster has no topic yet (no partition to move).", icon=":material/info:")
elif importing:
    if import_data is not None:
        key = repr(("import", plan_view.digest(import_data), sizes_key, wave_k, wave_l))
        planned, error, fresh = plan_entry(
            key, lambda: plan_view.import_plan(snap, import_data, sizes=sizes, wave_partitions=wave_k,
                                               wave_broker_moves=wave_l),
            "Validating the plan against the live cluster…")
        if error is not None:
            actions.show_error(error)
else:
    request = plan_view.build_request(snap, goal, strategy, topics=topics, drain=drain, replication_factor=rf,
                                      sizes=sizes, max_moves=None if max_moves is None else int(max_moves), seed=seed,
                                      rack_aware=rack_aware, per_topic_spread=spread,
                                      wave_partitions=None if wave_k is None else int(wave_k),
                                      wave_broker_moves=None if wave_l is None else int(wave_l), rates=rates)
    if request is not None:
        scope = f"{len(request.topics):,} topic(s)" if request.topics is not None else "every topic"
        planned, error, fresh = plan_entry(
            plan_view.request_key(strategy, request, sizes_key, rates_key), lambda: plan_view.run_planner(snap, strategy, request),
            f"Planning with {strategy} over {scope} ({snap.partition_count:,} partitions in the cluster)…")
        if error is not None:
            actions.show_error(error)

if planned is not None:
    st.caption(f"{'Scored' if importing else 'Planned'} in {planned.seconds:.2f} s on snapshot generation "
               f"{generation} ({'just now' if fresh else 'cached: same cluster state and inputs'}) · source "
               f"**{md(planned.source)}** · {len(planned.result.target):,} partition(s) in scope")
    for w in planned.warnings:
        st.warning(md_text(w), icon=":material/warning:")


def cost_panel(p: plan_view.Planned) -> None:
    r = p.result.report
    est = p.derived(f"estimate:{throttle}", lambda: plan_view.estimate_seconds(p, snap, throttle))
    n_waves = plan_view.wave_count(p)
    row = ui.metric_row()
    ui.metric(row, "Replicas moved", f"{r.replicas_moved:,}",
              help="New replicas placed on a broker that did not hold the partition (data copied)")
    ui.metric(row, "Bytes moved", plan_view.human_bytes(r.bytes_moved, unknown="—"),
              help="Σ new replicas × partition size" if r.bytes_moved is not None else
              "Unknown without partition sizes (kafka-log-dirs.sh --describe, under the options)")
    bound = (f"Moves ÷ lower bound. Lower bound {r.lower_bound:,}: no plan reaching the same per-broker targets "
             "moves fewer replicas. 1.00× is optimal.")
    if r.brokers_off_target[1]:  # a ratio against targets the plan does not reach would flatter it
        ui.metric(row, "Moves ÷ bound", "n/a",
                  help=f"{bound} This plan leaves {r.brokers_off_target[1]:,} broker(s) outside their replica "
                       "share, so it is not compared with the bound.")
    else:
        ui.metric(row, "Moves ÷ bound", plan_view.ratio_text(r.moves_over_lower_bound), help=bound)
    ui.metric(row, "Leader changes", f"{r.leader_changes:,}", help="Partitions whose preferred (first) replica changes")
    ui.metric(row, "Waves", f"{n_waves:,}", help="Executed one after another (K / L limits)" if p.result.waves else
              "One document: set K or L to split it")
    ui.metric(row, "Est. time", plan_view.human_duration(est, unknown="—"),
              help="Estimated copy time. Per wave: the busiest broker's bytes in or out ÷ the throttle (Kafka "
                   "throttles each broker's replication traffic at this rate), added over the waves. Unknown without "
                   "sizes or a throttle; writes arriving meanwhile are not counted.")
    ui.metric(row, "Partitions changed", f"{len(p.result.proposed):,}")
    ui.metric(row, "Replica spread", plan_view.before_after_text((r.replicas[0].spread, r.replicas[1].spread)),
              help="Max − min replicas per target broker, before → after")
    ui.metric(row, "Leader spread", plan_view.before_after_text((r.leaders[0].spread, r.leaders[1].spread)),
              help="Preferred-leader spread: max − min preferred leaders per target broker, before → after")
    ui.metric(row, "Rack violations", plan_view.before_after_text(r.rack_violations),
              help="Partitions spanning fewer than min(RF, racks) racks, before → after")
    ui.metric(row, "Off target", plan_view.before_after_text(r.brokers_off_target),
              help="Brokers off target: target brokers outside the floor / ceiling of their replica share, "
                   "before → after")
    if r.moves_without_topic_spread is not None:
        st.caption(f"Per-topic spread costs {r.replicas_moved - r.moves_without_topic_spread:,} extra move(s) "
                   f"({r.moves_without_topic_spread:,} without it).")
    if est is not None:
        st.caption(f"Estimated time = Σ over {n_waves:,} wave(s) of (busiest broker's bytes in or out) ÷ "
                   f"{throttle:,} B/s.")
    if r.traffic is not None:  # measured write rates: bytes-in per broker, before and after
        t = r.traffic
        st.caption(t.summary()[0].upper() + t.summary()[1:] + ".")
        alive = [snap.broker_by_id[b].alive if b in snap.broker_by_id else False for b in t.brokers]
        st.plotly_chart(p.derived("figure:write_rates", lambda: charts.broker_before_after(
            t.brokers, t.before, t.after, alive, unit="B/s", title="Bytes in per broker (written by its replicas)",
            y_title="B/s")), key="ra_rates_chart", config=CHART)


VIEWS = ("Heatmap", "Change", "Per broker")


def before_after(p: plan_view.Planned) -> None:
    st.subheader("Before and after", anchor=False)
    brokers = p.derived("brokers", lambda: plan_view.shown_brokers(snap, p.before, p.result.target))
    alive = [snap.broker_by_id[b].alive if b in snap.broker_by_id else False for b in brokers]
    drained = request.drain_brokers if request is not None else ()
    marks = plan_view.broker_marks(snap, drain=drained, empty=empties)
    # one view at a time: drawing every figure made the page slow to open (issue 16)
    view = st.segmented_control("View", VIEWS, key="view", default=VIEWS[0], required=True, bind="query-params",
                                label_visibility="collapsed",
                                help="Heatmap: replicas per broker and topic, before and after. Change: after − "
                                     "before. Per broker: replicas, preferred leaders (and bytes) per broker.")
    figure_key = repr((view, tuple(sorted(marks.items()))))
    if view in ("Heatmap", "Change"):
        heat = p.derived("heatmap", lambda: plan_view.topic_broker_counts(p.before, p.result.target, brokers))
        draw = charts.replica_heatmaps if view == "Heatmap" else charts.replica_change_heatmap
        figs = p.derived(f"figure:{figure_key}",
                         lambda: draw(heat.brokers, alive, heat.topics, heat.before, heat.after, marks=marks))
        if view == "Heatmap":  # side by side where both fit, one above the other in a narrow window
            row = st.container(horizontal=True, gap="medium")
            for fig, key in zip(figs, ("ra_heatmap", "ra_heatmap_after")):
                row.plotly_chart(fig, key=key, config=CHART)
        else:
            st.plotly_chart(figs, key="ra_change_heatmap", config=CHART)
        folded = heat.topics[-1] if heat.topics and heat.topics[-1].startswith("other (") else None
        st.caption(f"Over the {len(p.result.target):,} partition(s) in scope"
                   + (f"; the {len(heat.topics) - 1} topics with the most replicas, the {folded[7:-1]} summed in "
                      "the last row" if folded else "")
                   + ". Hatched: down broker; striped: being drained.")
        return
    loads = p.derived("loads", lambda: plan_view.broker_loads(p.before, p.result.target, brokers, p.sizes))
    cols = st.columns(3 if loads.bytes else 2)
    specs = [("Replicas per broker", "Replicas", loads.replicas, None, "ra_replicas_chart"),
             ("Preferred leaders per broker", "Leaders", loads.leaders, None, "ra_leaders_chart")]
    if loads.bytes:
        specs.append(("Bytes per broker", "Bytes", loads.bytes, "B", "ra_bytes_chart"))
    for col, (title, y_title, values, unit, key) in zip(cols, specs):
        fig = p.derived(f"figure:{key}:{figure_key}", lambda: charts.broker_before_after(
            brokers, *values, alive, marks=marks, unit=unit, title=title, y_title=y_title))
        col.plotly_chart(fig, key=key, config=CHART)


def changes(p: plan_view.Planned) -> None:
    st.subheader("Changes", anchor=False)
    table = p.derived("diff", lambda: plan_view.diff_table(p))
    f1, f2 = st.columns([3, 1], vertical_alignment="bottom")
    needle = f1.text_input("Filter by topic", key="ra_diff_filter", placeholder="name contains…")
    touched = p.derived("touched", lambda: sorted({b for r in p.plan.entries for b in r.replicas}
                                                  | {b for k in p.result.rollback.values() for b in k}))
    broker = f2.selectbox("Touching broker", touched, index=None, key="ra_diff_broker", placeholder="any")
    view = table
    if needle.strip():
        view = view[view["Topic"].str.contains(needle.strip(), case=False, regex=False)]
    if broker is not None:
        pattern = rf"(?:^|, ){broker}(?:,|$)"
        view = view[view["Before"].str.contains(pattern) | view["After"].str.contains(pattern)]
    shown = actions.page_of(view, "ra_diff_pages", label="partitions")
    st.dataframe(shown, hide_index=True, key="ra_diff", height=min(420, 38 + 35 * max(len(shown), 1)),
                 column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                "Moves": st.column_config.NumberColumn(format="%d", width="small")})


def downloads(p: plan_view.Planned) -> None:
    # a wrapping row, each button as wide as its label (three equal columns cut them at 900 px)
    c = st.container(horizontal=True, gap="small")
    c.download_button(f"Plan JSON ({len(p.plan.entries):,} partitions)", p.plan_json, key="ra_download_plan",
                      file_name="reassignment.json", mime="application/json", on_click="ignore",
                      icon=":material/download:", width="content",
                      help="kafka-reassign-partitions.sh --execute --reassignment-json-file reassignment.json")
    c.download_button("Rollback JSON", p.rollback_json, key="ra_download_rollback", file_name="rollback.json",
                      mime="application/json", on_click="ignore", icon=":material/undo:", width="content",
                      help="The current replicas of these partitions: execute it to undo the plan")
    report = p.derived("report", lambda: json.dumps(p.result.to_dict(), indent=2))
    c.download_button("Report JSON", report, key="ra_download_report", file_name="reassignment-report.json",
                      mime="application/json", on_click="ignore", icon=":material/analytics:", width="content",
                      help="The metrics above, as python -m core plan --report writes them")
    box = st.expander("Plan JSON and equivalent commands", key="ra_json_open", on_change="rerun")
    if not box.open:  # drawn only when opened: up to 20,000 characters of JSON
        return
    with box:
        text = p.plan_json
        preview = plan_view.MAX_JSON_PREVIEW
        st.code(text if len(text) <= preview else text[:preview] + " …", language="json", wrap_lines=True)
        if len(text) > plan_view.MAX_JSON_PREVIEW:
            st.caption(f"First {plan_view.MAX_JSON_PREVIEW:,} of {len(text):,} characters; the download has it all.")
        for flag, where in (("--bootstrap-server", actions.bootstrap_servers(snap)), ("--zookeeper", ctx.cluster.zk)):
            if flag == "--zookeeper":
                st.caption("Kafka before 2.5 (no `--bootstrap-server`): the same through ZooKeeper.")
            tool = ["kafka-reassign-partitions.sh", flag, where, "--reassignment-json-file", "reassignment.json"]
            ui.commands(tool + ["--execute"] + (["--throttle", str(throttle)] if throttle else []),
                        tool + ["--verify"])


def execute_panel(p: plan_view.Planned) -> None:
    reason = actions.blocked_reason(cfg, "execute a reassignment")
    actions.show_blocked(reason)
    running = live_snap.in_progress.reassignment
    if running:
        st.warning(f"A reassignment of {len(running):,} partition(s) is running (/admin/reassign_partitions exists). "
                   f"Kafka refuses another until it completes: “{reassign_writes.IN_PROGRESS}”",
                   icon=":material/hourglass_top:")
    waves = plan_view.wave_keys(p)
    wave_run = reassign_run.Waves.of(p.plan, waves) if len(waves) > 1 else None
    doc = p.plan if wave_run is None else wave_run.doc
    changing, moved = plan_view.moves_of(doc, p.before)
    context = actions.fingerprint(p.fingerprint, throttle)
    rate = f"throttled at {throttle_mb:g} MB/s ({throttle:,} B/s) per broker" if throttle else "unthrottled"
    what = (f"Move {moved:,} replica(s) of {changing:,} partition(s)"
            + (f" in wave 1 of {len(waves)} ({len(doc.entries):,} partitions; the next waves from the progress "
               "panel once it completes)" if len(waves) > 1 else f" ({len(doc.entries):,} partitions in the plan)")
            + f", {rate}")
    # Risks on the live cluster (not the settled one: they are about what the controller can do now)
    risks = conn.derived("reassign.risks", live_snap, lambda s: plan_risks(doc, s), key=(context, len(waves)))
    for risk in risks:
        st.error(f"**This plan may never finish.** {md(risk)}.", icon=":material/report:")
    confirmed = st.checkbox(what, key=f"ra_confirm_{context}", disabled=reason is not None)
    accepted = reassign_run.risk_boxes(risks, context, disabled=reason is not None)
    label = "Reassignment" if wave_run is None else wave_run.label
    st.button("Execute reassignment" if wave_run is None else f"Execute {label.lower()}", type="primary",
              icon=":material/play_arrow:", key="ra_execute", help=reason,
              disabled=reason is not None or not confirmed or len(accepted) < len(risks),
              on_click=reassign_run.execute,
              args=(ctx, doc, throttle, context, label, wave_run, accepted,
                    actions.guard("goal", "strategy", "drain", prefixes=("ra_",), confirm=f"ra_confirm_{context}")))
    actions.show(reassign_run.RESULT, scope="reassign", context=context, only_current=True)


if planned is not None and planned.empty:
    if any("down broker" in w for w in planned.warnings):
        st.info("Nothing to move: the partitions this goal may move already meet it; the ones holding a down "
                "broker's replica stay as they are (see above).", icon=":material/check_circle:")
    else:
        st.success("Nothing to move: the partitions in scope already meet the goal.", icon=":material/check_circle:")
elif planned is not None:
    cost_panel(planned)
    before_after(planned)
    changes(planned)
    downloads(planned)

# One run panel at a time, above the Execute of a new plan: what each button acts on stays clear (issue 16).
followed = st.session_state.get(reassign_run.RUN)
if followed is not None:
    reassign_run.progress_panel(ctx)
else:
    if live_snap.in_progress.reassignment:
        st.info(f"A reassignment of {len(live_snap.in_progress.reassignment):,} partition(s) is running, not started "
                "from this session: follow it below if Keel recorded it, or verify it from a shell with the plan "
                "that was executed (exit status 3 while it runs):", icon=":material/hourglass_top:")
        reach = ["--zk", ctx.cluster.zk] if ctx.cluster.zk else ["--bootstrap-server", ctx.cluster.bootstrap or ""]
        ui.commands(["python", "-m", "core", "verify", *reach, "--reassignment-json-file", "plan.json"])
    if conn.derived("reassign.running", live_snap, reassign_run.running_keys):  # issue 28: in bytes, its throttle
        bytes_view.section(ctx)
    reassign_run.cancel_section(ctx, None, live_snap)  # issue 15: cancel it (Kafka 2.4+), or what that needs
    reassign_run.follow_earlier(ctx)
    actions.show(reassign_run.RUN_RESULT, scope="reassign-run")

if planned is not None and not planned.empty:
    st.subheader("Execute this plan", anchor=False)
    if followed is not None and not reassign_run.finished(ctx, followed):
        st.caption(f":material/hourglass_top: Execute is offered once action #{followed.action_id} above has "
                   "finished: ZooKeeper-mode Kafka runs one reassignment at a time.")
    else:
        execute_panel(planned)
elif followed is None:
    st.subheader("Execute", anchor=False)
    st.caption("Plan something first; the document on screen is what Execute writes.")
