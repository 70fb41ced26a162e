"""ACLs and client quotas written by Keel in ZooKeeper, enforced by a real ZooKeeper-mode broker.

One broker of its own with Kafka's AclAuthorizer: a PLAINTEXT listener between brokers (User:ANONYMOUS, the only
super user: Kafka's own tools use it here) and a SASL_PLAINTEXT listener with PLAIN users alice, bob, carol and dave
(no ACL: refused, allow.everyone.if.no.acl.found is false). Keel writes through --zk only, as `kafka-acls
--authorizer-properties zookeeper.connect=...` and `kafka-configs --entity-type users` do, and the broker must act on
it: alice refused, allowed within seconds of Keel's binding, refused again after its removal; Keel's "who may write"
is what the broker enforces; a produce quota set by Keel brings alice's throughput within 25 % of it; Keel's listings
equal kafka-acls --list and kafka-configs --describe; alice's SCRAM credential stays in her node and out of every
output, log line and audit record.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import time
import uuid

import pytest
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from core.security.acls import parse_list_text, principals_allowed
from core.security.model import Operation, QuotaEntity, ResourceType
from core.security.quotas import parse_describe_text
from core.zk.security_writes import read_acls, read_quotas
from core.zk.session import ZkSession
from sandbox.processes import kafka as kafka_runner
from tests.kafka.conftest import VERSION
from tests.kafka.realkafka import needs_kafka, tool_class
from tests.support.sandbox_helpers import wait_until

pytestmark = needs_kafka("2.4", "kafka.security.authorizer.AclAuthorizer")

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
USERS = {"alice": "alice-Secret-1", "bob": "bob-Secret-2", "carol": "carol-Secret-3", "dave": "dave-Secret-4"}
SCRAM_PASSWORD = "alice-scram-Secret-5"
QUOTA = 200_000  # bytes/s


class Cluster:
    def __init__(self, cluster: kafka_runner.KafkaCluster, sasl: str):
        self.cluster, self.sasl = cluster, sasl
        self.zk = cluster.zk_connect
        self.plaintext = cluster.brokers[0].endpoint
        self.outputs: list[str] = []  # everything Keel printed, for the SCRAM check

    def keel(self, *argv: str) -> tuple[int, str, str]:
        from core.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        self.outputs += [out.getvalue(), err.getvalue()]
        return code, out.getvalue(), err.getvalue()

    def ok(self, *argv: str) -> str:
        code, out, err = self.keel(*argv, "--zk", self.zk)
        assert code == 0, err
        return out

    def tool(self, candidates: tuple[str, str], *args: str) -> str:
        done = self.cluster.tool(tool_class(VERSION, *candidates), "--bootstrap-server", self.plaintext, *args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def producer(self, user: str, **kw) -> KafkaProducer:
        return KafkaProducer(bootstrap_servers=self.sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username=user, sasl_plain_password=USERS[user], enable_idempotence=False,
                             retries=0, acks=1, max_block_ms=10000, request_timeout_ms=10000, **kw)

    def may_write(self, user: str, topic: str) -> bool:
        """Produce one record as `user`: True if the broker took it, False if it refused the topic."""
        p = self.producer(user)
        try:
            p.send(topic, b"probe").get(timeout=15)
            return True
        except TopicAuthorizationFailedError:
            return False
        finally:
            p.close(timeout=5)


ACLS = ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")
CONFIGS = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")


@pytest.fixture(scope="module")
def zkc(zk_server, tmp_path_factory):
    base = tmp_path_factory.mktemp("acl-zk")
    connect = f"{zk_server}/kafka-acl-{uuid.uuid4().hex[:8]}"
    cluster = kafka_runner.KafkaCluster.create(base / "cluster", connect, brokers=1, racks=0, detach=False,
                                               version=VERSION)
    b = cluster.brokers[0]
    sasl = f"127.0.0.1:{kafka_runner.free_port()}"
    listeners = f"PLAINTEXT://{b.endpoint},SASL_PLAINTEXT://{sasl}"
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    cluster.overrides.update({
        "listeners": listeners, "advertised.listeners": listeners, "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{PLAIN} required {users};",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f"{SCRAM} required;",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        # a short quota window (Kafka: 11 x 1 s), so that the throttled rate settles within the test's seconds
        "quota.window.num": "3", "quota.window.size.seconds": "1",
    })
    cluster.start(timeout=120)
    try:
        c = Cluster(cluster, sasl)
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=c.plaintext, request_timeout_ms=20000)
        admin.create_topics([NewTopic("orders-zk", 1, 1), NewTopic("quota-zk", 1, 1)])
        admin.close()
        # a SCRAM credential for alice, in the node Keel's quota write rewrites
        c.tool(CONFIGS, "--alter", "--entity-type", "users", "--entity-name", "alice",
               "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={SCRAM_PASSWORD}]")
        yield c
    finally:
        cluster.stop()


def _scram_of_alice(c: Cluster) -> str:
    with ZkSession.open(c.zk) as s:
        return json.loads(s.get("/config/users/alice").data)["config"]["SCRAM-SHA-512"]


def test_a_binding_keel_writes_is_enforced_and_who_may_write_is_what_the_broker_does(zkc, monkeypatch, tmp_path):
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    binding = ["--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders-zk"]
    assert not zkc.may_write("alice", "orders-zk")

    zkc.ok("acl-add", *binding)
    started = time.monotonic()
    wait_until(lambda: zkc.may_write("alice", "orders-zk"), timeout=20, interval=0.5,
               message="the broker to let alice write after Keel's binding")
    print(f"\nalice allowed {time.monotonic() - started:.1f} s after Keel's binding")

    zkc.ok("acl-remove", *binding)
    wait_until(lambda: not zkc.may_write("alice", "orders-zk"), timeout=20, interval=0.5,
               message="the broker to refuse alice again after Keel removed the binding")

    # prefixed, wildcard, deny and implied bindings, then Keel's answer against the broker's, principal by principal
    zkc.ok("acl-add", "--allow-principal", "User:bob", "--operation", "All", "--topic", "orders-",
           "--resource-pattern-type", "prefixed")
    zkc.ok("acl-add", "--allow-principal", "User:carol", "--operation", "Write", "--topic", "*")
    zkc.ok("acl-add", "--deny-principal", "User:carol", "--operation", "Write", "--topic", "orders-zk")
    zkc.ok("acl-add", "--allow-principal", "User:dave", "--allow-principal", "User:alice", "--operation", "Describe",
           "--topic", "orders-zk")
    with ZkSession.open(zkc.zk) as s:
        acls = read_acls(s)
    keel_says = principals_allowed(acls, Operation.WRITE, ResourceType.TOPIC, "orders-zk") & {
        f"User:{u}" for u in USERS}
    assert keel_says == {"User:bob"}

    def broker_agrees():
        return {f"User:{u}" for u in USERS if zkc.may_write(u, "orders-zk")} == keel_says

    wait_until(broker_agrees, timeout=20, interval=0.5, message="the broker to enforce what Keel says")

    # Keel's listing is kafka-acls --list's, binding for binding
    listed = zkc.tool(ACLS, "--list")
    assert parse_list_text(listed) == frozenset(acls.bindings)
    assert parse_list_text(zkc.ok("acls")) == frozenset(acls.bindings)
    assert len(acls.bindings) == 5


def test_a_quota_keel_sets_limits_the_producer_and_scram_stays_hidden(zkc, monkeypatch, tmp_path, caplog):
    store = tmp_path / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(store))
    caplog.set_level(logging.DEBUG)
    scram = _scram_of_alice(zkc)
    zkc.ok("acl-add", "--allow-principal", "User:alice", "--allow-principal", "User:bob", "--operation", "Write",
           "--topic", "quota-zk")
    wait_until(lambda: zkc.may_write("alice", "quota-zk"), timeout=20, interval=0.5, message="alice allowed")

    # the unthrottled rate, measured as bob: alice's own burst would still fill her quota window when it is set
    before = _rate(zkc, "bob", seconds=3, warm=1)
    zkc.ok("quota-alter", "--user", "alice", "--add-config", f"producer_byte_rate={QUOTA}")
    zkc.ok("quota-alter", "--client-id", "reports app", "--add-config", "consumer_byte_rate=1048576")
    zkc.ok("quota-alter", "--user-defaults", "--add-config", "request_percentage=200")
    zkc.ok("quota-alter", "--user", "CN=app,O=acme", "--add-config", "consumer_byte_rate=1024")  # Kafka's Sanitizer
    time.sleep(1)  # the notification reaches the broker's config handler
    after = _rate(zkc, "alice", seconds=10, warm=4)
    print(f"\nbob produced {before:,.0f} B/s unthrottled, alice {after:,.0f} B/s under Keel's {QUOTA:,} B/s quota")
    assert before > 2 * QUOTA, "an unthrottled producer must outrun the quota, or the quota check proves nothing"
    assert abs(after - QUOTA) <= 0.25 * QUOTA

    # Keel's listing is kafka-configs --describe's
    with ZkSession.open(zkc.zk) as s:
        quotas = read_quotas(s)
    assert {q.entity for q in quotas} == {QuotaEntity("alice"), QuotaEntity(None, "reports app"),
                                          QuotaEntity("<default>"), QuotaEntity("CN=app,O=acme")}
    described = zkc.tool(CONFIGS, "--describe", "--entity-type", "users") + zkc.tool(
        CONFIGS, "--describe", "--entity-type", "clients")
    assert "SCRAM credential configs for user-principal 'alice'" in described  # the tool sees the credential
    want = {(q.entity, tuple(sorted(q.values.items()))) for q in quotas}
    assert {(q.entity, tuple(sorted(q.values.items()))) for q in parse_describe_text(described)} == want
    keel_text = zkc.ok("quotas")
    assert {(q.entity, tuple(sorted(q.values.items()))) for q in parse_describe_text(keel_text)} == want
    zkc.ok("quotas", "--json")
    zkc.ok("quotas", "--effective", "alice", "any")

    # alice's credential is still in her node, and nowhere Keel wrote
    assert _scram_of_alice(zkc) == scram
    secrets = [p.split("=", 1)[1] for p in scram.split(",") if p.startswith(("salt=", "stored_key=", "server_key="))]
    assert len(secrets) == 3
    leaks = "\n".join(zkc.outputs) + caplog.text + store.read_bytes().decode(errors="replace")
    for secret in (*secrets, SCRAM_PASSWORD):
        assert secret not in leaks


def _rate(c: Cluster, user: str, *, seconds: float, warm: float) -> float:
    """`user`'s acknowledged bytes per second on quota-zk between `warm` and `seconds` after she starts sending (64
    records of 1000 bytes at a time: the broker's throttling delays each answer)."""
    value = b"q" * 1000
    acked: list[float] = []
    p = c.producer(user, linger_ms=5, batch_size=16384)
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            for _ in range(64):
                p.send("quota-zk", value).add_callback(lambda _md: acked.append(time.monotonic()))
            p.flush(timeout=30)
    finally:
        p.close(timeout=5)
    counted = [t for t in acked if start + warm <= t <= start + seconds]
    return len(counted) * len(value) / (seconds - warm)
