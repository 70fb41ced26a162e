"""Consumer groups and their lag, as `kafka-consumer-groups.sh --describe` shows them: per group its state and
members, per partition the committed offset, the log end offset and the lag (log end offset - committed offset),
and totals per group and per (group, topic).

core.kafka.groups fills these from the Admin API (listGroups, describeGroups, offsetFetch, listOffsets);
everything here is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from core.errors import ValidationError

SORT_KEYS = ("lag", "group", "topic", "partition", "committed", "log_end")


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    assignment: tuple[tuple[str, int], ...]  # sorted


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int | None  # None: nothing committed (the tool prints "-")
    log_end: int | None  # None: unknown (topic deleted, leader unavailable)
    member_id: str | None  # the member assigned the partition, if any
    client_id: str | None
    host: str | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)

    def to_dict(self) -> dict:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "committed": self.committed,
                "log_end": self.log_end, "lag": self.lag, "member_id": self.member_id, "client_id": self.client_id,
                "host": self.host}


@dataclass(frozen=True)
class Group:
    group_id: str
    state: str  # Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, Unknown
    protocol_type: str
    protocol: str
    coordinator: int | None
    members: tuple[Member, ...]
    partitions: tuple[PartitionLag, ...]  # sorted by topic, partition

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))

    def lag_by_topic(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.partitions:
            out[p.topic] = out.get(p.topic, 0) + (p.lag or 0)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict:
        return {"group": self.group_id, "state": self.state, "protocol_type": self.protocol_type,
                "protocol": self.protocol, "coordinator": self.coordinator, "total_lag": self.total_lag,
                "lag_by_topic": self.lag_by_topic(),
                "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                             "group_instance_id": m.instance_id,
                             "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]}
                            for m in self.members],
                "partitions": [p.to_dict() for p in self.partitions]}


def build_group(group_id: str, *, state: str, protocol_type: str = "consumer", protocol: str = "",
                coordinator: int | None = None, members: Sequence[Member] = (),
                committed: Mapping[tuple[str, int], int | None] | None = None,
                log_end: Mapping[tuple[str, int], int | None] | None = None) -> Group:
    """A group's rows as the tool prints them: every assigned partition (with its member) and every partition with
    a committed offset (without a member when none is assigned it)."""
    committed = dict(committed or {})
    log_end = dict(log_end or {})
    owner = {tp: m for m in members for tp in m.assignment}
    keys = sorted(set(owner) | set(committed))
    rows = tuple(PartitionLag(group_id, t, p, committed.get((t, p)), log_end.get((t, p)),
                              owner[(t, p)].member_id if (t, p) in owner else None,
                              owner[(t, p)].client_id if (t, p) in owner else None,
                              owner[(t, p)].host if (t, p) in owner else None) for t, p in keys)
    return Group(group_id, state, protocol_type, protocol, coordinator,
                 tuple(sorted(members, key=lambda m: m.member_id)), rows)


def lag_rows(groups: Iterable[Group], *, sort: str = "lag", descending: bool | None = None) -> list[PartitionLag]:
    """Every partition row of every group, sorted by `sort` (lag: largest first, unknown lag last)."""
    if sort not in SORT_KEYS:
        raise ValidationError(f"cannot sort by {sort!r}: choose one of {', '.join(SORT_KEYS)}")
    rows = [r for g in groups for r in g.partitions]
    desc = sort in ("lag", "committed", "log_end") if descending is None else descending
    base = sorted(rows, key=lambda r: (r.group, r.topic, r.partition))
    if sort in ("group", "topic", "partition"):
        order = {"group": lambda r: (r.group, r.topic, r.partition), "topic": lambda r: (r.topic, r.partition, r.group),
                 "partition": lambda r: (r.partition, r.topic, r.group)}[sort]
        return sorted(base, key=order, reverse=desc)
    known = [r for r in base if getattr(r, sort) is not None]
    unknown = [r for r in base if getattr(r, sort) is None]
    return sorted(known, key=lambda r: getattr(r, sort), reverse=desc) + unknown


def totals(groups: Iterable[Group]) -> list[dict]:
    """One row per (group, topic): partitions, committed partitions, total lag; largest lag first."""
    out = []
    for g in groups:
        by_topic: dict[str, list[PartitionLag]] = {}
        for r in g.partitions:
            by_topic.setdefault(r.topic, []).append(r)
        for topic, rows in sorted(by_topic.items()):
            out.append({"group": g.group_id, "state": g.state, "topic": topic, "partitions": len(rows),
                        "committed": sum(1 for r in rows if r.committed is not None),
                        "lag": sum(r.lag or 0 for r in rows),
                        "members": len({r.member_id for r in rows if r.member_id})})
    return sorted(out, key=lambda r: (-r["lag"], r["group"], r["topic"]))


def format_describe(groups: Sequence[Group], rows: Sequence[PartitionLag] | None = None) -> str:
    """kafka-consumer-groups.sh --describe's table (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG
    CONSUMER-ID HOST CLIENT-ID), "-" where the tool prints it; a note for groups without partitions."""
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID"]
    rows = list(rows if rows is not None else (r for g in groups for r in g.partitions))

    def cell(v: object) -> str:
        return "-" if v is None else str(v)
    table = [header] + [[r.group, r.topic, str(r.partition), cell(r.committed), cell(r.log_end), cell(r.lag),
                         cell(r.member_id), cell(r.host), cell(r.client_id)] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [" ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]
    for g in groups:
        if not g.partitions:
            lines.append(f"Consumer group '{g.group_id}' has no active members and no committed offsets "
                         f"(state {g.state}).")
    return "\n".join(lines)


__all__ = ["Member", "PartitionLag", "Group", "build_group", "lag_rows", "totals", "format_describe", "SORT_KEYS"]
