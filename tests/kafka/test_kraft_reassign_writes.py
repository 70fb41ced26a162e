"""Reassignments of a KRaft cluster through the Admin API (core.kafka.reassign_writes, issue 26 item 3), on real
KRaft clusters (the `kraft` fixture: 3.9.1 and 4.4.0): a throttled move of real data, followed, verified and rolled
back, with the throttles Kafka reports compared with what Kafka's ReassignPartitionsCommand sets; refusals while
another reassignment runs; a running reassignment cancelled; a plan the cluster no longer matches; a partition Kafka
refuses mid-write. Every test leaves no reassignment running and no throttle set (cleanup in finally)."""

from __future__ import annotations

import contextlib
import os
import time
import uuid

import pytest

from core.audit.store import Store
from core.errors import PlanError, ReassignmentInProgressError, UnknownTopicError
from core.kafka import reassign_writes as rw
from core.kafka.admin import KafkaAdmin
from core.plans import format_reassignment, parse_reassignment
from core.writes import CANNOT_CANCEL, IN_PROGRESS
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import THROTTLE_KEYS, eventually, throttle_configs_of

BROKERS = (1, 2, 3)
ORIGINAL = {0: [1, 2], 1: [2, 1]}
TARGET = {0: [3, 2], 1: [2, 3]}  # broker 1's replicas move to broker 3
RATE = 1_000_000  # B/s
CLUSTER = "kraft-test"


def _admin(kraft: KraftCluster) -> KafkaAdmin:
    return KafkaAdmin(kraft.bootstrap_servers, timeout=20)


def _plan(topic: str, assignment: dict[int, list[int]]):
    return parse_reassignment(format_reassignment({(topic, p): r for p, r in assignment.items()}))


def _create(admin: KafkaAdmin, topic: str, assignment: dict[int, list[int]]) -> None:
    from kafka.admin import NewTopic

    admin._admin.create_topics([NewTopic(topic, replica_assignments=assignment)])

    def everywhere() -> None:  # each read may ask another broker: every one of them has applied the topic
        for _ in range(3 * len(kraft_nodes(admin))):
            _assert_equal(_replicas(admin, topic), assignment)
    eventually(everywhere, timeout=30, interval=0.3)


def kraft_nodes(admin: KafkaAdmin) -> list:
    return list(admin.describe_cluster().get("brokers") or ())


def _produce(kraft: KraftCluster, topic: str, partitions, megabytes: int) -> None:
    """`megabytes` MB of incompressible records to each partition, acknowledged by every in-sync replica."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=kraft.bootstrap_servers, acks="all", batch_size=900_000,
                             linger_ms=20, max_request_size=2 << 20, request_timeout_ms=30000)
    try:
        value = os.urandom(100_000)
        for p in partitions:
            for _ in range(megabytes * 10):
                producer.send(topic, value, partition=p)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def _replicas(admin: KafkaAdmin, topic: str) -> dict[int, list[int]]:
    [t] = admin.topic_partitions([topic])
    return {p["partition_index"]: list(p["replica_nodes"]) for p in t["partitions"]}


def _running(admin: KafkaAdmin) -> set[tuple[str, int]]:
    """Kafka's own list of running reassignments (ListPartitionReassignments; KafkaAdmin's call retries while the
    client's metadata lacks a broker of a cluster just started)."""
    return set(admin.reassignments())


