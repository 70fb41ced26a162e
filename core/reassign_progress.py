"""Progress of a running reassignment in bytes: what the new replicas hold against their leader, the copy rate
measured over a window of samples, and an ETA. Pure: the samples are taken by the edges (core.cluster.reassign_progress:
one describeLogDirs round per sample) and passed in; the CLI's `status` and the Reassign page's run panel both call
`progress` on them, so they show the same numbers for the same samples.

A Sample is self-contained: when it was taken, the partitions being reassigned then (`running`: replicas, adding,
removing, leader), the partitions seen running in an earlier sample and no longer running (`finished`: they count as
100 %, so the total of a followed reassignment never shrinks as partitions complete) and the size of every replica of
both on every broker. `record` appends a sample and drops those older than the window.

What is measured, per adding (new) replica: `copied` = its log size, at most the leader's (and, while it runs, never
less than in the sample before unless it lost more than half: a follower truncates its log to its high watermark when
the leader epoch changes, then fetches the same bytes again); `total` = the leader's log size (the leader keeps growing under traffic, so remaining = leader size - new replica size). The copy rate is the
growth of `copied` between the oldest sample in the window and the newest; the ETA divides the remaining bytes by how
fast the remaining shrinks (copy rate minus the leaders' growth: equal to the copy rate without traffic), and is None
with a reason while that is unknown or not positive.

Also the pure half of changing the throttle of a running reassignment (`reassigning_brokers`, `throttles_of`): the
brokers and throttled-replica lists Kafka's ReassignPartitionsCommand (--execute --additional --throttle) sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from core.errors import ReassignmentNotRunningError, ValidationError
from core.model import ClusterSnapshot
from core.plans import Throttles

TopicPartition = tuple[str, int]
ReplicaKey = tuple[int, str, int]  # (broker, topic, partition)

WINDOW = 60.0  # s: the copy rate is measured over the last minute of samples by default
SAMPLES_FORMAT = "keel.reassign-samples/1"
NO_REASSIGNMENT = "No reassignment is running"


@dataclass(frozen=True)
class Moving:
    """One partition being reassigned, as the controller reports it (replicas = origin + target while it runs)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...] = ()
    leader: int | None = None

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def origin(self) -> tuple[int, ...]:
        """The replicas it had: what the leader-side throttle covers."""
        return tuple(b for b in self.replicas if b not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.removing)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas),
                "adding": list(self.adding), "removing": list(self.removing), "leader": self.leader}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Moving:
        leader = d.get("leader")
        return cls(str(d["topic"]), int(d["partition"]), tuple(int(b) for b in d["replicas"]),
                   tuple(int(b) for b in d["adding"]), tuple(int(b) for b in d.get("removing") or ()),
                   None if leader is None else int(leader))


