"""Kafka's topic rules, its topic-config schema, and topic drafts (create, add partitions, alter config, delete).

Pure: no I/O, no kazoo, streamlit or pyspark. A *draft* is what WOULD be written, computed against a
`ClusterSnapshot`; the ZooKeeper writer re-reads live state and re-validates before writing it.

Where the rules and messages come from (Apache Kafka source, 1.1 - 3.9):

* Names -- `clients/.../common/internals/Topic.java` (`validate`, `hasCollisionChars`, `unifyCollisionChars`,
  `isInternal`). The messages are the 1.1 - 3.9 ones ("Topic name is illegal, ..."); 4.x reworded them.
* Create -- `core/.../zk/AdminZkClient.scala` (`validateTopicCreate`: exists, '.'/'_' collision, same replica
  count everywhere, no duplicate replica, partitions 0..n-1, `LogConfig.validate`) and `kafka-topics`
  (`TopicCommand`: `parseReplicaAssignment`, the '.'/'_' warning, the replication-factor/partitions range checks).
* Add partitions -- `ZkAdminManager.createPartitions` (refused while a partition of the topic is being reassigned,
  unknown brokers, assignment count) and `AdminZkClient.createNewPartitionsAssignment` /
  `validateReplicaAssignment`; the ZooKeeper `TopicCommand --alter` refuses internal topics; `KafkaApis` refuses
  topics queued for deletion.
* Delete -- `TopicCommand` (ZooKeeper path): internal topics are never marked for deletion.
* Configs -- `core/.../log/LogConfig.scala` (2.x - 3.4) and `storage/.../internals/log/LogConfig.java` (3.5+):
  every topic-level key with its type, default and validator; `ConfigDef.parseType` for how values are parsed;
  `ConfigDef.Range` / `ValidString` / `ValidList`, `ThrottledReplicaListValidator`, the gzip level validator and
  `MetadataVersionValidator` for the checks and their messages; `ConfigException` for the
  "Invalid value X for configuration Y: ..." wording; `LogConfig.validateValues` for the cross-field check.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from decimal import Decimal
from random import Random
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from core.assignment import RackAwareMode, add_partitions_assignment, assign_replicas, brokers_for_mode
from core.errors import (
    AdminOperationError,
    BusyError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KRaftControllerError,
    ReassignmentInProgressError,
    RiskNotAcceptedError,
    TooLargeError,
    TopicExistsError,
    UnknownTopicError,
    ValidationError,
)
from core.model import ClusterSnapshot, Topic

__all__ = [
    "INTERNAL_TOPICS", "MAX_NAME_LENGTH", "COLLISION_WARNING", "ADD_PARTITIONS_WARNING", "TOPIC_CONFIGS",
    "ConfigDef", "ConfigDiffRow", "CreateTopicDraft", "AddPartitionsDraft", "AlterConfigDraft", "DeleteTopicDraft",
    "validate_topic_name", "is_internal", "has_collision_chars", "unify_collision_chars", "collision_warning",
    "check_collision", "check_not_exists", "parse_kafka_version", "config_names", "validate_topic_config",
    "config_diff", "parse_replica_assignment", "draft_create_topic", "kafka_topics_command",
    "draft_add_partitions", "draft_alter_config", "draft_delete_topic", "MAX_NEW_PARTITIONS",
    "check_topic_znode_size", "effective_min_isr", "unwritable_risk", "require_accepted",
]

Version = tuple[int, int]
Assignment = dict[int, tuple[int, ...]]

INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1
# Bounds checked before any placement is computed, so that one typed number cannot tie up the engine:
# the topic znode (every partition's replicas) must fit one ZooKeeper request (jute.maxbuffer, 1 MiB by
# default), and the controller creates one state znode per new partition in a single pass.
MAX_NEW_PARTITIONS = 20_000
MAX_TOPIC_ZNODE_BYTES = 1_000_000
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1
SHORT_MAX = 2 ** 15 - 1


# =============================================================================================
# Names
# =============================================================================================

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})
MAX_NAME_LENGTH = 249

COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                     "could collide. To avoid issues it is best to use either, but not both.")
ADD_PARTITIONS_WARNING = ("WARNING: If partitions are increased for a topic that has a key, the partition logic or "
                          "ordering of the messages will be affected")
DELETE_NOTE = "Note: This will have no impact if delete.topic.enable is not set to true."

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]*", re.ASCII)


def validate_topic_name(name: str) -> None:
    """`Topic.validate` (Kafka 1.1 - 3.9), with its messages, as InvalidTopicError."""
    if not isinstance(name, str):
        raise InvalidTopicError(f"Topic name must be a string, got {type(name).__name__}")
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    # Java's String.length() counts UTF-16 code units.
    if len(name.encode("utf-16-le")) // 2 > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                                f"topic name: {name}")
    if not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(f'Topic name "{name}" is illegal, it contains a character other than '
                                "ASCII alphanumerics, '.', '_' and '-'")


def is_internal(name: str) -> bool:
    """`Topic.isInternal`: `__consumer_offsets` and `__transaction_state`."""
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "_" in name or "." in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def collision_warning(name: str) -> str | None:
    """The warning kafka-topics prints when creating a topic whose name has a '.' or a '_'."""
    return COLLISION_WARNING if has_collision_chars(name) else None


def check_collision(name: str, existing_names: Iterable[str]) -> None:
    """`AdminZkClient.validateTopicCreate`: refuse a name that equals another existing topic once '.' -> '_'."""
    if not has_collision_chars(name):
        return
    unified = unify_collision_chars(name)
    colliding = sorted({t for t in existing_names if t != name and unify_collision_chars(t) == unified})
    if colliding:
        raise InvalidTopicError(f"Topic '{name}' collides with existing topics: {', '.join(colliding)}")


def check_not_exists(name: str, existing: Iterable[str], marked_for_deletion: Iterable[str] = ()) -> None:
    """TopicExistsError when the topic exists, or is still marked for deletion (its /admin/delete_topics node is
    there: a topic created before the controller finishes the deletion can be deleted with it)."""
    marked = name in set(marked_for_deletion)
    if name in set(existing):
        raise TopicExistsError(f"Topic '{name}' already exists.",
                               hint="it is marked for deletion; wait until the controller has deleted it, "
                                    "then create it again" if marked else None)
    if marked:
        raise TopicExistsError(f"Topic '{name}' is still marked for deletion (/admin/delete_topics/{name} exists).",
                               hint="wait until the controller has finished deleting it, then create it again")


# =============================================================================================
# Kafka versions
# =============================================================================================


def parse_kafka_version(version: str | Sequence[int] | None) -> Version | None:
    """"3.9", "3.9.1", "2.8.2", (3, 9) -> (major, minor); None stays None."""
    if version is None:
        return None
    if isinstance(version, str):
        m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:[-.][0-9A-Za-z.-]*)?\s*", version)
        if not m:
            raise ValidationError(f"not a Kafka version: {version!r} (expected e.g. 2.8 or 3.9.1)")
        return int(m.group(1)), int(m.group(2))
    try:
        major, minor = (int(x) for x in tuple(version)[:2])
    except (TypeError, ValueError):
        raise ValidationError(f"not a Kafka version: {version!r} (expected e.g. 2.8 or (3, 9))") from None
    return major, minor


def _fmt_version(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


# =============================================================================================
# Value parsing, the way Kafka's ConfigDef.parseType does it
# =============================================================================================


def _java_trim(s: str) -> str:
    """String.trim(): strips code points <= U+0020 only (not Python's wider notion of whitespace)."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


# Integer.parseInt / Long.parseLong: an optional sign, then decimal digits (Character.digit accepts any Unicode
# decimal digit, and so does Python's int()).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
# Double.parseDouble (FloatingDecimal.readJavaFormatString): ASCII only; decimal or hex with a binary exponent;
# an optional f/F/d/D suffix; NaN and Infinity (no suffix).
_JAVA_DOUBLE = re.compile(
    r"(?P<sign>[+-]?)(?:(?P<special>NaN|Infinity)|(?P<num>(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+))[fFdD]?)", re.ASCII)
# A Java binary class name, for the CLASS type (no topic config uses it; the class itself cannot be loaded here).
_JAVA_CLASS = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")


def _java_int(text: str, lo: int, hi: int) -> int | None:
    if not _JAVA_INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if lo <= value <= hi else None


def _java_double(text: str) -> float | None:
    m = _JAVA_DOUBLE.fullmatch(text)
    if not m:
        return None
    sign = -1.0 if m.group("sign") == "-" else 1.0
    if m.group("special") == "NaN":
        return math.nan
    if m.group("special") == "Infinity":
        return sign * math.inf
    num = m.group("num")
    if num[:2] in ("0x", "0X"):
        return sign * float.fromhex(num)
    return sign * float(num)  # "1e400" is Infinity in Java and in Python alike


def java_double_str(x: float) -> str:
    """Double.toString: plain notation for 1e-3 <= |x| < 1e7 (at least one fraction digit), else d.dddE±n."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    d = Decimal(repr(abs(x)))  # repr gives the shortest round-tripping digits, as Java 19+ does
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    exp = d.adjusted()
    if 1e-3 <= abs(x) < 1e7:
        if exp >= 0:
            whole = digits[:exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _java_list_str(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _config_error(key: str, message: str, *, hint: str | None = None) -> InvalidConfigurationError:
    err = InvalidConfigurationError(message, hint=hint)
    err.key = key  # the dashboard highlights the offending field
    return err


def _invalid(key: str, shown_value: Any, reason: str | None) -> InvalidConfigurationError:
    """ConfigException(name, value, message): "Invalid value <value> for configuration <name>: <message>"."""
    return _config_error(key, f"Invalid value {shown_value} for configuration {key}" + (f": {reason}" if reason else ""))


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
            value = [] if not text else re.split(r"\s*,\s*", text)
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


def config_names(kafka_version: str | Sequence[int] | None = None) -> list[str]:
    """The topic-level config names a Kafka version knows (all of them, 1.1 - 3.9, when no version is given)."""
    version = parse_kafka_version(kafka_version)
    return [name for name, d in TOPIC_CONFIGS.items() if d.exists_in(version)]


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


# =============================================================================================
# Replica assignments
# =============================================================================================

_ASSIGNMENT_USAGE = 'expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a partition by ":"'


def _java_split(text: str, sep: str) -> list[str]:
    """String.split(sep): trailing empty strings are removed; a string without the separator is itself."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts if text else [text]


def parse_replica_assignment(text: str) -> Assignment:
    """kafka-topics' --replica-assignment ("1:2,2:3"), parsed and checked as `TopicCommand.parseReplicaAssignment`
    does: partition i is the i-th ','-separated entry; duplicates in a partition and a replica count different from
    partition 0's are refused with Kafka's messages."""
    if not isinstance(text, str) or not _java_trim(text):
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {_ASSIGNMENT_USAGE}")
    result: Assignment = {}
    for i, entry in enumerate(_java_split(text, ",")):
        brokers = []
        for token in _java_split(entry, ":"):
            broker = _java_int(_java_trim(token), INT_MIN, INT_MAX)
            if broker is None:
                raise InvalidReplicaAssignmentError(
                    f'Invalid replica assignment "{text}": partition {i} has a broker id that is not an integer: '
                    f'"{_java_trim(token)}" ({_ASSIGNMENT_USAGE})')
            brokers.append(broker)
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise InvalidReplicaAssignmentError("Partition replica lists may not contain duplicate entries: "
                                                + ",".join(map(str, duplicates)))
        result[i] = tuple(brokers)
        if len(result[i]) != len(result[0]):
            raise InvalidReplicaAssignmentError(f"Partition {i} has different replication factor: "
                                                + _java_list_str([str(b) for b in brokers]))
    if not result:
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {_ASSIGNMENT_USAGE}")
    return result


def _coerce_assignment(value: str | Mapping[int, Sequence[int]] | Sequence[Sequence[int]]) -> Assignment:
    """A kafka-topics string, {partition: replicas} or [replicas, ...] (partition = position) as {int: tuple}."""
    if isinstance(value, str):
        return parse_replica_assignment(value)
    try:
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        result = {}
        for partition, replicas in items:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise TypeError(f"partition id {partition!r} is not an integer")
            if isinstance(replicas, (str, bytes)):
                raise TypeError(f"the replicas of partition {partition} are not a list")
            reps = tuple(replicas)
            if any(isinstance(b, bool) or not isinstance(b, int) for b in reps):
                raise TypeError(f"partition {partition} has a broker id that is not an integer: {list(reps)}")
            result[partition] = reps
        return result
    except TypeError as e:
        raise InvalidReplicaAssignmentError(f"invalid replica assignment: {e}") from None


def _format_assignment(assignment: Mapping[int, Sequence[int]]) -> str:
    return "{" + ", ".join(f"{p}: {list(assignment[p])}" for p in sorted(assignment)) + "}"


def _check_known_brokers(assignment: Mapping[int, Sequence[int]], known: Iterable[int]) -> None:
    """ZkAdminManager.createPartitions: every broker of an explicit assignment must be registered (alive)."""
    unknown = sorted({b for reps in assignment.values() for b in reps} - set(known))
    if unknown:
        raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
                                            hint="only brokers registered under /brokers/ids can hold new replicas")


