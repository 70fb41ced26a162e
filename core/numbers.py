"""Numbers typed as text: the exact value, or a NumberFormatError that says what to type. Pure.

The dashboard's number fields are text fields read by these functions (dashboard.ui.int_field / float_field), not
Streamlit number inputs: a browser number input holds a JavaScript double, so it silently drops a whole number above
2**53 - 1 and silently keeps the previous value when one is outside its min / max. Here the operator's text is
either read exactly (a Python int, never through a float) or refused with a message naming the field.

Accepted: optional surrounding spaces, an optional sign, ASCII digits, optionally grouped in thousands by ',' or by
'_' (one of them, groups of three: "20,000", "1_000_000"); for decimals also a '.' fraction and an exponent
("12.5", "1e3"). Anything else is refused: "6.0" or "1e3" where a whole number belongs, "1,5" (a decimal comma
here would be read as 15), other digits than 0-9, "nan", "inf".

A field's bounds are checked here only where the engine has none: a value the engine bounds (partitions,
replication factor, a move budget ...) is passed on as typed, so the page refuses it with the engine's message,
the one the CLI prints.
"""

from __future__ import annotations

import math
import re

from core.errors import NumberFormatError

MAX_CHARS = 100  # longer text is refused unread (a number that long is never meant; int() has a digit limit too)
_GROUPED = r"[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,3}(?:_[0-9]{3})+"
_INT = re.compile(rf"[+-]?(?:{_GROUPED})")
_FLOAT = re.compile(rf"[+-]?(?:(?:{_GROUPED})(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INT_HINT = "digits only, e.g. 12 or 20,000; ',' or '_' may group thousands"
FLOAT_HINT = "digits with '.' for decimals, e.g. 12.5 or 1,000; ',' or '_' may group thousands"
_SHOWN = 40  # characters of the typed text quoted in a message


def format_number(value: int | float | None) -> str:
    """The text a field starts with for `value` ('' for None); parse_int / parse_float read it back unchanged."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _fmt(x: int | float) -> str:
    if isinstance(x, float) and not (x.is_integer() and abs(x) < 1e15):
        return f"{x:g}"
    return f"{int(x):,}"


def bounds_text(minimum: int | float | None, maximum: int | float | None) -> str:
    """" between 1 and 20,000", " of 0 or more", " of at most 5" or ''."""
    if minimum is not None and maximum is not None:
        return f" between {_fmt(minimum)} and {_fmt(maximum)}"
    if minimum is not None:
        return f" of {_fmt(minimum)} or more"
    if maximum is not None:
        return f" of at most {_fmt(maximum)}"
    return ""


def quoted(text: str, limit: int = _SHOWN) -> str:
    """`text` quoted in a message: whole when short, else its start and its length (a 5,000-digit number or a
    megabyte of config echoed back is not a message a person can read)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text):,} characters)"


def clip(text: str, limit: int = 60) -> str:
    """`text` unquoted (where Kafka's message shows a value bare): whole when short, else its start and length."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def _read(text: str | None, field: str, kind: str, pattern: re.Pattern, hint: str, bounds: str,
          optional: bool) -> str | None:
    """The text without spaces and separators, None when blank and optional; or the refusal."""
    stripped = (text or "").strip()
    if not stripped:
        if optional:
            return None
        raise NumberFormatError(f"{field} is empty: enter a {kind}{bounds}", field, text)
    if len(stripped) > MAX_CHARS:
        raise NumberFormatError(f"{field} must be a {kind}{bounds}, not {len(stripped):,} characters of text",
                                field, text, hint=f"at most {MAX_CHARS} characters")
    if not pattern.fullmatch(stripped):
        comma = kind == "number" and re.fullmatch(r"[+-]?[0-9]+,[0-9]+", stripped)
        raise NumberFormatError(f"{field} must be a {kind}{bounds}, not {_shown(stripped)}", field, text,
                                hint="',' separates thousands here: use '.' for decimals" if comma else hint)
    return stripped.replace(",", "").replace("_", "")


def _check(value: int | float, field: str, kind: str, minimum, maximum, text: str | None) -> None:
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise NumberFormatError(f"{field} must be a {kind}{bounds_text(minimum, maximum)}, not {_fmt(value)}",
                                field, text)


def parse_int(text: str | None, field: str, *, minimum: int | None = None, maximum: int | None = None,
              optional: bool = False) -> int | None:
    """The whole number `text` holds, exactly (any size up to MAX_CHARS characters); None for a blank `optional`
    field. `field` names the field in the message of the NumberFormatError raised otherwise."""
    bounds = bounds_text(minimum, maximum)
    digits = _read(text, field, "whole number", _INT, INT_HINT, bounds, optional)
    if digits is None:
        return None
    value = int(digits)
    _check(value, field, "whole number", minimum, maximum, text)
    return value


def parse_float(text: str | None, field: str, *, minimum: float | None = None, maximum: float | None = None,
                optional: bool = False) -> float | None:
    """The finite number `text` holds (the nearest double); None for a blank `optional` field."""
    bounds = bounds_text(minimum, maximum)
    digits = _read(text, field, "number", _FLOAT, FLOAT_HINT, bounds, optional)
    if digits is None:
        return None
    value = float(digits)
    if not math.isfinite(value):
        raise NumberFormatError(f"{field} must be a number{bounds}, not {_shown(text.strip())}", field, text,
                                hint="too large")
    _check(value, field, "number", minimum, maximum, text)
    return value


def json_int(text: str) -> int | float:
    """json.loads' `parse_int` for documents people hand in (plans, election lists, log-dirs output, snapshots).
    Python's int() refuses more than 4,300 digits (a ValueError about sys.set_int_max_str_digits that made the whole
    document "not valid JSON"); such a number is read as a float (inf) instead, so the field's own check refuses it
    and names the field ('"partition" must be an integer ..., got Infinity')."""
    try:
        return int(text)
    except ValueError:
        return float(text)