def running_of(snapshot: ClusterSnapshot) -> tuple[Moving, ...]:
    """The partitions a snapshot shows being reassigned: in /admin/reassign_partitions (ZooKeeper) or the controller's
    list (KRaft), or adding / removing replicas (one started through the Admin API leaves no /admin node). Before
    Kafka 2.4 the topic node has no adding_replicas: the target replicas not yet in the ISR are taken as adding."""
    targets = {(r.topic, r.partition): r.replicas for r in snapshot.in_progress.reassignment}
    out = []
    for p in snapshot.partitions():
        key = (p.topic, p.partition)
        if key not in targets and not p.adding_replicas and not p.removing_replicas:
            continue
        adding = p.adding_replicas
        if not adding and not p.removing_replicas and key in targets:
            adding = tuple(b for b in targets[key] if b not in p.isr)
            if not adding:
                # every target replica in sync: copied. Kafka 2.4+ clears the topic node's adding replicas a moment
                # before it takes the partition out of /admin/reassign_partitions; listed as running with nothing
                # to add, the partition's bytes left the totals (progress went back) until the node caught up
                continue
        # a broker's metadata may lag the controller's list: the adding replicas belong to the replicas anyway
        replicas = tuple(dict.fromkeys((*p.replicas, *adding)))
        out.append(Moving(p.topic, p.partition, replicas, tuple(adding), tuple(p.removing_replicas),
                          p.leader if p.leader >= 0 else None))
    return tuple(sorted(out, key=lambda m: m.key))


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch
    running: tuple[Moving, ...]
    finished: tuple[Moving, ...] = ()
    sizes: Mapping[ReplicaKey, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"at": self.at, "running": [m.to_dict() for m in self.running],
                "finished": [m.to_dict() for m in self.finished],
                "sizes": [[b, t, p, s] for (b, t, p), s in sorted(self.sizes.items())]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sample:
        return cls(float(d["at"]), tuple(Moving.from_dict(m) for m in d["running"]),
                   tuple(Moving.from_dict(m) for m in d.get("finished") or ()),
                   {(int(b), str(t), int(p)): int(s) for b, t, p, s in d["sizes"]})


def scope(running: Iterable[Moving], earlier: Sample | None) -> tuple[tuple[Moving, ...], tuple[Moving, ...]]:
    """(running, finished): a partition of `earlier` (running or finished there) not running now is finished."""
    running = tuple(sorted(running, key=lambda m: m.key))
    now = {m.key for m in running}
    finished: dict[TopicPartition, Moving] = {}
    if earlier is not None and not earlier.running and now and not now & {m.key for m in earlier.finished}:
        earlier = None  # a new reassignment after one that ended: the old one's partitions are not part of it
    if earlier is not None:
        for m in earlier.finished + earlier.running:
            if m.key not in now:
                finished[m.key] = m
    return running, tuple(finished[k] for k in sorted(finished))


def sample_of(at: float, running: Iterable[Moving], replica_sizes: Mapping[ReplicaKey, int],
              earlier: Sample | None = None) -> Sample:
    """A sample at `at` of `running`, with the partitions `earlier` followed that have finished since; the sizes kept
    are those of these partitions' replicas only."""
    running, finished = scope(running, earlier)
    keys = {m.key for m in running} | {m.key for m in finished}
    sizes = {k: v for k, v in replica_sizes.items() if (k[1], k[2]) in keys}
    if earlier is not None:  # a new replica the broker truncated a little is counted at the most it held
        for m in running:
            for b in m.adding:
                k, was = (b, m.topic, m.partition), earlier.sizes.get((b, m.topic, m.partition))
                if was is not None and was // 2 <= sizes.get(k, 0) < was:
                    sizes[k] = was
    return Sample(at, running, finished, sizes)


def record(samples: Sequence[Sample], sample: Sample, window: float = WINDOW) -> tuple[Sample, ...]:
    """`samples` with `sample` appended, keeping those within `window` seconds of it (and the newest one before that,
    so a rate is known whatever the sampling interval). A new reassignment (nothing in common with the last sample,
    which had nothing running) starts afresh."""
    kept = [s for s in samples if s.at < sample.at]
    if kept and not _keys(kept[-1]) & _keys(sample):
        kept = []  # nothing in common with the last sample: another reassignment (or none) since
    inside = [s for s in kept if sample.at - s.at <= window]
    before = [s for s in kept if sample.at - s.at > window][-1:]
    return tuple(before + inside + [sample])


def _keys(s: Sample) -> set[TopicPartition]:
    return {m.key for m in s.running} | {m.key for m in s.finished}


# --- progress ----------------------------------------------------------------------------------------------------


class _Share:
    """`remaining` and `fraction` of what has `copied` and `total` bytes (a partition, a broker, the whole run)."""

    @property
    def remaining(self) -> int:
        return self.total - self.copied

    @property
    def fraction(self) -> float:
        return self.copied / self.total if self.total else 1.0


@dataclass(frozen=True)
class ReplicaProgress:
    broker: int
    copied: int


@dataclass(frozen=True)
class PartitionProgress(_Share):
    topic: str
    partition: int
    leader: int | None
    leader_bytes: int  # the size of the leader's log: what each new replica must hold
    replicas: tuple[ReplicaProgress, ...]  # the adding replicas
    finished: bool
    rate: float | None  # B/s copied into its new replicas over the window

    @property
    def copied(self) -> int:
        return sum(r.copied for r in self.replicas)

    @property
    def total(self) -> int:
        return self.leader_bytes * len(self.replicas)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "leader": self.leader,
                "leader_bytes": self.leader_bytes, "copied": self.copied, "total": self.total,
                "remaining": self.remaining, "percent": round(100 * self.fraction, 2), "rate": _round(self.rate),
                "finished": self.finished,
                "replicas": [{"broker": r.broker, "copied": r.copied} for r in self.replicas]}


