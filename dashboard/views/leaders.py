"""Leaders: preferred-leader imbalance, the partitions off their preferred leader (and whether an election
would move them), and the one-click preferred-leader election with its outcome, live.

Every picker is in the URL (`?scope=One+topic&topic=orders`) and keeps its value across elections: option lists are
stable (sorted by name) and labels carry no live counts, which would change after an election and reset the
browser's selection. The outcome of the election just run comes before the preview of what is left to elect.
A down broker is never "over threshold": nothing can be moved to it until it returns.

The preview comes from core.elections on the live snapshot; the button calls core.zk.election_writes.trigger,
which re-reads live state, refuses while an election is in flight, and writes only the partitions the
controller would actually move.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import streamlit as st

from core import elections, health
from core.errors import KeelError
from core.model import NO_LEADER, ClusterSnapshot
from core.plans import MAX_PLAN_BYTES, format_election, parse_election
from core.cluster import engines
from dashboard import actions, broker_defaults, charts, frame, ui
from dashboard.text import md

RESULT = "ld_result"
LAST = "ld_last_election"
SCOPES = ("All partitions", "One topic", "One broker", "Chosen partitions", "From a file")
MAX_CHOICES = 2000  # partitions offered in the multiselect; narrow with a topic or broker scope beyond that
CANDIDATE_COLUMNS = ["Topic", "Partition", "Leader", "Preferred", "Eligible", "Reason"]

ctx = frame.page_context()
conn = ctx.conn
cfg = ctx.config
st.title("Leaders", anchor=False)
st.caption(f"Cluster **{ctx.cluster.name}** · the controller elects a partition's preferred (first) replica only "
           "when it is alive and in the ISR")
frame.live_snapshot(conn, in_fragment=False)


def tp(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


def parse_tp(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition("-")
    return topic, int(partition)


def candidate_table(cands: list[elections.Candidate]) -> pd.DataFrame:
    return pd.DataFrame([{
        "Topic": c.topic, "Partition": c.partition,
        "Leader": "none" if c.leader == NO_LEADER else str(c.leader), "Preferred": c.preferred,
        "Eligible": "yes" if c.eligible else "no", "Reason": c.reason or "will be elected",
    } for c in cands], columns=CANDIDATE_COLUMNS)


def reasons_table(cands) -> pd.DataFrame:
    counts = Counter(c.reason for c in cands if not c.eligible)
    return pd.DataFrame([{"Why not": r, "Partitions": n} for r, n in counts.most_common()],
                        columns=["Why not", "Partitions"])


def topic_options(snap: ClusterSnapshot, cands) -> tuple[Counter, list[str]]:
    """Topic names sorted by name (a stable list: the picker keeps its value while counts change) and how many
    partitions of each are off their preferred leader."""
    return Counter(c.topic for c in cands), sorted(t.name for t in snap.topics)


def over_threshold(summary: health.ClusterSummary) -> list[int]:
    """Alive brokers over the controller's threshold: a down broker leads nothing whatever an election does."""
    return [b.broker_id for b in summary.brokers if b.over_threshold and b.alive]


def _trigger(scope: dict, context: str, form: actions.FormGuard | None = None) -> None:
    def work() -> str:
        h = conn.write_session()
        done = engines.elections(h).trigger(h, actions.store(), cluster=ctx.cluster.name, actor=actions.actor(),
                                            **scope)
        sel = done.selection
        st.session_state[LAST] = {"action_id": done.action_id, "scope": sel.scope,
                                  "keys": [list(k) for k in sel.partitions],
                                  "ineligible": len(sel.ineligible)}
        keys = set(sel.partitions)
        conn.await_change(lambda s: bool(s.in_progress.preferred_election)
                          or all(o.elected for o in elections.outcomes(s, keys)), timeout=3)
        how = ("Election run by the controller (ElectLeaders)" if engines.through_brokers(h)
               else "Election written to /admin/preferred_replica_election")
        return (f"{how} for {len(keys):,} partition(s) of "
                f"{sel.scope}" + (f"; {len(sel.ineligible):,} not eligible were left out" if sel.ineligible else "")
                + f" (action #{done.action_id} in History).")

    actions.run(RESULT, work, cfg=cfg, action="trigger a preferred leader election", scope="leaders",
                context=context, form=form)


def _dismiss() -> None:
    st.session_state.pop(LAST, None)
    actions.clear(RESULT)


