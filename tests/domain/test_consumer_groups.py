"""Consumer-group lag (core.consumer_groups): rows as kafka-consumer-groups --describe prints them, totals, sorting.
Real producers and consumers: tests/kafka/test_ops_real.py."""

from __future__ import annotations

import pytest

from core.consumer_groups import Member, build_group, format_describe, lag_rows, totals
from core.errors import ValidationError


def groups():
    m = Member("m-1", "client-a", "/10.0.0.1", None, (("t", 0), ("t", 1)))
    g1 = build_group("g1", state="Stable", members=[m], committed={("t", 0): 5, ("t", 1): None, ("u", 0): 7},
                     log_end={("t", 0): 15, ("t", 1): 3, ("u", 0): 7})
    g2 = build_group("g2", state="Empty", committed={("t", 0): 1}, log_end={("t", 0): 15})
    return [g1, g2]


def test_rows_lag_and_totals():
    g1, g2 = groups()
    assert [(r.topic, r.partition, r.committed, r.log_end, r.lag, r.member_id) for r in g1.partitions] == [
        ("t", 0, 5, 15, 10, "m-1"), ("t", 1, None, 3, None, "m-1"), ("u", 0, 7, 7, 0, None)]
    assert g1.total_lag == 10 and g1.lag_by_topic() == {"t": 10, "u": 0} and g2.total_lag == 14
    assert [(t["group"], t["topic"], t["lag"]) for t in totals([g1, g2])] == [("g2", "t", 14), ("g1", "t", 10),
                                                                               ("g1", "u", 0)]


def test_sorting():
    rows = lag_rows(groups())
    assert [r.lag for r in rows] == [14, 10, 0, None]  # largest first, unknown last
    assert [r.group for r in lag_rows(groups(), sort="group")] == ["g1", "g1", "g1", "g2"]
    assert [r.lag for r in lag_rows(groups(), sort="lag", descending=False)] == [0, 10, 14, None]
    with pytest.raises(ValidationError, match="cannot sort by 'size'"):
        lag_rows(groups(), sort="size")


def test_describe_table_like_the_tool():
    text = format_describe(groups()).splitlines()
    assert text[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                               "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert text[2].split() == ["g1", "t", "1", "-", "3", "-", "m-1", "/10.0.0.1", "client-a"]
    empty = build_group("idle", state="Empty")
    assert "has no active members" in format_describe([empty])
