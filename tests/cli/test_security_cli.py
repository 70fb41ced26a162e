"""`python -m core acls | acl-add | acl-remove | quotas | quota-alter | security-undo` on a real ZooKeeper: Kafka's
tools' flags and output, the admin role through the write gate, previews that write nothing, named risks, undo, bad
input refused with nothing written, and never a SCRAM credential in what is printed."""

from __future__ import annotations

import json

import pytest

from core.audit.store import Store
from core.cli import main
from core.security.acls import parse_list_text
from core.security.model import Binding, Operation, PatternType, Permission, QuotaEntity, Resource, ResourceType
from core.security.quotas import parse_describe_text
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster

SCRAM = "salt=c2FsdHNhbHQ=,stored_key=U1RPUkVES0VZ,server_key=U0VSVkVSS0VZ,iterations=4096"
ALICE_WRITES = ["--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"]


@pytest.fixture
def zk(zk_connect, tmp_path, monkeypatch):
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1"}, controller=1)
        s.create("/config/users/alice", json.dumps({"version": 1, "config": {"SCRAM-SHA-256": SCRAM}}).encode(),
                 makepath=True)
    return zk_connect


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "c2FsdHNhbHQ=" not in out + err and "U1RPUkVES0VZ" not in out + err  # never a SCRAM credential
    return code, out, err


def tree(zk):
    with ZkSession.open(zk) as s:
        return dump_tree(s)


def test_acls_add_list_filter_remove_and_undo(zk, capsys, tmp_path):
    code, out, err = run(capsys, "acl-add", "--zk", zk, *ALICE_WRITES, "--allow-host", "10.0.0.1",
                         "--operation", "Read")
    assert code == 0, err
    assert "added 2 ACL binding(s)" in out and "security-undo --action" in out
    orders = Resource(ResourceType.TOPIC, "orders")
    alice = {Binding(orders, "User:alice", "10.0.0.1", op, Permission.ALLOW) for op in (Operation.WRITE,
                                                                                        Operation.READ)}
    assert run(capsys, "acl-add", "--zk", zk, "--deny-principal", "User:bob", "--operation", "Read", "--group",
               "app-", "--resource-pattern-type", "prefixed")[0] == 0
    bob = Binding(Resource(ResourceType.GROUP, "app-", PatternType.PREFIXED), "User:bob", "*", Operation.READ,
                  Permission.DENY)

    code, out, err = run(capsys, "acls", "--zk", zk)
    assert code == 0 and parse_list_text(out) == frozenset(alice | {bob})
    assert out.startswith("Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=app-, "
                          "patternType=PREFIXED)`: \n \t(principal=User:bob, host=*, operation=READ, "
                          "permissionType=DENY) \n\n")
    assert "super.users" in err  # not in ZooKeeper: said so
    assert parse_list_text(run(capsys, "acls", "--zk", zk, "--topic", "orders")[1]) == frozenset(alice)
    assert parse_list_text(run(capsys, "acls", "--zk", zk, "--group", "app-1")[1]) == frozenset({bob})
    assert parse_list_text(run(capsys, "acls", "--zk", zk, "--principal", "User:bob")[1]) == frozenset({bob})
    listed = json.loads(run(capsys, "acls", "--zk", zk, "--json")[1])
    assert listed["super_users"] is None and len(listed["bindings"]) == 3

    # remove: previewed, refused when not there, then done and undone
    before = tree(zk)
    code, out, _ = run(capsys, "acl-remove", "--zk", zk, *ALICE_WRITES, "--allow-host", "10.0.0.1", "--dry-run")
    assert code == 0 and "would remove 1 ACL binding(s)" in out and tree(zk) == before
    code, _, err = run(capsys, "acl-remove", "--zk", zk, *ALICE_WRITES)  # host * : not the binding that exists
    assert code == 1 and "no such ACL binding" in err and tree(zk) == before
    code, out, err = run(capsys, "acl-remove", "--zk", zk, *ALICE_WRITES, "--allow-host", "10.0.0.1")
    assert code == 0, err
    action = int(out.split("security-undo --action ")[1].split("`")[0])
    code, out, _ = run(capsys, "security-undo", "--zk", zk, "--action", str(action), "--dry-run")
    assert code == 0 and '"action": "acl-add"' in out
    code, out, err = run(capsys, "security-undo", "--zk", zk, "--action", str(action))
    assert code == 0 and f"undid action #{action}" in out, err
    assert parse_list_text(run(capsys, "acls", "--zk", zk)[1]) == frozenset(alice | {bob})
    kinds = [a.kind for a in Store(tmp_path / "keel.sqlite").actions(limit=10)]
    assert kinds == ["acl-add", "acl-remove", "acl-add", "acl-add"]


def test_removing_keels_own_last_allow_needs_accept_risk(zk, capsys, tmp_path):
    props = tmp_path / "keel.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                     'org.apache.kafka.common.security.plain.PlainLoginModule required username="keel" '
                     'password="keel-Secret-9";\n')
    keel = ["--allow-principal", "User:keel", "--operation", "Describe", "--topic", "orders"]
    assert run(capsys, "acl-add", "--zk", zk, *keel)[0] == 0
    before = tree(zk)
    code, _, err = run(capsys, "acl-remove", "--zk", zk, *keel, "--command-config", str(props))
    assert code == 1 and "User:keel (Keel connects to the brokers as it (PLAIN)) loses DESCRIBE" in err
    assert "--accept-risk" in err and tree(zk) == before and "keel-Secret-9" not in err
    code, _, err = run(capsys, "acl-remove", "--zk", zk, *keel, "--command-config", str(props), "--accept-risk")
    assert code == 0 and "(accepted with --accept-risk)" in err
    assert run(capsys, "acls", "--zk", zk)[1] == ""


