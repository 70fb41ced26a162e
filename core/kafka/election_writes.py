"""Preferred-leader elections through the brokers' Admin API (KRaft clusters): ElectLeaders (PREFERRED).

The ZooKeeper engine's twin (core.zk.election_writes): same functions, results and audit rows. The selection is
computed on a fresh read with core.elections (the controller elects the preferred replica only when it is alive and
in the ISR, and Keel leaves partitions being reassigned out), and only the eligible partitions are sent. The Admin
API has no compare-and-set: right before sending, the running reassignments of those partitions are asked again,
and the election is refused if one started meanwhile. KRaft's election is synchronous: Kafka answers per partition
(ELECTION_NOT_NEEDED: its preferred replica leads already, not an error) once the controller has acted.
"""

from __future__ import annotations

import time
from typing import Sequence

from core.audit.store import Store
from core.elections import Outcome, Selection, TopicPartition, candidates, outcomes, select
from core.errors import KeelError, ReassignmentInProgressError, ValidationError
from core.kafka.admin import KafkaAdmin, KafkaAdminError, KafkaUnreachableError
from core.kafka.metadata import read_snapshot, snapshot_of
from core.kafka.topic_writes import KafkaWriteOutcomeUnknownError, refusal_error, refuse_unreadable, unknown_outcome
from core.kafka.write_requests import KafkaRefusal
from core.model import ClusterSnapshot
from core.plans import listing
from core.writes import Triggered  # noqa: F401  (re-exported)

_CHECK = "python -m core elect --bootstrap-server HOST:PORT (its preview lists who leads now)"


def plan_election(admin: KafkaAdmin, **scope) -> tuple[ClusterSnapshot, Selection]:
    """Live state and the selection for `scope` (see core.elections.select)."""
    snap = read_snapshot(admin)
    action = "elect preferred leaders"
    topics = ([scope["topic"]] if scope.get("topic") is not None
              else sorted({str(t) for t, _ in scope["partitions"]}) if scope.get("partitions") is not None else [])
    for t in topics:
        refuse_unreadable(snap, t, action)
    if scope.get("partitions") is not None:  # named here with a bounded list: a 50 MB file lists millions
        existing = {(p.topic, p.partition) for p in snap.partitions()}
        unknown = [f"{t}-{p}" for t, p in scope["partitions"] if (str(t), int(p)) not in existing]
        if unknown:
            raise ValidationError(f"The following partitions do not exist in the cluster: {listing(unknown, ', ')}")
    return snap, select(snap, **scope)


def trigger(admin: KafkaAdmin, store: Store, *, cluster: str, actor: str | None = None, **scope) -> Triggered:
    """Re-validate against live state, record, and elect the eligible partitions of `scope`. Partitions Kafka
    refused are named in the action's result; when it refused every one, the typed error is raised."""
    _, selection = plan_election(admin, **scope)
    if not selection.eligible:
        why = "; ".join(f"{c.topic}-{c.partition}: {c.reason}" for c in selection.ineligible[:10])
        raise ValidationError(f"nothing to elect in {selection.scope}: "
                              + (why if why else "every partition is already led by its preferred replica"))
    keys = selection.partitions
    _refuse_reassigning(admin, keys)
    summary = (f"preferred leader election for {selection.scope}: {len(keys)} partitions to move"
               + (f", {len(selection.ineligible)} not eligible" if selection.ineligible else ""))
    payload = [{"request": "ElectLeaders", "election_type": "PREFERRED",
                "partitions": [{"topic": t, "partition": p} for t, p in keys]}]
    action = store.begin(cluster=cluster, kind="preferred-election", target=selection.scope, summary=summary,
                         payload=payload, rollback=None, actor=actor)
    try:
        answers = admin.elect_preferred(keys)
    except KafkaUnreachableError as e:  # sent or not, carried out or not: nobody knows
        message = unknown_outcome("the election", str(e), _CHECK)
        store.finish(action, ok=False, result=message)
        raise KafkaWriteOutcomeUnknownError(message) from None
    except KeelError as e:
        store.finish(action, ok=False, result=str(e))
        raise
    refused = {k: r for k, r in answers.items() if r is not None}
    if not refused:
        store.finish(action, ok=True, result=summary)
        return Triggered(action, selection)
    text = refusals_text(refused)
    if len(refused) == len(keys):  # nothing was elected
        error = _all_refused(refused, text)
        store.finish(action, ok=False, result=str(error))
        raise error
    store.finish(action, ok=True, result=f"{summary}; {len(refused)} refused by Kafka: {text}")
    return Triggered(action, selection)


def refusals_text(refused: dict[TopicPartition, KafkaRefusal]) -> str:
    """"t-0: PREFERRED_LEADER_NOT_AVAILABLE (Kafka's message); ...", the first ten."""
    shown = [f"{t}-{p}: {code} ({message})" for (t, p), (code, message) in sorted(refused.items())]
    return listing(shown, "; ", 10)


def _all_refused(refused: dict[TopicPartition, KafkaRefusal], text: str) -> KeelError:
    codes = {code for code, _ in refused.values()}
    if len(codes) == 1:  # one reason for all: its typed error
        return refusal_error((codes.pop(), f"Kafka elected none of the {len(refused)} partitions: {text}"))
    return KafkaAdminError(f"Kafka elected none of the {len(refused)} partitions: {text}")


def _refuse_reassigning(admin: KafkaAdmin, keys: Sequence[TopicPartition]) -> None:
    """A reassignment started since the read moves leaders itself: leave the election until it is over (as Keel's
    selection leaves out the partitions it saw reassigned), before anything is recorded."""
    if not admin.supports_cancel:
        return
    moving = sorted(admin.reassignments(keys))
    if moving:
        raise ReassignmentInProgressError(
            f"A partition reassignment started for {listing([f'{t}-{p}' for t, p in moving], ', ')} while the "
            "election was being planned: nothing was written.", hint="try again: it will leave them out")


def wait_for_outcome(admin: KafkaAdmin, keys: Sequence[TopicPartition], *, timeout: float = 30.0,
                     poll: float = 0.2) -> tuple[bool, list[Outcome]]:
    """(done, per-partition outcome). The controller acted before answering; the brokers' metadata may lag a moment,
    so the leaders are read again until every partition is led by its preferred replica or cannot be (a reason
    other than "not acted yet"), or `timeout` passes (done False)."""
    keys = sorted({(str(t), int(p)) for t, p in keys})
    topics = sorted({t for t, _ in keys})
    deadline = time.monotonic() + timeout
    while True:
        snap = snapshot_of(admin.describe_cluster(), admin.topic_partitions(topics),
                           reassigning=admin.reassignments(keys) if admin.supports_cancel else {},
                           source=admin.bootstrap)
        index = {(p.topic, p.partition): p for p in snap.partitions()}
        waiting = {c.key for c in candidates(snap, [index[k] for k in keys if k in index]) if c.eligible}
        found = outcomes(snap, keys)
        if not waiting:
            return True, found
        if time.monotonic() >= deadline:
            return False, found
        time.sleep(poll)
