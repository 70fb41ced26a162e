"""The topic page's "Messages" panel: peek at a partition (the last N, from an offset, from a time) through the
brokers, for those with the `data` permission (core.policy.access.check_data); every peek is recorded in the audit
store by core.kafka.peek.peek, which the page calls at click time with keel.toml as it is then.

Messages are data written by anyone who can produce: they are drawn as text only, in st.dataframe cells and
st.code blocks, never through markdown or HTML (an `<script>` or `**bold**` value shows as typed).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import peek as model
from core.errors import KeelError
from core.model import Topic
from core.policy import access, gate
from core.policy.config import ClusterConfig, KeelConfig
from dashboard import actions, frame, identity
from dashboard.text import md, md_text

RESULT = "peek_result"
MODES = {"Last N messages": model.LAST, "From an offset": model.OFFSET, "From a time": model.TIME}


def panel(cfg: KeelConfig, cluster: ClusterConfig, topic: Topic) -> None:
    with st.container(key="peek_box"), st.expander(":material/mail: Messages (peek)",
                                                     expanded=st.session_state.get(RESULT, {}).get("topic")
                                                     == topic.name):
        if not cluster.bootstrap:
            st.caption(f"Peeking reads through the brokers: add bootstrap = \"host:port,...\" to cluster "
                       f"{md(cluster.name)} in keel.toml.")
            return
        ok, why = access.may_read_data(identity.session_identity(), cfg, cluster.name, exposed=identity.exposed())
        if not ok:
            st.caption(f":material/lock: Reading messages needs the data permission, which operator and admin do not "
                       f"include ({md(why)}).")
            return
        _form(cluster, topic)
        _show(topic)


def _form(cluster: ClusterConfig, topic: Topic) -> None:
    with st.form(key=f"peek_form::{topic.name}", border=False):
        c1, c2, c3 = st.columns([2, 1, 2], vertical_alignment="bottom")
        how = c1.radio("Read", list(MODES), horizontal=True, key="peek_mode")
        partition = c2.selectbox("Partition", [p.partition for p in topic.partitions], key="peek_partition")
        count = c3.number_input("Messages (at most)", min_value=1, max_value=model.MAX_MESSAGES,
                                value=model.DEFAULT_MESSAGES, step=1, key="peek_count")
        c4, c5, c6 = st.columns([1, 2, 1], vertical_alignment="bottom")
        offset = c4.number_input("From offset", min_value=0, value=0, step=1, key="peek_offset")
        when = c5.text_input("From time", key="peek_time", placeholder="2026-11-26T10:00:00Z (UTC unless a zone "
                             "is given)")
        kib = c6.number_input("At most KiB", min_value=1, max_value=model.MAX_BYTES // 1024,
                              value=model.DEFAULT_BYTES // 1024, step=64, key="peek_kib")
        clicked = st.form_submit_button("Peek", icon=":material/visibility:", key="peek_go")
    if not clicked:
        return
    mode = MODES[how]
    st.session_state.pop(RESULT, None)
    try:
        req = model.request(topic.name, int(partition), last=int(count) if mode == model.LAST else None,
                            offset=int(offset) if mode == model.OFFSET else None,
                            from_time=when if mode == model.TIME else None, max_messages=int(count),
                            max_bytes=int(kib) * 1024)
        result = _peek(cluster, req)
    except KeelError as e:
        st.session_state[RESULT] = {"topic": topic.name, "error": md_text(e)}
        return
    st.session_state[RESULT] = {"topic": topic.name, "result": result}


def _peek(cluster: ClusterConfig, req: model.PeekRequest) -> model.PeekResult:
    """At click time: keel.toml as it is now (a permission taken away refuses a page drawn before)."""
    from core.kafka import peek as reading

    now = frame.config()
    if isinstance(now, KeelError):
        raise now
    timeout = min(10.0, cluster.connect_timeout * 2)
    return reading.peek(identity.session_identity(), now, gate.Target.named(cluster.name), req,
                        store=actions.store(), exposed=identity.exposed(),
                        reader=lambda r: reading.read(cluster.bootstrap, r, security=cluster.kafka_security,
                                                      timeout=timeout))


def _show(topic: Topic) -> None:
    got = st.session_state.get(RESULT)
    if not got or got.get("topic") != topic.name:
        return
    if "error" in got:
        st.error(got["error"], icon=":material/block:")
        return
    result: model.PeekResult = got["result"]
    req = result.request
    st.caption(f"Partition {req.partition}: offsets {result.earliest:,} to {max(result.latest - 1, 0):,} · "
               f"{md(result.summary())} · recorded in History")
    for note in result.notes:
        st.info(md(note), icon=":material/info:")
    if result.truncated:
        st.warning(f"The message was cut to {req.max_bytes:,} bytes.", icon=":material/content_cut:")
    elif result.stopped:
        following = result.messages[-1].offset + 1 if result.messages else result.start
        st.caption(f"Stopped at {md(result.stopped)}; read on from offset {following:,}.")
    if not result.messages:
        return
    shown = model.rows(result.messages)
    # st.dataframe: cells are plain text, whatever the message holds
    st.dataframe(pd.DataFrame([{"Offset": r["offset"], "Timestamp": r["timestamp"], "Type": r["timestamp_type"],
                                "Key": r["key"], "Value": r["value"],
                                "Headers": ", ".join(f"{h['key']}={h['value']}" for h in r["headers"]),
                                "Bytes": r["bytes"]} for r in shown]),
                 hide_index=True, key="peek_table",
                 column_config={"Value": st.column_config.TextColumn(width="large")})
    pick = st.selectbox("Message", [r["offset"] for r in shown], key="peek_pick",
                        format_func=lambda o: f"offset {o:,}")
    row = next(r for r in shown if r["offset"] == pick)
    st.caption(f"Key ({row['key_format']})")
    st.code(row["key"], language=None, wrap_lines=True)
    st.caption(f"Value ({row['value_format']})")
    st.code(row["value"], language="json" if row["value_format"] == "json" else None, wrap_lines=True)
    if row["headers"]:
        st.caption("Headers")
        st.code("\n".join(f"{h['key']}: {h['value']}" for h in row["headers"]), language=None, wrap_lines=True)
