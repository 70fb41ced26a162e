"""Every `--dry-run` of the CLI writes nothing anywhere (issue 23, item 7): no ZooKeeper node changes, the action
history is neither created (file or directory) nor written (a pending row an interrupted run left stays pending,
where a real command would settle it).

The commands are found in the parser, so a new `--dry-run` fails `test_every_dry_run_is_covered` until it is added
here. log-dirs-execute needs brokers (its dry run asks them where each replica is): it is covered in
tests/kafka/test_rollback_throttle.py.
"""

from __future__ import annotations

import sqlite3

import pytest

from core.cli import build_parser, main
from core.audit.store import Store
from core.zk.reconcile import reconcile_pending
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic

DRY_RUNS = {
    "create-topic": ["--topic", "fresh", "--partitions", "3", "--replication-factor", "2"],
    "add-partitions": ["--topic", "orders", "--partitions", "4"],
    "alter-config": ["--topic", "orders", "--add-config", "retention.ms=1000"],
    "delete-topic": ["--topic", "orders"],
    "elect": ["--all"],
    "acl-add": ["--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"],
    "quota-alter": ["--user", "alice", "--add-config", "producer_byte_rate=1024"],
}
ELSEWHERE = {"log-dirs-execute": "tests/kafka/test_rollback_throttle.py (needs brokers)",
             "acl-remove": "tests/cli/test_security_cli.py (needs a binding to remove)",
             "security-undo": "tests/cli/test_security_cli.py (needs a recorded change)",
             "reset-offsets": "tests/kafka/test_offset_reset_real.py (needs brokers: the group's offsets)"}


@pytest.fixture
def cluster(zk_connect):
    """Brokers 1-3 with racks and a controller; orders-1 is led by broker 3, not its preferred 2 (elect has work)."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, states={0: (1, [1, 2, 3]), 1: (3, [2, 3, 1])})
        yield s


def test_every_dry_run_is_covered():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    with_dry_run = {name for name, p in sub.choices.items() if any(a.dest == "dry_run" for a in p._actions)}
    assert with_dry_run == set(DRY_RUNS) | set(ELSEWHERE)


@pytest.mark.parametrize("command", sorted(DRY_RUNS))
def test_a_dry_run_creates_no_store_and_changes_no_znode(command, cluster, zk_connect, tmp_path, monkeypatch, capsys):
    before = dump_tree(cluster)
    named = tmp_path / "named" / "keel.sqlite"
    assert main([command, "--zk", zk_connect, *DRY_RUNS[command], "--dry-run", "--store", str(named)]) == 0, \
        capsys.readouterr().err
    # the default store ($KEEL_STORE) as well
    default = tmp_path / "default" / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(default))
    assert main([command, "--zk", zk_connect, *DRY_RUNS[command], "--dry-run"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out  # the preview
    assert not (tmp_path / "named").exists() and not (tmp_path / "default").exists()
    assert dump_tree(cluster) == before


@pytest.mark.parametrize("command", sorted(DRY_RUNS))
def test_a_dry_run_leaves_an_existing_store_alone(command, cluster, zk_connect, tmp_path, capsys):
    """A pending row an interrupted run left (its write never happened) is settled by the next real command of
    the cluster; a dry run leaves it pending, the file unchanged."""
    store = Store(tmp_path / "keel.sqlite")
    pending = store.begin(cluster=zk_connect, kind="delete-topic", target="orders", summary="interrupted",
                          payload=[{"op": "create", "path": "/admin/delete_topics/orders", "data": ""}])
    with sqlite3.connect(store.path) as db:  # older than reconcile's grace period
        db.execute("UPDATE actions SET at = '2020-01-01T00:00:00Z' WHERE id = ?", (pending,))
    db.close()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    before = dump_tree(cluster)
    assert main([command, "--zk", zk_connect, *DRY_RUNS[command], "--dry-run", "--store", str(store.path)]) == 0, \
        capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files
    assert store.action(pending).status == "pending"
    assert dump_tree(cluster) == before
    # what a real command would have done first (core.cli.common's reconcile, which a dry run skips)
    [settled] = reconcile_pending(cluster, store, zk_connect)
    assert (settled.action_id, settled.applied) == (pending, False)
