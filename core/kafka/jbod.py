"""Moving replicas between the log directories of their broker (JBOD), through the Admin API's
alterReplicaLogDirs - what Kafka's `kafka-reassign-partitions.sh --execute` does for the `log_dirs` of a plan
(ReassignPartitionsCommand: `adminClient.alterReplicaLogDirs`, one request per broker). kafka-python 3.0.12 has
it (`KafkaAdminClient.alter_replica_log_dirs`); Keel calls it through core.kafka.admin's client and error
translation, then follows the move with describeLogDirs: the broker copies the replica into a "future" log in the
target directory (isFuture) and swaps it in once it has caught up.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from kafka.structs import TopicPartitionReplica

import kafka.errors as kerrors
from core.kafka.admin import KafkaAdmin
from core.logdirs import DirRequest, JbodView, view_from_document

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


__all__ = ["describe", "alter_log_dirs", "wait_moved"]
