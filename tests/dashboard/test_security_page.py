"""Issue 29, the Security page and a topic's "who may" section, through Streamlit's AppTest against a real ZooKeeper
whose ACL and quota nodes are written here byte for byte as Kafka writes them (kafka.zk.ZkData, 3.9:
/kafka-acl/<Type>/<name>, /kafka-acl-extended/prefixed/<Type>/<name> {"version":1,"acls":[...]}; /config/users/<u>,
/config/users/<u>/clients/<c>, /config/clients/<c> {"version":1,"config":{...}}, "<default>" for the defaults), with
a user node that also holds SCRAM credentials in Kafka's format (ScramCredentialUtils.credentialToString)."""

from __future__ import annotations

import base64
import json

import pytest

from core.audit.store import Store
from core.zk.session import ZkSession
from dashboard import actions
from tests.dashboard.test_dashboard_actions import by_prefix, errors, ok, open_page
from tests.dashboard.test_dashboard_apptest import texts
from tests.support.kafka_tree import dump_tree


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# distinct, recognisable credential parts: none of them may reach a page
SALT, STORED, SERVER = _b64("keel-salt-never-shown"), _b64("keel-stored-key-never-shown"), _b64("keel-server-key-x")
SCRAM_256 = f"salt={SALT},stored_key={STORED},server_key={SERVER},iterations=4096"
SALT5, STORED5, SERVER5 = _b64("bob-salt-never-shown"), _b64("bob-stored-key-never-shown"), _b64("bob-server-key-y")
SCRAM_512 = f"salt={SALT5},stored_key={STORED5},server_key={SERVER5},iterations=8192"
SECRETS = (SALT, STORED, SERVER, SALT5, STORED5, SERVER5)


def acl_node(*entries: tuple[str, str, str, str]) -> bytes:
    """Kafka's ACL znode (AclEntry.toJsonCompatibleMap): principal, permissionType, operation, host."""
    return json.dumps({"version": 1, "acls": [
        {"principal": p, "permissionType": perm, "operation": op, "host": host} for p, perm, op, host in entries]}
    ).encode()


def config_node(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}).encode()


def write_security(session: ZkSession, topic: str) -> dict[str, bytes]:
    nodes = {
        f"/kafka-acl/Topic/{topic}": acl_node(("User:alice", "Allow", "Write", "*"), ("User:bob", "Allow", "Read", "*"),
                                              ("User:bob", "Deny", "Write", "*")),
        "/kafka-acl/Topic/*": acl_node(("User:ops", "Allow", "Describe", "*")),
        "/kafka-acl/Group/billing": acl_node(("User:bob", "Allow", "Read", "*")),
        "/kafka-acl/Cluster/kafka-cluster": acl_node(("User:broker", "Allow", "ClusterAction", "*")),
        f"/kafka-acl-extended/prefixed/Topic/{topic[:3]}": acl_node(("User:carol", "Allow", "All", "*")),
        "/config/users/alice": config_node({"producer_byte_rate": "1048576", "SCRAM-SHA-256": SCRAM_256}),
        "/config/users/alice/clients/loader": config_node({"producer_byte_rate": "2048"}),
        "/config/users/<default>": config_node({"consumer_byte_rate": "4096"}),
        "/config/clients/<default>": config_node({"request_percentage": "50"}),
        "/config/users/bob": config_node({"SCRAM-SHA-512": SCRAM_512}),  # credentials only: no quota
    }
    for path, data in nodes.items():
        if session.exists(path):
            session.set(path, data)
        else:
            session.ensure_path(path.rsplit("/", 1)[0])
            session.create(path, data)
    return nodes


@pytest.fixture
def secured(small):
    topic = next(t.name for t in small.snapshot().topics if not t.name.startswith("_"))
    write_security(small.session, topic)
    return small, topic


def _page(secured, zk_connect, tmp_path, monkeypatch, **config):
    sb, _ = secured
    at = open_page(sb, zk_connect, tmp_path, monkeypatch, "views/security.py", **config)
    ok(at)
    return at


def _frame(at, key: str):
    for df in at.dataframe:
        if (df.proto.id and key in df.proto.id) or getattr(df, "key", None) == key:
            return df.value
    raise AssertionError(f"no table {key}")


def _table(at, *columns: str):
    for df in at.dataframe:
        if list(df.value.columns)[:len(columns)] == list(columns):
            return df.value
    raise AssertionError(f"no table with columns {columns}; have {[list(t.value.columns) for t in at.dataframe]}")