@dataclass(frozen=True)
class BrokerProgress(_Share):
    """What one target broker receives: its adding replicas."""

    broker: int
    partitions: int
    copied: int
    total: int
    rate: float | None

    def to_dict(self) -> dict:
        return {"broker": self.broker, "partitions": self.partitions, "copied": self.copied, "total": self.total,
                "remaining": self.remaining, "percent": round(100 * self.fraction, 2), "rate": _round(self.rate)}


@dataclass(frozen=True)
class Progress(_Share):
    at: float  # the newest sample's time
    partitions: tuple[PartitionProgress, ...]  # the slowest (least copied) first
    brokers: tuple[BrokerProgress, ...]
    rate: float | None  # B/s copied into the new replicas over the window
    growth: float | None  # B/s the leaders of these partitions grew over the window (traffic)
    eta: float | None  # s until the new replicas hold the leaders' bytes, at the rates measured
    eta_note: str  # why there is no ETA (or how it was computed)
    window: float  # s between the two samples the rates compare (0: one sample)
    samples: int

    @property
    def copied(self) -> int:
        return sum(p.copied for p in self.partitions)

    @property
    def total(self) -> int:
        return sum(p.total for p in self.partitions)

    @property
    def running(self) -> int:
        return sum(not p.finished for p in self.partitions)

    def to_dict(self) -> dict:
        return {"at": self.at, "copied": self.copied, "total": self.total, "remaining": self.remaining,
                "percent": round(100 * self.fraction, 2), "rate": _round(self.rate), "growth": _round(self.growth),
                "eta_seconds": _round(self.eta), "eta_note": self.eta_note, "window_seconds": round(self.window, 3),
                "samples": self.samples, "running": self.running, "finished": len(self.partitions) - self.running,
                "partitions": [p.to_dict() for p in self.partitions], "brokers": [b.to_dict() for b in self.brokers]}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def _leader_bytes(s: Sample, m: Moving) -> int:
    """The leader's log size in `s`; without it (a leader that moved, or is unknown) the largest replica not being
    added, else the largest replica."""
    if m.leader is not None and (m.leader, m.topic, m.partition) in s.sizes:
        return s.sizes[(m.leader, m.topic, m.partition)]
    sizes = [s.sizes.get((b, m.topic, m.partition)) for b in m.origin] or []
    sizes = [x for x in sizes if x is not None] or [v for (b, t, p), v in s.sizes.items() if (t, p) == m.key]
    return max(sizes, default=0)


def _copied(s: Sample, m: Moving, broker: int, finished: bool) -> tuple[int, int]:
    """(copied, leader bytes) of `m`'s new replica on `broker` in `s`: a finished partition's counts as whole."""
    lead = _leader_bytes(s, m)
    if finished:
        return lead, lead
    return min(s.sizes.get((broker, m.topic, m.partition), 0), lead), lead


def _state(s: Sample) -> dict[tuple[TopicPartition, int], tuple[int, int]]:
    """(partition, adding broker) -> (copied, leader bytes) in `s`."""
    out = {}
    for finished, group in ((False, s.running), (True, s.finished)):
        for m in group:
            for b in m.adding:
                out[(m.key, b)] = _copied(s, m, b, finished)
    return out


def _oldest_in_window(samples: Sequence[Sample], window: float) -> Sample | None:
    """The oldest sample within `window` of the newest, else the newest before it; None with one sample."""
    if len(samples) < 2:
        return None
    last = samples[-1]
    inside = [s for s in samples[:-1] if last.at - s.at <= window]
    return inside[0] if inside else samples[-2]


