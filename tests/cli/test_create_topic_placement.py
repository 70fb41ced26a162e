"""`create-topic` says what it writes (issue 23, item 7): the real create prints every partition's replicas as the
topic node holds them; a dry run says its placement is a random draw and prints the --seed that reproduces it, so a
create with that seed writes exactly what the dry run showed. Against a real ZooKeeper holding a hand-written
cluster (the create needs no controller).
"""

from __future__ import annotations

import re

import pytest

from core import zkformat as zf
from core.assignment import assign_replicas, brokers_for_mode
from core.cli import main
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster

LINE = re.compile(r"^  partition (\d+): replicas ([\d,]+)$", re.M)
SEED = re.compile(r"--seed (\d+) reproduces this one")


@pytest.fixture
def cluster(zk_connect):
    """Six brokers without racks: 30 distinct random placements of a topic (start index x follower shift)."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {b: None for b in range(1, 7)}, controller=1)
        yield s


def create(capsys, zk_connect, tmp_path, *argv: str) -> str:
    code = main(["create-topic", "--zk", zk_connect, "--store", str(tmp_path / "keel.sqlite"), *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def shown(out: str) -> dict[int, list[int]]:
    return {int(p): [int(b) for b in r.split(",")] for p, r in LINE.findall(out)}


def written(session, topic: str) -> dict[int, list[int]]:
    return {p: list(r) for p, r in zf.decode_topic(topic, session.get(zf.topic_path(topic)).data).partitions.items()}


def test_the_create_prints_the_assignment_it_wrote(cluster, zk_connect, tmp_path, capsys):
    out = create(capsys, zk_connect, tmp_path, "--topic", "clicks", "--partitions", "12", "--replication-factor", "3")
    assert "created topic clicks: 12 partitions, replication factor 3" in out
    assert shown(out) == written(cluster, "clicks") and len(shown(out)) == 12
    # and the seed of that draw: the same placement again, on a topic of another name
    seed = SEED.search(out)[1]
    out = create(capsys, zk_connect, tmp_path, "--topic", "clicks2", "--partitions", "12", "--replication-factor",
                 "3", "--seed", seed)
    assert written(cluster, "clicks2") == written(cluster, "clicks") == shown(out)


def test_a_large_topic_is_printed_whole(cluster, zk_connect, tmp_path, capsys):
    out = create(capsys, zk_connect, tmp_path, "--topic", "big", "--partitions", "3000", "--replication-factor", "2")
    assert shown(out) == written(cluster, "big") and len(LINE.findall(out)) == 3000


def test_a_dry_run_prints_the_seed_that_reproduces_its_random_placement(cluster, zk_connect, tmp_path, capsys):
    args = ("--topic", "orders", "--partitions", "8", "--replication-factor", "3")
    previews = []
    for _ in range(8):
        out = create(capsys, zk_connect, tmp_path, *args, "--dry-run")
        assert "placement: drawn at random" in out and "every run places the replicas differently" in out
        previews.append((int(SEED.search(out)[1]), shown(out)))
    # the draws differ (the chance of 8 equal ones out of 30 placements is ~1e-12) ...
    assert len({str(p) for _, p in previews}) > 1
    # ... and each printed seed gives its own preview back, in a dry run as in the real create
    for seed, placement in previews[:3]:
        again = create(capsys, zk_connect, tmp_path, *args, "--dry-run", "--seed", str(seed))
        assert shown(again) == placement and f"placement: drawn with --seed {seed}" in again
    seed, placement = previews[0]
    out = create(capsys, zk_connect, tmp_path, *args, "--seed", str(seed))
    assert written(cluster, "orders") == placement == shown(out)


def test_fixed_start_index_and_explicit_assignments_draw_nothing(cluster, zk_connect, tmp_path, capsys):
    out = create(capsys, zk_connect, tmp_path, "--topic", "fixed", "--partitions", "6", "--replication-factor", "3",
                 "--fixed-start-index", "2", "--dry-run")
    assert "with --fixed-start-index 2 (no random draw" in out and "--seed" not in out
    brokers = brokers_for_mode([(b, None) for b in range(1, 7)], "enforced")
    assert shown(out) == assign_replicas(brokers, 6, 3, fixed_start_index=2)  # Kafka's own placement
    out = create(capsys, zk_connect, tmp_path, "--topic", "manual", "--replica-assignment", "1:2,3:4", "--dry-run")
    assert shown(out) == {0: [1, 2], 1: [3, 4]} and "placement:" not in out
