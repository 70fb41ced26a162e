"""Issue 5's story, end to end: Keel's election command against the sandbox controller in a real ZooKeeper.

8 brokers 0-7, a topic of 8 partitions, RF 3, placed with fixed start index 1 ([1,3,4] ... [0,2,3]).
"""

import pytest

from core.assignment import assign_replicas
from core.cli import main
from sandbox.emulator.controller import ControllerEmulator
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until
from sandbox.emulator.brokers import start_broker, stop_broker

PLACEMENT = assign_replicas([(b, None) for b in range(8)], 8, 3, fixed_start_index=1)


@pytest.fixture
def story(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {b: None for b in range(8)})
        write_topic(s, "story", PLACEMENT)
        with ControllerEmulator(s) as emulator:
            yield s, emulator


def leaders(s):
    return {p.partition: p.leader for p in read_snapshot(s).topic("story").partitions}


def isrs(s):
    return {p.partition: set(p.isr) for p in read_snapshot(s).topic("story").partitions}


def elect(capsys, s):
    code = main(["elect", "--zk", str(s.target), "--all", "--timeout", "20", "--store", str(s._store)])
    return code, capsys.readouterr().out


def test_the_election_story(story, capsys, tmp_path):
    s, _ = story
    s._store = tmp_path / "keel.sqlite"
    assert PLACEMENT[0] == [1, 3, 4] and PLACEMENT[7] == [0, 2, 3]

    for b in (1, 2, 4):
        stop_broker(s, b)
    got = leaders(s)
    assert (got[0], got[1], got[3]) == (3, 5, 6)
    assert all(not ({1, 2, 4} & isr) for isr in isrs(s).values())

    start_broker(s, 1)
    wait_until(lambda: sum(1 in isr for isr in isrs(s).values()) == sum(1 in r for r in PLACEMENT.values()),
               message="broker 1 back in every ISR it belongs to")
    assert 1 not in leaders(s).values()

    code, out = elect(capsys, s)
    assert code == 0, out  # everything that could be elected was
    assert "story-0: elected (leader 1" in out
    assert "not eligible: story-1 (leader 5, preferred 2): preferred broker 2 is down" in out
    assert "not eligible: story-3 (leader 6, preferred 4): preferred broker 4 is down" in out
    got = leaders(s)
    assert got[0] == 1 and got[1] == 5 and got[3] == 6

    start_broker(s, 2)
    start_broker(s, 4)
    wait_until(lambda: all(set(PLACEMENT[p]) == isr for p, isr in isrs(s).items()), message="full ISRs")
    code, out = elect(capsys, s)
    assert code == 0, out
    got = leaders(s)
    assert got == {p: r[0] for p, r in PLACEMENT.items()}
    assert sorted(got.values()) == list(range(8))  # every broker leads exactly one partition
