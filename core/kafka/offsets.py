"""Per partition offsets, message counts, newest timestamps and replica sizes, read from the brokers in bulk
(issue 30 item 1) into core.topic_sizes' pure `TopicSizes`.

One refresh sends:
* ListOffsets to each partition's leader, three times (EARLIEST, LATEST, MAX_TIMESTAMP: a request carries one
  timestamp per partition): one request per leader and spec, every one in flight at once, as Kafka's Admin client
  groups listOffsets by leader. MAX_TIMESTAMP (-3, KIP-734) needs ListOffsets v7, Kafka 3.0+; older brokers are not
  asked and the answer says they cannot tell;
* describeLogDirs, one request per live broker, all in flight at once, read straight into replica bytes (kafka-python's
  describe_log_dirs sends them one after the other and turns every replica into a dict: 3x the CPU at 100,000
  partitions, bench/topic_sizes.py).

A leader that moved answers NOT_LEADER_OR_FOLLOWER: those partitions are asked once more of the leaders in fresh
metadata. A partition without a leader, or whose leader does not answer, is unknown (with why), never zero.
"""

from __future__ import annotations

import contextlib
import time
from typing import Mapping, Sequence

import kafka.errors as kerrors
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
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


def _send_all(admin: KafkaAdmin, requests: Sequence[tuple[int, object, object]], what: str
              ) -> list[tuple[int, object, object]]:
    """Send every (broker, tag, request) at once and wait for all: [(broker, tag, response or the exception)]."""
    manager = admin._admin._manager
    ms = int(admin.timeout * 1000)

    async def run() -> list[tuple[int, object, object]]:
        pending = []
        for broker, tag, request in requests:
            try:
                pending.append((broker, tag, manager.send(request, node_id=broker)))
            except Exception as e:  # the broker is not in the client's metadata, or not connectable
                pending.append((broker, tag, e))
        answers = []
        for broker, tag, sent in pending:
            if isinstance(sent, Exception):
                answers.append((broker, tag, sent))
                continue
            try:
                answers.append((broker, tag, await manager.wait_for(sent, ms)))
            except Exception as e:  # one broker's failure is its own answer
                answers.append((broker, tag, e))
        return answers

    with admin._translate(what):
        return manager.run(run)


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
    answers = _send_all(admin, [(leader, spec, request_for(tps, spec)) for leader, tps in by_leader.items()
                                for spec in specs], "read the partitions' offsets (ListOffsets)")
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


def read_replica_bytes(admin: KafkaAdmin) -> tuple[dict[tuple[int, str, int], int], list[str], int]:
    """describeLogDirs of every broker in the client's metadata (the live ones), all at once: ({(broker, topic,
    partition): bytes}, problems, requests). Future replicas (an intra-broker move's destination) and offline
    directories are left out, as kafka-log-dirs' sizes are read by `plan --sizes`."""
    with admin._translate("list the brokers"):
        brokers = sorted(b.node_id for b in admin._admin._manager.cluster.brokers())
    answers = _send_all(admin, [(b, None, DescribeLogDirsRequest(topics=None)) for b in brokers],
                        "describe the brokers' log directories")
    out: dict[tuple[int, str, int], int] = {}
    problems = []
    for broker, _, answer in answers:
        if isinstance(answer, Exception):
            problems.append(f"broker {broker} did not answer describeLogDirs ({type(answer).__name__}: {answer}): "
                            "its replicas are not counted")
            continue
        if getattr(answer, "error_code", 0):
            problems.append(f"broker {broker} refused describeLogDirs ({kerrors.for_code(answer.error_code).__name__})")
            continue
        for d in answer.results:
            if d.error_code:
                problems.append(f"log dir {d.log_dir} of broker {broker} is offline "
                                f"({kerrors.for_code(d.error_code).__name__}): its replicas are not counted")
                continue
            for t in d.topics:
                name = t.name
                for p in t.partitions:
                    if not p.is_future_key:
                        out[(broker, name, p.partition_index)] = p.partition_size
    return out, problems, len(brokers)


def read_topic_sizes(admin: KafkaAdmin, leaders: Mapping[TopicPartition, int] | None = None) -> TopicSizes:
    """One refresh: offsets of every partition (of `leaders`, default all) and every live broker's log dirs."""
    at = time.time()
    offsets, requests, note = read_offsets(admin, leaders)
    replica_bytes, problems, log_dirs = read_replica_bytes(admin)
    return build(offsets, replica_bytes, partitions=offsets.keys(), read_at=at, timestamps_note=note,
                 requests={"ListOffsets": requests, "DescribeLogDirs": log_dirs}, problems=problems)


__all__ = ["EARLIEST", "LATEST", "MAX_TIMESTAMP", "decode", "list_offsets_version", "read_offsets",
           "read_replica_bytes", "read_topic_sizes", "request_for", "supports_max_timestamp"]
