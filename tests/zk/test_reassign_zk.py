"""Executing, verifying and rolling back reassignments against a real ZooKeeper (hand-written trees)."""

import json

import pytest

from core import zkformat as zf
from core.errors import PlanError, ReassignmentInProgressError, ValidationError
from core.plans import parse_reassignment
from core.audit.store import Store
from core.zk import reassign_writes
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3", 4: "r1"}, controller=1)
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]}, config={"retention.ms": "1000"})
        write_topic(s, "u", {0: [3, 1]})
        yield s


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "s.sqlite")


PLAN = parse_reassignment('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2]},'
                          '{"topic":"t","partition":1,"replicas":[2,3]},{"topic":"u","partition":0,"replicas":[3,4]}]}')


def config(s, path):
    return zf.decode_config(s.get(path).data, path)


def test_execute_with_throttle_writes_kafkas_configs_and_the_node(tree, store):
    done = reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=50_000_000)
    assert done.moving == 2  # t-1 keeps its replicas
    node = json.loads(tree.get(zf.REASSIGN).data)
    assert node == {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [4, 2]},
                                                 {"topic": "t", "partition": 1, "replicas": [2, 3]},
                                                 {"topic": "u", "partition": 0, "replicas": [3, 4]}]}
    assert config(tree, zf.topic_config_path("t")) == {
        "retention.ms": "1000", "leader.replication.throttled.replicas": "0:1,0:2",
        "follower.replication.throttled.replicas": "0:4"}
    assert config(tree, zf.topic_config_path("u"))["follower.replication.throttled.replicas"] == "0:4"
    for b in (1, 2, 3, 4):
        assert config(tree, zf.broker_config_path(b)) == {"leader.replication.throttled.rate": "50000000",
                                                          "follower.replication.throttled.rate": "50000000"}
    changes = sorted(json.loads(tree.get(f"{zf.CONFIG_CHANGES}/{c}").data)["entity_path"]
                     for c in tree.children(zf.CONFIG_CHANGES))
    assert changes == ["brokers/1", "brokers/2", "brokers/3", "brokers/4", "topics/t", "topics/u"]
    action = store.action(done.action_id)
    assert action.status == "applied"
    assert json.loads(action.rollback)["partitions"][0] == {"topic": "t", "partition": 0, "replicas": [1, 2],
                                                            "log_dirs": ["any", "any"]}


def test_execute_refused_while_a_reassignment_runs(tree, store):
    reassign_writes.execute(tree, store, PLAN, cluster="c")
    before = dump_tree(tree)
    with pytest.raises(ReassignmentInProgressError, match="There is an existing assignment running."):
        reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    assert dump_tree(tree) == before


@pytest.mark.parametrize("doc,message", [
    ('{"version":1,"partitions":[{"topic":"t","partition":9,"replicas":[1,2]}]}',
     "The proposed assignment contains non-existent partitions: t-9"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,7]}]}',
     "The proposed assignment contains non-existent brokerIDs: 7"),
])
def test_invalid_plans_write_nothing(tree, store, doc, message):
    before = dump_tree(tree)
    with pytest.raises(PlanError, match=message):
        reassign_writes.execute(tree, store, parse_reassignment(doc), cluster="c", throttle=10)
    assert dump_tree(tree) == before and store.actions() == []


def test_bad_throttle_and_oversized_plans_are_refused(tree, store):
    before = dump_tree(tree)
    with pytest.raises(ValidationError, match="at most 9,223,372,036,854,775,807 bytes per second"):
        reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=2**63)
    assert dump_tree(tree) == before and store.actions() == []
    with pytest.raises(ValidationError, match="positive number of bytes"):
        reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=0)
    many = {p: [1, 2] for p in range(40000)}
    write_topic(tree, "huge", many, states={})
    big = parse_reassignment(json.dumps({"version": 1, "partitions": [
        {"topic": "huge", "partition": p, "replicas": [2, 3]} for p in range(40000)]}))
    before = dump_tree(tree, "/admin")
    with pytest.raises(PlanError, match="1 MiB request limit"):
        reassign_writes.execute(tree, store, big, cluster="c", accept_risks=True)  # (no states: no live ISR)
    assert dump_tree(tree, "/admin") == before


def test_verify_reports_and_removes_throttles_when_complete(tree, store):
    done = reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    result = reassign_writes.verify(tree, store, PLAN, cluster="c")
    assert [p.status for p in result.partitions] == ["in progress"] * 3 and not result.throttles_removed
    # what the controller does when it finishes: topic nodes at target, node deleted
    tree.set(zf.topic_path("t"), zf.encode_topic({0: [4, 2], 1: [2, 3]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    tree.delete(zf.REASSIGN)
    partial = reassign_writes.verify(tree, store, PLAN, cluster="c")
    assert [p.status for p in partial.partitions] == ["complete", "complete", "not at target"]
    assert not partial.throttles_removed
    tree.set(zf.topic_path("u"), zf.encode_topic({0: [3, 4]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    final = reassign_writes.verify(tree, store, PLAN, cluster="c")
    assert final.complete and final.throttles_removed
    assert config(tree, zf.topic_config_path("t")) == {"retention.ms": "1000"}
    assert config(tree, zf.broker_config_path(4)) == {}
    assert store.actions()[0].kind == "remove-throttles"
    # rollback: refused while a reassignment runs, then executes the saved current assignment
    tree.create(zf.REASSIGN, zf.encode_reassignment([]))
    with pytest.raises(ReassignmentInProgressError, match="cannot cancel a running reassignment"):
        reassign_writes.rollback(tree, store, done.action_id, cluster="c")
    tree.delete(zf.REASSIGN)
    back = reassign_writes.rollback(tree, store, done.action_id, cluster="c")
    assert json.loads(tree.get(zf.REASSIGN).data)["partitions"][0]["replicas"] == [1, 2]
    assert back.moving == 2


def test_verify_clears_the_log_dir_throttle_as_kafkas_tool_does(tree, store):
    """ReassignPartitionsCommand.clearBrokerLevelThrottles deletes three broker keys, the log-dir rate among them;
    other broker settings stay."""
    reassign_writes.execute(tree, store, PLAN, cluster="c", throttle=1000)
    path = zf.broker_config_path(2)
    tree.set(path, zf.encode_config({**config(tree, path), reassign_writes.LOG_DIR_RATE: "500",
                                     "log.cleaner.threads": "2"}))
    tree.set(zf.topic_path("t"), zf.encode_topic({0: [4, 2], 1: [2, 3]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    tree.set(zf.topic_path("u"), zf.encode_topic({0: [3, 4]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"))
    tree.delete(zf.REASSIGN)
    assert reassign_writes.verify(tree, store, PLAN, cluster="c").throttles_removed
    assert config(tree, path) == {"log.cleaner.threads": "2"}
