"""Kafka's state-change logs (`state-change.log`, logger `state.change.logger`) of several brokers, merged into one
timeline ordered by time, as Kafka's `kafka.tools.StateChangeLogMerger` (kafka-run-class kafka.tools.
StateChangeLogMerger) does, with each line's broker.

Kafka's merger keeps a line when it carries a log4j date (``yyyy-MM-dd HH:mm:ss,SSS``, anywhere in the line) inside
the time range and names a topic partition matching the filters; it orders lines by that date (an n-way merge of
the files). Its partition pattern is the Kafka 0.8 - 1.0 form ``[topic,partition]``; since Kafka 1.1 the lines say
``partition topic-3`` / ``Leader topic-3`` / ``Follower topic-3``, which Kafka 3.9's merger no longer matches. Keel
reads both forms. Ties keep the order of the files given, then the order of lines within a file (stable).

Each line's broker comes from its own log identifier (``[Controller id=1 epoch=2]``, ``[Broker id=3]``, or the 1.0
form ``Controller 1 epoch 2`` / ``Broker 3``), else from the label given with the file (``BROKER=path`` on the
command line, or a ``broker-<id>`` part of its name). Lines without a date continue the line before (stack traces)
and are kept with it.

Pure: text in, data out (no file is opened here; core/cli and the dashboard read the files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from core.errors import ValidationError

DATE_FORMAT = "%Y-%m-%d %H:%M:%S,%f"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})[,.](\d{3})")
_TOPIC = r"[a-zA-Z0-9._-]+"  # Kafka's Topic.LEGAL_CHARS
_OLD_TP = re.compile(rf"\[({_TOPIC}),( )*([0-9]+)\]")  # StateChangeLogMerger.topicPartitionRegex
_NEW_TP = re.compile(rf"\b(?:[Pp]artition|Leader|Follower|replica)\s+({_TOPIC})-([0-9]+)\b")
_BROKER = re.compile(r"\[(?:Broker|Controller|KafkaController|BrokerLifecycleManager|ReplicaManager) id=(\d+)"
                     r"|\b(?:Broker|Controller) (\d+)(?: epoch \d+)? ")
_LEVEL = re.compile(r"\]\s+(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s")
_LEADER = re.compile(r"\bLeader:(-?\d+)|\bleader=(-?\d+)|\bnew leader (-?\d+)|Current leader is (-?\d+)")
_EPOCH = re.compile(r"\bLeaderEpoch:(-?\d+)|\bleaderEpoch=(-?\d+)|\bleader epoch (-?\d+)")
_ISR = re.compile(r"\bISR:([\d,]*)|\bISR \[([\d, ]*)\]")
_ISR_EPOCHS = re.compile(r"isrWithBrokerEpoch=List\(((?:BrokerState\([^)]*\)(?:, )?)*)\)|\bisr=List\(([\d, ]*)\)")
STATE_LOGGER = "state.change.logger"
_LOGGER = re.compile(r"\(([A-Za-z_$][\w.$]*)\)\s*$")  # log4j's "(%c)" at the end of Kafka's default layout
_LABEL_BROKER = re.compile(r"broker[-_]?(\d+)", re.IGNORECASE)
MAX_FILE_BYTES = 256 * 2**20  # a state-change.log rolls at 20-100 MB; ten times that is not one file of it
MAX_FILES = 200


@dataclass(frozen=True)
class StateChange:
    time: datetime
    stamp: str  # the date as written ("2026-11-23 16:20:22,484")
    broker: int | None  # who logged it
    source: str  # the file's label
    line_no: int  # 1-based, in its file
    level: str | None
    topic: str | None
    partition: int | None
    kind: str  # a short classification (see _kind)
    leader: int | None  # the leader the line announces, when it names one
    leader_epoch: int | None
    isr: tuple[int, ...] | None
    text: str  # the whole line (continuation lines appended with "\n")

    def to_dict(self) -> dict:
        return {"time": self.stamp, "broker": self.broker, "source": self.source, "line": self.line_no,
                "level": self.level, "topic": self.topic, "partition": self.partition, "kind": self.kind,
                "leader": self.leader, "leader_epoch": self.leader_epoch,
                "isr": None if self.isr is None else list(self.isr), "text": self.text}


class NotAStateChangeLogError(ValidationError):
    """A file given as a state-change log that is not one (another log, not text, empty)."""


def parse_time(text: str, what: str = "time") -> datetime:
    """"2026-11-23 16:20:22,484" (Kafka's format), also with "." or "T", or without milliseconds / seconds."""
    raw = text.strip().strip('"')
    for fmt in (DATE_FORMAT, "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S,%f", "%Y-%m-%dT%H:%M:%S.%f",
                "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(raw, fmt)
        except ValueError:
            continue
    raise ValidationError(f"{what} {text!r} is not a time: expected Kafka's format yyyy-MM-dd HH:mm:ss,SSS "
                          "(e.g. 2026-11-23 16:20:22,484)")


def _date(m: re.Match) -> datetime:
    y, mo, d, h, mi, s, ms = (int(g) for g in m.groups())
    return datetime(y, mo, d, h, mi, s, ms * 1000)


def _first(m: re.Match | None) -> str | None:
    if m is None:
        return None
    return next((g for g in m.groups() if g is not None), None)


def _kind(text: str) -> str:
    low = text.lower()
    if re.search(r"\]\s+error\s", low):
        return "error"
    if "to offlinepartition" in low or "leader:-1," in low:
        return "no leader"
    if "changed partition" in low or "changed state of replica" in low:
        return "state change"
    if re.search(r"\bleader \S+ .*starts at leader epoch", text, re.IGNORECASE) or "become-leader transition" in low:
        return "became leader"
    if re.search(r"\bfollower \S+ starts at", low) or "become-follower request" in low:
        return "became follower"
    if re.search(r"removing replica \d+ from the isr", low):
        return "ISR shrink"
    if "state changed to" in low:
        return "ISR change"
    if "updatemetadata" in low or "metadata cache" in low:
        return "metadata"
    if "leaderandisr" in low:
        return "LeaderAndIsr"
    if "stopreplica" in low or "stop replica" in low:
        return "StopReplica"
    return "other"


def label_broker(label: str) -> int | None:
    """The broker a file label names: "2" / "2=..." / ".../broker-2/logs/state-change.log" -> 2."""
    if label.isdigit():
        return int(label)
    m = None
    for m in _LABEL_BROKER.finditer(label):
        pass
    return int(m.group(1)) if m else None


def parse_log(text: str, source: str, broker: int | None = None) -> list[StateChange]:
    """Every dated line of one state-change log, with its partition when it names one. Raises
    NotAStateChangeLogError (naming `source`) when the text is not a Kafka state-change log."""
    if "\x00" in text[:4096]:
        raise NotAStateChangeLogError(f"{source} is not a Kafka state-change log: it is binary, not text")
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise NotAStateChangeLogError(f"{source} is empty: a broker's state-change.log has one dated line per "
                                      "state change")
    out: list[StateChange] = []
    fallback = broker if broker is not None else label_broker(source)
    dated = state_lines = 0
    loggers: dict[str, int] = {}
    for i, line in enumerate(lines, 1):
        m = _DATE.search(line)
        if m is None or m.start() > 40:  # a continuation line (stack trace) of the entry before
            if out and line.strip():
                last = out[-1]
                out[-1] = StateChange(**{**last.__dict__, "text": last.text + "\n" + line})
            continue
        dated += 1
        logger = _LOGGER.search(line)
        if logger is not None:
            loggers[logger.group(1)] = loggers.get(logger.group(1), 0) + 1
        elif _BROKER.search(line):
            state_lines += 1
        topic, partition = None, None
        if tp := _NEW_TP.search(line):
            topic, partition = tp.group(1), int(tp.group(2))
        else:  # the 0.8 - 1.0 form; "[3,1]" is an ISR list there, not topic "3"
            tp = next((m for m in _OLD_TP.finditer(line) if not m.group(1).isdigit()), None)
            topic, partition = (tp.group(1), int(tp.group(3))) if tp else (None, None)
        who = _first(_BROKER.search(line))
        isr = _first(_ISR.search(line))
        if isr is None and (w := _ISR_EPOCHS.search(line)):  # LeaderAndIsr(... isrWithBrokerEpoch=List(BrokerState(..
            isr = ",".join(re.findall(r"brokerId=(\d+)", w.group(1))) if w.group(1) is not None else w.group(2)
        leader, epoch = _first(_LEADER.search(line)), _first(_EPOCH.search(line))
        level = _LEVEL.search(line)
        kind = _kind(line)
        logged_by = int(who) if who is not None else fallback
        if leader is None and kind == "became leader" and logged_by is not None:
            leader = str(logged_by)  # "[Broker id=1] Leader t-0 ... starts at leader epoch 3": broker 1 leads
        out.append(StateChange(
            time=_date(m), stamp=m.group(0), broker=logged_by, source=source,
            line_no=i, level=level.group(1) if level else None, topic=topic, partition=partition, kind=kind,
            leader=int(leader) if leader is not None else None, leader_epoch=int(epoch) if epoch is not None else None,
            isr=tuple(int(x) for x in re.split(r"[, ]+", isr) if x) if isr is not None else None, text=line))
    if dated == 0:
        raise NotAStateChangeLogError(
            f"{source} is not a Kafka state-change log: none of its {len(lines):,} line(s) carries a log4j date "
            "(yyyy-MM-dd HH:mm:ss,SSS)", hint="give the brokers' state-change.log files (in Kafka's log directory, "
                                              "kafka.logs.dir)")
    if STATE_LOGGER not in loggers and state_lines == 0:
        others = ", ".join(name for name, _ in sorted(loggers.items(), key=lambda kv: -kv[1])[:3])
        raise NotAStateChangeLogError(
            f"{source} is not a Kafka state-change log: its {dated:,} dated line(s) come from "
            + (f"other loggers ({others})" if others else "no state change (no [Controller id=..] or [Broker id=..] "
               "entry)"),
            hint="server.log and controller.log are other files: give the brokers' state-change.log")
    return out


@dataclass(frozen=True)
class Timeline:
    entries: tuple[StateChange, ...]  # ordered by time (stable: files in the order given, lines in file order)
    files: tuple[str, ...]
    lines_read: int  # dated lines in all files
    brokers: tuple[int, ...]  # brokers seen (from the lines or the labels)

    def partitions(self) -> list[tuple[str, int]]:
        return sorted({(e.topic, e.partition) for e in self.entries if e.topic is not None})

    def to_dict(self) -> dict:
        return {"files": list(self.files), "lines_read": self.lines_read, "brokers": list(self.brokers),
                "entries": [e.to_dict() for e in self.entries]}


def merge(logs: Sequence[tuple[str, str] | tuple[str, str, int | None]], *, topic: str | None = None,
          partitions: Iterable[int] | None = None, start: datetime | str | None = None,
          end: datetime | str | None = None, all_lines: bool = False) -> Timeline:
    """Merge `logs` ((label, text) or (label, text, broker)) into one timeline. Like Kafka's merger, only lines
    naming a partition are kept (`all_lines` keeps the others too, when no topic is asked for); `partitions` needs
    `topic`; `start` / `end` are inclusive."""
    if not logs:
        raise ValidationError("give at least one state-change log")
    if len(logs) > MAX_FILES:
        raise ValidationError(f"{len(logs)} files: Keel merges at most {MAX_FILES} state-change logs at once")
    parts = None if partitions is None else list(partitions)
    if parts is not None:
        if topic is None:
            raise ValidationError("partitions need a topic: give --topic with --partition (as Kafka's merger "
                                  "requires)")
        if any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in parts):
            raise ValidationError(f"partitions must be non-negative integers, got {parts}")
        twice = sorted({p for p in parts if parts.count(p) > 1})
        if twice:
            raise ValidationError("The list of partitions contains repeated entries: " + ",".join(map(str, twice)))
    lo = parse_time(start, "the start time") if isinstance(start, str) else start
    hi = parse_time(end, "the end time") if isinstance(end, str) else end
    if lo is not None and hi is not None and hi < lo:
        raise ValidationError(f"the end time {hi} is before the start time {lo}")
    wanted = None if parts is None else set(parts)
    entries: list[tuple[datetime, int, int, StateChange]] = []
    total = 0
    brokers: set[int] = set()
    for k, item in enumerate(logs):
        label, text = item[0], item[1]
        broker = item[2] if len(item) > 2 else None
        parsed = parse_log(text, label, broker)
        total += len(parsed)
        for e in parsed:
            if e.broker is not None:
                brokers.add(e.broker)
            if (lo is not None and e.time < lo) or (hi is not None and e.time > hi):
                continue
            if e.topic is None:
                if not all_lines or topic is not None:
                    continue
            elif (topic is not None and e.topic != topic) or (wanted is not None and e.partition not in wanted):
                continue
            entries.append((e.time, k, e.line_no, e))
    entries.sort(key=lambda x: x[:3])
    return Timeline(tuple(e for *_, e in entries), tuple(item[0] for item in logs), total, tuple(sorted(brokers)))


def format_line(e: StateChange) -> str:
    """One merged line: the broker first (Kafka's merger prints the bare line; Keel says whose it is)."""
    who = f"broker {e.broker}" if e.broker is not None else e.source
    return f"[{who}] {e.text}"


__all__ = ["StateChange", "Timeline", "NotAStateChangeLogError", "parse_log", "merge", "parse_time", "format_line",
           "label_broker", "DATE_FORMAT", "MAX_FILE_BYTES"]
