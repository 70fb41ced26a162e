"""Issue 30 item 3 on real brokers: every --reset-offsets mode gives the offsets Kafka's own kafka-consumer-groups
--reset-offsets --dry-run gives on the same group; --execute commits them (a consumer of the group starts there);
a group with a live member is refused with Kafka's message and nothing is written; delete-offsets, delete-group and
offsets-undo put the audited offsets back."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

import pytest

from tests.kafka.realkafka import RealKafka, create_topic, eventually, tool_class

CGC = ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand")
MINUTE = 60_000


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _tool(kafka: RealKafka, *args: str) -> str:
    proc = kafka.cluster.tool(tool_class(kafka.cluster.version, *CGC), "--bootstrap-server", kafka.bootstrap,
                              *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _tool_plan(kafka: RealKafka, group: str, *args: str) -> dict[tuple[str, int], int]:
    """The tool's --reset-offsets --dry-run --export: topic,partition,offset lines."""
    out = _tool(kafka, "--reset-offsets", "--group", group, "--dry-run", "--export", *args)
    rows = [line.split(",") for line in out.splitlines() if line.count(",") == 2]
    return {(t, int(p)): int(o) for t, p, o in rows}


def _keel(kafka: RealKafka, store, *args: str) -> tuple[int, str, str]:
    return kafka.keel(*args, "--bootstrap-server", kafka.bootstrap, "--store", str(store))


def _keel_plan(kafka: RealKafka, store, group: str, *args: str) -> dict[tuple[str, int], int]:
    code, out, err = _keel(kafka, store, "reset-offsets", "--group", group, "--dry-run", "--export", *args)
    assert code == 0, err
    rows = [line.split(",") for line in out.splitlines() if line]
    return {(t, int(p)): int(o) for t, p, o in rows}


def _committed(kafka: RealKafka, group: str) -> dict[tuple[str, int], int]:
    got = kafka.admin.list_group_offsets({group: None})[group]
    return {(tp.topic, tp.partition): om.offset for tp, om in got.items() if om.offset >= 0}


