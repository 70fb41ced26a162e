"""Partition health and leader balance, with Kafka's own definitions.

Pure: takes a `ClusterSnapshot`, returns data. No I/O, no kazoo, streamlit or pyspark.

Where the definitions come from (Apache Kafka source):

* `kafka-topics --describe` -- `PartitionDescription` / `DescribeOptions` in TopicCommand
  (`core/src/main/scala/kafka/admin/TopicCommand.scala` in 2.x-3.x, later ported to
  `tools/src/main/java/org/apache/kafka/tools/TopicCommand.java`):

  - under-replicated:  ``replicationFactor - isr.size > 0`` where, while a reassignment is in
    progress, ``replicationFactor = replicas - adding_replicas`` (`getReplicationFactor`);
  - unavailable:       ``!hasLeader || !liveBrokers.contains(leader)``;
  - under-min-ISR:     ``!hasLeader || isr.size < min.insync.replicas``;
  - at-min-ISR:        ``isr.size == min.insync.replicas`` (no leader check);
  - min.insync.replicas: TopicCommand takes the topic's config as one broker describes it; the value that counts
    is the partition's leader's (it refuses acks=all writes), so Keel takes the topic override, else the leader's
    own value: its dynamic config, the dynamic cluster default, its server.properties, Kafka's default
    (core.broker_defaults; `defaults` carries what the brokers said, or what is assumed without them). Brokers
    of Kafka 3.7+ cap it at the partition's replica count (Partition.effectiveMinIsr, KAFKA-15583; TopicCommand
    does not): Keel does too when `defaults` says the brokers are 3.7+;
  - the report flags select a partition when *any* selected predicate holds (`shouldPrintTopicPartition`).

  We follow the `--bootstrap-server` path, which is the one Kafka supports in 2.x/3.x. There the
  partition metadata comes from a broker's MetadataCache, which reports a leader that is not a
  live broker as "no leader" (`LEADER_NOT_AVAILABLE`, leader id -1). So `hasLeader` means "has a
  live leader", and a partition led by a dead broker is both unavailable and under-min-ISR.

* `KafkaController.checkAndTriggerAutoLeaderRebalance` (`core/src/main/scala/kafka/controller/
  KafkaController.scala`, 1.1-3.9) for leader imbalance -- see `broker_loads`.

* `ControllerContext.hasPreferredLeader` (2.6+) for the controller's `PreferredReplicaImbalanceCount`
  metric -- see `ClusterSummary.preferred_replica_imbalance`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from core.broker_defaults import BrokerDefaults, MinIsrBasis, MinIsrRule, min_isr_basis, positive_int
from core.errors import ValidationError
from core.model import NO_LEADER, ClusterSnapshot, Partition, Topic

MIN_ISR_KEY = "min.insync.replicas"
MIN_ISR_DEFAULT = 1
IMBALANCE_KEY = "leader.imbalance.per.broker.percentage"
IMBALANCE_DEFAULT_PERCENT = 10
CLUSTER_DEFAULT_ENTITY = "<default>"


# --- configuration values --------------------------------------------------------------------


_positive_int = positive_int


def min_isr(topic: Topic, default: int = MIN_ISR_DEFAULT) -> int:
    """The topic's `min.insync.replicas`; a missing or invalid value (not an int >= 1) gives `default`."""
    return _positive_int(topic.config.get(MIN_ISR_KEY)) or default


def leader_imbalance_threshold(snapshot: ClusterSnapshot, override: int | None = None) -> int:
    """The `leader.imbalance.per.broker.percentage` the controller compares every broker against.

    Kafka: one cluster-wide value -- the *active controller's own* `config.leaderImbalancePerBrokerPercentage`
    (KafkaController.checkAndTriggerAutoLeaderRebalance). It is not a per-broker setting, and it is
    not dynamically updatable (it is absent from DynamicBrokerConfig.AllDynamicConfigs), so Kafka
    itself only reads it from the controller's server.properties.

    Keel resolves, in order: `override` (the value the operator knows from server.properties);
    the controller broker's entry in the snapshot's broker configs (its own, then ``<default>``);
    when no controller is known, ``<default>``; then Kafka's default, 10. A value recorded for
    any *other* broker is ignored, as Kafka would ignore it.
    """
    if override is not None:
        return int(override)
    ctrl = snapshot.controller
    if ctrl is not None and ctrl.broker_id is not None and ctrl.broker_id >= 0:
        raw = snapshot.broker_config(ctrl.broker_id, IMBALANCE_KEY)
    else:
        raw = snapshot.broker_configs.get(CLUSTER_DEFAULT_ENTITY, {}).get(IMBALANCE_KEY)
    if raw is not None:
        try:
            return int(str(raw).strip())
        except ValueError:
            pass
    return IMBALANCE_DEFAULT_PERCENT


