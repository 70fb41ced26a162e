"""Plan, execute, verify and roll back a reassignment through the CLI against the sandbox controller."""

import json
import re

from core.cli import main
from sandbox.emulator.controller import ControllerEmulator
from sandbox.seed import SandboxSpec, seed_cluster
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.sandbox_helpers import wait_until


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fill_a_new_broker_then_roll_back(zk_connect, tmp_path, capsys):
    store = str(tmp_path / "keel.sqlite")
    with ZkSession.open(zk_connect) as s:
        seed_cluster(s, SandboxSpec(brokers=6, racks=3, topics=6, seed=3, demo=False))
        with ControllerEmulator(s, reassign_base_delay=0.5) as _:  # slow enough for the second execute to meet it
            before = read_snapshot(s)
            plan, rollback, report = (tmp_path / n for n in ("plan.json", "rollback.json", "report.json"))
            # drain broker 6: every replica it holds must move, and nothing else needs to
            code, _, err = run(capsys, "plan", "--zk", zk_connect, "--strategy", "balanced", "--exclude-brokers", "6",
                               "-o", str(plan), "--rollback-output", str(rollback), "--report", str(report))
            assert code == 0, err
            doc = json.loads(plan.read_text())
            assert doc["partitions"] and all(6 not in e["replicas"] for e in doc["partitions"])
            held = sum(6 in p.replicas for p in before.partitions())
            assert json.loads(report.read_text())["report"]["replicas_moved"] >= held

            code, out, err = run(capsys, "execute", "--zk", zk_connect, "--reassignment-json-file", str(plan),
                                 "--throttle", "500000000", "--store", store)
            assert code == 0, err
            assert "Successfully started reassignment" in out
            action_id = int(re.search(r"reassignment of \d+ partitions \(action (\d+)\)", out).group(1))
            # a second execute while the first runs is refused with Kafka's message
            code, _, err = run(capsys, "execute", "--zk", zk_connect, "--reassignment-json-file", str(plan),
                               "--store", store)
            assert code == 1 and "There is an existing assignment running." in err

            def verified():
                code, out, _ = run(capsys, "verify", "--zk", zk_connect, "--reassignment-json-file", str(plan),
                                   "--store", store)
                return code == 0 and out

            out = wait_until(verified, timeout=60, interval=0.5, message="reassignment complete")
            assert "Throttle was removed." in out
            after = read_snapshot(s)
            assert not any(6 in p.replicas for p in after.partitions())
            assert not any(k.endswith("throttled.rate") for cfg in after.broker_configs.values() for k in cfg)

            code, out, err = run(capsys, "rollback", "--zk", zk_connect, "--action", str(action_id), "--store", store)
            assert code == 0, err
            wait_until(lambda: not s.exists("/admin/reassign_partitions"), timeout=60, message="rollback complete")
            restored = {(p.topic, p.partition): p.replicas for p in read_snapshot(s).partitions()}
            assert restored == {(p.topic, p.partition): p.replicas for p in before.partitions()}
