"""Helpers of the real-Kafka tests: Keel's CLI in-process, Kafka's Admin API and TopicCommand, normalised views.

Both sides of every comparison are reduced to plain data here, so that a test reads as "Keel's view == Kafka's".
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import os
import re
import time
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from core import zkformat as zf
from core.model import ClusterSnapshot
from sandbox.processes import kafka as kafka_runner
from sandbox.processes.kafka import KafkaCluster
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession

T = TypeVar("T")
FILTERS = ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions",
           "--at-min-isr-partitions")
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"  # Kafka 3.5+; before, kafka.admin.TopicCommand (tool_class)


def describe_cluster(admin) -> dict:
    """admin.describe_cluster() on every version: kafka-python 3.0.12 pops `endpoint_type`, which DescribeCluster v0
    (Kafka 2.8 - 3.6) does not return (KeyError); then the Metadata request it falls back to for brokers before 2.8."""
    try:
        return admin.describe_cluster()
    except KeyError:
        metadata = admin._manager.run(admin._get_cluster_metadata, [])
        metadata.pop("topics", None)
        metadata.pop("throttle_time_ms", None)
        for broker in metadata["brokers"]:
            broker["broker_id"] = broker.pop("node_id")
        return metadata


def compat_admin(admin, version: str):
    """`admin` (a KafkaAdminClient) made able to create topics with an explicit assignment on Kafka before 2.4:
    Kafka then wants num_partitions = replication_factor = -1 with an assignment, which kafka-python 3.0.12 refuses
    to send to a broker before 2.4 ("requires explicit num_partitions and replication_factor")."""
    if kafka_runner.version_at_least(version, "2.4"):
        return admin
    import kafka.errors as Errors
    from kafka.protocol.admin import CreateTopicsRequest

    original = admin.create_topics

    def create_topics(new_topics, timeout_ms=None, validate_only=False, raise_errors=True, **kw):
        topics = admin._process_create_topics_input(new_topics)
        if kw or not any(t.assignments for t in topics):
            return original(new_topics, timeout_ms=timeout_ms, validate_only=validate_only,
                            raise_errors=raise_errors, **kw)
        request = CreateTopicsRequest(topics=topics, timeout_ms=admin._validate_timeout(timeout_ms),
                                      validate_only=validate_only)

        def response_errors(r):
            for topic in r.topics:
                yield Errors.for_code(topic.error_code)

        response = admin._manager.run(admin._send_request_to_controller, request, response_errors, raise_errors)
        result = response.to_dict()
        result.pop("throttle_time_ms", None)
        return result

    admin.create_topics = create_topics
    return admin


def kafka_version() -> str:
    """The version tests/kafka runs against: KEEL_KAFKA_VERSION, else KAFKA_VERSION, else 3.9.1."""
    return os.environ.get("KEEL_KAFKA_VERSION", "").strip() or kafka_runner.kafka_version()


def kraft_versions() -> tuple[str, ...]:
    """The versions the `kraft` fixture runs: KEEL_KRAFT_VERSIONS (space separated; make test-kafka-matrix's Kafka 4
    line), else the last release with ZooKeeper (in KRaft mode) and the newest Kafka 4 Maven Central serves."""
    return tuple(os.environ.get("KEEL_KRAFT_VERSIONS", "").split()) or ("3.9.1", "4.4.0")


def has_topic_ids(version: str) -> bool:
    """Kafka 2.8+ gives every topic an id (KIP-516: topic node v3 `topic_id`, Metadata v10); before, no topic has one,
    and Keel, which writes the topic-node version the cluster's topics use, writes none either."""
    return kafka_runner.version_at_least(version, "2.8")


def needs_kafka(minimum: str, why: str):
    """Mark a test that needs at least Kafka `minimum` (skipped on older versions, `why` printed)."""
    return pytest.mark.kafka_min(minimum, why)


