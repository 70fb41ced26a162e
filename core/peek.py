"""Peeking at a partition's messages: what to read (bounds) and how a message is shown (text, never markup).

Pure: core.kafka.peek reads the records through the brokers and hands them here as plain data.

* Where to start: the last N messages (latest - N, not before the earliest offset), an offset, or the first message
  whose timestamp is at or after a time (ListOffsets by time, as `offsets_for_times` / kafka-console-consumer's
  tools do). At most `max_messages` messages and `max_bytes` bytes (keys, values and headers) are returned; the
  message that crosses the byte bound is the last one returned, cut to what fits.
* How: every key, value and header value is shown as text. UTF-8 when it decodes and holds no control character
  but tab and newlines (JSON pretty-printed when it parses as an object or an array), else hex. The dashboard draws it with st.code / st.dataframe and the CLI
  prints it: nothing is ever rendered as markdown or HTML.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Sequence

from core.errors import ValidationError

LAST, OFFSET, TIME = "last", "offset", "time"
MODES = (LAST, OFFSET, TIME)
DEFAULT_MESSAGES = 20
MAX_MESSAGES = 500
DEFAULT_BYTES = 1 << 20  # 1 MiB
MAX_BYTES = 16 << 20
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


@dataclass(frozen=True)
class PeekRequest:
    """What to read: `mode` last (`value` = N), offset (`value` = the first offset) or time (`value` = ms since the
    epoch); bounded by `max_messages` and `max_bytes`."""

    topic: str
    partition: int
    mode: str
    value: int
    max_messages: int = DEFAULT_MESSAGES
    max_bytes: int = DEFAULT_BYTES

    def describe(self) -> str:
        """One line for the audit store and the page: what was asked, never what was read."""
        where = f"{self.topic}-{self.partition}"
        if self.mode == LAST:
            return f"the last {self.value:,} message(s) of {where}"
        if self.mode == OFFSET:
            return f"up to {self.max_messages:,} message(s) of {where} from offset {self.value:,}"
        return f"up to {self.max_messages:,} message(s) of {where} from {format_time(self.value)}"


def request(topic: str, partition: int, *, last: int | None = None, offset: int | None = None,
            from_time: str | int | None = None, max_messages: int | None = None,
            max_bytes: int | None = None) -> PeekRequest:
    """A validated PeekRequest: exactly one of `last`, `offset`, `from_time`; ValidationError otherwise."""
    if not isinstance(topic, str) or not topic.strip():
        raise ValidationError("give the topic to peek at")
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise ValidationError(f"the partition must be a number >= 0, got {partition!r}")
    given = [(m, v) for m, v in ((LAST, last), (OFFSET, offset), (TIME, from_time)) if v is not None]
    if len(given) != 1:
        raise ValidationError("give exactly one of --last N, --offset O or --from-time TIME",
                              hint="--last 20 reads the newest 20 messages")
    mode, raw = given[0]
    limit = _bounded("max messages", max_messages, DEFAULT_MESSAGES, MAX_MESSAGES)
    nbytes = _bounded("max bytes", max_bytes, DEFAULT_BYTES, MAX_BYTES)
    if mode == LAST:
        value = _bounded("--last", raw, DEFAULT_MESSAGES, MAX_MESSAGES)
        limit = value
    elif mode == OFFSET:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise ValidationError(f"--offset must be an offset >= 0, got {raw!r}")
        value = raw
    else:
        value = parse_time(raw)
    return PeekRequest(topic.strip(), partition, mode, value, limit, nbytes)


def _bounded(what: str, value: int | None, default: int, most: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ValidationError(f"{what} must be between 1 and {most:,}, got {value!r}",
                              hint=f"Keel reads at most {most:,} per peek; read further from a later offset")
    return value


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$")


def parse_time(text: str | int) -> int:
    """ISO 8601 (`2026-11-26T10:00:00Z`, `2026-11-26T10:00:00.250+01:00`, `2026-11-26`) or milliseconds since the
    epoch -> ms since the epoch. A time without a zone is UTC (Kafka's tools take the JVM's zone: say it)."""
    if isinstance(text, int) and not isinstance(text, bool):
        ms = text
    else:
        s = str(text).strip()
        if s.isdigit():
            ms = int(s)
        elif _ISO.match(s):
            try:
                when = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T"))
            except ValueError as e:
                raise ValidationError(f"--from-time {s!r} is not a date and time: {e}") from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            ms = int(when.timestamp() * 1000)
        else:
            raise ValidationError(f"--from-time {s!r} is not a time",
                                  hint="ISO 8601 such as 2026-11-26T10:00:00Z (UTC unless a zone is given), or "
                                       "milliseconds since the epoch")
    if ms < 0:
        raise ValidationError(f"--from-time must not be before 1970, got {ms} ms")
    return ms


def format_time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                                          "Z")


# --- where to read ----------------------------------------------------------------------------------------------


def start_offset(req: PeekRequest, earliest: int, latest: int, by_time: int | None = None) -> int | None:
    """The first offset to read, or None when there is nothing to read (an empty partition, a time after the last
    message). An offset outside [earliest, latest] is a ValidationError with the range."""
    if req.mode == LAST:
        return max(earliest, latest - req.value) if latest > earliest else None
    if req.mode == OFFSET:
        if not earliest <= req.value <= latest:
            raise ValidationError(f"offset {req.value:,} is out of range for {req.topic}-{req.partition}: its "
                                  f"messages are at offsets {earliest:,} to {latest - 1:,}" if latest > earliest else
                                  f"offset {req.value:,} is out of range for {req.topic}-{req.partition}: it holds "
                                  f"no message (its next offset is {latest:,})",
                                  hint="--last N reads the newest messages")
        return req.value if req.value < latest else None
    return None if by_time is None or by_time >= latest else max(by_time, earliest)


# --- what was read -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One record as read from the partition: bytes, not yet shown."""

    offset: int
    timestamp: int | None
    timestamp_type: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value or b"") + sum(len(k.encode()) + len(v or b"")
                                                                     for k, v in self.headers)


