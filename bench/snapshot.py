"""Snapshot loading speed: Keel's reader against kazoo's best asynchronous reading and a naive loop.

Seeds N partitions over T topics (a Kafka tree: topic nodes, partition state nodes) into a chroot
of a local ZooKeeper, then times, in the same run:
  - keel:  core.zk.reader.read_snapshot (pipelined reads over several sessions, decoding and the snapshot included)
  - kazoo: kazoo's `get_async` of every topic, state and config znode, all in flight at once, each decoded with
           json.loads (the best a kazoo user writes)
  - naive: one synchronous kazoo `get` per znode (the loop most scripts write), decoding included
keel and kazoo alternate --repeat times (the machine is shared: each pair is measured under the same load);
the naive loop runs once. CPU time of this process and the load average are printed beside each figure.

    .venv/bin/python bench/snapshot.py [--zk 127.0.0.1:2181] [--partitions 200000] [--topics 2000] [--repeat 3]

Without --zk it starts a throwaway ZooKeeper of its own (sandbox.processes.zkserver).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's sandbox/ (not installed)
from kazoo.client import KazooClient  # noqa: E402

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


def kazoo_async_read(client) -> int:
    """kazoo at its best: every read in flight at once (get_async), each payload decoded with json.loads."""
    topics = client.get_children(zf.TOPICS)
    pending = [(t, client.get_async(zf.topic_path(t))) for t in topics]
    paths = []
    for t, res in pending:
        data, _ = res.get()
        paths.extend(zf.state_path(t, int(p)) for p in json.loads(data)["partitions"])
    states = [client.get_async(p) for p in paths]
    configs = [client.get_async(zf.topic_config_path(t)) for t in topics]
    count = 0
    for res in states:
        data, stat = res.get()
        json.loads(data)
        count += 1
    for res in configs:
        json.loads(res.get()[0])
    return count


def timed(fn, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def run(zk: str, partitions: int, topics: int, repeat: int = 1, naive: bool = True) -> None:
    chroot = f"/keel-bench-{uuid.uuid4().hex[:8]}"
    with ZkSession.open(zk) as root:
        root.ensure_path(chroot)
    try:
        with ZkSession.open(zk + chroot) as session:
            t0 = time.perf_counter()
            seed(session, partitions, topics)
            print(f"seeded {partitions:,} partitions over {topics:,} topics in {time.perf_counter() - t0:.1f} s")

            kazoo = KazooClient(hosts=zk + chroot, timeout=30)
            kazoo.start(timeout=30)
            ratios = []
            for i in range(repeat):
                snap, keel_s, keel_cpu = timed(read_snapshot, session)
                assert snap.partition_count == partitions and not snap.problems, snap.partition_count
                count, kazoo_s, kazoo_cpu = timed(kazoo_async_read, kazoo)
                assert count == partitions
                ratios.append(kazoo_s / keel_s)
                print(f"[{i + 1}/{repeat}] keel reader : {keel_s:6.2f} s ({keel_cpu:5.2f} s CPU) "
                      f"{partitions / keel_s:9,.0f} partition states/s")
                print(f"[{i + 1}/{repeat}] kazoo async : {kazoo_s:6.2f} s ({kazoo_cpu:5.2f} s CPU) "
                      f"{partitions / kazoo_s:9,.0f} partition states/s   keel is {ratios[-1]:.1f}x  ({load()})",
                      flush=True)

            kazoo.stop()
            kazoo.close()
            print(f"speed-up over kazoo get_async: median {statistics.median(ratios):.1f}x "
                  f"(runs: {', '.join(f'{r:.1f}x' for r in ratios)})", flush=True)
            if not naive:
                return
            naive_count, naive_s, naive_cpu = timed(naive_read, session)
            assert naive_count == partitions
        print(f"naive loop  : {naive_s:6.2f} s ({naive_cpu:5.2f} s CPU) {partitions / naive_s:9,.0f} partition "
              f"states/s   keel (last run) is {naive_s / keel_s:.1f}x  ({load()})")
    finally:
        with ZkSession.open(zk) as root:
            root.delete_tree(chroot)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk", help="ZooKeeper host:port (default: start a throwaway one)")
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--topics", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3, help="keel / kazoo pairs to time (default 3)")
    ap.add_argument("--no-naive", dest="naive", action="store_false", help="skip the naive loop (minutes at 200,000)")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        zk = args.zk
        if not zk:
            from sandbox.processes import zkserver

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="keel-bench-zk-")))
            server = stack.enter_context(zkserver.start(zkserver.free_port(), tmp))
            zk = server.connect
        run(zk, args.partitions, args.topics, args.repeat, args.naive)


if __name__ == "__main__":
    main()
