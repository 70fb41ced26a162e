"""The Reassign page's plain-data helpers: the planner request from the page's inputs, an imported plan scored like a
planned one, and a plan shaped for drawing (broker x topic counts with the long tail folded, per-broker loads, the
diff and status tables, the time estimate, waves as executable documents).

No streamlit and no ZooKeeper here: the page (dashboard/reassign/page.py) draws, core computes, and this module
only reshapes, so it is unit-testable in microseconds.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pandas as pd

from core.balance import IMPORTED, STRATEGIES, PlanRequest, PlanResult
from core.balance import import_plan as score_imported
from core.balance.costs import copy_seconds
from core.balance.requests import DEFAULT_STRATEGY, plan, plan_request
from core.balance.shape import (  # noqa: F401  (re-exported for the page)
    MAX_HEATMAP_CELLS,
    TOP_TOPICS,
    BrokerLoads,
    Heatmap,
    broker_loads,
    broker_marks,
    empty_brokers,
    moves_of,
    replicas_per_broker,
    shown_brokers,
    topic_broker_counts,
)
from core.model import ClusterSnapshot
from core.plans import PartitionStatus, ReassignmentPlan, ReassignStatus, settled  # noqa: F401  (settled: re-export)
from dashboard.audit import when

if TYPE_CHECKING:
    from core.audit.store import Action

COMPLETE, IN_FLIGHT, NOT_AT_TARGET, GONE = (ReassignStatus.COMPLETE, ReassignStatus.IN_PROGRESS,
                                            ReassignStatus.NOT_AT_TARGET, ReassignStatus.GONE)

Key = tuple[str, int]

GOAL_REBALANCE = "Rebalance topics"
GOAL_FILL = "Fill new brokers"
GOAL_DRAIN = "Drain brokers"
GOAL_RF = "Change replication factor"
GOAL_IMPORT = "Import a plan"
GOALS = (GOAL_REBALANCE, GOAL_FILL, GOAL_DRAIN, GOAL_RF, GOAL_IMPORT)

MB = 1_000_000  # throttles are typed in MB/s (decimal, as Kafka's --throttle is bytes/s)
DEFAULT_THROTTLE_MB = 50.0
MAX_JSON_PREVIEW = 20_000  # characters of plan JSON shown inline; the downloads have it all

DIFF_COLUMNS = ["Topic", "Partition", "Before", "After", "Added", "Removed", "Moves", "Preferred leader"]
STATUS_COLUMNS = ["Topic", "Partition", "Status", "Replicas now", "Target"]
STATUS_ORDER = {IN_FLIGHT: 0, NOT_AT_TARGET: 1, COMPLETE: 2, GONE: 3}


def strategies() -> list[str]:
    """Strategy names, the default first."""
    return sorted(STRATEGIES, key=lambda n: (n != DEFAULT_STRATEGY, n))


def digest(data: str | bytes | None) -> str | None:
    if data is None:
        return None
    return hashlib.sha1(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


# --- the plan, as the page holds it ------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """A plan ready to draw and execute: the engine's scored result and the exact document Execute writes."""

    source: str  # the strategy, or "imported"
    result: PlanResult
    plan: ReassignmentPlan  # what Execute writes: the planned changes, or an imported document as given
    plan_json: str
    rollback_json: str
    fingerprint: str  # of the document: confirmations are keyed on it
    seconds: float  # how long planning (or parsing and scoring) took
    warnings: tuple[str, ...]
    sizes: Mapping[Key, int] | None = None
    extras: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # derived tables, once each

    @property
    def empty(self) -> bool:
        return not self.result.proposed and not any(
            e.replicas != self.before.get((e.topic, e.partition)) for e in self.plan.entries)

    @property
    def before(self) -> dict[Key, tuple[int, ...]]:
        """The scope's replicas before the plan (every partition the planner looked at)."""
        cached = self.extras.get("before")
        if cached is None:
            rollback = self.result.rollback
            cached = {k: rollback.get(k, v) for k, v in self.result.target.items()}
            self.extras["before"] = cached
        return cached

    def derived(self, name: str, fn):
        """fn(), computed once per plan (plans are cached per snapshot and request, so once per plan made)."""
        if name not in self.extras:
            self.extras[name] = fn()
        return self.extras[name]


