"""Seed a simulated ZooKeeper-mode Kafka cluster into a real ZooKeeper, exactly as Kafka writes its tree.

Everything Kafka persists is written here: the top-level paths a broker creates at start-up, /cluster/id,
/controller_epoch, topic nodes (v3 with topic_id, as Kafka 2.8+ writes them), topic configs (always, `{}`
when empty), partition states and `__consumer_offsets`. What Kafka keeps in *ephemeral* nodes (broker
registrations, /controller) is not written: the controller emulator creates those from its own sessions.
The seeder leaves, per broker, an intent node /keel-sandbox/brokers/<id> holding the registration payload
and whether the broker should be up (the sandbox's own znodes are in sandbox.emulator.znodes).

All choices (names, sizes, placement, ids) come from one `random.Random(seed)`: the same spec always
seeds the same cluster. The `--demo` state is produced by running the controller's own decision functions
(sandbox.emulator.leadership) over a short history (a rolling restart, two lagging followers, one broker death),
so it is a state the real controller could have left behind.
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from core import zkformat as zf
from core.assignment import assign_replicas
from core.errors import KeelError, ValidationError
from core.model import PartitionState
from sandbox.security_seed import security_nodes
from sandbox.emulator import leadership as decide  # the controller's own decisions keep the demo faithful
from sandbox.emulator.leadership import initial_state
from sandbox.emulator.znodes import (  # also re-exported from here, where they were first defined
    EMULATOR,
    INTENTS,
    SANDBOX_ROOT,
    BrokerIntent,
    decode_intent,
    decode_status,
    encode_intent,
    intent_path,
)
from core.zk.session import Op, ZkSession

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions default
OFFSETS_CONFIG = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
MULTI_CHUNK = 400  # ops per ZooKeeper multi: well under jute.maxbuffer, few round trips


# --- the spec ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxSpec:
    brokers: int = 9
    racks: int = 3           # 0: no rack information at all
    topics: int = 30         # user topics, __consumer_offsets not counted
    partitions: int = 0      # partitions of every user topic; 0: the catalogue's sizes (1 to 64)
    seed: int = 7
    demo: bool = False
    first_broker_id: int = 1
    offsets_topic: bool = True
    controller_epoch: int = 1

    def validate(self) -> None:
        if self.brokers < 1:
            raise ValidationError(f"a sandbox needs at least one broker, got {self.brokers}")
        if not 0 <= self.racks <= self.brokers:
            raise ValidationError(f"racks must be between 0 and the broker count ({self.brokers}), got {self.racks}")
        if self.topics < 0:
            raise ValidationError(f"topics must be 0 or more, got {self.topics}")
        if self.partitions < 0:
            raise ValidationError(f"partitions must be 0 (the catalogue's sizes) or more, got {self.partitions}")
        if self.first_broker_id < 0:
            raise ValidationError(f"broker ids must be non-negative, got first id {self.first_broker_id}")
        if self.demo and self.brokers < 4:
            raise ValidationError("--demo needs at least 4 brokers (one dead, one empty, two to hold replicas)")

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.first_broker_id, self.first_broker_id + self.brokers))

    def rack_of(self, broker_id: int) -> str | None:
        if not self.racks:
            return None
        return "rack-" + _rack_letters((broker_id - self.first_broker_id) % self.racks)


def _rack_letters(i: int) -> str:
    # rack-a .. rack-z, then rack-aa, rack-ab ... (sorted order matches creation order for < 27 racks)
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


@dataclass
class SeedResult:
    brokers: list[int]
    down: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)
    topics: int = 0
    partitions: int = 0
    cluster_id: str = ""
    znodes: int = 0

    def summary(self) -> str:
        text = (f"seeded {len(self.brokers)} brokers, {self.topics} topics, {self.partitions} partitions "
                f"(cluster id {self.cluster_id})")
        if self.down:
            text += f"; down: {', '.join(map(str, self.down))}"
        if self.empty:
            text += f"; empty: {', '.join(map(str, self.empty))}"
        return text


# --- topic catalog: names and shapes that look like a real estate ------------------------------

# (name, partitions or None for a random count, replication factor or None, config overrides)
_CATALOG: tuple[tuple[str, int | None, int | None, dict[str, str]], ...] = (
    ("orders.v1", None, 3, {"min.insync.replicas": "2"}),
    ("payments-events", 12, 3, {"min.insync.replicas": "2", "retention.ms": "1209600000"}),
    ("inventory.updates", None, 3, {}),
    ("user-signups", None, 3, {"min.insync.replicas": "2"}),
    ("clickstream.raw", 64, 3, {"retention.ms": "86400000", "segment.bytes": "536870912"}),
    ("clickstream.enriched", 32, 3, {"retention.ms": "259200000"}),
    ("checkout.sessions", None, 3, {"min.insync.replicas": "2"}),
    ("fraud-scores", None, 3, {}),
    ("email-outbox", None, 3, {"min.insync.replicas": "2"}),
    ("audit-log", None, 3, {"retention.ms": "31536000000", "min.insync.replicas": "2"}),
    ("search-index-updates", None, 2, {}),
    ("pricing.changes", None, 3, {"cleanup.policy": "compact"}),
    ("shipments.status", None, 3, {}),
    ("ledger.entries", None, 3, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}),
    ("cdc.customers", None, 3, {"cleanup.policy": "compact"}),
    ("cdc.orders", None, 3, {"cleanup.policy": "compact"}),
    ("metrics.host", None, 2, {"retention.ms": "172800000"}),
    ("logs.app", 48, 2, {"retention.ms": "86400000", "compression.type": "lz4"}),
    ("notifications.push", None, 3, {}),
    ("cart-events", None, 3, {}),
    ("session-heartbeats", None, 1, {"retention.ms": "3600000"}),
    ("feature-flags", 1, 3, {"cleanup.policy": "compact"}),
    ("ml.training-samples", None, 2, {"retention.ms": "604800000"}),
    ("billing.invoices", None, 3, {"min.insync.replicas": "2"}),
    ("support.tickets", None, 3, {}),
    ("ad-impressions", 24, 3, {"retention.ms": "43200000"}),
    ("iot.telemetry", None, 3, {"compression.type": "zstd"}),
    ("dead-letter.orders", 1, 3, {}),
    ("connect-configs", 1, 3, {"cleanup.policy": "compact"}),
    ("connect-offsets", 25, 3, {"cleanup.policy": "compact"}),
    ("connect-status", 5, 3, {"cleanup.policy": "compact"}),
    ("_schemas", 1, 3, {"cleanup.policy": "compact"}),
    ("geo.locations", None, 3, {}),
    ("returns.requests", None, 3, {}),
    ("recommendations.v2", None, 3, {}),
    ("scratch.loadtest", None, 1, {}),
)
_PARTITION_COUNTS = (1, 3, 6, 6, 8, 12, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class TopicPlan:
    name: str
    replicas: dict[int, list[int]]
    config: dict[str, str]
    topic_id: str


def _base64_uuid(rng: random.Random) -> str:
    """Kafka's Uuid.toString / cluster id: URL-safe base64 of a random (v4) UUID, no padding: 22 chars."""
    raw = uuid.UUID(bytes=rng.randbytes(16), version=4).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def plan_topics(spec: SandboxSpec, rng: random.Random, brokers: Sequence[tuple[int, str | None]]) -> list[TopicPlan]:
    """Names, sizes, configs and placement of every topic, deterministic in `rng`."""
    catalog = list(_CATALOG)
    rng.shuffle(catalog)
    chosen = []
    for i in range(spec.topics):
        name, parts, rf, config = catalog[i % len(catalog)]
        if i >= len(catalog):  # more topics than the catalog: suffix a generation, as teams do
            name = f"{name}.g{i // len(catalog) + 1}"
        chosen.append((name, parts, rf, dict(config)))
    if spec.demo and not any(c.get("min.insync.replicas") == "2" for _, _, rf, c in chosen if rf == 3):
        # the demo needs an RF 3 topic with min.insync.replicas=2 to show a partition under min ISR
        name, parts, rf, config = chosen[0] if chosen else ("orders.v1", None, 3, {})
        chosen[0:1] = [(name, parts, 3, {**config, "min.insync.replicas": "2"})]
    if spec.demo and not chosen:
        chosen.append(("orders.v1", None, 3, {"min.insync.replicas": "2"}))

    plans = []
    for name, parts, rf, config in chosen:
        n = spec.partitions or parts or rng.choice(_PARTITION_COUNTS)
        rf = min(rf or 3, len(brokers))
        if rf < 3:
            config.pop("min.insync.replicas", None)  # min ISR 2 on RF 1 would make the topic unwritable
        plans.append(TopicPlan(name, assign_replicas(brokers, n, rf, rng=rng), config, _base64_uuid(rng)))
    if spec.offsets_topic:
        # The broker creates it on first use: rack-aware, random start, RF min(3, brokers).
        rf = min(3, len(brokers))
        plans.append(TopicPlan(OFFSETS_TOPIC, assign_replicas(brokers, OFFSETS_PARTITIONS, rf, rng=rng),
                               dict(OFFSETS_CONFIG), _base64_uuid(rng)))
    return plans


