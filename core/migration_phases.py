"""Where a ZooKeeper -> KRaft migration stands: one phase, named as Kafka 3.9's docs name them (docs/ops.html,
"ZooKeeper to KRaft Migration"), from what Keel can read, with what Kafka is doing, the operator's next step and
the docs' "Reverting to ZooKeeper mode During the Migration" directions that apply now.

What ZooKeeper shows in each state of Kafka 3.9's KRaftMigrationDriver (metadata/.../migration):

* a KRaft controller started with ``zookeeper.metadata.migration.enable`` creates ``/migration`` with -1 values
  at once (RecoverMigrationStateFromZKEvent -> getOrCreateMigrationRecoveryState), active or not; /controller is
  still a ZooKeeper-mode broker while it waits for the quorum and then for every broker in /brokers/ids to
  register with it as a migrating ZooKeeper broker (WAIT_FOR_BROKERS). That registration is not in ZooKeeper:
  /brokers/ids/<id> carries no migration flag (BrokerIdZNode v5 has `features`, nothing else new). Which brokers
  have been restarted with the migration settings is only seen through the Admin API (DescribeConfigs'
  ``zookeeper.metadata.migration.enable`` of each broker);
* once all have registered, the active KRaft controller claims ZooKeeper (BECOME_CONTROLLER): /controller becomes
  a PERSISTENT v2 node with ``kraftControllerEpoch`` and /migration gets its id and epoch, offset still -1, while
  it copies the metadata (ZK_MIGRATION; the docs' "initial metadata load");
* the copy done, /migration's ``kraft_metadata_offset`` is > 0 and the controller writes every change back
  (DUAL_WRITE): the docs' "hybrid phase" while some brokers are in ZooKeeper mode, "dual-write phase" once every
  broker runs in KRaft mode (KRaft brokers leave /brokers/ids; the controller keeps them as leaders and ISR
  members, core.migration.kraft_brokers);
* finalizing restarts the controllers without the flag: they stop writing ZooKeeper and leave /controller and
  /migration as they were. ZooKeeper alone therefore looks the same after finalization as in the dual-write
  phase: Keel says so instead of guessing (the controllers' ``ZkMigrationState`` metric, 3 = POST_MIGRATION, tells).

Pure: the snapshot, the decoded /migration and optional Admin API facts in, a MigrationPhase out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.model import NO_LEADER, ClusterSnapshot

# --- the docs' revert table (Kafka 3.9 docs/ops.html), one tuple of step texts per "final section completed" row --

REVERT_PREPARING: tuple[str, ...] = (
    "The preparation section does not involve leaving ZooKeeper mode: there is nothing to do.",)
REVERT_PROVISIONING: tuple[str, ...] = (
    "Deprovision the KRaft controller quorum.",
    "Then you are done.")
REVERT_MIGRATION_MODE: tuple[str, ...] = (
    "Deprovision the KRaft controller quorum.",
    "Using zookeeper-shell.sh, run rmr /controller so that one of the brokers can become the new old-style "
    "controller (do it quickly: the cluster has no controller until then).",
    "Run get /migration followed by rmr /migration to clear the migration state from ZooKeeper (this allows a "
    "new attempt later; keep what get /migration printed for debugging).",
    "On each broker, remove the zookeeper.metadata.migration.enable, controller.listener.names and "
    "controller.quorum.bootstrap.servers configurations, and replace node.id with broker.id.",
    "Then perform a rolling restart of all brokers.",
    "Then you are done.")
REVERT_MIGRATING_BROKERS: tuple[str, ...] = (
    "On each broker, remove the process.roles configuration, replace the node.id with broker.id and restore the "
    "zookeeper.connect configuration to its previous value (and any other ZooKeeper settings the brokers need, "
    "such as zookeeper.ssl.protocol). Keep zookeeper.metadata.migration.enable=true for this first roll.",
    "Then perform a rolling restart of all brokers.",
    "Deprovision the KRaft controller quorum.",
    "Using zookeeper-shell.sh, run rmr /controller so that one of the brokers can become the new old-style "
    "controller (do it quickly: the cluster has no controller until then).",
    "On each broker, remove the zookeeper.metadata.migration.enable, controller.listener.names and "
    "controller.quorum.bootstrap.servers configurations.",
    "Then perform a second rolling restart of all brokers.",
    "Then you are done.")

# the docs' section names (the revert table's first column)
PREPARING = "Preparing for migration"
PROVISIONING = "Provisioning the KRaft controller quorum"
MIGRATION_MODE = "Enter Migration Mode on the brokers"
MIGRATING_BROKERS = "Migrating brokers to KRaft"
FINALIZING = "Finalizing the migration"

# Keel's own note, not a docs step: the gate refuses ZooKeeper writes while /migration exists
KEEL_MIGRATION_NODE_NOTE = ("Keel refuses writes through ZooKeeper while /migration exists; Kafka's docs remove it "
                            "only when reverting from \"Enter Migration Mode on the brokers\" (get /migration, then "
                            "rmr /migration).")


@dataclass(frozen=True)
class MigrationPhase:
    key: str  # stable id: none, controllers-ready, brokers-entering, metadata-load, hybrid, brokers-to-kraft,
    #           dual-write, finalized, reverting, kraft-controller-only
    name: str  # the docs' words
    kafka_does: str
    next_step: str
    rollback_possible: bool
    rollback_from: str | None  # the revert table's row ("Final Migration Section Completed") that applies now
    rollback_steps: tuple[str, ...]
    notes: tuple[str, ...] = ()  # what Keel cannot tell from here, and caveats
    brokers_with_flag: tuple[int, ...] = ()  # registered brokers answering zookeeper.metadata.migration.enable=true
    brokers_without_flag: tuple[int, ...] = ()  # registered brokers answering false
    zk_brokers: tuple[int, ...] = ()  # registered under /brokers/ids (ZooKeeper mode)
    kraft_brokers: tuple[int, ...] = ()  # left /brokers/ids for KRaft (still leaders / in ISRs)

    @property
    def begun(self) -> bool:
        """The migration has begun (ZooKeeper writes must be refused): every phase but "none"."""
        return self.key != "none"

    def to_dict(self) -> dict:
        return {"key": self.key, "name": self.name, "kafka_does": self.kafka_does, "next_step": self.next_step,
                "rollback": {"possible": self.rollback_possible, "from_section": self.rollback_from,
                             "steps": list(self.rollback_steps)},
                "notes": list(self.notes), "brokers_with_migration_flag": list(self.brokers_with_flag),
                "brokers_without_migration_flag": list(self.brokers_without_flag),
                "zookeeper_brokers": list(self.zk_brokers), "kraft_brokers": list(self.kraft_brokers)}


def kraft_brokers(snapshot: ClusterSnapshot) -> tuple[int, ...]:
    """Brokers that lead or are in an ISR while not registered under /brokers/ids: during a migration, brokers
    that left ZooKeeper for KRaft (the KRaft controller writes them back as leaders and ISR members)."""
    alive = snapshot.alive_broker_ids
    seen: set[int] = set()
    for p in snapshot.partitions():
        if p.leader != NO_LEADER and p.leader not in alive:
            seen.add(p.leader)
        seen.update(b for b in p.isr if b not in alive)
    return tuple(sorted(seen))


def _ids(ids) -> str:
    return ", ".join(map(str, ids))


def phase_of(snapshot: ClusterSnapshot, migration, migration_flags: Mapping[int, bool] | None = None
             ) -> MigrationPhase:
    """The phase of a cluster read through ZooKeeper (`migration`: core.migration.ZkMigration or None), or of a
    cluster read through its brokers alone (snapshot.is_kraft). `migration_flags`: broker id ->
    zookeeper.metadata.migration.enable as that broker answers DescribeConfigs (None: the Admin API was not asked)."""
    if snapshot.is_kraft:
        return MigrationPhase(
            "finalized", "KRaft mode (migration finalized, or KRaft from the start)",
            "The brokers answer DescribeQuorum: the cluster runs on its KRaft controller quorum and nothing is "
            "written to ZooKeeper.",
            "Nothing: the migration is over. ZooKeeper can be deprovisioned if nothing else uses it.",
            False, FINALIZING, (), ("If you have finalized the ZK migration, then you cannot revert.",))
    ctrl = snapshot.controller
    kraft_ctrl = ctrl is not None and ctrl.is_kraft
    zk = tuple(sorted(snapshot.alive_broker_ids))
    left = kraft_brokers(snapshot) if kraft_ctrl else ()
    flags = dict(migration_flags or {})
    with_flag = tuple(b for b in zk if flags.get(b) is True)
    without = tuple(b for b in zk if flags.get(b) is False)
    facts = {"brokers_with_flag": with_flag, "brokers_without_flag": without, "zk_brokers": zk, "kraft_brokers": left}
    flag_note = () if migration_flags is not None else (
        "Which brokers run with zookeeper.metadata.migration.enable is not in ZooKeeper: give the brokers' "
        "bootstrap address to read it through the Admin API.",)

    if migration is None and not kraft_ctrl:
        if with_flag:  # brokers rolled with the migration settings before any controller created /migration
            return MigrationPhase(
                "brokers-entering", "Enter Migration Mode on the brokers (no KRaft controller yet)",
                f"Broker(s) {_ids(with_flag)} run with zookeeper.metadata.migration.enable=true, but no KRaft "
                "controller has created /migration: they wait for a controller quorum they cannot reach.",
                "Provision the KRaft controller quorum (zookeeper.metadata.migration.enable=true, zookeeper.connect, "
                "the cluster's id) before rolling the other brokers.",
                True, PREPARING, (f"Back out: restart broker(s) {_ids(with_flag)} without the migration settings.",)
                + REVERT_PREPARING, (), **facts)
        return MigrationPhase(
            "none", "No migration (initial phase: ZooKeeper-mode brokers, a ZooKeeper-mode controller)",
            "Kafka runs in ZooKeeper mode: a broker is the controller, there is no /migration node.",
            "Check readiness, then provision a KRaft controller quorum with zookeeper.metadata.migration.enable=true "
            "(docs: \"Provisioning the KRaft controller quorum\").",
            True, PREPARING, REVERT_PREPARING, (), **facts)

    if not kraft_ctrl:
        if migration.kraft_metadata_offset > 0 or migration.kraft_controller_id >= 0:
            # a KRaft controller had claimed ZooKeeper, and a broker is the controller again: the revert's
            # `rmr /controller` was done (or the KRaft controller lost /controller some other way)
            copied = migration.kraft_metadata_offset > 0
            return MigrationPhase(
                "reverting", "Reverting to ZooKeeper mode",
                f"A ZooKeeper-mode broker ({ctrl.broker_id if ctrl else 'none yet'}) is the controller again, but "
                f"/migration records KRaft controller {migration.kraft_controller_id}"
                + (f" and metadata copied up to KRaft offset {migration.kraft_metadata_offset}" if copied else "")
                + ": a revert is under way (or done with /migration left behind).",
                "Finish the revert: remove the migration settings from every broker and roll them"
                + (" a second time" if copied else "") + ".",
                True, MIGRATING_BROKERS if copied else MIGRATION_MODE,
                REVERT_MIGRATING_BROKERS if copied else REVERT_MIGRATION_MODE, (KEEL_MIGRATION_NODE_NOTE,), **facts)
        if with_flag and without:
            return MigrationPhase(
                "brokers-entering", "Enter Migration Mode on the brokers",
                f"The KRaft controllers wait for every broker to register with them as a migrating ZooKeeper broker: "
                f"broker(s) {_ids(with_flag)} run with the migration settings, {_ids(without)} not yet.",
                f"Restart broker(s) {_ids(without)} with zookeeper.metadata.migration.enable=true, "
                "controller.quorum.bootstrap.servers and controller.listener.names (the migration starts by itself "
                "after the last one).",
                True, PROVISIONING, (f"Back out: restart broker(s) {_ids(with_flag)} without zookeeper.metadata."
                                     "migration.enable, controller.listener.names and controller.quorum.bootstrap."
                                     "servers.",) + REVERT_PROVISIONING, (KEEL_MIGRATION_NODE_NOTE,), **facts)
        everyone = bool(zk) and len(with_flag) == len(zk)
        return MigrationPhase(
            "controllers-ready", "KRaft controller quorum provisioned, waiting for the brokers",
            "A KRaft controller with zookeeper.metadata.migration.enable created /migration (no KRaft controller "
            "recorded, no offset) and waits for every broker in /brokers/ids to register with it as a migrating "
            "ZooKeeper broker; a ZooKeeper-mode broker is still the controller."
            + (" Every broker runs with the migration settings: the KRaft controller should claim /controller "
               "shortly; if it does not, check that each broker reaches controller.quorum.bootstrap.servers."
               if everyone else ""),
            "Restart each broker with zookeeper.metadata.migration.enable=true, controller.quorum.bootstrap.servers "
            "and controller.listener.names (docs: \"Enter Migration Mode on the Brokers\").",
            True, PROVISIONING, REVERT_PROVISIONING, (KEEL_MIGRATION_NODE_NOTE,) + flag_note, **facts)

    who = f"KRaft controller {ctrl.broker_id} (epoch {ctrl.kraft_controller_epoch})"
    if migration is None:
        return MigrationPhase(
            "kraft-controller-only", "KRaft controller without /migration",
            f"{who} owns /controller but there is no /migration node: ZooKeeper is not kept in step and may be "
            "stale (was /migration removed by hand?).",
            "Read the active controller's log (org.apache.kafka.metadata.migration) before going on.",
            False, None, (), ("Kafka's docs have no revert direction for this state: Keel cannot tell which "
                              "section was completed.",), **facts)
    if not migration.initial_migration_complete:
        return MigrationPhase(
            "metadata-load", "Initial metadata load",
            f"{who} claimed ZooKeeper and is copying its metadata into the KRaft log (/migration has no KRaft "
            "offset yet); the controller logs \"Completed migration of metadata from Zookeeper to KRaft\" when done.",
            "Wait for the copy to finish; then restart the brokers as KRaft brokers (docs: \"Migrating brokers to "
            "KRaft\").",
            True, MIGRATION_MODE, REVERT_MIGRATION_MODE, (), **facts)
    copied = (f"{who} is the source of truth (metadata copied, KRaft offset {migration.kraft_metadata_offset}) and "
              "writes every change back into ZooKeeper")
    if not left:
        return MigrationPhase(
            "hybrid", "Hybrid phase (dual-write): metadata migrated, brokers still in ZooKeeper mode",
            copied + f" and sends the ZooKeeper-mode brokers ({_ids(zk) or 'none registered'}) their orders "
            "(UpdateMetadata, LeaderAndIsr).",
            "Restart each broker as a KRaft broker: process.roles=broker, node.id = its broker.id, no zookeeper.* "
            "settings (docs: \"Migrating brokers to KRaft\").",
            True, MIGRATION_MODE, REVERT_MIGRATION_MODE, (), **facts)
    if zk:
        return MigrationPhase(
            "brokers-to-kraft", "Hybrid phase: brokers being rolled to KRaft",
            copied + f". Broker(s) {_ids(left)} run in KRaft mode (gone from /brokers/ids, still leaders and ISR "
            f"members); {_ids(zk)} are still in ZooKeeper mode.",
            f"Restart broker(s) {_ids(zk)} as KRaft brokers (same id as node.id, process.roles=broker).",
            True, MIGRATING_BROKERS, REVERT_MIGRATING_BROKERS,
            ("The docs' row assumes every broker was rolled to KRaft: its first roll is needed only on the brokers "
             f"already in KRaft mode ({_ids(left)}).",), **facts)
    return MigrationPhase(
        "dual-write", "Dual-write phase: every broker in KRaft mode",
        copied + ". Every broker runs in KRaft mode; ZooKeeper is kept in step only to allow a revert.",
        "Finalize: remove zookeeper.metadata.migration.enable (and zookeeper.connect) from each KRaft controller and "
        "restart them one at a time. After that there is no way back.",
        True, MIGRATING_BROKERS, REVERT_MIGRATING_BROKERS,
        ("ZooKeeper looks the same after finalization (the controllers leave /controller and /migration as they "
         "were): Keel cannot tell the two apart from here. The controllers' ZkMigrationState metric tells "
         "(kafka.controller:type=KafkaController,name=ZkMigrationState: 1 = MIGRATION, 3 = POST_MIGRATION, "
         "finalized: no revert).",), **facts)


__all__ = ["MigrationPhase", "phase_of", "kraft_brokers", "REVERT_PREPARING", "REVERT_PROVISIONING", "REVERT_MIGRATION_MODE",
           "REVERT_MIGRATING_BROKERS", "PREPARING", "PROVISIONING", "MIGRATION_MODE", "MIGRATING_BROKERS",
           "FINALIZING"]
