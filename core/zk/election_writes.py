"""Trigger a preferred-leader election through ZooKeeper and watch its outcome.

Writes `/admin/preferred_replica_election` as Kafka's PreferredReplicaLeaderElectionCommand does,
after re-reading live state: only partitions the controller would actually move are written, and
nothing is written while another election is in flight. The write checks the version of every
elected partition's topic node as read, so a partition whose replica list (and so its preferred
leader) changed meanwhile is never elected on stale data, and the state of /admin/reassign_partitions (its
version, or its absence: core.zk.ops), so no partition that a reassignment started meanwhile is elected
(Kafka's controller would elect it anyway; Keel's selection leaves partitions being reassigned out).
Leader and ISR churn is not checked: the controller re-checks that the preferred replica is alive and in sync
when it acts.
"""

from __future__ import annotations

import time
from typing import Sequence

from core import zkformat as zf
from core.elections import Outcome, Selection, TopicPartition, outcomes, select
from core.errors import (
    CorruptZnodeError,
    ElectionInProgressError,
    KRaftControllerError,
    ReassignmentInProgressError,
    ValidationError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
)
from core.model import ClusterSnapshot
from core.audit.store import Store
from core.plans import listing
from core.zk.reader import read_for_write, read_snapshot, refuse_corrupt
from core.zk.reconcile import settle_unknown_write
from core.zk.session import Op, ZkSession, ZkWriteOutcomeUnknownError
from core.zk.tree import ClusterTree
from core.writes import Triggered  # noqa: F401  (re-exported)


def _in_progress_error(keys: Sequence[TopicPartition]) -> ElectionInProgressError:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:20]) + (" ..." if len(keys) > 20 else "")
    return ElectionInProgressError(
        f"Preferred replica leader election currently in progress for {shown}. Aborting operation")


def plan_election(session: ZkSession, **scope) -> tuple[ClusterSnapshot, Selection]:
    """Live state and the selection for `scope` (see core.elections.select); refuses while one runs."""
    snap, selection, _ = _plan(session, **scope)
    return snap, selection


def _plan(session: ZkSession, **scope) -> tuple[ClusterSnapshot, Selection, ClusterTree]:
    snap, tree = read_for_write(session)
    if snap.controller is not None and snap.controller.is_kraft:
        raise KRaftControllerError("A KRaft controller owns this cluster: elections through ZooKeeper would be "
                                   "ignored. Use kafka-leader-election.sh --bootstrap-server.")
    unreadable = tree.problems.get(zf.PREFERRED_ELECTION)
    if unreadable is not None:  # it exists: the controller may be working on it, whatever it says
        raise ElectionInProgressError(
            f"{zf.PREFERRED_ELECTION} exists but is unreadable ({unreadable}): a preferred replica leader election "
            "may be in progress. Aborting operation",
            hint="if no controller is acting on it, inspect the znode and delete it, then try again")
    if snap.in_progress.preferred_election:
        raise _in_progress_error(snap.in_progress.preferred_election)
    action = "elect preferred leaders"
    topics = ([scope["topic"]] if scope.get("topic") is not None
              else sorted({str(t) for t, _ in scope["partitions"]}) if scope.get("partitions") is not None else [])
    refuse_corrupt(snap, [zf.CONTROLLER, *(zf.topic_path(t) for t in topics)], action)
    if scope.get("partitions") is not None:  # named here with a bounded list: a 50 MB file lists millions
        existing = {(p.topic, p.partition) for p in snap.partitions()}
        unknown = [f"{t}-{p}" for t, p in scope["partitions"] if (str(t), int(p)) not in existing]
        if unknown:
            raise ValidationError(f"The following partitions do not exist in the cluster: {listing(unknown, ', ')}")
    selection = select(snap, **scope)
    refuse_corrupt(snap, [*(zf.topic_path(t) for t in sorted({t for t, _ in selection.requested})),
                          *(zf.state_path(t, p) for t, p in selection.requested)], action)
    return snap, selection, tree


