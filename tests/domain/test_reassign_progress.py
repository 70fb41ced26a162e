"""Issue 28 items 1-2, the pure core (core.reassign_progress): a reassignment's progress in bytes from timestamped
samples of log sizes, the copy rate over a window, the ETA (None, with a reason, while it cannot be known), the
per-broker sums, and the throttle a running reassignment gets on exactly the brokers that move data."""

from __future__ import annotations

import json

import pytest

from core.errors import ReassignmentNotRunningError, ValidationError
from core.model import ClusterSnapshot, InProgress, Partition, Topic, TopicPartitionReplicas
from core.reassign_progress import (
    Moving,
    Sample,
    line,
    progress,
    reassigning_brokers,
    record,
    running_of,
    sample_of,
    samples_from_json,
    samples_to_json,
    throttles_of,
)

# t-0 moves from [1,2] to [3,2] (3 added), t-1 from [2,1] to [3,4] (3 and 4 added); leaders 1 and 2.
T0 = Moving("t", 0, (3, 2, 1), adding=(3,), removing=(1,), leader=1)
T1 = Moving("t", 1, (3, 4, 2, 1), adding=(3, 4), removing=(2, 1), leader=2)


def sizes(lead0: int, new0: int, lead1: int, new1_3: int, new1_4: int) -> dict:
    return {(1, "t", 0): lead0, (2, "t", 0): lead0, (3, "t", 0): new0,
            (2, "t", 1): lead1, (1, "t", 1): lead1, (3, "t", 1): new1_3, (4, "t", 1): new1_4}


def run(points, window=60.0, running=(T0, T1)):
    """Samples at (time, sizes) points, recorded as the edges do."""
    samples: tuple[Sample, ...] = ()
    for at, s, *still in points:
        moving = still[0] if still else running
        samples = record(samples, sample_of(at, moving, s, samples[-1] if samples else None), window)
    return samples


def test_one_sample_gives_bytes_but_no_rate_and_says_why():
    p = progress(run([(100.0, sizes(1000, 250, 2000, 500, 0))]))
    assert (p.copied, p.total, p.remaining) == (750, 1000 + 2 * 2000, 4250)
    assert p.rate is None and p.eta is None and "second" in p.eta_note
    assert p.running == 2


def test_rate_and_eta_from_two_samples():
    p = progress(run([(100.0, sizes(1000, 0, 2000, 0, 0)), (110.0, sizes(1000, 500, 2000, 500, 0))]))
    assert p.rate == pytest.approx(100.0) and p.growth == 0
    assert p.eta == pytest.approx(p.remaining / 100.0)
    assert p.window == 10.0


def test_per_broker_sums_and_per_partition_rates():
    p = progress(run([(0.0, sizes(1000, 0, 2000, 0, 0)), (10.0, sizes(1000, 400, 2000, 600, 200))]))
    by = {b.broker: b for b in p.brokers}
    assert (by[3].partitions, by[3].copied, by[3].total) == (2, 1000, 3000)
    assert (by[4].partitions, by[4].copied, by[4].total) == (1, 200, 2000)
    assert by[3].rate == pytest.approx(100.0) and by[4].rate == pytest.approx(20.0)
    assert sum(b.copied for b in p.brokers) == p.copied and sum(b.total for b in p.brokers) == p.total
    parts = {(x.topic, x.partition): x for x in p.partitions}
    assert parts[("t", 1)].rate == pytest.approx(80.0) and parts[("t", 0)].rate == pytest.approx(40.0)
    assert [x.partition for x in p.partitions] == [1, 0], "the slowest (least copied) first"


def test_progress_only_grows_and_a_finished_partition_stays_counted_whole():
    points = [(0.0, sizes(1000, 0, 2000, 0, 0)), (5.0, sizes(1000, 600, 2000, 100, 100)),
              (10.0, sizes(1000, 1000, 2000, 900, 800), (T1,)),  # t-0 completed: gone from the running list
              (15.0, sizes(1000, 1000, 2000, 2000, 2000), ())]
    samples, seen = (), []
    for pt in points:
        samples = run([pt]) if not samples else record(samples, sample_of(pt[0], pt[2] if len(pt) > 2 else (T0, T1),
                                                                          pt[1], samples[-1]))
        p = progress(samples)
        seen.append((p.copied, p.total))
    assert [t for _, t in seen] == [5000] * 4, "the total never shrinks as partitions complete"
    assert [c for c, _ in seen] == sorted(c for c, _ in seen)
    last = progress(samples)
    assert last.fraction == 1.0 and last.running == 0 and last.eta == 0.0


