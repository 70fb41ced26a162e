"""Auto-throttle of a running reassignment (issue 28, item 3): the pure decision. No I/O: the loop
(core.cluster.auto_throttle) takes the samples, calls `decide`, and writes what it returns through the engines'
change_throttle.

The rule. A broker receiving new replicas (an adding replica of a moving partition) takes in, besides the copy:
  * the bytes producers write to the partitions it leads, and
  * the bytes it replicates as a follower of partitions that are not being copied to it (unthrottled: Kafka's
    follower throttle covers only the throttled replicas).
Both are unthrottled inbound and both grow the broker's logs, so the loop measures them together as the growth of
the log sizes (describeLogDirs, every replica on that broker) of every replica on it that is not being added there;
Keel cannot tell the two apart from log sizes alone without leadership, and both use the same network and disk, so
both are subtracted. Its headroom = BUDGET - that growth per second. Kafka's throttle is one rate (leader and
follower rates, set on every broker that moves data), so the rate written is the smallest headroom of the receiving
brokers, kept within [floor, ceiling]: each receiving broker's copy inbound then stays under its own headroom.
A replica's growth is counted from 0 up (a retention deletion or a truncation that shrinks a log in the interval
counts as no growth: that interval's figure is then a little low).

Written only when the new rate differs from the one in force by more than `margin` (a fraction of the current
rate), or when none is in force. Defaults: floor = BUDGET / 10 (a copy never stalls completely: a reassignment at
rate 0 never ends), ceiling = BUDGET (with no other traffic the copy alone may take the whole budget), margin 10 %,
interval 30 s.

A loop records a heartbeat in the audit store (core.audit.store: one row per loop); `liveness` judges a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from core.errors import ValidationError
from core.reassign_progress import Moving, ReplicaKey, format_bytes

INTERVAL = 30.0  # s between two measurements
MARGIN = 0.10  # a change smaller than this fraction of the current rate is not written
FLOOR_FRACTION = 10  # default floor = budget // 10
STALE_INTERVALS = 3  # a loop whose last beat is older than this many intervals (+ STALE_SLACK) is taken as dead
STALE_SLACK = 10.0


@dataclass(frozen=True)
class Policy:
    budget: int  # B/s a receiving broker may take in, all inbound together
    floor: int
    ceiling: int
    margin: float = MARGIN
    interval: float = INTERVAL

    def to_dict(self) -> dict:
        return {"budget": self.budget, "floor": self.floor, "ceiling": self.ceiling, "margin": self.margin,
                "interval": self.interval}


def policy(budget: int, floor: int | None = None, ceiling: int | None = None, margin: float = MARGIN,
           interval: float = INTERVAL) -> Policy:
    """The policy with its defaults filled in; ValidationError (nothing written) for a policy that cannot hold."""
    if budget is None or budget <= 0:
        raise ValidationError(f"--auto-throttle must be a positive number of bytes per second, got {budget}",
                              hint="the inbound budget of each receiving broker, e.g. 50000000 for 50 MB/s")
    floor = max(budget // FLOOR_FRACTION, 1) if floor is None else floor
    ceiling = budget if ceiling is None else ceiling
    if floor <= 0:
        raise ValidationError(f"--floor must be a positive number of bytes per second, got {floor}",
                              hint="a throttle of 0 stops the copy: the reassignment would never end")
    if ceiling < floor:
        raise ValidationError(f"--ceiling ({ceiling:,} B/s) is below --floor ({floor:,} B/s)",
                              hint="the rate is kept between the two: give a ceiling at least the floor")
    if not 0 <= margin < 1:
        raise ValidationError(f"--margin must be a fraction in [0, 1), got {margin}",
                              hint="0.1 writes a new rate only when it differs by more than 10 %")
    if interval <= 0:
        raise ValidationError(f"--interval must be positive, got {interval}")
    return Policy(int(budget), int(floor), int(ceiling), float(margin), float(interval))


@dataclass(frozen=True)
class Traffic:
    """One measurement: every replica's log size on the receiving brokers, and which of them are being added."""

    at: float
    sizes: Mapping[ReplicaKey, int]
    copying: frozenset[ReplicaKey] = frozenset()  # (broker, topic, partition) of the adding replicas
    receiving: tuple[int, ...] = ()  # brokers with an adding replica

    def to_dict(self) -> dict:
        return {"at": self.at, "receiving": list(self.receiving),
                "copying": sorted([list(k) for k in self.copying]),
                "sizes": [[b, t, p, s] for (b, t, p), s in sorted(self.sizes.items())]}


def traffic_of(at: float, running: Iterable[Moving], sizes: Mapping[ReplicaKey, int]) -> Traffic:
    """A Traffic of `running` (the partitions being reassigned) with the sizes of the replicas the receiving brokers
    hold (their whole describeLogDirs: the other replicas are the traffic to subtract)."""
    copying = frozenset((b, m.topic, m.partition) for m in running for b in m.adding)
    receiving = tuple(sorted({k[0] for k in copying}))
    wanted = set(receiving)
    return Traffic(at, {k: v for k, v in sizes.items() if k[0] in wanted}, copying, receiving)


@dataclass(frozen=True)
class BrokerInbound:
    broker: int
    other: float  # B/s into replicas not being added there (leaders' produce, followers' replication)
    copy: float  # B/s into its adding replicas
    headroom: float  # budget - other

    def to_dict(self) -> dict:
        return {"broker": self.broker, "other": round(self.other, 1), "copy": round(self.copy, 1),
                "headroom": round(self.headroom, 1)}