def progress(samples: Sequence[Sample], window: float = WINDOW) -> Progress:
    """The progress the newest of `samples` shows, with rates measured against the oldest one within `window`."""
    if not samples:
        raise ValidationError("no sample of the reassignment to measure: take one first")
    last = samples[-1]
    base = _oldest_in_window(samples, window)
    span = last.at - base.at if base is not None else 0.0
    now = _state(last)
    then = _state(base) if base is not None and span > 0 else None

    def rate(keys) -> float | None:
        if then is None:
            return None
        return sum(now[k][0] - then.get(k, (0, 0))[0] for k in keys) / span

    # one pass per partition; the sort keys computed once (100,000 moving partitions: bench/reassign_progress.py)
    keyed, by_broker, remaining = [], {}, 0
    for finished, group in ((False, last.running), (True, last.finished)):
        for m in group:
            lead = _leader_bytes(last, m)
            reps, copied, moved = [], 0, 0
            for b in m.adding:
                k = (m.key, b)
                c = now[k][0]
                reps.append(ReplicaProgress(b, c))
                copied += c
                if then is not None:
                    moved += c - then.get(k, (0, 0))[0]
                by_broker.setdefault(b, []).append(k)
            total = lead * len(m.adding)
            remaining += total - copied
            part = PartitionProgress(m.topic, m.partition, m.leader, lead, tuple(reps), finished,
                                     None if then is None else moved / span)
            # the slowest first: least copied, then most left
            keyed.append(((finished, copied / total if total else 1.0, copied - total, m.topic, m.partition), part))
    keyed.sort(key=lambda e: e[0])
    parts = [part for _, part in keyed]
    brokers = tuple(BrokerProgress(b, len(keys), sum(now[k][0] for k in keys), sum(now[k][1] for k in keys),
                                   rate(keys)) for b, keys in sorted(by_broker.items()))
    copy_rate = rate(now)
    growth = None if then is None else sum(now[k][1] - then.get(k, now[k])[1] for k in now) / span
    eta, note = _eta(remaining, copy_rate, growth, len(samples), span) if parts else (None, NO_REASSIGNMENT)
    return Progress(last.at, tuple(parts), brokers, copy_rate, growth, eta, note, span, len(samples))


def _eta(remaining: int, rate: float | None, growth: float | None, n: int, span: float) -> tuple[float | None, str]:
    if remaining <= 0:
        return 0.0, "every new replica holds its leader's bytes"
    if rate is None:
        return None, ("one sample so far: the copy rate needs a second one" if n < 2
                      else "the samples were taken at the same time: no rate")
    if rate <= 0:
        return None, (f"nothing was copied over the last {span:.0f} s: the copy is stalled (a target broker down, "
                      "or a throttle too low to let the next fetch through yet)")
    closing = rate - max(growth or 0.0, 0.0)
    if closing <= 0:
        return None, (f"the leaders grow as fast as the copy ({growth:,.0f} B/s written, {rate:,.0f} B/s copied): "
                      "at this throttle the new replicas never catch up; raise it")
    how = "remaining bytes / copy rate" if not growth or growth <= 0 else \
        "remaining bytes / (copy rate - the leaders' growth)"
    return remaining / closing, f"{how} over the last {span:.0f} s"


# --- the samples kept between runs (the CLI's --samples FILE, the page's session) --------------------------------


def samples_to_json(samples: Sequence[Sample], cluster: str) -> dict:
    return {"format": SAMPLES_FORMAT, "cluster": cluster, "samples": [s.to_dict() for s in samples]}


def samples_from_json(doc: Any, cluster: str | None = None) -> tuple[Sample, ...]:
    """The samples of a document `samples_to_json` wrote; ValidationError for another document or cluster."""
    if not isinstance(doc, dict) or doc.get("format") != SAMPLES_FORMAT:
        raise ValidationError(f"not a file of reassignment samples (expected \"format\": \"{SAMPLES_FORMAT}\")",
                              hint="give a file `status --samples FILE` wrote, or a new file name")
    if cluster is not None and doc.get("cluster") not in (None, cluster):
        raise ValidationError(f"the samples are of cluster {doc.get('cluster')}, not {cluster}",
                              hint="give each cluster its own --samples file")
    try:
        return tuple(sorted((Sample.from_dict(s) for s in doc.get("samples") or ()), key=lambda s: s.at))
    except (KeyError, TypeError, ValueError) as e:
        raise ValidationError(f"the samples file is damaged: {type(e).__name__}: {e}",
                              hint="delete it: the next status starts a new one") from None


# --- the throttle of a running reassignment ---------------------------------------------------------------------


def reassigning_brokers(running: Iterable[Moving]) -> tuple[int, ...]:
    """Kafka's calculateReassigningBrokers: every source and destination of the moves (origin and target replicas)."""
    return tuple(sorted({b for m in running for b in (*m.replicas, *m.adding, *m.removing)}))


