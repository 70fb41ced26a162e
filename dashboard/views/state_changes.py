"""State-change logs: upload the state-change.log files of several brokers and see one merged timeline, ordered by
time and filtered by topic, partition and time range (as Kafka's StateChangeLogMerger), each line with its broker;
a partition's timeline as a table and a chart of its state changes (core.state_changes)."""

from __future__ import annotations

import shlex

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.errors import KeelError
from core.state_changes import MAX_FILE_BYTES, label_broker, merge
from dashboard import frame
from dashboard.text import md, md_text, plotly

MAX_ROWS = 5000

ctx = frame.page_context()
st.title("State-change logs", anchor=False)
st.caption("Upload the brokers' `state-change.log` files (Kafka's log directory on each broker); Keel merges them "
           "into one timeline ordered by time, each line with the broker that logged it.")

files = st.file_uploader("state-change.log files", accept_multiple_files=True, key="sc_files",
                         type=None, help="Name them after their broker (broker-3.log, 3-state-change.log, ...) when "
                                         "their lines do not say which broker logged them.")
if not files:
    st.info("Upload one or more state-change.log files.", icon=":material/upload:")
    st.stop()

logs = []
for f in files:
    data = f.getvalue()
    if len(data) > MAX_FILE_BYTES:
        st.error(f"{md(f.name)} is {len(data):,} bytes: Keel reads state-change logs of at most "
                 f"{MAX_FILE_BYTES // 2**20} MiB.", icon=":material/error:")
        st.stop()
    text = data.decode("utf-8", errors="replace") if b"\x00" not in data[:4096] else "\x00"
    logs.append((f.name, text, label_broker(f.name)))

try:
    everything = merge(logs)
except KeelError as e:
    st.error(md_text(e), icon=":material/error:")
    st.stop()
parts = everything.partitions()
topics = sorted({t for t, _ in parts})
st.caption(f"{len(files)} file(s), {everything.lines_read:,} dated line(s), {len(parts):,} partition(s) named, "
           f"broker(s) {md(', '.join(map(str, everything.brokers)) or 'unknown')}")
if not topics:
    st.warning("These logs name no partition.", icon=":material/search_off:")
    st.stop()

c = st.columns([2, 1, 2, 2])
topic = c[0].selectbox("Topic", topics, key="sc_topic")
partition = c[1].selectbox("Partition", ["all"] + [p for t, p in parts if t == topic], key="sc_partition")
start = c[2].text_input("From", key="sc_start", placeholder="2026-11-23 16:20:00,000")
end = c[3].text_input("Until", key="sc_end", placeholder="2026-11-23 16:30:00,000")
try:
    timeline = merge(logs, topic=topic, partitions=None if partition == "all" else [int(partition)],
                     start=start.strip() or None, end=end.strip() or None)
except KeelError as e:
    st.error(md_text(e), icon=":material/error:")
    st.stop()
entries = timeline.entries
st.caption(f"{len(entries):,} line(s)" + (f"; the first {MAX_ROWS:,} shown" if len(entries) > MAX_ROWS else ""))
if not entries:
    st.info("No line in that range.")
    st.stop()

# --- chart: who logged what, when; and the leader over time ------------------------------------------------

fig = go.Figure()
for kind in sorted({e.kind for e in entries}):
    sel = [e for e in entries if e.kind == kind]
    fig.add_scatter(x=[e.time for e in sel], y=[f"broker {e.broker}" if e.broker is not None else plotly(e.source)
                                                for e in sel],
                    mode="markers", name=plotly(kind), marker={"size": 10},
                    text=[plotly(f"{e.topic}-{e.partition}: {e.text[:160]}") for e in sel],
                    hovertemplate="%{x}<br>%{text}<extra>%{fullData.name}</extra>")
fig.update_layout(height=160 + 40 * len({e.broker for e in entries}), margin={"t": 30, "b": 10},
                  title="State changes by the broker that logged them", yaxis={"type": "category"},
                  legend={"orientation": "h"})
st.plotly_chart(fig, key="sc_chart", config={"displayModeBar": False})
if partition != "all":
    led = [e for e in entries if e.leader is not None and e.kind in ("state change", "became leader", "ISR change",
                                                                       "ISR shrink", "no leader")]
    if led:
        lf = go.Figure(go.Scatter(x=[e.time for e in led], y=[e.leader for e in led], mode="lines+markers",
                                  line={"shape": "hv"}, text=[plotly(e.kind) for e in led],
                                  hovertemplate="%{x}<br>leader %{y} (%{text})<extra></extra>"))
        lf.update_layout(height=240, margin={"t": 30, "b": 10}, title=plotly(f"Leader of {topic}-{partition}"),
                         yaxis={"title": "leader (-1: none)", "dtick": 1})
        st.plotly_chart(lf, key="sc_leader_chart", config={"displayModeBar": False})

# --- table ---------------------------------------------------------------------------------------------------

df = pd.DataFrame([{"Time": e.stamp, "Broker": e.broker, "Partition": e.partition, "Kind": e.kind,
                    "Leader": e.leader, "Leader epoch": e.leader_epoch,
                    "ISR": ",".join(map(str, e.isr)) if e.isr is not None else None, "Level": e.level,
                    "Line": e.text, "File": e.source} for e in entries[:MAX_ROWS]])
st.dataframe(df, hide_index=True, key="sc_table", column_config={"Line": st.column_config.TextColumn(width="large")})
merged = "\n".join(f"[broker {e.broker}] {e.text}" if e.broker is not None else e.text for e in entries)
st.download_button("Download the merged timeline", merged + "\n", file_name=f"state-changes-{topic}.log",
                   mime="text/plain", icon=":material/download:", key="sc_download")
st.caption("Same as:")  # a code block: markdown escapes would show in a code span (they are literal there)
st.code(f"python -m core state-changes FILE... --topic {shlex.quote(topic)}"
        + (f" --partition {partition}" if partition != "all" else ""), language="bash", wrap_lines=True)
