"""Issue 23, item 10: every number input is bounded before it is converted, and refused with a typed error naming
the field (the CLI side is in tests/cli/test_bad_input_corpus.py's table: `python -m core` with 5,000-digit values,
nan / inf / -1 / 0 / 1e300 timeouts, and JSON documents holding 5,000-digit numbers).

Here: the History page's `?action=` (AppTest), the argparse types of core.cli.argtypes, Kafka's value parsing
(core.topics.javaparse: Java-exact on huge inputs, and linear in their length), and json_int.
"""

from __future__ import annotations

import argparse
import json
import time

import pytest

from core.cli.argtypes import CONNECT, id_list, seconds, whole
from core.errors import InvalidConfigurationError, ValidationError
from core.numbers import json_int
from core.audit.store import Store
from core.topics.configdef import TOPIC_CONFIGS, parse_kafka_version
from core.topics.javaparse import LONG_MAX, _java_double, _java_int, _java_list
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401

BIG = "9" * 5000


def test_history_page_refuses_an_action_number_it_cannot_hold(tmp_path, monkeypatch):
    """30 digits overflowed SQLite's integer: an exception box instead of the page."""
    store = Store(tmp_path / "keel.sqlite")
    monkeypatch.setenv("KEEL_STORE", str(store.path))
    write_config(tmp_path, monkeypatch, {"demo": {"zk": "127.0.0.1:1/none", "connect_timeout": 0.5}})
    store.record(cluster="demo", kind="create-topic", target="t", summary="created topic t", result="ok",
                 actor="ann", source="cli")
    for raw, expected in [("9" * 30, "?action must be a whole number between 1 and"),
                          ("abc", "?action must be a whole number"), ("-3", "?action must be a whole number"),
                          (BIG, "?action must be a whole number")]:
        at = app("demo")
        at.query_params["action"] = raw
        at.run()
        at.switch_page("views/history.py").run()
        assert not at.exception, (raw[:40], at.exception)
        warned = texts(at.warning)
        assert expected in warned and len(warned) < 300, warned
        assert at.dataframe(key="history_table").value["Target"].tolist() == ["t"]  # the page itself is there


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "-1", "0", "-0", "1e300", "301", "", "ten", BIG])
def test_timeouts_refuse_what_is_not_a_sane_number_of_seconds(text):
    with pytest.raises(argparse.ArgumentTypeError) as e:
        seconds(CONNECT)(text)
    message = str(e.value)
    assert message.startswith("must be a number of seconds in (0, 300], got ") and len(message) < 120, message


def test_timeouts_and_whole_numbers_accept_what_they_should():
    assert seconds(CONNECT)("0.5") == 0.5 and seconds(CONNECT)("300") == 300.0
    assert whole("12") == 12 and whole(" -3 ") == -3 and whole(str(LONG_MAX)) == LONG_MAX
    for bad in (BIG, "9" * 30, "ten", "1.5", ""):
        with pytest.raises(argparse.ArgumentTypeError) as e:
            whole(bad)
        assert len(str(e.value)) < 150, str(e.value)
    assert id_list("1, 2,3", "--broker-list") == (1, 2, 3)
    with pytest.raises(ValidationError, match=r"--broker-list must be comma-separated broker ids, got '1,9+'… "
                                              r"\(5,002 characters\)"):
        id_list("1," + BIG, "--broker-list")


def test_java_integers_of_any_length():
    """Long.parseLong takes any number of leading zeros and refuses more than 19 significant digits, whatever
    Python's int() digit limit (4,300) says."""
    lo, hi = -(2 ** 63), LONG_MAX
    assert _java_int("0" * 6000 + "42", lo, hi) == 42
    assert _java_int("-" + "0" * 6000 + "7", lo, hi) == -7
    assert _java_int("٠٠٥", lo, hi) == 5  # Character.digit takes any Unicode decimal digit
    assert _java_int(BIG, lo, hi) is None and _java_int("1" + "0" * 19, lo, hi) is None
    assert _java_int(str(LONG_MAX), lo, hi) == LONG_MAX
    with pytest.raises(InvalidConfigurationError) as e:
        TOPIC_CONFIGS["segment.bytes"].parse(BIG)
    assert str(e.value).startswith("Invalid value 9999") and "(5,000 characters) for configuration segment.bytes: " \
        "Not a number of type INT" in str(e.value) and len(str(e.value)) < 200


def test_value_parsing_is_linear_in_the_length():
    """Backtracking in the double pattern took 3 s on 5,000 digits and an 'x', minutes on 50,000; the list split
    was quadratic in a run of spaces. Half a megabyte of either is read at once."""
    n = 500_000
    started = time.monotonic()
    assert _java_double("9" * n + "x") is None
    assert _java_double("9" * n + "." + "9" * n + "x") is None
    assert _java_double("0x" + "f" * n + "x") is None
    assert _java_list("a" + " " * n + "b") == ["a" + " " * n + "b"]
    assert time.monotonic() - started < 2.0
    assert _java_double("1.5e3") == 1500.0 and _java_double("12.") == 12.0 and _java_double(".5") == 0.5
    assert _java_double("0x1.8p1") == 3.0 and _java_double("1e400") == float("inf")
    assert _java_list("compact , delete") == ["compact", "delete"] and _java_list("a,,b,") == ["a", "", "b", ""]


def test_kafka_versions_of_absurd_length():
    with pytest.raises(ValidationError, match="not a Kafka version"):
        parse_kafka_version(BIG + ".1")
    assert parse_kafka_version("3.9.1") == (3, 9)


def test_json_numbers_of_any_length_reach_the_field_check():
    doc = json.loads('{"partition": %s, "size": 12}' % BIG, parse_int=json_int)
    assert doc == {"partition": float("inf"), "size": 12} and isinstance(doc["size"], int)
