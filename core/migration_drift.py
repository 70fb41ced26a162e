"""Drift during a ZooKeeper -> KRaft migration's dual-write: ZooKeeper against the metadata the brokers serve.

Once the initial copy is done, the KRaft controller is the source of truth and writes every metadata change back
into ZooKeeper for the brokers still in ZooKeeper mode (KRaftMigrationDriver's dual-write). A write stuck behind
leaves ZooKeeper saying something the brokers no longer do; `ZkWriteBehindLag` only counts records, not which
ones. `differences` compares the two reads (core.zk.reader and core.kafka.metadata fill the same ClusterSnapshot)
and names every difference; `DriftTracker` remembers since when each one has been seen, so that a difference of a
moment (each side changes a moment apart) is told from one that lasts.

Compared: the topics (and their ids), each partition's replicas, leader, ISR (as a set: its order means nothing)
and leader epoch, each topic's own settings (/config/topics) and the brokers' dynamic settings (/config/brokers).
Left out, because the two reads legitimately differ there:
- what only one side has: ZooKeeper's controller epoch and partition-state version, the /admin nodes, the brokers'
  ELR and quorum, a topic id one side does not know (pre-2.8 znodes);
- the broker list itself: a broker rolled to KRaft leaves /brokers/ids while the brokers still list it;
- a topic being deleted (/admin/delete_topics): the brokers drop it before ZooKeeper does;
- what the brokers did not answer: a topic they gave an error for, a topic whose settings they did not describe,
  the settings of a broker that is not running (only running brokers are asked), and sensitive settings, which
  the brokers never return (ZooKeeper holds them encrypted);
- an emptied /config/brokers/<entity> znode (no settings, as the brokers say).

Pure: two snapshots in, data out; time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

from core import zkformat as zf
from core.model import NO_LEADER, ClusterSnapshot, Partition, Topic

DEFAULT_LASTING = 30.0  # seconds a difference must last before it is a warning

TOPIC, PARTITION, TOPIC_CONFIG, BROKER_CONFIG = "topic", "partition", "topic config", "broker config"
ABSENT = "(not set)"

# Kafka's PASSWORD-type broker settings (DynamicBrokerConfig, SslConfigs, SaslConfigs), also under
# listener.name.<listener>[.<mechanism>].: DescribeConfigs never returns their value.
_SENSITIVE_SUFFIXES = ("password", "jaas.config", "keystore.key", "keystore.certificate.chain",
                       "truststore.certificates", "secret", "token.master.key", "token.secret.key")


def sensitive(key: str) -> bool:
    return key.endswith(_SENSITIVE_SUFFIXES)


@dataclass(frozen=True, order=True)
class Drift:
    """One difference: `what` (topic, partition, topic config, broker config) of `key` (a topic, "topic-partition",
    "broker 2" or "broker <default>") in `field` (exists, topic id, replicas, leader, ISR, leader epoch, or a
    setting's name), with each side's value in words."""

    what: str
    key: str
    field: str
    zookeeper: str
    brokers: str

    @property
    def identity(self) -> tuple[str, str, str]:
        """What stays the same while the values move: a leader epoch behind by one, then by one again, is one
        difference that lasts, not two."""
        return self.what, self.key, self.field

    @property
    def text(self) -> str:
        return f"{self.what} {self.key} {self.field}: ZooKeeper {self.zookeeper}, brokers {self.brokers}"

    def to_dict(self) -> dict:
        return {"what": self.what, "key": self.key, "field": self.field, "zookeeper": self.zookeeper,
                "brokers": self.brokers}


def _ids(ids: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def _leader(leader: int) -> str:
    return "none (-1)" if leader == NO_LEADER else str(leader)


def _unreadable(zk: ClusterSnapshot) -> dict[str, str]:
    return {p.path: p.error for p in zk.problems}


def differences(zk: ClusterSnapshot, brokers: ClusterSnapshot) -> list[Drift]:
    """Every difference between ZooKeeper's read (`zk`, core.zk.reader) and the brokers' (`brokers`,
    core.kafka.metadata), sorted; [] when they agree on everything both can know."""
    bad = _unreadable(zk)
    skipped = {p.path for p in brokers.problems}  # "topic t" / "topic t: settings": the brokers did not say
    deleting = set(zk.in_progress.deletion)
    out: list[Drift] = []
    names = (set(zk.topic_by_name) | set(brokers.topic_by_name)) - deleting
    for name in sorted(names):
        if f"topic {name}" in skipped:
            continue
        ours, theirs = zk.topic(name), brokers.topic(name)
        path = zf.topic_path(name)
        if ours is None:
            zk_side = f"unreadable ({bad[path]})" if path in bad else "no topic"
            out.append(Drift(TOPIC, name, "exists", zk_side, f"{len(theirs.partitions)} partition(s)"))
            continue
        if theirs is None:
            out.append(Drift(TOPIC, name, "exists", f"{len(ours.partitions)} partition(s)", "no topic"))
            continue
        if ours.topic_id and theirs.topic_id and ours.topic_id != theirs.topic_id:
            out.append(Drift(TOPIC, name, "topic id", ours.topic_id, theirs.topic_id))
        out.extend(_partitions(ours, theirs, bad))
        if f"topic {name}: settings" not in skipped:
            where = zf.topic_config_path(name)
            if where in bad:
                out.append(Drift(TOPIC_CONFIG, name, "settings", f"unreadable ({bad[where]})",
                                 _config_words(theirs.config)))
            else:
                out.extend(_configs(TOPIC_CONFIG, name, ours.config, theirs.config))
    out.extend(_broker_configs(zk, brokers, bad))
    return sorted(out)


def _partitions(ours: Topic, theirs: Topic, bad: Mapping[str, str]) -> Iterator[Drift]:
    mine = {p.partition: p for p in ours.partitions}
    seen = {p.partition: p for p in theirs.partitions}
    for n in sorted(set(mine) | set(seen)):
        key = f"{ours.name}-{n}"
        a, b = mine.get(n), seen.get(n)
        if a is None:
            yield Drift(PARTITION, key, "exists", "no partition", f"replicas {_ids(b.replicas)}")
            continue
        if b is None:
            yield Drift(PARTITION, key, "exists", f"replicas {_ids(a.replicas)}", "no partition")
            continue
        if a.replicas != b.replicas:
            yield Drift(PARTITION, key, "replicas", _ids(a.replicas), _ids(b.replicas))
        if not a.has_state:
            state = zf.state_path(ours.name, n)
            words = f"unreadable state znode ({bad[state]})" if state in bad else "no state znode"
            yield Drift(PARTITION, key, "state", words, _state_words(b))
            continue
        if a.leader != b.leader:
            yield Drift(PARTITION, key, "leader", _leader(a.leader), _leader(b.leader))
        if set(a.isr) != set(b.isr):
            yield Drift(PARTITION, key, "ISR", _ids(sorted(a.isr)), _ids(sorted(b.isr)))
        if a.leader_epoch != b.leader_epoch:
            yield Drift(PARTITION, key, "leader epoch", str(a.leader_epoch), str(b.leader_epoch))


def _state_words(p: Partition) -> str:
    return f"leader {_leader(p.leader)}, ISR {_ids(sorted(p.isr))}, leader epoch {p.leader_epoch}"


def _config_words(config: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "none"


def _configs(what: str, key: str, ours: Mapping[str, str], theirs: Mapping[str, str]) -> Iterator[Drift]:
    for name in sorted(set(ours) | set(theirs)):
        if sensitive(name):  # withheld by the brokers, encrypted in ZooKeeper: not comparable
            continue
        a, b = ours.get(name), theirs.get(name)
        if a != b:
            yield Drift(what, key, name, ABSENT if a is None else a, ABSENT if b is None else b)


def _broker_configs(zk: ClusterSnapshot, brokers: ClusterSnapshot, bad: Mapping[str, str]) -> Iterator[Drift]:
    # Only the running brokers are asked for their settings: another broker's znode has nothing to be compared with
    # (a broker that is down, or a KRaft controller's id). The cluster default is compared when any broker answered.
    asked = {str(b.id) for b in brokers.brokers if b.alive}
    entities = ({"<default>"} if asked else set()) | asked
    for entity in sorted(entities, key=lambda e: (e != "<default>", int(e) if e.isdigit() else 0)):
        key = f"broker {entity}"
        where = zf.broker_config_path(entity)
        theirs = brokers.broker_configs.get(entity, {})
        if where in bad:
            shown = {k: v for k, v in theirs.items() if not sensitive(k)}
            if shown:
                yield Drift(BROKER_CONFIG, key, "settings", f"unreadable ({bad[where]})", _config_words(shown))
            continue
        yield from _configs(BROKER_CONFIG, key, zk.broker_configs.get(entity, {}), theirs)


# --- ages --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aged:
    drift: Drift
    first_seen: float  # the caller's clock (time.monotonic() in the adapters)
    age: float
    lasting: bool

    def to_dict(self) -> dict:
        return self.drift.to_dict() | {"age_seconds": round(self.age, 1), "lasting": self.lasting}


@dataclass(frozen=True)
class DriftReport:
    """The differences of one comparison, each with its age, oldest first."""

    aged: tuple[Aged, ...]
    lasting_after: float
    reads: int = 1  # comparisons the tracker has seen

    @property
    def lasting(self) -> tuple[Aged, ...]:
        return tuple(a for a in self.aged if a.lasting)

    def to_dict(self) -> dict:
        return {"lasting_after_seconds": self.lasting_after, "reads": self.reads,
                "differences": [a.to_dict() for a in self.aged], "lasting": len(self.lasting)}


@dataclass
class DriftTracker:
    """Since when each difference has been seen (by its identity), across comparisons: a difference that goes away
    is forgotten (if it comes back, its age starts again); one seen for `lasting_after` seconds or more lasts."""

    lasting_after: float = DEFAULT_LASTING
    _since: dict[tuple[str, str, str], float] = field(default_factory=dict)
    reads: int = 0

    def __post_init__(self) -> None:
        if not self.lasting_after >= 0:
            from core.errors import ValidationError

            raise ValidationError(f"a difference lasts after 0 seconds or more, got {self.lasting_after}")

    def update(self, drifts: Iterable[Drift], now: float) -> DriftReport:
        current = {d.identity: d for d in drifts}
        self._since = {k: self._since.get(k, now) for k in current}
        self.reads += 1
        aged = [Aged(d, self._since[k], max(now - self._since[k], 0.0),
                     now - self._since[k] >= self.lasting_after) for k, d in current.items()]
        aged.sort(key=lambda a: (a.first_seen, a.drift))
        return DriftReport(tuple(aged), self.lasting_after, self.reads)


__all__ = ["ABSENT", "BROKER_CONFIG", "DEFAULT_LASTING", "PARTITION", "TOPIC", "TOPIC_CONFIG", "Aged", "Drift",
           "DriftReport", "DriftTracker", "differences", "sensitive"]
