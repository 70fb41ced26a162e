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

SNAPSHOT_FORMAT = "keel.snapshot/1"
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str | None = None
    host: str | None = None
    port: int | None = None
    endpoints: tuple[str, ...] = ()
    alive: bool = True


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
                 "endpoints": list(b.endpoints), "alive": b.alive}
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
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> "ClusterSnapshot":
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise SnapshotFormatError(f"snapshot is not valid JSON: {e}") from None
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: Any) -> "ClusterSnapshot":
        if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise SnapshotFormatError(f"not a Keel snapshot: expected format {SNAPSHOT_FORMAT!r}, got {got!r}")
        try:
            ctrl = doc.get("controller")
            ip = doc.get("in_progress") or {}
            return cls(
                cluster=str(doc.get("cluster", "")),
                captured_at=str(doc.get("captured_at", "")),
                source=str(doc.get("source", "")),
                cluster_id=doc.get("cluster_id"),
                controller=None if ctrl is None else Controller(
                    broker_id=ctrl.get("broker_id"), epoch=ctrl.get("epoch"),
                    kraft_controller_epoch=ctrl.get("kraft_controller_epoch")),
                brokers=tuple(
                    Broker(id=int(b["id"]), rack=b.get("rack"), host=b.get("host"), port=b.get("port"),
                           endpoints=tuple(b.get("endpoints") or ()), alive=bool(b.get("alive", True)))
                    for b in doc["brokers"]
                ),
                broker_configs={str(k): dict(v) for k, v in (doc.get("broker_configs") or {}).items()},
                topics=tuple(
                    Topic(name=t["name"], topic_id=t.get("topic_id"), config=dict(t.get("config") or {}),
                          partitions=tuple(_partition_from(t["name"], p) for p in t["partitions"]))
                    for t in doc["topics"]
                ),
                in_progress=InProgress(
                    reassignment=tuple(
                        TopicPartitionReplicas(r["topic"], int(r["partition"]), tuple(r["replicas"]))
                        for r in ip.get("reassignment", ())
                    ),
                    preferred_election=tuple((e["topic"], int(e["partition"])) for e in ip.get("preferred_election", ())),
                    deletion=tuple(ip.get("deletion", ())),
                ),
                problems=tuple(Problem(p["path"], p["error"]) for p in doc.get("problems", ())),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SnapshotFormatError(f"malformed snapshot: {type(e).__name__}: {e}") from None

    # --- derived snapshots -------------------------------------------------------------------

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
    return d


def _partition_from(topic: str, p: Mapping[str, Any]) -> Partition:
    return Partition(
        topic=topic, partition=int(p["partition"]), replicas=tuple(p["replicas"]),
        leader=int(p.get("leader", NO_LEADER)), isr=tuple(p.get("isr", ())), leader_epoch=int(p.get("leader_epoch", 0)),
        adding_replicas=tuple(p.get("adding_replicas", ())), removing_replicas=tuple(p.get("removing_replicas", ())),
        has_state=bool(p.get("has_state", True)),
    )


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sort_topics(topics: Iterable[Topic]) -> tuple[Topic, ...]:
    return tuple(sorted(topics, key=lambda t: t.name))
