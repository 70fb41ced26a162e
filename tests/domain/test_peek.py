"""Issue 30 item 2, pure parts: what a peek reads (bounds, start offsets, times), how a message is shown (text:
UTF-8, JSON pretty-printed, else hex), and the `data` permission (core.policy.access, [keel] data)."""

from __future__ import annotations

import json

import pytest

from core import peek
from core.errors import ValidationError
from core.policy import access
from core.policy.config import ConfigError, parse_config

M = peek.Message


def test_request_needs_exactly_one_start_and_bounds():
    r = peek.request("t", 0, last=5)
    assert (r.mode, r.value, r.max_messages, r.max_bytes) == ("last", 5, 5, peek.DEFAULT_BYTES)
    assert peek.request("t", 1, offset=0, max_messages=3).max_messages == 3
    for bad in (dict(), dict(last=1, offset=2), dict(last=0), dict(last=501), dict(offset=-1),
                dict(offset=1, max_bytes=0), dict(offset=1, max_bytes=peek.MAX_BYTES + 1),
                dict(offset=1, max_messages=peek.MAX_MESSAGES + 1), dict(from_time="yesterday")):
        with pytest.raises(ValidationError):
            peek.request("t", 0, **bad)
    with pytest.raises(ValidationError, match="partition"):
        peek.request("t", -1, last=1)


def test_times_are_iso_or_epoch_milliseconds_utc_unless_a_zone_is_given():
    assert peek.parse_time("2026-05-28T20:26:40Z") == 1_780_000_000_000
    assert peek.parse_time("2026-05-28T20:26:40") == 1_780_000_000_000
    assert peek.parse_time("2026-05-28T22:26:40.250+02:00") == 1_780_000_000_250
    assert peek.parse_time("1780000000000") == 1_780_000_000_000
    assert peek.parse_time("2026-05-28") == 1_779_926_400_000
    with pytest.raises(ValidationError, match="not a time"):
        peek.parse_time("28/05/2026")
    with pytest.raises(ValidationError):
        peek.parse_time("2026-13-01T00:00:00Z")
    assert peek.format_time(1_780_000_000_250) == "2026-05-28T20:26:40.250Z"


def test_start_offsets():
    last = peek.request("t", 0, last=3)
    assert peek.start_offset(last, 0, 10) == 7
    assert peek.start_offset(last, 8, 10) == 8  # fewer than N left: from the earliest
    assert peek.start_offset(last, 5, 5) is None  # empty
    at = peek.request("t", 0, offset=4)
    assert peek.start_offset(at, 0, 10) == 4
    assert peek.start_offset(peek.request("t", 0, offset=10), 0, 10) is None  # the next offset: nothing yet
    with pytest.raises(ValidationError, match="offset 11 is out of range for t-0: its messages are at offsets 0 to 9"):
        peek.start_offset(peek.request("t", 0, offset=11), 0, 10)
    with pytest.raises(ValidationError, match="out of range"):
        peek.start_offset(peek.request("t", 0, offset=2), 3, 10)  # deleted by retention
    when = peek.request("t", 0, from_time=1000)
    assert peek.start_offset(when, 0, 10, by_time=6) == 6
    assert peek.start_offset(when, 0, 10, by_time=None) is None


def test_bounds_in_count_and_bytes():
    msgs = [M(i, 0, 0, b"k", b"x" * 9) for i in range(5)]  # 10 bytes each
    req = peek.request("t", 0, offset=0, max_messages=3)
    kept, cut, why = peek.bound(req, msgs)
    assert [m.offset for m in kept] == [0, 1, 2] and not cut and why == "3 messages"
    kept, cut, why = peek.bound(peek.request("t", 0, offset=0, max_bytes=25), msgs)
    assert [m.offset for m in kept] == [0, 1] and not cut and why == "25 bytes"
    big = [M(0, 0, 0, b"kk", b"y" * 100, (("h", b"v"),))]
    kept, cut, why = peek.bound(peek.request("t", 0, offset=0, max_bytes=10), big)
    assert cut and kept[0].value == b"y" * 8 and kept[0].size == 10
    assert peek.bound(peek.request("t", 0, offset=0), msgs) == (tuple(msgs), False, "")


def test_messages_show_as_text_json_pretty_else_hex():
    assert peek.show_bytes(b'{"a":1,"b":[1,2]}') == (json.dumps({"a": 1, "b": [1, 2]}, indent=2), "json")
    assert peek.show_bytes("<script>alert('x')</script> **b**".encode()) == \
        ("<script>alert('x')</script> **b**", "text")
    assert peek.show_bytes("héllo".encode()) == ("héllo", "text")
    assert peek.show_bytes(b"\xff\x00a") == ("ff 00 61", "hex")
    assert peek.show_bytes(None) == ("null", "null")
    assert peek.show_bytes(b"{not json") == ("{not json", "text")
    assert peek.show_bytes(b"\x1b[2Jred") == ("1b 5b 32 4a 72 65 64", "hex")  # a terminal escape: never printed raw
    assert peek.show_bytes(b"a\tb\nc") == ("a\tb\nc", "text")
    [row] = peek.rows([M(7, 1_780_000_000_000, 1, None, b"42", (("trace", b"\x01"),))])
    assert row == {"offset": 7, "timestamp": "2026-05-28T20:26:40.000Z", "timestamp_ms": 1_780_000_000_000,
                   "timestamp_type": "LogAppendTime", "key": "null", "key_format": "null", "value": "42",
                   "value_format": "text", "headers": [{"key": "trace", "value": "01"}], "bytes": 8}


