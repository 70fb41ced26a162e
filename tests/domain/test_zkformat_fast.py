"""The fast decoding of a large read is exact: orjson first (zkformat._fast_loads), and json's verdict for whatever it
does not take; ClusterTree.set_states gives what set_state gives one by one. Pure: no ZooKeeper."""

from __future__ import annotations

import json
import re
import sys

import pytest

from core import zkformat as zf
from core.errors import CorruptZnodeError
from core.zk.tree import ClusterTree

STATE = "/brokers/topics/t/partitions/0/state"

# Payloads where a faster decoder could disagree with json: duplicate keys, non-finite numbers, huge integers,
# booleans where ints belong, byte order marks and UTF-16, lone surrogates, control characters, deep nesting,
# trailing data, whitespace, floats that equal ints, strings of digits.
ODD_STATES = [
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,2]}',
    b' {"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,2]}\n\t',
    b'{"version":1,"leader":1,"leader":2,"leader_epoch":0,"controller_epoch":1,"isr":[1,2]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,true]}',
    b'{"version":1,"leader":true,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":1.0,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1.0]}',
    b'{"version":1,"leader":"1","leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":NaN,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":1,"leader_epoch":Infinity,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":1,"leader_epoch":1e400,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[123456789012345678901234567890]}',
    b'{"version":1,"leader":-9223372036854775809,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"version":1,"leader":18446744073709551616,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'\xef\xbb\xbf{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    '{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}'.encode("utf-16"),
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"x":"\\ud800"}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"x":"\xff"}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"x":"a\x01b"}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]} trailing',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}{}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"leader_recovery_state":1}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"leader_recovery_state":false}',
    b'{"version":"1","leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[]}',
    b'{"leader":-1,"leader_epoch":7,"controller_epoch":1,"isr":[]}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":{"0":1}}',
    b'[1,2,3]', b'"state"', b'null', b'{', b'{"isr":' + b'[' * 5000 + b']' * 5000 + b'}',
    b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"deep":' + b'[' * 2000
    + b']' * 2000 + b'}',
]

ODD_TOPICS = [
    b'{"version":3,"partitions":{"0":[1,2],"1":[2,1]},"adding_replicas":{},"removing_replicas":{},"topic_id":"x"}',
    b'{"version":1,"partitions":{"0":[1,2],"0":[3]}}',
    '{"version":1,"partitions":{"\u0661":[1]}}'.encode(),  # an Arabic-Indic digit: re's \\d and int() take it
    '{"version":1,"partitions":{"\u00b2":[1]}}'.encode(),  # a superscript two: a digit to isdigit, not to \\d
    b'{"version":1,"partitions":{"-1":[1]}}', b'{"version":1,"partitions":{"":[1]}}',
    b'{"version":1,"partitions":{" 1":[1]}}', b'{"version":1,"partitions":{"0":[1,true]}}',
    b'{"version":1,"partitions":{"0":[1.0]}}', b'{"version":1,"partitions":{"0":"1"}}',
    b'{"version":1,"partitions":{"0":[1]},"topic_id":7}', b'{"version":1}', b'[]',
    b'\xef\xbb\xbf{"version":1,"partitions":{"0":[1]}}', b'{"version":1,"partitions":{"0":[NaN]}}',
]

ODD_CONFIGS = [
    b'{"version":1,"config":{"a":"1","a":"2"}}', b'{"version":1,"config":{"a":1}}', b'{"version":1,"config":[]}',
    b'{"version":1,"config":{"a":"\\u00e9"}}', b'{"version":1,"config":{"a":"x"}} x', b'',
]


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except CorruptZnodeError as e:
        return "corrupt", e.reason


def with_json_only(monkeypatch, fn, *args):
    """What the decoder gives with json.loads alone (the decoder before orjson)."""
    with monkeypatch.context() as m:
        m.setattr(zf, "_fast_loads", json.loads)
        return outcome(fn, *args)


@pytest.mark.parametrize("data", ODD_STATES)
def test_partition_states_decode_as_json_alone_decodes_them(monkeypatch, data):
    assert outcome(zf.decode_partition_state, data, STATE) == with_json_only(
        monkeypatch, zf.decode_partition_state, data, STATE)


@pytest.mark.parametrize("data", ODD_TOPICS)
def test_topics_decode_as_json_alone_decodes_them(monkeypatch, data):
    assert outcome(zf.decode_topic, "t", data) == with_json_only(monkeypatch, zf.decode_topic, "t", data)


@pytest.mark.parametrize("data", ODD_CONFIGS)
def test_configs_decode_as_json_alone_decodes_them(monkeypatch, data):
    assert outcome(zf.decode_config, data, "/config/topics/t") == with_json_only(
        monkeypatch, zf.decode_config, data, "/config/topics/t")


def test_partition_ids_are_checked_as_the_regex_checked_them():
    """str.isdecimal is re's \\d+ (Unicode Nd) over every code point, the check _partition_map made per key."""
    digit = re.compile(r"\d")
    assert all(bool(digit.fullmatch(c)) == c.isdecimal() for c in map(chr, range(sys.maxunicode + 1)))


def test_set_states_is_set_state_one_by_one():
    ok = zf.encode_partition_state(1, 4, 2, [1, 2])
    items = [("a", 0, ok, 3), ("a", 1, b"{bad", 1), ("a", 2, None, -1), ("b", 0, b"", 0),
             ("b", 1, zf.encode_partition_state(2, 0, 1, [2], leader_recovery_state=1), 7), ("a", 3, ok, 0)]
    one, bulk = ClusterTree(), ClusterTree()
    for tree in (one, bulk):  # a tree that had read other things before: a problem fixed since, a state gone
        tree.set_state("a", 2, b"{old", 1)
        tree.set_state("a", 0, b"{old", 2)
        tree.set_state("b", 0, ok, 0)
    for t, p, data, version in items:
        one.set_state(t, p, data, version)
    generation = bulk.generation
    bulk.set_states([(t, p) for t, p, _, _ in items],
                    [(zf.state_path(t, p), data, version, 0) for t, p, data, version in items])
    assert bulk.states == one.states and bulk.versions == one.versions and bulk.problems == one.problems
    assert bulk.generation > generation
    assert set(bulk.problems) == {zf.state_path("a", 1), zf.state_path("b", 0)}
    assert bulk.states["a"][0].leader_epoch == 4 and bulk.states["b"][1].leader_recovery_state == 1
