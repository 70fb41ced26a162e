"""Execute, throttle, verify, roll back and cancel partition reassignments through the Admin API (KRaft clusters, and
any Kafka 2.4+ cluster), as Kafka's ReassignPartitionsCommand does: the same functions, arguments, results and
audit rows as core.zk.reassign_writes, with a core.kafka.admin.KafkaAdmin in place of the ZooKeeper session.

Execute re-reads the cluster (core.kafka.metadata.read_snapshot), refuses while any reassignment runs
(ListPartitionReassignments), validates the plan against that read with the ZooKeeper engine's pure checks, records
the plan and its rollback *before* writing, then sets the throttles with IncrementalAlterConfigs (validate_only
first: a refusal writes nothing) and starts the reassignment with AlterPartitionReassignments. The Admin API has no
compare-and-set: what the plan was computed from is re-read right before the write, and a partition Kafka refuses
(its topic deleted meanwhile, a broker gone) fails the whole action: the partitions it did start are cancelled and
the throttles put back as they were, so nothing is left behind.

Verify removes the throttles as Kafka's clearAllThrottles does (DELETE of the plan's topics' two throttled-replica
lists and every live broker's three rates), whatever the read showed: a broker applies a config change from the
metadata log a moment after the controller accepted it, so a throttle just set may not be described yet.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from core.audit.store import Action, Store
from core.errors import (
    InvalidConfigurationError,
    InvalidReplicaAssignmentError,
    ReassignmentInProgressError,
    UnknownTopicError,
    ValidationError,
)
from core.kafka.admin import KafkaAdmin, KafkaUnreachableError
from core.kafka.metadata import read_snapshot, topic_config_problem
from core.model import ClusterSnapshot
from core.plans import (
    FOLLOWER_RATE,
    FOLLOWER_THROTTLED,
    LEADER_RATE,
    LEADER_THROTTLED,
    LOG_DIR_RATE,
    ReassignmentPlan,
    ReassignStatus,
    Throttles,
    moving_partitions,
    parse_reassignment,
    plan_risks,
    reassignment_status,
    rollback_for,
    throttles_for,
    validate_reassignment,
)
from core.topics import require_accepted
from core.writes import (
    AS_RECORDED,
    CANNOT_CANCEL,
    IN_PROGRESS,
    JAVA_LONG_MAX,
    CancelFailedError,
    Cancelled,
    Executed,
    Verified,
    reordered_by_cancel,
    rollback_action,
    rollback_throttle,
)

if TYPE_CHECKING:
    from core.reassign_progress import ThrottleChanged

Resource = tuple[str, str]  # ("topic" | "broker", name), as KafkaAdmin.alter_config_keys takes it
Changes = dict[Resource, dict[str, str | None]]
_TOPIC_KEYS = (LEADER_THROTTLED, FOLLOWER_THROTTLED)
_BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)


def _check_throttle(throttle: int | None) -> None:
    if throttle is not None and throttle <= 0:
        raise ValidationError(f"--throttle must be a positive number of bytes per second, got {throttle}")
    if throttle is not None and throttle > JAVA_LONG_MAX:  # Kafka reads the rate as a Java long
        raise ValidationError(f"--throttle must be at most {JAVA_LONG_MAX:,} bytes per second (a Java long, as "
                              f"Kafka reads the rate), got {throttle:,}")


def _refuse_problems(snap: ClusterSnapshot, topics: Iterable[str], *, configs: bool, what: str) -> None:
    """A topic the brokers could not describe (or whose settings they did not return, when the write depends on
    them) makes the read unfit to write from."""
    keys = {f"topic {t}" for t in topics} | ({topic_config_problem(t) for t in topics} if configs else set())
    found = [p for p in snap.problems if p.path in keys]
    if found:
        raise ValidationError(f"cannot {what}: the brokers' answers were incomplete ("
                              + "; ".join(f"{p.path}: {p.error}" for p in found) + "); nothing was written",
                              hint="try again in a moment: a broker that has just learnt of a topic describes it "
                                   "a little later")


def _throttle_changes(throttles: Throttles | None) -> Changes:
    """Kafka's modifyTopicThrottles and modifyInterBrokerThrottle as IncrementalAlterConfigs SET operations."""
    if not throttles:
        return {}
    changes: Changes = {}
    for topic in sorted(set(throttles.leader) | set(throttles.follower)):
        changes[("topic", topic)] = {k: v for k, v in ((LEADER_THROTTLED, throttles.leader.get(topic)),
                                                       (FOLLOWER_THROTTLED, throttles.follower.get(topic)))
                                     if v is not None}
    for broker in throttles.brokers:
        changes[("broker", str(broker))] = {LEADER_RATE: str(throttles.rate), FOLLOWER_RATE: str(throttles.rate)}
    return changes


