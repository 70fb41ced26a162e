"""Partition-count advice and the uneven-rack skew (core.capacity), and their commands."""

from __future__ import annotations

import json

import pytest

from core.assignment import assign_replicas, brokers_for_mode
from core.capacity import advise_partitions, rack_skew, typical_replication_factor
from core.cli import main
from core.errors import ValidationError


def test_classic_rule_and_rounding_to_the_broker_count():
    a = advise_partitions(100, 10, 20, brokers=6, replication_factor=3)
    assert (a.by_producer, a.by_consumer, a.minimum, a.partitions) == (10, 5, 10, 12)
    assert a.bound_by == "the producers" and "multiple of the 6 brokers" in a.rounding
    assert len(a.tradeoffs) == 5
    text = " ".join(a.tradeoffs)
    for word in ("open files", "unclean broker failure", "latency", "memory in clients", "36 replicas"):
        assert word in text
    # the consumers bind; float noise does not add a partition
    assert advise_partitions(100, 50, 10).partitions == 10
    assert advise_partitions(0.3, 0.1, 0.1).minimum == 3
    # already a multiple; and a rounding that would more than double is not done
    assert advise_partitions(60, 10, 10, brokers=3).partitions == 6
    kept = advise_partitions(20, 10, 10, brokers=12)
    assert kept.partitions == 2 and "more than double" in kept.rounding
    assert advise_partitions(70, 10, 10, brokers=12).partitions == 12  # 7 -> 12 is less than double


def test_current_partition_count_is_compared():
    assert "enough" in advise_partitions(100, 10, 10, current=20).current_note
    short = advise_partitions(100, 10, 10, brokers=4, current=4)
    assert short.partitions == 12 and "6 short of the 10" in short.current_note


@pytest.mark.parametrize("args, needle", [
    ((-1, 10, 10), "target throughput (--target-mbps) must be a positive number of MB/s, got -1"),
    ((100, 0, 10), "producer throughput per partition (--producer-mbps) must be a positive number"),
    ((100, 10, float("nan")), "must be a finite number"),
    ((100, 10, "x"), "must be a number of MB/s"),
    ((1e12, 0.001, 1), "more than any Kafka cluster carries"),
])
def test_bad_throughput_is_refused_with_a_clear_message(args, needle):
    with pytest.raises(ValidationError) as e:
        advise_partitions(*args)
    assert needle in str(e.value)
    with pytest.raises(ValidationError, match="broker count"):
        advise_partitions(1, 1, 1, brokers=0)


def test_advise_partitions_command(capsys):
    assert main(["advise-partitions", "--target-mbps", "100", "--producer-mbps", "10", "--consumer-mbps", "20",
                 "--brokers", "6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"] == 12
    assert main(["advise-partitions", "--target-mbps", "100", "--producer-mbps", "-5", "--consumer-mbps", "20"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the producer throughput per partition (--producer-mbps) must be a positive")
    assert "Traceback" not in err


RACKS = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c")]


def test_uneven_racks_counted_from_kafkas_own_placement():
    skew = rack_skew(RACKS, 3, 60)
    assert skew.uneven and skew.matters and skew.small_racks == ("c",)
    by = {s.broker: s for s in skew.shares}
    # with RF 3 and 3 racks every partition has one replica in rack c: its only broker holds all 60
    assert by[5].aware == 60 and by[5].even == 36 and round(by[5].extra, 3) == 0.667
    assert sum(s.aware for s in skew.shares) == pytest.approx(180)
    assert all(s.unaware == 36 for s in skew.shares)  # rack-unaware placement is even
    assert skew.unaware_shared > 0  # ... and shares racks
    # the same numbers as running the placement by hand for one start index / shift pair, summed over all pairs
    total = {b: 0 for b, _ in RACKS}
    brokers = brokers_for_mode(RACKS, "enforced")

    class Fixed:
        def __init__(self, *v):
            self.v = list(v)

        def randrange(self, n):
            return self.v.pop(0)
    for s in range(5):
        for h in range(5):
            for reps in assign_replicas(brokers, 60, 3, rng=Fixed(s, h)).values():
                for b in reps:
                    total[b] += 1
    assert {b: t / 25 for b, t in total.items()} == {s.broker: s.aware for s in skew.shares}
    assert "smallest rack (c (1 broker))" in skew.summary() and "+67%" in skew.summary()


def test_even_racks_and_missing_racks():
    even = rack_skew([(1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "b"), (6, "c")], 3)
    assert not even.uneven and not even.matters and even.max_extra == pytest.approx(0, abs=0.01)
    assert rack_skew([(1, "a"), (2, None)], 2) is None
    with pytest.raises(ValidationError, match="replication factor 4"):
        rack_skew(RACKS[:3], 4)
    assert typical_replication_factor([3, 3, 2], 2) == 2 and typical_replication_factor([], 5) == 3


def test_rack_skew_command(capsys):
    assert main(["rack-skew", "--brokers", "1:a,2:a,3:b,4:b,5:c", "--replication-factor", "3", "--partitions", "60",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["uneven"] and [b["rack_aware"] for b in doc["brokers"]][-1] == 60
    assert main(["rack-skew", "--brokers", "1:a,2:a,3:b,4:b,5:c", "--replication-factor", "3"]) == 0
    out = capsys.readouterr().out
    assert "+67%" in out


def test_the_page_and_the_cli_ask_the_engine_the_same_rack_skew_question():
    """Issue 25 item 2: the page clamped an RF above the live brokers to their count (and warned about a topic
    Kafka would refuse) where the CLI refused it; both now take core.capacity.cluster_rack_skew's inputs."""
    from core.capacity import cluster_rack_skew
    from core.errors import ValidationError
    from dashboard.ops_panels import _skew
    from tests.domain.test_topics import snapshot

    snap = snapshot([(1, "a", True), (2, "a", True), (3, "b", True), (4, "c", False)])  # 3 live brokers
    with pytest.raises(ValidationError, match="replication factor 4 must be between 1 and the 3 live brokers"):
        cluster_rack_skew(snap, 4)
    assert _skew(None, snap, 4, None) is None  # no answer for another RF than the one asked
    assert _skew(None, snap, 3, None) == cluster_rack_skew(snap, 3)
    assert cluster_rack_skew(snap).shares  # no topics: RF 3 (the typical default), capped by nothing here