def scope_picker(snap: ClusterSnapshot, cands: list[elections.Candidate]) -> dict | None:
    kind = st.radio("Scope", SCOPES, horizontal=True, key="scope", bind="query-params")
    if kind == SCOPES[0]:
        return {"all_partitions": True}
    if kind == SCOPES[1]:
        off, names = conn.derived("leaders.topic_options", snap, lambda s: topic_options(s, cands))
        topic = st.selectbox("Topic", names, key="topic", index=None, placeholder="Choose a topic…",
                             bind="query-params")
        if topic is None:
            worst = ", ".join(f"{n} ({k:,})" for n, k in off.most_common(3))
            if worst:
                st.caption(f"Most partitions off their preferred leader: {md(worst)}")
            return None
        st.caption(f"{off[topic]:,} partition(s) of {md(topic)} off their preferred leader.")
        return {"topic": topic}
    if kind == SCOPES[2]:
        loads = {b.broker_id: b for b in broker_defaults.summary(ctx, snap).brokers}
        broker = st.selectbox("Broker (partitions whose preferred leader it is)", [b.id for b in snap.brokers],
                              key="broker", index=None, placeholder="Choose a broker…", bind="query-params")
        if broker is None:
            return None
        load = loads.get(broker)
        if load is not None and not load.alive:
            st.caption(f"Broker {broker} is down: no election can move leadership to it until it returns.")
        elif load is not None and load.preferred:
            st.caption(f"Broker {broker} is the preferred leader of {load.preferred:,} partition(s); "
                       f"{load.preferred_not_leading:,} are not led by it "
                       f"({(load.imbalance_ratio or 0) * 100:.0f}%).")
        return {"broker": int(broker)}
    if kind == SCOPES[4]:
        return file_scope()
    options = [tp(c.key) for c in cands]
    if len(options) > MAX_CHOICES:
        st.caption(f"Offering the first {MAX_CHOICES:,} of {len(options):,} partitions off their preferred leader; "
                   "use the topic or broker scope for the rest.")
        options = options[:MAX_CHOICES]
    chosen = st.multiselect("Partitions (off their preferred leader)", options, key="ld_partitions",
                            placeholder="topic-partition…")
    return {"partitions": [parse_tp(x) for x in chosen]} if chosen else None


def file_scope() -> dict | None:
    """Kafka's election document (kafka-leader-election --path-to-json-file), read as the CLI reads it."""
    up = st.file_uploader("Election JSON", type=["json", "txt"], key="ld_file",
                          help='{"partitions": [{"topic": "orders", "partition": 0}, ...]}: what '
                               "kafka-leader-election.sh --path-to-json-file takes, and what this page downloads")
    if up is None:
        st.caption("Upload the partitions to elect; the preview below shows which the controller would move.")
        return None
    if up.size > MAX_PLAN_BYTES:
        st.error(f"{md(up.name)} is {up.size:,} bytes: more than the {MAX_PLAN_BYTES >> 20} MiB an election of "
                 "every partition of a large cluster needs. Is it the right file?", icon=":material/error:")
        return None
    try:
        partitions = parse_election(up.getvalue())
    except KeelError as e:
        actions.show_error(e)
        return None
    return {"partitions": list(partitions)}


