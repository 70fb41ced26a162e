"""Kafka's topic-name rules, with its messages (clients/.../common/internals/Topic.java, Kafka 1.1 - 3.9:
`validate`, `hasCollisionChars`, `unifyCollisionChars`, `isInternal`; 4.x reworded the messages), and the
existence checks of `AdminZkClient.validateTopicCreate`. Pure.
"""

from __future__ import annotations

import re
from typing import Iterable

from core.errors import (
    InvalidTopicError,
    TopicExistsError,
)


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
    """`Topic.validate`, with Kafka 3.9's messages ("Topic name is invalid: ..."; older releases said
    "Topic name is illegal, ..."), as InvalidTopicError. Checked against a real Kafka 3.9 broker in tests/kafka."""
    if not isinstance(name, str):
        raise InvalidTopicError(f"Topic name must be a string, got {type(name).__name__}")
    if not name:
        raise InvalidTopicError("Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name is invalid: '{name}' is not allowed")
    # Java's String.length() counts UTF-16 code units.
    if len(name.encode("utf-16-le")) // 2 > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
                                f"length {MAX_NAME_LENGTH}")
    if not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(f"Topic name is invalid: '{name}' contains one or more characters other than "
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


