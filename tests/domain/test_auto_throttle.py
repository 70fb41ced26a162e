"""The auto-throttle's pure decision (core.auto_throttle): what it subtracts, the floor / ceiling / margin, the
first rate, the end, the policy's checks and the loops' liveness."""

import pytest

from core.auto_throttle import (ALIVE, DEAD, ENDED, decide, describe_loop, inbound, liveness, policy,
                                traffic_of)
from core.errors import ValidationError
from core.reassign_progress import Moving

MOVE = Moving("t", 0, (1, 2, 3), adding=(3,), removing=(1,), leader=1)


def tr(at, sizes, moving=(MOVE,)):
    return traffic_of(at, moving, sizes)


def test_traffic_keeps_the_receiving_brokers_replicas_only():
    t = tr(0, {(3, "t", 0): 5, (3, "u", 0): 7, (1, "t", 0): 9, (2, "u", 1): 4})
    assert t.receiving == (3,)
    assert t.copying == frozenset({(3, "t", 0)})
    assert dict(t.sizes) == {(3, "t", 0): 5, (3, "u", 0): 7}  # broker 1 sends, it does not receive


def test_other_inbound_is_the_growth_of_every_replica_not_being_added():
    # broker 3 leads u-0 (produce 100 B/s) and follows v-0 (replication 50 B/s); it copies t-0 at 400 B/s
    a = tr(0, {(3, "t", 0): 0, (3, "u", 0): 1000, (3, "v", 0): 0})
    b = tr(10, {(3, "t", 0): 4000, (3, "u", 0): 2000, (3, "v", 0): 500})
    (x,) = inbound(a, b)
    assert (x.broker, x.other, x.copy) == (3, 150.0, 400.0)
    d = decide(a, b, policy(1000), current=100)
    assert d.rate == 850 and d.target == 850  # budget 1000 - 150
    assert d.brokers[0].headroom == 850
    assert "broker 3" in d.reason and "was" in d.reason


def test_the_tightest_receiving_broker_sets_the_one_rate():
    moving = (Moving("t", 0, (1, 2, 3), (3,), (1,), 1), Moving("t", 1, (1, 4), (4,), (), 1))
    a = tr(0, {(3, "t", 0): 0, (3, "a", 0): 0, (4, "t", 1): 0, (4, "b", 0): 0}, moving)
    b = tr(1, {(3, "t", 0): 0, (3, "a", 0): 300, (4, "t", 1): 0, (4, "b", 0): 600}, moving)
    d = decide(a, b, policy(1000, floor=1), current=1000)
    assert d.rate == 400 and "broker 4" in d.reason


def test_a_shrinking_log_counts_as_no_growth_and_new_replicas_are_skipped():
    a = tr(0, {(3, "t", 0): 0, (3, "u", 0): 5000})
    b = tr(1, {(3, "t", 0): 0, (3, "u", 0): 1000, (3, "w", 0): 999})  # u-0 lost a segment; w-0 is new
    assert inbound(a, b)[0].other == 0.0


def test_a_replica_finished_in_between_counts_as_copy():
    a = tr(0, {(3, "t", 0): 0, (3, "t", 1): 0}, (MOVE, Moving("t", 1, (1, 3), (3,), (), 1)))
    b = tr(1, {(3, "t", 0): 10, (3, "t", 1): 500}, (MOVE,))  # t-1 finished: now an ordinary follower
    assert (inbound(a, b)[0].other, inbound(a, b)[0].copy) == (0.0, 510.0)


def test_floor_and_ceiling_hold_the_rate():
    a = tr(0, {(3, "t", 0): 0, (3, "u", 0): 0})
    busy = tr(1, {(3, "t", 0): 0, (3, "u", 0): 990})
    d = decide(a, busy, policy(1000, floor=200), current=1000)
    assert d.rate == 200 and "below the floor" in d.reason
    idle = tr(1, {(3, "t", 0): 0, (3, "u", 0): 0})
    d = decide(a, idle, policy(1000, floor=100, ceiling=600), current=100)
    assert d.rate == 600 and "above the ceiling" in d.reason


