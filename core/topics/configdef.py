"""Kafka's topic-config schema and how Kafka parses and validates each value. Pure.

`core/.../log/LogConfig.scala` (2.x - 3.4) and `storage/.../internals/log/LogConfig.java` (3.5+): every
topic-level key with its type, default and validator; `ConfigDef.parseType` for how values are parsed;
`ConfigDef.Range` / `ValidString` / `ValidList`, `ThrottledReplicaListValidator`, the gzip level validator and
`MetadataVersionValidator` for the checks and their messages; `ConfigException` for the
"Invalid value X for configuration Y: ..." wording; `LogConfig.validateValues` for the cross-field check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from core.errors import (
    InvalidConfigurationError,
    ValidationError,
)
from core.numbers import clip, quoted
from core.topics.javaparse import (  # noqa: F401  (re-exported: drafts and the dashboard import them from here)
    _JAVA_CLASS,
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    SHORT_MAX,
    _java_double,
    _java_int,
    _java_list,
    _java_list_str,
    _java_trim,
    java_double_str,
)


Version = tuple[int, int]

# Value parsing, the way Kafka's ConfigDef.parseType does it: core.topics.javaparse (re-exported here).

# =============================================================================================
# Kafka versions
# =============================================================================================


def parse_kafka_version(version: str | Sequence[int] | None) -> Version | None:
    """"3.9", "3.9.1", "2.8.2", (3, 9) -> (major, minor); None stays None."""
    if version is None:
        return None
    if isinstance(version, str):
        m = re.fullmatch(r"\s*(\d{1,9})\.(\d{1,9})(?:\.\d+)?(?:[-.][0-9A-Za-z.-]*)?\s*", version)
        if not m:
            raise ValidationError(f"not a Kafka version: {quoted(version)} (expected e.g. 2.8 or 3.9.1)")
        return int(m.group(1)), int(m.group(2))
    try:
        major, minor = (int(x) for x in tuple(version)[:2])
    except (TypeError, ValueError):
        raise ValidationError(f"not a Kafka version: {version!r} (expected e.g. 2.8 or (3, 9))") from None
    return major, minor


def _fmt_version(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def _config_error(key: str, message: str, *, hint: str | None = None) -> InvalidConfigurationError:
    err = InvalidConfigurationError(message, hint=hint)
    err.key = key  # the dashboard highlights the offending field
    return err


def _invalid(key: str, shown: Any, reason: str | None) -> InvalidConfigurationError:
    """ConfigException(name, value, message): "Invalid value <value> for configuration <name>: <message>" (a long
    value cut to its start and length: Kafka quotes it whole)."""
    return _config_error(key, f"Invalid value {clip(str(shown))} for configuration {key}"
                         + (f": {reason}" if reason else ""))


# =============================================================================================
# Validators (ConfigDef.Validator): ensure_valid raises Kafka's message; str() is Kafka's "Valid Values"
# =============================================================================================


class Validator:
    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:  # pragma: no cover
        raise NotImplementedError


def _num_str(n: int | float) -> str:
    return java_double_str(n) if isinstance(n, float) else str(n)


@dataclass(frozen=True)
class Range(Validator):
    """ConfigDef.Range: compares as doubles, so NaN passes (as it does in Kafka)."""

    min: int | float | None = None
    max: int | float | None = None

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        n = float(value)
        if self.min is not None and n < self.min:
            raise _invalid(name, _num_str(value), f"Value must be at least {_num_str(self.min)}")
        if self.max is not None and n > self.max:
            raise _invalid(name, _num_str(value), f"Value must be no more than {_num_str(self.max)}")

    def __str__(self) -> str:
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"


@dataclass(frozen=True)
class ValidString(Validator):
    """ConfigDef.ValidString (case-sensitive). `since` holds values that a Kafka version before it does not know."""

    values: tuple[str, ...]
    since: tuple[tuple[str, Version], ...] = ()

    def allowed(self, version: Version | None) -> list[str]:
        since = dict(self.since)
        return [v for v in self.values if version is None or version >= since.get(v, (0, 0))]

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        allowed = self.allowed(version)
        if value not in allowed:
            raise _invalid(name, value, "String must be one of: " + ", ".join(allowed))

    def __str__(self) -> str:
        return _java_list_str(self.values)


@dataclass(frozen=True)
class ValidList(Validator):
    """ConfigDef.ValidList: every element must be one of the strings."""

    values: tuple[str, ...]

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        for item in value:
            ValidString(self.values).ensure_valid(name, item, version)

    def __str__(self) -> str:
        return _java_list_str(self.values)


@dataclass(frozen=True)
class LevelOrDefault(Validator):
    """The gzip level validator (Kafka 3.8+): [min, max] or the default level."""

    min: int
    max: int
    default: int

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        if value > self.max or (value < self.min and value != self.default):
            raise _invalid(name, value, f"Value must be between {self.min} and {self.max} or equal to {self.default}")

    def __str__(self) -> str:
        return f"[{self.min},...,{self.max}] or {self.default}"


_THROTTLED_ENTRY = re.compile(r"([0-9]+:[0-9]+)?", re.ASCII)


class ThrottledReplicas(Validator):
    """ThrottledReplicaListValidator (2.x - 3.9): "*", or entries partition:broker (an empty entry is tolerated)."""

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        items = [_java_trim(v) for v in value]
        # Java's String.matches is a full match; \d in Java is ASCII-only, hence [0-9] and re.ASCII.
        if all(_THROTTLED_ENTRY.fullmatch(v) for v in items) or "".join(items) == "*":
            return
        raise _invalid(name, _java_list_str(list(value)),
                       f"{name} must be the literal '*' or a list of replicas in the following format: "
                       "[partitionId]:[brokerId],[partitionId]:[brokerId],...")

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


# MetadataVersion (ApiVersion before 3.3): every inter-broker protocol version up to 3.9. A release name ("2.8")
# stands for its latest internal version; fromVersionString also cuts "2.8.1" to "2.8" and "0.10.0.1" to "0.10.0".
_IBP_VERSIONS: tuple[tuple[str, str], ...] = tuple(
    (f"{release}-{iv}" if iv else release, release)
    for release, ivs in (
        ("0.8.0", ("",)), ("0.8.1", ("",)), ("0.8.2", ("",)), ("0.9.0", ("",)),
        ("0.10.0", ("IV0", "IV1")), ("0.10.1", ("IV0", "IV1", "IV2")), ("0.10.2", ("IV0",)),
        ("0.11.0", ("IV0", "IV1", "IV2")), ("1.0", ("IV0",)), ("1.1", ("IV0",)), ("2.0", ("IV0", "IV1")),
        ("2.1", ("IV0", "IV1", "IV2")), ("2.2", ("IV0", "IV1")), ("2.3", ("IV0", "IV1")), ("2.4", ("IV0", "IV1")),
        ("2.5", ("IV0",)), ("2.6", ("IV0",)), ("2.7", ("IV0", "IV1", "IV2")), ("2.8", ("IV0", "IV1")),
        ("3.0", ("IV0", "IV1")), ("3.1", ("IV0",)), ("3.2", ("IV0",)), ("3.3", ("IV0", "IV1", "IV2", "IV3")),
        ("3.4", ("IV0",)), ("3.5", ("IV0", "IV1", "IV2")), ("3.6", ("IV0", "IV1", "IV2")),
        ("3.7", ("IV0", "IV1", "IV2", "IV3", "IV4")), ("3.8", ("IV0",)), ("3.9", ("IV0",)),
    )
    for iv in ivs
)


def _release_version(release: str) -> Version:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


class MetadataVersionValidator(Validator):
    """message.format.version: `MetadataVersion.fromVersionString`, limited to the versions the cluster knows."""

    def resolve(self, text: str, version: Version | None = None) -> str | None:
        known: dict[str, str] = {}
        for ibp, release in _IBP_VERSIONS:
            if version is None or _release_version(release) <= version:
                known[ibp] = ibp
                known[release] = ibp  # later internal versions overwrite: the release means its latest
        segments = text.split(".")
        while segments and segments[-1] == "":  # Java's split drops trailing empty strings
            segments.pop()
        keep = 3 if text.startswith("0.") else 2
        key = text if keep >= len(segments) else ".".join(segments[:keep])
        return known.get(key)

    def ensure_valid(self, name: str, value: Any, version: Version | None = None) -> None:
        if self.resolve(value, version) is None:
            raise _invalid(name, value, f"Version {value} is not a valid version")

    def __str__(self) -> str:
        return _java_list_str([ibp for ibp, _ in _IBP_VERSIONS])


# =============================================================================================
# The topic-config schema
# =============================================================================================

CONFIG_TYPES = ("boolean", "string", "int", "long", "double", "list", "class", "password")


@dataclass(frozen=True)
class ConfigDef:
    """One topic-level config as Kafka defines it. `default` is the documented default as a string ("" for an
    empty list); `since`/`removed_in` bound the Kafka versions that know the key; `deprecated` says why not to use it."""

    name: str
    type: str
    default: str | None
    doc: str
    validator: Validator | None = None
    since: Version = (1, 1)
    deprecated: str | None = None
    removed_in: Version | None = None
    server_default_property: str | None = None

    def __post_init__(self) -> None:
        if self.type not in CONFIG_TYPES:
            raise ValueError(f"unknown config type {self.type!r}")

    @property
    def valid_values(self) -> str:
        return "" if self.validator is None else str(self.validator)

    def exists_in(self, version: Version | None) -> bool:
        if version is None:
            return True
        return version >= self.since and (self.removed_in is None or version < self.removed_in)

    def parse(self, raw: str, version: Version | None = None) -> Any:
        """`ConfigDef.parseType` then the validator; raises InvalidConfigurationError with Kafka's wording."""
        if raw is None:
            raise _invalid(self.name, "null", "Value must be non-null")
        if not isinstance(raw, str):
            raise _invalid(self.name, raw, f"topic config values are strings, got {type(raw).__name__}")
        text = _java_trim(raw)
        kind = self.type
        if kind == "boolean":
            if text.lower() not in ("true", "false"):
                raise _invalid(self.name, raw, "Expected value to be either true or false")
            value: Any = text.lower() == "true"
        elif kind in ("int", "long"):
            lo, hi = (INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)
            value = _java_int(text, lo, hi)
            if value is None:
                raise _invalid(self.name, raw, f"Not a number of type {kind.upper()}")
        elif kind == "double":
            value = _java_double(text)
            if value is None:
                raise _invalid(self.name, raw, "Not a number of type DOUBLE")
        elif kind == "list":
            value = [] if not text else _java_list(text)
        elif kind == "class":
            if not _JAVA_CLASS.fullmatch(text):
                raise _invalid(self.name, raw, f"Class {raw} could not be found.")
            value = text
        else:  # string, password
            value = text
        if self.validator is not None:
            self.validator.ensure_valid(self.name, value, version)
        return value

    def normalise(self, raw: str, version: Version | None = None) -> str:
        """The value to store: trimmed, booleans lower-case, integers in canonical decimal, lists joined by ','.
        Doubles keep their (trimmed) spelling: every spelling Kafka parses is kept as the operator wrote it."""
        value = self.parse(raw, version)
        if self.type == "boolean":
            return "true" if value else "false"
        if self.type in ("int", "long"):
            return str(value)
        if self.type == "list":
            return ",".join(value)
        return _java_trim(raw)


