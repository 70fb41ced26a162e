"""The controller emulator answers to Kafka: one scripted story on the real cluster and on a copy of its tree.

The real cluster's chroot (brokers, topics, partition states, configs, /admin) is copied into a fresh chroot of the
test ZooKeeper, where sandbox.emulator's ControllerEmulator plays the controller; then every step runs on both sides,
through the same code paths:

1. kill -9 of a broker (the copy: its registration deleted, as `sandbox broker stop` does);
2. its restart (the copy: `sandbox broker start`);
3. a preferred leader election (core.zk.election_writes.trigger, every partition);
4. a topic created, 5. grown, 6. deleted (core.zk.topic_admin);
7. a reassignment that moves leaders off a replica leaving the set, moves an RF 1 partition, and only reorders
   another (core.zk.reassign_writes.execute).

After each step both sides are left to settle, then compared partition by partition: replicas, adding and removing
replicas, leader, ISR (in order), plus the topic list, the topic config nodes and the /admin nodes. Epochs,
timestamps, topic ids and which broker is controller are not compared (each side has its own clock and controller).

Differences that remain, by design (README, "Emulator vs Kafka"), none of which this story compares:
- leader epochs: the emulator bumps them where Kafka's controller does, but Kafka's brokers also bump them through
  AlterPartition (ISR changes) and the controller writes more often (e.g. controller failover), so only leader and
  ISR are compared;
- the controller: the emulator's is always the lowest live broker; Kafka's is whichever broker wins /controller;
- a follower that falls behind without dying: the emulator has no replica lag (replica.lag.time.max.ms) except when
  its broker stops, so ISRs only shrink on a broker failure;
- copying data: a reassignment's new replica joins the ISR after a modelled copy time (size over throttle), not
  after really fetching the log;
- Kafka before 2.4: the emulator plays the KIP-455 controller only, so this story is skipped on 2.0 and 1.1;
- not in this story: a topic deleted while a replica's broker is down (the emulator takes the live replicas out of
  the ISR in id order, Kafka in the order of its hash sets: the last one left may differ until the topic goes).

Measured: no difference on Kafka 3.9.1, 2.8.2 and 2.4.1 (`make test-kafka-matrix`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from core import zkformat as zf
from core.plans import parse_reassignment
from sandbox.emulator import brokers as sandbox_brokers
from sandbox.emulator.controller import ControllerEmulator
from sandbox.emulator.znodes import encode_intent, intent_path
from core.audit.store import Store
from core.topics import draft_add_partitions, draft_create_topic
from core.zk import election_writes, reassign_writes, topic_admin
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.kafka.realkafka import RealKafka, eventually, needs_kafka

pytestmark = needs_kafka("2.4", "the emulator plays the controller of Kafka 2.4+ (KIP-455 reassignments, "
                                "adding/removing replicas in the topic node)")

PREFIX = "par-"
STORY_TOPICS = {
    "par-rf3": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
    "par-rf2": {0: [1, 2], 1: [2, 3], 2: [3, 1]},
    "par-rf1": {0: [1], 1: [2], 2: [3]},
}
NEW_TOPIC = "par-new"
NEW_ASSIGNMENT = {0: [2, 1, 3], 1: [3, 2, 1], 2: [1, 3, 2]}
SETTLE = 60.0  # seconds a step may take on either side (a kill waits for the ZooKeeper session timeout, 6 s)


# --------------------------------------------------------------------------------------------------------------
# both sides, reduced to what must agree
# --------------------------------------------------------------------------------------------------------------


def view(s: ZkSession) -> dict:
    """Per topic and partition: replicas, adding, removing, leader, ISR; the topic config nodes; the /admin nodes."""
    s.sync()
    topics: dict[str, dict] = {}
    for t in sorted(s.children(zf.TOPICS) or ()):
        node = s.get(zf.topic_path(t))
        if not node.exists:
            continue
        a = zf.decode_topic(t, node.data)
        keys = sorted(a.partitions)
        parts = {}
        for p, st in zip(keys, s.get_many([zf.state_path(t, p) for p in keys])):
            state = zf.decode_partition_state(st.data, st.path) if st.exists else None
            parts[p] = {"replicas": list(a.partitions[p]), "adding": list(a.adding_replicas.get(p, ())),
                        "removing": list(a.removing_replicas.get(p, ())),
                        "leader": state.leader if state else None, "isr": list(state.isr) if state else None}
        topics[t] = parts
    reassign_node = s.get(zf.REASSIGN)
    election_node = s.get(zf.PREFERRED_ELECTION)
    return {
        "topics": topics,
        "topic_configs": sorted(s.children(zf.CONFIG_TOPICS) or ()),
        "admin": {
            "reassign_partitions": sorted((e.topic, e.partition, tuple(e.replicas)) for e in
                                          zf.decode_reassignment(reassign_node.data)) if reassign_node.exists else None,
            "preferred_replica_election": sorted(zf.decode_preferred_election(election_node.data))
            if election_node.exists else None,
            "delete_topics": sorted(s.children(zf.DELETE_TOPICS) or ()),
        },
    }


def differences(kafka: dict, emulator: dict) -> list[str]:
    """Readable lines, one per field that differs: `where: Kafka X, emulator Y`."""
    out = []
    for t in sorted(set(kafka["topics"]) | set(emulator["topics"])):
        k, e = kafka["topics"].get(t), emulator["topics"].get(t)
        if k is None or e is None:
            out.append(f"topic {t}: {'only the emulator has it' if k is None else 'only Kafka has it'}")
            continue
        for p in sorted(set(k) | set(e)):
            kp, ep = k.get(p), e.get(p)
            if kp is None or ep is None:
                out.append(f"{t}-{p}: {'only the emulator has it' if kp is None else 'only Kafka has it'}")
                continue
            out += [f"{t}-{p} {f}: Kafka {kp[f]}, emulator {ep[f]}" for f in kp if kp[f] != ep[f]]
    if kafka["topic_configs"] != emulator["topic_configs"]:
        out.append(f"/config/topics: Kafka {kafka['topic_configs']}, emulator {emulator['topic_configs']}")
    for name, value in kafka["admin"].items():
        if value != emulator["admin"][name]:
            out.append(f"/admin/{name}: Kafka {value}, emulator {emulator['admin'][name]}")
    return out


@dataclass
class Side:
    name: str
    session: ZkSession
    store: Store

    def view(self) -> dict:
        return view(self.session)


@dataclass
class Story:
    kafka: RealKafka
    real: Side
    copy: Side
    emulator: ControllerEmulator
    victim: int
    log: list[str] = field(default_factory=list)

    def settle(self, step: str, done, *, timeout: float = SETTLE) -> dict[str, dict]:
        """Until `done(view)` holds on both sides and the real side's view stopped changing (two reads 1 s apart),
        then one view per side."""
        views: dict[str, dict] = {}
        for side in (self.real, self.copy):
            deadline = time.monotonic() + timeout
            last = None
            while True:
                if side is self.copy:
                    self.emulator.wait_idle(5)
                current = side.view()
                if done(current) and (side is self.copy or current == last):
                    views[side.name] = current
                    break
                assert time.monotonic() < deadline, (
                    f"{step}: {side.name} did not settle within {timeout:g} s; last view:\n{current}\n"
                    f"emulator reactions: {list(self.emulator.reactions)[-10:]}")
                last = current if done(current) else None
                time.sleep(1.0 if side is self.real else 0.2)
        if self.emulator.failed:
            pytest.fail(f"{step}: the emulator resigned: {self.emulator.failed}")
        return views

    def compare(self, step: str, done) -> tuple[list[str], dict]:
        """Settle, compare; a difference is re-checked for a few seconds (a side may still be catching up).
        Returns the differences and Kafka's view."""
        deadline = time.monotonic() + 15
        while True:
            views = self.settle(step, done)
            diff = differences(views["kafka"], views["emulator"])
            if not diff or time.monotonic() >= deadline:
                self.log.append(f"{step}: " + ("same" if not diff else f"{len(diff)} differences"))
                return [f"{step}: {d}" for d in diff], views["kafka"]
            time.sleep(1.0)


