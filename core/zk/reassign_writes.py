"""Execute, throttle, verify and roll back partition reassignments through ZooKeeper, as Kafka's
ReassignPartitionsCommand (ZooKeeper mode) does.

Execute re-reads live state, refuses while `/admin/reassign_partitions` exists, validates the plan,
stores the plan and its rollback *before* writing, then writes the throttles (topic and broker
configs, each announced by a change notification) and the reassignment node in one multi-op.
Verify reports every partition as complete, in progress, not at its target, or gone (its topic was
deleted, or never existed), and removes the throttles once none is in progress or off target.
A rollback runs, unless told otherwise, at the throttle the reassignment it undoes ran with (its audit row's).
Cancel (Kafka 2.4+) goes through the Admin API, the only way to stop a running reassignment (`cancel` below,
with a core.kafka.admin.KafkaAdmin); before 2.4 a reassignment can only be waited for, then rolled back.

No lost updates: the throttle configs are rewritten from the same read that validated the plan, each
with that read's znode version, and the multi-op checks the version of every planned topic's node,
so a topic grown, reassigned or re-configured meanwhile fails the whole write.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, Sequence

from core import zkformat as zf
from core.errors import (
    CorruptZnodeError,
    KRaftControllerError,
    PlanError,
    ReassignmentInProgressError,
    ValidationError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
)
from core.model import ClusterSnapshot, TopicPartitionReplicas
from core.plans import (  # noqa: F401  (re-exported: the statuses and throttle keys are read with these)
    FOLLOWER_RATE,
    FOLLOWER_THROTTLED,
    LEADER_RATE,
    LEADER_THROTTLED,
    LOG_DIR_RATE,
    PartitionStatus,
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
from core.audit.store import Action, Store
from core.topics import require_accepted
from core.zk.reader import read_for_write, refuse_corrupt
from core.zk.reconcile import settle_unknown_write
from core.zk.session import Op, ZkSession, ZkWriteOutcomeUnknownError
from core.zk.tree import ClusterTree
from core.writes import (  # noqa: F401  (re-exported: what the pages and the CLI read a write's outcome with)
    AS_RECORDED,
    CANNOT_CANCEL,
    IN_PROGRESS,
    JAVA_LONG_MAX,
    CancelFailedError,
    Cancelled,
    Executed,
    RollbackThrottle,
    Verified,
    recorded_throttle,
    reordered_by_cancel,
    rollback_action,
    rollback_throttle,
)

if TYPE_CHECKING:
    from core.reassign_progress import ThrottleChanged

# ZooKeeper refuses a request larger than jute.maxbuffer (1 MiB by default).
MAX_WRITE_BYTES = 1_000_000


def _config_ops(tree: ClusterTree, path: str, entity: str, update: dict[str, str | None]) -> list[Op]:
    """Set (or with None remove) keys of an entity config, then announce it, as kafka-configs does.

    The config comes from `tree` and is written with the version of that read."""
    kind, name = entity.split("/", 1)
    config = (tree.topic_configs if kind == "topics" else tree.broker_configs).get(name, {})
    version = tree.versions.get(path, -1)
    changed = dict(config)
    for key, value in update.items():
        if value is None:
            changed.pop(key, None)
        else:
            changed[key] = value
    if changed == config:
        return []
    write = (Op("set", path, zf.encode_config(changed), version=version) if version >= 0
             else Op("create", path, zf.encode_config(changed)))
    return [write, Op("create", zf.CONFIG_CHANGE_PREFIX, zf.encode_config_change(entity), sequence=True)]


def throttle_ops(tree: ClusterTree, throttles: Throttles, rate: int | None) -> list[Op]:
    """The config writes of a replication throttle, as kafka-reassign-partitions makes them: each topic's
    throttled-replica lists and each broker's leader and follower rates (rate None removes them all)."""
    value = None if rate is None else str(rate)
    ops: list[Op] = []
    for topic in sorted(set(throttles.leader) | set(throttles.follower)):
        ops += _config_ops(tree, zf.topic_config_path(topic), f"topics/{topic}",
                           {LEADER_THROTTLED: throttles.leader.get(topic) if value else None,
                            FOLLOWER_THROTTLED: throttles.follower.get(topic) if value else None})
    for broker in throttles.brokers:
        ops += _config_ops(tree, zf.broker_config_path(broker), f"brokers/{broker}",
                           {LEADER_RATE: value, FOLLOWER_RATE: value})
    return ops