_MS_7_DAYS = str(7 * 24 * 60 * 60 * 1000)
_LONG_MAX_S = str(LONG_MAX)


def _defs(*defs: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in sorted(defs, key=lambda d: d.name)}


TOPIC_CONFIGS: Mapping[str, ConfigDef] = _defs(
    ConfigDef("cleanup.policy", "list", "delete",
              "Retention policy for old segments: delete, compact, or both.",
              ValidList(("compact", "delete")), server_default_property="log.cleanup.policy"),
    ConfigDef("compression.gzip.level", "int", "-1",
              "Compression level used when compression.type is gzip.",
              LevelOrDefault(1, 9, -1), since=(3, 8), server_default_property="compression.gzip.level"),
    ConfigDef("compression.lz4.level", "int", "9",
              "Compression level used when compression.type is lz4.",
              Range(1, 17), since=(3, 8), server_default_property="compression.lz4.level"),
    ConfigDef("compression.type", "string", "producer",
              "Final compression codec of the topic; 'producer' keeps the producer's codec.",
              ValidString(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), since=(("zstd", (2, 1)),)),
              server_default_property="compression.type"),
    ConfigDef("compression.zstd.level", "int", "3",
              "Compression level used when compression.type is zstd.",
              Range(-131072, 22), since=(3, 8), server_default_property="compression.zstd.level"),
    ConfigDef("delete.retention.ms", "long", "86400000",
              "How long tombstones of a compacted topic are kept (ms).",
              Range(0), server_default_property="log.cleaner.delete.retention.ms"),
    ConfigDef("file.delete.delay.ms", "long", "60000",
              "Wait before a deleted segment file is removed from disk (ms).",
              Range(0), server_default_property="log.segment.delete.delay.ms"),
    ConfigDef("flush.messages", "long", _LONG_MAX_S,
              "Force an fsync after this many messages.",
              Range(1), server_default_property="log.flush.interval.messages"),
    ConfigDef("flush.ms", "long", _LONG_MAX_S,
              "Force an fsync after this much time (ms).",
              Range(0), server_default_property="log.flush.interval.ms"),
    ConfigDef("follower.replication.throttled.replicas", "list", "",
              "Replicas throttled on the follower side: partition:broker,... or '*'.",
              ThrottledReplicas()),
    ConfigDef("index.interval.bytes", "int", "4096",
              "Bytes between two offset-index entries.",
              Range(0), server_default_property="log.index.interval.bytes"),
    ConfigDef("leader.replication.throttled.replicas", "list", "",
              "Replicas throttled on the leader side: partition:broker,... or '*'.",
              ThrottledReplicas()),
    ConfigDef("local.retention.bytes", "long", "-2",
              "Tiered storage: local bytes kept per partition; -2 means retention.bytes.",
              Range(-2), since=(3, 0), server_default_property="log.local.retention.bytes"),
    ConfigDef("local.retention.ms", "long", "-2",
              "Tiered storage: local retention time (ms); -2 means retention.ms.",
              Range(-2), since=(3, 0), server_default_property="log.local.retention.ms"),
    ConfigDef("max.compaction.lag.ms", "long", _LONG_MAX_S,
              "Longest time a message stays ineligible for compaction (ms).",
              Range(1), since=(2, 3), server_default_property="log.cleaner.max.compaction.lag.ms"),
    ConfigDef("max.message.bytes", "int", "1048588",
              "Largest record batch size the topic accepts (bytes).",
              Range(0), server_default_property="message.max.bytes"),
    ConfigDef("message.downconversion.enable", "boolean", "true",
              "Whether the broker down-converts messages for old consumers.",
              since=(2, 0), server_default_property="log.message.downconversion.enable"),
    ConfigDef("message.format.version", "string", "3.0-IV1",
              "Message format version the broker writes (deprecated since 3.0).",
              MetadataVersionValidator(),
              deprecated="deprecated since Kafka 3.0: ignored when inter.broker.protocol.version is 3.0 or newer; "
                         "removed in Kafka 4.0",
              removed_in=(4, 0), server_default_property="log.message.format.version"),
    ConfigDef("message.timestamp.after.max.ms", "long", _LONG_MAX_S,
              "How far a CreateTime timestamp may be ahead of the broker's clock (ms).",
              Range(0), since=(3, 6), server_default_property="log.message.timestamp.after.max.ms"),
    ConfigDef("message.timestamp.before.max.ms", "long", _LONG_MAX_S,
              "How far a CreateTime timestamp may be behind the broker's clock (ms).",
              Range(0), since=(3, 6), server_default_property="log.message.timestamp.before.max.ms"),
    ConfigDef("message.timestamp.difference.max.ms", "long", _LONG_MAX_S,
              "Largest allowed difference between a CreateTime timestamp and the broker's clock (ms).",
              Range(0),
              deprecated="deprecated since Kafka 3.6: use message.timestamp.before.max.ms and "
                         "message.timestamp.after.max.ms; removed in Kafka 4.0",
              removed_in=(4, 0), server_default_property="log.message.timestamp.difference.max.ms"),
    ConfigDef("message.timestamp.type", "string", "CreateTime",
              "Timestamp stored in messages: CreateTime or LogAppendTime.",
              ValidString(("CreateTime", "LogAppendTime")), server_default_property="log.message.timestamp.type"),
    ConfigDef("min.cleanable.dirty.ratio", "double", "0.5",
              "Dirty-to-total ratio that makes a log eligible for cleaning.",
              Range(0, 1), server_default_property="log.cleaner.min.cleanable.ratio"),
    ConfigDef("min.compaction.lag.ms", "long", "0",
              "Shortest time a message stays uncompacted (ms).",
              Range(0), server_default_property="log.cleaner.min.compaction.lag.ms"),
    ConfigDef("min.insync.replicas", "int", "1",
              "Fewest in-sync replicas for an acks=all write to succeed.",
              Range(1), server_default_property="min.insync.replicas"),
    ConfigDef("preallocate", "boolean", "false",
              "Preallocate the file of a new segment.",
              server_default_property="log.preallocate"),
    ConfigDef("remote.log.copy.disable", "boolean", "false",
              "Tiered storage: stop copying segments to remote storage (read-only remote data).",
              since=(3, 9)),
    ConfigDef("remote.log.delete.on.disable", "boolean", "false",
              "Tiered storage: delete the remote data when remote storage is disabled.",
              since=(3, 9)),
    ConfigDef("remote.storage.enable", "boolean", "false",
              "Tiered storage: copy this topic's segments to remote storage.",
              since=(3, 0)),
    ConfigDef("retention.bytes", "long", "-1",
              "Largest size a partition may grow to before old segments go; -1 is unlimited.",
              server_default_property="log.retention.bytes"),
    ConfigDef("retention.ms", "long", _MS_7_DAYS,
              "How long messages are kept (ms); -1 is forever.",
              Range(-1), server_default_property="log.retention.ms"),
    ConfigDef("segment.bytes", "int", str(1024 * 1024 * 1024),
              "Size of one segment file (bytes).",
              Range(14), server_default_property="log.segment.bytes"),
    ConfigDef("segment.index.bytes", "int", str(10 * 1024 * 1024),
              "Size of the offset index of a segment (bytes).",
              Range(4), server_default_property="log.index.size.max.bytes"),
    ConfigDef("segment.jitter.ms", "long", "0",
              "Random jitter subtracted from segment.ms to avoid rolling all segments at once.",
              Range(0), server_default_property="log.roll.jitter.ms"),
    ConfigDef("segment.ms", "long", _MS_7_DAYS,
              "Roll a new segment after this time even if it is not full (ms).",
              Range(1), server_default_property="log.roll.ms"),
    ConfigDef("unclean.leader.election.enable", "boolean", "false",
              "Allow an out-of-sync replica to become leader (may lose data).",
              server_default_property="unclean.leader.election.enable"),
)


