"""Topic drafts -- what creating, growing, re-configuring or deleting a topic WOULD write (explicit replica
assignments parsed by core.topics.replica_assignment). Pure: computed against a `ClusterSnapshot`; the writers
(core.zk.topic_admin, core.kafka.topic_writes) re-read live state and re-validate before writing.

* Create -- `AdminZkClient.validateTopicCreate` (exists, '.'/'_' collision, same replica count everywhere, no
  duplicate replica, partitions 0..n-1, `LogConfig.validate`) and `kafka-topics` (`TopicCommand`:
  `parseReplicaAssignment`, the '.'/'_' warning, the replication-factor/partitions range checks).
* Add partitions -- `ZkAdminManager.createPartitions` (refused while a partition of the topic is being reassigned,
  unknown brokers, assignment count) and `AdminZkClient.createNewPartitionsAssignment` /
  `validateReplicaAssignment`; the ZooKeeper `TopicCommand --alter` refuses internal topics; `KafkaApis` refuses
  topics queued for deletion.
* Delete -- `TopicCommand` (ZooKeeper path): internal topics are never marked for deletion.
* Risks -- writes Kafka accepts but that harm the cluster (min.insync.replicas above the replication factor)
  are listed in a draft's `risks` and written only once confirmed (`require_accepted`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from random import Random
from typing import Any, Iterable, Mapping, Sequence

from core.assignment import RackAwareMode, add_partitions_assignment, assign_replicas, brokers_for_mode
from core.broker_defaults import ASSUMED, DYNAMIC_DEFAULT, BrokerDefaults, broker_min_isr
from core.errors import (
    AdminOperationError,
    BusyError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KRaftControllerError,
    ReassignmentInProgressError,
    RiskNotAcceptedError,
    TooLargeError,
    UnknownTopicError,
    ValidationError,
    changed_meanwhile,
)
from core.model import ClusterSnapshot, Topic
from core.topics.configdef import (
    INT_MAX,
    SHORT_MAX,
    TOPIC_CONFIGS,
    ConfigDiffRow,
    _check_cross_fields,
    _config_error,
    _config_warnings,
    _java_int,
    _java_trim,
    config_diff,
    parse_kafka_version,
    validate_topic_config,
)
from core.topics.replica_assignment import (  # noqa: F401  (parse_replica_assignment re-exported)
    ASSIGNMENT_USAGE,
    Assignment,
    _coerce_assignment,
    _format_assignment,
    parse_replica_assignment,
)
from core.topics.names import (
    ADD_PARTITIONS_WARNING,
    DELETE_NOTE,
    check_collision,
    check_not_exists,
    collision_warning,
    is_internal,
    validate_topic_name,
)



# Bounds checked before any placement is computed, so that one typed number cannot tie up the engine:
# the topic znode (every partition's replicas) must fit one ZooKeeper request (jute.maxbuffer, 1 MiB by
# default), and the controller creates one state znode per new partition in a single pass.
MAX_NEW_PARTITIONS = 20_000
MAX_TOPIC_ZNODE_BYTES = 1_000_000

def _check_known_brokers(assignment: Mapping[int, Sequence[int]], known: Iterable[int]) -> None:
    """ZkAdminManager.createPartitions: every broker of an explicit assignment must be registered (alive)."""
    unknown = sorted({b for reps in assignment.values() for b in reps} - set(known))
    if unknown:
        raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
                                            hint="only brokers registered under /brokers/ids can hold new replicas")


def _validate_create_assignment(assignment: Assignment, alive: Iterable[int]) -> None:
    """`AdminZkClient.validateTopicCreate`'s assignment checks, then two Keel adds: no empty replica list and
    no unregistered broker (Kafka's create path skips that check; its add-partitions path makes it)."""
    if not assignment:
        raise InvalidReplicaAssignmentError(f"empty replica assignment: {ASSIGNMENT_USAGE}")
    if len({len(reps) for reps in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    if any(len(reps) != len(set(reps)) for reps in assignment.values()):
        raise InvalidReplicaAssignmentError("Duplicate replica assignment found: " + _format_assignment(assignment))
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence",
                                            hint=f"got partitions {sorted(assignment)}")
    if any(len(reps) == 0 for reps in assignment.values()):
        raise InvalidReplicaAssignmentError("Cannot have replication factor of 0 for partition id 0.")
    _check_known_brokers(assignment, alive)


def _validate_new_partitions(new: Assignment, expected_rf: int) -> None:
    """`AdminZkClient.validateReplicaAssignment` (unknown brokers were refused before, as ZkAdminManager does)."""
    for partition in sorted(new):
        reps = new[partition]
        if not reps:
            raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(reps) != len(set(reps)):
            raise InvalidReplicaAssignmentError("Duplicate brokers not allowed in replica assignment: "
                                                f"{', '.join(map(str, reps))} for partition id {partition}.")
    bad = [(p, len(new[p])) for p in sorted(new) if len(new[p]) != expected_rf]
    if bad:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition 0 has {expected_rf} while partitions "
            f"[{', '.join(str(p) for p, _ in bad)}] have replication factors [{', '.join(str(rf) for _, rf in bad)}], "
            "respectively.")


# =============================================================================================
# Drafts
# =============================================================================================


def _partition_bound(count: int) -> None:
    if count > MAX_NEW_PARTITIONS:
        raise TooLargeError(
            f"{count:,} partitions is more than Keel writes in one request (at most {MAX_NEW_PARTITIONS:,})",
            hint="the topic znode must fit ZooKeeper's 1 MiB request limit (jute.maxbuffer) and the controller "
                 "creates every new partition's state in one pass; create fewer and add partitions in steps")


def check_topic_znode_size(name: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """Refuse an assignment whose topic znode would exceed ZooKeeper's request limit (estimated exactly
    as the JSON is written: `"p":[a,b,c]` per partition)."""
    size = 64 + len(name) + sum(len(str(p)) + 6 + sum(len(str(b)) + 1 for b in reps)
                                for p, reps in assignment.items())
    if size > MAX_TOPIC_ZNODE_BYTES:
        raise TooLargeError(
            f"topic {name}'s assignment would be a {size:,}-byte znode, over ZooKeeper's 1 MiB request limit "
            "(jute.maxbuffer)", hint="use fewer partitions or a lower replication factor")


def effective_min_isr(config: Mapping[str, str], broker_defaults: Mapping[str, str] | None = None) -> int:
    """min.insync.replicas as a topic sees it: its override, else the cluster-wide dynamic default, else 1."""
    for source in (config, broker_defaults or {}):
        value = _java_int(_java_trim(str(source.get("min.insync.replicas", ""))), 1, INT_MAX)
        if value is not None:
            return value
    return 1


def brokers_min_isr(snapshot: ClusterSnapshot, brokers: Iterable[int], defaults: BrokerDefaults | None = None
                    ) -> tuple[int, str, tuple[int, ...]]:
    """The highest min.insync.replicas `brokers` apply to a topic without an override (each leader enforces its
    own: core.broker_defaults), where it comes from in words, and the brokers applying it (() when all do)."""
    defaults = defaults if defaults is not None else BrokerDefaults()
    found = [(broker_min_isr(defaults, snapshot.broker_configs, b), b) for b in sorted(set(brokers))] \
        or [(broker_min_isr(defaults, snapshot.broker_configs, None), None)]
    top = max(m.value for m, _ in found)
    at = [(m, b) for m, b in found if m.value == top]
    scope = () if len(at) == len(found) else tuple(b for _, b in at)
    m, broker = at[0]
    if m.source == ASSUMED:
        return top, f"assumed: {m.synonym}", scope
    if m.source == DYNAMIC_DEFAULT or broker is None:
        return top, m.source, scope
    return top, f"{m.source} of broker{'s' if len(at) > 1 else ''} {', '.join(str(b) for _, b in at)}", scope


def unwritable_risk(name: str, config: Mapping[str, str], replication_factor: int,
                    broker_defaults: Mapping[str, str] | None = None, *,
                    brokers: tuple[int, str, tuple[int, ...]] | None = None, capped: bool = False) -> str | None:
    """Why producers with acks=all could never write to the topic, or None.

    Kafka accepts min.insync.replicas above the replication factor without a word; every partition is then
    under min ISR for good and acks=all producers get NotEnoughReplicas. Keel makes the operator confirm it.
    Without a topic override the brokers' value counts: `brokers` (`brokers_min_isr`), else `broker_defaults`
    (/config/brokers/<default>), else 1. `capped`: the brokers are Kafka 3.7+, which cap min.insync.replicas at the
    replica count (KAFKA-15583): the topic is writable then, but with no replica to spare.
    """
    where, scope = None, ()
    override = _java_int(_java_trim(str(config.get("min.insync.replicas", ""))), 1, INT_MAX)
    if override is None and brokers is not None:
        min_isr, where, scope = brokers
    else:
        min_isr = effective_min_isr(config, broker_defaults)
    if replication_factor and min_isr > replication_factor:
        shown = f"min.insync.replicas={min_isr}" + (f" ({where})" if where else "")
        if capped:
            led = f" led by broker{'s' if len(scope) > 1 else ''} {', '.join(map(str, scope))}" if scope else ""
            return (f"{shown} is above the replication factor {replication_factor} of topic {name}: the brokers "
                    f"(Kafka 3.7+) cap it at {replication_factor}, so every partition{led} is at min ISR for good: "
                    "with one replica out of sync, producers with acks=all get NotEnoughReplicas")
        if scope:  # only some brokers apply it: the partitions they lead
            led = f"broker{'s' if len(scope) > 1 else ''} {', '.join(map(str, scope))}"
            return (f"{shown} is above the replication factor {replication_factor} of topic {name}: every partition "
                    f"led by {led} stays under min ISR and producers with acks=all get NotEnoughReplicas on every "
                    "write to it")
        return (f"{shown} is above the replication factor {replication_factor} of topic {name}: "
                "every partition stays under min ISR and producers with acks=all get NotEnoughReplicas on every "
                "write (the topic is unwritable for them)")
    return None


def require_accepted(risks: Sequence[str], accepted: bool | Sequence[str]) -> None:
    """Raise RiskNotAcceptedError unless `accepted` is True or lists every one of `risks` exactly."""
    if not risks or accepted is True:
        return
    missing = [r for r in risks if not (isinstance(accepted, (list, tuple, set, frozenset)) and r in accepted)]
    if missing:
        raise RiskNotAcceptedError("refused without explicit confirmation: " + "; ".join(missing), tuple(missing),
                                   hint="confirm this exact risk (--accept-risk on the command line, the "
                                        "confirmation box in the dashboard), or change the input")


@dataclass(frozen=True)
class CreateTopicDraft:
    """The topic znode and config znode a create would write: `assignment` partition -> replicas."""

    name: str
    assignment: Assignment
    config: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)  # writes nothing unless each is confirmed (require_accepted)

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if self.assignment else 0


@dataclass(frozen=True)
class AddPartitionsDraft:
    """`new_assignment` holds only the added partitions; `full_assignment` is what the topic znode would hold.
    `topic_id` and the adding/removing maps of the existing partitions are kept for the rewrite."""

    name: str
    new_assignment: Assignment
    full_assignment: Assignment
    topic_id: str | None
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def old_total(self) -> int:
        return len(self.full_assignment) - len(self.new_assignment)

    @property
    def new_total(self) -> int:
        return len(self.full_assignment)


@dataclass(frozen=True)
class AlterConfigDraft:
    """`old` and `new` are the complete override maps of the topic; `diff` the changed keys."""

    name: str
    old: dict[str, str]
    new: dict[str, str]
    diff: list[ConfigDiffRow]
    warnings: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)  # writes nothing unless each is confirmed (require_accepted)

    @property
    def changed(self) -> bool:
        return bool(self.diff)