def _config_of(snap: ClusterSnapshot, resource: Resource) -> Mapping[str, str]:
    kind, name = resource
    if kind == "topic":
        topic = snap.topic(name)
        return topic.config if topic is not None else {}
    return snap.broker_configs.get(name, {})


def _restore(admin: KafkaAdmin, changes: Changes, snap: ClusterSnapshot) -> dict[Resource, str]:
    """Put the keys `changes` set back as `snap` read them (their value then, or absent); {resource: error}."""
    before = {r: {k: _config_of(snap, r).get(k) for k in keys} for r, keys in changes.items()}
    return _failed(admin.alter_config_keys(before))


def _failed(answer: Mapping[Resource, str | None]) -> dict[Resource, str]:
    """The resources Kafka refused, but for topics deleted meanwhile (their config went with them)."""
    return {r: e for r, e in answer.items() if e and not (r[0] == "topic" and e.startswith("UnknownTopicOrPartition"))}


def _listed(errors: Mapping, prefix: str) -> str:
    return prefix + "\n" + "\n".join(f"{_name(k)}: {v}" for k, v in sorted(errors.items()))


def _name(key) -> str:
    a, b = key
    return f"{a}-{b}" if isinstance(b, int) else f"{a} {b}"


def _error_type(errors: Iterable[str]) -> type[ValidationError]:
    """The typed error the ZooKeeper engine raises for the same refusal, from Kafka's error names."""
    names = {e.split(":", 1)[0] for e in errors}
    if names and names <= {"UnknownTopicOrPartitionError"}:
        return UnknownTopicError
    if names and names <= {"InvalidReplicaAssignmentError"}:
        return InvalidReplicaAssignmentError
    return ValidationError


# --- execute ------------------------------------------------------------------------------------


def execute(admin: KafkaAdmin, store: Store, plan: ReassignmentPlan, *, cluster: str,
            throttle: int | None = None, actor: str | None = None,
            accept_risks: bool | Sequence[str] = ()) -> Executed:
    """Start `plan` (see the module doc). Refused with RiskNotAcceptedError, before anything is written, while the
    live cluster gives it a risk (core.plans.plan_risks) that `accept_risks` does not list word for word (True
    accepts any)."""
    _check_throttle(throttle)
    admin.require_cancel()  # AlterPartitionReassignments: Kafka 2.4+ (every KRaft cluster)
    snap = read_snapshot(admin, cluster=cluster)
    if snap.in_progress.reassignment:  # Kafka's tool refuses too (without --additional)
        raise ReassignmentInProgressError(IN_PROGRESS, hint="verify it, and execute this plan once it completes")
    topics = sorted({e.topic for e in plan.entries})
    _refuse_problems(snap, topics, configs=throttle is not None, what="start a reassignment")
    warnings = [w for w in validate_reassignment(plan, snap) if "is in progress" not in w]
    require_accepted(plan_risks(plan, snap), accept_risks)
    rollback = rollback_for(plan, snap)
    moving = moving_partitions(plan, snap)
    throttles = throttles_for(plan, snap, throttle) if throttle is not None and moving else None
    changes = _throttle_changes(throttles)
    if changes:  # Kafka validates every change first: a refusal writes nothing and records nothing
        refused = {r: e for r, e in admin.alter_config_keys(changes, validate_only=True).items() if e}
        if refused:
            raise InvalidConfigurationError(_listed(refused, "Kafka refused the throttles; nothing was written:"))

    writes = [f"IncrementalAlterConfigs {kind} {name}" for kind, name in changes]
    writes.append(f"AlterPartitionReassignments {len(plan.entries)} partitions")
    summary = (f"reassignment of {len(plan.entries)} partitions ({len(moving)} moving replicas sets)"
               + (f", throttled at {throttle:,} B/s" if throttle else ""))
    action = store.begin(cluster=cluster, kind="reassignment", target=f"{len(plan.entries)} partitions",
                         summary=summary, payload={"plan": plan.to_json(), "throttle": throttle, "writes": writes},
                         rollback=rollback.to_json(), actor=actor)
    try:
        _write(admin, store, action, plan, changes, snap)
    except Exception as e:
        if store.action(action).status == "pending":
            store.finish(action, ok=False, result=str(e))
        raise
    store.finish(action, ok=True, result=summary)
    return Executed(action, len(plan.entries), len(moving), rollback, throttles, tuple(warnings))


