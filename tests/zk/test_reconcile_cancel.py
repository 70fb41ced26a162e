"""Reconciling a `cancel-reassignment` row an interrupted run left pending (core.zk.reconcile)."""

from __future__ import annotations

from core import zkformat as zf
from core.model import TopicPartitionReplicas
from core.audit.store import Store
from core.zk.reconcile import reconcile_pending
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic

PAYLOAD = {"api": "alterPartitionReassignments (no target)", "partitions": [
    {"topic": "t", "partition": 0, "replicas": [3, 1, 2], "adding_replicas": [3], "removing_replicas": [1]}]}


def pending_cancel(store: Store) -> int:
    return store.begin(cluster="c", kind="cancel-reassignment", target="t-0", summary="cancel", payload=PAYLOAD)


def test_a_cancel_found_back_on_the_original_replicas_is_applied(zk_connect, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None})
        write_topic(s, "t", {0: [1, 2]})
        action = pending_cancel(store)
        [r] = reconcile_pending(s, store, "c", grace=0)
    assert r.applied and "back on their original replicas" in r.result
    assert store.action(action).status == "applied"


def test_a_reassignment_still_listed_or_finished_means_the_cancel_did_not_happen(zk_connect, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None})
        write_topic(s, "t", {0: [3, 2]})  # the reassignment finished instead
        first = pending_cancel(store)
        [r] = reconcile_pending(s, store, "c", grace=0)
        assert not r.applied and "finished instead" in r.result
        s.create(zf.REASSIGN, zf.encode_reassignment([TopicPartitionReplicas("t", 0, (3, 2))]))
        second = pending_cancel(store)
        [r] = reconcile_pending(s, store, "c", grace=0)
        assert not r.applied and "still lists t-0" in r.result
    assert store.action(first).status == store.action(second).status == "failed"
