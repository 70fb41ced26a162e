"""Snapshot loading speed: Keel's pipelined reader against a naive one-`get`-per-znode loop.

Seeds N partitions over T topics (a Kafka tree: topic nodes, partition state nodes) into a chroot
of a local ZooKeeper, then times, in the same run:
  - keel:  core.zk.reader.read_snapshot (pipelined asynchronous reads, decoding included)
  - naive: one synchronous kazoo `get` per state znode (the loop most scripts write), decoding included

    .venv/bin/python bench/snapshot.py [--zk 127.0.0.1:2181] [--partitions 200000] [--topics 2000]

Without --zk it starts a throwaway ZooKeeper of its own (sandbox.processes.zkserver).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's sandbox/ (not installed)
from core import zkformat as zf  # noqa: E402
from core.zk.reader import read_snapshot  # noqa: E402
from core.zk.session import ZkSession  # noqa: E402


def seed(session: ZkSession, partitions: int, topics: int, brokers: int = 30) -> None:
    for path in zf.PERSISTENT_PATHS:
        session.ensure_path(path)
    for b in range(brokers):
        session.create(zf.broker_path(b), zf.encode_broker([f"PLAINTEXT://127.0.0.1:{9092 + b}"],
                                                            rack=f"r{b % 3}", timestamp_ms=0))
    per_topic = [partitions // topics + (1 if i < partitions % topics else 0) for i in range(topics)]

    def nodes():
        for i, n in enumerate(per_topic):
            name = f"bench-topic-{i:05d}"
            assignment = {p: [(i + p + k) % brokers for k in range(3)] for p in range(n)}
            yield zf.topic_path(name), zf.encode_topic(assignment, topic_id=uuid.uuid4().hex[:22])
            yield zf.partitions_path(name), b""
            for p, reps in assignment.items():
                yield zf.partition_path(name, p), b""
                yield zf.state_path(name, p), zf.encode_partition_state(reps[0], 0, 1, reps)
            yield zf.topic_config_path(name), zf.encode_config({})

    session.create_many(nodes())


def naive_read(session: ZkSession) -> int:
    """The straightforward loop: list, then one synchronous get per znode, decoding each."""
    count = 0
    for b in session.children(zf.BROKER_IDS) or ():
        zf.decode_broker(int(b), session.get(zf.broker_path(int(b))).data)
    for t in session.children(zf.TOPICS) or ():
        a = zf.decode_topic(t, session.get(zf.topic_path(t)).data)
        for p in a.partitions:
            path = zf.state_path(t, p)
            zf.decode_partition_state(session.get(path).data, path)
            count += 1
        zf.decode_config(session.get(zf.topic_config_path(t)).data, zf.topic_config_path(t))
    return count


def run(zk: str, partitions: int, topics: int) -> None:
    chroot = f"/keel-bench-{uuid.uuid4().hex[:8]}"
    with ZkSession.open(zk) as root:
        root.ensure_path(chroot)
    try:
        with ZkSession.open(zk + chroot) as session:
            t0 = time.perf_counter()
            seed(session, partitions, topics)
            print(f"seeded {partitions:,} partitions over {topics:,} topics in {time.perf_counter() - t0:.1f} s")

            t0 = time.perf_counter()
            snap = read_snapshot(session)
            keel_s = time.perf_counter() - t0
            assert snap.partition_count == partitions, snap.partition_count

            t0 = time.perf_counter()
            naive_count = naive_read(session)
            naive_s = time.perf_counter() - t0
            assert naive_count == partitions
        keel_rate, naive_rate = partitions / keel_s, partitions / naive_s
        print(f"keel reader : {keel_s:7.2f} s  {keel_rate:10,.0f} partition states/s")
        print(f"naive loop  : {naive_s:7.2f} s  {naive_rate:10,.0f} partition states/s")
        print(f"speed-up    : {keel_rate / naive_rate:.1f}x")
    finally:
        with ZkSession.open(zk) as root:
            root.delete_tree(chroot)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk", help="ZooKeeper host:port (default: start a throwaway one)")
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--topics", type=int, default=2_000)
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        zk = args.zk
        if not zk:
            from sandbox.processes import zkserver

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="keel-bench-zk-")))
            server = stack.enter_context(zkserver.start(zkserver.free_port(), tmp))
            zk = server.connect
        run(zk, args.partitions, args.topics)


if __name__ == "__main__":
    main()
