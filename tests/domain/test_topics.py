"""core.topics: Kafka's topic-name rules, the topic-config schema and validators, and the topic drafts.

Every expected message is Kafka's own wording (see the module docstring of core.topics for the sources) unless the
test says it is Keel's. Pure and fast: hand-built snapshots, no ZooKeeper.
"""

from __future__ import annotations

import random

import pytest

from core.assignment import assign_replicas
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
    TopicExistsError,
    UnknownTopicError,
    ValidationError,
)
from core.model import Broker, ClusterSnapshot, Controller, InProgress, Partition, Topic, TopicPartitionReplicas
from core.topics import (
    ADD_PARTITIONS_WARNING,
    COLLISION_WARNING,
    CONFIG_TYPES,
    DELETE_NOTE,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigDiffRow,
    check_collision,
    check_not_exists,
    collision_warning,
    config_diff,
    draft_add_partitions,
    draft_alter_config,
    draft_create_topic,
    draft_delete_topic,
    is_internal,
    java_double_str,
    kafka_topics_command,
    parse_kafka_version,
    parse_replica_assignment,
    validate_topic_config,
    validate_topic_name,
)

# --- helpers ---------------------------------------------------------------------------------


def snapshot(brokers, topics=(), *, deletion=(), reassignment=(), kraft_epoch=None) -> ClusterSnapshot:
    """brokers: ids, or (id, rack) / (id, rack, alive) tuples."""
    made = []
    for b in brokers:
        if isinstance(b, int):
            made.append(Broker(id=b))
        else:
            made.append(Broker(id=b[0], rack=b[1], alive=b[2] if len(b) > 2 else True))
    return ClusterSnapshot(
        cluster="test", captured_at="2026-01-01T00:00:00Z", source="hand-built",
        brokers=tuple(made), topics=tuple(sorted(topics, key=lambda t: t.name)),
        controller=Controller(broker_id=made[0].id if made else None, epoch=3, kraft_controller_epoch=kraft_epoch),
        in_progress=InProgress(reassignment=tuple(reassignment), deletion=tuple(deletion)))


def topic(name, assignment, *, config=None, topic_id=None, adding=None, removing=None) -> Topic:
    adding, removing = adding or {}, removing or {}
    return Topic(name=name, topic_id=topic_id, config=dict(config or {}), partitions=tuple(
        Partition(topic=name, partition=p, replicas=tuple(r), leader=r[0] if r else -1, isr=tuple(r),
                  adding_replicas=tuple(adding.get(p, ())), removing_replicas=tuple(removing.get(p, ())))
        for p, r in sorted(assignment.items())))


def message(excinfo) -> str:
    return excinfo.value.message


# =============================================================================================
# Names
# =============================================================================================


@pytest.mark.parametrize("name", ["a", "A-b_c.1", "x" * 249, "__consumer_offsets", "...", "-", "_"])
def test_valid_topic_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name, expected", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("a b", "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    ("a/b", "Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    ("café", "Topic name is invalid: 'café' contains one or more characters other than ASCII alphanumerics, '.', '_' and "
             "'-'"),
])
def test_invalid_topic_names(name, expected):
    with pytest.raises(InvalidTopicError) as e:
        validate_topic_name(name)
    assert message(e) == expected


def test_name_length_counts_utf16_code_units_like_java():
    name = "a" * 248 + "\U0001F600"  # 249 Python characters, 250 Java chars: the length check fires first
    with pytest.raises(InvalidTopicError) as e:
        validate_topic_name(name)
    assert message(e) == f"Topic name is invalid: the length of '{name}' is longer than the max allowed length 249"


def test_non_string_name():
    with pytest.raises(InvalidTopicError) as e:
        validate_topic_name(None)
    assert message(e) == "Topic name must be a string, got NoneType"


def test_is_internal():
    assert is_internal("__consumer_offsets")
    assert is_internal("__transaction_state")
    assert not is_internal("__consumer_offsets2")
    assert not is_internal("orders")


def test_collision_warning():
    expected = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
                "collide. To avoid issues it is best to use either, but not both.")
    assert COLLISION_WARNING == expected
    assert collision_warning("a.b") == expected
    assert collision_warning("a_b") == expected
    assert collision_warning("a-b") is None


def test_check_collision():
    with pytest.raises(InvalidTopicError) as e:
        check_collision("a.b", ["a_b", "x", "a.b"])
    assert message(e) == "Topic 'a.b' collides with existing topics: a_b"
    with pytest.raises(InvalidTopicError) as e:
        check_collision("a.b_c", ["a_b_c", "a.b.c", "a_b.c", "abc"])
    assert message(e) == "Topic 'a.b_c' collides with existing topics: a.b.c, a_b.c, a_b_c"
    check_collision("a.b", ["a-b", "ab", "a.b"])  # the same name is an existence question, not a collision
    check_collision("ab", ["ab"])


def test_check_not_exists():
    check_not_exists("new", ["a", "b"], ["c"])
    with pytest.raises(TopicExistsError) as e:
        check_not_exists("a", ["a", "b"], [])
    assert message(e) == "Topic 'a' already exists."
    assert str(e.value) == "Topic 'a' already exists."
    with pytest.raises(TopicExistsError) as e:
        check_not_exists("a", ["a"], ["a"])
    assert str(e.value) == ("Topic 'a' already exists. (it is marked for deletion; wait until the controller has "
                            "deleted it, then create it again)")
    with pytest.raises(TopicExistsError) as e:
        check_not_exists("gone", ["a"], ["gone"])
    assert message(e) == "Topic 'gone' is still marked for deletion (/admin/delete_topics/gone exists)."


# =============================================================================================
# The config schema
# =============================================================================================

REQUIRED_CONFIGS = {
    "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.downconversion.enable", "message.format.version", "message.timestamp.type",
    "message.timestamp.difference.max.ms", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
    "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
}


def test_schema_holds_every_topic_config_of_kafka_3_9():
    assert set(TOPIC_CONFIGS) == REQUIRED_CONFIGS | {"remote.log.copy.disable", "remote.log.delete.on.disable"}
    assert list(TOPIC_CONFIGS) == sorted(TOPIC_CONFIGS)


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_every_default_is_valid_and_every_entry_is_well_formed(name):
    d = TOPIC_CONFIGS[name]
    assert d.name == name
    assert d.type in CONFIG_TYPES
    assert d.doc and "\n" not in d.doc and len(d.doc) < 100
    assert d.default is not None
    assert d.normalise(d.default) == d.default