def test_margin_writes_nothing_for_a_small_change():
    a = tr(0, {(3, "t", 0): 0, (3, "u", 0): 0})
    b = tr(1, {(3, "t", 0): 0, (3, "u", 0): 50})
    p = policy(1000, floor=1, margin=0.1)
    d = decide(a, b, p, current=1000)  # target 950: 5 % off
    assert d.rate is None and d.target == 950 and "not written" in d.reason
    assert decide(a, b, p, current=1100).rate == 950  # 13.6 % off
    assert decide(a, b, policy(1000, floor=1, margin=0), current=951).rate == 950


def test_the_first_rate_and_the_end():
    p = policy(1000)
    b = tr(1, {(3, "t", 0): 0})
    first = decide(None, b, p, current=None)
    assert first.rate == 100 and "floor" in first.reason  # default floor = budget / 10
    assert decide(None, b, p, current=500).rate is None
    assert decide(b, b, p, current=500).rate is None  # no time passed
    done = decide(b, tr(2, {}, moving=()), p, current=500)
    assert done.done and done.rate is None
    unthrottled = decide(tr(0, {(3, "t", 0): 0}), b, p, current=None)
    assert unthrottled.rate == 1000 and "no throttle was in force" in unthrottled.reason


def test_policy_defaults_and_bad_input():
    p = policy(50_000_000)
    assert (p.floor, p.ceiling, p.margin, p.interval) == (5_000_000, 50_000_000, 0.1, 30.0)
    assert policy(5).floor == 1
    for kwargs in ({"budget": 0}, {"budget": 100, "floor": 0}, {"budget": 100, "floor": 50, "ceiling": 40},
                   {"budget": 100, "margin": 1.0}, {"budget": 100, "margin": -0.1}, {"budget": 100, "interval": 0}):
        with pytest.raises(ValidationError):
            policy(**kwargs)


def test_serialised_forms():
    a = tr(0, {(3, "t", 0): 0, (3, "u", 0): 0})
    b = tr(2, {(3, "t", 0): 10, (3, "u", 0): 20})
    d = decide(a, b, policy(100, floor=1), current=None)
    assert d.to_dict() == {"rate": 90, "target": 90, "reason": d.reason, "done": False,
                           "brokers": [{"broker": 3, "other": 10.0, "copy": 5.0, "headroom": 90.0}]}
    assert a.to_dict()["copying"] == [[3, "t", 0]]


def test_liveness_and_the_line_about_a_loop():
    assert liveness("done", 999, 30, False) == ENDED
    assert liveness(None, 5, 30, False) == DEAD  # its process is gone on this host
    assert liveness(None, 5, 30, True) == ALIVE
    assert liveness(None, 101, 30, None) == DEAD  # another host: only the beat tells (3 x 30 + 10)
    assert liveness(None, 101, 30, True) == DEAD
    assert liveness(None, 99, 30, None) == ALIVE
    row = {"pid": 7, "host": "h", "started": "2026-01-01T00:00:00Z", "owner": "cli", "budget": 2_000_000,
           "rate": 1_500_000}
    assert "no longer alive" in describe_loop(row, DEAD, 40) and "1.5 MB/s" in describe_loop(row, DEAD, 40)
    assert describe_loop(row, ALIVE, 3).startswith("auto-throttle active: budget 2.0 MB/s")
    # a loop that failed says why (the page's loop thread and the CLI's write it on their row)
    failed = {**row, "ended": "2026-01-01T00:01:00Z", "end_reason": "failed: KafkaError: brokers unreachable: the "
                                                                   "last rate stays in place (1,500,000 B/s)"}
    line = describe_loop(failed, DEAD, 40)
    assert "last beat 40 s ago; its end: failed: KafkaError: brokers unreachable" in line, line
    assert "the throttle it last set stays in place (last rate 1.5 MB/s)" in line
