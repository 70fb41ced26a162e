"""The sandbox: seeder formats, controller emulator reactions, broker stop/start, the demo, the CLI.

Real ZooKeeper (conftest's zk_server / zk_connect); the decision functions also get pure unit tests.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core import zkformat as zf
from core.assignment import assign_replicas
from sandbox.cli import main as sandbox_main
from core.errors import KeelError
from core.model import NO_LEADER, PartitionState
from sandbox.emulator import controller as c
from sandbox.emulator.brokers import SandboxControllerNotRunning, start_broker, stop_broker
from sandbox.emulator.controller import ControllerActiveError, ControllerEmulator
from sandbox.seed import (
    EMULATOR,
    INTENTS,
    OFFSETS_TOPIC,
    SandboxSpec,
    decode_intent,
    intent_path,
    known_intents,
    seed_cluster,
)
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore:No chroot path exists")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def zk(zk_connect):
    session = ZkSession.open(zk_connect)
    yield session
    session.close()


def tree(session: ZkSession, path: str = "/") -> dict[str, bytes]:
    """Every znode below `path` with its data (a cheap way to prove that nothing was written)."""
    out: dict[str, bytes] = {}
    level = [path]
    while level:  # breadth first, each level in pipelined reads
        kids = session.children_many(level)
        level = [p.rstrip("/") + "/" + k for p in level for k in sorted(kids[p] or ())]
        out.update((n.path, n.data) for n in session.get_many(level))
    return out


def state_of(snap, topic, partition):
    return next(p for p in snap.topic(topic).partitions if p.partition == partition)


class _Draws:
    """An rng whose randrange returns fixed draws: lets a test replay assign_replicas' two random draws."""

    def __init__(self, *draws: int):
        self.draws = list(draws)

    def randrange(self, n: int) -> int:
        return self.draws.pop(0)


def is_kafka_placement(pairs, replicas: dict[int, tuple[int, ...]]) -> bool:
    """True when some (start index, shift) makes assign_replicas produce exactly this placement."""
    n, rf = len(pairs), len(replicas[0])
    want = {p: list(r) for p, r in replicas.items()}
    return any(assign_replicas(pairs, len(want), rf, rng=_Draws(s, h)) == want for s in range(n) for h in range(n))


# --- pure decisions ----------------------------------------------------------------------------


def st(leader, isr, epoch=5, ce=1):
    return PartitionState(leader=leader, leader_epoch=epoch, controller_epoch=ce, isr=tuple(isr))


def test_offline_leader_is_first_live_isr_member_in_replica_order():
    assert c.offline_leader([1, 2, 3], isr=[3, 2], live={2, 3}) == 2
    assert c.offline_leader([1, 2, 3], isr=[1], live={2, 3}) is None
    assert c.offline_leader([1, 2, 3], isr=[1], live={2, 3}, unclean=True) == 2


def test_broker_down_moves_leadership_and_shrinks_isr():
    # leader 1 dies: the next live ISR member in replica order leads, ISR = live members, epoch + 1
    assert c.after_brokers_down([1, 2, 3], st(1, [1, 3, 2]), {1}, {2, 3}, 9) == st(2, [3, 2], epoch=6, ce=9)
    # a follower dies: leaves the ISR, epoch + 1 (newLeaderAndIsr)
    assert c.after_brokers_down([1, 2, 3], st(1, [1, 2, 3]), {3}, {1, 2}, 9) == st(1, [1, 2], epoch=6, ce=9)
    # a replica out of the ISR dies: nothing to write
    assert c.after_brokers_down([1, 2, 3], st(1, [1, 2]), {3}, {1, 2}, 9) is None
    # the last ISR member dies: leader -1, the ISR keeps it (Kafka never writes an empty ISR)
    assert c.after_brokers_down([1, 2], st(1, [1]), {1}, {2}, 9) == st(NO_LEADER, [1], epoch=6, ce=9)
    # two die at once, the leader and the only other ISR member
    assert c.after_brokers_down([1, 2, 3], st(1, [1, 2]), {1, 2}, {3}, 9) == st(NO_LEADER, [2], epoch=6, ce=9)
    # unclean election enabled: a live out-of-sync replica leads alone
    assert c.after_brokers_down([1, 2], st(1, [1]), {1}, {2}, 9, unclean=True) == st(2, [2], epoch=6, ce=9)


