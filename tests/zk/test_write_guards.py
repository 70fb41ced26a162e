"""Issue 23, item 8: what a write was validated against still holds when it commits, in the same transaction.

Each race is forced, with real `python -m core` processes against a real ZooKeeper: the CLI reads and plans, then
stops right before its multi-op (core.zk.faults' pause hook, `keel-test-pause: before-multi`), the other write
lands exactly then, and the CLI commits. The loser refuses with Kafka's message and the tree is compared byte for
byte: nothing of it was written.

- add-partitions while the topic gets marked for deletion (kafka-topics --delete): "The topic is queued for
  deletion." (what Keel says when the two run one after the other);
- a preferred election while a reassignment of one of its partitions starts (/admin/reassign_partitions created,
  or rewritten to list it): refused, nothing written;
- create-topic of `race.c2` and of `race_c2` at once, both having read before either wrote: one is created, the
  other refused with "collides with existing topics" (Kafka checks only at read time, so two of its creates can
  both pass; Keel's own cannot).
And the mechanism itself (core.zk.ops' `absent` op) on its edge cases.
"""

from __future__ import annotations

import pytest

from core import zkformat as zf
from core.errors import ZkNodeExistsError
from core.audit.store import Store
from core.zk.ops import Op
from core.zk.session import ZkSession
from core.zk.topic_admin import MAX_COLLIDING_CHECKS, colliding_names
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.faults.test_faults import Cli

PAUSE = {"KEEL_TEST_PAUSE_BEFORE_WRITE": "3"}  # long enough for the test's own write to land first


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        # t-0 and t-1 are led by their second replica: both eligible for a preferred election.
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]}, states={0: (2, [1, 2]), 1: (3, [2, 3])})
        yield s


def argv(command: str, connect: str, store, *rest: str) -> list[str]:
    return [command, "--zk", connect, "--store", str(store), *rest]


def only_action(store) -> object:
    [action] = Store(store).actions()
    return action


def test_add_partitions_refused_when_the_topic_is_marked_for_deletion_in_between(cluster, zk_connect, tmp_path):
    store = tmp_path / "keel.sqlite"
    cli = Cli(argv("add-partitions", zk_connect, store, "--topic", "t", "--partitions", "4"), **PAUSE)
    cli.wait_paused()
    cluster.create(zf.delete_topic_path("t"))  # kafka-topics --delete, between Keel's read and its write
    before = dump_tree(cluster)
    code, out, err = cli.finish()
    assert code == 1 and "error: The topic is queued for deletion." in err, (out, err)
    assert "Traceback" not in err
    assert dump_tree(cluster) == before, "add-partitions wrote to a topic queued for deletion"
    assert only_action(store).status == "failed"
    # The same message as when the two run one after the other.
    again = Cli(argv("add-partitions", zk_connect, store, "--topic", "t", "--partitions", "4"))
    code, _, err = again.finish()
    assert code == 1 and "error: The topic is queued for deletion." in err, err


@pytest.mark.parametrize("how", ["started", "changed"])
def test_election_refused_when_a_reassignment_of_its_partition_starts_in_between(cluster, zk_connect, tmp_path, how):
    """started: /admin/reassign_partitions absent at the read, created in between (absent op); changed: it lists
    another topic's partition at the read and is rewritten in between to list t-0 too (version check)."""
    write_topic(cluster, "u", {0: [1, 2]})
    if how == "changed":
        cluster.create(zf.REASSIGN, zf.encode_reassignment([zf.TopicPartitionReplicas("u", 0, (2, 3))]))
    store = tmp_path / "keel.sqlite"
    cli = Cli(argv("elect", zk_connect, store, "--no-wait", "--topic", "t"), **PAUSE)
    cli.wait_paused()
    moving = zf.encode_reassignment([zf.TopicPartitionReplicas("t", 0, (2, 1)), zf.TopicPartitionReplicas("u", 0, (2, 3))])
    if how == "started":
        cluster.create(zf.REASSIGN, moving)
    else:
        cluster.set(zf.REASSIGN, moving)
    before = dump_tree(cluster)
    code, out, err = cli.finish()
    assert code == 1 and "A partition reassignment started or changed while the election was being written" in err, \
        (out, err)
    assert "Traceback" not in err
    assert not cluster.exists(zf.PREFERRED_ELECTION)
    assert dump_tree(cluster) == before
    assert only_action(store).status == "failed"


