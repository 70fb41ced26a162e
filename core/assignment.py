"""Kafka-exact replica assignment, ported from `AdminUtils.assignReplicasToBrokers` (Kafka 1.1 - 3.9).

Sources: `core/src/main/scala/kafka/admin/AdminUtils.scala` (later `server-common/.../admin/AdminUtils.java`,
same algorithm and messages) and `kafka.zk.AdminZkClient` (`getBrokerMetadatas`, `createNewPartitionsAssignment`).
With a fixed start index the output is Kafka's, list for list. With a random one it is drawn from the same
family, but Java's `Random` is not reproduced. Pure: no I/O.
"""

from __future__ import annotations

import gc
import itertools
import json
import random
from contextlib import contextmanager
from enum import StrEnum
from typing import Iterable, Iterator, Mapping, Sequence

from core.errors import AdminOperationError, InvalidPartitionsError, InvalidReplicationFactorError, ValidationError
from core.model import Broker
from core.numbers import quoted

_MAX_BROKER_ID = 2 ** 31 - 1  # broker.id is a Java int

BrokerLike = Broker | tuple[int, str | None]
Assignment = dict[int, list[int]]


class RackAwareMode(StrEnum):
    """Kafka's rack modes. kafka-topics uses ENFORCED unless `--disable-rack-aware` is given (DISABLED);
    brokers use SAFE when they auto-create a topic."""

    ENFORCED = "enforced"
    DISABLED = "disabled"
    SAFE = "safe"


def brokers_for_mode(brokers: Iterable[BrokerLike], mode: RackAwareMode | str) -> list[tuple[int, str | None]]:
    """`AdminZkClient.getBrokerMetadatas`: apply a rack mode, then sort by broker id as Kafka does."""
    try:
        mode = RackAwareMode(mode)
    except ValueError:
        raise ValidationError(f"unknown rack-aware mode {mode!r}: expected enforced, disabled or safe") from None
    pairs = _pairs(brokers)
    with_rack = sum(rack is not None for _, rack in pairs)
    partial = 0 < with_rack < len(pairs)
    if mode is RackAwareMode.ENFORCED and partial:
        raise AdminOperationError("Not all brokers have rack information. Add --disable-rack-aware in command line"
                                  " to make replica assignment without rack information.")
    if mode is RackAwareMode.DISABLED or (mode is RackAwareMode.SAFE and with_rack < len(pairs)):
        pairs = [(broker, None) for broker, _ in pairs]
    return sorted(pairs, key=lambda pair: pair[0])


