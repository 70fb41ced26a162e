"""Reassign: plan a partition reassignment (rebalance, fill new brokers, drain brokers, change the replication factor,
or import a plan), see what it costs and what it changes, download Kafka's JSON, execute it with a throttle, follow
it live, verify it (which removes the throttles) and roll it back.

Thin: the plan comes from core.balance (an imported document is parsed and validated by core.plans, then scored with
the same metrics), shaped for drawing by dashboard.reassign.plan_view. Plans are cached per (snapshot generation,
request) in the connection's memo, shared by every session, so a rerun re-plans nothing. Execute binds the document
on screen to the button; dashboard.reassign.run writes it through core.zk.reassign and follows the run.
"""

from __future__ import annotations

import json

import streamlit as st

from core.balance.sizes import parse_log_dirs
from core.errors import KeelError
from core.zk import reassign
from dashboard import actions, charts, frame
from dashboard.reassign import plan_view as rs
from dashboard.reassign import run as reassign_run
from dashboard.text import md, md_text

SIZES = "ra_sizes_cache"  # (digest, parsed sizes)
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
# Plans are made on the cluster as it will be once a running reassignment completes (see rs.settled).
snap = conn.derived("reassign.settled", live_snap, rs.settled)


# --- inputs -----------------------------------------------------------------------------------------------


def topic_picker(label: str, key: str, placeholder: str) -> list[str]:
    parts = conn.derived("reassign.topic_sizes", snap, lambda s: {t.name: len(t.partitions) for t in s.topics})
    return st.multiselect(label, list(parts), key=key, placeholder=placeholder,
                          format_func=lambda n: f"{n} ({parts[n]:,} partitions)")


def read_input(upload, text: str | None) -> bytes | str | None:
    if upload is not None:
        return upload.getvalue()
    return text if text and text.strip() else None


def sizes_input() -> tuple[dict | None, str | None, bool]:
    """(sizes, digest of their data, bad input)."""
    with st.expander("Partition sizes (optional: bytes moved, byte balance, time estimate)"):
        up = st.file_uploader("kafka-log-dirs.sh --describe output", type=["json", "txt"], key="ra_sizes_file",
                              help="kafka-log-dirs.sh --bootstrap-server B --describe > sizes.json; its two "
                                   "progress lines may stay in")
        text = st.text_area("…or paste it", key="ra_sizes_text", height=90,
                            placeholder='{"version":1,"brokers":[{"broker":1,"logDirs":[...]}]}')
        data = read_input(up, text)
        if data is None:
            st.caption("Without sizes the plan balances replica counts; bytes moved and the time estimate are "
                       "unknown.")
            return None, None, False
        key = rs.digest(data)
        cached = st.session_state.get(SIZES)
        if cached is None or cached[0] != key:
            try:
                cached = (key, parse_log_dirs(data))
            except KeelError as e:
                st.error(md_text(f"Partition sizes: {e}"), icon=":material/error:")
                return None, None, True
            st.session_state[SIZES] = cached
        sizes = cached[1]
        st.caption(f"{len(sizes):,} partition sizes, {rs.human_bytes(sum(sizes.values()))} in total "
                   f"(largest replica per partition)" + (" · from the uploaded file" if up is not None else ""))
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
goal = st.radio("Goal", rs.GOALS, horizontal=True, key="ra_goal", label_visibility="collapsed")
held = conn.derived("reassign.held", snap, rs.replicas_per_broker)
empties = conn.derived("reassign.empty", snap, rs.empty_brokers)
alive_count = len(snap.alive_broker_ids)
topics: list[str] = []
drain: list[int] = []
rf = None
import_data = None
if goal == rs.GOAL_REBALANCE:
    topics = topic_picker("Topics", "ra_topics", "All topics")
    st.caption("Balance replicas and preferred leaders of these topics (empty: every topic) over every alive broker, "
               "moving as few replicas as the goal needs.")
elif goal == rs.GOAL_FILL:
    if empties:
        st.info(f"**{len(empties)} alive broker(s) hold no replica yet: {rs.ids(empties)}.** The plan gives them "
                "their share of every topic's replicas.", icon=":material/fiber_new:")
    else:
        st.info("Every alive broker already holds replicas: this balances every topic over all alive brokers.",
                icon=":material/balance:")