def test_election_still_goes_through_untouched_reassignment(cluster, zk_connect, tmp_path):
    """A reassignment of other partitions, unchanged between read and write, does not stop the election, and the
    guard leaves /admin/reassign_partitions as it was."""
    write_topic(cluster, "u", {0: [1, 2]})
    cluster.create(zf.REASSIGN, zf.encode_reassignment([zf.TopicPartitionReplicas("u", 0, (2, 3))]))
    reassign_before = cluster.get(zf.REASSIGN)
    code, out, err = Cli(argv("elect", zk_connect, tmp_path / "keel.sqlite", "--no-wait", "--topic", "t")).finish()
    assert code == 0, err
    assert set(zf.decode_preferred_election(cluster.get(zf.PREFERRED_ELECTION).data)) == {("t", 0), ("t", 1)}
    assert cluster.get(zf.REASSIGN) == reassign_before


def test_colliding_creates_at_once_create_one_topic(cluster, zk_connect, tmp_path):
    store = tmp_path / "keel.sqlite"
    before = dump_tree(cluster)
    names = ("race.c2", "race_c2")
    clis = [Cli(argv("create-topic", zk_connect, store, "--topic", name, "--partitions", "2",
                     "--replication-factor", "2"), **PAUSE) for name in names]
    for cli in clis:
        cli.wait_paused()
    # Forced: each read the cluster before the other wrote (a write comes 3 s after its pause marker).
    assert abs(clis[0].paused_at - clis[1].paused_at) < 2.5, "the two reads were not both before both writes"
    results = [cli.finish() for cli in clis]
    assert all("Traceback" not in err for _, _, err in results)
    won = [name for name, (code, _, _) in zip(names, results) if code == 0]
    assert len(won) == 1, results
    winner = won[0]
    loser = next(n for n in names if n != winner)
    code, _, err = results[names.index(loser)]
    assert code == 1 and f"error: Topic '{loser}' collides with existing topics: {winner}" in err, err
    after = dump_tree(cluster)
    assert set(after) - set(before) == {zf.topic_path(winner), zf.topic_config_path(winner)}
    assert {p: after[p] for p in before} == before
    statuses = sorted((a.target, a.status) for a in Store(store).actions())
    assert statuses == sorted([(winner, "applied"), (loser, "failed")])


def test_colliding_names():
    assert colliding_names("race.c2") == ["race_c2"]
    assert colliding_names("orders") == []
    assert sorted(colliding_names("a.b_c")) == ["a.b.c", "a_b.c", "a_b_c"]
    assert colliding_names("_") == []  # '.' is not a topic name
    assert colliding_names("__") == ["._", "_."]  # '..' is not one either
    assert len(colliding_names("a.b.c.d.e.f.g.h.i")) == MAX_COLLIDING_CHECKS  # 8 such characters: all checked
    assert colliding_names("a.b.c.d.e.f.g.h.i.j") == []  # 9: at read time only, as Kafka


# --- the absent op (core.zk.ops) -----------------------------------------------------------------------------------


def test_absent_op_fails_the_multi_when_the_node_exists_and_leaves_nothing_otherwise(zk_connect):
    with ZkSession.open(zk_connect) as s:
        s.ensure_path("/a/b")
        s.create("/a/b/here", b"x")
        before = dump_tree(s)
        # Absent nodes, one under ancestors that do not exist: the multi goes through and leaves nothing of them.
        assert s.multi([Op("absent", "/a/b/gone"), Op("absent", "/no/such/parent/node"),
                        Op("create", "/a/b/new", b"y")]) == [None, None, "/a/b/new"]
        assert dump_tree(s) == {**before, "/a/b/new": b"y"}
        # A present one: the whole multi fails on its path, and the create before it is undone.
        with pytest.raises(ZkNodeExistsError) as e:
            s.multi([Op("create", "/a/b/other", b"z"), Op("absent", "/a/b/here")])
        assert e.value.path == "/a/b/here"
        assert dump_tree(s) == {**before, "/a/b/new": b"y"}


def test_absent_op_fails_when_a_missing_ancestor_appears_before_the_commit(zk_connect, monkeypatch):
    """The expansion reads which ancestors exist; one created between that read and the commit fails the multi on
    it (never a wrong success)."""
    with ZkSession.open(zk_connect) as s, ZkSession.open(zk_connect) as other:
        from core.zk import faults

        monkeypatch.setattr(faults, "pause", lambda point: point == "before-multi" and other.create("/late", b""))
        with pytest.raises(ZkNodeExistsError) as e:
            s.multi([Op("absent", "/late/node")])
        assert e.value.path == "/late"
        assert not s.exists("/late/node")
