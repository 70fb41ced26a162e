"""ZooKeeper -> KRaft migration (issue 27): the phase as Kafka's docs name it, what Kafka is doing, the next step,
whether a revert is possible and the docs' steps for it, readiness before starting (a verdict and a fix per item),
and the timeline of the phases Keel has seen. Draws what core.migration_phases / core.migration_readiness decide."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.audit.migration_timeline import note_phase, timeline
from core.errors import KeelError
from core.migration_readiness import parse_controller_ids
from dashboard import actions, frame, migration_banner
from dashboard.text import md, md_text

READY = "mig_readiness"  # (controller ids text, checks, flags)

ctx = frame.page_context()
conn, cluster = ctx.conn, ctx.cluster
st.title("ZooKeeper → KRaft migration", anchor=False)
st.caption(f"Cluster **{md(cluster.name)}** · the phase, the next step and the way back, as Kafka 3.9's "
           "documentation describes them")
snap = frame.live_snapshot(conn, in_fragment=False)

held = st.session_state.get(READY)
phase = migration_banner.phase(conn, held[2] if held else None)
if phase is None:
    st.info("Waiting for the cluster's first snapshot.", icon=":material/hourglass_empty:")
    st.stop()

try:  # the timeline: one row per phase change Keel reads
    note_phase(actions.store(), cluster.name, phase.key, phase.name)
except KeelError as e:
    st.caption(f"The timeline is not recorded: {md_text(e)}")

st.subheader(phase.name, anchor=False)
st.markdown(f"**What Kafka is doing:** {md_text(phase.kafka_does)}")
st.markdown(f"**Next step:** {md_text(phase.next_step)}")
for note in phase.notes:
    st.caption(f":material/info: {md_text(note)}")
if phase.brokers_with_flag or phase.brokers_without_flag:
    st.markdown(f"Brokers with the migration settings: **{md(', '.join(map(str, phase.brokers_with_flag)) or 'none')}**"
                f" · not yet: **{md(', '.join(map(str, phase.brokers_without_flag)) or 'none')}**")

if phase.rollback_possible:
    st.success(f"**Rollback possible** — Kafka's \"Reverting to ZooKeeper mode\", row "
               f"\"{md(phase.rollback_from or '')}\":\n\n"
               + "\n".join(f"{i}. {md_text(s)}" for i, s in enumerate(phase.rollback_steps, 1)),
               icon=":material/undo:")
elif phase.key == "finalized":  # the normal state of a KRaft cluster (migrated, or KRaft from the start): no alarm
    st.info("Nothing to roll back: the cluster runs in KRaft mode.", icon=":material/check_circle:")
else:
    st.error("**Rollback not possible** from this phase.", icon=":material/block:")

st.subheader("Readiness", anchor=False)
left, right = st.columns(2)
ids_text = left.text_input("KRaft controller ids (node.id)", key="mig_controller_ids", placeholder="3000,3001,3002",
                           help="Checked against every broker id: brokers and controllers share one id namespace.")
controllers = right.text_input("KRaft controllers' address", key="mig_controllers",
                               placeholder="controller1:9093,controller2:9093",
                               help="Their controller listener: the quorum is asked of them (ZooKeeper-mode brokers "
                                    "cannot tell it), as kafka-metadata-quorum.sh --bootstrap-controller does.")
if st.button("Check readiness", key="mig_check"):
    try:
        ids = parse_controller_ids(ids_text)
        checks, flags = migration_banner.collect_readiness(conn, ids, controllers)
    except KeelError as e:
        st.error(md_text(e), icon=":material/error:")
    else:
        st.session_state[READY] = (ids_text, checks, flags)
        st.rerun()
held = st.session_state.get(READY)
if held:
    _, checks, _ = held
    # text marks, not emoji: a server's browser without an emoji font draws those as boxes
    verdict = {"ok": "✓ ok", "fail": "✗ FAIL", "unknown": "? unknown"}
    # a static table: the details and fixes are sentences, wrapped in full at any width (a data grid cuts them)
    # (three columns: the fix goes under the detail, so that it keeps a readable width at 900 px)
    st.table(pd.DataFrame([{"Check": c.title, "Verdict": verdict[c.verdict],
                            "Detail and fix": md(c.detail) + (f" **Fix:** {md(c.fix)}" if c.verdict != "ok" and c.fix
                                                              else "")}
                           for c in checks]).set_index("Check"))
else:
    st.caption("Reads ZooKeeper now and, through the cluster's `bootstrap`, the brokers' versions, settings, log "
               "directories and quorum; the quorum from the controllers when their address is given.")

# --- drift (another part of issue 27): drawn here when its module is installed -------------------------------
try:
    from dashboard.migration_drift import drift_section
except ImportError:
    drift_section = None
if drift_section is not None:
    drift_section(ctx)

st.subheader("Timeline", anchor=False)
try:
    seen = timeline(actions.store(), cluster.name)
except KeelError as e:
    st.error(md_text(e), icon=":material/error:")
else:
    st.dataframe(pd.DataFrame([{"Seen at": s.at, "Phase": s.name} for s in seen]), hide_index=True,
                 use_container_width=True, key="mig_timeline")