elif goal == rs.GOAL_DRAIN:
    drain = st.multiselect("Brokers to drain", [b.id for b in snap.brokers], key="ra_drain",
                           placeholder="Choose brokers…", format_func=lambda b: broker_label(b, held),
                           help="Every replica leaves them; they are not targets. A dead broker can be drained too.")
    if not drain:
        st.info("Choose the broker(s) to drain.", icon=":material/edit:")
elif goal == rs.GOAL_RF:
    c = st.columns([4, 1], vertical_alignment="bottom")
    with c[0]:
        topics = topic_picker("Topics", "ra_rf_topics", "Choose topics…")
    rf = int(c[1].number_input("Replication factor", min_value=1, max_value=max(1, alive_count), step=1,
                               value=min(3, max(1, alive_count)), key="ra_rf",
                               help=f"{alive_count} broker(s) alive"))
    if topics:
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

st.subheader("Strategy and options", anchor=False)
importing = goal == rs.GOAL_IMPORT
c = st.columns(4, vertical_alignment="bottom")
strategy = c[0].selectbox("Strategy", rs.strategies(), key="ra_strategy", disabled=importing,
                          help="balanced: moves only what the goal needs (fewest replicas). kafka-generate: what "
                               "kafka-reassign-partitions.sh --generate proposes (every partition re-placed).")
seed = int(c[1].number_input("Seed", min_value=0, value=0, step=1, key="ra_seed", disabled=importing,
                             help="Same snapshot, options and seed: same plan"))
max_moves = c[2].number_input("Max moves", min_value=0, value=None, step=1, key="ra_max_moves",
                              placeholder="no limit", disabled=importing,
                              help="Move at most this many replicas (balanced stops early; kafka-generate refuses)")
throttle_on = c[3].toggle("Throttle replication", value=True, key="ra_throttle_on",
                          help="Kafka's --throttle: leader and follower replication rates on the brokers involved, "
                               "removed by Verify once complete")
c = st.columns(4, vertical_alignment="bottom")
wave_k = c[0].number_input("Waves: K partitions", min_value=1, value=None, step=1, key="ra_wave_k",
                           placeholder="no limit", help="At most K partitions reassigning at once")
wave_l = c[1].number_input("Waves: L moves per broker", min_value=1, value=None, step=1, key="ra_wave_l",
                           placeholder="no limit", help="At most L replicas moving into or out of any broker at once")
rack_aware = c[2].toggle("Rack-aware", value=True, key="ra_rack_aware", disabled=importing,
                         help="Every partition across min(RF, racks) racks (off: --disable-rack-aware)")
spread = c[2].toggle("Per-topic spread", value=False, key="ra_spread", disabled=importing,
                     help="Also spread each topic evenly over the brokers (costs more moves)")
throttle_mb = c[3].number_input("Throttle (MB/s)", min_value=0.001, value=rs.DEFAULT_THROTTLE_MB, step=10.0,
                                format="%g", key="ra_throttle", disabled=not throttle_on)
throttle = int(round(throttle_mb * rs.MB)) if throttle_on else None
st.caption(f"Throttle: {f'{throttle:,} bytes/s per broker (--throttle {throttle})' if throttle else 'none'}.")
sizes, sizes_key, bad_sizes = sizes_input()


# --- the plan ---------------------------------------------------------------------------------------------


def plan_entry(key: str, compute, what: str) -> tuple[rs.Planned | None, Exception | None, bool]:
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


st.subheader("Plan", anchor=False)
if snap is not live_snap:
    st.info(f"A reassignment of {len(live_snap.in_progress.reassignment):,} partition(s) is running. Plans start "
            "from the cluster as it will be once it completes (those partitions at their target replicas); Kafka "
            "accepts a new reassignment only after it completes.", icon=":material/hourglass_top:")
planned: rs.Planned | None = None
request = None
if bad_sizes:
    st.info("Fix or remove the partition sizes to plan.", icon=":material/edit:")