# --------------------------------------------------------------------------------------------------------------
# the copy
# --------------------------------------------------------------------------------------------------------------


def copy_tree(src: ZkSession, dst: ZkSession) -> dict[int, bytes]:
    """Every persistent znode of `src` into `dst` (parents first); returns the broker registrations (ephemeral, like
    /controller, so not copied): they become the sandbox's broker intents, registered by the emulator's brokers."""
    src.sync()
    nodes: list[tuple[str, bytes]] = []
    registrations: dict[int, bytes] = {}
    level = ["/"]
    while level:
        below = src.children_many(level)
        paths = [f"{p.rstrip('/')}/{c}" for p in level for c in sorted(below[p] or ())]
        level = []
        for n in src.get_many(paths):
            if not n.exists:
                continue
            if n.ephemeral_owner:
                parent, _, name = n.path.rpartition("/")
                if parent == zf.BROKER_IDS and name.isdigit():
                    registrations[int(name)] = n.data
                continue
            nodes.append((n.path, n.data))
            level.append(n.path)
    dst.create_many(nodes)
    for broker_id, data in sorted(registrations.items()):
        dst.create(intent_path(broker_id), encode_intent(data.decode(), True), makepath=True)
    return registrations


@pytest.fixture(scope="module")
def story(kafka: RealKafka, tmp_path_factory: pytest.TempPathFactory):
    from kafka.admin import NewTopic

    kafka.ensure_healthy()
    existing = set(kafka.admin.list_topics())
    stale = sorted(t for t in existing if t.startswith(PREFIX))
    if stale:  # left by an earlier run against an external ZooKeeper
        kafka.admin.delete_topics(stale)
    kafka.admin.create_topics([NewTopic(t, replica_assignments=a) for t, a in STORY_TOPICS.items()])
    for t, a in STORY_TOPICS.items():
        kafka.wait_online(t, len(a))
    kafka.ensure_healthy()

    server = kafka.zk_connect.split("/", 1)[0]
    chroot = f"/parity-{uuid.uuid4().hex[:8]}"
    with ZkSession.open(server) as root:
        root.ensure_path(chroot)
    base: Path = tmp_path_factory.mktemp("parity")
    copy_session = ZkSession.open(f"{server}{chroot}")
    registrations = copy_tree(kafka.zk, copy_session)
    assert sorted(registrations) == kafka.cluster.broker_ids
    emulator = ControllerEmulator(copy_session).start()
    real = Side("kafka", kafka.zk, Store(base / "kafka.sqlite"))
    copy = Side("emulator", copy_session, Store(base / "emulator.sqlite"))
    controller = kafka.cluster.controller()
    victim = max(b for b in kafka.cluster.broker_ids if b != controller)  # no controller failover on Kafka's side
    try:
        yield Story(kafka, real, copy, emulator, victim)
    finally:
        emulator.stop()
        try:
            copy_session.delete_tree("/")
        finally:
            copy_session.close()
            with ZkSession.open(server) as root:
                root.delete_tree(chroot)
            kafka.ensure_healthy()
            kafka.admin.delete_topics([t for t in kafka.admin.list_topics() if t.startswith(PREFIX)])

            def gone() -> None:  # the tests after this one list topics (kafka-topics before 3.x fails on a vanishing one)
                assert not [t for t in kafka.zk.children(zf.TOPICS) or () if t.startswith(PREFIX)]
                assert not [t for t in kafka.admin.list_topics() if t.startswith(PREFIX)]

            eventually(gone, timeout=60)


