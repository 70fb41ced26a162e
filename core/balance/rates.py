"""Partition write rates (bytes/s): estimated from timestamped log sizes, or read from a `--rates` file; and what a
plan does to the bytes written per broker (every replica of a partition writes its bytes-in). Pure: the samples are
taken by the edge (core.kafka.rates: one describeLogDirs round per sample) and passed in.

The samples are core.reassign_progress.Sample (`at` and `sizes`: (broker, topic, partition) -> bytes; no
reassignment in them). A partition's size in a sample is the largest of its replicas' sizes: the leader's, as a
follower holds at most what the leader has. Its rate is the growth of that size over the sampled time. Log
retention deletes whole segments, so a size can drop: a drop is not negative traffic, and how much was written
during that interval is unknown, so the interval is left out for that partition (its rate is the growth over the
other intervals divided by their time) and the partition is listed in `dropped`; a partition whose every interval
dropped (or which is missing from all but one sample) has no rate (`unmeasured`, counted as 0 B/s by the planner).

The --rates document (RATES_FORMAT, what `plan --sample-rates ... --rates-output` writes) is either
``{"orders-0": 1200.5, "orders-1": 80}`` ("topic-partition" -> bytes/s), or a list of
``{"topic": "orders", "partition": 0, "bytes_per_s": 1200.5}``, or an object whose "rates" is such a list.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from core.errors import RatesError
from core.reassign_progress import ReplicaKey, Sample

TopicPartition = tuple[str, int]
RATES_FORMAT = "keel.rates/1"
DEFAULT_RATE_TOLERANCE = 0.10  # a broker's write rate within 10 % of its target is balanced
MAX_RATES_BYTES = 256 * 1024 * 1024  # ~60 bytes a partition: millions of partitions


def sample(at: float, replica_sizes: Mapping[ReplicaKey, int]) -> Sample:
    """A size sample for rate estimation: no reassignment, every replica's size."""
    return Sample(float(at), (), (), dict(replica_sizes))


@dataclass(frozen=True)
class RateEstimate:
    rates: dict[TopicPartition, float]  # bytes/s
    seconds: float  # from the first sample to the last
    samples: int
    dropped: tuple[TopicPartition, ...] = ()  # a size fell (retention deleted a segment): those intervals left out
    unmeasured: tuple[TopicPartition, ...] = ()  # no interval without a drop: rate unknown

    def to_dict(self) -> dict:
        return {"format": RATES_FORMAT, "seconds": round(self.seconds, 3), "samples": self.samples,
                "dropped": [f"{t}-{p}" for t, p in self.dropped],
                "unmeasured": [f"{t}-{p}" for t, p in self.unmeasured],
                "rates": [{"topic": t, "partition": p, "bytes_per_s": round(r, 3)}
                          for (t, p), r in sorted(self.rates.items())]}


def estimate(samples: Sequence[Sample]) -> RateEstimate:
    """Each partition's write rate from two or more samples (see the module's note on drops)."""
    ordered = sorted(samples, key=lambda s: s.at)
    if len(ordered) < 2 or ordered[-1].at <= ordered[0].at:
        raise RatesError(f"{len(ordered)} sample(s) at one time give no rate: a rate is the growth of the log "
                         "sizes between two samples", hint="take at least 2 samples some seconds apart "
                                                           "(--sample-rates SECONDS:N with N >= 2)")
    tops: list[dict[TopicPartition, int]] = []
    for s in ordered:
        top: dict[TopicPartition, int] = {}
        for (_, t, p), size in s.sizes.items():
            if size > top.get((t, p), -1):
                top[(t, p)] = size
        tops.append(top)
    grown: dict[TopicPartition, int] = {}
    span: dict[TopicPartition, float] = {}
    dropped: set[TopicPartition] = set()
    for (a, sa), (b, sb) in zip(zip(ordered, tops), zip(ordered[1:], tops[1:])):
        dt = b.at - a.at
        if dt <= 0:
            continue
        for key, after in sb.items():
            before = sa.get(key)
            if before is None:
                continue
            if after < before:
                dropped.add(key)
                continue
            grown[key] = grown.get(key, 0) + after - before
            span[key] = span.get(key, 0.0) + dt
    seen = set().union(*tops)
    rates = {k: grown[k] / span[k] for k in sorted(grown)}
    return RateEstimate(rates, ordered[-1].at - ordered[0].at, len(ordered), tuple(sorted(dropped)),
                        tuple(sorted(seen - set(rates))))


# --- the --rates file ------------------------------------------------------------------------------------------


def parse_rates(text: str | bytes) -> dict[TopicPartition, float]:
    """(topic, partition) -> bytes/s from a --rates document; RatesError naming the entry otherwise."""
    if len(text) > MAX_RATES_BYTES:
        raise RatesError(f"rates data is {len(text):,} bytes; the limit is {MAX_RATES_BYTES // 2**20} MiB")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise RatesError(f"rates data is not valid JSON: {e}", hint=_HINT) from None
    except RecursionError:
        raise RatesError("rates data is nested too deeply", hint=_HINT) from None
    if isinstance(doc, dict) and "rates" in doc:
        doc = doc["rates"]
    out: dict[TopicPartition, float] = {}
    if isinstance(doc, dict):
        for name, value in doc.items():
            _put(out, _key(name, f"key {json.dumps(name)}"), value, f"rate of {json.dumps(name)}")
    elif isinstance(doc, list):
        for i, entry in enumerate(doc):
            where = f"rates[{i}]"
            if not isinstance(entry, dict):
                raise RatesError(f'{where} must be an object {{"topic", "partition", "bytes_per_s"}}', hint=_HINT)
            topic, partition = entry.get("topic"), entry.get("partition")
            if not isinstance(topic, str) or not topic:
                raise RatesError(f'{where}: "topic" must be a topic name, got {json.dumps(topic)}', hint=_HINT)
            if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
                raise RatesError(f'{where}: "partition" must be a non-negative integer, got {json.dumps(partition)}',
                                 hint=_HINT)
            _put(out, (topic, partition), entry.get("bytes_per_s"), f'{where}: "bytes_per_s"')
    else:
        raise RatesError("rates data must be a JSON object or list", hint=_HINT)
    return out


