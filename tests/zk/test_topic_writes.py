"""Creating, growing, re-configuring and deleting topics against a real ZooKeeper and the sandbox.

Every refusal asserts the tree is byte-for-byte unchanged afterwards.
"""

import json
import random
import threading

import pytest

from core import zkformat as zf
from core.assignment import assign_replicas, brokers_for_mode
from core.cli import main
from core.errors import (
    AdminOperationError,
    BusyError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KeelError,
    KRaftControllerError,
    TopicExistsError,
)
from core.audit.store import Store
from core.topics import draft_add_partitions, draft_create_topic
from core.zk import topic_admin
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "keel.sqlite")


def cli(capsys, store, *argv):
    code = main([*argv, "--store", str(store.path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_create_topic_writes_kafkas_exact_placement(sandbox, store, capsys):
    snap = sandbox.snapshot()
    code, out, _ = cli(capsys, store, "create-topic", "--zk", sandbox.connect, "--topic", "clicks", "--partitions",
                       "12", "--replication-factor", "3", "--fixed-start-index", "0", "--config", "retention.ms=3600000")
    assert code == 0 and "created topic clicks: 12 partitions, replication factor 3" in out
    expected = assign_replicas(brokers_for_mode([b for b in snap.brokers if b.alive], "enforced"), 12, 3, 0)
    node = json.loads(sandbox.session.get(zf.topic_path("clicks")).data)
    assert node["partitions"] == {str(p): r for p, r in expected.items()}
    assert node["version"] == 3 and len(node["topic_id"]) == 22  # as the seeded (Kafka 3.x) topics are
    assert zf.decode_config(sandbox.session.get(zf.topic_config_path("clicks")).data, "") == {"retention.ms": "3600000"}
    assert not sandbox.session.children(zf.CONFIG_CHANGES)  # creating a topic sends no notification
    # the controller gives every partition a state: leader = first live replica
    topic = wait_until(lambda: (t := sandbox.snapshot().topic("clicks")) and all(p.has_state for p in t.partitions)
                       and t, message="partition states")
    assert all(p.leader == p.replicas[0] and p.isr == p.replicas for p in topic.partitions)
    [action] = store.actions()
    assert (action.kind, action.target, action.status) == ("create-topic", "clicks", "applied")
    assert [op["path"] for op in action.payload] == ["/config/topics/clicks", "/brokers/topics/clicks"]


def test_preview_equals_what_is_written(sandbox, store):
    snap = sandbox.snapshot()
    draft = draft_create_topic(snap, "previewed", partitions=7, replication_factor=2, rng=random.Random(99))
    topic_admin.create_topic(sandbox.session, store, draft, cluster="sb")
    written = zf.decode_topic("previewed", sandbox.session.get(zf.topic_path("previewed")).data)
    assert dict(written.partitions) == draft.assignment


def test_dry_run_writes_nothing(sandbox, store, capsys):
    before = dump_tree(sandbox.session, "/brokers")
    code, out, _ = cli(capsys, store, "create-topic", "--zk", sandbox.connect, "--topic", "dry", "--partitions", "3",
                       "--replication-factor", "2", "--dry-run", "--fixed-start-index", "1")
    assert code == 0 and "would create topic dry" in out and "kafka-topics.sh --bootstrap-server" in out
    assert dump_tree(sandbox.session, "/brokers") == before and store.actions() == []


@pytest.fixture
def tree(zk_connect):
    """A hand-written cluster: brokers 1-3 with racks, 4 without (partial racks), topics a.b and orders."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "a.b", {0: [1, 2]})
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]})
        yield s


def refused(session, exc, fn, *args, match=None, **kw):
    before = dump_tree(session)
    with pytest.raises(exc, match=match):
        fn(*args, **kw)
    assert dump_tree(session) == before


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(name="bad name!", partitions=1, replication_factor=1), InvalidTopicError, "Topic name is invalid"),
    (dict(name="a_b", partitions=1, replication_factor=1), InvalidTopicError, "collides with existing topics: a.b"),
    (dict(name="orders", partitions=1, replication_factor=1), TopicExistsError, "Topic 'orders' already exists."),
    (dict(name="big", partitions=1, replication_factor=4), InvalidReplicationFactorError,
     "Replication factor: 4 larger than available brokers: 3."),
    (dict(name="cfg", partitions=1, replication_factor=1, config={"retention.mz": "1"}), InvalidConfigurationError,
     "Unknown topic config name: retention.mz"),
    (dict(name="cfg", partitions=1, replication_factor=1, config={"min.insync.replicas": "zero"}),
     InvalidConfigurationError, "min.insync.replicas"),
    (dict(name="dup", replica_assignment="1:1"), InvalidReplicaAssignmentError, "duplicate"),
    (dict(name="gone", replica_assignment="1:7"), KeelError, "7"),
    (dict(name="__consumer_offsets", partitions=1, replication_factor=1), KeelError, "internal"),
])
def test_create_refusals_leave_the_tree_unchanged(tree, store, kwargs, exc, match):
    def attempt():
        snap, _ = topic_admin.live_state(tree)
        draft = draft_create_topic(snap, **kwargs)
        topic_admin.create_topic(tree, store, draft, cluster="t")
    refused(tree, exc, attempt, match=match)


def test_partial_rack_information_is_refused(tree, store):
    tree.create(zf.broker_path(4), zf.encode_broker(["PLAINTEXT://h4:9092"], rack=None, timestamp_ms=1))
    snap, _ = topic_admin.live_state(tree)
    refused(tree, AdminOperationError, draft_create_topic, snap, "x", 3, 2, match="Not all brokers have rack information")
    assert draft_create_topic(snap, "x", 3, 2, rack_mode="disabled").replication_factor == 2


def test_create_refused_while_marked_for_deletion_and_under_kraft(tree, store):
    snap, _ = topic_admin.live_state(tree)
    draft = draft_create_topic(snap, "later", 2, 2, fixed_start_index=0)
    tree.create(zf.delete_topic_path("later"), b"")  # stale marker: Kafka still deleting an old 'later'
    refused(tree, KeelError, topic_admin.create_topic, tree, store, draft, cluster="t", match="later")
    tree.delete(zf.delete_topic_path("later"))
    tree.set(zf.CONTROLLER, zf.encode_controller(3000, 1, kraft_controller_epoch=4))
    refused(tree, KRaftControllerError, topic_admin.create_topic, tree, store, draft, cluster="t")


def test_a_preview_that_went_stale_is_refused(tree, store):
    snap, _ = topic_admin.live_state(tree)
    draft = draft_create_topic(snap, "late", 3, 3, fixed_start_index=0)
    tree.delete(zf.broker_path(3))  # broker 3 left after the preview
    refused(tree, KeelError, topic_admin.create_topic, tree, store, draft, cluster="t", match="3")


def test_concurrent_creation_of_the_same_topic(zk_connect, tree, store):
    snap, _ = topic_admin.live_state(tree)
    draft = draft_create_topic(snap, "race", 6, 2, fixed_start_index=0)
    results: list[object] = []
    barrier = threading.Barrier(4)

    def racer():
        with ZkSession.open(zk_connect) as s:
            barrier.wait()
            try:
                results.append(topic_admin.create_topic(s, store, draft, cluster="t"))
            except KeelError as e:
                results.append(e)

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    won = [r for r in results if isinstance(r, topic_admin.Applied)]
    lost = [r for r in results if isinstance(r, KeelError)]
    assert len(won) == 1 and len(lost) == 3
    assert all("already exists" in str(e) for e in lost)
    # losers refused at re-validation write no record; losers of the multi-op race are recorded as failed
    statuses = [a.status for a in store.actions()]
    assert statuses.count("applied") == 1 and set(statuses) <= {"applied", "failed"}
    assert len(json.loads(tree.get(zf.topic_path("race")).data)["partitions"]) == 6


def test_add_partitions_keeps_topic_id_and_in_flight_maps(tree, store):
    tree.set(zf.topic_path("orders"), zf.encode_topic({0: [1, 2, 3], 1: [2, 3, 1]}, adding_replicas={1: [1]},
                                                      removing_replicas={}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    snap, _ = topic_admin.live_state(tree)
    refused(tree, KeelError, draft_add_partitions, snap, "orders", 4, match="reassignment is in progress")
    tree.set(zf.topic_path("orders"), zf.encode_topic({0: [1, 2, 3], 1: [2, 3, 1]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    snap, _ = topic_admin.live_state(tree)
    draft = draft_add_partitions(snap, "orders", 4)
    topic_admin.add_partitions(tree, store, draft, cluster="t")
    node = zf.decode_topic("orders", tree.get(zf.topic_path("orders")).data)
    assert node.topic_id == "AAAAAAAAAAAAAAAAAAAAAA" and node.version == 3
    assert dict(node.partitions) == draft.full_assignment and len(node.partitions) == 4


def test_shrinking_is_refused(tree, store):
    snap, _ = topic_admin.live_state(tree)
    refused(tree, InvalidPartitionsError, draft_add_partitions, snap, "orders", 1,
            match="Topic currently has 2 partitions, which is higher than the requested 1.")


def test_add_partitions_via_cli_gets_states_from_the_controller(sandbox, store, capsys):
    name = next(t.name for t in sandbox.snapshot().topics if not t.is_internal)
    before = len(sandbox.snapshot().topic(name).partitions)
    code, out, _ = cli(capsys, store, "add-partitions", "--zk", sandbox.connect, "--topic", name,
                       "--partitions", str(before + 2))
    assert code == 0, out
    wait_until(lambda: len(t := sandbox.snapshot().topic(name).partitions) == before + 2
               and all(p.has_state for p in t), message="new partitions with states")


def test_alter_config_writes_entity_then_notification(tree, store, capsys):
    code, out, _ = cli(capsys, store, "alter-config", "--zk", tree.target.__str__(), "--topic", "orders",
                       "--add-config", "retention.ms=1000", "--add-config", "cleanup.policy=compact")
    assert code == 0 and "retention.ms=1000" in out
    assert zf.decode_config(tree.get(zf.topic_config_path("orders")).data, "") == {
        "retention.ms": "1000", "cleanup.policy": "compact"}
    [change] = tree.children(zf.CONFIG_CHANGES)
    assert change.startswith("config_change_")
    assert json.loads(tree.get(f"{zf.CONFIG_CHANGES}/{change}").data) == {"version": 2, "entity_path": "topics/orders"}
    action = store.actions()[0]
    assert action.rollback == {"action": "alter-config", "topic": "orders", "config": {}}
    # deleting a key that is not set is refused; nothing written
    before = dump_tree(tree)
    code, _, err = cli(capsys, store, "alter-config", "--zk", str(tree.target), "--topic", "orders",
                       "--delete-config", "segment.ms")
    assert code == 1 and "Invalid config(s): segment.ms" in err and dump_tree(tree) == before


def test_delete_topic_marks_it_and_refuses_twice_and_internal(tree, store, capsys):
    code, out, _ = cli(capsys, store, "delete-topic", "--zk", str(tree.target), "--topic", "orders")
    assert code == 0 and tree.exists(zf.delete_topic_path("orders"))
    before = dump_tree(tree)
    code, _, err = cli(capsys, store, "delete-topic", "--zk", str(tree.target), "--topic", "orders")
    assert code == 1 and "already marked for deletion" in err and dump_tree(tree) == before
    write_topic(tree, "__consumer_offsets", {0: [1]})
    before = dump_tree(tree)
    code, _, err = cli(capsys, store, "delete-topic", "--zk", str(tree.target), "--topic", "__consumer_offsets")
    assert code == 1 and "internal topic" in err and dump_tree(tree) == before
    with pytest.raises(BusyError):
        topic_admin.delete_topic(tree, store, "orders", cluster="t")