def _validate_create_assignment(assignment: Assignment, alive: Iterable[int]) -> None:
    """`AdminZkClient.validateTopicCreate`'s assignment checks, then two Keel adds: no empty replica list and
    no unregistered broker (Kafka's create path skips that check; its add-partitions path makes it)."""
    if not assignment:
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {_ASSIGNMENT_USAGE}")
    if len({len(reps) for reps in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    if any(len(reps) != len(set(reps)) for reps in assignment.values()):
        raise InvalidReplicaAssignmentError("Duplicate replica assignment found: " + _format_assignment(assignment))
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence",
                                            hint=f"got partitions {sorted(assignment)}")
    if any(len(reps) == 0 for reps in assignment.values()):
        raise InvalidReplicaAssignmentError("Cannot have replication factor of 0 for partition id 0.")
    _check_known_brokers(assignment, alive)


def _validate_new_partitions(new: Assignment, expected_rf: int) -> None:
    """`AdminZkClient.validateReplicaAssignment` (unknown brokers were refused before, as ZkAdminManager does)."""
    for partition in sorted(new):
        reps = new[partition]
        if not reps:
            raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(reps) != len(set(reps)):
            raise InvalidReplicaAssignmentError("Duplicate brokers not allowed in replica assignment: "
                                                f"{', '.join(map(str, reps))} for partition id {partition}.")
    bad = [(p, len(new[p])) for p in sorted(new) if len(new[p]) != expected_rf]
    if bad:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition 0 has {expected_rf} while partitions "
            f"[{', '.join(str(p) for p, _ in bad)}] have replication factors [{', '.join(str(rf) for _, rf in bad)}], "
            "respectively.")


