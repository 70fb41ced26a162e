"""Per partition offsets, message counts, newest timestamps and replica sizes, read from the brokers in bulk
(issue 30 item 1) into core.topic_sizes' pure `TopicSizes`.

One refresh sends:
* ListOffsets to each partition's leader, three times (EARLIEST, LATEST, MAX_TIMESTAMP: a request carries one
  timestamp per partition): one request per leader and spec, every one in flight at once, as Kafka's Admin client
  groups listOffsets by leader. MAX_TIMESTAMP (-3, KIP-734) needs ListOffsets v7, Kafka 3.0+; older brokers are not
  asked and the answer says they cannot tell;
* describeLogDirs, one request per live broker (core.kafka.admin.log_dirs).

A leader that moved answers NOT_LEADER_OR_FOLLOWER: those partitions are asked once more of the leaders in fresh
metadata. A partition without a leader, or whose leader does not answer, is unknown (with why), never zero.
"""

from __future__ import annotations

import contextlib
import time
from typing import Mapping, Sequence

import kafka.errors as kerrors
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from core.kafka.admin import KafkaAdmin
from core.topic_sizes import NO_MAX_TIMESTAMP, Offsets, TopicSizes, build

TopicPartition = tuple[str, int]

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3  # Kafka's ListOffsetsRequest.EARLIEST_TIMESTAMP, ... (3.0+ for -3)
_LIST_OFFSETS = 2  # ApiKeys.LIST_OFFSETS
_MAX_TIMESTAMP_VERSION = 7
_RETRIED = {"NotLeaderForPartitionError", "NotLeaderOrFollowerError", "LeaderNotAvailableError",
            "UnknownLeaderEpochError", "FencedLeaderEpochError"}


def list_offsets_version(admin: KafkaAdmin) -> int | None:
    """The highest ListOffsets version the brokers answer (None: unknown)."""
    with contextlib.suppress(Exception):
        found = admin._admin._manager.broker_version_data.api_versions.get(_LIST_OFFSETS)
        return int(found[1] if isinstance(found, (tuple, list)) else getattr(found, "max_version", found))
    return None


def supports_max_timestamp(admin: KafkaAdmin) -> bool:
    version = list_offsets_version(admin)
    return version is not None and version >= _MAX_TIMESTAMP_VERSION


def request_for(partitions: Sequence[TopicPartition], spec: int) -> ListOffsetsRequest:
    """One ListOffsets request asking `spec` of every partition in `partitions` (all led by one broker)."""
    Topic = ListOffsetsRequest.ListOffsetsTopic
    Partition = Topic.ListOffsetsPartition
    by_topic: dict[str, list] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(Partition(partition_index=p, timestamp=spec))
    return ListOffsetsRequest(isolation_level=0, topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
                              min_version=_MAX_TIMESTAMP_VERSION if spec == MAX_TIMESTAMP else 1)


def decode(response) -> dict[TopicPartition, tuple[int, int, str | None]]:
    """(topic, partition) -> (offset, timestamp, error name or None) of one ListOffsets response."""
    out = {}
    for t in response.topics:
        for p in t.partitions:
            code = p.error_code
            out[(t.name, p.partition_index)] = (p.offset, p.timestamp,
                                                None if not code else kerrors.for_code(code).__name__)
    return out


def _ask(admin: KafkaAdmin, leaders: Mapping[TopicPartition, int], specs: Sequence[int]
         ) -> tuple[dict[int, dict[TopicPartition, tuple[int, int, str | None]]], dict[TopicPartition, str], int]:
    """Every (leader, spec) request in flight at once: ({spec: answers}, {partition: why unanswered}, requests)."""
    by_leader: dict[int, list[TopicPartition]] = {}
    failed: dict[TopicPartition, str] = {}
    for tp, leader in sorted(leaders.items()):
        if leader is None or leader < 0:
            failed[tp] = "no leader"
        else:
            by_leader.setdefault(leader, []).append(tp)
    manager = admin._admin._manager
    ms = int(admin.timeout * 1000)

    async def run() -> list[tuple[int, int, object]]:
        pending = []
        for leader, tps in by_leader.items():
            for spec in specs:
                try:
                    pending.append((leader, spec, manager.send(request_for(tps, spec), node_id=leader)))
                except Exception as e:  # the leader is not in the client's metadata, or not connectable
                    pending.append((leader, spec, e))
        answers = []
        for leader, spec, sent in pending:
            if isinstance(sent, Exception):
                answers.append((leader, spec, sent))
                continue
            try:
                answers.append((leader, spec, await manager.wait_for(sent, ms)))
            except Exception as e:  # one leader's failure is its partitions' answer
                answers.append((leader, spec, e))
        return answers

    with admin._translate("read the partitions' offsets (ListOffsets)"):
        answers = manager.run(run)
    got: dict[int, dict[TopicPartition, tuple[int, int, str | None]]] = {s: {} for s in specs}
    for leader, spec, answer in answers:
        if isinstance(answer, Exception):
            why = f"broker {leader} did not answer ListOffsets ({type(answer).__name__}: {answer})"
            failed.update({tp: why for tp in by_leader[leader]})
        else:
            got[spec].update(decode(answer))
    return got, failed, len(by_leader) * len(specs)


