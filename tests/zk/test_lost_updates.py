"""No lost updates: a write computed from a read checks the version of that very read.

Forced interleavings, one per write path: the read runs for real, then another ZooKeeper client
changes the cluster (as a second operator or Kafka itself would), then Keel writes. Keel must refuse
with "changed while it was being written ... Try again", write nothing, and leave the other client's
change in place. On code that took the version from a later get(), each of these overwrote it.
"""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from core import zkformat as zf
from core.errors import InvalidPartitionsError, KeelError, ValidationError
from core.plans import parse_reassignment
from core.topics import draft_add_partitions
from core.audit.store import Store
from core.zk import election_writes, reassign_writes, topic_admin
from core.zk.reader import read_for_write
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3", 4: "r1"}, controller=1)
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]}, config={"retention.ms": "1000"})
        write_topic(s, "u", {0: [3, 1]}, states={0: (1, [3, 1])})
        yield s


@pytest.fixture
def other(zk_connect):
    """Another client of the same cluster (a second operator, or Kafka)."""
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "s.sqlite")


def after_read(monkeypatch, module, name, change):
    """Run `change()` right after `module.name` (a live read) returns: the forced interleaving."""
    real = getattr(module, name)

    def read_then_change(*args, **kwargs):
        result = real(*args, **kwargs)
        change()
        return result

    monkeypatch.setattr(module, name, read_then_change)


def grow(client, topic, partitions):
    data, _ = client.get(zf.topic_path(topic))
    node = json.loads(data)
    node["partitions"].update({str(p): r for p, r in partitions.items()})
    client.set(zf.topic_path(topic), json.dumps(node).encode())


def topic_partitions(s, topic):
    return sorted(zf.decode_topic(topic, s.get(zf.topic_path(topic)).data).partitions)


def test_add_partitions_does_not_overwrite_a_concurrent_growth(tree, other, store, monkeypatch):
    draft = draft_add_partitions(topic_admin.live_state(tree)[0], "t", 3)
    after_read(monkeypatch, topic_admin, "live_state", lambda: grow(other, "t", {2: [3, 4], 3: [4, 1], 4: [1, 2]}))
    with pytest.raises(InvalidPartitionsError, match="changed while it was being written.*Try again"):
        topic_admin.add_partitions(tree, store, draft, cluster="c")
    assert topic_partitions(tree, "t") == [0, 1, 2, 3, 4]  # the other client's 5 partitions stay
    assert store.actions()[0].status == "failed"


def test_alter_config_does_not_revert_a_concurrent_change(tree, other, store, monkeypatch):
    def set_min_isr():
        other.set(zf.topic_config_path("t"), zf.encode_config({"retention.ms": "1000", "min.insync.replicas": "2"}))
    after_read(monkeypatch, topic_admin, "live_state", set_min_isr)
    with pytest.raises(ValidationError, match="changed while it was being written"):
        topic_admin.alter_config(tree, store, "t", {"cleanup.policy": "compact"}, cluster="c")
    config = zf.decode_config(tree.get(zf.topic_config_path("t")).data, "")
    assert config == {"retention.ms": "1000", "min.insync.replicas": "2"}
    assert not tree.children(zf.CONFIG_CHANGES)  # no notification either: the multi failed as a whole


def test_alter_config_of_a_topic_without_config_node_does_not_overwrite_one_created_meanwhile(
        tree, other, store, monkeypatch):
    tree.delete(zf.topic_config_path("u"))
    after_read(monkeypatch, topic_admin, "live_state",
               lambda: other.create(zf.topic_config_path("u"), zf.encode_config({"retention.ms": "5"})))
    with pytest.raises(ValidationError, match="changed while it was being written"):
        topic_admin.alter_config(tree, store, "u", {"cleanup.policy": "compact"}, cluster="c")
    assert zf.decode_config(tree.get(zf.topic_config_path("u")).data, "") == {"retention.ms": "5"}


def test_delete_topic_refuses_a_topic_recreated_meanwhile(tree, other, store, monkeypatch):
    after_read(monkeypatch, topic_admin, "live_state", lambda: grow(other, "u", {1: [1, 3]}))
    with pytest.raises(ValidationError, match="changed while it was being written"):
        topic_admin.delete_topic(tree, store, "u", cluster="c")
    assert not tree.exists(zf.delete_topic_path("u"))


PLAN = parse_reassignment('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2]},'
                          '{"topic":"u","partition":0,"replicas":[3,4]}]}')


