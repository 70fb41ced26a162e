"""Kafka's own tools as peers: the same operation done by `kafka-topics` / `kafka-configs` and by Keel must leave
the same ZooKeeper state (topic node modulo topic_id, config node, partition states modulo epochs, notifications).
Kafka's tools talk to the brokers where they can (kafka-topics 2.2+, kafka-configs for topics 2.5+) and to ZooKeeper
before, as an SRE on those versions runs them.
"""

from __future__ import annotations

import json
import uuid

from core import zkformat as zf
from sandbox.processes.kafka import version_at_least
from tests.kafka.realkafka import RealKafka, eventually, has_topic_ids

ASSIGNMENT = "1:2:3,2:3:1,3:1:2,1:3:2,2:1:3"
CONFIGS = ("min.insync.replicas=2", "retention.ms=86400000", "cleanup.policy=compact,delete")


def _notifications(kafka: RealKafka) -> list[str]:
    kafka.zk.sync()
    return sorted(kafka.zk.children(zf.CONFIG_CHANGES) or ())


def _without_epochs(states: dict) -> dict:
    return {p: {k: v for k, v in s.items() if k not in ("leader_epoch", "controller_epoch")} for p, s in states.items()}


def test_create_topic_leaves_what_kafka_topics_create_leaves(healthy: RealKafka):
    suffix = uuid.uuid4().hex[:6]
    theirs, ours = f"p-kafka-{suffix}", f"p-keel-{suffix}"
    notes = _notifications(healthy)

    config_args = [a for c in CONFIGS for a in ("--config", c)]
    healthy.topic_command("--create", "--topic", theirs, "--replica-assignment", ASSIGNMENT, *config_args)
    healthy.keel_ok("create-topic", "--topic", ours, "--replica-assignment", ASSIGNMENT, *config_args)

    kafka_state, keel_state = (healthy.wait_online(t, 5) for t in (theirs, ours))
    # the topic node: same version, partitions, adding/removing maps; each with its own (valid) topic id from
    # Kafka 2.8 on, none before
    ids = [s["topic"].pop("topic_id", None) for s in (kafka_state, keel_state)]
    if has_topic_ids(healthy.cluster.version):
        assert all(isinstance(i, str) and len(i) == 22 for i in ids) and ids[0] != ids[1]
    else:
        assert ids == [None, None]
    assert keel_state["topic"] == kafka_state["topic"]
    assert keel_state["config"] == kafka_state["config"] == {
        "version": 1, "config": {"min.insync.replicas": "2", "retention.ms": "86400000",
                                 "cleanup.policy": "compact,delete"}}
    assert _without_epochs(keel_state["states"]) == _without_epochs(kafka_state["states"])
    # neither announced the config with a change notification (creating a topic writes its config only)
    assert _notifications(healthy) == notes
    # and the brokers agree: same placement, same topic ids as in ZooKeeper
    meta = eventually(lambda: _both(healthy.kafka_topics(), theirs, ours))
    assert meta[theirs]["id"] == ids[0] and meta[ours]["id"] == ids[1]
    assert {p: v[1] for p, v in meta[ours]["partitions"].items()} == \
        {p: v[1] for p, v in meta[theirs]["partitions"].items()}


def _both(topics: dict, *names: str) -> dict:
    assert all(n in topics and len(topics[n]["partitions"]) == 5 for n in names)
    return topics


def test_alter_config_leaves_what_kafka_configs_alter_leaves(healthy: RealKafka):
    from kafka.admin import NewTopic

    suffix = uuid.uuid4().hex[:6]
    theirs, ours = f"p-cfg-kafka-{suffix}", f"p-cfg-keel-{suffix}"
    healthy.admin.create_topics([NewTopic(t, replica_assignments={0: [1, 2]}, topic_configs={"retention.ms": "1000"})
                                 for t in (theirs, ours)])
    for t in (theirs, ours):
        healthy.wait_online(t, 1)

    before = set(_notifications(healthy))
    # kafka-configs --entity-type topics talks to the brokers from Kafka 2.5 on; before, to ZooKeeper
    via = (["--bootstrap-server", healthy.bootstrap] if version_at_least(healthy.cluster.version, "2.5")
           else ["--zookeeper", healthy.zk_connect])
    proc = healthy.cluster.tool("kafka.admin.ConfigCommand", *via, "--alter",
                                "--entity-type", "topics", "--entity-name", theirs,
                                "--add-config", "segment.ms=3600000,max.message.bytes=65536",
                                "--delete-config", "retention.ms")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kafka_new = sorted(set(_notifications(healthy)) - before)
    healthy.keel_ok("alter-config", "--topic", ours, "--add-config", "segment.ms=3600000",
                    "--add-config", "max.message.bytes=65536", "--delete-config", "retention.ms")
    keel_new = sorted(set(_notifications(healthy)) - before - set(kafka_new))

    kafka_cfg, keel_cfg = (healthy.topic_znodes(t)["config"] for t in (theirs, ours))
    assert keel_cfg == kafka_cfg == {"version": 1, "config": {"segment.ms": "3600000", "max.message.bytes": "65536"}}
    # one change notification each, the same payload shape: {"version":2,"entity_path":"topics/<t>"}
    payloads = [json.loads(healthy.zk.get(f"{zf.CONFIG_CHANGES}/{n}").data)
                for n in kafka_new + keel_new if healthy.zk.exists(f"{zf.CONFIG_CHANGES}/{n}")]
    assert len(kafka_new) == len(keel_new) == 1
    assert payloads == [{"version": 2, "entity_path": f"topics/{theirs}"},
                        {"version": 2, "entity_path": f"topics/{ours}"}]
