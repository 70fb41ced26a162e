"""Issue 24, items 3 and 4, through Streamlit's AppTest against a real ZooKeeper (the browser side is in
tests/e2e/test_e2e_topic_config.py, headless Chromium).

3. The overrides editor's key picker offers Kafka's topic config keys in an order where a key comes before every key
   containing it: the browser filters them by substring and Enter / Tab takes the first shown.
4. After a topic's first override is applied, the outcome is drawn in the Edit config tab (not in Add partitions), and
   the tabs keep their identity although an expander now appears above them: the browser keeps the open tab by it.
"""

from __future__ import annotations

import json

import pytest
from streamlit.proto.Block_pb2 import Block as BlockProto

from core.topics import TOPIC_CONFIGS
from dashboard.actions import exact_match_first
from tests.support.sandbox_helpers import wait_until
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    by_prefix,
    errors,
    ok,
    open_page,
    set_config_rows,
)
from tests.dashboard.test_dashboard_apptest import texts


def first_match(options: list[str], typed: str) -> str:
    """What react-select's default filter (case-insensitive substring) shows first for `typed`."""
    return next(o for o in options if typed.lower() in o.lower())


@pytest.mark.parametrize("typed", sorted(TOPIC_CONFIGS))
def test_every_key_typed_in_full_is_the_first_match(typed):
    assert first_match(exact_match_first(TOPIC_CONFIGS), typed) == typed


def test_the_order_is_alphabetical_but_for_keys_that_others_contain():
    order = exact_match_first(TOPIC_CONFIGS)
    assert sorted(order) == sorted(TOPIC_CONFIGS)
    assert order.index("retention.ms") < order.index("delete.retention.ms") < order.index("local.retention.ms")
    assert order.index("retention.bytes") < order.index("local.retention.bytes")
    assert [k for k in order if "retention" not in k] == sorted(k for k in TOPIC_CONFIGS if "retention" not in k)
    # any keys: each before every key containing it, however deep
    assert exact_match_first(["xabcx", "abc", "ab", "b", "a", "c"]) == ["a", "b", "ab", "c", "abc", "xabcx"]
    for typed in ("a", "b", "c", "ab", "abc", "xabcx"):
        assert first_match(exact_match_first(["xabcx", "abc", "ab", "b", "a", "c"]), typed) == typed


def _tab_container(at):
    """The block holding the topic's action tabs."""
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if isinstance(proto, BlockProto) and proto.WhichOneof("type") == "tab_container":
            return node
    raise AssertionError("no tabs drawn")


def test_the_editors_key_options_are_in_that_order(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    topic = next(t for t in small.snapshot().topics if not t.name.startswith("_"))
    at.selectbox(key="topic").select(topic.name).run()
    ok(at)
    editor = by_prefix(at.data_editor, f"cfg_edit::{topic.name}::")
    columns = json.loads(editor.proto.columns)
    options = columns["Key"]["type_config"]["options"]
    assert first_match(options, "retention.ms") == "retention.ms"
    assert options == exact_match_first(set(TOPIC_CONFIGS) | set(topic.config))


def test_the_first_override_is_reported_in_the_edit_config_tab(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py", role="operator")
    snap = small.snapshot()
    topic = next((t for t in snap.topics if not t.name.startswith("_") and not t.config), None)
    assert topic is not None, "the sandbox has a topic without overrides"
    name = topic.name
    at.selectbox(key="topic").select(name).run()
    ok(at)
    tabs = _tab_container(at)
    assert [t.label for t in at.tabs] == [":material/add: Add partitions", ":material/tune: Edit config",
                                          ":material/delete: Delete"]
    assert tabs._block_id, "the tabs carry no key: the browser cannot keep the open one when they are redrawn"
    assert not [e for e in at.expander if "config override" in e.label]

    editor = by_prefix(at.data_editor, f"cfg_edit::{name}::")
    set_config_rows(at, editor.key, [{"Key": "segment.ms", "Value": "3600000"}])
    at.run()
    ok(at)
    by_prefix(at.checkbox, "cfg_confirm::").check().run()
    at.button(key="cfg_apply").click().run()
    ok(at)
    assert not at.error, errors(at)
    wait_until(lambda: small.snapshot().topic(name).config == {"segment.ms": "3600000"}, timeout=10)

    # the page as drawn after the write: an expander above the tabs, the outcome in Edit config
    assert [e.label for e in at.expander if "config override" in e.label] == ["1 config override(s)"]
    assert _tab_container(at)._block_id == tabs._block_id
    grow, configure, _ = at.tabs
    assert "altered config of" in texts(configure.success).lower() and "action #" in texts(configure.success)
    assert not grow.success
    # Add partitions is as it always is: one more than the current count, nothing carried over from the config edit
    assert grow.text_input[0].value == str(len(topic.partitions) + 1)
    at.run()  # a later run (the 2 s live update) keeps both
    assert _tab_container(at)._block_id == tabs._block_id
    assert "altered config of" in texts(at.tabs[1].success).lower()
