"""Apply topic drafts through the brokers' Admin API (KRaft clusters): create, add partitions, alter config, delete.

The ZooKeeper engine's twin (core.zk.topic_admin): same functions, arguments, results and audit rows. The Admin
API has no compare-and-set, so every apply re-reads the cluster right before writing and re-computes the draft
against it with the same pure functions (a preview made minutes ago cannot write something the cluster no longer
allows), asks Kafka to validate the request first (validate_only: the controller's own checks and policies, nothing
changed), records the action, sends the request and finishes the record with Kafka's answer. What is sent is
exactly what was previewed:
- CreateTopics carries the explicit replica assignment (KRaft's own placement is random) and the overrides;
- CreatePartitions carries the new partitions' replicas and the new total, which Kafka refuses if the topic no
  longer has the count the draft was made for;
- IncrementalAlterConfigs carries only the changed keys (SET / DELETE): two edits of different keys made from the
  same read both survive, where a whole-config write would undo the first;
- DeleteTopics names the topic by the id that was read, so a topic deleted and re-created meanwhile is not deleted.
Kafka's refusals become the typed errors the ZooKeeper engine raises, in Kafka's words.
"""

from __future__ import annotations

import base64
import uuid
from functools import partial
from typing import Callable, Iterable, Mapping, Sequence

from core.audit.store import Store
from core.errors import (
    AdminOperationError,
    BusyError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KeelError,
    ReassignmentInProgressError,
    TopicExistsError,
    UnknownTopicError,
    ValidationError,
)
from core.kafka.admin import KafkaAdmin, KafkaAdminError, KafkaUnreachableError
from core.kafka.metadata import read_snapshot, topic_config_problem
from core.kafka.write_requests import TIMED_OUT, KafkaRefusal
from core.model import ClusterSnapshot
from core.topics import (
    AddPartitionsDraft,
    CreateTopicDraft,
    redraft_add_partitions,
    draft_alter_config,
    draft_create_topic,
    draft_delete_topic,
    require_accepted,
)
from core.writes import Applied, changed_meanwhile  # noqa: F401  (Applied re-exported)

# Kafka's error names (Errors.java) -> the typed error the ZooKeeper engine raises for the same refusal.
ERRORS: dict[str, type[KeelError]] = {
    "TOPIC_ALREADY_EXISTS": TopicExistsError,
    "INVALID_TOPIC_EXCEPTION": InvalidTopicError,  # illegal names, collisions ('.' vs '_'), internal topics
    "INVALID_PARTITIONS": InvalidPartitionsError,
    "INVALID_REPLICATION_FACTOR": InvalidReplicationFactorError,
    "INVALID_REPLICA_ASSIGNMENT": InvalidReplicaAssignmentError,
    "INVALID_CONFIG": InvalidConfigurationError,
    "POLICY_VIOLATION": ValidationError,
    "INVALID_REQUEST": ValidationError,
    "UNKNOWN_TOPIC_OR_PARTITION": UnknownTopicError,
    "UNKNOWN_TOPIC_ID": UnknownTopicError,
    "TOPIC_DELETION_DISABLED": AdminOperationError,
    "REASSIGNMENT_IN_PROGRESS": ReassignmentInProgressError,
    "THROTTLING_QUOTA_EXCEEDED": BusyError,
    "PREFERRED_LEADER_NOT_AVAILABLE": ValidationError,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": ValidationError,
}
_HINTS = {
    "POLICY_VIOLATION": "the brokers' create.topic.policy.class.name / alter.config.policy.class.name refused it",
    "TOPIC_DELETION_DISABLED": "the brokers run with delete.topic.enable=false",
    "THROTTLING_QUOTA_EXCEEDED": "the controller mutation quota of Keel's principal is used up: try again shortly",
}


class KafkaWriteOutcomeUnknownError(KafkaAdminError):
    """A write request was sent but no answer came in time: Kafka may or may not carry it out."""


def refusal_error(refused: KafkaRefusal) -> KeelError:
    """Kafka's refusal (error name, Kafka's message) as the typed error the ZooKeeper engine raises for it, with
    Kafka's own message; an error Keel has no type for is a KafkaAdminError naming Kafka's error."""
    code, message = refused
    cls = ERRORS.get(code)
    if cls is None:
        return KafkaAdminError(f"Kafka refused it: {code}: {message}", hint=_HINTS.get(code))
    return cls(message, hint=_HINTS.get(code))


def unknown_outcome(what: str, cause: str, check: str) -> str:
    """The audit result (and error message) of a write whose answer never came."""
    return f"the outcome of {what} is unknown: no answer in time ({cause}); it may still be carried out. Check with {check}"


