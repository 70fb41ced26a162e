"""verify when a planned topic no longer exists: say so, finish, and remove every throttle.

Kafka drops a deleted topic's partitions from a running reassignment and removes the throttles
once nothing is in progress; a verify that kept waiting for them left the throttle rates on every
broker for good ("replicas , target 1", exit 3 forever).
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.cli import main
from core.audit.store import Store
from core.zk import reassign_writes
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic

RATES = (reassign_writes.LEADER_RATE, reassign_writes.FOLLOWER_RATE)
PLAN = {"version": 1, "partitions": [{"topic": "keep", "partition": 0, "replicas": [3, 2]},
                                     {"topic": "doomed", "partition": 0, "replicas": [3, 1]},
                                     {"topic": "doomed", "partition": 1, "replicas": [1, 3]}]}


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "keep", {0: [1, 2]})
        write_topic(s, "doomed", {0: [1, 2], 1: [2, 1]}, config={"retention.ms": "5"})
        yield s


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def finish_as_the_controller(s, topic, partition, replicas):
    a = zf.decode_topic(topic, s.get(zf.topic_path(topic)).data)
    parts = dict(a.partitions)
    parts[partition] = tuple(replicas)
    s.set(zf.topic_path(topic), zf.encode_topic(parts, topic_id=a.topic_id))


def delete_as_the_controller(s, topic):
    s.delete(zf.topic_path(topic), recursive=True)
    s.delete(zf.topic_config_path(topic))


def rates_left(s) -> dict[str, dict[str, str]]:
    out = {}
    for entity in s.children(zf.CONFIG_BROKERS) or ():
        config = zf.decode_config(s.get(zf.broker_config_path(entity)).data, "")
        kept = {k: v for k, v in config.items() if k in RATES}
        if kept:
            out[entity] = kept
    return out


def test_verify_finishes_and_removes_throttles_when_a_topic_was_deleted(cluster, zk_connect, tmp_path, capsys):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(PLAN))
    store = str(tmp_path / "s.sqlite")
    code, _, err = run(capsys, "execute", "--zk", zk_connect, "--reassignment-json-file", str(plan_file),
                       "--throttle", "1000000", "--store", store)
    assert code == 0, err
    assert rates_left(cluster)  # the throttles are on
    # the controller completes "keep", the operator deletes "doomed" meanwhile, the node goes away
    finish_as_the_controller(cluster, "keep", 0, [3, 2])
    delete_as_the_controller(cluster, "doomed")
    cluster.delete(zf.REASSIGN)

    code, out, err = run(capsys, "verify", "--zk", zk_connect, "--reassignment-json-file", str(plan_file),
                         "--store", store)
    assert code == 0, out + err
    assert "Reassignment of partition keep-0 is complete." in out
    assert "Partition doomed-0 does not exist (its topic was deleted, or never existed)" in out
    assert "Partition doomed-1 does not exist" in out
    assert "Throttle was removed." in out
    assert rates_left(cluster) == {}
    keep = zf.decode_config(cluster.get(zf.topic_config_path("keep")).data, "")
    assert not {reassign_writes.LEADER_THROTTLED, reassign_writes.FOLLOWER_THROTTLED} & keep.keys()
    assert not cluster.exists(zf.topic_config_path("doomed"))  # not re-created by the throttle removal
    [removal] = Store(store).actions(kind="remove-throttles")
    assert removal.status == "applied" and "2 no longer exist" in removal.summary


def test_verify_of_an_unknown_topic_says_the_partition_does_not_exist(cluster, zk_connect, tmp_path, capsys):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "never-was", "partition": 2, "replicas": [1]}]}))
    code, out, err = run(capsys, "verify", "--zk", zk_connect, "--reassignment-json-file", str(plan_file),
                         "--store", str(tmp_path / "s.sqlite"))
    assert "Partition never-was-2 does not exist" in out, out + err
    assert "replicas , target" not in out
    assert code == 0


def test_verify_keeps_waiting_while_a_partition_is_still_moving(cluster, zk_connect, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    plan = reassign_writes.parse_reassignment(json.dumps(PLAN))
    reassign_writes.execute(cluster, store, plan, cluster="c", throttle=1000)
    delete_as_the_controller(cluster, "doomed")  # keep-0 is still listed in /admin/reassign_partitions
    result = reassign_writes.verify(cluster, store, plan, cluster="c")
    assert not result.complete and not result.throttles_removed
    statuses = [p.status for p in result.partitions]
    assert statuses == [reassign_writes.GONE, reassign_writes.GONE, reassign_writes.IN_FLIGHT]
    assert rates_left(cluster)
