"""`fleet collect` over several real ZooKeeper-backed clusters (issue 31, item 3): read in parallel (bounded), each
cluster's line as it finishes, one slow cluster not holding up the others, and `--every` keeping history.
No Spark here: these tests write and read the store with pyarrow only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.fleet.export import collect
from core.fleet.store import read_history, read_store
from core.model import Broker, ClusterSnapshot, Partition, Topic
from core.policy.config import load_config
from core.zk.session import ZkSession
from tests.fleet.test_fleet import assert_frames_equal, run_cli, write_kafka_tree

ROOT = Path(__file__).resolve().parents[2]
SLOW_TIMEOUT = 2.0  # keel.toml connect_timeout of the clusters that never answer


def cluster_snapshot(name: str, partitions: int, brokers: int) -> ClusterSnapshot:
    """`partitions` partitions of RF 3 over `brokers` brokers in 2 racks, leaders and ISRs as placed."""
    bs = tuple(Broker(b, f"r{b % 2}") for b in range(1, brokers + 1))
    parts = []
    for p in range(partitions):
        reps = tuple((p + i) % brokers + 1 for i in range(3))
        parts.append(Partition("events", p, reps, leader=reps[p % 2], isr=reps[:2 + p % 2]))
    return ClusterSnapshot(cluster=name, captured_at="2026-11-22T03:00:00Z", source="test", brokers=bs,
                           topics=(Topic("events", tuple(parts)),))


class BlackHole:
    """A TCP port that accepts connections and never answers: a ZooKeeper that hangs (slow / unreachable)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.held.append(conn)
            except OSError:
                continue

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.fixture
def fleet_config(zk_connect, tmp_path):
    """keel.toml with four real clusters (each its own ZooKeeper chroot) and two that hang until their timeout."""
    holes = [BlackHole(), BlackHole()]
    lines = []
    with ZkSession.open(zk_connect) as root:
        for i, (parts, brokers) in enumerate([(120, 5), (60, 3), (200, 6), (30, 4)]):
            root.ensure_path(f"/c{i}")
            write_kafka_tree(f"{zk_connect}/c{i}", cluster_snapshot(f"fast{i}", parts, brokers))
            lines.append(f'[clusters.fast{i}]\nzk = "{zk_connect}/c{i}"\n')
    for i, hole in enumerate(holes):
        lines.append(f'[clusters.slow{i}]\nzk = "127.0.0.1:{hole.port}"\nconnect_timeout = {SLOW_TIMEOUT}\n')
    path = tmp_path / "keel.toml"
    path.write_text("\n".join(lines))
    try:
        yield path
    finally:
        for hole in holes:
            hole.close()


def timed_collect(config, store: Path, parallel: int):
    seen: list[tuple[float, str, bool]] = []
    started = time.monotonic()
    results = collect(config, store, parallel=parallel,
                      progress=lambda r: seen.append((time.monotonic() - started, r.cluster, r.ok)))
    return time.monotonic() - started, results, seen


def test_parallel_collect_is_faster_and_stores_what_sequential_stores(fleet_config, tmp_path):
    config = load_config(str(fleet_config))
    seq_wall, seq, _ = timed_collect(config, tmp_path / "seq", parallel=1)
    par_wall, par, seen = timed_collect(config, tmp_path / "par", parallel=6)
    print(f"\nsequential {seq_wall:.2f} s, parallel {par_wall:.2f} s")

    assert [r.cluster for r in par] == [r.cluster for r in seq] == list(config.clusters)  # in keel.toml's order
    assert [r.ok for r in par] == [r.ok for r in seq] == [True] * 4 + [False] * 2
    assert all("could not connect to ZooKeeper" in r.error for r in par[4:])
    # the two hanging clusters cost SLOW_TIMEOUT each one after the other, at once in parallel
    assert seq_wall >= 2 * SLOW_TIMEOUT
    assert par_wall < 0.7 * seq_wall, (par_wall, seq_wall)
    assert par_wall < sum(r.result.seconds for r in seq[:4]) + 2 * SLOW_TIMEOUT
    # each line as it finishes: every real cluster is reported before the hanging ones give up
    fast_done = [t for t, name, ok in seen if ok]
    assert len(fast_done) == 4 and max(fast_done) < SLOW_TIMEOUT, seen
    assert [name for _, name, ok in seen[-2:]] and not any(ok for _, _, ok in seen[-2:])

    # the stored data are the same (captured_at aside: the time of each reading)
    for which in (0, 1):
        a = read_store(tmp_path / "seq")[which].drop(columns=["captured_at"])
        b = read_store(tmp_path / "par")[which].drop(columns=["captured_at"])
        keys = ["cluster", "topic", "partition", "position"] if which == 0 else ["cluster", "broker"]
        assert set(a.cluster) == set(b.cluster) == {"fast0", "fast1", "fast2", "fast3"}
        assert_frames_equal(b.astype({"cluster": str}), a.astype({"cluster": str}), keys, "store")


