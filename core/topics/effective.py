"""A topic's effective configuration: every topic-level key with the value the brokers apply and where it comes
from, as `kafka-configs --describe --entity-type topics --entity-name T --all` prints it. Pure.

Kafka resolves a topic config key (ConfigHelper.createTopicConfigEntry): the topic override (`/config/topics/<t>`,
DYNAMIC_TOPIC_CONFIG), else the key's broker property (`log.retention.ms` for `retention.ms`: ConfigDef's
server_default_property, with its synonyms `log.retention.minutes` / `.hours`) as each broker resolves it: its own
dynamic config, the dynamic cluster default, its server.properties, Kafka's default (core.broker_defaults). The first
two are in ZooKeeper; the last two come from the brokers (`BrokerDefaults`, read with bootstrap servers). Without
them a key nothing sets shows Kafka's default, marked as such: server.properties may say otherwise.

Where Keel's source differs from Kafka's describe: Kafka drops the synonyms listed before the property itself
(`configSynonyms ... dropWhile`), so a `log.retention.hours` in server.properties shows as `retention.ms` from
DEFAULT_CONFIG there, with the right value; Keel names STATIC_BROKER_CONFIG and `log.retention.hours`.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, NamedTuple

from core.broker_defaults import (ASSUMED, CLUSTER_DEFAULT_ENTITY, DEFAULT, DYNAMIC_DEFAULT, DYNAMIC_TOPIC,
                                  KAFKA_DEFAULT_MIN_ISR, MIN_ISR, SYNONYMS, BrokerDefaults, broker_min_isr, broker_value,
                                  synonyms)
from core.topics.configdef import TOPIC_CONFIGS, ConfigDef

TOPIC = DYNAMIC_TOPIC
BROKER_DEFAULT = DYNAMIC_DEFAULT
KAFKA_DEFAULT = DEFAULT
__all__ = ["ASSUMED", "BROKER_DEFAULT", "KAFKA_DEFAULT", "SYNONYMS", "TOPIC", "EffectiveConfig", "effective_config"]


class EffectiveConfig(NamedTuple):
    key: str
    value: str | None  # None: no value (a key with no default and nothing set)
    source: str  # DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
    # DEFAULT_CONFIG (Kafka's names), or ASSUMED (a min.insync.replicas Keel assumed, see BrokerDefaults)
    synonym: str | None  # the broker property the value came from (None for a topic override); for ASSUMED, why
    default: str | None  # Kafka's default, for comparison
    others: tuple[tuple[int, str | None, str], ...] = ()  # brokers that apply another value: (broker, value, source)
    static_unknown: bool = False  # no broker's server.properties could be read: the value may not be the real one

    @property
    def label(self) -> str:
        """The source in one phrase: 'STATIC_BROKER_CONFIG: log.segment.delete.delay.ms', as Kafka's synonyms read."""
        if self.source == ASSUMED:
            return f"assumed ({self.synonym}): server.properties unknown"
        if self.static_unknown:
            return f"{self.source}{': ' + self.synonym if self.synonym else ''} (server.properties unknown)"
        return f"{self.source}: {self.synonym}" if self.synonym else self.source

    @property
    def differs(self) -> str:
        """The brokers that apply something else, e.g. 'broker 3: 3 (STATIC_BROKER_CONFIG)'; '' when they agree."""
        return "; ".join(f"broker {b}: {'' if v is None else v} ({src})" for b, v, src in self.others)


def _broker_row(d: ConfigDef | None, key: str, defaults: BrokerDefaults, dynamic: Mapping[str, Mapping[str, str]],
                broker: int | None) -> tuple[str | None, str, str | None, bool]:
    """(value, source, synonym, static unknown) of a key no topic override sets, as `broker` applies it."""
    kafka_default = None if d is None else d.default
    prop = None if d is None else d.server_default_property
    own = defaults.settings(broker)
    unknown = own is None or bool(prop and any(name in own.disputed for name, _ in synonyms(prop)))
    if key == MIN_ISR:
        found = broker_min_isr(defaults, dynamic, broker)
        if found.source == ASSUMED and found.synonym == KAFKA_DEFAULT_MIN_ISR:
            return kafka_default, DEFAULT, None, True
        return str(found.value), found.source, found.synonym, unknown and found.source == ASSUMED
    found = broker_value(defaults, dynamic, broker, prop) if prop else None
    if found is None:
        return kafka_default, DEFAULT, None, unknown and prop is not None
    return found.value, found.source, found.synonym, False


def effective_config(topic_config: Mapping[str, str], broker_default: Mapping[str, str] | None = None, *,
                     keys=None, dynamic: Mapping[str, Mapping[str, str]] | None = None,
                     defaults: BrokerDefaults | None = None, brokers: Iterable[int] | None = None
                     ) -> list[EffectiveConfig]:
    """Every topic config key (Kafka's schema, plus any unknown key the topic sets), sorted, with its effective value
    and source. `dynamic`: the snapshot's broker_configs (ZooKeeper's /config/brokers/*; or only `broker_default`,
    /config/brokers/<default>). `defaults`: what the brokers said of their own settings (None: unknown). `brokers`: the
    brokers whose values count (the topic's replicas; None: any). Where they differ, the value most of them apply is
    the row's, the rest are in `others`."""
    if dynamic is None:
        dynamic = {CLUSTER_DEFAULT_ENTITY: broker_default or {}}
    defaults = defaults if defaults is not None else BrokerDefaults()
    which: list[int | None] = sorted(set(brokers or ())) or [None]
    names = sorted(set(TOPIC_CONFIGS if keys is None else keys) | set(topic_config))
    rows = []
    for key in names:
        d = TOPIC_CONFIGS.get(key)
        default = None if d is None else d.default
        if key in topic_config:
            rows.append(EffectiveConfig(key, topic_config[key], TOPIC, None, default))
            continue
        per = {b: _broker_row(d, key, defaults, dynamic, b) for b in which}
        counts = Counter(per.values())
        most = max(counts.values())
        main = next(r for r in per.values() if counts[r] == most)  # what most brokers apply; a tie: the lowest id's
        others = tuple((b, r[0], r[1]) for b, r in per.items() if r != main and b is not None)
        rows.append(EffectiveConfig(key, main[0], main[1], main[2], default, others, main[3]))
    return rows
