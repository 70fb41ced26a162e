"""The Admin API's write requests for topics and preferred elections (core.kafka.topic_writes, election_writes):
methods of `core.kafka.admin.KafkaAdmin`, kept here so that admin.py stays readable.

Each returns Kafka's refusal as a `KafkaRefusal`, (error name, Kafka's message), e.g. ("TOPIC_ALREADY_EXISTS",
"Topic 'x' already exists."), or None when Kafka accepted. What goes wrong on the way (no answer, credentials)
raises as every other request of KafkaAdmin does. `validate_only`: Kafka checks the request as it would carry it
out (the controller's own checks and policies) and changes nothing.
"""

from __future__ import annotations

import uuid
from typing import Iterable, Mapping, Sequence

import kafka.errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

KafkaRefusal = tuple[str, str]
TopicPartition = tuple[str, int]
# Kafka's own names (Errors.java) where kafka-python spells them otherwise
_KAFKA_NAMES = {17: "INVALID_TOPIC_EXCEPTION", 39: "INVALID_REPLICA_ASSIGNMENT"}
NOT_NEEDED = "ELECTION_NOT_NEEDED"  # the preferred replica leads already: nothing to do, not an error
TIMED_OUT = "REQUEST_TIMED_OUT"  # the controller did not finish in time: the write may still happen


class WriteRequests:
    """Mixed into KafkaAdmin, whose `_admin`, `timeout`, `_translate` and `_to_controller` these use."""

    def _server_ms(self) -> int:
        # The controller's own wait is shorter than the client's, so that a slow controller's REQUEST_TIMED_OUT
        # comes back rather than a client timeout that says nothing.
        return max(int(self.timeout * 800), 1000)

    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str], *,
                     validate_only: bool = False) -> KafkaRefusal | None:
        """CreateTopics with the explicit replica assignment (KRaft's own placement is random) and the overrides."""
        request = {name: {"assignments": {int(p): [int(b) for b in reps] for p, reps in sorted(assignment.items())},
                          "configs": {str(k): str(v) for k, v in config.items()}}}
        with self._translate(f"create topic {name}"):
            answer = self._to_controller(lambda: self._admin.create_topics(
                request, timeout_ms=self._server_ms(), validate_only=validate_only, raise_errors=False),
                resend=validate_only)  # sent twice, a create would find what it created: not resent
        return refusal_of(answer.get("topics") or (), name)

    def create_partitions(self, name: str, total: int, new_assignment: Sequence[Sequence[int]], *,
                          validate_only: bool = False) -> KafkaRefusal | None:
        """CreatePartitions growing `name` to `total`, the new partitions on `new_assignment` (in partition order).
        Kafka refuses it when the topic no longer has total - len(new_assignment) partitions: INVALID_PARTITIONS when
        it has `total` or more, INVALID_REPLICA_ASSIGNMENT when the assignments no longer match the partitions to add."""
        request = {name: {"count": int(total), "assignments": [[int(b) for b in reps] for reps in new_assignment]}}
        with self._translate(f"add partitions to topic {name}"):
            answer = self._to_controller(lambda: self._admin.create_partitions(
                request, timeout_ms=self._server_ms(), validate_only=validate_only, raise_errors=False),
                resend=validate_only)  # sent twice, a create would find what it created: not resent
        return refusal_of(answer.results, name)

    def alter_topic_config(self, name: str, changes: Mapping[str, str | None], *,
                           validate_only: bool = False) -> KafkaRefusal | None:
        """IncrementalAlterConfigs of the topic's `changes` only ({key: value to SET, or None to DELETE}): a key not
        named keeps whatever it holds at that moment, whoever set it. (kafka-python's alter_configs answers a
        refusal as text without its code: the request is sent here.)"""
        ops = {str(k): ("SET", str(v)) if v is not None else ("DELETE", None) for k, v in changes.items()}
        request = KafkaAdminClient._alter_configs_request([ConfigResource(ConfigResourceType.TOPIC, name, ops)],
                                                          validate_only=validate_only, incremental=True)
        manager = self._admin._manager

        async def send():
            return await manager.wait_for(manager.send(request), int(self.timeout * 1000))

        with self._translate(f"alter the config of topic {name}"):
            answer = manager.run(send)
        return refusal_of(({"name": r.resource_name, "error_code": r.error_code, "error_message": r.error_message}
                           for r in answer.responses), name)

    def delete_topic(self, name: str, topic_id: uuid.UUID | None = None) -> KafkaRefusal | None:
        """DeleteTopics of `name`, or with `topic_id` of the topic with that id only (UNKNOWN_TOPIC_ID when the topic
        of that name is another one now)."""
        with self._translate(f"delete topic {name}"):
            answer = self._to_controller(lambda: self._admin.delete_topics(
                [topic_id or name], timeout_ms=self._server_ms(), raise_errors=False), resend=False)  # not resent: see _to_controller
        rows = list(answer.get("topics") or ())
        if topic_id is not None and len(rows) == 1:  # by id: a refused row may not carry the name
            return refusal(rows[0].get("error_code"), rows[0].get("error_message"))
        return refusal_of(rows, name)

    def elect_preferred(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, KafkaRefusal | None]:
        """ElectLeaders (PREFERRED) of `partitions`: {partition: None when its preferred replica leads (elected now,
        or already: ELECTION_NOT_NEEDED), else Kafka's refusal for it}; a refusal of the whole request (e.g.
        CLUSTER_AUTHORIZATION_FAILED) is every partition's."""
        keys = sorted({(str(t), int(p)) for t, p in partitions})
        if not keys:
            return {}
        by_topic: dict[str, list[int]] = {}
        for t, p in keys:
            by_topic.setdefault(t, []).append(p)
        with self._translate("elect the preferred leaders"):
            answer = self._to_controller(lambda: self._admin.elect_leaders(
                0, by_topic, timeout_ms=self._server_ms(), raise_errors=False))  # 0: ElectionType.PREFERRED
        whole = refusal(getattr(answer, "error_code", 0), None)
        got: dict[TopicPartition, KafkaRefusal | None] = {}
        for result in answer.replica_election_results:
            for p in result.partition_result:
                refused = refusal(p.error_code, p.error_message)
                got[(result.topic, int(p.partition_id))] = None if refused and refused[0] == NOT_NEEDED else refused
        missing = ("UNKNOWN", "the controller did not answer for this partition")
        return {k: whole or (got[k] if k in got else missing) for k in keys}


def refusal(code: object, message: object) -> KafkaRefusal | None:
    """(Kafka's error name, Kafka's message, else the error's description) for a non-zero error code."""
    code = int(code or 0)
    if code == 0:
        return None
    cls = kerrors.for_code(code)
    name = _KAFKA_NAMES.get(code) or (getattr(cls, "message", None) if cls.__name__ != "UnrecognizedBrokerError"
                                      else None)
    name = str(name or f"ERROR_{code}")  # an error code newer than kafka-python: its number
    return name, str(message or getattr(cls, "description", "") or name)


def refusal_of(rows: Iterable, name: str) -> KafkaRefusal | None:
    """The refusal for topic `name` among a response's per-topic rows (dicts, or kafka-python's records)."""
    for row in rows:
        get = row.get if isinstance(row, Mapping) else (lambda k, r=row: getattr(r, k, None))
        if get("name") == name:
            return refusal(get("error_code"), get("error_message"))
    return "UNKNOWN", f"Kafka's answer did not mention topic {name}"