def test_execute_refuses_when_a_planned_topic_changed_meanwhile(tree, other, store, monkeypatch):
    """The rollback and the throttles were computed from the read: a reassignment made by someone else in
    between would make both wrong."""
    after_read(monkeypatch, reassign_writes, "_live", lambda: grow(other, "t", {0: [3, 4]}))
    configs = dump_tree(tree, "/config")
    with pytest.raises(ValidationError, match="changed while the reassignment was being written"):
        reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    assert dump_tree(tree, "/config") == configs  # no throttle written
    assert not tree.exists(zf.REASSIGN)
    assert topic_partitions(tree, "t") == [0, 1]


def test_execute_does_not_overwrite_a_config_changed_meanwhile(tree, other, store, monkeypatch):
    def set_retention():
        other.set(zf.topic_config_path("u"), zf.encode_config({"retention.ms": "7"}))
    after_read(monkeypatch, reassign_writes, "_live", set_retention)
    with pytest.raises(ValidationError, match="changed while the reassignment was being written"):
        reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    assert zf.decode_config(tree.get(zf.topic_config_path("u")).data, "") == {"retention.ms": "7"}
    assert not tree.exists(zf.REASSIGN)


def test_verify_does_not_overwrite_a_config_changed_meanwhile(tree, other, store, monkeypatch):
    reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    # the controller's work, done by hand: targets reached, node deleted
    for topic, partition, replicas in (("t", 0, [4, 2]), ("u", 0, [3, 4])):
        grow(other, topic, {partition: replicas})
    other.delete(zf.REASSIGN)

    def set_retention():
        data = json.loads(other.get(zf.topic_config_path("t"))[0])
        data["config"]["retention.ms"] = "99"
        other.set(zf.topic_config_path("t"), json.dumps(data).encode())
    after_read(monkeypatch, reassign_writes, "_live", set_retention)
    with pytest.raises(ValidationError, match="changed while the throttles were being removed"):
        reassign_writes.verify(tree, store, PLAN, cluster="c")
    config = zf.decode_config(tree.get(zf.topic_config_path("t")).data, "")
    assert config["retention.ms"] == "99"  # kept; the throttles go on the next verify
    monkeypatch.undo()
    assert reassign_writes.verify(tree, store, PLAN, cluster="c").throttles_removed
    config = zf.decode_config(tree.get(zf.topic_config_path("t")).data, "")
    assert config == {"retention.ms": "99"}


def test_rollback_refuses_when_a_topic_changed_meanwhile(tree, other, store, monkeypatch):
    done = reassign_writes.execute(tree, store, PLAN, cluster="c")
    for topic, partition, replicas in (("t", 0, [4, 2]), ("u", 0, [3, 4])):
        grow(other, topic, {partition: replicas})
    other.delete(zf.REASSIGN)
    after_read(monkeypatch, reassign_writes, "_live", lambda: grow(other, "u", {0: [4, 3]}))
    with pytest.raises(ValidationError, match="changed while the reassignment was being written"):
        reassign_writes.rollback(tree, store, done.action_id, cluster="c")
    assert not tree.exists(zf.REASSIGN)


def test_election_refuses_when_the_preferred_replica_changed_meanwhile(tree, other, store, monkeypatch):
    # u-0: replicas [3, 1], leader 1 -> the preferred replica 3 is eligible.
    after_read(monkeypatch, election_writes, "read_for_write", lambda: grow(other, "u", {0: [1, 3]}))
    with pytest.raises(ValidationError, match="changed while it was being written"):
        election_writes.trigger(tree, store, cluster="c", topic="u")
    assert not tree.exists(zf.PREFERRED_ELECTION)


def test_bulk_reads_for_writes_are_synced_first(tree, monkeypatch):
    """read_for_write syncs both connections before reading (a follower may lag the leader)."""
    calls = []
    real = type(tree).sync

    def sync(self, path="/"):
        calls.append(path)
        return real(self, path)
    monkeypatch.setattr(type(tree), "sync", sync)
    snap, t = read_for_write(tree)
    assert calls == ["/"] and snap.topic("t") is not None
    assert t.versions[zf.topic_path("t")] == tree.get(zf.topic_path("t")).version
    assert t.versions[zf.topic_config_path("t")] == 0


def test_every_write_path_reports_keel_errors_only(tree, store):
    """Sanity: without interference each path above succeeds (so the refusals are the interleaving's doing)."""
    snap = topic_admin.live_state(tree)[0]
    topic_admin.add_partitions(tree, store, draft_add_partitions(snap, "t", 3), cluster="c")
    topic_admin.alter_config(tree, store, "t", {"cleanup.policy": "compact"}, cluster="c")
    try:
        election_writes.trigger(tree, store, cluster="c", topic="u")
    except KeelError as e:  # pragma: no cover - a failure message is more useful than a bare assert
        pytest.fail(str(e))
    assert tree.exists(zf.PREFERRED_ELECTION)
