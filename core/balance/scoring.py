"""Score an assignment made elsewhere (an imported plan, a hand edit) with the planners' own metrics.

`score` is what every strategy's result goes through (`base.finish`), applied to a given target instead of a
computed one, so an imported document and a planned one are compared on the same numbers. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from core.balance.base import PlanRequest, PlanResult, TopicPartition, finish, resolve
from core.errors import KeelError
from core.model import ClusterSnapshot
from core.plans import ReassignmentPlan, parse_reassignment, rollback_for, validate_reassignment

IMPORTED = "imported"


def score(snapshot: ClusterSnapshot, assignment: Mapping[TopicPartition, Sequence[int]],
          request: PlanRequest, *, strategy: str = IMPORTED) -> PlanResult:
    """`assignment` (partition -> replicas, for some partitions) scored over the request's scope: partitions it
    does not name keep their replicas. Brokers with and without racks are scored without racks, as
    --disable-rack-aware would plan them."""
    try:
        scope = resolve(snapshot, request)
    except KeelError:
        if not request.rack_aware:
            raise
        request = replace(request, rack_aware=False)
        scope = resolve(snapshot, request)
    after = [tuple(assignment.get(k, current)) for k, current in zip(scope.keys, scope.current)]
    return finish(scope, after, strategy, request, [])


@dataclass(frozen=True)
class ImportedPlan:
    """A reassignment document made elsewhere, validated as Kafka would and scored like a planned one.
    Execute writes `plan` exactly as given."""

    plan: ReassignmentPlan
    result: PlanResult
    rollback: ReassignmentPlan
    warnings: tuple[str, ...]


def import_plan(snapshot: ClusterSnapshot, text: str | bytes, *, sizes: Mapping[TopicPartition, int] | None = None,
                wave_partitions: int | None = None, wave_broker_moves: int | None = None) -> ImportedPlan:
    """Parse and validate (PlanError with Kafka's message), then score over the document's topics and every alive
    broker."""
    plan = parse_reassignment(text)
    warnings = validate_reassignment(plan, snapshot)
    wanted = plan.assignment()
    request = PlanRequest(topics=tuple(sorted({t for t, _ in wanted})),
                          partition_sizes=dict(sizes) if sizes is not None else None,
                          wave_partitions=wave_partitions, wave_broker_moves=wave_broker_moves)
    result = score(snapshot, wanted, request)
    return ImportedPlan(plan, result, rollback_for(plan, snapshot),
                        tuple(dict.fromkeys([*warnings, *result.warnings])))
