"""Reassignment planners behind one interface: `plan(snapshot, request) -> PlanResult`.

    from core.balance import STRATEGIES, PlanRequest
    result = STRATEGIES["balanced"](snapshot, PlanRequest(drain_brokers=(7,)))
    result.reassignment_json(); result.report.replicas_moved

`kafka-generate` is what `kafka-reassign-partitions.sh --generate` proposes (the baseline); `balanced` moves
only what its goals need. See base.py for the request and its defaults. Pure: no I/O.
"""

from __future__ import annotations

from core.balance import balanced, kafka_generate
from core.balance.base import Planner, PlanRequest, PlanResult
from core.balance.metrics import Distribution, MetricsReport
from core.balance.scoring import IMPORTED, ImportedPlan, import_plan, score

STRATEGIES: dict[str, Planner] = {
    kafka_generate.NAME: kafka_generate.plan,
    balanced.NAME: balanced.plan,
}

__all__ = ["IMPORTED", "STRATEGIES", "Distribution", "ImportedPlan", "MetricsReport", "PlanRequest", "PlanResult",
           "Planner", "import_plan", "score"]
