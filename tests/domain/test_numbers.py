"""core.numbers: the text of the dashboard's number fields read exactly, or refused with a message naming the field."""

from __future__ import annotations

import pytest

from core.errors import KeelError, NumberFormatError, ValidationError
from core.numbers import MAX_CHARS, format_number, parse_float, parse_int


@pytest.mark.parametrize("text,value", [
    ("12", 12), (" 12 ", 12), ("\t12\n", 12), ("+12", 12), ("-3", -3), ("-0", 0), ("007", 7),
    ("1,000", 1000), ("20,000", 20_000), ("1,000,000", 1_000_000), ("1_000_000", 1_000_000), ("-1,000", -1000),
    (str(2 ** 53 + 1), 2 ** 53 + 1),  # above JavaScript's MAX_SAFE_INTEGER: still exact
    ("100,000,000,000,000,000,000", 10 ** 20), ("1" * MAX_CHARS, int("1" * MAX_CHARS)),
])
def test_whole_numbers_are_read_exactly(text, value):
    got = parse_int(text, "Partitions")
    assert got == value and type(got) is int


@pytest.mark.parametrize("text", [
    "abc", "six", "6.0", "6.5", "1e3", "1,00", "1,0000", "12,34", "1,000,00", "1,000_000", "1__000", "_1000",
    "1000_", "1_0", "12 34", "1 000", "--1", "+-1", "- 1", "0x10", "nan", "inf", "-inf", "١٢", "１２", "½", "1.",
    "12abc", "2**31",
])
def test_anything_else_is_refused_naming_the_field(text):
    with pytest.raises(NumberFormatError) as refused:
        parse_int(text, "Partitions")
    e = refused.value
    assert isinstance(e, ValidationError) and isinstance(e, KeelError)
    assert e.field == "Partitions" and e.text == text
    assert str(e).startswith(f"Partitions must be a whole number, not {text.strip()!r}")
    assert "digits only, e.g. 12 or 20,000; ',' or '_' may group thousands" in str(e)


def test_blank_is_refused_unless_optional():
    for text in ("", "   ", None):
        with pytest.raises(NumberFormatError, match="^Partitions is empty: enter a whole number$"):
            parse_int(text, "Partitions")
        assert parse_int(text, "Max moves", optional=True) is None
        assert parse_float(text, "Throttle", optional=True) is None
    with pytest.raises(NumberFormatError, match="^Seed is empty: enter a whole number of 0 or more$"):
        parse_int(" ", "Seed", minimum=0)


def test_text_longer_than_any_number_is_refused_unread():
    with pytest.raises(NumberFormatError, match=f"^Seed must be a whole number, not {MAX_CHARS + 1} characters of "
                                                 f"text \\(at most {MAX_CHARS} characters\\)$"):
        parse_int("1" * (MAX_CHARS + 1), "Seed")
    with pytest.raises(NumberFormatError, match="characters of text"):
        parse_float("9" * 10_000, "Throttle")


@pytest.mark.parametrize("text,minimum,maximum,message", [
    ("-1", 0, None, "Seed must be a whole number of 0 or more, not -1"),
    ("0", 1, 5, "Seed must be a whole number between 1 and 5, not 0"),
    ("6", 1, 5, "Seed must be a whole number between 1 and 5, not 6"),
    ("100,000,000,000,000,000,000", 1, 20_000, "Seed must be a whole number between 1 and 20,000, not "
                                               "100,000,000,000,000,000,000"),
    ("21", None, 20, "Seed must be a whole number of at most 20, not 21"),
])
def test_bounds_of_a_field(text, minimum, maximum, message):
    with pytest.raises(NumberFormatError) as refused:
        parse_int(text, "Seed", minimum=minimum, maximum=maximum)
    assert str(refused.value) == message
    assert parse_int(str(minimum if minimum is not None else maximum), "Seed", minimum=minimum,
                     maximum=maximum) in (minimum, maximum)  # the bounds themselves are in


@pytest.mark.parametrize("text,value", [
    ("12.5", 12.5), (" 50 ", 50.0), ("0.001", 0.001), (".5", 0.5), ("5.", 5.0), ("-0.5", -0.5), ("1e3", 1000.0),
    ("2.5E-3", 0.0025), ("1,000.25", 1000.25), ("1_000", 1000.0), ("+7", 7.0),
])
def test_decimal_numbers(text, value):
    got = parse_float(text, "Throttle (MB/s)")
    assert got == value and type(got) is float


@pytest.mark.parametrize("text,hint", [
    ("1,5", "',' separates thousands here: use '.' for decimals"),
    ("abc", "digits with '.' for decimals"), ("nan", "digits with '.' for decimals"),
    ("inf", "digits with '.' for decimals"), ("1.2.3", "digits with '.' for decimals"),
    ("0x1p3", "digits with '.' for decimals"), ("e3", "digits with '.' for decimals"),
    ("1e400", "too large"), ("-1e400", "too large"),
])
def test_decimal_refusals(text, hint):
    with pytest.raises(NumberFormatError) as refused:
        parse_float(text, "Target MB/s")
    assert str(refused.value).startswith(f"Target MB/s must be a number, not {text!r}")
    assert hint in str(refused.value)


def test_decimal_bounds():
    with pytest.raises(NumberFormatError, match=r"^Throttle must be a number between 0.001 and 9,223,372,036,854, "
                                                r"not 0.0005$"):
        parse_float("0.0005", "Throttle", minimum=0.001, maximum=9_223_372_036_854)
    with pytest.raises(NumberFormatError, match=r"not 1e\+20$"):
        parse_float("1e20", "Throttle", minimum=0.001, maximum=9_223_372_036_854)


@pytest.mark.parametrize("value", [6, -1, 0, 10 ** 20, 50.0, 0.001, 12.5, 1e20, 1 / 3, None])
def test_a_default_reads_back_unchanged(value):
    text = format_number(value)
    if value is None:
        assert text == ""
    elif isinstance(value, int):
        assert parse_int(text, "x") == value
    else:
        assert parse_float(text, "x") == value
    assert format_number(50.0) == "50" and format_number(0.001) == "0.001"
