"""Reading ACLs and client quotas from a real ZooKeeper holding them in Kafka's own format (written here byte for
byte as Kafka 3.9's AclAuthorizer and AdminZkClient write them)."""

from __future__ import annotations

import json

import pytest

from core.errors import CorruptZnodeError
from core.security import znodes as zn
from core.security.model import (Binding, Operation, PatternType, Permission, QuotaEntity, Resource, ResourceType)
from core.zk.security_writes import read_acls, read_quotas
from core.zk.session import ZkSession

SCRAM = "salt=c2FsdHNhbHQ=,stored_key=U1RPUkVES0VZ,server_key=U0VSVkVSS0VZ,iterations=4096"


def _acl_node(*entries):
    return json.dumps({"version": 1, "acls": [
        {"principal": p, "permissionType": perm, "operation": op, "host": h} for p, perm, op, h in entries]}).encode()


@pytest.fixture
def session(zk_connect):
    with ZkSession.open(zk_connect) as s:
        yield s


def test_acls_of_every_store_are_read(session, kazoo_client):
    kazoo_client.create("/kafka-acl/Topic/orders", _acl_node(("User:alice", "Allow", "Write", "*"),
                                                              ("User:bob", "Deny", "Read", "10.0.0.1")), makepath=True)
    kazoo_client.create("/kafka-acl/Cluster/kafka-cluster", _acl_node(("User:broker", "Allow", "ClusterAction", "*")),
                        makepath=True)
    kazoo_client.create("/kafka-acl/TransactionalId/tx-1", _acl_node(("User:*", "Allow", "Describe", "*")),
                        makepath=True)
    kazoo_client.create("/kafka-acl-extended/prefixed/Group/app-", _acl_node(("User:alice", "Allow", "Read", "*")),
                        makepath=True)
    kazoo_client.create("/kafka-acl/Topic/empty", b"", makepath=True)  # an empty node: no bindings
    kazoo_client.create("/kafka-acl/Nonsense/x", b"garbage", makepath=True)  # unknown type: ignored, as Kafka does
    kazoo_client.ensure_path("/kafka-acl-changes")

    acls = read_acls(session)
    topic = Resource(ResourceType.TOPIC, "orders")
    assert set(acls.bindings) == {
        Binding(topic, "User:alice", "*", Operation.WRITE, Permission.ALLOW),
        Binding(topic, "User:bob", "10.0.0.1", Operation.READ, Permission.DENY),
        Binding(Resource(ResourceType.CLUSTER, "kafka-cluster"), "User:broker", "*", Operation.CLUSTER_ACTION,
                Permission.ALLOW),
        Binding(Resource(ResourceType.TRANSACTIONAL_ID, "tx-1"), "User:*", "*", Operation.DESCRIBE, Permission.ALLOW),
        Binding(Resource(ResourceType.GROUP, "app-", PatternType.PREFIXED), "User:alice", "*", Operation.READ,
                Permission.ALLOW)}
    assert acls.source == "zookeeper" and acls.super_users is None


def test_no_acl_nodes_at_all_is_no_binding(session):
    assert read_acls(session).bindings == ()
    assert read_quotas(session) == ()


def test_a_corrupt_acl_node_is_named(session, kazoo_client):
    kazoo_client.create("/kafka-acl/Topic/bad", b'{"version":1,"acls":[{"principal":"alice"}]}', makepath=True)
    with pytest.raises(CorruptZnodeError) as e:
        read_acls(session)
    assert e.value.path == "/kafka-acl/Topic/bad"


def test_quotas_at_every_level_without_scram_credentials(session, kazoo_client):
    def config(path, cfg):
        kazoo_client.create(path, json.dumps({"version": 1, "config": cfg}).encode(), makepath=True)

    config("/config/users/alice", {"producer_byte_rate": "1024", "SCRAM-SHA-256": SCRAM})
    config("/config/users/carol", {"SCRAM-SHA-512": SCRAM})  # credentials only: no quota
    config("/config/users/alice/clients/c1", {"consumer_byte_rate": "2048.5"})
    config("/config/users/<default>", {"request_percentage": "50"})
    config("/config/users/<default>/clients/<default>", {"producer_byte_rate": "10"})
    config("/config/clients/" + zn.sanitize("app 1*"), {"producer_byte_rate": "300", "unrelated": "x"})
    config("/config/clients/<default>", {"controller_mutation_rate": "5"})
    config("/config/users/" + zn.sanitize("CN=Some characters !@#$%&*()_-+=';:,/~"), {"consumer_byte_rate": "7"})

    quotas = {q.entity: dict(q.values) for q in read_quotas(session)}
    assert quotas == {
        QuotaEntity("alice"): {"producer_byte_rate": 1024.0},
        QuotaEntity("alice", "c1"): {"consumer_byte_rate": 2048.5},
        QuotaEntity("<default>"): {"request_percentage": 50.0},
        QuotaEntity("<default>", "<default>"): {"producer_byte_rate": 10.0},
        QuotaEntity(None, "app 1*"): {"producer_byte_rate": 300.0},
        QuotaEntity(None, "<default>"): {"controller_mutation_rate": 5.0},
        QuotaEntity("CN=Some characters !@#$%&*()_-+=';:,/~"): {"consumer_byte_rate": 7.0}}
    assert "stored_key" not in repr(read_quotas(session))


def test_sanitize_is_kafkas():
    # Sanitizer.sanitize: URLEncoder, then '*' -> %2A and '+' (space) -> %20; SanitizerTest's principal round-trips
    assert zn.sanitize("app 1*") == "app%201%2A"
    assert zn.sanitize("User:é~") == "User%3A%C3%A9%7E"
    principal = "CN=Some characters !@#$%&*()_-+=';:,/~"
    assert zn.desanitize(zn.sanitize(principal)) == principal
    assert all(c.isalnum() or c in "._-" for c in zn.sanitize(principal).replace("%", "_"))
    assert zn.quota_path(QuotaEntity("<default>", "a b")) == "/config/users/<default>/clients/a%20b"
