"""Partition write rates measured on a live cluster: N samples of every replica's log size, S seconds apart,
through the brokers' Admin API (describeLogDirs: one request per live broker per sample, about every replica it
holds), estimated by core.balance.rates. Works the same for ZooKeeper-mode clusters (with bootstrap) and KRaft.

Each sample is stamped at the middle of its round of requests, so the time the brokers take to answer does not
count as traffic time. Cost: N x (live brokers) requests and (N - 1) x S seconds of waiting."""

from __future__ import annotations

import time
from typing import Callable

from core.balance.rates import RateEstimate, estimate, sample
from core.errors import RatesError
from core.kafka.admin import KafkaAdmin
from core.reassign_progress import ReplicaKey, Sample

MAX_SAMPLES = 100


def check_sampling(seconds: float, count: int) -> None:
    """RatesError before anything is asked of the brokers."""
    if not seconds > 0:
        raise RatesError(f"the sampling interval must be more than 0 s, got {seconds:g}",
                         hint="--sample-rates SECONDS[:N], e.g. 30:2 (two samples 30 s apart)")
    if not 2 <= count <= MAX_SAMPLES:
        raise RatesError(f"a rate needs 2 to {MAX_SAMPLES} samples, got {count}",
                         hint="--sample-rates SECONDS[:N] with N >= 2 (default 2)")


def replica_sizes(admin: KafkaAdmin) -> dict[ReplicaKey, int]:
    """(broker, topic, partition) -> bytes of every replica on every live broker (future replicas of an
    intra-broker move and offline directories left out)."""
    dirs = admin.log_dirs()
    return {(d.broker, r.topic, r.partition): r.size for d in dirs.dirs if d.error is None for r in d.replicas
            if not r.is_future}


def take_sample(admin: KafkaAdmin, clock: Callable[[], float] = time.time) -> Sample:
    start = clock()
    sizes = replica_sizes(admin)
    return sample((start + clock()) / 2, sizes)


def sample_rates(admin: KafkaAdmin, seconds: float, count: int = 2, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[int, int], None] | None = None) -> RateEstimate:
    """`count` samples `seconds` apart (each started `seconds` after the one before), then the rates."""
    check_sampling(seconds, count)
    samples = []
    first = clock()
    for i in range(count):
        if i:
            sleep(max(0.0, first + i * seconds - clock()))
        samples.append(take_sample(admin, clock))
        if progress is not None:
            progress(i + 1, count)
    return estimate(samples)
