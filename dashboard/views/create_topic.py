"""Create topic: a form checked as you type, the exact placement Kafka's algorithm gives, and the write.

The placement is drawn once per set of inputs: the random start index and shift come from a seeded
`random.Random` whose seed lives in the session (Reshuffle draws a new one), so reruns do not reshuffle.
The Create button writes the draft bound to it when the page was drawn, i.e. the one on screen;
core.zk.topic_admin.create_topic re-validates it against live state first.

Inputs are bounded by the engine (at most MAX_NEW_PARTITIONS, checked before anything is placed), not by the
widgets: the numbers are text fields (dashboard.ui.int_field) read exactly, so 10**20 partitions reaches the engine
as typed and is refused with its message. (A number input silently kept the previous value for one outside its
min / max or above 2**53 - 1, which the preview would then show and Create write.) Text that is no whole number
shows the field's message; either way there is no draft and no Create.
A draft with risks (a topic nobody can write to) needs one more box ticked per risk; the write passes exactly the
risk texts confirmed and the engine refuses unless they cover the risks of the draft it re-computes.
"""

from __future__ import annotations

import random
from collections import Counter

import pandas as pd
import streamlit as st

from core.assignment import RackAwareMode
from core.errors import KeelError, TooLargeError
from core.model import ClusterSnapshot
from core.topics import (
    MAX_NEW_PARTITIONS,
    MAX_TOPIC_ZNODE_BYTES,
    TOPIC_CONFIGS,
    CreateTopicDraft,
    check_collision,
    check_not_exists,
    collision_warning,
    draft_create_topic,
    is_internal,
    kafka_topics_command,
    validate_topic_name,
)
from core.cluster import engines
from dashboard import actions, broker_defaults, charts, frame, ops_panels, ui
from dashboard.text import md, md_text

RESULT = "ct_result"
SEED = "ct_seed"
CACHE = "ct_draft_cache"  # (inputs fingerprint, snapshot, draft, draft fingerprint)
TABLE = "ct_table_cache"  # (draft fingerprint, preview table)
MAX_COMMAND_PARTITIONS = 2000  # beyond this the kafka-topics.sh line is offered as a download
PLACEMENTS = ("Kafka's algorithm", "Explicit replica assignment")
RACK_MODES = {
    RackAwareMode.ENFORCED.value: "enforced — replicas spread over racks; every broker must have a rack "
                                  "(kafka-topics' default)",
    RackAwareMode.DISABLED.value: "disabled — ignore racks (--disable-rack-aware)",
    RackAwareMode.SAFE.value: "safe — use racks only if every broker has one (what brokers do on auto-create)",
}

ctx = frame.page_context()
conn = ctx.conn
cfg = ctx.config
st.title("Create topic", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}** · placement computed with Kafka's own replica-assignment algorithm "
           "over the live brokers")
snap = frame.live_snapshot(conn, in_fragment=False)
bd = broker_defaults.defaults(ctx.cluster, snap)  # issue 23: the brokers' min.insync.replicas, for the risk
if SEED not in st.session_state:
    st.session_state[SEED] = random.SystemRandom().randrange(2 ** 31)


def _reshuffle() -> None:
    st.session_state[SEED] = random.SystemRandom().randrange(2 ** 31)


