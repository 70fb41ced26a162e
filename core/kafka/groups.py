"""Consumer groups through Kafka's Admin API (listGroups, describeGroups, offsetFetch, listOffsets), as
`kafka-consumer-groups.sh --describe` reads them: into core.consumer_groups' pure dataclasses.

Uses core.kafka.admin's client and its error translation (kafka-python's exceptions never leave core.kafka).
"""

from __future__ import annotations

from typing import Sequence

from kafka import TopicPartition as _TP
from kafka.admin import OffsetSpec
from core.consumer_groups import Group, Member, build_group
from core.errors import ValidationError
from core.kafka.admin import KafkaAdmin, KafkaAdminError

MAX_GROUPS = 2000  # describe at most this many at once (a page or a command; the rest is named)


def list_group_ids(admin: KafkaAdmin) -> list[str]:
    with admin._translate("list the consumer groups"):
        found = admin._admin.list_groups()
    return sorted(str(g["group_id"]) for g in found)


def consumer_groups(admin: KafkaAdmin, group_ids: Sequence[str] | None = None) -> list[Group]:
    """The groups `group_ids` (default: every group of the cluster) with members, committed offsets and lag.
    A group that does not exist is an error with Kafka's message."""
    ids = list_group_ids(admin) if group_ids is None else sorted(set(group_ids))
    if len(ids) > MAX_GROUPS:
        raise ValidationError(f"{len(ids):,} consumer groups: Keel describes at most {MAX_GROUPS:,} at once",
                              hint="name the groups (--group)")
    if not ids:
        return []
    with admin._translate("describe the consumer groups"):
        described = admin._admin.describe_groups(ids)
    committed: dict[str, dict[tuple[str, int], int | None]] = {}
    for gid in ids:  # one group per request: brokers before 3.0 answer only one per OffsetFetch
        with admin._translate(f"fetch the committed offsets of consumer group '{gid}'"):
            offsets = admin._admin.list_group_offsets({gid: None}).get(gid, {})
        committed[gid] = {(tp.topic, tp.partition): (om.offset if om is not None and om.offset >= 0 else None)
                          for tp, om in offsets.items()}
    groups_members: dict[str, list[Member]] = {}
    for gid in ids:
        d = described.get(gid) or {}
        members = []
        for m in d.get("members") or ():
            assignment = m.get("member_assignment") or {}
            parts = tuple(sorted((str(a["topic"]), int(p)) for a in assignment.get("assigned_partitions") or ()
                                 for p in a.get("partitions") or ()))
            members.append(Member(str(m.get("member_id") or ""), str(m.get("client_id") or ""),
                                  str(m.get("client_host") or ""), m.get("group_instance_id"), parts))
        groups_members[gid] = members
        state = str(d.get("group_state") or "Unknown")
        if group_ids is not None and state == "Dead" and not members and not committed[gid]:
            raise ValidationError(f"Consumer group '{gid}' does not exist.")  # kafka-consumer-groups' message
    wanted = sorted({tp for gid in ids for tp in committed[gid]}
                    | {tp for gid in ids for m in groups_members[gid] for tp in m.assignment})
    ends = log_end_offsets(admin, wanted)
    out = []
    for gid in ids:
        d = described.get(gid) or {}
        out.append(build_group(gid, state=str(d.get("group_state") or "Unknown"),
                               protocol_type=str(d.get("protocol_type") or ""),
                               protocol=str(d.get("protocol_data") or ""), members=groups_members[gid],
                               committed=committed[gid], log_end=ends))
    return out


def log_end_offsets(admin: KafkaAdmin, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
    """(topic, partition) -> log end offset (listOffsets LATEST); None for a partition the brokers do not know
    (a deleted topic) or cannot answer for (no leader)."""
    if not partitions:
        return {}
    out: dict[tuple[str, int], int | None] = {}

    def ask(keys: Sequence[tuple[str, int]]) -> None:
        with admin._translate("read the log end offsets"):
            got = admin._admin.list_partition_offsets({_TP(t, p): OffsetSpec.LATEST for t, p in keys},
                                                      timeout_ms=int(admin.timeout * 1000))
        for tp, o in got.items():
            out[(tp.topic, tp.partition)] = o.offset if o.offset >= 0 else None

    try:
        ask(partitions)
    except KafkaAdminError:
        by_topic: dict[str, list[tuple[str, int]]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append((t, p))
        for keys in by_topic.values():  # one topic at a time: a deleted or leaderless topic spoils only itself
            try:
                ask(keys)
            except KafkaAdminError:
                out.update({k: None for k in keys})
    return {k: out.get(k) for k in partitions}


__all__ = ["consumer_groups", "list_group_ids", "log_end_offsets"]