@functools.lru_cache(maxsize=None)
def _classes(lib: str) -> frozenset[str]:
    names: set[str] = set()
    for jar in sorted(os.listdir(lib)):
        if jar.endswith(".jar") and jar.startswith("kafka"):
            with zipfile.ZipFile(os.path.join(lib, jar)) as z:
                names.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return frozenset(names)


def tool_class(version: str, *candidates: str) -> str:
    """The first of `candidates` (fully qualified class names) that the fetched jars of `version` hold: Kafka's tools
    moved from kafka.admin (core jar) to org.apache.kafka.tools (kafka-tools) in 3.5 - 3.7."""
    found = _classes(str(kafka_runner.lib_dir(version)))
    for name in candidates:
        if name in found:
            return name
    raise AssertionError(f"none of {', '.join(candidates)} is in Kafka {version}'s jars")


def kafka_uuid(text: str | None) -> str | None:
    """kafka-python prints a topic id as a dashed UUID; Kafka (and ZooKeeper, and Keel) as URL-safe base64."""
    if text is None:
        return None
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode().rstrip("=")


def require(ok: object, what: object = "") -> None:
    """`assert ok, what` as an expression, for the lambdas given to `eventually`."""
    assert ok, what


def eventually(check: Callable[[], T], timeout: float = 20.0, interval: float = 0.25) -> T:
    """Call `check` until it returns without an AssertionError; re-raise the last one after `timeout` seconds.

    A refused connection is retried too: after a broker was killed, kafka-python's client still knows it from its
    last metadata and may send the next request there (ECONNREFUSED) before asking another broker."""
    from kafka.errors import KafkaConnectionError

    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except (AssertionError, KafkaConnectionError):
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval)


