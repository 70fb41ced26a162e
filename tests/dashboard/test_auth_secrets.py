"""Issue 17, items 4 and 5: secrets stay secret, and the person acting never becomes a ZooKeeper identity.

A cluster with a ZooKeeper digest (from the environment) whose /brokers/topics is secured the way Kafka secures it
(`zookeeper.set.acl`: the creator's digest ALL, world READ). Two people sign in (oidc, AppTest) and each creates a
topic: both nodes carry Keel's one configured digest identity, never the person, and the dashboard keeps one
session per cluster whoever signs in. Then every page as rendered, the audit store's files and every log line
captured during the run are searched for the password: it appears nowhere. (The OIDC client and cookie secrets are
searched for the same way in tests/e2e/test_auth_oidc_e2e.py, which runs a real sign-in.)"""

from __future__ import annotations

import logging

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from core.audit.store import Store
from core.zk import acl as zacl
from dashboard import frame
from tests.support.kafka_tree import write_cluster, write_topic
from tests.dashboard.test_dashboard_actions import by_prefix, errors
from tests.dashboard.test_dashboard_apptest import app, live_connection, texts  # noqa: F401
from tests.support.sandbox_helpers import wait_until

USER, PASSWORD = "keel", "zk-Pa55-word-Q7x2"
DIGEST = f"{USER}:{PASSWORD}"
PAGES = ["views/overview.py", "views/topics.py", "views/brokers.py", "views/leaders.py", "views/create_topic.py",
         "reassign/page.py", "views/history.py"]
PEOPLE = {"alice": {"is_logged_in": True, "email": "alice@example.com", "sub": "alice", "groups": ["kafka-sre"]},
          "bob": {"is_logged_in": True, "email": "bob@example.com", "sub": "bob", "groups": ["kafka-sre"]}}


@pytest.fixture
def secured(zk_connect):
    """A hand-written cluster whose /brokers/topics only Keel's digest may write (world may read)."""
    client = KazooClient(hosts=zk_connect, auth_data=[("digest", DIGEST)], timeout=10)
    client.start(timeout=30)
    try:
        from core.zk.session import ZkSession

        with ZkSession.open(zk_connect) as s:
            write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
            write_topic(s, "existing", {0: [1, 2]})
        client.set_acls("/brokers/topics", [make_digest_acl(USER, PASSWORD, all=True),
                                            ACL(Permissions.READ, Id("world", "anyone"))])
        yield client
    finally:
        client.stop()
        client.close()


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        try:
            self.lines.append(self.format(record))
        except Exception as e:  # a record that cannot be formatted still must not hide a secret
            self.lines.append(f"{record.msg!r} {record.args!r} {e}")


@pytest.fixture
def logs():
    handler = Capture()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    loggers = [logging.getLogger(), logging.getLogger("streamlit"), logging.getLogger("kazoo"),
               logging.getLogger("keel.kazoo")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler
    for lg, level in zip(loggers, saved):
        lg.removeHandler(handler)
        lg.setLevel(level)


def rendered(at) -> str:
    """Everything an AppTest run drew, main area and sidebar, as the protos' text."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def test_one_zookeeper_identity_whoever_signs_in_and_no_secret_anywhere(secured, zk_connect, tmp_path, monkeypatch,
                                                                         logs, capfd):
    store = Store(tmp_path / "keel.sqlite")
    monkeypatch.setenv("KEEL_STORE", str(store.path))
    monkeypatch.setenv("KEEL_ZK_DIGEST_PROD", DIGEST)  # the secret comes from the environment
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "viewer"\n[auth]\nmode = "oidc"\n[access]\noperator = ["group:kafka-sre"]\n'
                      f'[clusters.prod]\nzk = "{zk_connect}"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    pages = []
    sessions = []
    for who, claims in PEOPLE.items():
        at = app()
        at.user = dict(claims)
        at.run()
        wait_until(lambda: live_connection("prod").live is not None, timeout=15, message="the live view")
        at.switch_page("views/create_topic.py").run()
        at.text_input(key="ct_name").input(f"{who}-topic").run()
        by_prefix(at.checkbox, "ct_confirm_").check().run()
        at.button(key="ct_create").click().run()
        assert not at.exception and not at.error, errors(at)
        conn = live_connection("prod")
        session = conn.write_session()
        sessions.append((conn, session))
        # the configured digest, and only it, whoever is signed in
        assert session.settings.digest == DIGEST
        assert set(session._client.auth_data) == {("digest", DIGEST)}
        acls, _ = secured.get_acls(f"/brokers/topics/{who}-topic")
        assert {(a.id.scheme, a.id.id, a.perms) for a in acls} == {
            ("digest", zacl.digest_id(DIGEST), Permissions.ALL), ("world", "anyone", Permissions.READ)}
        assert who not in str(acls)
        for page in PAGES:
            at.switch_page(page).run()
            assert not at.exception, (page, at.exception)
            pages.append(rendered(at))
    assert sessions[0][0] is sessions[1][0] and sessions[0][1] is sessions[1][1]  # one session per cluster
    assert frame.connection(sessions[0][0].cluster) is sessions[0][0]

    actors = {(a.kind, a.actor, a.source) for a in store.actions()}
    assert actors == {("create-topic", "alice@example.com", "oidc"), ("create-topic", "bob@example.com", "oidc")}
    assert "alice@example.com" in "\n".join(pages)  # the pages were captured (History names the people)

    out, err = capfd.readouterr()
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("keel.sqlite"))
    for where, text in (("pages", "\n".join(pages)), ("logs", "\n".join(logs.lines)), ("stdout/stderr", out + err),
                        ("audit store", files.decode("utf-8", "replace"))):
        assert PASSWORD not in text, f"the ZooKeeper password appears in the {where}"
    assert logs.lines  # the run did log


def test_a_malformed_digest_is_refused_without_echoing_it(tmp_path, monkeypatch, logs):
    monkeypatch.setenv("KEEL_ZK_DIGEST_PROD", "no-colon-" + PASSWORD)
    config = tmp_path / "keel.toml"
    config.write_text('[keel]\nrole = "viewer"\n[clusters.prod]\nzk = "127.0.0.1:1"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    at = app().run()
    assert "digest credentials must look like user:password" in texts(at.error)
    assert PASSWORD not in rendered(at) and PASSWORD not in "\n".join(logs.lines)
