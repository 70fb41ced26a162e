"""Rolling restarts (core.restarts): is it safe to stop a broker now, and an order for the whole cluster."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.errors import ValidationError
from core.model import ClusterSnapshot
from core.restarts import check_all, check_stop, restart_plan


def snap(partitions, *, brokers=(1, 2, 3), dead=(), controller=1, min_isr=None, racks=None) -> ClusterSnapshot:
    """partitions: {(topic, p): (replicas, leader, isr)}."""
    topics = {}
    for (t, p), (replicas, leader, isr) in partitions.items():
        topics.setdefault(t, []).append({"partition": p, "replicas": replicas, "leader": leader, "isr": isr})
    return ClusterSnapshot.from_dict({
        "format": "keel.snapshot/1", "cluster": "t", "captured_at": "", "source": "",
        "controller": {"broker_id": controller, "epoch": 1},
        "brokers": [{"id": b, "rack": (racks or {}).get(b), "alive": b not in dead} for b in brokers],
        "topics": [{"name": t, "config": {"min.insync.replicas": str(min_isr)} if min_isr else {},
                    "partitions": parts} for t, parts in topics.items()]})


HEALTHY = {("a", 0): ([1, 2, 3], 1, [1, 2, 3]), ("a", 1): ([2, 3, 1], 2, [2, 3, 1]),
           ("a", 2): ([3, 1, 2], 3, [3, 1, 2])}


def test_healthy_cluster_every_broker_is_safe_and_leaders_move_to_the_next_isr_replica():
    s = snap(HEALTHY, min_isr=2)
    c = check_stop(s, 1)
    assert c.safe and c.keeps_available and c.registered and c.is_controller
    assert [(m.topic, m.partition, m.to) for m in c.leader_moves] == [("a", 0, 2)]
    assert "safe to stop now" in c.summary() and "controller" in c.summary()
    assert all(x.safe for x in check_all(s))


def test_only_in_sync_replica_goes_offline_and_min_isr_is_reported():
    parts = {("a", 0): ([1, 2, 3], 1, [1]),          # 1 is the only ISR member: offline
             ("a", 1): ([2, 1, 3], 2, [2, 1]),       # ISR 2,1 with min ISR 2: stopping 1 leaves 1 < 2
             ("b", 0): ([1], 1, [1])}                # replication factor 1
    c = check_stop(snap(parts, min_isr=2), 1)
    assert not c.safe and not c.keeps_available
    assert sorted((r.topic, r.partition) for r in c.goes_offline) == [("a", 0), ("b", 0)]
    assert [(r.topic, r.partition) for r in c.under_min_isr] == [("a", 1)]
    assert {(m.topic, m.partition): m.to for m in c.leader_moves} == {("a", 0): None, ("b", 0): None}
    reasons = " ".join(c.reasons())
    assert "2 partition(s) would go offline" in reasons and "min.insync.replicas" in reasons
    assert "under-replicated" in reasons  # the cluster is not fully replicated either


def test_under_replicated_means_wait_unless_allowed():
    parts = dict(HEALTHY)
    parts[("a", 2)] = ([3, 1, 2], 3, [3, 1])  # broker 2 still catching up
    c = check_stop(snap(parts), 3)
    assert c.keeps_available and not c.safe
    assert "wait until 0" in c.reasons()[0]
    assert check_stop(snap(parts), 3, ignore_under_replicated=True).safe
    # the static min.insync.replicas the brokers run with can be given: 2 makes stopping 3 unsafe for a-2
    c2 = check_stop(snap(parts), 3, min_isr_default=2, ignore_under_replicated=True)
    assert [(r.topic, r.partition) for r in c2.under_min_isr] == [("a", 2)]


def test_unknown_and_stopped_brokers():
    with pytest.raises(ValidationError, match=r"broker 9 does not exist in this cluster \(brokers: 1, 2, 3\)"):
        check_stop(snap(HEALTHY), 9)
    down = snap({("a", 0): ([1, 2, 3], 1, [1, 3])}, dead=(2,))
    c = check_stop(down, 2)
    assert not c.safe and "not running" in c.reasons()[0]


def test_plan_restarts_the_controller_last_and_keeps_every_partition_available():
    s = snap(HEALTHY, controller=2, racks={1: "r1", 2: "r2", 3: "r1"})
    plan = restart_plan(s)
    assert plan.order == [1, 3, 2] and plan.steps[-1].is_controller
    assert plan.keeps_available and plan.under_replicated_now == 0
    assert plan.leaders_before == {1: 1, 2: 1, 3: 1}
    # broker 1's leadership moves to 2; then broker 3's to 1 (back in the ISR after the wait); then the
    # controller's two go to the first other in-sync replica in assignment order
    assert [[(m.partition, m.to) for m in st.check.leader_moves] for st in plan.steps] == \
        [[(0, 2)], [(2, 1)], [(0, 1), (1, 3)]]
    assert plan.leaders_after == {1: 2, 2: 0, 3: 1}
    assert any("preferred-leader election" in n for n in plan.notes)


def test_plan_names_partitions_no_order_can_keep_available():
    parts = dict(HEALTHY)
    parts[("single", 0)] = ([2], 2, [2])
    plan = restart_plan(snap(parts))
    assert not plan.keeps_available
    step = next(s for s in plan.steps if s.broker == 2)
    assert [(r.topic, r.partition) for r in step.check.goes_offline] == [("single", 0)]


def test_commands_exit_codes(tmp_path, capsys):
    f = tmp_path / "s.json"
    f.write_text(snap(HEALTHY).to_json())
    assert main(["restart-check", "--snapshot", str(f), "--broker", "2"]) == 0
    assert "broker 2: safe to stop now" in capsys.readouterr().out
    bad = tmp_path / "b.json"
    bad.write_text(snap({("a", 0): ([1, 2], 1, [1])}).to_json())
    assert main(["restart-check", "--snapshot", str(bad), "--broker", "1", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["goes_offline"][0]["partition"] == 0
    assert main(["restart-check", "--snapshot", str(f), "--broker", "7"]) == 1
    assert "error: broker 7 does not exist" in capsys.readouterr().err
    assert main(["restart-plan", "--snapshot", str(f)]) == 0
    out = capsys.readouterr().out
    assert "restart order: 2 -> 3 -> 1" in out and "restart-check" in out
    assert main(["restart-plan", "--snapshot", str(bad), "--json"]) == 0  # fine once 2 is back in the ISR
    assert json.loads(capsys.readouterr().out)["under_replicated_now"] == 1
    single = tmp_path / "rf1.json"
    single.write_text(snap({("a", 0): ([1], 1, [1])}).to_json())
    assert main(["restart-plan", "--snapshot", str(single), "--json"]) == 3


def test_the_broker_page_and_restart_check_agree_on_only_in_sync():
    """Issue 25 item 2: the Broker page counted ISR == (broker,) while restart-check counts the live ISR: a
    partition whose other ISR member is down goes offline too when the broker stops."""
    from core.restarts import check_stop, only_in_sync
    from dashboard.views.broker import broker_view
    from tests.domain.test_topics import snapshot, topic
    from dataclasses import replace

    snap = snapshot([(1, "a", True), (2, "b", True), (3, "c", False)],
                    [topic("t", {0: [1, 3], 1: [1, 2], 2: [2, 1]})])
    t = snap.topics[0]  # t-0: ISR (1, 3), 3 down; t-1: ISR (1, 2); t-2: ISR (1,) only, led by 1
    parts = (t.partitions[0], t.partitions[1], replace(t.partitions[2], leader=1, isr=(1,)))
    snap = replace(snap, topics=(replace(t, partitions=parts),))
    assert [(p.topic, p.partition) for p in only_in_sync(snap, 1)] == [("t", 0), ("t", 2)]
    assert {(r.topic, r.partition) for r in check_stop(snap, 1).goes_offline} == {("t", 0), ("t", 2)}
    assert sorted(broker_view(snap, 1).only_isr["Partition"]) == [0, 2]
