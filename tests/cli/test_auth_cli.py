"""Issue 17: the command line acts as source `cli` with the OS user. It keeps every right (it runs with the operator's
own ZooKeeper credentials) unless keel.toml's [access] names a `cli` principal; then its writes go through the same
check as the browser's and a refusal is recorded. Issue 23: read_only binds the command line either way."""

from __future__ import annotations

import pytest

from core.cli import main
from core.audit.store import Store
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2], 1: [2, 3]})
    return zk_connect


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    return Store(tmp_path / "keel.sqlite")


def config(tmp_path, monkeypatch, zk: str, access: str = "", read_only: bool = False) -> None:
    path = tmp_path / "keel.toml"
    path.write_text(f'[keel]\nrole = "viewer"\nread_only = {str(read_only).lower()}\n[auth]\nmode = "oidc"\n'
                    f'{access}\n[clusters.prod]\nzk = "{zk}"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(path))


def run(capsys, store, *argv):
    code = main([*argv, "--store", str(store.path)])
    return code, capsys.readouterr().err


def test_without_cli_rules_the_cli_keeps_its_rights_and_is_audited(cluster, tmp_path, monkeypatch, store, capsys):
    config(tmp_path, monkeypatch, cluster, '[access]\nadmin = ["group:kafka-admins"]')
    code, err = run(capsys, store, "delete-topic", "--zk", cluster, "--topic", "orders")
    assert code == 0, err
    [a] = store.actions()
    assert (a.kind, a.actor, a.source, a.role, a.cluster) == ("delete-topic", "sam", "cli", "admin", "prod")


def test_read_only_binds_the_cli_without_cli_rules_too(cluster, tmp_path, monkeypatch, store, capsys):
    """Issue 23: `read_only = true` is "no writes at all"; before, the CLI ignored it unless [access] named cli."""
    config(tmp_path, monkeypatch, cluster, '[access]\nadmin = ["group:kafka-admins"]', read_only=True)
    with ZkSession.open(cluster) as s:
        before = dump_tree(s)
    code, err = run(capsys, store, "delete-topic", "--zk", cluster, "--topic", "orders")
    assert code == 1 and "cannot delete-topic: this Keel instance is read-only" in err
    with ZkSession.open(cluster) as s:
        assert dump_tree(s) == before
    [refused] = store.actions()
    assert (refused.kind, refused.cluster, refused.actor, refused.source) == ("refused", "prod", "sam", "cli")


def test_cli_rules_are_checked_refusals_recorded(cluster, tmp_path, monkeypatch, store, capsys):
    config(tmp_path, monkeypatch, cluster, '[access]\noperator = ["cli"]\nadmin = ["cli:root-ops"]')
    with ZkSession.open(cluster) as s:
        before = dump_tree(s)
    code, err = run(capsys, store, "delete-topic", "--zk", cluster, "--topic", "orders")
    assert code == 1
    assert "cannot delete-topic: the role of sam on cluster prod is 'operator'; only an admin may delete" in err
    assert 'grant "cli:sam" the admin role' in err
    with ZkSession.open(cluster) as s:
        assert dump_tree(s) == before
    [refused] = store.actions()
    assert (refused.kind, refused.status, refused.actor, refused.source, refused.role) == \
        ("refused", "failed", "sam", "cli", "operator")
    # an operator's write goes through, recorded with the role
    code, err = run(capsys, store, "add-partitions", "--zk", cluster, "--topic", "orders", "--partitions", "3")
    assert code == 0, err
    grown = store.actions()[0]
    assert (grown.kind, grown.source, grown.role, grown.actor) == ("add-partitions", "cli", "operator", "sam")
    # --dry-run writes nothing and needs no role
    code, err = run(capsys, store, "delete-topic", "--zk", cluster, "--topic", "orders", "--dry-run")
    assert code == 0, err


def test_cli_rules_and_read_only(cluster, tmp_path, monkeypatch, store, capsys):
    config(tmp_path, monkeypatch, cluster, '[access]\nadmin = ["cli"]', read_only=True)
    code, err = run(capsys, store, "add-partitions", "--zk", cluster, "--topic", "orders", "--partitions", "3")
    assert code == 1 and "this Keel instance is read-only" in err
    [refused] = store.actions()  # issue 25: every refusal is recorded, read_only's too
    assert (refused.kind, refused.status, refused.role, refused.target) == ("refused", "failed", "admin",
                                                                            "add-partitions")
