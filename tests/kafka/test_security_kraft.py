"""ACLs and client quotas through the Admin API engine (core.kafka.security_writes) on a REAL KRaft cluster with
Kafka's StandardAuthorizer and SASL PLAIN users: admin (a super user), alice, bob.

Kafka 3.9.1 (make test-kafka-matrix's Kafka 4 line: the first of KEEL_KRAFT_VERSIONS; passes on 4.4.0 too). One
combined broker + controller node of its own (sandbox.processes.kraft), with three listeners: CONTROLLER and
PLAINTEXT (the node's own requests and Kafka's tools; their principal, User:ANONYMOUS, is a super user, as the
brokers' and controllers' principals must be) and SASL_PLAINTEXT, which Keel (as admin) and the producers (as alice,
bob) use. The quota windows are 3 x 1 s instead of 11 x 1 s, so that a byte-rate quota binds within a second or two
instead of after a burst of ten seconds' worth (Kafka's Rate measures over the whole window).

The story: alice's produce is refused; the engine adds WRITE for her (DESCRIBE implied); she produces within
seconds; the engine removes it; she is refused again; the engine's listing equals `kafka-acls --list`; a produce
quota set through the engine brings her measured throughput within 25 % of it; the engine's quotas equal
`kafka-configs --describe --entity-type users`. Every write is in the audit store with its rollback. Besides:
the named risk of removing Keel's own principal's rights, "who may write" against what the broker enforces, undo,
the CLI through --bootstrap-server, Kafka's refusals as typed errors, bad input refused with nothing written.
"""

from __future__ import annotations

import os
import time

import pytest

from core.audit.store import Store
from core.errors import RiskNotAcceptedError, ValidationError
from core.kafka import security_writes as engine
from core.kafka.admin import KafkaAdmin, KafkaAdminError
from core.kafka.client_config import KafkaClientSecurity
from core.security.acls import parse_list_text
from core.security.quotas import parse_describe_text
from core.security.records import binding_dict
from core.security.model import (Binding, Operation, PatternType, Permission, Quota, QuotaEntity, Resource,
                                 ResourceType)
from sandbox.processes.common import free_port
from tests.kafka.realkafka import tool_class

pytestmark = pytest.mark.kraft  # its own cluster, whatever KEEL_KAFKA_VERSION the ZooKeeper-mode tests run

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSWORDS = {"admin": "admin-Secret-1", "alice": "alice-Secret-2", "bob": "bob-Secret-3"}
TOPIC = "orders"
SCRAM_PASSWORD = "scram-Secret-4"
QUOTA = 300_000.0  # bytes/s


class Secured:
    def __init__(self, cluster, sasl: str, store: Store):
        self.cluster, self.sasl, self.store = cluster, sasl, store
        self.plaintext = cluster.brokers[0].endpoint

    def admin(self, user: str = "admin") -> KafkaAdmin:
        return KafkaAdmin(self.sasl, timeout=15, security=KafkaClientSecurity(
            protocol="SASL_PLAINTEXT", mechanism="PLAIN", username=user, password=PASSWORDS[user]))

    def tool(self, *candidates_and_args: str) -> str:
        cls, *args = candidates_and_args
        names = cls.split("|")
        done = self.cluster.tool(tool_class(self.cluster.version, *names), *args)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    from sandbox.processes import kafka_setup
    from sandbox.processes.kraft import KraftCluster

    # Kafka 3.9.1; make test-kafka-matrix's Kafka 4 line (KEEL_KRAFT_VERSIONS) runs it on its first version
    version = os.environ.get("KEEL_KRAFT_VERSIONS", "").split()[:1] or ["3.9.1"]
    version = version[0]
    try:
        kafka_setup.lib_dir(version)
    except kafka_setup.KafkaNotFetchedError:
        kafka_setup.fetch(version)
    base = tmp_path_factory.mktemp("kraft-secured")
    cluster = KraftCluster.create(base / "cluster", nodes=1, racks=0, version=version, detach=False)
    b = cluster.brokers[0]
    sasl = f"127.0.0.1:{free_port()}"
    users = " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items())
    cluster.overrides.update({
        "listeners": f"PLAINTEXT://{b.endpoint},SASL_PLAINTEXT://{sasl},CONTROLLER://{b.controller_endpoint}",
        "advertised.listeners": f"PLAINTEXT://{b.endpoint},SASL_PLAINTEXT://{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{PLAIN} required {users};",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "quota.window.num": "3",
        "quota.window.size.seconds": "1",
    })
    started = time.monotonic()
    cluster.start(timeout=120)
    print(f"\nsecured KRaft {version}: up in {time.monotonic() - started:.1f} s ({sasl})")
    try:
        s = Secured(cluster, sasl, Store(base / "keel.sqlite"))
        s.tool("org.apache.kafka.tools.TopicCommand|kafka.admin.TopicCommand", "--bootstrap-server", s.plaintext,
               "--create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1")
        yield s
    finally:
        cluster.stop()


