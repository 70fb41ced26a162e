"""Issue 23 item 4 on real brokers: what the Admin API returns is text, never a link. A consumer group whose id is an
e-mail address, of a topic whose name is a `www.` name (both legal), on the Consumer groups page: the command to copy
names the group exactly (a code block: in a code span the markdown escapes showed), and no markdown string of the
page holds anything GFM would link (tests/test_dashboard_markdown.autolinks)."""

from __future__ import annotations

import shlex
import uuid

from tests.kafka.realkafka import RealKafka, create_topic, produce


def test_an_email_like_group_id_is_text_on_the_consumer_groups_page(healthy: RealKafka, tmp_path, monkeypatch):
    import streamlit as st
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from tests.test_dashboard_apptest import app, table_with, write_config
    from tests.test_dashboard_markdown import autolinks, markdown_strings

    kafka = healthy
    tag = uuid.uuid4().hex[:6]
    topic, group = f"www.evil-{tag}.example", f"ops@evil-{tag}.example"
    create_topic(kafka, topic, {0: [1, 2], 1: [2, 3]})
    produce(kafka, topic, {0: 1_000, 1: 1_000})
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
    consumer.close()
    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}})
    st.cache_resource.clear()
    try:
        at = app().run()
        at.switch_page("views/consumer_groups.py").run()
        assert not at.exception, at.exception
        at.selectbox(key="cg_group").select(group).run()
        assert not at.exception, at.exception
        assert group in set(table_with(at, "Group", "dataframe")["Group"])
        [command] = [c.value for c in at.code if "consumer-groups" in c.value]
        assert shlex.split(command)[-2:] == ["--group", group]  # as the operator copies it
        linked = {s: autolinks(s) for s in markdown_strings(at) if autolinks(s)}
        assert not linked, f"GFM would link cluster data on Consumer groups: {linked}"
    finally:
        st.cache_resource.clear()
