"""Reassignment, topics-to-move and election JSON: parse, validate against a snapshot, format, roll back.

The documents are the ones Kafka's tools read and print:

* topics-to-move (`kafka-reassign-partitions.sh --generate --topics-to-move-json-file`):
  ``{"topics":[{"topic":"t"}],"version":1}``
* reassignment (`--execute/--verify --reassignment-json-file`, and what `--generate` prints):
  ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}``
* election (`kafka-leader-election.sh --path-to-json-file`, `kafka-preferred-replica-election.sh`):
  ``{"partitions":[{"topic":"t","partition":0}]}``

Messages are Kafka's where Kafka has one. Sources (apache/kafka): `core/src/main/scala/kafka/admin/
ReassignPartitionsCommand.scala` (1.1-2.x: `parsePartitionReassignmentDataWithoutDedup`, `parseAndValidate`,
`formatAsReassignmentJson`), `tools/src/main/java/org/apache/kafka/tools/reassign/ReassignPartitionsCommand.java`
(3.5+: `parseTopicsData`, `parseExecuteAssignmentArgs`), `kafka/utils/ZkUtils` (`parseTopicsData`), and
`PreferredReplicaLeaderElectionCommand.scala` (`parsePreferredReplicaElectionData`, `ZkCommand`).

Parsing checks what needs no cluster (syntax, types, duplicates, as Kafka's parse step does);
`validate_*` checks a parsed document against a `ClusterSnapshot`. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Iterable, Mapping, Sequence

from core.errors import PlanError
from core.model import ClusterSnapshot
from core.numbers import json_int

# A plan is typed or uploaded by a person; a document this large is a mistake (or an attack on the dashboard).
# Every partition of a 200,000-partition cluster (ZooKeeper-mode Kafka's practical ceiling) moved at replication
# factor 3 is ~20 MiB of reassignment JSON, and parsing costs ~10 times the file size in memory.
MAX_PLAN_BYTES = 64 * 1024 * 1024
# Python's JSON parser recurses once per nesting level; JSON Kafka's tools read is 4 levels deep. A document
# nested thousands deep (RecursionError) is refused with this wording.
NESTED_TOO_DEEPLY = "nested too deeply to be JSON Kafka's tools write"
ANY_LOG_DIR = "any"
_MAX_INT32 = 2**31 - 1

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReassignmentEntry:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None  # None: the key was absent (Kafka reads it as all "any")


@dataclass(frozen=True, slots=True)
class ReassignmentPlan:
    """A parsed reassignment document; `entries` in file order."""

    entries: tuple[ReassignmentEntry, ...]

    def assignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {(e.topic, e.partition): e.replicas for e in self.entries}

    def log_dirs(self) -> dict[tuple[str, int, int], str]:
        """(topic, partition, broker) -> log dir, for every entry that names one other than "any"."""
        return {(e.topic, e.partition, broker): d for e in self.entries if e.log_dirs
                for broker, d in zip(e.replicas, e.log_dirs) if d != ANY_LOG_DIR}

    def to_json(self) -> str:
        return format_reassignment(self.assignment(), self.log_dirs())


# --- topics to move ---------------------------------------------------------------------------


def parse_topics_to_move(text: str | bytes) -> tuple[str, ...]:
    """The topic names of a topics-to-move document, in file order."""
    doc = _load(text, "topics-to-move")
    _check_version(doc)
    topics = [_str(_obj(item, f"topics[{i}]"), "topic", f"topics[{i}]")
              for i, item in enumerate(_list(doc, "topics"))]
    if not topics:
        raise PlanError("List of topics to reassign is empty", hint='expected {"topics":[{"topic":"t"}],"version":1}')
    repeated = _duplicates(topics)
    if repeated:
        raise PlanError(f"List of topics to reassign contains duplicate entries: {listing(repeated)}")
    return tuple(topics)


# --- reassignment -----------------------------------------------------------------------------


def parse_reassignment(text: str | bytes) -> ReassignmentPlan:
    """Parse a reassignment document and apply the checks Kafka makes before it looks at the cluster."""
    doc = _load(text, "partition reassignment")
    _check_version(doc)
    entries = [_reassignment_entry(item, i) for i, item in enumerate(_list(doc, "partitions"))]
    if not entries:
        raise PlanError("Partition reassignment data file is empty")
    if any(not e.replicas for e in entries):
        raise PlanError("Partition replica list cannot be empty")
    repeated = _duplicates((e.topic, e.partition) for e in entries)
    if repeated:
        raise PlanError("Partition reassignment contains duplicate topic partitions: "
                        + listing(_tp(tp) for tp in repeated))
    doubled = [(e, _duplicates(e.replicas)) for e in entries]
    doubled = [(e, d) for e, d in doubled if d]
    if doubled:
        raise PlanError("Partition replica lists may not contain duplicate entries: " + listing(
            (f"{e.topic}-{e.partition} contains multiple entries for {','.join(map(str, d))}" for e, d in doubled),
            sep=". "))
    return ReassignmentPlan(tuple(entries))


def validate_reassignment(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[str]:
    """Kafka's checks against the cluster; returns warnings for what Kafka accepts but an SRE should know.

    Brokers are checked against the registered (alive) brokers: Kafka's ZooKeeper path compares with
    `getSortedBrokerList`, the children of /brokers/ids, which are ephemeral.
    """
    existing = _existing_partitions(snapshot)
    missing = [(e.topic, e.partition) for e in plan.entries if (e.topic, e.partition) not in existing]
    if missing:
        raise PlanError("The proposed assignment contains non-existent partitions: "
                        + listing(_tp(tp) for tp in sorted(missing)))
    unknown = sorted({b for e in plan.entries for b in e.replicas} - snapshot.alive_broker_ids)
    if unknown:
        raise PlanError("The proposed assignment contains non-existent brokerIDs: " + listing(map(str, unknown)))
    warnings = []
    if plan.log_dirs():
        warnings.append("log_dirs other than \"any\" are applied by the brokers' AlterReplicaLogDirs API, not through "
                        "ZooKeeper; a ZooKeeper reassignment moves the replicas and ignores the directories")
    resized = sorted((e.topic, e.partition) for e in plan.entries
                     if len(e.replicas) != len(existing[(e.topic, e.partition)]))
    if resized:
        warnings.append(f"{len(resized)} partition(s) change replication factor, e.g. {_tp(resized[0])}")
    deleting = sorted({e.topic for e in plan.entries} & set(snapshot.in_progress.deletion))
    if deleting:
        warnings.append(f"topic(s) queued for deletion: {listing(deleting)}")
    if snapshot.in_progress.reassignment:
        warnings.append(f"a reassignment of {len(snapshot.in_progress.reassignment)} partition(s) is in progress; "
                        "Kafka accepts a new one only after it completes")
    return warnings


def format_reassignment(assignment: Mapping[TopicPartition, Sequence[int]],
                        log_dirs: Mapping[tuple[str, int, int], str] | None = None) -> str:
    """Kafka's `formatAsReassignmentJson`: sorted by topic then partition, `log_dirs` "any" unless given."""
    log_dirs = log_dirs or {}
    return _dump({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(assignment[(t, p)]),
         "log_dirs": [log_dirs.get((t, p, b), ANY_LOG_DIR) for b in assignment[(t, p)]]}
        for t, p in sorted(assignment)]})


