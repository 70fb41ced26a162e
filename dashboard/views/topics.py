"""Topics: a list filtered as you type, with health counts per topic; one topic's partitions, leader / replicas / ISR,
and its effective configuration (every key, its value and where it comes from) beside the overrides editor.

The filter and the chosen topic are in the URL (`?q=orders&topic=orders.v1`). Selecting a row of the list opens that
topic; the list keeps its sort across the 2 s live updates (a stable key)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pandas as pd
import streamlit as st

from collections import Counter

from core import health
from core.errors import KeelError
from core.model import NO_LEADER, ClusterSnapshot, Topic
from core.topics import AddPartitionsDraft, draft_add_partitions, draft_alter_config, draft_delete_topic
from core.cluster import engines
from core.topics.effective import TOPIC, effective_config
from core.outline import Outline
from dashboard import outline_view
from dashboard import actions, broker_defaults, charts, frame, ops_panels, peek_panel, security_panels, topic_sizes, ui
from dashboard.text import md, md_text

PAGE_SIZES = (25, 50, 100, 500)
STYLED_TOPICS = 500  # a longer list is drawn without its Health colours: pandas' Styler costs ~0.5 ms a row
TOPIC_COLUMNS = ["Topic", "Health", "Partitions", "RF", "Under-replicated", "Unavailable", "Under min ISR",
                 "At min ISR", "Off preferred", "Out-of-sync replicas", "min ISR", "Config overrides"]
PARTITION_COLUMNS = ["Partition", "Leader", "Preferred", "Replicas", "ISR", "min ISR", "Out of sync", "Flags"]

ACTION_RESULT = "topic_action_result"

ctx = frame.page_context()
conn = ctx.conn
cfg = ctx.config
st.title("Topics", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}**")
frame.live_view(conn, in_fragment=False)  # an outline while a large cluster is read (issue 31)


def _ids(xs) -> str:
    return ", ".join(map(str, xs)) if xs else "—"


def topic_row(t: Topic, alive: frozenset[int], rule) -> dict:
    """One row of the list: core.health.topic_health drawn (`rule`: health.min_isr_rule)."""
    h = health.topic_health(t, alive, rule)
    return {
        "Topic": t.name, "Health": h.status, "Partitions": h.partitions, "RF": h.replication_factor,
        "Under-replicated": h.under_replicated, "Unavailable": h.unavailable, "Under min ISR": h.under_min_isr,
        "At min ISR": h.at_min_isr, "Off preferred": h.off_preferred_leader,
        "Out-of-sync replicas": h.out_of_sync_replicas,
        "min ISR": ", ".join(map(str, h.min_isr)),
        "Config overrides": ", ".join(f"{k}={v}" for k, v in sorted(t.config.items())),
    }


def topic_table(snap: ClusterSnapshot) -> pd.DataFrame:
    """One row per topic. A row is recomputed only when its Topic object changed (the tree reuses
    unchanged topics between snapshots) or when the set of live brokers / the brokers' settings did."""
    memo = conn.memo("topics.rows")
    alive = snap.alive_broker_ids
    bd = broker_defaults.defaults(ctx.cluster, snap)
    rule = health.min_isr_rule(snap, bd)
    default = (bd, snap.broker_configs)
    rows = []
    for t in snap.topics:
        hit = memo.get(t.name)
        if hit is None or hit[0] is not t or hit[1] != alive or hit[2] != default:
            hit = (t, alive, default, topic_row(t, alive, rule))
            memo[t.name] = hit
        rows.append(hit[3])
    for gone in set(memo) - set(snap.topic_by_name):
        memo.pop(gone, None)
    return pd.DataFrame(rows, columns=TOPIC_COLUMNS)


def partition_table(snap: ClusterSnapshot, topic: Topic) -> pd.DataFrame:
    one = replace(snap, topics=(topic,))
    rows = []
    for h in health.iter_partition_health(one, broker_defaults.defaults(ctx.cluster, snap)):
        rows.append({
            "Partition": h.partition,
            "Leader": "none" if h.leader == NO_LEADER else str(h.leader),
            "Preferred": str(h.replicas[0]) if h.replicas else "—",
            "Replicas": _ids(h.replicas),
            "ISR": _ids(h.isr),
            "min ISR": h.min_isr,
            "Out of sync": _ids(h.out_of_sync) if h.out_of_sync else "",
            "Flags": ", ".join(health.partition_flags(h)) or "ok",
        })
    return pd.DataFrame(rows, columns=PARTITION_COLUMNS)


