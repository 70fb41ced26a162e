"""What one refresh of the Topics list's sizes costs on a big cluster (issue 30 item 1), without the cluster:
--partitions partitions (RF 3 over --brokers brokers, leaders spread evenly) through the real
core.kafka.offsets.read_topic_sizes, with kafka-python's client replaced by one that answers every request with
bytes encoded by kafka-python's own protocol classes (ListOffsets v9 and DescribeLogDirs v4: what a 3.9 broker
answers it). This prints:

  requests   how many requests one refresh sends (ListOffsets per leader and spec, describeLogDirs per broker)
  bytes      the size of the answers
  CPU        the client's time to decode every answer and build core.topic_sizes.TopicSizes (no network)

    .venv/bin/python bench/topic_sizes.py [--partitions 100000] [--brokers 60] [--topics 1000]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kafka.protocol.admin.cluster import DescribeLogDirsRequest, DescribeLogDirsResponse  # noqa: E402
from kafka.protocol.consumer.offsets import ListOffsetsResponse  # noqa: E402

from core.kafka.admin import KafkaAdmin  # noqa: E402
from core.kafka.offsets import EARLIEST, LATEST, MAX_TIMESTAMP, read_topic_sizes  # noqa: E402

LIST_OFFSETS_VERSION = 9  # Kafka 3.9's highest ListOffsets
LOG_DIRS_VERSION = 4


def _cluster(partitions: int, brokers: int, topics: int) -> dict[tuple[str, int], tuple[int, ...]]:
    per_topic = max(1, partitions // topics)
    return {(f"topic-{i // per_topic:05d}", i % per_topic): tuple((i + k) % brokers + 1 for k in range(3))
            for i in range(partitions)}


def _list_offsets_answer(tps: list[tuple[str, int]], spec: int) -> bytes:
    Topic = ListOffsetsResponse.ListOffsetsTopicResponse
    Part = Topic.ListOffsetsPartitionResponse
    by_topic: dict[str, list] = {}
    for t, p in tps:
        offset = {EARLIEST: 1_000_000, LATEST: 9_000_000 + p, MAX_TIMESTAMP: 8_999_999 + p}[spec]
        by_topic.setdefault(t, []).append(Part(partition_index=p, error_code=0, timestamp=1_764_000_000_000 + p
                                               if spec == MAX_TIMESTAMP else -1, offset=offset, leader_epoch=7))
    return ListOffsetsResponse(version=LIST_OFFSETS_VERSION, throttle_time_ms=0, topics=[
        Topic(name=t, partitions=ps) for t, ps in by_topic.items()]).encode(version=LIST_OFFSETS_VERSION)


def _log_dirs_answer(replicas: list[tuple[str, int]]) -> bytes:
    Result = DescribeLogDirsResponse.DescribeLogDirsResult
    Topic = Result.DescribeLogDirsTopic
    Part = Topic.DescribeLogDirsPartition
    by_topic: dict[str, list] = {}
    for t, p in replicas:
        by_topic.setdefault(t, []).append(Part(partition_index=p, partition_size=100_000_000 + p, offset_lag=0,
                                               is_future_key=False))
    return DescribeLogDirsResponse(version=LOG_DIRS_VERSION, throttle_time_ms=0, error_code=0, results=[Result(
        error_code=0, log_dir="/var/lib/kafka/data", total_bytes=4 << 40, usable_bytes=2 << 40,
        topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])]).encode(version=LOG_DIRS_VERSION)


class _Versions:
    broker_version = (3, 9)
    api_versions = {2: (0, LIST_OFFSETS_VERSION)}


class _Node:
    def __init__(self, node_id: int):
        self.node_id = node_id


class _Metadata:
    def __init__(self, brokers):
        self._brokers = [_Node(b) for b in brokers]

    def brokers(self):
        return self._brokers


class _Manager:
    """kafka-python's manager as core.kafka.offsets uses it: send() / wait_for() / run(), answering from bytes."""

    def __init__(self, answers: dict[tuple[int, int], bytes], log_dirs: dict[int, bytes]):
        self.answers, self.log_dirs = answers, log_dirs
        self.sent = {"ListOffsets": 0, "DescribeLogDirs": 0}
        self.bytes = 0
        self.broker_version_data = _Versions()
        self.broker_version = (3, 9)
        self.cluster = _Metadata(sorted(log_dirs))

    def send(self, request, node_id=None):
        if isinstance(request, DescribeLogDirsRequest):
            self.sent["DescribeLogDirs"] += 1
            return DescribeLogDirsResponse, LOG_DIRS_VERSION, self.log_dirs[node_id]
        self.sent["ListOffsets"] += 1
        spec = request.topics[0].partitions[0].timestamp
        return ListOffsetsResponse, LIST_OFFSETS_VERSION, self.answers[(node_id, spec)]

    async def wait_for(self, sent, ms: int):
        cls, version, raw = sent
        self.bytes += len(raw)
        return cls.decode(io.BytesIO(raw), version=version)

    def run(self, fn, *args):  # every answer is there already: the coroutine never suspends
        coro = fn(*args)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        raise RuntimeError("the coroutine waited for something the bench does not answer")


