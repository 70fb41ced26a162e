"""Kafka's topic rules, split by subject. Pure: no I/O, no kazoo, streamlit or pyspark.

- `names`      topic-name rules and existence checks (Topic.java, AdminZkClient)
- `configdef`  the topic-config schema and Kafka's value parsing and validators (LogConfig, ConfigDef)
- `drafts`     what a create / add-partitions / alter-config / delete would write, its warnings and risks

Everything public is re-exported here, so `from core.topics import draft_create_topic` keeps working.
"""

from __future__ import annotations

from core.topics.names import (  # noqa: F401
    ADD_PARTITIONS_WARNING,
    COLLISION_WARNING,
    DELETE_NOTE,
    GROUP_METADATA_TOPIC_NAME,
    INTERNAL_TOPICS,
    MAX_NAME_LENGTH,
    TRANSACTION_STATE_TOPIC_NAME,
    check_collision,
    check_not_exists,
    collision_warning,
    has_collision_chars,
    is_internal,
    unify_collision_chars,
    validate_topic_name,
)
from core.topics.configdef import (  # noqa: F401
    CONFIG_TYPES,
    ConfigDef,
    ConfigDiffRow,
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    LevelOrDefault,
    MetadataVersionValidator,
    Range,
    SHORT_MAX,
    TOPIC_CONFIGS,
    ThrottledReplicas,
    ValidList,
    ValidString,
    Validator,
    Version,
    config_diff,
    java_double_str,
    parse_kafka_version,
    validate_topic_config,
)
from core.topics.drafts import (  # noqa: F401
    AddPartitionsDraft,
    AlterConfigDraft,
    Assignment,
    CreateTopicDraft,
    DeleteTopicDraft,
    MAX_NEW_PARTITIONS,
    MAX_TOPIC_ZNODE_BYTES,
    check_topic_znode_size,
    draft_add_partitions,
    redraft_add_partitions,
    draft_alter_config,
    draft_create_topic,
    draft_delete_topic,
    effective_min_isr,
    kafka_topics_command,
    parse_replica_assignment,
    require_accepted,
    unwritable_risk,
)