def _style_partitions(df: pd.DataFrame):
    red, amber = "background-color: rgba(214,39,40,0.18)", "background-color: rgba(255,160,0,0.25)"

    def row(r):
        styles = {c: "" for c in df.columns}
        flags = r["Flags"]
        if "unavailable" in flags or "no state" in flags:
            styles = {c: red for c in df.columns}
        if "leader off preferred" in flags:
            styles["Leader"] = amber
        if r["Out of sync"]:
            styles["Out of sync"] = red
            styles["ISR"] = amber
        return [styles[c] for c in df.columns]

    return df.style.apply(row, axis=1)


def _style_topics(df: pd.DataFrame):
    colors = {"unavailable": "color: #D62728; font-weight: 600", "under min ISR": "color: #D62728",
              "under-replicated": "color: #E69F00", "ok": "color: #2CA02C"}
    return df.style.map(lambda v: colors.get(v, ""), subset=["Health"])


def _pick_topic(names: list[str]) -> None:
    """on_select of the topic list: the selected row's topic becomes the chosen one."""
    try:
        rows = st.session_state["topic_list"]["selection"]["rows"]
    except (KeyError, TypeError):
        return
    if rows and rows[0] < len(names):
        st.session_state["topic"] = names[rows[0]]


@frame.live_fragment("live-topics")
def live() -> None:
    snap = frame.live_view(conn, in_fragment=True)
    if isinstance(snap, Outline):  # the states are still being read: what is known, no health
        outline_view.topics(snap)
        return
    bd = broker_defaults.defaults(ctx.cluster, snap)
    sized = topic_sizes.shown(conn, ctx.cluster, snap)  # issue 30: sizes, offsets, messages (read in the background)
    table = conn.derived("topics.table", snap, lambda s: topic_sizes.add_list_columns(
        topic_table(s), sized.sizes, topic_sizes.missing_label(ctx.cluster, sized)),
        key=(bd, sized.sizes and sized.sizes.read_at, sized.note))

    # one wrapping row: the toggles keep their labels (columns of a fifth cut them to "Onl…" at 900 px)
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    # live: filters while typing (a 200 ms pause), no Enter needed; only this fragment reruns
    needle = row.text_input("Filter topics", key="q", placeholder="name contains…", type="search", live="200ms",
                            bind="query-params", help="Case-insensitive substring of the topic name") or ""
    only_bad = row.toggle("Only with problems", key="topic_only_bad")
    hide_internal = row.toggle("Hide internal", key="topic_hide_internal")
    view = table
    if needle.strip():
        view = view[view["Topic"].str.contains(needle.strip(), case=False, regex=False)]
    if only_bad:
        view = view[(view["Under-replicated"] + view["Unavailable"] + view["Under min ISR"]
                     + view["Out-of-sync replicas"]) > 0]
    if hide_internal:
        view = view[~view["Topic"].isin(["__consumer_offsets", "__transaction_state"])]

    st.caption(f"{len(view):,} of {len(table):,} topics · select a row to open the topic · "
               + md(topic_sizes.caption(sized)))
    broker_defaults.show_min_isr(health.min_isr_note(snap, bd))
    st.dataframe(_style_topics(view) if len(view) <= STYLED_TOPICS else view, hide_index=True, key="topic_list",
                 height=min(420, 38 + 35 * max(len(view), 1)), selection_mode="single-row",
                 on_select=partial(_pick_topic, view["Topic"].tolist()),
                 column_config={"Config overrides": st.column_config.TextColumn(width="large"),
                                **topic_sizes.column_config(sized.sizes is not None)})

    st.subheader("Partitions", anchor=False)
    names = view["Topic"].tolist()
    chosen = st.session_state.get("topic")
    just_deleted = getattr(st.session_state.get(ACTION_RESULT), "scope", None) == f"delete:{chosen}"
    if chosen is not None and chosen not in names and (chosen in snap.topic_by_name or just_deleted):
        # keep the chosen topic selectable while the filter hides it, or once the controller has deleted it
        # (its deletion's outcome stays on screen instead of the page jumping to another topic)
        names = [chosen] + names
    topic_name = st.selectbox("Topic", names, index=None, key="topic", placeholder="Choose a topic…",
                              bind="query-params")
    if topic_name is None:
        st.caption("Choose a topic to see its partitions, leaders, replicas and ISR.")
        return
    topic = snap.topic(topic_name)
    if topic is None:
        actions.show(ACTION_RESULT, scope=f"delete:{topic_name}")
        st.warning(f"Topic {md(repr(topic_name))} no longer exists.")
        return

    row = table[table["Topic"] == topic_name].iloc[0]
    m = ui.metric_row()
    ui.metric(m, "Partitions", f"{len(topic.partitions):,}")
    ui.metric(m, "RF", topic.replication_factor, help="Replication factor")
    ui.metric(m, "Min ISR", row["min ISR"], help="min.insync.replicas in effect: the topic's override, else its "
              "partitions' leaders' (their dynamic config, the cluster default, server.properties, Kafka's 1)")
    ui.metric(m, "Off preferred", int(row["Off preferred"]), help="Partitions off their preferred leader")
    ui.metric(m, "Out of sync", int(row["Out-of-sync replicas"]), help="Replicas out of the ISR")
    topic_sizes.topic_metrics(m, sized, topic_name)
    leaders = sorted({p.leader for p in topic.partitions if p.leader != NO_LEADER})
    if leaders:
        with st.popover("Brokers of this topic", icon=":material/dns:"):
            ui.broker_links(sorted({b for p in topic.partitions for b in p.replicas}), alive=snap.alive_broker_ids)
    if topic_name in snap.in_progress.deletion:
        st.warning(f"Topic {md(topic_name)} is queued for deletion.", icon=":material/delete:")
    ops_panels.partition_advice("tp", brokers=len(snap.alive_broker_ids), current=len(topic.partitions),
                                replication_factor=topic.replication_factor)  # issue 18: enough partitions?
    if topic.config:
        with st.expander(f"{len(topic.config)} config override(s)"):
            # st.dataframe, not st.table: table cells are markdown, and these are whatever ZooKeeper holds
            st.dataframe(pd.DataFrame(sorted(topic.config.items()), columns=["Key", "Value"]), hide_index=True,
                         key="topic_config", column_config={"Value": st.column_config.TextColumn(width="large")})
    security_panels.topic_access(conn, topic_name)  # issue 29: who may read, write, ... it

    parts = conn.derived("topics.partitions", snap, lambda s: topic_sizes.partition_columns(
        partition_table(s, topic), sized.sizes, topic_name), key=(topic_name, bd, sized.sizes and sized.sizes.read_at))
    p1, p2, p3 = st.columns([2, 1, 1], vertical_alignment="bottom")
    only_bad_p = p1.toggle("Only partitions with flags", key="part_only_bad")
    if only_bad_p:
        parts = parts[parts["Flags"] != "ok"]
    size = p2.selectbox("Rows per page", PAGE_SIZES, index=2, key="part_page_size")
    pages = max(1, -(-len(parts) // size))
    # a number input on purpose (see dashboard.ui): it only picks which rows of a read-only table show, bounded, and
    # the caption below says which rows are on screen; nothing is written from it
    page = p3.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1, step=1, key="part_page")
    page = min(int(page), pages)
    start = (page - 1) * size
    shown = parts.iloc[start:start + size]
    st.caption(f"Partitions {start + 1 if len(parts) else 0:,}–{start + len(shown):,} of {len(parts):,}. "
               "Amber leader: not the preferred (first) replica. Red: replicas out of the ISR, or no live leader.")
    st.dataframe(_style_partitions(shown), hide_index=True, key="partition_table",
                 height=min(640, 38 + 35 * max(len(shown), 1)),
                 column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                "Leader": st.column_config.TextColumn(width="small"),
                                "Preferred": st.column_config.TextColumn(width="small"),
                                "Flags": st.column_config.TextColumn(width="large"),
                                **topic_sizes.partition_config()})

    peek_panel.panel(cfg, ctx.cluster, topic)  # issue 30: its messages, for the data permission
    topic_actions(snap, topic)


