"""The Reassign page's Cancel (issue 15) through Streamlit's AppTest, without Kafka: what the page offers and refuses.

A hand-written tree with no controller keeps /admin/reassign_partitions in place. Cancelling needs the cluster's
`bootstrap` (Kafka's Admin API): without it the page says so and shows the CLI command; with a bootstrap nobody
listens on, the click shows the typed unreachable error; a viewer cannot cancel. Every refusal compares a dump of
the tree before and after. The cancel itself, on real brokers, is tests/kafka/test_reassign_page_cancel.py.
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from dashboard.reassign import plan_view
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    by_prefix,
    errors,
    ok,
)
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401

PAGE = "reassign/page.py"
# kafka-python 3.0 loads its protocol schemas with importlib.resources' deprecated read_text (as in tests/kafka)
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
RUNNING = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 4]},
                                        {"topic": "t", "partition": 1, "replicas": [4, 1]}]}


def cluster(zk_connect: str, bootstrap: str | None = None) -> dict:
    body = {"zk": zk_connect, "connect_timeout": 1.0}  # the Admin API's timeout is twice it: 2 s
    if bootstrap:
        body["bootstrap"] = bootstrap
    return {"demo": body}


def open_reassign(tmp_path, monkeypatch, clusters: dict, **config):
    write_config(tmp_path, monkeypatch, clusters, **config)
    at = app().run()
    at.switch_page(PAGE).run()
    ok(at)
    return at


def execute_from_page(at, document: dict):
    """Import `document` on the page and execute it (unthrottled): the session then follows it."""
    at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
    at.text_area(key="ra_import_text").input(json.dumps(document)).run()
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    at.button(key="ra_execute").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert "Reassignment started" in texts(at.success)


def cancel_buttons(at):
    return [b for b in at.button if b.key == "ra_cancel"]


def test_without_bootstrap_the_page_says_what_cancel_needs(frozen_tree, zk_connect, tmp_path, monkeypatch, store):
    frozen_tree.create(zf.REASSIGN, json.dumps(RUNNING).encode())
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect))
    assert "needs the cluster's `bootstrap` servers in keel.toml" in texts(at.caption)
    assert "python -m core cancel --zk " + zk_connect in texts(at.code) and "--all" in texts(at.code)
    assert not cancel_buttons(at)

    # the same in the panel of a run this session started: the CLI command names the plan
    frozen_tree.delete(zf.REASSIGN)
    execute_from_page(at, RUNNING)
    assert not cancel_buttons(at)
    assert "needs the cluster's `bootstrap` servers" in texts(at.caption)
    assert "--reassignment-json-file plan.json" in texts(at.code)


def test_unreachable_bootstrap_is_the_typed_error_and_writes_nothing(frozen_tree, zk_connect, tmp_path, monkeypatch,
                                                                     store, closed_port):
    frozen_tree.create(zf.REASSIGN, json.dumps(RUNNING).encode())
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect, closed_port))
    assert not [c for c in at.caption if "bootstrap` servers in keel.toml" in c.value]
    [button] = cancel_buttons(at)
    assert button.disabled  # not confirmed yet
    confirm = at.checkbox(key="ra_cancel_confirm_all")
    assert "Cancel the 2 running partition(s) of every running reassignment" in confirm.label
    confirm.check().run()
    before = dump_tree(frozen_tree)
    at.button(key="ra_cancel").click().run()
    ok(at)
    err = errors(at)
    assert f"could not connect: no Kafka broker of {closed_port} answered within 2 s" in err, err
    assert "bootstrap in keel.toml" in err  # the hint: what to check
    assert dump_tree(frozen_tree) == before and store.actions() == []

    # from the panel of a run this session started: the same refusal, shown in the panel
    frozen_tree.delete(zf.REASSIGN)
    execute_from_page(at, RUNNING)
    [action] = store.actions("demo")
    at.checkbox(key=f"ra_cancel_confirm_{action.id}").check().run()
    assert "of action #" in at.checkbox(key=f"ra_cancel_confirm_{action.id}").label
    before = dump_tree(frozen_tree)
    at.button(key="ra_cancel").click().run()
    ok(at)
    assert f"no Kafka broker of {closed_port} answered" in errors(at)
    assert dump_tree(frozen_tree) == before and [a.id for a in store.actions()] == [action.id]


def test_a_viewer_cannot_cancel(frozen_tree, zk_connect, tmp_path, monkeypatch, store, closed_port):
    frozen_tree.create(zf.REASSIGN, json.dumps(RUNNING).encode())
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect, closed_port), role="viewer")
    button = at.button(key="ra_cancel")
    assert button.disabled and "only an operator may write" in button.help
    assert at.checkbox(key="ra_cancel_confirm_all").disabled

    # a page opened by an operator, the role taken away meanwhile: refused at click time, and recorded as refused
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect, closed_port), role="operator")
    at.checkbox(key="ra_cancel_confirm_all").check().run()
    assert not at.button(key="ra_cancel").disabled
    write_config(tmp_path, monkeypatch, cluster(zk_connect, closed_port), role="viewer")
    before = dump_tree(frozen_tree)
    at.button(key="ra_cancel").click().run()
    ok(at)
    assert "only an operator may write" in errors(at)
    assert dump_tree(frozen_tree) == before
    assert [(a.kind, a.target) for a in store.actions()] == [("refused", "cancel the reassignment")]