def _settled(call):
    """`call()`, again while a fresh cluster settles: the first group waits for __consumer_offsets to be created, and
    a client may know a just-started broker before its metadata lists it (UnknownBrokerId)."""
    from kafka.errors import CoordinatorNotAvailableError, NodeNotReadyError, UnknownBrokerIdError

    deadline = time.monotonic() + 30
    while True:
        try:
            return call()
        except (CoordinatorNotAvailableError, NodeNotReadyError, UnknownBrokerIdError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _commit(kafka: RealKafka, group: str, offsets: dict[tuple[str, int], int]) -> None:
    _commit_with(kafka.admin, group, offsets)


def _commit_with(admin, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    answer = _settled(lambda: admin.alter_group_offsets(group, {TopicPartition(t, p): OffsetAndMetadata(o, "", None)
                                                                for (t, p), o in offsets.items()}))
    assert all(e.__name__ == "NoError" for e in answer.values()), answer


HALF_PAST_NINE = "<duration>"


def _half_past_nine(base: int) -> str:
    """The --by-duration that reaches back from now to 30 s after message 9 (one a minute from `base`). Each tool
    subtracts it from its own clock, seconds apart: halfway between two messages, both land between the same two
    (a fixed PT10M30S did not when the minute turned between the two calls)."""
    seconds = round((time.time() * 1000 - (base + 9 * MINUTE + 30_000)) / 1000)
    return f"PT{seconds // 60}M{seconds % 60}S"


@pytest.fixture
def setup(healthy: RealKafka):
    """A topic of 3 partitions, 20 messages each one minute apart (the last a minute ago), partition 0's first 3
    deleted (earliest 3); a group with offsets committed and no member (Empty)."""
    from kafka import KafkaProducer, TopicPartition

    kafka = healthy
    topic, group = _name("reset"), _name("reset-group")
    create_topic(kafka, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    base = (int(time.time() * 1000) // MINUTE) * MINUTE - 20 * MINUTE
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
    for p in range(3):
        for i in range(20):
            producer.send(topic, f"m{i}".encode(), partition=p, timestamp_ms=base + i * MINUTE)
    producer.flush(timeout=30)
    producer.close()
    kafka.admin.delete_records({TopicPartition(topic, 0): 3})
    _commit(kafka, group, {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2})
    return kafka, topic, group, base


def test_every_mode_matches_kafka_consumer_groups_dry_run_then_execute(setup, tmp_path):
    kafka, topic, group, base = setup
    store = tmp_path / "keel.sqlite"
    at = datetime.fromtimestamp((base + 5 * MINUTE + 500) / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    csv = tmp_path / "plan.csv"
    csv.write_text(f"{topic},0,1\n{topic},1,12\n{topic},2,9999\n")
    cases = [
        ("--all-topics", "--to-earliest"),
        ("--all-topics", "--to-latest"),
        ("--topic", f"{topic}:0,2", "--to-current"),
        ("--topic", topic, "--to-offset", "7"),
        ("--topic", topic, "--to-offset", "1000"),  # clamped to the latest
        ("--topic", topic, "--to-offset", "1"),  # partition 0 clamped to its earliest (3)
        ("--all-topics", "--shift-by", "-3"),
        ("--all-topics", "--shift-by", "100"),
        ("--topic", topic, "--to-datetime", at),
        ("--topic", topic, "--to-datetime", "2999-01-01T00:00:00.000"),  # no message that late: the latest
        ("--topic", f"{topic}:1", "--by-duration", HALF_PAST_NINE),
        ("--from-file", str(csv)),
    ]
    for case in cases:
        case = tuple(_half_past_nine(base) if a == HALF_PAST_NINE else a for a in case)
        theirs = _tool_plan(kafka, group, *case)
        ours = _keel_plan(kafka, store, group, *case)
        assert ours == theirs, (case, ours, theirs)
        assert ours, case
        if "--by-duration" in case:  # the first message at or after half past the ninth: the tenth
            assert ours == {(topic, 1): 10}, (case, ours)
    # a few spelled out, so that agreeing on nothing cannot pass
    assert _keel_plan(kafka, store, group, "--all-topics", "--to-earliest") == \
        {(topic, 0): 3, (topic, 1): 0, (topic, 2): 0}
    assert _keel_plan(kafka, store, group, "--topic", topic, "--to-datetime", at) == \
        {(topic, 0): 6, (topic, 1): 6, (topic, 2): 6}
    assert _keel_plan(kafka, store, group, "--from-file", str(csv)) == {(topic, 0): 3, (topic, 1): 12, (topic, 2): 20}
    assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}  # dry runs wrote nothing

    # --execute: committed where the dry run said, audited with the previous offsets; a consumer starts there
    code, out, err = _keel(kafka, store, "reset-offsets", "--group", group, "--topic", topic, "--to-datetime", at,
                           "--execute")
    assert code == 0, err
    assert _committed(kafka, group) == {(topic, 0): 6, (topic, 1): 6, (topic, 2): 6}
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=kafka.bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="none")
    try:
        first: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while len(first) < 3 and time.monotonic() < deadline:
            for tp, records in consumer.poll(500).items():
                first.setdefault(tp.partition, records[0].offset)
        assert first == {0: 6, 1: 6, 2: 6}

        # a live member: refused with Kafka's message, as the tool refuses it; nothing written
        message = f"Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable."
        eventually(lambda: _assert_in(message, _tool(kafka, "--reset-offsets", "--group", group, "--all-topics",
                                                      "--to-earliest", "--dry-run")), timeout=30)
        before = _committed(kafka, group)
        code, out, err = _keel(kafka, store, "reset-offsets", "--group", group, "--all-topics", "--to-earliest",
                               "--execute")
        assert code == 1 and message in err, err
        assert _committed(kafka, group) == before
        code, _, err = _keel(kafka, store, "delete-group", "--group", group)
        assert code == 1 and "not empty" in err, err
    finally:
        consumer.close()

    # undo the reset: the offsets before it come back
    from core.audit.store import Store

    reset = next(a for a in Store(store).actions(kind="offsets-reset") if a.status == "applied")
    code, _, err = _keel(kafka, store, "offsets-undo", "--action", str(reset.id))
    assert code == 0, err
    assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}

    # delete the offsets of the topic, then undo that too
    code, _, err = _keel(kafka, store, "delete-offsets", "--group", group, "--topic", f"{topic}:1")
    assert code == 0, err
    assert _committed(kafka, group) == {(topic, 0): 5, (topic, 2): 2}
    deleted = Store(store).actions(kind="offsets-delete")[0]
    assert _keel(kafka, store, "offsets-undo", "--action", str(deleted.id))[0] == 0
    assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}

    # delete the empty group; its offsets are in the audit, and the undo brings the group back with them
    code, out, err = _keel(kafka, store, "delete-group", "--group", group)
    assert code == 0, err
    assert group not in {g["group_id"] for g in kafka.admin.list_groups()}
    gone = Store(store).actions(kind="group-delete")[0]
    code, _, err = _keel(kafka, store, "offsets-undo", "--action", str(gone.id), "--cluster", "elsewhere")
    assert code == 1 and "was recorded for cluster" in err, err  # another cluster's group is another group
    assert group not in {g["group_id"] for g in kafka.admin.list_groups()}
    assert _keel(kafka, store, "offsets-undo", "--action", str(gone.id))[0] == 0
    assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}


