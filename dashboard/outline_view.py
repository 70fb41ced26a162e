"""The first content of the Overview and Topics pages while a large cluster's partition states are read (issue 31):
drawn from core.outline.Outline (brokers, controller, topic names, partition counts). Nothing here counts a partition
healthy or says "Live": every health figure reads "reading…" until the states are in."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.outline import Outline
from dashboard import frame, ui
from dashboard.text import md_cells

READING = "reading…"
UNKNOWN = "—"
HEALTH_METRICS = ("Under-replicated", "Unavailable", "Under min ISR", "At min ISR", "Without state", "Problems")


def brokers_table(outline: Outline) -> pd.DataFrame:
    ctrl = outline.controller.broker_id if outline.controller else None
    rows = [{"Broker": b.id, "Status": "registered", "Rack": b.rack or "—", "Host": b.host or "—",
             "Port": str(b.port) if b.port not in (None, -1) else "—", "Role": "controller" if b.id == ctrl else ""}
            for b in outline.brokers]
    return pd.DataFrame(rows, columns=["Broker", "Status", "Rack", "Host", "Port", "Role"])


def overview(outline: Outline) -> None:
    """The Overview of a cluster whose states are being read: size, controller, brokers; health 'reading…'."""
    c = ui.metric_row()
    ui.metric(c, "Brokers registered", f"{len(outline.brokers):,}",
              help="Under /brokers/ids; brokers that hold replicas but are not registered show once the "
                   "assignments are read")
    ctrl = outline.controller
    if ctrl is None or ctrl.broker_id is None or ctrl.broker_id < 0:
        ui.metric(c, "Controller", "none", delta="no active controller", delta_color="red", delta_arrow="off")
    else:
        ui.metric(c, "Controller", f"broker {ctrl.broker_id}",
                  delta=f"epoch {ctrl.epoch}" if ctrl.epoch is not None else "epoch unknown", delta_color="gray",
                  delta_arrow="off")
    ui.metric(c, "Topics", f"{len(outline.topics):,}")
    parts = outline.partition_count
    if parts is None:
        ui.metric(c, "Partitions", UNKNOWN, delta=READING, delta_color="gray", delta_arrow="off")
    else:
        ui.metric(c, "Partitions", f"{parts:,}")

    st.subheader("Partition health", anchor=False)
    frame.reading_progress(outline)
    h = ui.metric_row()
    for label in HEALTH_METRICS:  # a dash, not a count: nothing is known of them yet
        ui.metric(h, label, UNKNOWN, delta=READING, delta_color="gray", delta_arrow="off",
                  help="Known once every partition state is read")

    st.subheader("Brokers", anchor=False)
    st.table(md_cells(brokers_table(outline)), hide_index=True, alt="Brokers of the cluster (outline)")
    st.caption("Replicas and leaders per broker, and brokers down, show once the partition states are read.")


def topics(outline: Outline) -> None:
    """The Topics list of a cluster whose states are being read: names and partition counts, health 'reading…'."""
    frame.reading_progress(outline)
    counts = outline.partitions
    needle = (st.query_params.get("q") or "").strip().lower()
    names = [t for t in outline.topics if needle in t.lower()] if needle else list(outline.topics)
    df = pd.DataFrame({"Topic": names, "Health": READING,
                       "Partitions": [None if counts is None else counts.get(t) for t in names]})
    st.caption(f"{len(df):,} of {len(outline.topics):,} topics"
               + (f" matching “{needle}”" if needle else "")
               + " · health, leaders and ISR show once the partition states are read")
    st.dataframe(df, hide_index=True, key="topic_outline", height=min(420, 38 + 35 * max(len(df), 1)),
                 column_config={"Partitions": st.column_config.NumberColumn(format="%d")})
