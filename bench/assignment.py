"""Time Kafka-exact replica assignment: N partitions, RF 3, 30 brokers, rack-aware (3 racks) and rack-unaware.

    .venv/bin/python bench/assignment.py [--partitions N]
"""

from __future__ import annotations

import argparse
import random
import time


from core.assignment import assign_replicas  # noqa: E402

BROKERS, RACKS, RF = 30, 3, 3


def timed(brokers: list[tuple[int, str | None]], partitions: int) -> float:
    start = time.perf_counter()
    assignment = assign_replicas(brokers, partitions, RF, rng=random.Random(42))
    elapsed = time.perf_counter() - start
    assert len(assignment) == partitions
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    n = parser.parse_args().partitions
    racked = [(b, f"rack{b % RACKS + 1}") for b in range(BROKERS)]
    unracked = [(b, None) for b in range(BROKERS)]
    print(f"assign rack-aware {n:,} partitions RF{RF} {BROKERS} brokers/{RACKS} racks: {timed(racked, n):.2f} s")
    print(f"assign rack-unaware {n:,} partitions RF{RF} {BROKERS} brokers: {timed(unracked, n):.2f} s")


if __name__ == "__main__":
    main()
