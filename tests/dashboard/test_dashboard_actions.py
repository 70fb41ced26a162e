"""The dashboard's write actions through Streamlit's AppTest, against a real ZooKeeper.

Create topic, the topic view's actions (add partitions, edit config, delete), History and Leaders. The sandbox's
controller emulator runs in-process where the test needs a controller to act (partition states, elections,
deletions); the refusal of a second election uses a hand-written tree with no controller, so the first
election's node stays put. Every refusal compares a dump of the tree before and after.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from core import elections
from core import zkformat as zf
from core.assignment import assign_replicas, brokers_for_mode
from sandbox.seed import SandboxSpec
from core.errors import TooLargeError
from core.topics import MAX_NEW_PARTITIONS, draft_add_partitions, draft_create_topic
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree
from tests.support.sandbox_helpers import Sandbox, wait_until
from tests.dashboard.test_dashboard_apptest import (  # noqa: F401
    DEMO,
    app,
    live_connection,
    settle,
    texts,
    write_config,
)

ACTOR = "alice@keel-test"
SPEC = SandboxSpec(brokers=5, racks=3, topics=6, seed=5)


# --- helpers (fixtures: tests/dashboard/conftest.py) --------------------------------------------------


def open_page(sb: Sandbox, zk_connect, tmp_path, monkeypatch, page: str, **config):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}}, **config)
    at = app().run()
    assert not at.exception, at.exception
    settle(sb, live_connection("demo"), lambda s: True)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def ok(at) -> None:
    assert not at.exception, at.exception


def by_prefix(widgets, prefix: str):
    found = [w for w in widgets if (w.key or "").startswith(prefix)]
    assert len(found) == 1, f"{len(found)} widgets with a key starting {prefix!r}: {[w.key for w in widgets]}"
    return found[0]


FRAMES = {  # st.dataframe without selection carries no key in AppTest: tables are found by their columns
    "ct_preview": ["Partition", "Leader", "Replicas", "Racks", "Distinct racks"],
    "ap_preview": ["Partition", "Leader", "Replicas"],
    "cfg_diff": ["Key", "Change", "Current", "New", "Kafka default"],
    "ld_candidates": ["Topic", "Partition", "Leader", "Preferred", "Eligible", "Reason"],
    "ld_reasons": ["Why not", "Partitions"],
    "ld_outcome": ["Topic", "Partition", "Outcome", "Leader", "Detail"],
}


def frame(at, name: str):
    """The (first) table drawn with the columns of `name`; the history table has a key (it is selectable)."""
    if name == "history_table":
        return at.dataframe(key=name).value
    for t in at.dataframe:
        if t.editing_mode == "read_only" and list(t.value.columns) == FRAMES[name]:
            return t.value
    raise AssertionError(f"no table {name}; have {[list(t.value.columns) for t in at.dataframe]}")


def preview_assignment(at, key: str = "ct_preview") -> dict[int, tuple[int, ...]]:
    df = frame(at, key)
    return {int(r["Partition"]): tuple(int(b) for b in r["Replicas"].split(", ")) for _, r in df.iterrows()}


def written_assignment(session: ZkSession, topic: str) -> dict[int, tuple[int, ...]]:
    return dict(zf.decode_topic(topic, session.get(zf.topic_path(topic)).data).partitions)


def set_config_rows(at, key: str, added: list[dict], edited: dict | None = None, deleted: list[int] = ()) -> None:
    at.session_state[key] = {"edited_rows": edited or {}, "added_rows": added, "deleted_rows": list(deleted)}


def errors(at) -> str:
    return texts(at.error)


# --- create topic ------------------------------------------------------------------------------------


def test_create_topic_with_fixed_start_index_writes_the_preview(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    assert at.title[0].value == "Create topic"
    assert at.button(key="ct_create").disabled  # no name yet

    at.text_input(key="ct_name").input("payments.v2").run()
    ok(at)
    assert "could collide" in texts(at.warning)  # kafka-topics' '.'/'_' warning, as you type
    at.text_input(key="ct_partitions").input("12")
    at.text_input(key="ct_rf").input("3")
    at.text_input(key="ct_fixed").input("0")
    set_config_rows(at, "ct_config", [{"Key": "retention.ms", "Value": " 3600000 "},
                                      {"Key": "cleanup.policy", "Value": "compact, delete"}])
    at.run()
    ok(at)
    assert not at.error, errors(at)

    snap = demo.snapshot()
    alive = [b for b in snap.brokers if b.alive]
    expected = {p: tuple(r) for p, r in assign_replicas(brokers_for_mode(alive, "enforced"), 12, 3, 0).items()}
    preview = preview_assignment(at)
    assert preview == expected
    assert "Rack spread: every partition has replicas on 3 different racks" in texts(at.success)
    [command] = [c.value for c in at.code if c.value.startswith("kafka-topics.sh --bootstrap-server ")]
    assert command.startswith("kafka-topics.sh --bootstrap-server ") and "--topic payments.v2" in command
    assert "--replica-assignment " + ",".join(":".join(map(str, expected[p])) for p in range(12)) in command
    assert "--config cleanup.policy=compact,delete --config retention.ms=3600000" in command
    assert len(at.get("plotly_chart")) == 2

    assert at.button(key="ct_create").disabled  # not confirmed yet
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert not at.button(key="ct_create").disabled
    at.button(key="ct_create").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert "created topic payments.v2: 12 partitions, replication factor 3, 2 config overrides" \
        in texts(at.success).lower()

    assert written_assignment(demo.session, "payments.v2") == preview == expected
    assert zf.decode_config(demo.session.get(zf.topic_config_path("payments.v2")).data, "") == \
        {"retention.ms": "3600000", "cleanup.policy": "compact,delete"}
    [action] = store.actions("demo")
    assert (action.kind, action.target, action.status, action.actor) == ("create-topic", "payments.v2", "applied",
                                                                         ACTOR)
    assert at.text_input(key="ct_name").value == ""  # ready for the next one
    # the live view has it (the page waited for the watch)
    assert live_connection("demo").snapshot().topic("payments.v2") is not None


def test_create_topic_seeded_random_is_stable_and_written_exactly(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("clicks").run()
    at.text_input(key="ct_partitions").input("20")
    at.text_input(key="ct_rf").input("2")
    at.selectbox(key="ct_rack_mode").select("disabled").run()
    ok(at)
    first = preview_assignment(at)
    seed = at.session_state["ct_seed"]
    at.run()
    at.run()
    assert preview_assignment(at) == first  # reruns do not reshuffle
    alive = [b for b in demo.snapshot().brokers if b.alive]
    expected = assign_replicas(brokers_for_mode(alive, "disabled"), 20, 2, rng=random.Random(seed))
    assert first == {p: tuple(r) for p, r in expected.items()}

    at.button(key="ct_reshuffle").click().run()
    assert at.session_state["ct_seed"] != seed
    shuffled = preview_assignment(at)
    seed = at.session_state["ct_seed"]
    assert shuffled == {p: tuple(r) for p, r in assign_replicas(brokers_for_mode(alive, "disabled"), 20, 2,
                                                                   rng=random.Random(seed)).items()}

    by_prefix(at.checkbox, "ct_confirm_").check().run()
    at.button(key="ct_create").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert written_assignment(demo.session, "clicks") == shuffled


def test_create_topic_explicit_assignment(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    alive = sorted(b.id for b in demo.snapshot().brokers if b.alive)
    a, b, c = alive[:3]
    at.text_input(key="ct_name").input("explicit").run()
    at.radio(key="ct_placement").set_value("Explicit replica assignment").run()
    at.text_area(key="ct_assignment").input(f"{a}:{b},{b}:{c},{c}:{a}").run()
    ok(at)
    assert preview_assignment(at) == {0: (a, b), 1: (b, c), 2: (c, a)}
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    at.button(key="ct_create").click().run()
    assert not at.error, errors(at)
    assert written_assignment(demo.session, "explicit") == {0: (a, b), 1: (b, c), 2: (c, a)}


@pytest.mark.parametrize("name,fields,rows,message", [
    ("bad name!", {}, [], "Topic name is invalid: 'bad name!' contains one or more characters other than"),
    ("..", {}, [], "Topic name is invalid: '..' is not allowed"),
    ("too-many", {"ct_rf": 9}, [], "Replication factor: 9 larger than available brokers: 5."),
    ("bad-config", {}, [{"Key": "retention.ms", "Value": "abc"}],
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ("bad-range", {}, [{"Key": "min.insync.replicas", "Value": "0"}],
     "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("lags", {}, [{"Key": "min.compaction.lag.ms", "Value": "10"}, {"Key": "max.compaction.lag.ms", "Value": "5"}],
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
    ("__consumer_offsets", {}, [], "is a Kafka internal topic"),
])
def test_create_topic_bad_input_shows_the_error_and_writes_nothing(demo, zk_connect, tmp_path, monkeypatch, store,
                                                                   name, fields, rows, message):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    before = dump_tree(demo.session)
    at.text_input(key="ct_name").input(name)
    for key, value in fields.items():
        at.text_input(key=key).input(str(value))
    if rows:
        set_config_rows(at, "ct_config", rows)
    at.run()
    ok(at)
    assert message in errors(at)
    if rows and "conflict" not in message:
        assert f"**{rows[0]['Key']}**" in errors(at)  # the inline error names the key
    assert at.button(key="ct_create").disabled
    assert not [c for c in at.checkbox if (c.key or "").startswith("ct_confirm_")]
    assert dump_tree(demo.session) == before
    assert store.actions() == []


def test_create_topic_existing_name_and_explicit_dead_broker(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    before = dump_tree(demo.session)
    existing = next(t.name for t in demo.snapshot().topics if not t.name.startswith("__"))
    at.text_input(key="ct_name").input(existing).run()
    assert f"Topic '{existing}' already exists." in errors(at)
    dead = demo.seed.down[0]
    alive = sorted(b.id for b in demo.snapshot().brokers if b.alive)
    at.text_input(key="ct_name").input("to-a-dead-broker")
    at.radio(key="ct_placement").set_value("Explicit replica assignment").run()
    at.text_area(key="ct_assignment").input(f"{alive[0]}:{dead}").run()
    assert f"Unknown broker(s) in replica assignment: {dead}." in errors(at)
    at.text_area(key="ct_assignment").input(f"{alive[0]}:{alive[0]}").run()
    assert "Partition replica lists may not contain duplicate entries" in errors(at)
    assert dump_tree(demo.session) == before and store.actions() == []


def test_create_topic_bounds_the_partitions_before_any_work(small, zk_connect, tmp_path, monkeypatch, store):
    """Issue 12, item 6: 10,000,000 partitions are refused at once with the engine's message (the limit and why), and
    an invalid count never leaves the previous valid one in effect: no preview of it, no Create."""
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    before = dump_tree(small.session)
    at.text_input(key="ct_name").input("huge")
    at.text_input(key="ct_partitions").input("12").run()
    assert len(preview_assignment(at)) == 12
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert not at.button(key="ct_create").disabled

    started = time.monotonic()
    at.text_input(key="ct_partitions").input("10,000,000").run()
    elapsed = time.monotonic() - started
    ok(at)
    assert elapsed < 3, f"the page took {elapsed:.1f} s over 10,000,000 partitions"
    with pytest.raises(TooLargeError) as refused:
        draft_create_topic(small.snapshot(), "huge", 10_000_000, 3)
    assert str(refused.value) in errors(at) and f"{MAX_NEW_PARTITIONS:,}" in errors(at)

    def nothing_of_the_earlier_draft():
        assert at.button(key="ct_create").disabled
        assert not [c for c in at.checkbox if (c.key or "").startswith("ct_confirm_")]
        assert not at.metric and not [t for t in at.dataframe if "Distinct racks" in t.value.columns]
        assert not [c for c in at.code if "kafka-topics.sh" in c.value]  # no line for 12 partitions either

    nothing_of_the_earlier_draft()
    for field, value, message in (("ct_partitions", 0, "The partitions must be greater than 0"),
                                  ("ct_partitions", -3, "The partitions must be greater than 0"),
                                  ("ct_partitions", MAX_NEW_PARTITIONS + 1, f"{MAX_NEW_PARTITIONS + 1:,} partitions"),
                                  ("ct_rf", 0, "The replication factor must be between 1 and 32767 inclusive"),
                                  ("ct_fixed", -2, "The fixed start index must be -1 (random) or at least 0"),
                                  # typed text that is no number, or one above JavaScript's 2**53 - 1: never the
                                  # earlier count (a number input kept it)
                                  ("ct_partitions", "twelve", "Partitions must be a whole number, not 'twelve'"),
                                  ("ct_partitions", 10 ** 20, "The partitions must be at most 2147483647"),
                                  ("ct_rf", "", "Replication factor is empty: enter a whole number"),
                                  ("ct_fixed", "0.5", "Fixed start index must be a whole number, not '0.5'")):
        at.text_input(key="ct_partitions").input("12")
        at.text_input(key="ct_rf").input("3")
        at.text_input(key="ct_fixed").input("-1").run()
        assert len(preview_assignment(at)) == 12  # valid again
        at.text_input(key=field).input(str(value)).run()
        ok(at)
        assert message in errors(at), (field, value, errors(at))
        nothing_of_the_earlier_draft()

    # an explicit assignment longer than any topic znode ZooKeeper takes: refused unparsed
    at.radio(key="ct_placement").set_value("Explicit replica assignment").run()
    started = time.monotonic()
    at.text_area(key="ct_assignment").input(",".join(["1:2:3"] * 200_000)).run()
    assert time.monotonic() - started < 3
    assert "1 MiB request limit" in errors(at)
    nothing_of_the_earlier_draft()
    assert dump_tree(small.session) == before and store.actions() == []


def test_add_partitions_bounded_before_any_work(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    topic = next(t for t in small.snapshot().topics if not t.name.startswith("__"))
    current = len(topic.partitions)
    at.selectbox(key="topic").select(topic.name).run()
    field = f"ap_total::{topic.name}::{current}"
    started = time.monotonic()
    at.text_input(key=field).input("10,000,000").run()
    ok(at)
    assert time.monotonic() - started < 3
    assert f"more than Keel writes in one request (at most {MAX_NEW_PARTITIONS:,})" in errors(at)
    assert not [b for b in at.button if b.key == "ap_apply"]
    at.text_input(key=field).input(str(current)).run()  # not an increase: Kafka's message, not the old value
    assert "which is higher than the requested" in errors(at) or "Topic already has" in errors(at)
    assert not [b for b in at.button if b.key == "ap_apply"]


def test_create_is_revalidated_against_live_state(small, zk_connect, tmp_path, monkeypatch, store):
    """A preview made before a broker died is refused at Create (the engine re-reads live state)."""
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("late")
    at.text_input(key="ct_partitions").input("10")
    at.text_input(key="ct_rf").input("3")
    at.selectbox(key="ct_rack_mode").select("disabled")
    at.text_input(key="ct_fixed").input("0").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    preview = preview_assignment(at)
    victim = preview[0][1]
    small.stop_broker(victim)
    settle(small, live_connection("demo"), lambda s: not s.broker_by_id[victim].alive)
    before = dump_tree(small.session, "/brokers/topics")
    at.button(key="ct_create").click().run()  # the click carries the draft that was on screen
    ok(at)
    assert f"Unknown broker(s) in replica assignment: {victim}." in errors(at)
    assert "earlier preview" in errors(at)  # the page has redrawn a new placement without the dead broker
    assert dump_tree(small.session, "/brokers/topics") == before
    assert victim not in {b for reps in preview_assignment(at).values() for b in reps}
    assert store.actions() == []  # refused before anything was recorded


@pytest.mark.parametrize("role,read_only,why", [("viewer", False, "only an operator may write"),
                                                ("operator", True, "this Keel instance is read-only")])
def test_create_topic_needs_the_operator_role(demo, zk_connect, tmp_path, monkeypatch, store, role, read_only, why):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py", role=role, read_only=read_only)
    before = dump_tree(demo.session)
    at.text_input(key="ct_name").input("not-allowed").run()
    ok(at)
    assert preview_assignment(at)  # the preview is for everyone
    button = at.button(key="ct_create")
    assert button.disabled and why in button.help
    assert why in texts(at.caption)
    assert by_prefix(at.checkbox, "ct_confirm_").disabled
    assert dump_tree(demo.session) == before and store.actions() == []


def test_a_page_opened_before_the_instance_went_read_only_cannot_write(demo, zk_connect, tmp_path, monkeypatch,
                                                                        store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("too-late").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert not at.button(key="ct_create").disabled
    before = dump_tree(demo.session)
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}}, read_only=True)  # flipped meanwhile
    at.button(key="ct_create").click().run()
    ok(at)
    assert "cannot create topic too-late: this Keel instance is read-only" in errors(at)
    assert dump_tree(demo.session) == before
    assert [(a.kind, a.status) for a in store.actions()] == [("refused", "failed")]  # the gate records refusals


# --- topic actions and history -------------------------------------------------------------------------


def test_topic_actions_and_history(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    snap = small.snapshot()
    topic = next(t for t in snap.topics if not t.name.startswith("__") and len(t.partitions) < 40)
    name, current = topic.name, len(topic.partitions)
    at.selectbox(key="topic").select(name).run()
    ok(at)

    # --- add partitions
    at.text_input(key=f"ap_total::{name}::{current}").input(str(current + 3)).run()
    ok(at)
    draft = draft_add_partitions(snap, name, current + 3)
    assert preview_assignment(at, "ap_preview") == draft.new_assignment
    assert "If partitions are increased for a topic that has a key" in texts(at.warning)
    assert at.button(key="ap_apply").disabled
    by_prefix(at.checkbox, "ap_confirm::").check().run()
    at.button(key="ap_apply").click().run()
    ok(at)
    assert f"Added 3 partitions to {name} ({current} → {current + 3})" in texts(at.success)
    assert written_assignment(small.session, name) == draft.full_assignment
    wait_until(lambda: all(p.has_state for p in small.snapshot().topic(name).partitions), message="new states")

    # --- edit config: a bad value first (inline error naming the key, nothing to apply)
    at.run()
    editor = by_prefix(at.data_editor, f"cfg_edit::{name}::")
    set_config_rows(at, editor.key, [{"Key": "segment.bytes", "Value": "12"}])
    at.run()
    assert "**segment.bytes**" in errors(at) and "Value must be at least 14" in errors(at)
    assert not [b for b in at.button if b.key == "cfg_apply"]
    before = dict(small.snapshot().topic(name).config)
    set_config_rows(at, editor.key, [{"Key": "retention.ms", "Value": "86400000"},
                                     {"Key": "min.insync.replicas", "Value": "2"}])
    at.run()
    ok(at)
    diff = frame(at, "cfg_diff")
    wanted = {"retention.ms": "86400000", "min.insync.replicas": "2"}
    assert set(diff["Key"]) == {k for k, v in wanted.items() if before.get(k) != v}
    row = diff[diff["Key"] == "retention.ms"].iloc[0]
    assert row["New"] == "86400000" and row["Kafka default"] == "604800000"
    by_prefix(at.checkbox, "cfg_confirm::").check().run()
    at.button(key="cfg_apply").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert "altered config of" in texts(at.success).lower()
    config = zf.decode_config(small.session.get(zf.topic_config_path(name)).data, "")
    assert config == {**before, **wanted}
    assert any(json.loads(small.session.get(f"{zf.CONFIG_CHANGES}/{c}").data)["entity_path"] == f"topics/{name}"
               for c in small.session.children(zf.CONFIG_CHANGES))
    # the editor starts again from the new config: delete the override just added
    at.run()
    editor = by_prefix(at.data_editor, f"cfg_edit::{name}::")
    rows = list(editor.value["Key"])
    set_config_rows(at, editor.key, [], deleted=[rows.index("retention.ms")])
    at.run()
    diff = frame(at, "cfg_diff")
    assert list(diff["Change"]) == ["removed"] and list(diff["New"]) == ["(default)"]
    by_prefix(at.checkbox, "cfg_confirm::").check().run()
    at.button(key="cfg_apply").click().run()
    assert not at.error, errors(at)
    assert "retention.ms" not in zf.decode_config(small.session.get(zf.topic_config_path(name)).data, "")

    # --- delete: the name must be typed
    at.run()
    at.text_input(key=f"del_confirm::{name}").input(name + "x").run()
    assert at.button(key="del_apply").disabled
    at.text_input(key=f"del_confirm::{name}").input(name).run()
    assert not at.button(key="del_apply").disabled
    at.button(key="del_apply").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert f"marked topic {name} for deletion" in texts(at.success).lower()
    # the emulator's controller deletes it
    wait_until(lambda: not small.session.exists(zf.topic_path(name)), timeout=15, message="the deletion")
    live_connection("demo").live.wait_for(lambda s: s.topic(name) is None)
    at.run()  # gone: the page stays on it, with the deletion's outcome, rather than jumping to another topic
    ok(at)
    assert at.selectbox(key="topic").value == name
    assert f"marked topic {name} for deletion" in texts(at.success).lower()
    assert "no longer exists" in texts(at.warning)

    # --- internal topics: refused with the engine's messages
    at.run()
    at.selectbox(key="topic").select("__consumer_offsets").run()
    ok(at)
    assert "__consumer_offsets is a kafka internal topic and is not allowed to be marked for deletion" in errors(at)
    assert "The number of partitions for the internal topic __consumer_offsets cannot be changed." in errors(at)
    assert not [b for b in at.button if b.key == "del_apply"]

    # --- history
    at.switch_page("views/history.py").run()
    ok(at)
    hist = frame(at, "history_table")
    assert list(hist["Kind"]) == ["delete-topic", "alter-config", "alter-config", "add-partitions"]
    assert set(hist["Status"]) == {"applied"} and set(hist["Actor"]) == {ACTOR} and set(hist["Target"]) == {name}
    assert list(hist["ID"]) == sorted(hist["ID"], reverse=True)
    assert {m.label: m.value for m in at.metric}["Applied"] == "4"
    at.session_state["history_table"] = {"selection": {"rows": [3], "columns": [], "cells": []}}
    at.run()
    ok(at)
    assert "add-partitions" in texts(at.subheader)
    payload = json.loads(at.json[0].value)
    assert payload[0]["op"] == "set" and payload[0]["path"] == f"/brokers/topics/{name}"
    assert len(payload[0]["data"]["partitions"]) == current + 3  # the znode JSON, shown decoded
    assert "applied" in texts(at.success)
    assert "Kafka cannot remove partitions" in at.json[1].value
    # filters
    at.multiselect(key="hist_kinds").select("alter-config").run()
    assert list(frame(at, "history_table")["Kind"]) == ["alter-config", "alter-config"]


def test_topic_actions_disabled_for_viewer(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/topics.py", role="viewer")
    name = next(t.name for t in small.snapshot().topics if not t.name.startswith("__"))
    at.selectbox(key="topic").select(name).run()
    ok(at)
    assert "only an operator may write" in texts(at.caption)
    for key in ("ap_apply", "del_apply"):
        assert at.button(key=key).disabled
    assert by_prefix(at.data_editor, f"cfg_edit::{name}::").proto.disabled


def test_history_empty(small, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/history.py")
    assert "No action has been recorded for cluster demo yet." in texts(at.info)
    assert ACTOR in texts(at.caption)


# --- leaders -----------------------------------------------------------------------------------------------


def candidates_by_key(at) -> dict[tuple[str, int], dict]:
    df = frame(at, "ld_candidates")
    return {(r["Topic"], int(r["Partition"])): dict(r) for _, r in df.iterrows()}


def test_leaders_after_a_broker_restart_elect_all(small, zk_connect, tmp_path, monkeypatch, store):
    snap = small.snapshot()
    ctrl = snap.controller.broker_id
    bounced, dead = [b.id for b in snap.brokers if b.id != ctrl][:2]
    small.stop_broker(bounced)
    small.stop_broker(dead)
    small.start_broker(bounced)
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/leaders.py")
    conn = live_connection("demo")
    snap = settle(small, conn, lambda s: s.broker_by_id[bounced].alive and not s.broker_by_id[dead].alive)
    at.run()
    ok(at)

    cands = elections.candidates(snap)
    shown = candidates_by_key(at)
    assert set(shown) == {c.key for c in cands}
    bounced_prefs = {c.key for c in cands if c.preferred == bounced}
    # the restarted broker rejoined the ISRs but leads nothing: its partitions wait for an election (those it
    # shared only with the broker still down stay offline and cannot be elected, with the reason why)
    assert sum(c.eligible for c in cands if c.preferred == bounced) > len(bounced_prefs) / 2
    for c in cands:
        row = shown[c.key]
        assert row["Eligible"] == ("yes" if c.eligible else "no")
        assert row["Preferred"] == c.preferred
        if not c.eligible:
            assert row["Reason"] == c.reason
    assert any(r == f"preferred broker {dead} is down" for r in frame(at, "ld_reasons")["Why not"])
    m = {x.label: x.value for x in at.metric}
    assert m["Off preferred"] == f"{len(cands):,}" and m["Electable now"] == f"{sum(c.eligible for c in cands)}"
    assert len(at.get("plotly_chart")) == 2  # imbalance, before/after

    selection = elections.select(snap, all_partitions=True)
    assert at.download_button(key="ld_download").label == \
        f"Download election JSON ({len(selection.eligible)} partitions)"
    assert at.button(key="ld_elect").disabled
    by_prefix(at.checkbox, "ld_confirm_").check().run()
    at.button(key="ld_elect").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert f"for {len(selection.eligible)} partition(s) of all partitions" in texts(at.success)

    [action] = store.actions("demo")
    assert (action.kind, action.status, action.actor) == ("preferred-election", "applied", ACTOR)
    written = json.loads(action.payload[0]["data"])
    assert action.payload[0]["path"] == zf.PREFERRED_ELECTION
    assert sorted((p["topic"], p["partition"]) for p in written["partitions"]) == sorted(selection.partitions)
    assert not {c.key for c in selection.ineligible} & {(p["topic"], p["partition"]) for p in written["partitions"]}

    # the controller elects them and deletes the node; the outcome table follows
    wait_until(lambda: not small.session.exists(zf.PREFERRED_ELECTION), timeout=15, message="the election")
    settle(small, conn, lambda s: not s.in_progress.preferred_election)
    at.run()
    ok(at)
    outcome = frame(at, "ld_outcome")
    assert len(outcome) == len(selection.eligible) and set(outcome["Outcome"]) == {"elected"}
    assert "every partition is led by its preferred replica" in texts(at.success)
    left = candidates_by_key(at)
    assert set(left) == {c.key for c in selection.ineligible}  # only the dead broker's partitions remain


def test_leaders_scopes_and_chosen_partitions(small, zk_connect, tmp_path, monkeypatch, store):
    snap = small.snapshot()
    bounced = next(b.id for b in snap.brokers if b.id != snap.controller.broker_id)
    small.stop_broker(bounced)
    small.start_broker(bounced)
    at = open_page(small, zk_connect, tmp_path, monkeypatch, "views/leaders.py")
    snap = settle(small, live_connection("demo"), lambda s: s.broker_by_id[bounced].alive
                  and any(c.preferred == bounced for c in elections.candidates(s)))
    at.run()
    cands = [c for c in elections.candidates(snap) if c.eligible]
    topic = cands[0].topic

    at.radio(key="scope").set_value("One topic").run()
    at.selectbox(key="topic").select(topic).run()
    ok(at)
    n = len(elections.select(snap, topic=topic).eligible)
    assert at.download_button(key="ld_download").label == f"Download election JSON ({n} partitions)"

    at.radio(key="scope").set_value("One broker").run()
    at.selectbox(key="broker").select(bounced).run()
    ok(at)
    n = len(elections.select(snap, broker=bounced).eligible)
    assert at.download_button(key="ld_download").label == f"Download election JSON ({n} partitions)"

    chosen = [cands[0].key, cands[-1].key]
    at.radio(key="scope").set_value("Chosen partitions").run()
    at.multiselect(key="ld_partitions").set_value([f"{t}-{p}" for t, p in chosen]).run()
    ok(at)
    assert at.download_button(key="ld_download").label == f"Download election JSON ({len(set(chosen))} partitions)"
    by_prefix(at.checkbox, "ld_confirm_").check().run()
    at.button(key="ld_elect").click().run()
    assert not at.error, errors(at)
    [action] = store.actions("demo")
    written = json.loads(action.payload[0]["data"])["partitions"]
    assert sorted((p["topic"], p["partition"]) for p in written) == sorted(set(chosen))


def test_election_refused_while_one_is_in_flight(election_tree, zk_connect, tmp_path, monkeypatch, store):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page("views/leaders.py").run()
    ok(at)
    shown = candidates_by_key(at)
    assert shown[("t", 0)]["Eligible"] == "yes"
    assert shown[("t", 1)]["Reason"] == "preferred broker 2 is not in the ISR"
    assert shown[("u", 0)]["Reason"] == "preferred broker 4 is down"
    assert ("t", 2) not in shown

    by_prefix(at.checkbox, "ld_confirm_").check().run()
    at.button(key="ld_elect").click().run()
    ok(at)
    assert not at.error, errors(at)
    node = json.loads(election_tree.get(zf.PREFERRED_ELECTION).data)
    assert node == {"version": 1, "partitions": [{"topic": "t", "partition": 0}]}  # only the eligible one
    outcome = frame(at, "ld_outcome")
    assert list(outcome["Outcome"]) == ["waiting"]
    assert "In flight" in texts(at.info)

    before = dump_tree(election_tree)
    at.button(key="ld_elect").click().run()  # a second election while the first is in flight
    ok(at)
    assert "Preferred replica leader election currently in progress for t-0. Aborting operation" in errors(at)
    assert dump_tree(election_tree) == before
    assert [a.status for a in store.actions("demo")] == ["applied"]

    # nothing eligible in scope: refused up front, with the reasons
    election_tree.delete(zf.PREFERRED_ELECTION)
    at.radio(key="scope").set_value("One topic").run()
    at.selectbox(key="topic").select("u").run()
    ok(at)
    assert "Nothing to elect in topic u" in texts(at.warning) and "preferred broker 4 is down" in texts(at.warning)
    assert not [b for b in at.button if b.key == "ld_elect"]


def test_leaders_viewer_cannot_elect(election_tree, zk_connect, tmp_path, monkeypatch, store):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}}, read_only=True)
    at = app().run()
    at.switch_page("views/leaders.py").run()
    ok(at)
    assert at.button(key="ld_elect").disabled and "read-only" in at.button(key="ld_elect").help
    assert by_prefix(at.checkbox, "ld_confirm_").disabled
    assert "read-only" in texts(at.caption)
    assert not election_tree.exists(zf.PREFERRED_ELECTION) and store.actions() == []


def test_election_refused_when_nothing_is_left_to_elect_at_click_time(election_tree, zk_connect, tmp_path,
                                                                      monkeypatch, store):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page("views/leaders.py").run()
    by_prefix(at.checkbox, "ld_confirm_").check().run()
    assert not at.button(key="ld_elect").disabled
    # meanwhile the one eligible partition got its preferred leader back
    election_tree.set(zf.state_path("t", 0), zf.encode_partition_state(1, 1, 1, [1, 2]))
    live_connection("demo").live.wait_for(lambda s: s.topic("t").partitions[0].leader == 1)
    before = dump_tree(election_tree)
    at.button(key="ld_elect").click().run()
    ok(at)
    err = errors(at)
    assert "nothing to elect in all partitions" in err
    assert "t-1: preferred broker 2 is not in the ISR" in err and "u-0: preferred broker 4 is down" in err
    assert dump_tree(election_tree) == before and store.actions() == []
