"""Rolling restart: per broker, is it safe to stop now (partitions where it is the only in-sync replica,
partitions that would fall under min.insync.replicas, leaderships that move and where); a restart order for the
whole cluster that keeps every partition available; and the live "wait until under-replicated = 0" check between
brokers. Read-only: Keel does not stop brokers, it says when and in which order (core.restarts)."""

from __future__ import annotations

import shlex

import pandas as pd
import streamlit as st

from core.errors import KeelError
from core.broker_defaults import BrokerDefaults
from core.health import filter_partitions, matching_topics, min_isr_note
from core.restarts import check_all, restart_plan
from dashboard import broker_defaults, frame, ui
from dashboard.text import md, md_text

ctx = frame.page_context()
conn = ctx.conn
st.title("Rolling restart", anchor=False)
st.caption(f"Cluster **{md(ctx.cluster.name)}** · stop one broker at a time (controlled shutdown), start it, and "
           "wait until no partition is under-replicated before the next one. Keel says when and in which order; it "
           "does not stop brokers.")
snap0 = frame.live_snapshot(conn, in_fragment=False)

c = st.columns([1, 2], vertical_alignment="bottom")
# issue 23: with the brokers' own settings read (bootstrap in keel.toml) there is nothing to enter; without them the
# operator says what server.properties holds. A text field read exactly, no min: the check below says what is wrong
# (a number input would silently keep the previous value).
bd0 = broker_defaults.defaults(ctx.cluster, snap0)
min_isr_field = None
if bd0.known:
    c[0].caption(":material/dns: min.insync.replicas: each broker's own, read from the brokers")
else:
    min_isr_field = ui.int_field("Brokers' min.insync.replicas", bd0.assumed_min_isr, key="rr_min_isr",
                                 container=c[0], errors=st.container(), name="min.insync.replicas",
                                 help="The static broker setting (server.properties), which ZooKeeper does not "
                                      "show and Keel cannot read without the cluster's bootstrap servers: topics "
                                      "without an override use it unless a dynamic broker config (ZooKeeper) sets "
                                      "one. Default: min_insync_replicas in keel.toml, else Kafka's 1.")
scope = c[1].text_input("Only topics matching (regex, optional)", key="rr_topics",
                        help="e.g. to leave out scratch topics of replication factor 1: the same as --topic of "
                             "python -m core restart-check")


def _ids(xs) -> str:
    return ", ".join(map(str, xs))


