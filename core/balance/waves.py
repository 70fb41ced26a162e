"""Split a plan into waves: at most K partitions reassigning at once, at most L replicas moving in or out of any
broker per wave. Each wave is one /admin/reassign_partitions document, run after the previous one completes.

First fit in (topic, partition) order: deterministic, and close to the lower bound
max(ceil(partitions / K), max over brokers of ceil(moves / L)) because each broker's first open wave is tracked.
A partition that only reorders its replicas moves no data: it counts toward K and toward no broker.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from core.errors import PlanError

Key = tuple[str, int]


def split_waves(before: Mapping[Key, Sequence[int]], after: Mapping[Key, Sequence[int]], max_partitions: int,
                max_broker_moves: int) -> tuple[tuple[Key, ...], ...]:
    """`after` holds the partitions that change; `before` their current replicas."""
    if max_partitions < 1 or max_broker_moves < 1:
        raise PlanError("wave limits must be at least 1 partition and 1 replica move per broker")
    sizes: list[int] = []  # partitions per wave
    load: dict[int, list[int]] = {}  # broker -> moves per wave
    first_open: dict[int, int] = {}  # broker -> first wave where it has room
    waves: list[list[Key]] = []
    first_roomy = 0  # first wave below max_partitions
    for key in sorted(after):
        old, new = set(before[key]), set(after[key])
        brokers = sorted(old ^ new)
        w = max([first_roomy, *(first_open.get(b, 0) for b in brokers)])
        while w < len(waves) and (sizes[w] >= max_partitions
                                  or any(_at(load, b, w) >= max_broker_moves for b in brokers)):
            w += 1
        if w == len(waves):
            waves.append([])
            sizes.append(0)
        waves[w].append(key)
        sizes[w] += 1
        for b in brokers:
            per_wave = load.setdefault(b, [])
            per_wave.extend([0] * (w + 1 - len(per_wave)))
            per_wave[w] += 1
            i = first_open.get(b, 0)
            while i < len(per_wave) and per_wave[i] >= max_broker_moves:
                i += 1
            first_open[b] = i
        while first_roomy < len(sizes) and sizes[first_roomy] >= max_partitions:
            first_roomy += 1
    return tuple(tuple(wave) for wave in waves)


def _at(load: dict[int, list[int]], broker: int, wave: int) -> int:
    per_wave = load.get(broker)
    return per_wave[wave] if per_wave is not None and wave < len(per_wave) else 0
