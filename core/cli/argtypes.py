"""argparse `type=` functions for the CLI's numbers: every number option is bounded and checked while the command
line is parsed, so a bad value is a usage error (exit 2) that names the option — argparse prefixes the message with
`argument --connect-timeout:` — before anything connects or writes.

Why not argparse's own int / float: int() refuses more than 4,300 digits with a message about
sys.set_int_max_str_digits, and argparse then echoes the whole value back; float() accepts nan, inf and -1 as
timeouts, which surfaced much later as "could not connect ... within nan s" or "timestamp out of range".
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

from core.errors import ValidationError
from core.numbers import quoted as shown

LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1  # Kafka's numbers are Java longs at most
MAX_CHARS = 40  # a longer option value is refused unread


def _read(text: str, convert: Callable[[str], int | float], refusal: str) -> int | float:
    """convert(text), unless the text is too long to be meant or does not convert: then `refusal`."""
    if len(text.strip()) > MAX_CHARS:
        raise argparse.ArgumentTypeError(refusal)
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(refusal) from None


def whole(text: str) -> int:
    """A whole number within a Java long, as int() reads it."""
    value = int(_read(text, int, f"invalid int value: {shown(text)}"))
    if not LONG_MIN <= value <= LONG_MAX:
        raise argparse.ArgumentTypeError(f"must be a whole number between {LONG_MIN:,} and {LONG_MAX:,}, "
                                         f"got {shown(text)}")
    return value


def seconds(maximum: float) -> Callable[[str], float]:
    """A number of seconds in (0, maximum]: not nan, inf, zero, negative or absurd."""

    def parse(text: str) -> float:
        refusal = f"must be a number of seconds in (0, {maximum:g}], got {shown(text)}"
        value = float(_read(text, float, refusal))
        if not (math.isfinite(value) and 0 < value <= maximum):
            raise argparse.ArgumentTypeError(refusal)
        return value

    parse.__name__ = "seconds"
    return parse


# The bounds of Keel's time options (seconds).
CONNECT = 300.0  # as keel.toml's connect_timeout (core.policy.config)
REQUEST = 3600.0  # one ZooKeeper write, one broker request
WAIT = 86_400.0  # waiting for the controller or the brokers to finish something


def id_list(text: str, option: str, what: str = "broker ids") -> tuple[int, ...]:
    """A comma-separated list of ids in an option's value, each as int() reads it and at most a Java int's ten
    digits; ValidationError naming `option` (the value quoted cut to a readable length) otherwise."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            if len(item.lstrip("+-")) > 10:
                raise ValueError(item)
            out.append(int(item))
        except ValueError:
            raise ValidationError(f"{option} must be comma-separated {what}, got {shown(text)}") from None
    return tuple(out)