@frame.live_fragment("live-restart")
def live() -> None:
    snap = frame.live_snapshot(conn, in_fragment=True)
    if min_isr_field is not None and min_isr_field.value is None:  # not a whole number: its message is under it
        return
    bd: BrokerDefaults = broker_defaults.defaults(ctx.cluster, snap)
    if not bd.known:
        min_isr = min_isr_field.value if min_isr_field is not None else bd.assumed_min_isr
        if min_isr < 1:
            st.error(f"min.insync.replicas must be at least 1, not {min_isr}.", icon=":material/error:")
            return
        bd = bd.assuming(min_isr, "the value entered above")
    broker_defaults.show_min_isr(min_isr_note(snap, bd))
    pattern = scope.strip() or None
    try:
        if pattern and not matching_topics(snap, pattern):
            st.warning(f"No topic matches {md(pattern)}.", icon=":material/search_off:")
            return
    except KeelError as e:
        st.error(md_text(e), icon=":material/error:")
        return

    def compute(s):
        s = filter_partitions(s, topic_regex=pattern) if pattern else s
        return check_all(s, defaults=bd), restart_plan(s, defaults=bd)
    checks, plan = conn.derived("restart", snap, compute, key=(bd, pattern))
    urp = checks[0].under_replicated if checks else ()

    # --- the wait check ---------------------------------------------------------------------------------
    st.subheader("Wait until under-replicated = 0", anchor=False)
    if urp:
        st.warning(f"**{len(urp):,} partition(s) are under-replicated**: a broker restarted before has not caught up "
                   "yet (or a broker is down). Wait before stopping the next broker. "
                   + md(", ".join(f"{t}-{p}" for t, p in urp[:10])) + (" …" if len(urp) > 10 else ""),
                   icon=":material/hourglass_top:")
    else:
        st.success("No partition is under-replicated: every replica is in sync. The next broker may be checked.",
                   icon=":material/check_circle:")

    # --- per broker -------------------------------------------------------------------------------------
    st.subheader("Is it safe to stop a broker now?", anchor=False)
    rows = []
    for ch in checks:
        moves = ch.moves_by_target()
        rows.append({"Broker": ch.broker, "Rack": ch.rack or "—", "Running": "yes" if ch.registered else "NO",
                     "Controller": "yes" if ch.is_controller else "",
                     "Safe to stop now": "yes" if ch.safe else "NO",
                     "Would go offline": len(ch.goes_offline), "Under min ISR": len(ch.under_min_isr),
                     "Leaderships moving": len(ch.leader_moves),
                     "Moving to": ", ".join(f"{'nobody' if b is None else b}: {n}" for b, n in moves.items()) or "—"})
    df = pd.DataFrame(rows)

    def style(r):
        bad = r["Safe to stop now"] == "NO"
        return ["background-color: rgba(214,39,40,0.14)" if bad else "" for _ in r]
    st.dataframe(df.style.apply(style, axis=1), hide_index=True, key="rr_checks")

    pick = st.selectbox("Details for broker", [ch.broker for ch in checks], key="rr_broker")
    ch = next((x for x in checks if x.broker == pick), None)
    if ch is not None:
        if ch.safe:
            st.success(md_text(ch.summary()), icon=":material/check_circle:")
        else:
            st.error(f"**Broker {ch.broker} is not safe to stop now.**  \n"
                     + "  \n".join(f"• {md(r)}" for r in ch.reasons()), icon=":material/block:")
        risks = [{"Topic": r.topic, "Partition": r.partition, "Problem": what, "Replicas": _ids(r.replicas),
                  "ISR": _ids(r.isr), "min ISR": r.min_isr}
                 for what, items in (("goes offline", ch.goes_offline), ("under min ISR", ch.under_min_isr))
                 for r in items]
        if risks:
            st.dataframe(pd.DataFrame(risks), hide_index=True, key="rr_risks")
        if ch.leader_moves:
            with st.expander(f"{len(ch.leader_moves):,} leadership(s) move", icon=":material/swap_horiz:"):
                st.dataframe(pd.DataFrame([{"Topic": m.topic, "Partition": m.partition,
                                            "New leader": "none (offline)" if m.to is None else str(m.to)}
                                           for m in ch.leader_moves]), hide_index=True, key="rr_moves")
        # a code block, not a code span: markdown escapes would show in a span (they are literal there)
        st.caption("The same check on the command line exits 0 once it is safe (3 while it is not):")
        kafka = f" --bootstrap-server {shlex.quote(ctx.cluster.bootstrap)}" if ctx.cluster.bootstrap else ""
        st.code(f"python -m core restart-check --zk {shlex.quote(ctx.cluster.zk)}{kafka} --broker {ch.broker} "
                "--wait 600", language="bash", wrap_lines=True)

    # --- the order ----------------------------------------------------------------------------------------
    st.subheader("Restart order", anchor=False)
    if not plan.steps:
        st.info("No broker is running.")
        return
    (st.success if plan.keeps_available else st.error)(
        f"Order **{' → '.join(map(str, plan.order))}**: one broker at a time, the controller last"
        + (": every partition stays available." if plan.keeps_available else
           ": some partitions cannot stay available in any order (see the steps)."),
        icon=":material/format_list_numbered:")
    steps = [{"Step": s.position, "Broker": s.broker, "Rack": s.rack or "—",
              "Controller": "yes" if s.is_controller else "",
              "Leaderships moving": len(s.check.leader_moves),
              "Moving to": ", ".join(f"{'nobody' if b is None else b}: {n}"
                                     for b, n in s.check.moves_by_target().items()) or "—",
              "Unavailable meanwhile": len(s.check.goes_offline), "Under min ISR meanwhile": len(s.check.under_min_isr)}
             for s in plan.steps]
    st.dataframe(pd.DataFrame(steps), hide_index=True, key="rr_plan")
    lead = pd.DataFrame({"Broker": list(plan.leaders_before), "Leaders now": list(plan.leaders_before.values()),
                         "Leaders after the restarts": [plan.leaders_after[b] for b in plan.leaders_before]})
    st.bar_chart(lead.set_index("Broker"), stack=False, height=240)
    for note in plan.notes:
        st.caption(f":material/info: {md(note)}")


live()
