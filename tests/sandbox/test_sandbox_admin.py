"""The sandbox controller's /admin handlers: topic deletion, partition reassignment, preferred leader election
and auto leader rebalance, as Kafka's ZooKeeper-mode controller runs them.

Pure decision functions get unit tests; the emulator runs against the session's real ZooKeeper.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from core import zkformat as zf
from core.assignment import assign_replicas
from sandbox.cli import build_parser
from sandbox.cli import main as sandbox_main
from core.errors import KeelError
from core.model import NO_LEADER, PartitionState, TopicPartitionReplicas
from sandbox.emulator import controller as c
from sandbox.emulator import deletion as dl
from sandbox.emulator import election as el
from sandbox.emulator import reassign as ra
from sandbox.emulator.brokers import start_broker, stop_broker
from sandbox.emulator.controller import ControllerEmulator
from sandbox.seed import SandboxSpec, seed_cluster
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore:No chroot path exists")]

TOPIC_ID = "q1Xb2fC9SHuK1pWm8e3RzA"


def st(leader, isr, epoch=5, ce=1):
    return PartitionState(leader=leader, leader_epoch=epoch, controller_epoch=ce, isr=tuple(isr))


def rs(replicas, adding=(), removing=()):
    return ra.ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))


# --- pure: reassignment --------------------------------------------------------------------------


def test_reassign_to_orders_target_first_then_the_rest_of_the_origin():
    # KafkaController's own example: ORS {1,2,3}, TRS {4,5,6} -> RS {4,5,6,1,2,3}, AR {4,5,6}, RR {1,2,3}
    assert rs([1, 2, 3]).reassign_to([4, 5, 6]) == rs([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    # updateCurrentReassignment's comment: [1, 2, 3] reassigned to [3, 4, 2] is encoded as [3, 4, 2, 1]
    assert rs([1, 2, 3]).reassign_to([3, 4, 2]) == rs([3, 4, 2, 1], [4], [1])
    # a pure reorder moves nothing
    assert rs([1, 2, 3]).reassign_to([3, 2, 1]) == rs([3, 2, 1])
    # replacing an ongoing reassignment keeps the original replicas as the origin
    ongoing = rs([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    assert ongoing.origin == (1, 2, 3) and ongoing.target == (4, 5, 6) and ongoing.being_reassigned
    assert ongoing.reassign_to([7, 2, 3]) == rs([7, 2, 3, 1], [7], [1])


def test_phase_a_bumps_the_epoch_and_phase_b_moves_the_leader_and_trims_the_isr():
    live = {1, 2, 3, 4, 5, 6}
    current = rs([1, 2, 3])
    new = current.reassign_to([4, 5, 6])
    # phase A: the new replicas are not in sync yet -> RS = TRS + ORS written, leader epoch + 1
    step = ra.on_partition_reassignment(current, new, st(1, [1, 2, 3], epoch=0), live, 9)
    assert not step.complete and step.assignment == new and step.state == st(1, [1, 2, 3], epoch=1, ce=9)
    # they caught up (the leader's ISR expansion keeps the epoch) ...
    state = st(1, [1, 2, 3], epoch=1, ce=9)
    for r in (4, 5, 6):
        state = ra.join_isr(state, r)
    assert state == st(1, [1, 2, 3, 4, 5, 6], epoch=1, ce=9)
    assert ra.is_complete(new, state)
    # ... phase B: B3 leader -> first target replica alive and in ISR (+1), B4 each removed replica leaves
    # the ISR (+1 each), B6 RS = TRS
    step = ra.on_partition_reassignment(new, new, state, live, 9)
    assert step.complete and step.assignment == rs([4, 5, 6])
    assert step.state == st(4, [4, 5, 6], epoch=1 + 1 + 3, ce=9)


def test_phase_b_keeps_a_leader_that_stays_and_skips_dead_targets():
    live = {1, 2, 3, 4}
    new = rs([1, 2, 3]).reassign_to([1, 2, 4])
    assert new == rs([1, 2, 4, 3], [4], [3])
    step = ra.on_partition_reassignment(new, new, st(1, [1, 2, 3, 4], epoch=2), live, 9)
    # leader 1 stays (epoch + 1 to shrink the replica set), 3 leaves the ISR (+1)
    assert step.complete and step.assignment == rs([1, 2, 4]) and step.state == st(1, [1, 2, 4], epoch=4, ce=9)
    # the old leader left the target and the first target replica is dead: the next live ISR member leads
    new = rs([1, 2, 3]).reassign_to([4, 2, 3])
    state = ra.complete_state(new, st(1, [1, 2, 3, 4], epoch=2), {1, 2, 3}, 9)
    assert state == st(2, [2, 3, 4], epoch=4, ce=9)


def test_reorder_and_shrink_complete_at_once():
    live = {1, 2, 3}
    current = rs([1, 2, 3])
    step = ra.on_partition_reassignment(current, current.reassign_to([3, 2, 1]), st(1, [1, 2, 3], epoch=0), live, 4)
    assert step.complete and step.assignment == rs([3, 2, 1]) and step.state == st(1, [1, 2, 3], epoch=1, ce=4)
    step = ra.on_partition_reassignment(current, current.reassign_to([1, 2]), st(1, [1, 2, 3], epoch=0), live, 4)
    assert step.complete and step.assignment == rs([1, 2]) and step.state == st(1, [1, 2], epoch=2, ce=4)
    # a target replica out of the ISR keeps a shrink in progress
    step = ra.on_partition_reassignment(current, current.reassign_to([1, 3]), st(1, [1, 2], epoch=0), live, 4)
    assert not step.complete and step.assignment == rs([1, 3, 2], [], [2]) and step.state.leader_epoch == 1


def test_superseding_an_ongoing_reassignment_stops_its_new_replicas():
    ongoing = rs([4, 5, 1, 2], [4, 5], [1, 2])
    new = ongoing.reassign_to([6, 2])
    assert new == rs([6, 2, 1], [6], [1])
    step = ra.on_partition_reassignment(ongoing, new, st(1, [1, 2, 4], epoch=3), {1, 2, 4, 5, 6}, 9)
    assert step.superseded == (4, 5)
    assert step.state == st(1, [1, 2], epoch=5, ce=9)  # 4 left the ISR (+1), then A1 (+1)
    assert not step.complete


def test_reassign_helpers():
    assert ra.invalid_target([]) == "empty replica list"
    assert "duplicate" in ra.invalid_target([1, 1]) and "invalid broker id" in ra.invalid_target([1, -2])
    assert ra.invalid_target([3, 1]) is None
    assert not ra.is_complete(rs([2, 1], [2], [1]), None)
    assert ra.join_isr(st(NO_LEADER, [1]), 2) == st(NO_LEADER, [1])
    entries = [TopicPartitionReplicas("t", 0, (1, 2)), TopicPartitionReplicas("t", 1, (3,)),
               TopicPartitionReplicas("t", 0, (4, 5))]
    latest = ra.latest_entries(entries)
    assert latest == {("t", 0): (4, 5), ("t", 1): (3,)}  # a partition listed twice keeps its last entry
    assert ra.prune_entries(latest, completed={("t", 0): (4, 5)}) == {("t", 1): (3,)}
    assert ra.prune_entries(latest, completed={("t", 0): (1, 2)}) == latest  # reached something else: stays
    assert ra.prune_entries(latest, failed={("t", 1)}) == {("t", 0): (4, 5)}
    # rewriting a topic node keeps topic_id and version; a v1 node gains the in-flight maps as v2
    v3 = zf.decode_topic("t", zf.encode_topic({0: [1, 2]}, version=3, topic_id=TOPIC_ID))
    moved = ra.with_partition(v3, 0, rs([3, 1, 2], [3], [2]))
    assert json.loads(ra.encode_topic_node(moved)) == {
        "version": 3, "partitions": {"0": [3, 1, 2]}, "adding_replicas": {"0": [3]},
        "removing_replicas": {"0": [2]}, "topic_id": TOPIC_ID}
    v1 = zf.decode_topic("t", zf.encode_topic({0: [1, 2], 1: [2, 1]}, version=1))
    assert json.loads(ra.encode_topic_node(ra.with_partition(v1, 0, rs([3, 1, 2], [3], [2]))))["version"] == 2
    assert json.loads(ra.encode_topic_node(ra.with_partition(v1, 0, rs([2, 1]))))["version"] == 1
    assert ra.in_progress(moved) == [0] and ra.ReplicaAssignment.of(moved, 0) == rs([3, 1, 2], [3], [2])


def test_copy_time_and_throttle():
    assert ra.throttle_rate({}, {}) is None
    assert ra.throttle_rate({"follower.replication.throttled.rate": "1000"}, {}) == 1000
    assert ra.throttle_rate({"follower.replication.throttled.rate": "1000"},
                            {"leader.replication.throttled.rate": "500"}) == 500
    assert ra.throttle_rate({"follower.replication.throttled.rate": "nonsense"}, {}) is None
    assert ra.copy_seconds(1_000_000, None) == pytest.approx(0.2 + 0.01)
    assert ra.copy_seconds(2_000_000, 1_000_000, base_delay=0.5) == pytest.approx(2.5)
    assert ra.copy_seconds(2_000_000, 1_000_000, base_delay=0.5, time_scale=0.1) == pytest.approx(0.25)
    assert ra.copy_seconds(None, None, base_delay=0, time_scale=0) == 0


def test_returning_new_replicas_do_not_join_the_isr_before_copying():
    assert c.after_brokers_up([4, 1, 2], st(1, [1, 2]), {4}, {1, 2, 4}, 9, catching_up=[4]) is None
    assert c.after_brokers_up([4, 1, 2], st(1, [1, 2]), {4}, {1, 2, 4}, 9) == st(1, [1, 2, 4], ce=9)


# --- pure: preferred election, auto rebalance, deletion -----------------------------------------


def test_elect_preferred_reasons():
    assert el.elect_preferred([1, 2, 3], st(2, [2, 3, 1]), {1, 2, 3}, 7) == (st(1, [2, 3, 1], epoch=6, ce=7), el.ELECTED)
    assert el.elect_preferred([1, 2, 3], st(1, [1, 2, 3]), {1, 2, 3}, 7) == (None, el.ALREADY_PREFERRED)
    assert el.elect_preferred([1, 2, 3], st(2, [2, 3]), {2, 3}, 7) == (None, "preferred replica 1 down")
    assert el.elect_preferred([1, 2, 3], st(2, [2, 3]), {1, 2, 3}, 7) == (None, "preferred replica 1 not in ISR")
    assert el.elect_preferred([1, 2, 3], None, {1, 2, 3}, 7) == (None, el.NO_STATE)
    line = el.summarize([
        el.ElectionOutcome("t", 0, True, 1, el.ELECTED),
        el.ElectionOutcome("t", 1, False, 5, "preferred replica 2 down"),
        el.ElectionOutcome("t", 3, False, 6, "preferred replica 4 down"),
        el.ElectionOutcome("t", 2, False, 2, el.ALREADY_PREFERRED),
        el.ElectionOutcome("x", 0, False, None, el.UNKNOWN_PARTITION),
    ])
    assert line == ("preferred election: 1 elected (t-0), 2 not eligible (preferred replica 2 down: t-1; "
                    "preferred replica 4 down: t-3), 1 already led by its preferred replica, "
                    "1 skipped (unknown partition: x-0)")


def test_auto_rebalance_follows_check_and_trigger_auto_leader_rebalance():
    assignments = {("t", 0): (1, 2), ("t", 1): (1, 2), ("t", 2): (2, 1), ("t", 3): (1, 2), ("u", 0): (3, 1)}
    states = {("t", 0): st(2, [2, 1]), ("t", 1): st(1, [1, 2]), ("t", 2): st(2, [2, 1]), ("t", 3): st(NO_LEADER, [2]),
              ("u", 0): None}
    imbalance = el.leader_imbalance(assignments, states)
    # broker 1 should lead 3 partitions and does not lead 2 of them (leader -1 counts); a missing state does not
    assert imbalance == {1: ([("t", 0), ("t", 3)], 3), 2: ([], 1), 3: ([], 1)}
    (b1,) = el.auto_rebalance(assignments, states, {1, 2, 3}, threshold_percent=10)
    assert b1.broker == 1 and b1.ratio == pytest.approx(2 / 3)
    assert b1.candidates == (("t", 0),)  # t-3: broker 1 is not in its ISR
    assert el.auto_rebalance(assignments, states, {1, 2, 3}, threshold_percent=70) == []  # 66% is not above 70%
    assert el.auto_rebalance(assignments, states, {2, 3})[0].candidates == ()              # broker 1 down
    assert el.auto_rebalance(assignments, states, {1, 2, 3}, reassigning=True)[0].candidates == ()


def test_deletion_decisions():
    assert dl.split_requests(["b", "a", "ghost"], {"a", "b"}) == (["ghost"], ["a", "b"])
    assert dl.split_requests(["b", "ghost"], {"b"}, enabled=False) == (["b", "ghost"], [])
    topic = zf.decode_topic("t", zf.encode_topic({0: [1, 2], 1: [2, 3]}, version=2))
    plan = dl.plan_deletion("t", topic, {1, 2})
    assert plan.to_stop == {0: (1, 2), 1: (2,)} and plan.dead_brokers == (3,) and not plan.complete
    plan = dl.plan_deletion("t", topic, {1, 2, 3}, deleted={(0, 1), (0, 2), (1, 2)})
    assert plan.to_stop == {1: (3,)} and plan.complete
    moving = ra.with_partition(topic, 0, rs([3, 1, 2], [3], [2]))
    plan = dl.plan_deletion("t", moving, {1, 2, 3})
    assert plan.waiting_for == "reassignment of 1 partition in progress" and not plan.to_stop


# --- emulator helpers ----------------------------------------------------------------------------


@pytest.fixture
def zk(zk_connect):
    session = ZkSession.open(zk_connect)
    yield session
    session.close()


def seed(zk, brokers=6, first=1, topics=0):
    return seed_cluster(zk, SandboxSpec(brokers=brokers, racks=0, topics=topics, first_broker_id=first,
                                        offsets_topic=False))


def make_topic(zk, name, partitions, *, version=3, config=None):
    """As kafka-topics writes a topic: its config, then the assignment; the controller writes the states."""
    zk.create(zf.topic_config_path(name), zf.encode_config(config or {}))
    zk.create(zf.topic_path(name), zf.encode_topic(partitions, version=version,
                                                   topic_id=TOPIC_ID if version >= 3 else None))
    wait_until(lambda: all(zk.exists(zf.state_path(name, p)) for p in partitions), message=f"states of {name}")


def topic(zk, name):
    return zf.decode_topic(name, zk.get(zf.topic_path(name)).data)


def state(zk, name, p):
    return zf.decode_partition_state(zk.get(zf.state_path(name, p)).data, "")


def reassign(zk, *entries):
    zk.create(zf.REASSIGN, zf.encode_reassignment(TopicPartitionReplicas(t, p, tuple(r)) for t, p, r in entries))


def node_entries(zk):
    node = zk.get(zf.REASSIGN)
    return None if not node.exists else ra.latest_entries(zf.decode_reassignment(node.data))


def said(emu, text):
    return any(text in line for line in emu.reactions)


# --- topic deletion ------------------------------------------------------------------------------


def test_deletion_removes_the_topic_its_config_and_the_admin_node(zk):
    seed_cluster(zk, SandboxSpec(brokers=4, racks=0, topics=3, offsets_topic=False))
    names = sorted(zk.children(zf.TOPICS))
    victim, others = names[0], names[1:]
    before = {t: (zk.get(zf.topic_path(t)).data, zk.get(zf.topic_config_path(t)).data) for t in others}
    with ControllerEmulator(zk) as emu:
        zk.create(zf.delete_topic_path(victim))
        zk.create(zf.delete_topic_path("ghost"))  # no such topic: Kafka just removes the admin node
        wait_until(lambda: zk.children(zf.DELETE_TOPICS) == [], message="admin nodes removed")
        wait_until(lambda: not zk.exists(zf.topic_path(victim)), message="topic deleted")
        assert not zk.exists(zf.topic_config_path(victim))
        assert sorted(zk.children(zf.TOPICS)) == others
        assert {t: (zk.get(zf.topic_path(t)).data, zk.get(zf.topic_config_path(t)).data) for t in others} == before
        assert victim not in emu.assignments and not emu.deleting
        assert said(emu, f"topic {victim} deleted") and said(emu, "ignoring deletion of non-existing topic ghost")
        snap = read_snapshot(zk)
        assert not snap.problems and not snap.in_progress.deletion and snap.topic(victim) is None


def test_deletion_disabled_removes_only_the_admin_node(zk):
    seed(zk, brokers=3)
    with ControllerEmulator(zk, delete_topic_enable=False) as emu:
        make_topic(zk, "keep", {0: [1, 2]})
        zk.create(zf.delete_topic_path("keep"))
        wait_until(lambda: zk.children(zf.DELETE_TOPICS) == [], message="admin node removed")
        assert zk.exists(zf.topic_path("keep")) and zk.exists(zf.state_path("keep", 0))
        assert said(emu, "delete.topic.enable=false")


def test_deletion_waits_for_the_topics_reassignment(zk):
    seed(zk, brokers=4)
    with ControllerEmulator(zk, reassign_base_delay=0.8) as emu:
        make_topic(zk, "busy", {0: [1, 2, 3], 1: [2, 3, 1]})
        reassign(zk, ("busy", 0, [4, 2, 3]))
        wait_until(lambda: topic(zk, "busy").adding_replicas, message="reassignment started")
        zk.create(zf.delete_topic_path("busy"))
        wait_until(lambda: said(emu, "deletion of busy waits: reassignment of 1 partition in progress"),
                   message="deletion waiting")
        assert zk.exists(zf.topic_path("busy")) and zk.exists(zf.delete_topic_path("busy"))
        assert "busy" in emu.deleting
        wait_until(lambda: not zk.exists(zf.topic_path("busy")), message="topic deleted after the reassignment")
        assert not zk.exists(zf.topic_config_path("busy")) and zk.children(zf.DELETE_TOPICS) == []
        assert not zk.exists(zf.REASSIGN)  # the reassignment completed first, then the topic went
        lines = list(emu.reactions)
        done = next(i for i, line in enumerate(lines) if "reassignment completed" in line)
        deleted = next(i for i, line in enumerate(lines) if "topic busy deleted" in line)
        assert done < deleted


def test_deletion_waits_for_dead_replicas_and_blocks_reassignment_and_election(zk):
    seed(zk, brokers=4)
    with ControllerEmulator(zk) as emu:
        make_topic(zk, "gone", {0: [1, 2], 1: [2, 3]})
        stop_broker(zk, 3)
        zk.create(zf.delete_topic_path("gone"))
        wait_until(lambda: said(emu, "deletion of gone waits for broker 3 to come back"), message="waiting")
        # the live replicas were stopped (OfflineReplica): out of the ISR, no leader left
        s0, s1 = state(zk, "gone", 0), state(zk, "gone", 1)
        assert (s0.leader, s0.isr, s0.leader_epoch) == (NO_LEADER, (2,), 2)
        assert (s1.leader, s1.isr, s1.leader_epoch) == (NO_LEADER, (2,), 2)
        # a topic queued for deletion cannot be reassigned, nor elected
        reassign(zk, ("gone", 0, [1, 4]))
        wait_until(lambda: not zk.exists(zf.REASSIGN), message="reassignment request dropped")
        assert topic(zk, "gone").partitions[0] == (1, 2)
        assert said(emu, "1 removed from the node (topic being deleted: gone-0)")
        zk.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("gone", 0)]))
        wait_until(lambda: not zk.exists(zf.PREFERRED_ELECTION), message="election node deleted")
        assert emu.last_election[("gone", 0)].reason == el.TOPIC_BEING_DELETED
        assert state(zk, "gone", 0) == s0
        # the broker comes back: deletion resumes and completes
        start_broker(zk, 3)
        wait_until(lambda: not zk.exists(zf.topic_path("gone")), message="topic deleted")
        assert not zk.exists(zf.topic_config_path("gone")) and zk.children(zf.DELETE_TOPICS) == []


# --- reassignment --------------------------------------------------------------------------------


def test_reassignment_goes_through_the_intermediate_state_and_completes(zk):
    seed(zk, brokers=6)
    sizes = {("move", 1): 60_000_000}  # partition 1 copies 0.6 s longer (unthrottled: 100 MB/s)
    with ControllerEmulator(zk, reassign_base_delay=0.8, partition_sizes=sizes) as emu:
        make_topic(zk, "move", {0: [1, 2, 3], 1: [1, 2, 3], 2: [2, 3, 1]})
        reassign(zk, ("move", 0, [4, 5, 6]), ("move", 1, [1, 2, 4]))
        # U1 + A1: RS = target ++ origin, adding and removing written, leader epoch + 1
        mid = wait_until(lambda: (a := topic(zk, "move")).adding_replicas and a, message="intermediate state")
        assert mid.partitions == {0: (4, 5, 6, 1, 2, 3), 1: (1, 2, 4, 3), 2: (2, 3, 1)}
        assert mid.adding_replicas == {0: (4, 5, 6), 1: (4,)} and mid.removing_replicas == {0: (1, 2, 3), 1: (3,)}
        assert mid.topic_id == TOPIC_ID and mid.version == 3
        assert state(zk, "move", 0) == PartitionState(1, 1, emu.epoch, (1, 2, 3))
        assert state(zk, "move", 1) == PartitionState(1, 1, emu.epoch, (1, 2, 3))
        assert node_entries(zk) == {("move", 0): (4, 5, 6), ("move", 1): (1, 2, 4)}
        snap = read_snapshot(zk)
        p0 = next(p for p in snap.topic("move").partitions if p.partition == 0)
        assert p0.adding_replicas == (4, 5, 6) and p0.removing_replicas == (1, 2, 3)

        # partition 0 completes first: it leaves the node, which is rewritten with the rest
        wait_until(lambda: node_entries(zk) == {("move", 1): (1, 2, 4)}, message="partition 0 pruned")
        a = topic(zk, "move")
        assert a.partitions[0] == (4, 5, 6) and a.adding_replicas == {1: (4,)} and a.removing_replicas == {1: (3,)}
        # leader moved to the first target replica (+1), then 1, 2, 3 left the ISR (+1 each)
        assert state(zk, "move", 0) == PartitionState(4, 5, emu.epoch, (4, 5, 6))

        wait_until(lambda: not zk.exists(zf.REASSIGN), message="node deleted when empty")
        a = topic(zk, "move")
        assert a.partitions == {0: (4, 5, 6), 1: (1, 2, 4), 2: (2, 3, 1)}
        assert not a.adding_replicas and not a.removing_replicas and a.topic_id == TOPIC_ID and a.version == 3
        # leader 1 stays (epoch + 1 for the new replica set), 3 leaves the ISR (+1)
        assert state(zk, "move", 1) == PartitionState(1, 3, emu.epoch, (1, 2, 4))
        assert state(zk, "move", 2).leader_epoch == 0  # untouched
        assert not emu.reassignments()
        assert said(emu, "reassignment of 2 partitions requested: 2 started (move-0, move-1), new replicas on "
                         "brokers 4, 5, 6") and said(emu, "reassignment completed for 1 partition: move-0 -> 4,5,6")


def test_reassignment_to_a_dead_broker_waits_until_it_returns(zk):
    seed(zk, brokers=5)
    with ControllerEmulator(zk) as emu:
        make_topic(zk, "wait", {0: [1, 2, 3]})
        stop_broker(zk, 4)
        reassign(zk, ("wait", 0, [1, 2, 4]), ("nope", 0, [1]), ("wait", 7, [1]))
        wait_until(lambda: topic(zk, "wait").adding_replicas, message="reassignment started")
        # unknown partitions are dropped from the node at once
        wait_until(lambda: node_entries(zk) == {("wait", 0): (1, 2, 4)}, message="unknown partitions dropped")
        assert said(emu, "waiting for broker 4 (down)")
        time.sleep(0.6)  # three copy times: broker 4 cannot copy while down
        assert topic(zk, "wait").adding_replicas == {0: (4,)} and 4 not in state(zk, "wait", 0).isr
        assert zk.exists(zf.REASSIGN)
        start_broker(zk, 4)
        # 4 came back: not in the ISR before it copied; then the reassignment completes
        wait_until(lambda: not zk.exists(zf.REASSIGN), message="reassignment completed")
        assert topic(zk, "wait").partitions == {0: (1, 2, 4)}
        # A1 (+1), resumed when 4 started (+1), B3 (+1), 3 left the ISR (+1)
        assert state(zk, "wait", 0) == PartitionState(1, 4, emu.epoch, (1, 2, 4))


def test_throttled_replicas_copy_slower(zk):
    seed(zk, brokers=5)
    zk.create(zf.broker_config_path(4), zf.encode_config({"follower.replication.throttled.rate": "1000000"}))
    with ControllerEmulator(zk) as emu:
        make_topic(zk, "slow", {0: [1, 2, 3], 1: [1, 2, 3]})
        started = time.monotonic()
        reassign(zk, ("slow", 0, [1, 2, 4]), ("slow", 1, [1, 2, 5]))  # 1 MB each; broker 4 copies 1 MB/s
        wait_until(lambda: topic(zk, "slow").partitions[1] == (1, 2, 5), message="unthrottled partition done")
        assert topic(zk, "slow").adding_replicas == {0: (4,)}
        wait_until(lambda: not zk.exists(zf.REASSIGN), message="throttled partition done")
        assert time.monotonic() - started >= 1.1
        assert topic(zk, "slow").partitions == {0: (1, 2, 4), 1: (1, 2, 5)}
        assert not emu.reassignments()


def test_reassignment_resumes_after_controller_failover(zk):
    seed(zk, brokers=5)
    with ControllerEmulator(zk, reassign_base_delay=60):
        make_topic(zk, "fo", {0: [1, 2, 3], 1: [1, 2, 3]})
        reassign(zk, ("fo", 0, [4, 2, 3]), ("fo", 1, [5, 2, 3]))
        wait_until(lambda: len(topic(zk, "fo").adding_replicas) == 2, message="reassignment started")
    # while no controller runs, partition 1 leaves the node: its reassignment lives on in the topic node only
    node = zk.get(zf.REASSIGN)
    zk.set(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas("fo", 0, (4, 2, 3))]), node.version)
    with ControllerEmulator(zk, reassign_base_delay=0.1) as emu:
        wait_until(lambda: not zk.exists(zf.REASSIGN) and not topic(zk, "fo").adding_replicas,
                   message="both partitions completed")
        assert topic(zk, "fo").partitions == {0: (4, 2, 3), 1: (5, 2, 3)}
        for p, leader in ((0, 4), (1, 5)):  # leader 1 left: the first target replica alive and in the ISR
            s = state(zk, "fo", p)
            assert s.leader == leader and set(s.isr) == {2, 3, leader} and s.controller_epoch == emu.epoch
        assert said(emu, "reassignment resumed for 1 partition (controller failover)")


# --- preferred leader election -------------------------------------------------------------------


def test_preferred_election_elects_only_live_in_sync_preferred_replicas(zk):
    seed(zk, brokers=4)
    with ControllerEmulator(zk) as emu:
        make_topic(zk, "pe", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [4, 1, 2], 4: [1, 3, 2]})
        stop_broker(zk, 1)
        stop_broker(zk, 4)
        start_broker(zk, 1)
        # a follower fell behind: the leader dropped broker 1 from partition 4's ISR (no epoch bump)
        node = zk.get(zf.state_path("pe", 4))
        s4 = zf.decode_partition_state(node.data, "")
        zk.set(zf.state_path("pe", 4), zf.encode_partition_state(s4.leader, s4.leader_epoch, s4.controller_epoch,
                                                                  [r for r in s4.isr if r != 1]), node.version)
        before = {p: state(zk, "pe", p) for p in range(5)}
        assert [before[p].leader for p in range(5)] == [2, 2, 3, 2, 3]
        zk.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election(
            [("pe", p) for p in range(5)] + [("pe", 9), ("nope", 0)]))
        wait_until(lambda: not zk.exists(zf.PREFERRED_ELECTION), message="election node deleted")
        after = {p: state(zk, "pe", p) for p in range(5)}
        assert after[0] == replace(before[0], leader=1, leader_epoch=before[0].leader_epoch + 1,
                                         controller_epoch=emu.epoch)
        for p in (1, 2, 3, 4):
            assert after[p] == before[p], p
        reasons = {k: (o.elected, o.leader, o.reason) for k, o in emu.last_election.items()}
        assert reasons == {("pe", 0): (True, 1, el.ELECTED), ("pe", 1): (False, 2, el.ALREADY_PREFERRED),
                           ("pe", 2): (False, 3, el.ALREADY_PREFERRED),
                           ("pe", 3): (False, 2, "preferred replica 4 down"),
                           ("pe", 4): (False, 3, "preferred replica 1 not in ISR"),
                           ("pe", 9): (False, None, el.UNKNOWN_PARTITION),
                           ("nope", 0): (False, None, el.UNKNOWN_PARTITION)}
        assert said(emu, "preferred election: 1 elected (pe-0), 2 not eligible (preferred replica 1 not in ISR: "
                         "pe-4; preferred replica 4 down: pe-3), 2 already led by their preferred replica, "
                         "2 skipped (unknown partition: nope-0, pe-9)")
        # the node was deleted: a new one is a new election
        zk.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("pe", 3)]))
        wait_until(lambda: not zk.exists(zf.PREFERRED_ELECTION), message="second election node deleted")
        assert emu.last_election == {("pe", 3): el.ElectionOutcome("pe", 3, False, 2, "preferred replica 4 down")}


def leaders(zk, name):
    snap = read_snapshot(zk)
    return {p.partition: p for p in snap.topic(name).partitions}


def test_issue5_story_elections_restore_preferred_leaders(zk):
    seed(zk, brokers=8, first=0)
    replicas = assign_replicas([(b, None) for b in range(8)], 8, 3, fixed_start_index=1)
    assert replicas[0] == [1, 3, 4] and replicas[7] == [0, 2, 3]
    with ControllerEmulator(zk) as emu:
        make_topic(zk, "story", replicas, version=2)
        for b in (1, 2, 4):
            stop_broker(zk, b)
        parts = leaders(zk, "story")
        assert [parts[p].leader for p in (0, 1, 3)] == [3, 5, 6]
        start_broker(zk, 1)
        back = leaders(zk, "story")
        for p in back.values():
            assert p.leader != 1 and (1 in p.isr) == (1 in p.replicas)

        zk.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("story", p) for p in range(8)]))
        wait_until(lambda: not zk.exists(zf.PREFERRED_ELECTION), message="first election done")
        first = leaders(zk, "story")
        assert first[0].leader == 1 and first[0].leader_epoch == back[0].leader_epoch + 1
        assert first[1].leader == 5 and first[3].leader == 6  # preferred replicas 2 and 4 are down
        for p in range(8):
            if p != 0:
                assert first[p].leader_epoch == back[p].leader_epoch
        assert emu.last_election[("story", 1)].reason == "preferred replica 2 down"
        assert emu.last_election[("story", 3)].reason == "preferred replica 4 down"
        assert said(emu, "preferred election: 1 elected (story-0), 2 not eligible (preferred replica 2 down: "
                         "story-1; preferred replica 4 down: story-3), 5 already led by their preferred replica")

        start_broker(zk, 2)
        start_broker(zk, 4)
        zk.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("story", p) for p in range(8)]))
        wait_until(lambda: not zk.exists(zf.PREFERRED_ELECTION), message="second election done")
        final = leaders(zk, "story")
        assert all(p.leader == p.replicas[0] for p in final.values())
        assert sorted(p.leader for p in final.values()) == list(range(8))  # every broker leads exactly one
        assert {p for p, o in emu.last_election.items() if o.elected} == {("story", 1), ("story", 3)}


# --- auto leader rebalance -----------------------------------------------------------------------


def test_auto_rebalance_restores_preferred_leaders_after_a_restart(zk):
    seed(zk, brokers=4)
    with ControllerEmulator(zk, auto_leader_rebalance=True, leader_imbalance_check_interval_seconds=0.2,
                            reassign_base_delay=1.5) as emu:
        make_topic(zk, "rb", {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2], 4: [2, 1, 3]})
        make_topic(zk, "mv", {0: [1, 3]})
        stop_broker(zk, 2)
        assert [p.leader for p in leaders(zk, "rb").values()] == [1, 3, 3, 4, 1]
        # a reassignment in progress holds the rebalance back (Kafka skips it while one runs)
        reassign(zk, ("mv", 0, [1, 4]))
        start_broker(zk, 2)
        time.sleep(0.8)  # four check intervals
        assert [p.leader for p in leaders(zk, "rb").values()] == [1, 3, 3, 4, 1] and zk.exists(zf.REASSIGN)
        assert not said(emu, "auto leader rebalance")
        wait_until(lambda: not zk.exists(zf.REASSIGN), message="reassignment done")
        wait_until(lambda: [p.leader for p in leaders(zk, "rb").values()] == [1, 2, 3, 4, 2],
                   message="preferred leaders restored")
        assert said(emu, "auto leader rebalance (leader imbalance above 10%: broker 2 100%): 2 elected (rb-1, rb-4)")
        wait_until(lambda: emu.last_rebalance == [], message="balanced at the next check")


# --- command line ----------------------------------------------------------------------------------


def test_controller_cli_options(zk_connect, monkeypatch):
    args = build_parser().parse_args(["controller", "--zk", zk_connect, "--auto-leader-rebalance",
                                      "--leader-imbalance-check-interval", "2", "--reassign-time-scale", "0.5",
                                      "--leader-imbalance-percentage", "20", "--no-topic-deletion"])
    assert args.auto_leader_rebalance and args.leader_imbalance_check_interval == 2.0
    assert args.reassign_time_scale == 0.5 and args.leader_imbalance_percentage == 20 and args.no_topic_deletion
    seen = {}

    class Fake:
        def __init__(self, session, **kw):
            seen.update(kw)
            self.failed = None
            self.running = False

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr(c, "ControllerEmulator", Fake)
    assert sandbox_main(["controller", "--zk", zk_connect, "--auto-leader-rebalance",
                     "--leader-imbalance-check-interval", "2", "--reassign-time-scale", "0.5"]) == 0
    assert seen["auto_leader_rebalance"] is True and seen["leader_imbalance_check_interval_seconds"] == 2.0
    assert seen["time_scale"] == 0.5 and seen["delete_topic_enable"] is True
    assert seen["leader_imbalance_per_broker_percentage"] == 10.0 and seen["reassign_base_delay"] == 0.2


def test_emulator_option_validation(zk):
    with pytest.raises(KeelError, match="leader_imbalance_check_interval_seconds must be positive"):
        ControllerEmulator(zk, leader_imbalance_check_interval_seconds=0)
    with pytest.raises(KeelError, match="time_scale must be zero or more"):
        ControllerEmulator(zk, time_scale=-0.5)
    with pytest.raises(KeelError, match="reassign_base_delay must be zero or more"):
        ControllerEmulator(zk, reassign_base_delay=-1)
    with pytest.raises(KeelError, match="between 0 and 100"):
        ControllerEmulator(zk, leader_imbalance_per_broker_percentage=120)