@dataclass
class RealKafka:
    """The session's real cluster and the clients the tests use on it."""

    cluster: KafkaCluster
    zk_connect: str  # with the cluster's chroot
    admin: object  # kafka.admin.KafkaAdminClient
    zk: ZkSession
    store: Path

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    # --- Keel ------------------------------------------------------------------------------

    def keel(self, *argv: str) -> tuple[int, str, str]:
        """`python -m core ARGV` in-process (topic commands get --zk and --store); (exit code, stdout, stderr)."""
        from core.cli import main

        args = list(argv)
        if args and args[0] in ("create-topic", "add-partitions", "alter-config", "delete-topic"):
            args += ["--zk", self.zk_connect, "--store", str(self.store)]
        elif args and args[0] in ("describe", "snapshot"):
            args += ["--zk", self.zk_connect]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
        return code, out.getvalue(), err.getvalue()

    def keel_ok(self, *argv: str) -> str:
        code, out, err = self.keel(*argv)
        assert code == 0, f"keel {' '.join(argv)} failed ({code}): {err}"
        return out

    def snapshot(self):
        return read_snapshot(self.zk)

    # --- Kafka -----------------------------------------------------------------------------

    def topic_command(self, *args: str) -> str:
        """Kafka's own kafka-topics (TopicCommand) against the cluster; its stdout. Fails the test on an error.

        Before Kafka 2.2 (KIP-377) the tool only talks to ZooKeeper: it gets --zookeeper there, and its --describe
        output is put in the form of 2.2+ (zookeeper_describe_form)."""
        main = tool_class(self.cluster.version, TOPIC_COMMAND, "kafka.admin.TopicCommand")
        if kafka_runner.version_at_least(self.cluster.version, "2.2"):
            proc = self.cluster.tool(main, "--bootstrap-server", self.bootstrap, *args)
        else:
            proc = self.cluster.tool(main, "--zookeeper", self.zk_connect, *args)
        assert proc.returncode == 0, f"TopicCommand {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
        if kafka_runner.version_at_least(self.cluster.version, "2.2"):
            return proc.stdout
        return zookeeper_describe_form(proc.stdout)

    def kafka_topics(self) -> dict[str, dict]:
        """The Admin API's metadata of every topic: {name: {"id", "partitions": {p: (leader, replicas, isr, epoch)},
        "offline": {p: replicas}}}."""
        out = {}
        for t in self.admin.describe_topics():
            assert t["error_code"] == 0, t
            parts, offline = {}, {}
            for p in t["partitions"]:
                parts[p["partition_index"]] = (p["leader_id"], list(p["replica_nodes"]), list(p["isr_nodes"]),
                                               p.get("leader_epoch", -1))  # in the metadata from Kafka 2.1 on
                if p["offline_replicas"]:
                    offline[p["partition_index"]] = sorted(p["offline_replicas"])
            # topic ids are in the metadata from Kafka 2.8 on (Metadata v10): None before
            out[t["name"]] = {"id": kafka_uuid(t.get("topic_id")), "partitions": parts, "offline": offline}
        return out

    def kafka_cluster(self) -> dict:
        c = describe_cluster(self.admin)
        return {"controller": c["controller_id"],
                "brokers": {b["broker_id"]: (b["rack"], f"{b['host']}:{b['port']}") for b in c["brokers"]}}

    def topic_configs(self, topic: str) -> dict[str, tuple[str, str]]:
        """describe_configs of a topic: {key: (value, source)} for every key."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        return self._configs(res, topic)

    @staticmethod
    def _configs(res, topic: str) -> dict[str, tuple[str, str]]:
        # kafka-python 3.x: {"topic": {name: {key: {"value", "config_source", ...}}}}
        entries = res["topic"][topic] if isinstance(res, dict) else res
        return {k: (v["value"], v["config_source"]) for k, v in entries.items()}

    # --- ZooKeeper -------------------------------------------------------------------------

    def topic_znodes(self, topic: str) -> dict:
        """What ZooKeeper holds for a topic: topic node, config node, partition states (decoded JSON)."""
        self.zk.sync()
        node = self.zk.get(zf.topic_path(topic))
        config = self.zk.get(zf.topic_config_path(topic))
        parts = sorted(int(p) for p in self.zk.children(zf.partitions_path(topic)) or ())
        nodes = {p: self.zk.get(zf.state_path(topic, p)) for p in parts}  # a state may not be written yet
        states = {p: json.loads(n.data) if n.exists else None for p, n in nodes.items()}
        return {"topic": json.loads(node.data) if node.exists else None,
                "config": json.loads(config.data) if config.exists else None,
                "states": states}

    def assignment(self, topic: str) -> dict[int, list[int]]:
        """The topic node's partitions (what was written: by Keel, or by Kafka's admin path)."""
        self.zk.sync()
        node = self.zk.get(zf.topic_path(topic))
        assert node.exists, f"{topic} has no topic node"
        return {int(p): r for p, r in sorted(json.loads(node.data)["partitions"].items(), key=lambda i: int(i[0]))}

    def wait_online(self, topic: str, partitions: int, timeout: float = 20.0) -> dict:
        """Until the controller has written a state with a leader for each of the topic's `partitions`."""

        def check() -> dict:
            znodes = self.topic_znodes(topic)
            states = znodes["states"]
            assert len(states) == partitions and all(s and s["leader"] >= 0 for s in states.values()), states
            return znodes

        return eventually(check, timeout=timeout)

    def log_folders(self, topic: str) -> list[str]:
        """Every folder of the topic in every broker's log.dirs, including ones renamed for deletion."""
        pattern = re.compile(rf"^{re.escape(topic)}-\d+($|\.)")
        found = []
        for b in self.cluster.broker_ids:
            for d in self.cluster.log_dirs(b):
                found += [str(p) for p in d.iterdir() if pattern.match(p.name)] if d.is_dir() else []
        return sorted(found)

    def ensure_healthy(self, timeout: float = 60.0) -> None:
        """Every broker running and registered, and every partition's ISR complete (after a kill test)."""
        for b in self.cluster.broker_ids:
            if not self.cluster.is_alive(b):
                self.cluster.start_broker(b)

        def full() -> None:
            snap = self.snapshot()
            assert all(b.alive for b in snap.brokers), [b.id for b in snap.brokers if not b.alive]
            short = [(p.topic, p.partition) for t in snap.topics for p in t.partitions if set(p.isr) != set(p.replicas)]
            assert not short, f"ISR not complete yet: {short}"
            assert len(self.kafka_cluster()["brokers"]) == len(self.cluster.brokers)

        eventually(full, timeout=timeout, interval=0.5)
        self.renew_admin()
        eventually(self._metadata_agrees, timeout=timeout, interval=0.5)

    def broker_topics(self, broker_id: int) -> set[str]:
        """The topics one broker's metadata cache lists (a Metadata request sent to that broker)."""
        from kafka.errors import NodeNotReadyError, UnknownBrokerIdError
        from kafka.protocol.metadata import MetadataRequest

        admin = self.admin

        async def ask():
            request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                      include_cluster_authorized_operations=False,
                                      include_topic_authorized_operations=False)
            return (await admin._manager.send(request, node_id=broker_id)).to_dict()

        try:
            return {t["name"] for t in admin._manager.run(ask)["topics"]}
        except (NodeNotReadyError, UnknownBrokerIdError) as e:  # the client does not know / reach it yet: retried
            raise AssertionError(f"broker {broker_id} cannot be asked yet: {e!r}") from e

    def _metadata_agrees(self) -> None:
        """Every broker's metadata lists exactly the topics ZooKeeper has, none being deleted, so that a client
        listing topics on one broker and describing them on another sees the same topics (Kafka 2.4's kafka-topics
        --describe aborts with UnknownTopicOrPartitionException on a topic one broker has and another not yet, or
        no longer)."""
        self.zk.sync()
        deleting = set(self.zk.children(zf.DELETE_TOPICS) or ())
        assert not deleting, f"topics still being deleted: {sorted(deleting)}"
        topics = set(self.zk.children(zf.TOPICS) or ())
        for b in self.cluster.broker_ids:
            seen = self.broker_topics(b)
            assert seen == topics, f"broker {b}'s metadata: {sorted(seen ^ topics)} differ from ZooKeeper's topics"

    def renew_admin(self) -> None:
        """A fresh Admin client: after brokers restarted (a rolling restart, a kill), kafka-python's client can keep
        metadata that names no live broker (UnknownBrokerIdError) for the rest of the package."""
        from kafka.admin import KafkaAdminClient

        old = self.admin
        self.admin = compat_admin(KafkaAdminClient(bootstrap_servers=self.cluster.bootstrap_servers,
                                                   client_id="keel-tests", request_timeout_ms=20000),
                                  self.cluster.version)
        try:
            old.close()
        except Exception:  # a client whose brokers went away may fail to close cleanly; it is dropped either way
            pass