def test_broker_up_rejoins_isr_and_leads_nothing():
    # leader alive: the returning replica is appended, leader epoch unchanged (the leader's ISR expansion)
    assert c.after_brokers_up([1, 2, 3], st(2, [2, 3]), {1}, {1, 2, 3}, 9) == st(2, [2, 3, 1], epoch=5, ce=9)
    # offline partition whose ISR holds the returning broker: it is elected, epoch + 1
    assert c.after_brokers_up([1, 2], st(NO_LEADER, [1]), {1}, {1, 2}, 9) == st(1, [1], epoch=6, ce=9)
    # ... and a replica returning with it catches up from the new leader
    assert c.after_brokers_up([2, 1], st(NO_LEADER, [1]), {1, 2}, {1, 2}, 9) == st(1, [1, 2], epoch=6, ce=9)
    # offline partition whose ISR does not hold it: stays offline (no unclean election)
    assert c.after_brokers_up([1, 2], st(NO_LEADER, [1]), {2}, {2}, 9) is None
    # a partition without state (NewPartition) is initialised once a replica is alive
    assert c.after_brokers_up([3, 1, 2], None, {1}, {1, 2}, 9) == PartitionState(1, 0, 9, (1, 2))
    # already in the ISR: nothing to write
    assert c.after_brokers_up([1, 2], st(2, [2, 1]), {1}, {1, 2}, 9) is None


def test_initial_state_and_reconcile():
    assert c.initial_state([3, 1, 2], {1, 2, 3}, 4) == PartitionState(3, 0, 4, (3, 1, 2))
    assert c.initial_state([3, 1, 2], {2}, 4) == PartitionState(2, 0, 4, (2,))
    assert c.initial_state([3], {1, 2}, 4) is None
    # a state the controller left behind is a fixed point; a stale one is repaired
    assert c.reconcile([1, 2, 3], st(2, [2, 3]), {2, 3}, 7) is None
    assert c.reconcile([1, 2], st(NO_LEADER, [1]), {2}, 7) is None
    assert c.reconcile([1, 2, 3], st(1, [1, 2, 3]), {2, 3}, 7) == st(2, [2, 3], epoch=6, ce=7)


def test_leader_shrinks_isr_keeps_the_leader_epoch():
    assert c.leader_shrinks_isr(st(1, [1, 2, 3]), 3) == st(1, [1, 2])
    assert c.leader_shrinks_isr(st(1, [1, 2, 3]), 1) == st(1, [1, 2, 3])


# --- seeding -----------------------------------------------------------------------------------


