"""Issue 30 item 2 on real brokers: `python -m core peek` returns exactly the records produced at those offsets and
times (ZooKeeper-mode cluster with bootstrap, and KRaft), joins no group, commits nothing, records every peek in the
audit store without the contents, and a viewer without the data permission cannot peek."""

from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from core.audit.store import Store
from core.cli import main
from tests.kafka.realkafka import RealKafka, create_topic
from tests.support.browser import chromium, have_chromium, serve_dashboard

BASE_TS = 1_780_000_000_000  # 2026-05-28: explicit CreateTime of record i is BASE_TS + 1000 * i
VALUES = [b'{"n": 0, "name": "zero"}', b"<script>alert(1)</script>", b"**bold** _x_", b"\xff\x00\x01binary",
          b"plain 4", b"plain 5", b"plain 6", b"plain 7", b"plain 8", b"plain 9"]


def keel(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def produce_known(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=30000)
    try:
        for i, value in enumerate(VALUES):
            producer.send(topic, value, key=f"k{i}".encode(), partition=1, timestamp_ms=BASE_TS + 1000 * i,
                          headers=[("h", f"v{i}".encode())]).get(timeout=30)
    finally:
        producer.close(timeout=10)


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    monkeypatch.setenv("KEEL_CONFIG", str(_config(tmp_path, "")))
    return Store(tmp_path / "keel.sqlite")


def _config(tmp_path, access: str, bootstrap: str = "127.0.0.1:1") -> object:
    path = tmp_path / "keel.toml"
    path.write_text(f'[keel]\nrole = "viewer"\n[auth]\nmode = "oidc"\n{access}\n'
                    f'[clusters.prod]\nbootstrap = "{bootstrap}"\n')
    return path


def peek_json(bootstrap: str, store: Store, topic: str, *args: str) -> dict:
    code, out, err = keel("peek", "--bootstrap-server", bootstrap, "--topic", topic, "--partition", "1",
                          "--json", "--store", str(store.path), *args)
    assert code == 0, err
    return json.loads(out)


def _groups(admin) -> set[str]:
    return {str(g["group_id"]) if isinstance(g, dict) else str(g[0]) for g in admin.list_groups()}


def test_peek_returns_exactly_the_records_produced_at_those_offsets_and_times(healthy: RealKafka, store):
    topic = f"peek-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3]})
    produce_known(healthy.bootstrap, topic)
    groups_before = _groups(healthy.admin)

    last = peek_json(healthy.bootstrap, store, topic, "--last", "3")
    assert [m["offset"] for m in last["messages"]] == [7, 8, 9]
    assert [m["value"] for m in last["messages"]] == ["plain 7", "plain 8", "plain 9"]
    assert [m["key"] for m in last["messages"]] == ["k7", "k8", "k9"]
    assert last["messages"][0]["headers"] == [{"key": "h", "value": "v7"}]
    assert [m["timestamp_ms"] for m in last["messages"]] == [BASE_TS + 7000, BASE_TS + 8000, BASE_TS + 9000]
    assert last["messages"][0]["timestamp_type"] == "CreateTime"
    assert (last["earliest"], last["latest"]) == (0, 10)

    first = peek_json(healthy.bootstrap, store, topic, "--offset", "0", "--max-messages", "4")
    assert [m["offset"] for m in first["messages"]] == [0, 1, 2, 3]
    assert first["messages"][0]["value"] == json.dumps({"n": 0, "name": "zero"}, indent=2)
    assert first["messages"][0]["value_format"] == "json"
    assert first["messages"][1]["value"] == "<script>alert(1)</script>"
    assert first["messages"][2]["value"] == "**bold** _x_"
    assert (first["messages"][3]["value"], first["messages"][3]["value_format"]) == ("ff 00 01 62 69 6e 61 72 79",
                                                                                     "hex")
    assert first["stopped_by"] == "4 messages"
    code, out, err = keel("peek", "--bootstrap-server", healthy.bootstrap, "--topic", topic, "--partition", "1",
                          "--offset", "1", "--max-messages", "3", "--store", str(store.path))
    assert code == 0, err
    assert out.splitlines()[1:5] == ["header h: v1", "key (text): k1", "value (text):", "<script>alert(1)</script>"]
    assert "value (hex):\nff 00 01 62 69 6e 61 72 79\n" in out
    assert "offsets 0 to 9 (10 messages)" in err and "read on with --offset 4" in err

    # the first record at or after a time (ListOffsets by time), between two records' timestamps too
    at = peek_json(healthy.bootstrap, store, topic, "--from-time", str(BASE_TS + 5000), "--max-messages", "2")
    assert [m["offset"] for m in at["messages"]] == [5, 6]
    iso = peek_json(healthy.bootstrap, store, topic, "--from-time", "2026-05-28T20:26:44.500Z", "--max-messages", "1")
    assert BASE_TS == 1_780_000_000_000 and [m["offset"] for m in iso["messages"]] == [5]  # 20:26:40 + 4.5 s
    after = peek_json(healthy.bootstrap, store, topic, "--from-time", str(BASE_TS + 60_000))
    assert after["messages"] == [] and after["notes"] == ["no message at or after that time"]

    # bounded in bytes: 3 values of 7 bytes + keys (2) + headers (1 + 2) = 12 bytes each
    small = peek_json(healthy.bootstrap, store, topic, "--offset", "4", "--max-bytes", "30")
    assert [m["offset"] for m in small["messages"]] == [4, 5] and small["stopped_by"] == "30 bytes"

    # an offset out of range: Keel's error with the range, nothing read
    code, _, err = keel("peek", "--bootstrap-server", healthy.bootstrap, "--topic", topic, "--partition", "1",
                        "--offset", "11", "--store", str(store.path))
    assert code == 1 and "offset 11 is out of range" in err and "0 to 9" in err

    # a topic or partition that does not exist: Keel's error, at once
    code, _, err = keel("peek", "--bootstrap-server", healthy.bootstrap, "--topic", topic + "-nope", "--last", "1",
                        "--store", str(store.path))
    assert code == 1 and f"Topic '{topic}-nope' does not exist" in err
    code, _, err = keel("peek", "--bootstrap-server", healthy.bootstrap, "--topic", topic, "--partition", "2",
                        "--last", "1", "--store", str(store.path))
    assert code == 1 and f"topic {topic} has no partition 2: its partitions are 0 to 1" in err
    assert topic + "-nope" not in healthy.kafka_topics()  # not created by asking

    # no group was joined, nothing committed
    assert _groups(healthy.admin) == groups_before
    # every peek recorded: who, which partition, how many; never the contents
    peeks = [a for a in store.actions(kind="peek")]
    assert len(peeks) == 10
    assert {(a.actor, a.source, a.role, a.target) for a in peeks} == {
        ("sam", "cli", "data", t) for t in (f"{topic}-1", f"{topic}-2", f"{topic}-nope-0")}
    done = {a.result for a in peeks if a.status == "applied"}
    assert f"3 message(s) of {topic}-1, offsets 7-9, 36 bytes" in done
    assert any("out of range" in (a.result or "") for a in peeks if a.status == "failed")
    text = store.path.read_bytes() + b"".join(p.read_bytes() for p in store.path.parent.glob("keel.sqlite-wal"))
    for secret in (b"plain 7", b"<script>", b"zero", b"**bold**"):
        assert secret not in text


def test_a_viewer_without_the_data_permission_cannot_peek_on_the_cli(healthy: RealKafka, store, tmp_path,
                                                                      monkeypatch):
    topic = f"peek-deny-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3]})
    produce_known(healthy.bootstrap, topic)
    # [access] names the command line: sam is a viewer (an operator, an admin even) without data
    monkeypatch.setenv("KEEL_CONFIG", str(_config(tmp_path, '[access]\nadmin = ["cli:sam"]\ndata = ["cli:ops"]',
                                                  healthy.bootstrap)))
    code, out, err = keel("peek", "--bootstrap-server", healthy.bootstrap, "--topic", topic, "--partition", "1",
                          "--last", "2", "--store", str(store.path))
    assert code == 1 and out == ""
    assert "cannot peek at" in err and "sam may not read messages on cluster prod" in err
    assert 'add "cli:sam" to data = [...]' in err
    [refused] = store.actions()
    assert (refused.kind, refused.actor, refused.cluster) == ("refused", "sam", "prod")
    # granted: the same command reads
    monkeypatch.setenv("KEEL_CONFIG", str(_config(tmp_path, '[access]\nviewer = ["cli:sam"]\ndata = ["cli:sam"]',
                                                  healthy.bootstrap)))
    got = peek_json(healthy.bootstrap, store, topic, "--last", "2")
    assert [m["value"] for m in got["messages"]] == ["plain 8", "plain 9"]
    assert store.actions(kind="peek")[0].cluster == "prod"


def test_peek_on_a_kraft_cluster(kraft, store):
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"peek-kraft-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=kraft.bootstrap_servers, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2], 1: [2, 3]})])
        produce_known(kraft.bootstrap_servers, topic)
        before = _groups(admin)
        got = peek_json(kraft.bootstrap_servers, store, topic, "--from-time", str(BASE_TS + 2000), "--max-messages",
                        "3")
        assert [m["offset"] for m in got["messages"]] == [2, 3, 4]
        assert [m["key"] for m in got["messages"]] == ["k2", "k3", "k4"]
        assert _groups(admin) == before
    finally:
        admin.close()


# --- the topic page's Messages panel (AppTest against the same real brokers) -----------------------------------

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def _page_config(path: Path, kafka: RealKafka, data: bool) -> None:
    path.write_text(f'[keel]\nrole = "admin"\nread_only = false\ndata = {str(data).lower()}\n\n'
                    f'[clusters.real]\nzk = "{kafka.zk_connect}"\nbootstrap = "{kafka.bootstrap}"\n')


@pytest.fixture
def page(healthy: RealKafka, tmp_path, monkeypatch):
    import streamlit as st

    monkeypatch.setenv("KEEL_CONFIG", str(tmp_path / "keel.toml"))
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    monkeypatch.setenv("KEEL_ACTOR", "sam")
    st.cache_resource.clear()
    yield healthy
    st.cache_resource.clear()


def _topic_page(topic: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(topic).run()
    assert not at.exception, at.exception
    return at


def _markup(at) -> str:
    """Everything the page drew through markdown (captions, alerts, markdown, labels)."""
    return "\n".join(str(e.value) for kind in (at.markdown, at.caption, at.error, at.warning, at.info, at.success)
                     for e in kind) + "\n".join(str(e.label) for e in at.expander)


def test_the_topic_page_shows_messages_as_text_never_markup(page: RealKafka, tmp_path):
    topic = f"peek-page-{uuid.uuid4().hex[:6]}"
    create_topic(page, topic, {0: [1, 2], 1: [2, 3]})
    produce_known(page.bootstrap, topic)
    _page_config(tmp_path / "keel.toml", page, data=True)
    at = _topic_page(topic)
    at.radio(key="peek_mode").set_value("From an offset")
    at.selectbox(key="peek_partition").select(1)
    at.number_input(key="peek_offset").set_value(0)
    at.number_input(key="peek_count").set_value(4)
    at.button(key="peek_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(t.value for t in at.dataframe if {"Offset", "Value", "Headers"} <= set(t.value.columns))
    assert list(table["Offset"]) == [0, 1, 2, 3]
    assert list(table["Value"])[1:] == ["<script>alert(1)</script>", "**bold** _x_", "ff 00 01 62 69 6e 61 72 79"]
    assert list(table["Key"]) == ["k0", "k1", "k2", "k3"] and table["Headers"][1] == "h=v1"
    at.selectbox(key="peek_pick").select(1).run()
    assert "<script>alert(1)</script>" in [c.value for c in at.code]
    at.selectbox(key="peek_pick").select(2).run()
    assert "**bold** _x_" in [c.value for c in at.code]
    drawn = _markup(at)
    assert "alert(1)" not in drawn and "bold" not in drawn and "zero" not in drawn  # no message through markdown
    # recorded: who, which partition, how many; never the contents
    [row] = Store(tmp_path / "keel.sqlite").actions(kind="peek")
    assert (row.actor, row.cluster, row.target, row.status) == ("sam", "real", f"{topic}-1", "applied")
    assert row.result == f"4 message(s) of {topic}-1, offsets 0-3, 90 bytes"  # values 70 + keys 8 + headers 12


def test_a_viewer_without_the_data_permission_cannot_peek_on_the_page(page: RealKafka, tmp_path):
    topic = f"peek-page-deny-{uuid.uuid4().hex[:6]}"
    create_topic(page, topic, {0: [1, 2], 1: [2, 3]})
    produce_known(page.bootstrap, topic)
    _page_config(tmp_path / "keel.toml", page, data=False)  # admin, but no data
    at = _topic_page(topic)
    assert "Reading messages needs the data permission" in _markup(at)
    assert not [b for b in at.button if b.key == "peek_go"]
    # granted when drawn, taken away before the click: the click's run reads keel.toml again, nothing is read
    _page_config(tmp_path / "keel.toml", page, data=True)
    at = _topic_page(topic)
    _page_config(tmp_path / "keel.toml", page, data=False)
    at.button(key="peek_go").click().run()
    assert not at.exception and "Reading messages needs the data permission" in _markup(at)
    assert not [t for t in at.dataframe if {"Offset", "Value", "Headers"} <= set(t.value.columns)]
    assert Store(tmp_path / "keel.sqlite").actions(kind="peek") == []


# --- in a browser: what Chromium draws is the text, nothing runs, nothing is bold --------------------------------

BROWSER_KEY = b"**bold** _x_"
BROWSER_VALUE = b'<script>window.__peeked = 1</script><img src=x onerror="window.__img = 1"><b>b</b>'
SHOWN = """
const codes = [...document.querySelectorAll('.st-key-peek_box [data-testid=stCode]')].map(e => e.innerText.trim());
const bold = [...document.querySelectorAll('.st-key-peek_box strong, .st-key-peek_box em, .st-key-peek_box b')]
  .map(e => e.innerText);
return {codes, bold, peeked: window.__peeked ?? null, img: window.__img ?? null,
        imgs: document.querySelectorAll('.st-key-peek_box img').length};
"""


@pytest.mark.browser
@pytest.mark.skipif(not have_chromium(), reason="Debian chromium and chromedriver are needed")
def test_chromium_shows_a_message_as_typed(healthy: RealKafka, tmp_path):
    import time

    from kafka import KafkaProducer

    topic = f"peek-browser-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2]})
    producer = KafkaProducer(bootstrap_servers=healthy.bootstrap, acks="all")
    try:
        producer.send(topic, BROWSER_VALUE, key=BROWSER_KEY, partition=0).get(timeout=30)
    finally:
        producer.close(timeout=10)
    _page_config(tmp_path / "keel.toml", healthy, data=True)
    with serve_dashboard(tmp_path / "keel.toml", tmp_path) as url, chromium(1500, 2400) as driver:
        driver.get(f"{url}/topics?topic={topic}")
        deadline = time.monotonic() + 60

        def wait_for(css: str):
            while not driver.find_elements("css selector", css):
                if time.monotonic() > deadline:
                    driver.save_screenshot(str(tmp_path / "peek-missing.png"))
                    raise AssertionError(f"{css} did not show ({tmp_path})")
                time.sleep(0.3)
            return driver.find_elements("css selector", css)[0]

        def click(css: str) -> None:  # the expander opens with an animation: retry until the element takes it
            from selenium.common.exceptions import WebDriverException

            while True:
                element = wait_for(css)
                try:
                    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
                    element.click()
                    return
                except WebDriverException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)

        click(".st-key-peek_box summary")
        while not [b for b in driver.find_elements("css selector", ".st-key-peek_go button") if b.is_displayed()]:
            if time.monotonic() > deadline:
                raise AssertionError(f"the Peek button did not show ({tmp_path})")
            time.sleep(0.3)
        click(".st-key-peek_go button")
        while len(driver.execute_script(SHOWN)["codes"]) < 2:
            if time.monotonic() > deadline:
                driver.save_screenshot(str(tmp_path / "peek-no-result.png"))
                raise AssertionError(f"no message shown ({tmp_path})")
            time.sleep(0.3)
        time.sleep(1.0)
        driver.save_screenshot(str(tmp_path / "peek.png"))
        shown = driver.execute_script(SHOWN)
    assert shown["codes"][:2] == [BROWSER_KEY.decode(), BROWSER_VALUE.decode()], shown
    assert shown["bold"] == [] and shown["imgs"] == 0, shown
    assert shown["peeked"] is None and shown["img"] is None, shown  # nothing of it ran
