"""Reading the ZooKeeper -> KRaft migration state: the /migration znode (core.zkformat.decode_migration) next to
a snapshot's /controller, into core.migration's MigrationStatus; and `ZkClusterProbe`, what core.policy.gate reads right
before a write (/controller, /migration, /cluster/id, synced). Reads, never a write."""

from __future__ import annotations

from core import zkformat as zf
from core.errors import CorruptZnodeError, MigrationInProgressError
from core.migration import MigrationStatus, ZkMigration, migration_status, write_block_reason
from core.migration_readiness import ReadinessFacts
from core.model import ClusterSnapshot, Controller
from core.zk.session import ZkSession


def read_migration(session: ZkSession) -> ZkMigration | None:
    """The decoded /migration znode, or None when there is none. A corrupt one raises CorruptZnodeError."""
    node = session.get(zf.MIGRATION)
    if not node.exists:
        return None
    return zf.decode_migration(node.data)


def read_migration_status(session: ZkSession, snapshot: ClusterSnapshot) -> MigrationStatus | None:
    return migration_status(snapshot, read_migration(session))


def read_controller(session: ZkSession) -> Controller | None:
    node = session.get(zf.CONTROLLER)
    return zf.decode_controller(node.data) if node.exists else None


_READ = object()


def refuse_during_migration(session: ZkSession, controller: Controller | None | object = _READ) -> None:
    """Raise MigrationInProgressError while a ZooKeeper -> KRaft migration is under way (/migration exists, or
    /controller names a KRaft controller). `controller`: /controller as the caller just read it (None: no
    controller); read here when not given.

    A corrupt /migration or /controller refuses too: either may hide a migration (the dashboard's banner says so)."""
    try:
        migration = read_migration(session)
        if controller is _READ:
            controller = read_controller(session)
    except CorruptZnodeError as e:
        e.message += "; it may hide a ZooKeeper -> KRaft migration, so nothing is written until it is repaired"
        raise
    reason = write_block_reason(controller, migration)  # type: ignore[arg-type]
    if reason is not None:
        raise MigrationInProgressError(reason)


def readiness_facts(session: ZkSession, snapshot: ClusterSnapshot, *, controller_ids: tuple[int, ...] | None = None,
                    broker=None, admin_error: str | None = None) -> ReadinessFacts:
    """core.migration_readiness's facts: ZooKeeper's (/brokers/ids, the ids assignments name, /migration read as
    Kafka would parse it, reassignments and deletions in flight) with the brokers' (`broker`:
    core.kafka.migration_facts.BrokerFacts, or None with `admin_error` saying why)."""
    try:
        node = "absent" if read_migration(session) is None else "ok"
    except CorruptZnodeError as e:
        node = e.message
    # an entry of a deleted topic stays in /admin/reassign_partitions (Kafka 3.9's controller leaves it): named stale
    moving = {f"{r.topic}-{r.partition}" + ("" if snapshot.topic(r.topic) else " (topic deleted: a stale entry)")
              for r in snapshot.in_progress.reassignment}
    moving |= {f"{t.name}-{p.partition}" for t in snapshot.topics for p in t.partitions
               if p.adding_replicas or p.removing_replicas}
    assigned = {b for p in snapshot.partitions() for b in p.replicas}
    return ReadinessFacts(
        broker_ids=tuple(sorted(snapshot.alive_broker_ids)), assigned_ids=tuple(sorted(assigned)),
        migration_node=node, reassigning=tuple(sorted(moving)), deleting=tuple(sorted(snapshot.in_progress.deletion)),
        controller_ids=controller_ids,
        versions=None if broker is None else broker.versions, configs=None if broker is None else broker.configs,
        offline_dirs=None if broker is None else broker.offline_dirs, quorum=None if broker is None else broker.quorum,
        admin_error=admin_error or (None if broker is None or not broker.errors else "; ".join(broker.errors)))


class ZkClusterProbe:
    """core.policy.gate.ClusterProbe over a ZooKeeper session: what the cluster says right now, never a cached page."""

    def __init__(self, session: ZkSession):
        self.session = session

    def cluster_id(self) -> str | None:
        node = self.session.get(zf.CLUSTER_ID)
        if not node.exists:
            return None
        try:
            return zf.decode_cluster_id(node.data)
        except CorruptZnodeError:  # names nothing: the cluster is identified by its address alone
            return None

    def refuse_writes(self) -> None:
        self.session.sync()  # see every change committed before now, whichever server this session is on
        refuse_during_migration(self.session)


__all__ = ["read_migration", "read_migration_status", "read_controller", "refuse_during_migration",
           "readiness_facts", "ZkClusterProbe"]