def test_seed_writes_kafkas_formats(zk, zk_connect):
    spec = SandboxSpec(brokers=9, racks=3, topics=30, seed=7)
    result = seed_cluster(zk, spec)
    assert result.brokers == list(range(1, 10)) and not result.down and not result.empty

    for path in zf.PERSISTENT_PATHS:
        assert zk.exists(path), path
    cluster_id = zf.decode_cluster_id(zk.get(zf.CLUSTER_ID).data)
    assert len(cluster_id) == 22 and len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    assert json.loads(zk.get(zf.CLUSTER_ID).data)["version"] == "1"
    assert zf.decode_controller_epoch(zk.get(zf.CONTROLLER_EPOCH).data) == 1
    assert not zk.exists(zf.CONTROLLER) and not zk.children(zf.BROKER_IDS)  # ephemeral: not the seeder's

    racks = {b: spec.rack_of(b) for b in result.brokers}
    assert sorted(set(racks.values())) == ["rack-a", "rack-b", "rack-c"]
    pairs = sorted(racks.items())
    topics = sorted(zk.children(zf.TOPICS))
    assert len(topics) == 31 and OFFSETS_TOPIC in topics
    assert sorted(zk.children(zf.CONFIG_TOPICS)) == topics  # a config node for every topic, as Kafka writes
    assert not zk.children(zf.CONFIG_CHANGES)  # creating a topic writes no change notification
    shapes = set()
    for t in topics:
        raw = json.loads(zk.get(zf.topic_path(t)).data)
        assert raw["version"] == 3 and raw["adding_replicas"] == {} and raw["removing_replicas"] == {}
        assert len(raw["topic_id"]) == 22
        a = zf.decode_topic(t, zk.get(zf.topic_path(t)).data)
        assert is_kafka_placement(pairs, dict(a.partitions)), t
        config = zf.decode_config(zk.get(zf.topic_config_path(t)).data, t)
        assert json.loads(zk.get(zf.topic_config_path(t)).data)["version"] == 1
        shapes.add((len(a.partitions), len(a.partitions[0]), config.get("min.insync.replicas")))
        for p, replicas in a.partitions.items():
            s = zf.decode_partition_state(zk.get(zf.state_path(t, p)).data, t)
            assert s == PartitionState(replicas[0], 0, 1, replicas)
            assert zk.exists(zf.partition_path(t, p))
        if t == OFFSETS_TOPIC:
            assert len(a.partitions) == 50 and {len(r) for r in a.partitions.values()} == {3}
            assert config == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    assert len({n for n, _, _ in shapes}) >= 4 and {rf for _, rf, _ in shapes} >= {1, 2, 3}
    assert any(m == "2" for _, _, m in shapes)

    intents = known_intents(zk)
    assert sorted(intents) == result.brokers and all(i.up for i in intents.values())
    for b, intent in intents.items():
        reg = zf.decode_broker(b, intent.registration.encode())
        assert reg.version == 5 and reg.rack == racks[b] and reg.jmx_port == -1
        assert reg.endpoints == (f"PLAINTEXT://127.0.0.1:{9092 + b}",) and reg.port == 9092 + b

    # The emulator registers the brokers ephemerally; the reader sees exactly Kafka's tree.
    with ControllerEmulator(zk) as emu:
        for b in result.brokers:
            node = zk.get(zf.broker_path(b))
            assert node.ephemeral_owner != 0 and node.ephemeral_owner != zk.session_id
            assert zf.decode_broker(b, node.data).version == 5
        snap = read_snapshot(zk)
        assert not snap.problems
        assert [(b.id, b.rack, b.alive) for b in snap.brokers] == [(b, racks[b], True) for b in result.brokers]
        assert snap.controller.broker_id == 1 and snap.controller.epoch == 2 and snap.cluster_id == cluster_id
        assert zk.get(zf.CONTROLLER).ephemeral_owner != 0
        assert emu.epoch == 2
    # stop(): every ephemeral is gone, like a cluster shutdown; the persistent tree stays
    assert zk.children(zf.BROKER_IDS) == [] and not zk.exists(zf.CONTROLLER) and not zk.exists(EMULATOR)
    assert zf.decode_controller_epoch(zk.get(zf.CONTROLLER_EPOCH).data) == 2


def test_seed_is_deterministic_and_fast(zk_server):
    def topic_tree(connect: str, spec: SandboxSpec) -> tuple[dict, float]:
        with ZkSession.open(connect) as s:
            started = time.monotonic()
            seed_cluster(s, spec)
            took = time.monotonic() - started
            t = tree(s)
            return {p: d for p, d in t.items() if not p.startswith(INTENTS)}, took

    spec = SandboxSpec(brokers=12, racks=4, topics=70, seed=42)
    first, took = topic_tree(f"{zk_server}/det-a-{os.getpid()}", spec)
    second, _ = topic_tree(f"{zk_server}/det-b-{os.getpid()}", spec)
    third, _ = topic_tree(f"{zk_server}/det-c-{os.getpid()}", replace(spec, seed=43))
    states = [p for p in first if p.endswith("/state")]
    assert len(states) >= 1000
    assert first == second and first != third
    assert took < 5, f"seeding {len(states)} partitions took {took:.1f} s"
    with ZkSession.open(zk_server) as root:
        for name in ("det-a", "det-b", "det-c"):
            root.delete(f"/{name}-{os.getpid()}", recursive=True)


