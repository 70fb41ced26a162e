"""What following a reassignment in bytes costs on a planned big cluster (issue 28 item 6), without the cluster:
every partition of a --partitions cluster (RF 3 over --brokers brokers) moving one replica, the worst case.

Per sample `status` (and the Reassign page) sends one DescribeLogDirs request per broker that holds a replica of a
moving partition, asking about those partitions only (core.kafka.reassign_progress.replica_sizes). This prints:

  requests     how many DescribeLogDirs requests one sample sends (kafka-python sends them one after the other)
  response     the bytes of one broker's answer (DescribeLogDirs v4, encoded by kafka-python) and the CPU time to decode
               it and turn it into Keel's replica sizes: the client-side work of one request, without the network
  sample       core.reassign_progress.sample_of over every broker's sizes
  progress     core.reassign_progress.progress over 2 samples (a one-shot `status`) and over a full 60 s window at
               the page's 5 s interval (13 samples)

    .venv/bin/python bench/reassign_progress.py [--partitions 100000] [--brokers 60] [--topics 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kafka.protocol.admin.cluster import DescribeLogDirsResponse  # noqa: E402

from core.reassign_progress import Moving, progress, record, sample_of  # noqa: E402

VERSION = 4  # DescribeLogDirs v4 (Kafka 3.3+): the version a 3.9 broker answers kafka-python with


def _cluster(partitions: int, brokers: int, topics: int) -> list[Moving]:
    """Every partition moving: replicas r0 r1 r2 -> r1 r2 r3 (one replica added, one removed)."""
    per_topic = max(1, partitions // topics)
    out = []
    for i in range(partitions):
        t, p = divmod(i, per_topic)
        old = tuple((i + k) % brokers + 1 for k in range(3))
        new = (i + 3) % brokers + 1
        out.append(Moving(f"topic-{t:05d}", p, old + (new,), (new,), (old[0],), old[0]))
    return out


def _sizes(moving: list[Moving], copied: float) -> dict[tuple[int, str, int], int]:
    """Every replica 100 MB on its old brokers, the new replica `copied` of that."""
    sizes = {}
    for m in moving:
        for b in m.replicas:
            sizes[(b, m.topic, m.partition)] = int(100e6 * copied) if b in m.adding else int(100e6)
    return sizes


def _response(moving: list[Moving], broker: int) -> DescribeLogDirsResponse:
    Result = DescribeLogDirsResponse.DescribeLogDirsResult
    Topic = Result.DescribeLogDirsTopic
    Partition = Topic.DescribeLogDirsPartition
    topics: dict[str, list] = {}
    for m in moving:
        if broker in m.replicas:
            topics.setdefault(m.topic, []).append(Partition(partition_index=m.partition, partition_size=int(100e6),
                                                            offset_lag=0, is_future_key=False))
    return DescribeLogDirsResponse(version=VERSION, throttle_time_ms=0, error_code=0, results=[Result(
        error_code=0, log_dir="/var/lib/kafka/data", total_bytes=4 << 40, usable_bytes=2 << 40,
        topics=[Topic(name=t, partitions=ps) for t, ps in topics.items()])])


def _decode(raw: bytes, broker: int) -> dict[tuple[int, str, int], int]:
    """What kafka-python and core.kafka.admin.log_dirs / replica_sizes do with one broker's answer."""
    import io

    answer = DescribeLogDirsResponse.decode(io.BytesIO(raw), version=VERSION)
    out = {}
    for d in (r.to_dict() for r in answer.results):
        for t in d["topics"]:
            for p in t["partitions"]:
                if not p["is_future_key"]:
                    out[(broker, t["name"], int(p["partition_index"]))] = int(p["partition_size"])
    return out


def _time(fn, runs: int) -> tuple[float, float, object]:
    """(median CPU seconds, median wall seconds, the value): CPU too, as this machine often runs other work."""
    times, walls, value = [], [], None
    for _ in range(runs):
        t0, w0 = time.process_time(), time.perf_counter()
        value = fn()
        times.append(time.process_time() - t0)
        walls.append(time.perf_counter() - w0)
    return statistics.median(times), statistics.median(walls), value


def _ms(cpu: float, wall: float) -> str:
    return f"{cpu * 1000:.0f} ms CPU ({wall * 1000:.0f} ms wall)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=60)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)

    moving = _cluster(args.partitions, args.brokers, args.topics)
    involved = sorted({b for m in moving for b in m.replicas})
    raw = _response(moving, involved[0]).encode(version=VERSION)
    decode_s, decode_w, one = _time(lambda: _decode(raw, involved[0]), args.runs)
    print(f"{args.partitions:,} partitions moving (RF 3 + 1 adding) over {args.brokers} brokers")
    print(f"  requests per sample: {len(involved)} DescribeLogDirs (one per broker holding a moving replica)")
    print(f"  one broker's answer: {len(one):,} replicas, {len(raw) / 1e6:.2f} MB, decoded in {_ms(decode_s, decode_w)}"
          f" -> all brokers ~{decode_s * len(involved):.1f} s of client CPU per sample")

    sizes = [_sizes(moving, c) for c in (0.10, 0.12)]
    sample_s, sample_w, first = _time(lambda: sample_of(1000.0, moving, sizes[0]), args.runs)
    second = sample_of(1005.0, moving, sizes[1], first)
    print(f"  sample_of: {_ms(sample_s, sample_w)}")
    two_s, two_w, prog = _time(lambda: progress([first, second]), args.runs)
    print(f"  progress over 2 samples: {_ms(two_s, two_w)} ({prog.fraction:.1%} copied, rate "
          f"{prog.rate / 1e6:,.0f} MB/s)")
    window = (first,)
    for i in range(1, 13):
        window = record(window, sample_of(1000.0 + 5 * i, moving, _sizes(moving, 0.10 + 0.004 * i), window[-1]))
    full_s, full_w, _ = _time(lambda: progress(window), args.runs)
    print(f"  progress over a 60 s window of {len(window)} samples: {_ms(full_s, full_w)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