# =============================================================================================
# Drafts
# =============================================================================================


def _partition_bound(count: int) -> None:
    if count > MAX_NEW_PARTITIONS:
        raise TooLargeError(
            f"{count:,} partitions is more than Keel writes in one request (at most {MAX_NEW_PARTITIONS:,})",
            hint="the topic znode must fit ZooKeeper's 1 MiB request limit (jute.maxbuffer) and the controller "
                 "creates every new partition's state in one pass; create fewer and add partitions in steps")


def check_topic_znode_size(name: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """Refuse an assignment whose topic znode would exceed ZooKeeper's request limit (estimated exactly
    as the JSON is written: `"p":[a,b,c]` per partition)."""
    size = 64 + len(name) + sum(len(str(p)) + 6 + sum(len(str(b)) + 1 for b in reps)
                                for p, reps in assignment.items())
    if size > MAX_TOPIC_ZNODE_BYTES:
        raise TooLargeError(
            f"topic {name}'s assignment would be a {size:,}-byte znode, over ZooKeeper's 1 MiB request limit "
            "(jute.maxbuffer)", hint="use fewer partitions or a lower replication factor")


def effective_min_isr(config: Mapping[str, str], broker_defaults: Mapping[str, str] | None = None) -> int:
    """min.insync.replicas as a topic sees it: its override, else the cluster-wide dynamic default, else 1."""
    for source in (config, broker_defaults or {}):
        value = _java_int(_java_trim(str(source.get("min.insync.replicas", ""))), 1, INT_MAX)
        if value is not None:
            return value
    return 1


def unwritable_risk(name: str, config: Mapping[str, str], replication_factor: int,
                    broker_defaults: Mapping[str, str] | None = None) -> str | None:
    """Why producers with acks=all could never write to the topic, or None.

    Kafka accepts min.insync.replicas above the replication factor without a word; every partition is then
    under min ISR for good and acks=all producers get NotEnoughReplicas. Keel makes the operator confirm it.
    """
    min_isr = effective_min_isr(config, broker_defaults)
    if replication_factor and min_isr > replication_factor:
        return (f"min.insync.replicas={min_isr} is above the replication factor {replication_factor} of topic {name}: "
                "every partition stays under min ISR and producers with acks=all get NotEnoughReplicas on every "
                "write (the topic is unwritable for them)")
    return None


def require_accepted(risks: Sequence[str], accepted: bool | Sequence[str]) -> None:
    """Raise RiskNotAcceptedError unless `accepted` is True or lists every one of `risks` exactly."""
    if not risks or accepted is True:
        return
    missing = [r for r in risks if not (isinstance(accepted, (list, tuple, set, frozenset)) and r in accepted)]
    if missing:
        raise RiskNotAcceptedError("refused without explicit confirmation: " + "; ".join(missing), tuple(missing),
                                   hint="confirm this exact risk (--accept-risk on the command line, the "
                                        "confirmation box in the dashboard), or change the input")


@dataclass(frozen=True)
class CreateTopicDraft:
    """The topic znode and config znode a create would write: `assignment` partition -> replicas."""

    name: str
    assignment: Assignment
    config: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)  # writes nothing unless each is confirmed (require_accepted)

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if self.assignment else 0