def test_up_refuses_an_existing_tree_and_writes_nothing(zk):
    zk.create("/brokers/topics/legacy", zf.encode_topic({0: [1]}, version=1), makepath=True)
    before = tree(zk)
    with pytest.raises(KeelError, match="already holds a Kafka tree.*--force"):
        seed_cluster(zk, SandboxSpec(topics=3))
    assert tree(zk) == before
    # --force wipes the chroot first
    seed_cluster(zk, SandboxSpec(brokers=3, racks=0, topics=2), force=True)
    assert "legacy" not in zk.children(zf.TOPICS) and len(zk.children(zf.TOPICS)) == 3
    # not even --force wipes a tree with a live controller
    with ControllerEmulator(zk):
        before = tree(zk)
        with pytest.raises(KeelError, match="controller.*active"):
            seed_cluster(zk, SandboxSpec(), force=True)
        assert tree(zk) == before


def test_seed_creates_a_missing_chroot(zk_server):
    connect = f"{zk_server}/fresh-{os.getpid()}/kafka"
    with ZkSession.open(connect) as s:
        seed_cluster(s, SandboxSpec(brokers=3, racks=0, topics=1, offsets_topic=False))
        assert s.children(zf.TOPICS)
    with ZkSession.open(zk_server) as root:
        root.delete(f"/fresh-{os.getpid()}", recursive=True)


def test_spec_validation(zk):
    for bad in (SandboxSpec(brokers=0), SandboxSpec(brokers=3, racks=4), SandboxSpec(topics=-1),
                SandboxSpec(brokers=3, demo=True)):
        with pytest.raises(KeelError):
            seed_cluster(zk, bad)
    assert tree(zk) == {}


# --- the emulator --------------------------------------------------------------------------------


def test_emulator_refuses_an_active_controller(zk):
    seed_cluster(zk, SandboxSpec(brokers=3, racks=0, topics=2))
    zk.create(zf.CONTROLLER, zf.encode_controller(7, 0))
    before = tree(zk)
    with pytest.raises(ControllerActiveError, match="broker 7 holds /controller"):
        ControllerEmulator(zk).start()
    assert tree(zk) == before  # no epoch bump, no registration, no emulator node
    zk.delete(zf.CONTROLLER)
    with ControllerEmulator(zk):
        with pytest.raises(ControllerActiveError):
            ControllerEmulator(zk).start()


def test_emulator_stop_is_idempotent_and_closes_everything(zk):
    seed_cluster(zk, SandboxSpec(brokers=3, racks=0, topics=1))
    emu = ControllerEmulator(zk).start()
    assert sorted(zk.children(zf.BROKER_IDS)) == ["1", "2", "3"]
    emu.stop()
    emu.stop()
    assert zk.children(zf.BROKER_IDS) == [] and not zk.exists(EMULATOR) and not emu.running


def expected_after_stop(before, broker):
    """What Kafka's controller writes when `broker` dies, computed independently of the emulator."""
    out = {}
    live = {b.id for b in before.brokers if b.alive} - {broker}
    for p in before.partitions():
        if broker not in p.replicas:
            continue
        if p.leader == broker:
            leader = next((r for r in p.replicas if r in live and r in p.isr), None)
            if leader is None:
                out[(p.topic, p.partition)] = (NO_LEADER, p.isr, p.leader_epoch + 1)
            else:
                out[(p.topic, p.partition)] = (leader, tuple(r for r in p.isr if r in live), p.leader_epoch + 1)
        elif broker in p.isr:
            out[(p.topic, p.partition)] = (p.leader, tuple(r for r in p.isr if r != broker), p.leader_epoch + 1)
    return out


