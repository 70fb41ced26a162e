"""What the brokers apply where a topic sets nothing: each broker's value of a broker property, where it comes from,
and Kafka's precedence between those places. Pure: plain data in, plain data out.

A broker's value of a property, first match wins (DynamicBrokerConfig.updateCurrentConfig: server.properties,
overridden by the dynamic cluster default, overridden by the broker's own dynamic config, each override removing the
property's synonyms first; ConfigHelper.configSynonyms lists them in this order for describeConfigs):

1. DYNAMIC_BROKER_CONFIG          /config/brokers/<id>       (kafka-configs --entity-type brokers --entity-name <id>)
2. DYNAMIC_DEFAULT_BROKER_CONFIG  /config/brokers/<default>  (kafka-configs --entity-type brokers --entity-default)
3. STATIC_BROKER_CONFIG           the broker's server.properties
4. DEFAULT_CONFIG                 Kafka's default, as the broker's version has it

Inside a layer the property's synonyms are tried most precise first (log.retention.ms, .minutes, .hours:
DynamicBrokerConfig.brokerConfigSynonyms). A topic key takes its topic override first (DYNAMIC_TOPIC_CONFIG), then its
broker property (ServerTopicConfigSynonyms; core.topics.configdef's server_default_property) as above, per broker.
min.insync.replicas is enforced by each partition's leader with the leader's own value (Partition.appendRecordsToLeader
checks `leaderLog.config.minInSyncReplicas`), so brokers that disagree give partitions different minimums. Since Kafka
3.7 (KAFKA-15583) the leader caps it at the partition's replica count (`effectiveMinIsr`): a min.insync.replicas=2
topic of replication factor 1 takes acks=all writes there, and is refused them before; `BrokerDefaults.version` says
which rule the brokers follow (unknown without them: Kafka's tools' uncapped rule).

Layers 1 and 2 live in ZooKeeper: the snapshot's `broker_configs`, always current. Layers 3 and 4 only the brokers
know: core.kafka.broker_configs reads them (describeConfigs of every broker, with synonyms) into a `BrokerDefaults`.
Without them (no bootstrap servers, or the brokers did not answer) the static layer is unknown: Keel assumes a
configured min.insync.replicas (keel.toml's `min_insync_replicas`, the CLI's `--min-isr-default`), else Kafka's 1, and
says so (`min_isr_basis`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, NamedTuple

if TYPE_CHECKING:
    from core.model import ClusterSnapshot, Partition, Topic

DYNAMIC_TOPIC = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC = "STATIC_BROKER_CONFIG"
DEFAULT = "DEFAULT_CONFIG"
ASSUMED = "ASSUMED"  # not a Kafka source: the static layer is unknown and Keel assumed this value
CLUSTER_DEFAULT_ENTITY = "<default>"
MIN_ISR = "min.insync.replicas"
CAPPED_SINCE = (3, 7)  # the leader's effective min ISR is min(min.insync.replicas, replica count) (KAFKA-15583)

KAFKA_DEFAULT_MIN_ISR = "Kafka's default"  # where an assumed min.insync.replicas of 1 comes from
FROM_KEEL_TOML = "min_insync_replicas in keel.toml"
FROM_CLI = "--min-isr-default"

# Broker properties with synonyms (DynamicBrokerConfig.brokerConfigSynonyms), most precise first, with the factor that
# turns each one's unit into the first one's. log.flush.scheduler.interval.ms is log.flush.interval.ms's default.
SYNONYMS: Mapping[str, tuple[tuple[str, int], ...]] = {
    "log.retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                         ("log.retention.hours", 3_600_000)),
    "log.roll.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "log.roll.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
    "log.flush.interval.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
}


def synonyms(prop: str) -> tuple[tuple[str, int], ...]:
    """(property, factor to `prop`'s unit) in Kafka's order; a property without synonyms is its own only one."""
    return SYNONYMS.get(prop, ((prop, 1),))


def synonym_names(props: Iterable[str]) -> list[str]:
    """Every property name `props` resolve through, sorted (what to ask the brokers for)."""
    return sorted({name for p in props for name, _ in synonyms(p)})


@dataclass(frozen=True)
class BrokerSettings:
    """One broker's own layers, as it reported them: its server.properties values and Kafka's defaults, by property
    (only the properties Keel asked for)."""

    broker: int
    static: Mapping[str, str] = field(default_factory=dict)  # STATIC_BROKER_CONFIG
    default: Mapping[str, str] = field(default_factory=dict)  # DEFAULT_CONFIG
    # for the layers of a broker that was not read: the properties the brokers read set differently (unknown here)
    disputed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BrokerDefaults:
    """The brokers' static layers (server.properties and Kafka's defaults), or why they are unknown.

    `brokers`: the brokers that answered. `unread`: live brokers that did not, and why (their partitions use the
    values every broker that answered agrees on, else the assumed one). `problem`: why nothing is known (no bootstrap
    servers, the brokers could not be read, a read still running), None once read. `assumed_min_isr` /
    `assumed_from`: the min.insync.replicas used where a static layer is unknown and where that number comes from.
    """

    brokers: Mapping[int, BrokerSettings] = field(default_factory=dict)
    unread: Mapping[int, str] = field(default_factory=dict)
    problem: str | None = "static broker settings unknown"
    failed: bool = False  # `problem` is a failed read (not a missing bootstrap, not a read in progress)
    read_at: str | None = None  # when the brokers answered (HH:MM:SS, local time)
    assumed_min_isr: int = 1
    assumed_from: str = KAFKA_DEFAULT_MIN_ISR
    version: tuple[int, ...] | None = None  # the brokers' Kafka version (ApiVersions), None: unknown

    @property
    def known(self) -> bool:
        return bool(self.brokers)

    @property
    def caps_min_isr(self) -> bool:
        """The brokers cap min.insync.replicas at a partition's replica count (Kafka 3.7+)."""
        return self.version is not None and tuple(self.version[:2]) >= CAPPED_SINCE

    def assuming(self, min_isr: int | None, source: str) -> "BrokerDefaults":
        """The same, assuming `min_isr` (when given) where the static layer is unknown."""
        if min_isr is None:
            return self
        return replace(self, assumed_min_isr=int(min_isr), assumed_from=source)

    def settings(self, broker: int | None) -> BrokerSettings | None:
        """`broker`'s layers; for a broker that was not read, what every broker read agrees on (None: nothing read)."""
        own = self.brokers.get(broker) if broker is not None else None
        return own if own is not None else self._shared

    @cached_property
    def _shared(self) -> BrokerSettings | None:
        if not self.brokers:
            return None
        every = list(self.brokers.values())
        static = _agreed(s.static for s in every)
        return BrokerSettings(-1, static, _agreed(s.default for s in every),
                              frozenset(k for s in every for k in s.static if k not in static))


