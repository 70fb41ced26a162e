"""What core.reassign_progress samples, read through the brokers' Admin API: which reassignments the controller runs
(ListPartitionReassignments, then the leaders of those partitions only) and the log size of their replicas
(DescribeLogDirs: one request per broker that holds one of them, asking about those partitions only)."""

from __future__ import annotations

from typing import Iterable

from core.kafka.admin import KafkaAdmin
from core.reassign_progress import Moving, ReplicaKey, TopicPartition


def running(admin: KafkaAdmin) -> tuple[Moving, ...]:
    """The reassignments the controller runs, with their leaders (Kafka 2.4+; KafkaUnsupportedError before)."""
    found = admin.reassignments()
    if not found:
        return ()
    leaders: dict[TopicPartition, int] = {}
    for t in admin.topic_partitions(sorted({t for t, _ in found})):
        for p in t.get("partitions") or ():
            if int(p.get("leader_id", -1)) >= 0:
                leaders[(t["name"], int(p["partition_index"]))] = int(p["leader_id"])
    return tuple(Moving(t, p, tuple(dict.fromkeys((*r.replicas, *r.adding))), tuple(r.adding), tuple(r.removing),
                        leaders.get((t, p)))
                 for (t, p), r in sorted(found.items()))


def replica_sizes(admin: KafkaAdmin, brokers: Iterable[int], partitions: Iterable[TopicPartition]
                  ) -> dict[ReplicaKey, int]:
    """(broker, topic, partition) -> bytes of each replica of `partitions` on `brokers` (future replicas of an
    intra-broker move left out; an offline directory holds none)."""
    brokers, partitions = sorted(set(brokers)), sorted(set(partitions))
    if not brokers or not partitions:
        return {}
    wanted = set(partitions)
    dirs = admin.log_dirs(brokers, partitions)
    return {(d.broker, r.topic, r.partition): r.size for d in dirs.dirs if d.error is None for r in d.replicas
            if not r.is_future and (r.topic, r.partition) in wanted}
