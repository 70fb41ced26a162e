"""A click that arrives with an edit the page has not drawn yet writes nothing (dashboard.actions.guard).

A text field commits its value when it loses focus: typing a new partition count and clicking Create at once sends
both in one request, and the button's on_click runs with the draft drawn before the edit. Measured before the
guard, in Chromium: the topic was created with the 6 partitions of the old preview while the field said 12.
AppTest sends an edit and a click in one request the same way (`input()` + `click()` + one `run()`), which makes
the race deterministic here; the browser test shows the same through a real keyboard and mouse.
"""

from __future__ import annotations


from core import zkformat as zf
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    by_prefix,
    errors,
    ok,
    open_page,
)
from tests.dashboard.test_dashboard_apptest import app, texts, write_config
from tests.dashboard.test_dashboard_reassign import plan_drain, victim_of  # noqa: F401
from tests.e2e.test_e2e_chromium import (  # noqa: F401
    body_text,
    click_text,
    screenshot,
    wait_for,
)

STALE = "The form changed as the button was pressed"


def partitions_of(session, topic: str) -> int | None:
    if not session.exists(zf.topic_path(topic)):
        return None
    return len(zf.decode_topic(zf.topic_path(topic), session.get(zf.topic_path(topic)).data).partitions)


def test_create_topic_edit_and_click_in_one_request(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("race.t").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()  # confirms 6 partitions
    assert not at.button(key="ct_create").disabled
    before = dump_tree(demo.session)
    at.text_input(key="ct_partitions").input("12")
    at.button(key="ct_create").click()
    at.run()
    ok(at)
    assert STALE in errors(at)
    assert dump_tree(demo.session) == before and store.actions() == []
    # the page now previews 12, unconfirmed; confirming and clicking creates what the field says
    assert "(12 partitions" in by_prefix(at.checkbox, "ct_confirm_").label
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    at.button(key="ct_create").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert partitions_of(demo.session, "race.t") == 12


def test_a_click_whose_confirmation_is_not_ticked_writes_nothing(demo, zk_connect, tmp_path, monkeypatch, store):
    """The other order of the race: the edit's run completed (new preview, its confirmation unticked) before the
    click of the button still enabled on screen arrived."""
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
    at.text_input(key="ct_name").input("race.u").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    before = dump_tree(demo.session)
    # untick it in the same request as the click: the button was drawn enabled, its confirmation is gone
    by_prefix(at.checkbox, "ct_confirm_").uncheck()
    at.button(key="ct_create").click()
    at.run()
    ok(at)
    assert "is not ticked: nothing was written" in errors(at)
    assert dump_tree(demo.session) == before and store.actions() == []


def test_add_partitions_edit_and_click_in_one_request(demo, zk_connect, tmp_path, monkeypatch, store):
    topic = next(t for t in demo.snapshot().topics if not t.name.startswith("__"))
    n = len(topic.partitions)
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    at.selectbox(key="topic").select(topic.name).run()
    key = f"ap_total::{topic.name}::{n}"
    at.text_input(key=key).input(str(n + 2)).run()
    by_prefix(at.checkbox, "ap_confirm::").check().run()
    before = dump_tree(demo.session)
    at.text_input(key=key).input(str(n + 5))
    at.button(key="ap_apply").click()
    at.run()
    ok(at)
    assert STALE in texts(at.error)
    assert dump_tree(demo.session) == before and store.actions() == []


def test_reassign_throttle_edit_and_execute_in_one_request(quick, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, "reassign/page.py")
    plan_drain(at, victim_of(quick.snapshot()))
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    assert not at.button(key="ra_execute").disabled
    before = dump_tree(quick.session)
    at.text_input(key="ra_throttle").input("12.5")  # was 50 MB/s in the plan confirmed
    at.button(key="ra_execute").click()
    at.run()
    ok(at)
    assert STALE in texts(at.error)
    assert not quick.session.exists(zf.REASSIGN) and store.actions() == []
    assert dump_tree(quick.session) == before


def test_election_scope_change_and_click_in_one_request(election_tree, zk_connect, tmp_path, monkeypatch, store):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page("views/leaders.py").run()
    by_prefix(at.checkbox, "ld_confirm_").check().run()  # all partitions: t-0
    before = dump_tree(election_tree)
    at.radio(key="scope").set_value("One broker")
    at.button(key="ld_elect").click()
    at.run()
    ok(at)
    assert STALE in errors(at)
    assert dump_tree(election_tree) == before and store.actions() == []
