"""Audit rows an interrupted run left `pending` are settled on the next start, against ZooKeeper.

Real processes: `python -m core` write commands are SIGKILLed right before or right after their multi-op
commits (the KEEL_TEST_PAUSE_* hooks of core.zk.faults), then a new command (or the dashboard's connection)
must mark each row applied or failed, printing one note per row. In-process tests cover every kind's rule
(a BaseException from the same hook stands in for the kill: nothing in Keel catches it, so the row stays
pending exactly as a SIGKILL leaves it).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import zkformat as zf
from core.policy.config import ClusterConfig
from core.plans import parse_reassignment
from core.audit.store import Store
from core.topics import draft_add_partitions, draft_create_topic
from core.zk import election_writes, faults, reassign_writes, topic_admin
from core.zk.reconcile import GRACE_SECONDS, UNKNOWN_ELECTION, reconcile_pending
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
LONG_AGO = "2000-01-01T00:00:00Z"


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2], 1: [2, 3], 2: [3, 1]}, config={"retention.ms": "1000"})
        write_topic(s, "ledger", {0: [1, 2], 1: [2, 3]}, states={0: (2, [1, 2]), 1: (2, [2, 3])})
        write_topic(s, "old", {0: [3, 1]})
        yield s


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "keel.sqlite")


def backdate(store: Store, *action_ids: int) -> None:
    """As if the grace period had passed since these rows were written."""
    with sqlite3.connect(store.path) as db:
        db.executemany("UPDATE actions SET at = ? WHERE id = ?", [(LONG_AGO, i) for i in action_ids])


# --- real processes, SIGKILL ------------------------------------------------------------------------------


def killed(argv: list[str], point: str, timeout: float = 60) -> None:
    """Run `python -m core argv`, SIGKILL it once it reports `point` (before-multi / after-multi)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), faults.ENV[point]: "120"}
    proc = subprocess.Popen([sys.executable, "-m", "core", *argv], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    seen = []
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if not ready:
                assert proc.poll() is None, f"{argv} ended before {point}: {''.join(seen)}"
                continue
            line = proc.stderr.readline()
            seen.append(line)
            if line.strip() == f"{faults.MARKER} {point}":
                return
            assert line, f"{argv} ended before {point}: {''.join(seen)}"
        pytest.fail(f"{argv} did not reach {point} within {timeout:g} s: {''.join(seen)}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stderr.close()


def keel(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEEL_TEST_PAUSE")}
    return subprocess.run([sys.executable, "-m", "core", *argv], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                          text=True, capture_output=True, timeout=120)


def test_the_next_cli_run_settles_what_killed_runs_left_pending(tree, zk_connect, store, tmp_path):
    common = ["--zk", zk_connect, "--store", str(store.path)]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3]}]}))
    runs = [  # (argv, where it is killed, whether its write happened)
        (["create-topic", "--topic", "clicks", "--partitions", "3", "--replication-factor", "2"], "after-multi", True),
        (["create-topic", "--topic", "never", "--partitions", "3", "--replication-factor", "2"], "before-multi", False),
        (["alter-config", "--topic", "orders", "--add-config", "retention.ms=2000"], "after-multi", True),
        (["alter-config", "--topic", "orders", "--add-config", "retention.ms=3000"], "before-multi", False),
        (["execute", "--reassignment-json-file", str(plan), "--throttle", "1000"], "after-multi", True),
        (["delete-topic", "--topic", "old"], "before-multi", False),
    ]
    for argv, point, _ in runs:
        killed([*argv, *common], point)
    rows = sorted(store.actions(), key=lambda a: a.id)
    assert [a.status for a in rows] == ["pending"] * len(runs)  # each start left the younger rows alone
    killed(["create-topic", "--topic", "fresh", "--partitions", "1", "--replication-factor", "1", *common],
           "after-multi")  # pending, but younger than the grace period: maybe still in flight
    backdate(store, *(a.id for a in rows))

    done = keel("alter-config", "--topic", "ledger", "--add-config", "cleanup.policy=compact", *common)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: action #")]
    expected = [f"note: action #{a.id} ({a.kind} {a.target}) was left pending by an interrupted run: "
                f"{'found applied' if applied else 'not applied'}" for a, (_, _, applied) in zip(rows, runs)]
    assert notes == expected
    after = {a.id: a for a in store.actions()}
    for a, (_, _, applied) in zip(rows, runs):
        assert after[a.id].status == ("applied" if applied else "failed"), after[a.id]
        assert after[a.id].result.startswith("reconciled: " + ("the write was found" if applied else "not applied"))
    fresh = max(after.values(), key=lambda a: a.id if a.target == "fresh" else -1)
    assert (fresh.target, fresh.status) == ("fresh", "pending")
    assert after[max(after)].kind == "alter-config" and after[max(after)].status == "applied"  # the new run itself

    again = keel("alter-config", "--topic", "ledger", "--add-config", "cleanup.policy=delete", *common)
    assert again.returncode == 0 and "note:" not in again.stderr  # settled once, not again


