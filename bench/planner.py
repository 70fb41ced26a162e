"""Planner benchmark: kafka-generate (Kafka's --generate) beside balanced, on generated clusters.

    .venv/bin/python bench/planner.py            # expansion and drain (96 brokers), then the 215-broker cluster
    .venv/bin/python bench/planner.py --quick    # skip the 215-broker cluster

Scenarios:
  expand   96 brokers in 3 racks of 32; 50,000 partitions RF 3 over 300 topics of varied sizes, placed by Kafka's
           rack-aware assignment over the 84 old brokers; 12 new brokers (4 per rack) are empty.
  drain    the expanded cluster after the balanced plan, draining 5 brokers.
  big      215 brokers in 3 racks; ~933,000 partitions RF 3 (2.8 million replicas) over 3,000 topics, placed over
           200 old brokers; 15 new brokers are empty.
Partition sizes are per-topic (log-uniform, 1 MB - 10 GB) +-20% per partition, and feed the byte goal.
"balanced+rates" adds the write-rate goal (core/balance/traffic.py) with a rate for every partition, skewed: per topic
Pareto-distributed (a few hot topics), 100 B/s - 20 MB/s, +-20% per partition; it is timed in the same process as
"balanced" on the same cluster, and the ratio of the two printed (the goal must cost at most 1.2x).

Columns: moves = replicas copied; lower bound = metrics.lower_bound; replica/leader spread = max - min per target
broker (uneven racks force some replica spread: "off target" counts brokers outside floor/ceil of their own mean);
bytes max/mean over all target brokers; topic skew = worst topic's max - min replicas per broker; seconds = wall
clock of the planner call, cpu s = its CPU time (other work on the machine inflates the first, not the second).
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace


from core.assignment import assign_replicas  # noqa: E402
from core.balance import STRATEGIES, PlanRequest, PlanResult  # noqa: E402
from core.model import Broker, ClusterSnapshot, Partition, Topic  # noqa: E402

RACKS = 3
COLUMNS = ("scenario", "strategy", "moves", "lower bound", "moves/LB", "replica spread", "off target", "leader spread",
           "rack violations", "bytes max/mean", "writes dev", "topic skew", "seconds", "cpu s")


def cluster(n_old: int, n_new: int, n_partitions: int, n_topics: int, seed: int
            ) -> tuple[ClusterSnapshot, dict[tuple[str, int], int]]:
    """Kafka-placed topics on brokers 0..n_old-1; brokers n_old.. registered and empty. Rack = id % 3."""
    rng = random.Random(seed)
    old = [(b, f"rack{b % RACKS}") for b in range(n_old)]
    brokers = tuple(Broker(id=b, rack=f"rack{b % RACKS}", host=f"broker{b}", port=9092)
                    for b in range(n_old + n_new))
    weights = [rng.paretovariate(1.2) for _ in range(n_topics)]
    counts = [max(1, int(w / sum(weights) * n_partitions)) for w in weights]
    counts[counts.index(max(counts))] += n_partitions - sum(counts)
    topics, sizes = [], {}
    for i, n in enumerate(counts):
        name = f"topic-{i:04d}"
        base = 10 ** rng.uniform(6, 10)
        assignment = assign_replicas(old, n, 3, rng=rng)
        parts = []
        for p in range(n):
            replicas = tuple(assignment[p])
            parts.append(Partition(name, p, replicas, replicas[0], replicas))
            sizes[(name, p)] = int(base * rng.uniform(0.8, 1.2))
        topics.append(Topic(name, tuple(parts)))
    return ClusterSnapshot("bench", "", "generated", brokers, tuple(topics)), sizes


def skewed_rates(snapshot: ClusterSnapshot, seed: int) -> dict[tuple[str, int], float]:
    """Bytes/s per partition: per topic Pareto (alpha 0.7) from 100 B/s, capped at 20 MB/s, +-20% per partition."""
    rng = random.Random(seed * 31 + 1)
    rates = {}
    for t in snapshot.topics:
        base = min(100 * rng.paretovariate(0.7), 20e6)
        for p in t.partitions:
            rates[(t.name, p.partition)] = base * rng.uniform(0.8, 1.2)
    return rates


def applied(snapshot: ClusterSnapshot, result: PlanResult) -> ClusterSnapshot:
    """The snapshot after a plan has run (replicas only; leaders follow the preferred replica)."""
    topics = []
    for t in snapshot.topics:
        parts = tuple(replace(p, replicas=r, leader=r[0], isr=r) if (r := result.target.get((p.topic, p.partition)))
                      else p for p in t.partitions)
        topics.append(replace(t, partitions=parts))
    return replace(snapshot, topics=tuple(topics))


def run(scenario: str, strategy: str, snapshot: ClusterSnapshot, request: PlanRequest
        ) -> tuple[PlanResult, list[str], float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = STRATEGIES[strategy.split("+")[0]](snapshot, request)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    r = result.report
    ratio = r.moves_over_lower_bound
    row = [scenario, strategy, f"{r.replicas_moved:,}", f"{r.lower_bound:,}", "-" if ratio is None else f"{ratio:.3f}",
           f"{r.replicas[1].spread:g}", str(r.brokers_off_target[1]), f"{r.leaders[1].spread:g}",
           str(r.rack_violations[1]),
           f"{r.bytes[1].max_over_mean:.3f}" if r.bytes else "-",
           f"{r.traffic.max_deviation[0]:.0%}->{r.traffic.max_deviation[1]:.1%}" if r.traffic else "-",
           str(r.topic_skew[1]), f"{wall:.1f}", f"{cpu:.1f}"]
    return result, row, wall, cpu


def both(scenario: str, snapshot: ClusterSnapshot, request: PlanRequest, rows: list[list[str]],
         rates: dict[tuple[str, int], float] | None = None) -> PlanResult:
    every_topic = tuple(t.name for t in snapshot.topics)
    rows.append(run(scenario, "kafka-generate", snapshot, replace(request, topics=every_topic))[1])
    result, row, wall, cpu = run(scenario, "balanced", snapshot, request)
    rows.append(row)
    if rates is not None:
        with_rates, row2, wall2, cpu2 = run(scenario, "balanced+rates", snapshot,
                                            replace(request, partition_rates=rates))
        rows.append(row2)
        print(f"{scenario}: balanced {wall:.2f} s ({cpu:.2f} s CPU), with the write-rate goal {wall2:.2f} s "
              f"({cpu2:.2f} s CPU): {wall2 / wall:.2f}x wall clock, {cpu2 / cpu:.2f}x CPU; "
              f"{with_rates.report.traffic.summary()}", flush=True)
    return result


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [list(COLUMNS), *rows]) for i in range(len(COLUMNS))]

    def line(row: list[str]) -> str:  # two text columns, then numbers
        return "  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([line(list(COLUMNS)), line(["-" * w for w in widths]), *map(line, rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 215-broker, 2.8-million-replica cluster")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows: list[list[str]] = []

    start = time.process_time()
    snapshot, sizes = cluster(84, 12, 50_000, 300, args.seed)
    print(f"expand: {snapshot.partition_count:,} partitions, {snapshot.replica_count:,} replicas, "
          f"{len(snapshot.brokers)} brokers, generated in {time.process_time() - start:.1f} s cpu", flush=True)
    request = PlanRequest(partition_sizes=sizes, seed=args.seed)
    expanded = both("expand", snapshot, request, rows, skewed_rates(snapshot, args.seed))

    drained = applied(snapshot, expanded)
    both("drain 5", drained, replace(request, drain_brokers=(0, 1, 2, 3, 4)), rows)
    print(table(rows), flush=True)

    if not args.quick:
        start = time.process_time()
        big, big_sizes = cluster(200, 15, 933_334, 3_000, args.seed)
        print(f"\nbig: {big.partition_count:,} partitions, {big.replica_count:,} replicas, {len(big.brokers)} brokers, "
              f"generated in {time.process_time() - start:.1f} s cpu", flush=True)
        both("big", big, PlanRequest(partition_sizes=big_sizes, seed=args.seed), rows, skewed_rates(big, args.seed))
        print(table(rows[-3:]))


if __name__ == "__main__":
    main()