def throttles_of(running: Sequence[Moving], rate: int) -> Throttles:
    """What ReassignPartitionsCommand --execute --additional --throttle RATE sets for the running moves: per topic
    the leader-side list (the origin replicas) and the follower-side one (the adding replicas), and the rate on every
    broker that moves data. Refused (typed) when nothing runs."""
    moves = [m for m in running if m.adding or m.removing]
    if not moves:
        raise ReassignmentNotRunningError(f"{NO_REASSIGNMENT}: there is no throttle to change; nothing was written",
                                          hint="set one when executing: execute --throttle BYTES_PER_S")
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    for m in moves:
        leader.setdefault(m.topic, set()).update(f"{m.partition}:{b}" for b in m.origin)
        follower.setdefault(m.topic, set()).update(f"{m.partition}:{b}" for b in m.adding)
    return Throttles({t: ",".join(sorted(v)) for t, v in leader.items()},
                     {t: ",".join(sorted(v)) for t, v in follower.items() if v}, reassigning_brokers(moves), rate)


@dataclass(frozen=True)
class ThrottleChanged:
    """What changing the throttle of a running reassignment did (both engines return it)."""

    action_id: int
    rate: int | None  # None: the throttle was removed
    previous: int | None  # the rate the brokers had, when they all had the same one (None: unthrottled, or mixed)
    previous_rates: Mapping[int, str | None]  # broker -> its leader.replication.throttled.rate before
    throttles: Throttles
    partitions: int


def previous_rate(rates: Mapping[int, str | None]) -> int | None:
    """The one rate every broker had (None when unthrottled or not the same on every broker)."""
    values = set(rates.values())
    if len(values) != 1:
        return None
    only = next(iter(values))
    return int(only) if only is not None and only.isdigit() else None


def throttle_record(throttles: Throttles, moving: Sequence[Moving], rate: int | None,
                    broker_configs: Mapping[str, Mapping[str, str]],
                    topic_configs: Mapping[str, Mapping[str, str]]) -> tuple[str, dict, dict[int, str | None]]:
    """(summary, payload, previous broker rates) of a throttle change, as both engines record it in History: the new
    rate ("throttle", what core.writes.recorded_throttle reads) and every value it replaces, so it can be undone."""
    from core.plans import FOLLOWER_RATE, FOLLOWER_THROTTLED, LEADER_RATE, LEADER_THROTTLED

    before = {b: {k: broker_configs.get(str(b), {}).get(k) for k in (LEADER_RATE, FOLLOWER_RATE)}
              for b in throttles.brokers}
    rates = {b: v[LEADER_RATE] for b, v in before.items()}
    old = previous_rate(rates)
    was = f"{old:,} B/s" if old is not None else "unthrottled" if not any(rates.values()) else "mixed rates"
    now = f"{rate:,} B/s" if rate else "unthrottled"
    summary = (f"replication throttle of the running reassignment ({len(moving)} partitions): {was} -> {now} on "
               f"brokers {','.join(map(str, throttles.brokers))}")
    topics = sorted(set(throttles.leader) | set(throttles.follower))
    payload = {"throttle": rate, "previous_throttle": old, "brokers": list(throttles.brokers),
               "previous": {"brokers": {str(b): v for b, v in before.items()},
                            "topics": {t: {k: topic_configs.get(t, {}).get(k)
                                           for k in (LEADER_THROTTLED, FOLLOWER_THROTTLED)} for t in topics}},
               "partitions": [[m.topic, m.partition] for m in moving]}
    return summary, payload, rates


def format_bytes(n: float | None) -> str:
    """1,234,567 -> "1.2 MB" (decimal units, as throttles are given in B/s)."""
    if n is None:
        return "—"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def format_seconds(s: float | None) -> str:
    if s is None:
        return "—"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def line(p: Progress) -> str:
    """The one line `status --watch` prints per interval."""
    eta = format_seconds(p.eta) if p.eta is not None else f"unknown ({p.eta_note})"
    return (f"{format_bytes(p.copied)} of {format_bytes(p.total)} copied ({100 * p.fraction:.1f} %), "
            f"rate {format_bytes(p.rate)}/s, ETA {eta}; {p.running} partition(s) moving, "
            f"{len(p.partitions) - p.running} finished")
