"""kafka-topics' replica-assignment strings ("1:2,2:3") and the other shapes a draft's explicit replica assignment
may take, parsed and checked with Kafka's own messages (`TopicCommand.parseReplicaAssignment`). Pure."""

from __future__ import annotations

from typing import Mapping, Sequence

from core.errors import InvalidReplicaAssignmentError
from core.numbers import clip
from core.topics.configdef import INT_MAX, INT_MIN, _java_int, _java_list_str, _java_trim

Assignment = dict[int, tuple[int, ...]]


ASSIGNMENT_USAGE = 'expected e.g. "1:2,2:3": partitions separated by ",", the replicas of a partition by ":"'


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
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {ASSIGNMENT_USAGE}")
    result: Assignment = {}
    for i, entry in enumerate(_java_split(text, ",")):
        brokers = []
        for token in _java_split(entry, ":"):
            broker = _java_int(_java_trim(token), INT_MIN, INT_MAX)
            if broker is None:
                raise InvalidReplicaAssignmentError(
                    f'Invalid replica assignment "{clip(text)}": partition {i} has a broker id that is not an '
                    f'integer: "{clip(_java_trim(token))}" ({ASSIGNMENT_USAGE})')
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
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {ASSIGNMENT_USAGE}")
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
