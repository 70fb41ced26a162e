"""The audit store's behaviour, the same on both backends: a SQLite file and a real PostgreSQL server (started by
tests/audit/conftest.py on loopback). Every test runs twice (store_target: sqlite, postgresql)."""

from __future__ import annotations

import os
import time

import pytest

from core.audit.store import Store, ThrottleLoops, acting
from core.auto_throttle import policy
from core.cluster import auto_throttle
from core.errors import ValidationError

PLAN = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}


def test_action_lifecycle_and_a_second_instance_sees_it(store_target):
    store = Store(store_target)
    aid = store.begin(cluster="demo", kind="create-topic", target="orders", summary="create orders (3 x RF2)",
                      payload=[{"path": "/brokers/topics/orders", "data": "{}"}], rollback={"delete": "orders"},
                      actor="alice")
    pending = store.action(aid)
    assert (pending.status, pending.actor, pending.finished, pending.source) == ("pending", "alice", None, "none")
    store.finish(aid, ok=True, result="created")
    done = store.action(aid)
    assert done.status == "applied" and done.result == "created" and done.finished
    assert done.payload == [{"path": "/brokers/topics/orders", "data": "{}"}] and done.rollback == {"delete": "orders"}

    other = store.begin(cluster="prod", kind="delete-topic", target="x", summary="delete x", payload=[])
    store.finish(other, ok=False, result="Topic 'x' does not exist")
    assert [a.id for a in store.actions()] == [other, aid]  # newest first
    assert [a.id for a in store.actions("demo")] == [aid]
    assert [a.id for a in store.actions(["demo", "prod"], kind=("delete-topic", "create-topic"), limit=1)] == [other]
    assert store.actions(kind="delete-topic")[0].status == "failed"
    assert store.actions([]) == [] and store.actions(actor=()) == []  # no cluster chosen: nothing
    assert store.action(10_000) is None
    if store_target.startswith("postgresql://"):  # in the server's tables, not in a file named like the URL
        import psycopg

        with psycopg.connect(store_target) as c:
            assert c.execute("SELECT target FROM actions ORDER BY id").fetchall() == [("orders",), ("x",)]
    # another Keel instance (another Store, another process in production) sees the same history
    assert Store(store_target).action(aid).summary == "create orders (3 x RF2)"
    assert Store(store_target).facets() == {"cluster": ["demo", "prod"], "actor": sorted({"alice", done.actor,
                                                                                            store.action(other).actor}),
                                            "kind": ["create-topic", "delete-topic"]}


def test_rollback_links_completion_and_identity(store_target):
    store = Store(store_target)
    with acting("bob@example.com", "oidc", "operator", cluster_id="CID"):
        first = store.begin(cluster="demo", kind="reassignment", target="t", summary="reassignment of 1 partition",
                            payload={"plan": PLAN})
        with store.recording_rollback_of(first):
            undo = store.begin(cluster="demo", kind="reassignment", target="t", summary="reassignment of 1 partition",
                               payload={"plan": PLAN})
    store.finish(first, ok=True)
    store.finish(undo, ok=True)
    a, b = store.action(first), store.action(undo)
    assert (a.actor, a.source, a.role, a.cluster_id) == ("bob@example.com", "oidc", "operator", "CID")
    assert a.rolled_back_by == (undo,) and (b.kind, b.rollback_of) == ("rollback", first)
    assert b.summary.startswith(f"rollback of action #{first}")
    assert store.mark_completed("demo", PLAN) == undo  # the newest applied one writing this plan
    assert store.mark_completed("demo", PLAN) == first
    assert store.mark_completed("demo", PLAN) is None
    assert store.action(first).completed_at and store.action(undo).completed_at
    assert store.cluster_names("CID") == ["demo"]


def test_pending_rows_and_their_reconciliation(store_target):
    store = Store(store_target)
    with acting("alice", "cli", "operator", cluster_id="CID"):
        old = store.begin(cluster="127.0.0.1:2181/old-spelling", kind="create-topic", target="a", summary="a",
                          payload=[])
    mine = store.begin(cluster="demo", kind="create-topic", target="b", summary="b", payload=[])
    store.record(cluster="demo", kind="refused", target="c", summary="refused", result="read_only")
    assert [a.id for a in store.pending("demo")] == [mine]
    assert [a.id for a in store.pending("demo", "CID")] == [old, mine]  # the same cluster under another name
    assert store.resolve(mine, True, "found in ZooKeeper") is True
    assert store.resolve(mine, False, "again") is False  # settled once: the first judgement stays
    assert (store.action(mine).status, store.action(mine).result) == ("applied", "found in ZooKeeper")
    store.finish(old, ok=False, result="the run finished it")
    assert store.resolve(old, True, "late") is False and store.pending("demo", "CID") == []