elif importing:
    if import_data is not None:
        key = repr(("import", rs.digest(import_data), sizes_key, wave_k, wave_l))
        planned, error, fresh = plan_entry(
            key, lambda: rs.import_plan(snap, import_data, sizes=sizes, wave_partitions=wave_k,
                                        wave_broker_moves=wave_l),
            "Validating the plan against the live cluster…")
        if error is not None:
            actions.show_error(error)
else:
    request = rs.build_request(snap, goal, strategy, topics=topics, drain=drain, replication_factor=rf, sizes=sizes,
                               max_moves=None if max_moves is None else int(max_moves), seed=seed,
                               rack_aware=rack_aware, per_topic_spread=spread,
                               wave_partitions=None if wave_k is None else int(wave_k),
                               wave_broker_moves=None if wave_l is None else int(wave_l))
    if request is not None:
        scope = f"{len(request.topics):,} topic(s)" if request.topics is not None else "every topic"
        planned, error, fresh = plan_entry(
            rs.request_key(strategy, request, sizes_key), lambda: rs.run_planner(snap, strategy, request),
            f"Planning with {strategy} over {scope} ({snap.partition_count:,} partitions in the cluster)…")
        if error is not None:
            actions.show_error(error)

if planned is not None:
    st.caption(f"{'Scored' if importing else 'Planned'} in {planned.seconds:.2f} s on snapshot generation "
               f"{generation} ({'just now' if fresh else 'cached: same cluster state and inputs'}) · source "
               f"**{md(planned.source)}** · {len(planned.result.target):,} partition(s) in scope")
    for w in planned.warnings:
        st.warning(md_text(w), icon=":material/warning:")


def cost_panel(p: rs.Planned) -> None:
    r = p.result.report
    est = p.derived(f"estimate:{throttle}", lambda: rs.estimate_seconds(p, snap, throttle))
    n_waves = rs.wave_count(p)
    m = st.columns(6)
    m[0].metric("Replicas moved", f"{r.replicas_moved:,}", border=True,
                help="New replicas placed on a broker that did not hold the partition (data copied)")
    m[1].metric("Bytes moved", rs.human_bytes(r.bytes_moved, unknown="—"), border=True,
                help="Σ new replicas × partition size" if r.bytes_moved is not None else
                "Unknown without partition sizes (kafka-log-dirs.sh --describe, under the options)")
    bound = (f"Lower bound {r.lower_bound:,}: no plan reaching the same per-broker targets moves fewer "
             "replicas. 1.00× is optimal.")
    if r.brokers_off_target[1]:  # a ratio against targets the plan does not reach would flatter it
        m[2].metric("Moves ÷ lower bound", "n/a", border=True,
                    help=f"{bound} This plan leaves {r.brokers_off_target[1]:,} broker(s) outside their replica "
                         "share, so it is not compared with the bound.")
    else:
        m[2].metric("Moves ÷ lower bound", rs.ratio_text(r.moves_over_lower_bound), border=True, help=bound)
    m[3].metric("Leader changes", f"{r.leader_changes:,}", border=True,
                help="Partitions whose preferred (first) replica changes")
    m[4].metric("Waves", f"{n_waves:,}", border=True,
                help="Executed one after another (K / L limits)" if p.result.waves else
                "One document: set K or L to split it")
    m[5].metric("Estimated time", rs.human_duration(est, unknown="—"), border=True,
                help="Per wave: the busiest broker's bytes in or out ÷ the throttle (Kafka throttles each broker's "
                     "replication traffic at this rate), added over the waves. Unknown without sizes or a throttle; "
                     "writes arriving meanwhile are not counted.")
    m = st.columns(5)
    m[0].metric("Partitions changed", f"{len(p.result.proposed):,}", border=True)
    m[1].metric("Replica spread", rs.before_after_text((r.replicas[0].spread, r.replicas[1].spread)), border=True,
                help="Max − min replicas per target broker, before → after")
    m[2].metric("Preferred-leader spread", rs.before_after_text((r.leaders[0].spread, r.leaders[1].spread)),
                border=True, help="Max − min preferred leaders per target broker, before → after")
    m[3].metric("Rack violations", rs.before_after_text(r.rack_violations), border=True,
                help="Partitions spanning fewer than min(RF, racks) racks, before → after")
    m[4].metric("Brokers off target", rs.before_after_text(r.brokers_off_target), border=True,
                help="Target brokers outside the floor / ceiling of their replica share, before → after")
    if r.moves_without_topic_spread is not None:
        st.caption(f"Per-topic spread costs {r.replicas_moved - r.moves_without_topic_spread:,} extra move(s) "
                   f"({r.moves_without_topic_spread:,} without it).")
    if est is not None:
        st.caption(f"Estimated time = Σ over {n_waves:,} wave(s) of (busiest broker's bytes in or out) ÷ "
                   f"{throttle:,} B/s.")


