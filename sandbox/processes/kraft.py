"""Run a REAL KRaft-mode Apache Kafka cluster on loopback (Kafka 3.9 and 4.x): no ZooKeeper.

Each node is one JVM in combined mode (`process.roles=broker,controller`): a broker listener and a controller
listener on ports picked here, every node a voter of the metadata quorum (`controller.quorum.voters`), two
`log.dirs` and a rack, like sandbox.processes.kafka's ZooKeeper-mode brokers, whose run folder layout, process
handling (by PID, SIGTERM then SIGKILL) and Kafka tools this reuses. Before a node's first start its storage is
formatted with one cluster id (`kafka.tools.StorageTool format`), as KRaft requires.

Without ZooKeeper, "registered" and "controller" come from the Admin API: the brokers DescribeCluster lists, the
quorum leader DescribeQuorum names (core.kafka.admin).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping

from core.errors import KeelError
from sandbox.processes.kafka import STATE_NAME, BrokerInfo, KafkaCluster
from sandbox.processes.common import HOST, free_port, log_tail
from sandbox.processes.kafka_setup import (BROKER_SETTINGS, DEFAULT_HEAP, KafkaRunError, _port_open, java_for,
                                           kafka_version, lib_dir, rack_name, settings_for, version_at_least)

FIRST_KRAFT_VERSION = "3.9.0"  # what Keel runs in KRaft mode (3.9: the last with ZooKeeper, the first migrated to)
FORMATTED = "meta.properties"

# ZooKeeper-only settings of BROKER_SETTINGS a KRaft node refuses or ignores.
_ZK_ONLY = ("zookeeper.session.timeout.ms", "zookeeper.connection.timeout.ms", "zookeeper.set.acl",
            "controlled.shutdown.retry.backoff.ms")

LOG4J2_PROPERTIES = """\
# Written by sandbox.processes.kraft; every node passes -Dkafka.logs.dir=<its logs folder>.
appender.server.type = RollingFile
appender.server.name = server
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 20MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

# Kafka's tools (TopicCommand, ...) under log4j 2: warnings only, on stderr.
TOOLS_LOG4J2_PROPERTIES = """\
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = stderr
"""