def test_broker_stop_and_start(sandbox):
    before = sandbox.snapshot()
    assert sandbox.stop_broker(4).changed
    after = sandbox.snapshot()
    expected = expected_after_stop(before, 4)
    assert any(p.leader == 4 for p in before.partitions())
    for p, q in zip(before.partitions(), after.partitions()):
        want = expected.get((p.topic, p.partition), (p.leader, p.isr, p.leader_epoch))
        assert (q.leader, q.isr, q.leader_epoch) == want, (p, q)
        if q.leader != NO_LEADER:
            assert 4 not in q.isr and q.leader != 4
    assert not after.broker_by_id[4].alive and not sandbox.session.exists(zf.broker_path(4))
    assert after.controller.epoch == before.controller.epoch  # the controller lives on broker 1
    assert any("broker 4 down" in line for line in sandbox.emulator.reactions)
    assert not sandbox.stop_broker(4).changed  # already down

    assert sandbox.start_broker(4).changed
    back = sandbox.snapshot()
    assert back.broker_by_id[4].alive and sandbox.session.get(zf.broker_path(4)).ephemeral_owner != 0
    for p, q in zip(after.partitions(), back.partitions()):
        if 4 not in p.replicas:
            assert (q.leader, q.isr, q.leader_epoch) == (p.leader, p.isr, p.leader_epoch)
        elif p.leader == NO_LEADER:  # an RF 1 partition that went offline with broker 4 comes back
            assert (q.leader, q.isr, q.leader_epoch) == (4, (4,), p.leader_epoch + 1)
        else:  # rejoins the ISR, leads nothing, the leader epoch does not move
            assert (q.leader, q.isr, q.leader_epoch) == (p.leader, p.isr + (4,), p.leader_epoch)


def test_stopping_the_controller_broker_moves_the_controller(sandbox):
    before = sandbox.snapshot()
    assert before.controller.broker_id == 1
    sandbox.stop_broker(1)
    after = sandbox.snapshot()
    assert after.controller.broker_id == 2 and after.controller.epoch == before.controller.epoch + 1
    moved = [q for p, q in zip(before.partitions(), after.partitions()) if p.leader == 1 and q.leader != NO_LEADER]
    assert moved and all(q.leader != 1 for q in moved)
    # the states written after the move carry the new controller epoch
    changed = [q for p, q in zip(before.partitions(), after.partitions()) if q.leader_epoch != p.leader_epoch]
    for q in changed:
        s = zf.decode_partition_state(sandbox.session.get(zf.state_path(q.topic, q.partition)).data, "")
        assert s.controller_epoch == after.controller.epoch


def test_issue5_story_leaders_move_along_replica_order(zk):
    seed_cluster(zk, SandboxSpec(brokers=8, racks=0, topics=0, first_broker_id=0, offsets_topic=False))
    replicas = assign_replicas([(b, None) for b in range(8)], 8, 3, fixed_start_index=1)
    assert replicas[0] == [1, 3, 4] and replicas[7] == [0, 2, 3]
    with ControllerEmulator(zk) as emu:
        # as kafka-topics writes a topic: its config, then the assignment; the controller does the rest
        zk.create(zf.topic_config_path("story"), zf.encode_config({}))
        zk.create(zf.topic_path("story"), zf.encode_topic(replicas, version=2))
        wait_until(lambda: all(zk.exists(zf.state_path("story", p)) for p in range(8)), message="partition states")
        snap = read_snapshot(zk)
        for p in snap.topic("story").partitions:
            assert (p.leader, p.isr, p.leader_epoch) == (p.replicas[0], p.replicas, 0)

        for b in (1, 2, 4):
            stop_broker(zk, b)
        snap = read_snapshot(zk)
        parts = {p.partition: p for p in snap.topic("story").partitions}
        assert [parts[p].leader for p in (0, 1, 3)] == [3, 5, 6]
        for p in parts.values():
            assert not {1, 2, 4} & set(p.isr), p
            assert p.leader not in (1, 2, 4)

        start_broker(zk, 1)
        snap = read_snapshot(zk)
        back = {p.partition: p for p in snap.topic("story").partitions}
        for pid, p in back.items():
            assert p.leader != 1
            assert (1 in p.isr) == (1 in p.replicas), p
            assert p.leader_epoch == parts[pid].leader_epoch  # rejoining does not bump the leader epoch
        assert back[0].isr == (3, 1) and back[5].isr == (6, 0, 1) and back[6].isr == (7, 1)
        assert emu.running


