"""Spark for tests: one local SparkSession per test session, and a throwaway standalone cluster on 127.0.0.1.

    from tests.support.spark_helpers import standalone_cluster

    def test_job(spark): ...   # the session-scoped fixture of tests/fleet/conftest.py
    with standalone_cluster(tmp_path) as master_url: ...   # master + one worker; both killed afterwards
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core.fleet.spark import spark_bin

LOCAL_MASTER = "local[2]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env() -> dict[str, str]:
    """Environment for Spark child processes: loopback only, this interpreter for PySpark."""
    import sys

    env = dict(os.environ)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="localhost", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _wait(predicate, timeout: float, what: str, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a Spark process exited early with status {p.returncode}")
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


def _master_state(web_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as r:
        return json.loads(r.read())


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


class StandaloneCluster:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.web_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.workdir / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            # own process group: killing it takes the JVM and the launcher script with it
            p = subprocess.Popen([spark_bin("spark-class"), *args], stdout=out, stderr=subprocess.STDOUT,
                                 env=spark_env(), cwd=self.workdir, start_new_session=True)
        self.procs.append(p)
        return p

    def start_master(self, timeout: float = 90) -> None:
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.web_port)])
        _wait(lambda: _master_state(self.web_port).get("status") == "ALIVE", timeout, "the Spark master",
              self.procs)

    def start_worker(self, cores: int = 2, memory: str = "2g", timeout: float = 90, wait: bool = True) -> None:
        work = self.workdir / "worker"
        work.mkdir(exist_ok=True)
        self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                               "--port", str(free_port()), "--webui-port", str(free_port()),
                               "--cores", str(cores), "--memory", memory, "--work-dir", str(work)])
        if wait:
            self.wait_for_worker(timeout)

    def wait_for_worker(self, timeout: float = 90) -> None:
        _wait(lambda: len([w for w in _master_state(self.web_port).get("workers", ())
                           if w.get("state") == "ALIVE"]) >= 1, timeout, "a Spark worker to register", self.procs)

    def stop(self) -> None:
        for p in reversed(self.procs):
            _kill(p)

    def log_tail(self, lines: int = 40) -> str:
        out = []
        for log in self.logs:
            if log.exists():
                out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)


@contextmanager
def standalone_cluster(workdir: Path) -> Iterator[StandaloneCluster]:
    """A Spark standalone master on 127.0.0.1 (no worker yet: call start_worker()); always killed afterwards."""
    cluster = StandaloneCluster(workdir)
    try:
        cluster.start_master()
        yield cluster
    finally:
        cluster.stop()