# --- partition states: fresh, then the demo's history ----------------------------------------


def _demo_history(spec: SandboxSpec, rng: random.Random, plans: list[TopicPlan],
                  states: dict[tuple[str, int], PartitionState], holders: list[int]) -> int:
    """Mutate `states` through a plausible history; returns the broker left dead."""
    epoch = spec.controller_epoch
    replicas = {(p.name, pid): r for p in plans for pid, r in p.replicas.items()}
    alive = set(holders)
    restarted, dead = rng.sample(holders[1:], 2)  # never the lowest id: it hosts the controller

    def apply(fn) -> None:
        for key, state in list(states.items()):
            new = fn(replicas[key], state)
            if new is not None:
                states[key] = new

    # 1. A rolling restart of one broker: its partitions' leadership moved away and did not come back.
    alive.discard(restarted)
    apply(lambda r, s: decide.after_brokers_down(r, s, {restarted}, alive, epoch))
    alive.add(restarted)
    apply(lambda r, s: decide.after_brokers_up(r, s, {restarted}, alive, epoch))

    # 2. Two slow followers dropped out of the ISR by their leaders: under-replicated, all brokers alive.
    candidates = sorted(k for k, s in states.items()
                        if len(replicas[k]) == 3 and len(s.isr) == 3 and dead not in replicas[k])
    for key in rng.sample(candidates, min(2, len(candidates))):
        s = states[key]
        states[key] = decide.leader_shrinks_isr(s, [r for r in s.isr if r != s.leader][-1])

    # 3. One broker dies and stays down.
    alive.discard(dead)
    apply(lambda r, s: decide.after_brokers_down(r, s, {dead}, alive, epoch))

    # 4. A follower lagging on a min.insync.replicas=2 topic: that partition is now under min ISR.
    strict = [p.name for p in plans if p.config.get("min.insync.replicas") == "2"]
    keys = sorted((k for k in states if k[0] in strict and len(replicas[k]) == 3 and states[k].leader in alive),
                  key=lambda k: (len(states[k].isr), k))
    if keys:
        s = states[keys[0]]
        for follower in [r for r in s.isr if r != s.leader]:
            s = decide.leader_shrinks_isr(s, follower)
        states[keys[0]] = s
    return dead


