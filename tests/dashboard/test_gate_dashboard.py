"""Issue 25 item 1 in the browser: every write button goes through dashboard.actions.run, which goes through
core.policy.gate; under each migration phase and each role a write is let through or refused (and recorded) exactly as
on the command line, with the migration state read from ZooKeeper at click time, not from the page's cache.
AppTest against a real ZooKeeper."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import zkformat as zf
from core.audit.store import Store
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import by_prefix, errors, ok
from tests.dashboard.test_dashboard_apptest import app, write_config  # noqa: F401
from tests.cli.test_gate import tree
from tests.zk.test_migration import KAFKA_MIGRATION_EMPTY

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = {"operator": "create topic fresh", "admin": "delete topic orders"}  # the role each needs


def _clicked():
    """A page with one write: actions.run around a znode create, for the action in session state."""
    import time

    import streamlit as st

    from dashboard import actions, frame

    cfg = frame.config()
    conn = frame.connection(frame.selected_cluster(cfg))
    conn.ensure()
    deadline = time.monotonic() + 20
    while conn.snapshot() is None and time.monotonic() < deadline:
        time.sleep(0.05)

    def work() -> str:
        conn.live.session.create("/written-by-the-page", b"x")
        return "written"

    actions.run("result", work, cfg=cfg, action=st.session_state["action"])
    r = st.session_state["result"]
    (st.success if r.ok else st.error)(r.message)


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    path = tmp_path / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(path))
    monkeypatch.setenv("KEEL_ACTOR", "pat")
    return Store(path)


@pytest.mark.parametrize("phase", ["none", "migration begun", "dual-write"])
@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_a_write_under_each_phase_and_role(phase, role, zk_connect, tmp_path, monkeypatch, store):
    with ZkSession.open(zk_connect) as s:
        tree(s, phase)
    write_config(tmp_path, monkeypatch, {"c": {"zk": zk_connect}}, role=role)
    for needs, action in ACTIONS.items():
        at = AppTest.from_function(_clicked, default_timeout=60)
        at.session_state["action"] = action
        at.run()
        ok(at)
        allowed = phase == "none" and (role == "admin" or role == needs)
        with ZkSession.open(zk_connect) as s:
            written = s.exists("/written-by-the-page")
            if written:
                s.delete("/written-by-the-page")
        assert written is allowed, (action, phase, role, errors(at))
        refused = [a for a in store.actions() if a.kind == "refused" and a.target == action]
        if allowed:
            assert not refused and not at.error
            continue
        if role == "admin" or role == needs:
            assert "Writes through ZooKeeper are disabled" in errors(at)
        else:
            assert f"the role of pat on cluster c is '{role}'" in errors(at)
        [row] = refused
        assert (row.cluster, row.actor, row.source, row.role) == ("c", "pat", "none", role)


def test_a_migration_begun_after_the_page_was_drawn_refuses_the_click(zk_connect, tmp_path, monkeypatch, store):
    """The banner's view of /migration is cached for a few seconds; the click reads ZooKeeper itself."""
    with ZkSession.open(zk_connect) as s:
        tree(s, "none")
    write_config(tmp_path, monkeypatch, {"c": {"zk": zk_connect}}, role="admin")
    at = app().run()
    at.switch_page("views/create_topic.py").run()
    ok(at)
    at.text_input(key="ct_name").input("late").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert not at.button(key="ct_create").disabled
    with ZkSession.open(zk_connect) as s:
        s.create(zf.MIGRATION, KAFKA_MIGRATION_EMPTY)  # the migration starts while the page is open
        before = dump_tree(s)
    at.button(key="ct_create").click().run()
    ok(at)
    assert "Writes through ZooKeeper are disabled while a ZooKeeper -> KRaft migration" in errors(at)
    with ZkSession.open(zk_connect) as s:
        assert dump_tree(s) == before
    assert [(a.kind, a.target) for a in store.actions()] == [("refused", "create topic late")]


def _calls(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


# The engine's writers: a page that calls one must also call actions.run (the gate) in the same module.
WRITERS = {"create_topic", "add_partitions", "alter_config", "delete_topic", "trigger", "execute", "verify",
           "rollback", "cancel", "alter_log_dirs", "execute_moves"}


def test_every_page_that_writes_goes_through_actions_run():
    pages = sorted((ROOT / "dashboard").rglob("*.py"))
    writing = {p.relative_to(ROOT).as_posix(): _calls(p) & WRITERS for p in pages}
    writing = {p: w for p, w in writing.items() if w and p != "dashboard/actions.py"}
    assert writing, "the scan finds the pages that write"
    for page, writers in writing.items():
        assert "run" in _calls(ROOT / page), f"{page} calls {sorted(writers)} without dashboard.actions.run"