def _produce(s: Secured, user: str, *, records: int = 1, size: int = 100, timeout: float = 6.0) -> str | None:
    """Produce as `user` through SASL_PLAINTEXT: None when every record was acknowledged, else the error's name."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=s.sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username=user, sasl_plain_password=PASSWORDS[user],
                             max_block_ms=int(timeout * 1000), request_timeout_ms=int(timeout * 1000))
    try:
        for f in [producer.send(TOPIC, b"x" * size) for _ in range(records)]:
            f.get(timeout=timeout)
        return None
    except Exception as e:  # the producer's refusal (TopicAuthorizationFailedError, ...) is the answer
        return type(e).__name__
    finally:
        producer.close(timeout=2)


def _until(check, want, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if want(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


WRITE = Binding(Resource(ResourceType.TOPIC, TOPIC, PatternType.LITERAL), "User:alice", "*", Operation.WRITE,
                Permission.ALLOW)


def test_acl_story_and_listing_equals_kafka_acls(secured: Secured):
    s = secured
    refused = _produce(s, "alice")
    assert refused is not None and "Authorization" in refused, refused
    with s.admin() as admin:
        before = engine.read_acls(admin)
        assert before.source == "brokers" and before.bindings == ()
        assert before.authorizer == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        # super.users is the authorizer's setting, which DescribeConfigs does not describe: unknown, not "none"
        assert before.super_users is None
        node = s.cluster.brokers[0].id  # the broker lists super.users but withholds its value (no declared type)
        assert admin.broker_configs([node], ["super.users"])[node]["super.users"][0] is None

        added = engine.add_acls(admin, s.store, [WRITE], cluster="secured", actor="sre")
        started = time.monotonic()
        assert _until(lambda: _produce(s, "alice"), lambda r: r is None) is None
        print(f"alice produces {time.monotonic() - started:.1f} s after the binding was added")
        assert _produce(s, "bob") is not None  # bob was not given anything
        after = engine.read_acls(admin)
        assert after.bindings == (WRITE,)
        # Keel's listing is what Kafka's own tool lists
        listed = s.tool("kafka.admin.AclCommand|org.apache.kafka.tools.AclCommand", "--bootstrap-server",
                        s.plaintext, "--list")
        assert parse_list_text(listed) == frozenset(after.bindings)

        row = s.store.action(added.action_id)
        assert (row.kind, row.status) == ("acl-add", "applied")
        assert row.rollback == {"action": "acl-remove", "bindings": [binding_dict(WRITE)]}
        assert row.payload == {"bindings": [binding_dict(WRITE)]}

        with pytest.raises(ValidationError, match="exists already"):  # nothing new: refused, nothing recorded
            engine.add_acls(admin, s.store, [WRITE], cluster="secured")

        removed = engine.remove_acls(admin, s.store, [WRITE], cluster="secured", actor="sre")
        refused = _until(lambda: _produce(s, "alice"), lambda r: r is not None)
        assert refused is not None and "Authorization" in refused, refused
        assert engine.read_acls(admin).bindings == ()
        assert s.tool("kafka.admin.AclCommand|org.apache.kafka.tools.AclCommand", "--bootstrap-server",
                      s.plaintext, "--list").strip() == ""
        row = s.store.action(removed.action_id)
        assert (row.kind, row.status) == ("acl-remove", "applied")
        assert row.rollback == {"action": "acl-add", "bindings": [binding_dict(WRITE)]}

        with pytest.raises(ValidationError, match="no such ACL binding"):  # gone: refused before any write
            engine.remove_acls(admin, s.store, [WRITE], cluster="secured")


def test_removal_keel_relies_on_needs_the_named_risk(secured: Secured):
    """Keel connecting as bob: removing bob's own rights on the cluster is refused unless the named risk is accepted
    (the principal a KafkaAdmin connects as is relied on by default)."""
    s = secured
    cluster = Resource(ResourceType.CLUSTER, "kafka-cluster")
    rights = [Binding(cluster, "User:bob", "*", op, Permission.ALLOW) for op in (Operation.ALTER, Operation.DESCRIBE)]
    with s.admin() as admin:
        engine.add_acls(admin, s.store, rights, cluster="secured")
    with s.admin("bob") as keel:
        with pytest.raises(RiskNotAcceptedError) as refused:
            engine.remove_acls(keel, s.store, rights, cluster="secured")
        assert "User:bob" in str(refused.value)
        assert set(rights) <= set(engine.read_acls(keel).bindings)  # nothing was removed
        engine.remove_acls(keel, s.store, rights, cluster="secured", accept_risks=list(refused.value.risks))
    with s.admin() as admin:
        assert not set(rights) & set(engine.read_acls(admin).bindings)


def _throughput(s: Secured, seconds: float = 15.0, warmup: float = 3.0) -> float:
    """alice's acknowledged bytes per second after `warmup` s of producing (100 KB per flush): the least-squares
    slope of acknowledged bytes over time. Under a quota the curve is a staircase (a burst each time a 1 s sample
    leaves the broker's 3 s window, then a throttled pause), so a two-point rate would depend on where the
    measurement starts and ends within a step; the slope of every sample does not."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=s.sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="alice", sasl_plain_password=PASSWORDS["alice"],
                             linger_ms=5, batch_size=200_000, max_request_size=2_000_000)
    samples = []
    sent = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            for _ in range(10):
                producer.send(TOPIC, b"q" * 10_000)
            producer.flush(timeout=30)
            sent += 100_000
            samples.append((time.monotonic() - started, sent))
    finally:
        producer.close(timeout=5)
    kept = [x for x in samples if x[0] >= warmup]
    assert len(kept) >= 5, samples
    mt = sum(t for t, _ in kept) / len(kept)
    mb = sum(b for _, b in kept) / len(kept)
    return sum((t - mt) * (b - mb) for t, b in kept) / sum((t - mt) ** 2 for t, _ in kept)


