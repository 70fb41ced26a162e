"""Moving replicas between the log directories of their broker (JBOD), through the Admin API's
alterReplicaLogDirs - what Kafka's `kafka-reassign-partitions.sh --execute` does for the `log_dirs` of a plan
(ReassignPartitionsCommand: `adminClient.alterReplicaLogDirs`, one request per broker). kafka-python 3.0.12 has
it (`KafkaAdminClient.alter_replica_log_dirs`); Keel calls it through core.kafka.admin's client and error
translation, then follows the move with describeLogDirs: the broker copies the replica into a "future" log in the
target directory (isFuture) and swaps it in once it has caught up.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Mapping

from kafka.structs import TopicPartitionReplica

import kafka.errors as kerrors
from core.errors import KRaftControllerError, ReassignmentInProgressError, ValidationError
from core.kafka.admin import KafkaAdmin
from core.logdirs import DirRequest, JbodView, load_plan, parse_dir_plan, view_from_document
from core.model import ClusterSnapshot
from core.audit.store import Store

Key = tuple[str, int, int]  # topic, partition, broker


def describe(admin: KafkaAdmin, brokers: Iterable[int] | None = None) -> JbodView:
    """Every broker's log directories, replicas and sizes (describeLogDirs)."""
    return view_from_document(admin.log_dirs(brokers).to_document())


def alter_log_dirs(admin: KafkaAdmin, requests: Iterable[DirRequest]) -> dict[Key, str | None]:
    """Ask each broker to move its replicas to the requested directories: {(topic, partition, broker): None when
    accepted, else Kafka's error for that replica}."""
    asked = {(r.topic, r.partition, r.broker): r.target for r in requests}
    if not asked:
        return {}
    with admin._translate("move replicas between log directories (alterReplicaLogDirs)"):
        answer = admin._admin.alter_replica_log_dirs(
            {TopicPartitionReplica(t, p, b): target for (t, p, b), target in asked.items()})
    got = {(k.topic, k.partition, k.broker_id): err for k, err in answer.items()}
    out: dict[Key, str | None] = {}
    for key in asked:
        err = got.get(key)
        if key not in got:
            out[key] = f"broker {key[2]} did not answer for this replica"
        elif err is None or err is kerrors.NoError or (isinstance(err, type) and issubclass(err, kerrors.NoError)):
            out[key] = None
        else:
            cls = err if isinstance(err, type) else type(err)
            out[key] = f"{cls.__name__}: {getattr(cls, 'description', '') or err}"
    return out


def wait_moved(admin: KafkaAdmin, requests: Iterable[DirRequest], *, timeout: float = 60.0, interval: float = 0.5,
               progress: Callable[[int, int], None] | None = None) -> tuple[list[DirRequest], list[DirRequest]]:
    """Until every replica is in its target directory and no future replica is left for it: (done, pending)."""
    todo = list(requests)
    deadline = time.monotonic() + timeout
    while True:
        view = describe(admin, sorted({r.broker for r in todo}))
        where, future = view.location(), view.future()
        done = [r for r in todo if where.get((r.topic, r.partition, r.broker)) == r.target
                and (r.topic, r.partition, r.broker) not in future]
        pending = [r for r in todo if r not in done]
        if progress is not None:
            progress(len(done), len(todo))
        if not pending or time.monotonic() >= deadline:
            return done, pending
        time.sleep(interval)


@dataclass(frozen=True)
class DirMoves:
    """What `execute` asked of the brokers: the moves, the notes about entries with nothing to do, and the action
    that records them (None when there was nothing to move)."""

    action_id: int | None
    requests: tuple[DirRequest, ...]
    notes: tuple[str, ...]


def execute(admin: KafkaAdmin, store: Store, plan: str | bytes | Mapping, snapshot: ClusterSnapshot, *,
            cluster: str, actor: str | None = None) -> DirMoves:
    """Move replicas between the log directories of their broker as the `log_dirs` of `plan` (reassignment JSON)
    say: re-checked against `snapshot` (the live assignment, read right before) and the brokers' directories
    (describeLogDirs, read now), recorded pending before the request and finished with the brokers' answer, as
    core.zk.reassign_writes.execute records a reassignment. Refused while a KRaft controller owns the cluster and for a
    partition being reassigned (its replicas are moving between brokers). ValidationError (nothing recorded as
    applied) when a broker refuses a move; the caller follows the copies with `wait_moved`."""
    if snapshot.controller is not None and snapshot.controller.is_kraft:
        raise KRaftControllerError("A KRaft controller owns this cluster: Keel does not move log dirs during a "
                                   "ZooKeeper -> KRaft migration")
    document = load_plan(plan)
    busy = {(p.topic, p.partition) for p in snapshot.partitions() if p.adding_replicas or p.removing_replicas}
    busy |= {(r.topic, r.partition) for r in snapshot.in_progress.reassignment}
    entries = document.get("partitions") if isinstance(document, Mapping) else None
    named = {(e.get("topic"), e.get("partition")) for e in entries or () if isinstance(e, Mapping)}
    moving = sorted(named & busy)
    if moving:
        raise ReassignmentInProgressError(
            "partition(s) " + ", ".join(f"{t}-{p}" for t, p in moving[:5]) + (" ..." if len(moving) > 5 else "")
            + " are being reassigned between brokers: move their log directories once that is done; nothing was "
              "written")
    replicas = {(p.topic, p.partition): p.replicas for p in snapshot.partitions()}
    requests, notes = parse_dir_plan(document, replicas, describe(admin))
    if not requests:
        return DirMoves(None, (), tuple(notes))
    action_id = store.begin(cluster=cluster, kind="log-dir-move", target=",".join(sorted({r.topic for r in requests})),
                            summary=f"move {len(requests)} replica(s) between log directories",
                            payload={"plan": document, "requests": [asdict(r) for r in requests]}, actor=actor)
    try:
        answers = alter_log_dirs(admin, requests)
    except Exception as e:
        store.finish(action_id, ok=False, result=str(e))
        raise
    failed = {k: e for k, e in answers.items() if e is not None}
    refusals = "; ".join(f"{t}-{p} on broker {b}: {e}" for (t, p, b), e in sorted(failed.items()))
    store.finish(action_id, ok=not failed, result="accepted by the brokers" if not failed else refusals)
    if failed:
        raise ValidationError(f"the brokers refused {len(failed)} of {len(requests)} move(s): {refusals} "
                              f"(action #{action_id} in History)")
    return DirMoves(action_id, tuple(requests), tuple(notes))


__all__ = ["DirMoves", "describe", "alter_log_dirs", "execute", "wait_moved"]