def _live(session: ZkSession) -> tuple[ClusterSnapshot, ClusterTree]:
    snap, tree = read_for_write(session)
    if snap.controller is not None and snap.controller.is_kraft:
        raise KRaftControllerError("A KRaft controller owns this cluster: a ZooKeeper reassignment would be ignored. "
                                   "Use kafka-reassign-partitions.sh --bootstrap-server.")
    return snap, tree


def _topic_checks(tree: ClusterTree, topics: Iterable[str]) -> list[Op]:
    """Check ops pinning each topic node to the version the plan was validated against."""
    out = []
    for topic in sorted(set(topics)):
        version = tree.versions.get(zf.topic_path(topic))
        if version is not None and version >= 0:
            out.append(Op("check", zf.topic_path(topic), version=version))
    return out


CHANGED_MEANWHILE = ("a planned topic, or a topic or broker config, changed while the reassignment was being written "
                     "(another client wrote it first); nothing was written. Try again.")


def _multi(session: ZkSession, ops: list[Op]) -> None:
    size = sum(len(op.data) + len(op.path) for op in ops)
    if size > MAX_WRITE_BYTES:
        raise PlanError(f"the plan needs a {size:,}-byte ZooKeeper write, over ZooKeeper's 1 MiB request limit "
                        "(jute.maxbuffer): split it into waves and execute them one after another")
    session.multi(ops)


# --- execute ------------------------------------------------------------------------------------


def execute(session: ZkSession, store: Store, plan: ReassignmentPlan, *, cluster: str,
            throttle: int | None = None, actor: str | None = None,
            accept_risks: bool | Sequence[str] = ()) -> Executed:
    """Write `plan` (see the module doc). Refused with RiskNotAcceptedError, before anything is written, while the
    live cluster gives it a risk (core.plans.plan_risks: a partition with no live in-sync replica, which would keep
    the reassignment from ever completing) that `accept_risks` does not list word for word (True accepts any)."""
    if throttle is not None and throttle <= 0:
        raise ValidationError(f"--throttle must be a positive number of bytes per second, got {throttle}")
    if throttle is not None and throttle > JAVA_LONG_MAX:  # Kafka reads the rate as a Java long
        raise ValidationError(f"--throttle must be at most {JAVA_LONG_MAX:,} bytes per second (a Java long, as "
                              f"Kafka reads the rate), got {throttle:,}")
    if session.exists(zf.REASSIGN):
        raise ReassignmentInProgressError(IN_PROGRESS, hint="verify it, and execute this plan once it completes")
    snap, tree = _live(session)
    topics = sorted({e.topic for e in plan.entries})
    read_from = [zf.CONTROLLER, *(zf.topic_path(t) for t in topics),
                 *(zf.state_path(e.topic, e.partition) for e in plan.entries)]
    if throttle is not None:  # the throttles rewrite these configs
        read_from += [zf.topic_config_path(t) for t in topics]
        read_from += [zf.broker_config_path(b.id) for b in snap.brokers]
    refuse_corrupt(snap, read_from, "start a reassignment")
    warnings = [w for w in validate_reassignment(plan, snap) if "is in progress" not in w]
    require_accepted(plan_risks(plan, snap), accept_risks)
    rollback = rollback_for(plan, snap)
    moving = moving_partitions(plan, snap)
    throttles = throttles_for(plan, snap, throttle) if throttle is not None and moving else None

    ops = throttle_ops(tree, throttles, throttle) if throttles else []
    ops += _topic_checks(tree, (e.topic for e in plan.entries))
    node = zf.encode_reassignment(TopicPartitionReplicas(e.topic, e.partition, e.replicas) for e in plan.entries)
    ops.append(Op("create", zf.REASSIGN, node))

    summary = (f"reassignment of {len(plan.entries)} partitions ({len(moving)} moving replicas sets)"
               + (f", throttled at {throttle:,} B/s" if throttle else ""))
    action = store.begin(cluster=cluster, kind="reassignment", target=f"{len(plan.entries)} partitions",
                         summary=summary, payload={"plan": plan.to_json(), "throttle": throttle,
                                                   "writes": [op.path for op in ops]},
                         rollback=rollback.to_json(), actor=actor)
    try:
        _multi(session, ops)
    except ZkWriteOutcomeUnknownError as e:  # committed or not: find out, or leave the action pending
        note = settle_unknown_write(session, store, action, e)
        warnings.append(note)
        summary += f" ({note})"
    except ZkNodeExistsError:
        store.finish(action, ok=False, result=IN_PROGRESS)
        raise ReassignmentInProgressError(IN_PROGRESS) from None
    except (ZkBadVersionError, ZkNoNodeError):
        store.finish(action, ok=False, result="changed concurrently: " + CHANGED_MEANWHILE)
        raise ValidationError(CHANGED_MEANWHILE) from None
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise
    store.finish(action, ok=True, result=summary)
    return Executed(action, len(plan.entries), len(moving), rollback, throttles, tuple(warnings))