def test_new_topics_and_partitions_written_by_hand(sandbox):
    zk = sandbox.session
    sandbox.stop_broker(5)
    # a topic placed only on the dead broker gets no state (Kafka leaves it NewPartition) ...
    zk.create(zf.topic_config_path("by-hand"), zf.encode_config({"retention.ms": "1000"}))
    zk.create(zf.topic_path("by-hand"), zf.encode_topic({0: [5], 1: [2, 5], 2: [5, 3]}, version=1))
    wait_until(lambda: zk.exists(zf.state_path("by-hand", 2)), message="state of by-hand-2")
    assert zf.decode_partition_state(zk.get(zf.state_path("by-hand", 1)).data, "").isr == (2,)
    assert zf.decode_partition_state(zk.get(zf.state_path("by-hand", 2)).data, "").leader == 3
    time.sleep(0.3)
    assert not zk.exists(zf.state_path("by-hand", 0))
    # ... until that broker comes back
    sandbox.start_broker(5)
    s0 = zf.decode_partition_state(zk.get(zf.state_path("by-hand", 0)).data, "")
    assert (s0.leader, s0.isr, s0.leader_epoch) == (5, (5,), 0)
    s1 = zf.decode_partition_state(zk.get(zf.state_path("by-hand", 1)).data, "")
    assert (s1.leader, s1.isr) == (2, (2, 5))
    # partitions added to an existing topic (the topic node rewritten, as kafka-topics --alter does)
    node = zk.get(zf.topic_path("by-hand"))
    a = zf.decode_topic("by-hand", node.data)
    zk.set(zf.topic_path("by-hand"), zf.encode_topic({**a.partitions, 3: (1, 2), 4: (3, 4)}, version=1), node.version)
    wait_until(lambda: zk.exists(zf.state_path("by-hand", 4)), message="states of the new partitions")
    s4 = zf.decode_partition_state(zk.get(zf.state_path("by-hand", 4)).data, "")
    assert (s4.leader, s4.isr, s4.leader_epoch) == (3, (3, 4), 0)


def hand_written_tree(zk: ZkSession) -> None:
    """A small ZK-mode tree written without the seeder: persistent registrations, no intents, no racks."""
    for path in zf.PERSISTENT_PATHS:
        zk.ensure_path(path)
    for b in (0, 1, 2):
        zk.create(zf.broker_path(b), zf.encode_broker([f"PLAINTEXT://10.0.0.{b}:9092"], version=4, timestamp_ms=1))
    zk.create(zf.CONTROLLER_EPOCH, b"3")
    topic = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}
    zk.create(zf.topic_config_path("t"), zf.encode_config({}))
    zk.create(zf.topic_path("t"), zf.encode_topic(topic, version=2))
    for p, r in topic.items():
        zk.create(zf.state_path("t", p), zf.encode_partition_state(r[0], 2, 3, r), makepath=True)


