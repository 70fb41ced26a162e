"""Issue 23 items 1-3 and issue 25 item 1: one gate (core.policy.gate) for every write of the command line.

Every write command, under each ZooKeeper -> KRaft migration phase and each role, against a real ZooKeeper: what
is refused writes nothing (the tree compared byte for byte) and is recorded; roles and read_only follow the cluster
however its connect string is spelled; a KEEL_CONFIG naming no file refuses; the engine itself refuses a write
during a migration even when called without the gate.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing

import pytest

from core import zkformat as zf
from core.cli import main
from core.cli.common import WRITE_COMMANDS
from core.errors import MigrationInProgressError
from core.audit.store import Store
from core.topics import draft_create_topic
from core.zk import topic_admin
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.zk.test_migration import KAFKA_KRAFT_CONTROLLER, KAFKA_MIGRATION, KAFKA_MIGRATION_EMPTY

CLUSTER_ID = "kT3bq0m1RZ2b8iA9o0lHcA"  # tests.support.kafka_tree.write_cluster's
PLAN = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 1]}]}
ELECTION = {"partitions": [{"topic": "orders", "partition": 0}]}


def tree(s: ZkSession, phase: str) -> None:
    """Brokers 1-3, topic orders with partition 0 led by its second replica (an election has work to do)."""
    write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=None)
    if phase == "none":
        s.create(zf.CONTROLLER, zf.encode_controller(1, 1))
    elif phase == "migration begun":  # /migration created, a ZooKeeper-mode broker still the controller
        s.create(zf.CONTROLLER, zf.encode_controller(1, 1))
        s.create(zf.MIGRATION, KAFKA_MIGRATION_EMPTY)
    else:  # dual-write: KRaft controller 3000 owns the cluster
        s.create(zf.CONTROLLER, KAFKA_KRAFT_CONTROLLER)
        s.create(zf.MIGRATION, KAFKA_MIGRATION)
    write_topic(s, "orders", {0: [1, 2], 1: [2, 3]}, states={0: (2, [1, 2]), 1: (2, [2, 3])})


def keel_toml(tmp_path, monkeypatch, body: str) -> None:
    path = tmp_path / "keel.toml"
    path.write_text(body)
    monkeypatch.setenv("KEEL_CONFIG", str(path))


def argv_for(command: str, zk: str, tmp_path) -> list[str]:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    unreachable = "127.0.0.1:1"  # cancel and log-dirs-execute go on to the Admin API once admitted
    return {
        "create-topic": ["create-topic", "--topic", "fresh", "--partitions", "1", "--replication-factor", "1"],
        "add-partitions": ["add-partitions", "--topic", "orders", "--partitions", "3"],
        "alter-config": ["alter-config", "--topic", "orders", "--add-config", "retention.ms=1000"],
        "delete-topic": ["delete-topic", "--topic", "orders"],
        "elect": ["elect", "--all", "--no-wait"],
        "execute": ["execute", "--reassignment-json-file", str(plan)],
        "verify": ["verify", "--reassignment-json-file", str(plan)],
        "rollback": ["rollback", "--action", "1"],
        "throttle": ["throttle", "--rate", "1000"],
        "auto-throttle": ["auto-throttle", "--budget", "1000", "--bootstrap-server", unreachable, "--kafka-timeout",
                          "1"],
        "cancel": ["cancel", "--all", "--bootstrap-server", unreachable, "--kafka-timeout", "1"],
        "log-dirs-execute": ["log-dirs-execute", "--reassignment-json-file", str(plan), "--bootstrap-server",
                             unreachable, "--kafka-timeout", "1"],
        "acl-add": ["acl-add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"],
        "acl-remove": ["acl-remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"],
        "quota-alter": ["quota-alter", "--user", "alice", "--add-config", "producer_byte_rate=1024"],
        "security-undo": ["security-undo", "--action", "1"],
        # issue 30: consumer-group writes reach the brokers (unreachable here) after the gate
        **{c: [c, *extra, "--bootstrap-server", unreachable, "--kafka-timeout", "1"] for c, extra in (
            ("reset-offsets", ["--group", "g", "--all-topics", "--to-earliest", "--execute"]),
            ("delete-offsets", ["--group", "g", "--topic", "orders"]), ("delete-group", ["--group", "g"]),
            ("offsets-undo", ["--action", "1"]))},
    }[command] + ["--zk", zk, "--connect-timeout", "5"]


def test_the_matrix_covers_every_write_command():
    from core.cli.app import build_parser

    commands = set(build_parser()._subparsers._group_actions[0].choices)  # noqa: SLF001 (argparse has no API)
    writers = {c for c in commands if c in WRITE_COMMANDS}
    assert writers == set(WRITE_COMMANDS), "every write command is in the gate's table"
    assert {"log-dirs-execute", "cancel", "rollback"} <= writers


ROLES = {"viewer": '[access]\noperator = ["cli:somebody-else"]\n', "operator": '[access]\noperator = ["cli"]\n',
         "admin": '[access]\nadmin = ["cli"]\n'}
NEEDS_ADMIN = {"delete-topic", "rollback", "acl-add", "acl-remove", "quota-alter", "security-undo"}


@pytest.mark.parametrize("phase", ["none", "migration begun", "dual-write"])
@pytest.mark.parametrize("role", list(ROLES))
def test_every_write_command_under_each_phase_and_role(phase, role, zk_connect, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    store = Store(tmp_path / "keel.sqlite")
    keel_toml(tmp_path, monkeypatch, ROLES[role] + f'[clusters.c]\nzk = "{zk_connect}"\n')
    for command in sorted(WRITE_COMMANDS):
        with ZkSession.open(zk_connect) as s:
            for child in s.children("/") or ():
                if child != "zookeeper":
                    s.delete(f"/{child}", recursive=True)
            tree(s, phase)
            before = dump_tree(s)
        last = max((a.id for a in store.actions(limit=1)), default=0)
        code = main(argv_for(command, zk_connect, tmp_path) + ["--store", str(store.path)])
        err = capsys.readouterr().err
        allowed_role = role == "admin" or (role == "operator" and command not in NEEDS_ADMIN)
        refused = [a for a in store.actions(limit=1000) if a.id > last and a.kind == "refused"]
        if phase == "none" and allowed_role:  # admitted: what follows is the command's own business
            assert not refused, (command, err)
            assert "the role of" not in err and "Writes through ZooKeeper are disabled" not in err, (command, err)
            continue
        assert code == 1, (command, phase, role, err)
        if phase != "none" and allowed_role:
            assert "Writes through ZooKeeper are disabled" in err, (command, err)
        else:
            assert f"cannot {command}: the role of sam on cluster c is '{role}'" in err, (command, err)
        with ZkSession.open(zk_connect) as s:
            assert dump_tree(s) == before, f"{command} wrote during {phase} as {role}"
        [row] = refused
        assert (row.cluster, row.actor, row.source, row.role, row.target) == ("c", "sam", "cli", role, command)


def test_the_engine_refuses_a_write_during_a_migration_without_the_gate(zk_connect, tmp_path):
    """Issue 23 item 3: the engine's own read refuses, for a caller that never went through core.policy.gate."""
    with ZkSession.open(zk_connect) as s:
        tree(s, "migration begun")
        draft = draft_create_topic(read_snapshot(s), "fresh", 1, 1)
        before = dump_tree(s)
        with pytest.raises(MigrationInProgressError, match="/migration exists"):
            topic_admin.create_topic(s, Store(tmp_path / "k.sqlite"), draft, cluster="c")
        assert dump_tree(s) == before


