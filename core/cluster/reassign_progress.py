"""Take one sample of a running reassignment's progress (core.reassign_progress) from a cluster: which reassignments
run through the engine the handle names (ZooKeeper's /admin/reassign_partitions and partition states, or the
controller's ListPartitionReassignments for a cluster reached through its brokers), and the log sizes through the
brokers' Admin API (one DescribeLogDirs request per broker holding a replica of them). The CLI's `status` and the
Reassign page both sample through here."""

from __future__ import annotations

import time
from typing import Any, Callable

from core.cluster.engines import through_brokers
from core.kafka import reassign_progress as kafka_progress
from core.reassign_progress import Moving, Sample, reassigning_brokers, sample_of, scope

Handle = Any  # ZkSession | KafkaAdmin


def running(handle: Handle, admin) -> tuple[Moving, ...]:
    """The partitions being reassigned. Through ZooKeeper when `handle` is a session; a reassignment started through
    the Admin API leaves no /admin node, so without one the controller is asked (Kafka 2.4+)."""
    if through_brokers(handle):
        return kafka_progress.running(handle)
    from core.zk import reassign_progress as zk_progress

    found = zk_progress.running(handle)
    if found is None:
        return kafka_progress.running(admin) if admin.supports_cancel else ()
    return found


def take(handle: Handle, admin, earlier: Sample | None = None, *,
         clock: Callable[[], float] = time.time) -> Sample:
    """One sample: the running partitions (and those `earlier` followed that finished since) with the size of each of
    their replicas, stamped halfway through the size read."""
    moving = running(handle, admin)
    now_running, finished = scope(moving, earlier)
    followed = now_running + finished
    start = clock()
    sizes = kafka_progress.replica_sizes(admin, reassigning_brokers(followed), [m.key for m in followed])
    return sample_of((start + clock()) / 2, moving, sizes, earlier)