def _agreed(maps: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The entries every map has with the same value."""
    maps = list(maps)
    first, rest = maps[0], maps[1:]
    return {k: v for k, v in first.items() if all(m.get(k) == v for m in rest)}


def unknown(reason: str, *, min_isr: int | None = None, assumed_from: str = FROM_KEEL_TOML, failed: bool = False
            ) -> BrokerDefaults:
    """Nothing read, because `reason`; min.insync.replicas `min_isr` (from `assumed_from`) is assumed, else 1."""
    return BrokerDefaults(problem=reason, failed=failed).assuming(min_isr, assumed_from)


class Resolved(NamedTuple):
    value: str
    source: str  # DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC or DEFAULT
    synonym: str  # the broker property that set it (log.retention.hours for log.retention.ms)


def _scaled(raw: str, factor: int) -> str:
    if factor == 1:
        return raw
    try:
        return str(int(raw.strip()) * factor)
    except ValueError:
        return raw


def broker_value(defaults: BrokerDefaults, dynamic: Mapping[str, Mapping[str, str]], broker: int | None, prop: str,
                 *, valid: Callable[[str], bool] | None = None) -> Resolved | None:
    """`broker`'s value of `prop` (in `prop`'s unit) by Kafka's precedence, or None when no known layer sets it (the
    static layer unknown: the caller assumes). `dynamic` is the snapshot's broker_configs (ZooKeeper). `broker` None:
    no broker in particular (its own dynamic layer is skipped; the static layer is what the brokers agree on). A value
    `valid` refuses is skipped: the broker would have refused it too and kept the layer below."""
    layers: list[tuple[str, Mapping[str, str]]] = []
    if broker is not None:
        layers.append((DYNAMIC_BROKER, dynamic.get(str(broker)) or {}))
    layers.append((DYNAMIC_DEFAULT, dynamic.get(CLUSTER_DEFAULT_ENTITY) or {}))
    own = defaults.settings(broker)
    if own is not None:
        layers += [(STATIC, own.static), (DEFAULT, own.default)]
    for source, values in layers:
        for name, factor in synonyms(prop):
            if source == STATIC and own is not None and name in own.disputed:
                return None  # a broker not read, where the others disagree: unknown
            raw = values.get(name)
            if raw is None:
                continue
            value = _scaled(raw, factor)
            if valid is None or valid(value):
                return Resolved(value, source, name)
    return None


# --- min.insync.replicas ------------------------------------------------------------------------------------------


def positive_int(value: object) -> int | None:
    """`value` as Kafka parses a min.insync.replicas string (an int >= 1), else None."""
    if value is None:
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 1 else None


class MinIsr(NamedTuple):
    value: int
    source: str  # a Kafka source, or ASSUMED
    synonym: str | None  # the property; for ASSUMED where the number comes from (defaults.assumed_from)


def broker_min_isr(defaults: BrokerDefaults, dynamic: Mapping[str, Mapping[str, str]], broker: int | None) -> MinIsr:
    """The min.insync.replicas `broker` applies to topics without an override."""
    found = broker_value(defaults, dynamic, broker, MIN_ISR, valid=lambda v: positive_int(v) is not None)
    if found is None:
        return MinIsr(defaults.assumed_min_isr, ASSUMED, defaults.assumed_from)
    return MinIsr(positive_int(found.value), found.source, found.synonym)


class MinIsrRule:
    """min.insync.replicas per partition, as its leader enforces it: the topic's override (a valid one), else the
    leader's own value (`broker_min_isr`); a partition without a leader takes its preferred replica's (the leader it
    gets back first, in the usual case). Values are worked out once per broker."""

    def __init__(self, snapshot: "ClusterSnapshot", defaults: BrokerDefaults | None = None):
        self.defaults = defaults if defaults is not None else BrokerDefaults()
        self.capped = self.defaults.caps_min_isr  # callers take min(value, len(replicas)) when set
        self._dynamic = snapshot.broker_configs
        self._values: dict[int | None, int] = {}
        listed = {self.broker(b.id) for b in snapshot.brokers} | {self.broker(None)}
        # one value everywhere (the usual case): no per-partition lookup; a broker only named in an assignment has
        # no layer of its own unless ZooKeeper holds a /config/brokers/<id> for it
        own = any(k != CLUSTER_DEFAULT_ENTITY and k.isdigit() and int(k) not in snapshot.broker_by_id
                  for k in snapshot.broker_configs)
        self.uniform: int | None = listed.pop() if len(listed) == 1 and not own else None

    def broker(self, broker: int | None) -> int:
        value = self._values.get(broker)
        if value is None:
            value = self._values[broker] = broker_min_isr(self.defaults, self._dynamic, broker).value
        return value

    @staticmethod
    def override(topic: "Topic") -> int | None:
        return positive_int(topic.config.get(MIN_ISR))

    def fixed(self, topic: "Topic") -> int | None:
        """The value every partition of `topic` has (its override, or the brokers' common value), else None."""
        found = self.override(topic)
        return found if found is not None else self.uniform

    def leader(self, leader: int, replicas: tuple[int, ...]) -> int:
        """The value for a partition led by `leader` (-1: none; then its first replica's)."""
        if leader < 0:
            return self.broker(replicas[0] if replicas else None)
        return self.broker(leader)

    def of(self, topic: "Topic", partition: "Partition") -> int:
        """The min ISR the leader of `partition` enforces (capped at its replica count on Kafka 3.7+)."""
        found = self.fixed(topic)
        value = found if found is not None else self.leader(partition.leader, partition.replicas)
        return min(value, len(partition.replicas)) if self.capped and partition.replicas else value


@dataclass(frozen=True)
class MinIsrBasis:
    """What health flags compare a topic without a min.insync.replicas override against, in words."""

    text: str
    per_broker: Mapping[int, MinIsr]
    assumed: bool  # some broker's value is assumed (its static layer unknown)
    differs: bool  # the brokers apply different values
    failed: bool  # the brokers could not be read


def _ids(ids: Iterable[int]) -> str:
    ids = sorted(ids)
    return ("broker " if len(ids) == 1 else "brokers ") + ", ".join(map(str, ids))


def _where(m: MinIsr, kraft: bool = False) -> str:
    if m.source == ASSUMED:
        return f"assumed: {m.synonym}"
    if m.source == DYNAMIC_BROKER:  # KRaft keeps it in the metadata log: named as kafka-configs sets it
        return f"{m.source}, " + ("kafka-configs --entity-type brokers --entity-name <id>" if kraft
                                  else "/config/brokers/<id>")
    if m.source == DYNAMIC_DEFAULT:
        return f"{m.source}, " + ("kafka-configs --entity-type brokers --entity-default" if kraft
                                  else "/config/brokers/<default>")
    return m.source


def min_isr_basis(defaults: BrokerDefaults, dynamic: Mapping[str, Mapping[str, str]],
                  brokers: Iterable[int], *, kraft: bool = False) -> MinIsrBasis:
    """The min.insync.replicas each of `brokers` applies to topics without an override, and one paragraph saying so:
    the value and its source, which brokers differ (each partition is checked against its leader's), and what is
    assumed when the brokers' own settings are unknown (and why). `kraft`: the dynamic settings are named as
    kafka-configs sets them, not by the znodes a KRaft cluster does not have."""
    per = {b: broker_min_isr(defaults, dynamic, b) for b in sorted(set(brokers))}
    if not per:
        per = {-1: broker_min_isr(defaults, dynamic, None)}
    groups: dict[tuple[int, str, str | None], list[int]] = {}
    for b, m in per.items():
        groups.setdefault((m.value, m.source, m.synonym), []).append(b)
    values = Counter(m.value for m in per.values())
    assumed = any(m.source == ASSUMED for m in per.values())
    if len(values) == 1:
        (value, source, synonym), _ = next(iter(groups.items()))
        where = "; ".join(sorted({_where(m, kraft) for m in per.values()}))
        text = f"Topics without a min.insync.replicas override are checked against {value} ({where})."
    else:
        parts = [f"{value} on {_ids(bs) if -1 not in bs else 'the others'} ({_where(MinIsr(value, source, synonym), kraft)})"
                 for (value, source, synonym), bs in sorted(groups.items(), key=lambda kv: kv[1])]
        text = ("The brokers apply different min.insync.replicas to topics without an override: " + "; ".join(parts)
                + ". Each partition is checked against its leader's value (the leader enforces it).")
    if defaults.caps_min_isr:
        text += " The brokers (Kafka 3.7+) cap it at each partition's replica count."
    if defaults.known:
        text += f" Brokers' own settings read at {defaults.read_at}." if defaults.read_at else ""
        if defaults.unread:
            text += (" Not read: " + "; ".join(f"broker {b} ({why})" for b, why in sorted(defaults.unread.items()))
                     + " - their partitions use the values the others agree on.")
    elif assumed:
        reason = defaults.problem or "static broker settings unknown"
        text += (f" Static broker settings (server.properties) are unknown: {reason}. "
                 f"{defaults.assumed_min_isr} is assumed ({defaults.assumed_from}).")
    return MinIsrBasis(text, per, assumed, len(values) > 1, defaults.failed and not defaults.known)


__all__ = ["ASSUMED", "CAPPED_SINCE", "DEFAULT", "DYNAMIC_BROKER", "DYNAMIC_DEFAULT", "DYNAMIC_TOPIC", "STATIC",
           "MIN_ISR", "FROM_CLI", "FROM_KEEL_TOML", "KAFKA_DEFAULT_MIN_ISR", "SYNONYMS", "BrokerDefaults",
           "BrokerSettings", "MinIsr", "MinIsrBasis", "MinIsrRule", "Resolved", "broker_min_isr", "broker_value",
           "min_isr_basis", "positive_int", "synonym_names", "synonyms", "unknown"]