def test_collect_cli_parallel_option_and_bad_values(fleet_config, tmp_path, capsys):
    store = tmp_path / "store"
    status = run_cli("collect", "--config", fleet_config, "--out", store, "--parallel", "3")
    out, err = capsys.readouterr()
    assert status == 1 and "2 of 6 cluster(s) failed" in err
    lines = out.strip().splitlines()
    # one line per cluster as it finishes: the two hanging ones last, in whichever order they gave up
    assert len(lines) == 6 and sorted(ln.split(":")[0] for ln in lines[4:]) == ["slow0", "slow1"], lines
    assert all("FAILED" in ln for ln in lines[4:]) and all("FAILED" not in ln for ln in lines[:4])
    other = tmp_path / "never"
    for bad in (["--parallel", "0"], ["--every", "0s"], ["--every", "soon"], ["--every", "8d"]):
        with pytest.raises(SystemExit) as exc:  # a usage error, before anything connects or writes
            run_cli("collect", "--config", fleet_config, "--out", other, *bad)
        assert exc.value.code == 2 and not other.exists(), bad
    assert run_cli("collect", "--config", fleet_config, "--out", other, "--count", "2") == 1
    assert "--count counts the rounds of --every" in capsys.readouterr().err and not other.exists()


def test_every_keeps_one_capture_per_round(zk_connect, tmp_path, capsys):
    write_kafka_tree(zk_connect, cluster_snapshot("one", 40, 3))
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.one]\nzk = "{zk_connect}"\n')
    store = tmp_path / "store"
    started = time.monotonic()
    assert run_cli("collect", "--config", config, "--out", store, "--every", "1s", "--count", "2") == 0
    assert time.monotonic() - started >= 1.0  # the second round waited for its turn
    out, _ = capsys.readouterr()
    assert len(out.strip().splitlines()) == 2
    history, brokers = read_history(store)
    assert history.groupby("captured_at").size().tolist() == [120, 120]  # two captures of 40 x RF 3 replicas
    assert brokers.captured_at.nunique() == 2 and len(brokers) == 6
    latest, _ = read_store(store)  # the store the jobs read holds only the latest capture
    assert latest.captured_at.nunique() == 1 and latest.captured_at.iloc[0] == history.captured_at.max()
    # a plain collect keeps no history; --history adds one capture
    plain = tmp_path / "plain"
    assert run_cli("collect", "--config", config, "--out", plain) == 0
    assert len(read_history(plain)[0]) == 0
    assert run_cli("collect", "--config", config, "--out", plain, "--history") == 0
    assert read_history(plain)[0].captured_at.nunique() == 1


def test_ctrl_c_between_rounds_ends_cleanly(zk_connect, tmp_path):
    write_kafka_tree(zk_connect, cluster_snapshot("one", 10, 3))
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.one]\nzk = "{zk_connect}"\n')
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config), "--out",
                             str(store), "--every", "10m"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        err = ""
        while "round 1 done" not in err:
            assert time.monotonic() < deadline and proc.poll() is None, err
            err += proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err + rest
    assert "stopped after 1 complete round(s)" in rest and "Traceback" not in rest
    assert out.startswith("one: 3 brokers, 10 partitions")
    assert read_history(store)[0].captured_at.nunique() == 1
    assert not [p for p in store.rglob(".tmp-*")]


def test_ctrl_c_inside_a_round_lets_running_clusters_finish(zk_connect, tmp_path):
    write_kafka_tree(zk_connect, cluster_snapshot("one", 10, 3))
    hole = BlackHole()
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.one]\nzk = "{zk_connect}"\n\n'
                      f'[clusters.hangs]\nzk = "127.0.0.1:{hole.port}"\nconnect_timeout = 5.0\n')
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config), "--out",
                             str(store), "--every", "10m"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        first = proc.stdout.readline()  # "one" is written while "hangs" still waits for ZooKeeper
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hole.close()
    assert first.startswith("one: 3 brokers, 10 partitions"), first + err
    assert proc.returncode == 130, err
    assert "Traceback" not in err and not [p for p in store.rglob(".tmp-*")]
    assert set(read_store(store)[0].cluster) == {"one"}