def _write(admin: KafkaAdmin, store: Store, action: int, plan: ReassignmentPlan, changes: Changes,
           snap: ClusterSnapshot) -> None:
    """The throttles, then the reassignment; on a refusal, undo what was written and finish `action` failed."""
    if changes:
        failed = {r: e for r, e in admin.alter_config_keys(changes).items() if e}
        if failed:
            message = _listed(failed, "Kafka refused the throttles of:")
            left = _restore(admin, {r: c for r, c in changes.items() if r not in failed}, snap)
            message += _left_note(left)
            store.finish(action, ok=False, result=message)
            raise InvalidConfigurationError(message)
    try:
        errors = admin.alter_reassignments(plan.assignment())
    except KafkaUnreachableError as e:
        message = (f"the outcome is unknown: {e}. The reassignment may have started: check with `python -m core "
                   "verify` (or kafka-reassign-partitions --list); its throttles were left in place, and verify "
                   "removes them once it completes")
        store.finish(action, ok=False, result=message)
        raise KafkaUnreachableError(message) from None
    except Exception as e:  # refused as a whole (e.g. not authorised): nothing started
        store.finish(action, ok=False, result=str(e) + (_left_note(_restore(admin, changes, snap)) if changes else ""))
        raise
    failed = {k: v for k, v in errors.items() if v}
    if not failed:
        return
    # Kafka's tool reports these and stops, leaving what started running, throttled: Keel undoes the whole action
    message = _listed(failed, "Error reassigning partition(s):")
    started = sorted(k for k, v in errors.items() if not v)
    still: dict = {}
    if started:
        undone = admin.cancel_reassignments(started)
        done = [k for k, v in undone.items() if v and v.startswith("NoReassignmentInProgress")]
        still = {k: v for k, v in undone.items() if v and k not in done}
        message += "\nThe partitions Kafka had started were cancelled: " + ", ".join(map(_name, started))
        if done:
            message += ("\n(already complete, so not undone: " + ", ".join(map(_name, done))
                        + f"; roll back action #{action} to move them back)")
        if still:
            message += "\n" + _listed(still, "Kafka did not cancel (still running, throttles left in place):")
    if changes and not still:
        message += _left_note(_restore(admin, changes, snap))
    store.finish(action, ok=False, result=message)
    raise _error_type(failed.values())(message)


def _left_note(left: Mapping[Resource, str]) -> str:
    if not left:
        return "\nThe throttles set were put back as they were."
    return "\n" + _listed(left, "The throttles of these could not be put back (remove them with verify):")


# --- verify -------------------------------------------------------------------------------------


def remove_throttles(admin: KafkaAdmin, topics: Iterable[str], snapshot: ClusterSnapshot) -> bool:
    """Kafka's clearAllThrottles: DELETE the topics' throttled-replica lists and every live broker's three rates;
    True when `snapshot` showed any of them set. Topics that no longer exist are skipped (their config went with
    them). A broker that is down cannot be reached (a broker config goes to its broker): its rates stay."""
    existing = [t for t in sorted(set(topics)) if snapshot.topic(t) is not None]
    alive = {b.id for b in snapshot.brokers if b.alive}
    changes: Changes = {("topic", t): dict.fromkeys(_TOPIC_KEYS) for t in existing}
    changes |= {("broker", str(b)): dict.fromkeys(_BROKER_KEYS) for b in sorted(alive)}
    seen = any(k in _config_of(snapshot, r) for r, keys in changes.items() for k in keys)
    failed = _failed(admin.alter_config_keys(changes))
    if failed:
        raise ValidationError(_listed(failed, "Kafka did not remove the throttles of:"),
                              hint="run verify again (or kafka-configs --alter --delete-config on them)")
    return seen


def verify(admin: KafkaAdmin, store: Store, plan: ReassignmentPlan, *, cluster: str,
           actor: str | None = None) -> Verified:
    snap = read_snapshot(admin, cluster=cluster)
    statuses = reassignment_status(plan, snap)
    for attempt in (1, 2):  # "not at target" and nothing running: a broker that has not applied the end yet?
        if not any(s.status == ReassignStatus.NOT_AT_TARGET for s in statuses):
            break
        time.sleep(0.5 * attempt)  # each read may reach another broker (seen in CI: verify right after the end)
        snap = read_snapshot(admin, cluster=cluster)
        statuses = reassignment_status(plan, snap)
    removed = False
    if all(s.status.finished for s in statuses):
        topics = sorted({s.topic for s in statuses})
        gone = sum(s.status == ReassignStatus.GONE for s in statuses)
        removed = _remove_throttles_recorded(
            admin, store, topics, snap, cluster=cluster, actor=actor,
            summary=f"reassignment of {len(statuses)} partitions complete"
                    + (f" ({gone} no longer exist)" if gone else "") + ": throttles removed")
        store.mark_completed(cluster, plan.to_json())  # the reassignment's own row: when it was found complete
    return Verified(tuple(statuses), removed)