@dataclass(frozen=True)
class PeekResult:
    request: PeekRequest
    earliest: int
    latest: int
    start: int | None
    messages: tuple[Message, ...] = ()
    truncated: bool = False  # the byte bound cut the last message
    stopped: str = ""  # why reading stopped before the end of the partition (a bound), "" when it reached it
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def bytes(self) -> int:
        return sum(m.size for m in self.messages)

    def summary(self) -> str:
        """What the audit store records: how many messages, which offsets, how many bytes. Never their contents."""
        if not self.messages:
            return f"no message read ({self.request.describe()})"
        first, last = self.messages[0].offset, self.messages[-1].offset
        return (f"{len(self.messages):,} message(s) of {self.request.topic}-{self.request.partition}, offsets "
                f"{first:,}-{last:,}, {self.bytes:,} bytes")


def bound(req: PeekRequest, messages: Sequence[Message]) -> tuple[tuple[Message, ...], bool, str]:
    """At most max_messages and max_bytes of `messages` (in offset order): the kept ones, whether the last one was
    cut, and which bound stopped it ("" none)."""
    out: list[Message] = []
    used = 0
    for m in messages:
        if len(out) >= req.max_messages:
            return tuple(out), False, f"{req.max_messages:,} messages"
        if used + m.size > req.max_bytes:
            if not out:  # one message bigger than the bound: shown cut to it
                room = req.max_bytes - len(m.key or b"")
                cut = Message(m.offset, m.timestamp, m.timestamp_type, m.key, (m.value or b"")[:max(room, 0)],
                              ())
                return (cut,), True, f"{req.max_bytes:,} bytes"
            return tuple(out), False, f"{req.max_bytes:,} bytes"
        out.append(m)
        used += m.size
    return tuple(out), False, ""


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # control characters but tab and newlines


def show_bytes(data: bytes | None) -> tuple[str, str]:
    """(text, how): UTF-8 text ("text"), pretty-printed JSON ("json"), hex ("hex") or null ("null")."""
    if data is None:
        return "null", "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex(" "), "hex"
    if _CONTROL.search(text):  # ESC sequences would drive a terminal (the CLI prints it): binary, shown as hex
        return data.hex(" "), "hex"
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False), "json"
        except ValueError:
            pass
    return text, "text"


def rows(messages: Sequence[Message]) -> list[dict]:
    """The messages as plain rows of text (the page's table, the CLI's --json)."""
    out = []
    for m in messages:
        key, key_as = show_bytes(m.key)
        value, value_as = show_bytes(m.value)
        out.append({"offset": m.offset, "timestamp": format_time(m.timestamp),
                    "timestamp_ms": m.timestamp, "timestamp_type": TIMESTAMP_TYPES.get(m.timestamp_type, "-")
                    if m.timestamp_type is not None else "-",
                    "key": key, "key_format": key_as, "value": value, "value_format": value_as,
                    "headers": [{"key": show_bytes(k.encode())[0], "value": show_bytes(v)[0]} for k, v in m.headers],
                    "bytes": m.size})
    return out


__all__ = ["LAST", "OFFSET", "TIME", "MODES", "DEFAULT_MESSAGES", "MAX_MESSAGES", "DEFAULT_BYTES", "MAX_BYTES",
           "Message", "PeekRequest", "PeekResult", "bound", "format_time", "parse_time", "request", "rows",
           "show_bytes", "start_offset"]
