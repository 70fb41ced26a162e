"""Java's own parsing and printing of values, as Kafka's ConfigDef relies on them. Pure.

String.trim, Integer.parseInt / Long.parseLong, Double.parseDouble, Double.toString, the list split of
ConfigDef.parseType and List.toString: exact on what Java accepts, and linear in the length of what it is handed (a
config value can run to hundreds of kilobytes; a number can have thousands of digits).
"""

from __future__ import annotations

import math
import re
import unicodedata
from decimal import Decimal
from typing import Sequence

INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1
SHORT_MAX = 2 ** 15 - 1


def _java_trim(s: str) -> str:
    """String.trim(): strips code points <= U+0020 only (not Python's wider notion of whitespace)."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


# Integer.parseInt / Long.parseLong: an optional sign, then decimal digits (Character.digit accepts any Unicode
# decimal digit, and so does Python's int()).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
# Double.parseDouble (FloatingDecimal.readJavaFormatString): ASCII only; decimal or hex with a binary exponent;
# an optional f/F/d/D suffix; NaN and Infinity (no suffix). No two quantifiers can share a digit (\d+(?:\.\d*)?,
# not \d+\.?\d*): that backtracking took 3 s on 5,000 digits and a "x" after them, minutes on 50,000.
_JAVA_DOUBLE = re.compile(
    r"(?P<sign>[+-]?)(?:(?P<special>NaN|Infinity)|(?P<num>(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+))[fFdD]?)", re.ASCII)
_JAVA_LONG_DIGITS = len(str(LONG_MAX))  # 19
_JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \\s
# A Java binary class name, for the CLASS type (no topic config uses it; the class itself cannot be loaded here).
_JAVA_CLASS = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")


def _java_int(text: str, lo: int, hi: int) -> int | None:
    """Integer.parseInt / Long.parseLong: None when Java would throw. Leading zeros are stripped before int() reads
    the rest (Java takes "000…0001" of any length; Python's int() refuses more than 4,300 digits), and more than
    19 significant digits is out of any Java range without converting them."""
    if not _JAVA_INTEGER.fullmatch(text):
        return None
    sign = text[0] if text[0] in "+-" else ""
    digits = text[len(sign):]
    zeros = next((i for i, c in enumerate(digits) if unicodedata.decimal(c) != 0), len(digits))
    if len(digits) - zeros > _JAVA_LONG_DIGITS:
        return None
    value = int(sign + (digits[zeros:] or "0"))
    return value if lo <= value <= hi else None


def _java_list(text: str) -> list[str]:
    """COMMA_WITH_WHITESPACE.split(text, -1): Java's \\s around each ',' dropped. Not with re.split(r"\\s*,\\s*"): that
    is quadratic in a run of spaces without a comma, and a list value may run to hundreds of kilobytes."""
    parts = text.split(",")
    out = []
    for i, part in enumerate(parts):
        if i > 0:
            part = part.lstrip(_JAVA_SPACE)
        if i < len(parts) - 1:
            part = part.rstrip(_JAVA_SPACE)
        out.append(part)
    return out


def _java_double(text: str) -> float | None:
    m = _JAVA_DOUBLE.fullmatch(text)
    if not m:
        return None
    sign = -1.0 if m.group("sign") == "-" else 1.0
    if m.group("special") == "NaN":
        return math.nan
    if m.group("special") == "Infinity":
        return sign * math.inf
    num = m.group("num")
    if num[:2] in ("0x", "0X"):
        return sign * float.fromhex(num)
    return sign * float(num)  # "1e400" is Infinity in Java and in Python alike


def java_double_str(x: float) -> str:
    """Double.toString: plain notation for 1e-3 <= |x| < 1e7 (at least one fraction digit), else d.dddE±n."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    d = Decimal(repr(abs(x)))  # repr gives the shortest round-tripping digits, as Java 19+ does
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    exp = d.adjusted()
    if 1e-3 <= abs(x) < 1e7:
        if exp >= 0:
            whole = digits[:exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _java_list_str(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"