def live_state(admin: KafkaAdmin) -> ClusterSnapshot:
    """Brokers, topics with their settings, and the running reassignments, as they are now."""
    return read_snapshot(admin)


def refuse_unreadable(snapshot: ClusterSnapshot, name: str, action: str, *, config: bool = False) -> None:
    """Refuse a write that depends on what the brokers could not describe: the topic itself (it is then missing from
    the snapshot, and "does not exist" would be wrong), and with `config` its settings (an edit computed from
    unknown settings could undo what they hold)."""
    wanted = {f"topic {name}", *([topic_config_problem(name)] if config else [])}
    found = [p for p in snapshot.problems if p.path in wanted]
    if found:
        raise KafkaAdminError(f"the brokers did not describe {found[0].path} ({found[0].error}); refusing to {action}, "
                              "which depends on it: nothing was written", hint="try again in a moment")


def _validate(send: Callable[..., KafkaRefusal | None], what: str) -> None:
    """Kafka's validate_only pass: a refusal raises its typed error; nothing is written or recorded."""
    refused = send(validate_only=True)
    if refused is None:
        return
    if refused[0] == TIMED_OUT:
        raise KafkaAdminError(f"Kafka did not validate {what} in time ({refused[1]}): nothing was written",
                              hint="try again; check the controller quorum (python -m core describe --quorum)")
    raise refusal_error(refused)


def _send(store: Store, action_id: int, send: Callable[[], KafkaRefusal | None], summary: str,
          written: tuple[str, ...], *, what: str, check: str) -> Applied:
    """Send the write, finish its record with Kafka's answer, raise on a refusal."""
    try:
        refused = send()
    except KafkaUnreachableError as e:  # sent or not, carried out or not: nobody knows
        message = unknown_outcome(what, str(e), check)
        store.finish(action_id, ok=False, result=message)
        raise KafkaWriteOutcomeUnknownError(message) from None
    except KeelError as e:
        store.finish(action_id, ok=False, result=str(e))
        raise
    if refused is not None and refused[0] == TIMED_OUT:
        message = unknown_outcome(what, f"{refused[0]}: {refused[1]}", check)
        store.finish(action_id, ok=False, result=message)
        raise KafkaWriteOutcomeUnknownError(message)
    if refused is not None:
        error = refusal_error(refused)
        store.finish(action_id, ok=False, result=str(error))
        raise error
    store.finish(action_id, ok=True, result=summary)
    return Applied(action_id, summary, written)


def _describe_check(name: str) -> str:
    return f"python -m core describe --bootstrap-server HOST:PORT --topic {name} (or kafka-topics.sh --describe)"


def _assignment_json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(reps) for p, reps in sorted(assignment.items())}


# --- create ----------------------------------------------------------------------------------


def create_topic(admin: KafkaAdmin, store: Store, draft: CreateTopicDraft, *, cluster: str,
                 actor: str | None = None, accept_risks: bool | Sequence[str] = False, defaults=None) -> Applied:
    """Create the draft's exact placement (re-validated as an explicit assignment against live state).

    `accept_risks`: True, or the exact risk texts the operator confirmed (see CreateTopicDraft.risks); `defaults`:
    the brokers' own settings the draft was checked with (core.broker_defaults), so the risks re-checked match."""
    snap = live_state(admin)
    refuse_unreadable(snap, draft.name, f"create topic {draft.name}")
    checked = draft_create_topic(snap, draft.name, config=draft.config, replica_assignment=draft.assignment,
                                 defaults=defaults)
    require_accepted(checked.risks, accept_risks)
    send = partial(admin.create_topic, checked.name, checked.assignment, checked.config)
    _validate(send, f"the creation of topic {checked.name}")
    summary = (f"created topic {checked.name}: {checked.partitions} partitions, replication factor "
               f"{checked.replication_factor}" + (f", {len(checked.config)} config overrides" if checked.config else ""))
    payload = [{"request": "CreateTopics", "topic": checked.name, "assignment": _assignment_json(checked.assignment),
                "config": dict(checked.config)}]
    action = store.begin(cluster=cluster, kind="create-topic", target=checked.name, summary=summary, payload=payload,
                         rollback={"action": "delete-topic", "topic": checked.name}, actor=actor)
    return _send(store, action, send, summary, (f"CreateTopics {checked.name}",),
                 what=f"the creation of topic {checked.name}", check=_describe_check(checked.name))


# --- add partitions ----------------------------------------------------------------------------