def _check_name(key: str, version: Version | None) -> ConfigDef:
    d = TOPIC_CONFIGS.get(key)
    if d is None:
        raise _config_error(key, f"Unknown topic config name: {key}")
    if not d.exists_in(version):
        when = (f"added in Kafka {_fmt_version(d.since)}" if version < d.since
                else f"removed in Kafka {_fmt_version(d.removed_in)}")
        raise _config_error(key, f"Unknown topic config name: {key}",
                            hint=f"{key} was {when}; this cluster runs Kafka {_fmt_version(version)}")
    return d


def validate_topic_config(config: Mapping[str, str], *, kafka_version: str | Sequence[int] | None = None
                          ) -> dict[str, str]:
    """`LogConfig.validate`: names first ("Unknown topic config name: foo"), then every value, then the cross-field
    check. Returns the normalised values (see `ConfigDef.normalise`), keys sorted.

    With `kafka_version`, keys and values that version does not know are refused too (e.g. compression.zstd.level
    before 3.8, compression.type=zstd before 2.1). The ranges are 3.9's: a few were looser in old versions
    (segment.index.bytes and flush.messages accepted 0 in 2.x), so Keel may refuse a value an old broker takes.
    """
    version = parse_kafka_version(kafka_version)
    keyed: dict[str, str] = {}
    for raw_key, value in config.items():
        if not isinstance(raw_key, str):
            raise _config_error(str(raw_key), f"Unknown topic config name: {raw_key}")
        keyed[_java_trim(raw_key)] = value  # kafka-topics trims "key = value"
    defs = {key: _check_name(key, version) for key in sorted(keyed)}
    result = {key: defs[key].normalise(keyed[key], version) for key in sorted(keyed)}
    _check_cross_fields(result, version)
    return result