def _leaders(admin: KafkaAdmin, topics: Sequence[str] | None = None) -> dict[TopicPartition, int]:
    """Every partition of `topics` (default: all) and its leader, as the brokers' metadata says."""
    names = admin.topic_names() if topics is None else sorted(set(topics))
    return {(t["name"], int(p["partition_index"])): int(p["leader_id"])
            for t in admin.topic_partitions(names) if not int(t.get("error_code") or 0) for p in t["partitions"]}


def read_offsets(admin: KafkaAdmin, leaders: Mapping[TopicPartition, int] | None = None
                 ) -> tuple[dict[TopicPartition, Offsets], int, str | None]:
    """(offsets per partition, ListOffsets requests sent, why no newest timestamps or None). `leaders`: partition ->
    leader (e.g. a snapshot's); None reads them from the brokers' metadata."""
    wanted = dict(_leaders(admin) if leaders is None else leaders)
    with_ts = supports_max_timestamp(admin)
    specs = (EARLIEST, LATEST, MAX_TIMESTAMP) if with_ts else (EARLIEST, LATEST)
    got, failed, requests = _ask(admin, wanted, specs)
    moved = sorted({tp for answers in got.values() for tp, (_, _, err) in answers.items() if err in _RETRIED}
                   | {tp for tp, why in failed.items() if why == "no leader"})
    if moved:  # leaders changed since the metadata was read: ask the current ones, once
        fresh = _leaders(admin, sorted({t for t, _ in moved}))
        again, failed_again, more = _ask(admin, {tp: fresh.get(tp, -1) for tp in moved}, specs)
        requests += more
        for spec in specs:
            got[spec].update(again[spec])
        for tp in moved:
            failed.pop(tp, None)
        failed.update(failed_again)
    out: dict[TopicPartition, Offsets] = {}
    for tp in wanted:
        if tp in failed:
            out[tp] = Offsets(None, None, error=failed[tp])
            continue
        first, last = got[EARLIEST].get(tp), got[LATEST].get(tp)
        newest = got[MAX_TIMESTAMP].get(tp) if with_ts else None
        errors = [e for e in (first and first[2], last and last[2]) if e]
        if first is None or last is None or errors:
            out[tp] = Offsets(None, None, error=errors[0] if errors else "the leader did not answer for it")
            continue
        ts_ok = newest is not None and newest[2] is None and newest[0] >= 0 and newest[1] >= 0
        out[tp] = Offsets(first[0], last[0], newest[1] if ts_ok else None, newest[0] if ts_ok else None)
    note = None
    if not with_ts:
        shown = ".".join(map(str, admin.version)) if admin.version else "before 3.0"
        note = NO_MAX_TIMESTAMP.format(version=shown)
    return out, requests, note


def read_topic_sizes(admin: KafkaAdmin, leaders: Mapping[TopicPartition, int] | None = None) -> TopicSizes:
    """One refresh: offsets of every partition (of `leaders`, default all) and every live broker's log dirs."""
    at = time.time()
    offsets, requests, note = read_offsets(admin, leaders)
    dirs = admin.log_dirs()
    replica_bytes = {(b, t, p): n for b, by_dir in dirs.by_broker().items()
                     for replicas in by_dir.values() for (t, p), n in replicas.items()}
    problems = [f"log dir {d.path} of broker {d.broker} is offline ({d.error}): its replicas are not counted"
                for d in dirs.offline()]
    return build(offsets, replica_bytes, partitions=offsets.keys(), read_at=at, timestamps_note=note,
                 requests={"ListOffsets": requests, "DescribeLogDirs": len(dirs.brokers)}, problems=problems)


__all__ = ["EARLIEST", "LATEST", "MAX_TIMESTAMP", "decode", "list_offsets_version", "read_offsets",
           "read_topic_sizes", "request_for", "supports_max_timestamp"]
