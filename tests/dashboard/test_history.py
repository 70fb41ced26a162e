"""Issue 17 and issue 16 (items 6, 7): the audit trail and the History page.

The store's new columns (source, role, completed_at, rollback_of) and their migration from an older database; a
rollback recorded as its own kind, linked both ways; a reassignment's completion time set by verify; the History
page's filters, CSV, `?action=N`, links and JSON payloads (AppTest); RUN_DIR moving all runtime state, and `make
clean` removing it."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core import zkformat as zf
from core.plans import parse_reassignment
from core.audit.store import Store, acting, default_store_target, run_dir
from core.zk import reassign_writes
from core.zk.session import ZkSession
from dashboard.audit import readable, table, to_csv
from tests.support.kafka_tree import write_cluster, write_topic
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
PLAN = parse_reassignment('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}')
OLD_SCHEMA = """
CREATE TABLE actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, actor TEXT NOT NULL, cluster TEXT NOT NULL,
    kind TEXT NOT NULL, target TEXT NOT NULL, summary TEXT NOT NULL, payload TEXT NOT NULL, rollback TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'failed')), result TEXT, finished TEXT);
CREATE INDEX actions_cluster ON actions (cluster, id);
CREATE TABLE plans (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, actor TEXT NOT NULL,
    cluster TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, plan TEXT NOT NULL, report TEXT);
INSERT INTO actions (at, actor, cluster, kind, target, summary, payload, status, result, finished)
    VALUES ('2025-01-01T00:00:00Z', 'bob', 'prod', 'create-topic', 'orders', 'created topic orders', '[]',
            'applied', 'created topic orders', '2025-01-01T00:00:01Z');