def rack_alternated_brokers(rack_by_broker: Mapping[int, str]) -> list[int]:
    """Racks sorted, ids sorted within a rack, then one broker from each rack in turn.

    {0: rack1, 1: rack3, 2: rack3, 3: rack2, 4: rack2, 5: rack1} -> [0, 3, 1, 5, 4, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_by_broker.items():
        by_rack.setdefault(rack, []).append(broker)
    # Java orders strings by UTF-16 code unit; UTF-16-BE bytes compare the same way.
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=lambda r: r.encode("utf-16-be"))]
    return [broker for row in itertools.zip_longest(*columns) for broker in row if broker is not None]


def assign_replicas(brokers: Iterable[BrokerLike], n_partitions: int, replication_factor: int,
                    fixed_start_index: int = -1, start_partition_id: int = -1,
                    rng: random.Random | None = None) -> Assignment:
    """Partition id -> replicas, exactly as `AdminUtils.assignReplicasToBrokers` computes them.

    `brokers` are used in the order given (Kafka passes them sorted by id; see `brokers_for_mode`). When
    `fixed_start_index` < 0 the start index and the follower shift are two independent `rng.randrange` draws.
    """
    pairs = _pairs(brokers)
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(pairs):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(pairs)}.")
    ids = [broker for broker, _ in pairs]
    if len(set(ids)) != len(ids):
        # Kafka reads ids from ZooKeeper, where they are unique; a repeated id here is a caller's mistake.
        repeated = sorted({b for b in ids if ids.count(b) > 1})
        raise ValidationError(f"broker id(s) listed more than once: {', '.join(map(str, repeated))}")
    rack_of = {broker: rack for broker, rack in pairs if rack is not None}
    if not rack_of:
        arranged, rack_of, num_racks = ids, None, 1
    elif len(rack_of) < len(pairs):
        raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
    else:
        arranged = rack_alternated_brokers(rack_of)
        num_racks = len(set(rack_of.values()))

    n = len(arranged)
    if fixed_start_index >= 0:
        start_index = shift = fixed_start_index
    else:
        rng = rng if rng is not None else random.Random()
        start_index = rng.randrange(n)
        shift = rng.randrange(n)

    # The shift changes only where a partition id is a multiple of n, and replicaIndex sees it only modulo n - 1.
    # So work block by block: one row of n replica lists per distinct shift, rotated to each block's start index
    # (this is what makes a million partitions take about a second).
    rows: dict[int, list[tuple[int, ...]]] = {}
    result: Assignment = {}
    partition = max(0, start_partition_id)
    end = partition + n_partitions
    with _gc_paused():
        while partition < end:
            if partition > 0 and partition % n == 0:
                shift += 1
            block_end = min(end, partition - partition % n + n)
            # Kafka multiplies the rack-aware follower shift by the number of racks (1 when rack-unaware).
            row_shift = shift * num_racks % (n - 1) if n > 1 else 0
            if row_shift not in rows:
                rows[row_shift] = [_pick(arranged, rack_of, num_racks, first, row_shift, replication_factor)
                                   for first in range(n)]
            row = rows[row_shift]
            first = (partition + start_index) % n
            block = (row[first:] + row[:first])[:block_end - partition]
            result.update(zip(range(partition, block_end), map(list, block)))
            partition = block_end
    return result


def add_partitions_assignment(existing: Mapping[int, Sequence[int]], brokers: Iterable[BrokerLike], new_total: int,
                              *, topic: str = "<topic>") -> Assignment:
    """The replicas Kafka gives the partitions added to a topic (`AdminZkClient.createNewPartitionsAssignment`).

    Returns only the new partitions. Pass `brokers_for_mode(brokers, "enforced")` for what kafka-topics --alter
    does (it never honours --disable-rack-aware). No random draw: the start index comes from partition 0.
    """
    replicas0 = existing.get(0)
    if replicas0 is None:
        raise AdminOperationError(f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
                                  f"missing. Assignment: {dict(existing)}")
    if new_total - len(existing) <= 0:
        # Kafka 3.9's messages (ZkAdminManager / AdminZkClient.createPartitions), checked against a real broker.
        raise InvalidPartitionsError(f"Topic already has {len(existing)} partitions." if new_total == len(existing) else
                                     f"Topic currently has {len(existing)} partitions, which is higher than the "
                                     f"requested {new_total}.")
    pairs = sorted(_pairs(brokers), key=lambda pair: pair[0])
    # Kafka takes this index in the id-sorted list even when the rack-aware path then applies it to the
    # rack-alternated list; it also becomes the follower shift.
    start_index = next((i for i, (broker, _) in enumerate(pairs) if replicas0 and broker >= replicas0[0]), 0)
    return assign_replicas(pairs, new_total - len(existing), len(replicas0), start_index, len(existing))


def format_assignment_json(assignment: Mapping[int, Sequence[int]]) -> str:
    """`{"version":1,"partitions":{"0":[1,2],...}}`, partitions in numeric order."""
    partitions = {str(p): list(assignment[p]) for p in sorted(assignment)}
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def parse_broker_list(text: str) -> list[tuple[int, str | None]]:
    """Parse `id[:rack],...`, e.g. "0:r1,1:r2,2" -> [(0, "r1"), (1, "r2"), (2, None)]."""
    usage = "expected id[:rack],... e.g. 0:r1,1:r2,2"
    if not text.strip():
        raise ValidationError(f"empty broker list: {usage}")
    result: list[tuple[int, str | None]] = []
    for item in text.split(","):
        id_text, colon, rack = (part.strip() for part in item.partition(":"))
        if not id_text:
            raise ValidationError(f"empty broker entry in {quoted(text)}: {usage}")
        if not (id_text.isascii() and id_text.isdigit()) or len(id_text) > 10 or int(id_text) > _MAX_BROKER_ID:
            raise ValidationError(f"broker id {quoted(id_text)} is not a non-negative integer of at most {_MAX_BROKER_ID}: {usage}")
        if colon and not rack:
            raise ValidationError(f"broker {int(id_text)} has an empty rack after ':': {usage}")
        broker = int(id_text)
        if any(broker == seen for seen, _ in result):
            raise ValidationError(f"broker {broker} is listed more than once")
        result.append((broker, rack or None))
    return result


# --- internals ------------------------------------------------------------------------------


def _pairs(brokers: Iterable[BrokerLike]) -> list[tuple[int, str | None]]:
    return [(b.id, b.rack) if isinstance(b, Broker) else (b[0], b[1]) for b in brokers]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Building a million small lists otherwise triggers repeated cyclic-GC passes, which cost more than the
    assignment itself; lists of ints cannot form cycles, so nothing is lost by pausing it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _pick(arranged: Sequence[int], rack_of: Mapping[int, str] | None, num_racks: int, first: int, shift: int,
          replication_factor: int) -> tuple[int, ...]:
    """One partition's replicas, as Kafka's loop body picks them (`rack_of` None: rack-unaware)."""
    n = len(arranged)
    leader = arranged[first]
    if rack_of is None:
        return (leader, *(arranged[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)))
    replicas, racks, held = [leader], {rack_of[leader]}, {leader}
    k = 0
    while len(replicas) < replication_factor:
        broker = arranged[_replica_index(first, shift, k, n)]
        rack = rack_of[broker]
        # Skip a broker whose rack already has a replica while some rack has none,
        # or which already holds one while some broker holds none.
        if (rack not in racks or len(racks) == num_racks) and (broker not in held or len(held) == n):
            replicas.append(broker)
            racks.add(rack)
            held.add(broker)
        k += 1
    return tuple(replicas)
