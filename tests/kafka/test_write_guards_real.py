"""Issue 23, item 8 on a real Kafka: the `absent` checks Keel puts in its multi-ops (a create and a delete of the node
in the same transaction: core.zk.ops) leave a real controller undisturbed.

Keel creates a topic whose name has a '.' and a '_' (its multi also creates and deletes /admin/delete_topics/<t>
and /brokers/topics/<each colliding name>), then grows it (/admin/delete_topics/<t> again). The controller's watches
on /brokers/topics and /admin/delete_topics fire for those nodes; it must find nothing in them: the topic is created
and grown with Keel's placement, no phantom topic appears anywhere, and the controller logs no deletion and no error
about any of these names.
"""

from __future__ import annotations

import uuid

from core import zkformat as zf
from core.zk.topic_admin import colliding_names
from tests.kafka.realkafka import RealKafka, eventually
from tests.kafka.test_topic_writes import assert_kafka_has


def controller_logs(kafka: RealKafka) -> dict[int, int]:
    """Where each broker's controller.log ends now."""
    logs = {b: kafka.cluster.logs_dir(b) / "controller.log" for b in kafka.cluster.broker_ids}
    return {b: path.stat().st_size if path.exists() else 0 for b, path in logs.items()}


def logged_since(kafka: RealKafka, marks: dict[int, int]) -> str:
    out = []
    for b, start in marks.items():
        path = kafka.cluster.logs_dir(b) / "controller.log"
        if path.exists():
            with open(path, errors="replace") as f:
                f.seek(start)
                out.append(f.read())
    return "".join(out)


def test_guarded_create_and_grow_leave_the_controller_undisturbed(healthy: RealKafka):
    topic = f"guard.{uuid.uuid4().hex[:6]}_x"
    others = colliding_names(topic)
    assert len(others) == 3
    marks = controller_logs(healthy)

    healthy.keel_ok("create-topic", "--topic", topic, "--replica-assignment", "1:2,2:3,3:1")
    created = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert_kafka_has(healthy, topic, created)
    healthy.keel_ok("add-partitions", "--topic", topic, "--partitions", "5")
    grown = healthy.assignment(topic)
    assert len(grown) == 5
    assert_kafka_has(healthy, topic, grown)

    def settled() -> None:
        metadata = healthy.kafka_topics()
        assert topic in metadata and not set(others) & set(metadata)
    eventually(settled)
    children = set(healthy.zk.children(zf.TOPICS) or ())
    assert topic in children and not set(others) & children
    assert not healthy.zk.exists(zf.delete_topic_path(topic))
    logged = logged_since(healthy, marks).splitlines()
    assert not [line for line in logged if any(o in line for o in others)], "the controller saw a phantom topic"
    about = [line for line in logged if topic in line]
    assert about, "the controller logged nothing about the topic"  # the log is the right one
    assert not [line for line in about if "ERROR" in line or "WARN" in line or "to be deleted" in line
                or "Deleting" in line or "for deletion" in line], about
