"""The CLI and the Reassign page compute the same plan for the same cluster.

Both plan on `core.plans.settled(snapshot)`: while a reassignment runs, a moving partition holds target + origin
replicas, and a planner that counted those would move replicas that are about to go. Before the engine owned
`settled`, `python -m core plan` planned on the unsettled snapshot and the page on the settled one.
"""

from __future__ import annotations

import json
from dataclasses import replace

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


def test_cli_and_page_plan_the_same(tmp_path, capsys):
    out, report = cli_plan(tmp_path, capsys, "--strategy", "balanced", "-o", "-")
    snap = busy_snapshot()
    request = plan_view.build_request(settled(snap), plan_view.GOAL_REBALANCE, "balanced")
    planned = plan_view.run_planner(settled(snap), "balanced", request)
    assert json.loads(out) == json.loads(planned.plan_json)
    assert report == json.loads(json.dumps(planned.result.to_dict()))
    # the moving partition is planned as what it becomes: its replication factor stays 2 (not 4), and no
    # replica of the origin is counted on brokers 1 and 2
    assert all(len(e["replicas"]) == 2 for e in json.loads(out)["partitions"])
    unsettled = plan_view.run_planner(snap, "balanced", plan_view.build_request(snap, plan_view.GOAL_REBALANCE,
                                                                                   "balanced"))
    assert unsettled.plan_json != planned.plan_json  # what the CLI used to do differs: the test can fail


def test_cli_import_reports_what_the_page_reports(tmp_path, capsys):
    plan = {"version": 1, "partitions": [{"topic": "u", "partition": 0, "replicas": [4, 3]},
                                         {"topic": "t", "partition": 2, "replicas": [4, 1]}]}
    (tmp_path / "mine.json").write_text(json.dumps(plan))
    _, report = cli_plan(tmp_path, capsys, "--import", str(tmp_path / "mine.json"))
    planned = plan_view.import_plan(busy_snapshot(), json.dumps(plan))
    assert report == json.loads(json.dumps(planned.result.to_dict()))
    assert report["strategy"] == "imported" and report["report"]["replicas_moved"] == 2