# --- writing -----------------------------------------------------------------------------------


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class _Ops:
    """Creates in parent-first order, each path once."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._seen: set[str] = set()

    def create(self, path: str, data: bytes = b"") -> None:
        for parent in _ancestors(path):
            if parent not in self._seen:
                self._seen.add(parent)
                self.ops.append(Op("create", parent))
        if path in self._seen:  # a parent created empty earlier, now with data: cannot happen in our order
            raise AssertionError(f"{path} created twice")
        self._seen.add(path)
        self.ops.append(Op("create", path, data))


def _ensure_chroot(session: ZkSession) -> None:
    """A chroot that does not exist yet must be created from a session without chroot (as Kafka does)."""
    chroot = session.target.chroot
    if not chroot or session.exists("/"):
        return
    root = ZkSession.open(replace(session.settings, connect=session.target.hosts_text))
    try:
        root.ensure_path(chroot)
    finally:
        root.close()


def _where(session: ZkSession) -> str:
    return str(session.target)


def _refuse_or_wipe(session: ZkSession, force: bool) -> None:
    for path, what in ((zf.CONTROLLER, "a Kafka controller"), (EMULATOR, "a sandbox controller emulator")):
        if session.exists(path):
            raise KeelError(f"{what} is active on {_where(session)} ({path} exists): stop it before seeding"
                            + (" (even --force will not wipe a live cluster)" if force else ""))
    existing = [p for p in (zf.TOPICS, zf.BROKER_IDS, SANDBOX_ROOT) if session.exists(p)]
    if not existing:
        return
    if not force:
        raise KeelError(f"{_where(session)} already holds a Kafka tree ({existing[0]} exists); nothing was "
                        "written. Use another chroot, or --force to wipe this one first")
    for child in session.children("/") or ():
        if child != "zookeeper":  # ZooKeeper's own node at the real root
            session.delete("/" + child, recursive=True)


def _multi_chunks(session: ZkSession, ops: list[Op]) -> None:
    for i in range(0, len(ops), MULTI_CHUNK):
        session.multi(ops[i:i + MULTI_CHUNK])


def seed_cluster(session: ZkSession, spec: SandboxSpec | None = None, *, force: bool = False) -> SeedResult:
    """Write a ZK-mode Kafka tree for `spec` under the session's chroot. Refuses (writing nothing) when a
    tree is already there, unless `force`, which wipes the chroot first."""
    spec = spec or SandboxSpec()
    spec.validate()
    _ensure_chroot(session)
    _refuse_or_wipe(session, force)

    rng = random.Random(spec.seed)
    cluster_id = _base64_uuid(rng)
    ids = spec.broker_ids
    # The demo's empty broker joins after every topic was placed, so it holds nothing.
    holders = ids[:-1] if spec.demo else ids
    pairs = [(b, spec.rack_of(b)) for b in holders]
    plans = plan_topics(spec, rng, pairs)

    epoch = spec.controller_epoch
    states: dict[tuple[str, int], PartitionState] = {}
    for plan in plans:
        for pid, replicas in plan.replicas.items():
            states[(plan.name, pid)] = initial_state(replicas, set(holders), epoch)
    down = [_demo_history(spec, rng, plans, states, holders)] if spec.demo else []

    ops = _Ops()
    for path in zf.PERSISTENT_PATHS:
        ops.create(path)
    ops.create(zf.CLUSTER_ID, zf.encode_cluster_id(cluster_id))
    ops.create(zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(epoch))
    for plan in plans:
        # Kafka writes the config first, then the assignment; the controller then writes the states.
        ops.create(zf.topic_config_path(plan.name), zf.encode_config(plan.config))
        ops.create(zf.topic_path(plan.name), zf.encode_topic(plan.replicas, version=3, topic_id=plan.topic_id))
        for pid in sorted(plan.replicas):
            s = states[(plan.name, pid)]
            ops.create(zf.state_path(plan.name, pid),
                       zf.encode_partition_state(s.leader, s.leader_epoch, s.controller_epoch, s.isr))
    if spec.demo:  # issue 29: a few ACL bindings and quotas for the Security page, around the first user topic
        first = next((p.name for p in plans if not p.name.startswith("_")), None)
        for path, data in security_nodes(first or "orders.v1"):
            ops.create(path, data)
    now_ms = int(time.time() * 1000)
    for b in ids:
        registration = zf.encode_broker([f"PLAINTEXT://127.0.0.1:{9092 + b}"], version=5, rack=spec.rack_of(b),
                                        jmx_port=-1, timestamp_ms=now_ms).decode()
        ops.create(intent_path(b), encode_intent(registration, b not in down))
    _multi_chunks(session, ops.ops)

    return SeedResult(brokers=ids, down=down, empty=[ids[-1]] if spec.demo else [], topics=len(plans),
                      partitions=len(states), cluster_id=cluster_id, znodes=len(ops.ops))


def known_intents(session: ZkSession, ids: Iterable[str] | None = None) -> dict[int, BrokerIntent]:
    """Every readable intent under /keel-sandbox/brokers."""
    names = sorted(n for n in (ids if ids is not None else session.children(INTENTS) or ()) if n.isdigit())
    out = {}
    for name, node in zip(names, session.get_many([intent_path(int(n)) for n in names])):
        intent = decode_intent(int(name), node.data)
        if intent is not None:
            out[int(name)] = intent
    return out


__all__ = [
    "SANDBOX_ROOT", "INTENTS", "EMULATOR", "BrokerIntent", "SandboxSpec", "SeedResult", "TopicPlan",
    "intent_path", "encode_intent", "decode_intent", "decode_status", "plan_topics", "seed_cluster",
    "known_intents",
]
