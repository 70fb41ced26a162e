"""`make run KAFKA=real|kraft` as the tests drive it: started on free ports with its own RUN_DIR, waited for until the
dashboard answers, stopped with a Ctrl-C, and everything it may have left stopped by PID afterwards, whatever
happened (tests/kafka/test_make_run_real.py, test_make_run_kraft.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sandbox.processes import kafka as kafka_runner
from sandbox.processes import zkserver
from tests.support.sandbox_helpers import wait_until

REPO = Path(__file__).resolve().parents[2]
# What every real-Kafka demo must show (sandbox/demo.py creates them): topic -> partitions
DEMO_TOPICS = {"orders": 12, "payments": 6, "clicks": 8, "inventory": 3, "audit-log": 1}


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def health(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
            return r.read().decode()
    except OSError:
        return ""


def link_cached_kafka(run_dir: Path, version: str) -> None:
    """Kafka's jars: when the repository's cache is complete by scripts/kafka.sh's own check, `run_dir` links it
    (kafka.sh then copies nothing); otherwise make run fetches into its RUN_DIR (never through the link)."""
    (run_dir / "kafka").mkdir(parents=True, exist_ok=True)
    cached = subprocess.run([str(REPO / "scripts" / "kafka.sh"), "lib"], cwd=REPO, capture_output=True,
                            env={**os.environ, "RUN_DIR": str(kafka_runner.run_dir()), "KAFKA_VERSION": version})
    if cached.returncode == 0:
        (run_dir / "kafka" / version).symlink_to(kafka_runner.kafka_home(version))


@dataclass
class MakeRun:
    make: subprocess.Popen
    run_dir: Path
    zk_port: int
    http_port: int
    log_path: Path
    started: float

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_dashboard(self, timeout: float = 150) -> None:
        wait_until(lambda: health(self.http_port) == "ok" or self.make.poll() is not None, timeout,
                   message="the dashboard")
        assert self.make.poll() is None, self.log()

    def ctrl_c(self, timeout: float = 60) -> None:
        """Ctrl-C: the terminal signals the whole foreground group; then make must exit and the dashboard stop."""
        os.killpg(self.make.pid, signal.SIGINT)
        self.make.wait(timeout=timeout)
        wait_until(lambda: not listening(self.http_port), 30, message="the dashboard to stop")


@contextlib.contextmanager
def make_run(tmp_path: Path, kafka: str, version: str, cluster_dir: str) -> Iterator[MakeRun]:
    """`make run KAFKA=<kafka>` with KAFKA_VERSION=<version>, its own ports and RUN_DIR (tmp_path/run); on the way
    out, SIGKILL to make's group, then the cluster of RUN_DIR/<cluster_dir> and ZooKeeper stopped by PID."""
    zk_port, http_port = zkserver.free_port(), zkserver.free_port()
    run_dir = tmp_path / "run"
    link_cached_kafka(run_dir, version)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "KEEL_CONFIG", "KAFKA")}
    env.update(ZK_PORT=str(zk_port), PORT=str(http_port), RUN_DIR=str(run_dir), KAFKA_VERSION=version)
    log_path = tmp_path / "make-run.log"
    log = open(log_path, "wb")
    make = subprocess.Popen(["make", "run", f"KAFKA={kafka}"], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield MakeRun(make, run_dir, zk_port, http_port, log_path, time.monotonic())
    finally:
        try:
            os.killpg(make.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        make.wait(timeout=30)
        log.close()
        cluster = run_dir / cluster_dir
        if (cluster / "cluster.json").exists():  # by PID, whatever happened above
            subprocess.run([sys.executable, "-m", "sandbox", "kafka", "down", "--dir", str(cluster), "--timeout", "10"],
                           cwd=REPO, capture_output=True)
        subprocess.run([sys.executable, "-m", "sandbox.processes.zkserver", "stop", "--dir", str(run_dir / "zk")],
                       cwd=REPO, capture_output=True)


__all__ = ["DEMO_TOPICS", "REPO", "MakeRun", "health", "link_cached_kafka", "listening", "make_run"]
