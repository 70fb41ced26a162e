"""Issue 12, item 5 on the command line: a topic made unwritable (min.insync.replicas above the replication
factor) is warned about, refused without --accept-risk (nothing written), and applied with it."""

import pytest

from core import zkformat as zf
from core.cli import main
from core.audit.store import Store
from tests.support.kafka_tree import dump_tree

RISK = "is above the replication factor 3"


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "keel.sqlite")


def cli(capsys, store, *argv):
    code = main([*argv, "--store", str(store.path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def tree(sb) -> dict[str, bytes]:
    return {**dump_tree(sb.session, "/brokers"), **dump_tree(sb.session, "/config"), **dump_tree(sb.session, "/admin")}


def create(capsys, store, sb, *extra):
    return cli(capsys, store, "create-topic", "--zk", sb.connect, "--topic", "strict", "--partitions", "3",
               "--replication-factor", "3", "--config", "min.insync.replicas=4", *extra)


def test_create_with_min_isr_above_rf_is_refused_without_accept_risk(sandbox, store, capsys):
    before = tree(sandbox)
    code, out, err = create(capsys, store, sandbox)
    assert code == 1
    assert f"warning: min.insync.replicas=4 {RISK} of topic strict" in err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "--accept-risk" in error[0] and "nothing was written" in error[0]
    assert tree(sandbox) == before and store.actions() == []


def test_create_dry_run_shows_the_risk_and_writes_nothing(sandbox, store, capsys):
    before = tree(sandbox)
    code, out, err = create(capsys, store, sandbox, "--dry-run")
    assert code == 0 and "would create topic strict" in out
    assert f"warning: min.insync.replicas=4 {RISK}" in err and "--accept-risk" in err
    assert tree(sandbox) == before and store.actions() == []


def test_create_with_accept_risk_applies(sandbox, store, capsys):
    code, out, err = create(capsys, store, sandbox, "--accept-risk")
    assert code == 0 and "created topic strict: 3 partitions, replication factor 3" in out
    assert f"warning: min.insync.replicas=4 {RISK}" in err
    assert zf.decode_config(sandbox.session.get(zf.topic_config_path("strict")).data, "") == {
        "min.insync.replicas": "4"}
    [action] = store.actions()
    assert (action.kind, action.status) == ("create-topic", "applied")


def test_create_without_a_risk_needs_no_flag(sandbox, store, capsys):
    code, _, err = cli(capsys, store, "create-topic", "--zk", sandbox.connect, "--topic", "fine", "--partitions", "1",
                       "--replication-factor", "3", "--config", "min.insync.replicas=2")
    assert code == 0 and "warning" not in err


def _alter(capsys, store, sb, *extra):
    return cli(capsys, store, "alter-config", "--zk", sb.connect, "--topic", "strict",
               "--add-config", "min.insync.replicas=5", *extra)


def test_alter_config_min_isr_above_rf_needs_accept_risk(sandbox, store, capsys):
    code, _, _ = cli(capsys, store, "create-topic", "--zk", sandbox.connect, "--topic", "strict", "--partitions", "2",
                     "--replication-factor", "3")
    assert code == 0
    before, actions = tree(sandbox), store.actions()

    code, out, err = _alter(capsys, store, sandbox, "--dry-run")
    assert code == 0 and f"warning: min.insync.replicas=5 {RISK} of topic strict" in err
    assert tree(sandbox) == before

    code, out, err = _alter(capsys, store, sandbox)
    assert code == 1 and f"warning: min.insync.replicas=5 {RISK}" in err
    assert "error:" in err and "--accept-risk" in err
    assert tree(sandbox) == before and store.actions() == actions

    code, out, err = _alter(capsys, store, sandbox, "--accept-risk")
    assert code == 0 and "altered config of strict: min.insync.replicas=5" in out
    assert zf.decode_config(sandbox.session.get(zf.topic_config_path("strict")).data, "") == {
        "min.insync.replicas": "5"}
    assert store.actions()[0].kind == "alter-config" and store.actions()[0].status == "applied"