def kraft_cluster_id() -> str:
    """A new cluster id as Kafka's StorageTool random-uuid prints it (url-safe base64 of 16 bytes, no padding),
    never starting with "-" (Kafka's Uuid.randomUuid draws again: a command line would read it as an option)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not found.startswith("-"):
            return found


@dataclass
class NodeInfo(BrokerInfo):
    controller_port: int = 0

    @property
    def controller_endpoint(self) -> str:
        return f"{HOST}:{self.controller_port}"


@dataclass
class KraftCluster(KafkaCluster):
    """N combined broker + controller nodes (every one a quorum voter) in one run folder. Build with
    `KraftCluster.create(dir, nodes=3)` or `KraftCluster.load(dir)`, then `start()`."""

    cluster_id: str = ""

    @classmethod
    def create(cls, dir: str | os.PathLike, *, nodes: int = 3, racks: int | None = None, first_id: int = 1,
               version: str | None = None, heap: str = DEFAULT_HEAP, overrides: Mapping[str, str] | None = None,
               detach: bool = True) -> "KraftCluster":
        version = kafka_version(version)
        if not version_at_least(version, FIRST_KRAFT_VERSION):
            raise KafkaRunError(f"Keel runs KRaft clusters of Kafka {FIRST_KRAFT_VERSION} and later, not {version}")
        if nodes < 1:
            raise KafkaRunError(f"a cluster needs at least one node, not {nodes}")
        racks = min(3, nodes) if racks is None else racks
        used: set[int] = set()

        def port() -> int:
            p = free_port()
            while p in used:
                p = free_port()
            used.add(p)
            return p

        infos = [NodeInfo(first_id + i, port(), rack_name(i % racks) if racks else None, controller_port=port())
                 for i in range(nodes)]
        return cls(Path(dir).resolve(), "", infos, version, heap, dict(overrides or {}), detach,
                   cluster_id=kraft_cluster_id())

    @classmethod
    def load(cls, dir: str | os.PathLike, *, detach: bool = True) -> "KraftCluster":
        path = Path(dir).resolve()
        try:
            state = json.loads((path / STATE_NAME).read_text())
        except (OSError, ValueError) as e:
            raise KafkaRunError(f"no KRaft cluster in {path}: {e}") from None
        return cls(path, "", [NodeInfo(**b) for b in state["brokers"]], state["version"],
                   state.get("heap", DEFAULT_HEAP), state.get("overrides", {}), detach,
                   cluster_id=state["cluster_id"])

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        state = {"mode": "kraft", "cluster_id": self.cluster_id, "version": self.version, "heap": self.heap,
                 "overrides": self.overrides, "brokers": [asdict(b) for b in self.brokers]}
        tmp = self.dir / (STATE_NAME + ".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.dir / STATE_NAME)

    # --- configuration ---------------------------------------------------------------------------

    def settings(self, b: BrokerInfo) -> dict[str, str]:
        n = len(self.brokers)
        values = {"rf": str(min(3, n)), "min_isr": str(min(2, n))}
        voters = ",".join(f"{x.id}@{x.controller_endpoint}" for x in self.brokers)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(b.id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{b.endpoint},CONTROLLER://{b.controller_endpoint}",
            "advertised.listeners": f"PLAINTEXT://{b.endpoint}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": ",".join(str(d) for d in self.log_dirs(b.id)),
        }
        if b.rack:
            props["broker.rack"] = b.rack
        props.update({k: v.format(**values) for k, v in settings_for(self.version, BROKER_SETTINGS).items()
                      if k not in _ZK_ONLY})
        props.update(self.overrides)
        return props

    def _log_flag(self) -> str:
        if version_at_least(self.version, "4.0.0"):
            return f"-Dlog4j2.configurationFile=file:{self.dir / 'log4j2.properties'}"
        return f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}"

    def _cmdline(self, b: BrokerInfo) -> list[str]:
        cmd = super()._cmdline(b)
        return [self._log_flag() if a.startswith("-Dlog4j.configuration=") else a for a in cmd]

    def tool(self, main_class: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """One of Kafka's own tools from the fetched jars (see KafkaCluster.tool), logging as its version does."""
        if not version_at_least(self.version, "4.0.0"):
            return super().tool(main_class, *args, timeout=timeout)
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "tools-log4j2.properties"
        if not config.exists():
            config.write_text(TOOLS_LOG4J2_PROPERTIES)
        cmd = [java_for(self.version), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile=file:{config}",
               "-cp", f"{lib_dir(self.version)}/*", main_class, *args]
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def _write_files(self) -> None:
        super()._write_files()
        (self.dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)

    def _format(self, b: BrokerInfo) -> None:
        """Format the node's log dirs with the cluster id, once (a dir formatted for this cluster is left alone; one
        of another cluster, e.g. an earlier run in the same folder, is wiped: its node would not join)."""
        self._wipe_foreign_data(b, self.cluster_id)
        if all((d / FORMATTED).exists() for d in self.log_dirs(b.id)):
            return
        config = self.broker_dir(b.id) / "server.properties"
        cmd = [java_for(self.version), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               self._log_flag(), f"-Dkafka.logs.dir={self.logs_dir(b.id)}",
               "-cp", f"{lib_dir(self.version)}/*", "kafka.tools.StorageTool", "format",
               # one argument: the id of a ZooKeeper cluster being migrated may start with "-", which "-t <id>" would
               # read as an option (Kafka draws new KRaft ids again when they do; ZooKeeper mode never did)
               f"--cluster-id={self.cluster_id}",
               "-c", str(config), "--ignore-formatted"]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise KafkaRunError(f"formatting the storage of KRaft node {b.id} failed (exit {proc.returncode}):\n"
                                f"{(proc.stdout + proc.stderr).strip()[-2000:]}")

    # --- the cluster as its brokers describe it ------------------------------------------------------

    def _describe(self) -> tuple[set[int], int | None]:
        """(the unfenced node ids DescribeCluster lists, the quorum leader); (set(), None) when no node answers."""
        from core.kafka.admin import KafkaAdmin

        alive = [b for b in self.brokers if b.pid is not None and _port_open(b.port)]
        if not alive:
            return set(), None
        try:
            with KafkaAdmin(",".join(b.endpoint for b in alive), timeout=5) as admin:
                listed = {int(x["broker_id"]) for x in admin.describe_cluster().get("brokers") or ()
                          if not x.get("is_fenced")}  # Kafka 4 lists fenced brokers too (KIP-1073)
                quorum = admin.quorum() or {}
        except KeelError:
            return set(), None
        leader = quorum.get("leader_id") if isinstance(quorum, dict) else None
        if leader is None and isinstance(quorum, dict):  # kafka-python: {"topics": [{"partitions": [...]}]}
            for t in quorum.get("topics") or ():
                for p in t.get("partitions") or ():
                    leader = p.get("leader_id")
        return listed, (int(leader) if leader is not None and int(leader) >= 0 else None)

    def registered(self, session=None) -> set[int]:
        return self._describe()[0]

    def controller(self, session=None) -> int | None:
        return self._describe()[1]

    def status(self) -> list[dict]:
        """KafkaCluster.status's rows, "registered" and "controller" (the quorum leader) from the Admin API."""
        listed, leader = self._describe()
        answered = bool(listed) or leader is not None
        return [{"id": b.id, "rack": b.rack, "endpoint": b.endpoint,
                 "pid": b.pid if self._is_our_broker(b) else None, "alive": self._is_our_broker(b),
                 "registered": b.id in listed if answered else None, "controller": leader == b.id}
                for b in self.brokers]

    # --- processes ----------------------------------------------------------------------------------

    def start(self, *, timeout: float = 120.0) -> "KraftCluster":
        lib_dir(self.version)
        self._write_files()
        down = [b for b in self.brokers if not self._is_our_broker(b) and not _port_open(b.port)]
        return self._launch_and_wait(down, self._format, timeout)

    def wait_ready(self, ids: Iterable[int] | None = None, *, timeout: float = 120.0) -> None:
        """Until the nodes `ids` (default all) run, are listed by DescribeCluster, and the quorum has a leader."""
        want = set(self.broker_ids if ids is None else ids)
        deadline = time.monotonic() + timeout
        while True:
            for bid in sorted(want):
                if not self._is_our_broker(self.broker(bid)):
                    raise KafkaRunError(f"KRaft node {bid} exited during startup.\n--- last lines of "
                                        f"{self.server_log(bid)} ---\n{log_tail(self.server_log(bid))}")
            listed, leader = self._describe()
            if want <= listed and leader is not None:
                return
            if time.monotonic() >= deadline:
                first = min(want - listed) if want - listed else min(want)
                raise KafkaRunError(
                    f"KRaft cluster in {self.dir} not ready within {timeout:g} s: "
                    + (f"node(s) {sorted(want - listed)} not listed" if want - listed else "no quorum leader")
                    + f".\n--- last lines of {self.server_log(first)} ---\n{log_tail(self.server_log(first))}")
            time.sleep(0.5)

    def wait_unregistered(self, broker_id: int, *, timeout: float = 30.0) -> None:
        """Until DescribeCluster no longer lists the node (its broker session timed out and it was fenced)."""
        deadline = time.monotonic() + timeout
        while broker_id in self.registered():
            if time.monotonic() >= deadline:
                raise KafkaRunError(f"KRaft node {broker_id} is still listed after {timeout:g} s")
            time.sleep(0.3)

    def start_broker(self, broker_id: int, *, timeout: float = 90.0) -> None:
        b = self.broker(broker_id)
        if self._is_our_broker(b):
            return
        self._write_files()
        self._launch(b)
        self.wait_ready([broker_id], timeout=timeout)
