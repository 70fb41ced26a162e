"""The Reassign page's Cancel on real brokers (issue 15): a heavily throttled reassignment of a topic holding real
data, started by `python -m core execute`, cancelled from the page through Kafka's Admin API (Kafka 2.4+).

Checked against Kafka itself: no reassignment left (listPartitionReassignments), the partitions back on their
original replicas (the Admin API's metadata and ZooKeeper's topic node), no throttle left in ZooKeeper, the page's
account of what happened, and the audit rows with the actor. Two ways in: the run followed on the page (its plan's
partitions, as `cancel --reassignment-json-file`), then the replica order Kafka's cancel changed restored from the
page; and a run the session does not follow (every running reassignment, as `cancel --all`).

What keeps the copy running is the data, more than the rate: whatever the throttle, Kafka lets a fetch of up to
replica.fetch.max.bytes (1 MB per partition) through whenever its quota window (~11 s) has room (measured on 3.9.1:
1.5 MB partitions at 5,000 B/s finished within ~15 s, 4 MB ones within ~45 s). 6 MB per partition keeps both
moving for about a minute; the page cancels within a few seconds.
"""

from __future__ import annotations

import json
import uuid

import pytest

from core import zkformat as zf
from core.audit.store import Store
from tests.kafka.realkafka import (
    THROTTLE_KEYS,
    RealKafka,
    config_znodes,
    create_topic,
    eventually,
    keel_zk,
    keel_zk_ok,
    needs_kafka,
    produce,
)
from tests.support.sandbox_helpers import wait_until
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401

pytestmark = [needs_kafka("2.4", "alterPartitionReassignments (KIP-455)"), pytest.mark.usefixtures("fresh_connections")]

PAGE = "reassign/page.py"
CLUSTER = "kafka"
ACTOR = "carol@keel-test"
ORIGINAL = {0: [1, 2], 1: [2, 1]}
TARGET = {0: [3, 2], 1: [3, 2]}  # partition 0 keeps broker 2 (Kafka puts it back as 2,1), partition 1 moves both
THROTTLE = "5000"  # B/s
PARTITION_BYTES = 6_000_000


@pytest.fixture
def page_env(healthy: RealKafka, tmp_path, monkeypatch) -> RealKafka:
    """keel.toml naming the real cluster with its bootstrap; the page's audit store is the CLI's (healthy.store)."""
    write_config(tmp_path, monkeypatch, {CLUSTER: {"zk": healthy.zk_connect, "bootstrap": healthy.bootstrap}},
                 role="operator")
    monkeypatch.setenv("KEEL_STORE", str(healthy.store))
    monkeypatch.setenv("KEEL_ACTOR", ACTOR)
    yield healthy
    if healthy.zk.exists(zf.REASSIGN) or any(tp for tp in healthy.admin.list_partition_reassignments()):
        keel_zk(healthy, "cancel", "--bootstrap-server", healthy.bootstrap, "--all", "--cluster", CLUSTER)


def _running_throttled(kafka: RealKafka, tmp_path, prefix: str) -> tuple[str, int]:
    """A topic with 12 MB of data on brokers 1 and 2, moving to broker 3 at THROTTLE: (topic, its action id)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, ORIGINAL)
    produce(kafka, topic, {0: PARTITION_BYTES, 1: PARTITION_BYTES})
    plan = tmp_path / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in TARGET.items()]}))
    keel_zk_ok(kafka, "execute", "--reassignment-json-file", str(plan), "--throttle", THROTTLE, "--cluster", CLUSTER)
    eventually(lambda: _equal(_running(kafka, topic), {(topic, 0), (topic, 1)}))
    assert _throttles(kafka, topic)
    [action] = Store(kafka.store).actions(CLUSTER, kind="reassignment", limit=1)
    return topic, action.id


def _equal(a, b) -> None:
    assert a == b, (a, b)


def _running(kafka: RealKafka, topic: str) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in kafka.admin.list_partition_reassignments() if tp.topic == topic}


def _replicas(kafka: RealKafka, topic: str) -> dict[int, list[int]]:
    return {p: v[1] for p, v in kafka.kafka_topics()[topic]["partitions"].items()}


def _throttles(kafka: RealKafka, topic: str) -> dict[str, dict[str, str]]:
    """The throttle keys left in ZooKeeper's /config/brokers/<id> and /config/topics/<topic>."""
    return {path: found for path, cfg in config_znodes(kafka, [topic]).items()
            if (found := {k: v for k, v in cfg.items() if k in THROTTLE_KEYS})}


def _cancelled_back(kafka: RealKafka, topic: str) -> dict[int, list[int]]:
    """Kafka runs no reassignment of `topic` and its partitions hold their original replica sets (any order)."""
    assert not _running(kafka, topic)
    now = _replicas(kafka, topic)
    assert {p: set(r) for p, r in now.items()} == {p: set(r) for p, r in ORIGINAL.items()}, now
    zk = kafka.assignment(topic)
    assert {p: set(r) for p, r in zk.items()} == {p: set(r) for p, r in ORIGINAL.items()}, zk
    return now


