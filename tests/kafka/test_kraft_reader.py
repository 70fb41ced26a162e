"""KRaft clusters (no ZooKeeper) read through the Admin API into Keel's snapshot: Apache Kafka 3.9.1 and the newest
Kafka 4 that Maven Central serves, three combined broker + controller nodes with racks and two log dirs each
(sandbox.processes.kraft). What the brokers say is checked against Kafka's own answers: the topics created with
explicit assignments, leaders and ISR, the quorum's leader, a stopped node's replicas on a down broker."""

from __future__ import annotations

import time


from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import read_snapshot
from core.model import ClusterSnapshot
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import eventually

ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3]}


def _admin(cluster: KraftCluster) -> KafkaAdmin:
    return KafkaAdmin(cluster.bootstrap_servers, timeout=20)


def test_a_kraft_cluster_reads_into_the_snapshot_page_by_page(kraft: KraftCluster):
    from kafka.admin import NewTopic

    with _admin(kraft) as admin:
        admin._admin.create_topics([NewTopic("orders", replica_assignments=ASSIGNMENT,
                                             topic_configs={"retention.ms": "3600000"})])

        def settled():
            snap = read_snapshot(admin)
            topic = snap.topic("orders")
            assert topic is not None and all(len(p.isr) == 3 for p in topic.partitions)
            # a broker that has not applied the topic yet does not describe its settings: said, not left empty
            assert topic.config or any(p.path == "topic orders: settings" for p in snap.problems)
            assert topic.config == {"retention.ms": "3600000"}
            return snap
        snap = eventually(settled, timeout=30, interval=0.5)

        # DescribeTopicPartitions in pages of 2 partitions: every partition, once. Each request may reach another
        # broker, and one that has not yet applied the topic's record answers UNKNOWN_TOPIC_OR_PARTITION
        def paged():
            [orders] = admin.topic_partitions(["orders"], page=2)
            assert int(orders.get("error_code") or 0) == 0, orders
            return sorted(p["partition_index"] for p in orders["partitions"])
        assert eventually(paged, timeout=30, interval=0.5) == [0, 1, 2, 3, 4]
        quorum = admin.quorum()
        assert admin.supports_cancel  # Kafka 4 answers API keys newer than the client knows: still seen

    topic = snap.topic("orders")
    assert {p.partition: list(p.replicas) for p in topic.partitions} == ASSIGNMENT
    assert all(p.leader == p.replicas[0] for p in topic.partitions)
    assert topic.config == {"retention.ms": "3600000"}
    assert topic.topic_id and len(topic.topic_id) == 22
    assert {b.id: b.rack for b in snap.brokers} == {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    assert all(b.alive for b in snap.brokers)
    assert snap.cluster_id == kraft.cluster_id
    leader = quorum["topics"][0]["partitions"][0]["leader_id"]
    assert leader in (1, 2, 3) and leader == kraft.controller()
    # the mode and the quorum: the active controller is the quorum's leader, every node a voter
    assert snap.mode == "kraft" and snap.is_kraft
    assert snap.quorum.leader == snap.controller.broker_id == leader
    assert [v.id for v in snap.quorum.voters] == [1, 2, 3]
    assert all(snap.quorum.lag(v) is not None for v in snap.quorum.voters)
    assert ClusterSnapshot.from_json(snap.to_json()) == snap  # the snapshot file keeps all of it


def test_a_stopped_node_shows_as_a_down_broker_holding_its_replicas(kraft: KraftCluster):
    kraft.stop_broker(3)
    try:
        with _admin(kraft) as admin:
            def down():
                snap = read_snapshot(admin)
                assert [b.id for b in snap.brokers if not b.alive] == [3]
                # Kafka 4 lists it fenced (KIP-1073); 3.9 does not list it: down either way
                assert all(3 not in p.isr for p in snap.topic("orders").partitions)
                return snap
            snap = eventually(down, timeout=60, interval=1)
        # never dropped: broker 3 still holds its replicas in the assignment
        assert {p.partition: list(p.replicas) for p in snap.topic("orders").partitions} == ASSIGNMENT
    finally:
        kraft.start_broker(3)


def test_the_polled_view_follows_changes_within_seconds_and_never_says_live_after_a_failed_poll(kraft):
    from kafka.admin import NewTopic

    from core.kafka.poller import PolledCluster

    admin = _admin(kraft)
    view = PolledCluster(admin, interval=0.5).start()
    try:
        assert view.status == "connected" and view.last_good_at
        view.wait_for(lambda s: all(set(p.isr) == set(p.replicas) for p in s.partitions()), timeout=60)
        # nothing changes: the same snapshot object and generation, poll after poll (nothing to recompute)
        first, generation, polls = view.snapshot(), view.generation, view.polls
        def polled_again():
            assert view.polls >= polls + 3
        eventually(polled_again, timeout=10, interval=0.1)
        from core.kafka.poller import _content
        assert _content(view.snapshot()) == _content(first)
        assert view.snapshot() is first and view.generation == generation

        started = time.monotonic()
        admin._admin.create_topics([NewTopic("polled", replica_assignments={0: [2, 3], 1: [3, 1]})])
        view.wait_for(lambda s: s.topic("polled") is not None, timeout=10)
        print(f"\nnew topic seen after {time.monotonic() - started:.1f} s")
        assert view.generation > generation

        kraft.stop_broker(2)
        try:
            started = time.monotonic()
            view.wait_for(lambda s: not s.broker_by_id[2].alive, timeout=30)
            print(f"stopped node seen after {time.monotonic() - started:.1f} s")
            assert time.monotonic() - started < 10
        finally:
            kraft.start_broker(2)
        view.wait_for(lambda s: s.broker_by_id[2].alive, timeout=60)

        # the brokers cannot be read (the client is gone): not live, the last snapshot kept, the reason said
        kept = view.snapshot()
        admin.close()
        def not_live():
            assert view.status == "disconnected"
        eventually(not_live, timeout=10, interval=0.1)
        assert view.error and view.snapshot() is kept
    finally:
        view.stop()
        admin.close()



def test_a_slow_read_is_polled_less_often(kraft):
    """Polling costs at most ~1/4 of a core however big the cluster: a read that takes long waits 4x as long."""
    from core.kafka.poller import READ_SHARE_FACTOR, PolledCluster

    def slow_read(admin):  # a cluster 10x bigger, as far as the pacing can tell
        snap = read_snapshot(admin)
        time.sleep(0.4)
        return snap

    with _admin(kraft) as admin:
        view = PolledCluster(admin, interval=0.2, read=slow_read).start()
        try:
            assert view.effective_interval >= READ_SHARE_FACTOR * 0.4
            polls = view.polls
            time.sleep(3)
            assert view.polls - polls <= 2  # at 0.2 s it would have read ~5 times
        finally:
            view.stop()
