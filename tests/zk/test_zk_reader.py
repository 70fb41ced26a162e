"""The ZooKeeper gateway against a real ZooKeeper: connecting, snapshot reading, corrupt znodes."""

import json
import socket
import time

import pytest

from core import zkformat as zf
from core.errors import ConnectStringError, NoKafkaError, ZooKeeperUnreachableError
from core.model import ClusterSnapshot
from core.zk.reader import read_snapshot
from core.zk.session import Op, ZkSession, ZkSettings, parse_connect_string
from tests.support.kafka_tree import write_cluster, write_topic


@pytest.fixture
def session(zk_connect):
    with ZkSession.open(zk_connect) as s:
        yield s


# --- connect strings ---------------------------------------------------------------------------


def test_connect_string_forms():
    cs = parse_connect_string("zk1:2181,zk2:2182,[::1]:2183/kafka/prod")
    assert cs.hosts == (("zk1", 2181), ("zk2", 2182), ("[::1]", 2183)) and cs.chroot == "/kafka/prod"
    assert parse_connect_string("zk1").hosts == (("zk1", 2181),)
    assert parse_connect_string("zk1:2181/").chroot is None


@pytest.mark.parametrize("bad,needle", [
    ("", "empty ZooKeeper connect string"),
    ("zk1:notaport", "invalid ZooKeeper host"),
    ("zk1:70000", "must be 1-65535"),
    ("zk1:2181,,zk2:2181", "invalid ZooKeeper host"),
    ("zk1:2181/kafka/", "invalid chroot"),
    ("zk1:2181//kafka", "invalid chroot"),
    ("zk1:2181/a/../b", "invalid chroot"),
])
def test_malformed_connect_strings(bad, needle):
    with pytest.raises(ConnectStringError, match=needle):
        parse_connect_string(bad)


def test_unreachable_zookeeper_fails_within_the_timeout():
    with socket.socket() as s:  # a port that is certainly closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ZooKeeperUnreachableError, match=f"127.0.0.1:{port} within 2 s"):
        ZkSession.open(ZkSettings(connect=f"127.0.0.1:{port}", connect_timeout=2))
    assert time.monotonic() - t0 < 8


def test_chroot_without_kafka_says_no_brokers_are_registered(session):
    with pytest.raises(NoKafkaError, match="no Kafka brokers are registered under /t-"):
        read_snapshot(session)


# --- snapshots ---------------------------------------------------------------------------------


def test_snapshot_of_a_hand_written_tree(session):
    write_cluster(session, {1: "r1", 2: "r2", 3: "r1"}, controller=2)
    write_topic(session, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, states={0: (1, [1, 2]), 1: (-1, [3])},
                config={"min.insync.replicas": "2"})
    write_topic(session, "audit", {0: [3, 4]})  # broker 4 is not registered: dead
    session.create(zf.broker_config_path("<default>"), zf.encode_config({"leader.imbalance.per.broker.percentage": "20"}))
    session.create(zf.delete_topic_path("audit"), b"")
    session.create(zf.REASSIGN, zf.encode_reassignment([]))

    snap = read_snapshot(session, cluster="test")
    assert [b.id for b in snap.brokers] == [1, 2, 3, 4]
    assert [b.alive for b in snap.brokers] == [True, True, True, False]
    assert snap.broker_by_id[1].rack == "r1" and snap.broker_by_id[1].endpoints == ("PLAINTEXT://host1:9092",)
    assert (snap.controller.broker_id, snap.controller.epoch) == (2, 3)
    assert snap.cluster_id == "kT3bq0m1RZ2b8iA9o0lHcA"
    assert [t.name for t in snap.topics] == ["audit", "orders"]
    orders = snap.topic("orders")
    assert orders.config == {"min.insync.replicas": "2"} and orders.topic_id == "AAAAAAAAAAAAAAAAAAAAAA"
    p0, p1 = orders.partitions
    assert (p0.leader, p0.isr, p0.replicas) == (1, (1, 2), (1, 2, 3))
    assert (p1.leader, p1.isr) == (-1, (3,))
    assert snap.in_progress.deletion == ("audit",)
    assert snap.broker_config(1, "leader.imbalance.per.broker.percentage") == "20"
    assert snap.problems == ()
    # The snapshot format round-trips.
    again = ClusterSnapshot.from_json(snap.to_json())
    assert again.to_dict() == snap.to_dict()
    assert json.loads(snap.to_json())["format"] == "keel.snapshot/1"


