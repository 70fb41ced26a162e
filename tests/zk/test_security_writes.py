"""ACL and client-quota writes on a real ZooKeeper: the nodes and notifications exactly as Kafka 3.9's AclAuthorizer and
AdminZkClient write them, version-checked, audited with their rollback (never a SCRAM credential), refused with a
typed error and nothing written for bad input, changed state, a risky removal or a migration."""

from __future__ import annotations

import json
import logging

import pytest

from core.audit.store import Store
from core.cluster.security import undo
from core.errors import MigrationInProgressError, RiskNotAcceptedError, ValidationError
from core.security.model import (Binding, Operation as Op, PatternType, Permission, QuotaEntity, Resource,
                                 ResourceType)
from core.zk import security_writes as sw
from core.zk.session import ZkSession

SCRAM = "salt=c2FsdHNhbHQ=,stored_key=U1RPUkVES0VZ,server_key=U0VSVkVSS0VZ,iterations=4096"
ORDERS = Resource(ResourceType.TOPIC, "orders")
APP = Resource(ResourceType.GROUP, "app-", PatternType.PREFIXED)
CLUSTER = Resource(ResourceType.CLUSTER, "kafka-cluster")


def allow(resource, principal, op, host="*"):
    return Binding(resource, principal, host, op, Permission.ALLOW)


@pytest.fixture
def session(zk_connect):
    with ZkSession.open(zk_connect) as s:
        yield s


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "keel.sqlite")


def _json(kazoo_client, path):
    return json.loads(kazoo_client.get(path)[0])


def _changes(kazoo_client, root):
    return [kazoo_client.get(f"{root}/{c}")[0] for c in sorted(kazoo_client.get_children(root) or [])] \
        if kazoo_client.exists(root) else []


def test_add_writes_kafkas_nodes_and_notifications(session, store, kazoo_client):
    alice_writes = allow(ORDERS, "User:alice", Op.WRITE)
    bob_reads = allow(APP, "User:bob", Op.READ, "10.0.0.7")
    done = sw.add_acls(session, store, [alice_writes, bob_reads], cluster="c1", actor="sre")

    assert _json(kazoo_client, "/kafka-acl/Topic/orders") == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
    assert _json(kazoo_client, "/kafka-acl-extended/prefixed/Group/app-") == {"version": 1, "acls": [
        {"principal": "User:bob", "permissionType": "Allow", "operation": "Read", "host": "10.0.0.7"}]}
    # LiteralAclChangeStore: "TOPIC:orders"; ExtendedAclChangeStore: ExtendedAclChangeEvent's JSON
    assert _changes(kazoo_client, "/kafka-acl-changes") == [b"TOPIC:orders"]
    assert [json.loads(c) for c in _changes(kazoo_client, "/kafka-acl-extended-changes")] == [
        {"version": 1, "resourceType": "GROUP", "name": "app-", "patternType": "PREFIXED"}]
    assert set(sw.read_acls(session).bindings) == {alice_writes, bob_reads}

    action = store.action(done.action_id)
    assert action.kind == "acl-add" and action.status == "applied" and action.actor == "sre"
    assert action.rollback["action"] == "acl-remove"
    assert {(d["principal"], d["operation"], d["resource_type"], d["pattern"]) for d in action.payload["bindings"]} \
        == {("User:alice", "WRITE", "TOPIC", "LITERAL"), ("User:bob", "READ", "GROUP", "PREFIXED")}

    # a second binding on the same resource: the node keeps the first, one more notification
    sw.add_acls(session, store, [allow(ORDERS, "User:carol", Op.DESCRIBE)], cluster="c1")
    assert len(_json(kazoo_client, "/kafka-acl/Topic/orders")["acls"]) == 2
    assert _changes(kazoo_client, "/kafka-acl-changes") == [b"TOPIC:orders", b"TOPIC:orders"]


def test_bad_or_redundant_additions_write_nothing(session, store, kazoo_client):
    sw.add_acls(session, store, [allow(ORDERS, "User:alice", Op.WRITE)], cluster="c1")
    before = (kazoo_client.get("/kafka-acl/Topic/orders")[1].version, _changes(kazoo_client, "/kafka-acl-changes"))
    with pytest.raises(ValidationError, match="nothing to change"):
        sw.add_acls(session, store, [allow(ORDERS, "User:alice", Op.WRITE)], cluster="c1")
    with pytest.raises(ValidationError, match="host"):
        sw.add_acls(session, store, [allow(ORDERS, "User:alice", Op.READ, host="broker-1.example")], cluster="c1")
    with pytest.raises(ValidationError, match="principal"):
        sw.add_acls(session, store, [allow(ORDERS, "alice", Op.READ)], cluster="c1")
    with pytest.raises(ValidationError, match="/"):
        sw.add_acls(session, store, [allow(Resource(ResourceType.GROUP, "a/b"), "User:a", Op.READ)], cluster="c1")
    assert (kazoo_client.get("/kafka-acl/Topic/orders")[1].version,
            _changes(kazoo_client, "/kafka-acl-changes")) == before
    assert not kazoo_client.exists("/kafka-acl/Group")


