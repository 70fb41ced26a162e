"""Reading the ZooKeeper -> KRaft migration state: the /migration znode (core.zkformat.decode_migration) next to
a snapshot's /controller, into core.migration's MigrationStatus. A read, never a write."""

from __future__ import annotations

from core import zkformat as zf
from core.migration import MigrationStatus, ZkMigration, migration_status
from core.model import ClusterSnapshot
from core.zk.session import ZkSession


def read_migration(session: ZkSession) -> ZkMigration | None:
    """The decoded /migration znode, or None when there is none. A corrupt one raises CorruptZnodeError."""
    node = session.get(zf.MIGRATION)
    if not node.exists:
        return None
    return zf.decode_migration(node.data)


def read_migration_status(session: ZkSession, snapshot: ClusterSnapshot) -> MigrationStatus | None:
    return migration_status(snapshot, read_migration(session))


__all__ = ["read_migration", "read_migration_status"]