def _check_cross_fields(config: Mapping[str, str], version: Version | None, *, lenient: bool = False) -> None:
    """`LogConfig.validateValues`: min.compaction.lag.ms must not exceed max.compaction.lag.ms (defaults fill in).

    The tiered-storage checks of 3.6+ (`validateRemoteStorage*`: local.retention.* against retention.*,
    cleanup.policy=delete, remote.log.copy.disable) are not mirrored: they depend on the brokers'
    remote.log.storage.system.enable and on the topic's previous config, which a snapshot does not carry;
    the broker still enforces them.
    """
    def value(key: str) -> int:
        d = TOPIC_CONFIGS[key]
        return d.parse(config.get(key, d.default), None)

    if version is not None and version < TOPIC_CONFIGS["max.compaction.lag.ms"].since:
        return
    try:
        min_lag, max_lag = value("min.compaction.lag.ms"), value("max.compaction.lag.ms")
    except InvalidConfigurationError:
        if lenient:  # an untouched value the cluster holds but Keel cannot parse: the broker judged it already
            return
        raise
    if min_lag > max_lag:
        raise _config_error("min.compaction.lag.ms",
                            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
                            f"max.compaction.lag.ms ({max_lag})")


class ConfigDiffRow(NamedTuple):
    """One changed key: `old`/`new` are None when absent (the default applies); `default` is Kafka's default."""

    key: str
    old: str | None
    new: str | None
    default: str | None


def config_diff(current: Mapping[str, str], proposed: Mapping[str, str]) -> list[ConfigDiffRow]:
    """Rows for the keys whose override changes (added, changed or removed), sorted by key."""
    rows = []
    for key in sorted(set(current) | set(proposed)):
        old, new = current.get(key), proposed.get(key)
        if old != new:
            d = TOPIC_CONFIGS.get(key)
            rows.append(ConfigDiffRow(key, old, new, None if d is None else d.default))
    return rows


def _config_warnings(config: Mapping[str, str]) -> list[str]:
    warnings = []
    if "message.format.version" in config:
        # TopicCommand's warning (3.x), interpolated as the Scala version printed it.
        warnings.append(f"WARNING: The configuration message.format.version={config['message.format.version']} is "
                        "specified. This configuration will be ignored if the version is newer than the "
                        "inter.broker.protocol.version specified in the broker or if the inter.broker.protocol.version "
                        "is 3.0 or newer. This configuration is deprecated and it will be removed in Apache Kafka 4.0.")
    for key in sorted(config):
        d = TOPIC_CONFIGS.get(key)
        if d is not None and d.deprecated and key != "message.format.version":
            warnings.append(f"WARNING: {key} is {d.deprecated}.")
    return warnings