def test_a_new_replica_bigger_than_its_leader_counts_as_whole_not_more():
    p = progress(run([(0.0, sizes(1000, 1200, 2000, 0, 0))]))
    assert p.partitions[-1].copied == 1000 and p.partitions[-1].fraction == 1.0


def test_leader_growth_remaining_is_leader_minus_new_replica_and_the_eta_uses_the_closing_rate():
    # t-0 alone; the leader grows 50 B/s under traffic while 150 B/s are copied
    p = progress(run([(0.0, {(1, "t", 0): 1000, (3, "t", 0): 0}), (10.0, {(1, "t", 0): 1500, (3, "t", 0): 1500})],
                     running=(T0,)))
    assert (p.copied, p.total, p.remaining) == (1500, 1500, 0)
    p = progress(run([(0.0, {(1, "t", 0): 1000, (3, "t", 0): 0}), (10.0, {(1, "t", 0): 1500, (3, "t", 0): 1000})],
                     running=(T0,)))
    assert p.remaining == 500 and p.rate == pytest.approx(100.0) and p.growth == pytest.approx(50.0)
    assert p.eta == pytest.approx(500 / 50.0) and "growth" in p.eta_note


def test_eta_none_when_the_leaders_grow_as_fast_as_the_copy():
    p = progress(run([(0.0, {(1, "t", 0): 1000, (3, "t", 0): 0}), (10.0, {(1, "t", 0): 2000, (3, "t", 0): 1000})],
                     running=(T0,)))
    assert p.eta is None and "never catch up" in p.eta_note


def test_eta_none_on_no_rate_says_stalled():
    p = progress(run([(0.0, sizes(1000, 300, 2000, 0, 0)), (10.0, sizes(1000, 300, 2000, 0, 0))]))
    assert p.rate == 0 and p.eta is None and "stalled" in p.eta_note


def test_the_rate_window_compares_with_the_oldest_sample_inside_it():
    pts = [(float(t), sizes(10_000, 100 * t if t < 30 else 3000 + 10 * (t - 30), 2000, 0, 0), (T0,))
           for t in range(0, 61, 5)]
    samples = run(pts, window=20.0, running=(T0,))
    assert samples[0].at == 35.0 and samples[1].at == 40.0, "samples older than the window are dropped, but one"
    p = progress(samples, window=20.0)
    assert p.window == 20.0 and p.rate == pytest.approx(10.0), "the burst of the first 30 s is out of the window"
    everything = run(pts, window=1000.0, running=(T0,))
    assert len(everything) == 13 and progress(everything, window=20.0).rate == pytest.approx(10.0)
    assert progress(everything, window=100.0).rate == pytest.approx(3300 / 60.0), "since the first sample"


def test_samples_sparser_than_the_window_still_give_a_rate():
    p = progress(run([(0.0, sizes(1000, 0, 2000, 0, 0)), (300.0, sizes(1000, 300, 2000, 0, 0))], window=60.0))
    assert p.rate == pytest.approx(1.0) and p.window == 300.0


def test_a_new_reassignment_starts_afresh():
    a = run([(0.0, sizes(1000, 1000, 2000, 2000, 2000)), (5.0, sizes(1000, 1000, 2000, 2000, 2000), ())])
    other = Moving("u", 0, (1, 2), adding=(2,), removing=(), leader=1)
    b = record(a, sample_of(10.0, (other,), {(1, "u", 0): 10, (2, "u", 0): 0}, a[-1]))
    assert len(b) == 1 and [m.key for m in b[-1].running] == [("u", 0)]
    assert progress(b).total == 10


def test_samples_round_trip_through_json_and_refuse_another_document():
    samples = run([(0.0, sizes(1000, 0, 2000, 0, 0)), (10.0, sizes(1000, 500, 2000, 500, 0))])
    doc = json.loads(json.dumps(samples_to_json(samples, "c")))
    back = samples_from_json(doc, "c")
    assert back == samples and progress(back).to_dict() == progress(samples).to_dict()
    with pytest.raises(ValidationError, match="cluster c"):
        samples_from_json(doc, "other")
    with pytest.raises(ValidationError, match="format"):
        samples_from_json({"version": 1}, "c")


