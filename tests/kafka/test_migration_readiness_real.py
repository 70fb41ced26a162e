"""Issue 27 item 2 on the shared real ZooKeeper-mode Kafka 3.9.1 cluster: `migration --zk --bootstrap-server`'s
readiness from what the brokers answer (ApiVersions, DescribeConfigs, DescribeLogDirs) and what ZooKeeper holds,
with problems planted and removed so the shared cluster is left as it was: a throttled reassignment in flight
(cancelled after), a topic deletion, a malformed /migration in the cluster's chroot (removed after). The gate
lets an Admin API write through on a cluster reached by bootstrap alone (its brokers say ZooKeeper mode: nothing
migrates)."""

from __future__ import annotations

import json
import time
import uuid

from core import zkformat as zf
from core.audit.store import Store
from core.kafka.admin import KafkaAdmin
from core.kafka.migration_facts import broker_facts
from core.model import TopicPartitionReplicas
from core.plans import FOLLOWER_RATE, parse_reassignment, throttles_for
from core.zk import reassign_writes
from core.zk.reader import read_for_write
from tests.kafka.realkafka import (RealKafka, create_topic, eventually, produce, require, running_reassignments,
                                   throttles_seen_by_kafka)


def readiness(kafka: RealKafka, *extra: str) -> dict:
    out = kafka.keel_ok("migration", "--zk", kafka.zk_connect, "--bootstrap-server", kafka.bootstrap,
                        "--store", str(kafka.store), "--json", *extra)
    doc = json.loads(out)
    return {c["key"]: c for c in doc["readiness"]} | {"_doc": doc}


def test_broker_facts_of_a_real_cluster(healthy: RealKafka):
    ids = sorted(healthy.cluster.broker_ids)
    with KafkaAdmin(healthy.bootstrap) as admin:
        facts = broker_facts(admin, ids)
    assert facts.versions == {b: (3, 9) for b in ids}
    assert all(str(c["inter.broker.protocol.version"]).startswith("3.9") for c in facts.configs.values())
    assert facts.migration_flags == {b: False for b in ids} and facts.offline_dirs == () and facts.quorum is None
    r = readiness(healthy, "--controller-ids", "3000,3001,3002")
    for key in ("versions", "ibp", "controller-ids", "reserved-ids", "log-dirs", "migration-node", "reassignment",
                "deletion"):
        assert r[key]["verdict"] == "ok", r[key]
    assert r["quorum"]["verdict"] == "unknown" and "kafka-metadata-quorum" in r["quorum"]["fix"]
    assert r["_doc"]["key"] == "none" and r["_doc"]["brokers_without_migration_flag"] == ids
    clash = readiness(healthy, "--controller-ids", f"{ids[0]},3000")["controller-ids"]
    assert clash["verdict"] == "fail" and f"Controller id(s) {ids[0]} are broker ids" in clash["detail"]


def throttle_before_it_starts(kafka: RealKafka, plan, rate: int) -> None:
    """Write the throttles `execute` writes (Kafka's calculate*Throttles) before the reassignment starts, and wait
    until the brokers have applied them. Written in one multi-op, the topic's throttled replicas before the brokers'
    rates: each broker applies the config-change notifications in order, so a broker that reports `rate` has applied
    the topic's list too. Written by `execute` alone, the controller starts the copy before the brokers apply the
    throttle, and a copy that ran ahead ended during the readiness command (CI, stops 32 and 33); a stale rate another
    test left on the brokers let the earlier wait (any throttle shown) pass at once."""
    snap, tree = read_for_write(kafka.zk)
    throttles = throttles_for(plan, snap, rate)
    kafka.zk.multi(reassign_writes.throttle_ops(tree, throttles, rate))

    def applied() -> None:
        seen = throttles_seen_by_kafka(kafka, [])
        for b in throttles.brokers:
            assert seen.get(f"broker {b}", {}).get(FOLLOWER_RATE) == str(rate), seen
    eventually(applied, timeout=30)


