"""Every refusal Kafka makes, Keel makes too: with Kafka's message, and without writing anything.

Kafka's side is what an operator would see from Kafka 3.9 itself: the Admin API's error message (CreateTopics /
CreatePartitions with validate_only, which is what the broker says), or, for the checks `kafka-topics` and
`kafka-configs` make before they ask the broker (Keel's CLI takes the same arguments), the tool's own message.
"Nothing written" is a dump of the whole chroot before and after Keel's attempt.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from tests.kafka.realkafka import RealKafka
from tests.support.kafka_tree import dump_tree

EXISTING = "r-existing"  # 4 partitions, replication factor 2, min.insync.replicas=2 (made by the module fixture)
CONFIG_COMMAND = "kafka.admin.ConfigCommand"

@dataclass(frozen=True)
class Case:
    id: str
    keel: tuple[str, ...]  # Keel's command line (without --zk / --store)
    kafka: tuple  # ("api-create", NewTopic kwargs) | ("api-grow", topic, count, assignment) | ("topics", args) | ("configs", args)
    wrapped: bool = False  # Kafka's broker prefixes the message with the resource ("Invalid config value for ...: ")


def create(topic: str, *args: str) -> tuple[str, ...]:
    return ("create-topic", "--topic", topic, *args)


CASES = [
    Case("create-existing", create(EXISTING, "--partitions", "1", "--replication-factor", "1"),
         ("api-create", dict(name=EXISTING, num_partitions=1, replication_factor=1))),
    Case("create-rf-above-brokers", create("r-new", "--partitions", "2", "--replication-factor", "4"),
         ("api-create", dict(name="r-new", num_partitions=2, replication_factor=4))),
    Case("create-config-bad-enum", create("r-new", "--partitions", "1", "--replication-factor", "2", "--config",
                                          "cleanup.policy=bogus"),
         ("api-create", dict(name="r-new", num_partitions=1, replication_factor=2,
                             topic_configs={"cleanup.policy": "bogus"}))),
    Case("create-config-below-min", create("r-new", "--partitions", "1", "--replication-factor", "2", "--config",
                                           "min.insync.replicas=0"),
         ("api-create", dict(name="r-new", num_partitions=1, replication_factor=2,
                             topic_configs={"min.insync.replicas": "0"}))),
    Case("create-config-not-a-number", create("r-new", "--partitions", "1", "--replication-factor", "2", "--config",
                                              "retention.ms=abc"),
         ("api-create", dict(name="r-new", num_partitions=1, replication_factor=2,
                             topic_configs={"retention.ms": "abc"}))),
    Case("create-config-unknown", create("r-new", "--partitions", "1", "--replication-factor", "2", "--config",
                                         "no.such.config=1"),
         ("api-create", dict(name="r-new", num_partitions=1, replication_factor=2,
                             topic_configs={"no.such.config": "1"}))),
    Case("create-config-ratio", create("r-new", "--partitions", "1", "--replication-factor", "2", "--config",
                                       "min.cleanable.dirty.ratio=2"),
         ("api-create", dict(name="r-new", num_partitions=1, replication_factor=2,
                             topic_configs={"min.cleanable.dirty.ratio": "2"}))),
    Case("create-duplicate-replica", create("r-new", "--replica-assignment", "1:1"),
         ("topics", ("--create", "--topic", "r-new", "--replica-assignment", "1:1"))),
    Case("create-uneven-assignment", create("r-new", "--replica-assignment", "1:2,3"),
         ("topics", ("--create", "--topic", "r-new", "--replica-assignment", "1:2,3"))),
    Case("create-zero-partitions", create("r-new", "--partitions", "0", "--replication-factor", "1"),
         ("topics", ("--create", "--topic", "r-new", "--partitions", "0", "--replication-factor", "1"))),
    Case("create-zero-replication", create("r-new", "--partitions", "1", "--replication-factor", "0"),
         ("topics", ("--create", "--topic", "r-new", "--partitions", "1", "--replication-factor", "0"))),
    Case("create-name-characters", create("bad name!", "--partitions", "1", "--replication-factor", "1"),
         ("api-create", dict(name="bad name!", num_partitions=1, replication_factor=1))),
    Case("create-name-too-long", create("n" * 250, "--partitions", "1", "--replication-factor", "1"),
         ("api-create", dict(name="n" * 250, num_partitions=1, replication_factor=1))),
    Case("create-name-dotdot", create("..", "--partitions", "1", "--replication-factor", "1"),
         ("topics", ("--create", "--topic", "..", "--partitions", "1", "--replication-factor", "1"))),
    Case("grow-unknown-broker", ("add-partitions", "--topic", EXISTING, "--partitions", "5", "--replica-assignment",
                                 "1:2,2:3,3:1,1:3,1:9"),
         ("api-grow", EXISTING, 5, [[1, 9]])),
    Case("grow-fewer", ("add-partitions", "--topic", EXISTING, "--partitions", "2"), ("api-grow", EXISTING, 2, None)),
    Case("grow-same", ("add-partitions", "--topic", EXISTING, "--partitions", "4"), ("api-grow", EXISTING, 4, None)),
    Case("alter-config-unknown", ("alter-config", "--topic", EXISTING, "--add-config", "no.such.config=1"),
         ("configs", ("--alter", "--entity-type", "topics", "--entity-name", EXISTING, "--add-config",
                      "no.such.config=1"))),
    Case("alter-config-bad-value", ("alter-config", "--topic", EXISTING, "--add-config", "min.insync.replicas=0"),
         ("configs", ("--alter", "--entity-type", "topics", "--entity-name", EXISTING, "--add-config",
                      "min.insync.replicas=0")), wrapped=True),
    Case("alter-config-delete-unset", ("alter-config", "--topic", EXISTING, "--delete-config", "retention.ms"),
         ("configs", ("--alter", "--entity-type", "topics", "--entity-name", EXISTING, "--delete-config",
                      "retention.ms"))),
]


def _tool_message(output: str, tool: str) -> str:
    """The message of a failed kafka-topics / kafka-configs run (its first error line)."""
    if tool == "topics":
        m = re.search(r"^Error while executing topic command : (.*)$", output, re.M)
    else:
        m = re.search(r"^Caused by: [\w.$]+: (.*)$", output, re.M) or re.search(r"^(Invalid config\(s\): .*)$",
                                                                                  output, re.M)
    assert m, f"no error message in the {tool} tool's output:\n{output}"
    return m[1].strip()


def kafka_message(kafka: RealKafka, case: Case) -> str:
    from kafka.admin import NewPartitions, NewTopic

    kind = case.kafka[0]
    if kind == "api-create":
        result = kafka.admin.create_topics([NewTopic(**case.kafka[1])], validate_only=True, raise_errors=False)
        entry = result["topics"][0]
        assert entry["error_code"] != 0, f"Kafka accepted {case.id}"
        return entry["error_message"]
    if kind == "api-grow":
        _, topic, count, assignment = case.kafka
        result = kafka.admin.create_partitions({topic: NewPartitions(count, assignment)}, validate_only=True,
                                               raise_errors=False)
        entry = result.results[0]
        assert entry.error_code != 0, f"Kafka accepted {case.id}"
        return entry.error_message
    if kind == "topics":
        proc = kafka.cluster.tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kafka.bootstrap,
                                  *case.kafka[1])
    else:
        proc = kafka.cluster.tool(CONFIG_COMMAND, "--bootstrap-server", kafka.bootstrap, *case.kafka[1])
    assert proc.returncode != 0, f"Kafka's tool accepted {case.id}: {proc.stdout}"
    return _tool_message(proc.stdout + proc.stderr, kind)


@pytest.fixture(scope="module")
def refusals(kafka: RealKafka) -> tuple[RealKafka, dict[str, str]]:
    """The existing topic, and Kafka's message for every case (the tools' JVMs run side by side)."""
    from kafka.admin import NewTopic

    kafka.ensure_healthy()
    kafka.admin.create_topics([NewTopic(EXISTING, replica_assignments={0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]},
                                        topic_configs={"min.insync.replicas": "2"})])
    kafka.wait_online(EXISTING, 4)
    with ThreadPoolExecutor(4) as pool:
        messages = dict(zip([c.id for c in CASES], pool.map(lambda c: kafka_message(kafka, c), CASES)))
    return kafka, messages


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_keel_refuses_with_kafkas_message_and_writes_nothing(refusals, case: Case):
    kafka, messages = refusals
    before = dump_tree(kafka.zk, "/")
    code, out, err = kafka.keel(*case.keel)
    after = dump_tree(kafka.zk, "/")
    assert code == 1, f"Keel did not refuse {case.keel}: {out}"
    assert after == before, "Keel wrote something although it refused"
    keel_message = err.strip().splitlines()[-1].removeprefix("error: ")
    theirs = messages[case.id]
    if case.wrapped:  # e.g. "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): <message>"
        assert theirs.endswith(": " + keel_message), (keel_message, theirs)
    else:
        # Keel may add a hint in parentheses after Kafka's message
        assert keel_message == theirs or keel_message.startswith(theirs + " ("), (keel_message, theirs)


def test_where_keel_refuses_what_kafka_3_9_would_do(refusals):
    """Not a Kafka refusal, documented: Kafka 3.9 creates a topic whose explicit assignment names a broker that is
    not registered (ZkAdminManager: "we don't check that replicaAssignment contains unknown brokers"), and creates
    internal topics on request; Keel refuses both, writing nothing."""
    from kafka.admin import NewTopic

    kafka, _ = refusals
    for keel_args, new_topic in [
        (create("r-ghost", "--replica-assignment", "1:9"), NewTopic("r-ghost", replica_assignments={0: [1, 9]})),
        (create("__transaction_state", "--partitions", "1", "--replication-factor", "1"),
         NewTopic("__transaction_state", 1, 1)),
    ]:
        kafka_says = kafka.admin.create_topics([new_topic], validate_only=True, raise_errors=False)["topics"][0]
        assert kafka_says["error_code"] == 0, kafka_says
        before = dump_tree(kafka.zk, "/")
        code, _, err = kafka.keel(*keel_args)
        assert code == 1 and err.startswith("error: "), err
        assert dump_tree(kafka.zk, "/") == before