# --- verify -------------------------------------------------------------------------------------

COMPLETE, IN_FLIGHT, NOT_AT_TARGET, GONE = (ReassignStatus.COMPLETE, ReassignStatus.IN_PROGRESS,
                                            ReassignStatus.NOT_AT_TARGET, ReassignStatus.GONE)


def remove_throttles(session: ZkSession, topics: Iterable[str], snapshot: ClusterSnapshot,
                     tree: ClusterTree) -> bool:
    """Kafka's clearAllThrottles: the topics' throttled-replica lists and every broker's three rates.

    Topics that no longer exist are skipped (their config node went with them)."""
    ops: list[Op] = []
    for topic in sorted(set(topics)):
        if snapshot.topic(topic) is None:
            continue
        ops += _config_ops(tree, zf.topic_config_path(topic), f"topics/{topic}",
                           {LEADER_THROTTLED: None, FOLLOWER_THROTTLED: None})
    for broker in sorted({b.id for b in snapshot.brokers} | {int(e) for e in snapshot.broker_configs if e.isdigit()}):
        ops += _config_ops(tree, zf.broker_config_path(broker), f"brokers/{broker}",
                           {LEADER_RATE: None, FOLLOWER_RATE: None, LOG_DIR_RATE: None})
    if ops:
        try:
            _multi(session, ops)
        except (ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError):
            raise ValidationError("a topic or broker config changed while the throttles were being removed; "
                                  "nothing was written. Run verify again.") from None
    return bool(ops)


def verify(session: ZkSession, store: Store, plan: ReassignmentPlan, *, cluster: str,
           actor: str | None = None) -> Verified:
    snap, tree = _live(session)
    statuses = reassignment_status(plan, snap)
    removed = False
    if all(s.status.finished for s in statuses):
        topics = sorted({s.topic for s in statuses})
        gone = sum(s.status == GONE for s in statuses)
        action = store.begin(cluster=cluster, kind="remove-throttles", target=", ".join(topics)[:200],
                             summary=f"reassignment of {len(statuses)} partitions complete"
                                     + (f" ({gone} no longer exist)" if gone else "") + ": throttles removed",
                             payload={"topics": topics}, actor=actor)
        try:
            removed = remove_throttles(session, topics, snap, tree)
        except ZkWriteOutcomeUnknownError as e:
            settle_unknown_write(session, store, action, e)
            removed = True
        except Exception as e:
            store.finish(action, ok=False, result=str(e))
            raise
        store.finish(action, ok=True, result="removed" if removed else "no throttles were set")
        store.mark_completed(cluster, plan.to_json())  # the reassignment's own row: when it was found complete
    return Verified(tuple(statuses), removed)


# --- rollback -------------------------------------------------------------------------------------

def _refuse_another_cluster(session: ZkSession, action: Action, cluster: str) -> None:
    """A rollback puts partitions back as they were on the cluster the reassignment ran on: refuse it on another
    one (the same name, or the same /cluster/id however the connect string was spelled)."""
    if action.cluster == cluster:
        return
    node = session.get(zf.CLUSTER_ID)
    try:
        here = zf.decode_cluster_id(node.data) if node.exists else None
    except CorruptZnodeError:
        here = None
    if action.cluster_id is not None and here == action.cluster_id:
        return
    raise ValidationError(
        f"action {action.id} ran on cluster {action.cluster}"
        + (f" (/cluster/id {action.cluster_id})" if action.cluster_id else "")
        + f", not on {cluster}" + (f" (/cluster/id {here})" if here else "")
        + ": its rollback would move this cluster's partitions to another cluster's old assignment; nothing was "
          "written", hint=f"roll it back on {action.cluster}")


