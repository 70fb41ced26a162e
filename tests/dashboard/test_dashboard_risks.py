"""A topic nobody can write to needs its own confirmation in the browser (issue 12, item 5).

min.insync.replicas above the replication factor: Kafka accepts it, and every acks=all producer then fails. The
Create topic page and the topic config editor show the risk with st.warning and a box "I understand: <risk>"; the
write is disabled until it is ticked, passes exactly the confirmed risk texts, and the engine refuses (nothing
written) when they do not cover the risks of the draft it re-computes. Against a real ZooKeeper with the sandbox's
controller emulator.
"""

from __future__ import annotations

from core import zkformat as zf
from core.topics import draft_alter_config, draft_create_topic
from dashboard.text import md
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    by_prefix,
    errors,
    ok,
    open_page,
    set_config_rows,
)
from tests.dashboard.test_dashboard_apptest import texts  # noqa: F401
from tests.support.sandbox_helpers import wait_until


def risk_boxes(at, prefix: str):
    return [c for c in at.checkbox if (c.key or "").startswith(prefix)]


def test_create_topic_with_min_isr_above_rf_needs_the_risk_confirmed(small, zk_connect, tmp_path, monkeypatch,
                                                                      store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("unwritable").run()
    at.text_input(key="ct_partitions").input("3")
    at.text_input(key="ct_rf").input("3")
    set_config_rows(at, "ct_config", [{"Key": "min.insync.replicas", "Value": "4"}])
    at.run()
    ok(at)
    [risk] = draft_create_topic(small.snapshot(), "unwritable", 3, 3, config={"min.insync.replicas": "4"}).risks
    assert "min.insync.replicas=4 is above the replication factor 3 of topic unwritable" in risk
    assert risk in texts(at.warning)  # shown before the confirmation
    [box] = risk_boxes(at, "ct_risk_")
    assert box.label == f"I understand: {md(risk)}" and not box.value

    # the risk confirmed but the placement not reviewed, then reviewed but the risk not confirmed: no Create
    before = dump_tree(small.session)
    risk_boxes(at, "ct_risk_")[0].check().run()
    assert at.button(key="ct_create").disabled
    risk_boxes(at, "ct_risk_")[0].uncheck()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert at.button(key="ct_create").disabled  # AppTest, like a browser, cannot click it
    assert dump_tree(small.session) == before and store.actions("demo") == []

    # confirmed: written, with the config as asked
    risk_boxes(at, "ct_risk_")[0].check().run()
    assert not at.button(key="ct_create").disabled
    at.button(key="ct_create").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert "created topic unwritable" in texts(at.success).lower()
    assert zf.decode_config(small.session.get(zf.topic_config_path("unwritable")).data, "") == \
        {"min.insync.replicas": "4"}


def test_create_topic_without_risk_has_no_risk_box(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("writable").run()
    at.text_input(key="ct_rf").input("3")
    set_config_rows(at, "ct_config", [{"Key": "min.insync.replicas", "Value": "2"}])
    at.run()
    ok(at)
    assert not risk_boxes(at, "ct_risk_") and "min.insync.replicas" not in texts(at.warning)
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    at.button(key="ct_create").click().run()
    assert not at.error, errors(at)
    assert small.session.exists(zf.topic_path("writable"))


def test_alter_config_to_min_isr_above_rf_needs_the_risk_confirmed(small, zk_connect, tmp_path, monkeypatch, store):
    snap = small.snapshot()
    topic = next(t for t in snap.topics if not t.name.startswith("__") and t.replication_factor < 5)
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    at.selectbox(key="topic").select(topic.name).run()
    editor = by_prefix(at.data_editor, f"cfg_edit::{topic.name}::")
    set_config_rows(at, editor.key, [{"Key": "min.insync.replicas", "Value": "5"}])
    at.run()
    ok(at)
    [risk] = draft_alter_config(snap, topic.name, set={"min.insync.replicas": "5"}).risks
    assert f"min.insync.replicas=5 is above the replication factor {topic.replication_factor}" in risk
    assert risk in texts(at.warning)
    [box] = risk_boxes(at, "cfg_risk::")
    assert box.label == f"I understand: {md(risk)}"

    before = dump_tree(small.session)
    by_prefix(at.checkbox, "cfg_confirm::").check().run()
    assert at.button(key="cfg_apply").disabled
    assert dump_tree(small.session) == before and store.actions("demo") == []

    risk_boxes(at, "cfg_risk::")[0].check().run()
    assert not at.button(key="cfg_apply").disabled
    at.button(key="cfg_apply").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert "altered config of" in texts(at.success).lower()
    config = zf.decode_config(small.session.get(zf.topic_config_path(topic.name)).data, "")
    assert config["min.insync.replicas"] == "5"
    wait_until(lambda: small.snapshot().topic(topic.name).config.get("min.insync.replicas") == "5")
