"""The states of a large cluster read in bulk (core.zk.wire.read_parallel), and read exactly: the same states, stat
versions and problems as kazoo's one-by-one reading.

- ZooKeeper 3.6+: a thousand reads per multiRead request, on the one session;
- a server without multiRead (< 3.6; simulated by naming it in wire._NO_MULTI_READ, as a failed probe does: the
  Debian server is 3.8): several sessions at once, each a slice; fewer when the server allows fewer;
- an unreadable znode is an error either way, and the session reads on.

Real ZooKeeper servers of the module's own (the packets and connections they count are ours alone).
PER_SESSION_MIN is lowered so that a few hundred partitions are split over every session, as 200,000 are."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from core import zkformat as zf
from core.errors import ZooKeeperAuthError
from core.zk import wire
from core.zk.reader import load_tree, read_snapshot
from core.zk.session import ZkSession
from core.zk.tree import ClusterTree
from sandbox.processes import zkserver
from tests.support.kafka_tree import write_cluster, write_topic

TOPICS, PARTITIONS = 8, 60  # 480 states: 60 per session over 8 sessions
TOPICS_NAMES = [f"t{t}" for t in range(TOPICS)]


def mntr(port: int, key: str) -> int:
    for line in (zkserver.four_letter_word(port, "mntr") or "").splitlines():
        if line.startswith(key + "\t"):
            return int(line.split()[1])
    raise AssertionError(f"mntr gave no {key}")


def alive_connections(port: int) -> int:
    return mntr(port, "zk_num_alive_connections")


def start_server(tmp_path_factory, name: str, **extra) -> zkserver.ZkProcess:
    for _ in range(5):
        try:
            return zkserver.start(zkserver.free_port(), tmp_path_factory.mktemp(name), timeout=60, detach=False,
                                  extra_config=extra or None, heap="256m")
        except zkserver.ZkPortInUse:
            continue
    raise RuntimeError("could not start a ZooKeeper for the bulk-read tests")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start_server(tmp_path_factory, "zk-bulk")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def split_small(monkeypatch):
    monkeypatch.setattr(wire, "PER_SESSION_MIN", 50, raising=False)


def without_multi_read(monkeypatch, server: zkserver.ZkProcess) -> None:
    monkeypatch.setattr(wire, "_NO_MULTI_READ", {(server.host, server.port)}, raising=False)


def seed(s: ZkSession) -> None:
    write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
    for t in range(TOPICS):
        name = f"t{t}"
        states = {p: (1 + (p + t) % 3, [1 + (p + t) % 3, 1 + (p + t + 1) % 3]) for p in range(PARTITIONS)}
        del states[(7 * t) % PARTITIONS]  # a partition the controller has not initialised: no state node
        write_topic(s, name, {p: [1 + (p + t) % 3, 1 + (p + t + 1) % 3, 1 + (p + t + 2) % 3]
                              for p in range(PARTITIONS)}, states=states)
    # corrupt states spread over every slice, and states rewritten so their versions differ
    for t, p in [(0, 3), (2, 59), (4, 30), (7, 58)]:
        s.set(zf.state_path(f"t{t}", p), b'{"version":1,"leader":"x"')
    s.set(zf.state_path("t5", 10), b"")
    for t in range(TOPICS):
        for _ in range(t % 3):
            s.set(zf.state_path(f"t{t}", 11), zf.encode_partition_state(2, 5, 2, [2, 3]))


def test_states_are_read_by_the_thousand_with_multiread_exactly_as_kazoo_reads_them(server):
    with ZkSession.open(server.connect) as root:
        root.ensure_path("/multi")
    with ZkSession.open(server.connect + "/multi") as s:
        seed(s)
        before = mntr(server.port, "zk_packets_received")
        bulk = load_tree(s, ClusterTree())
        requests = mntr(server.port, "zk_packets_received") - before
        one = load_tree(s, ClusterTree(), watch=lambda event: None)  # a watch: kazoo, one getData per znode
    # brokers, topics, configs and the single nodes one by one (~30 requests), the 480 states in one multiRead
    assert requests < 60, requests
    assert_same(bulk, one)


def assert_same(bulk: ClusterTree, one: ClusterTree) -> None:
    assert bulk.states == one.states and bulk.versions == one.versions and bulk.problems == one.problems
    assert bulk.build(captured_at="x").to_dict() == one.build(captured_at="x").to_dict()
    assert sum(len(bulk.states[t]) for t in TOPICS_NAMES) == TOPICS * PARTITIONS
    assert {p for p in bulk.problems if p.endswith("/state")} == {
        zf.state_path("t0", 3), zf.state_path("t2", 59), zf.state_path("t4", 30), zf.state_path("t7", 58),
        zf.state_path("t5", 10)}
    assert bulk.versions[zf.state_path("t2", 11)] == 2 and bulk.versions[zf.state_path("t0", 0)] == -1
    assert bulk.states["t2"][11].leader_epoch == 5 and bulk.states["t1"][7] is None


def test_without_multiread_states_are_read_over_several_sessions_exactly(server, split_small, monkeypatch):
    without_multi_read(monkeypatch, server)
    with ZkSession.open(server.connect) as root:
        root.ensure_path("/exact")
    with ZkSession.open(server.connect + "/exact") as s:
        seed(s)
        before = alive_connections(server.port)
        during: list[int] = []
        reading = threading.Event()

        def count() -> None:  # ZooKeeper's own count of connections, sampled while the reader runs
            while not reading.is_set():
                during.append(alive_connections(server.port))

        sampler = threading.Thread(target=count)
        sampler.start()
        try:
            bulk = load_tree(s, ClusterTree())
        finally:
            reading.set()
            sampler.join()
        # a watch sends every read through kazoo, one session: the reference
        one = load_tree(s, ClusterTree(), watch=lambda event: None)

    assert max(during) - before >= wire.PARALLEL_SESSIONS - 1  # the pipelined reader's sibling sessions
    assert_same(bulk, one)


def test_a_server_that_allows_fewer_connections_is_read_with_fewer_sessions(tmp_path_factory, split_small,
                                                                          monkeypatch):
    # kazoo's session, the pipelined reader and one more: ZooKeeper closes the connections past that
    capped = start_server(tmp_path_factory, "zk-capped", maxClientCnxns=3)
    without_multi_read(monkeypatch, capped)
    try:
        with ZkSession.open(capped.connect) as s:
            seed(s)
            seen = []
            snap = read_snapshot(s, progress=lambda stage, done, total: seen.append((stage, done, total)))
        with ZkSession.open(capped.connect) as s:  # what kazoo's one session reads
            reference = load_tree(s, ClusterTree(), watch=lambda event: None).build(captured_at=snap.captured_at)
    finally:
        capped.stop()
    assert snap.partition_count == TOPICS * PARTITIONS and ("states", 480, 480) in seen
    assert snap.to_dict() | {"source": ""} == reference.to_dict() | {"source": ""}


@pytest.mark.parametrize("multi_read", [True, False])
def test_an_unreadable_state_is_an_error_and_the_session_reads_on(server, split_small, monkeypatch, multi_read):
    if not multi_read:  # then the locked state is in the last slice: a sibling session reads it
        without_multi_read(monkeypatch, server)
    chroot = f"/denied-{multi_read}"
    with ZkSession.open(server.connect) as root:
        root.ensure_path(chroot)
    with ZkSession.open(server.connect + chroot) as s:
        seed(s)
        locked = zf.state_path("t7", 40)
        client = KazooClient(hosts=server.connect + chroot, timeout=10)
        client.start(timeout=30)
        try:
            client.set_acls(locked, [make_digest_acl("someone", "else", all=True)])
        finally:
            client.stop()
            client.close()
        with pytest.raises(ZooKeeperAuthError, match=f"denied access to {locked}"):
            read_snapshot(s)
        # the pipelined reader is still in step: the next bulk read answers, on the same session
        assert [n.exists for n in s.get_many([zf.state_path("t0", 1), zf.state_path("t7", 39)])] == [True, True]
        assert read_snapshot(s, with_states=False).partition_count == TOPICS * PARTITIONS