def _create(draft: CreateTopicDraft, context: str, accepted: list[str], form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()  # ZooKeeper, or the brokers' Admin API (KRaft): the same engine calls
        applied = engines.topics(h).create_topic(h, actions.store(), draft, cluster=ctx.cluster.name,
                                                 actor=actions.actor(), accept_risks=list(accepted), defaults=bd)
        conn.await_change(lambda s: s.topic(draft.name) is not None)
        return f"{applied.summary[0].upper()}{applied.summary[1:]} (action #{applied.action_id} in History)."

    if actions.run(RESULT, work, cfg=cfg, action=f"create topic {draft.name}", context=context, form=form):
        st.session_state["ct_name"] = ""  # the next topic starts from a clean name and a fresh draw
        _reshuffle()


def name_problems(snapshot: ClusterSnapshot, name: str) -> KeelError | None:
    try:
        validate_topic_name(name)
        if is_internal(name):
            return KeelError(f"Topic {name} is a Kafka internal topic; the brokers create it themselves.")
        check_not_exists(name, (t.name for t in snapshot.topics), snapshot.in_progress.deletion)
        check_collision(name, (t.name for t in snapshot.topics))
    except KeelError as e:
        return e
    return None


def rack_spread(snapshot: ClusterSnapshot, draft: CreateTopicDraft) -> tuple[int, int, list[int]] | None:
    """(racks, required racks per partition, partitions spanning fewer) or None without rack information."""
    rack_of = {b.id: b.rack for b in snapshot.brokers if b.alive}
    racks = {r for r in rack_of.values() if r is not None}
    if not racks:
        return None
    required = min(draft.replication_factor, len(racks))
    short = [p for p, reps in draft.assignment.items() if len({rack_of.get(b) for b in reps} - {None}) < required]
    return len(racks), required, short


def preview_table(snapshot: ClusterSnapshot, draft: CreateTopicDraft) -> pd.DataFrame:
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    rows = [{"Partition": p, "Leader": reps[0], "Replicas": actions.ids(reps),
             "Racks": ", ".join(rack_of.get(b) or "—" for b in reps),
             "Distinct racks": len({rack_of.get(b) for b in reps} - {None})}
            for p, reps in sorted(draft.assignment.items())]
    return pd.DataFrame(rows, columns=["Partition", "Leader", "Replicas", "Racks", "Distinct racks"])


alive = [b for b in snap.brokers if b.alive]
if not alive:
    st.error("No broker is alive: there is nowhere to place a topic.", icon=":material/dns:")
    st.stop()

# --- the form ---------------------------------------------------------------------------------------

st.subheader("Topic", anchor=False)
name = st.text_input("Topic name", key="ct_name", live=True, placeholder="e.g. orders.v1",
                     help="ASCII letters, digits, '.', '_' and '-'; at most 249 characters. Checked as you type.")
name = (name or "").strip()
name_error = name_problems(snap, name) if name else None
if name_error is not None:
    actions.show_error(name_error)
elif name and collision_warning(name):
    st.warning(md_text(collision_warning(name)), icon=":material/warning:")

placement = st.radio("Placement", PLACEMENTS, horizontal=True, key="ct_placement")
partitions = rf = None
numbers_ok = True  # every number field holds a number (else its message is under it and there is no draft)
rack_mode = RackAwareMode.ENFORCED.value
fixed = -1
assignment_text = None
if placement == PLACEMENTS[0]:
    # one wrapping row of fixed-width fields (the select takes what is left): at 900 px they move to the next line
    # instead of squeezing "Replication factor" into two lines over a field too narrow for its number
    c = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    below = st.container()  # the fields' messages, under the row
    # no min / max: the engine checks them and says why (see the module docstring)
    fields = (
        ui.int_field("Partitions", 6, key="ct_partitions", container=c, errors=below, width=150,
                     help=f"At most {MAX_NEW_PARTITIONS:,} in one create: the topic znode must fit ZooKeeper's "
                          "request limit; add more partitions later in steps."),
        ui.int_field("Replication factor", min(3, len(alive)), key="ct_rf", container=c, errors=below, width=150,
                     help=f"{len(alive)} broker(s) alive"))
    rack_mode = c.selectbox("Rack awareness", list(RACK_MODES), format_func=lambda m: RACK_MODES[m],
                            key="ct_rack_mode")
    fields += (ui.int_field("Fixed start index", -1, key="ct_fixed", container=c, errors=below, width=150,
                            help="-1: Kafka's random start index and shift (seeded here, so the preview is stable). "
                                 "≥ 0: both fixed, as kafka's tests use."),)
    numbers_ok = not ui.invalid(*fields)
    partitions, rf, fixed = (f.value for f in fields)
    if fixed == -1:
        # the button keeps its width (a fifth of a narrow page cut it to "R…"); the caption wraps beside it
        r = st.container(horizontal=True, vertical_alignment="center", gap="medium")
        r.caption(f"Random start index and replica shift drawn with seed `{st.session_state[SEED]}`: the "
                  "preview below is exactly what Create writes.")
        r.button("Reshuffle", icon=":material/shuffle:", on_click=_reshuffle, key="ct_reshuffle", width="content")
else:
    assignment_text = st.text_area(
        "Replica assignment", key="ct_assignment", placeholder="1:2:3,2:3:1,3:1:2",
        help="As kafka-topics --replica-assignment: partitions separated by ',', the replicas of one partition "
             "by ':', the first replica is the preferred leader.")

ops_panels.partition_advice("ct", brokers=len(alive), replication_factor=rf)  # issue 18: from throughput

st.subheader("Config overrides", anchor=False)
overrides, problems = actions.config_editor("ct_config")
actions.show_config_problems(problems)
if overrides:
    st.dataframe(actions.config_schema_table(overrides), hide_index=True, key="ct_config_schema")
with st.expander("All topic configs (Kafka 1.1 – 3.9)"):
    st.dataframe(actions.config_schema_table(TOPIC_CONFIGS), hide_index=True, key="ct_config_all")

# --- the draft and its preview ------------------------------------------------------------------------

st.subheader("Preview", anchor=False)
draft: CreateTopicDraft | None = None
if not name:
    st.info("Enter a topic name to see the placement.", icon=":material/edit:")
elif name_error is None and not problems and numbers_ok:
    inputs = actions.fingerprint(name, placement, partitions, rf, rack_mode, fixed, st.session_state[SEED],
                                 assignment_text, overrides, repr(bd))
    cached = st.session_state.get(CACHE)
    try:
        if cached is not None and cached[0] == inputs and cached[1] is snap:
            draft = cached[2]  # same inputs, same cluster state: the same draft (big topics are not recomputed)
        elif placement == PLACEMENTS[0]:
            if fixed < -1:
                raise KeelError(f"The fixed start index must be -1 (random) or at least 0, not {fixed}")
            draft = draft_create_topic(snap, name, partitions, rf, config=overrides, rack_mode=rack_mode,
                                       rng=random.Random(st.session_state[SEED]), fixed_start_index=fixed,
                                       defaults=bd)
        elif not (assignment_text or "").strip():
            st.info("Enter a replica assignment.", icon=":material/edit:")
        elif len(assignment_text) > MAX_TOPIC_ZNODE_BYTES:  # its topic znode would be larger still: not parsed
            raise TooLargeError(f"A replica assignment of {len(assignment_text):,} characters cannot fit ZooKeeper's "
                                f"1 MiB request limit (jute.maxbuffer) as a topic znode",
                                hint=f"create at most {MAX_NEW_PARTITIONS:,} partitions at once, add more later")
        else:
            draft = draft_create_topic(snap, name, config=overrides, replica_assignment=assignment_text, defaults=bd)
        if draft is not None and (cached is None or cached[2] is not draft):
            cached = (inputs, snap, draft, actions.fingerprint(draft.name, draft.assignment, draft.config,
                                                               draft.risks))
            st.session_state[CACHE] = cached
    except KeelError as e:
        actions.show_keyed_error(e)

context = None
if draft is not None:
    context = st.session_state[CACHE][3]
    for w in draft.warnings:
        if w != collision_warning(name):
            st.warning(md_text(w), icon=":material/warning:")
    spread = rack_spread(snap, draft)
    m = ui.metric_row()
    used = {b for reps in draft.assignment.values() for b in reps}
    ui.metric(m, "Partitions", f"{draft.partitions:,}")
    ui.metric(m, "RF", draft.replication_factor, help="Replication factor")
    ui.metric(m, "Brokers used", f"{len(used)} / {len(alive)}", help="Brokers holding a replica / alive brokers")
    ui.metric(m, "Replicas", f"{draft.partitions * draft.replication_factor:,}")
    if spread is None:
        st.caption("No broker has a rack: rack spread not checked.")
    else:
        racks, required, short = spread
        if short:
            shown = ", ".join(map(str, short[:20])) + (" …" if len(short) > 20 else "")
            st.warning(f"{len(short):,} partition(s) span fewer than {required} of the {racks} racks: {shown}. "
                       "Losing one rack can take out more replicas of them than intended.", icon=":material/warning:")
        else:
            st.success(f"Rack spread: every partition has replicas on {required} different racks "
                       f"(min(replication factor, {racks} racks)).", icon=":material/check_circle:")

    if placement == PLACEMENTS[0] and rack_mode != RackAwareMode.DISABLED.value:  # issue 18: uneven racks
        ops_panels.rack_warning(conn, snap, key="ct", rf=draft.replication_factor, partitions=draft.partitions,
                                chart=False)

    table = st.session_state.get(TABLE)
    if table is None or table[0] != context:
        table = (context, preview_table(snap, draft))
        st.session_state[TABLE] = table
    table = table[1]
    shown = actions.page_of(table, "ct_preview_pages", label="partitions")
    st.dataframe(shown, hide_index=True, key="ct_preview", height=min(420, 38 + 35 * max(len(shown), 1)),
                 column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                "Leader": st.column_config.NumberColumn("Leader (preferred)", format="%d",
                                                                        width="small")})

    replicas = Counter(b for reps in draft.assignment.values() for b in reps)
    leaders = Counter(reps[0] for reps in draft.assignment.values())
    ids_ = [b.id for b in alive]
    racks_ = [b.rack for b in alive]
    alive_ = [True] * len(alive)
    colors = charts.rack_colors(b.rack for b in snap.brokers)  # every known rack: the Overview's colours
    row = st.container(horizontal=True, gap="medium")  # side by side where both fit, stacked at 900 px
    row.plotly_chart(charts.per_broker_bars(ids_, [replicas[b] for b in ids_], racks_, alive_,
                                            title="Replicas of the new topic per broker", y_title="Replicas",
                                            colors=colors),
                     key="ct_replicas_chart", config={"displayModeBar": False})
    row.plotly_chart(charts.per_broker_bars(ids_, [leaders[b] for b in ids_], racks_, alive_,
                                            title="Preferred leaders of the new topic per broker",
                                            y_title="Leaders", colors=colors),
                     key="ct_leaders_chart", config={"displayModeBar": False})

    st.markdown("**Equivalent command** (explicit assignment, so it places replicas exactly as above)")
    try:
        command = kafka_topics_command(draft, actions.bootstrap_servers(snap))
        if draft.partitions <= MAX_COMMAND_PARTITIONS:
            st.code(command, language="bash", wrap_lines=True)
            st.caption("Kafka before 2.2 (no `--bootstrap-server`): the same through ZooKeeper.")
            st.code(kafka_topics_command(draft, ctx.cluster.zk, zookeeper=True), language="bash", wrap_lines=True)
        else:
            st.code(command[:400] + " …", language="bash", wrap_lines=True)
            st.download_button(f"Download the full command ({len(command):,} characters)", command + "\n",
                               file_name=f"create-{draft.name}.sh", mime="text/x-shellscript",
                               key="ct_command_download", icon=":material/download:")
            st.caption("Kafka before 2.2: `--zookeeper` and the cluster's connect string instead of "
                       "`--bootstrap-server`.")
    except KeelError as e:
        st.caption(f"No kafka-topics.sh equivalent: {md_text(e)}")

