"""What a reassignment costs in time: the copy at a throttle, wave by wave. Pure.

Kafka applies the throttle per broker (leader.replication.throttled.rate on the brokers that send, follower.* on
those that receive): a leader sends, and a new replica receives, throttled replication traffic at most `throttle`
bytes/s each. So a wave takes about its busiest broker's bytes (received, or sent as the partition's current leader)
/ throttle, and waves run one after another. Writes arriving meanwhile, and the time between waves, are not counted.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from core.balance.base import PlanResult, TopicPartition
from core.model import NO_LEADER, ClusterSnapshot


def copy_seconds(result: PlanResult, sizes: Mapping[TopicPartition, int] | None, snapshot: ClusterSnapshot,
                 throttle: int | None) -> float | None:
    """Copy time of `result` at `throttle` bytes/s on `snapshot` (its current leaders send); None without partition
    sizes or without a throttle."""
    if sizes is None or not throttle:
        return None
    leaders = {(p.topic, p.partition): p.leader for p in snapshot.partitions()}
    waves = result.waves or (tuple(sorted(result.proposed)),)
    total = 0.0
    for wave in waves:
        received: Counter[int] = Counter()
        sent: Counter[int] = Counter()
        for key in wave:
            old, new = result.rollback[key], result.proposed[key]
            arrivals = [b for b in new if b not in old]
            if not arrivals:
                continue
            size = sizes.get(key, 0)
            source = leaders.get(key, NO_LEADER)
            if source not in old:
                source = old[0] if old else NO_LEADER
            for b in arrivals:
                received[b] += size
                sent[source] += size
        total += max([0, *received.values(), *sent.values()]) / throttle
    return total


__all__ = ["copy_seconds"]