def test_the_line_and_json_say_the_same():
    p = progress(run([(0.0, sizes(1000, 0, 2000, 0, 0)), (10.0, sizes(1000, 500, 2000, 500, 0))]))
    d = p.to_dict()
    assert (d["copied"], d["total"], d["percent"], d["rate"]) == (1000, 5000, 20.0, 100.0)
    assert "1.0 KB of 5.0 KB copied (20.0 %)" in line(p) and "ETA 40 s" in line(p)
    assert progress(run([(0.0, sizes(1, 0, 2, 0, 0))])).to_dict()["eta_seconds"] is None


def test_running_of_a_snapshot_and_the_kafka_2_3_fallback():
    parts = (Partition("t", 0, (3, 2, 1), leader=1, isr=(1, 2), adding_replicas=(3,), removing_replicas=(1,)),
             Partition("t", 1, (2, 1), leader=2, isr=(2, 1)),
             Partition("u", 0, (4, 1), leader=1, isr=(1,)))  # Kafka < 2.4: no adding list, /admin node only
    snap = ClusterSnapshot(cluster="c", captured_at="", source="", brokers=(), topics=(Topic("t", parts[:2]), Topic("u", parts[2:])),
                           in_progress=InProgress(reassignment=(TopicPartitionReplicas("u", 0, (4,)),)))
    got = running_of(snap)
    assert [m.key for m in got] == [("t", 0), ("u", 0)]
    assert got[0] == Moving("t", 0, (3, 2, 1), (3,), (1,), 1)
    assert got[1].adding == (4,)


def test_a_partition_copied_but_still_in_the_admin_node_counts_as_finished():
    """Kafka 2.4+ clears the topic node's adding replicas before it takes the partition out of
    /admin/reassign_partitions: the partition is copied, not running with nothing to add (the totals shrank)."""
    done = Partition("t", 0, (3, 2), leader=2, isr=(2, 3))
    moving = Partition("t", 1, (3, 4, 2, 1), leader=2, isr=(2, 1), adding_replicas=(3, 4), removing_replicas=(2, 1))
    snap = ClusterSnapshot(cluster="c", captured_at="", source="", brokers=(), topics=(Topic("t", (done, moving)),),
                           in_progress=InProgress(reassignment=(TopicPartitionReplicas("t", 0, (3, 2)),
                                                                TopicPartitionReplicas("t", 1, (3, 4)))))
    assert [m.key for m in running_of(snap)] == [("t", 1)]
    samples = run([(0.0, sizes(1000, 600, 2000, 500, 500)),
                   (5.0, sizes(1000, 1000, 2000, 900, 900), running_of(snap))])
    p = progress(samples)
    assert (p.total, p.copied, p.running) == (5000, 2800, 1), "t-0 counted whole, not dropped from the totals"


def test_throttles_of_a_running_reassignment_are_kafkas():
    t = throttles_of((T0, T1), 5000)
    assert t.brokers == (1, 2, 3, 4) == reassigning_brokers((T0, T1))
    assert t.leader == {"t": "0:1,0:2,1:1,1:2"} and t.follower == {"t": "0:3,1:3,1:4"} and t.rate == 5000
    with pytest.raises(ReassignmentNotRunningError, match="No reassignment is running"):
        throttles_of((), 5000)


def test_samples_after_the_end_keep_the_finished_run_and_its_rate():
    done = sizes(1000, 1000, 2000, 2000, 2000)
    samples = run([(0.0, sizes(1000, 0, 2000, 0, 0)), (5.0, done, ()), (10.0, done, ()), (15.0, done, ())])
    assert len(samples) == 4, "a finished run stays followed: its samples are not dropped"
    p = progress(samples)
    assert (p.fraction, p.running, len(p.partitions), p.total) == (1.0, 0, 2, 5000)


def test_a_small_truncation_of_a_new_replica_does_not_take_progress_back_a_restart_does():
    samples = run([(0.0, sizes(1000, 600, 2000, 0, 0)), (5.0, sizes(1000, 450, 2000, 0, 0))])
    assert progress(samples).partitions[-1].copied == 600, "truncated to its high watermark: counted at 600"
    samples = run([(0.0, sizes(1000, 600, 2000, 0, 0)), (5.0, sizes(1000, 100, 2000, 0, 0))])
    assert progress(samples).partitions[-1].copied == 100, "lost more than half: started again"


def test_adding_replicas_missing_from_a_lagging_metadata_still_count_as_moving_brokers():
    lagging = Moving("t", 0, (1, 2), adding=(3,), removing=(1,), leader=1)
    assert reassigning_brokers((lagging,)) == (1, 2, 3)
