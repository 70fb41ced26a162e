"""Issue 29: the Security page and a topic's "who may" section on a REAL KRaft cluster (StandardAuthorizer, SASL PLAIN
users; the `secured` cluster of tests/kafka/test_security_kraft.py, started for this module), through Streamlit's
AppTest: the page reads through the brokers' Admin API (core.cluster.engines.security picks the engine), shows the
brokers' super.users, and an admin's add / remove / quota change reach the brokers, as read back through the engine.
"""

from __future__ import annotations

import pytest

from core.kafka import security_writes as engine
from core.security.model import Operation, QuotaEntity, ResourceType
from tests.dashboard.test_dashboard_actions import by_prefix, errors, ok
from tests.dashboard.test_dashboard_apptest import app, live_connection, texts, write_config
from tests.dashboard.test_security_page import _bindings, _select_bindings, _table
from tests.kafka.test_security_kraft import PASSWORDS, PLAIN, TOPIC, secured  # noqa: F401  (the module's cluster)
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.kraft, pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture
def page(secured, tmp_path, monkeypatch, store):  # noqa: F811
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + PLAIN
                     + f' required username="admin" password="{PASSWORDS["admin"]}";\n')
    write_config(tmp_path, monkeypatch, {"kraft": {"bootstrap": secured.sasl, "command_config": str(props)}})
    at = app().run()
    ok(at)
    wait_until(lambda: live_connection("kraft").snapshot() is not None, timeout=60, message="a first snapshot")
    at.switch_page("views/security.py").run()
    ok(at)
    return at


def test_the_page_reads_and_writes_through_the_brokers(secured, page, store):  # noqa: F811
    at = page
    assert "read from the brokers" in texts(at.caption)
    assert "authorizer `StandardAuthorizer`" in texts(at.caption)
    assert "cannot be seen through the Admin API" in texts(at.caption)  # Kafka withholds super.users

    at.text_input(key="sec_add_principal").input("User:carol")
    at.selectbox(key="sec_add_type").set_value(ResourceType.TOPIC)
    at.text_input(key="sec_add_name").input(TOPIC)
    at.multiselect(key="sec_add_ops").set_value([Operation.READ]).run()
    ok(at)
    by_prefix(at.checkbox, "sec_add_confirm::").check().run()
    at.button(key="sec_add_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    with secured.admin() as admin:
        mine = [b for b in engine.read_acls(admin).bindings if b.principal == "User:carol"]
    assert [(b.resource.name, b.operation) for b in mine] == [(TOPIC, Operation.READ)]
    assert ("User:carol", "READ", TOPIC) in {(r["Principal"], r["Operation"], r["Resource"])
                                             for _, r in _bindings(at).iterrows()}

    at.text_input(key="sec_q_user").input("carol").run()
    next(t for t in at.text_input if (t.key or "").endswith("::consumer_byte_rate")).input("4096").run()
    by_prefix(at.checkbox, "sec_q_confirm::").check().run()
    at.button(key="sec_q_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    with secured.admin() as admin:
        quotas = {q.entity: dict(q.values) for q in engine.read_quotas(admin)}
    assert quotas[QuotaEntity("carol")] == {"consumer_byte_rate": 4096.0}

    # the topic's section: carol may read it (resolved from what the brokers hold)
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(TOPIC).run()
    ok(at)
    who = _table(at, "Operation", "Allowed", "Denied", "Through bindings").set_index("Operation")
    assert "User:carol" in who.loc["READ", "Allowed"].split(", ")

    at.switch_page("views/security.py").run()
    at.text_input(key="sec_f_principal").input("User:carol").run()
    _select_bindings(at, lambda r: r["Operation"] == "READ")
    by_prefix(at.checkbox, "sec_remove_confirm::").check().run()
    at.button(key="sec_remove_apply").click().run()
    ok(at)
    assert not errors(at), errors(at)
    with secured.admin() as admin:
        assert not [b for b in engine.read_acls(admin).bindings if b.principal == "User:carol"]
    assert {a.kind for a in store.actions()} >= {"acl-add", "quota-alter", "acl-remove"}
