"""Consumer-group offset writes through the brokers' Admin API (any cluster: ZooKeeper mode with bootstrap, KRaft):
reset offsets as `kafka-consumer-groups --reset-offsets` does (core.offset_reset decides the offsets), delete a
group's offsets for topics (OffsetDelete, KIP-496), delete an empty group (DeleteGroups), and undo any of them from
the offsets the audit recorded before the write.

Every write re-reads the group right before writing (its state, committed offsets, the partitions' offsets) and
re-plans with the same pure functions: a dry run made minutes ago never writes offsets computed from what has changed
since. It is recorded (pending) with the previous offsets as its rollback, sent, and finished with Kafka's answer.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping, Sequence

import kafka.errors as kerrors
from kafka import TopicPartition as _TP
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from core.audit.store import Store
from core.errors import ValidationError
from core.kafka.admin import KafkaAdmin, KafkaAdminError
from core.offset_reset import (
    Offsets,
    ResetPlan,
    ResetSpec,
    partitions_in_scope,
    plan_reset,
    require_inactive,
    rollback_of,
    undo_offsets,
)
from core.writes import Applied

TP = tuple[str, int]


# --- reads -------------------------------------------------------------------------------------------------------


def group_state(admin: KafkaAdmin, group: str) -> tuple[str, int]:
    """(state as Kafka names it, number of members)."""
    with admin._translate(f"describe consumer group '{group}'"):
        d = (admin._admin.describe_groups([group]) or {}).get(group) or {}
    return str(d.get("group_state") or "Unknown"), len(d.get("members") or ())


def committed_offsets(admin: KafkaAdmin, group: str) -> dict[TP, int]:
    with admin._translate(f"fetch the committed offsets of consumer group '{group}'"):
        got = admin._admin.list_group_offsets({group: None}).get(group, {})
    return {(tp.topic, tp.partition): om.offset for tp, om in got.items() if om is not None and om.offset >= 0}


def partition_counts(admin: KafkaAdmin, topics: Iterable[str]) -> dict[str, int]:
    """{topic: partitions} of the topics that exist."""
    names = sorted(set(topics))
    if not names:
        return {}
    out = {}
    for t in admin.topic_partitions(names):
        if not int(t.get("error_code") or 0) and t.get("partitions"):
            out[str(t["name"])] = len(t["partitions"])
    return out


def list_offsets(admin: KafkaAdmin, partitions: Sequence[TP], spec) -> dict[TP, int | None]:
    """ListOffsets of `partitions` (OffsetSpec.EARLIEST / LATEST or a timestamp in ms): one request per leader.
    None where the answer is -1 (no message at or after the time) or the partition could not answer."""
    if not partitions:
        return {}
    what = "read the partitions' offsets" if not isinstance(spec, int) else "look up the offsets by timestamp"
    with admin._translate(what):
        got = admin._admin.list_partition_offsets({_TP(t, p): spec for t, p in partitions},
                                                  timeout_ms=int(admin.timeout * 1000))
    out = {(tp.topic, tp.partition): (o.offset if o.offset >= 0 else None) for tp, o in got.items()}
    return {tp: out.get(tp) for tp in partitions}


def plan(admin: KafkaAdmin, group: str, spec: ResetSpec, *, all_topics: bool = False,
         topics: Sequence[tuple[str, tuple[int, ...] | None]] = ()) -> ResetPlan:
    """The dry run: what --reset-offsets would commit, read from the brokers now."""
    state, _ = group_state(admin, group)
    require_inactive(group, state)  # before reading anything else, as the tool does
    committed = committed_offsets(admin, group)
    counts = partition_counts(admin, [t for t, _ in topics]) if topics and not all_topics else {}
    parts = partitions_in_scope(spec, all_topics=all_topics, topics=topics, committed=committed,
                                partition_counts=counts)
    if not parts:
        raise ValidationError(f"nothing to reset: consumer group '{group}' has no committed offsets"
                              if all_topics else "nothing to reset: no partition in scope")
    offsets = Offsets(state, committed, list_offsets(admin, parts, OffsetSpec.EARLIEST),
                      list_offsets(admin, parts, OffsetSpec.LATEST),
                      list_offsets(admin, parts, int(spec.timestamp_ms)) if spec.needs_time else None)
    return plan_reset(group, spec, parts, offsets)


# --- writes ------------------------------------------------------------------------------------------------------


def _errors(answer: Mapping) -> dict[TP, str]:
    return {(tp.topic, tp.partition): f"{err.__name__}: {getattr(err, 'description', '')}".rstrip(": ")
            for tp, err in answer.items() if err is not kerrors.NoError and err is not None}


def _commit(admin: KafkaAdmin, group: str, offsets: Mapping[TP, int]) -> dict[TP, str]:
    """OffsetCommit of `offsets` as an admin (no member, generation -1): {partition: Kafka's error} for refusals."""
    if not offsets:
        return {}
    with admin._translate(f"commit the offsets of consumer group '{group}'"):
        answer = admin._admin.alter_group_offsets(group, {_TP(t, p): OffsetAndMetadata(o, "", None)
                                                          for (t, p), o in offsets.items()})
    return _errors(answer)


def _delete(admin: KafkaAdmin, group: str, partitions: Sequence[TP]) -> dict[TP, str]:
    if not partitions:
        return {}
    try:
        with admin._translate(f"delete the offsets of consumer group '{group}'"):
            answer = admin._admin.delete_group_offsets(group, [_TP(t, p) for t, p in partitions])
    except KafkaAdminError as e:
        if "NonEmptyGroup" in str(e):
            raise KafkaAdminError(f"Deleting offsets of a consumer group '{group}' is forbidden if the group is not "
                                  "empty.", hint="stop the group's consumers first") from None
        if "GroupIdNotFound" in str(e):
            raise ValidationError(f"'{group}' does not exist.") from None
        raise
    return _errors(answer)


def _finish(store: Store, action: int, summary: str, refused: Mapping[TP, str], written: tuple[str, ...]) -> Applied:
    if refused:
        shown = "; ".join(f"{t}-{p}: {e}" for (t, p), e in sorted(refused.items())[:10])
        message = f"Kafka refused {len(refused)} partition(s): {shown}"
        store.finish(action, ok=False, result=message)
        raise KafkaAdminError(message + " (the other partitions were written)")
    store.finish(action, ok=True, result=summary)
    return Applied(action, summary, written)


def _begin(store: Store, action_kind: str, *, cluster: str, group: str, summary: str, payload, previous,
           actor: str | None, rollback_of_id: int | None = None) -> int:
    return store.begin(cluster=cluster, kind=action_kind, target=group, summary=summary, payload=payload,
                       rollback=rollback_of(group, previous), actor=actor, rollback_of=rollback_of_id)


def _send(store: Store, action: int, call):
    try:
        return call()
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise


def execute_reset(admin: KafkaAdmin, store: Store, group: str, spec: ResetSpec, *, cluster: str,
                  all_topics: bool = False, topics: Sequence[tuple[str, tuple[int, ...] | None]] = (),
                  expected: Mapping[TP, int] | None = None, actor: str | None = None) -> tuple[Applied, ResetPlan]:
    """--reset-offsets --execute: re-plan now (refused while the group has members), record, commit. `expected`:
    the new offsets the person confirmed (a page's dry run); a plan that differs now is refused, nothing written."""
    fresh = plan(admin, group, spec, all_topics=all_topics, topics=topics)
    if expected is not None and dict(expected) != fresh.new_offsets:
        raise ValidationError(f"the offsets of consumer group '{group}' would differ from the dry run shown (the "
                              "group or its partitions changed since): nothing was written",
                              hint="look at the new dry run and confirm it again")
    summary = (f"reset offsets of consumer group {group} ({spec.describe()}): {len(fresh.rows)} partition(s), "
               f"{fresh.changed} moved")
    payload = {"request": "OffsetCommit", "group": group, "mode": spec.describe(),
               "offsets": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(fresh.new_offsets.items())]}
    action = _begin(store, "offsets-reset", cluster=cluster, group=group, summary=summary, payload=payload,
                    previous=fresh.previous, actor=actor)
    refused = _send(store, action, lambda: _commit(admin, group, fresh.new_offsets))
    return _finish(store, action, summary, refused, (f"OffsetCommit {group}",)), fresh