def last_election(snap: ClusterSnapshot) -> None:
    last = st.session_state.get(LAST)
    if not last:
        return
    keys = [tuple(k) for k in last["keys"]]
    outs = conn.derived("leaders.outcomes", snap, lambda s: elections.outcomes(s, keys), key=last["action_id"])
    in_flight = set(snap.in_progress.preferred_election)
    pending = any(k in in_flight for k in keys)
    elected = sum(o.elected for o in outs)
    with st.container(border=True):
        head = st.columns([5, 1], vertical_alignment="center")
        head[0].markdown(f"**Election #{last['action_id']}** — {md(last['scope'])}: **{elected:,} of {len(outs):,}** "
                         "partitions now led by their preferred replica")
        head[1].button("Dismiss", key="ld_dismiss", on_click=_dismiss, width="stretch")
        done_how = ("the controller ran the election (ElectLeaders)" if snap.is_kraft
                    else "the controller removed /admin/preferred_replica_election")
        if pending:
            st.info("In flight: /admin/preferred_replica_election is still there; the controller has not finished. "
                    "This table updates live.", icon=":material/hourglass_top:")
        elif elected == len(outs):
            st.success(f"Done: {done_how} and every partition is led by its preferred replica.",
                       icon=":material/check_circle:")
        else:
            st.warning(f"Done: {done_how}; {len(outs) - elected:,} partition(s) are still not led by their "
                       "preferred replica (see why below).", icon=":material/warning:")
        df = pd.DataFrame([{"Topic": o.topic, "Partition": o.partition,
                            "Outcome": "elected" if o.elected else ("waiting" if pending else "not elected"),
                            "Leader": "none" if o.leader == NO_LEADER else str(o.leader), "Detail": o.detail}
                           for o in outs], columns=["Topic", "Partition", "Outcome", "Leader", "Detail"])
        not_elected = Counter(o.detail for o in outs if not o.elected)
        if not_elected and not pending:
            st.dataframe(pd.DataFrame([{"Why not": r, "Partitions": n} for r, n in not_elected.most_common()]),
                         hide_index=True, key="ld_outcome_reasons")
        shown = actions.page_of(df, "ld_outcome_pages", label="partitions")
        st.dataframe(shown.style.map(lambda v: {"elected": "color: #2CA02C; font-weight: 600",
                                                "not elected": "color: #D62728; font-weight: 600",
                                                "waiting": "color: #E69F00"}.get(v, ""), subset=["Outcome"]),
                     hide_index=True, key="ld_outcome", height=min(360, 38 + 35 * max(len(shown), 1)),
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small")})


@frame.live_fragment("live-leaders")
def live() -> None:
    snap = frame.live_snapshot(conn, in_fragment=True)
    summary: health.ClusterSummary = broker_defaults.summary(ctx, snap)
    cands: list[elections.Candidate] = conn.derived("leaders.candidates", snap, elections.candidates)
    eligible = sum(c.eligible for c in cands)
    threshold = summary.leader_imbalance_threshold

    over = over_threshold(summary)
    m = ui.metric_row()
    ui.metric(m, "Off preferred", f"{len(cands):,}",
              help="Partitions off their preferred leader: the leader is not their first replica (leader -1 "
                   "included)")
    ui.metric(m, "Electable now", f"{eligible:,}",
              help="Preferred replica alive and in the ISR, partition not being reassigned or deleted")
    ui.metric(m, "Not electable", f"{len(cands) - eligible:,}")
    ui.metric(m, "Threshold", f"{threshold}%",
              help="Imbalance threshold: leader.imbalance.per.broker.percentage (Kafka default 10)")
    ui.metric(m, "Over threshold", f"{len(over):,}",
              help="Alive brokers whose preferred-leader imbalance is over the threshold (a down broker leads "
                   "nothing until it returns, whatever an election does)")

    in_flight = snap.in_progress.preferred_election
    if in_flight:
        st.info(f"A preferred-leader election is in flight for {len(in_flight):,} partition(s) "
                "(/admin/preferred_replica_election exists); another one is refused until the controller finishes.",
                icon=":material/hourglass_top:")

    loads = summary.brokers
    st.plotly_chart(conn.derived("imbalance_chart", snap, lambda s: charts.imbalance_chart(
        [b.broker_id for b in loads], [b.imbalance_ratio for b in loads], [b.alive for b in loads], threshold),
        key=summary),
        key="ld_imbalance_chart", config={"displayModeBar": False})

    # --- the partitions off their preferred leader --------------------------------------------------
    st.subheader("Partitions off their preferred leader", anchor=False)
    if not cands:
        st.success("Every partition is led by its preferred replica.", icon=":material/check_circle:")
    else:
        reasons = reasons_table(cands)
        if len(reasons):
            st.dataframe(reasons, hide_index=True, key="ld_reasons")
        table = conn.derived("leaders.table", snap, lambda s: candidate_table(cands))
        f1, f2 = st.columns([3, 1], vertical_alignment="bottom")
        needle = f1.text_input("Filter by topic", key="ld_filter", placeholder="name contains…")
        only_blocked = f2.toggle("Only not electable", key="ld_only_blocked")
        view = table
        if needle.strip():
            view = view[view["Topic"].str.contains(needle.strip(), case=False, regex=False)]
        if only_blocked:
            view = view[view["Eligible"] == "no"]
        shown = actions.page_of(view, "ld_cand_pages", label="partitions")
        st.dataframe(shown.style.map(lambda v: "color: #D62728" if v == "no" else "color: #2CA02C",
                                     subset=["Eligible"]),
                     hide_index=True, key="ld_candidates", height=min(420, 38 + 35 * max(len(shown), 1)),
                     column_config={"Partition": st.column_config.NumberColumn(format="%d", width="small"),
                                    "Preferred": st.column_config.NumberColumn(format="%d", width="small"),
                                    "Reason": st.column_config.TextColumn(width="large")})

    # --- the election ------------------------------------------------------------------------------
    st.subheader("Preferred-leader election", anchor=False)
    reason = actions.blocked_reason(cfg, "trigger a preferred leader election")
    actions.show_blocked(reason)
    scope = scope_picker(snap, cands)
    context = None
    selection = None
    # what was just done comes first; the preview below is about what is left
    last = st.session_state.get(LAST)
    if last:
        actions.show(RESULT, scope="leaders")
    last_election(snap)
    if scope is not None and not snap.topics:  # a new cluster: nothing to elect is no error
        st.info("The cluster has no topics yet: there is no leader to elect.", icon=":material/info:")
        scope = None
    if scope is not None:
        try:
            selection = conn.derived("leaders.selection", snap, lambda s: elections.select(s, **scope),
                                     key=repr(sorted(scope.items())))
        except KeelError as e:
            actions.show_error(e)
    if selection is not None:
        keys = selection.partitions
        context = actions.fingerprint(scope, keys)
        n_in, n_out = len(selection.eligible), len(selection.ineligible)
        if not n_in and not n_out:
            st.success(f"Nothing to do in {md(selection.scope)}: all {selection.already_preferred:,} partition(s) "
                       "are led by their preferred replica.", icon=":material/check_circle:")
        elif not n_in:
            why = "; ".join(f"{r['Why not']} ({r['Partitions']:,})" for _, r in
                            reasons_table(selection.ineligible).iterrows())
            just_elected = bool(last) and last.get("scope") == selection.scope
            text = (f"Nothing {'more ' if just_elected else ''}to elect in {md(selection.scope)}: {n_out:,} "
                    f"partition(s) are off their preferred leader but the controller would not move them — "
                    f"{md(why)}.")
            if just_elected:  # after an election of this scope: a note under its outcome, not a warning above it
                st.caption(f":material/block: {text}")
            else:
                st.warning(text, icon=":material/block:")
        else:
            st.markdown(f"In **{md(selection.scope)}**: **{n_in:,}** partition(s) will move to their preferred leader"
                        + (f", **{n_out:,}** cannot" if n_out else "")
                        + f"; {selection.already_preferred:,} already led by their preferred replica.")
            if n_out:
                st.dataframe(reasons_table(selection.ineligible), hide_index=True, key="ld_selection_reasons")
            before = conn.derived("leaders.before", snap, elections.leaders_per_broker)
            after = conn.derived("leaders.after", snap, lambda s: elections.leaders_per_broker(s, keys),
                                 key=context)
            ids = list(before)
            alive = snap.alive_broker_ids
            st.plotly_chart(charts.before_after_bars(ids, [before[b] for b in ids], [after.get(b, 0) for b in ids],
                                                     [b in alive for b in ids]),
                            key="ld_before_after", config={"displayModeBar": False})
        if n_in:
            data = conn.derived("leaders.json", snap, lambda s: format_election(keys), key=context)
            # the download on its own line, as wide as its label (a column cut it at 900 px)
            st.download_button(f"Download election JSON ({n_in:,} partitions)", data,
                               file_name="preferred-election.json", mime="application/json",
                               key="ld_download", icon=":material/download:", width="content",
                               help="For kafka-leader-election.sh --election-type preferred "
                                    "--path-to-json-file (or kafka-preferred-replica-election.sh before 2.4)")
            with st.expander("The same election from a shell, with this file", icon=":material/terminal:"):
                ui.commands(["kafka-leader-election.sh", "--bootstrap-server", actions.bootstrap_servers(snap),
                             "--election-type", "preferred", "--path-to-json-file", "preferred-election.json"],
                            ["python", "-m", "core", "elect", "--zk", ctx.cluster.zk, "--path-to-json-file",
                             "preferred-election.json"])
                st.caption("Kafka before 2.4: kafka-preferred-replica-election.sh with --zookeeper and the same "
                           "--path-to-json-file.")
            ok = st.checkbox(f"Move the leadership of {n_in:,} partition(s) to their preferred replica",
                             key=f"ld_confirm_{context}", disabled=reason is not None)
            st.button("Elect preferred leaders", type="primary", icon=":material/how_to_vote:", key="ld_elect",
                      disabled=reason is not None or not ok, help=reason, on_click=_trigger,
                      args=(scope, context, actions.guard("scope", "topic", "broker", "ld_partitions", "ld_file",
                                                          confirm=f"ld_confirm_{context}")))
    if not last:
        actions.show(RESULT, scope="leaders", context=context)


live()
