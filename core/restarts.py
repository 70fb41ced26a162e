"""Rolling restarts: is it safe to stop a broker now, and an order for the whole cluster that keeps every partition
available, with "wait until under-replicated = 0" between brokers.

What stopping broker B does, as Kafka's controller handles a controlled shutdown (`KafkaController.
doControlledShutdown`, `ControlledShutdownLeaderElectionStrategy`): every partition B leads gets as new leader the
first replica, in assignment order, that is alive, in the ISR and not B; B leaves every ISR. So stopping B

* takes a partition OFFLINE when B is its only live in-sync replica (no other replica can lead: it stays without a
  leader until B is back, unless an unclean election loses data) - replication factor 1 included;
* puts a partition UNDER MIN ISR when its ISR without B is smaller than `min.insync.replicas` (producers with
  acks=all are refused until B has caught up again) - the topic's override, else the value of the partition's
  leader once B is stopped (each broker applies its own: core.broker_defaults; `defaults` says what the brokers
  said of their server.properties, or what is assumed without them);
* MOVES the leaderships of B to the brokers named above (they do not come back by themselves when
  `auto.leader.rebalance.enable` is false: run a preferred-leader election at the end).

A broker just restarted is back in the ISRs only once it has caught up: until then the cluster has
under-replicated partitions, and stopping the next broker can take a partition under min ISR or offline. Hence the
check between brokers: wait until no partition is under-replicated.

Pure: a ClusterSnapshot in, plain data out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from core.broker_defaults import FROM_CLI, BrokerDefaults, MinIsrRule
from core.errors import ValidationError
from core.model import NO_LEADER, ClusterSnapshot, Partition


@dataclass(frozen=True)
class AtRisk:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    min_isr: int


@dataclass(frozen=True)
class LeaderMove:
    topic: str
    partition: int
    to: int | None  # None: no other live in-sync replica (the partition goes offline)


@dataclass(frozen=True)
class StopCheck:
    """Is it safe to stop `broker` now? (see the module doc)."""

    broker: int
    rack: str | None
    registered: bool
    is_controller: bool
    goes_offline: tuple[AtRisk, ...]
    under_min_isr: tuple[AtRisk, ...]
    leader_moves: tuple[LeaderMove, ...]
    under_replicated: tuple[tuple[str, int], ...]  # cluster-wide, now
    already_unavailable: tuple[tuple[str, int], ...]  # without a live leader now, whoever stops
    ignore_under_replicated: bool = False

    @property
    def keeps_available(self) -> bool:
        """No partition goes offline or under min ISR when this broker stops."""
        return not self.goes_offline and not self.under_min_isr

    @property
    def safe(self) -> bool:
        """Safe to stop now: running, nothing goes offline or under min ISR, and (unless ignored) nothing is
        under-replicated, i.e. the broker restarted before has caught up."""
        return self.registered and self.keeps_available and (self.ignore_under_replicated
                                                             or not self.under_replicated)

    def moves_by_target(self) -> dict[int | None, int]:
        counts = Counter(m.to for m in self.leader_moves)
        return dict(sorted(counts.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))

    def reasons(self) -> list[str]:
        """Why it is not safe (empty when it is), one sentence each."""
        out = []
        if not self.registered:
            out.append(f"broker {self.broker} is not running (not registered under /brokers/ids): start it and wait "
                       "until no partition is under-replicated")
        if self.goes_offline:
            out.append(f"{len(self.goes_offline)} partition(s) would go offline: broker {self.broker} is their only "
                       f"live in-sync replica ({_names(self.goes_offline)})")
        if self.under_min_isr:
            out.append(f"{len(self.under_min_isr)} partition(s) would fall under min.insync.replicas, refusing "
                       f"acks=all producers ({_names(self.under_min_isr)})")
        if self.under_replicated and not self.ignore_under_replicated:
            out.append(f"{len(self.under_replicated)} partition(s) are under-replicated: wait until 0 (a broker "
                       f"restarted before has not caught up yet: {_names(self.under_replicated)})")
        return out

    def summary(self) -> str:
        if self.safe:
            moves = self.moves_by_target()
            where = ", ".join(f"{n} to broker {b}" for b, n in moves.items()) or "none"
            return (f"broker {self.broker}: safe to stop now; {len(self.leader_moves)} leadership(s) will move "
                    f"({where})" + ("; it is the controller: a new one will be elected" if self.is_controller else ""))
        return f"broker {self.broker}: NOT safe to stop now: " + "; ".join(self.reasons())

    def to_dict(self) -> dict:
        def risk(r: AtRisk) -> dict:
            return {"topic": r.topic, "partition": r.partition, "replicas": list(r.replicas), "isr": list(r.isr),
                    "leader": r.leader, "min_isr": r.min_isr}
        return {"broker": self.broker, "rack": self.rack, "registered": self.registered,
                "is_controller": self.is_controller, "safe": self.safe, "keeps_available": self.keeps_available,
                "reasons": self.reasons(),
                "goes_offline": [risk(r) for r in self.goes_offline],
                "under_min_isr": [risk(r) for r in self.under_min_isr],
                "leader_moves": [{"topic": m.topic, "partition": m.partition, "to": m.to} for m in self.leader_moves],
                "under_replicated": [{"topic": t, "partition": p} for t, p in self.under_replicated],
                "already_unavailable": [{"topic": t, "partition": p} for t, p in self.already_unavailable]}


def _names(items) -> str:
    shown = [f"{x.topic}-{x.partition}" if hasattr(x, "topic") else f"{x[0]}-{x[1]}" for x in list(items)[:5]]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def known_brokers(snapshot: ClusterSnapshot) -> list[int]:
    return sorted(b.id for b in snapshot.brokers)


def require_broker(snapshot: ClusterSnapshot, broker: int) -> None:
    if broker not in snapshot.broker_by_id:
        ids = ", ".join(map(str, known_brokers(snapshot))) or "none"
        raise ValidationError(f"broker {broker} does not exist in this cluster (brokers: {ids})",
                              hint="a broker id from /brokers/ids or from a partition's replicas")


def only_in_sync_on(p: Partition, broker: int, alive: frozenset[int] | set[int]) -> bool:
    """`broker` is the only live in-sync replica of `p`, which is available now: stopping it takes `p` offline
    (an ISR member that is down cannot lead). The Broker page's "Only in-sync" and check_stop's offline list."""
    live_leader = p.leader != NO_LEADER and p.leader in alive
    return live_leader and broker in p.isr and not any(r != broker and r in alive for r in p.isr)


def only_in_sync(snapshot: ClusterSnapshot, broker: int) -> list[Partition]:
    """The partitions `broker` is the only live in-sync replica of (see only_in_sync_on)."""
    alive = snapshot.alive_broker_ids
    return [p for p in snapshot.partitions() if broker in p.isr and only_in_sync_on(p, broker, alive)]


def _check(snapshot: ClusterSnapshot, parts: list[tuple[Partition, int | None]], rule: MinIsrRule, broker: int,
           alive: frozenset[int], ignore_under_replicated: bool) -> StopCheck:
    offline, under, moves, urp, unavailable = [], [], [], [], []
    others = alive - {broker}
    for p, fixed in parts:
        live_leader = p.leader != NO_LEADER and p.leader in alive
        if not live_leader:
            unavailable.append((p.topic, p.partition))
        if len(p.isr) < len(p.replicas) - len(p.adding_replicas):
            urp.append((p.topic, p.partition))
        if broker not in p.replicas or not live_leader:
            continue
        isr_left = [r for r in p.isr if r in others]
        new = next((r for r in p.replicas if r != broker and r in others and r in p.isr), None) \
            if p.leader == broker else p.leader
        # the leader once `broker` is stopped enforces its own min.insync.replicas
        mi = fixed if fixed is not None else rule.leader(new if new is not None else NO_LEADER, p.replicas)
        if rule.capped:  # Kafka 3.7+: at most the replica count
            mi = min(mi, len(p.replicas))
        risk = AtRisk(p.topic, p.partition, p.replicas, p.isr, p.leader, mi)
        if only_in_sync_on(p, broker, alive):
            offline.append(risk)
        elif broker in p.isr and len(isr_left) < mi:
            under.append(risk)
        if p.leader == broker:
            moves.append(LeaderMove(p.topic, p.partition, new))
    b = snapshot.broker_by_id.get(broker)
    ctrl = snapshot.controller.broker_id if snapshot.controller else None
    return StopCheck(broker, b.rack if b else None, broker in alive, ctrl == broker, tuple(offline), tuple(under),
                     tuple(moves), tuple(urp), tuple(unavailable), ignore_under_replicated)


def _partitions(snapshot: ClusterSnapshot, min_isr_default: int | None, defaults: BrokerDefaults | None
                ) -> tuple[list[tuple[Partition, int | None]], MinIsrRule]:
    """Every partition with its topic's fixed min.insync.replicas (override, or one value on every broker; None:
    its leader's), and the rule for the rest. `min_isr_default` is assumed where server.properties is unknown."""
    defaults = defaults if defaults is not None else BrokerDefaults()
    if min_isr_default is not None:
        defaults = defaults.assuming(min_isr_default, FROM_CLI)
    rule = MinIsrRule(snapshot, defaults)
    return [(p, rule.fixed(t)) for t in snapshot.topics for p in t.partitions], rule


