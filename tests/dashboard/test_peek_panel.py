"""The topic page's Messages panel without brokers to read from (AppTest, real ZooKeeper sandbox): what it says
without `bootstrap`, without the data permission (an admin included), and a peek whose brokers do not answer is
refused with Keel's error and still recorded in History (failed). Reading real messages, and that they show as
text only: tests/kafka/test_peek_real.py."""

from __future__ import annotations

from core.audit.store import Store
from tests.dashboard.test_dashboard_apptest import app, live_connection
from tests.support.sandbox_helpers import Sandbox


def _open(sb: Sandbox, zk_connect: str, tmp_path, monkeypatch, extra: str = "", keel: str = ""):
    path = tmp_path / "keel.toml"
    path.write_text(f'[keel]\nrole = "admin"\nread_only = false\n{keel}\n[clusters.demo]\nzk = "{zk_connect}"\n'
                    f"connect_timeout = 1.0\n{extra}\n")
    monkeypatch.setenv("KEEL_CONFIG", str(path))
    at = app().run()
    assert not at.exception, at.exception
    at.switch_page("views/topics.py").run()
    topic = live_connection("demo").snapshot().topics[0].name
    at.selectbox(key="topic").select(topic).run()
    assert not at.exception, at.exception
    return at, topic


def _captions(at) -> str:
    return "\n".join(str(c.value) for c in at.caption)


def test_without_bootstrap_the_panel_says_what_it_needs(small, zk_connect, tmp_path, monkeypatch, store):
    at, _ = _open(small, zk_connect, tmp_path, monkeypatch, keel="data = true")
    assert "Peeking reads through the brokers: add bootstrap" in _captions(at)
    assert not [b for b in at.button if b.key == "peek_go"]


def test_an_admin_without_the_data_permission_sees_no_peek(small, zk_connect, tmp_path, monkeypatch, store,
                                                           closed_port):
    at, _ = _open(small, zk_connect, tmp_path, monkeypatch, f'bootstrap = "{closed_port}"')
    assert "Reading messages needs the data permission, which operator and admin do not include" in _captions(at)
    assert "data is not true" in _captions(at)  # the reason, markdown-escaped
    assert not [b for b in at.button if b.key == "peek_go"]


def test_a_peek_the_brokers_do_not_answer_is_an_error_and_recorded(small, zk_connect, tmp_path, monkeypatch,
                                                                   store, closed_port):
    at, topic = _open(small, zk_connect, tmp_path, monkeypatch, f'bootstrap = "{closed_port}"', keel="data = true")
    at.number_input(key="peek_count").set_value(5)
    at.button(key="peek_go").click().run()
    assert not at.exception, at.exception
    [error] = [str(e.value) for e in at.error if "read messages" in str(e.value)]
    assert "no Kafka broker of" in error
    [row] = Store(store.path).actions(kind="peek")
    partition = live_connection("demo").snapshot().topic(topic).partitions[0].partition
    assert (row.status, row.target, row.cluster) == ("failed", f"{topic}-{partition}", "demo")
    assert row.summary == f"peek: the last 5 message(s) of {topic}-{partition}"