@dataclass(frozen=True)
class AddPartitionsDraft:
    """`new_assignment` holds only the added partitions; `full_assignment` is what the topic znode would hold.
    `topic_id` and the adding/removing maps of the existing partitions are kept for the rewrite."""

    name: str
    new_assignment: Assignment
    full_assignment: Assignment
    topic_id: str | None
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def old_total(self) -> int:
        return len(self.full_assignment) - len(self.new_assignment)

    @property
    def new_total(self) -> int:
        return len(self.full_assignment)


@dataclass(frozen=True)
class AlterConfigDraft:
    """`old` and `new` are the complete override maps of the topic; `diff` the changed keys."""

    name: str
    old: dict[str, str]
    new: dict[str, str]
    diff: list[ConfigDiffRow]
    warnings: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)  # writes nothing unless each is confirmed (require_accepted)

    @property
    def changed(self) -> bool:
        return bool(self.diff)


@dataclass(frozen=True)
class DeleteTopicDraft:
    """Marks the topic for deletion (/admin/delete_topics/<name>); `partitions` and `replicas` are counts."""

    name: str
    partitions: int
    replicas: int
    topic_id: str | None = None
    warnings: list[str] = field(default_factory=list)


def _refuse_kraft(snapshot: ClusterSnapshot, action: str) -> None:
    controller = snapshot.controller
    if controller is not None and controller.is_kraft:
        raise KRaftControllerError(
            f"Cannot {action}: the cluster is controlled by a KRaft controller (kraftControllerEpoch "
            f"{controller.kraft_controller_epoch}), so ZooKeeper writes would be ignored or harmful.",
            hint="use the Kafka admin API, e.g. kafka-topics.sh --bootstrap-server")


