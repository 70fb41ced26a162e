"""Issue 24, item 10: what an SRE hit on the command line, against a real ZooKeeper.

- every command's `--help` says what each of its exit statuses means, and README's table says the same
  (`verify` exits 3 while the reassignment runs, where Kafka's tool exits 0 either way);
- `execute` gives one rollback instruction (Keel's, runnable as printed), not Kafka's "save this" beside it;
- a snapshot taken without `--cluster` is named: keel.toml's name for the --zk, else the canonical connect string.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from core import zkformat as zf
from core.cli import main
from core.cli.app import build_parser
from core.cli.exits import SPECIFIC, commands, statuses
from core.model import ClusterSnapshot
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic

README = Path(__file__).resolve().parents[2] / "README.md"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def help_of(capsys, command: str) -> str:
    with pytest.raises(SystemExit) as e:
        main([*command.split(), "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def test_every_command_documents_its_exit_statuses_in_help_and_readme(capsys):
    every = commands(build_parser())
    assert {"verify", "execute", "snapshot", "fleet collect"} <= set(every)
    assert not {"kafka status", "sandbox up"} & set(every)  # the sandbox's are `python -m sandbox` (test_sandbox.py)
    assert set(SPECIFIC) <= set(every), set(SPECIFIC) - set(every)
    rows = {}
    for cells in re.findall(r"^\| (.+?) \| (.+) \|$", README.read_text(), re.M):
        for name in re.findall(r"`([a-z -]+)`", cells[0]):
            rows[name] = cells[1].replace("`", "")
    for name in every:
        text = " ".join(help_of(capsys, name).split())
        assert "exit status: 0 " in text, name
        for code, meaning in statuses(name).items():
            assert f" {code} {' '.join(meaning.split())}" in text, (name, code)
        # README's table: a row for each command, saying what --help says of the statuses it adds
        assert name in rows, f"README's exit status table names no {name}"
        for code, meaning in SPECIFIC.get(name, {}).items():
            assert f"{code} {meaning}" in rows[name], (name, code, rows[name])
    verify = " ".join(help_of(capsys, "verify").split())
    assert "3 not finished" in verify and "--verify exits 0 either way" in verify
    top = " ".join(help_of(capsys, "").split())
    assert "3 done, but the answer is no" in top and "restart-check" in top


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2], 1: [2, 3]})
    return zk_connect


def test_execute_prints_one_rollback_instruction_that_runs_as_printed(cluster, tmp_path, capsys):
    store = str(tmp_path / "history dir" / "keel.sqlite")  # a space: the printed command must quote it
    Path(store).parent.mkdir()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 2]}]}))
    code, out, err = run(capsys, "execute", "--zk", cluster, "--reassignment-json-file", str(plan), "--store", store)
    assert code == 0, err
    assert "--reassignment-json-file option during rollback" not in out  # Kafka's instruction is gone
    mentions = [x for x in out.replace(cluster, "ZK").splitlines() if "roll" in x]
    assert len(mentions) == 2, out  # the JSON's label and the one instruction
    current = out.split("\n\n")[1]
    assert json.loads(current) == {"version": 1, "partitions": [{"topic": "orders", "partition": 0,
                                                                 "replicas": [1, 2], "log_dirs": ["any", "any"]}]}
    [line] = [x for x in out.splitlines() if x.startswith("To roll it back once it has completed: ")]
    argv = shlex.split(line.split(": ", 1)[1])
    action = re.search(r"\(action (\d+)\)", out).group(1)
    assert argv == ["python", "-m", "core", "rollback", "--zk", cluster, "--action", action, "--store", store]

    # while it runs (no controller here), verify answers 3; its --help says so (see above)
    code, out, _ = run(capsys, "verify", "--zk", cluster, "--reassignment-json-file", str(plan), "--store", store)
    assert code == 3 and "is in progress" in out
    with ZkSession.open(cluster) as s:  # what the controller does when it completes
        s.set(zf.topic_path("orders"), zf.encode_topic({0: [3, 2], 1: [2, 3]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
        s.set(zf.state_path("orders", 0), zf.encode_partition_state(3, 1, 1, [3, 2]))
        s.delete(zf.REASSIGN)
    code, out, _ = run(capsys, "verify", "--zk", cluster, "--reassignment-json-file", str(plan), "--store", store)
    assert code == 0 and "is complete" in out
    code, out, err = run(capsys, *argv[3:])  # the instruction, as printed
    assert code == 0 and f"Successfully started the rollback of action {action}" in out, err


def test_snapshot_without_cluster_is_named(cluster, tmp_path, capsys, monkeypatch):
    host_port, chroot = cluster.split("/", 1)
    port = host_port.rsplit(":", 1)[1]
    out = tmp_path / "snap.json"
    # keel.toml names the cluster; --zk spells it differently (localhost, a duplicate server)
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.prod-eu1]\nzk = "127.0.0.1:{port}/{chroot}"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    spelled = f"localhost:{port},127.0.0.1:{port}/{chroot}"
    code, _, err = run(capsys, "snapshot", "--zk", spelled, "-o", str(out))
    assert code == 0, err
    assert ClusterSnapshot.from_json(out.read_text()).cluster == "prod-eu1"
    code, text, _ = run(capsys, "describe", "--zk", spelled, "--json")
    assert code == 0 and ClusterSnapshot.from_json(text).cluster == "prod-eu1"
    # --cluster still wins
    code, _, _ = run(capsys, "snapshot", "--zk", spelled, "-o", str(out), "--cluster", "mine")
    assert code == 0 and ClusterSnapshot.from_json(out.read_text()).cluster == "mine"
    # a cluster keel.toml does not name: its canonical connect string, never ""
    config.write_text('[clusters.other]\nzk = "10.255.255.1:2181/elsewhere"\n')
    code, _, err = run(capsys, "snapshot", "--zk", f"LOCALHOST:{port}/{chroot}", "-o", str(out))
    assert code == 0, err
    assert ClusterSnapshot.from_json(out.read_text()).cluster == f"localhost:{port}/{chroot}"
    # a KEEL_CONFIG naming no file: the read goes on, named by the connect string, with a warning
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.tmol"))
    code, _, err = run(capsys, "snapshot", "--zk", cluster, "-o", str(out))
    assert code == 0 and "keel.tmol" in err and "named by its connect string" in err
    assert ClusterSnapshot.from_json(out.read_text()).cluster == cluster
