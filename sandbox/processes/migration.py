"""A REAL ZooKeeper -> KRaft migration (KIP-866) of a sandbox.processes.kafka cluster, one documented step a call.

Kafka 3.9's docs (docs/ops.html, "ZooKeeper to KRaft Migration") are followed step by step:

1. ``start_controllers()``: provision KRaft controller(s) (``process.roles=controller``, ids from 3000 so they
   collide with no broker id) formatted with the ZooKeeper cluster's id (``/cluster/id``), with
   ``zookeeper.metadata.migration.enable=true`` and ``zookeeper.connect``.
2. ``roll_brokers_for_migration()``: restart every broker, still in ZooKeeper mode, with the migration flag,
   ``controller.quorum.voters``, ``controller.listener.names``, the controller listener in
   ``listener.security.protocol.map`` and ``inter.broker.protocol.version=3.9``. After the last one the KRaft
   controller starts the migration by itself.
3. ``wait_migrated()``: the metadata copy is done and the controller is in dual-write.
4. ``roll_brokers_to_kraft()``: restart every broker as a KRaft broker (``process.roles=broker``, same id).
5. ``finalize()``: restart the controllers without the migration flag and without ``zookeeper.connect``.

and the way back from dual-write (the docs' "Reverting to ZooKeeper mode During the Migration" table, row
"Migrating brokers to KRaft", as the published 3.9 docs give it), one method a direction:
``rollback_brokers_to_zookeeper()``, ``deprovision_controllers()``, ``delete_controller_znode()``,
``clear_migration_znode()`` (the row's `get /migration` + `rmr /migration`: kafka-site PR 684, missing from the
3.9 branch's ops.html; a /migration left behind makes a later attempt skip the copy, strimzi issue 11262),
``roll_brokers_to_zookeeper()``; ``rollback_from_dual_write()`` runs them in order.

Every step waits until Kafka shows it done (each docstring says on what) and raises KafkaRunError with the tail of
the relevant log when it is not within its timeout. Controllers live in ``<cluster dir>/controllers`` (the
KraftCluster layout), bind 127.0.0.1 on free ports, and are stopped by PID like every sandbox process.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core import zkformat as zf
from core.errors import KeelError
from sandbox.processes.common import HOST, free_port, log_tail, pid_alive
from sandbox.processes.kafka import BrokerInfo, KafkaCluster
from sandbox.processes.kafka_setup import KafkaRunError, _port_open
from sandbox.processes.kraft import _ZK_ONLY, KraftCluster, NodeInfo

FIRST_CONTROLLER_ID = 3000  # the docs' sample id: KRaft node ids share one namespace with the broker ids
CONTROLLER_LISTENER = "CONTROLLER"
PROTOCOL_MAP = f"PLAINTEXT:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT"
IBP = "3.9"  # "Preparing for migration": inter.broker.protocol.version set to the brokers' version

# What Kafka logs at each point (KRaftMigrationDriver, ActivationRecordsGenerator, BrokerServer, 3.9 branch).
WAITING_FOR_BROKERS = "to WAIT_FOR_BROKERS state"
METADATA_MIGRATED = "Completed migration of metadata from ZooKeeper to KRaft"
DUAL_WRITE = "to DUAL_WRITE state"
FINALIZED = "Completing the ZK migration since this controller was configured with"
ISR_STUCK = 60.0  # s after a broker's restart in ZooKeeper mode before the harness moves a controller stuck on it
# controller.log lines (INFO) that say why a replica stays out of an ISR: shown with a stuck wait's warnings
DECISIONS = ("Rejecting AlterPartition", "Shutting down broker", "bounced brokers", "Newly added brokers")

# Broker stages: plain ZooKeeper mode, ZooKeeper mode with the migration settings, KRaft broker.
ZK, MIGRATING, KRAFT = "zookeeper", "zookeeper+migration", "kraft"


@dataclass
class ControllerQuorum(KraftCluster):
    """The KRaft controllers provisioned for the migration: controller-only nodes (KraftCluster's folder layout,
    formatting and process handling), with the migration flag and zookeeper.connect while `migrating`."""

    migrating: bool = True

    def settings(self, b: BrokerInfo) -> dict[str, str]:
        node = b if isinstance(b, NodeInfo) else NodeInfo(b.id, b.port, None)
        props = {
            "process.roles": "controller",
            "node.id": str(node.id),
            "controller.quorum.voters": voters(self.brokers),
            "controller.listener.names": CONTROLLER_LISTENER,
            "listeners": f"{CONTROLLER_LISTENER}://{node.controller_endpoint}",
            "listener.security.protocol.map": PROTOCOL_MAP,
            # the listener the controller uses to send LeaderAndIsr / UpdateMetadata to the ZooKeeper-mode brokers
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.log_dirs(node.id)[0]),
            "num.io.threads": "2", "num.network.threads": "2", "background.threads": "2",
        }
        if self.migrating:
            props["zookeeper.metadata.migration.enable"] = "true"
            props["zookeeper.connect"] = self.zk_connect
        return props

    def log_dirs(self, broker_id: int) -> list[Path]:
        return [self.broker_dir(broker_id) / "metadata"]

    # A controller-only node answers no Admin API on a broker listener: nothing to ask it (stop() asks).
    def registered(self, session=None) -> set[int]:
        return set()

    def controller(self, session=None) -> int | None:
        return None

    def wait_ready(self, ids=None, *, timeout: float = 120.0) -> None:
        """Until every controller process runs and listens on its controller port (what it does next, the
        migration step waits on)."""
        deadline = time.monotonic() + timeout
        want = [self.broker(i) for i in (self.broker_ids if ids is None else ids)]
        while True:
            for b in want:
                if b.pid is None or not pid_alive(b.pid):
                    raise KafkaRunError(
                        f"KRaft controller {b.id} (pid {b.pid}) exited during startup.\n--- last lines of "
                        f"{self.server_log(b.id)} ---\n{log_tail(self.server_log(b.id), 40)}\n--- last lines of "
                        f"{self.logs_dir(b.id) / 'stdout.log'} ---\n{log_tail(self.logs_dir(b.id) / 'stdout.log', 10)}")
            if all(_port_open(b.controller_port) for b in want):
                return
            if time.monotonic() >= deadline:
                b = next(b for b in want if not _port_open(b.controller_port))
                raise KafkaRunError(f"KRaft controller {b.id} does not listen on {b.controller_endpoint} after "
                                    f"{timeout:g} s.\n--- last lines of {self.server_log(b.id)} ---\n"
                                    f"{log_tail(self.server_log(b.id), 40)}")
            time.sleep(0.25)

    def start(self, *, timeout: float = 120.0) -> "ControllerQuorum":
        self._write_files()
        down = [b for b in self.brokers if not self._is_our_broker(b)]
        return self._launch_and_wait(down, self._format, timeout)


def voters(nodes) -> str:
    return ",".join(f"{n.id}@{n.controller_endpoint}" for n in nodes)


@dataclass
class MigratingCluster(KafkaCluster):
    """The brokers of a KafkaCluster (the same BrokerInfo objects: pids stay shared with it), each configured as
    its stage says: ZooKeeper mode, ZooKeeper mode with the migration settings, or KRaft broker."""

    stages: dict[int, str] = field(default_factory=dict)
    quorum_voters: str = ""

    def settings(self, b: BrokerInfo) -> dict[str, str]:
        props = super().settings(b)
        stage = self.stages.get(b.id, ZK)
        if stage == ZK:
            return props
        kraft = {"controller.quorum.voters": self.quorum_voters, "controller.listener.names": CONTROLLER_LISTENER,
                 "listener.security.protocol.map": PROTOCOL_MAP}
        if stage == MIGRATING:
            return {**props, **kraft, "zookeeper.metadata.migration.enable": "true",
                    "inter.broker.protocol.version": IBP}
        # KRaft broker: node.id replaces broker.id, no ZooKeeper settings, no IBP (metadata.version rules)
        props = {k: v for k, v in props.items()
                 if k not in _ZK_ONLY and k != "broker.id" and not k.startswith("zookeeper.")}
        return {"process.roles": "broker", "node.id": str(b.id), **props, **kraft}


class Migration:
    """The migration of `cluster` (a running ZooKeeper-mode KafkaCluster), one method per documented step.

    `timings` records how long each step took (seconds, by step name), in the order run."""

    def __init__(self, cluster: KafkaCluster, *, controllers: int = 1, first_controller_id: int = FIRST_CONTROLLER_ID,
                 step_timeout: float = 180.0):
        if controllers < 1:
            raise KafkaRunError(f"a KRaft quorum needs at least one controller, not {controllers}")
        clash = sorted(set(cluster.broker_ids) & set(range(first_controller_id, first_controller_id + controllers)))
        if clash:
            raise KafkaRunError(f"controller id(s) {clash} are broker ids: KRaft node ids share one namespace",
                                hint="pick another first_controller_id")
        self.cluster = cluster
        self.step_timeout = step_timeout
        nodes = []
        for i in range(controllers):
            port = free_port()
            nodes.append(NodeInfo(first_controller_id + i, port, None, controller_port=port))
        self.controllers = ControllerQuorum(cluster.dir / "controllers", cluster.zk_connect, nodes, cluster.version,
                                            cluster.heap, {}, cluster.detach, cluster_id="")
        self.brokers = MigratingCluster(cluster.dir, cluster.zk_connect, cluster.brokers, cluster.version,
                                        cluster.heap, cluster.overrides, cluster.detach,
                                        stages={b: ZK for b in cluster.broker_ids}, quorum_voters=voters(nodes))
        self.timings: dict[str, float] = {}
        self.interventions: list[str] = []  # what the harness did beyond the documented steps, and why

    # --- the forward steps ------------------------------------------------------------------------------

    def start_controllers(self, *, timeout: float | None = None) -> None:
        """Provision and start the KRaft controllers, formatted with the ZooKeeper cluster's id.

        Waits until the active controller's migration driver logs its transition to WAIT_FOR_BROKERS (the quorum
        is ready and waits for every ZooKeeper broker to register in migration mode) and ZooKeeper holds
        /migration (the driver creates it, empty, when it recovers the migration state)."""
        with self._step("start controllers", timeout) as deadline:
            with self.cluster._zk() as session:
                self.controllers.cluster_id = self.cluster._cluster_id(session) or ""
            if not self.controllers.cluster_id:
                raise KafkaRunError(f"{self.cluster.zk_connect} has no /cluster/id: start the ZooKeeper-mode "
                                    "cluster first (its id is the one the controllers are formatted with)")
            marks = self._marks()
            self.controllers.start(timeout=_left(deadline))
            self._wait(deadline, "the KRaft controller to wait for the ZooKeeper brokers",
                       lambda: self._controller_logged(WAITING_FOR_BROKERS, marks) and self._znode(zf.MIGRATION),
                       self._controller_log)

    def roll_brokers_for_migration(self, *, timeout: float | None = None) -> None:
        """Restart the brokers one at a time in ZooKeeper mode with the migration settings.

        After each restart, waits until the broker is registered under /brokers/ids, listens, a controller is
        in /controller, and every partition has its full ISR again (Metadata through the brokers) before the
        next one goes down."""
        with self._step("roll brokers for migration", timeout) as deadline:
            for bid in self.cluster.broker_ids:
                self._roll_zk_broker(bid, MIGRATING, deadline)

    def wait_migrated(self, timeout: float | None = None) -> None:
        """Until the KRaft controller copied ZooKeeper's metadata and went into dual-write: /migration has
        kraft_metadata_offset > 0, /controller names the KRaft controller (kraftControllerEpoch > 0), and the
        controller logged "Completed migration of metadata from ZooKeeper to KRaft" and its transition to
        DUAL_WRITE."""
        with self._step("wait migrated", timeout) as deadline:
            self._wait(deadline, "the metadata migration and dual-write", self._migrated, self._controller_log)

    def roll_brokers_to_kraft(self, *, timeout: float | None = None) -> None:
        """Restart the brokers one at a time as KRaft brokers (process.roles=broker, node.id = broker id).

        After each restart, waits until the broker lists itself unfenced in DescribeCluster (registered with the
        KRaft controller and caught up with the metadata log), has left /brokers/ids, and every partition has its
        full ISR again."""
        with self._step("roll brokers to KRaft", timeout) as deadline:
            for bid in self.cluster.broker_ids:
                b = self.cluster.broker(bid)
                self.cluster.stop_broker(bid)
                self.brokers.stages[bid] = KRAFT
                self.brokers._write_files()
                self.brokers._launch(b)
                self._wait(deadline, f"broker {bid} to run as a KRaft broker",
                           lambda: self._alive(bid) and self._unfenced(bid) and bid not in self.cluster.registered(),
                           lambda: self.cluster.server_log(bid))
                self._wait_in_sync(deadline)

    def finalize(self, *, timeout: float | None = None) -> None:
        """Restart the controllers one at a time without the migration flag and without zookeeper.connect.

        Waits until a restarted controller logged "Completing the ZK migration since this controller was
        configured with 'zookeeper.metadata.migration.enable' set to 'false'" (it wrote POST_MIGRATION into the
        metadata log) and every broker is listed unfenced again."""
        with self._step("finalize", timeout) as deadline:
            marks = self._marks()
            self.controllers.migrating = False
            for c in self.controllers.brokers:
                self.controllers.stop_broker(c.id)
                self.controllers._write_files()
                self.controllers._launch(c)
                self.controllers.wait_ready([c.id], timeout=_left(deadline))
            self._wait(deadline, "the controllers to finalize the migration",
                       lambda: self._controller_logged(FINALIZED, marks)
                       and all(self._unfenced(b) for b in self.cluster.broker_ids), self._controller_log)

    # --- the way back from dual-write ------------------------------------------------------------------

    def rollback_from_dual_write(self, *, timeout: float | None = None) -> dict:
        """Kafka's revert from "Migrating brokers to KRaft" (every broker KRaft, not finalized), step by step.
        Returns what /controller and /migration held when they were removed."""
        self.rollback_brokers_to_zookeeper(timeout=timeout)
        self.deprovision_controllers(timeout=timeout)
        removed = {"controller": self.delete_controller_znode(), "migration": self.clear_migration_znode()}
        self.roll_brokers_to_zookeeper(timeout=timeout)
        return removed

    def rollback_brokers_to_zookeeper(self, *, timeout: float | None = None) -> None:
        """Revert step 1: on each broker remove process.roles, put node.id back as broker.id and restore
        zookeeper.connect, keeping the migration flag and the controller settings; a rolling restart.

        Waits, per broker, until it is registered under /brokers/ids again and every partition has its full ISR."""
        with self._step("rollback: brokers to ZooKeeper mode (migration on)", timeout) as deadline:
            for bid in self.cluster.broker_ids:
                self._roll_zk_broker(bid, MIGRATING, deadline)

    def deprovision_controllers(self, *, timeout: float | None = None) -> None:
        """Revert step 2: stop the KRaft controllers and delete their metadata log (a later attempt starts anew).
        Waits until their processes are gone."""
        with self._step("rollback: deprovision controllers", timeout):
            for c in self.controllers.brokers:
                self.controllers.stop_broker(c.id)
                if self.controllers._is_our_broker(c):
                    raise KafkaRunError(f"KRaft controller {c.id} (pid {c.pid}) is still running")
                for d in self.controllers.log_dirs(c.id):
                    shutil.rmtree(d, ignore_errors=True)

    def delete_controller_znode(self) -> bytes | None:
        """Revert step 3 (`rmr /controller`), right after the controllers stopped: the KRaft controller wrote it
        persistent, so no broker can become the ZooKeeper controller until it is gone. Returns its data."""
        with self._step("rollback: delete /controller", None), self.cluster._zk() as session:
            node = session.get(zf.CONTROLLER)
            if node.exists:
                session.delete(zf.CONTROLLER)
            return node.data if node.exists else None

    def clear_migration_znode(self) -> bytes | None:
        """Revert step 3b (`get /migration`, then `rmr /migration`): clears the migration state so that a later
        attempt copies the metadata again. Returns what it held (useful for debugging, as the docs say)."""
        with self._step("rollback: delete /migration", None), self.cluster._zk() as session:
            node = session.get(zf.MIGRATION)
            if node.exists:
                session.delete(zf.MIGRATION)
            return node.data if node.exists else None

    def roll_brokers_to_zookeeper(self, *, timeout: float | None = None) -> None:
        """Revert step 4: on each broker remove zookeeper.metadata.migration.enable, controller.listener.names and
        the quorum settings; a second rolling restart.

        Waits, per broker, until it is registered, listens, /controller names a broker of this cluster (a
        ZooKeeper-mode controller, not a KRaft one) and every partition has its full ISR."""
        with self._step("rollback: brokers to plain ZooKeeper mode", timeout) as deadline:
            for bid in self.cluster.broker_ids:
                self._roll_zk_broker(bid, ZK, deadline)
            self._wait(deadline, "a ZooKeeper-mode controller",
                       lambda: self.cluster.controller() in self.cluster.broker_ids,
                       lambda: self.cluster.logs_dir(self.cluster.broker_ids[0]) / "controller.log")

    # --- stopping -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the brokers and the controllers (by PID)."""
        try:
            for b in self.cluster.brokers:
                self.cluster.stop_broker(b.id, timeout=15)
        finally:
            self.controllers.stop(timeout=15)

    # --- helpers ----------------------------------------------------------------------------------------

    class _Step:
        def __init__(self, migration: "Migration", name: str, timeout: float | None):
            self.m, self.name = migration, name
            self.timeout = migration.step_timeout if timeout is None else timeout

        def __enter__(self) -> float:
            self.started = time.monotonic()
            return self.started + self.timeout

        def __exit__(self, *exc) -> None:
            self.m.timings[self.name] = time.monotonic() - self.started

    def _step(self, name: str, timeout: float | None) -> "Migration._Step":
        return Migration._Step(self, name, timeout)

    def _roll_zk_broker(self, bid: int, stage: str, deadline: float) -> None:
        self.cluster.stop_broker(bid)
        self.brokers.stages[bid] = stage
        self.brokers.start_broker(bid, timeout=_left(deadline))  # registered, listening, a controller exists
        short: list[str] = []
        try:
            self._wait_in_sync(min(deadline, time.monotonic() + ISR_STUCK), short)
        except KafkaRunError:
            if time.monotonic() >= deadline or not self._zk_mode_controller():
                raise
            # In two suite runs of the revert, the ZooKeeper-mode controller elected while broker 1 shut down never let
            # it back into the ISR of the partitions it led itself (the other leader's partitions took it back). An
            # operator's remedy for under-replicated partitions stuck like that is a controller move; done once, said
            # on stderr and in `interventions`, and the wait goes on to the step's deadline.
            self.interventions.append(f"broker {bid} not back in every ISR {ISR_STUCK:g} s after its restart: moved "
                                      f"the ZooKeeper-mode controller ({'; '.join(short[:6])})")
            print(f"\nmigration harness: {self.interventions[-1]}", file=sys.stderr)
            with self.cluster._zk() as session:
                session.delete(zf.CONTROLLER)
            self._wait_in_sync(deadline)

    def _zk_mode_controller(self) -> bool:
        """/controller names a ZooKeeper-mode broker of this cluster (not a KRaft controller, not nobody)."""
        with self.cluster._zk() as session:
            node = session.get(zf.CONTROLLER)
        if not node.exists:
            return False
        controller = zf.decode_controller(node.data)
        return not controller.is_kraft and controller.broker_id in self.cluster.broker_ids

    def _wait(self, deadline: float, what: str, done: Callable[[], bool], log: Callable[[], Path],
              detail: Callable[[], str] | None = None) -> None:
        while True:
            try:
                if done():
                    return
            except KeelError:
                pass  # a broker or ZooKeeper not answering yet: ask again
            if time.monotonic() >= deadline:
                path = log()
                raise KafkaRunError(f"timed out waiting for {what}.\n{detail() if detail else ''}"
                                    f"--- last lines of {path} ---\n{log_tail(path, 40)}")
            time.sleep(0.5)

    def _alive(self, bid: int) -> bool:
        b = self.cluster.broker(bid)
        if not self.cluster._is_our_broker(b):
            path = self.cluster.server_log(bid)
            raise KafkaRunError(f"broker {bid} exited.\n--- last lines of {path} ---\n{log_tail(path, 40)}")
        return _port_open(b.port)

    def _admin(self, endpoints: list[str]):
        from core.kafka.admin import KafkaAdmin

        return KafkaAdmin(",".join(endpoints), timeout=5)

    def _unfenced(self, bid: int) -> bool:
        """The broker itself lists `bid` in DescribeCluster (KRaft lists unfenced brokers only)."""
        with self._admin([self.cluster.broker(bid).endpoint]) as admin:
            return any(int(x["broker_id"]) == bid and not x.get("is_fenced")
                       for x in admin.describe_cluster().get("brokers") or ())

    def _wait_in_sync(self, deadline: float, lagging: list[str] | None = None) -> None:
        """Until every partition has a leader and ISR == replicas, as the running brokers describe it. `lagging` is
        left holding the partitions short of their ISR at the last read."""
        lagging = [] if lagging is None else lagging

        def in_sync() -> bool:
            up = [b.endpoint for b in self.cluster.brokers if self.cluster._is_our_broker(b) and _port_open(b.port)]
            if not up:
                return False
            with self._admin(up) as admin:
                topics = admin.topic_partitions(admin.topic_names())
            lagging[:] = [f"{t['name']}-{p['partition_index']}: leader {p['leader_id']} isr {sorted(p['isr_nodes'])} "
                          f"replicas {sorted(p['replica_nodes'])}" for t in topics for p in t["partitions"]
                          if p["leader_id"] < 0 or set(p["isr_nodes"]) != set(p["replica_nodes"])]
            return not lagging

        self._wait(deadline, "every partition to have its full ISR", in_sync,
                   lambda: self.cluster.server_log(self.cluster.broker_ids[0]),
                   lambda: self._diagnosis(lagging))

    def _diagnosis(self, lagging: list[str]) -> str:
        """What a stuck wait leaves to go on (a revert stuck once in ~10 suite runs, its logs gone with the run): the
        partitions still short of their ISR at the last read, and every broker's recent warnings and errors."""
        out = ["--- partitions short of their ISR at the last read ---", *(lagging or ["(none read)"])]
        for bid in self.cluster.broker_ids:
            for path in (self.cluster.server_log(bid), self.cluster.logs_dir(bid) / "controller.log"):
                try:
                    lines = path.read_text("utf-8", "replace").splitlines()
                except OSError:
                    continue
                worst = [line for line in lines if " WARN " in line or " ERROR " in line
                         or any(k in line for k in DECISIONS)][-15:]
                out += [f"--- broker {bid}: last warnings and errors of {path.name} ---", *(worst or ["(none)"])]
        return "\n".join(out) + "\n"

    def _znode(self, path: str) -> bool:
        with self.cluster._zk() as session:
            return session.get(path).exists

    def _migrated(self) -> bool:
        with self.cluster._zk() as session:
            node = session.get(zf.MIGRATION)
            ctrl = session.get(zf.CONTROLLER)
            if not node.exists or not ctrl.exists:
                return False
            migration = zf.decode_migration(node.data)
            controller = zf.decode_controller(ctrl.data)
        return (migration.initial_migration_complete and controller.is_kraft
                and self._controller_logged(METADATA_MIGRATED) and self._controller_logged(DUAL_WRITE))

    def _marks(self) -> dict[int, int]:
        """Where each controller's server.log ends now: a step looks only at what is logged after."""
        marks = {}
        for c in self.controllers.brokers:
            path = self.controllers.server_log(c.id)
            marks[c.id] = path.stat().st_size if path.exists() else 0
        return marks

    def _controller_logged(self, text: str, marks: dict[int, int] | None = None) -> bool:
        for c in self.controllers.brokers:
            path = self.controllers.server_log(c.id)
            try:
                with open(path, "rb") as f:
                    f.seek((marks or {}).get(c.id, 0))
                    if text.encode() in f.read():
                        return True
            except OSError:
                continue
        return False

    def _controller_log(self) -> Path:
        return self.controllers.server_log(self.controllers.brokers[0].id)

    @property
    def controller_endpoints(self) -> list[str]:
        return [f"{HOST}:{c.controller_port}" for c in self.controllers.brokers]


def _left(deadline: float) -> float:
    return max(1.0, deadline - time.monotonic())


__all__ = ["Migration", "ControllerQuorum", "MigratingCluster", "FIRST_CONTROLLER_ID", "ZK", "MIGRATING", "KRAFT"]