def still_running(kafka: RealKafka, topic: str, timeout: float = 30) -> bool:
    """Once the controller has taken up the reassignment just written: True while Kafka lists it as running, False
    once it has ended (/admin/reassign_partitions gone). Right after the write, the controller may not list it yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running_reassignments(kafka, topic):
            return True
        kafka.zk.sync()
        if not kafka.zk.get(zf.REASSIGN).exists:
            return False
        time.sleep(0.2)
    raise AssertionError(f"the controller neither listed nor finished the reassignment of {topic} in {timeout:g} s")


def queued(kafka: RealKafka, topic: str) -> bool:
    kafka.zk.sync()
    return kafka.zk.get(f"{zf.DELETE_TOPICS}/{topic}").exists


def move_controller(kafka: RealKafka) -> None:
    """`rmr /controller`, then wait for the next controller. Kafka's ZooKeeper-mode controller watches
    /admin/reassign_partitions again only after deleting it itself (PartitionReassignmentHandler.handleDeletion does
    nothing): after a hand deletion it ignores the next reassignment written there, which is how an earlier version
    of this test saw its topic deleted under a reassignment the controller never took up. A controller taking over
    registers the watch again (what Keel's readiness advice tells an SRE to do)."""
    kafka.zk.delete(zf.CONTROLLER)

    def elected() -> None:
        assert kafka.cluster.controller(kafka.zk) in kafka.cluster.broker_ids, "no controller yet"
    eventually(elected, timeout=30, interval=0.2)


def test_planted_problems_fail_their_checks_and_clear(healthy: RealKafka):
    kafka = healthy
    a, _, c = sorted(kafka.cluster.broker_ids)
    store = Store(kafka.store)
    for attempt in range(3):
        moving = f"mr-{uuid.uuid4().hex[:6]}"
        create_topic(kafka, moving, {0: [a]})
        # whatever the throttle, Kafka lets a 1 MB fetch through whenever its 11 s quota window has room: 24 MB keeps
        # the copy going for minutes, and the cleanup removes the throttle so that it then ends in seconds
        produce(kafka, moving, {0: 24_000_000})
        plan = parse_reassignment(json.dumps({"version": 1, "partitions": [
            {"topic": moving, "partition": 0, "replicas": [c]}]}))
        rate = 10_000 + attempt  # a rate no earlier test left on a broker: seeing it proves this write was applied
        throttle_before_it_starts(kafka, plan, rate)
        reassign_writes.execute(kafka.zk, store, plan, cluster="mig", throttle=rate, actor="keel-tests")
        if still_running(kafka, moving):
            break
        reassign_writes.remove_throttles(kafka.zk, [moving], *reassign_writes._live(kafka.zk))
        kafka.admin.delete_topics([moving])
    else:
        raise AssertionError("three throttled reassignments of 24 MB ended at once")
    try:
        # the deletion of a topic being reassigned waits for the reassignment (TopicDeletionManager: ineligible)
        kafka.zk.create(f"{zf.DELETE_TOPICS}/{moving}")
        kafka.zk.create(zf.MIGRATION, b'{"version":0,"kraft_controller_id":3000}')  # malformed (KAFKA-19480)
        queued_before = queued(kafka, moving)
        r = readiness(kafka)
        queued_after = queued(kafka, moving)
        assert r["reassignment"]["verdict"] == "fail" and f"{moving}-0" in r["reassignment"]["detail"]
        # Kafka's controller sometimes carried the deletion out within seconds all the same (CI and here, 3 of 5
        # runs: the topic was gone 4 s after it was created, the reassignment's entry left stale), so the verdict is
        # held to what ZooKeeper showed around the read; tests/zk/test_migration_phases_cli.py plants a deletion no
        # controller removes
        if queued_before and queued_after:
            assert r["deletion"]["verdict"] == "fail" and moving in r["deletion"]["detail"], r["deletion"]
        elif not queued_before and not queued_after:
            assert r["deletion"]["verdict"] == "ok", r["deletion"]
        assert r["migration-node"]["verdict"] == "fail" and "KAFKA-19480" in r["migration-node"]["detail"]
        assert r["_doc"]["migration_znode_error"]
    finally:
        if kafka.zk.get(zf.MIGRATION).exists:
            kafka.zk.delete(zf.MIGRATION)
        # a topic queued for deletion cannot be cancelled (UnknownTopicOrPartition): unthrottled, the reassignment
        # ends in a moment and the controller deletes the topic; every broker's rate goes (Kafka's clearAllThrottles)
        reassign_writes.remove_throttles(kafka.zk, [moving], *reassign_writes._live(kafka.zk))

    def deleted() -> None:  # the reassignment done, the controller deletes the topic
        r = readiness(kafka)
        assert r["deletion"]["verdict"] == "ok" and moving not in {t.name for t in kafka.snapshot().topics}
        # Kafka's controller leaves the deleted topic's entry in /admin/reassign_partitions: Keel names it stale
        assert r["reassignment"]["verdict"] == "ok" or "topic deleted: a stale entry" in r["reassignment"]["detail"]
    eventually(deleted, timeout=60, interval=1.0)
    if kafka.zk.get(zf.REASSIGN).exists:  # leave the shared cluster as it was
        kafka.zk.delete(zf.REASSIGN)
        move_controller(kafka)

    def cleared() -> None:
        r = readiness(kafka)
        assert [r[k]["verdict"] for k in ("reassignment", "deletion", "migration-node")] == ["ok"] * 3, r
    eventually(cleared, timeout=20, interval=1.0)


def test_a_reassignment_written_after_a_hand_deletion_waits_for_another_controller(healthy: RealKafka):
    """What readiness tells an SRE about a stale entry (`rmr /admin/reassign_partitions`, then `rmr /controller`),
    checked against Kafka: after the node is deleted by hand, the controller ignores the next reassignment written
    there; once the controller moves, the new one takes it up."""
    kafka = healthy
    a, b, _ = sorted(kafka.cluster.broker_ids)
    stuck, later = f"hd-{uuid.uuid4().hex[:6]}", f"hd-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, stuck, {0: [a]})
    create_topic(kafka, later, {0: [a]})

    def replicas(topic: str) -> tuple[int, ...]:
        kafka.zk.sync()
        return tuple(zf.decode_topic(topic, kafka.zk.get(zf.topic_path(topic)).data).partitions[0])

    # a reassignment that never ends (its new replica's broker does not exist): the node stays, followed by the
    # controller, as a deleted topic's stale entry does
    kafka.zk.create(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas(stuck, 0, (a, 99))]))
    try:
        eventually(lambda: require((stuck, 0) in running_reassignments(kafka, stuck), "not taken up"), timeout=30)
        kafka.zk.delete(zf.REASSIGN)  # the SRE's `rmr`
        kafka.zk.create(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas(later, 0, (b,))]))
        time.sleep(5)  # a controller watching the node takes a reassignment up within a second
        assert replicas(later) == (a,) and not running_reassignments(kafka, later), "taken up without a new controller"
        move_controller(kafka)
        eventually(lambda: require(replicas(later) == (b,), f"{later} on {replicas(later)}"), timeout=60)
    finally:
        with KafkaAdmin(kafka.bootstrap) as admin:
            if (stuck, 0) in admin.reassignments([(stuck, 0)]):
                admin.cancel_reassignments([(stuck, 0)])
        eventually(lambda: require(not running_reassignments(kafka), "a reassignment still runs"), timeout=60)
        kafka.admin.delete_topics([stuck, later])


def test_admin_api_write_allowed_on_a_cluster_reached_by_bootstrap(healthy: RealKafka, tmp_path, monkeypatch):
    """Item 4 of the issue: the gate admits a write through the Admin API when the cluster is reached by bootstrap alone (no
    ZooKeeper to refuse through); the ZooKeeper-mode brokers answer, nothing is migrating."""
    (tmp_path / "keel.toml").write_text(f'[clusters.b]\nbootstrap = "{healthy.bootstrap}"\n'
                                        '[access]\noperator = ["cli"]\n')
    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.toml"))
    topic = f"mb-{uuid.uuid4().hex[:6]}"
    code, out, err = healthy.keel("create-topic", "--bootstrap-server", healthy.bootstrap, "--topic", topic,
                                  "--partitions", "1", "--replication-factor", "1", "--store", str(healthy.store))
    assert code == 0, err
    assert "Writes through ZooKeeper are disabled" not in err
    def created() -> None:
        assert topic in healthy.kafka_topics()
    eventually(created, timeout=20)
