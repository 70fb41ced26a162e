"""The cluster as Kafka's controller sees it: frozen dataclasses and the snapshot JSON.

`ClusterSnapshot` is the one exchange format between the ZooKeeper reader, the CLI, the planner,
the fleet export and the dashboard (see DESIGN.md, "The snapshot"). Everything here is pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Iterable, Iterator, Mapping

from core.errors import SnapshotFormatError
from core.numbers import json_int

SNAPSHOT_FORMAT = "keel.snapshot/1"
NO_LEADER = -1
# A snapshot file is ~250 bytes a partition (indented, replication factor 3): 512 MiB is ~2 million partitions,
# ten times the ~200,000 a ZooKeeper-mode cluster can carry. A larger file is a mistake, and parsing it would
# take several GB of memory before anything could be said about it.
MAX_SNAPSHOT_BYTES = 512 * 2**20


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str | None = None
    host: str | None = None
    port: int | None = None
    endpoints: tuple[str, ...] = ()
    alive: bool = True
    # A down broker's rack, host and endpoints as its last registration said, while a live connection watched it
    # (core.zk.tree): remembered, not current. False for what /brokers/ids holds now, and for a down broker whose
    # registration was never seen (rack and endpoints unknown).
    remembered: bool = False
    # KRaft: registered with the controller but fenced (stopped, or behind the metadata log): not alive either
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Decoded `/brokers/topics/<t>/partitions/<p>/state`."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int | None = None
    version: int = 1


@dataclass(frozen=True, slots=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    leader_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # False when the state znode is missing (a topic the controller has not initialised yet).
    has_state: bool = True
    # KRaft with eligible leader replicas (KIP-966, Kafka 4): replicas out of the ISR that may still be elected
    # cleanly (they had every committed record when they left it)
    elr: tuple[int, ...] = ()
    # and the ELR last known before the partition lost its leader (both empty where Kafka has no ELR)
    last_known_elr: tuple[int, ...] = ()

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    def with_state(self, state: PartitionState | None) -> "Partition":
        if state is None:
            return replace(self, leader=NO_LEADER, isr=(), leader_epoch=0, has_state=False)
        return replace(self, leader=state.leader, isr=state.isr, leader_epoch=state.leader_epoch, has_state=True)


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    partitions: tuple[Partition, ...]
    topic_id: str | None = None
    config: Mapping[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def is_internal(self) -> bool:
        return self.name in ("__consumer_offsets", "__transaction_state")


@dataclass(frozen=True, slots=True)
class Controller:
    broker_id: int | None
    epoch: int | None = None
    kraft_controller_epoch: int | None = None  # set only by /controller v2

    @property
    def is_kraft(self) -> bool:
        return bool(self.kraft_controller_epoch and self.kraft_controller_epoch > 0)


@dataclass(frozen=True, slots=True)
class TopicPartitionReplicas:
    topic: str
    partition: int
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class InProgress:
    reassignment: tuple[TopicPartitionReplicas, ...] = ()
    preferred_election: tuple[tuple[str, int], ...] = ()
    deletion: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """A znode that could not be decoded; the rest of the snapshot still loaded."""

    path: str
    error: str


@dataclass(frozen=True, slots=True)
class QuorumReplica:
    """One replica of KRaft's metadata log as DescribeQuorum reports it."""

    id: int
    log_end_offset: int | None = None
    last_caught_up_ms: int | None = None  # epoch millis; None when the leader has not heard from it


@dataclass(frozen=True, slots=True)
class Quorum:
    """KRaft's controller quorum: the leader of the metadata log (the active controller), its epoch and high
    watermark, the voters (controllers) and the observers (brokers) with how far each has replicated."""

    leader: int | None
    epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...] = ()
    observers: tuple[QuorumReplica, ...] = ()

    def lag(self, replica: QuorumReplica) -> int | None:
        """Records behind the high watermark (Kafka's kafka-metadata-quorum --replication "Lag")."""
        return None if replica.log_end_offset is None else max(self.high_watermark - replica.log_end_offset, 0)


