"""A topic's effective configuration: every topic-level key with the value the brokers apply and where it comes
from, as `kafka-configs --describe --entity-type topics --entity-name T --all` prints it. Pure.

Kafka resolves a topic config key in this order (`DynamicConfig` / `LogConfig` with the broker's dynamic configs):
the topic override (`/config/topics/<t>`, source DYNAMIC_TOPIC_CONFIG), the cluster-wide dynamic broker default
(`/config/brokers/<default>`, DYNAMIC_DEFAULT_BROKER_CONFIG) of the key's broker property (`log.retention.ms` for
`retention.ms`, see ConfigDef.server_default_property, and its synonyms: `log.retention.minutes` / `.hours`), then
the broker's static server.properties (STATIC_BROKER_CONFIG) and Kafka's default (DEFAULT_CONFIG). ZooKeeper holds
neither server.properties nor a per-broker dynamic value that would apply to a topic the same way on every broker,
so the last step is shown as Kafka's default, saying so.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from core.topics.configdef import TOPIC_CONFIGS, ConfigDef

TOPIC = "topic override"
BROKER_DEFAULT = "broker default"
KAFKA_DEFAULT = "Kafka default"
KAFKA_SOURCES = {TOPIC: "DYNAMIC_TOPIC_CONFIG", BROKER_DEFAULT: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                 KAFKA_DEFAULT: "DEFAULT_CONFIG"}

# Broker properties that set a topic key's default besides ConfigDef.server_default_property, most precise first,
# with the factor turning their unit into the topic key's (KafkaConfig: log.retention.ms > .minutes > .hours,
# log.roll.ms > log.roll.hours, log.roll.jitter.ms > log.roll.jitter.hours).
SYNONYMS: Mapping[str, tuple[tuple[str, int], ...]] = {
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
}


class EffectiveConfig(NamedTuple):
    key: str
    value: str | None  # None: no value (a key with no default and nothing set)
    source: str  # TOPIC, BROKER_DEFAULT or KAFKA_DEFAULT
    synonym: str | None  # the broker property the value came from (BROKER_DEFAULT), else None
    default: str | None  # Kafka's default, for comparison

    @property
    def kafka_source(self) -> str:
        """The source as kafka-configs --describe prints it."""
        return KAFKA_SOURCES[self.source]


def _broker_value(d: ConfigDef, broker_default: Mapping[str, str]) -> tuple[str, str] | None:
    """(value in the topic key's unit, broker property) from the dynamic <default> broker config, if set."""
    for prop, factor in SYNONYMS.get(d.name, ((d.server_default_property, 1),) if d.server_default_property else ()):
        raw = broker_default.get(prop)
        if raw is None:
            continue
        if factor == 1:
            return raw, prop
        try:
            return str(int(raw.strip()) * factor), prop
        except ValueError:
            return raw, prop
    return None


def effective_config(topic_config: Mapping[str, str], broker_default: Mapping[str, str] | None = None, *,
                     keys=None) -> list[EffectiveConfig]:
    """Every topic config key (Kafka's schema, plus any unknown key the topic sets), sorted, with its effective
    value and source. `broker_default` is `/config/brokers/<default>` (snapshot.broker_configs["<default>"])."""
    broker_default = broker_default or {}
    names = sorted(set(TOPIC_CONFIGS if keys is None else keys) | set(topic_config))
    rows = []
    for key in names:
        d = TOPIC_CONFIGS.get(key)
        default = None if d is None else d.default
        if key in topic_config:
            rows.append(EffectiveConfig(key, topic_config[key], TOPIC, None, default))
            continue
        found = None if d is None else _broker_value(d, broker_default)
        if found is not None:
            rows.append(EffectiveConfig(key, found[0], BROKER_DEFAULT, found[1], default))
        else:
            rows.append(EffectiveConfig(key, default, KAFKA_DEFAULT, None, default))
    return rows