def test_remove_deletes_the_emptied_node_and_refuses_what_is_not_there(session, store, kazoo_client):
    a, c = allow(ORDERS, "User:alice", Op.WRITE), allow(ORDERS, "User:carol", Op.READ)
    sw.add_acls(session, store, [a, c], cluster="c1")
    with pytest.raises(ValidationError, match="no such ACL binding"):
        sw.remove_acls(session, store, [allow(ORDERS, "User:bob", Op.WRITE)], cluster="c1")
    sw.remove_acls(session, store, [a], cluster="c1")
    assert _json(kazoo_client, "/kafka-acl/Topic/orders")["acls"] == [
        {"principal": "User:carol", "permissionType": "Allow", "operation": "Read", "host": "*"}]
    done = sw.remove_acls(session, store, [c], cluster="c1")
    assert not kazoo_client.exists("/kafka-acl/Topic/orders")  # AclAuthorizer deletes a node left without ACLs
    assert _changes(kazoo_client, "/kafka-acl-changes")[-1] == b"TOPIC:orders"
    action = store.action(done.action_id)
    assert action.kind == "acl-remove" and action.rollback["action"] == "acl-add"


def test_removing_the_last_allow_keel_or_the_brokers_rely_on_needs_the_named_risk(session, store, kazoo_client):
    keel = allow(ORDERS, "User:keel", Op.DESCRIBE)
    brokers = allow(CLUSTER, "User:broker", Op.CLUSTER_ACTION)
    sw.add_acls(session, store, [keel, brokers], cluster="c1")
    relied = {"User:keel": "Keel connects as it"}
    for binding in (keel, brokers):
        with pytest.raises(RiskNotAcceptedError) as e:
            sw.remove_acls(session, store, [binding], cluster="c1", relied_on=relied)
        assert e.value.risks
    assert set(sw.read_acls(session).bindings) == {keel, brokers}  # nothing written
    risks = list(e.value.risks)
    sw.remove_acls(session, store, [brokers], cluster="c1", relied_on=relied, accept_risks=risks)
    assert set(sw.read_acls(session).bindings) == {keel}