def current_assignment(snapshot: ClusterSnapshot, partitions: Iterable[TopicPartition]) -> dict[TopicPartition,
                                                                                                 tuple[int, ...]]:
    existing = _existing_partitions(snapshot)
    wanted = sorted(set(partitions))
    missing = [tp for tp in wanted if tp not in existing]
    if missing:
        raise PlanError("The proposed assignment contains non-existent partitions: "
                        + listing(_tp(tp) for tp in missing))
    return {tp: existing[tp] for tp in wanted}


def rollback_for(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> ReassignmentPlan:
    """The current assignment of the plan's partitions: what Kafka prints as "Current partition replica
    assignment ... Save this to use as the --reassignment-json-file option during rollback"."""
    current = current_assignment(snapshot, ((e.topic, e.partition) for e in plan.entries))
    return ReassignmentPlan(tuple(ReassignmentEntry(t, p, r) for (t, p), r in current.items()))


# --- preferred leader election ----------------------------------------------------------------


def parse_election(text: str | bytes) -> tuple[TopicPartition, ...]:
    """The partitions of an election document, sorted (Kafka reads them into a set)."""
    text = _decode(text, "preferred replica election")
    try:  # Kafka's Json.parseFull yields None for anything unparsable, reported as "empty"
        doc = json.loads(text, parse_int=json_int)
    except ValueError as e:
        raise PlanError("Preferred replica election data is empty", hint=f"not valid JSON: {e}") from None
    except RecursionError:
        raise PlanError(f"preferred replica election data is {NESTED_TOO_DEEPLY}") from None
    if not isinstance(doc, dict) or "partitions" not in doc:
        raise PlanError("Preferred replica election data is empty", hint='no "partitions" key')
    partitions = []
    for i, item in enumerate(_list(doc, "partitions")):
        where = f"partitions[{i}]"
        obj = _obj(item, where)
        partitions.append((_str(obj, "topic", where), _id(obj, "partition", where)))
    if not partitions:
        raise PlanError("Preferred replica election data is empty", hint='"partitions" is an empty list')
    repeated = _duplicates(partitions)
    if repeated:
        raise PlanError("Preferred replica election data contains duplicate partitions: "
                        + listing(_tp(tp) for tp in repeated))
    return tuple(sorted(partitions))


def format_election(partitions: Iterable[TopicPartition]) -> str:
    return _dump({"partitions": [{"topic": t, "partition": p} for t, p in sorted(set(partitions))]})


# --- internals --------------------------------------------------------------------------------


def _decode(text: str | bytes, what: str) -> str:
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_PLAN_BYTES:
        limit = f"{MAX_PLAN_BYTES // 2**20} MiB" if MAX_PLAN_BYTES >= 2**20 else f"{MAX_PLAN_BYTES:,} bytes"
        raise PlanError(f"{what} data is {size:,} bytes; the limit is {limit}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise PlanError(f"{what} data is not UTF-8: {e}") from None
    return text


def _load(text: str | bytes, what: str) -> dict[str, Any]:
    text = _decode(text, what)
    if not text.strip():
        raise PlanError(f"{what} data is empty")
    try:
        doc = json.loads(text, parse_int=json_int)
    except ValueError as e:
        raise PlanError(f"The input string is not a valid JSON: {e}") from None
    except RecursionError:
        raise PlanError(f"{what} data is {NESTED_TOO_DEEPLY}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{what} data must be a JSON object, got {_kind(doc)}")
    return doc


def _check_version(doc: Mapping[str, Any]) -> None:
    version = doc.get("version", 1)  # absent: Kafka's EARLIEST_VERSION
    if not _is_int(version):
        raise PlanError(f'"version" must be an integer, got {json.dumps(version)}')
    if version != 1:
        raise PlanError(f"Not supported version field value {version}")


def _reassignment_entry(item: Any, i: int) -> ReassignmentEntry:
    where = f"partitions[{i}]"
    obj = _obj(item, where)
    topic = _str(obj, "topic", where)
    partition = _id(obj, "partition", where)
    where = f"{where} ({topic}-{partition})"
    replicas = tuple(_ids(obj, "replicas", where))
    log_dirs = None
    if "log_dirs" in obj:
        dirs = obj["log_dirs"]
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise PlanError(f'{where}: "log_dirs" must be a list of strings, got {_short(dirs)}')
        if len(dirs) != len(replicas):
            # Kafka's message, with Java's list formatting.
            raise PlanError(f"Size of replicas list [{listing(replicas, ', ')}] is different from size of "
                            f"log dirs list [{listing(dirs, ', ')}] for partition {topic}-{partition}")
        bad = [d for d in dirs if d != ANY_LOG_DIR and not d.startswith("/")]
        if bad:
            raise PlanError(f'{where}: log dir {bad[0]!r} must be "any" or an absolute path')
        log_dirs = tuple(dirs)
    return ReassignmentEntry(topic, partition, replicas, log_dirs)


def _obj(item: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(item, dict):
        raise PlanError(f"{where} must be a JSON object, got {_short(item)}")
    return item


def _list(doc: Mapping[str, Any], key: str) -> list[Any]:
    value = doc.get(key, [])  # Kafka reads a missing list as empty; the emptiness check names it
    if not isinstance(value, list):
        raise PlanError(f'"{key}" must be a list, got {_kind(value)}')
    return value


def _str(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise PlanError(f'{where} {_short(obj)}: missing "{key}"')
    value = obj[key]
    if not isinstance(value, str) or not value:
        raise PlanError(f'{where} {_short(obj)}: "{key}" must be a non-empty string, got {_short(value)}')
    return value


def _id(obj: Mapping[str, Any], key: str, where: str) -> int:
    if key not in obj:
        raise PlanError(f'{where} {_short(obj)}: missing "{key}"')
    value = obj[key]
    if not _is_int(value) or not 0 <= value <= _MAX_INT32:
        raise PlanError(f'{where} {_short(obj)}: "{key}" must be an integer from 0 to {_MAX_INT32}, '
                        f"got {_short(value)}")
    return value


def _ids(obj: Mapping[str, Any], key: str, where: str) -> list[int]:
    if key not in obj:
        raise PlanError(f'{where}: missing "{key}"')
    value = obj[key]
    if not isinstance(value, list):
        raise PlanError(f'{where}: "{key}" must be a list of broker ids, got {_short(value)}')
    bad = [v for v in value if not _is_int(v) or not 0 <= v <= _MAX_INT32]
    if bad:
        raise PlanError(f'{where}: "{key}" must hold broker ids from 0 to {_MAX_INT32}, got {_short(bad[0])}')
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _duplicates(items: Iterable[Any]) -> list[Any]:
    """Repeated items, sorted (Kafka's `CoreUtils.duplicates` order is a hash order; sorted is stable)."""
    seen: set[Any] = set()
    repeated: set[Any] = set()
    for item in items:
        (repeated if item in seen else seen).add(item)
    return sorted(repeated)


def _existing_partitions(snapshot: ClusterSnapshot) -> dict[TopicPartition, tuple[int, ...]]:
    return {(p.topic, p.partition): p.replicas for p in snapshot.partitions()}


LISTED = 20  # items a message lists before it counts the rest: a 50 MB plan must not give a 12 MB message


def listing(items: Iterable[Any], sep: str = ",", limit: int = LISTED) -> str:
    """Kafka's comma-joined list in a message, cut after `limit` items: "a,b,c ... and 1,234 more"."""
    items = [str(i) for i in items]
    shown = sep.join(items[:limit])
    return shown if len(items) <= limit else f"{shown} ... and {len(items) - limit:,} more"


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"  # Kafka's TopicPartition.toString


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _dump(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


# --- a running reassignment: what moves, its throttles, its progress ----------------------------

LEADER_THROTTLED = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
# Kafka's tool never sets this one for a broker-to-broker move, but its --verify clears it with the other two.
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


def moving_partitions(plan: ReassignmentPlan, snapshot: ClusterSnapshot
                      ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]]:
    """(topic, partition) -> (current replicas, target) for partitions whose replica set changes."""
    current = _existing_partitions(snapshot)
    return {key: (current[key], target) for key, target in plan.assignment().items()
            if key in current and set(current[key]) != set(target)}


@dataclass(frozen=True)
class Throttles:
    """What Kafka's --throttle writes: per topic the replicas to throttle, per broker the rates."""

    leader: dict[str, str]  # topic -> "partition:broker,..." (the current replicas of moving partitions)
    follower: dict[str, str]  # topic -> "partition:broker,..." (the replicas being added)
    brokers: tuple[int, ...]  # brokers whose rate is set
    rate: int


def throttles_for(plan: ReassignmentPlan, snapshot: ClusterSnapshot, rate: int) -> Throttles:
    """Kafka's calculateLeaderThrottles / calculateFollowerThrottles over the moving partitions."""
    leader: dict[str, list[str]] = {}
    follower: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for (topic, partition), (current, target) in sorted(moving_partitions(plan, snapshot).items()):
        leader.setdefault(topic, []).extend(f"{partition}:{b}" for b in current)
        follower.setdefault(topic, []).extend(f"{partition}:{b}" for b in target if b not in current)
        brokers.update(current)
        brokers.update(target)
    # Kafka's tool joins a sorted set of "partition:broker" strings (string order: "10:1" before "2:1"); brokers
    # read the list as a set, but the same string makes Keel's ZooKeeper state byte-identical to the tool's.
    return Throttles({t: ",".join(sorted(set(v))) for t, v in leader.items()},
                     {t: ",".join(sorted(set(v))) for t, v in follower.items()}, tuple(sorted(brokers)), rate)


class ReassignStatus(StrEnum):
    """Where one partition of a plan stands (the words are what `verify` prints)."""

    COMPLETE = "complete"
    IN_PROGRESS = "in progress"
    NOT_AT_TARGET = "not at target"
    GONE = "gone"  # its topic was deleted, or never existed: nothing to wait for

    @property
    def finished(self) -> bool:
        """Nothing more will happen to the partition: its throttles may go."""
        return self in (ReassignStatus.COMPLETE, ReassignStatus.GONE)


@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    partition: int
    target: tuple[int, ...]
    replicas: tuple[int, ...]
    status: ReassignStatus


def reassignment_status(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[PartitionStatus]:
    """Each planned partition's status, sorted by topic then partition."""
    pending = {(r.topic, r.partition) for r in snapshot.in_progress.reassignment}
    current = {(p.topic, p.partition): p for p in snapshot.partitions()}
    out = []
    for (topic, partition), target in sorted(plan.assignment().items()):
        p = current.get((topic, partition))
        if p is None:
            # Kafka's controller drops a partition that does not exist from /admin/reassign_partitions.
            status = ReassignStatus.GONE
        elif (topic, partition) in pending or p.adding_replicas or p.removing_replicas:
            status = ReassignStatus.IN_PROGRESS
        elif p.replicas == target:
            status = ReassignStatus.COMPLETE
        else:
            status = ReassignStatus.NOT_AT_TARGET
        out.append(PartitionStatus(topic, partition, target, p.replicas if p else (), status))
    return out


def settled(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot as it will be once the running reassignment completes: partitions in /admin/reassign_partitions
    at their target, and partitions still adding / removing replicas without the replicas being removed.

    While a reassignment runs, a moving partition holds target + origin replicas (more than its replication
    factor); planning on that would count replicas that are about to go. Every planner (the CLI's `plan` and the
    Reassign page) plans on this. Returns `snapshot` itself when nothing moves."""
    pending = {(r.topic, r.partition): r.replicas for r in snapshot.in_progress.reassignment}
    if not pending and not any(p.adding_replicas or p.removing_replicas for p in snapshot.partitions()):
        return snapshot
    topics = []
    for t in snapshot.topics:
        parts = []
        changed = False
        for p in t.partitions:
            target = pending.get((p.topic, p.partition))
            if target is None and (p.adding_replicas or p.removing_replicas):
                target = tuple(r for r in p.replicas if r not in set(p.removing_replicas))
            if target is not None:
                p = replace(p, replicas=tuple(target), adding_replicas=(), removing_replicas=())
                changed = True
            parts.append(p)
        topics.append(replace(t, partitions=tuple(parts)) if changed else t)
    return replace(snapshot, topics=tuple(topics), in_progress=replace(snapshot.in_progress, reassignment=()))


# --- what can keep a reassignment from finishing -------------------------------------------------------

NO_LIVE_ISR_RISK = ("{n} partition(s) have no live in-sync replica ({listed}): their only up-to-date copies are on "
                    "down broker(s) {down}, so the new replicas have nothing to copy from and the reassignment "
                    "cannot complete until one of those brokers returns. Meanwhile ZooKeeper-mode Kafka accepts no "
                    "other reassignment, and rollback waits for it")


def _no_live_isr(p, alive: frozenset[int]) -> bool:
    return not any(b in alive for b in p.isr)


def plan_risks(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[str]:
    """What Kafka accepts in a plan but that can keep it from ever finishing: one sentence per kind of risk, to be
    confirmed exactly (core.topics.require_accepted) before it is written.

    A partition whose replicas change while none of its in-sync replicas is alive: Kafka completes a reassignment
    only once every target replica is in the ISR, and a new replica can join only by copying from a live one. The
    sentence lists the partitions (at most LISTED) and the down brokers holding their data."""
    alive = snapshot.alive_broker_ids
    current = {(p.topic, p.partition): p for p in snapshot.partitions()}
    stuck = []
    for e in plan.entries:
        p = current.get((e.topic, e.partition))
        if p is not None and tuple(e.replicas) != p.replicas and _no_live_isr(p, alive):
            stuck.append(p)
    if not stuck:
        return []
    down = sorted({b for p in stuck for b in (p.isr or p.replicas) if b not in alive})
    return [NO_LIVE_ISR_RISK.format(n=len(stuck), listed=listing(_tp((p.topic, p.partition)) for p in stuck),
                                    down=listing(map(str, down)) or "unknown")]


class StuckReason(StrEnum):
    """Why a partition of a running reassignment has not finished yet (the words the Reassign page shows)."""

    NO_LIVE_SOURCE = "no live source"  # no in-sync replica is alive: nothing to copy from
    TARGET_DOWN = "target broker down"  # a target replica's broker is not registered: it cannot join the ISR
    NOT_IN_ISR = "target not yet in ISR"  # copying: the new replicas are catching up
    CONTROLLER = "waiting for the controller"  # every target replica is in the ISR: the controller finishes it


@dataclass(frozen=True)
class Stuck:
    topic: str
    partition: int
    reason: StuckReason
    brokers: tuple[int, ...]  # the brokers the reason is about
    advice: str


def stuck_reasons(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[Stuck]:
    """For each partition of `plan` still in progress (reassignment_status), why it has not finished and what to
    do; sorted by how blocked it is (no live source first), then topic and partition."""
    alive = snapshot.alive_broker_ids
    current = {(p.topic, p.partition): p for p in snapshot.partitions()}
    order = list(StuckReason)
    out = []
    for s in reassignment_status(plan, snapshot):
        if s.status != ReassignStatus.IN_PROGRESS:
            continue
        p = current[(s.topic, s.partition)]
        isr = set(p.isr)
        down = tuple(b for b in s.target if b not in alive)
        if not (isr & alive):
            held = tuple(sorted(b for b in (p.isr or p.replicas) if b not in alive))
            out.append(Stuck(s.topic, s.partition, StuckReason.NO_LIVE_SOURCE, held,
                             f"Start broker(s) {listing(map(str, held)) or '?'}: the partition's data is only there. "
                             "Until then it cannot finish and Kafka accepts no other reassignment; cancelling it "
                             "(Kafka 2.4+) puts it back on its original replicas."))
        elif down:
            out.append(Stuck(s.topic, s.partition, StuckReason.TARGET_DOWN, down,
                             f"Start broker(s) {listing(map(str, down))}: a down broker cannot join the ISR. Or "
                             "cancel it (Kafka 2.4+) and plan again without that broker."))
        else:
            missing = tuple(b for b in s.target if b not in isr)
            if missing:
                out.append(Stuck(s.topic, s.partition, StuckReason.NOT_IN_ISR, missing,
                                 f"Wait: broker(s) {listing(map(str, missing))} are copying the partition and join "
                                 "the ISR once caught up. If it takes long, check the throttle and those brokers' "
                                 "logs."))
            else:
                out.append(Stuck(s.topic, s.partition, StuckReason.CONTROLLER, (),
                                 "Wait: every target replica is in sync; the controller completes it next."))
    return sorted(out, key=lambda x: (order.index(x.reason), x.topic, x.partition))
