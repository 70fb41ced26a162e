"""ZooKeeper -> KRaft migration (KIP-866, Kafka 3.4 - 3.9), as ZooKeeper shows it.

Kafka's migrating KRaft controller (KRaftMigrationDriver) writes into ZooKeeper:

* ``/migration`` (persistent, `kafka.zk.MigrationZNode`): ``{"version":0,"kraft_metadata_offset":O,
  "kraft_controller_id":C,"kraft_metadata_epoch":E,"kraft_controller_epoch":K}``. It is created (with -1 values,
  `ZkMigrationLeadershipState.EMPTY`) when a KRaft controller first becomes active with migration enabled, and
  updated as it goes. The initial copy of the ZooKeeper metadata into the KRaft log is complete once
  ``kraft_metadata_offset > 0`` (`ZkMigrationLeadershipState.initialZkMigrationComplete`); from then on the KRaft
  controller is the source of truth and writes every change back into ZooKeeper (dual-write) for the brokers
  still in ZooKeeper mode.
* ``/controller`` (`ControllerZNode`, version 2): ``{"version":2,"brokerid":C,"timestamp":"...",
  "kraftControllerEpoch":K}``, where C is the KRaft controller's node id (not a broker) and K > 0: ZooKeeper-mode
  brokers then take their orders from it, and writes into ZooKeeper's /admin paths are not acted on.

Brokers restarted as KRaft brokers leave ``/brokers/ids`` while the KRaft controller keeps them as leaders and in
the ISRs it writes back: in ZooKeeper they look dead, yet their partitions are served. Keel labels them as such
instead of reporting an outage.

Pure: decoded data in (core.zkformat decodes the znode, core.zk.migration_state reads it), plain data out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.migration_phases import MigrationPhase, kraft_brokers, phase_of
from core.model import ClusterSnapshot, Controller


@dataclass(frozen=True)
class ZkMigration:
    """The decoded /migration znode."""

    version: int
    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int

    @property
    def initial_migration_complete(self) -> bool:
        return self.kraft_metadata_offset > 0  # ZkMigrationLeadershipState.initialZkMigrationComplete


@dataclass(frozen=True)
class MigrationStatus:
    phase: str  # the phase's name, in the docs' words (info.name)
    detail: str  # what Kafka is doing (info.kafka_does), for a banner
    kraft_controller: int | None  # the KRaft controller's node id, when known
    kraft_controller_epoch: int | None
    migration: ZkMigration | None
    kraft_controller_active: bool  # /controller names a KRaft controller
    kraft_brokers: tuple[int, ...]  # in assignments as leader or ISR member, but not under /brokers/ids
    kraft_led: int  # partitions led by one of them
    write_block_reason: str
    info: MigrationPhase  # the phase with what Kafka does, the next step and the way back

    @property
    def phase_key(self) -> str:
        return self.info.key

    def to_dict(self) -> dict:
        m = self.migration
        return {"phase": self.phase, "detail": self.detail, "kraft_controller": self.kraft_controller,
                "kraft_controller_epoch": self.kraft_controller_epoch,
                "kraft_controller_active": self.kraft_controller_active,
                "migration_znode": None if m is None else {
                    "version": m.version, "kraft_controller_id": m.kraft_controller_id,
                    "kraft_controller_epoch": m.kraft_controller_epoch,
                    "kraft_metadata_offset": m.kraft_metadata_offset, "kraft_metadata_epoch": m.kraft_metadata_epoch,
                    "initial_migration_complete": m.initial_migration_complete},
                "kraft_brokers": list(self.kraft_brokers), "kraft_led_partitions": self.kraft_led,
                "writes": self.write_block_reason, **self.info.to_dict()}


def write_block_reason(controller: Controller | None, migration: ZkMigration | None) -> str | None:
    """Why no write may go through ZooKeeper now, from /controller and /migration alone (core.policy.gate asks this
    right before every write), or None for a plain ZooKeeper-mode cluster."""
    if controller is not None and controller.is_kraft:
        who = f"KRaft controller {controller.broker_id}"
        # the controller's own state (KRaftMigrationDriver), not the docs' phase: the page names that
        state = ("metadata copied, the controller writes every change back to ZooKeeper"
                 if migration is not None and migration.initial_migration_complete else
                 "metadata being copied" if migration is not None else "no /migration")
        return (f"Writes through ZooKeeper are disabled: {who} owns this cluster (ZooKeeper -> KRaft migration: "
                f"{state}); ZooKeeper writes would be ignored or undone. Use the Admin API or the KRaft tools.")
    if migration is not None:
        return ("Writes through ZooKeeper are disabled while a ZooKeeper -> KRaft migration is under way (/migration "
                "exists): finish or roll back the migration first.")
    return None


def migration_status(snapshot: ClusterSnapshot, migration: ZkMigration | None,
                     migration_flags: Mapping[int, bool] | None = None) -> MigrationStatus | None:
    """None for a plain ZooKeeper-mode cluster (no /migration, no KRaft controller). The phase is
    core.migration_phases.phase_of's (`migration_flags`: each broker's zookeeper.metadata.migration.enable, when the
    Admin API was asked)."""
    ctrl = snapshot.controller
    active = ctrl is not None and ctrl.is_kraft
    if migration is None and not active:
        return None
    kraft_id = ctrl.broker_id if active else (migration.kraft_controller_id if migration
                                              and migration.kraft_controller_id >= 0 else None)
    kraft_epoch = ctrl.kraft_controller_epoch if active else (migration.kraft_controller_epoch if migration
                                                              and migration.kraft_controller_epoch >= 0 else None)
    info = phase_of(snapshot, migration, migration_flags)
    left = info.kraft_brokers
    led = sum(1 for p in snapshot.partitions() if p.leader in set(left)) if left else 0
    reason = write_block_reason(ctrl, migration) or ""
    return MigrationStatus(info.name, info.kafka_does, kraft_id, kraft_epoch, migration, active, left, led, reason,
                           info)


__all__ = ["ZkMigration", "MigrationStatus", "migration_status", "kraft_brokers", "write_block_reason"]
