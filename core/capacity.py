"""How many partitions a topic needs, and what uneven racks cost: advice computed, never written.

* `advise_partitions`: the classic rule from Kafka's committers (Jun Rao, "How to choose the number of
  topics/partitions in a Kafka cluster?"): with a target throughput Tt and the throughput one partition sustains
  for a producer (Tp) and for a consumer (Tc), a topic needs at least ``p = max(Tt/Tp, Tt/Tc)`` partitions, rounded
  up. Keel then rounds up to a multiple of the broker count when that at most doubles the count, so that every
  broker leads the same number of the topic's partitions, and states what more partitions cost (open files,
  unavailability after an unclean broker failure, end-to-end latency, client memory) with this topic's figures.
* `rack_skew`: when racks hold different numbers of brokers, Kafka's rack-aware placement puts a replica of (almost)
  every partition into each rack, so the brokers of a small rack carry more. The figures come from running
  `core.assignment`'s own rack-aware placement over the brokers (every start index, as Kafka draws one at random)
  and counting per broker, beside the rack-unaware placement for comparison (even, but racks shared).

Pure: plain data in, plain data out; no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from core.assignment import RackAwareMode, assign_replicas, brokers_for_mode
from core.errors import ValidationError
from core.model import Broker, ClusterSnapshot

# Kafka's published limits for a ZooKeeper-mode cluster (the figures quoted in Kafka's operations docs and KIP-500):
# about 4,000 partition replicas per broker and 200,000 partitions per cluster.
MAX_REPLICAS_PER_BROKER = 4000
MAX_CLUSTER_PARTITIONS = 200_000
# Jun Rao's estimates: an unclean broker failure makes each of its leader partitions unavailable for about 5 ms
# (the controller elects them one by one); replicating 1,000 partitions between two brokers adds about 20 ms.
FAILOVER_MS_PER_PARTITION = 5
PRODUCER_BATCH_BYTES = 16 * 1024  # batch.size default: the producer buffers at least one batch per partition
CONSUMER_FETCH_BYTES = 1024 * 1024  # max.partition.fetch.bytes default: per partition and fetch
MAX_ADVICE = 1_000_000


@dataclass(frozen=True)
class PartitionAdvice:
    target_mbps: float
    producer_mbps: float
    consumer_mbps: float
    by_producer: int  # ceil(Tt / Tp)
    by_consumer: int  # ceil(Tt / Tc)
    minimum: int  # max of both: the classic rule
    partitions: int  # the advice (the minimum, or rounded up to a multiple of the broker count)
    brokers: int | None
    replication_factor: int | None
    rounding: str  # why the advice is (or is not) rounded
    tradeoffs: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    current: int | None = None  # the topic's partition count, when advising for an existing topic
    current_note: str | None = None

    @property
    def bound_by(self) -> str:
        if self.by_producer == self.by_consumer:
            return "producers and consumers alike"
        return "the producers" if self.by_producer > self.by_consumer else "the consumers"

    def to_dict(self) -> dict:
        return {"target_mbps": self.target_mbps, "producer_mbps": self.producer_mbps,
                "consumer_mbps": self.consumer_mbps, "by_producer": self.by_producer, "by_consumer": self.by_consumer,
                "minimum": self.minimum, "partitions": self.partitions, "brokers": self.brokers,
                "replication_factor": self.replication_factor, "rounding": self.rounding,
                "tradeoffs": list(self.tradeoffs), "warnings": list(self.warnings), "current": self.current,
                "current_note": self.current_note}


def _throughput(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number of MB/s, got {value!r}")
    if math.isnan(value) or math.isinf(value):
        raise ValidationError(f"{name} must be a finite number of MB/s, got {value}")
    if value <= 0:
        raise ValidationError(f"{name} must be a positive number of MB/s, got {value:g}",
                              hint=None if "target" in name else "measure one partition's throughput with "
                              "kafka-producer-perf-test / kafka-consumer-perf-test on a topic of one partition")
    return float(value)


def _ceil(ratio: float) -> int:
    """ceil, tolerant of float noise (100 / 10 / 1.0000000001 is 10, not 11)."""
    return max(1, math.ceil(ratio - 1e-9))


def advise_partitions(target_mbps: float, producer_mbps: float, consumer_mbps: float, *,
                      brokers: int | None = None, replication_factor: int | None = None,
                      current: int | None = None) -> PartitionAdvice:
    """The partition count for `target_mbps`, given what one partition sustains for a producer and a consumer."""
    tt = _throughput(target_mbps, "the target throughput (--target-mbps)")
    tp = _throughput(producer_mbps, "the producer throughput per partition (--producer-mbps)")
    tc = _throughput(consumer_mbps, "the consumer throughput per partition (--consumer-mbps)")
    if brokers is not None and (isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1):
        raise ValidationError(f"the broker count (--brokers) must be a positive integer, got {brokers!r}")
    if replication_factor is not None and (isinstance(replication_factor, bool)
                                           or not isinstance(replication_factor, int) or replication_factor < 1):
        raise ValidationError(f"the replication factor must be a positive integer, got {replication_factor!r}")
    by_producer, by_consumer = _ceil(tt / tp), _ceil(tt / tc)
    minimum = max(by_producer, by_consumer)
    if minimum > MAX_ADVICE:
        raise ValidationError(
            f"{tt:g} MB/s at {min(tp, tc):g} MB/s per partition needs {minimum:,} partitions: more than any Kafka "
            f"cluster carries (ZooKeeper mode: about {MAX_CLUSTER_PARTITIONS:,} partitions per cluster)",
            hint="check the units: all three figures are MB/s")

    partitions = minimum
    if brokers is None:
        rounding = "not rounded: give the broker count (--brokers) to round to a multiple of it"
    elif minimum % brokers == 0:
        rounding = f"already a multiple of the {brokers} brokers: each leads {minimum // brokers}"
    else:
        rounded = math.ceil(minimum / brokers) * brokers
        if rounded <= 2 * minimum:
            partitions = rounded
            rounding = (f"rounded up from {minimum} to {rounded}, a multiple of the {brokers} brokers: each broker "
                        f"leads {rounded // brokers} of them, where {minimum} would leave "
                        f"{minimum % brokers} broker(s) with one more leader than the others")
        else:
            rounding = (f"kept at {minimum}: rounding up to {rounded} (a multiple of the {brokers} brokers) would "
                        f"more than double it; {brokers - minimum} broker(s) lead none of its partitions")

    rf = replication_factor
    replicas = partitions * (rf or 1)
    per_broker = replicas / brokers if brokers else None
    led = math.ceil(partitions / brokers) if brokers else partitions
    tradeoffs = [
        f"More open files: every replica is a directory with an index, a time index and a log file per segment; "
        f"{partitions} partitions" + (f" x RF {rf} = {replicas:,} replicas" if rf else "")
        + (f", about {per_broker:,.0f} per broker" if per_broker is not None else "") + ".",
        f"Longer unavailability on an unclean broker failure: the controller elects new leaders one partition at a "
        f"time (about {FAILOVER_MS_PER_PARTITION} ms each), so a broker leading {led} of them leaves the last one "
        f"without a leader for about {led * FAILOVER_MS_PER_PARTITION / 1000:g} s (plus the ZooKeeper session "
        "timeout); a controller failover reads every partition's state first.",
        "More end-to-end latency: a message is exposed to consumers once every in-sync replica has it, and one "
        "fetcher thread replicates all partitions between two brokers (about 20 ms more per 1,000 partitions); "
        "keep partitions per broker under 100 x brokers x RF when latency matters.",
        f"More memory in clients: a producer buffers at least one batch per partition (batch.size, 16 KiB: "
        f"{partitions * PRODUCER_BATCH_BYTES / 2**20:,.1f} MiB for this topic) and a consumer of every partition "
        f"fetches up to max.partition.fetch.bytes (1 MiB) each: {partitions * CONSUMER_FETCH_BYTES / 2**20:,.0f} MiB.",
        "Keyed data: adding partitions later moves keys to other partitions (per-key order breaks at that moment), "
        "so size for the throughput expected in a year or two, not today's.",
    ]
    warnings = []
    if per_broker is not None and per_broker > MAX_REPLICAS_PER_BROKER:
        warnings.append(f"{per_broker:,.0f} replicas per broker for this topic alone: above the ~"
                        f"{MAX_REPLICAS_PER_BROKER:,} a ZooKeeper-mode broker carries well; add brokers or measure "
                        "a higher per-partition throughput")
    if partitions > MAX_CLUSTER_PARTITIONS:
        warnings.append(f"{partitions:,} partitions: above the ~{MAX_CLUSTER_PARTITIONS:,} a ZooKeeper-mode cluster "
                        "carries")
    note = None
    if current is not None:
        if current >= partitions:
            note = f"the topic has {current} partitions: enough for {tt:g} MB/s (the advice is {partitions})"
        elif current >= minimum:
            note = (f"the topic has {current} partitions: enough for the throughput ({minimum} needed); "
                    f"{partitions} would balance leaders over the brokers")
        else:
            note = (f"the topic has {current} partitions: {minimum - current} short of the {minimum} that "
                    f"{tt:g} MB/s needs; add partitions to {partitions} (keys then map to other partitions)")
    return PartitionAdvice(tt, tp, tc, by_producer, by_consumer, minimum, partitions, brokers, rf, rounding,
                           tuple(tradeoffs), tuple(warnings), current, note)


# --- uneven racks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerShare:
    broker: int
    rack: str
    rack_brokers: int  # brokers in its rack
    aware: float  # replicas per placed topic of `partitions` partitions, rack-aware (mean over start indices)
    unaware: float  # the same, rack-unaware
    even: float  # partitions x RF / brokers

    @property
    def extra(self) -> float:
        """Rack-aware load over an even share: 0.5 is 50 % more replicas (and bytes, and traffic) than even."""
        return self.aware / self.even - 1 if self.even else 0.0


@dataclass(frozen=True)
class RackSkew:
    racks: dict[str, int]  # rack -> brokers, sorted by rack
    replication_factor: int
    partitions: int
    shares: tuple[BrokerShare, ...]  # by broker id
    unaware_shared: float  # rack-unaware: mean partitions (of `partitions`) with two replicas in one rack
    notes: tuple[str, ...] = field(default=())

    @property
    def uneven(self) -> bool:
        return len(set(self.racks.values())) > 1

    @property
    def small_racks(self) -> tuple[str, ...]:
        least = min(self.racks.values())
        return tuple(r for r, n in self.racks.items() if n == least)

    @property
    def max_extra(self) -> float:
        return max((s.extra for s in self.shares), default=0.0)

    @property
    def matters(self) -> bool:
        """Worth a warning: racks of different sizes and a broker more than 5 % above an even share."""
        return self.uneven and self.max_extra > 0.05

    def summary(self) -> str:
        if not self.uneven:
            return f"Every rack holds {next(iter(self.racks.values()))} broker(s): rack-aware placement stays even."
        worst = max(self.shares, key=lambda s: (s.extra, -s.broker))
        small = ", ".join(f"{r} ({self.racks[r]} broker{'s' if self.racks[r] != 1 else ''})" for r in self.small_racks)
        small_extra = max(s.extra for s in self.shares if s.rack in self.small_racks)
        return (f"Racks hold different numbers of brokers ({', '.join(f'{r}: {n}' for r, n in self.racks.items())}). "
                f"With replication factor {self.replication_factor}, Kafka's rack-aware placement loads the brokers "
                f"of the smallest rack ({small}) up to {small_extra:+.0%} over an even share; the most loaded broker, "
                f"{worst.broker} (rack {worst.rack}), carries {worst.aware:g} instead of {worst.even:g} replicas per "
                f"{self.partitions} partitions ({worst.extra:+.0%}), and as much more disk, replication traffic and "
                f"fetch load. Rack-unaware placement is even but puts two replicas of about "
                f"{self.unaware_shared:.0f} of those {self.partitions} partitions into one rack.")

    def to_dict(self) -> dict:
        return {"racks": self.racks, "replication_factor": self.replication_factor, "partitions": self.partitions,
                "uneven": self.uneven, "max_extra": round(self.max_extra, 4),
                "brokers": [{"broker": s.broker, "rack": s.rack, "rack_brokers": s.rack_brokers,
                             "rack_aware": s.aware, "rack_unaware": s.unaware, "even": s.even,
                             "extra": round(s.extra, 4)} for s in self.shares],
                "rack_unaware_partitions_sharing_a_rack": self.unaware_shared, "notes": list(self.notes)}


def rack_skew(brokers: Iterable[Broker | tuple[int, str | None]], replication_factor: int,
              partitions: int | None = None) -> RackSkew | None:
    """Per broker, the replicas Kafka's rack-aware placement gives it for a topic of `partitions` partitions and
    `replication_factor`, averaged over every start index (Kafka draws one at random), next to rack-unaware
    placement and an even share. None when not every broker has a rack (Kafka then places rack-unaware)."""
    pairs = [(b.id, b.rack) if isinstance(b, Broker) else (int(b[0]), b[1]) for b in brokers]
    if not pairs or any(rack is None for _, rack in pairs):
        return None
    n = len(pairs)
    if not isinstance(replication_factor, int) or not 1 <= replication_factor <= n:
        raise ValidationError(f"replication factor {replication_factor!r} must be between 1 and the {n} brokers")
    partitions = partitions if partitions is not None else n * 12
    if not isinstance(partitions, int) or partitions < 1:
        raise ValidationError(f"the partition count must be a positive integer, got {partitions!r}")
    # Kafka draws the start index and the follower shift independently: every pair on small clusters, a fixed
    # spread of pairs on large ones. The topic is sampled (at least 4 rounds of the broker list) so that one call
    # places at most ~400,000 replicas; the counts are scaled back to `partitions`.
    draws = [(s, h) for s in range(n) for h in range(n)] if n <= 12 else \
        [(s, (s * 31 + k * 17) % n) for s in range(n) for k in range(2)]
    sample = max(n * 4, min(partitions, 200_000 // (len(draws) * replication_factor)))
    aware_brokers = brokers_for_mode(pairs, RackAwareMode.ENFORCED)
    plain_brokers = brokers_for_mode(pairs, RackAwareMode.DISABLED)
    rack_of = dict(pairs)
    aware, unaware, shared = Counter(), Counter(), 0
    for start, shift in draws:
        for bucket, source in ((aware, aware_brokers), (unaware, plain_brokers)):
            placed = assign_replicas(source, sample, replication_factor, rng=_Draws(start, shift))
            for replicas in placed.values():
                bucket.update(replicas)
                if source is plain_brokers and len({rack_of[b] for b in replicas}) < len(replicas):
                    shared += 1
    scale = partitions / (sample * len(draws))
    racks = dict(sorted(Counter(rack for _, rack in pairs).items(), key=lambda kv: kv[0].encode("utf-16-be")))
    even = partitions * replication_factor / n
    shares = tuple(BrokerShare(b, rack_of[b], racks[rack_of[b]], round(aware[b] * scale, 2),
                               round(unaware[b] * scale, 2), round(even, 2)) for b in sorted(rack_of))
    notes = []
    if replication_factor < len(racks):
        notes.append(f"replication factor {replication_factor} is below the {len(racks)} racks: each partition "
                     "uses some racks only, so the skew is smaller than with one replica per rack")
    return RackSkew(racks, replication_factor, partitions, shares, round(shared * scale, 2), tuple(notes))


class _Draws:
    """A stand-in for `random.Random` that hands assign_replicas a chosen start index, then a chosen shift."""

    def __init__(self, *values: int):
        self._values = list(values)

    def randrange(self, n: int) -> int:
        return self._values.pop(0) % n


def typical_replication_factor(replication_factors: Sequence[int], brokers: int) -> int:
    """The most common replication factor among topics (3 when there are none), capped by the broker count."""
    counts = Counter(rf for rf in replication_factors if rf > 0)
    rf = max(counts, key=lambda r: (counts[r], r)) if counts else 3
    return max(1, min(rf, brokers))


def skew_inputs(brokers: Sequence[tuple[int, str | None]], replication_factors: Sequence[int],
                replication_factor: int | None = None) -> int:
    """The replication factor a rack-skew question is asked at: the one given, else the most common among the
    cluster's topics. ValidationError when there is no broker or the brokers cannot hold it (Kafka refuses such a
    topic; the page and the CLI both say so rather than answer for another replication factor)."""
    if not brokers:
        raise ValidationError("no broker is registered: nothing to place on")
    rf = replication_factor or typical_replication_factor(replication_factors, len(brokers))
    if not 1 <= rf <= len(brokers):
        raise ValidationError(f"replication factor {rf} must be between 1 and the {len(brokers)} live brokers")
    return rf


def cluster_rack_skew(snapshot: ClusterSnapshot, replication_factor: int | None = None,
                      partitions: int | None = None) -> RackSkew | None:
    """rack_skew over the live brokers of `snapshot` (Kafka places new replicas on live brokers only)."""
    brokers = [(b.id, b.rack) for b in snapshot.brokers if b.alive]
    rf = skew_inputs(brokers, [t.replication_factor for t in snapshot.topics], replication_factor)
    return rack_skew(brokers, rf, partitions)


__all__ = ["PartitionAdvice", "advise_partitions", "BrokerShare", "RackSkew", "cluster_rack_skew", "rack_skew",
           "skew_inputs", "typical_replication_factor"]