@dataclass(frozen=True)
class DeleteTopicDraft:
    """Marks the topic for deletion (/admin/delete_topics/<name>); `partitions` and `replicas` are counts."""

    name: str
    partitions: int
    replicas: int
    topic_id: str | None = None
    warnings: list[str] = field(default_factory=list)


def _refuse_kraft(snapshot: ClusterSnapshot, action: str) -> None:
    controller = snapshot.controller
    if controller is not None and controller.is_kraft:
        raise KRaftControllerError(
            f"Cannot {action}: the cluster is controlled by a KRaft controller (kraftControllerEpoch "
            f"{controller.kraft_controller_epoch}), so ZooKeeper writes would be ignored or harmful.",
            hint="use the Kafka admin API, e.g. kafka-topics.sh --bootstrap-server")


def _require_topic(snapshot: ClusterSnapshot, name: str) -> Topic:
    topic = snapshot.topic(name)
    if topic is None:
        raise UnknownTopicError(f"Topic '{name}' does not exist as expected")
    return topic


def _require_int(value: Any, what: str, error: type[ValidationError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{what} must be an integer, got {value!r}")
    return value


def draft_create_topic(snapshot: ClusterSnapshot, name: str, partitions: int | None = None,
                       replication_factor: int | None = None, config: Mapping[str, str] | None = None,
                       rack_mode: RackAwareMode | str = "enforced",
                       replica_assignment: str | Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
                       rng: Random | None = None, fixed_start_index: int = -1, *,
                       kafka_version: str | Sequence[int] | None = None,
                       defaults: BrokerDefaults | None = None) -> CreateTopicDraft:
    """What creating `name` would write. Either `partitions` + `replication_factor` (placed by Kafka's algorithm over
    the ALIVE brokers, as Kafka does) or an explicit `replica_assignment`, never both (Kafka's CreateTopics rule).
    `defaults`: the brokers' own settings, for the min.insync.replicas risk of a topic without an override."""
    _refuse_kraft(snapshot, f"create topic '{name}'")
    validate_topic_name(name)
    if is_internal(name):
        raise AdminOperationError(f"Topic {name} is a Kafka internal topic; the brokers create it themselves.",
                                  hint="Keel does not create internal topics")
    check_not_exists(name, (t.name for t in snapshot.topics), snapshot.in_progress.deletion)
    check_collision(name, (t.name for t in snapshot.topics))
    checked_config = validate_topic_config(config or {}, kafka_version=kafka_version)

    alive = [b for b in snapshot.brokers if b.alive]
    if replica_assignment is not None:
        if partitions is not None or replication_factor is not None:
            raise InvalidReplicaAssignmentError(
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.")
        assignment = _coerce_assignment(replica_assignment)
        _validate_create_assignment(assignment, (b.id for b in alive))
    else:
        if replication_factor is None:
            raise InvalidReplicationFactorError("Missing replication factor: give a replication factor and a "
                                                "number of partitions, or a replica assignment")
        if partitions is None:
            raise InvalidPartitionsError("Missing number of partitions: give a number of partitions and a "
                                         "replication factor, or a replica assignment")
        rf = _require_int(replication_factor, "The replication factor", InvalidReplicationFactorError)
        count = _require_int(partitions, "The number of partitions", InvalidPartitionsError)
        if rf > SHORT_MAX or rf < 1:  # kafka-topics' checks, before the broker's
            raise InvalidReplicationFactorError(f"The replication factor must be between 1 and {SHORT_MAX} inclusive")
        if count < 1:
            raise InvalidPartitionsError("The partitions must be greater than 0")
        if count > INT_MAX:
            raise InvalidPartitionsError(f"The partitions must be at most {INT_MAX}")
        _partition_bound(count)
        placed = assign_replicas(brokers_for_mode(alive, rack_mode), count, rf,
                                 fixed_start_index=fixed_start_index, rng=rng)
        assignment = {p: tuple(reps) for p, reps in placed.items()}

    check_topic_znode_size(name, assignment)
    warnings = [w for w in (collision_warning(name),) if w] + _config_warnings(checked_config)
    rf_now = len(assignment[min(assignment)]) if assignment else 0
    placed_on = {b for reps in assignment.values() for b in reps}
    risk = unwritable_risk(name, checked_config, rf_now, snapshot.broker_configs.get("<default>"),
                           brokers=brokers_min_isr(snapshot, placed_on, defaults),
                           capped=defaults is not None and defaults.caps_min_isr)
    return CreateTopicDraft(name=name, assignment=dict(sorted(assignment.items())), config=checked_config,
                            warnings=warnings, risks=[risk] if risk else [])


def kafka_topics_command(draft: CreateTopicDraft, bootstrap_or_zk: str, *, zookeeper: bool = False) -> str:
    """The kafka-topics.sh line that creates exactly this draft (explicit --replica-assignment, so the placement is
    the draft's, not a new random one), shell-quoted. `zookeeper=True` gives --zookeeper (Kafka < 3.0)."""
    parts = ["kafka-topics.sh", "--zookeeper" if zookeeper else "--bootstrap-server", bootstrap_or_zk,
             "--create", "--topic", draft.name, "--replica-assignment",
             ",".join(":".join(map(str, draft.assignment[p])) for p in sorted(draft.assignment))]
    for key in sorted(draft.config):
        value = draft.config[key]
        if value == "":
            # kafka-topics splits "key=" into one part and refuses it ("must be in the format key=val").
            raise ValidationError(f"kafka-topics.sh cannot set {key} to an empty value with --config",
                                  hint="leave the key out, or set it with kafka-configs.sh after creating the topic")
        parts += ["--config", f"{key}={value}"]
    return shlex.join(parts)


def redraft_add_partitions(snapshot: ClusterSnapshot, draft: AddPartitionsDraft) -> tuple[AddPartitionsDraft, str]:
    """`draft` checked again against the live state read right before it is written (both engines), and the
    summary its audit row records. Refused when the topic's partition count changed since: the draft's new replicas
    were placed for the old count, and re-placing them silently could change them."""
    topic = snapshot.topic(draft.name)
    if topic is not None and len(topic.partitions) != draft.old_total:
        raise InvalidPartitionsError(changed_meanwhile(f"Topic {draft.name}") + f" It now has "
                                     f"{len(topic.partitions)} partitions; the draft was made for {draft.old_total}.")
    checked = draft_add_partitions(snapshot, draft.name, draft.new_total, replica_assignment=draft.new_assignment)
    return checked, (f"added {len(checked.new_assignment)} partitions to {draft.name} ({checked.old_total} -> "
                     f"{checked.new_total})")


def draft_add_partitions(snapshot: ClusterSnapshot, name: str, new_total: int,
                         replica_assignment: str | Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
                         rng: Random | None = None) -> AddPartitionsDraft:
    """What growing `name` to `new_total` partitions would write.

    Without `replica_assignment` the new replicas come from `add_partitions_assignment` over the alive brokers
    (rack mode enforced, as kafka-topics --alter always uses; no random draw, so `rng` is not used). With one: a
    kafka-topics string lists every partition and the existing ones are skipped (as kafka-topics --alter does);
    a mapping is keyed by the new partition ids; a list holds the new partitions in order.
    """
    _refuse_kraft(snapshot, f"add partitions to topic '{name}'")
    topic = _require_topic(snapshot, name)
    if is_internal(name):
        raise AdminOperationError(f"The number of partitions for the internal topic {name} cannot be changed.")
    if name in snapshot.in_progress.deletion:
        raise InvalidTopicError("The topic is queued for deletion.", hint=f"topic '{name}' is marked for deletion")
    moving = sorted({p.partition for p in topic.partitions if p.adding_replicas or p.removing_replicas}
                    | {r.partition for r in snapshot.in_progress.reassignment if r.topic == name})
    if moving:
        raise ReassignmentInProgressError(f"A partition reassignment is in progress for the topic '{name}'.",
                                          hint=f"partitions being reassigned: {moving}")
    count = _require_int(new_total, "The number of partitions", InvalidPartitionsError)
    existing = {p.partition: tuple(p.replicas) for p in topic.partitions}
    if 0 not in existing:
        raise AdminOperationError(f"Unexpected existing replica assignment for topic '{name}', partition id 0 is "
                                  f"missing. Assignment: {_format_assignment(existing)}")
    missing = sorted(set(range(max(existing) + 1)) - set(existing))
    if missing:
        raise AdminOperationError(f"Topic '{name}' has no partition {','.join(map(str, missing[:10]))}: its partition "
                                  "ids are not 0..n-1, so new partitions would overwrite existing ones",
                                  hint=f"repair /brokers/topics/{name} first")
    if count <= len(existing):
        # Kafka 3.9's messages (ZkAdminManager / AdminZkClient.createPartitions), checked against a real broker.
        raise InvalidPartitionsError(f"Topic already has {len(existing)} partitions." if count == len(existing) else
                                     f"Topic currently has {len(existing)} partitions, which is higher than the "
                                     f"requested {count}.")
    if count > INT_MAX:
        raise InvalidPartitionsError(f"The partitions must be at most {INT_MAX}")
    alive = [b for b in snapshot.brokers if b.alive]
    to_add = count - len(existing)
    _partition_bound(to_add)

    if replica_assignment is None:
        placed = add_partitions_assignment(existing, brokers_for_mode(alive, RackAwareMode.ENFORCED), count,
                                           topic=name)
        new = {p: tuple(reps) for p, reps in placed.items()}
    else:
        if isinstance(replica_assignment, str):
            full = parse_replica_assignment(replica_assignment)
            listed = [full[p] for p in sorted(full)][len(existing):]
        elif isinstance(replica_assignment, Mapping):
            given = _coerce_assignment(replica_assignment)
            wanted = list(range(len(existing), count))
            if sorted(given) != wanted and len(given) == to_add:
                raise InvalidReplicaAssignmentError(f"the new partitions are {wanted}, the assignment gives "
                                                    f"partitions {sorted(given)}")
            listed = [given[p] for p in sorted(given)]
        else:
            given = _coerce_assignment(replica_assignment)
            listed = [given[p] for p in sorted(given)]
        proposed = {len(existing) + i: reps for i, reps in enumerate(listed)}
        _check_known_brokers(proposed, (b.id for b in alive))
        if len(listed) != to_add:
            raise InvalidReplicaAssignmentError(f"Increasing the number of partitions by {to_add} but {len(listed)} "
                                                "assignments provided.")
        _validate_new_partitions(proposed, len(existing[0]))
        new = proposed

    full_assignment = dict(sorted({**existing, **new}.items()))
    check_topic_znode_size(name, full_assignment)
    return AddPartitionsDraft(
        name=name, new_assignment=dict(sorted(new.items())), full_assignment=full_assignment,
        topic_id=topic.topic_id,
        adding_replicas={p.partition: tuple(p.adding_replicas) for p in topic.partitions if p.adding_replicas},
        removing_replicas={p.partition: tuple(p.removing_replicas) for p in topic.partitions if p.removing_replicas},
        warnings=[ADD_PARTITIONS_WARNING])


def draft_alter_config(snapshot: ClusterSnapshot, name: str, set: Mapping[str, str] | None = None,
                       delete: Iterable[str] = (), *, kafka_version: str | Sequence[int] | None = None,
                       defaults: BrokerDefaults | None = None) -> AlterConfigDraft:
    """The topic's config override map after setting `set` and removing `delete` (kafka-configs --alter
    --add-config / --delete-config). Set values are validated like `validate_topic_config`; keys to delete must be
    set on the topic ("Invalid config(s): ..."), a key set on the topic may be deleted even if Kafka does not know
    it. Untouched keys are not re-validated (the cluster accepted them), but the cross-field check sees them."""
    _refuse_kraft(snapshot, f"alter the config of topic '{name}'")
    validate_topic_name(name)
    topic = snapshot.topic(name)
    if topic is None:
        raise UnknownTopicError(f"Topic '{name}' does not exist.")  # AdminZkClient.validateTopicConfig
    version = parse_kafka_version(kafka_version)
    set_checked = validate_topic_config(set or {}, kafka_version=version)
    to_delete = [_java_trim(k) for k in delete]
    both = sorted(k for k in to_delete if k in set_checked)
    if both:
        raise _config_error(both[0], f"Cannot both set and delete config(s): {','.join(both)}")
    old = dict(topic.config)
    absent = [k for k in to_delete if k not in old]
    unknown = [k for k in absent if k not in TOPIC_CONFIGS]
    if unknown:
        raise _config_error(unknown[0], f"Unknown topic config name: {unknown[0]}")
    if absent:
        raise _config_error(absent[0], f"Invalid config(s): {','.join(absent)}",
                            hint=f"not set on topic '{name}'")
    new = {k: v for k, v in old.items() if k not in to_delete}
    new.update(set_checked)
    new = dict(sorted(new.items()))
    if {"min.compaction.lag.ms", "max.compaction.lag.ms"} & set_checked.keys():
        _check_cross_fields(new, version, lenient=True)
    rf = min((len(p.replicas) for p in topic.partitions), default=0)
    brokers = brokers_min_isr(snapshot, {b for p in topic.partitions for b in p.replicas}, defaults)
    capped = defaults is not None and defaults.caps_min_isr
    risk = unwritable_risk(name, new, rf, snapshot.broker_configs.get("<default>"), brokers=brokers, capped=capped)
    # Only a change that makes the topic unwritable needs confirming, not every edit of an already broken one.
    was = unwritable_risk(name, old, rf, snapshot.broker_configs.get("<default>"), brokers=brokers, capped=capped)
    return AlterConfigDraft(name=name, old=dict(sorted(old.items())), new=new, diff=config_diff(old, new),
                            warnings=_config_warnings(set_checked),
                            risks=[risk] if risk and (risk != was) else [])


def draft_delete_topic(snapshot: ClusterSnapshot, name: str) -> DeleteTopicDraft:
    """Marking `name` for deletion, refused for unknown and internal topics and topics already marked."""
    _refuse_kraft(snapshot, f"delete topic '{name}'")
    topic = _require_topic(snapshot, name)
    if is_internal(name):
        raise AdminOperationError(f"Topic {name} is a kafka internal topic and is not allowed to be marked for "
                                  "deletion.")
    if name in snapshot.in_progress.deletion:
        raise BusyError(f"Topic {name} is already marked for deletion.",
                        hint=f"/admin/delete_topics/{name} exists; the controller deletes the topic when "
                             "delete.topic.enable is true")
    warnings = [DELETE_NOTE]
    moving = sorted({r.partition for r in snapshot.in_progress.reassignment if r.topic == name}
                    | {p.partition for p in topic.partitions if p.adding_replicas or p.removing_replicas})
    if moving:
        # Kafka (ZooKeeper mode) accepts the request; its TopicDeletionManager keeps the topic ineligible for
        # deletion while any of its partitions is reassigned and resumes the deletion once that completes.
        warnings.append(f"Topic {name} has {len(moving)} partition(s) being reassigned ({name}-{moving[0]}"
                        f"{' ...' if len(moving) > 1 else ''}): the controller deletes it only after the "
                        "reassignment completes")
    return DeleteTopicDraft(name=name, partitions=len(topic.partitions),
                            replicas=sum(len(p.replicas) for p in topic.partitions), topic_id=topic.topic_id,
                            warnings=warnings)