def check_stop(snapshot: ClusterSnapshot, broker: int, *, min_isr_default: int | None = None,
               ignore_under_replicated: bool = False, defaults: BrokerDefaults | None = None) -> StopCheck:
    """Is it safe to stop `broker` now? `defaults`: the brokers' own settings (core.kafka.broker_configs);
    `min_isr_default`: the brokers' static min.insync.replicas where they are unknown (ZooKeeper shows only topic
    overrides and dynamic configs, which win over it; default: 1)."""
    require_broker(snapshot, broker)
    parts, rule = _partitions(snapshot, min_isr_default, defaults)
    return _check(snapshot, parts, rule, broker, snapshot.alive_broker_ids, ignore_under_replicated)


def check_all(snapshot: ClusterSnapshot, *, min_isr_default: int | None = None,
              defaults: BrokerDefaults | None = None) -> list[StopCheck]:
    parts, rule = _partitions(snapshot, min_isr_default, defaults)
    return [_check(snapshot, parts, rule, b, snapshot.alive_broker_ids, False) for b in known_brokers(snapshot)]


# --- the whole cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestartStep:
    position: int
    broker: int
    rack: str | None
    is_controller: bool
    check: StopCheck  # on the cluster as it will be then: every live replica caught up, earlier leaderships moved


