"""The Consumer groups page's writes (issue 30): reset a group's offsets (every kafka-consumer-groups --reset-offsets
mode, a dry run first: old offset, new offset, the lag it leaves), delete its offsets of some topics, delete an
empty group, and undo any of these from the offsets the audit recorded. Operator role, through dashboard.actions
(the gate re-checked at click time); core.offset_reset decides, core.kafka.group_writes reads and writes.
"""

from __future__ import annotations

import time
from typing import Callable

import pandas as pd
import streamlit as st

from core.consumer_groups import Group
from core.errors import KeelError
from core.offset_reset import INACTIVE, MODES, VALUE_MODES, inactive_message, parse_topic_scope, spec
from core.policy.access import Role
from dashboard import actions
from dashboard.text import md, md_text

RESULT = "cg_write_result"
DRY_RUN = "cg_reset_plan"  # (inputs fingerprint, ResetPlan | KeelError)
KINDS = ("offsets-reset", "offsets-delete", "group-delete")
HINTS = {"to-offset": "an offset, e.g. 1200", "shift-by": "a positive or negative number, e.g. -100",
         "to-datetime": "YYYY-MM-DDTHH:mm:SS.sss, UTC unless a zone follows (Z, +02:00)",
         "by-duration": "PnDTnHnMnS, e.g. PT1H (an hour before now)",
         "from-file": "topic,partition,offset lines (what kafka-consumer-groups --reset-offsets --export prints)"}


def _admin(cluster):
    from core.kafka.admin import KafkaAdmin

    return KafkaAdmin.for_cluster(cluster, timeout=10.0)


def _done(applied) -> str:
    return f"{applied.summary[0].upper()}{applied.summary[1:]}; action #{applied.action_id} in History."


def _topics_key(g: Group) -> str:
    return f"cg_reset_topics_{actions.fingerprint(g.group_id)}"


def draw(cfg, cluster, g: Group, changed: Callable[[], None]) -> None:
    """The writes of group `g`; `changed()` drops the page's cached read after a write."""
    st.subheader("Change the group's offsets", anchor=False)
    reason = actions.blocked_reason(cfg, "reset consumer group offsets", needs=Role.OPERATOR)
    actions.show_blocked(reason)
    actions.show(RESULT, scope=g.group_id)
    if g.state not in INACTIVE:
        # Kafka's own rule and words (ConsumerGroupCommand): offsets of a group with members are not changed
        st.info(md(inactive_message(g.group_id, g.state)) + " Stop its consumers first.", icon=":material/group:")
        return
    _reset(cfg, cluster, g, reason, changed)
    _delete(cfg, cluster, g, reason, changed)
    _undo(cfg, cluster, g, reason, changed)


def _reset(cfg, cluster, g: Group, reason: str | None, changed: Callable[[], None]) -> None:
    with st.expander("Reset offsets (kafka-consumer-groups --reset-offsets)", icon=":material/restart_alt:",
                     expanded=True):
        c = st.columns([1, 2])
        mode = c[0].selectbox("Reset to", MODES, key="cg_reset_mode", format_func=lambda m: f"--{m}")
        value = None
        if mode == "from-file":
            value = c[1].text_area("CSV", key="cg_reset_csv", help=HINTS[mode], height=100)
        elif mode in VALUE_MODES:
            value = c[1].text_input("Value", key="cg_reset_value", placeholder=HINTS[mode])
        if mode != "from-file":
            scope = st.radio("Scope", ["All topics", "Topics"], key="cg_reset_scope", horizontal=True,
                             help="All topics: every partition the group has committed offsets for")
            # keyed by the group: a field drawn for another group keeps its text, which would scope this reset
            topics_text = st.text_input("Topics", value=" ".join(g.topics), key=_topics_key(g),
                                        disabled=scope == "All topics",
                                        help="space separated: a topic (every partition) or topic:0,1 (those)")
        else:
            scope, topics_text = "File", ""
        inputs = (g.group_id, mode, value, scope, topics_text)
        key = actions.fingerprint(*inputs)
        if st.button("Dry run", key="cg_reset_dry", icon=":material/preview:"):
            try:
                s = spec(mode, value, group=g.group_id, now_ms=int(time.time() * 1000))
                topics = parse_topic_scope(topics_text.split()) if scope == "Topics" else []
                from core.kafka.group_writes import plan

                with _admin(cluster) as admin:
                    result = (plan(admin, g.group_id, s, all_topics=scope == "All topics", topics=topics), s, topics)
            except KeelError as e:
                result = e
            st.session_state[DRY_RUN] = (key, result)
        got = st.session_state.get(DRY_RUN)
        if got is None or got[0] != key:
            st.caption("The dry run shows the new offsets; nothing is written until you confirm them.")
            return
        if isinstance(got[1], KeelError):
            actions.show_error(got[1])
            return
        plan_, s, topics = got[1]
        st.dataframe(pd.DataFrame([{"Topic": r.topic, "Partition": r.partition, "Current": r.current, "New": r.new,
                                    "Log end": r.log_end, "Lag after": r.lag_after, "Note": r.note or ""}
                                   for r in plan_.rows]), hide_index=True, key="cg_reset_table")
        fp = actions.fingerprint(key, plan_.to_dict())
        ok = f"cg_reset_ok_{fp}"
        st.checkbox(f"Commit these {len(plan_.rows)} offsets for group {md(g.group_id)}", key=ok,
                    disabled=reason is not None)
        form = actions.guard("cg_reset_mode", "cg_reset_value", "cg_reset_csv", "cg_reset_scope", _topics_key(g),
                             confirm=ok)

        def work(plan_=plan_, s=s, topics=topics) -> str:
            from core.kafka.group_writes import execute_reset

            with _admin(cluster) as admin:
                done, _ = execute_reset(admin, actions.store(), g.group_id, s, cluster=cluster.name,
                                        all_topics=scope == "All topics", topics=topics,
                                        expected=plan_.new_offsets, actor=actions.actor())
            st.session_state.pop(DRY_RUN, None)
            changed()
            return _done(done)

        st.button("Reset offsets", key="cg_reset_go", type="primary", icon=":material/restart_alt:",
                  disabled=reason is not None or not st.session_state.get(ok),
                  on_click=actions.run, args=(RESULT, work),
                  kwargs=dict(cfg=cfg, action=f"reset the offsets of consumer group {g.group_id}", scope=g.group_id,
                              context=fp, needs=Role.OPERATOR, form=form))