def _rerun_until(at, predicate, message: str, timeout: float = 30):
    def check():
        at.run()
        assert not at.exception, at.exception
        return predicate(at)
    return wait_until(check, timeout=timeout, interval=0.3, message=message)


def _open_page():
    at = app().run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _click_cancel(at, context: str) -> None:
    assert at.button(key="ra_cancel").disabled  # confirmation first
    at.checkbox(key=f"ra_cancel_confirm_{context}").check().run()
    at.button(key="ra_cancel").click().run()
    assert not at.exception, at.exception
    assert not at.error, texts(at.error)


def _audit(kafka: RealKafka, since: int) -> list[tuple[str, str, str]]:
    return [(a.kind, a.status, a.actor) for a in Store(kafka.store).actions(CLUSTER, limit=20) if a.id > since]


def test_cancel_the_followed_run_then_restore_the_replica_order(page_env: RealKafka, tmp_path):
    kafka = page_env
    topic, action_id = _running_throttled(kafka, tmp_path, "pagecancel")
    at = _open_page()
    at.selectbox(key="ra_follow_id").set_value(action_id)
    at.button(key="ra_follow").click().run()
    _rerun_until(at, lambda a: [b for b in a.button if b.key == "ra_cancel"], "the Cancel button of the run panel")
    assert f"Cancel the 2 running partition(s) of action #{action_id}" in \
        at.checkbox(key=f"ra_cancel_confirm_{action_id}").label

    _click_cancel(at, str(action_id))
    done = texts(at.success)
    assert f"Cancelled the running reassignment of 2 partition(s): {topic}-0, {topic}-1 (action #" in done, done
    assert "Throttles removed" in done

    # Kafka: nothing running, the original replica sets, no throttle in ZooKeeper; the /admin node is gone
    now = eventually(lambda: _cancelled_back(kafka, topic), timeout=30)
    assert _throttles(kafka, topic) == {}
    assert not kafka.zk.exists(zf.REASSIGN)
    assert _audit(kafka, action_id) == [("remove-throttles", "applied", ACTOR),
                                        ("cancel-reassignment", "applied", ACTOR)]
    cancel = next(a for a in Store(kafka.store).actions(CLUSTER, limit=5) if a.kind == "cancel-reassignment")
    assert f"action #{cancel.id}" in done

    # the panel says the run was cancelled; Kafka put partition 0 back as 2,1: the page offers the order restore
    assert now == {0: [2, 1], 1: [2, 1]}
    _rerun_until(at, lambda a: "Cancelled (action #" in texts(a.info), "the panel to show the cancel")
    assert "Execute is offered once" not in texts(at.caption)  # the cancelled run no longer holds Execute back
    assert f"{topic}-0 (2,1 instead of 1,2)" in texts(at.warning)
    assert json.loads(at.code[0].value)["partitions"] == [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}]
    restore = _rerun_until(at, lambda a: next((b for b in a.button if b.key == "ra_restore_order" and b.help
                                               and "no reassignment" not in b.help), None), "the restore offer")
    assert restore.disabled  # not confirmed
    next(c for c in at.checkbox if c.key.startswith("ra_reorder_confirm_")).check().run()
    at.button(key="ra_restore_order").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert "Replica order restore started: 1 partition(s)" in texts(at.success)
    eventually(lambda: _equal((_replicas(kafka, topic), kafka.assignment(topic), _running(kafka, topic)),
                              (ORIGINAL, ORIGINAL, set())), timeout=30)
    assert _throttles(kafka, topic) == {}


def test_cancel_every_running_reassignment_from_the_page(page_env: RealKafka, tmp_path):
    kafka = page_env
    topic, action_id = _running_throttled(kafka, tmp_path, "pagecancelall")
    at = _open_page()
    assert "is running, not started from this session" in texts(at.info)
    assert "Cancel the 2 running partition(s) of every running reassignment" in \
        at.checkbox(key="ra_cancel_confirm_all").label

    _click_cancel(at, "all")
    done = texts(at.success)
    assert f"Cancelled the running reassignment of 2 partition(s): {topic}-0, {topic}-1" in done, done
    assert "Throttles removed" in done
    eventually(lambda: _cancelled_back(kafka, topic), timeout=30)
    assert not kafka.admin.list_partition_reassignments()
    assert _throttles(kafka, topic) == {} and not kafka.zk.exists(zf.REASSIGN)
    assert _audit(kafka, action_id) == [("remove-throttles", "applied", ACTOR),
                                        ("cancel-reassignment", "applied", ACTOR)]
    # nothing runs any more: no Cancel button; the account of the cancel stays
    at.run()
    assert not [b for b in at.button if b.key == "ra_cancel"]
    assert "Cancelled the running reassignment" in texts(at.success)