# --- create -------------------------------------------------------------------------------------------

st.subheader("Create", anchor=False)
reason = actions.blocked_reason(cfg, f"create topic {name or '…'}")
actions.show_blocked(reason)
confirmed = False
accepted: list[str] = []
if draft is not None:
    for risk in draft.risks:
        st.warning(f"**Risk:** {md(risk)}", icon=":material/report:")
    confirmed = st.checkbox(f"I have reviewed the placement of **{md(draft.name)}** ({draft.partitions:,} partitions "
                            f"× {draft.replication_factor} replicas)", key=f"ct_confirm_{context}",
                            disabled=reason is not None)
    # one box per risk, keyed by its text: a different risk is never covered by an earlier tick
    accepted = [risk for risk in draft.risks
                if st.checkbox(f"I understand: {md(risk)}", key=f"ct_risk_{actions.fingerprint(context, risk)}",
                               disabled=reason is not None)]
st.button("Create topic", type="primary", icon=":material/add_circle:", key="ct_create",
          disabled=reason is not None or draft is None or not confirmed or len(accepted) < len(draft.risks),
          help=reason or (None if draft is not None else "Fix the form first"),
          on_click=_create, args=(draft, context, accepted, actions.guard(prefixes=("ct_",),
                                                                            confirm=f"ct_confirm_{context}"))
          if draft is not None else None)
actions.show(RESULT, context=context)