def test_emulator_on_a_tree_written_by_hand(zk):
    hand_written_tree(zk)
    with pytest.raises(SandboxControllerNotRunning, match="sandbox controller --zk"):
        stop_broker(zk, 1)
    assert not zk.exists(INTENTS)
    before = tree(zk)
    with ControllerEmulator(zk):
        after_start = tree(zk)
        changed = {p for p in after_start if after_start[p] != before.get(p)}
        assert changed <= {zf.CONTROLLER, zf.CONTROLLER_EPOCH, EMULATOR, "/keel-sandbox"}  # states untouched
        assert zk.get(zf.broker_path(1)).ephemeral_owner == 0

        with pytest.raises(KeelError, match="unknown broker id 9.*known broker ids: 0, 1, 2"):
            stop_broker(zk, 9)
        stop_broker(zk, 1)  # not the emulator's registration: it is deleted
        assert not zk.exists(zf.broker_path(1))
        intent = decode_intent(1, zk.get(intent_path(1)).data)
        assert not intent.up and zf.decode_broker(1, intent.registration.encode()).endpoints == ("PLAINTEXT://10.0.0.1:9092",)
        snap = read_snapshot(zk)
        parts = {p.partition: p for p in snap.topic("t").partitions}
        assert (parts[1].leader, parts[1].isr, parts[1].leader_epoch) == (2, (2, 0), 3)
        assert (parts[0].leader, parts[0].isr, parts[0].leader_epoch) == (0, (0, 2), 3)
        assert snap.controller.epoch == 4

        start_broker(zk, 1)  # registered again, ephemerally this time
        node = zk.get(zf.broker_path(1))
        assert node.ephemeral_owner != 0 and zf.decode_broker(1, node.data).endpoints == ("PLAINTEXT://10.0.0.1:9092",)
        snap = read_snapshot(zk)
        parts = {p.partition: p for p in snap.topic("t").partitions}
        assert (parts[1].leader, parts[1].isr, parts[1].leader_epoch) == (2, (2, 0, 1), 3)
    assert sorted(zk.children(zf.BROKER_IDS)) == ["0", "2"]  # the persistent ones outlive the emulator


# --- the demo ------------------------------------------------------------------------------------


def test_demo_shows_something_on_every_page(zk):
    result = seed_cluster(zk, SandboxSpec(demo=True))
    seeded = read_snapshot(zk)
    intents = known_intents(zk)
    racks = {b: zf.decode_broker(b, i.registration.encode()).rack for b, i in intents.items()}
    assert len(racks) == 9 and sorted(set(racks.values())) == ["rack-a", "rack-b", "rack-c"]
    assert sorted(list(racks.values()).count(r) for r in set(racks.values())) == [3, 3, 3]
    with ControllerEmulator(zk) as emu:
        snap = read_snapshot(zk)
        # the seeded state is exactly what the controller leaves: taking over changes no partition
        assert [(p.leader, p.isr, p.leader_epoch) for p in snap.partitions()] == \
               [(p.leader, p.isr, p.leader_epoch) for p in seeded.partitions()]
        assert any("started on" in line and "0 partition states updated" in line for line in emu.reactions)

    assert len(snap.brokers) == 9 and snap.controller.broker_id == 1
    dead = [b.id for b in snap.brokers if not b.alive]
    assert dead == result.down and len(dead) == 1
    (d,) = dead
    assert not intents[d].up
    hosting = {r for p in snap.partitions() for r in p.replicas}
    empty = [b.id for b in snap.brokers if b.alive and b.id not in hosting]
    assert empty == result.empty and len(empty) == 1
    for p in snap.partitions():
        assert p.leader != d
        assert d not in p.isr or (p.leader == NO_LEADER and p.isr == (d,))
    off_preferred = [p for p in snap.partitions() if p.leader not in (NO_LEADER, p.replicas[0])]
    assert len(off_preferred) >= 3
    assert any(p.leader_epoch > 0 for p in off_preferred)
    under_replicated = [p for p in snap.partitions() if len(p.isr) < len(p.replicas)]
    assert len(under_replicated) >= 2
    assert any(d not in p.replicas for p in under_replicated)  # a lagging follower, not only the dead broker
    under_min_isr = [p for p in snap.partitions()
                     if p.leader != NO_LEADER and len(p.isr) < int(snap.topic(p.topic).config.get("min.insync.replicas", 1))]
    assert under_min_isr