# --- per-partition predicates ----------------------------------------------------------------


def replication_factor(p: Partition) -> int:
    """Kafka's `getReplicationFactor`: replicas minus the adding replicas of an in-flight reassignment."""
    adding = p.adding_replicas
    if not adding:
        return len(p.replicas)
    return sum(1 for r in p.replicas if r not in adding)


def has_live_leader(p: Partition, alive: frozenset[int] | set[int]) -> bool:
    return p.leader != NO_LEADER and p.leader in alive


def is_under_replicated(p: Partition) -> bool:
    return len(p.isr) < replication_factor(p)


def is_unavailable(p: Partition, alive: frozenset[int] | set[int]) -> bool:
    return not has_live_leader(p, alive)


def is_under_min_isr(p: Partition, min_isr_count: int, alive: frozenset[int] | set[int]) -> bool:
    return not has_live_leader(p, alive) or len(p.isr) < min_isr_count


def is_at_min_isr(p: Partition, min_isr_count: int) -> bool:
    return len(p.isr) == min_isr_count


def out_of_sync_replicas(p: Partition) -> tuple[int, ...]:
    """Assigned replicas not in the ISR, in assignment order."""
    isr = p.isr
    return tuple(r for r in p.replicas if r not in isr)


def is_off_preferred_leader(p: Partition) -> bool:
    """The controller's per-partition imbalance test: state present and leader != first replica.

    A leader of -1 counts; a partition without a state znode does not (the controller has no
    leadership info for it, and `leadershipInfo.exists(...)` is false).
    """
    return p.has_state and bool(p.replicas) and p.leader != p.replicas[0]


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int
    has_state: bool
    under_replicated: bool
    unavailable: bool
    under_min_isr: bool
    at_min_isr: bool
    isr_differs: bool
    out_of_sync: tuple[int, ...]
    off_preferred_leader: bool
    reassigning: bool

    @property
    def healthy(self) -> bool:
        return not (self.under_replicated or self.unavailable or self.under_min_isr)


def iter_partition_health(snapshot: ClusterSnapshot, defaults: BrokerDefaults | None = None
                          ) -> Iterator[PartitionHealth]:
    """`PartitionHealth` rows one at a time (the predicates above, inlined for speed). `defaults`: the brokers'
    own settings (None: unknown, Kafka's 1 assumed where ZooKeeper sets nothing)."""
    alive = snapshot.alive_broker_ids
    rule = MinIsrRule(snapshot, defaults)
    for t in snapshot.topics:
        yield from topic_partition_health(t, alive, rule)


def topic_partition_health(t: Topic, alive: frozenset[int], rule: MinIsrRule) -> Iterator[PartitionHealth]:
    """One topic's `PartitionHealth` rows, for callers that keep results per topic (`rule`: `min_isr_rule`)."""
    capped = rule.capped
    row = PartitionHealth
    fixed = rule.fixed(t)
    name = t.name
    for p in t.partitions:
        replicas = p.replicas
        isr = p.isr
        leader = p.leader
        has_state = p.has_state
        mi = fixed if fixed is not None else rule.leader(leader, replicas)
        if capped and mi > len(replicas) > 0:
            mi = len(replicas)
        live_leader = leader != NO_LEADER and leader in alive
        n_isr = len(isr)
        if isr == replicas:
            out_of_sync: tuple[int, ...] = ()
            differs = False
        else:
            out_of_sync = tuple(r for r in replicas if r not in isr)
            differs = set(isr) != set(replicas)
        adding = p.adding_replicas
        reassigning = bool(adding or p.removing_replicas)
        rf = len(replicas) - sum(1 for r in replicas if r in adding) if adding else len(replicas)
        # positional, in field order: topic, partition, leader, replicas, isr, min_isr, has_state,
        # under_replicated, unavailable, under_min_isr, at_min_isr, isr_differs, out_of_sync,
        # off_preferred_leader, reassigning
        yield row(name, p.partition, leader, replicas, isr, mi, has_state,
                  n_isr < rf, not live_leader, not live_leader or n_isr < mi, n_isr == mi,
                  differs, out_of_sync,
                  has_state and bool(replicas) and leader != replicas[0],
                  reassigning)