def before_after(p: rs.Planned) -> None:
    st.subheader("Before and after", anchor=False)
    brokers = p.derived("brokers", lambda: rs.shown_brokers(snap, p.before, p.result.target))
    alive = [snap.broker_by_id[b].alive if b in snap.broker_by_id else False for b in brokers]
    drained = request.drain_brokers if request is not None else ()
    marks = rs.broker_marks(snap, drain=drained, empty=empties)
    heat = p.derived("heatmap", lambda: rs.topic_broker_counts(p.before, p.result.target, brokers))
    t1, t2 = st.tabs(["Replicas per broker and topic", "Change"])
    with t1:
        st.plotly_chart(charts.replica_heatmaps(heat.brokers, alive, heat.topics, heat.before, heat.after,
                                                marks=marks), key="ra_heatmap", config=CHART)
    with t2:
        st.plotly_chart(charts.replica_change_heatmap(heat.brokers, alive, heat.topics, heat.before, heat.after,
                                                      marks=marks), key="ra_change_heatmap", config=CHART)
    folded = heat.topics[-1] if heat.topics and heat.topics[-1].startswith("other (") else None
    st.caption(f"Over the {len(p.result.target):,} partition(s) in scope"
               + (f"; the {len(heat.topics) - 1} topics with the most replicas, the {folded[7:-1]} summed in the "
                  "last row" if folded else "")
               + ". Hatched: down broker; striped: being drained.")
    loads = p.derived("loads", lambda: rs.broker_loads(p.before, p.result.target, brokers, p.sizes))
    cols = st.columns(3 if loads.bytes else 2)
    cols[0].plotly_chart(charts.broker_before_after(brokers, *loads.replicas, alive, marks=marks,
                                                    title="Replicas per broker", y_title="Replicas"),
                         key="ra_replicas_chart", config=CHART)
    cols[1].plotly_chart(charts.broker_before_after(brokers, *loads.leaders, alive, marks=marks,
                                                    title="Preferred leaders per broker", y_title="Leaders"),
                         key="ra_leaders_chart", config=CHART)
    if loads.bytes:
        cols[2].plotly_chart(charts.broker_before_after(brokers, *loads.bytes, alive, marks=marks, unit="B",
                                                        title="Bytes per broker", y_title="Bytes"),
                             key="ra_bytes_chart", config=CHART)


def changes(p: rs.Planned) -> None:
    st.subheader("Changes", anchor=False)
    table = p.derived("diff", lambda: rs.diff_table(p))
    f1, f2 = st.columns([3, 1], vertical_alignment="bottom")
    needle = f1.text_input("Filter by topic", key="ra_diff_filter", placeholder="name contains…")
    broker = f2.selectbox("Touching broker", sorted({b for r in p.plan.entries for b in r.replicas}
                                                    | {b for k in p.result.rollback.values() for b in k}),
                          index=None, key="ra_diff_broker", placeholder="any")
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