"""


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    path = tmp_path / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(path))
    return Store(path)


# --- the store ---------------------------------------------------------------------------------------------


def test_an_older_database_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    store = Store(path)
    [old] = store.actions()
    assert (old.actor, old.kind, old.source, old.role, old.completed_at, old.rollback_of) == \
        ("bob", "create-topic", None, None, None, None)
    with acting("alice@example.com", "oidc", "operator"):
        new = store.begin(cluster="prod", kind="alter-config", target="orders", summary="s", payload={})
    store.finish(new, ok=True, result="ok")
    a = store.action(new)
    assert (a.actor, a.source, a.role) == ("alice@example.com", "oidc", "operator")
    Store(path)  # opening again migrates nothing twice
    with sqlite3.connect(path) as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(actions)")]
    assert columns.count("source") == 1 and {"role", "completed_at", "rollback_of"} <= set(columns)


def test_refusals_and_sign_ins_are_recorded_finished(store):
    rid = store.record(cluster="prod", kind="refused", target="delete topic t", summary="refused: delete topic t",
                       result="cannot ...", actor="ann@example.com", source="proxy", role="operator")
    sid = store.record(cluster="", kind="sign-in", target="mallory", summary="sign-in refused", result="forged",
                       actor="(unverified)", source="proxy")
    assert [(a.id, a.status, a.finished is not None) for a in store.actions()] == [(sid, "failed", True),
                                                                                   (rid, "failed", True)]
    assert store.facets() == {"cluster": ["", "prod"], "actor": ["(unverified)", "ann@example.com"],
                              "kind": ["refused", "sign-in"]}
    assert [a.id for a in store.actions(["prod", "other"], actor="ann@example.com")] == [rid]


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "t", {0: [1, 2]})
        yield s


def finish_reassignment(s: ZkSession, replicas: list[int]) -> None:
    """What the controller does once the replicas caught up: the topic at target, the node gone."""
    s.set(zf.topic_path("t"), zf.encode_topic({0: replicas}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    s.delete(zf.REASSIGN)


def test_rollback_is_its_own_kind_linked_both_ways_and_verify_records_completion(tree, store):
    with acting("olaf@example.com", "oidc", "operator"):
        done = reassign_writes.execute(tree, store, PLAN, cluster="c")
    assert store.action(done.action_id).completed_at is None
    reassign_writes.verify(tree, store, PLAN, cluster="c")  # still running: no completion time
    assert store.action(done.action_id).completed_at is None
    finish_reassignment(tree, [3, 2])
    assert reassign_writes.verify(tree, store, PLAN, cluster="c").complete
    original = store.action(done.action_id)
    assert original.completed_at is not None and original.completed_at >= original.finished

    with acting("carol@example.com", "oidc", "admin"):
        back = reassign_writes.rollback(tree, store, done.action_id, cluster="c")
    rb = store.action(back.action_id)
    assert (rb.kind, rb.rollback_of, rb.actor, rb.role, rb.status) == \
        ("rollback", done.action_id, "carol@example.com", "admin", "applied")
    assert store.action(done.action_id).rolled_back_by == (back.action_id,)
    finish_reassignment(tree, [1, 2])
    reassign_writes.verify(tree, store, parse_reassignment(rb.payload["plan"]), cluster="c")
    assert store.action(back.action_id).completed_at is not None
    assert table([store.action(done.action_id)])["Link"][0] == f"rolled back by #{back.action_id}"
    assert table([rb])["Link"][0] == f"rollback of #{done.action_id}"


def test_history_data_csv_and_json(store):
    with acting("=cmd|' /C calc'!A0", "proxy", "operator"):
        store.begin(cluster="c", kind="reassignment", target="1 partitions", summary="s",
                    payload={"plan": PLAN.to_json(), "writes": ["/admin/reassign_partitions"]})
    rows = list(csv.DictReader(io.StringIO(to_csv(table(store.actions())))))
    assert rows[0]["Actor"].startswith("'=") and rows[0]["Source"] == "proxy" and rows[0]["Role"] == "operator"
    shown = readable(store.actions()[0].payload)
    assert shown["plan"]["partitions"][0]["replicas"] == [3, 2]  # the plan as JSON, not one escaped string


# --- the History page (AppTest) --------------------------------------------------------------------------


def seed_history(store: Store) -> dict[str, int]:
    ids = {}
    with acting("olaf@example.com", "oidc", "operator"):
        ids["reassign"] = store.begin(cluster="demo", kind="reassignment", target="1 partitions", summary="moved",
                                      payload={"plan": PLAN.to_json()}, rollback=PLAN.to_json())
        store.finish(ids["reassign"], ok=True, result="moved")
    with acting("carol@example.com", "oidc", "admin"), store.recording_rollback_of(ids["reassign"]):
        ids["rollback"] = store.begin(cluster="demo", kind="reassignment", target="1 partitions", summary="back",
                                      payload={"plan": PLAN.to_json()})
        store.finish(ids["rollback"], ok=True, result="back")
    with acting("sam", "cli", "admin"):
        ids["other"] = store.begin(cluster="other", kind="create-topic", target="x", summary="created x", payload=[])
    ids["signin"] = store.record(cluster="", kind="sign-in", target="mallory", summary="sign-in refused",
                                 result="forged", actor="(unverified)", source="proxy")
    return ids


def test_history_page_filters_links_and_query_parameter(store, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": "127.0.0.1:1/none", "connect_timeout": 0.5},
                                         "other": {"zk": "127.0.0.1:1/none", "connect_timeout": 0.5}})
    ids = seed_history(store)
    at = app("demo")
    at.run()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    hist = at.dataframe(key="history_table").value
    assert list(hist["ID"]) == [ids["rollback"], ids["reassign"]]  # the selected cluster by default
    assert list(hist["Source"]) == ["oidc", "oidc"] and list(hist["Role"]) == ["admin", "operator"]
    assert list(hist["Kind"]) == ["rollback", "reassignment"]

    # every cluster, then one actor, then one action kind
    at.multiselect(key="hist_clusters::demo").set_value([]).run()
    assert set(at.dataframe(key="history_table").value["ID"]) == set(ids.values())
    at.multiselect(key="hist_actors").set_value(["sam"]).run()
    assert list(at.dataframe(key="history_table").value["Cluster"]) == ["other"]
    at.multiselect(key="hist_actors").set_value([]).run()
    at.multiselect(key="hist_kinds").set_value(["sign-in"]).run()
    hist = at.dataframe(key="history_table").value
    assert list(hist["Actor"]) == ["(unverified)"] and list(hist["Cluster"]) == ["—"]
    assert at.get("download_button")[0].proto.label == "CSV"

    # ?action=N opens that row, with its links both ways and the payload as JSON
    at = app("demo")
    at.query_params["action"] = str(ids["reassign"])
    at.run()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    at.query_params["action"] = str(ids["reassign"])
    at.run()
    assert at.subheader[0].value.startswith(f"Action #{ids['reassign']}: reassignment")
    assert "By **olaf@example.com** (via oidc, role operator)" in texts(at.markdown)
    links = [p.proto.label for p in at.get("page_link")]
    assert f"Rolled back by action #{ids['rollback']}" in links
    payload = json.loads(at.json[0].value)
    assert payload["plan"]["partitions"][0]["topic"] == "t"
    at.query_params["action"] = str(ids["rollback"])
    at.run()
    assert f"Rollback of action #{ids['reassign']}" in [p.proto.label for p in at.get("page_link")]
    at.query_params["action"] = "999"
    at.run()
    assert "No action #999" in texts(at.warning)


# --- RUN_DIR ------------------------------------------------------------------------------------------------


def test_run_dir_moves_the_action_history_and_the_fleet_store(tmp_path, monkeypatch):
    monkeypatch.delenv("KEEL_STORE", raising=False)
    monkeypatch.setenv("RUN_DIR", str(tmp_path / "elsewhere"))
    assert run_dir() == tmp_path / "elsewhere"
    assert default_store_target() == tmp_path / "elsewhere" / "keel.sqlite"
    assert Store().path == tmp_path / "elsewhere" / "keel.sqlite"
    monkeypatch.setenv("RUN_DIR", "relative-run")
    assert run_dir() == ROOT / "relative-run"  # relative to the checkout, as make and scripts/run.sh use it
    monkeypatch.delenv("RUN_DIR")
    assert default_store_target() == ROOT / ".run" / "keel.sqlite"
    fleet = (ROOT / "dashboard" / "fleet" / "page.py").read_text()
    assert 'DEFAULT_STORE = str(run_dir() / "fleet" / "store")' in fleet
    run_sh = (ROOT / "scripts" / "run.sh").read_text()
    assert "export RUN_DIR" in run_sh


def test_tests_never_use_the_developers_store():
    assert Path(os.environ["KEEL_STORE"]).resolve() != (ROOT / ".run" / "keel.sqlite").resolve()
    assert not Path(os.environ["KEEL_STORE"]).resolve().is_relative_to(ROOT)


def test_cli_writes_and_make_clean_follow_run_dir(zk_connect, tmp_path):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2"}, controller=1)
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("KEEL_STORE", "KEEL_CONFIG")}
    config = tmp_path / "keel.toml"  # not the checkout's (its demo cluster is not this one)
    config.write_text(f'[clusters.t]\nzk = "{zk_connect}"\n')
    env.update(RUN_DIR=str(run), KEEL_CONFIG=str(config), PYTHONPATH=str(ROOT))
    before = (ROOT / ".run" / "keel.sqlite").stat().st_mtime_ns if (ROOT / ".run" / "keel.sqlite").exists() else None
    proc = subprocess.run([sys.executable, "-m", "core", "create-topic", "--zk", zk_connect, "--topic", "rd",
                           "--partitions", "1", "--replication-factor", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [action] = Store(run / "keel.sqlite").actions()
    assert (action.kind, action.source) == ("create-topic", "cli")
    after = (ROOT / ".run" / "keel.sqlite").stat().st_mtime_ns if (ROOT / ".run" / "keel.sqlite").exists() else None
    assert before == after  # the checkout's .run/ was not touched
    clean = subprocess.run(["make", "--no-print-directory", "clean", f"RUN_DIR={run}"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert not run.exists()
