"""Issue 19, item 3: two writers at once, as real `python -m core` processes against one cluster.

Each race runs twice: once with both processes held at their pause point right before the commit
(KEEL_TEST_PAUSE_BEFORE_WRITE, core.zk.faults), so that both have read the cluster before either writes and
the loser is refused by ZooKeeper itself (the atomic multi-op fails as a whole), and once started together with
no pause (the loser is usually refused by its own re-read). Either way one wins, the other gets Kafka's message
and writes nothing: the tree holds exactly the winner's write, and the action history holds one applied action
and no pending one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import zkformat as zf
from core.audit.store import Store
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic

ROOT = Path(__file__).resolve().parents[2]
HELD = {"KEEL_TEST_PAUSE_BEFORE_WRITE": "1.5"}


@pytest.fixture
def cluster(zk_connect):
    """Brokers 1-3, no controller (nothing acts on /admin nodes, so they stay while the second writer comes)."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"})
        write_topic(s, "t", {0: [1, 2], 1: [2, 3], 2: [3, 1]},
                    states={0: (2, [2, 1]), 1: (3, [3, 2]), 2: (1, [1, 3])})  # no partition led by its preferred
        yield s


def run(*argvs: list[str], env: dict[str, str] | None = None) -> list[subprocess.CompletedProcess]:
    """Start every process at once; wait for all."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    procs = [subprocess.Popen([sys.executable, "-m", "core", *argv], cwd=ROOT, env=environ, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in argvs]
    out = []
    for p, argv in zip(procs, argvs):
        stdout, stderr = p.communicate(timeout=90)
        assert "Traceback" not in stderr, stderr
        out.append(subprocess.CompletedProcess(argv, p.returncode, stdout, stderr.replace("keel-test-pause: "
                                                                                          "before-multi\n", "")))
    return out


def one_winner(results: list[subprocess.CompletedProcess], refusal: str) -> tuple[int, subprocess.CompletedProcess]:
    codes = [r.returncode for r in results]
    assert sorted(codes) == [0, 1], [(r.returncode, r.stdout, r.stderr) for r in results]
    winner = codes.index(0)
    loser = results[1 - winner]
    assert loser.stderr.startswith("error: ") and refusal in loser.stderr, loser.stderr
    return winner, loser


def history(store: Path, kind: str, held: bool = False, refusal: str = "") -> list:
    """One applied action of `kind`, none pending; with `held` both writers got as far as the write, so the
    loser's action is there too, failed with Kafka's message."""
    actions = [a for a in Store(store).actions() if a.kind == kind]
    assert not [a for a in actions if a.status == "pending"], actions
    assert len([a for a in actions if a.status == "applied"]) == 1, actions
    if held:
        failed = [a for a in actions if a.status == "failed"]
        assert len(failed) == 1 and refusal in failed[0].result, actions
    return actions


@pytest.mark.parametrize("held", [True, False], ids=["both-read-first", "plain"])
def test_two_create_topic_of_the_same_name(cluster, zk_connect, tmp_path, held):
    store = tmp_path / "keel.sqlite"
    placements = ["1:2,2:3", "3:1,1:2,2:3"]
    results = run(*(["create-topic", "--zk", zk_connect, "--store", str(store), "--topic", "x",
                     "--replica-assignment", placement, "--config", f"retention.ms={1000 + i}"]
                    for i, placement in enumerate(placements)), env=HELD if held else None)
    winner, _ = one_winner(results, "Topic 'x' already exists.")
    # Exactly the winner's topic: its placement and its config, nothing of the loser's.
    topic = zf.decode_topic("x", cluster.get(zf.topic_path("x")).data)
    expected = {p: [int(b) for b in reps.split(":")] for p, reps in enumerate(placements[winner].split(","))}
    assert {p: list(r) for p, r in topic.partitions.items()} == expected
    assert zf.decode_config(cluster.get(zf.topic_config_path("x")).data, "") == {"retention.ms": str(1000 + winner)}
    history(store, "create-topic", held, "Topic 'x' already exists.")


def plan_file(tmp_path: Path, name: str, moves: dict[int, list[int]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": p, "replicas": r}
                                                            for p, r in moves.items()]}))
    return path


def test_execute_while_a_reassignment_runs(cluster, zk_connect, tmp_path):
    store = tmp_path / "keel.sqlite"
    first, second = plan_file(tmp_path, "a.json", {0: [2, 3]}), plan_file(tmp_path, "b.json", {1: [1, 3]})
    [done] = run(["execute", "--zk", zk_connect, "--store", str(store), "--reassignment-json-file", str(first)])
    assert done.returncode == 0, done.stderr
    before = dump_tree(cluster)
    [refused] = run(["execute", "--zk", zk_connect, "--store", str(store), "--reassignment-json-file", str(second)])
    assert refused.returncode == 1 and refused.stderr.startswith("error: There is an existing assignment running.")
    assert dump_tree(cluster) == before


@pytest.mark.parametrize("held", [True, False], ids=["both-read-first", "plain"])
def test_two_execute_at_once(cluster, zk_connect, tmp_path, held):
    store = tmp_path / "keel.sqlite"
    plans = [plan_file(tmp_path, "a.json", {0: [2, 3]}), plan_file(tmp_path, "b.json", {1: [1, 3]})]
    results = run(*(["execute", "--zk", zk_connect, "--store", str(store), "--reassignment-json-file", str(p)]
                    for p in plans), env=HELD if held else None)
    winner, _ = one_winner(results, "There is an existing assignment running.")
    node = zf.decode_reassignment(cluster.get(zf.REASSIGN).data)
    assert [(e.topic, e.partition, list(e.replicas)) for e in node] == \
        ([("t", 0, [2, 3])] if winner == 0 else [("t", 1, [1, 3])])
    history(store, "reassignment", held, "There is an existing assignment running.")


def test_elect_while_an_election_is_pending(cluster, zk_connect, tmp_path):
    store = tmp_path / "keel.sqlite"
    [done] = run(["elect", "--zk", zk_connect, "--store", str(store), "--topic", "t", "--no-wait"])
    assert done.returncode == 0, done.stderr
    before = dump_tree(cluster)
    [refused] = run(["elect", "--zk", zk_connect, "--store", str(store), "--all", "--no-wait"])
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith("error: Preferred replica leader election currently in progress for "
                                     "t-0, t-1, t-2. Aborting operation"), refused.stderr
    assert dump_tree(cluster) == before


@pytest.mark.parametrize("held", [True, False], ids=["both-read-first", "plain"])
def test_two_elect_at_once(cluster, zk_connect, tmp_path, held):
    store = tmp_path / "keel.sqlite"
    results = run(*(["elect", "--zk", zk_connect, "--store", str(store), "--no-wait", *scope]
                    for scope in (["--topic", "t"], ["--broker", "1"])), env=HELD if held else None)
    winner, _ = one_winner(results, "Preferred replica leader election currently in progress for ")
    written = set(zf.decode_preferred_election(cluster.get(zf.PREFERRED_ELECTION).data))
    assert written == ({("t", 0), ("t", 1), ("t", 2)} if winner == 0 else {("t", 0)})
    history(store, "preferred-election", held, "another election started first")


def test_delete_topic_being_reassigned(cluster, zk_connect, tmp_path):
    """Kafka (ZooKeeper mode) accepts it: `kafka-topics --delete` (AdminZkClient.deleteTopic) only refuses an
    unknown topic or one already marked, and writes /admin/delete_topics/<t>; the controller's
    TopicDeletionManager then keeps the topic ineligible for deletion while any of its partitions is being
    reassigned (markTopicIneligibleForDeletion) and resumes the deletion when the reassignment completes. Keel
    does the same and says so: exit 0, the one admin node written, and a warning that the deletion waits for the
    reassignment. A second delete of the same topic, even at the same moment, gets Kafka's "Topic t is already
    marked for deletion." and writes nothing."""
    store = tmp_path / "keel.sqlite"
    [done] = run(["execute", "--zk", zk_connect, "--store", str(store), "--reassignment-json-file",
                  str(plan_file(tmp_path, "a.json", {0: [2, 3], 2: [1, 2]}))])
    assert done.returncode == 0, done.stderr
    before = dump_tree(cluster)
    results = run(*(["delete-topic", "--zk", zk_connect, "--store", str(store), "--topic", "t"] for _ in range(2)),
                  env=HELD)
    winner, loser = one_winner(results, "Topic t is already marked for deletion.")
    assert "Topic t has 2 partition(s) being reassigned (t-0 ...): the controller deletes it only after the " \
           "reassignment completes" in results[winner].stderr, results[winner].stderr
    after = dump_tree(cluster)
    assert {p: d for p, d in after.items() if before.get(p) != d} == {zf.delete_topic_path("t"): b""}
    assert set(before) - set(after) == set()
    history(store, "delete-topic", True, "Topic t is already marked for deletion.")
