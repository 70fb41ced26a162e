"""Issue 18 in the browser (AppTest, real ZooKeeper): Rolling restart, Log dirs, Consumer groups and State-change
logs pages; the partition advice on Create topic and a topic's page; the uneven-rack warning on Overview, Create
topic and Reassign; the ZooKeeper -> KRaft migration banner with every write disabled."""

from __future__ import annotations

import json

from sandbox.seed import SandboxSpec
from core.zk.session import ZkSession
from tests.support.sandbox_helpers import running_sandbox
from tests.dashboard.test_dashboard_apptest import app, table_with, texts, write_config  # noqa: F401
from tests.domain.test_logdirs import DOC
from tests.zk.test_migration import dual_write_tree
from tests.domain.test_state_changes import B1, B3


def _all_text(at) -> str:
    return "\n".join(texts(getattr(at, kind)) for kind in ("error", "warning", "info", "success", "caption",
                                                          "markdown"))


def test_rolling_restart_page_and_uneven_racks(zk_connect, tmp_path, monkeypatch):
    # 5 brokers in 3 racks (a: 1, 4; b: 2, 5; c: 3); broker 2 down: the live racks hold 2, 1 and 1 brokers
    with running_sandbox(zk_connect, SandboxSpec(brokers=5, racks=3, topics=4, seed=3)) as sb:
        assert sb.emulator.wait_idle(10)
        sb.stop_broker(2)
        sb.emulator.wait_idle(10)
        write_config(tmp_path, monkeypatch, {"racks": {"zk": zk_connect}})
        at = app().run()
        assert not at.exception
        warning = texts(at.warning)
        assert "Racks hold different numbers of brokers (rack-a: 2, rack-b: 1, rack-c: 1)" in warning
        assert "Rack-unaware placement is even" in warning and "Computed over the 4 live brokers" in warning

        at.switch_page("views/restart.py").run()
        assert not at.exception, at.exception
        checks = table_with(at, "Safe to stop now", "dataframe")
        row = checks[checks["Broker"] == 2].iloc[0]
        assert row["Running"] == "NO" and row["Safe to stop now"] == "NO"
        assert "under-replicated" in texts(at.warning)  # broker 2 is down: the wait check says wait
        plan = table_with(at, "Step", "dataframe")
        assert 2 not in plan["Broker"].tolist() and len(plan) == 4
        at.selectbox(key="rr_broker").select(2).run()
        assert "Broker 2 is not safe to stop now" in texts(at.error)
        # the brokers' min.insync.replicas: a text field read exactly; no number, no checks (never the old ones)
        refusals = (("two", "min.insync.replicas must be a whole number, not 'two'"),
                    ("", "min.insync.replicas is empty: enter a whole number"),
                    ("0", "min.insync.replicas must be at least 1, not 0"))
        for typed, message in refusals:
            at.text_input(key="rr_min_isr").input(typed).run()
            assert not at.exception, at.exception
            assert message in texts(at.error)
            assert not [d for d in at.dataframe if "Safe to stop now" in d.value.columns]
        at.text_input(key="rr_min_isr").input(" 1 ").run()
        assert table_with(at, "Safe to stop now", "dataframe") is not None
        assert not [m for _, m in refusals if m in texts(at.error)]

        at.switch_page("views/create_topic.py").run()
        at.text_input(key="ct_name").input("skew.test").run()
        assert not at.exception
        assert "(rack-a: 2, rack-b: 1, rack-c: 1)" in texts(at.warning)
        assert "smallest rack (rack-b (1 broker), rack-c (1 broker))" in texts(at.warning)
        at.switch_page("reassign/page.py").run()
        assert not at.exception
        assert "Racks hold different numbers of brokers" in texts(at.warning)


def test_partition_advice_on_create_topic(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SandboxSpec(brokers=6, racks=3, topics=3, seed=5)) as sb:
        assert sb.emulator.wait_idle(10)
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page("views/create_topic.py").run()
        # max(100/10, 100/20) = 10, rounded up to the 6 brokers
        assert "Advised partitions: 12" in texts(at.markdown)
        at.text_input(key="ct_adv_producer").input("-5.0").run()
        assert "producer throughput per partition (--producer-mbps) must be a positive number of MB/s, got -5" \
            in texts(at.error)
        for typed, message in (("fast", "Producer MB/s per partition must be a number, not 'fast'"),
                               ("", "Producer MB/s per partition is empty: enter a number"),
                               ("2,5", "',' separates thousands here: use '.' for decimals")):
            at.text_input(key="ct_adv_producer").input(typed).run()
            assert message in texts(at.error)
            assert "Advised partitions" not in texts(at.markdown)
        at.text_input(key="ct_adv_producer").input("2.5").run()  # max(100 / 2.5, 100 / 20) = 40, over 6 brokers
        assert "Advised partitions: 42" in texts(at.markdown) and not at.error