def downloads(p: rs.Planned) -> None:
    c = st.columns(3)
    c[0].download_button(f"Plan JSON ({len(p.plan.entries):,} partitions)", p.plan_json, key="ra_download_plan",
                         file_name="reassignment.json", mime="application/json", on_click="ignore",
                         icon=":material/download:", width="stretch",
                         help="kafka-reassign-partitions.sh --execute --reassignment-json-file reassignment.json")
    c[1].download_button("Rollback JSON", p.rollback_json, key="ra_download_rollback", file_name="rollback.json",
                         mime="application/json", on_click="ignore", icon=":material/undo:", width="stretch",
                         help="The current replicas of these partitions: execute it to undo the plan")
    report = p.derived("report", lambda: json.dumps(p.result.to_dict(), indent=2))
    c[2].download_button("Report JSON", report, key="ra_download_report", file_name="reassignment-report.json",
                         mime="application/json", on_click="ignore", icon=":material/analytics:", width="stretch",
                         help="The metrics above, as python -m core plan --report writes them")
    with st.expander("Plan JSON and equivalent commands"):
        text = p.plan_json
        st.code(text if len(text) <= rs.MAX_JSON_PREVIEW else text[:rs.MAX_JSON_PREVIEW] + " …", language="json",
                wrap_lines=True)
        if len(text) > rs.MAX_JSON_PREVIEW:
            st.caption(f"First {rs.MAX_JSON_PREVIEW:,} of {len(text):,} characters; the download has it all.")
        servers = actions.bootstrap_servers(snap)
        st.code(f"kafka-reassign-partitions.sh --bootstrap-server {servers} --reassignment-json-file "
                f"reassignment.json --execute" + (f" --throttle {throttle}" if throttle else "")
                + f"\nkafka-reassign-partitions.sh --bootstrap-server {servers} --reassignment-json-file "
                  "reassignment.json --verify", language="bash", wrap_lines=True)
        st.caption("Kafka before 2.5: `--zookeeper <connect string>` instead of `--bootstrap-server`.")


def execute_panel(p: rs.Planned) -> None:
    reason = actions.blocked_reason(cfg, "execute a reassignment")
    actions.show_blocked(reason)
    running = live_snap.in_progress.reassignment
    if running:
        st.warning(f"A reassignment of {len(running):,} partition(s) is running (/admin/reassign_partitions exists). "
                   f"Kafka refuses another until it completes: “{reassign.IN_PROGRESS}”",
                   icon=":material/hourglass_top:")
    waves = rs.wave_keys(p)
    wave_run = reassign_run.Waves.of(p.plan, waves) if len(waves) > 1 else None
    doc = p.plan if wave_run is None else wave_run.doc
    changing, moved = rs.moves_of(doc, p.before)
    context = actions.fingerprint(p.fingerprint, throttle)
    rate = f"throttled at {throttle_mb:g} MB/s ({throttle:,} B/s) per broker" if throttle else "unthrottled"
    what = (f"Move {moved:,} replica(s) of {changing:,} partition(s)"
            + (f" in wave 1 of {len(waves)} ({len(doc.entries):,} partitions; the next waves from the progress "
               "panel once it completes)" if len(waves) > 1 else f" ({len(doc.entries):,} partitions in the plan)")
            + f", {rate}")
    confirmed = st.checkbox(what, key=f"ra_confirm_{context}", disabled=reason is not None)
    label = "Reassignment" if wave_run is None else wave_run.label
    st.button("Execute reassignment" if wave_run is None else f"Execute {label.lower()}", type="primary",
              icon=":material/play_arrow:", key="ra_execute", disabled=reason is not None or not confirmed,
              help=reason, on_click=reassign_run.execute, args=(ctx, doc, throttle, context, label, wave_run))


if planned is not None and planned.empty:
    st.success("Nothing to move: the partitions in scope already meet the goal.", icon=":material/check_circle:")
elif planned is not None:
    cost_panel(planned)
    before_after(planned)
    changes(planned)
    downloads(planned)

st.subheader("Execute", anchor=False)
if planned is not None and not planned.empty:
    execute_panel(planned)
elif reassign_run.RUN not in st.session_state:
    st.caption("Plan something first; the document on screen is what Execute writes.")
actions.show(reassign_run.RESULT, scope="reassign", context=None if planned is None else
             actions.fingerprint(planned.fingerprint, throttle))
if reassign_run.RUN in st.session_state:
    reassign_run.progress_panel(ctx)
else:
    if live_snap.in_progress.reassignment:
        st.info(f"A reassignment of {len(live_snap.in_progress.reassignment):,} partition(s) is running, not started "
                "from this session: follow it below if Keel recorded it, or with `python -m core verify`.",
                icon=":material/hourglass_top:")
    reassign_run.follow_earlier(ctx)
    actions.show(reassign_run.RUN_RESULT, scope="reassign-run")