# --------------------------------------------------------------------------------------------------------------
# the story
# --------------------------------------------------------------------------------------------------------------


def story_partitions(v: dict):
    return [(t, p, s) for t, parts in v["topics"].items() if t.startswith(PREFIX) for p, s in parts.items()]


def leaders(v: dict) -> dict[tuple[str, int], int]:
    return {(t, p): s["leader"] for t, p, s in story_partitions(v)}


def test_the_emulator_does_what_kafka_does(story: Story):
    """Each step on both sides, then the same leaders, ISRs, replicas and /admin nodes (see the module docstring)."""
    kafka, real, copy, victim = story.kafka, story.real, story.copy, story.victim
    diffs: list[str] = []

    def step(name: str, done) -> dict:
        found, kafka_view = story.compare(name, done)
        diffs.extend(found)
        return kafka_view

    # 0. the copy as the emulator took it over: a state Kafka's controller left is a fixed point
    before = step("the copy", lambda v: True)
    assert all(s["leader"] == s["replicas"][0] for _, _, s in story_partitions(before))

    # 1. kill -9 (Kafka: the session expires; the emulator: the registration goes)
    assert kafka.cluster.kill_broker(victim)
    sandbox_brokers.stop_broker(copy.session, victim)

    def down(v):
        parts = [s for _, _, s in story_partitions(v)]
        return all(s["leader"] != victim and (victim not in s["isr"] or s["isr"] == [victim]) for s in parts)

    kafka.cluster.wait_unregistered(victim)
    after = step(f"kill broker {victim}", down)
    moved = {k for k, leader in leaders(before).items() if leader == victim}
    assert {k: after["topics"][k[0]][k[1]]["leader"] for k in moved} == {
        k: -1 if k[0] == "par-rf1" else next(r for r in before["topics"][k[0]][k[1]]["replicas"] if r != victim)
        for k in moved}  # the story is what it says: leaders moved, the RF 1 partition went offline

    # 2. restart: back in every ISR, leading nothing it had not to (its RF 1 partition: offline -> online)
    kafka.cluster.start_broker(victim)
    sandbox_brokers.start_broker(copy.session, victim)

    def full(v):
        return all(s["isr"] is not None and sorted(s["isr"]) == sorted(s["replicas"]) for _, _, s in story_partitions(v))

    after = step(f"restart broker {victim}", full)
    assert [k for k, leader in leaders(after).items() if leader == victim] == [("par-rf1", victim - 1)]

    # 3. preferred leader election, every partition, through Keel
    for side in (real, copy):
        election_writes.trigger(side.session, side.store, cluster=side.name, all_partitions=True)
    after = step("preferred election", lambda v: v["admin"]["preferred_replica_election"] is None)
    assert leaders(after) == leaders(before)

    # 4. create, 5. grow, 6. delete a topic, through Keel (one draft, made from Kafka's side, applied to both)
    draft = draft_create_topic(read_snapshot(real.session), NEW_TOPIC, replica_assignment=NEW_ASSIGNMENT)
    for side in (real, copy):
        topic_admin.create_topic(side.session, side.store, draft, cluster=side.name)

    def online(n):
        return lambda v: (NEW_TOPIC in v["topics"] and len(v["topics"][NEW_TOPIC]) == n
                          and all(s["leader"] is not None and s["leader"] >= 0 for s in v["topics"][NEW_TOPIC].values()))

    step(f"create {NEW_TOPIC}", online(3))
    grow = draft_add_partitions(read_snapshot(real.session), NEW_TOPIC, 5)
    for side in (real, copy):
        topic_admin.add_partitions(side.session, side.store, grow, cluster=side.name)
    step(f"grow {NEW_TOPIC} to 5 partitions", online(5))
    for side in (real, copy):
        topic_admin.delete_topic(side.session, side.store, NEW_TOPIC, cluster=side.name)
    step(f"delete {NEW_TOPIC}", lambda v: NEW_TOPIC not in v["topics"] and not v["admin"]["delete_topics"]
         and NEW_TOPIC not in v["topic_configs"])

    # 7. reassignment: par-rf2-0 [1,2] -> [3,2] (leader 1 leaves: 3 leads), par-rf1-0 [1] -> [2] (the only replica
    # moves), par-rf2-2 [3,1] -> [1,3] (reorder only: completes at once, the leader stays)
    plan = parse_reassignment('{"version":1,"partitions":['
                              '{"topic":"par-rf2","partition":0,"replicas":[3,2]},'
                              '{"topic":"par-rf1","partition":0,"replicas":[2]},'
                              '{"topic":"par-rf2","partition":2,"replicas":[1,3]}]}')
    for side in (real, copy):
        reassign_writes.execute(side.session, side.store, plan, cluster=side.name)
    after = step("reassignment", lambda v: v["admin"]["reassign_partitions"] is None
                 and not any(s["adding"] or s["removing"] for _, _, s in story_partitions(v)))
    moved = after["topics"]
    assert (moved["par-rf2"][0]["replicas"], moved["par-rf2"][0]["leader"]) == ([3, 2], 3)
    assert (moved["par-rf1"][0]["replicas"], moved["par-rf1"][0]["leader"], moved["par-rf1"][0]["isr"]) == ([2], 2, [2])
    assert (moved["par-rf2"][2]["replicas"], moved["par-rf2"][2]["leader"]) == ([1, 3], 3)

    print("\n".join(story.log))
    assert not diffs, "the emulator and Kafka differ:\n" + "\n".join(diffs)