def delete_offsets(admin: KafkaAdmin, store: Store, group: str, topics: Sequence[tuple[str, tuple[int, ...] | None]],
                   *, cluster: str, actor: str | None = None) -> Applied:
    """kafka-consumer-groups --delete-offsets: the group's committed offsets of those topics (or partitions)."""
    state, _ = group_state(admin, group)
    if state == "Dead":
        raise ValidationError(f"'{group}' does not exist.")
    committed = committed_offsets(admin, group)
    wanted = {t: ps for t, ps in topics}
    parts = sorted(tp for tp in committed if tp[0] in wanted and (wanted[tp[0]] is None or tp[1] in wanted[tp[0]]))
    if not parts:
        raise ValidationError(f"consumer group '{group}' has no committed offsets for "
                              f"{', '.join(sorted(wanted))}: nothing to delete")
    previous = {tp: committed[tp] for tp in parts}
    summary = f"deleted the offsets of consumer group {group} for {', '.join(sorted(wanted))} ({len(parts)} partitions)"
    payload = {"request": "OffsetDelete", "group": group, "partitions": [{"topic": t, "partition": p} for t, p in parts]}
    action = _begin(store, "offsets-delete", cluster=cluster, group=group, summary=summary, payload=payload,
                    previous=previous, actor=actor)
    refused = _send(store, action, lambda: _delete(admin, group, parts))
    return _finish(store, action, summary, refused, (f"OffsetDelete {group}",))


