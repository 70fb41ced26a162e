"""Reading a KRaft cluster through the Admin API (issue 26): Keel's whole read next to Kafka's own
`kafka-topics --describe` and kafka-python's plain `describe_topics`, in the same run on the same cluster.

Starts (unless --bootstrap is given) a throwaway KRaft cluster of three combined nodes (sandbox.processes.kraft,
Kafka 4.4.0 by default), creates --topics topics of --partitions partitions each (replication factor 2, explicit
assignments), waits until every partition has its full ISR, then times each reader --runs times:

  keel           core.kafka.metadata.read_snapshot: brokers, quorum, every partition (DescribeTopicPartitions in
                 pages of 2,000), topic overrides, reassignments, dynamic broker settings
  describe       kafka-python's describe_topics(): one Metadata request for everything (partitions only)
  kafka-topics   Kafka's TopicCommand --describe from the fetched jars (a JVM: its start-up is part of its time)

    .venv/bin/python bench/kraft_read.py [--topics 200] [--partitions 100] [--runs 3] [--version 4.4.0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's sandbox/ (not installed)
from core.kafka.admin import KafkaAdmin  # noqa: E402
from core.kafka.metadata import read_snapshot  # noqa: E402
from sandbox.processes import kafka_setup  # noqa: E402
from sandbox.processes.kraft import KraftCluster  # noqa: E402


def _create(admin: KafkaAdmin, topics: int, partitions: int) -> None:
    from kafka.admin import NewTopic

    nodes = [1, 2, 3]
    batch = []
    for t in range(topics):
        assignment = {p: [nodes[(t + p) % 3], nodes[(t + p + 1) % 3]] for p in range(partitions)}
        batch.append(NewTopic(f"bench-{t:05d}", replica_assignments=assignment))
        if len(batch) == 20:
            admin._admin.create_topics(batch, timeout_ms=120_000)
            batch = []
    if batch:
        admin._admin.create_topics(batch, timeout_ms=120_000)


def _partitions_per_broker(admin: KafkaAdmin) -> dict[int, int]:
    """How many partitions each broker's metadata cache lists (a Metadata request sent to each)."""
    from kafka.protocol.metadata import MetadataRequest

    manager = admin._admin._manager
    found = {}
    for node in (1, 2, 3):
        async def ask(node=node):
            return await manager.send(MetadataRequest(topics=None, allow_auto_topic_creation=False), node_id=node)
        answer = manager.run(ask).to_dict()
        found[node] = sum(len(t["partitions"]) for t in answer["topics"])
    return found


def _timed(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", default="4.4.0")
    parser.add_argument("--bootstrap", help="an existing cluster (nothing created)")
    args = parser.parse_args()

    cluster = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        try:
            kafka_setup.lib_dir(args.version)
        except kafka_setup.KafkaNotFetchedError:
            kafka_setup.fetch(args.version)
        cluster = KraftCluster.create(tempfile.mkdtemp(prefix="keel-bench-kraft-"), nodes=3, version=args.version,
                                      heap="1g", detach=False)
        started = time.monotonic()
        cluster.start(timeout=180)
        bootstrap = cluster.bootstrap_servers
        print(f"KRaft {args.version}: 3 nodes up in {time.monotonic() - started:.1f} s", file=sys.stderr)
    try:
        with KafkaAdmin(bootstrap, timeout=120) as admin:
            if cluster is not None:
                started = time.monotonic()
                _create(admin, args.topics, args.partitions)
                # every partition created, in sync, and in every broker's metadata before anything is timed: a
                # broker applies a creation to its metadata cache only once it has created its own replicas' logs,
                # seconds to minutes after the controller answered (measured here), and reads go to any broker
                want = args.topics * args.partitions
                while True:
                    snap = read_snapshot(admin)
                    ok = sum(1 for p in snap.partitions() if len(p.isr) == len(p.replicas))
                    if ok >= want and all(n >= want for n in _partitions_per_broker(admin).values()):
                        break
                    time.sleep(2)
                print(f"{args.topics * args.partitions:,} partitions created and in sync in "
                      f"{time.monotonic() - started:.1f} s", file=sys.stderr)
            keel, snap = _timed(lambda: read_snapshot(admin), args.runs)
            plain, described = _timed(lambda: admin._admin.describe_topics(), args.runs)
        found = sum(len(t["partitions"]) for t in described)
        tool = None
        if cluster is not None:
            main_class = "org.apache.kafka.tools.TopicCommand"
            tool, proc = _timed(lambda: cluster.tool(main_class, "--bootstrap-server", bootstrap, "--describe",
                                                     timeout=600), args.runs)
            lines = sum(1 for line in proc.stdout.splitlines() if "\tPartition: " in line)
            assert proc.returncode == 0 and lines == snap.partition_count, (proc.returncode, lines)
        print(f"KRaft read of {snap.partition_count:,} partitions ({len(snap.topics):,} topics, "
              f"{len(snap.brokers)} brokers), median of {args.runs}:")
        print(f"  keel read_snapshot (everything)   {keel:6.2f} s")
        print(f"  kafka-python describe_topics      {plain:6.2f} s   ({found:,} partitions; "
              f"keel / describe {keel / plain:.2f})")
        if tool is not None:
            print(f"  kafka-topics --describe (JVM)     {tool:6.2f} s   (keel / kafka-topics {keel / tool:.2f})")
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