def _delete(cfg, cluster, g: Group, reason: str | None, changed: Callable[[], None]) -> None:
    from core.kafka import group_writes

    with st.expander("Delete offsets or the group", icon=":material/delete:"):
        topics = st.multiselect("Topics whose offsets to delete (kafka-consumer-groups --delete-offsets)",
                                list(g.topics), key=f"cg_del_topics_{actions.fingerprint(g.group_id)}")
        ok = f"cg_del_ok_{actions.fingerprint(g.group_id, topics)}"
        st.checkbox("Delete these offsets (the audit keeps them: Undo puts them back)", key=ok,
                    disabled=reason is not None or not topics)

        def delete_offsets(topics=tuple(topics)) -> str:
            with _admin(cluster) as admin:
                done = group_writes.delete_offsets(admin, actions.store(), g.group_id, [(t, None) for t in topics],
                                                   cluster=cluster.name, actor=actions.actor())
            changed()
            return _done(done)

        st.button("Delete offsets", key="cg_del_go", disabled=reason is not None or not st.session_state.get(ok),
                  on_click=actions.run, args=(RESULT, delete_offsets),
                  kwargs=dict(cfg=cfg, action=f"delete offsets of consumer group {g.group_id}", scope=g.group_id,
                              needs=Role.OPERATOR, form=actions.guard(f"cg_del_topics_{actions.fingerprint(g.group_id)}",
                                                                   confirm=ok)))
        if g.state != "Empty":
            return
        gone = f"cg_delgroup_ok_{actions.fingerprint(g.group_id)}"
        st.checkbox(f"Delete the empty group {md(g.group_id)} (kafka-consumer-groups --delete)", key=gone,
                    disabled=reason is not None)

        def delete_group() -> str:
            with _admin(cluster) as admin:
                done = group_writes.delete_group(admin, actions.store(), g.group_id, cluster=cluster.name,
                                                 actor=actions.actor())
            changed()
            return _done(done)

        st.button("Delete group", key="cg_delgroup_go", disabled=reason is not None or not st.session_state.get(gone),
                  on_click=actions.run, args=(RESULT, delete_group),
                  kwargs=dict(cfg=cfg, action=f"delete consumer group {g.group_id}", scope=g.group_id,
                              needs=Role.OPERATOR, form=actions.guard(confirm=gone)))


def _undo(cfg, cluster, g: Group, reason: str | None, changed: Callable[[], None]) -> None:
    try:
        done = [a for a in actions.store().actions(cluster.name, kind=list(KINDS), limit=50)
                if a.target == g.group_id and a.status == "applied"]
    except KeelError as e:
        st.caption(f"The action history cannot be read: {md_text(e)}")
        return
    if not done:
        return
    with st.expander(f"Undo ({len(done)} recorded change(s) of this group)", icon=":material/undo:"):
        pick = st.selectbox("Change", [a.id for a in done], key="cg_undo_pick",
                            format_func=lambda i: next(f"#{a.id} {a.at}: {a.summary}" for a in done if a.id == i))
        ok = f"cg_undo_ok_{pick}"
        st.checkbox("Put back the offsets this change found", key=ok, disabled=reason is not None)

        def work(action_id=pick) -> str:
            from core.kafka.group_writes import undo

            with _admin(cluster) as admin:
                applied = undo(admin, actions.store(), action_id, cluster=cluster.name, actor=actions.actor())
            changed()
            return _done(applied)

        st.button("Undo", key="cg_undo_go", disabled=reason is not None or not st.session_state.get(ok),
                  on_click=actions.run, args=(RESULT, work),
                  kwargs=dict(cfg=cfg, action=f"undo a change of consumer group {g.group_id}", scope=g.group_id,
                              needs=Role.OPERATOR, form=actions.guard("cg_undo_pick", confirm=ok)))