def _require_topic(snapshot: ClusterSnapshot, name: str) -> Topic:
    topic = snapshot.topic(name)
    if topic is None:
        raise UnknownTopicError(f"Topic '{name}' does not exist as expected")
    return topic


def _require_int(value: Any, what: str, error: type[ValidationError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{what} must be an integer, got {value!r}")
    return value


def draft_create_topic(snapshot: ClusterSnapshot, name: str, partitions: int | None = None,
                       replication_factor: int | None = None, config: Mapping[str, str] | None = None,
                       rack_mode: RackAwareMode | str = "enforced",
                       replica_assignment: str | Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
                       rng: Random | None = None, fixed_start_index: int = -1, *,
                       kafka_version: str | Sequence[int] | None = None) -> CreateTopicDraft:
    """What creating `name` would write. Either `partitions` + `replication_factor` (placed by Kafka's algorithm over
    the ALIVE brokers, as Kafka does) or an explicit `replica_assignment`, never both (Kafka's CreateTopics rule)."""
    _refuse_kraft(snapshot, f"create topic '{name}'")
    validate_topic_name(name)
    if is_internal(name):
        raise AdminOperationError(f"Topic {name} is a Kafka internal topic; the brokers create it themselves.",
                                  hint="Keel does not create internal topics")
    check_not_exists(name, (t.name for t in snapshot.topics), snapshot.in_progress.deletion)
    check_collision(name, (t.name for t in snapshot.topics))
    checked_config = validate_topic_config(config or {}, kafka_version=kafka_version)

    alive = [b for b in snapshot.brokers if b.alive]
    if replica_assignment is not None:
        if partitions is not None or replication_factor is not None:
            raise InvalidReplicaAssignmentError(
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.")
        assignment = _coerce_assignment(replica_assignment)
        _validate_create_assignment(assignment, (b.id for b in alive))
    else:
        if replication_factor is None:
            raise InvalidReplicationFactorError("Missing replication factor: give a replication factor and a "
                                                "number of partitions, or a replica assignment")
        if partitions is None:
            raise InvalidPartitionsError("Missing number of partitions: give a number of partitions and a "
                                         "replication factor, or a replica assignment")
        rf = _require_int(replication_factor, "The replication factor", InvalidReplicationFactorError)
        count = _require_int(partitions, "The number of partitions", InvalidPartitionsError)
        if rf > SHORT_MAX or rf < 1:  # kafka-topics' checks, before the broker's
            raise InvalidReplicationFactorError(f"The replication factor must be between 1 and {SHORT_MAX} inclusive")
        if count < 1:
            raise InvalidPartitionsError("The partitions must be greater than 0")
        if count > INT_MAX:
            raise InvalidPartitionsError(f"The partitions must be at most {INT_MAX}")
        _partition_bound(count)
        placed = assign_replicas(brokers_for_mode(alive, rack_mode), count, rf,
                                 fixed_start_index=fixed_start_index, rng=rng)
        assignment = {p: tuple(reps) for p, reps in placed.items()}

    check_topic_znode_size(name, assignment)
    warnings = [w for w in (collision_warning(name),) if w] + _config_warnings(checked_config)
    rf_now = len(assignment[min(assignment)]) if assignment else 0
    risk = unwritable_risk(name, checked_config, rf_now, snapshot.broker_configs.get("<default>"))
    return CreateTopicDraft(name=name, assignment=dict(sorted(assignment.items())), config=checked_config,
                            warnings=warnings, risks=[risk] if risk else [])


def kafka_topics_command(draft: CreateTopicDraft, bootstrap_or_zk: str, *, zookeeper: bool = False) -> str:
    """The kafka-topics.sh line that creates exactly this draft (explicit --replica-assignment, so the placement is
    the draft's, not a new random one), shell-quoted. `zookeeper=True` gives --zookeeper (Kafka < 3.0)."""
    parts = ["kafka-topics.sh", "--zookeeper" if zookeeper else "--bootstrap-server", bootstrap_or_zk,
             "--create", "--topic", draft.name, "--replica-assignment",
             ",".join(":".join(map(str, draft.assignment[p])) for p in sorted(draft.assignment))]
    for key in sorted(draft.config):
        value = draft.config[key]
        if value == "":
            # kafka-topics splits "key=" into one part and refuses it ("must be in the format key=val").
            raise ValidationError(f"kafka-topics.sh cannot set {key} to an empty value with --config",
                                  hint="leave the key out, or set it with kafka-configs.sh after creating the topic")
        parts += ["--config", f"{key}={value}"]
    return shlex.join(parts)


def draft_add_partitions(snapshot: ClusterSnapshot, name: str, new_total: int,
                         replica_assignment: str | Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
                         rng: Random | None = None) -> AddPartitionsDraft:
    """What growing `name` to `new_total` partitions would write.

    Without `replica_assignment` the new replicas come from `add_partitions_assignment` over the alive brokers
    (rack mode enforced, as kafka-topics --alter always uses; no random draw, so `rng` is not used). With one: a
    kafka-topics string lists every partition and the existing ones are skipped (as kafka-topics --alter does);
    a mapping is keyed by the new partition ids; a list holds the new partitions in order.
    """
    _refuse_kraft(snapshot, f"add partitions to topic '{name}'")
    topic = _require_topic(snapshot, name)
    if is_internal(name):
        raise AdminOperationError(f"The number of partitions for the internal topic {name} cannot be changed.")
    if name in snapshot.in_progress.deletion:
        raise InvalidTopicError("The topic is queued for deletion.", hint=f"topic '{name}' is marked for deletion")
    moving = sorted({p.partition for p in topic.partitions if p.adding_replicas or p.removing_replicas}
                    | {r.partition for r in snapshot.in_progress.reassignment if r.topic == name})
    if moving:
        raise ReassignmentInProgressError(f"A partition reassignment is in progress for the topic '{name}'.",
                                          hint=f"partitions being reassigned: {moving}")
    count = _require_int(new_total, "The number of partitions", InvalidPartitionsError)
    existing = {p.partition: tuple(p.replicas) for p in topic.partitions}
    if 0 not in existing:
        raise AdminOperationError(f"Unexpected existing replica assignment for topic '{name}', partition id 0 is "
                                  f"missing. Assignment: {_format_assignment(existing)}")
    if count <= len(existing):
        raise InvalidPartitionsError(f"The number of partitions for a topic can only be increased. Topic {name} "
                                     f"currently has {len(existing)} partitions, {count} would not be an increase.")
    if count > INT_MAX:
        raise InvalidPartitionsError(f"The partitions must be at most {INT_MAX}")
    alive = [b for b in snapshot.brokers if b.alive]
    to_add = count - len(existing)
    _partition_bound(to_add)

    if replica_assignment is None:
        placed = add_partitions_assignment(existing, brokers_for_mode(alive, RackAwareMode.ENFORCED), count,
                                           topic=name)
        new = {p: tuple(reps) for p, reps in placed.items()}
    else:
        if isinstance(replica_assignment, str):
            full = parse_replica_assignment(replica_assignment)
            listed = [full[p] for p in sorted(full)][len(existing):]
        elif isinstance(replica_assignment, Mapping):
            given = _coerce_assignment(replica_assignment)
            wanted = list(range(len(existing), count))
            if sorted(given) != wanted and len(given) == to_add:
                raise InvalidReplicaAssignmentError(f"the new partitions are {wanted}, the assignment gives "
                                                    f"partitions {sorted(given)}")
            listed = [given[p] for p in sorted(given)]
        else:
            given = _coerce_assignment(replica_assignment)
            listed = [given[p] for p in sorted(given)]
        proposed = {len(existing) + i: reps for i, reps in enumerate(listed)}
        _check_known_brokers(proposed, (b.id for b in alive))
        if len(listed) != to_add:
            raise InvalidReplicaAssignmentError(f"Increasing the number of partitions by {to_add} but {len(listed)} "
                                                "assignments provided.")
        _validate_new_partitions(proposed, len(existing[0]))
        new = proposed

    full_assignment = dict(sorted({**existing, **new}.items()))
    check_topic_znode_size(name, full_assignment)
    return AddPartitionsDraft(
        name=name, new_assignment=dict(sorted(new.items())), full_assignment=full_assignment,
        topic_id=topic.topic_id,
        adding_replicas={p.partition: tuple(p.adding_replicas) for p in topic.partitions if p.adding_replicas},
        removing_replicas={p.partition: tuple(p.removing_replicas) for p in topic.partitions if p.removing_replicas},
        warnings=[ADD_PARTITIONS_WARNING])


def draft_alter_config(snapshot: ClusterSnapshot, name: str, set: Mapping[str, str] | None = None,
                       delete: Iterable[str] = (), *, kafka_version: str | Sequence[int] | None = None
                       ) -> AlterConfigDraft:
    """The topic's config override map after setting `set` and removing `delete` (kafka-configs --alter
    --add-config / --delete-config). Set values are validated like `validate_topic_config`; keys to delete must be
    set on the topic ("Invalid config(s): ..."), a key set on the topic may be deleted even if Kafka does not know
    it. Untouched keys are not re-validated (the cluster accepted them), but the cross-field check sees them."""
    _refuse_kraft(snapshot, f"alter the config of topic '{name}'")
    validate_topic_name(name)
    topic = snapshot.topic(name)
    if topic is None:
        raise UnknownTopicError(f"Topic '{name}' does not exist.")  # AdminZkClient.validateTopicConfig
    version = parse_kafka_version(kafka_version)
    set_checked = validate_topic_config(set or {}, kafka_version=version)
    to_delete = [_java_trim(k) for k in delete]
    both = sorted(k for k in to_delete if k in set_checked)
    if both:
        raise _config_error(both[0], f"Cannot both set and delete config(s): {','.join(both)}")
    old = dict(topic.config)
    absent = [k for k in to_delete if k not in old]
    unknown = [k for k in absent if k not in TOPIC_CONFIGS]
    if unknown:
        raise _config_error(unknown[0], f"Unknown topic config name: {unknown[0]}")
    if absent:
        raise _config_error(absent[0], f"Invalid config(s): {','.join(absent)}",
                            hint=f"not set on topic '{name}'")
    new = {k: v for k, v in old.items() if k not in to_delete}
    new.update(set_checked)
    new = dict(sorted(new.items()))
    if {"min.compaction.lag.ms", "max.compaction.lag.ms"} & set_checked.keys():
        _check_cross_fields(new, version, lenient=True)
    rf = min((len(p.replicas) for p in topic.partitions), default=0)
    risk = unwritable_risk(name, new, rf, snapshot.broker_configs.get("<default>"))
    # Only a change that makes the topic unwritable needs confirming, not every edit of an already broken one.
    was = unwritable_risk(name, old, rf, snapshot.broker_configs.get("<default>"))
    return AlterConfigDraft(name=name, old=dict(sorted(old.items())), new=new, diff=config_diff(old, new),
                            warnings=_config_warnings(set_checked),
                            risks=[risk] if risk and (risk != was) else [])


def draft_delete_topic(snapshot: ClusterSnapshot, name: str) -> DeleteTopicDraft:
    """Marking `name` for deletion, refused for unknown and internal topics and topics already marked."""
    _refuse_kraft(snapshot, f"delete topic '{name}'")
    topic = _require_topic(snapshot, name)
    if is_internal(name):
        raise AdminOperationError(f"Topic {name} is a kafka internal topic and is not allowed to be marked for "
                                  "deletion.")
    if name in snapshot.in_progress.deletion:
        raise BusyError(f"Topic {name} is already marked for deletion.",
                        hint=f"/admin/delete_topics/{name} exists; the controller deletes the topic when "
                             "delete.topic.enable is true")
    return DeleteTopicDraft(name=name, partitions=len(topic.partitions),
                            replicas=sum(len(p.replicas) for p in topic.partitions), topic_id=topic.topic_id,
                            warnings=[DELETE_NOTE])