def test_partition_advice_on_a_topics_page(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SandboxSpec(brokers=6, racks=3, topics=3, seed=5)) as sb:
        assert sb.emulator.wait_idle(10)
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        topic = next(t for t in sb.snapshot().topics if not t.is_internal)
        name = topic.name
        at.switch_page("views/topics.py").run()
        assert not at.exception, at.exception
        at.selectbox(key="topic").select(name).run()
        assert not at.exception
        assert "Advised partitions: " in texts(at.markdown)
        assert f"The topic has {len(topic.partitions)} partitions" in _all_text(at)


def test_migration_banner_and_every_write_disabled(zk_connect, tmp_path, monkeypatch):
    with ZkSession.open(zk_connect) as s:
        dual_write_tree(s)
    write_config(tmp_path, monkeypatch, {"mig": {"zk": zk_connect}})
    at = app().run()
    assert not at.exception, at.exception
    banner = texts(at.error)
    assert "ZooKeeper → KRaft migration: Hybrid phase: brokers being rolled to KRaft" in banner \
        and "KRaft controller 3000" in banner
    assert "Broker(s) 3 left /brokers/ids for KRaft" in banner and "not an outage" in banner
    brokers = table_with(at, "Status")
    assert "KRaft (left ZooKeeper)" in texts_of(brokers["Status"])
    assert "Broker 3" not in texts(at.error).split("Broker(s) 3")[0]  # not reported as "Broker down: 3"
    assert "1 partition(s) counted unavailable above are led by broker(s) 3" in texts(at.info)
    for page, key in (("views/create_topic.py", "ct_create"), ("views/leaders.py", None)):
        at.switch_page(page).run()
        assert not at.exception
        assert "ZooKeeper → KRaft migration" in texts(at.error)  # the banner on every page
        assert "Writes through ZooKeeper are disabled" in texts(at.caption)
        if key:
            assert at.button(key=key).disabled
        assert all(b.disabled for b in at.button if b.proto.type == "primary"), \
            [(b.label, b.disabled) for b in at.button]


def texts_of(series) -> str:
    from dashboard.text import unescape

    return " ".join(unescape(str(v)) for v in series)


def test_state_change_logs_page(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SandboxSpec(brokers=3, racks=3, topics=1, seed=1)):
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page("views/state_changes.py").run()
        assert "Upload one or more" in texts(at.info)
        at.file_uploader(key="sc_files").set_value([("broker-1.log", B1.encode(), "text/plain"),
                                                    ("broker-3.log", B3.encode(), "text/plain")]).run()
        assert not at.exception, at.exception
        at.selectbox(key="sc_topic").select("ev").run()
        at.selectbox(key="sc_partition").select(1).run()
        df = table_with(at, "Kind", "dataframe")
        assert df["Broker"].tolist() == [1, 1, 1, 3] and df["Time"].is_monotonic_increasing
        assert df["Kind"].tolist() == ["no leader", "error", "state change", "became leader"]
        at.text_input(key="sc_start").input("not a time").run()
        assert "is not a time" in texts(at.error)
        at.file_uploader(key="sc_files").set_value([("server.log", b"[2026-01-01 00:00:00,000] INFO x "
                                                    b"(kafka.server.KafkaServer)\n", "text/plain")]).run()
        assert "server.log is not a Kafka state-change log" in texts(at.error)


def test_log_dirs_and_consumer_groups_pages(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SandboxSpec(brokers=2, racks=0, topics=0, seed=1)) as sb:
        with ZkSession.open(zk_connect) as s:  # topic t of the log-dirs document: t-0 on 1,2; t-1 on 2,1; t-2 on 1,2
            from core import zkformat as zf
            s.create(zf.topic_path("t"), zf.encode_topic({0: [1, 2], 1: [2, 1], 2: [1, 2]}), makepath=True)
        sb.emulator.wait_idle(10)
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page("views/consumer_groups.py").run()
        assert "add the cluster's `bootstrap` servers" in texts(at.info).replace("\\", "")
        at.switch_page("views/log_dirs.py").run()
        assert not at.exception
        at.file_uploader(key="ld_upload").set_value(("logdirs.json", json.dumps(DOC).encode(),
                                                     "application/json")).run()
        assert not at.exception, at.exception
        imbalance = table_with(at, "Imbalance (of the mean)", "dataframe")
        assert imbalance["Imbalance (of the mean)"].tolist() == ["200%", "40%"]
        moves = table_with(at, "To", "dataframe")
        assert moves[["Topic", "Partition", "Broker", "From", "To"]].values.tolist() == [["t", 0, 1, "/d1/a", "/d1/b"]]
        # the move budget: a text field read exactly; no number (or one the engine refuses), no plan
        for typed, message in (("some", "Most moves must be a whole number, not 'some'"),
                               ("-1", "the move budget must be 0 or more, got -1")):
            at.text_input(key="ld_plan_budget").input(typed).run()
            assert not at.exception, at.exception
            assert message in texts(at.error)
            assert not [d for d in at.dataframe if "To" in d.value.columns]
        at.text_input(key="ld_plan_budget").input("1").run()
        assert len(table_with(at, "To", "dataframe")) == 1 and not at.error
        assert "needs the cluster's `bootstrap` servers" in texts(at.caption).replace("\\", "")
        at.file_uploader(key="ld_upload").set_value(("bad.json", b"nothing", "application/json")).run()
        assert "holds no JSON object" in texts(at.error)
