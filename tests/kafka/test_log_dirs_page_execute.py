"""Issue 24, item 5, on real brokers: the Log dirs page's Execute shows its outcome (what moved, the action in History)
when the moves leave nothing more to plan, instead of only "Nothing to move".

Two partitions of one broker, 3 MB each, put in the same one of its two log dirs through Kafka's Admin API
(alterReplicaLogDirs); the page plans for that broker, executes, and Kafka's describeLogDirs is the judge.
"""

from __future__ import annotations

import uuid

import streamlit as st

from core.audit.store import Store
from tests.kafka.realkafka import RealKafka, create_topic, eventually, produce
from tests.dashboard.test_dashboard_apptest import app, texts, write_config

BROKER = 1
PARTITION_BYTES = 3_000_000


def _where(kafka: RealKafka, topic: str) -> dict[int, str]:
    """{partition: log dir} of `topic`'s replicas on BROKER, from describeLogDirs (no future replica left)."""
    from core.kafka.admin import KafkaAdmin
    from core.kafka.jbod import describe

    with KafkaAdmin(kafka.bootstrap) as admin:
        view = describe(admin, [BROKER])
    assert not [f for f in view.future() if f[0] == topic], "a move of the topic is still copying"
    return {p: d for (t, p, b), d in view.location().items() if t == topic and b == BROKER}


def _only_ours(kafka: RealKafka) -> None:
    """Delete the topics earlier modules left on the shared cluster (their order differs between runs, with
    pytest-xdist too) and wait until no directory of BROKER holds them."""
    from core.kafka.admin import KafkaAdmin
    from core.kafka.jbod import describe

    left = [t for t in kafka.admin.list_topics() if not t.startswith("__")]
    if left:
        kafka.admin.delete_topics(left, timeout_ms=60_000)

    def gone() -> None:
        with KafkaAdmin(kafka.bootstrap) as admin:
            held = {t for (t, _, _) in describe(admin, [BROKER]).location() if not t.startswith("__")}
        assert not held, held
    eventually(gone, timeout=60, interval=0.5)


def test_execute_shows_what_moved_and_then_that_nothing_is_left(healthy: RealKafka, tmp_path, monkeypatch):
    from core.kafka.admin import KafkaAdmin
    from core.kafka.jbod import alter_log_dirs, wait_moved
    from core.logdirs import DirRequest

    kafka = healthy
    _only_ours(kafka)  # the plan and its "Nothing to move" depend on every byte in broker 1's directories
    topic = f"ld-page-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, {0: [BROKER], 1: [BROKER]})
    produce(kafka, topic, {0: PARTITION_BYTES, 1: PARTITION_BYTES})
    dirs = sorted(str(d) for d in kafka.cluster.log_dirs(BROKER))
    assert len(dirs) == 2
    # both partitions in the same directory: the broker's directories are uneven by at least 6 MB
    now = _where(kafka, topic)
    with KafkaAdmin(kafka.bootstrap) as admin:
        requests = [DirRequest(topic, p, BROKER, dirs[0], now[p]) for p in (0, 1) if now[p] != dirs[0]]
        assert not [e for e in alter_log_dirs(admin, requests).values() if e is not None]
        _, pending = wait_moved(admin, requests, timeout=60)
        assert not pending
    assert _where(kafka, topic) == {0: dirs[0], 1: dirs[0]}

    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}},
                 role="operator")
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    st.cache_resource.clear()
    try:
        at = app().run()
        at.switch_page("views/log_dirs.py").run()
        assert not at.exception, at.exception
        at.multiselect(key="ld_plan_brokers").select(BROKER).run()
        at.text_input(key="ld_plan_budget").input("100").run()
        assert not at.exception, at.exception
        moves = next(d.value for d in at.dataframe if {"From", "To", "Bytes"} <= set(d.value.columns))
        assert topic in set(moves["Topic"]), moves
        next(c for c in at.checkbox if (c.key or "").startswith("ld_confirm_")).check().run()
        at.button(key="ld_execute").click().run()
        assert not at.exception, at.exception

        # Kafka moved them: the two partitions are in different directories now
        after = _where(kafka, topic)
        assert set(after.values()) == set(dirs), after
        [action] = [a for a in Store(tmp_path / "keel.sqlite").actions() if a.kind == "log-dir-move"]
        assert action.status == "applied"

        # the page: the outcome (each move, the action) above "Nothing to move", with a link to the action
        shown = texts(at.success)
        assert f"(action #{action.id} in History)" in shown, shown
        assert f"Moved {len(moves)} of {len(moves)} replica(s) between log directories" in shown, shown
        moved = moves[moves["Topic"] == topic].iloc[0]
        assert f"{topic}-{moved['Partition']} on broker {BROKER}: {moved['From']} → {moved['To']}" in shown, shown
        assert "Nothing to move" in shown
        assert shown.index("Moved") < shown.index("Nothing to move")
        assert [link.value for link in at.get("page_link") if "History" in link.value] == \
            [f"Action #{action.id} in History"]
    finally:
        st.cache_resource.clear()