def test_the_dashboard_settles_pending_rows_when_it_connects(tree, zk_connect, store, monkeypatch):
    from dashboard import frame

    monkeypatch.setattr(faults, "pause", raise_at("after-multi"))
    with pytest.raises(Killed):
        topic_admin.delete_topic(tree, store, "old", cluster="prod")
    monkeypatch.undo()
    [row] = store.pending("prod")
    backdate(store, row.id)
    monkeypatch.setenv("KEEL_STORE", str(store.path))
    conn = frame.Connection(ClusterConfig(name="prod", zk=zk_connect))
    try:
        conn.ensure()
        wait_until(lambda: conn.phase in ("ready", "failed"), timeout=30, message="the dashboard's connection")
        assert conn.phase == "ready", conn.error
        wait_until(lambda: store.action(row.id).status != "pending", timeout=10, message="the row to be settled")
    finally:
        conn.close()
    settled = store.action(row.id)
    assert settled.status == "applied" and "/admin/delete_topics/old exists" in settled.result


# --- every kind's rule, in-process ------------------------------------------------------------------------


class Killed(BaseException):
    """Stands in for SIGKILL: no `except Exception` in Keel stops it, so the row stays pending."""


def raise_at(point: str):
    def pause(p: str) -> None:
        if p == point:
            raise Killed(p)
    return pause


def interrupted(monkeypatch, point: str, write, *args, **kwargs) -> None:
    monkeypatch.setattr(faults, "pause", raise_at(point))
    try:
        with pytest.raises(Killed):
            write(*args, **kwargs)
    finally:
        monkeypatch.setattr(faults, "pause", lambda p: None)


def settle(session, store, cluster="c") -> dict[int, tuple[bool, str]]:
    return {r.action_id: (r.applied, r.result) for r in reconcile_pending(session, store, cluster, grace=0)}


@pytest.mark.parametrize("point,applied", [("after-multi", True), ("before-multi", False)])
def test_topic_writes(tree, store, monkeypatch, point, applied):
    snap, _ = topic_admin.live_state(tree)
    interrupted(monkeypatch, point, topic_admin.create_topic, tree, store,
                draft_create_topic(snap, "clicks", partitions=4, replication_factor=2), cluster="c")
    interrupted(monkeypatch, point, topic_admin.add_partitions, tree, store,
                draft_add_partitions(snap, "orders", 5), cluster="c")
    interrupted(monkeypatch, point, topic_admin.alter_config, tree, store, "orders", {"retention.ms": "5"}, cluster="c")
    interrupted(monkeypatch, point, topic_admin.delete_topic, tree, store, "old", cluster="c")
    assert len(store.pending("c")) == 4
    results = settle(tree, store)
    assert [ok for ok, _ in results.values()] == [applied] * 4, results
    assert store.pending("c") == []
    assert {a.status for a in store.actions()} == {"applied" if applied else "failed"}


def test_a_topic_created_by_someone_else_meanwhile_is_not_ours(tree, store, monkeypatch):
    snap, _ = topic_admin.live_state(tree)
    interrupted(monkeypatch, "before-multi", topic_admin.create_topic, tree, store,
                draft_create_topic(snap, "clicks", partitions=2, replication_factor=2), cluster="c")
    write_topic(tree, "clicks", {0: [1, 2], 1: [2, 3]}, topic_id="BBBBBBBBBBBBBBBBBBBBBB")
    [(ok, why)] = settle(tree, store).values()
    assert not ok and "another topic id" in why


def test_a_deleted_topic_counts_as_deleted(tree, store, monkeypatch):
    interrupted(monkeypatch, "after-multi", topic_admin.delete_topic, tree, store, "old", cluster="c")
    tree.delete_tree(zf.topic_path("old"))  # the controller finished the deletion
    tree.delete(zf.delete_topic_path("old"))
    [(ok, why)] = settle(tree, store).values()
    assert ok and "topic old is gone" in why


def plan(*entries) -> object:
    return parse_reassignment(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for t, p, r in entries]}))