def test_the_summary_names_how_many_never_the_contents():
    req = peek.request("orders", 2, last=2)
    r = peek.PeekResult(req, 0, 10, 8, (M(8, 0, 0, b"k", b"secret-a"), M(9, 0, 0, b"k", b"secret-b")))
    assert r.summary() == "2 message(s) of orders-2, offsets 8-9, 18 bytes"
    assert req.describe() == "the last 2 message(s) of orders-2"
    assert "secret" not in r.summary() + req.describe()


# --- the data permission ------------------------------------------------------------------------------------

CLUSTERS = '[clusters.prod]\nzk = "zk:2181"\n[clusters.dev]\nzk = "zk2:2181"\n'


def cfg(text: str):
    return parse_config(text + CLUSTERS)


def alice(*groups: str) -> access.Identity:
    return access.Identity("alice@x.org", access.OIDC, email="alice@x.org", groups=groups)


def test_data_is_granted_by_name_only_admin_does_not_imply_it():
    c = cfg('[auth]\nmode = "oidc"\n[access]\nadmin = ["group:sre"]\ndata = ["group:support"]\n')
    assert access.resolve(alice("sre"), c, "prod").role is access.Role.ADMIN
    assert not access.may_read_data(alice("sre"), c, "prod")[0]
    assert access.may_read_data(alice("support"), c, "prod") == (True, "[access] data grants group:support")
    with pytest.raises(access.DataDeniedError, match="alice@x.org may not read messages on cluster prod") as e:
        access.check_data(alice("sre"), c, "prod", "peek at t-0")
    assert "operator and admin do not include it" in e.value.hint
    # off by default: no data list at all
    assert not access.may_read_data(alice("sre"), cfg('[auth]\nmode = "oidc"\n'), "prod")[0]


def test_a_cluster_table_replaces_the_data_list_and_unknown_clusters_get_the_least():
    c = parse_config('[auth]\nmode = "oidc"\n[access]\ndata = ["group:support"]\n' + CLUSTERS
                     + '[clusters.prod.access]\ndata = ["group:prod-support"]\n')
    assert not access.may_read_data(alice("support"), c, "prod")[0]
    assert access.may_read_data(alice("support"), c, "dev")[0]
    assert access.may_read_data(alice("prod-support"), c, "prod")[0]
    assert not access.may_read_data(alice("support"), c, None)[0]  # prod refuses: so does an unnamed cluster
    assert access.may_read_data(alice("support", "prod-support"), c, "other")[0]  # both grant


def test_the_command_line_and_none_mode():
    cli = access.cli_identity("sam")
    c = cfg('[access]\noperator = ["group:sre"]\n')
    assert access.may_read_data(cli, c, "prod")[0]  # no cli rule: the CLI keeps every right (its own credentials)
    c = cfg('[access]\nadmin = ["cli:sam"]\n')
    assert not access.may_read_data(cli, c, "prod")[0]
    with pytest.raises(access.DataDeniedError) as e:
        access.check_data(cli, c, "prod", "peek at t-0")
    assert 'add "cli:sam" to data = [...]' in e.value.hint
    assert access.may_read_data(cli, cfg('[access]\ndata = ["cli:sam"]\n'), "prod")[0]
    assert access.may_read_data(cli, cfg('[access]\ndata = ["cli"]\n'), "prod")[0]
    local = access.local_identity("sam")
    assert not access.may_read_data(local, cfg('[keel]\nrole = "admin"\n'), "prod")[0]
    on = cfg('[keel]\nrole = "viewer"\ndata = true\n')
    assert access.may_read_data(local, on, "prod")[0]
    assert not access.may_read_data(local, on, "prod", exposed=True)[0]  # beyond loopback: nobody
    with pytest.raises(access.DataDeniedError) as e:
        access.check_data(local, cfg(""), "prod", "peek at t-0")
    assert "set data = true in the [keel] table" in e.value.hint


def test_bad_data_settings_are_config_errors():
    with pytest.raises(ConfigError, match="keel.data"):
        cfg('[keel]\ndata = "yes"\n')
    with pytest.raises(ConfigError, match="not a principal"):
        cfg('[access]\ndata = ["support"]\n')
    with pytest.raises(ConfigError, match="must be a list"):
        cfg('[access]\ndata = "group:x"\n')
    with pytest.raises(ConfigError, match="unknown role 'data'"):
        cfg('[access]\ndefault = "data"\n')
    with pytest.raises(ConfigError, match="and data, who may read messages"):
        cfg('[access]\nreaders = ["*"]\n')