# --- the cluster, however it is spelled ---------------------------------------------------------------


@pytest.fixture
def p1(zk_connect, tmp_path, monkeypatch):
    """keel.toml: cluster p1 on this chroot, where only cli:ops operates; p2 elsewhere, where the CLI keeps every
    right. The global [access] names no cli principal (so an unmatched cluster used to get every right)."""
    with ZkSession.open(zk_connect) as s:
        tree(s, "none")
    other = zk_connect.rsplit("/", 1)[0] + "/elsewhere"
    keel_toml(tmp_path, monkeypatch, f'[clusters.p1]\nzk = "{zk_connect}"\n[clusters.p1.access]\n'
                                     f'operator = ["cli:ops"]\n[clusters.p2]\nzk = "{other}"\n')
    monkeypatch.setenv("KEEL_ACTOR", "viewer-sam")
    return zk_connect


def spellings(zk: str) -> list[str]:
    hosts, chroot = zk.split("/", 1)
    host, port = hosts.split(":")
    return [zk, f"localhost:{port}/{chroot}", f"{hosts},{hosts}/{chroot}", f"LOCALHOST:{port},{hosts}/{chroot}"]


def create(zk: str, store: Store, *extra: str) -> int:
    return main(["create-topic", "--zk", zk, "--topic", "fresh", "--partitions", "1", "--replication-factor", "1",
                 "--store", str(store.path), *extra])


