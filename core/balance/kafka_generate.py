"""The baseline: exactly what `kafka-reassign-partitions.sh --generate` proposes.

`ReassignPartitionsCommand.generateAssignment` (2.x Scala; `calculateAssignment` in the 3.5+ Java tool): for each
topic, `assignReplicasToBrokers(brokerMetadatas, partitionCount, replicas.size)` where `replicas` is the head
of the topic's current assignment, and the broker metadata is the --broker-list filtered to registered brokers,
sorted by id, with racks unless --disable-rack-aware. Every partition of the topic is reassigned from scratch,
so most replicas move even when the cluster is already balanced.

Kafka draws the start index and follower shift from Java's Random per topic; here they are drawn from one
`random.Random(request.seed)`, topic by topic in name order, so a seed reproduces the plan. Kafka's "head" is
the first partition of a hash map (an order that varies by version); with a uniform RF, the normal case, any
partition gives the same RF, and here the lowest-numbered partition is used, with a warning when RFs differ.
A requested RF change replaces the head's RF (an extension: --generate has no such option).
Partitions holding a replica of a down broker that is not drained are left as they are (see base.py: a
reassignment keeping that replica cannot complete); --generate would re-place them too.
"""

from __future__ import annotations

import random

from core.assignment import RackAwareMode, assign_replicas, brokers_for_mode
from core.balance.base import PlanRequest, PlanResult, finish, resolve
from core.errors import PlanError
from core.model import ClusterSnapshot

NAME = "kafka-generate"


def plan(snapshot: ClusterSnapshot, request: PlanRequest) -> PlanResult:
    scope = resolve(snapshot, request, topics_required=True)
    mode = RackAwareMode.ENFORCED if request.rack_aware else RackAwareMode.DISABLED
    brokers = brokers_for_mode([(b, snapshot.broker_by_id[b].rack) for b in scope.targets], mode)
    rng = random.Random(request.seed)
    after = list(scope.current)
    warnings: list[str] = []
    if request.per_topic_spread:
        warnings.append("per_topic_spread is a balanced-strategy option; kafka-generate ignores it")
    start = 0
    while start < len(scope.keys):
        end = start
        while end < len(scope.keys) and scope.topic_of[end] == scope.topic_of[start]:
            end += 1
        topic = scope.topics[scope.topic_of[start]]
        rfs = {len(r) for r in scope.current[start:end]}
        if len(rfs) > 1 and request.replication_factor is None:
            warnings.append(f"topic {topic} has partitions of different replication factors {sorted(rfs)}; "
                            f"using partition {scope.keys[start][1]}'s ({len(scope.current[start])})")
        rf = scope.new_rf[start] if request.replication_factor is not None else len(scope.current[start])
        proposed = assign_replicas(brokers, end - start, rf, rng=rng)
        for i in range(start, end):
            partition = scope.keys[i][1]
            if scope.frozen[i]:
                continue  # a replica on a down broker that is not drained: left as it is (warned in resolve)
            if partition in proposed:
                after[i] = tuple(proposed[partition])
            else:  # Kafka assigns ids 0..n-1; a gap in the ids leaves a partition it would not touch
                warnings.append(f"{topic}-{partition}: partition ids are not 0..{end - start - 1}; left as it is")
        start = end
    result = finish(scope, after, NAME, request, warnings)
    if request.max_moves is not None and result.report.replicas_moved > request.max_moves:
        raise PlanError(f"kafka-generate moves {result.report.replicas_moved} replicas, over the budget of "
                        f"{request.max_moves}", hint="the balanced strategy moves only what it must")
    return result