def partition_flags(h: PartitionHealth) -> list[str]:
    """What is wrong with one partition, in words, worst first (empty when nothing is)."""
    return [flag for flag, on in (
        ("no state", not h.has_state), ("unavailable", h.unavailable),
        ("under min ISR", h.under_min_isr and not h.unavailable), ("under-replicated", h.under_replicated),
        ("leader off preferred", h.off_preferred_leader), ("replicas out of sync", bool(h.out_of_sync)),
        ("reassigning", h.reassigning)) if on]


@dataclass(frozen=True, slots=True)
class TopicHealth:
    """One topic's health: its partitions' rows (`topic_partition_health`) counted, so that the topic list and the
    topic's partition table never disagree."""

    topic: str
    partitions: int
    replication_factor: int
    under_replicated: int
    unavailable: int
    under_min_isr: int
    at_min_isr: int
    off_preferred_leader: int
    out_of_sync_replicas: int  # replicas, not partitions
    min_isr: tuple[int, ...]  # the values its partitions' leaders enforce, sorted (one in the usual case)

    @property
    def status(self) -> str:
        """The worst: "unavailable", "under min ISR", "under-replicated" or "ok"."""
        return ("unavailable" if self.unavailable else "under min ISR" if self.under_min_isr
                else "under-replicated" if self.under_replicated else "ok")


def topic_health(t: Topic, alive: frozenset[int], rule: MinIsrRule) -> TopicHealth:
    """`t`'s health on a cluster whose live brokers are `alive` (`rule`: `min_isr_rule`, built once per snapshot)."""
    urp = unav = umi = ami = off = oos = 0
    mins: set[int] = set()
    for h in topic_partition_health(t, alive, rule):
        mins.add(h.min_isr)
        urp += h.under_replicated
        unav += h.unavailable
        umi += h.under_min_isr
        ami += h.at_min_isr
        off += h.off_preferred_leader
        oos += len(h.out_of_sync)
    if not mins:  # no partitions: what a partition would get
        fixed = rule.fixed(t)
        mins.add(fixed if fixed is not None else rule.broker(None))
    return TopicHealth(t.name, len(t.partitions), t.replication_factor, urp, unav, umi, ami, off, oos,
                       tuple(sorted(mins)))


def partition_health(snapshot: ClusterSnapshot, defaults: BrokerDefaults | None = None) -> list[PartitionHealth]:
    """One row per partition, in snapshot order (topics by name, partitions by number)."""
    return list(iter_partition_health(snapshot, defaults))


def min_isr_rule(snapshot: ClusterSnapshot, defaults: BrokerDefaults | None = None) -> MinIsrRule:
    """min.insync.replicas per partition (its leader's), for callers that check partitions one by one."""
    return MinIsrRule(snapshot, defaults)


def min_isr_note(snapshot: ClusterSnapshot, defaults: BrokerDefaults | None = None) -> MinIsrBasis:
    """What topics without an override are checked against, per live broker, in words (pages, `describe`)."""
    return min_isr_basis(defaults if defaults is not None else BrokerDefaults(), snapshot.broker_configs,
                         snapshot.alive_broker_ids or {b.id for b in snapshot.brokers}, kraft=snapshot.is_kraft)


# --- kafka-topics --describe filters ---------------------------------------------------------


def compile_topic_regex(raw: str) -> re.Pattern[str]:
    """Compile a `--topic` argument the way kafka-topics does (TopicFilter / IncludeList).

    Kafka trims it, turns ',' into '|', drops spaces and leading/trailing quotes, then requires the
    whole topic name to match (Java `String.matches`). Python's `re` stands in for java.util.regex;
    the common syntax is the same, Java-only constructs such as ``\\p{Alpha}`` are refused.
    """
    regex = raw.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"""^["']+""", "", regex)
    regex = re.sub(r"""["']+$""", "", regex)
    try:
        return re.compile(regex)
    except re.error as e:
        # Kafka's wording: "<regex> is an invalid regex."
        raise ValidationError(f"{regex} is an invalid regex.", hint=str(e)) from None


