"""A throwaway ZooKeeper ensemble on loopback: N servers (3 by default) forming one quorum, for fault tests.

The ensemble mode of sandbox.processes.zkserver, in a module of its own (zkserver.py stays under the 600-line limit and
is unchanged; this module only uses it). Each member is an ordinary zkserver directory::

    base_dir/zk<N>/zoo.cfg      clientPort, dataDir and the quorum: server.<i>=127.0.0.1:<peer>:<election>
    base_dir/zk<N>/data/myid    the member's id N
    base_dir/zk<N>/zk.log, zk.pid

so `zkserver.stop(member.data_dir)` stops one member and `Ensemble.stop()` all of them. Every port binds
127.0.0.1. `leader()` asks each member with the `srvr` four-letter word ("Mode: leader"). Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Mapping

from sandbox.processes import zkserver
from sandbox.processes.common import CHILDREN, log_tail
from sandbox.processes.zkserver import HOST, ZkPortInUse, ZkProcess, ZkServerError

__all__ = ["Ensemble", "start_ensemble"]


class Ensemble:
    """The members of a running ensemble, in id order (member i has myid i + 1)."""

    def __init__(self, members: list[ZkProcess]):
        self.members = members

    @property
    def connect(self) -> str:
        """Every member: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3" (append a /chroot as needed)."""
        return ",".join(m.connect for m in self.members)

    def mode(self, member: ZkProcess) -> str | None:
        """"leader", "follower", or None when the member does not serve (down, stopped, or electing)."""
        reply = zkserver.four_letter_word(member.port, "srvr", timeout=1.0) or ""
        for line in reply.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> ZkProcess | None:
        for m in self.members:
            if self.mode(m) == "leader":
                return m
        return None

    def serving(self) -> list[ZkProcess]:
        return [m for m in self.members if self.mode(m) in ("leader", "follower")]

    def wait_for_quorum(self, members: list[ZkProcess] | None = None, timeout: float = 60) -> ZkProcess:
        """Wait until `members` (default: every member still running) serve with one leader among them."""
        deadline = time.monotonic() + timeout
        while True:
            wanted = members if members is not None else [m for m in self.members if m.is_running()]
            modes = {m.port: self.mode(m) for m in wanted}
            leaders = [m for m in wanted if modes[m.port] == "leader"]
            if len(leaders) == 1 and all(v in ("leader", "follower") for v in modes.values()):
                return leaders[0]
            if time.monotonic() >= deadline:
                raise ZkServerError(f"the ensemble has no quorum after {timeout:g} s: {modes}")
            time.sleep(0.1)

    def kill(self, member: ZkProcess, sig: int = signal.SIGKILL) -> None:
        """Signal one member's JVM by pid (SIGKILL: a crashed server; SIGSTOP / SIGCONT: a stalled one)."""
        os.kill(member.pid, sig)
        if sig == signal.SIGKILL:
            child = CHILDREN.pop(member.pid, None)
            if child is not None:
                child.wait(timeout=10)

    def stop(self) -> None:
        for m in self.members:
            try:
                os.kill(m.pid, signal.SIGCONT)  # a stopped JVM cannot act on SIGTERM
            except ProcessLookupError:
                pass
            zkserver.stop(m.data_dir)

    def __enter__(self) -> "Ensemble":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _distinct_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        p = zkserver.free_port()
        if p not in ports:
            ports.append(p)
    return ports


def start_ensemble(base_dir: str | os.PathLike, size: int = 3, *, timeout: float = 90, detach: bool = True,
                   extra_config: Mapping[str, object] | None = None, java: str | None = None,
                   jar: str | os.PathLike | None = None, heap: str = "256m") -> Ensemble:
    """Start `size` ZooKeeper servers on 127.0.0.1 forming one ensemble; return once all serve with a leader.

    Member i lives in base_dir/zk<i+1> (myid i+1). The ports are picked free; one taken before its server binds
    it gives ZkPortInUse (every member is then stopped), so a caller can simply try again."""
    base = Path(base_dir).resolve()
    java_bin = zkserver._find_java(java)
    jar_path = zkserver._find_jar(jar)
    conf_dir = Path(os.environ.get("KEEL_ZK_CONF_DIR") or zkserver.DEFAULT_CONF_DIR)
    ports = _distinct_ports(3 * size)
    client, peer, election = ports[:size], ports[size:2 * size], ports[2 * size:]
    quorum = {f"server.{i + 1}": f"{HOST}:{peer[i]}:{election[i]}" for i in range(size)}
    members: list[ZkProcess] = []
    try:
        for i in range(size):
            d = base / f"zk{i + 1}"
            (d / zkserver.DATA_SUBDIR).mkdir(parents=True, exist_ok=True)
            (d / zkserver.DATA_SUBDIR / "myid").write_text(f"{i + 1}\n")
            settings = {"initLimit": 10, "syncLimit": 5, "quorumListenOnAllIPs": "false", **quorum,
                        **(extra_config or {})}
            cfg = zkserver._write_config(d, client[i], settings)
            members.append(_launch(java_bin, jar_path, conf_dir, cfg, d, client[i], heap, detach))
        ensemble = Ensemble(members)
        deadline = time.monotonic() + timeout
        for m in members:
            if not zkserver._wait_healthy(m.port, m.pid, max(1.0, deadline - time.monotonic())):
                raise _failed(m)
        ensemble.wait_for_quorum(members, timeout=max(1.0, deadline - time.monotonic()))
        return ensemble
    except BaseException:
        Ensemble(members).stop()
        raise


def _launch(java_bin: str, jar_path: Path, conf_dir: Path, cfg: Path, d: Path, port: int, heap: str,
            detach: bool) -> ZkProcess:
    classpath = [str(conf_dir), str(jar_path)]
    if os.path.isfile(zkserver._SLF4J_BINDING):
        classpath.append(zkserver._SLF4J_BINDING)
    cmd = [java_bin, f"-Xmx{heap}", "-Djava.awt.headless=true", "-Dzookeeper.admin.enableServer=false",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
           "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS", "-cp", ":".join(classpath),
           zkserver.MAIN_CLASS, str(cfg)]
    with zkserver._locked(d):
        if zkserver._port_bound(port):
            raise ZkPortInUse(f"Port {port} on {HOST} is already in use by another process; pick another port.")
        with open(d / zkserver.LOG_NAME, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting ensemble member on {HOST}:{port} ===\n"
                      .encode())
            log.flush()
            proc = subprocess.Popen(cmd, cwd=d, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    close_fds=True, start_new_session=detach)
        CHILDREN[proc.pid] = proc
        (d / zkserver.PID_NAME).write_text(f"{proc.pid}\n")
    return ZkProcess(port, d, proc.pid, started=True)


def _failed(member: ZkProcess) -> ZkServerError:
    tail = log_tail(member.log_path)
    err = ZkPortInUse if "Address already in use" in tail else ZkServerError
    return err(f"ensemble member on {HOST}:{member.port} did not come up.\n--- last lines of {member.log_path} ---\n"
               f"{tail}")