def rollback(session: ZkSession, store: Store, action_id: int, *, cluster: str,
             throttle: int | None | str = AS_RECORDED, actor: str | None = None,
             accept_risks: bool | Sequence[str] = ()) -> Executed:
    """Execute the rollback saved with a reassignment, once that reassignment has finished, throttled at
    `throttle` B/s (None: unthrottled; by default the rate the reassignment ran with, see RollbackThrottle).
    The result's `rollback_throttle` says which."""
    action = rollback_action(store, action_id)
    _refuse_another_cluster(session, action, cluster)
    chosen = rollback_throttle(action, throttle, store.actions(action.cluster, kind="throttle", limit=500))
    if session.exists(zf.REASSIGN):
        raise ReassignmentInProgressError(CANNOT_CANCEL)
    with store.recording_rollback_of(action_id):  # recorded as kind "rollback", linked to action_id
        done = execute(session, store, parse_reassignment(action.rollback), cluster=cluster, throttle=chosen.rate,
                       actor=actor, accept_risks=accept_risks)
    return replace(done, rollback_throttle=chosen)


# --- cancel (Kafka 2.4+, through the Admin API) ----------------------------------------------------


class ReassignmentAdmin(Protocol):
    """What `cancel` needs from Kafka's Admin API (core.kafka.admin.KafkaAdmin; a stub in unit tests)."""

    def require_cancel(self) -> None: ...

    def reassignments(self, partitions: Iterable[tuple[str, int]] | None = None) -> Mapping[tuple[str, int], Any]: ...

    def cancel_reassignments(self, partitions: Iterable[tuple[str, int]]) -> Mapping[tuple[str, int], str | None]: ...