@dataclass(frozen=True)
class Decision:
    rate: int | None  # the rate to write; None: write nothing
    target: int | None  # the rate the rule gives (None when it cannot be measured)
    reason: str
    brokers: tuple[BrokerInbound, ...] = field(default=())
    done: bool = False  # nothing is being copied any more: the loop ends (and the throttles are removed)

    def to_dict(self) -> dict:
        return {"rate": self.rate, "target": self.target, "reason": self.reason, "done": self.done,
                "brokers": [b.to_dict() for b in self.brokers]}


def inbound(older: Traffic, newer: Traffic) -> tuple[BrokerInbound, ...] | None:
    """Per receiving broker of `newer`: the growth per second of its replicas not being added (other) and of those
    being added (copy) between the two measurements, headroom left at 0; None when no time passed. A replica being
    added in either measurement counts as copy (one that finished in between was copied for part of it)."""
    span = newer.at - older.at
    if span <= 0:
        return None
    copying = older.copying | newer.copying
    other: dict[int, float] = {b: 0.0 for b in newer.receiving}
    copy: dict[int, float] = {b: 0.0 for b in newer.receiving}
    for key, size in newer.sizes.items():
        b = key[0]
        if b not in other or key not in older.sizes:
            continue
        grown = max(size - older.sizes[key], 0)
        (copy if key in copying else other)[b] += grown
    return tuple(BrokerInbound(b, other[b] / span, copy[b] / span, 0.0) for b in newer.receiving)


def decide(older: Traffic | None, newer: Traffic, p: Policy, current: int | None) -> Decision:
    """The rate to write after measuring `older` -> `newer` with `current` in force (None: unthrottled), or None with
    the reason it writes nothing."""
    if not newer.receiving:
        return Decision(None, None, "nothing is being copied any more: the reassignment has finished", done=True)
    if older is None:
        if current is None:  # unthrottled before anything is measured: the floor, the one rate surely within budget
            return Decision(p.floor, p.floor, f"no measurement yet and no throttle in force: starting at the floor "
                                              f"({format_bytes(p.floor)}/s)")
        return Decision(None, None, "one measurement so far: the inbound needs a second one")
    measured = inbound(older, newer)
    if measured is None:
        return Decision(None, None, "the two measurements were taken at the same time: no rate")
    brokers = tuple(BrokerInbound(b.broker, b.other, b.copy, p.budget - b.other) for b in measured)
    tight = min(brokers, key=lambda b: (b.headroom, b.broker))
    raw = int(tight.headroom)
    target = min(max(raw, p.floor), p.ceiling)
    why = (f"broker {tight.broker} takes {format_bytes(tight.other)}/s besides the copy: budget "
           f"{format_bytes(p.budget)}/s leaves {format_bytes(max(tight.headroom, 0))}/s")
    if raw < p.floor:
        why += f", below the floor: held at {format_bytes(p.floor)}/s"
    elif raw > p.ceiling:
        why += f", above the ceiling: held at {format_bytes(p.ceiling)}/s"
    if current is None:
        return Decision(target, target, why + "; no throttle was in force", brokers)
    if abs(target - current) <= p.margin * current:
        return Decision(None, target, why + f"; within {p.margin:.0%} of the rate in force "
                                            f"({format_bytes(current)}/s): not written", brokers)
    return Decision(target, target, why + f"; was {format_bytes(current)}/s", brokers)


# --- loops' heartbeats (rows of core.audit.store) -----------------------------------------------------------------

ALIVE, DEAD, ENDED = "alive", "dead", "ended"


def liveness(ended: str | None, beat_age: float, interval: float, pid_alive: bool | None) -> str:
    """ENDED (the loop said so), DEAD (its process is gone on this host, or it has not beaten for STALE_INTERVALS
    intervals + STALE_SLACK s) or ALIVE. `pid_alive` is None when the loop ran on another host (only the beat tells)."""
    if ended:
        return ENDED
    if pid_alive is False or beat_age > STALE_INTERVALS * interval + STALE_SLACK:
        return DEAD
    return ALIVE


def describe_loop(row: Mapping, state: str, beat_age: float) -> str:
    """One line about a loop row (core.audit.store.ThrottleLoop.to_dict) for verify, status and the page."""
    rate = row.get("rate")
    last = f"last rate {format_bytes(rate)}/s" if rate else "no rate set yet"
    where = f"pid {row.get('pid')} on {row.get('host')}, started {row.get('started')} by {row.get('owner')}"
    if state == ALIVE:
        return (f"auto-throttle active: budget {format_bytes(row.get('budget'))}/s, {last}, last beat "
                f"{beat_age:.0f} s ago ({where})")
    if state == DEAD:
        # a loop that failed said why on its row (a killed one could not): the page and verify show it
        why = f"; its end: {row.get('end_reason')}" if row.get("end_reason") else ""
        return (f"an auto-throttle loop was running and is no longer alive ({where}; last beat {beat_age:.0f} s "
                f"ago{why}): the throttle it last set stays in place ({last}); verify removes it once the "
                "reassignment is complete, `auto-throttle` starts a new loop")
    return f"auto-throttle loop ended: {row.get('end_reason') or 'ended'} ({where})"


def newest(rows: Sequence[Mapping]) -> Mapping | None:
    return max(rows, key=lambda r: r["id"]) if rows else None
