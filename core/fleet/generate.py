"""A synthetic fleet for demos and benchmarks, written straight into a fleet store (numpy + pyarrow, no per-row Python).

Placement is Kafka's own: every topic is assigned with `core.assignment.assign_replicas` semantics (rack-aware when
the cluster has racks), with a random start index and shift per topic as `kafka-topics --create` draws them. To
stay vectorised, the assignment of one topic of n*(n-1) partitions at start index 0 is computed once per cluster
(`placement_table`): it holds every (shift mod n-1, first broker) row Kafka can produce, and any topic's partition p
is then row ((shift + p // n) mod (n-1), (start + p) mod n) of that table.

On top of that, the skews real fleets have (`SKEWS`): new brokers that hold nothing, hot brokers that were handed
extra replicas by hand, racks of unequal size, leaders drifted off their preferred replicas, dead brokers (out of
every ISR, their leaderships moved to the next in-sync replica, offline where none is left), and lagging followers.
In a fleet of five clusters or more every skew appears at least once. The same seed always writes the same fleet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from core.assignment import rack_alternated_brokers
from core.errors import ValidationError
from core.fleet.schema import BROKER_SCHEMA, REPLICA_SCHEMA
from core.fleet.store import write_cluster

SKEWS = ("new_broker", "hot_broker", "unequal_racks", "leader_drift", "dead_broker")
SKEW_PROBABILITY = {"new_broker": 0.25, "hot_broker": 0.25, "unequal_racks": 0.3, "leader_drift": 0.3,
                    "dead_broker": 0.15}
PARTITIONS_PER_CLUSTER = 70_000  # mean at scale 1: 100 clusters -> about 7 million partitions, 21 million replicas
MAX_RF = 4
TOPIC_SIZES = np.array([1, 3, 6, 8, 10, 12, 16, 20, 24, 30, 32, 48, 50, 60, 64, 100, 120, 128, 200, 256])
TOPIC_SIZE_WEIGHTS = np.array([4, 8, 10, 6, 10, 8, 8, 6, 5, 4, 4, 3, 4, 2, 3, 3, 1, 1, 1, 1], dtype=float)
RF_CHOICES = np.array([3, 2, 1, 4])
RF_WEIGHTS = np.array([0.88, 0.04, 0.02, 0.06])
REGIONS = ("use1", "usw2", "euw1", "euc1", "apse1", "apne1")
ENVS = ("prod", "prod", "prod", "stage", "dev")
DOMAINS = ("payments", "orders", "users", "search", "ads", "billing", "inventory", "logs", "metrics", "fraud")
ENTITIES = ("events", "commands", "changelog", "snapshots", "audit", "clicks", "sessions", "updates")
EPOCH = datetime(2026, 1, 5, 3, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class FleetSpec:
    clusters: int = 10
    seed: int = 0
    partitions_total: int | None = None  # None: clusters * PARTITIONS_PER_CLUSTER * scale
    scale: float = 1.0
    max_partitions: int = 200_000        # per cluster
    min_brokers: int = 3
    max_brokers: int = 300
    sizes_probability: float = 0.8       # share of clusters whose replicas have size_bytes (the rest: null)

    def validate(self) -> None:
        if self.clusters < 1:
            raise ValidationError(f"--clusters must be at least 1, got {self.clusters}")
        if self.partitions_total is not None and self.partitions_total < self.clusters:
            raise ValidationError(f"--partitions-total must be at least the cluster count ({self.clusters}), "
                                  f"got {self.partitions_total}")
        if self.partitions_total is None and not self.scale > 0:
            raise ValidationError(f"--scale must be positive, got {self.scale}")
        if self.max_partitions < 1:
            raise ValidationError(f"--max-partitions must be at least 1, got {self.max_partitions}")
        if not 3 <= self.min_brokers <= self.max_brokers:
            raise ValidationError(f"broker counts need 3 <= min <= max, got {self.min_brokers}..{self.max_brokers}")

    @property
    def target_partitions(self) -> int:
        if self.partitions_total is not None:
            return int(self.partitions_total)
        return max(self.clusters, int(round(self.clusters * PARTITIONS_PER_CLUSTER * self.scale)))


@dataclass(frozen=True)
class GeneratedCluster:
    name: str
    brokers: int
    racks: int
    topics: int
    partitions: int
    replicas: int
    skews: tuple[str, ...]
    dead: tuple[int, ...] = ()
    empty: tuple[int, ...] = ()
    hot: tuple[int, ...] = ()


@dataclass
class GenerateResult:
    out: Path
    clusters: list[GeneratedCluster] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def partitions(self) -> int:
        return sum(c.partitions for c in self.clusters)

    @property
    def replicas(self) -> int:
        return sum(c.replicas for c in self.clusters)

    @property
    def brokers(self) -> int:
        return sum(c.brokers for c in self.clusters)


# --- pieces ---------------------------------------------------------------------------------------


def partition_counts(spec: FleetSpec, rng: np.random.Generator) -> np.ndarray:
    """Per-cluster partition counts: lognormal shares of the total, water-filled under the per-cluster cap."""
    n = spec.clusters
    total = min(spec.target_partitions, n * spec.max_partitions)
    weights = rng.lognormal(0.0, 1.0, n)
    counts = np.zeros(n)
    free = np.ones(n, dtype=bool)
    remaining = float(total)
    while free.any():
        share = remaining * weights * free / weights[free].sum()
        over = free & (share > spec.max_partitions)
        if not over.any():
            counts[free] = share[free]
            break
        counts[over] = spec.max_partitions
        remaining -= spec.max_partitions * over.sum()
        free &= ~over
    counts = np.maximum(1, np.floor(counts)).astype(np.int64)
    # hand out the rounding remainder so the total is exact when the cap allows
    short = total - counts.sum()
    room = np.flatnonzero(counts < spec.max_partitions)
    for i in room[:max(0, int(short))]:
        counts[i] += 1
    return counts


def placement_table(brokers: list[tuple[int, str | None]], rf: int) -> np.ndarray:
    """[k mod (n-1), first, j] -> broker id: every replica list Kafka's assignment can produce, RF `rf`.

    Row [k, f] is the replica list `assign_replicas(brokers, n*(n-1), rf, fixed_start_index=0)` gives partition
    k*n + f (first broker index f, follower shift k). It is computed for all rows at once, with Kafka's rack-aware
    skip rule applied column by column; tests check it against `assign_replicas` itself.
    """
    n = len(brokers)
    rf = min(rf, n)
    ids = [b for b, _ in brokers]
    rack_of = {b: r for b, r in brokers if r is not None}
    if rack_of and len(rack_of) < n:
        raise ValidationError("either every broker has a rack or none has")
    if rack_of:
        arranged = np.array(rack_alternated_brokers(rack_of), dtype=np.int32)
        rack_list = sorted(set(rack_of.values()))
        rack_idx = np.array([rack_list.index(rack_of[int(b)]) for b in arranged], dtype=np.int64)
        num_racks = len(rack_list)
    else:
        arranged = np.array(ids, dtype=np.int32)
        rack_idx = np.zeros(n, dtype=np.int64)
        num_racks = 1
    shifts = n - 1
    k_of = np.repeat(np.arange(shifts), n)           # follower shift of each row
    f_of = np.tile(np.arange(n), shifts)              # first broker index of each row
    row_shift = (k_of * num_racks) % shifts           # Kafka multiplies the shift by the rack count
    out = np.full((shifts * n, rf), -1, dtype=np.int32)
    out[:, 0] = arranged[f_of]
    if not rack_of:
        for j in range(1, rf):
            out[:, j] = arranged[(f_of + 1 + (row_shift + j - 1) % shifts) % n]
        return out.reshape(shifts, n, rf)
    if num_racks > 62:
        raise ValidationError(f"too many racks for the vectorised placement: {num_racks}")
    rack_mask = np.left_shift(np.int64(1), rack_idx[f_of])
    racks_held = np.ones(shifts * n, dtype=np.int64)
    count = np.ones(shifts * n, dtype=np.int64)
    active = np.flatnonzero(count < rf)
    step = 0
    while len(active):
        cand_i = (f_of[active] + 1 + (row_shift[active] + step) % shifts) % n
        cand = arranged[cand_i]
        cand_rack = rack_idx[cand_i]
        rack_free = (np.right_shift(rack_mask[active], cand_rack) & 1) == 0
        rack_ok = rack_free | (racks_held[active] == num_racks)
        broker_ok = ~(out[active] == cand[:, None]).any(axis=1) | (count[active] == n)
        take = active[rack_ok & broker_ok]
        out[take, count[take]] = cand[rack_ok & broker_ok]
        newly = rack_free[rack_ok & broker_ok]
        racks_held[take] += newly
        rack_mask[take] |= np.left_shift(np.int64(1), cand_rack[rack_ok & broker_ok])
        count[take] += 1
        active = active[count[active] < rf]
        step += 1
    return out.reshape(shifts, n, rf)


def _rack_names(region: str, count: int) -> list[str]:
    return [f"{region}-az{i + 1}" for i in range(count)]


def _topic_sizes(partitions: int, rng: np.random.Generator) -> np.ndarray:
    """Partition counts of the topics of a cluster, summing to exactly `partitions`."""
    sizes: list[int] = []
    if partitions >= 1000:
        sizes.append(50)  # __consumer_offsets
    left = partitions - sum(sizes)
    p = TOPIC_SIZE_WEIGHTS / TOPIC_SIZE_WEIGHTS.sum()
    mean = float((TOPIC_SIZES * p).sum())
    drawn = rng.choice(TOPIC_SIZES, size=int(left / mean * 1.5) + 16, p=p)
    csum = np.cumsum(drawn)
    k = int(np.searchsorted(csum, left))
    while k >= len(drawn):  # astronomically unlikely: draw more
        drawn = np.concatenate([drawn, rng.choice(TOPIC_SIZES, size=len(drawn), p=p)])
        csum = np.cumsum(drawn)
        k = int(np.searchsorted(csum, left))
    chosen = drawn[:k + 1].copy()
    chosen[-1] -= csum[k] - left
    chosen = chosen[chosen > 0]
    return np.concatenate([np.array(sizes, dtype=np.int64), chosen.astype(np.int64)])


def _topic_names(count: int, internal: bool, rng: np.random.Generator) -> list[str]:
    d = rng.integers(0, len(DOMAINS), count)
    e = rng.integers(0, len(ENTITIES), count)
    v = rng.integers(1, 4, count)
    names = [f"{DOMAINS[d[i]]}.{ENTITIES[e[i]]}.t{i:05d}-v{v[i]}" for i in range(count)]
    if internal and count:
        names[0] = "__consumer_offsets"
    return names


def _choose_skews(forced: set[str], rng: np.random.Generator) -> set[str]:
    chosen = set(forced)
    for skew in SKEWS:
        if rng.random() < SKEW_PROBABILITY[skew]:
            chosen.add(skew)
    return chosen


# --- one cluster --------------------------------------------------------------------------------------


def generate_cluster(name: str, partitions: int, spec: FleetSpec, rng: np.random.Generator,
                     captured_at: datetime, forced: set[str] = frozenset()) -> tuple[pa.Table, pa.Table,
                                                                                    GeneratedCluster]:
    """(replica rows, broker rows, summary) of one synthetic cluster of `partitions` partitions."""
    skews = _choose_skews(set(forced), rng)
    region = REGIONS[int(rng.integers(0, len(REGIONS)))]

    # brokers: enough for 800-3000 replicas each, plus new (empty) brokers
    per_broker = rng.uniform(800, 3000)
    n_new = int(rng.integers(1, 4)) if "new_broker" in skews else 0
    n_old = int(np.clip(round(partitions * 3 / per_broker), spec.min_brokers, spec.max_brokers))
    if n_old + n_new > spec.max_brokers:
        n_new = max(0, min(n_new, spec.max_brokers - spec.min_brokers))
        n_old = spec.max_brokers - n_new
    if n_new == 0:
        skews.discard("new_broker")
    n = n_old + n_new
    base = int(rng.choice([0, 1, 1001]))
    ids = np.arange(base, base + n, dtype=np.int32)

    # racks: none, balanced round robin, or unequal (each rack keeps at least one broker)
    rack_mode = "unequal" if "unequal_racks" in skews else ("none" if rng.random() < 0.15 else "balanced")
    if rack_mode == "none":
        n_racks = 0
        rack_idx = np.full(n, -1, dtype=np.int32)
    else:
        n_racks = int(min(n, rng.choice([2, 3, 3, 3, 4, 6])))
        if rack_mode == "unequal":
            n_racks = max(n_racks, 2)
            w = rng.dirichlet(np.full(n_racks, 3.0))  # e.g. 45/35/20 %: uneven, as racks that grew apart
            rack_idx = np.concatenate([np.arange(n_racks), rng.choice(n_racks, size=n - n_racks, p=w)])
            rng.shuffle(rack_idx)
            rack_idx = rack_idx.astype(np.int32)
        else:
            rack_idx = (np.arange(n) % n_racks).astype(np.int32)
    if rack_mode != "unequal":
        skews.discard("unequal_racks")
    rack_names = _rack_names(region, n_racks)

    def pairs(count: int) -> list[tuple[int, str | None]]:
        return [(int(ids[i]), rack_names[rack_idx[i]] if n_racks else None) for i in range(count)]

    # topics
    sizes = _topic_sizes(partitions, rng)
    k = len(sizes)
    rf = rng.choice(RF_CHOICES, size=k, p=RF_WEIGHTS)
    if partitions >= 1000:
        rf[0] = 3
    rf = np.minimum(rf, n_old).astype(np.int64)
    # placement group of each topic: 0 Kafka rack-aware over the old brokers; 1 over all brokers (created after
    # the new brokers joined, unless they are still empty); 2 rack-unaware over the old brokers (created with
    # --disable-rack-aware, or before racks were configured)
    group = np.zeros(k, dtype=np.int64)
    if n_new and rng.random() < 0.5 and "new_broker" not in forced:
        group[rng.random(k) < 0.03] = 1
    if n_racks and rng.random() < 0.3:
        group[(rng.random(k) < 0.05) & (group == 0)] = 2

    t_of_p = np.repeat(np.arange(k), sizes)
    p_in_t = np.arange(partitions, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    R = np.full((partitions, MAX_RF), -1, dtype=np.int32)
    for g in (0, 1, 2):
        topic_mask = group == g
        if not topic_mask.any():
            continue
        nb = n if g == 1 else n_old
        table = placement_table([(b, None) for b, _ in pairs(nb)] if g == 2 else pairs(nb), MAX_RF)
        start = rng.integers(0, nb, k)
        shift = rng.integers(0, nb, k)
        rows = np.flatnonzero(topic_mask[t_of_p])
        t = t_of_p[rows]
        p = p_in_t[rows]
        first = (p + start[t]) % nb
        row_shift = (shift[t] + p // nb) % (nb - 1)
        R[rows, :table.shape[2]] = table[row_shift, first]
    rf_p = rf[t_of_p]
    R[np.arange(MAX_RF)[None, :] >= rf_p[:, None]] = -1

    # hot brokers: hand-placed extra replicas (sometimes as the preferred leader)
    hot = np.array([], dtype=np.int32)
    if "hot_broker" in skews:
        hot = rng.choice(ids[:n_old], size=1 if n_old < 12 else 2, replace=False)
        sel = np.flatnonzero(rng.random(partitions) < rng.uniform(0.08, 0.25))
        target = hot[rng.integers(0, len(hot), len(sel))]
        pos = rng.integers(0, rf_p[sel])
        fresh = ~(R[sel] == target[:, None]).any(axis=1)
        R[sel[fresh], pos[fresh]] = target[fresh]

    # sizes: per-topic scale, per-partition noise
    topic_bytes = np.minimum(rng.lognormal(np.log(2e8), 1.8, k), 2e12)
    part_bytes = (topic_bytes[t_of_p] * rng.lognormal(0.0, 0.25, partitions)).astype(np.int64)

    # leaders: preferred, unless drifted
    leader_pos = np.zeros(partitions, dtype=np.int64)
    drift = rng.uniform(0.15, 0.45) if "leader_drift" in skews else (rng.uniform(0, 0.03) if rng.random() < 0.4
                                                                      else 0.0)
    sel = np.flatnonzero((rng.random(partitions) < drift) & (rf_p >= 2))
    leader_pos[sel] = rng.integers(1, rf_p[sel])

    # ISR: everyone, minus a few lagging followers
    isr = R >= 0
    lag = rng.uniform(0, 0.02) if rng.random() < 0.4 else 0.0
    sel = np.flatnonzero((rng.random(partitions) < lag) & (rf_p >= 2))
    lag_pos = (leader_pos[sel] + rng.integers(1, rf_p[sel])) % rf_p[sel]
    isr[sel, lag_pos] = False

    # dead brokers: out of every ISR; their leaderships move to the first in-sync replica, else offline (-1)
    alive = np.ones(n, dtype=bool)
    dead = np.array([], dtype=np.int32)
    if "dead_broker" in skews:
        dead = rng.choice(ids[:n_old], size=1 if n_old < 10 else int(rng.integers(1, 3)), replace=False)
        alive[dead - base] = False
        isr &= ~np.isin(R, dead)
        leader_broker = R[np.arange(partitions), leader_pos]
        moved = np.flatnonzero(np.isin(leader_broker, dead))
        has_isr = isr[moved].any(axis=1)
        leader_pos[moved] = np.where(has_isr, isr[moved].argmax(axis=1), -1)

    # flatten to replica rows (partition by partition, positions in order)
    pi, pos = np.nonzero(R >= 0)
    broker = R[pi, pos]
    b_idx = broker - base
    rows = len(pi)
    lagging = ~isr[pi, pos] & alive[b_idx]
    if rng.random() < spec.sizes_probability:
        size = part_bytes[pi]
        size = np.where(lagging, (size * rng.uniform(0.5, 1.0, rows)).astype(np.int64), size)
        size_col = pa.array(size, pa.int64())
    else:
        size_col = pa.nulls(rows, pa.int64())
    ts = pa.array(np.full(rows, int(captured_at.timestamp() * 1000), dtype=np.int64)).cast(
        REPLICA_SCHEMA.field("captured_at").type)
    names = _topic_names(k, partitions >= 1000, rng)
    if n_racks:
        rack_col = pa.DictionaryArray.from_arrays(pa.array(rack_idx[b_idx], pa.int32()), pa.array(rack_names))
    else:
        rack_col = pa.nulls(rows, pa.string())
    replicas = pa.Table.from_arrays([
        ts,
        pa.DictionaryArray.from_arrays(pa.array(t_of_p[pi].astype(np.int32)), pa.array(names, pa.string())),
        pa.array(p_in_t[pi].astype(np.int32)),
        pa.array(pos.astype(np.int32)),
        pa.array(broker.astype(np.int32)),
        rack_col,
        pa.array(alive[b_idx]),
        pa.array(pos == leader_pos[pi]),
        pa.array(pos == 0),
        pa.array(isr[pi, pos]),
        size_col,
    ], names=REPLICA_SCHEMA.names)
    brokers = pa.Table.from_arrays([
        pa.array(np.full(n, int(captured_at.timestamp() * 1000), dtype=np.int64)).cast(
            BROKER_SCHEMA.field("captured_at").type),
        pa.array(ids),
        pa.array([rack_names[i] for i in rack_idx] if n_racks else [None] * n, pa.string()),
        pa.array(alive),
    ], names=BROKER_SCHEMA.names)
    summary = GeneratedCluster(
        name=name, brokers=n, racks=n_racks, topics=k, partitions=partitions, replicas=rows,
        skews=tuple(s for s in SKEWS if s in skews), dead=tuple(int(d) for d in dead),
        empty=tuple(int(b) for b in ids[n_old:] if not (broker == b).any()), hot=tuple(int(h) for h in hot))
    return replicas, brokers, summary


# --- the fleet ----------------------------------------------------------------------------------------


def cluster_names(count: int, rng: np.random.Generator) -> list[str]:
    envs = rng.choice(len(ENVS), count)
    regions = rng.choice(len(REGIONS), count)
    return [f"{ENVS[envs[i]]}-{REGIONS[regions[i]]}-{i + 1:03d}" for i in range(count)]


def generate_fleet(spec: FleetSpec, out: str | Path,
                   progress: Callable[[int, int, GeneratedCluster], None] | None = None) -> GenerateResult:
    """Write a synthetic fleet into the store `out` (clusters already there with the same names are replaced)."""
    spec.validate()
    started = time.monotonic()
    fleet_rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 0x6B65656C]))
    counts = partition_counts(spec, fleet_rng)
    names = cluster_names(spec.clusters, fleet_rng)
    order = fleet_rng.permutation(spec.clusters)
    forced: list[set[str]] = [set() for _ in range(spec.clusters)]
    for i, skew in enumerate(SKEWS):
        forced[int(order[i % spec.clusters])].add(skew)
    seeds = np.random.SeedSequence(spec.seed).spawn(spec.clusters)
    result = GenerateResult(out=Path(out))
    for i in range(spec.clusters):
        rng = np.random.default_rng(seeds[i])
        captured = EPOCH.replace(minute=i % 60, second=(i // 60) % 60)
        replicas, brokers, summary = generate_cluster(names[i], int(counts[i]), spec, rng, captured, forced[i])
        write_cluster(out, names[i], replicas, brokers)
        result.clusters.append(summary)
        if progress is not None:
            progress(i + 1, spec.clusters, summary)
    result.seconds = time.monotonic() - started
    return result
