"""Topic sizes, offsets and message counts (issue 30 item 1), from what the brokers answer in one refresh: per
partition the earliest and latest offset (ListOffsets EARLIEST / LATEST), the newest timestamp (ListOffsets
MAX_TIMESTAMP, KIP-734, Kafka 3.0+) and each replica's bytes (describeLogDirs); per topic and per broker the totals.

Pure: core.kafka.offsets reads the brokers and hands plain data to `build`; pages and the CLI draw what it returns.

What the figures mean (as Kafka's tools print them):
* earliest / latest: what `GetOffsetShell --time -2 / -1` prints (the log start offset, the log end offset);
* messages: latest - earliest, the offsets between them (a compacted or transactional log holds fewer records:
  compaction leaves gaps and every transaction marker takes an offset);
* size: the bytes of the partition's largest replica (`kafka-log-dirs --describe`'s "size", future replicas of an
  intra-broker move and offline directories left out, as `plan --sizes` counts); size on disk: every replica's;
* newest: the highest record timestamp in the partition and the offset holding it (`GetOffsetShell --time -3`),
  which is the last message's unless producers set timestamps out of order; None for an empty partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

TopicPartition = tuple[str, int]

NO_BOOTSTRAP = ("Sizes, offsets and message counts come from the brokers: add bootstrap = \"host:port,...\" to this "
                "cluster in keel.toml (and command_config for SASL / TLS)")
NO_MAX_TIMESTAMP = ("the brokers (Kafka {version}) cannot tell the newest message's timestamp: ListOffsets "
                    "MAX_TIMESTAMP (KIP-734) needs Kafka 3.0+")


@dataclass(frozen=True)
class Offsets:
    """One partition's ListOffsets answers; None where the leader did not answer (then `error` says why)."""

    earliest: int | None
    latest: int | None
    newest_timestamp: int | None = None  # ms since the epoch; None: empty, or the brokers cannot tell
    newest_offset: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class PartitionSize:
    topic: str
    partition: int
    earliest: int | None
    latest: int | None
    messages: int | None
    size: int | None  # bytes of the largest replica; None when no broker reported one
    replicas: tuple[tuple[int, int], ...]  # (broker, bytes), by broker
    newest_timestamp: int | None
    newest_offset: int | None
    error: str | None


@dataclass(frozen=True)
class TopicTotals:
    topic: str
    partitions: int
    messages: int  # over the partitions whose offsets are known
    size: int  # one copy: the largest replica of each partition
    on_disk: int  # every replica
    newest_timestamp: int | None
    unknown: int  # partitions whose offsets the brokers did not give


@dataclass(frozen=True)
class TopicSizes:
    """One refresh's answers, and what they add up to."""

    partitions: Mapping[TopicPartition, PartitionSize]
    topics: Mapping[str, TopicTotals]
    brokers: Mapping[int, int]  # broker -> bytes of the replicas it holds
    read_at: float  # time.time() of the read
    requests: Mapping[str, int] = field(default_factory=dict)  # "ListOffsets" / "DescribeLogDirs" -> how many sent
    timestamps_note: str | None = None  # why no newest timestamps, when the brokers cannot tell
    problems: tuple[str, ...] = ()

    def partitions_of(self, topic: str) -> list[PartitionSize]:
        return sorted((p for (t, _), p in self.partitions.items() if t == topic), key=lambda p: p.partition)


def build(offsets: Mapping[TopicPartition, Offsets], replica_bytes: Mapping[tuple[int, str, int], int], *,
          partitions: Iterable[TopicPartition] | None = None, read_at: float = 0.0,
          requests: Mapping[str, int] | None = None, timestamps_note: str | None = None,
          problems: Iterable[str] = ()) -> TopicSizes:
    """Per partition, per topic and per broker figures. `replica_bytes`: (broker, topic, partition) -> bytes (future
    replicas and offline directories already left out). `partitions`: every partition to show (default: those in
    `offsets`); one without answers is shown unknown, never as zero."""
    by_partition: dict[TopicPartition, list[tuple[int, int]]] = {}
    brokers: dict[int, int] = {}
    for (b, t, p), n in replica_bytes.items():
        by_partition.setdefault((t, p), []).append((b, n))
        brokers[b] = brokers.get(b, 0) + n
    keys = set(offsets) if partitions is None else set(partitions)
    unknown = Offsets(None, None, error="not read")
    out: dict[TopicPartition, PartitionSize] = {}
    for key in sorted(keys):
        o = offsets.get(key, unknown)
        reps = by_partition.get(key)
        if reps:
            reps.sort()
            size: int | None = max([n for _, n in reps])
        else:
            size = None
        messages = o.latest - o.earliest if o.latest is not None and o.earliest is not None else None
        out[key] = PartitionSize(key[0], key[1], o.earliest, o.latest, messages, size, tuple(reps or ()),
                                 o.newest_timestamp, o.newest_offset, o.error)
    return TopicSizes(out, totals(out.values()), dict(sorted(brokers.items())), read_at, dict(requests or {}),
                      timestamps_note, tuple(problems))


def totals(partitions: Iterable[PartitionSize]) -> dict[str, TopicTotals]:
    acc: dict[str, list] = {}
    for p in partitions:
        a = acc.setdefault(p.topic, [0, 0, 0, 0, None, 0])
        a[0] += 1
        a[1] += p.messages or 0
        a[2] += p.size or 0
        a[3] += sum(n for _, n in p.replicas)
        if p.newest_timestamp is not None and (a[4] is None or p.newest_timestamp > a[4]):
            a[4] = p.newest_timestamp
        a[5] += p.messages is None
    return {t: TopicTotals(t, *a) for t, a in sorted(acc.items())}


def biggest_first(topics: Mapping[str, TopicTotals]) -> list[TopicTotals]:
    """The Topics list's order: the most bytes first, then the most messages, then by name."""
    return sorted(topics.values(), key=lambda t: (-t.size, -t.messages, t.topic))


def broker_share(sizes: TopicSizes, broker: int) -> tuple[int | None, float | None]:
    """(bytes on `broker`, its share of every replica's bytes); (None, None) when the broker did not answer."""
    if broker not in sizes.brokers:
        return None, None
    whole = sum(sizes.brokers.values())
    return sizes.brokers[broker], (sizes.brokers[broker] / whole if whole else 0.0)


__all__ = ["NO_BOOTSTRAP", "NO_MAX_TIMESTAMP", "Offsets", "PartitionSize", "TopicSizes", "TopicTotals",
           "biggest_first", "broker_share", "build", "totals"]