def trigger(session: ZkSession, store: Store, *, cluster: str, actor: str | None = None, **scope) -> Triggered:
    """Re-validate against live state, record, and write the eligible partitions of `scope`."""
    _, selection, tree = _plan(session, **scope)
    if not selection.eligible:
        why = "; ".join(f"{c.topic}-{c.partition}: {c.reason}" for c in selection.ineligible[:10])
        raise ValidationError(f"nothing to elect in {selection.scope}: "
                              + (why if why else "every partition is already led by its preferred replica"))
    keys = selection.partitions
    reassignment = _reassignment_guard(session, keys)
    data = zf.encode_preferred_election(keys)
    summary = (f"preferred leader election for {selection.scope}: {len(keys)} partitions to move"
               + (f", {len(selection.ineligible)} not eligible" if selection.ineligible else ""))
    action = store.begin(cluster=cluster, kind="preferred-election", target=selection.scope, summary=summary,
                         payload=[{"op": "create", "path": zf.PREFERRED_ELECTION, "data": data.decode()}],
                         rollback=None, actor=actor)
    checks = [Op("check", zf.topic_path(t), version=tree.versions[zf.topic_path(t)])
              for t in sorted({t for t, _ in keys})]
    try:
        session.multi([*checks, reassignment, Op("create", zf.PREFERRED_ELECTION, data)])
    except ZkWriteOutcomeUnknownError as e:  # committed or not: find out, or leave the action pending
        summary += f" ({settle_unknown_write(session, store, action, e)})"
    except (ZkNodeExistsError, ZkBadVersionError, ZkNoNodeError) as e:
        if e.path == zf.REASSIGN:  # a reassignment started (or moved on) between our read and our write
            store.finish(action, ok=False, result=REASSIGNED_MEANWHILE)
            raise ReassignmentInProgressError(REASSIGNED_MEANWHILE) from None
        if isinstance(e, ZkNodeExistsError):  # someone started an election between our read and our write
            store.finish(action, ok=False, result="another election started first")
            raise _in_progress_error(keys) from None
        message = ("a topic of the election changed while it was being written (its replicas, and so its preferred "
                   "leader, may differ now); nothing was written. Try again.")
        store.finish(action, ok=False, result=message)
        raise ValidationError(message) from None
    store.finish(action, ok=True, result=summary)
    return Triggered(action, selection)


REASSIGNED_MEANWHILE = ("A partition reassignment started or changed while the election was being written (it may "
                        "move partitions of this election); nothing was written. Try again.")


def _reassignment_guard(session: ZkSession, keys: Sequence[TopicPartition]) -> Op:
    """The op that keeps /admin/reassign_partitions as it is now until the election commits: absent, or at this
    version, which lists none of `keys` (refused here, before anything is recorded, if it lists one)."""
    node = session.get(zf.REASSIGN)
    if not node.exists:
        return Op("absent", zf.REASSIGN)
    try:
        listed = {(e.topic, e.partition) for e in zf.decode_reassignment(node.data)}
    except CorruptZnodeError:
        listed = set()  # its partitions cannot be told; its version is still checked
    moving = sorted(set(keys) & listed)
    if moving:
        raise ReassignmentInProgressError(
            f"A partition reassignment started for {listing([f'{t}-{p}' for t, p in moving], ', ')} while the "
            "election was being planned: nothing was written.", hint="try again: it will leave them out")
    return Op("check", zf.REASSIGN, version=node.version)


def wait_for_outcome(session: ZkSession, keys: Sequence[TopicPartition], *, timeout: float = 30.0,
                     poll: float = 0.2) -> tuple[bool, list[Outcome]]:
    """Wait until the controller deletes the election node; (done, per-partition outcome)."""
    deadline = time.monotonic() + timeout
    done = False
    while time.monotonic() < deadline:
        if not session.exists(zf.PREFERRED_ELECTION):
            done = True
            break
        time.sleep(poll)
    return done, outcomes(read_snapshot(session), keys)