def test_roles_follow_the_cluster_however_its_connect_string_is_spelled(p1, tmp_path, monkeypatch, capsys):
    store = Store(tmp_path / "keel.sqlite")
    with ZkSession.open(p1) as s:
        before = dump_tree(s)
    for spelled in spellings(p1):
        assert create(spelled, store) == 1, spelled
        assert "the role of viewer-sam on cluster p1 is 'viewer'" in capsys.readouterr().err, spelled
    with ZkSession.open(p1) as s:
        assert dump_tree(s) == before
    assert {(a.kind, a.cluster) for a in store.actions()} == {("refused", "p1")}
    monkeypatch.setenv("KEEL_ACTOR", "ops")
    assert create(spellings(p1)[1], store) == 0, capsys.readouterr().err
    written = store.actions()[0]
    assert (written.kind, written.cluster, written.role, written.cluster_id) == ("create-topic", "p1", "operator",
                                                                                CLUSTER_ID)


def test_an_unnamed_cluster_gets_the_least_role_any_configured_cluster_gives(p1, zk_server, tmp_path, monkeypatch,
                                                                             capsys):
    store = Store(tmp_path / "keel.sqlite")
    unnamed = zk_server + f"/not-in-keel-toml-{uuid.uuid4().hex[:8]}"
    with ZkSession.open(zk_server) as root:
        root.ensure_path(unnamed[len(zk_server):])
    with ZkSession.open(unnamed) as s:
        tree(s, "none")
    assert create(unnamed, store) == 1
    err = capsys.readouterr().err
    assert "on a cluster keel.toml does not name is 'viewer'" in err and "add it to" in err
    [row] = store.actions()
    assert (row.kind, row.cluster) == ("refused", unnamed)
    with ZkSession.open(unnamed) as s:
        assert s.get(zf.topic_path("fresh")).exists is False


def test_cluster_named_for_another_zookeeper_is_refused(p1, tmp_path, capsys):
    """--cluster p2 (where the CLI has every right) with p1's connect string: p2's role does not carry over."""
    store = Store(tmp_path / "keel.sqlite")
    assert create(p1, store, "--cluster", "p2") == 1
    err = capsys.readouterr().err
    assert "--cluster p2 is" in err and "reaches another cluster: nothing was written" in err
    with ZkSession.open(p1) as s:
        assert not s.get(zf.topic_path("fresh")).exists
    assert [a.kind for a in store.actions()] == ["refused"]


def test_a_keel_config_naming_no_file_refuses_every_write(zk_connect, tmp_path, monkeypatch, capsys):
    """Issue 23 item 2: a typo in the path of a read_only config used to be ignored (every right)."""
    with ZkSession.open(zk_connect) as s:
        tree(s, "none")
        before = dump_tree(s)
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.tmol"))
    store = Store(tmp_path / "keel.sqlite")
    for command in sorted(WRITE_COMMANDS):
        assert main(argv_for(command, zk_connect, tmp_path) + ["--store", str(store.path)]) == 1, command
        err = capsys.readouterr().err
        assert "keel.tmol: file not found (named by KEEL_CONFIG)" in err and f"refusing to {command}" in err, err
    with ZkSession.open(zk_connect) as s:
        assert dump_tree(s) == before
    assert [a.kind for a in store.actions(limit=100)] == ["refused"] * len(WRITE_COMMANDS)
    # a dry run writes nothing, so it needs no keel.toml
    assert main(["delete-topic", "--zk", zk_connect, "--topic", "orders", "--dry-run"]) == 0


