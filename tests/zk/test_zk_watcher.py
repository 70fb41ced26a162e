"""LiveCluster keeps a snapshot current from watches, against a real ZooKeeper."""

import pytest

from core import zkformat as zf
from core.model import TopicPartitionReplicas
from core.zk.session import ZkSession
from core.zk.watcher import LiveCluster
from tests.support.kafka_tree import write_broker, write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until


@pytest.fixture
def writer(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]})
        yield s


@pytest.fixture
def live(zk_connect, writer):
    session = ZkSession.open(zk_connect)
    lc = LiveCluster(session, cluster="t").start()
    yield lc
    lc.stop()
    session.close()


def test_broker_leaving_and_joining(live, writer):
    writer.delete(zf.broker_path(3))
    snap = live.wait_for(lambda s: not s.broker_by_id[3].alive)
    # not registered now: its rack is the one its last registration said, marked as remembered (issue 24, item 8)
    assert snap.broker_by_id[3].rack == "r3" and snap.broker_by_id[3].remembered
    write_broker(writer, 3, "r3")
    snap = live.wait_for(lambda s: s.broker_by_id[3].alive)
    assert snap.broker_by_id[3].rack == "r3" and not snap.broker_by_id[3].remembered
    write_broker(writer, 9, "r1")
    assert live.wait_for(lambda s: 9 in s.broker_by_id).broker_by_id[9].alive


def test_leader_and_isr_changes(live, writer):
    writer.set(zf.state_path("orders", 1), zf.encode_partition_state(3, 1, 1, [3, 1]))
    snap = live.wait_for(lambda s: s.topic("orders").partitions[1].leader == 3)
    p = snap.topic("orders").partitions[1]
    assert p.isr == (3, 1) and p.leader_epoch == 1
    # the other partition's Topic object is rebuilt with it, but its data is untouched
    assert snap.topic("orders").partitions[0].leader == 1


def test_topics_created_grown_and_deleted(live, writer):
    generation = live.generation
    write_topic(writer, "payments", {0: [2, 3]}, config={"retention.ms": "1000"})
    snap = live.wait_for(lambda s: s.topic("payments") is not None and s.topic("payments").partitions[0].has_state
                         and s.topic("payments").config == {"retention.ms": "1000"})
    assert snap.topic("payments").partitions[0].isr == (2, 3)
    assert live.generation > generation

    # add a partition: topic node rewritten, then the new state appears
    writer.set(zf.topic_path("payments"), zf.encode_topic({0: [2, 3], 1: [3, 1]}))
    writer.create(zf.state_path("payments", 1), zf.encode_partition_state(3, 0, 1, [3, 1]), makepath=True)
    live.wait_for(lambda s: len(s.topic("payments").partitions) == 2 and s.topic("payments").partitions[1].leader == 3)

    writer.delete_tree(zf.topic_path("payments"))
    live.wait_for(lambda s: s.topic("payments") is None)


@pytest.mark.parametrize("read", ["get", "get_many", "children"])
def test_a_node_created_between_the_read_and_its_watch_is_read(zk_connect, writer, read):
    """The race that once lost a new partition: the read finds no node, the node is created, and
    only then is the exists-watch set. That watch never fires for the creation, so the reader must
    notice the node is there and read it. The interleaving is forced by creating the node inside
    the exists call; a real ZooKeeper does the rest."""
    path = zf.state_path("orders", 7)
    with ZkSession.open(zk_connect) as s:
        real_exists = s._client.exists

        def created_meanwhile(p, watch=None):
            if p == path and not writer.exists(p):
                writer.create(p, b'{"x":1}', makepath=True)
            return real_exists(p, watch=watch)

        s._client.exists = created_meanwhile
        events = []
        watch = lambda p, kind: events.append((p, kind))  # noqa: E731
        if read == "get":
            assert s.get(path, watch=watch).data == b'{"x":1}'
        elif read == "get_many":
            assert [n.data for n in s.get_many([path], watch=watch)] == [b'{"x":1}']
        else:
            assert s.children(path, watch=watch) == []
        # and the watch now set is the node's own: a change to it is reported
        if read == "children":
            writer.create(path + "/c", b"")
        else:
            writer.set(path, b'{"x":2}')
        wait_until(lambda: events, 5, message="the watch to fire")
        assert events[0][0].endswith(path)


def test_admin_nodes_appear_and_go(live, writer):
    writer.create(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas("orders", 0, (3, 2, 1))]))
    writer.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("orders", 1)]))
    writer.create(zf.delete_topic_path("orders"), b"")
    snap = live.wait_for(lambda s: s.in_progress.reassignment and s.in_progress.preferred_election
                         and s.in_progress.deletion)
    assert snap.in_progress.reassignment[0].replicas == (3, 2, 1)
    assert snap.in_progress.preferred_election == (("orders", 1),)
    assert snap.in_progress.deletion == ("orders",)
    writer.delete(zf.REASSIGN)
    writer.delete(zf.PREFERRED_ELECTION)
    writer.delete(zf.delete_topic_path("orders"))
    live.wait_for(lambda s: not (s.in_progress.reassignment or s.in_progress.preferred_election
                                 or s.in_progress.deletion))


def test_controller_and_config_changes(live, writer):
    writer.delete(zf.CONTROLLER)
    live.wait_for(lambda s: s.controller.broker_id is None)
    writer.create(zf.CONTROLLER, zf.encode_controller(2, 5))
    writer.set(zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(4))
    live.wait_for(lambda s: (s.controller.broker_id, s.controller.epoch) == (2, 4))
    writer.set(zf.topic_config_path("orders"), zf.encode_config({"cleanup.policy": "compact"}))
    live.wait_for(lambda s: s.topic("orders").config == {"cleanup.policy": "compact"})
    writer.create(zf.broker_config_path(2), zf.encode_config({"follower.replication.throttled.rate": "100"}))
    live.wait_for(lambda s: s.broker_config(2, "follower.replication.throttled.rate") == "100")


def test_corrupt_update_becomes_a_problem_then_heals(live, writer):
    writer.set(zf.state_path("orders", 0), b"{broken")
    snap = live.wait_for(lambda s: any(p.path.endswith("orders/partitions/0/state") for p in s.problems))
    assert not snap.topic("orders").partitions[0].has_state
    writer.set(zf.state_path("orders", 0), zf.encode_partition_state(2, 3, 1, [2, 3]))
    snap = live.wait_for(lambda s: not s.problems)
    assert snap.topic("orders").partitions[0].leader == 2


def test_unchanged_snapshot_is_reused(live):
    assert live.snapshot() is live.snapshot()