# --- the command line --------------------------------------------------------------------------


def test_cli_up_and_broker_errors(zk_connect, capsys):
    assert sandbox_main(["up", "--zk", zk_connect, "--brokers", "4", "--racks", "2", "--topics", "3"]) == 0
    assert "seeded 4 brokers, 4 topics" in capsys.readouterr().out
    assert sandbox_main(["up", "--zk", zk_connect]) == 1
    assert "already holds a Kafka tree" in capsys.readouterr().err
    assert sandbox_main(["up", "--zk", zk_connect, "--demo", "--force"]) == 0
    assert "down:" in capsys.readouterr().out
    assert sandbox_main(["broker", "stop", "3", "--zk", zk_connect]) == 1
    assert "python -m sandbox controller --zk" in capsys.readouterr().err
    assert sandbox_main(["up", "--zk", zk_connect, "--brokers", "0"]) == 1


def test_cli_controller_runs_until_sigterm(zk_connect, capsys):
    assert sandbox_main(["up", "--zk", zk_connect, "--brokers", "4", "--racks", "2", "--topics", "3"]) == 0
    capsys.readouterr()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "controller", "--zk", zk_connect],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        with ZkSession.open(zk_connect) as zk:
            wait_until(lambda: zk.exists(EMULATOR) and len(zk.children(zf.BROKER_IDS)) == 4, timeout=30,
                       message="the controller process")
        assert sandbox_main(["broker", "stop", "2", "--zk", zk_connect]) == 0
        assert capsys.readouterr().out.strip() == "broker 2 stopped"
        assert sandbox_main(["broker", "start", "2", "--zk", zk_connect]) == 0
        assert capsys.readouterr().out.strip() == "broker 2 started"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "controller emulator started" in out
    assert "broker 2 down:" in out and " moved, " in out
    assert "broker 2 up: rejoined" in out
    assert out.strip().endswith("controller emulator stopped")
    with ZkSession.open(zk_connect) as zk:
        assert zk.children(zf.BROKER_IDS) == [] and not zk.exists(EMULATOR)


def test_every_sandbox_command_is_python_m_sandbox_and_documents_its_exit_statuses(capsys):
    # Issue 25: the sandbox's commands left `python -m core` for `python -m sandbox`; --help keeps the statuses.
    from core.cli.app import build_parser as core_parser
    from core.cli.exits import commands, statuses
    from sandbox.cli import SPECIFIC, build_parser

    every = commands(build_parser())
    assert set(every) == {"up", "controller", "broker", "kafka up", "kafka down", "kafka status", "kafka broker",
                          "demo-topics"}
    assert not {"sandbox", "kafka"} & {name.split()[0] for name in commands(core_parser())}
    helps = {}
    for name in every:
        with pytest.raises(SystemExit) as e:
            sandbox_main([*name.split(), "--help"])
        assert e.value.code == 0
        helps[name] = text = " ".join(capsys.readouterr().out.split())
        assert text.startswith("usage: python -m sandbox ")
        for code, meaning in statuses(name, SPECIFIC).items():
            assert f" {code} {' '.join(meaning.split())}" in text, (name, code)
    assert "exit status: 0 done 1 error" in helps["up"] and " 3 " not in helps["up"].split("exit status:")[1]
    assert " 3 a broker of the local cluster is not running" in helps["kafka status"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "`kafka status` adds 3 (a broker of the local cluster is not running)" in readme
    proc = subprocess.run([sys.executable, "-m", "sandbox", "kafka", "status", "--dir", "/nonexistent/keel"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.startswith("error: "), proc.stderr