def build_request(snapshot: ClusterSnapshot, goal: str, strategy: str, *, topics: Sequence[str] = (),
                  drain: Sequence[int] = (), replication_factor: int | None = None,
                  sizes: Mapping[Key, int] | None = None, max_moves: int | None = None, seed: int = 0,
                  rack_aware: bool = True, per_topic_spread: bool = False, wave_partitions: int | None = None,
                  wave_broker_moves: int | None = None, rates: Mapping[Key, float] | None = None
                  ) -> PlanRequest | None:
    """The engine's request (core.balance.requests.plan_request) for the page's goal, or None while the goal still
    lacks its input (no broker to drain, no topic or replication factor to change)."""
    if goal == GOAL_FILL:
        topics = ()
    elif goal == GOAL_DRAIN:
        if not drain:
            return None
        topics = ()
    elif goal == GOAL_RF:
        if not topics or replication_factor is None:
            return None
    elif goal == GOAL_REBALANCE:
        drain, replication_factor = (), None
    else:
        return None
    if goal != GOAL_DRAIN:
        drain = ()
    if goal != GOAL_RF:
        replication_factor = None
    return plan_request(snapshot, strategy, topics=topics, drain=drain, replication_factor=replication_factor,
                        sizes=sizes, max_moves=max_moves, seed=seed, rack_aware=rack_aware,
                        per_topic_spread=per_topic_spread, wave_partitions=wave_partitions,
                        wave_broker_moves=wave_broker_moves, rates=rates)


def request_key(strategy: str, request: PlanRequest, sizes_digest: str | None, rates_key: str | None = None) -> str:
    """A short stable key of a request (sizes and rates by the digest or time of the data they came from)."""
    fields = {k: v for k, v in request.__dict__.items() if k not in ("partition_sizes", "partition_rates")}
    text = repr((strategy, sorted(fields.items(), key=lambda kv: kv[0]), sizes_digest, rates_key))
    return digest(text) or ""


def run_planner(snapshot: ClusterSnapshot, strategy: str, request: PlanRequest) -> Planned:
    """core.balance.requests.plan, as the CLI's `plan` does (on the cluster as it will be once a running
    reassignment is done)."""
    started = time.perf_counter()
    result = plan(snapshot, strategy, request)
    return _planned(strategy, result, result.plan, result.rollback_json(), started, result.warnings,
                    request.partition_sizes)


def import_plan(snapshot: ClusterSnapshot, text: str | bytes, *, sizes: Mapping[Key, int] | None = None,
                wave_partitions: int | None = None, wave_broker_moves: int | None = None) -> Planned:
    """A reassignment document validated as Kafka does (PlanError with Kafka's message) and scored by the engine
    (core.balance.import_plan, as `plan --import` does). Execute writes the document as given."""
    started = time.perf_counter()
    imported = score_imported(snapshot, text, sizes=sizes, wave_partitions=wave_partitions,
                              wave_broker_moves=wave_broker_moves)
    return _planned(IMPORTED, imported.result, imported.plan, imported.rollback.to_json(), started,
                    imported.warnings, dict(sizes) if sizes is not None else None)


def _planned(source: str, result: PlanResult, plan: ReassignmentPlan, rollback_json: str, started: float,
             warnings: Iterable[str], sizes: Mapping[Key, int] | None) -> Planned:
    plan_json = plan.to_json()
    return Planned(source, result, plan, plan_json, rollback_json, digest(plan_json) or "",
                   time.perf_counter() - started, tuple(dict.fromkeys(warnings)), sizes)


# --- waves -------------------------------------------------------------------------------------------


def wave_count(planned: Planned) -> int:
    waves = planned.result.waves
    return len(waves) if waves else (1 if planned.plan.entries else 0)


def wave_keys(planned: Planned) -> list[list[Key]]:
    """The document's partitions per wave; entries that change nothing (an imported document may have them) go
    with the first wave."""
    waves = planned.result.waves
    keys = [(e.topic, e.partition) for e in planned.plan.entries]
    if not waves:
        return [keys] if keys else []
    out = [list(w) for w in waves]
    placed = {k for w in waves for k in w}
    out[0] += [k for k in keys if k not in placed]
    return out


def subset(plan: ReassignmentPlan, keys: Iterable[Key]) -> ReassignmentPlan:
    wanted = set(keys)
    return ReassignmentPlan(tuple(e for e in plan.entries if (e.topic, e.partition) in wanted))


# --- numbers for the cost panel ------------------------------------------------------------------------