def test_corrupt_znodes_are_reported_and_the_rest_loads(session):
    write_cluster(session, {1: None, 2: None})
    write_topic(session, "good", {0: [1, 2]})
    write_topic(session, "bad-state", {0: [1, 2], 1: [2, 1]})
    session.set(zf.state_path("bad-state", 1), b"{garbage")
    session.create(zf.topic_path("bad-topic"), b'{"version":1,"partitions":{"0":"oops"}}')
    session.set(zf.broker_path(2), b"not json")
    session.create(zf.CONTROLLER, b'{"version":1}')

    snap = read_snapshot(session)
    problems = {p.path: p.error for p in snap.problems}
    assert set(problems) == {"/brokers/topics/bad-state/partitions/1/state", "/brokers/topics/bad-topic",
                             "/brokers/ids/2", "/controller"}
    assert "not JSON" in problems["/brokers/ids/2"]
    assert [t.name for t in snap.topics] == ["bad-state", "good"]
    bad = snap.topic("bad-state")
    assert bad.partitions[0].has_state and not bad.partitions[1].has_state
    assert snap.broker_by_id[2].alive  # registered, so alive, even if its payload is unreadable
    assert snap.controller.broker_id is None


def test_partition_without_state_node(session):
    write_cluster(session, {1: None})
    write_topic(session, "fresh", {0: [1], 1: [1]}, states={0: (1, [1])})
    p = read_snapshot(session).topic("fresh").partitions
    assert p[0].has_state and not p[1].has_state and p[1].leader == -1


def test_reader_reports_progress(session):
    write_cluster(session, {1: None})
    for i in range(5):
        write_topic(session, f"t{i}", {p: [1] for p in range(4)})
    seen = []
    read_snapshot(session, progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert ("states", 20, 20) in seen and ("topics", 5, 5) in seen


# --- session writes ------------------------------------------------------------------------------


def test_multi_is_atomic(session):
    from core.errors import ZkNodeExistsError

    session.create("/a", b"1")
    with pytest.raises(ZkNodeExistsError) as e:
        session.multi([Op("create", "/b", b"2"), Op("create", "/a", b"3")])
    assert e.value.path == "/a"
    assert not session.exists("/b") and session.get("/a").data == b"1"


def test_bulk_create_and_delete_tree(session):
    nodes = [("/x", b"")] + [(f"/x/{i}", str(i).encode()) for i in range(300)]
    assert session.create_many(nodes) == 301
    assert session.create_many(nodes[:2]) == 0  # existing nodes are skipped
    got = list(session.get_many([f"/x/{i}" for i in range(300)] + ["/x/missing"]))
    assert [n.data for n in got[:3]] == [b"0", b"1", b"2"] and got[-1].data is None
    assert session.delete_tree("/x") == 301 and not session.exists("/x")


def test_bulk_reader_survives_an_idle_expiry_and_a_dropped_connection(zk_connect):
    with ZkSession.open(ZkSettings(connect=zk_connect, session_timeout=2)) as s:
        s.create("/n", b"1")
        assert [n.data for n in s.get_many(["/n"])] == [b"1"]
        time.sleep(2.2)  # longer than the reader's session: it must reconnect, not fail
        assert [n.data for n in s.get_many(["/n"])] == [b"1"]
        s._wire._sock.close()  # the server went away under it
        assert s.children_many(["/"])["/"] == ["n"]
