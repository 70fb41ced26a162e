"""Two real `python -m core` processes racing on the same znode, 20 rounds each.

Whatever the interleaving, every write that reports success must have been computed from the state
it replaced: successes chain (each one's "old" count is the previous one's "new"), and every config
change that reported success is still there after the round. A loser gets "changed while it was
being written ... Try again" and writes nothing. (On code that took the version for the write from a
later read, both could report success and one update was silently lost.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core import zkformat as zf
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic

ROUNDS = 20
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]}, config={"retention.ms": "1000"})
        yield s


def race(*argvs: list[str]) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "core", *argv], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in argvs]
    out = []
    for p, argv in zip(procs, argvs):
        stdout, stderr = p.communicate(timeout=60)
        out.append(subprocess.CompletedProcess(argv, p.returncode, stdout, stderr))
    return out


def test_concurrent_add_partitions_never_lose_a_growth(cluster, zk_connect, tmp_path):
    store = str(tmp_path / "s.sqlite")
    count = 2
    collisions = 0
    for _ in range(ROUNDS):
        results = race(*(["add-partitions", "--zk", zk_connect, "--topic", "t", "--partitions", str(count + k),
                          "--store", store] for k in (1, 2)))
        successes = []
        for r in results:
            m = re.search(r"\((\d+) -> (\d+)\)", r.stdout)
            if r.returncode == 0:
                assert m, r.stdout
                successes.append((int(m[1]), int(m[2])))
            else:
                assert "Try again" in r.stderr or "which is higher than the requested" in r.stderr \
                    or "Topic already has" in r.stderr, r.stderr
                assert "Traceback" not in r.stderr
        assert successes, [r.stderr for r in results]
        # successes chain: no two computed from the same old count
        successes.sort()
        assert successes[0][0] == count
        for (_, new), (old, _) in zip(successes, successes[1:]):
            assert old == new, successes
        collisions += len(successes) < 2
        count = successes[-1][1]
        partitions = zf.decode_topic("t", cluster.get(zf.topic_path("t")).data).partitions
        assert sorted(partitions) == list(range(count))
    # Not asserted (timing decides), but reported so a reader can see the race was real.
    print(f"{collisions} of {ROUNDS} rounds had a loser")


def test_concurrent_alter_config_never_revert_each_other(cluster, zk_connect, tmp_path):
    store = str(tmp_path / "s.sqlite")
    for i in range(ROUNDS):
        mine = {"retention.ms": str(10_000 + i), "delete.retention.ms": str(20_000 + i)}
        results = race(*(["alter-config", "--zk", zk_connect, "--topic", "t", "--add-config", f"{key}={value}",
                          "--store", store] for key, value in mine.items()))
        config = zf.decode_config(cluster.get(zf.topic_config_path("t")).data, "")
        for (key, value), r in zip(mine.items(), results):
            if r.returncode == 0:
                assert config.get(key) == value, (key, value, config)  # a reported success is never reverted
            else:
                assert "Try again" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert any(r.returncode == 0 for r in results)