def zookeeper_describe_form(text: str) -> str:
    """kafka-topics --zookeeper --describe output (Kafka before 2.2) in the form --bootstrap-server prints: the topic
    line ("Topic:t", "PartitionCount:3", "ReplicationFactor:2", "Configs:...", tab-separated) with a space after each
    colon, and a partition without a leader (ZooKeeper's -1) as "Leader: none"."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^Topic:([^\t]+)\tPartitionCount:(\d+)\tReplicationFactor:(\d+)\tConfigs:(.*)$", line)
        if m:
            line = f"Topic: {m[1]}\tPartitionCount: {m[2]}\tReplicationFactor: {m[3]}\tConfigs: {m[4]}"
        out.append(line.replace("\tLeader: -1\t", "\tLeader: none\t"))
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def describe_lines(text: str) -> list[str]:
    """kafka-topics --describe text, without the ELR columns Kafka 3.7+ appends (ZooKeeper mode has no ELR)."""
    return [re.sub(r"\tElr: [^\t]*\tLastKnownElr: [^\t]*$", "", line) for line in text.splitlines() if line.strip()]


def without_configs(lines: list[str]) -> list[str]:
    """Topic lines with their Configs column cut (compared separately: Kafka's also lists broker-level settings)."""
    return [re.sub(r"\tConfigs: .*$", "\tConfigs: ...", line) if line.startswith("Topic: ") else line for line in lines]


def _topic_of(line: str) -> str:
    m = re.match(r"^\t?Topic: ([^\t]*)", line)
    assert m, line
    return m[1]


def by_topic(lines: list[str]) -> list[str]:
    """The lines ordered by topic name, each topic's lines in their own order. Kafka's TopicCommand prints topics
    in the order of a Java HashMap (its describeTopics result), Keel by name: same lines, another order."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_topic_of(line), []).append(line)
    return [line for name in sorted(groups) for line in groups[name]]


def keel_view(snap: ClusterSnapshot) -> dict:
    return {
        "cluster_id": snap.cluster_id,
        "controller": snap.controller.broker_id if snap.controller else None,
        "brokers": {b.id: (b.rack, f"{b.host}:{b.port}") for b in snap.brokers if b.alive},
        "topics": {t.name: {"id": t.topic_id,
                            "partitions": {p.partition: (p.leader, list(p.replicas), list(p.isr), p.leader_epoch)
                                           for p in t.partitions},
                            "offline": {p.partition: sorted(set(p.replicas) - snap.alive_broker_ids)
                                        for p in t.partitions if set(p.replicas) - snap.alive_broker_ids}}
                   for t in snap.topics},
    }


def kafka_view(kafka: RealKafka) -> dict:
    cluster = kafka.kafka_cluster()
    return {"cluster_id": describe_cluster(kafka.admin)["cluster_id"], **cluster, "topics": kafka.kafka_topics()}


def _view_diff(ours: dict, theirs: dict, where: str = "") -> list[str]:
    """Where Keel's view and Kafka's differ, one line each (for the assertion message)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [line for k in sorted(set(ours) | set(theirs), key=str)
                for line in _view_diff(ours.get(k), theirs.get(k), f"{where}/{k}")]
    return [] if ours == theirs else [f"{where}: Keel {ours!r}, Kafka {theirs!r}"]


def assert_snapshot_matches_kafka(kafka: RealKafka, read=None) -> ClusterSnapshot:
    """Keel's snapshot == the Admin API's metadata (retried while the brokers' metadata catches up with ZooKeeper)."""
    read = read or kafka.snapshot

    def check() -> ClusterSnapshot:
        snap = read()
        ours, theirs = keel_view(snap), kafka_view(kafka)
        if not kafka_runner.version_at_least(kafka.cluster.version, "2.8"):
            # Older Metadata responses give an offline partition (leader -1) the leader epoch -1, not ZooKeeper's
            # (measured: 2.4.1 does, 2.8.2 does not), and before 2.1 (Metadata v7) no epoch at all: compare those
            # epochs as Kafka reports them.
            no_epochs = not kafka_runner.version_at_least(kafka.cluster.version, "2.1")
            # ... and before 2.4 an offline partition's ISR lists only live brokers (measured: 2.0.1 and 1.1.1)
            live_isr = not kafka_runner.version_at_least(kafka.cluster.version, "2.4")
            alive = set(ours["brokers"])
            for t in ours["topics"].values():
                t["partitions"] = {p: (v[0], v[1], [b for b in v[2] if b in alive] if live_isr and v[0] == -1 else v[2],
                                       -1 if v[0] == -1 or no_epochs else v[3])
                                   for p, v in t["partitions"].items()}
        assert ours == theirs, "\n".join(_view_diff(ours, theirs))
        return snap

    return eventually(check, timeout=15)


def tool_filters(version: str) -> tuple[str, ...]:
    """The filters kafka-topics --describe of `version` has: the two min-ISR ones since 2.3 (KIP-351)."""
    return FILTERS if kafka_runner.version_at_least(version, "2.3") else FILTERS[:2]


def run_filters(kafka: RealKafka) -> dict[str, tuple[list[str], list[str] | None]]:
    """{flag: (Keel's lines, TopicCommand's lines)} for the four filters; TopicCommand's are None for a filter its
    version does not have (tool_filters). Kafka's JVMs run in parallel."""
    have = tool_filters(kafka.cluster.version)
    with ThreadPoolExecutor(len(have)) as pool:
        theirs = dict(zip(have, pool.map(lambda f: describe_lines(kafka.topic_command("--describe", f)), have)))
    return {f: (describe_lines(kafka.keel_ok("describe", f)), theirs.get(f)) for f in FILTERS}


# --- helpers of the reassignment, election and log-dirs tests -------------------------------------------

THROTTLE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def keel_zk(kafka: RealKafka, *argv: str) -> tuple[int, str, str]:
    """`python -m core ARGV --zk <cluster> [--store <store>]` in-process (--store for the commands that write)."""
    store = ["--store", str(kafka.store)] if argv and argv[0] not in ("plan", "describe", "snapshot") else []
    return kafka.keel(*argv, "--zk", kafka.zk_connect, *store)


def keel_zk_ok(kafka: RealKafka, *argv: str) -> str:
    code, out, err = keel_zk(kafka, *argv)
    assert code == 0, f"keel {' '.join(argv)} failed ({code}): {err}"
    return out


def config_command(kafka: RealKafka, *args: str) -> str:
    """Kafka's own `kafka-configs --bootstrap-server ... ARGS` (ConfigCommand), which must succeed."""
    main = tool_class(kafka.cluster.version, "org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
    proc = kafka.cluster.tool(main, "--bootstrap-server", kafka.bootstrap, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def started_action(out: str) -> int:
    """The action id a write command printed on its 'Successfully started ... (action N)' line."""
    found = re.search(r"^Successfully started .*\(action (\d+)\)", out, re.M)
    assert found, f"no 'Successfully started ... (action N)' line in:\n{out}"
    return int(found.group(1))


def produce(kafka: RealKafka, topic: str, sizes: dict[int, int], *, chunk: int = 100_000) -> None:
    """Write about `sizes[p]` bytes of incompressible data to each partition p (acks=all: on every ISR replica)."""
    import os

    from kafka import KafkaProducer

    # batches under 1000012 bytes, the message.max.bytes of Kafka before 3.0 (setting it on the broker instead stops
    # a topic's max.message.bytes override from taking effect: measured on 3.9.1 and 2.8.2)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", batch_size=900_000, linger_ms=20,
                             max_request_size=2 << 20, request_timeout_ms=30000)
    try:
        value = os.urandom(chunk)
        for partition, size in sizes.items():
            for _ in range(max(1, size // chunk)):
                producer.send(topic, value, partition=partition)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def create_topic(kafka: RealKafka, topic: str, assignment: dict[int, list[int]], **configs: str) -> None:
    """Create a topic with an explicit assignment through the Admin API and wait until every partition leads."""
    from kafka.admin import NewTopic

    kafka.admin.create_topics([NewTopic(topic, replica_assignments=assignment, topic_configs=configs or None)])
    kafka.wait_online(topic, len(assignment))
    eventually(lambda: _has_topic(kafka, topic, len(assignment)))


def _has_topic(kafka: RealKafka, topic: str, partitions: int) -> None:
    meta = kafka.kafka_topics()
    assert topic in meta and len(meta[topic]["partitions"]) == partitions and \
        all(v[0] >= 0 for v in meta[topic]["partitions"].values()), meta.get(topic)


def throttles_seen_by_kafka(kafka: RealKafka, topics: list[str]) -> dict[str, dict[str, str]]:
    """describe_configs (non-default values only) of every broker and of `topics`, reduced to the throttle keys:
    {"broker 1": {key: value}, "topic t": {key: value}}; entities without a throttle are left out."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resources = [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in kafka.cluster.broker_ids]
    resources += [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
    return throttle_configs_of(kafka.admin.describe_configs(resources))


def throttle_configs_of(answer: dict) -> dict[str, dict[str, str]]:
    """A describe_configs answer {kind: {name: {key: {"value": ...}}}} reduced to the throttle keys, as
    {"broker 1": {key: value}, ...}; entities without a throttle are left out."""
    out = {}
    for kind, entities in answer.items():
        for name, entries in entities.items():
            found = {k: v["value"] for k, v in entries.items() if k in THROTTLE_KEYS}
            if found:
                out[f"{kind} {name}"] = found
    return out


def config_znodes(kafka: RealKafka, topics: list[str]) -> dict[str, dict[str, str]]:
    """What ZooKeeper holds in /config/brokers/<id> and /config/topics/<t> (the `config` maps)."""
    kafka.zk.sync()
    out = {}
    for path in [zf.broker_config_path(b) for b in kafka.cluster.broker_ids] + [zf.topic_config_path(t) for t in topics]:
        node = kafka.zk.get(path)
        out[path] = json.loads(node.data)["config"] if node.exists else {}
    return out


def throttle_entries(value: str) -> set[str]:
    """A throttled-replicas list as the broker reads it: a set of "partition:broker" (order carries no meaning)."""
    return {v for v in value.split(",") if v}


def reassign_command(kafka: RealKafka, *args: str) -> str:
    """Kafka's own kafka-reassign-partitions (ReassignPartitionsCommand); its stdout. Fails the test on an error.

    Before Kafka 2.5 the tool works through ZooKeeper (--zookeeper is required; --bootstrap-server is only used for
    log-dir moves), so it is given both there."""
    main = tool_class(kafka.cluster.version, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                      "kafka.admin.ReassignPartitionsCommand")
    zk = [] if kafka_runner.version_at_least(kafka.cluster.version, "2.5") else ["--zookeeper", kafka.zk_connect]
    proc = kafka.cluster.tool(main, *zk, "--bootstrap-server", kafka.bootstrap, *args)
    assert proc.returncode == 0, f"ReassignPartitionsCommand {' '.join(args)} failed: {proc.stdout}{proc.stderr}"
    return proc.stdout


def running_reassignments(kafka: RealKafka, topic: str | None = None) -> set[tuple[str, int]]:
    """The partitions Kafka says are being reassigned (of `topic`, or all): the controller's listPartitionReassignments
    on Kafka 2.4+ (KIP-455). Before 2.4 there is no such API: the controller's record of a running reassignment is
    /admin/reassign_partitions, from which it drops each partition as it completes (and the node once empty), and
    which Kafka's own kafka-reassign-partitions --verify reads on those versions."""
    if kafka_runner.version_at_least(kafka.cluster.version, "2.4"):
        found = {(tp.topic, tp.partition) for tp in kafka.admin.list_partition_reassignments()}
    else:
        kafka.zk.sync()
        node = kafka.zk.get(zf.REASSIGN)
        found = {(e.topic, e.partition) for e in zf.decode_reassignment(node.data)} if node.exists else set()
    return {k for k in found if topic is None or k[0] == topic}


def broker_rates_shown(version: str, rate: int) -> str | None:
    """The value describe_configs gives for a broker's leader/follower.replication.throttled.rate: the rate on Kafka
    2.6+; None before, where the brokers mark those two keys sensitive and hide their values (their type was not
    known to KafkaConfig: KAFKA-9625, fixed in 2.6.0). ZooKeeper's /config/brokers/<id> then holds the values, which
    is where Kafka's own tools of those versions (kafka-configs --zookeeper) read them."""
    return str(rate) if kafka_runner.version_at_least(version, "2.6") else None


def leaders(kafka: RealKafka) -> dict[tuple[str, int], int]:
    """Every partition's leader as the Admin API's metadata reports it."""
    return {(t, p): v[0] for t, info in kafka.kafka_topics().items() for p, v in info["partitions"].items()}