class _Client:
    def __init__(self, manager: _Manager):
        self._manager = manager


def _admin(client: _Client) -> KafkaAdmin:
    admin = KafkaAdmin.__new__(KafkaAdmin)
    admin.servers, admin.bootstrap, admin.timeout, admin.client_id = ("bench:9092",), "bench:9092", 10.0, "bench"
    admin._closed, admin._admin, admin.security = False, client, None
    return admin


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=60)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)

    cluster = _cluster(args.partitions, args.brokers, args.topics)
    leaders = {tp: reps[0] for tp, reps in cluster.items()}
    led: dict[int, list] = {}
    held: dict[int, list] = {}
    for tp, reps in cluster.items():
        led.setdefault(reps[0], []).append(tp)
        for b in reps:
            held.setdefault(b, []).append(tp)
    answers = {(b, spec): _list_offsets_answer(tps, spec) for b, tps in led.items()
               for spec in (EARLIEST, LATEST, MAX_TIMESTAMP)}
    log_dirs = {b: _log_dirs_answer(tps) for b, tps in sorted(held.items())}

    cpus, walls, last, manager = [], [], None, None
    for _ in range(args.runs):
        manager = _Manager(answers, log_dirs)
        t0, w0 = time.process_time(), time.perf_counter()
        last = read_topic_sizes(_admin(_Client(manager)), leaders)
        cpus.append(time.process_time() - t0)
        walls.append(time.perf_counter() - w0)
    assert last is not None and len(last.partitions) == args.partitions
    assert sum(t.messages for t in last.topics.values()) == sum(8_000_000 + p for _, p in cluster)
    print(f"{args.partitions:,} partitions in {len(last.topics):,} topics, RF 3 over {args.brokers} brokers "
          f"({len(led)} leaders)")
    lo, ld = manager.sent["ListOffsets"], manager.sent["DescribeLogDirs"]
    assert last.requests == manager.sent, (last.requests, manager.sent)
    print(f"  requests per refresh: {lo + ld:,} ({lo:,} ListOffsets = {len(led)} leaders x 3 specs; {ld:,} "
          f"DescribeLogDirs, one per broker; all in flight at once); answers {manager.bytes / 1e6:.1f} MB")
    print(f"  CPU to decode every answer and build the sizes: {statistics.median(cpus) * 1000:,.0f} ms "
          f"({statistics.median(walls) * 1000:,.0f} ms wall), median of {args.runs}")
    t0 = time.process_time()
    for (_b, _spec), raw in answers.items():
        ListOffsetsResponse.decode(io.BytesIO(raw), version=LIST_OFFSETS_VERSION)
    for raw in log_dirs.values():
        DescribeLogDirsResponse.decode(io.BytesIO(raw), version=LOG_DIRS_VERSION)
    print(f"    of which kafka-python's decoding of the answers alone: {(time.process_time() - t0) * 1000:,.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