def cancel(session: ZkSession, store: Store, admin: ReassignmentAdmin, *, cluster: str,
           partitions: Iterable[tuple[str, int]] | None = None, preserve_throttles: bool = False,
           actor: str | None = None) -> Cancelled:
    """kafka-reassign-partitions --cancel: cancel the running reassignment of `partitions` (None: every running
    one) through the Admin API's alterPartitionReassignments with no target; the controller moves each back to
    its original replicas (dropping the replicas being added) and removes it from /admin/reassign_partitions.
    Then, unless `preserve_throttles`, removes the throttles as Kafka's --cancel does (the topics' throttled
    replica lists and every broker's rates; with `partitions` None also every other topic's throttle lists).

    Refused before anything is written when the brokers are older than 2.4 (`admin.require_cancel`). Both
    writes are recorded: the cancel ("cancel-reassignment") and the throttle removal ("remove-throttles")."""
    admin.require_cancel()
    snap, _ = _live(session)
    requested = None if partitions is None else sorted({(str(t), int(p)) for t, p in partitions})
    running = admin.reassignments(requested)
    requested = sorted(running) if requested is None else requested
    targets = [k for k in requested if k in running]
    action_id = None
    if targets:
        shown = ", ".join(f"{t}-{p}" for t, p in targets[:20]) + (" ..." if len(targets) > 20 else "")
        summary = f"cancel the running reassignment of {len(targets)} partitions"
        action_id = store.begin(cluster=cluster, kind="cancel-reassignment", target=shown[:200], summary=summary,
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
            message = (f"Error cancelling partition reassignment{'s' if len(failed) > 1 else ''} for:\n"
                       + "\n".join(f"{t}-{p}: {failed[(t, p)]}" for t, p in sorted(failed)))
            done = [k for k in targets if k not in failed]
            if done:
                message += "\n(cancelled: " + ", ".join(f"{t}-{p}" for t, p in done) + ")"
            store.finish(action_id, ok=bool(done), result=message)
            raise CancelFailedError(message, hint="the throttles were left in place: run the cancel again, or "
                                                  "verify once the reassignment has finished")
        store.finish(action_id, ok=True, result=f"cancelled {len(targets)} partitions")
    removed = False
    if not preserve_throttles:
        snap, tree = _live(session)  # after the cancel: the config versions the removal checks
        topics = {t for t, _ in requested}
        if partitions is None:
            topics |= {t.name for t in snap.topics if LEADER_THROTTLED in t.config or FOLLOWER_THROTTLED in t.config}
        removed = _remove_throttles_recorded(session, store, sorted(topics), snap, tree, cluster=cluster,
                                             summary="reassignment cancelled: throttles removed", actor=actor)
    return Cancelled(action_id, tuple(targets), tuple(k for k in requested if k not in running),
                     reordered_by_cancel(store, cluster, {k: running[k] for k in targets}), removed)


def _remove_throttles_recorded(session: ZkSession, store: Store, topics: list[str], snap: ClusterSnapshot,
                               tree: ClusterTree, *, cluster: str, summary: str, actor: str | None) -> bool:
    action = store.begin(cluster=cluster, kind="remove-throttles", target=", ".join(topics)[:200] or "brokers",
                         summary=summary, payload={"topics": topics}, actor=actor)
    try:
        removed = remove_throttles(session, topics, snap, tree)
    except ZkWriteOutcomeUnknownError as e:
        settle_unknown_write(session, store, action, e)
        return True
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise
    store.finish(action, ok=True, result="removed" if removed else "no throttles were set")
    return removed


def clear_throttles(session: ZkSession, store: Store, topics: Iterable[str], *, cluster: str, summary: str,
                    actor: str | None = None) -> bool:
    """Remove the throttles of `topics` and every broker's rates, recorded (the auto-throttle loop's end, when it
    knows no plan to verify)."""
    snap, tree = _live(session)
    return _remove_throttles_recorded(session, store, sorted(set(topics)), snap, tree, cluster=cluster,
                                      summary=summary, actor=actor)


# --- the throttle of a running reassignment -------------------------------------------------------------


def change_throttle(session: ZkSession, store: Store, rate: int | None, *, cluster: str,
                    actor: str | None = None) -> "ThrottleChanged":
    """Raise or lower (None: remove) the replication throttle of the running reassignment, as Kafka's
    --execute --additional --throttle does: the leader/follower rates on every broker that moves data, and the
    topics' throttled-replica lists of the moving partitions, in one multi-op checked against the versions read.
    Recorded (kind "throttle") with every value it replaces. ReassignmentNotRunningError when none runs."""
    from core.reassign_progress import ThrottleChanged, previous_rate, running_of, throttle_record, throttles_of

    if rate is not None:
        _check_rate(rate)
    snap, tree = _live(session)
    moving = [m for m in running_of(snap) if m.adding or m.removing]
    throttles = throttles_of(moving, rate or 0)
    topics = sorted(set(throttles.leader) | set(throttles.follower))
    refuse_corrupt(snap, [zf.CONTROLLER, *(zf.topic_config_path(t) for t in topics),
                          *(zf.broker_config_path(b) for b in throttles.brokers)], "change the throttle")
    ops = throttle_ops(tree, throttles, rate)
    summary, payload, before = throttle_record(throttles, moving, rate, tree.broker_configs, tree.topic_configs)
    action = store.begin(cluster=cluster, kind="throttle", target=f"brokers {','.join(map(str, throttles.brokers))}",
                         summary=summary, payload={**payload, "writes": [op.path for op in ops]}, actor=actor)
    try:
        if ops:
            _multi(session, ops)
    except ZkWriteOutcomeUnknownError as e:
        summary += f" ({settle_unknown_write(session, store, action, e)})"
    except (ZkBadVersionError, ZkNoNodeError, ZkNodeExistsError):
        store.finish(action, ok=False, result="changed concurrently: " + CHANGED_MEANWHILE)
        raise ValidationError(CHANGED_MEANWHILE) from None
    except Exception as e:
        store.finish(action, ok=False, result=str(e))
        raise
    store.finish(action, ok=True, result=summary if ops else summary + " (already set: nothing to write)")
    return ThrottleChanged(action, rate, previous_rate(before), before, throttles, len(moving))


def _check_rate(rate: int) -> None:
    if rate <= 0:
        raise ValidationError(f"--rate must be a positive number of bytes per second, got {rate}",
                              hint="to remove the throttle while it runs: --unthrottled; verify removes it at the end")
    if rate > JAVA_LONG_MAX:
        raise ValidationError(f"--rate must be at most {JAVA_LONG_MAX:,} bytes per second (a Java long, as Kafka "
                              f"reads the rate), got {rate:,}")