def test_a_node_changed_meanwhile_fails_the_whole_write(session, store, kazoo_client, monkeypatch):
    sw.add_acls(session, store, [allow(ORDERS, "User:alice", Op.WRITE)], cluster="c1")
    theirs = json.dumps({"version": 1, "acls": [
        {"principal": "User:zed", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}).encode()
    real = session.multi

    def someone_else_first(ops):  # another admin's kafka-acls lands between Keel's read and its write
        kazoo_client.set("/kafka-acl/Topic/orders", theirs)
        return real(ops)

    monkeypatch.setattr(session, "multi", someone_else_first)
    notes = len(_changes(kazoo_client, "/kafka-acl-changes"))
    with pytest.raises(ValidationError, match="changed while it was being written"):
        sw.add_acls(session, store, [allow(ORDERS, "User:bob", Op.READ)], cluster="c1")
    assert kazoo_client.get("/kafka-acl/Topic/orders")[0] == theirs  # theirs kept, not overwritten
    assert len(_changes(kazoo_client, "/kafka-acl-changes")) == notes
    failed = store.actions("c1")[0]
    assert failed.kind == "acl-add" and failed.status == "failed"


def test_quota_keeps_scram_credentials_and_never_records_them(session, store, kazoo_client, caplog):
    caplog.set_level(logging.DEBUG)  # kazoo logs every answer and write with its data at its lowest level
    kazoo_client.create("/config/users/alice", json.dumps(
        {"version": 1, "config": {"SCRAM-SHA-512": SCRAM}}).encode(), makepath=True)
    kazoo_client.ensure_path("/config/changes")
    done = sw.alter_quota(session, store, QuotaEntity("alice"), {"producer_byte_rate": 1048576.0}, cluster="c1")
    assert _json(kazoo_client, "/config/users/alice") == {
        "version": 1, "config": {"SCRAM-SHA-512": SCRAM, "producer_byte_rate": "1048576"}}
    assert [json.loads(c) for c in _changes(kazoo_client, "/config/changes")] == [
        {"version": 2, "entity_path": "users/alice"}]
    action = store.action(done.action_id)
    assert action.kind == "quota-alter"
    assert action.payload == {"entity": {"user": "alice", "client": None},
                              "values": {"producer_byte_rate": 1048576.0}, "old": {}}
    assert action.rollback == {"action": "quota-alter", "entity": {"user": "alice", "client": None},
                               "values": {"producer_byte_rate": None}}
    everything = json.dumps([a.__dict__ for a in store.actions("c1")], default=str)
    assert "stored_key" not in everything and "SCRAM-SHA" not in everything
    assert session.get("/config/users/alice").exists
    keel_logs = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("keel"))
    assert "c2FsdHNhbHQ=" not in keel_logs and "U1RPUkVES0VZ" not in keel_logs  # salt, stored_key: not logged
    assert "SCRAM-SHA-512" in keel_logs  # (the lines are there, their values redacted)

    # undo: the quota goes, the credentials stay
    undo(session, store, done.action_id, cluster="c1")
    assert _json(kazoo_client, "/config/users/alice")["config"] == {"SCRAM-SHA-512": SCRAM}


def test_a_quota_node_changed_meanwhile_fails_the_whole_write(session, store, kazoo_client, monkeypatch):
    sw.alter_quota(session, store, QuotaEntity("alice"), {"producer_byte_rate": 100.0}, cluster="c1")
    theirs = json.dumps({"version": 1, "config": {"producer_byte_rate": "100", "SCRAM-SHA-256": SCRAM}}).encode()
    real = session.multi

    def someone_else_first(ops):  # kafka-configs adds a credential between Keel's read and its write
        kazoo_client.set("/config/users/alice", theirs)
        return real(ops)

    monkeypatch.setattr(session, "multi", someone_else_first)
    with pytest.raises(ValidationError, match="changed while it was being written"):
        sw.alter_quota(session, store, QuotaEntity("alice"), {"consumer_byte_rate": 5.0}, cluster="c1")
    assert kazoo_client.get("/config/users/alice")[0] == theirs  # the credential is not lost
    assert len(_changes(kazoo_client, "/config/changes")) == 1


def test_quota_entities_paths_and_cleanup(session, store, kazoo_client):
    both = QuotaEntity("CN=app,O=x", "c 1*")
    sw.alter_quota(session, store, both, {"consumer_byte_rate": 2048.0, "request_percentage": 12.5}, cluster="c1")
    path = "/config/users/CN%3Dapp%2CO%3Dx/clients/c%201%2A"
    assert _json(kazoo_client, path)["config"] == {"consumer_byte_rate": "2048", "request_percentage": "12.5"}
    assert json.loads(_changes(kazoo_client, "/config/changes")[-1]) == {
        "version": 2, "entity_path": "users/CN%3Dapp%2CO%3Dx/clients/c%201%2A"}
    sw.alter_quota(session, store, QuotaEntity("<default>"), {"request_percentage": 200.0}, cluster="c1")
    sw.alter_quota(session, store, QuotaEntity(None, "<default>"), {"producer_byte_rate": 10.0}, cluster="c1")
    got = {q.entity: dict(q.values) for q in sw.read_quotas(session)}
    assert got == {both: {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
                   QuotaEntity("<default>"): {"request_percentage": 200.0},
                   QuotaEntity(None, "<default>"): {"producer_byte_rate": 10.0}}
    assert kazoo_client.exists("/config/users/<default>") and kazoo_client.exists("/config/clients/<default>")

    with pytest.raises(ValidationError, match="consumer_byte_rate"):  # not set: ConfigCommand's refusal
        sw.alter_quota(session, store, QuotaEntity(None, "<default>"), {"consumer_byte_rate": None}, cluster="c1")
    with pytest.raises(ValidationError, match="SCRAM"):
        sw.alter_quota(session, store, QuotaEntity("alice"), {"SCRAM-SHA-256": 1.0}, cluster="c1")
    with pytest.raises(ValidationError, match="greater than 0"):
        sw.alter_quota(session, store, QuotaEntity("alice"), {"producer_byte_rate": 0.0}, cluster="c1")
    with pytest.raises(ValidationError, match="nothing to change"):
        sw.alter_quota(session, store, QuotaEntity("<default>"), {"request_percentage": 200.0}, cluster="c1")
    assert not kazoo_client.exists("/config/users/alice")

    # the last quota of a node without children: the node goes, as AdminZkClient.tryCleanQuotaNodes does
    sw.alter_quota(session, store, QuotaEntity(None, "<default>"), {"producer_byte_rate": None}, cluster="c1")
    assert not kazoo_client.exists("/config/clients/<default>")


def test_undo_of_acl_changes_through_the_same_engine(session, store):
    a = allow(ORDERS, "User:alice", Op.WRITE)
    added = sw.add_acls(session, store, [a], cluster="c1")
    undone = undo(session, store, added.action_id, cluster="c1")
    assert sw.read_acls(session).bindings == ()
    assert store.action(undone.action_id).kind == "acl-remove"
    undo(session, store, undone.action_id, cluster="c1")
    assert sw.read_acls(session).bindings == (a,)
    with pytest.raises(ValidationError, match="cluster c1"):
        undo(session, store, added.action_id, cluster="other")


def test_refused_during_a_migration(session, store, kazoo_client):
    kazoo_client.create("/controller", json.dumps(
        {"version": 2, "brokerid": 3000, "timestamp": "1", "kraftControllerEpoch": 1}).encode())
    with pytest.raises(MigrationInProgressError):
        sw.add_acls(session, store, [allow(ORDERS, "User:alice", Op.WRITE)], cluster="c1")
    with pytest.raises(MigrationInProgressError):
        sw.alter_quota(session, store, QuotaEntity("alice"), {"producer_byte_rate": 1.0}, cluster="c1")
    assert not kazoo_client.exists("/kafka-acl") and not kazoo_client.exists("/config/users")