def delete_group(admin: KafkaAdmin, store: Store, group: str, *, cluster: str, actor: str | None = None) -> Applied:
    """kafka-consumer-groups --delete: only an empty group (Kafka refuses NON_EMPTY_GROUP); its offsets recorded."""
    state, _ = group_state(admin, group)
    if state == "Dead":
        raise ValidationError(f"Consumer group '{group}' does not exist.")
    if state != "Empty":
        raise ValidationError(f"Cannot delete consumer group '{group}': it is not empty (state {state}).",
                              hint="stop the group's consumers (every member must leave), then try again")
    previous: dict[TP, int | None] = dict(committed_offsets(admin, group))
    summary = f"deleted consumer group {group} ({len(previous)} committed offsets)"
    action = _begin(store, "group-delete", cluster=cluster, group=group, summary=summary,
                    payload={"request": "DeleteGroups", "group": group}, previous=previous, actor=actor)

    def send() -> dict[TP, str]:
        with admin._translate(f"delete consumer group '{group}'"):
            answer = admin._admin.delete_groups([group])
        result = dict(answer).get(group)
        if result not in (None, "OK"):
            raise KafkaAdminError(f"Group '{group}' could not be deleted due to: {result}")
        return {}

    _send(store, action, send)
    return _finish(store, action, summary, {}, (f"DeleteGroups {group}",))


def undo(admin: KafkaAdmin, store: Store, action_id: int, *, cluster: str, actor: str | None = None) -> Applied:
    """Put back the offsets an audited reset / offset deletion / group deletion found: commit them (and delete
    those of partitions that had none). The group must be inactive, as for a reset."""
    recorded = store.action(action_id)
    if recorded is None:
        raise ValidationError(f"no action #{action_id} in the audit store")
    if recorded.status != "applied":
        raise ValidationError(f"action #{action_id} is {recorded.status}: only an applied one is undone")
    if recorded.cluster != cluster:  # the same group name on another cluster is another group
        raise ValidationError(f"action #{action_id} was recorded for cluster {recorded.cluster}, not {cluster}: "
                              "nothing was written", hint="undo it on the cluster it changed")
    group, commit, delete = undo_offsets(recorded.rollback)
    state, _ = group_state(admin, group)
    require_inactive(group, state)
    now = committed_offsets(admin, group)
    previous = {tp: now.get(tp) for tp in sorted(set(commit) | set(delete))}
    summary = f"undo of action #{action_id}: offsets of consumer group {group} put back ({len(commit)} partitions" + \
        (f", {len(delete)} cleared" if delete else "") + ")"
    payload = {"request": "OffsetCommit", "group": group, "undo_of": action_id,
               "offsets": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(commit.items())],
               "delete": [{"topic": t, "partition": p} for t, p in delete]}
    action = _begin(store, "offsets-undo", cluster=cluster, group=group, summary=summary, payload=payload,
                    previous=previous, actor=actor, rollback_of_id=action_id)
    refused = _send(store, action, lambda: {**_commit(admin, group, commit),
                                            **_delete(admin, group, [tp for tp in delete if tp in now])})
    return _finish(store, action, summary, refused, (f"OffsetCommit {group}",))


def now_ms() -> int:
    return int(time.time() * 1000)


__all__ = ["group_state", "committed_offsets", "partition_counts", "list_offsets", "plan", "execute_reset",
           "delete_offsets", "delete_group", "undo", "now_ms"]
