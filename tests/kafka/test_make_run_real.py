"""`make run KAFKA=real` (issue 14, item 3): the demo on REAL brokers. ZooKeeper, three Kafka brokers in the chroot
/keel-real, the demo topics created through Keel and filled with data, broker 3 stopped, and the dashboard pointed at
them through a generated keel.toml (cluster `real`, with the bootstrap servers); no controller emulator. Ctrl-C
stops everything, the brokers by PID included. The brokers are the Kafka version this run of tests/kafka is about
(KAFKA_VERSION=<that version> make run KAFKA=real).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sandbox.processes import kafka as kafka_runner
from sandbox.processes import zkserver
from sandbox.processes.common import pid_alive
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.kafka.realkafka import kafka_version
from tests.support.sandbox_helpers import wait_until

REPO = Path(__file__).resolve().parents[2]
TOPICS = {"orders": 12, "payments": 6, "clicks": 8, "inventory": 3, "audit-log": 1}


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0



def _health(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
            return r.read().decode()
    except OSError:
        return ""


def test_make_run_kafka_real_shows_real_brokers_and_leaves_nothing_behind(tmp_path):
    from core.policy.config import load_config
    from core.kafka.admin import KafkaAdmin

    zk_port, http_port = zkserver.free_port(), zkserver.free_port()
    run_dir = tmp_path / "run"
    # Kafka's jars: when the repository's cache is complete by scripts/kafka.sh's own check, this run's RUN_DIR links
    # it (kafka.sh then copies nothing); otherwise make run fetches into its RUN_DIR (never through the link).
    version = kafka_version()  # the version this run of tests/kafka is about (make test-kafka-matrix)
    (run_dir / "kafka").mkdir(parents=True)
    cached = subprocess.run([str(REPO / "scripts" / "kafka.sh"), "lib"], cwd=REPO, capture_output=True,
                            env={**os.environ, "RUN_DIR": str(kafka_runner.run_dir()), "KAFKA_VERSION": version})
    if cached.returncode == 0:
        (run_dir / "kafka" / version).symlink_to(kafka_runner.kafka_home(version))

    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "KEEL_CONFIG", "KAFKA")}
    env.update(ZK_PORT=str(zk_port), PORT=str(http_port), RUN_DIR=str(run_dir), KAFKA_VERSION=version)
    log = open(tmp_path / "make-run.log", "wb")
    started = time.monotonic()
    make = subprocess.Popen(["make", "run", "KAFKA=real"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    cluster_dir = run_dir / "kafka-cluster"
    pids: list[int] = []
    try:
        wait_until(lambda: _health(http_port) == "ok" or make.poll() is not None, 150, message="the dashboard")
        assert make.poll() is None, (tmp_path / "make-run.log").read_text()
        print(f"\nmake run KAFKA=real: dashboard up in {time.monotonic() - started:.1f} s", file=sys.stderr)

        # three real brokers in /keel-real, broker 3 stopped; no controller emulator
        state = json.loads((cluster_dir / "cluster.json").read_text())
        assert state["zk_connect"] == f"127.0.0.1:{zk_port}/keel-real"
        pids = [b["pid"] for b in state["brokers"] if b["pid"]]
        assert [b["id"] for b in state["brokers"] if b["pid"]] == [1, 2] and all(pid_alive(p) for p in pids)
        assert not (run_dir / "controller.pid").exists()
        with ZkSession.open(f"127.0.0.1:{zk_port}/keel-real") as zk:
            assert sorted(zk.children("/brokers/ids")) == ["1", "2"]
            snap = read_snapshot(zk)
        assert {b.id: b.alive for b in snap.brokers} == {1: True, 2: True, 3: False}
        assert {t.name: len(t.partitions) for t in snap.topics if t.name in TOPICS} == TOPICS
        assert snap.topic("payments").config == {"min.insync.replicas": "2"}

        # the dashboard's config: one cluster, `real`, with the bootstrap servers; the demo topics hold data
        config = load_config(run_dir / "keel.toml", env={})
        assert list(config.clusters) == ["real"]
        real = config.clusters["real"]
        assert real.zk == f"127.0.0.1:{zk_port}/keel-real"
        bootstrap = ",".join(f"127.0.0.1:{b['port']}" for b in state["brokers"])
        assert real.bootstrap == bootstrap
        with KafkaAdmin(real.bootstrap) as admin:
            sizes = admin.partition_sizes()
        for topic in TOPICS:
            assert sum(v for (t, _), v in sizes.items() if t == topic) > 0, f"{topic} holds no data"

        os.killpg(make.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        make.wait(timeout=60)
        wait_until(lambda: not _listening(http_port), 30, message="the dashboard to stop")
        wait_until(lambda: not any(pid_alive(p) for p in pids), 45, message="the Kafka brokers to stop")
        wait_until(lambda: not _listening(zk_port), 30, message="ZooKeeper to stop")
        wait_until(lambda: not (run_dir / "kafka.started-by-run").exists(), 30, message="kafka.started-by-run to go")
        wait_until(lambda: not (run_dir / "zk.started-by-run").exists(), 30, message="zk.started-by-run to go")
        assert not any(_listening(b["port"]) for b in state["brokers"])
        print(f"make run KAFKA=real: up and down in {time.monotonic() - started:.1f} s", file=sys.stderr)
    finally:
        try:
            os.killpg(make.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        make.wait(timeout=30)
        log.close()
        if (cluster_dir / "cluster.json").exists():  # by PID, whatever happened above
            subprocess.run([sys.executable, "-m", "sandbox", "kafka", "down", "--dir", str(cluster_dir), "--timeout", "10"],
                           cwd=REPO, capture_output=True)
        subprocess.run([sys.executable, "-m", "sandbox.processes.zkserver", "stop", "--dir", str(run_dir / "zk")],
                       cwd=REPO, capture_output=True)