_HINT = ('give {"topic-partition": bytes_per_s, ...} or [{"topic": "t", "partition": 0, "bytes_per_s": 1000}, ...] '
         "(what plan --sample-rates ... --rates-output writes)")


def _key(name: Any, where: str) -> TopicPartition:
    topic, dash, number = name.rpartition("-") if isinstance(name, str) else ("", "", "")
    if not (topic and dash and number.isascii() and number.isdigit()):
        raise RatesError(f'{where} must look like "<topic>-<partition>"', hint=_HINT)
    return topic, int(number)


def _put(out: dict[TopicPartition, float], key: TopicPartition, value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RatesError(f"{where} must be a non-negative number of bytes per second, got {json.dumps(value)}",
                         hint=_HINT)
    if key in out:
        raise RatesError(f"partition {key[0]}-{key[1]} is given twice", hint=_HINT)
    out[key] = float(value)


# --- write rates per broker ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrafficReport:
    """Bytes written per broker (every replica writes its partition's bytes-in) before and after a plan, against
    each target broker's target: its share of all writes, weighted like its replicas (metrics.replica_means); when
    every partition has one replica per rack, each rack's writes are fixed, and the target is its share of its
    rack's writes (as metrics.byte_targets for bytes)."""

    tolerance: float
    brokers: tuple[int, ...]
    before: tuple[float, ...]  # B/s per broker of `brokers`
    after: tuple[float, ...]
    max_deviation: tuple[float, float]  # the largest |rate - target| / target over the target brokers
    within_tolerance: bool
    why: str | None  # when not within: what stood in the way
    unmeasured: int = 0  # partitions in scope without a rate (counted as 0 B/s)

    def summary(self) -> str:
        done = "within" if self.within_tolerance else "NOT within"
        return (f"write rate per broker: max deviation from target {self.max_deviation[0]:.1%} -> "
                f"{self.max_deviation[1]:.1%}, {done} the {self.tolerance:.0%} tolerance"
                + (f" ({self.why})" if self.why else ""))


def max_deviation(assignment: Sequence[Sequence[int]], rates: Sequence[float], means: Mapping[int, float],
                  rack_of: Mapping[int, str | None], per_rack: bool = False) -> tuple[dict[int, float], float]:
    """(rate per broker holding a replica or targeted, the largest relative deviation of a target broker from its
    target: its share, weighted like replicas, of all writes, or with `per_rack` of its rack's writes)."""
    load = dict.fromkeys(means, 0.0)
    for replicas, rate in zip(assignment, rates):
        for b in replicas:
            load[b] = load.get(b, 0.0) + rate
    return load, _worst(load, means, rack_of, per_rack)


def _worst(load: Mapping[int, float], means: Mapping[int, float], rack_of: Mapping[int, str | None],
           per_rack: bool) -> float:
    if not per_rack:
        rack_of = {}
    rack_load: dict[str | None, float] = {}
    rack_share: dict[str | None, float] = {}
    for b, m in means.items():
        rack_load[rack_of.get(b)] = rack_load.get(rack_of.get(b), 0.0) + load.get(b, 0.0)
        rack_share[rack_of.get(b)] = rack_share.get(rack_of.get(b), 0.0) + m
    worst = 0.0
    for b, m in means.items():
        target = rack_load[rack_of.get(b)] * m / rack_share[rack_of.get(b)] if m else 0.0
        if target > 0:
            worst = max(worst, abs(load.get(b, 0.0) - target) / target)
    return worst


def traffic_report(before: Sequence[Sequence[int]], after: Sequence[Sequence[int]], rates: Sequence[float],
                   means: Mapping[int, float], rack_of: Mapping[int, str | None], tolerance: float,
                   why: str | None, unmeasured: int = 0,
                   loads: tuple[dict[int, float], dict[int, float]] | None = None) -> TrafficReport:
    """`loads`: the per-broker rates before and after when the planner kept them (balanced does), which spares
    two passes over every replica (2.8 million at the largest size benchmarked)."""
    k = len({rack_of.get(b) for b in means})
    per_rack = k > 1 and all(len(r) == k for r in after)
    if loads is None:
        load_before, dev_before = max_deviation(before, rates, means, rack_of, per_rack)
        load_after, dev_after = max_deviation(after, rates, means, rack_of, per_rack)
    else:
        load_before, load_after = loads
        dev_before, dev_after = (_worst(load, means, rack_of, per_rack) for load in loads)
    shown = sorted(set(load_before) | set(load_after))
    within = dev_after <= tolerance + 1e-9
    return TrafficReport(tolerance, tuple(shown), tuple(round(load_before.get(b, 0.0), 3) for b in shown),
                         tuple(round(load_after.get(b, 0.0), 3) for b in shown),
                         (round(dev_before, 6), round(dev_after, 6)), within, None if within else why, unmeasured)