def add_partitions(admin: KafkaAdmin, store: Store, draft: AddPartitionsDraft, *, cluster: str,
                   actor: str | None = None) -> Applied:
    snap = live_state(admin)
    refuse_unreadable(snap, draft.name, f"add partitions to topic {draft.name}")
    checked, summary = redraft_add_partitions(snap, draft)
    new = [checked.new_assignment[p] for p in sorted(checked.new_assignment)]
    # Kafka refuses the request itself if the topic no longer has old_total partitions when it arrives.
    send = partial(admin.create_partitions, draft.name, checked.new_total, new)
    _validate(send, f"the new partitions of topic {draft.name}")
    payload = [{"request": "CreatePartitions", "topic": draft.name, "total": checked.new_total,
                "assignment": _assignment_json(checked.new_assignment)}]
    action = store.begin(cluster=cluster, kind="add-partitions", target=draft.name, summary=summary, payload=payload,
                         rollback={"action": "none", "reason": "Kafka cannot remove partitions from a topic"},
                         actor=actor)
    return _send(store, action, send, summary, (f"CreatePartitions {draft.name}",),
                 what=f"adding partitions to topic {draft.name}", check=_describe_check(draft.name))


# --- alter config --------------------------------------------------------------------------------


def alter_config(admin: KafkaAdmin, store: Store, name: str, set: Mapping[str, str] | None = None,
                 delete: Iterable[str] = (), *, cluster: str, actor: str | None = None,
                 accept_risks: bool | Sequence[str] = False, defaults=None) -> Applied:
    """kafka-configs --alter through IncrementalAlterConfigs: only the keys that change, one SET or DELETE each, so
    a concurrent edit of another key survives. `defaults`: as for create_topic."""
    snap = live_state(admin)
    refuse_unreadable(snap, name, f"alter the config of topic {name}", config=True)
    draft = draft_alter_config(snap, name, set=set, delete=delete, defaults=defaults)
    if not draft.changed:
        raise ValidationError(f"nothing to change: topic {name} already has that configuration")
    require_accepted(draft.risks, accept_risks)
    changes = {r.key: r.new for r in draft.diff}  # None: DELETE (back to the broker's default)
    send = partial(admin.alter_topic_config, name, changes)
    _validate(send, f"the config change of topic {name}")
    shown = ", ".join(f"{r.key}={r.new}" if r.new is not None else f"-{r.key}" for r in draft.diff)
    summary = f"altered config of {name}: {shown}"
    payload = [{"request": "IncrementalAlterConfigs", "topic": name,
                "set": {k: v for k, v in changes.items() if v is not None},
                "delete": sorted(k for k, v in changes.items() if v is None)}]
    action = store.begin(cluster=cluster, kind="alter-config", target=name, summary=summary, payload=payload,
                         rollback={"action": "alter-config", "topic": name, "config": draft.old}, actor=actor)
    return _send(store, action, send, summary, (f"IncrementalAlterConfigs {name}",),
                 what=f"the config change of topic {name}",
                 check=f"kafka-configs.sh --bootstrap-server HOST:PORT --describe --entity-type topics "
                       f"--entity-name {name}")


# --- delete ----------------------------------------------------------------------------------


def kafka_uuid(topic_id: str) -> uuid.UUID:
    """A topic id as Kafka prints it (url-safe base64 of 16 bytes, no padding) as the UUID the request carries."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def delete_topic(admin: KafkaAdmin, store: Store, name: str, *, cluster: str,
                 actor: str | None = None) -> Applied:
    snap = live_state(admin)
    refuse_unreadable(snap, name, f"delete topic {name}")
    draft = draft_delete_topic(snap, name)
    # By the id that was read: a topic of the same name created since is another topic (UNKNOWN_TOPIC_ID).
    topic_id = kafka_uuid(draft.topic_id) if draft.topic_id else None
    summary = f"deleted topic {name} ({draft.partitions} partitions, {draft.replicas} replicas)"
    payload = [{"request": "DeleteTopics", "topic": name, "topic_id": draft.topic_id}]
    action = store.begin(cluster=cluster, kind="delete-topic", target=name, summary=summary, payload=payload,
                         rollback={"action": "none", "reason": "a deleted topic's data cannot be restored"},
                         actor=actor)

    def send() -> KafkaRefusal | None:
        refused = admin.delete_topic(name, topic_id)
        if refused is not None and refused[0] in ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION"):
            return refused[0], changed_meanwhile(f"Topic {name}") + f" (Kafka: {refused[1]})"
        return refused

    return _send(store, action, send, summary, (f"DeleteTopics {name}",),
                 what=f"the deletion of topic {name}", check=_describe_check(name))