@dataclass(frozen=True)
class RestartPlan:
    steps: tuple[RestartStep, ...]
    not_running: tuple[int, ...]  # registered nowhere: nothing to restart (start them first)
    under_replicated_now: int
    leaders_before: dict[int, int]
    leaders_after: dict[int, int]
    notes: tuple[str, ...] = field(default=())

    @property
    def keeps_available(self) -> bool:
        return all(s.check.keeps_available for s in self.steps)

    @property
    def order(self) -> list[int]:
        return [s.broker for s in self.steps]

    def to_dict(self) -> dict:
        return {"order": self.order, "keeps_available": self.keeps_available,
                "under_replicated_now": self.under_replicated_now, "not_running": list(self.not_running),
                "leaders_before": {str(k): v for k, v in self.leaders_before.items()},
                "leaders_after": {str(k): v for k, v in self.leaders_after.items()},
                "steps": [{"position": s.position, "broker": s.broker, "rack": s.rack,
                           "is_controller": s.is_controller, **{k: v for k, v in s.check.to_dict().items()
                                                                if k not in ("broker", "rack", "is_controller",
                                                                             "under_replicated", "registered")}}
                          for s in self.steps],
                "notes": list(self.notes)}


def restart_plan(snapshot: ClusterSnapshot, *, min_isr_default: int | None = None,
                 defaults: BrokerDefaults | None = None) -> RestartPlan:
    """One broker at a time: the running brokers by rack then id, the controller last (one controller move instead
    of one per restart). Each step is checked on the cluster as it will be after the wait between brokers (every
    live replica back in the ISR) with the leaderships of the brokers restarted before already moved."""
    alive = snapshot.alive_broker_ids
    parts, rule = _partitions(snapshot, min_isr_default, defaults)
    ctrl = snapshot.controller.broker_id if snapshot.controller else None
    rack = {b.id: b.rack for b in snapshot.brokers}
    order = sorted((b for b in alive if b != ctrl), key=lambda b: (rack.get(b) or "", b))
    if ctrl in alive:
        order.append(ctrl)
    urp_now = sum(1 for p, _ in parts if len(p.isr) < len(p.replicas) - len(p.adding_replicas))

    def caught_up(p: Partition) -> Partition:  # what "wait until under-replicated = 0" leaves
        isr = [r for r in p.isr if r in alive] + [r for r in p.replicas if r in alive and r not in p.isr]
        return replace(p, isr=tuple(isr))

    state = [(caught_up(p), mi) for p, mi in parts]
    leaders_before = Counter(p.leader for p, _ in parts if p.leader in alive)
    steps = []
    for i, b in enumerate(order, 1):
        check = _check(snapshot, state, rule, b, alive, True)
        steps.append(RestartStep(i, b, rack.get(b), b == ctrl, check))
        moved = {(m.topic, m.partition): m.to for m in check.leader_moves if m.to is not None}
        state = [(replace(p, leader=moved.get((p.topic, p.partition), p.leader)), mi) for p, mi in state]
    leaders_after = Counter(p.leader for p, _ in state if p.leader in alive)
    ids = sorted(alive)
    notes = []
    if urp_now:
        notes.append(f"{urp_now} partition(s) are under-replicated now: wait until 0 before the first broker")
    not_running = tuple(sorted(set(snapshot.broker_by_id) - alive))
    if not_running:
        notes.append(f"broker(s) {', '.join(map(str, not_running))} are not running: their replicas stay out of the "
                     "ISRs, so fewer in-sync replicas remain during each step")
    if not all(s.check.keeps_available for s in steps):
        notes.append("some partitions cannot stay available in any order (replication factor 1, or their other "
                     "replicas are down): they are listed per step")
    if any(s.check.leader_moves for s in steps):
        notes.append("leaderships do not move back by themselves (auto.leader.rebalance.enable=false, or until its "
                     "next check): run a preferred-leader election at the end (python -m core elect --all)")
    return RestartPlan(tuple(steps), not_running, urp_now, {b: leaders_before.get(b, 0) for b in ids},
                       {b: leaders_after.get(b, 0) for b in ids}, tuple(notes))


__all__ = ["AtRisk", "LeaderMove", "StopCheck", "check_stop", "check_all", "RestartStep", "RestartPlan",
           "restart_plan", "require_broker", "known_brokers"]