def _throttles(admin: KafkaAdmin, topics: list[str]) -> dict[str, dict[str, str]]:
    """The throttle keys Kafka describes (describe_configs) on the three brokers and `topics`."""
    from kafka.admin import ConfigResource, ConfigResourceType

    from kafka.errors import NodeNotReadyError, UnknownBrokerIdError

    resources = [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in BROKERS]
    resources += [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
    for attempt in range(20):  # a broker resource goes to its broker: known to the client a moment after start
        try:
            return throttle_configs_of(admin._admin.describe_configs(resources))
        except (UnknownBrokerIdError, NodeNotReadyError):
            if attempt == 19:
                raise
            with contextlib.suppress(Exception):
                admin._admin._client.cluster.request_update()
            time.sleep(0.5)


def _assert_equal(a, b) -> None:
    assert a == b, (a, b)


def _no_throttles(admin: KafkaAdmin, topics: list[str]) -> None:
    eventually(lambda: _assert_equal(_throttles(admin, topics), {}), timeout=20, interval=0.3)


def _kafka_tool_throttles(topic: str, rate: int) -> dict[str, dict[str, str]]:
    """What ReassignPartitionsCommand --execute --throttle RATE sets for ORIGINAL -> TARGET (calculateLeaderThrottles
    / calculateFollowerThrottles: a TreeSet of "partition:broker" strings joined with commas; modifyInterBrokerThrottle
    on every source and destination broker)."""
    rates = {"leader.replication.throttled.rate": str(rate), "follower.replication.throttled.rate": str(rate)}
    return {f"topic {topic}": {"leader.replication.throttled.replicas": "0:1,0:2,1:1,1:2",
                               "follower.replication.throttled.replicas": "0:3,1:3"},
            **{f"broker {b}": rates for b in BROKERS}}


def _cleanup(admin: KafkaAdmin, topics: list[str]) -> None:
    """Nothing running, nothing throttled, the topics gone: whatever the test left."""
    admin.cancel_reassignments(k for k in _running(admin) if k[0] in topics)
    rates = dict.fromkeys([k for k in THROTTLE_KEYS if k.endswith("rate")] + [rw.LOG_DIR_RATE])
    admin.alter_config_keys({("broker", str(b)): rates for b in BROKERS})
    existing = set(admin.topic_names()) & set(topics)
    if existing:
        admin._admin.delete_topics(sorted(existing))
    eventually(lambda: _assert_equal({k for k in _running(admin) if k[0] in topics}, set()), timeout=30)
    _no_throttles(admin, [])


def _until_complete(admin: KafkaAdmin, store: Store, plan, timeout: float = 120.0):
    """verify until the reassignment is complete; each look compared with Kafka's own list of running ones."""
    deadline = time.monotonic() + timeout
    while True:
        before = _running(admin)
        done = rw.verify(admin, store, plan, cluster=CLUSTER)
        after = _running(admin)
        moving = {(s.topic, s.partition) for s in done.partitions if s.status == rw.ReassignStatus.IN_PROGRESS}
        assert moving <= before | after, (moving, before, after)  # "in progress" only when Kafka says so
        if done.complete:
            return done
        assert not done.throttles_removed
        assert time.monotonic() < deadline, f"not complete after {timeout} s: {done.partitions}"
        time.sleep(0.5)


def _slow_reassignment(kraft: KraftCluster, admin: KafkaAdmin, store: Store, topic: str):
    """A reassignment of ORIGINAL -> TARGET that runs until cancelled: 3 MB per partition moved at 1 B/s."""
    _create(admin, topic, ORIGINAL)
    _produce(kraft, topic, ORIGINAL, 3)
    plan = _plan(topic, TARGET)
    done = rw.execute(admin, store, plan, cluster=CLUSTER, throttle=1)
    eventually(lambda: _assert_equal({k for k in _running(admin) if k[0] == topic}, {(topic, 0), (topic, 1)}),
               timeout=20)
    return plan, done


def test_a_throttled_reassignment_of_real_data_is_followed_verified_and_rolled_back(kraft: KraftCluster, tmp_path):
    topic = f"kmove-{uuid.uuid4().hex[:6]}"
    store = Store(tmp_path / "keel.sqlite")
    with _admin(kraft) as admin:
        try:
            _create(admin, topic, ORIGINAL)
            _produce(kraft, topic, ORIGINAL, 2)
            plan = _plan(topic, TARGET)
            done = rw.execute(admin, store, plan, cluster=CLUSTER, throttle=RATE)
            assert (done.partitions, done.moving) == (2, 2)
            assert done.rollback.assignment() == {(topic, p): tuple(r) for p, r in ORIGINAL.items()}
            row = store.action(done.action_id)
            assert (row.kind, row.status, row.payload["throttle"]) == ("reassignment", "applied", RATE)
            assert row.payload["writes"][-1] == "AlterPartitionReassignments 2 partitions"
            # the throttles Kafka reports are exactly those its own tool sets for this plan
            expected = _kafka_tool_throttles(topic, RATE)
            eventually(lambda: _assert_equal(_throttles(admin, [topic]), expected), timeout=20, interval=0.3)

            verified = _until_complete(admin, store, plan)
            assert [(s.partition, s.status) for s in verified.partitions] == [(0, "complete"), (1, "complete")]
            assert verified.throttles_removed
            assert _replicas(admin, topic) == TARGET and not _running(admin) & {(topic, 0), (topic, 1)}
            _no_throttles(admin, [topic])
            assert store.action(done.action_id).completed_at is not None
            removal = store.actions(CLUSTER, kind="remove-throttles")[0]
            assert (removal.status, removal.result) == ("applied", "removed")

            # the rollback runs at the recorded rate and puts the original assignment back, order included
            back = rw.rollback(admin, store, done.action_id, cluster=CLUSTER)
            assert back.rollback_throttle.rate == RATE and back.throttles.rate == RATE
            assert store.action(back.action_id).kind == "rollback"
            assert store.action(back.action_id).rollback_of == done.action_id
            assert back.rollback.assignment() == plan.assignment()  # its own rollback: the target again
            _until_complete(admin, store, done.rollback)
            assert _replicas(admin, topic) == ORIGINAL
            _no_throttles(admin, [topic])
            assert store.action(back.action_id).completed_at is not None
        finally:
            _cleanup(admin, [topic])


def test_refusals_while_a_reassignment_runs_then_cancel_restores_the_replicas(kraft: KraftCluster, tmp_path):
    topic, other = f"kslow-{uuid.uuid4().hex[:6]}", f"kother-{uuid.uuid4().hex[:6]}"
    store = Store(tmp_path / "keel.sqlite")
    with _admin(kraft) as admin:
        try:
            plan, done = _slow_reassignment(kraft, admin, store, topic)
            eventually(lambda: _assert_equal(_throttles(admin, [topic]), _kafka_tool_throttles(topic, 1)),
                       timeout=20, interval=0.3)
            _create(admin, other, {0: [1, 2]})
            rows = len(store.actions(CLUSTER))

            # another plan, and the rollback of the running one, refused: nothing recorded, nothing written
            with pytest.raises(ReassignmentInProgressError) as refused:
                rw.execute(admin, store, _plan(other, {0: [3, 2]}), cluster=CLUSTER, throttle=RATE)
            assert str(refused.value).startswith(IN_PROGRESS)
            with pytest.raises(ReassignmentInProgressError) as refused:
                rw.rollback(admin, store, done.action_id, cluster=CLUSTER)
            assert str(refused.value).startswith(CANNOT_CANCEL)
            assert len(store.actions(CLUSTER)) == rows
            eventually(lambda: _assert_equal(_replicas(admin, other), {0: [1, 2]}))  # each broker asked in turn
            assert (other, 0) not in _running(admin)
            assert f"topic {other}" not in _throttles(admin, [other])
            still = rw.verify(admin, store, plan, cluster=CLUSTER)  # verify while it runs: throttles stay
            assert not still.complete and not still.throttles_removed

            cancelled = rw.cancel(admin, store, cluster=CLUSTER, partitions=[(topic, 0), (topic, 1)])
            assert cancelled.cancelled == ((topic, 0), (topic, 1)) and cancelled.throttles_removed
            assert store.action(cancelled.action_id).kind == "cancel-reassignment"
            eventually(lambda: _assert_equal({k for k in _running(admin) if k[0] == topic}, set()), timeout=20)
            eventually(lambda: _assert_equal({p: set(r) for p, r in _replicas(admin, topic).items()},
                                             {p: set(r) for p, r in ORIGINAL.items()}), timeout=20)
            _no_throttles(admin, [topic])
            # Kafka's cancel keeps the in-flight order (target first): said, with the order the plan recorded
            for key, after, before, action in cancelled.reordered:
                assert before == tuple(ORIGINAL[key[1]]) and action == done.action_id
        finally:
            _cleanup(admin, [topic, other])


def test_a_plan_the_cluster_no_longer_matches_is_refused_and_writes_nothing(kraft: KraftCluster, tmp_path):
    topic = f"kstale-{uuid.uuid4().hex[:6]}"
    store = Store(tmp_path / "keel.sqlite")
    with _admin(kraft) as admin:
        try:
            _create(admin, topic, ORIGINAL)
            # computed when the topic had three partitions, or for a broker 7 that is no longer there
            with pytest.raises(PlanError, match=rf"non-existent partitions: {topic}-2"):
                rw.execute(admin, store, _plan(topic, {**TARGET, 2: [1, 3]}), cluster=CLUSTER, throttle=RATE)
            with pytest.raises(PlanError, match="non-existent brokerIDs: 7"):
                rw.execute(admin, store, _plan(topic, {0: [7, 2], 1: [2, 1]}), cluster=CLUSTER, throttle=RATE)
            assert store.actions(CLUSTER) == []
            eventually(lambda: _assert_equal(_replicas(admin, topic), ORIGINAL))
            assert not {k for k in _running(admin) if k[0] == topic}
            assert _throttles(admin, [topic]) == {}
        finally:
            _cleanup(admin, [topic])


class _TopicDeletedMeanwhile(KafkaAdmin):
    """The race the Admin API cannot rule out (it has no compare-and-set): another client deletes a planned topic
    after Keel's last read and before its AlterPartitionReassignments. The deletion and Kafka's refusal are real."""

    doomed: str = ""

    def alter_reassignments(self, targets):
        self._admin.delete_topics([self.doomed])
        eventually(lambda: _assert_equal(self.doomed in self.topic_names(), False), timeout=20)
        return super().alter_reassignments(targets)


def test_a_partition_kafka_refuses_fails_the_action_and_leaves_nothing_behind(kraft: KraftCluster, tmp_path):
    doomed, kept = f"kdoomed-{uuid.uuid4().hex[:6]}", f"kkept-{uuid.uuid4().hex[:6]}"
    store = Store(tmp_path / "keel.sqlite")
    with _TopicDeletedMeanwhile(kraft.bootstrap_servers, timeout=20) as admin:
        admin.doomed = doomed
        try:
            _create(admin, doomed, {0: [1, 2]})
            _create(admin, kept, ORIGINAL)
            _produce(kraft, kept, ORIGINAL, 3)  # at 1 B/s it is still running when the engine undoes it
            plan = parse_reassignment(format_reassignment(
                {(doomed, 0): [3, 2], **{(kept, p): r for p, r in TARGET.items()}}))
            with pytest.raises(UnknownTopicError) as refused:
                rw.execute(admin, store, plan, cluster=CLUSTER, throttle=1)
            message = str(refused.value)
            # Kafka's own words for the partition, then what Keel undid
            assert message.startswith(f"Error reassigning partition(s):\n{doomed}-0: UnknownTopicOrPartitionError")
            assert f"were cancelled: {kept}-0, {kept}-1" in message
            assert "The throttles set were put back as they were." in message
            [row] = store.actions(CLUSTER)
            assert (row.kind, row.status, row.result) == ("reassignment", "failed", message)
            eventually(lambda: _assert_equal({k for k in _running(admin) if k[0] == kept}, set()), timeout=20)
            eventually(lambda: _assert_equal({p: set(r) for p, r in _replicas(admin, kept).items()},
                                             {p: set(r) for p, r in ORIGINAL.items()}), timeout=20)
            _no_throttles(admin, [kept])
        finally:
            _cleanup(admin, [doomed, kept])