@dataclass(frozen=True)
class ClusterSnapshot:
    cluster: str
    captured_at: str
    source: str
    brokers: tuple[Broker, ...]
    topics: tuple[Topic, ...]
    controller: Controller | None = None
    in_progress: InProgress = InProgress()
    cluster_id: str | None = None
    # broker-level dynamic configs: "<default>" or the broker id as a string -> {key: value}
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()
    # "zookeeper" (read from ZooKeeper) or "kraft" (read through the Admin API from a cluster without ZooKeeper)
    mode: str = "zookeeper"
    quorum: Quorum | None = None

    @property
    def is_kraft(self) -> bool:
        return self.mode == "kraft"

    # --- lookups (cached: a snapshot is immutable) -------------------------------------------

    @cached_property
    def broker_by_id(self) -> dict[int, Broker]:
        return {b.id: b for b in self.brokers}

    @cached_property
    def alive_broker_ids(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers if b.alive)

    @cached_property
    def topic_by_name(self) -> dict[str, Topic]:
        return {t.name: t for t in self.topics}

    def topic(self, name: str) -> Topic | None:
        return self.topic_by_name.get(name)

    def partitions(self) -> Iterator[Partition]:
        for t in self.topics:
            yield from t.partitions

    @cached_property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics)

    @cached_property
    def replica_count(self) -> int:
        return sum(len(p.replicas) for t in self.topics for p in t.partitions)

    def broker_config(self, broker_id: int, key: str) -> str | None:
        """Dynamic broker config as Kafka resolves it: per-broker, then cluster default."""
        own = self.broker_configs.get(str(broker_id), {})
        if key in own:
            return own[key]
        return self.broker_configs.get("<default>", {}).get(key)

    # --- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SNAPSHOT_FORMAT,
            "cluster": self.cluster,
            "captured_at": self.captured_at,
            "source": self.source,
            "cluster_id": self.cluster_id,
            "controller": None
            if self.controller is None
            else {"broker_id": self.controller.broker_id, "epoch": self.controller.epoch}
            | ({"kraft_controller_epoch": self.controller.kraft_controller_epoch}
               if self.controller.kraft_controller_epoch is not None else {}),
            "brokers": [
                {"id": b.id, "rack": b.rack, "host": b.host, "port": b.port,
                 "endpoints": list(b.endpoints), "alive": b.alive} | ({"remembered": True} if b.remembered else {})
                | ({"fenced": True} if b.fenced else {})
                for b in sorted(self.brokers, key=lambda b: b.id)
            ],
            "broker_configs": {k: dict(v) for k, v in sorted(self.broker_configs.items())},
            "topics": [
                {"name": t.name, "topic_id": t.topic_id, "config": dict(sorted(t.config.items())),
                 "partitions": [_partition_dict(p) for p in sorted(t.partitions, key=lambda p: p.partition)]}
                for t in sorted(self.topics, key=lambda t: t.name)
            ],
            "in_progress": {
                "reassignment": [
                    {"topic": r.topic, "partition": r.partition, "replicas": list(r.replicas)}
                    for r in sorted(self.in_progress.reassignment, key=lambda r: (r.topic, r.partition))
                ],
                "preferred_election": [
                    {"topic": t, "partition": p} for t, p in sorted(self.in_progress.preferred_election)
                ],
                "deletion": sorted(self.in_progress.deletion),
            },
            "problems": [{"path": p.path, "error": p.error} for p in self.problems],
        } | ({"mode": self.mode} if self.mode != "zookeeper" else {}) | (
            {"quorum": _quorum_dict(self.quorum)} if self.quorum is not None else {})

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> "ClusterSnapshot":
        if len(text) > MAX_SNAPSHOT_BYTES:
            raise SnapshotFormatError(f"snapshot is {len(text):,} bytes; the limit is {MAX_SNAPSHOT_BYTES // 2**20} MiB "
                                      "(~2 million partitions)")
        try:
            doc = json.loads(text, parse_int=json_int)
        except ValueError as e:
            raise SnapshotFormatError(f"snapshot is not valid JSON: {e}") from None
        except RecursionError:
            raise SnapshotFormatError("not a Keel snapshot: the JSON is nested too deeply") from None
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: Any) -> "ClusterSnapshot":
        if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise SnapshotFormatError(f"not a Keel snapshot: expected format {SNAPSHOT_FORMAT!r}, got {got!r}")
        try:
            ctrl = _opt_obj(doc, "controller", "snapshot")
            ip = _opt_obj(doc, "in_progress", "snapshot") or {}
            brokers = tuple(_broker_from(b, i) for i, b in enumerate(_list(doc, "brokers", "snapshot")))
            _unique((b.id for b in brokers), "broker {} appears more than once in 'brokers'")
            topics = tuple(_topic_from(t, i) for i, t in enumerate(_list(doc, "topics", "snapshot")))
            _unique((t.name for t in topics), "topic {!r} appears more than once in 'topics'")
            return cls(
                cluster=str(doc.get("cluster", "")),
                captured_at=str(doc.get("captured_at", "")),
                source=str(doc.get("source", "")),
                cluster_id=_opt(doc, "cluster_id", str, "snapshot"),
                controller=None if ctrl is None else Controller(
                    broker_id=_opt(ctrl, "broker_id", int, "controller"), epoch=_opt(ctrl, "epoch", int, "controller"),
                    kraft_controller_epoch=_opt(ctrl, "kraft_controller_epoch", int, "controller")),
                brokers=brokers,
                broker_configs={str(k): _config(v, f"broker_configs[{k!r}]")
                                for k, v in (_opt_obj(doc, "broker_configs", "snapshot") or {}).items()},
                topics=topics,
                in_progress=InProgress(
                    reassignment=tuple(_moving_from(r, f"in_progress.reassignment[{i}]")
                                       for i, r in enumerate(_list(ip, "reassignment", "in_progress", ()))),
                    preferred_election=tuple(
                        (_name(e, "topic", where), _pid(e, where))
                        for i, e in enumerate(_list(ip, "preferred_election", "in_progress", ()))
                        if (where := f"in_progress.preferred_election[{i}]")),
                    deletion=tuple(_strings(ip, "deletion", "in_progress")),
                ),
                problems=tuple(Problem(_name(p, "path", "problems"), str(p.get("error", "")))
                               for p in _list(doc, "problems", "snapshot", ())),
                mode=_mode(doc),
                quorum=_quorum_from(_opt_obj(doc, "quorum", "snapshot")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SnapshotFormatError(f"malformed snapshot: {type(e).__name__}: {e}") from None

    # --- derived snapshots -------------------------------------------------------------------

    def as_read(self) -> "ClusterSnapshot":
        """What a fresh read of ZooKeeper gives: the same snapshot without what a live view remembers of down
        brokers (their last registration: rack, host, endpoints)."""
        if not any(b.remembered for b in self.brokers):
            return self
        return replace(self, brokers=tuple(Broker(b.id, alive=False) if b.remembered else b for b in self.brokers))

    def filtered(self, keep: "callable[[Partition], bool]") -> "ClusterSnapshot":
        """The same snapshot holding only the partitions `keep` accepts (topics left empty are dropped)."""
        topics = []
        for t in self.topics:
            parts = tuple(p for p in t.partitions if keep(p))
            if parts:
                topics.append(replace(t, partitions=parts))
        return replace(self, topics=tuple(topics))


def _partition_dict(p: Partition) -> dict[str, Any]:
    d = {"partition": p.partition, "replicas": list(p.replicas), "leader": p.leader, "isr": list(p.isr),
         "leader_epoch": p.leader_epoch, "adding_replicas": list(p.adding_replicas),
         "removing_replicas": list(p.removing_replicas)}
    if not p.has_state:
        d["has_state"] = False
    if p.elr:
        d["elr"] = list(p.elr)
    if p.last_known_elr:
        d["last_known_elr"] = list(p.last_known_elr)
    return d


# --- strict snapshot parsing: every field typed, ids unique, replicas among the brokers ------------------------
# A snapshot file feeds the planner and its rollback JSON: a value Kafka would never write (replicas "x",
# [1,1,99]) must stop there with the topic and partition named, not travel into a plan. (A replica on a broker
# the file does not list is accepted: hand-built snapshots omit dead brokers, and the planner treats it as dead.)


def _bad(where: str, problem: str) -> SnapshotFormatError:
    return SnapshotFormatError(f"malformed snapshot: {where}: {problem}")


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, f"must be an object, got {_show(value)}")
    return value


def _opt_obj(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = doc.get(key)
    return None if value is None else _obj(value, f"{where} {key!r}")


def _list(doc: Mapping[str, Any], key: str, where: str, default: Any = ...) -> list[Any]:
    if key not in doc and default is not ...:
        return list(default)
    value = doc[key] if key in doc else None
    if not isinstance(value, list):
        raise _bad(where, f"{key!r} must be a list, got {_show(value)}")
    return value


def _opt(doc: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = doc.get(key)
    if value is None:
        return None
    if type(value) is not kind:
        raise _bad(where, f"{key!r} must be {'an integer' if kind is int else 'a string'} or null, got {_show(value)}")
    return value


def _int(doc: Mapping[str, Any], key: str, where: str, default: Any = ..., minimum: int = 0) -> int:
    if key not in doc:
        if default is ...:
            raise _bad(where, f"missing {key!r}")
        return default
    value = doc[key]
    if type(value) is not int or value < minimum:
        raise _bad(where, f"{key!r} must be an integer{'' if minimum < 0 else ' >= ' + str(minimum)}, "
                          f"got {_show(value)}")
    return value


def _pid(doc: Mapping[str, Any], where: str) -> int:
    if type(doc.get("partition")) is not int or doc["partition"] < 0:
        raise _bad(where, f"'partition' must be a non-negative integer, got {_show(doc.get('partition'))}")
    return doc["partition"]


def _name(doc: Any, key: str, where: str) -> str:
    value = _obj(doc, where).get(key)
    if not isinstance(value, str) or not value:
        raise _bad(where, f"{key!r} must be a non-empty string, got {_show(value)}")
    return value


def _strings(doc: Mapping[str, Any], key: str, where: str) -> list[str]:
    values = _list(doc, key, where, ())
    if not all(isinstance(v, str) for v in values):
        raise _bad(where, f"{key!r} must be a list of strings, got {_show(values)}")
    return values


def _broker_ids(doc: Mapping[str, Any], key: str, where: str, default: Any = ...) -> tuple[int, ...]:
    if key not in doc and default is not ...:
        return tuple(default)
    value = doc.get(key)
    if type(value) is not list or not all(type(b) is int and b >= 0 for b in value):
        raise _bad(where, f"{key!r} must be a list of broker ids (non-negative integers), got {_show(value)}")
    if len(set(value)) != len(value):
        twice = sorted({b for b in value if value.count(b) > 1})
        raise _bad(where, f"broker {','.join(map(str, twice))} appears more than once in {key!r} {_show(value)}")
    return tuple(value)


def _config(value: Any, where: str) -> dict[str, str]:
    cfg = _obj(value, where)
    bad = next((k for k, v in cfg.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise _bad(where, f"config value of {bad!r} must be a string, got {_show(cfg[bad])}")
    return dict(cfg)


def _unique(items: Iterable[Any], message: str) -> None:
    seen: set[Any] = set()
    for item in items:
        if item in seen:
            raise _bad("snapshot", message.format(item))
        seen.add(item)


def _broker_from(b: Any, i: int) -> Broker:
    where = f"brokers[{i}]"
    b = _obj(b, where)
    broker_id = _int(b, "id", where)
    where = f"broker {broker_id}"
    alive = b.get("alive", True)
    if type(alive) is not bool:
        raise _bad(where, f"'alive' must be true or false, got {_show(alive)}")
    remembered = b.get("remembered", False)
    if type(remembered) is not bool or (remembered and alive):
        raise _bad(where, f"'remembered' must be true only for a broker that is not alive, got {_show(remembered)}")
    fenced = b.get("fenced", False)
    if type(fenced) is not bool or (fenced and alive):
        raise _bad(where, f"'fenced' must be true only for a broker that is not alive, got {_show(fenced)}")
    endpoints = _strings(b, "endpoints", where) if b.get("endpoints") is not None else []
    return Broker(id=broker_id, rack=_opt(b, "rack", str, where), host=_opt(b, "host", str, where),
                  port=_opt(b, "port", int, where), endpoints=tuple(endpoints), alive=alive, remembered=remembered,
                  fenced=fenced)


def _mode(doc: Mapping[str, Any]) -> str:
    mode = doc.get("mode", "zookeeper")
    if mode not in ("zookeeper", "kraft"):
        raise _bad("snapshot", f"'mode' must be \"zookeeper\" or \"kraft\", got {_show(mode)}")
    return mode


def _quorum_dict(q: Quorum) -> dict[str, Any]:
    def replica(r: QuorumReplica) -> dict[str, Any]:
        return {"id": r.id, "log_end_offset": r.log_end_offset, "last_caught_up_ms": r.last_caught_up_ms}
    return {"leader": q.leader, "epoch": q.epoch, "high_watermark": q.high_watermark,
            "voters": [replica(r) for r in q.voters], "observers": [replica(r) for r in q.observers]}


def _quorum_from(q: Mapping[str, Any] | None) -> Quorum | None:
    if q is None:
        return None

    def replicas(key: str) -> tuple[QuorumReplica, ...]:
        out = []
        for i, r in enumerate(_list(q, key, "quorum", ())):
            where = f"quorum.{key}[{i}]"
            r = _obj(r, where)
            out.append(QuorumReplica(_int(r, "id", where), _opt(r, "log_end_offset", int, where),
                                     _opt(r, "last_caught_up_ms", int, where)))
        return tuple(out)
    return Quorum(leader=_opt(q, "leader", int, "quorum"), epoch=_int(q, "epoch", "quorum"),
                  high_watermark=_int(q, "high_watermark", "quorum"), voters=replicas("voters"),
                  observers=replicas("observers"))


def _moving_from(r: Any, where: str) -> TopicPartitionReplicas:
    return TopicPartitionReplicas(_name(r, "topic", where), _pid(r, where), _broker_ids(r, "replicas", where, ()))


def _topic_from(t: Any, i: int) -> Topic:
    name = _name(t, "name", f"topics[{i}]")
    where = f"topic {name!r}"
    parts = tuple(_partition_from(name, p) for p in _list(t, "partitions", where))
    _unique((p.partition for p in parts), f"{where}: partition {{}} appears more than once")
    return Topic(name=name, topic_id=_opt(t, "topic_id", str, where),
                 config=_config(t.get("config") or {}, f"{where} 'config'"), partitions=parts)


def _partition_from(topic: str, p: Any) -> Partition:
    where = f"topic {topic!r} partition {p.get('partition') if isinstance(p, dict) else '?'}"
    p = _obj(p, where)
    pid = _pid(p, where)
    replicas = _broker_ids(p, "replicas", where)
    if not replicas:
        raise _bad(where, "'replicas' is empty")
    has_state = p.get("has_state", True)
    if type(has_state) is not bool:
        raise _bad(where, f"'has_state' must be true or false, got {_show(has_state)}")
    return Partition(
        topic=topic, partition=pid, replicas=replicas,
        leader=_int(p, "leader", where, NO_LEADER, minimum=NO_LEADER), isr=_broker_ids(p, "isr", where, ()),
        leader_epoch=_int(p, "leader_epoch", where, 0, minimum=-1),
        adding_replicas=_broker_ids(p, "adding_replicas", where, ()),
        removing_replicas=_broker_ids(p, "removing_replicas", where, ()),
        has_state=has_state,
        elr=_broker_ids(p, "elr", where, ()),
        last_known_elr=_broker_ids(p, "last_known_elr", where, ()),
    )


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