# --- actions on the selected topic (operator only) ---------------------------------------------------


def _apply(kind: str, topic: str, work, context: str | None, form: actions.FormGuard) -> None:
    actions.run(ACTION_RESULT, work, cfg=cfg, action=f"{kind} topic {topic}", scope=f"{kind}:{topic}",
                context=context, form=form)


def _add_partitions(draft: AddPartitionsDraft, context: str, form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        applied = engines.topics(h).add_partitions(h, actions.store(), draft, cluster=ctx.cluster.name,
                                                   actor=actions.actor())
        conn.await_change(lambda s: (t := s.topic(draft.name)) is not None and len(t.partitions) >= draft.new_total)
        return f"Added {len(draft.new_assignment):,} partitions to {draft.name} ({draft.old_total:,} → " \
               f"{draft.new_total:,}); action #{applied.action_id} in History."
    _apply("grow", draft.name, work, context, form)


def _alter_config(name: str, to_set: dict[str, str], to_delete: list[str], expected: dict[str, str],
                  context: str, accepted: list[str], form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        applied = engines.topics(h).alter_config(h, actions.store(), name, set=to_set, delete=to_delete,
                                                 cluster=ctx.cluster.name, actor=actions.actor(),
                                                 accept_risks=list(accepted),
                                                 defaults=broker_defaults.defaults(ctx.cluster, conn.snapshot()))
        conn.await_change(lambda s: (t := s.topic(name)) is not None and dict(t.config) == expected)
        return f"{applied.summary[0].upper()}{applied.summary[1:]}; action #{applied.action_id} in History."
    _apply("configure", name, work, context, form)


def _delete(name: str, form: actions.FormGuard) -> None:
    def work() -> str:
        h = conn.write_session()
        applied = engines.topics(h).delete_topic(h, actions.store(), name, cluster=ctx.cluster.name,
                                                 actor=actions.actor())
        conn.await_change(lambda s: name in s.in_progress.deletion or s.topic(name) is None)
        return (f"{applied.summary[0].upper()}{applied.summary[1:]}; action #{applied.action_id} in History. "
                "The controller deletes it from every broker (when delete.topic.enable is true).")
    _apply("delete", name, work, None, form)


def topic_actions(snap: ClusterSnapshot, topic: Topic) -> None:
    st.subheader("Actions", anchor=False)
    if topic.name in snap.in_progress.deletion:
        actions.show(ACTION_RESULT, scope=f"delete:{topic.name}")
        st.info(f"{md(topic.name)} is marked for deletion ({md('/admin/delete_topics/' + topic.name)}): it cannot be "
                "grown, reconfigured or deleted again. The controller removes it once every replica is deleted.",
                icon=":material/delete:")
        return
    reason = actions.blocked_reason(cfg, f"change topic {topic.name}")
    actions.show_blocked(reason)
    # keyed, and the open tab kept in the session (on_change="rerun"): the tabs are drawn anew when something appears
    # above them (the first override's expander); unkeyed, Apply config jumped to Add partitions (issue 24), and
    # keyed only in the browser it still did now and then under load (CI)
    grow, configure, delete = st.tabs([":material/add: Add partitions", ":material/tune: Edit config",
                                       ":material/delete: Delete"], key=f"topic_tabs::{topic.name}", on_change="rerun")
    with grow:
        add_partitions_form(snap, topic, reason)
    with configure:
        config_form(snap, topic, reason)
    with delete:
        delete_form(snap, topic, reason or actions.blocked_reason(cfg, f"delete topic {topic.name}"))  # admin only


def add_partitions_form(snap: ClusterSnapshot, topic: Topic, reason: str | None) -> None:
    current = len(topic.partitions)
    # A text field read exactly (a number input dropped 10**20 and kept the previous total) and no min / max: the
    # engine says why a total is refused (not an increase, more new partitions than Keel writes at once).
    field = ui.int_field(f"New total number of partitions (now {current:,})", current + 1,
                         key=f"ap_total::{topic.name}::{current}", name="The new total number of partitions",
                         width=320)
    if field.invalid:
        actions.show(ACTION_RESULT, scope=f"grow:{topic.name}")
        return
    new_total = field.value
    try:
        draft = draft_add_partitions(snap, topic.name, new_total)
    except KeelError as e:
        actions.show_error(e)
        actions.show(ACTION_RESULT, scope=f"grow:{topic.name}")
        return
    context = actions.fingerprint(draft.name, draft.full_assignment)
    for w in draft.warnings:
        st.warning(md_text(w), icon=":material/warning:")
    rows = [{"Partition": p, "Leader": reps[0], "Replicas": actions.ids(reps)}
            for p, reps in draft.new_assignment.items()]
    new_df = pd.DataFrame(rows, columns=["Partition", "Leader", "Replicas"])
    st.caption(f"Placement of the {len(rows):,} new partition(s), from partition 0's replication factor and start "
               "index as kafka-topics --alter computes it (rack-aware):")
    shown = actions.page_of(new_df, f"ap_pages::{topic.name}", label="new partitions")
    st.dataframe(shown, hide_index=True, key="ap_preview", height=min(320, 38 + 35 * max(len(shown), 1)),
                 column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                "Leader": st.column_config.NumberColumn("Leader (preferred)", format="%d")})
    added = Counter(b for reps in draft.new_assignment.values() for b in reps)
    alive = [b for b in snap.brokers if b.alive]
    st.plotly_chart(charts.per_broker_bars([b.id for b in alive], [added[b.id] for b in alive],
                                           [b.rack for b in alive], [True] * len(alive),
                                           title="New replicas per broker", y_title="Replicas", height=260,
                                           colors=charts.rack_colors(b.rack for b in snap.brokers)),
                    key="ap_chart", config={"displayModeBar": False})
    ok = st.checkbox(f"Add {len(rows):,} partition(s) to **{md(topic.name)}** ({current:,} → {new_total:,})",
                     key=f"ap_confirm::{context}", disabled=reason is not None)
    st.button("Add partitions", type="primary", key="ap_apply", disabled=reason is not None or not ok,
              help=reason, on_click=_add_partitions,
              args=(draft, context, actions.guard(f"ap_total::{topic.name}::{current}",
                                                  confirm=f"ap_confirm::{context}")))
    actions.show(ACTION_RESULT, scope=f"grow:{topic.name}", context=context)


EFFECTIVE_COLUMNS = ["Key", "Value", "Source", "Kafka default", "Other brokers"]


def effective_table(snap: ClusterSnapshot, topic: Topic) -> pd.DataFrame:
    """kafka-configs --describe --all, with the brokers' own settings when Keel can read them (issue 23)."""
    rows = effective_config(topic.config, dynamic=snap.broker_configs,
                            defaults=broker_defaults.defaults(ctx.cluster, snap),
                            brokers={b for p in topic.partitions for b in p.replicas})
    return pd.DataFrame([{"Key": r.key, "Value": "" if r.value is None else r.value, "Source": r.label,
                          "Kafka default": "" if r.default is None else r.default, "Other brokers": r.differs}
                         for r in rows], columns=EFFECTIVE_COLUMNS)


def config_form(snap: ClusterSnapshot, topic: Topic, reason: str | None) -> None:
    """The overrides editor, and beside it the effective configuration (kafka-configs --describe --all)."""
    left, right = st.columns([1, 1], gap="medium")
    with right:
        st.markdown("**Effective configuration**")
        bd = broker_defaults.defaults(ctx.cluster, snap)
        table = conn.derived("topics.effective", snap, lambda s: effective_table(s, topic), key=(topic.name, bd))
        overridden = int((table["Source"] == TOPIC).sum())
        where = (f"the brokers' dynamic configs, their server.properties (read at {bd.read_at}) or Kafka's default"
                 if bd.known else "the brokers' dynamic configs or Kafka's default: their server.properties are "
                 f"unknown ({md(bd.problem or '')})")
        st.caption(f"Every key as the brokers apply it, as `kafka-configs --describe --all` shows it: "
                   f"{overridden:,} topic override(s), the rest from {where}.")
        st.dataframe(table.style.map(lambda v: "font-weight: 600" if v == TOPIC else "",
                                     subset=["Source"]), hide_index=True, key="topic_effective_config", height=380,
                     column_config={"Value": st.column_config.TextColumn(width="medium")})
    with left:
        _config_form(snap, topic, reason)


def _config_form(snap: ClusterSnapshot, topic: Topic, reason: str | None) -> None:
    current = dict(topic.config)
    st.caption("The topic's config overrides (keys not listed use the broker / Kafka default). Edit a value, add a "
               "row, or delete a row to remove an override.")
    edited, problems = actions.config_editor(f"cfg_edit::{topic.name}::{actions.fingerprint(current)}", current,
                                             disabled=reason is not None)
    actions.show_config_problems(problems)
    to_set = {k: v for k, v in edited.items() if current.get(k) != v}
    to_delete = sorted(k for k in current if k not in edited)
    if problems:
        actions.show(ACTION_RESULT, scope=f"configure:{topic.name}")
        return
    if not to_set and not to_delete:
        st.caption("No change yet.")
        actions.show(ACTION_RESULT, scope=f"configure:{topic.name}")
        return
    try:
        draft = draft_alter_config(snap, topic.name, set=to_set, delete=to_delete,
                                   defaults=broker_defaults.defaults(ctx.cluster, snap))
    except KeelError as e:
        actions.show_keyed_error(e)
        actions.show(ACTION_RESULT, scope=f"configure:{topic.name}")
        return
    context = actions.fingerprint(topic.name, draft.old, draft.new, draft.risks)
    for w in draft.warnings:
        st.warning(md_text(w), icon=":material/warning:")
    diff = pd.DataFrame([{
        "Key": r.key,
        "Change": "added" if r.old is None else "removed" if r.new is None else "changed",
        "Current": r.old if r.old is not None else "(default)",
        "New": r.new if r.new is not None else "(default)",
        "Kafka default": r.default if r.default is not None else "—",
    } for r in draft.diff], columns=["Key", "Change", "Current", "New", "Kafka default"])
    st.dataframe(diff, hide_index=True, key="cfg_diff")
    for risk in draft.risks:
        st.warning(f"**Risk:** {md(risk)}", icon=":material/report:")
    ok = st.checkbox(f"Apply {len(draft.diff)} config change(s) to **{md(topic.name)}**",
                     key=f"cfg_confirm::{context}", disabled=reason is not None)
    # one box per risk, keyed by its text: a different risk is never covered by an earlier tick
    accepted = [risk for risk in draft.risks
                if st.checkbox(f"I understand: {md(risk)}", key=f"cfg_risk::{actions.fingerprint(context, risk)}",
                               disabled=reason is not None)]
    st.button("Apply config", type="primary", key="cfg_apply", help=reason,
              disabled=reason is not None or not ok or len(accepted) < len(draft.risks),
              on_click=_alter_config, args=(topic.name, to_set, to_delete, draft.new, context, accepted,
                                            actions.guard(prefixes=(f"cfg_edit::{topic.name}::",),
                                                          confirm=f"cfg_confirm::{context}")))
    actions.show(ACTION_RESULT, scope=f"configure:{topic.name}", context=context)


def delete_form(snap: ClusterSnapshot, topic: Topic, reason: str | None) -> None:
    try:
        draft = draft_delete_topic(snap, topic.name)
    except KeelError as e:
        actions.show(ACTION_RESULT, scope=f"delete:{topic.name}")
        actions.show_error(e)
        return
    st.warning(f"Marks **{md(topic.name)}** for deletion: {draft.partitions:,} partitions, {draft.replicas:,} "
               "replicas. The controller then deletes its data on every broker; it cannot be restored. "
               + md(" ".join(draft.warnings)), icon=":material/delete_forever:")
    typed = st.text_input(f"Type **{md(topic.name)}** to confirm", key=f"del_confirm::{topic.name}",
                          disabled=reason is not None)
    st.button("Delete topic", type="primary", key="del_apply", icon=":material/delete:",
              disabled=reason is not None or typed != topic.name, help=reason, on_click=_delete,
              args=(topic.name, actions.guard(f"del_confirm::{topic.name}")))
    actions.show(ACTION_RESULT, scope=f"delete:{topic.name}")


live()