def _assert_in(text: str, out: str) -> None:
    assert text in out, out


def test_reset_on_kraft(kraft, tmp_path):
    """The same Admin API on a KRaft cluster: a dry run equal to the tool's, then --execute."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from core.cli import main
    import contextlib
    import io

    topic, group = _name("kreset"), _name("kreset-group")
    admin = KafkaAdminClient(bootstrap_servers=kraft.bootstrap_servers, request_timeout_ms=20000)
    try:
        _settled(lambda: admin.create_topics([NewTopic(topic, 2, 1)]))
        producer = KafkaProducer(bootstrap_servers=kraft.bootstrap_servers, acks="all")
        for p in range(2):
            for i in range(10):
                producer.send(topic, b"x", partition=p)
        producer.flush(timeout=30)
        producer.close()
        _commit_with(admin, group, {(topic, 0): 8, (topic, 1): 4})

        def keel(*argv: str) -> tuple[int, str, str]:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([*argv, "--bootstrap-server", kraft.bootstrap_servers, "--store",
                             str(tmp_path / "k.sqlite")])
            return code, out.getvalue(), err.getvalue()

        args = ("--group", group, "--all-topics", "--shift-by", "-5")
        proc = kraft.tool(tool_class(kraft.version, *CGC), "--bootstrap-server", kraft.bootstrap_servers,
                          "--reset-offsets", *args, "--dry-run", "--export")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        theirs = sorted(line for line in proc.stdout.splitlines() if line.count(",") == 2)
        code, out, err = keel("reset-offsets", *args, "--dry-run", "--export")
        assert code == 0, err
        assert sorted(out.splitlines()) == theirs == [f"{topic},0,3", f"{topic},1,0"]
        code, _, err = keel("reset-offsets", *args, "--execute")
        assert code == 0, err
        got = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in got.items()} == {0: 3, 1: 0}
    finally:
        admin.close()


# --- the Consumer groups page ---------------------------------------------------------------------------------


def _page(kafka: RealKafka, tmp_path, monkeypatch, role: str):
    import streamlit as st

    from tests.dashboard.test_dashboard_apptest import app, write_config

    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}}, role=role)
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "page.sqlite"))
    st.cache_resource.clear()
    at = app().run()
    at.switch_page("views/consumer_groups.py").run()
    assert not at.exception, at.exception
    return at


def test_page_dry_run_then_reset_then_undo_as_operator(setup, tmp_path, monkeypatch):
    import streamlit as st

    kafka, topic, group, _ = setup
    other_topic, other = _name("other"), _name("aaa-other-group")  # another group, on another topic, shown first
    create_topic(kafka, other_topic, {0: [1, 2]})
    _commit(kafka, other, {(other_topic, 0): 0})
    try:
        at = _page(kafka, tmp_path, monkeypatch, "operator")
        at.selectbox(key="cg_group").select(other).run()
        at.selectbox(key="cg_group").select(group).run()  # the Topics field follows the group picked
        at.selectbox(key="cg_reset_mode").select("to-offset").run()
        at.text_input(key="cg_reset_value").input("1").run()
        at.radio(key="cg_reset_scope").set_value("Topics").run()
        at.button(key="cg_reset_dry").click().run()
        assert not at.exception, at.exception
        table = next(d.value for d in at.dataframe if "Lag after" in d.value.columns)
        assert [tuple(r) for r in table[["Partition", "Current", "New", "Lag after"]].itertuples(index=False)] == \
            [(0, 5, 3, 17), (1, 10, 1, 19), (2, 2, 1, 19)]  # partition 0 clamped to its earliest, as the tool does
        assert "lower than earliest offset" in table["Note"][0]
        assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}  # a dry run writes nothing
        [ok] = [c for c in at.checkbox if c.key.startswith("cg_reset_ok_")]
        ok.check().run()
        at.button(key="cg_reset_go").click().run()
        assert not at.exception, at.exception
        from tests.dashboard.test_dashboard_apptest import texts

        assert "in History" in texts(at.success) and "Reset offsets of consumer group" in texts(at.success), \
            texts(at.error)
        assert _committed(kafka, group) == {(topic, 0): 3, (topic, 1): 1, (topic, 2): 1}
        # undo from the audit: the offsets before come back
        at.run()
        [undo_ok] = [c for c in at.checkbox if c.key.startswith("cg_undo_ok_")]
        undo_ok.check().run()
        at.button(key="cg_undo_go").click().run()
        assert not at.exception, at.exception
        assert _committed(kafka, group) == {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2}
    finally:
        st.cache_resource.clear()


def test_page_refuses_a_viewer_and_a_group_with_members(setup, tmp_path, monkeypatch):
    import streamlit as st
    from kafka import KafkaConsumer

    kafka, topic, group, _ = setup
    try:
        at = _page(kafka, tmp_path, monkeypatch, "viewer")
        at.selectbox(key="cg_group").select(group).run()
        assert any("only an operator" in c.value for c in at.caption), [c.value for c in at.caption]
        at.button(key="cg_reset_dry").click().run()
        [ok] = [c for c in at.checkbox if c.key.startswith("cg_reset_ok_")]
        assert ok.disabled and at.button(key="cg_reset_go").disabled
        consumer = KafkaConsumer(topic, bootstrap_servers=kafka.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(200)
            at = _page(kafka, tmp_path, monkeypatch, "operator")
            at.selectbox(key="cg_group").select(group).run()
            message = f"Assignments can only be reset if the group '{group}' is inactive, but the current state is " \
                      "Stable."
            from tests.dashboard.test_dashboard_apptest import texts

            assert message in texts(at.info), texts(at.info)
            assert not [b for b in at.button if b.key == "cg_reset_go"]
        finally:
            consumer.close()
    finally:
        st.cache_resource.clear()


def test_reset_panel_readable_in_a_browser_at_900_and_1600_px(setup, tmp_path):
    """The Consumer groups page's reset panel and its dry run fit at 900 and 1600 px: no cut button label, the
    dry run's table drawn (headless Chromium; screenshots in tmp_path, KEEL_E2E_SCREENSHOTS copies them)."""
    from tests.support.browser import chromium, have_chromium, serve_dashboard

    if not have_chromium():
        pytest.skip("Debian chromium and chromedriver are needed")
    from tests.e2e.test_e2e_layout import CUT_BUTTONS, shot, wait_js

    kafka, topic, _, _ = setup
    first = f"0-e2e-{uuid.uuid4().hex[:6]}"  # sorts before every other group of the shared cluster: the one shown
    _commit(kafka, first, {(topic, 0): 5, (topic, 1): 10, (topic, 2): 2})
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "operator"\n\n[clusters.real]\nzk = "{kafka.zk_connect}"\n'
                      f'bootstrap = "{kafka.bootstrap}"\n')
    click_dry_run = ("const b = [...document.querySelectorAll('button')].find(e => e.innerText.trim().endsWith("
                     "'Dry run')); if (!b) return false; b.click(); return true;")
    with serve_dashboard(config, tmp_path) as url, chromium(1600, 1300) as driver:
        for width in (1600, 900):
            driver.set_window_size(width, 1300)
            driver.get(f"{url}/consumer_groups")
            heads = None
            # a click while the page's first run still draws it can meet a button that run replaces, and is lost
            # (CI load, once): clicked once the page is idle, and again (at most twice) if no table follows
            for attempt in range(3):
                wait_js(driver, "return !document.querySelector('[data-testid=stStatusWidget]')", timeout=60,
                        message="the page to be idle")
                wait_js(driver, click_dry_run, timeout=60, message="the reset panel's Dry run button")
                try:
                    heads = wait_js(driver, "const h = [...document.querySelectorAll("
                                    "'[data-testid=stDataFrame] thead th')].map(c => c.innerText.trim()); "
                                    "return h.includes('Lag after') ? h : null", timeout=30,
                                    message="the dry run's table")
                    break
                except pytest.fail.Exception:
                    if attempt == 2:
                        raise
            assert {"Partition", "Current", "New"} <= set(heads), heads
            driver.execute_script("[...document.querySelectorAll('[data-testid=stDataFrame]')].find(d => [...d"
                                  ".querySelectorAll('thead th')].some(c => c.innerText.trim() === 'Lag after'))"
                                  ".scrollIntoView({block: 'center'})")
            time.sleep(1.0)
            shot(driver, tmp_path, f"group-reset-{width}")
            assert driver.execute_script(CUT_BUTTONS) == [], width