def matching_topics(snapshot: ClusterSnapshot, topic_regex: str | None = None, *,
                    exclude_internal: bool = False) -> list[str]:
    """Topic names kafka-topics `--topic <regex>` (and `--exclude-internal`) would select, sorted."""
    pattern = compile_topic_regex(topic_regex) if topic_regex is not None else None
    return sorted(
        t.name for t in snapshot.topics
        if (pattern is None or pattern.fullmatch(t.name)) and not (exclude_internal and t.is_internal)
    )


def filter_partitions(snapshot: ClusterSnapshot, *, topic_regex: str | None = None,
                      under_replicated: bool = False, unavailable: bool = False,
                      under_min_isr: bool = False, at_min_isr: bool = False,
                      exclude_internal: bool = False, defaults: BrokerDefaults | None = None) -> ClusterSnapshot:
    """The snapshot narrowed the way `kafka-topics --describe` narrows its output.

    `topic_regex` is `--topic` (a regex over the whole name, see `compile_topic_regex`); the flags
    are `--under-replicated-partitions`, `--unavailable-partitions`, `--under-min-isr-partitions`
    and `--at-min-isr-partitions`. With no flag every partition of the selected topics is kept.

    Several flags combine as OR: a partition is kept when any selected predicate holds. That is
    the predicate logic of every TopicCommand (`shouldPrintTopicPartition`). Note that the Scala
    TopicCommand of 2.x-3.x *refuses* to combine these flags on the command line (each report
    option lists the other three as invalid), and refuses `--under-min-isr-partitions` /
    `--at-min-isr-partitions` with `--zookeeper`; the later Java TopicCommand in tools/ accepts
    combinations and ORs them, which is what this function does.

    Raises ValidationError for an invalid regex. No match is not an error here (Kafka's
    "Topic '<t>' does not exist as expected" is for the CLI to raise, see `matching_topics`).
    `defaults`: the brokers' own settings, for the two min-ISR flags (see `MinIsrRule`).
    """
    wanted = set(matching_topics(snapshot, topic_regex, exclude_internal=exclude_internal)) \
        if (topic_regex is not None or exclude_internal) else None
    alive = snapshot.alive_broker_ids
    rule = MinIsrRule(snapshot, defaults)
    fixed = {t.name: rule.fixed(t) for t in snapshot.topics}
    any_flag = under_replicated or unavailable or under_min_isr or at_min_isr

    def keep(p: Partition) -> bool:
        if wanted is not None and p.topic not in wanted:
            return False
        if not any_flag:
            return True
        n_isr = len(p.isr)
        mi = fixed.get(p.topic)
        if mi is None:
            mi = rule.leader(p.leader, p.replicas)
        if rule.capped and mi > len(p.replicas) > 0:
            mi = len(p.replicas)
        live_leader = p.leader != NO_LEADER and p.leader in alive
        return ((under_replicated and n_isr < replication_factor(p))
                or (unavailable and not live_leader)
                or (under_min_isr and (not live_leader or n_isr < mi))
                or (at_min_isr and n_isr == mi))

    return snapshot.filtered(keep)


