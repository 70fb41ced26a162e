"""What a write returns and says, whichever way it reached the cluster: through ZooKeeper (core.zk.topic_admin,
reassign_writes, election_writes) or through the brokers' Admin API (core.kafka.topic_writes, reassign_writes,
election_writes). The two engines share these results, messages and the rollback-throttle rule, so the pages and
the CLI draw and print a write the same way for a ZooKeeper-mode cluster and a KRaft one. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.elections import Selection
from core.plans import PartitionStatus, ReassignmentPlan, Throttles, parse_reassignment
from core.errors import KeelError, ValidationError, changed_meanwhile  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from core.audit.store import Action, Store

# Kafka's own words (ReassignPartitionsCommand) for a second reassignment while one runs.
IN_PROGRESS = "There is an existing assignment running."
CANNOT_CANCEL = ("A reassignment is running: cancel it first (Kafka 2.4+: the Reassign page's Cancel, or `python -m "
                 "core cancel --bootstrap-server HOST:PORT`), or wait for it to finish, then execute the rollback; "
                 "Kafka before 2.4 cannot cancel a running reassignment")
JAVA_LONG_MAX = 2**63 - 1


# --- topics ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    action_id: int
    summary: str
    written: tuple[str, ...]  # what was written, in order: znode paths, or Admin API requests ("CreateTopics orders")


# --- elections -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Triggered:
    action_id: int
    selection: Selection


# --- reassignments -------------------------------------------------------------------------------------------------

AS_RECORDED = "as recorded"  # rollback's default throttle: the rate the reassignment it undoes ran with


@dataclass(frozen=True)
class RollbackThrottle:
    """The rate a rollback runs with (None: unthrottled) and the rate the reassignment it undoes ran with.

    By default they are the same: a rollback moves the same bytes back, and an unthrottled one on a large cluster
    saturates the network the reassignment was throttled to spare. A reassignment that ran unthrottled is rolled
    back unthrottled unless a rate is given."""

    rate: int | None
    recorded: int | None
    action_id: int
    changed_by: int | None = None  # the later `throttle` change (or auto-throttle) whose rate `recorded` is

    def describe(self) -> str:
        """E.g. "throttled at 2,000,000 B/s, the rate action #5 ran with"."""
        rate = f"throttled at {self.rate:,} B/s" if self.rate else "unthrottled"
        if self.rate == self.recorded:
            if self.changed_by is not None:
                return (f"{rate}, the rate in force when action #{self.action_id} ended (set by action "
                        f"#{self.changed_by})")
            return f"{rate}, the rate action #{self.action_id} ran with" if self.rate else \
                f"{rate}, as action #{self.action_id} ran"
        ran = f"at {self.recorded:,} B/s" if self.recorded else "unthrottled"
        return f"{rate} (action #{self.action_id} ran {ran})"


def recorded_throttle(action: "Action") -> int | None:
    """The throttle a recorded reassignment (or rollback) was executed with, None when it ran unthrottled."""
    value = action.payload.get("throttle") if isinstance(action.payload, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def rollback_throttle(action: "Action", throttle: int | None | str = AS_RECORDED,
                      changes: Sequence["Action"] = ()) -> RollbackThrottle:
    """The throttle of `action`'s rollback: `throttle` (None: unthrottled), by default (AS_RECORDED) the rate in
    force when `action` ended: the last applied throttle change of `changes` (History rows of kind "throttle": the
    `throttle` command, the auto-throttle loop) made while it ran on its partitions, else the rate it was executed
    with."""
    recorded, changed_by = recorded_throttle(action), None
    later = _in_force(action, changes)
    if later is not None:
        changed_by = later.id
        recorded = recorded_throttle(later)
    return RollbackThrottle(recorded if throttle == AS_RECORDED else throttle, recorded, action.id, changed_by)


def _in_force(action: "Action", changes: Sequence["Action"]) -> "Action | None":
    """The last applied throttle change on `action`'s cluster after it started, before verify found it complete, that
    names one of its partitions."""
    try:
        mine = {(str(p["topic"]), int(p["partition"])) for p in json.loads(action.payload["plan"])["partitions"]}
    except (KeyError, TypeError, ValueError):
        return None
    found = None
    for c in changes:
        if (c.kind != "throttle" or c.status != "applied" or c.cluster != action.cluster or c.id <= action.id
                or (action.completed_at is not None and c.at > action.completed_at)
                or not isinstance(c.payload, dict)):
            continue
        touched = {(str(t), int(p)) for t, p in c.payload.get("partitions") or ()}
        if touched & mine and (found is None or c.id > found.id):
            found = c
    return found


@dataclass(frozen=True)
class Executed:
    action_id: int
    partitions: int
    moving: int
    rollback: ReassignmentPlan
    throttles: Throttles | None
    warnings: tuple[str, ...]
    rollback_throttle: RollbackThrottle | None = None  # a rollback's: the rate chosen and the one recorded


@dataclass(frozen=True)
class Verified:
    partitions: tuple[PartitionStatus, ...]
    throttles_removed: bool

    @property
    def complete(self) -> bool:
        """Nothing left to wait for: every partition is at its target or no longer exists."""
        return all(p.status.finished for p in self.partitions)

    @property
    def gone(self) -> tuple[PartitionStatus, ...]:
        from core.plans import ReassignStatus

        return tuple(p for p in self.partitions if p.status == ReassignStatus.GONE)


class CancelFailedError(KeelError):
    """Kafka refused to cancel the reassignment of some partitions (Kafka's --cancel wording)."""


@dataclass(frozen=True)
class Cancelled:
    action_id: int | None  # None when none of the partitions had a running reassignment
    cancelled: tuple[tuple[str, int], ...]
    not_running: tuple[tuple[str, int], ...]  # asked for, but no reassignment of theirs is running
    # Kafka's cancel puts a partition back on its original replicas in the order of the reassignment's replica
    # list (target first), which may not be the original order (so another preferred leader):
    # (partition, order after the cancel, order before the reassignment, the reassignment's action id)
    reordered: tuple[tuple[tuple[str, int], tuple[int, ...], tuple[int, ...], int], ...]
    throttles_removed: bool


# --- what both engines read back from the audit store (passed in: this module does no I/O) ----------------------


def rollback_action(store: "Store", action_id: int) -> "Action":
    """The recorded reassignment `action_id`, with a rollback; ValidationError otherwise."""
    action = store.action(action_id)
    if action is None or action.kind not in ("reassignment", "rollback") or not action.rollback:
        raise ValidationError(f"action {action_id} is not a recorded reassignment with a rollback")
    return action


def reordered_by_cancel(store: "Store", cluster: str, cancelled: Mapping[tuple[str, int], Any]):
    """Cancelled partitions whose replica order after the cancel differs from the order the latest recorded
    reassignment of this cluster saved in its rollback."""
    if not cancelled:
        return ()
    left = dict(cancelled)
    out = []
    for action in store.actions(cluster, limit=200):
        if not left:
            break
        if action.kind not in ("reassignment", "rollback") or action.status != "applied" or not action.rollback:
            continue
        try:
            before = parse_reassignment(action.rollback).assignment()
        except KeelError:
            continue
        for key in [k for k in left if k in before]:
            after = tuple(left.pop(key).origin)
            if set(after) == set(before[key]) and after != tuple(before[key]):
                out.append((key, after, tuple(before[key]), action.id))
    return tuple(sorted(out))