def _remove_throttles_recorded(admin: KafkaAdmin, store: Store, topics: list[str], snap: ClusterSnapshot, *,
                               cluster: str, summary: str, actor: str | None) -> bool:
    action = store.begin(cluster=cluster, kind="remove-throttles", target=", ".join(topics)[:200] or "brokers",
                         summary=summary, payload={"topics": topics}, actor=actor)
    try:
        removed = remove_throttles(admin, topics, snap)
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise
    store.finish(action, ok=True, result="removed" if removed else "no throttles were set")
    return removed


def clear_throttles(admin: KafkaAdmin, store: Store, topics: Iterable[str], *, cluster: str, summary: str,
                    actor: str | None = None) -> bool:
    """Remove the throttles of `topics` and every live broker's rates, recorded (the auto-throttle loop's end)."""
    return _remove_throttles_recorded(admin, store, sorted(set(topics)), read_snapshot(admin, cluster=cluster),
                                      cluster=cluster, summary=summary, actor=actor)


# --- rollback -------------------------------------------------------------------------------------


def _refuse_another_cluster(admin: KafkaAdmin, action: Action, cluster: str) -> None:
    """A rollback puts partitions back as they were on the cluster the reassignment ran on: refuse it on another
    one (the same name, or the same cluster id however the bootstrap servers were spelled)."""
    if action.cluster == cluster:
        return
    here = admin.describe_cluster().get("cluster_id")
    if action.cluster_id is not None and here == action.cluster_id:
        return
    raise ValidationError(
        f"action {action.id} ran on cluster {action.cluster}"
        + (f" (cluster id {action.cluster_id})" if action.cluster_id else "")
        + f", not on {cluster}" + (f" (cluster id {here})" if here else "")
        + ": its rollback would move this cluster's partitions to another cluster's old assignment; nothing was "
          "written", hint=f"roll it back on {action.cluster}")


def rollback(admin: KafkaAdmin, store: Store, action_id: int, *, cluster: str,
             throttle: int | None | str = AS_RECORDED, actor: str | None = None,
             accept_risks: bool | Sequence[str] = ()) -> Executed:
    """Execute the rollback saved with a reassignment, once that reassignment has finished, throttled at
    `throttle` B/s (None: unthrottled; by default the rate the reassignment ran with, see RollbackThrottle).
    The result's `rollback_throttle` says which."""
    action = rollback_action(store, action_id)
    _refuse_another_cluster(admin, action, cluster)
    chosen = rollback_throttle(action, throttle, store.actions(action.cluster, kind="throttle", limit=500))
    if admin.reassignments():
        raise ReassignmentInProgressError(CANNOT_CANCEL)
    with store.recording_rollback_of(action_id):  # recorded as kind "rollback", linked to action_id
        done = execute(admin, store, parse_reassignment(action.rollback), cluster=cluster, throttle=chosen.rate,
                       actor=actor, accept_risks=accept_risks)
    return replace(done, rollback_throttle=chosen)


# --- cancel -------------------------------------------------------------------------------------