def test_throttle_loops_keep_exact_beats(store_target):
    store = Store(store_target)
    loops = ThrottleLoops(store)
    lid = loops.start(cluster="demo", owner="cli", host="h", pid=123, policy={"budget": 10, "interval": 30.0})
    now = time.time()
    loops.beat(lid, rate=5_000_000_000, note="set")  # over 2^31: a rate in bytes per second
    loops.beat(lid, note="kept")
    [loop] = loops.of("demo", running_only=True)
    assert loop.rate == 5_000_000_000 and loop.note == "kept" and abs(loop.beat - now) < 5
    assert loop.beat == ThrottleLoops(Store(store_target)).of("demo")[0].beat  # a float, not rounded
    assert isinstance(loop.beat, float) and loop.beat != round(loop.beat)
    loops.end(lid, "finished")
    loops.end(lid, "again")
    assert loops.of("demo", running_only=True) == [] and loops.of("demo")[0].end_reason == "finished"


def test_a_second_auto_throttle_loop_is_refused_and_writes_nothing(store_target):
    store = Store(store_target)
    pol = policy(50_000_000)
    first = auto_throttle.begin(store, "demo", pol, owner="cli")
    with pytest.raises(ValidationError, match="another auto-throttle loop runs for demo"):
        auto_throttle.begin(Store(store_target), "demo", pol, owner="cli")
    assert [loop.id for loop in ThrottleLoops(store).of("demo")] == [first]
    assert auto_throttle.begin(store, "other", pol, owner="cli") != first  # another cluster: its own loop


OLD_ACTIONS = ("CREATE TABLE actions (id {id}, at TEXT NOT NULL, actor TEXT NOT NULL, cluster TEXT NOT NULL, "
               "kind TEXT NOT NULL, target TEXT NOT NULL, summary TEXT NOT NULL, payload TEXT NOT NULL, rollback TEXT, "
               "status TEXT NOT NULL, result TEXT, finished TEXT)")
OLD_ROW = ("INSERT INTO actions (at, actor, cluster, kind, target, summary, payload, status) VALUES "
           "('2024-01-01T00:00:00Z', 'carol', 'demo', 'create-topic', 't', 'create t', '[]', 'applied')")


def test_an_old_database_gains_the_new_columns_on_open(store_target):
    """A database of the first release (no source, role, completed_at, rollback_of, cluster_id; no loops table)."""
    if store_target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_target) as c:
            c.execute(OLD_ACTIONS.format(id="BIGSERIAL PRIMARY KEY"))
            c.execute(OLD_ROW)
    else:
        import sqlite3

        with sqlite3.connect(store_target) as c:
            c.execute(OLD_ACTIONS.format(id="INTEGER PRIMARY KEY AUTOINCREMENT"))
            c.execute(OLD_ROW)
    store = Store(store_target)
    [old] = store.actions()
    assert (old.actor, old.source, old.role, old.rollback_of, old.cluster_id) == ("carol", None, None, None, None)
    with acting("dave", "proxy", "admin", cluster_id="CID"):
        new = store.begin(cluster="demo", kind="delete-topic", target="t", summary="delete t", payload=[])
    assert (store.action(new).source, store.action(new).cluster_id) == ("proxy", "CID")
    assert ThrottleLoops(store).of("demo") == []


def test_the_default_store_comes_from_keel_store_then_keel_toml(store_target, tmp_path, monkeypatch):
    monkeypatch.setenv("KEEL_STORE", store_target)
    Store().record(cluster="demo", kind="refused", target="x", summary="from KEEL_STORE", result="no")
    assert [a.summary for a in Store(store_target).actions()] == ["from KEEL_STORE"]

    monkeypatch.delenv("KEEL_STORE")
    config = tmp_path / "conf" / "keel.toml"
    config.parent.mkdir()
    url = store_target if store_target.startswith("postgresql://") else os.path.relpath(store_target, config.parent)
    config.write_text(f'[store]\nurl = "{url}"\n\n[clusters.demo]\nzk = "127.0.0.1:2181"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    assert [a.summary for a in Store().actions()] == ["from KEEL_STORE"]  # the same history through keel.toml
    assert str(Store().path) == (str(Store(store_target).path))