def test_reassignment_in_flight_done_or_never_written(tree, store, monkeypatch):
    moves = plan(("orders", 0, [2, 3]), ("orders", 1, [2, 3]))
    interrupted(monkeypatch, "after-multi", reassign_writes.execute, tree, store, moves, cluster="c", throttle=1000)
    [(ok, why)] = settle(tree, store).values()
    assert ok and zf.REASSIGN in why

    # the controller finished it (node deleted, partitions at target) before anyone looked
    tree.delete(zf.REASSIGN)
    interrupted(monkeypatch, "after-multi", reassign_writes.execute, tree, store, plan(("orders", 2, [1, 2])),
                cluster="c")
    tree.delete(zf.REASSIGN)
    tree.set(zf.topic_path("orders"), zf.encode_topic({0: [2, 3], 1: [2, 3], 2: [1, 2]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    [(ok, why)] = settle(tree, store).values()
    assert ok and "at or moving to their targets" in why

    interrupted(monkeypatch, "before-multi", reassign_writes.execute, tree, store, plan(("orders", 2, [3, 1])),
                cluster="c")
    [(ok, why)] = settle(tree, store).values()
    assert not ok and "orders-2" in why


def test_a_throttle_change_of_unknown_outcome_is_settled_from_the_broker_configs(tree, store, monkeypatch):
    """Issue 28 leftover: a `throttle` row (kind "throttle") left pending is judged by the brokers' rates."""
    reassign_writes.execute(tree, store, plan(("orders", 0, [2, 3])), cluster="c", throttle=1000)
    interrupted(monkeypatch, "after-multi", reassign_writes.change_throttle, tree, store, 5000, cluster="c")
    [(ok, why)] = settle(tree, store).values()
    assert ok and "brokers 1,2,3 have the recorded rate 5000" in why
    interrupted(monkeypatch, "before-multi", reassign_writes.change_throttle, tree, store, 9000, cluster="c")
    [(ok, why)] = settle(tree, store).values()
    assert not ok and "rates 5000/5000, not 9000" in why
    interrupted(monkeypatch, "after-multi", reassign_writes.change_throttle, tree, store, None, cluster="c")
    [(ok, why)] = settle(tree, store).values()
    assert ok and "the recorded no rate" in why
    assert not store.pending("c")


def test_preferred_election_rule(tree, store, monkeypatch):
    # found in the node: applied
    interrupted(monkeypatch, "after-multi", election_writes.trigger, tree, store, cluster="c", topic="ledger")
    [(ok, why)] = settle(tree, store).values()
    assert ok and zf.PREFERRED_ELECTION in why and UNKNOWN_ELECTION not in why

    # node gone, leaders unchanged: not applied, but said to be unknown
    tree.delete(zf.PREFERRED_ELECTION)
    interrupted(monkeypatch, "before-multi", election_writes.trigger, tree, store, cluster="c", topic="ledger")
    [(ok, why)] = settle(tree, store).values()
    assert not ok and why.startswith(f"reconciled: {UNKNOWN_ELECTION}") and "1 of 1 partitions (ledger-0)" in why

    # node gone, every partition led by its preferred replica: applied, inferred
    interrupted(monkeypatch, "after-multi", election_writes.trigger, tree, store, cluster="c", topic="ledger")
    tree.delete(zf.PREFERRED_ELECTION)
    tree.set(zf.state_path("ledger", 0), zf.encode_partition_state(1, 1, 1, [1, 2]))  # as the controller would
    [result] = reconcile_pending(tree, store, "c", grace=0)
    assert result.applied and UNKNOWN_ELECTION in result.result
    assert result.note.endswith(f"{UNKNOWN_ELECTION}; recorded as applied")


def test_young_rows_and_other_clusters_are_left_alone(tree, store, monkeypatch):
    snap, _ = topic_admin.live_state(tree)
    interrupted(monkeypatch, "after-multi", topic_admin.create_topic, tree, store,
                draft_create_topic(snap, "clicks", partitions=1, replication_factor=1), cluster="c")
    assert reconcile_pending(tree, store, "c") == []  # younger than GRACE_SECONDS
    assert reconcile_pending(tree, store, "other", grace=0) == []
    [row] = store.pending("c")
    assert reconcile_pending(tree, store, "c", now=time.time() + GRACE_SECONDS + 1)[0].action_id == row.id


def test_a_run_that_finishes_after_all_keeps_its_own_status(tree, store):
    action = store.begin(cluster="c", kind="delete-topic", target="old", summary="s",
                         payload=[{"op": "create", "path": "/admin/delete_topics/old", "data": ""}])
    assert store.resolve(action, False, "reconciled: not applied") is True
    store.finish(action, ok=True, result="done")  # the run was alive after all: its finish wins
    assert store.action(action).status == "applied"
    assert store.resolve(action, False, "reconciled: again") is False  # only pending rows are resolved
    assert store.action(action).result == "done"


def test_unreadable_payload_is_left_pending(tree, store):
    action = store.begin(cluster="c", kind="create-topic", target="x", summary="s", payload={"odd": True})
    assert reconcile_pending(tree, store, "c", grace=0) == []
    assert store.action(action).status == "pending"


def test_a_failing_reconcile_never_fails_the_command(tree, zk_connect, tmp_path, capsys, monkeypatch):
    from core.cli import main
    from core.zk import reconcile

    def broken(*args, **kwargs):
        raise RuntimeError("reconcile broke")

    monkeypatch.setattr(reconcile, "reconcile_pending", broken)
    code = main(["delete-topic", "--zk", zk_connect, "--topic", "old", "--store", str(tmp_path / "s.sqlite")])
    out, err = capsys.readouterr()
    assert code == 0 and "marked topic old for deletion" in out and "reconcile broke" not in err
