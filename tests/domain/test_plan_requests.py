"""The CLI and the Reassign page plan through the engine (issue 25): core.balance.requests builds the request and
plans on the settled cluster (while a reassignment runs, a moving partition holds target + origin replicas, and a
planner that counted those would move replicas that are about to go), core.balance.costs times the copy and
core.balance.shape gives the per-broker loads, for both.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.balance import STRATEGIES
from core.balance.requests import plan, plan_request
from core.balance.sizes import parse_log_dirs
from core.cli import main
from core.model import ClusterSnapshot, InProgress, TopicPartitionReplicas
from core.plans import settled
from dashboard.reassign import plan_view


def busy_snapshot() -> ClusterSnapshot:
    """A 4-broker cluster, broker 4 empty, with t-0 moving from [1,2] to [3,4] (replicas [3,4,1,2] meanwhile)."""
    doc = {"format": "keel.snapshot/1", "cluster": "c", "captured_at": "2026-11-23T00:00:00Z", "source": "test",
           "controller": {"broker_id": 1, "epoch": 1},
           "brokers": [{"id": b, "rack": None, "host": "h", "port": 9092, "endpoints": [], "alive": True}
                       for b in (1, 2, 3, 4)],
           "topics": [{"name": name, "topic_id": None, "config": {}, "partitions": [
               {"partition": p, "replicas": reps, "leader": reps[0], "isr": reps, "leader_epoch": 0,
                "adding_replicas": [], "removing_replicas": []} for p, reps in enumerate(parts)]}
               for name, parts in (("t", [[1, 2], [2, 3], [3, 1], [1, 2], [2, 3], [3, 1]]),
                                   ("u", [[1, 3], [2, 1], [3, 2], [1, 3]]))],
           "in_progress": {"reassignment": [], "preferred_election": [], "deletion": []}}
    snap = ClusterSnapshot.from_json(json.dumps(doc))
    t = snap.topic("t")
    moving = replace(t.partitions[0], replicas=(3, 4, 1, 2), adding_replicas=(3, 4), removing_replicas=(1, 2),
                     isr=(1, 2))
    topics = tuple(replace(x, partitions=(moving, *x.partitions[1:])) if x.name == "t" else x for x in snap.topics)
    return replace(snap, topics=topics, in_progress=InProgress(
        reassignment=(TopicPartitionReplicas("t", 0, (3, 4)),), preferred_election=(), deletion=()))


def cli_plan(tmp_path, capsys, *argv) -> tuple[str, dict]:
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(busy_snapshot().to_json())
    code = main(["plan", "--snapshot", str(snap_file), *argv, "--report", str(tmp_path / "report.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, json.loads((tmp_path / "report.json").read_text())


def test_the_engine_plans_on_the_settled_cluster():
    """core.balance.requests.plan (the one path of the CLI's `plan` and the Reassign page, issue 25): a moving
    partition is planned as what it becomes, its replication factor stays 2 (not 4)."""
    snap = busy_snapshot()
    result = plan(snap, "balanced", plan_request(snap, "balanced"))
    assert all(len(r) == 2 for r in result.proposed.values())
    assert result.proposed == plan(settled(snap), "balanced", plan_request(snap, "balanced")).proposed
    raw = STRATEGIES["balanced"](snap, plan_request(snap, "balanced"))
    assert raw.proposed != result.proposed  # planning on the unsettled cluster differs: the test can fail


def test_kafka_generate_lists_every_topic_when_none_is_named():
    snap = busy_snapshot()
    assert plan_request(snap, "kafka_generate").topics == ("t", "u")
    assert plan_request(snap, "balanced").topics is None
    assert plan_request(snap, "kafka_generate", topics=["u"]).topics == ("u",)


def test_cli_and_page_plan_through_the_engine(tmp_path, capsys):
    out, report = cli_plan(tmp_path, capsys, "--strategy", "balanced", "-o", "-")
    snap = busy_snapshot()
    planned = plan_view.run_planner(snap, "balanced", plan_view.build_request(snap, plan_view.GOAL_REBALANCE,
                                                                                 "balanced"))
    assert json.loads(out) == json.loads(planned.plan_json)
    assert {k: v for k, v in report.items() if k not in ("brokers", "throttle", "copy_seconds")} == \
        json.loads(json.dumps(planned.result.to_dict()))


def test_plan_reports_the_copy_time_and_broker_loads_the_page_shows(tmp_path, capsys):
    """`plan --throttle` prints the page's time estimate (core.balance.costs) and --report has the per-broker loads
    the page draws (core.balance.shape)."""
    sizes = tmp_path / "sizes.json"
    sizes.write_text(json.dumps({"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
            {"partition": f"{t}-{p}", "size": 10_000_000 * (p + 1), "offsetLag": 0, "isFuture": False}
            for t, n in (("t", 6), ("u", 4)) for p in range(n)]}]} for b in (1, 2, 3)]}))
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(busy_snapshot().to_json())
    code = main(["plan", "--snapshot", str(snap_file), "--sizes", str(sizes), "--throttle", "1000000", "-o",
                 str(tmp_path / "plan.json"), "--report", str(tmp_path / "report.json")])
    err = capsys.readouterr().err
    assert code == 0, err
    report = json.loads((tmp_path / "report.json").read_text())
    snap = busy_snapshot()
    page_sizes = parse_log_dirs(sizes.read_bytes())
    planned = plan_view.run_planner(snap, "balanced", plan_view.build_request(
        snap, plan_view.GOAL_REBALANCE, "balanced", sizes=page_sizes))
    expected = plan_view.estimate_seconds(planned, snap, 1_000_000)
    assert expected and report["copy_seconds"] == pytest.approx(expected)
    assert f"copy time at 1,000,000 B/s: about {expected:,.0f} s" in err
    loads = plan_view.broker_loads(planned.before, planned.result.target, [1, 2, 3, 4], page_sizes)
    assert [b["replicas"] for b in report["brokers"]] == [list(x) for x in zip(*loads.replicas)]
    assert [b["bytes"] for b in report["brokers"]] == [list(x) for x in zip(*loads.bytes)]


def test_cli_import_reports_what_the_page_reports(tmp_path, capsys):
    plan = {"version": 1, "partitions": [{"topic": "u", "partition": 0, "replicas": [4, 3]},
                                         {"topic": "t", "partition": 2, "replicas": [4, 1]}]}
    (tmp_path / "mine.json").write_text(json.dumps(plan))
    _, report = cli_plan(tmp_path, capsys, "--import", str(tmp_path / "mine.json"))
    planned = plan_view.import_plan(busy_snapshot(), json.dumps(plan))
    assert {k: v for k, v in report.items() if k not in ("brokers", "throttle", "copy_seconds")} == \
        json.loads(json.dumps(planned.result.to_dict()))
    assert report["strategy"] == "imported" and report["report"]["replicas_moved"] == 2