def test_produce_quota_and_listing_equals_kafka_configs(secured: Secured):
    s = secured
    alice = QuotaEntity(user="alice")
    allow = Binding(Resource(ResourceType.TOPIC, TOPIC), "User:alice", "*", Operation.WRITE, Permission.ALLOW)
    with s.admin() as admin:
        engine.add_acls(admin, s.store, [allow], cluster="secured")
        assert _until(lambda: _produce(s, "alice"), lambda r: r is None) is None
        unthrottled = _throughput(s, seconds=3, warmup=1)
        assert unthrottled > QUOTA * 3, f"alice's unthrottled rate {unthrottled:,.0f} B/s is too low to tell"

        applied = engine.alter_quota(admin, s.store, alice, {"producer_byte_rate": QUOTA}, cluster="secured",
                                     actor="sre")
        assert engine.read_quotas(admin) == (Quota(alice, {"producer_byte_rate": QUOTA}),)
        row = s.store.action(applied.action_id)
        assert (row.kind, row.status) == ("quota-alter", "applied")
        assert row.rollback == {"action": "quota-alter", "entity": {"user": "alice", "client": None},
                                "values": {"producer_byte_rate": None}}
        assert row.payload == {"entity": {"user": "alice", "client": None},
                               "values": {"producer_byte_rate": QUOTA}, "old": {}}
        measured = _throughput(s)
        print(f"alice: {unthrottled:,.0f} B/s unthrottled, {measured:,.0f} B/s under a quota of {QUOTA:,.0f}")
        assert abs(measured - QUOTA) <= 0.25 * QUOTA, (measured, QUOTA)

        # another user (with a SCRAM credential, which the tool lists too) and a client id, then compare with
        # Kafka's own tool
        s.tool("kafka.admin.ConfigCommand|org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", s.plaintext,
               "--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config",
               f"SCRAM-SHA-512=[password={SCRAM_PASSWORD}]")
        engine.alter_quota(admin, s.store, QuotaEntity(user="bob"), {"consumer_byte_rate": 2048.0,
                                                                     "request_percentage": 50.0}, cluster="secured")
        engine.alter_quota(admin, s.store, QuotaEntity(client="c1"), {"producer_byte_rate": 1000.0},
                           cluster="secured")
        described = s.tool("kafka.admin.ConfigCommand|org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                           s.plaintext, "--describe", "--entity-type", "users")
        users = tuple(q for q in engine.read_quotas(admin)
                      if q.entity.client is None and q.entity.user not in (None, "<default>"))
        assert "SCRAM credential configs for user-principal 'bob'" in described
        assert len(users) == 2 and parse_describe_text(described) == users
        assert SCRAM_PASSWORD not in str(engine.read_quotas(admin))
        for secret in (*PASSWORDS.values(), SCRAM_PASSWORD):
            assert all(secret not in str(a.payload) + str(a.rollback) for a in s.store.actions("secured"))

        with pytest.raises(ValidationError, match="nothing to change"):
            engine.alter_quota(admin, s.store, alice, {"producer_byte_rate": QUOTA}, cluster="secured")
        engine.alter_quota(admin, s.store, alice, {"producer_byte_rate": None}, cluster="secured")
        assert alice not in {q.entity for q in engine.read_quotas(admin)}
        engine.remove_acls(admin, s.store, [allow], cluster="secured")


def test_bad_input_is_refused_before_anything_is_written(secured: Secured):
    s = secured
    with s.admin() as admin:
        before = len(s.store.actions("secured", limit=1000))
        with pytest.raises(ValidationError):
            engine.add_acls(admin, s.store, [Binding(WRITE.resource, "alice", "*", Operation.WRITE,
                                                     Permission.ALLOW)], cluster="secured")  # no "User:"
        with pytest.raises(ValidationError):
            engine.alter_quota(admin, s.store, QuotaEntity(user="bob"), {"SCRAM-SHA-512": 1.0}, cluster="secured")
        with pytest.raises(ValidationError, match="Invalid config"):  # deleting what is not set
            engine.alter_quota(admin, s.store, QuotaEntity(user="nobody"), {"producer_byte_rate": None},
                               cluster="secured")
        assert len(s.store.actions("secured", limit=1000)) == before
        # a principal without DESCRIBE on the cluster is refused the listing, in words that say so
        with s.admin("bob") as bob, pytest.raises(KafkaAdminError, match="refused"):
            engine.read_acls(bob)


def test_undo_through_the_admin_api(secured: Secured):
    """core.cluster.security.undo executes a recorded rollback through this engine: an added binding removed, a
    removed one added back, a quota set back."""
    from core.cluster.security import undo

    s = secured
    read = Binding(Resource(ResourceType.GROUP, "billing-", PatternType.PREFIXED), "User:bob", "*", Operation.READ,
                   Permission.ALLOW)
    with s.admin() as admin:
        added = engine.add_acls(admin, s.store, [read], cluster="secured")
        assert read in engine.read_acls(admin).bindings
        undone = undo(admin, s.store, added.action_id, cluster="secured", actor="sre")
        assert read not in engine.read_acls(admin).bindings
        assert s.store.action(undone.action_id).kind == "acl-remove"
        redone = undo(admin, s.store, undone.action_id, cluster="secured")
        assert read in engine.read_acls(admin).bindings and s.store.action(redone.action_id).kind == "acl-add"

        carol = QuotaEntity(user="carol", client="<default>")
        first = engine.alter_quota(admin, s.store, carol, {"request_percentage": 20.0}, cluster="secured")
        engine.alter_quota(admin, s.store, carol, {"request_percentage": 40.0, "consumer_byte_rate": 5e5},
                           cluster="secured")
        later = s.store.actions("secured", kind="quota-alter", limit=1)[0]
        undo(admin, s.store, later.id, cluster="secured")
        assert {q.entity: dict(q.values) for q in engine.read_quotas(admin)}[carol] == {"request_percentage": 20.0}
        undo(admin, s.store, first.action_id, cluster="secured")
        assert carol not in {q.entity for q in engine.read_quotas(admin)}


def test_who_may_write_equals_what_the_broker_enforces(secured: Secured):
    """A prefixed ALLOW for alice and bob and a literal DENY for bob: Keel's "who may write" (read through the engine,
    resolved by core.security.acls) is what the broker enforces, checked by producing as each user."""
    from core.security.acls import decide

    s = secured
    prefixed = Resource(ResourceType.TOPIC, TOPIC[:3], PatternType.PREFIXED)
    bindings = [Binding(prefixed, f"User:{u}", "*", Operation.WRITE, Permission.ALLOW) for u in ("alice", "bob")]
    bindings.append(Binding(Resource(ResourceType.TOPIC, TOPIC), "User:bob", "*", Operation.WRITE, Permission.DENY))
    with s.admin() as admin:
        engine.add_acls(admin, s.store, bindings, cluster="secured")
        try:
            acls = engine.read_acls(admin)
            keel = {u: decide(acls, f"User:{u}", Operation.WRITE, ResourceType.TOPIC, TOPIC).allowed
                    for u in ("alice", "bob")}
            assert keel == {"alice": True, "bob": False}
            broker = {u: _until(lambda u=u: _produce(s, u), lambda r: r is None, timeout=5) is None
                      for u in ("alice", "bob")}
            assert broker == keel
        finally:
            engine.remove_acls(admin, s.store, bindings, cluster="secured", relied_on={})


def test_cli_through_the_brokers(secured: Secured, capsys, monkeypatch, tmp_path):
    """The CLI's acl-add / acls / quota-alter / quotas with --bootstrap-server and --command-config (admin over SASL)
    reach this engine; what they list is what Kafka's tools list."""
    from core.cli import main
    from core.security.acls import parse_list_text as parse

    s = secured
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + PLAIN
                     + f' required username="admin" password="{PASSWORDS["admin"]}";\n')
    where = ["--bootstrap-server", s.sasl, "--command-config", str(props)]

    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert all(p not in out + err for p in PASSWORDS.values())
        return code, out, err

    code, out, err = run("acl-add", *where, "--allow-principal", "User:bob", "--operation", "Read", "--topic", TOPIC)
    assert code == 0, err
    code, out, err = run("acls", *where)
    assert code == 0, err
    kafka_acls = s.tool("kafka.admin.AclCommand|org.apache.kafka.tools.AclCommand", "--bootstrap-server",
                        s.plaintext, "--list")
    assert parse(out) == parse(kafka_acls) and len(parse(out)) >= 1
    code, out, err = run("quota-alter", *where, "--client-id", "c9", "--add-config", "producer_byte_rate=4096")
    assert code == 0, err
    code, out, err = run("quotas", *where)
    assert code == 0, err
    tool = s.tool("kafka.admin.ConfigCommand|org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                  s.plaintext, "--describe", "--entity-type", "clients")
    clients = tuple(q for q in parse_describe_text(out) if q.entity.user is None)
    assert QuotaEntity(client="c9") in {q.entity for q in clients} and clients == parse_describe_text(tool)


def test_kafka_refusals_become_typed_errors(secured: Secured):
    """Keel connecting as bob, who may describe the cluster and its configs but not alter them: the quota change is
    refused by Kafka's validate_only pass (nothing recorded, nothing changed); the ACL creation, which Kafka cannot
    validate first, is recorded as failed with Kafka's refusal and creates nothing."""
    s = secured
    cluster = Resource(ResourceType.CLUSTER, "kafka-cluster")
    reads = [Binding(cluster, "User:bob", "*", op, Permission.ALLOW)
             for op in (Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS)]
    wanted = Binding(Resource(ResourceType.TOPIC, "payments"), "User:bob", "*", Operation.READ, Permission.ALLOW)
    with s.admin() as admin:
        engine.add_acls(admin, s.store, reads, cluster="secured")
        try:
            with s.admin("bob") as keel:
                before = len(s.store.actions("secured", limit=1000))
                with pytest.raises(KafkaAdminError, match="CLUSTER_AUTHORIZATION_FAILED.*ALTER_CONFIGS"):
                    engine.alter_quota(keel, s.store, QuotaEntity(user="bob"), {"producer_byte_rate": 1e6},
                                       cluster="secured")
                assert len(s.store.actions("secured", limit=1000)) == before
                assert "producer_byte_rate" not in {k for q in engine.read_quotas(admin)
                                                    if q.entity == QuotaEntity(user="bob") for k in q.values}
                with pytest.raises(KafkaAdminError, match="CLUSTER_AUTHORIZATION_FAILED.*ALTER on") as refused:
                    engine.add_acls(keel, s.store, [wanted], cluster="secured")
                row = s.store.actions("secured", limit=1)[0]
                assert (row.kind, row.status) == ("acl-add", "failed") and str(refused.value) in row.result
                assert wanted not in engine.read_acls(admin).bindings
        finally:
            engine.remove_acls(admin, s.store, reads, cluster="secured", relied_on={})