@pytest.mark.parametrize("name, type_, default, valid", [
    ("cleanup.policy", "list", "delete", "[compact, delete]"),
    ("compression.type", "string", "producer", "[uncompressed, zstd, lz4, snappy, gzip, producer]"),
    ("compression.gzip.level", "int", "-1", "[1,...,9] or -1"),
    ("compression.lz4.level", "int", "9", "[1,...,17]"),
    ("compression.zstd.level", "int", "3", "[-131072,...,22]"),
    ("delete.retention.ms", "long", "86400000", "[0,...]"),
    ("file.delete.delay.ms", "long", "60000", "[0,...]"),
    ("flush.messages", "long", "9223372036854775807", "[1,...]"),
    ("flush.ms", "long", "9223372036854775807", "[0,...]"),
    ("follower.replication.throttled.replicas", "list", "", "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("index.interval.bytes", "int", "4096", "[0,...]"),
    ("leader.replication.throttled.replicas", "list", "", "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("local.retention.bytes", "long", "-2", "[-2,...]"),
    ("local.retention.ms", "long", "-2", "[-2,...]"),
    ("max.compaction.lag.ms", "long", "9223372036854775807", "[1,...]"),
    ("max.message.bytes", "int", "1048588", "[0,...]"),
    ("message.downconversion.enable", "boolean", "true", ""),
    ("message.timestamp.after.max.ms", "long", "9223372036854775807", "[0,...]"),
    ("message.timestamp.before.max.ms", "long", "9223372036854775807", "[0,...]"),
    ("message.timestamp.difference.max.ms", "long", "9223372036854775807", "[0,...]"),
    ("message.timestamp.type", "string", "CreateTime", "[CreateTime, LogAppendTime]"),
    ("min.cleanable.dirty.ratio", "double", "0.5", "[0,...,1]"),
    ("min.compaction.lag.ms", "long", "0", "[0,...]"),
    ("min.insync.replicas", "int", "1", "[1,...]"),
    ("preallocate", "boolean", "false", ""),
    ("remote.log.copy.disable", "boolean", "false", ""),
    ("remote.log.delete.on.disable", "boolean", "false", ""),
    ("remote.storage.enable", "boolean", "false", ""),
    ("retention.bytes", "long", "-1", ""),
    ("retention.ms", "long", "604800000", "[-1,...]"),
    ("segment.bytes", "int", "1073741824", "[14,...]"),
    ("segment.index.bytes", "int", "10485760", "[4,...]"),
    ("segment.jitter.ms", "long", "0", "[0,...]"),
    ("segment.ms", "long", "604800000", "[1,...]"),
    ("unclean.leader.election.enable", "boolean", "false", ""),
])
def test_types_defaults_and_valid_values_are_kafkas(name, type_, default, valid):
    d = TOPIC_CONFIGS[name]
    assert (d.type, d.default, d.valid_values) == (type_, default, valid)


def test_message_format_version_definition():
    d = TOPIC_CONFIGS["message.format.version"]
    assert (d.type, d.default) == ("string", "3.0-IV1")
    assert d.valid_values.startswith("[0.8.0, 0.8.1, 0.8.2, 0.9.0, 0.10.0-IV0, 0.10.0-IV1, 0.10.1-IV0,")
    assert d.valid_values.endswith("3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0]")


def test_deprecated_and_removed_configs_are_marked():
    deprecated = {name for name, d in TOPIC_CONFIGS.items() if d.deprecated}
    assert deprecated == {"message.format.version", "message.timestamp.difference.max.ms"}
    assert TOPIC_CONFIGS["message.format.version"].removed_in == (4, 0)
    assert TOPIC_CONFIGS["message.timestamp.difference.max.ms"].removed_in == (4, 0)
    assert TOPIC_CONFIGS["message.downconversion.enable"].removed_in is None


def test_since_versions():
    assert {name: d.since for name, d in TOPIC_CONFIGS.items() if d.since != (1, 1)} == {
        "compression.gzip.level": (3, 8), "compression.lz4.level": (3, 8), "compression.zstd.level": (3, 8),
        "local.retention.bytes": (3, 0), "local.retention.ms": (3, 0), "remote.storage.enable": (3, 0),
        "max.compaction.lag.ms": (2, 3), "message.downconversion.enable": (2, 0),
        "message.timestamp.after.max.ms": (3, 6), "message.timestamp.before.max.ms": (3, 6),
        "remote.log.copy.disable": (3, 9), "remote.log.delete.on.disable": (3, 9),
    }


def test_server_default_properties():
    assert TOPIC_CONFIGS["retention.ms"].server_default_property == "log.retention.ms"
    assert TOPIC_CONFIGS["segment.ms"].server_default_property == "log.roll.ms"
    assert TOPIC_CONFIGS["max.message.bytes"].server_default_property == "message.max.bytes"
    assert TOPIC_CONFIGS["file.delete.delay.ms"].server_default_property == "log.segment.delete.delay.ms"
    assert TOPIC_CONFIGS["remote.storage.enable"].server_default_property is None


def config_names(version=None) -> list[str]:
    """The topic-level config names a Kafka version knows (all of them when no version is given)."""
    return [name for name, d in TOPIC_CONFIGS.items() if d.exists_in(parse_kafka_version(version))]


def test_config_names_by_version():
    assert config_names() == sorted(TOPIC_CONFIGS)
    v11 = config_names("1.1")
    assert "max.compaction.lag.ms" not in v11 and "message.downconversion.enable" not in v11
    assert len(v11) == 24
    v37 = config_names("3.7.1")
    assert "compression.zstd.level" not in v37 and "message.timestamp.before.max.ms" in v37
    assert len(config_names("3.9")) == 36
    v40 = config_names((4, 0))
    assert "message.format.version" not in v40 and "message.timestamp.difference.max.ms" not in v40


def test_parse_kafka_version():
    assert parse_kafka_version(None) is None
    assert parse_kafka_version("3.9") == (3, 9)
    assert parse_kafka_version("2.8.2") == (2, 8)
    assert parse_kafka_version(" 3.6.0 ") == (3, 6)
    assert parse_kafka_version((2, 1)) == (2, 1)
    assert parse_kafka_version([3, 9, 0]) == (3, 9)
    with pytest.raises(ValidationError) as e:
        parse_kafka_version("three")
    assert message(e) == "not a Kafka version: 'three' (expected e.g. 2.8 or 3.9.1)"


# --- validation, one test per type and per validator class -----------------------------------


def invalid(config, **kw) -> str:
    with pytest.raises(InvalidConfigurationError) as e:
        validate_topic_config(config, **kw)
    return str(e.value)


def test_valid_config_is_normalised_and_sorted():
    got = validate_topic_config({
        "retention.ms": " +86400000 ", "preallocate": "TRUE", "cleanup.policy": "compact , delete",
        "min.cleanable.dirty.ratio": " 0.25 ", "compression.type": "zstd", " segment.bytes ": "1048576",
        "leader.replication.throttled.replicas": "0:1 , 1:2", "message.format.version": "2.8",
        "retention.bytes": "-5",
    })
    assert got == {
        "cleanup.policy": "compact,delete", "compression.type": "zstd",
        "leader.replication.throttled.replicas": "0:1,1:2", "message.format.version": "2.8",
        "min.cleanable.dirty.ratio": "0.25", "preallocate": "true", "retention.bytes": "-5",
        "retention.ms": "86400000", "segment.bytes": "1048576",
    }
    assert list(got) == sorted(got)
    assert validate_topic_config({}) == {}


def test_unknown_config_name():
    assert invalid({"foo": "1"}) == "Unknown topic config name: foo"
    assert invalid({"retention.ms": "1", "log.retention.ms": "1"}) == "Unknown topic config name: log.retention.ms"


def test_error_names_the_key():
    with pytest.raises(InvalidConfigurationError) as e:
        validate_topic_config({"segment.bytes": "1"})
    assert e.value.key == "segment.bytes"


@pytest.mark.parametrize("key, value, expected", [
    # boolean: "true"/"false", any case, trimmed
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ("unclean.leader.election.enable", "1",
     "Invalid value 1 for configuration unclean.leader.election.enable: Expected value to be either true or false"),
    # int: Integer.parseInt, the raw value is shown
    ("segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "2147483648", "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "1.0", "Invalid value 1.0 for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "0x10", "Invalid value 0x10 for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "1_000", "Invalid value 1_000 for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "", "Invalid value  for configuration segment.bytes: Not a number of type INT"),
    # long: Long.parseLong
    ("retention.ms", "9223372036854775808",
     "Invalid value 9223372036854775808 for configuration retention.ms: Not a number of type LONG"),
    ("retention.ms", "1d", "Invalid value 1d for configuration retention.ms: Not a number of type LONG"),
    # double: Double.parseDouble
    ("min.cleanable.dirty.ratio", "abc",
     "Invalid value abc for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ("min.cleanable.dirty.ratio", "1_0",
     "Invalid value 1_0 for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ("min.cleanable.dirty.ratio", "inf",
     "Invalid value inf for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    # Range (atLeast / between), the parsed value is shown, doubles as Java prints them
    ("segment.bytes", "13", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
    ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("max.message.bytes", "-1", "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"),
    ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ("segment.ms", " 0 ", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
    ("segment.index.bytes", "3", "Invalid value 3 for configuration segment.index.bytes: Value must be at least 4"),
    ("local.retention.ms", "-3", "Invalid value -3 for configuration local.retention.ms: Value must be at least -2"),
    ("min.cleanable.dirty.ratio", "1.5",
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "2",
     "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "-0.1",
     "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
    ("min.cleanable.dirty.ratio", "1e400",
     "Invalid value Infinity for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("compression.lz4.level", "18", "Invalid value 18 for configuration compression.lz4.level: Value must be no more "
                                    "than 17"),
    ("compression.zstd.level", "-131073",
     "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072"),
    # gzip level: [1,...,9] or -1
    ("compression.gzip.level", "0",
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ("compression.gzip.level", "10",
     "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    # ValidString (case-sensitive)
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: "
                                   "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.type", "GZIP", "Invalid value GZIP for configuration compression.type: String must be one of: "
                                 "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: "
                                             "String must be one of: CreateTime, LogAppendTime"),
    # ValidList
    ("cleanup.policy", "compact,bogus",
     "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"),
    ("cleanup.policy", "compact,", "Invalid value  for configuration cleanup.policy: String must be one of: "
                                   "compact, delete"),
    # ThrottledReplicaListValidator
    ("leader.replication.throttled.replicas", "0-1",
     "Invalid value [0-1] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: "
     "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("follower.replication.throttled.replicas", "*,0:1",
     "Invalid value [*, 0:1] for configuration follower.replication.throttled.replicas: "
     "follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: "
     "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    # MetadataVersionValidator
    ("message.format.version", "9.9",
     "Invalid value 9.9 for configuration message.format.version: Version 9.9 is not a valid version"),
    ("message.format.version", "2.8-IV7",
     "Invalid value 2.8-IV7 for configuration message.format.version: Version 2.8-IV7 is not a valid version"),
])
def test_bad_values(key, value, expected):
    assert invalid({key: value}) == expected


def test_null_and_non_string_values():
    assert invalid({"retention.ms": None}) == ("Invalid value null for configuration retention.ms: "
                                               "Value must be non-null")
    assert invalid({"retention.ms": 1000}) == ("Invalid value 1000 for configuration retention.ms: "
                                               "topic config values are strings, got int")


@pytest.mark.parametrize("key, value, normalised", [
    ("preallocate", " False ", "false"),
    ("retention.ms", "-1", "-1"),
    ("retention.ms", "9223372036854775807", "9223372036854775807"),
    ("min.insync.replicas", "+2", "2"),
    ("min.insync.replicas", "002", "2"),
    ("min.cleanable.dirty.ratio", "5e-1", "5e-1"),   # Java parses all of these; the spelling is kept
    ("min.cleanable.dirty.ratio", ".5", ".5"),
    ("min.cleanable.dirty.ratio", "0.5f", "0.5f"),
    ("min.cleanable.dirty.ratio", "0x1p-1", "0x1p-1"),
    ("min.cleanable.dirty.ratio", "1", "1"),
    ("min.cleanable.dirty.ratio", "NaN", "NaN"),     # ConfigDef.Range compares doubles: NaN passes in Kafka too
    ("cleanup.policy", "", ""),                      # an empty list is valid in 1.1 - 3.9
    ("cleanup.policy", "delete ,compact", "delete,compact"),
    ("leader.replication.throttled.replicas", "*", "*"),
    ("leader.replication.throttled.replicas", " * ", "*"),
    ("leader.replication.throttled.replicas", "0:1,,2:3", "0:1,,2:3"),  # an empty entry is tolerated by 3.x
    ("compression.gzip.level", "-1", "-1"),
    ("compression.gzip.level", "9", "9"),
    ("compression.zstd.level", "-131072", "-131072"),
    ("message.format.version", "0.10.0.1", "0.10.0.1"),
    ("message.format.version", "2.8.1", "2.8.1"),
    ("message.format.version", "3.0-IV1", "3.0-IV1"),
    ("message.format.version", "1.0", "1.0"),
    ("segment.bytes", "14", "14"),
])
def test_good_values(key, value, normalised):
    assert validate_topic_config({key: value}) == {key: normalised}


def test_class_and_password_types():
    cls = ConfigDef("x.class", "class", None, "A class.")
    assert cls.normalise(" org.example.Policy ") == "org.example.Policy"
    with pytest.raises(InvalidConfigurationError) as e:
        cls.parse("1bad")
    assert message(e) == "Invalid value 1bad for configuration x.class: Class 1bad could not be found."
    pw = ConfigDef("x.password", "password", None, "A secret.")
    assert pw.normalise(" s3cret ") == "s3cret"
    with pytest.raises(ValueError):
        ConfigDef("x", "float", None, "no such type")


def test_version_gated_keys():
    assert invalid({"compression.zstd.level": "3"}, kafka_version="3.7") == (
        "Unknown topic config name: compression.zstd.level "
        "(compression.zstd.level was added in Kafka 3.8; this cluster runs Kafka 3.7)")
    assert validate_topic_config({"compression.zstd.level": "3"}, kafka_version="3.8") == {"compression.zstd.level": "3"}
    assert invalid({"max.compaction.lag.ms": "1"}, kafka_version="2.2") == (
        "Unknown topic config name: max.compaction.lag.ms "
        "(max.compaction.lag.ms was added in Kafka 2.3; this cluster runs Kafka 2.2)")
    assert invalid({"message.format.version": "3.0"}, kafka_version="4.0") == (
        "Unknown topic config name: message.format.version "
        "(message.format.version was removed in Kafka 4.0; this cluster runs Kafka 4.0)")


def test_version_gated_values():
    assert invalid({"compression.type": "zstd"}, kafka_version="2.0") == (
        "Invalid value zstd for configuration compression.type: String must be one of: "
        "uncompressed, lz4, snappy, gzip, producer")
    assert validate_topic_config({"compression.type": "zstd"}, kafka_version="2.1") == {"compression.type": "zstd"}
    assert invalid({"message.format.version": "2.8"}, kafka_version="2.0") == (
        "Invalid value 2.8 for configuration message.format.version: Version 2.8 is not a valid version")
    assert validate_topic_config({"message.format.version": "2.0"}, kafka_version="2.0.1") == {
        "message.format.version": "2.0"}


def test_cross_field_compaction_lag():
    assert invalid({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) == (
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")
    assert invalid({"max.compaction.lag.ms": "5", "min.compaction.lag.ms": "6"}) == (
        "conflict topic config setting min.compaction.lag.ms (6) > max.compaction.lag.ms (5)")
    # the defaults fill in: max defaults to Long.MAX_VALUE, min to 0
    assert validate_topic_config({"min.compaction.lag.ms": "10"}) == {"min.compaction.lag.ms": "10"}
    assert validate_topic_config({"max.compaction.lag.ms": "1"}) == {"max.compaction.lag.ms": "1"}
    assert validate_topic_config({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"}) == {
        "max.compaction.lag.ms": "5", "min.compaction.lag.ms": "5"}


def test_config_diff_rows():
    current = {"retention.ms": "1000", "cleanup.policy": "compact", "legacy.key": "x"}
    proposed = {"retention.ms": "2000", "cleanup.policy": "compact", "min.insync.replicas": "2"}
    rows = config_diff(current, proposed)
    assert rows == [
        ("legacy.key", "x", None, None),
        ("min.insync.replicas", None, "2", "1"),
        ("retention.ms", "1000", "2000", "604800000"),
    ]
    assert rows[2] == ConfigDiffRow(key="retention.ms", old="1000", new="2000", default="604800000")
    assert rows[1].default == "1"
    assert config_diff(current, current) == []


@pytest.mark.parametrize("x, expected", [
    (0.5, "0.5"), (2.0, "2.0"), (1.0, "1.0"), (0.001, "0.001"), (1e-4, "1.0E-4"), (1e7, "1.0E7"),
    (123456.789, "123456.789"), (-1.5, "-1.5"), (0.0, "0.0"), (-0.0, "-0.0"), (1.5e20, "1.5E20"),
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (9999999.0, "9999999.0"),
])
def test_java_double_str(x, expected):
    assert java_double_str(x) == expected


# =============================================================================================
# Replica assignments (kafka-topics --replica-assignment)
# =============================================================================================


@pytest.mark.parametrize("text, expected", [
    ("1:2,2:3", {0: (1, 2), 1: (2, 3)}),
    ("0", {0: (0,)}),
    (" 1 : 2 ,2:3", {0: (1, 2), 1: (2, 3)}),
    ("1:2,2:3,", {0: (1, 2), 1: (2, 3)}),    # Java's split drops trailing empty strings
    ("1:2:", {0: (1, 2)}),
    ("+1:2", {0: (1, 2)}),                    # Integer.parseInt accepts a sign
])
def test_parse_replica_assignment(text, expected):
    assert parse_replica_assignment(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("1:1", "Partition replica lists may not contain duplicate entries: 1"),
    ("1:2:1:2:3", "Partition replica lists may not contain duplicate entries: 1,2"),
    ("1:2,3", "Partition 1 has different replication factor: [3]"),
    ("1,2:3", "Partition 1 has different replication factor: [2, 3]"),
    ("1,,2", 'Invalid replica assignment "1,,2": partition 1 has a broker id that is not an integer: "" '
             '(expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a partition by ":")'),
    ("a:1", 'Invalid replica assignment "a:1": partition 0 has a broker id that is not an integer: "a" '
            '(expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a partition by ":")'),
    ("2147483648", 'Invalid replica assignment "2147483648": partition 0 has a broker id that is not an integer: '
                   '"2147483648" (expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a partition '
                   'by ":")'),
    ("", 'empty replica assignment: expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a '
         'partition by ":"'),
    (",,", 'empty replica assignment: expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a '
           'partition by ":"'),
])
def test_parse_replica_assignment_errors(text, expected):
    with pytest.raises(InvalidReplicaAssignmentError) as e:
        parse_replica_assignment(text)
    assert message(e) == expected


# =============================================================================================
# draft_create_topic
# =============================================================================================

FIVE_ALIVE_ONE_DEAD = [0, 1, 2, 3, 4, (5, None, False)]
KAFKA_VECTOR_5_BROKERS = {0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1), 5: (0, 2, 3),
                          6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2)}


def test_create_places_over_alive_brokers_like_kafka():
    snap = snapshot(FIVE_ALIVE_ONE_DEAD)
    draft = draft_create_topic(snap, "orders", 10, 3, fixed_start_index=0)
    assert draft.assignment == KAFKA_VECTOR_5_BROKERS
    expected = assign_replicas([(b, None) for b in range(5)], 10, 3, fixed_start_index=0)
    assert draft.assignment == {p: tuple(r) for p, r in expected.items()}
    assert draft.name == "orders" and draft.config == {} and draft.warnings == []
    assert (draft.partitions, draft.replication_factor) == (10, 3)


def test_create_rack_aware_vector():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    snap = snapshot([(b, r) for b, r in racks.items()])
    draft = draft_create_topic(snap, "racked", 7, 3, fixed_start_index=0)
    assert draft.assignment == {0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0),
                                5: (2, 0, 3), 6: (0, 4, 2)}


def test_create_rack_modes():
    snap = snapshot([(0, "r1"), (1, "r2"), (2, None)])
    with pytest.raises(AdminOperationError) as e:
        draft_create_topic(snap, "t", 3, 2, fixed_start_index=0)
    assert message(e) == ("Not all brokers have rack information. Add --disable-rack-aware in command line to make "
                          "replica assignment without rack information.")
    draft = draft_create_topic(snap, "t", 3, 2, rack_mode="disabled", fixed_start_index=0)
    assert draft.assignment == {0: (0, 1), 1: (1, 2), 2: (2, 0)}
    assert draft_create_topic(snap, "t", 3, 2, rack_mode="safe", fixed_start_index=0).assignment == draft.assignment


def test_create_random_placement_is_seeded_and_kafkas():
    snap = snapshot(FIVE_ALIVE_ONE_DEAD)
    a = draft_create_topic(snap, "t", 12, 3, rng=random.Random(7)).assignment
    b = draft_create_topic(snap, "t", 12, 3, rng=random.Random(7)).assignment
    expected = assign_replicas([(i, None) for i in range(5)], 12, 3, rng=random.Random(7))
    assert a == b == {p: tuple(r) for p, r in expected.items()}


def test_create_dead_brokers_do_not_count():
    with pytest.raises(InvalidReplicationFactorError) as e:
        draft_create_topic(snapshot(FIVE_ALIVE_ONE_DEAD), "t", 1, 6)
    assert message(e) == "Replication factor: 6 larger than available brokers: 5."


@pytest.mark.parametrize("assignment", ["0:1:2,1:2:3", {0: [0, 1, 2], 1: (1, 2, 3)}, [[0, 1, 2], [1, 2, 3]]])
def test_create_with_explicit_assignment(assignment):
    draft = draft_create_topic(snapshot(FIVE_ALIVE_ONE_DEAD), "t", replica_assignment=assignment)
    assert draft.assignment == {0: (0, 1, 2), 1: (1, 2, 3)}


@pytest.mark.parametrize("assignment, expected", [
    ({0: [0, 1], 1: [2]}, "All partitions should have the same number of replicas"),
    ({0: [1, 1], 1: [2, 3]}, "Duplicate replica assignment found: {0: [1, 1], 1: [2, 3]}"),
    ({0: [1], 2: [2]}, "partitions should be a consecutive 0-based integer sequence (got partitions [0, 2])"),
    ({1: [1]}, "partitions should be a consecutive 0-based integer sequence (got partitions [1])"),
    ({0: []}, "Cannot have replication factor of 0 for partition id 0."),
    ({}, 'empty replica assignment: expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a '
         'partition by ":"'),
    ("0:12,1:13", "Unknown broker(s) in replica assignment: 12, 13. "
                  "(only brokers registered under /brokers/ids can hold new replicas)"),
    ("0:5", "Unknown broker(s) in replica assignment: 5. "
            "(only brokers registered under /brokers/ids can hold new replicas)"),  # broker 5 is dead
    ("0:0", "Partition replica lists may not contain duplicate entries: 0"),
    ("0:1,2", "Partition 1 has different replication factor: [2]"),
    ({0: ["1"]}, "invalid replica assignment: partition 0 has a broker id that is not an integer: ['1']"),
    ({"0": [1]}, "invalid replica assignment: partition id '0' is not an integer"),
])
def test_create_explicit_assignment_errors(assignment, expected):
    with pytest.raises(InvalidReplicaAssignmentError) as e:
        draft_create_topic(snapshot(FIVE_ALIVE_ONE_DEAD), "t", replica_assignment=assignment)
    assert str(e.value) == expected


def test_create_refuses_assignment_with_partitions_or_rf():
    for kw in ({"partitions": 1}, {"replication_factor": 1}):
        with pytest.raises(InvalidReplicaAssignmentError) as e:
            draft_create_topic(snapshot([0, 1]), "t", replica_assignment="0:1", **kw)
        assert message(e) == ("Both numPartitions or replicationFactor and replicasAssignments were set. "
                              "Both cannot be used at the same time.")


@pytest.mark.parametrize("partitions, rf, error, expected", [
    (3, None, InvalidReplicationFactorError,
     "Missing replication factor: give a replication factor and a number of partitions, or a replica assignment"),
    (None, 2, InvalidPartitionsError,
     "Missing number of partitions: give a number of partitions and a replication factor, or a replica assignment"),
    (3, 0, InvalidReplicationFactorError, "The replication factor must be between 1 and 32767 inclusive"),
    (3, 32768, InvalidReplicationFactorError, "The replication factor must be between 1 and 32767 inclusive"),
    (0, 1, InvalidPartitionsError, "The partitions must be greater than 0"),
    (-1, 1, InvalidPartitionsError, "The partitions must be greater than 0"),
    (2 ** 31, 1, InvalidPartitionsError, "The partitions must be at most 2147483647"),
    ("3", 1, InvalidPartitionsError, "The number of partitions must be an integer, got '3'"),
    (3, 1.0, InvalidReplicationFactorError, "The replication factor must be an integer, got 1.0"),
    (3, 4, InvalidReplicationFactorError, "Replication factor: 4 larger than available brokers: 3."),
])
def test_create_count_errors(partitions, rf, error, expected):
    with pytest.raises(error) as e:
        draft_create_topic(snapshot([0, 1, 2]), "t", partitions, rf)
    assert message(e) == expected


def test_create_name_existence_collision_internal():
    snap = snapshot([0, 1], [topic("a_b", {0: [0]}), topic("old", {0: [1]})], deletion=["old", "gone"])
    with pytest.raises(InvalidTopicError) as e:
        draft_create_topic(snap, "bad name", 1, 1)
    assert message(e).startswith("Topic name is invalid: 'bad name' contains")
    with pytest.raises(TopicExistsError) as e:
        draft_create_topic(snap, "a_b", 1, 1)
    assert message(e) == "Topic 'a_b' already exists."
    with pytest.raises(TopicExistsError) as e:
        draft_create_topic(snap, "old", 1, 1)
    assert message(e) == "Topic 'old' already exists."
    assert "marked for deletion" in str(e.value)
    with pytest.raises(TopicExistsError) as e:
        draft_create_topic(snap, "gone", 1, 1)
    assert message(e) == "Topic 'gone' is still marked for deletion (/admin/delete_topics/gone exists)."
    with pytest.raises(InvalidTopicError) as e:
        draft_create_topic(snap, "a.b", 1, 1)
    assert message(e) == "Topic 'a.b' collides with existing topics: a_b"
    with pytest.raises(AdminOperationError) as e:
        draft_create_topic(snap, "__transaction_state", 1, 1)
    assert str(e.value) == ("Topic __transaction_state is a Kafka internal topic; the brokers create it themselves. "
                            "(Keel does not create internal topics)")


def test_create_validates_and_normalises_config():
    snap = snapshot([0, 1, 2])
    draft = draft_create_topic(snap, "t", 1, 1, {"retention.ms": " 1000", "cleanup.policy": "compact, delete"},
                               fixed_start_index=0)
    assert draft.config == {"cleanup.policy": "compact,delete", "retention.ms": "1000"}
    with pytest.raises(InvalidConfigurationError) as e:
        draft_create_topic(snap, "t", 1, 1, {"segment.bytes": "10"})
    assert message(e) == "Invalid value 10 for configuration segment.bytes: Value must be at least 14"
    with pytest.raises(InvalidConfigurationError) as e:
        draft_create_topic(snap, "t", 1, 1, {"compression.zstd.level": "3"}, kafka_version="3.5")
    assert message(e) == "Unknown topic config name: compression.zstd.level"


def test_create_warnings():
    snap = snapshot([0, 1, 2])
    draft = draft_create_topic(snap, "my.topic", 1, 1, {"message.format.version": "2.8",
                                                        "message.timestamp.difference.max.ms": "1000"},
                               fixed_start_index=0)
    assert draft.warnings == [
        COLLISION_WARNING,
        "WARNING: The configuration message.format.version=2.8 is specified. This configuration will be ignored if "
        "the version is newer than the inter.broker.protocol.version specified in the broker or if the "
        "inter.broker.protocol.version is 3.0 or newer. This configuration is deprecated and it will be removed in "
        "Apache Kafka 4.0.",
        "WARNING: message.timestamp.difference.max.ms is deprecated since Kafka 3.6: use "
        "message.timestamp.before.max.ms and message.timestamp.after.max.ms; removed in Kafka 4.0.",
    ]


def test_create_refused_on_kraft():
    with pytest.raises(KRaftControllerError) as e:
        draft_create_topic(snapshot([0, 1], kraft_epoch=5), "t", 1, 1)
    assert str(e.value) == ("Cannot create topic 't': the cluster is controlled by a KRaft controller "
                            "(kraftControllerEpoch 5), so ZooKeeper writes would be ignored or harmful. "
                            "(use the Kafka admin API, e.g. kafka-topics.sh --bootstrap-server)")


def test_draft_is_frozen():
    draft = draft_create_topic(snapshot([0]), "t", 1, 1)
    with pytest.raises(AttributeError):
        draft.name = "u"


# --- kafka_topics_command --------------------------------------------------------------------


def test_kafka_topics_command():
    draft = draft_create_topic(snapshot(FIVE_ALIVE_ONE_DEAD), "orders", 4, 2,
                               {"retention.ms": "1000", "cleanup.policy": "compact,delete"}, fixed_start_index=0)
    assert kafka_topics_command(draft, "kafka1:9092,kafka2:9092") == (
        "kafka-topics.sh --bootstrap-server kafka1:9092,kafka2:9092 --create --topic orders "
        "--replica-assignment 0:1,1:2,2:3,3:4 --config cleanup.policy=compact,delete --config retention.ms=1000")
    assert kafka_topics_command(draft, "zk1:2181/kafka", zookeeper=True) == (
        "kafka-topics.sh --zookeeper zk1:2181/kafka --create --topic orders "
        "--replica-assignment 0:1,1:2,2:3,3:4 --config cleanup.policy=compact,delete --config retention.ms=1000")


def test_kafka_topics_command_quotes_and_refuses_empty_values():
    draft = draft_create_topic(snapshot([0, 1]), "t", replica_assignment="0:1",
                               config={"leader.replication.throttled.replicas": "*"})
    assert kafka_topics_command(draft, "localhost:9092") == (
        "kafka-topics.sh --bootstrap-server localhost:9092 --create --topic t --replica-assignment 0:1 "
        "--config 'leader.replication.throttled.replicas=*'")
    assert kafka_topics_command(draft, "my host:9092").startswith(
        "kafka-topics.sh --bootstrap-server 'my host:9092' --create")
    empty = draft_create_topic(snapshot([0, 1]), "t", replica_assignment="0:1", config={"cleanup.policy": ""})
    with pytest.raises(ValidationError) as e:
        kafka_topics_command(empty, "localhost:9092")
    assert message(e) == "kafka-topics.sh cannot set cleanup.policy to an empty value with --config"


# =============================================================================================
# draft_add_partitions
# =============================================================================================


def test_add_partitions_kafka_vector_rf4():
    snap = snapshot([0, 1, 2, 3], [topic("t", {0: [2, 3, 0, 1]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA")])
    draft = draft_add_partitions(snap, "t", 7)
    assert draft.new_assignment == {1: (3, 2, 0, 1), 2: (0, 3, 1, 2), 3: (1, 0, 2, 3), 4: (2, 3, 0, 1),
                                    5: (3, 0, 1, 2), 6: (0, 1, 2, 3)}
    assert draft.full_assignment == {0: (2, 3, 0, 1), **draft.new_assignment}
    assert draft.topic_id == "AAAAAAAAAAAAAAAAAAAAAA"
    assert draft.adding_replicas == {} and draft.removing_replicas == {}
    assert draft.warnings == [ADD_PARTITIONS_WARNING]
    assert ADD_PARTITIONS_WARNING == ("WARNING: If partitions are increased for a topic that has a key, the partition "
                                      "logic or ordering of the messages will be affected")
    assert (draft.old_total, draft.new_total) == (1, 7)


def test_add_partitions_kafka_vector_rf2_dead_broker_ignored():
    snap = snapshot([0, 1, 2, 3, (4, None, False)], [topic("t", {0: [1, 2]})])
    draft = draft_add_partitions(snap, "t", 3)
    assert draft.new_assignment == {1: (2, 0), 2: (3, 1)}
    assert draft.full_assignment == {0: (1, 2), 1: (2, 0), 2: (3, 1)}
    assert draft.topic_id is None


@pytest.mark.parametrize("new_total, expected", [
    (2, "Topic already has 2 partitions."),
    (1, "Topic currently has 2 partitions, which is higher than the requested 1."),
    (2 ** 31, "The partitions must be at most 2147483647"),
    (3.0, "The number of partitions must be an integer, got 3.0"),
])
def test_add_partitions_grow_only(new_total, expected):
    snap = snapshot([0, 1], [topic("t", {0: [0, 1], 1: [1, 0]})])
    with pytest.raises(InvalidPartitionsError) as e:
        draft_add_partitions(snap, "t", new_total)
    assert message(e) == expected


def test_add_partitions_refusals():
    snap = snapshot([0, 1], [topic("__consumer_offsets", {0: [0]}), topic("doomed", {0: [0]}),
                             topic("holes", {1: [0, 1]})], deletion=["doomed"])
    with pytest.raises(UnknownTopicError) as e:
        draft_add_partitions(snap, "nope", 3)
    assert message(e) == "Topic 'nope' does not exist as expected"
    with pytest.raises(AdminOperationError) as e:
        draft_add_partitions(snap, "__consumer_offsets", 3)
    assert message(e) == "The number of partitions for the internal topic __consumer_offsets cannot be changed."
    with pytest.raises(InvalidTopicError) as e:
        draft_add_partitions(snap, "doomed", 3)
    assert str(e.value) == "The topic is queued for deletion. (topic 'doomed' is marked for deletion)"
    with pytest.raises(AdminOperationError) as e:
        draft_add_partitions(snap, "holes", 3)
    assert message(e) == ("Unexpected existing replica assignment for topic 'holes', partition id 0 is missing. "
                          "Assignment: {1: [0, 1]}")
    with pytest.raises(KRaftControllerError):
        draft_add_partitions(snapshot([0, 1], [topic("t", {0: [0]})], kraft_epoch=2), "t", 3)


def test_add_partitions_refused_during_reassignment():
    moving = snapshot([0, 1, 2], [topic("t", {0: [0, 1, 2], 1: [1, 2]}, adding={0: [2]}, removing={0: [0]})])
    with pytest.raises(ReassignmentInProgressError) as e:
        draft_add_partitions(moving, "t", 3)
    assert str(e.value) == ("A partition reassignment is in progress for the topic 't'. "
                            "(partitions being reassigned: [0])")
    assert isinstance(e.value, BusyError)
    # a pre-2.4 style reassignment: only /admin/reassign_partitions names the partition
    queued = snapshot([0, 1, 2], [topic("t", {0: [0, 1], 1: [1, 2]}), topic("u", {0: [0, 1]})],
                      reassignment=[TopicPartitionReplicas("t", 1, (2, 0)), TopicPartitionReplicas("u", 0, (1, 2))])
    with pytest.raises(ReassignmentInProgressError) as e:
        draft_add_partitions(queued, "t", 3)
    assert message(e) == "A partition reassignment is in progress for the topic 't'."
    assert e.value.hint == "partitions being reassigned: [1]"


@pytest.mark.parametrize("assignment", [
    "2:3:0:1,3:0:1:2,0:1:2:3",       # kafka-topics: every partition listed, the existing one skipped
    {1: [3, 0, 1, 2], 2: (0, 1, 2, 3)},
    [[3, 0, 1, 2], [0, 1, 2, 3]],
])
def test_add_partitions_with_explicit_assignment(assignment):
    snap = snapshot([0, 1, 2, 3], [topic("t", {0: [2, 3, 0, 1]})])
    draft = draft_add_partitions(snap, "t", 3, replica_assignment=assignment)
    assert draft.new_assignment == {1: (3, 0, 1, 2), 2: (0, 1, 2, 3)}
    assert draft.full_assignment == {0: (2, 3, 0, 1), 1: (3, 0, 1, 2), 2: (0, 1, 2, 3)}


@pytest.mark.parametrize("assignment, expected", [
    ([[12, 0]], "Unknown broker(s) in replica assignment: 12. "
                "(only brokers registered under /brokers/ids can hold new replicas)"),
    ([[4, 0]], "Unknown broker(s) in replica assignment: 4. "
               "(only brokers registered under /brokers/ids can hold new replicas)"),  # broker 4 is dead
    ([[1, 0]], "Increasing the number of partitions by 2 but 1 assignments provided."),
    ("1:0,2:3", "Increasing the number of partitions by 2 but 1 assignments provided."),  # only the new ones listed
    ("1:0", "Increasing the number of partitions by 2 but 0 assignments provided."),
    ([[1, 0], [2]], "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [2] "
                    "have replication factors [1], respectively."),
    ([[1], [2]], "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [1, 2] "
                 "have replication factors [1, 1], respectively."),
    ([[1, 1], [2, 3]], "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 1."),
    ([[1, 0], []], "Cannot have replication factor of 0 for partition id 2."),
    ({1: [1, 0], 5: [2, 3]}, "the new partitions are [1, 2], the assignment gives partitions [1, 5]"),
    ("1:0,2:3,3", "Partition 2 has different replication factor: [3]"),
])
def test_add_partitions_explicit_assignment_errors(assignment, expected):
    snap = snapshot([0, 1, 2, 3, (4, None, False)], [topic("t", {0: [1, 2]})])
    with pytest.raises(InvalidReplicaAssignmentError) as e:
        draft_add_partitions(snap, "t", 3, replica_assignment=assignment)
    assert str(e.value) == expected


def test_add_partitions_uses_enforced_rack_mode():
    snap = snapshot([(0, "r1"), (1, "r2"), (2, None)], [topic("t", {0: [0, 1]})])
    with pytest.raises(AdminOperationError) as e:
        draft_add_partitions(snap, "t", 2)
    assert message(e).startswith("Not all brokers have rack information.")


# =============================================================================================
# draft_alter_config
# =============================================================================================


def alter_snapshot():
    return snapshot([0, 1], [
        topic("t", {0: [0, 1]}, config={"retention.ms": "1000", "cleanup.policy": "compact",
                                         "max.compaction.lag.ms": "100", "legacy.key": "x"}),
        topic("__consumer_offsets", {0: [0]}, config={"cleanup.policy": "compact"}),
        topic("oldish", {0: [0]}, config={"flush.messages": "0", "max.compaction.lag.ms": "nonsense"}),
    ])


def test_alter_config_set_and_delete():
    draft = draft_alter_config(alter_snapshot(), "t", {"retention.ms": " 2000 ", "min.insync.replicas": "2"},
                               ["cleanup.policy"])
    assert draft.name == "t"
    assert draft.old == {"cleanup.policy": "compact", "legacy.key": "x", "max.compaction.lag.ms": "100",
                         "retention.ms": "1000"}
    assert draft.new == {"legacy.key": "x", "max.compaction.lag.ms": "100", "min.insync.replicas": "2",
                         "retention.ms": "2000"}
    assert draft.diff == [
        ConfigDiffRow("cleanup.policy", "compact", None, "delete"),
        ConfigDiffRow("min.insync.replicas", None, "2", "1"),
        ConfigDiffRow("retention.ms", "1000", "2000", "604800000"),
    ]
    assert draft.changed and draft.warnings == []


def test_alter_config_no_change():
    draft = draft_alter_config(alter_snapshot(), "t", {"retention.ms": "1000"})
    assert draft.diff == [] and not draft.changed and draft.new == draft.old


def test_alter_config_delete_rules():
    snap = alter_snapshot()
    draft = draft_alter_config(snap, "t", delete=["legacy.key"])  # an unknown key that is set may be removed
    assert draft.diff == [ConfigDiffRow("legacy.key", "x", None, None)]
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", delete=["segment.ms", "flush.ms"])
    assert str(e.value) == "Invalid config(s): segment.ms,flush.ms (not set on topic 't')"
    assert e.value.key == "segment.ms"
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", delete=["segment.ms", "foo"])
    assert message(e) == "Unknown topic config name: foo"
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", {"retention.ms": "5"}, ["retention.ms"])
    assert message(e) == "Cannot both set and delete config(s): retention.ms"


def test_alter_config_validates_set_values():
    snap = alter_snapshot()
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", {"foo": "1"})
    assert message(e) == "Unknown topic config name: foo"
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", {"min.insync.replicas": "0"})
    assert message(e) == "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", {"compression.gzip.level": "5"}, kafka_version="3.7")
    assert message(e) == "Unknown topic config name: compression.gzip.level"


def test_alter_config_cross_field_uses_the_existing_values():
    snap = alter_snapshot()
    with pytest.raises(InvalidConfigurationError) as e:
        draft_alter_config(snap, "t", {"min.compaction.lag.ms": "500"})
    assert message(e) == "conflict topic config setting min.compaction.lag.ms (500) > max.compaction.lag.ms (100)"
    draft = draft_alter_config(snap, "t", {"min.compaction.lag.ms": "500"}, ["max.compaction.lag.ms"])
    assert draft.new["min.compaction.lag.ms"] == "500" and "max.compaction.lag.ms" not in draft.new


def test_alter_config_does_not_revalidate_untouched_values():
    draft = draft_alter_config(alter_snapshot(), "oldish", {"retention.ms": "1", "min.compaction.lag.ms": "5"})
    assert draft.new == {"flush.messages": "0", "max.compaction.lag.ms": "nonsense", "min.compaction.lag.ms": "5",
                         "retention.ms": "1"}


def test_alter_config_of_internal_topic_is_allowed_and_warnings():
    draft = draft_alter_config(alter_snapshot(), "__consumer_offsets", {"message.format.version": "2.8"})
    assert draft.diff == [ConfigDiffRow("message.format.version", None, "2.8", "3.0-IV1")]
    assert draft.warnings[0].startswith("WARNING: The configuration message.format.version=2.8 is specified.")


def test_alter_config_refusals():
    with pytest.raises(UnknownTopicError) as e:
        draft_alter_config(alter_snapshot(), "nope", {"retention.ms": "1"})
    assert message(e) == "Topic 'nope' does not exist."
    with pytest.raises(InvalidTopicError):
        draft_alter_config(alter_snapshot(), "", {"retention.ms": "1"})
    with pytest.raises(KRaftControllerError) as e:
        draft_alter_config(snapshot([0], [topic("t", {0: [0]})], kraft_epoch=1), "t", {"retention.ms": "1"})
    assert message(e).startswith("Cannot alter the config of topic 't': the cluster is controlled by a KRaft")


# =============================================================================================
# draft_delete_topic
# =============================================================================================


def test_delete_topic_draft():
    snap = snapshot([0, 1, 2], [topic("t", {0: [0, 1, 2], 1: [1, 2, 0]}, topic_id="id-1")])
    draft = draft_delete_topic(snap, "t")
    assert draft.name == "t" and draft.partitions == 2 and draft.replicas == 6 and draft.topic_id == "id-1"
    assert draft.warnings == [DELETE_NOTE]
    assert DELETE_NOTE == "Note: This will have no impact if delete.topic.enable is not set to true."


def test_delete_topic_refusals():
    snap = snapshot([0, 1], [topic("__consumer_offsets", {0: [0]}), topic("__transaction_state", {0: [0]}),
                             topic("doomed", {0: [0]})], deletion=["doomed"])
    with pytest.raises(UnknownTopicError) as e:
        draft_delete_topic(snap, "nope")
    assert message(e) == "Topic 'nope' does not exist as expected"
    for internal in ("__consumer_offsets", "__transaction_state"):
        with pytest.raises(AdminOperationError) as e:
            draft_delete_topic(snap, internal)
        assert message(e) == f"Topic {internal} is a kafka internal topic and is not allowed to be marked for deletion."
    with pytest.raises(BusyError) as e:
        draft_delete_topic(snap, "doomed")
    assert message(e) == "Topic doomed is already marked for deletion."
    with pytest.raises(KRaftControllerError) as e:
        draft_delete_topic(snapshot([0], [topic("t", {0: [0]})], kraft_epoch=9), "t")
    assert message(e).startswith("Cannot delete topic 't': the cluster is controlled by a KRaft controller "
                                 "(kraftControllerEpoch 9)")


def test_non_kraft_controller_v2_with_zero_epoch_is_fine():
    snap = snapshot([0], [topic("t", {0: [0]})], kraft_epoch=0)
    assert draft_delete_topic(snap, "t").partitions == 1