def estimate_seconds(planned: Planned, snapshot: ClusterSnapshot, throttle: int | None) -> float | None:
    """core.balance.costs.copy_seconds of the plan shown (None without sizes or throttle)."""
    return copy_seconds(planned.result, planned.sizes, snapshot, throttle)


def human_bytes(n: float | None, unknown: str = "unknown") -> str:
    if n is None:
        return unknown
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1000
    return f"{n:,.2f} PB"


def human_duration(seconds: float | None, unknown: str = "unknown") -> str:
    if seconds is None:
        return unknown
    s = int(round(seconds))
    if seconds < 1:
        return "< 1 s"
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m:02d} min"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def ratio_text(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"


def before_after_text(pair: tuple[float, float] | None, fmt=lambda v: f"{v:,g}") -> str:
    if pair is None:
        return "unknown"
    return f"{fmt(pair[0])} → {fmt(pair[1])}"


# --- brokers ----------------------------------------------------------------------------------------------


# --- tables -------------------------------------------------------------------------------------------------


def ids(xs: Iterable[int]) -> str:
    xs = list(xs)
    return ", ".join(map(str, xs)) if xs else "—"


def diff_table(planned: Planned) -> pd.DataFrame:
    """One row per partition of the document whose replicas change (order included)."""
    before = planned.before
    wave_of: dict[Key, int] = {}
    if planned.result.waves:
        for i, keys in enumerate(wave_keys(planned)):
            wave_of.update(dict.fromkeys(keys, i + 1))
    rows = []
    for e in planned.plan.entries:
        key = (e.topic, e.partition)
        old = tuple(before.get(key, ()))
        new = e.replicas
        if old == new:
            continue
        lead_old, lead_new = (old[0] if old else None), new[0]
        row = {"Topic": e.topic, "Partition": e.partition, "Before": ids(old), "After": ids(new),
               "Added": ids(b for b in new if b not in old), "Removed": ids(b for b in old if b not in new),
               "Moves": sum(1 for b in new if b not in old),
               "Preferred leader": f"{lead_old} → {lead_new}" if lead_old != lead_new else str(lead_new)}
        if wave_of:
            row["Wave"] = wave_of.get(key, 1)
        rows.append(row)
    columns = DIFF_COLUMNS + (["Wave"] if wave_of else [])
    return pd.DataFrame(rows, columns=columns)


def status_counts(statuses: Sequence[PartitionStatus]) -> dict[str, int]:
    counts = Counter(s.status for s in statuses)
    return {status: counts.get(status, 0) for status in (COMPLETE, IN_FLIGHT, NOT_AT_TARGET, GONE)}


def status_table(statuses: Sequence[PartitionStatus]) -> pd.DataFrame:
    """Partitions of a running plan, those still moving first, then those off target, then the complete ones."""
    ordered = sorted(statuses, key=lambda s: (STATUS_ORDER.get(s.status, 3), s.topic, s.partition))
    return pd.DataFrame([{"Topic": s.topic, "Partition": s.partition, "Status": s.status,
                          "Replicas now": ids(s.replicas), "Target": ids(s.target)} for s in ordered],
                        columns=STATUS_COLUMNS)


# --- runs: what the run panel counts, how a recorded run is named ---------------------------------------------


def in_progress(statuses: Sequence[PartitionStatus]) -> list[Key]:
    """The partitions of a run still in progress (in /admin/reassign_partitions, or adding / removing replicas, of a
    topic that exists): what the panel's In progress counts and what its Cancel offers, one source for both."""
    return [(s.topic, s.partition) for s in statuses if s.status == IN_FLIGHT]


def epoch(iso: str) -> float:
    """time.time() of an ISO timestamp the store wrote ("2026-11-22T03:00:00Z"); now when it does not parse."""
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


def run_label(action: Action) -> str:
    """How the list of earlier runs names a recorded one. A rollback is the rollback of its action (the summary
    Execute wrote says "reassignment of N partitions"); one Verify found complete says so."""
    what = (f"rollback of action #{action.rollback_of} ({action.target})"
            if action.kind == "rollback" and action.rollback_of else action.summary)
    parts = [f"#{action.id}", when(action.at), action.actor, what]
    if action.completed_at:
        parts.append(f"verified complete {when(action.completed_at)}")
    parts += [f"rolled back by #{i}" for i in action.rolled_back_by]
    return " · ".join(parts)