def test_quotas_alter_describe_effective_and_undo(zk, capsys):
    code, out, err = run(capsys, "quota-alter", "--zk", zk, "--user", "alice", "--add-config",
                         "producer_byte_rate=1048576,request_percentage=50")
    assert code == 0 and "altered quota of user alice" in out, err
    assert run(capsys, "quota-alter", "--zk", zk, "--user-defaults", "--client-id", "c1", "--add-config",
               "producer_byte_rate=2048")[0] == 0
    assert run(capsys, "quota-alter", "--zk", zk, "--client-defaults", "--add-config", "consumer_byte_rate=10")[0] == 0

    code, out, _ = run(capsys, "quotas", "--zk", zk)
    assert code == 0
    assert "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0, request_percentage=50.0" in out
    assert {q.entity for q in parse_describe_text(out)} == {
        QuotaEntity("alice"), QuotaEntity("<default>", "c1"), QuotaEntity(None, "<default>")}
    assert json.loads(run(capsys, "quotas", "--zk", zk, "--user", "alice", "--json")[1]) == [
        {"entity": {"user": "alice", "client": None},
         "values": {"producer_byte_rate": 1048576.0, "request_percentage": 50.0}}]
    code, out, _ = run(capsys, "quotas", "--zk", zk, "--effective", "bob", "c1")
    assert "producer_byte_rate=2048  (from default user, client-id c1)" in out
    assert "consumer_byte_rate=10  (from default client-id)" in out and "request_percentage: no quota" in out

    code, out, _ = run(capsys, "quota-alter", "--zk", zk, "--user", "alice", "--delete-config", "request_percentage")
    assert code == 0
    action = int(out.split("security-undo --action ")[1].split("`")[0])
    assert run(capsys, "security-undo", "--zk", zk, "--action", str(action))[0] == 0
    assert json.loads(run(capsys, "quotas", "--zk", zk, "--user", "alice", "--json")[1])[0]["values"] == {
        "producer_byte_rate": 1048576.0, "request_percentage": 50.0}
    with ZkSession.open(zk) as s:  # the credential stayed in alice's node through every write
        assert json.loads(s.get("/config/users/alice").data)["config"]["SCRAM-SHA-256"] == SCRAM


@pytest.mark.parametrize("argv, status, says", [
    (["acl-add", *ALICE_WRITES, "--group", "g"], 2, "exactly one resource"),
    (["acl-add", "--operation", "Write", "--topic", "orders"], 2, "--allow-principal"),
    (["acl-add", "--allow-principal", "alice", "--operation", "Write", "--topic", "orders"], 1, "Type:name"),
    (["acl-add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "orders"], 1, "unknown Operation"),
    (["acl-add", "--allow-principal", "User:a", "--operation", "Read", "--cluster"], 1, "only supports"),
    (["acl-add", "--allow-principal", "User:a", "--allow-host", "db.example", "--topic", "t"], 1, "IP address"),
    (["quota-alter", "--add-config", "producer_byte_rate=1"], 2, "--user"),
    (["quota-alter", "--user", "alice"], 2, "--add-config"),
    (["quota-alter", "--user", "alice", "--add-config", "producer_byte_rate=fast"], 1, "a quota is a number"),
    (["quota-alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=x1"], 1, "a quota is a number"),
    (["quota-alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=1"], 1, "SCRAM credential, not a quota"),
    (["quota-alter", "--user", "alice", "--add-config", "producer_byte_rate=-5"], 1, "greater than 0"),
    (["quota-alter", "--user", "alice", "--delete-config", "consumer_byte_rate"], 1, "Invalid config(s)"),
    (["security-undo", "--action", "999"], 1, "not a recorded ACL or quota change"),
])
def test_bad_input_writes_nothing(zk, capsys, argv, status, says):
    before = tree(zk)
    code, _, err = run(capsys, *argv, "--zk", zk)
    assert code == status and says in err, err
    assert tree(zk) == before


def test_only_an_admin_changes_acls_and_quotas(zk, capsys, tmp_path, monkeypatch):
    path = tmp_path / "keel.toml"
    path.write_text(f'[access]\noperator = ["cli"]\n[clusters.c]\nzk = "{zk}"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(path))
    before = tree(zk)
    for argv in (["acl-add", *ALICE_WRITES], ["quota-alter", "--user", "alice", "--add-config", "request_percentage=5"]):
        code, _, err = run(capsys, *argv, "--zk", zk)
        assert code == 1 and "the role of sam on cluster c is 'operator'" in err
        assert "only an admin may delete topics, roll back reassignments or change ACLs and quotas" in err
    assert tree(zk) == before
    assert [a.kind for a in Store(tmp_path / "keel.sqlite").actions(limit=10)] == ["refused", "refused"]
    assert run(capsys, "acls", "--zk", zk)[0] == 0  # reading needs no role