# --- brokers and the cluster -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """One broker's share of the cluster, and the controller's leader-imbalance view of it.

    `replicas` and `leaders` count every partition (topics being deleted included: they still hold
    data). `preferred`, `preferred_not_leading`, `imbalance_ratio`, `over_threshold` and
    `electable` follow the controller and leave out topics queued for deletion.
    `imbalance_ratio` is None when the broker is the preferred replica of nothing (the controller
    does not check such a broker). `electable` counts the not-leading partitions whose preferred
    replica is alive and in the ISR -- the ones an election could actually move.
    """

    broker_id: int
    rack: str | None
    alive: bool
    listed: bool  # registered or listed in the snapshot's brokers; False = only seen in assignments
    replicas: int
    leaders: int
    preferred: int
    preferred_not_leading: int
    imbalance_ratio: float | None
    over_threshold: bool
    electable: int


@dataclass(frozen=True)
class ClusterSummary:
    brokers_total: int
    brokers_alive: int
    brokers_dead: int  # listed as not alive, or referenced by an assignment/leader without a registration
    topics: int
    partitions: int
    replicas: int
    under_replicated: int
    unavailable: int
    under_min_isr: int
    at_min_isr: int
    isr_differs: int  # replica verification
    offline: int  # leader -1 (missing state included)
    missing_state: int
    off_preferred_leader: int
    # the controller's PreferredReplicaImbalanceCount: state present, topic not being deleted, and
    # leader != first replica -- except that while the first replica is still an adding replica of
    # a reassignment the partition counts only once that replica is in the ISR.
    preferred_replica_imbalance: int
    reassigning_partitions: int  # partitions with adding/removing replicas
    reassignment_in_progress: bool  # blocks the controller's auto leader rebalance entirely
    topics_pending_deletion: int
    leader_imbalance_threshold: int  # percent
    brokers_over_threshold: tuple[int, ...]
    leaders_per_broker: dict[int, int]
    replicas_per_broker: dict[int, int]
    racks: dict[str, tuple[int, ...]]  # rack -> broker ids (listed brokers only)
    brokers_without_rack: tuple[int, ...]
    brokers: tuple[BrokerLoad, ...]
    controller_id: int | None
    problems: int
    min_isr_basis: MinIsrBasis | None = None  # what topics without an override were checked against, and why


def _scan(snapshot: ClusterSnapshot, threshold: int, defaults: BrokerDefaults | None = None) -> ClusterSummary:
    """Everything in one pass over the partitions; no per-partition objects are built."""
    alive = snapshot.alive_broker_ids
    deleting = frozenset(snapshot.in_progress.deletion)
    rule = MinIsrRule(snapshot, defaults)
    capped = rule.capped

    replica_count: dict[int, int] = {}
    leader_count: dict[int, int] = {}
    preferred: dict[int, int] = {}
    not_leading: dict[int, int] = {}
    electable: dict[int, int] = {}
    rc_get = replica_count.get
    lc_get = leader_count.get

    n_partitions = n_replicas = 0
    urp = unavail = under_min = at_min = differs = offline = missing = off_pref = 0
    pri = reassigning = 0

    for t in snapshot.topics:
        fixed = rule.fixed(t)
        counted = t.name not in deleting  # the controller skips topics queued for deletion
        for p in t.partitions:
            replicas = p.replicas
            isr = p.isr
            leader = p.leader
            has_state = p.has_state
            mi = fixed if fixed is not None else rule.leader(leader, replicas)
            n_rep = len(replicas)
            if capped and mi > n_rep > 0:
                mi = n_rep
            n_isr = len(isr)
            n_partitions += 1
            n_replicas += n_rep
            for r in replicas:
                replica_count[r] = rc_get(r, 0) + 1

            if leader == NO_LEADER:
                offline += 1
                live_leader = False
            else:
                leader_count[leader] = lc_get(leader, 0) + 1
                live_leader = leader in alive
            if not has_state:
                missing += 1

            adding = p.adding_replicas
            if adding or p.removing_replicas:
                reassigning += 1
                rf = n_rep - sum(1 for r in replicas if r in adding)
            else:
                rf = n_rep
            if n_isr < rf:
                urp += 1
            if not live_leader:
                unavail += 1
                under_min += 1
            elif n_isr < mi:
                under_min += 1
            if n_isr == mi:
                at_min += 1
            if isr != replicas and set(isr) != set(replicas):
                differs += 1

            if n_rep:
                pref = replicas[0]
                off = has_state and leader != pref
                if off:
                    off_pref += 1
                if counted:
                    preferred[pref] = preferred.get(pref, 0) + 1
                    if off:
                        not_leading[pref] = not_leading.get(pref, 0) + 1
                        if pref in alive and pref in isr:
                            electable[pref] = electable.get(pref, 0) + 1
                    if has_state:
                        if adding and pref in adding:
                            if pref in isr:
                                pri += 1
                        elif off:
                            pri += 1

    reassignment_in_progress = bool(snapshot.in_progress.reassignment) or reassigning > 0

    listed = {b.id: b for b in snapshot.brokers}
    all_ids = sorted(set(listed) | set(replica_count) | set(leader_count))
    loads: list[BrokerLoad] = []
    over: list[int] = []
    for bid in all_ids:
        b = listed.get(bid)
        pc = preferred.get(bid, 0)
        nl = not_leading.get(bid, 0)
        ratio = nl / pc if pc else None
        # Kafka: imbalanceRatio > percentage / 100, i.e. nl / pc > threshold / 100 (exact integers here)
        is_over = bool(pc) and nl * 100 > threshold * pc
        if is_over:
            over.append(bid)
        loads.append(BrokerLoad(
            broker_id=bid, rack=b.rack if b else None, alive=bid in alive, listed=b is not None,
            replicas=replica_count.get(bid, 0), leaders=leader_count.get(bid, 0),
            preferred=pc, preferred_not_leading=nl, imbalance_ratio=ratio, over_threshold=is_over,
            electable=electable.get(bid, 0),
        ))

    racks: dict[str, list[int]] = {}
    no_rack: list[int] = []
    for b in sorted(snapshot.brokers, key=lambda b: b.id):
        if b.rack is None:
            no_rack.append(b.id)
        else:
            racks.setdefault(b.rack, []).append(b.id)

    n_alive = sum(1 for bid in all_ids if bid in alive)
    ctrl = snapshot.controller
    return ClusterSummary(
        brokers_total=len(all_ids), brokers_alive=n_alive, brokers_dead=len(all_ids) - n_alive,
        topics=len(snapshot.topics), partitions=n_partitions, replicas=n_replicas,
        under_replicated=urp, unavailable=unavail, under_min_isr=under_min, at_min_isr=at_min,
        isr_differs=differs, offline=offline, missing_state=missing, off_preferred_leader=off_pref,
        preferred_replica_imbalance=pri, reassigning_partitions=reassigning,
        reassignment_in_progress=reassignment_in_progress,
        topics_pending_deletion=sum(1 for t in snapshot.topics if t.name in deleting),
        leader_imbalance_threshold=threshold, brokers_over_threshold=tuple(over),
        leaders_per_broker={bid: leader_count.get(bid, 0) for bid in all_ids},
        replicas_per_broker={bid: replica_count.get(bid, 0) for bid in all_ids},
        racks={k: tuple(v) for k, v in sorted(racks.items())}, brokers_without_rack=tuple(no_rack),
        brokers=tuple(loads),
        controller_id=ctrl.broker_id if ctrl is not None else None,
        problems=len(snapshot.problems),
        min_isr_basis=min_isr_note(snapshot, defaults),
    )


def summarize(snapshot: ClusterSnapshot, *, threshold_percent: int | None = None,
              defaults: BrokerDefaults | None = None) -> ClusterSummary:
    """Counts for the whole cluster, plus the per-broker rows (`ClusterSummary.brokers`).

    `threshold_percent` overrides `leader.imbalance.per.broker.percentage` (see
    `leader_imbalance_threshold`). `defaults`: the brokers' own settings, for the min-ISR counts (None: unknown,
    Kafka's 1 assumed where ZooKeeper sets nothing; `ClusterSummary.min_isr_basis` says so). One pass over the
    partitions.
    """
    return _scan(snapshot, leader_imbalance_threshold(snapshot, threshold_percent), defaults)


def broker_loads(snapshot: ClusterSnapshot, *, threshold_percent: int | None = None) -> list[BrokerLoad]:
    """One row per broker, sorted by id: every listed broker (alive ones with zero replicas
    included) and every broker id an assignment or a leader refers to (dead if unregistered).

    Leader imbalance is the controller's (KafkaController.checkAndTriggerAutoLeaderRebalance):
    partitions are grouped by their first replica, *topics queued for deletion left out*; for each
    broker B, ratio = (partitions whose first replica is B and whose leader is not B) / (partitions
    whose first replica is B). Leader -1 counts as "not B"; a partition without a state znode
    counts in the denominator only (no leadership info). The broker is over the threshold when
    ratio > percentage / 100 (strictly greater). Partitions being reassigned are *not* left out of
    the ratio: instead the controller triggers no election at all while any reassignment is in
    progress (`partitionsBeingReassigned.isEmpty`), see `ClusterSummary.reassignment_in_progress`.
    """
    return list(summarize(snapshot, threshold_percent=threshold_percent).brokers)