def cancel(admin: KafkaAdmin, store: Store, *, cluster: str, partitions: Iterable[tuple[str, int]] | None = None,
           preserve_throttles: bool = False, actor: str | None = None) -> Cancelled:
    """kafka-reassign-partitions --cancel: cancel the running reassignment of `partitions` (None: every running
    one) with alterPartitionReassignments and no target; the controller moves each back to its original replicas.
    Then, unless `preserve_throttles`, removes the throttles as Kafka's --cancel does (the topics' throttled replica
    lists and every live broker's rates; with `partitions` None also every other topic's throttle lists). Both
    writes are recorded: the cancel ("cancel-reassignment") and the throttle removal ("remove-throttles")."""
    admin.require_cancel()
    requested = None if partitions is None else sorted({(str(t), int(p)) for t, p in partitions})
    running = admin.reassignments(requested)
    requested = sorted(running) if requested is None else requested
    targets = [k for k in requested if k in running]
    action_id = None
    if targets:
        shown = ", ".join(f"{t}-{p}" for t, p in targets[:20]) + (" ..." if len(targets) > 20 else "")
        action_id = store.begin(cluster=cluster, kind="cancel-reassignment", target=shown[:200],
                                summary=f"cancel the running reassignment of {len(targets)} partitions",
                                payload={"api": "alterPartitionReassignments (no target)", "partitions": [
                                    {"topic": t, "partition": p, "replicas": list(running[(t, p)].replicas),
                                     "adding_replicas": list(running[(t, p)].adding),
                                     "removing_replicas": list(running[(t, p)].removing)} for t, p in targets]},
                                actor=actor)
        try:
            errors = admin.cancel_reassignments(targets)
        except Exception as e:
            store.finish(action_id, ok=False, result=str(e))
            raise
        failed = {k: v for k, v in errors.items() if v}
        if failed:
            message = _listed(failed, f"Error cancelling partition reassignment{'s' if len(failed) > 1 else ''} "
                                      "for:")
            done = [k for k in targets if k not in failed]
            if done:
                message += "\n(cancelled: " + ", ".join(map(_name, done)) + ")"
            store.finish(action_id, ok=bool(done), result=message)
            raise CancelFailedError(message, hint="the throttles were left in place: run the cancel again, or "
                                                  "verify once the reassignment has finished")
        store.finish(action_id, ok=True, result=f"cancelled {len(targets)} partitions")
    removed = False
    if not preserve_throttles:
        snap = read_snapshot(admin, cluster=cluster)  # after the cancel
        topics = {t for t, _ in requested}
        if partitions is None:
            topics |= {t.name for t in snap.topics if any(k in t.config for k in _TOPIC_KEYS)}
        removed = _remove_throttles_recorded(admin, store, sorted(topics), snap, cluster=cluster,
                                             summary="reassignment cancelled: throttles removed", actor=actor)
    return Cancelled(action_id, tuple(targets), tuple(k for k in requested if k not in running),
                     reordered_by_cancel(store, cluster, {k: running[k] for k in targets}), removed)


# --- the throttle of a running reassignment -------------------------------------------------------------


def change_throttle(admin: KafkaAdmin, store: Store, rate: int | None, *, cluster: str,
                    actor: str | None = None) -> "ThrottleChanged":
    """Raise or lower (None: remove) the replication throttle of the running reassignment, as Kafka's
    --execute --additional --throttle does (IncrementalAlterConfigs, validate_only first): the leader/follower rates
    on every broker that moves data and the topics' throttled-replica lists of the moving partitions. Recorded (kind
    "throttle") with every value it replaces. ReassignmentNotRunningError when none runs."""
    from core.reassign_progress import ThrottleChanged, previous_rate, running_of, throttle_record, throttles_of

    if rate is not None:
        _check_throttle(rate)
    admin.require_cancel()
    snap = read_snapshot(admin, cluster=cluster)
    moving = [m for m in running_of(snap) if m.adding or m.removing]
    throttles = throttles_of(moving, rate or 0)
    topics = sorted(set(throttles.leader) | set(throttles.follower))
    _refuse_problems(snap, topics, configs=True, what="change the throttle")
    changes = _throttle_changes(throttles)
    if rate is None:
        changes = {r: dict.fromkeys(keys) for r, keys in changes.items()}
    refused = {r: e for r, e in admin.alter_config_keys(changes, validate_only=True).items() if e}
    if refused:
        raise InvalidConfigurationError(_listed(refused, "Kafka refused the throttles; nothing was written:"))
    topic_configs = {t: dict(snap.topic(t).config) for t in topics if snap.topic(t) is not None}
    summary, payload, before = throttle_record(throttles, moving, rate, snap.broker_configs, topic_configs)
    action = store.begin(cluster=cluster, kind="throttle", target=f"brokers {','.join(map(str, throttles.brokers))}",
                         summary=summary, payload={**payload, "writes": [f"IncrementalAlterConfigs {k} {n}"
                                                                         for k, n in changes]}, actor=actor)
    try:
        failed = _failed(admin.alter_config_keys(changes))
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise
    if failed:
        message = _listed(failed, "Kafka refused the throttles of:") + _left_note(
            _restore(admin, {r: c for r, c in changes.items() if r not in failed}, snap))
        store.finish(action, ok=False, result=message)
        raise InvalidConfigurationError(message)
    store.finish(action, ok=True, result=summary)
    return ThrottleChanged(action, rate, previous_rate(before), before, throttles, len(moving))