def _bindings(at):
    return _table(at, "Principal", "Permission", "Operation", "Resource type", "Resource", "Pattern", "Host")


def _rows(df, *cols) -> set[tuple]:
    return {tuple(r[c] for c in cols) for _, r in df.iterrows()}


def _everything(at) -> str:
    """Every element's protobuf (text, tables' Arrow bytes, JSON) and the session state, as one string."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values() if isinstance(getattr(node, "children", None), dict) \
                else ():
            walk(child)
    walk(at._tree)
    out.append(repr({k: at.session_state[k] for k in at.session_state}))
    return "\n".join(out)


# --- reading ---------------------------------------------------------------------------------------------------------


def test_every_binding_is_listed_and_filtered(secured, zk_connect, tmp_path, monkeypatch, store):
    _, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    df = _bindings(at)
    assert len(df) == 7
    assert ("TOPIC", "PREFIXED", topic[:3], "User:carol", "ALL", "ALLOW") in \
        _rows(df, "Resource type", "Pattern", "Resource", "Principal", "Operation", "Permission")
    assert "cannot be seen from ZooKeeper" in texts(at.caption)

    # a binding written elsewhere (kafka-acls) shows after Read again
    sb, _ = secured
    sb.session.create("/kafka-acl/Group/elsewhere", acl_node(("User:eve", "Allow", "Read", "*")))
    at.button(key="sec_refresh").click().run()
    assert ("User:eve", "elsewhere") in _rows(_bindings(at), "Principal", "Resource")
    sb.session.delete("/kafka-acl/Group/elsewhere")
    at.button(key="sec_refresh").click().run()
    assert len(_bindings(at)) == 7

    at.text_input(key="sec_f_principal").input("User:bob").run()
    ok(at)
    assert _rows(_bindings(at), "Resource", "Operation", "Permission") == {
        (topic, "READ", "ALLOW"), (topic, "WRITE", "DENY"), ("billing", "READ", "ALLOW")}

    at.text_input(key="sec_f_principal").input("").run()
    at.selectbox(key="sec_f_permission").select_index(2).run()  # DENY
    assert _rows(_bindings(at), "Principal", "Operation") == {("User:bob", "WRITE")}
    at.selectbox(key="sec_f_permission").select_index(0).run()

    # a topic name: the bindings that apply to it (literal, the wildcard, the prefix) and who may what
    from core.security.model import ResourceType
    at.selectbox(key="sec_f_type").set_value(ResourceType.TOPIC)
    at.text_input(key="sec_f_name").input(topic).run()
    ok(at)
    assert _rows(_bindings(at), "Principal") == {("User:alice",), ("User:bob",), ("User:ops",), ("User:carol",)}
    who = _table(at, "Operation", "Allowed", "Denied", "Through bindings").set_index("Operation")
    assert set(who.loc["WRITE", "Allowed"].split(", ")) == {"User:alice", "User:carol"}
    assert who.loc["WRITE", "Denied"] == "User:bob"
    assert set(who.loc["DESCRIBE", "Allowed"].split(", ")) == {"User:alice", "User:bob", "User:carol", "User:ops"}
    assert "kafka-acls" in " ".join(e.label for e in at.expander)


def test_a_topic_page_says_who_may_use_it(secured, zk_connect, tmp_path, monkeypatch, store):
    sb, topic = secured
    at = open_page(sb, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    at.selectbox(key="topic").select(topic).run()
    ok(at)
    who = _table(at, "Operation", "Allowed", "Denied", "Through bindings").set_index("Operation")
    assert set(who.loc["READ", "Allowed"].split(", ")) == {"User:bob", "User:carol"}
    assert set(who.loc["WRITE", "Allowed"].split(", ")) == {"User:alice", "User:carol"}
    assert who.loc["WRITE", "Denied"] == "User:bob"
    assert who.loc["DELETE", "Allowed"] == "User:carol"
    assert list(who.index)[:5] == ["READ", "WRITE", "DESCRIBE", "ALTER", "DELETE"]
    section = next(e for e in at.expander if "Who may use this topic" in e.label)
    assert "cannot be seen from ZooKeeper" in texts(section.caption)


def test_a_principal_view_shows_each_right_and_its_binding(secured, zk_connect, tmp_path, monkeypatch, store):
    _, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    at.selectbox(key="sec_principal_pick").select("User:bob").run()
    ok(at)
    rights = _table(at, "Permission", "Operation", "Resource type", "Resource", "Pattern", "Through binding")
    assert _rows(rights, "Resource", "Operation", "Permission") >= {
        (topic, "READ", "ALLOW"), (topic, "WRITE", "DENY"), ("billing", "READ", "ALLOW")}
    assert all("User:bob" in t for t in rights["Through binding"])
    # a principal no binding names still gets what User:* would give it (nothing here), and the page says so
    at.text_input(key="sec_principal_typed").input("User:nobody").run()
    ok(at)
    assert "User:nobody" in texts(at.markdown)


def test_quotas_and_the_effective_quota_with_its_level(secured, zk_connect, tmp_path, monkeypatch, store):
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    quotas = _table(at, "Entity", "producer_byte_rate").set_index("Entity")
    assert quotas.loc["user alice", "producer_byte_rate"] == "1,048,576 B/s"
    assert quotas.loc["user alice", "consumer_byte_rate"] == ""
    assert quotas.loc["user alice, client-id loader", "producer_byte_rate"] == "2,048 B/s"
    assert quotas.loc["default user", "consumer_byte_rate"] == "4,096 B/s"
    assert quotas.loc["default client-id", "request_percentage"] == "50 %"
    assert "user bob" not in quotas.index  # bob's node holds credentials only

    at.text_input(key="sec_eff_user").input("alice")
    at.text_input(key="sec_eff_client").input("loader").run()
    ok(at)
    eff = _table(at, "Key", "Value", "From").set_index("Key")
    assert tuple(eff.loc["producer_byte_rate"]) == ("2,048 B/s", "user alice, client-id loader")
    assert tuple(eff.loc["consumer_byte_rate"]) == ("4,096 B/s", "default user")
    assert tuple(eff.loc["request_percentage"]) == ("50 %", "default client-id")
    assert tuple(eff.loc["controller_mutation_rate"]) == ("unlimited", "no level sets it")
    at.text_input(key="sec_eff_client").input("other").run()
    eff = _table(at, "Key", "Value", "From").set_index("Key")
    assert tuple(eff.loc["producer_byte_rate"]) == ("1,048,576 B/s", "user alice")


PAGES = ["views/overview.py", "views/topics.py", "views/brokers.py", "views/broker.py", "views/leaders.py",
         "views/security.py", "views/create_topic.py", "views/history.py", "views/restart.py", "views/log_dirs.py",
         "views/consumer_groups.py", "views/state_changes.py", "views/migration.py", "reassign/page.py"]


def test_no_scram_credential_on_any_page(secured, zk_connect, tmp_path, monkeypatch, store):
    sb, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    for user in ("alice", "bob"):  # the principal and quota views of the users who have credentials
        at.text_input(key="sec_principal_typed").input(f"User:{user}")
        at.text_input(key="sec_q_user").input(user)
        at.text_input(key="sec_eff_user").input(user).run()
        ok(at)
        page = _everything(at)
        assert not [s for s in SECRETS if s in page] and "stored_key" not in page and "SCRAM-SHA" not in page
    for path in PAGES:
        at.switch_page(path).run()
        ok(at)
        if path == "views/topics.py":
            at.selectbox(key="topic").select(topic).run()
        page = _everything(at)
        assert not [s for s in SECRETS if s in page], path
        assert "stored_key" not in page and "SCRAM-SHA" not in page, path


# --- edits -----------------------------------------------------------------------------------------------------------


def _add_form(at, principal: str, name: str, ops, *, type_=None):
    from core.security.model import Operation, ResourceType
    at.text_input(key="sec_add_principal").input(principal)
    at.selectbox(key="sec_add_type").set_value(type_ or ResourceType.TOPIC)
    at.text_input(key="sec_add_name").input(name)
    at.multiselect(key="sec_add_ops").set_value([Operation[o] for o in ops]).run()
    ok(at)


def test_an_admin_adds_a_binding_removes_it_and_undoes_the_removal(secured, zk_connect, tmp_path, monkeypatch,
                                                                   store):
    sb, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    _add_form(at, "User:dave", topic, ["WRITE", "DESCRIBE"])
    assert len([t for t in at.dataframe if list(t.value.columns)[:3] == ["Principal", "Permission",
                                                                         "Operation"]]) == 2
    assert not errors(at)
    by_prefix(at.checkbox, "sec_add_confirm::").check().run()
    at.button(key="sec_add_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    node = json.loads(sb.session.get(f"/kafka-acl/Topic/{topic}").data)
    assert {"principal": "User:dave", "permissionType": "Allow", "operation": "Write", "host": "*"} in node["acls"]
    assert "action #" in texts(at.success)
    assert any("History" in str(link.label) for link in at.get("page_link"))
    added = store.actions(kind="acl-add")
    assert len(added) == 1 and added[0].status == "applied"
    assert len(_bindings(at)) == 9
    # the topic's own section shows it at once (the page's read refreshes what the section shows, at most 10 s old)
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(topic).run()
    who = _table(at, "Operation", "Allowed", "Denied", "Through bindings").set_index("Operation")
    assert "User:dave" in who.loc["WRITE", "Allowed"].split(", ")
    at.switch_page("views/security.py").run()
    ok(at)

    # remove dave's WRITE: select its row in the list
    at.text_input(key="sec_f_principal").input("User:dave").run()
    _select_bindings(at, lambda r: r["Operation"] == "WRITE")
    by_prefix(at.checkbox, "sec_remove_confirm::").check().run()
    at.button(key="sec_remove_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    node = json.loads(sb.session.get(f"/kafka-acl/Topic/{topic}").data)
    assert not [a for a in node["acls"] if a["principal"] == "User:dave" and a["operation"] == "Write"]

    # undo the removal: the binding is back
    removed = store.actions(kind="acl-remove")[0]
    at.selectbox(key="sec_undo_pick").select_index(
        [o.split(" ")[0] for o in at.selectbox(key="sec_undo_pick").options].index(f"#{removed.id}")).run()
    by_prefix(at.checkbox, "sec_undo_confirm::").check().run()
    at.button(key="sec_undo_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    node = json.loads(sb.session.get(f"/kafka-acl/Topic/{topic}").data)
    assert {"principal": "User:dave", "permissionType": "Allow", "operation": "Write", "host": "*"} in node["acls"]


def _bindings_key(at) -> str:
    keys = [k for k in at.session_state if isinstance(k, str) and k.startswith("sec_bindings::")]
    assert len(keys) == 1, keys
    return keys[0]


def _select_bindings(at, predicate) -> None:
    listed = _bindings(at)
    rows = [i for i, (_, r) in enumerate(listed.iterrows()) if predicate(r)]
    at.session_state[_bindings_key(at)] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()
    ok(at)


def test_removing_the_brokers_last_cluster_action_needs_the_named_risk(secured, zk_connect, tmp_path, monkeypatch,
                                                                      store):
    sb, _ = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    before = dump_tree(sb.session, "/kafka-acl")
    _select_bindings(at, lambda r: r["Operation"] == "CLUSTER_ACTION")
    assert "User:broker" in texts(at.warning)
    by_prefix(at.checkbox, "sec_remove_confirm::").check().run()
    assert at.button(key="sec_remove_apply").disabled  # the risk is not accepted yet
    risk = by_prefix(at.checkbox, "sec_remove_confirm_risk::")
    risk.check().run()
    assert not at.button(key="sec_remove_apply").disabled
    assert dump_tree(sb.session, "/kafka-acl") == before and store.actions(kind="acl-remove") == []
    at.button(key="sec_remove_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    assert not sb.session.exists("/kafka-acl/Cluster/kafka-cluster") or \
        json.loads(sb.session.get("/kafka-acl/Cluster/kafka-cluster").data)["acls"] == []


def test_an_admin_sets_and_deletes_a_quota_and_the_credentials_stay(secured, zk_connect, tmp_path, monkeypatch,
                                                                    store):
    sb, _ = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    at.text_input(key="sec_q_user").input("bob").run()
    field = next(t for t in at.text_input if (t.key or "").endswith("::producer_byte_rate"))
    field.input("5000").run()
    ok(at)
    assert not errors(at), errors(at)
    by_prefix(at.checkbox, "sec_q_confirm::").check().run()
    at.button(key="sec_q_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    config = json.loads(sb.session.get("/config/users/bob").data)["config"]
    assert float(config["producer_byte_rate"]) == 5000 and config["SCRAM-SHA-512"] == SCRAM_512
    assert not [s for s in SECRETS if s in _everything(at)]
    action = store.actions(kind="quota-alter")[0]
    assert not [s for s in SECRETS if s in json.dumps(action.payload) + json.dumps(action.rollback)]

    field = next(t for t in at.text_input if (t.key or "").endswith("::producer_byte_rate"))
    field.input("").run()
    by_prefix(at.checkbox, "sec_q_confirm::").check().run()
    at.button(key="sec_q_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    config = json.loads(sb.session.get("/config/users/bob").data)["config"]
    assert "producer_byte_rate" not in config and config["SCRAM-SHA-512"] == SCRAM_512


def test_bad_input_is_refused_and_writes_nothing(secured, zk_connect, tmp_path, monkeypatch, store):
    sb, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    before = dump_tree(sb.session)
    _add_form(at, "alice", topic, ["READ"])  # no principal type
    assert errors(at) and not [b for b in at.button if b.key == "sec_add_apply"]
    at.text_input(key="sec_q_user").input("alice").run()
    field = next(t for t in at.text_input if (t.key or "").endswith("::request_percentage"))
    field.input("-5").run()
    assert errors(at) and not [b for b in at.button if b.key == "sec_q_apply"]
    assert dump_tree(sb.session) == before and store.actions() == []


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_an_admin_may_edit(secured, zk_connect, tmp_path, monkeypatch, store, role):
    sb, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch, role=role)
    assert "admin" in texts(at.caption)
    assert at.text_input(key="sec_add_principal").disabled and at.text_input(key="sec_q_user").disabled
    _select_bindings(at, lambda r: r["Principal"] == "User:bob")
    assert at.button(key="sec_remove_apply").disabled
    assert by_prefix(at.checkbox, "sec_remove_confirm::").disabled
    assert store.actions(kind=["acl-add", "acl-remove", "quota-alter"]) == []


def test_a_click_after_the_role_was_taken_away_writes_nothing(secured, zk_connect, tmp_path, monkeypatch, store):
    from tests.dashboard.test_dashboard_apptest import write_config
    sb, topic = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    _add_form(at, "User:erin", topic, ["READ"])
    by_prefix(at.checkbox, "sec_add_confirm::").check().run()
    before = dump_tree(sb.session, "/kafka-acl")
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}}, role="operator")
    at.button(key="sec_add_apply").click().run()
    ok(at)
    assert "admin" in errors(at)
    assert dump_tree(sb.session, "/kafka-acl") == before
    assert isinstance(actions.store(), Store)


def test_removing_keels_own_last_allow_names_keel_as_the_risk(secured, zk_connect, tmp_path, monkeypatch, store,
                                                              closed_port):
    """Keel connects to the brokers as User:keel (SASL, keel.toml's command_config): removing the binding that lets it
    describe the topic is a named risk that says so, confirmed before anything is written."""
    sb, topic = secured
    sb.session.set(f"/kafka-acl/Topic/{topic}", acl_node(("User:keel", "Allow", "Describe", "*")))
    props = tmp_path / "keel-client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                     'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                     'username="keel" password="keel-secret";\n')
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    from tests.dashboard.test_dashboard_apptest import write_config
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect, "bootstrap": closed_port,
                                                  "command_config": str(props)}})
    at.run()
    ok(at)
    _select_bindings(at, lambda r: r["Principal"] == "User:keel")
    warned = texts(at.warning)
    assert "User:keel (Keel connects to the brokers as it" in warned and "DESCRIBE" in warned
    by_prefix(at.checkbox, "sec_remove_confirm::").check().run()
    assert at.button(key="sec_remove_apply").disabled
    assert store.actions(kind="acl-remove") == []
    by_prefix(at.checkbox, "sec_remove_confirm_risk::").check().run()
    at.button(key="sec_remove_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    node = sb.session.get(f"/kafka-acl/Topic/{topic}")
    assert not node.exists or json.loads(node.data)["acls"] == []
    assert "keel-secret" not in _everything(at)


def test_undo_of_a_quota_change_sets_the_old_values_back(secured, zk_connect, tmp_path, monkeypatch, store):
    sb, _ = secured
    at = _page(secured, zk_connect, tmp_path, monkeypatch)
    at.text_input(key="sec_q_user").input("alice").run()
    next(t for t in at.text_input if (t.key or "").endswith("::producer_byte_rate")).input("2000").run()
    by_prefix(at.checkbox, "sec_q_confirm::").check().run()
    at.button(key="sec_q_apply").click().run()
    assert not errors(at), errors(at)
    assert json.loads(sb.session.get("/config/users/alice").data)["config"]["producer_byte_rate"] == "2000"

    altered = store.actions(kind="quota-alter")[0]
    assert at.selectbox(key="sec_undo_pick").value.id == altered.id
    preview = _table(at, "Key", "Back to")
    assert list(preview["Key"]) == ["producer_byte_rate"]
    by_prefix(at.checkbox, "sec_undo_confirm::").check().run()
    at.button(key="sec_undo_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    config = json.loads(sb.session.get("/config/users/alice").data)["config"]
    assert float(config["producer_byte_rate"]) == 1048576 and config["SCRAM-SHA-256"] == SCRAM_256
    assert "action #" in texts(at.success)
