"""Resetting a consumer group's offsets as `kafka-consumer-groups --reset-offsets` does (Kafka 3.9's
org.apache.kafka.tools.consumer.group.ConsumerGroupCommand: prepareOffsetsToReset, checkOffsetsRange, parseResetPlan,
exportOffsetsToCsv): the modes, the scopes, the dry-run table and its CSV. Pure: core.kafka.group_writes reads the
offsets it needs and writes the result.

What the tool does, and so Keel:
* only a group in state Empty or Dead is reset; any other state is refused with the tool's message;
* --to-offset, --shift-by and --from-file are clamped to [earliest, latest] (with the tool's warning);
  --to-earliest / --to-latest / --to-current take the log's offsets as they are; --to-datetime / --by-duration take
  the first offset whose timestamp is >= the time, and the latest offset where there is none ("is empty. Falling
  back to latest known offset.");
* --all-topics: the partitions the group has committed offsets for; --topic t: every partition of t; --topic t:0,2:
  those partitions;
* --by-duration is Java's Duration (PnDTnHnMn.nS) subtracted from now; --to-datetime is
  'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone, UTC when none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Mapping, Sequence

from core.errors import InputFileError, ValidationError

TP = tuple[str, int]
MODES = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration", "from-file")
VALUE_MODES = ("to-offset", "shift-by", "to-datetime", "by-duration", "from-file")  # modes that take a value
INACTIVE = ("Empty", "Dead")  # the states the tool resets


class GroupNotInactiveError(ValidationError):
    """The group has active members (Kafka's tool resets only an Empty or Dead group)."""


def inactive_message(group: str, state: str) -> str:
    return f"Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."


def require_inactive(group: str, state: str, what: str = "reset") -> None:
    if state not in INACTIVE:
        raise GroupNotInactiveError(inactive_message(group, state) if what == "reset" else
                                    f"Cannot {what} consumer group '{group}': it has active members (state {state}).",
                                    hint="stop the group's consumers (every member must leave), then try again")


@dataclass(frozen=True)
class ResetSpec:
    """One reset mode and its value: an offset or shift (int), a time in ms (to-datetime, by-duration: resolved
    by `resolve_time`), or a {partition: offset} plan (from-file)."""

    mode: str
    offset: int | None = None  # to-offset, shift-by
    timestamp_ms: int | None = None  # to-datetime, by-duration (already resolved against now)
    plan: tuple[tuple[TP, int], ...] = ()  # from-file
    text: str = ""  # what the person typed, for the audit and the page

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValidationError(f"unknown reset mode {self.mode!r}: choose one of {', '.join(MODES)}")

    @property
    def needs_time(self) -> bool:
        return self.mode in ("to-datetime", "by-duration")

    def describe(self) -> str:
        return f"--{self.mode}" + (f" {self.text}" if self.text else "")


def spec(mode: str, value: str | None = None, *, group: str = "", now_ms: int | None = None) -> ResetSpec:
    """A ResetSpec from the tool's option and its text value (a CSV's text for from-file; `group` picks its rows)."""
    mode = mode.removeprefix("--")
    if mode not in MODES:
        raise ValidationError(f"unknown reset mode {mode!r}: choose one of {', '.join(MODES)}")
    if mode in VALUE_MODES and (value is None or not str(value).strip()):
        raise ValidationError(f"--{mode} needs a value")
    if mode not in VALUE_MODES:
        return ResetSpec(mode)
    text = str(value).strip()
    if mode in ("to-offset", "shift-by"):
        try:
            n = int(text)
        except ValueError:
            raise ValidationError(f"--{mode} takes a whole number, got {text!r}") from None
        if not -(2**63) <= n < 2**63:
            raise ValidationError(f"--{mode} {text} is out of range (a Java long)")
        return ResetSpec(mode, offset=n, text=text)
    if mode == "to-datetime":
        return ResetSpec(mode, timestamp_ms=parse_datetime(text), text=text)
    if mode == "by-duration":
        if now_ms is None:
            raise ValidationError("--by-duration needs the current time")
        return ResetSpec(mode, timestamp_ms=now_ms - parse_duration_ms(text), text=text)
    return ResetSpec(mode, plan=tuple(sorted(parse_csv(str(value), group).items())), text="(CSV)")


# --- the tool's formats -----------------------------------------------------------------------------------------

_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse (ISO-8601 PnDTnHnMn.nS, signs allowed) in milliseconds, as --by-duration takes it."""
    m = _DURATION.fullmatch(text.strip())
    if not m or (m.group(3) is not None and m.group(3).upper() == "T") or \
            not any(m.group(i) is not None for i in (2, 4, 5, 6)):
        raise ValidationError(f"--by-duration {text!r} is not a duration: the format is PnDTnHnMnS (ISO-8601, "
                              "e.g. PT1H, P1DT12H, PT30M)")
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    frac = (m.group(7) or "").ljust(9, "0")
    nanos = int(frac) if m.group(6) is not None else 0
    if (m.group(6) or "").startswith("-"):
        nanos = -nanos
    total_ns = ((days * 86400 + hours * 3600 + minutes * 60 + seconds) * 10**9 + nanos)
    if m.group(1) == "-":
        total_ns = -total_ns
    return total_ns // 10**6  # floored, as Duration.toMillis (its nanos are normalised to be positive)


_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?"
                       r"(Z|[+-]\d{2}(?::?\d{2})?)?")


def parse_datetime(text: str) -> int:
    """Kafka's Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone (Z, +HH, +HHMM, +HH:MM), UTC when
    none; epoch milliseconds. (Keel also takes it without the milliseconds.)"""
    m = _DATETIME.fullmatch(text.strip())
    if not m:
        raise ValidationError(f"--to-datetime {text!r} is not a date-time: the format is YYYY-MM-DDTHH:mm:SS.sss "
                              "(UTC unless a zone follows: Z, +02:00)")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    ms = int((m.group(7) or "0").ljust(3, "0"))
    zone = m.group(8) or "Z"
    if zone == "Z":
        tz = timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0)))
    try:
        when = datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=tz)
    except ValueError as e:
        raise ValidationError(f"--to-datetime {text!r} is not a date-time: {e}") from None
    return int(when.replace(microsecond=0).timestamp()) * 1000 + ms


def parse_csv(text: str, group: str) -> dict[TP, int]:
    """The tool's CSV (--export, --from-file): `topic,partition,offset` lines for one group, or
    `group,topic,partition,offset` lines (only `group`'s rows are kept). A bad line is an error naming it."""
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").split("\n") if ln.strip()]
    if not lines:
        raise InputFileError("the reset CSV is empty: it holds topic,partition,offset lines (what "
                             "kafka-consumer-groups --reset-offsets --export prints)")
    with_group = lines[0].count(",") >= 3  # a topic name has no comma; a group id may
    out: dict[TP, int] = {}
    for n, line in enumerate(lines, 1):
        cols = line.rsplit(",", 3) if with_group else line.rsplit(",", 2)
        want = 4 if with_group else 3
        if len(cols) != want:
            raise InputFileError(f"line {n} of the reset CSV is not {'group,' if with_group else ''}"
                                 f"topic,partition,offset: {line!r}")
        if with_group:
            g, topic, part, off = cols
            if g != group:
                continue
        else:
            topic, part, off = cols
        try:
            p, o = int(part), int(off)
        except ValueError:
            raise InputFileError(f"line {n} of the reset CSV has a partition or offset that is not a number: "
                                 f"{line!r}") from None
        if not topic or p < 0:
            raise InputFileError(f"line {n} of the reset CSV names no topic or a negative partition: {line!r}")
        out[(topic, p)] = o
    if not out:
        raise InputFileError(f"No reset plan for group {group} found")  # the tool's words
    return out


def export_csv(offsets: Mapping[TP, int], group: str | None = None) -> str:
    """The tool's --export: one `topic,partition,offset` line per partition (with `group,` first when given)."""
    prefix = f"{group}," if group is not None else ""
    return "".join(f"{prefix}{t},{p},{o}\n" for (t, p), o in sorted(offsets.items()))


def parse_topic_scope(values: Sequence[str]) -> list[tuple[str, tuple[int, ...] | None]]:
    """--topic values: `t` (every partition) or `t:0,1,2` (those), as the tool splits them."""
    out: list[tuple[str, tuple[int, ...] | None]] = []
    for v in values:
        if ":" not in v:
            if not v.strip():
                raise ValidationError("--topic needs a topic name")
            out.append((v.strip(), None))
            continue
        parts = v.split(":")
        if len(parts) != 2 or not parts[0]:
            raise ValidationError(f"Invalid topic arg '{v}', expected topic name and partitions")
        try:
            ps = tuple(int(x) for x in parts[1].split(","))
        except ValueError:
            raise ValidationError(f"Invalid partition in topic arg '{v}': partitions are numbers (t:0,1,2)") from None
        if any(p < 0 for p in ps):
            raise ValidationError(f"Invalid partition in topic arg '{v}': a partition is 0 or more")
        out.append((parts[0], ps))
    return out


# --- the plan ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetRow:
    topic: str
    partition: int
    current: int | None  # the committed offset now (None: nothing committed)
    new: int
    log_end: int | None
    note: str | None = None  # the tool's warning (clamped, no message at that time)

    @property
    def lag_after(self) -> int | None:
        return None if self.log_end is None else max(0, self.log_end - self.new)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current": self.current, "new": self.new,
                "log_end": self.log_end, "lag_after": self.lag_after, "note": self.note}


@dataclass(frozen=True)
class ResetPlan:
    group: str
    state: str
    spec: ResetSpec
    rows: tuple[ResetRow, ...]  # sorted by topic, partition

    @property
    def new_offsets(self) -> dict[TP, int]:
        return {(r.topic, r.partition): r.new for r in self.rows}

    @property
    def previous(self) -> dict[TP, int | None]:
        return {(r.topic, r.partition): r.current for r in self.rows}

    @property
    def changed(self) -> int:
        return sum(1 for r in self.rows if r.new != r.current)

    def to_dict(self) -> dict:
        return {"group": self.group, "state": self.state, "mode": self.spec.describe(),
                "partitions": [r.to_dict() for r in self.rows]}


@dataclass(frozen=True)
class Offsets:
    """What the brokers say about the partitions in scope: the group's state and committed offsets, each partition's
    earliest and latest offset (None: the brokers could not tell), and for a time mode the first offset at or after
    the time (None: no message that late)."""

    state: str
    committed: Mapping[TP, int]
    earliest: Mapping[TP, int | None]
    latest: Mapping[TP, int | None]
    by_time: Mapping[TP, int | None] | None = None


def partitions_in_scope(spec_: ResetSpec, *, all_topics: bool, topics: Sequence[tuple[str, tuple[int, ...] | None]],
                        committed: Mapping[TP, int], partition_counts: Mapping[str, int]) -> list[TP]:
    """The tool's getPartitionsToReset (and, for --from-file, the file's partitions)."""
    if spec_.mode == "from-file":
        return sorted(tp for tp, _ in spec_.plan)
    if all_topics:
        return sorted(committed)
    if not topics:
        raise ValidationError("One of the reset scopes should be defined: --all-topics, --topic.")
    out: set[TP] = set()
    for t, ps in topics:
        if t not in partition_counts:
            raise ValidationError(f"Topic '{t}' does not exist (UnknownTopicOrPartitionException)")
        count = partition_counts[t]
        for p in (range(count) if ps is None else ps):
            if p >= count:
                raise ValidationError(f"Partition {t}-{p} does not exist: topic {t} has {count} partition(s)")
            out.add((t, p))
    return sorted(out)


def _clamp(tp: TP, offset: int, o: Offsets) -> tuple[int, str | None]:
    """checkOffsetsRange: above the latest -> latest, below the earliest -> earliest, with the tool's warning."""
    end, start = o.latest.get(tp), o.earliest.get(tp)
    name = f"{tp[0]}-{tp[1]}"
    if end is not None and offset > end:
        return end, f"New offset ({offset}) is higher than latest offset for topic partition {name}. " \
                    f"Value will be set to {end}"
    if start is not None and offset < start:
        return start, f"New offset ({offset}) is lower than earliest offset for topic partition {name}. " \
                      f"Value will be set to {start}"
    return offset, None


def _known(value: int | None, what: str, tp: TP) -> int:
    if value is None:
        raise ValidationError(f"Error getting {what} of topic partition: {tp[0]}-{tp[1]}",
                              hint="the partition has no leader, or the topic was deleted: check kafka-topics "
                                   "--describe, then try again")
    return value


def plan_reset(group: str, spec_: ResetSpec, partitions: Sequence[TP], o: Offsets) -> ResetPlan:
    """prepareOffsetsToReset: the new offset of every partition in scope, with the old one and the lag it leaves.
    Raises GroupNotInactiveError for a group with members (the tool's rule and message)."""
    require_inactive(group, o.state)
    file_plan = dict(spec_.plan)
    if spec_.mode == "from-file":  # the file names the partitions (getPartitionsToReset gives none for it)
        partitions = list(file_plan)
    rows = []
    for tp in sorted(set(partitions)):
        note = None
        current = o.committed.get(tp)
        if spec_.mode == "to-earliest":
            new = _known(o.earliest.get(tp), "starting offset", tp)
        elif spec_.mode == "to-latest":
            new = _known(o.latest.get(tp), "ending offset", tp)
        elif spec_.mode == "to-current":
            new = current if current is not None else _known(o.latest.get(tp), "ending offset", tp)
        elif spec_.mode == "to-offset":
            new, note = _clamp(tp, int(spec_.offset), o)
        elif spec_.mode == "shift-by":
            if current is None:
                raise ValidationError(f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current "
                                      "committed offset")
            new, note = _clamp(tp, current + int(spec_.offset), o)
        elif spec_.mode == "from-file":
            new, note = _clamp(tp, file_plan[tp], o)
        else:  # to-datetime, by-duration
            found = (o.by_time or {}).get(tp)
            if found is None:
                new = _known(o.latest.get(tp), "offset by timestamp", tp)
                note = f"Partition {tp[1]} from topic {tp[0]} is empty. Falling back to latest known offset."
            else:
                new = found
        rows.append(ResetRow(tp[0], tp[1], current, new, o.latest.get(tp), note))
    return ResetPlan(group, o.state, spec_, tuple(rows))


def format_plan(plan: ResetPlan) -> str:
    """The tool's dry-run table (GROUP TOPIC PARTITION NEW-OFFSET) with the old offset and the lag it leaves."""
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-END-OFFSET", "LAG-AFTER"]

    def cell(v: object) -> str:
        return "-" if v is None else str(v)
    table = [header] + [[plan.group, r.topic, str(r.partition), cell(r.current), str(r.new), cell(r.log_end),
                         cell(r.lag_after)] for r in plan.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [" ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join(lines)


def undo_offsets(rollback: Mapping) -> tuple[str, dict[TP, int], list[TP]]:
    """An audited reset's rollback (`{"action": "offsets-reset", "group", "offsets": [{"topic", "partition",
    "offset"}]}`, offset None where nothing was committed): (group, offsets to commit, partitions to delete)."""
    if not isinstance(rollback, Mapping) or rollback.get("action") != "offsets-reset" or "group" not in rollback:
        raise ValidationError("this action has no consumer-offset undo (only offset resets and deletions record one)")
    commit: dict[TP, int] = {}
    delete: list[TP] = []
    for e in rollback.get("offsets") or ():
        tp = (str(e["topic"]), int(e["partition"]))
        if e.get("offset") is None:
            delete.append(tp)
        else:
            commit[tp] = int(e["offset"])
    return str(rollback["group"]), commit, sorted(delete)


def rollback_of(group: str, previous: Mapping[TP, int | None]) -> dict:
    return {"action": "offsets-reset", "group": group,
            "offsets": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(previous.items())]}


__all__ = ["MODES", "VALUE_MODES", "INACTIVE", "GroupNotInactiveError", "ResetSpec", "ResetRow", "ResetPlan",
           "Offsets", "spec", "parse_duration_ms", "parse_datetime", "parse_csv", "export_csv", "parse_topic_scope",
           "partitions_in_scope", "plan_reset", "format_plan", "inactive_message", "require_inactive",
           "undo_offsets", "rollback_of"]