def test_pending_rows_are_settled_whatever_spelling_recorded_them(zk_connect, tmp_path, monkeypatch, capsys):
    """Issue 23 item 1: a pending row recorded as `localhost:...` is settled by a command spelled `127.0.0.1:...`
    (both are one cluster: its /cluster/id), and History keeps one name for it."""
    with ZkSession.open(zk_connect) as s:
        tree(s, "none")
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.toml"))
    (tmp_path / "keel.toml").write_text('[clusters.unrelated]\nzk = "127.0.0.1:1/x"\n')
    store = Store(tmp_path / "keel.sqlite")
    localhost = spellings(zk_connect)[1]
    assert main(["add-partitions", "--zk", localhost, "--topic", "orders", "--partitions", "3",
                 "--store", str(store.path)]) == 0, capsys.readouterr().err
    [first] = store.actions()
    assert first.cluster_id == CLUSTER_ID and first.cluster == localhost.lower()
    with closing(sqlite3.connect(store.path)) as db, db:  # as if the process had died before finishing it
        db.execute("UPDATE actions SET status = 'pending', at = '2020-01-01T00:00:00Z' WHERE id = ?", (first.id,))
    assert create(zk_connect, store) == 0
    assert f"action #{first.id} (add-partitions orders) was left pending by an interrupted run: found applied" \
        in capsys.readouterr().err
    assert store.action(first.id).status == "applied"
    assert {a.cluster for a in store.actions()} == {localhost.lower()}  # one History name for one cluster


def test_a_rollback_runs_only_on_the_cluster_its_reassignment_ran_on(zk_connect, zk_server, tmp_path, monkeypatch,
                                                                     capsys):
    """A rollback is another cluster's old assignment anywhere else: refused (noticed with issue 23, item 6)."""
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.toml"))
    (tmp_path / "keel.toml").write_text('[clusters.unrelated]\nzk = "127.0.0.1:1/x"\n')
    other = zk_server + f"/other-{uuid.uuid4().hex[:8]}"
    with ZkSession.open(zk_server) as root:
        root.ensure_path(other[len(zk_server):])
    for connect, cid in ((zk_connect, CLUSTER_ID), (other, "b3RoZXItY2x1c3Rlci1pZA")):
        with ZkSession.open(connect) as s:
            tree(s, "none")
            s.set(zf.CLUSTER_ID, zf.encode_cluster_id(cid))
    store = Store(tmp_path / "keel.sqlite")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    assert main(["execute", "--zk", zk_connect, "--reassignment-json-file", str(plan),
                 "--store", str(store.path)]) == 0, capsys.readouterr().err
    [executed] = store.actions()
    with ZkSession.open(zk_connect) as s:  # as the controller would: the reassignment done
        s.delete(zf.REASSIGN)
    with ZkSession.open(other) as s:
        before = dump_tree(s)
    assert main(["rollback", "--zk", other, "--action", str(executed.id), "--store", str(store.path)]) == 1
    err = capsys.readouterr().err
    assert f"action {executed.id} ran on cluster {zk_connect} (/cluster/id {CLUSTER_ID}), not on {other}" in err
    with ZkSession.open(other) as s:
        assert dump_tree(s) == before
    # on its own cluster, under another spelling, it is let through
    assert main(["rollback", "--zk", spellings(zk_connect)[1], "--action", str(executed.id),
                 "--store", str(store.path)]) == 0, capsys.readouterr().err
    rolled = store.actions(kind="rollback")[0]  # History names it a rollback (issue 24, item 7)
    assert rolled.summary.startswith(f"rollback of action #{executed.id}: 1 partitions"), rolled.summary
