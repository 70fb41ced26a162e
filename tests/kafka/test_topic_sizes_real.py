"""Topic sizes, offsets and message counts (issue 30 item 1) on real brokers: what Keel reads in one refresh
(core.kafka.offsets.read_topic_sizes) equals what Kafka's own tools print on the same cluster, in ZooKeeper mode (the
shared `healthy` cluster, through bootstrap) and in KRaft mode:
* earliest / latest / newest offsets = GetOffsetShell --time -2 / -1 / -3 (org.apache.kafka.tools in 3.9);
* every replica's bytes and each broker's total = kafka-log-dirs --describe (LogDirsCommand);
* the newest timestamp is the highest the producer set, and the message count is latest - earliest after
  deleteRecords moved a log start offset.
"""

from __future__ import annotations

import json
import re
import time
import uuid

from sandbox.processes import kafka as kafka_runner
from tests.kafka.realkafka import RealKafka, create_topic, eventually, needs_kafka, tool_class

# GetOffsetShell --bootstrap-server (KIP-635) and ListOffsets MAX_TIMESTAMP (KIP-734) arrived in Kafka 3.0; older
# brokers: test_older_brokers_cannot_tell_the_newest_timestamp
SINCE_3_0 = needs_kafka("3.0", "GetOffsetShell --bootstrap-server and ListOffsets MAX_TIMESTAMP")

T0 = 1_700_000_000_000  # ms: record timestamps the producer sets
# partition -> record timestamps, in the order produced; partition 1 out of order (its newest is not its last),
# partition 2 stays empty
RECORDS = {0: [T0 + i * 1000 for i in range(30)], 1: [T0 + 5000, T0 + 9000, T0 + 7000], 2: []}


def _produce(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for p, stamps in RECORDS.items():
            for i, ts in enumerate(stamps):
                producer.send(topic, f"{p}-{i}".encode() * 50, partition=p, timestamp_ms=ts).get(timeout=30)
    finally:
        producer.close(timeout=10)


def _get_offset_shell(tool, version: str, bootstrap: str, topic: str, time: str) -> dict[int, int]:
    """GetOffsetShell's `topic:partition:offset` lines for --time `time`."""
    main = tool_class(version, "org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell")
    proc = tool(main, "--bootstrap-server", bootstrap, "--topic", topic, "--time", time)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(rf"^{re.escape(topic)}:(\d+):(-?\d+)$",
                                                                  proc.stdout, re.M)}


def _log_dirs(tool, version: str, bootstrap: str) -> dict:
    main = tool_class(version, "org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
    proc = tool(main, "--bootstrap-server", bootstrap, "--describe")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout[proc.stdout.index("{"):])


def _replicas_in(doc: dict) -> dict[tuple[int, str, int], int]:
    out = {}
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            if d["error"] is not None:
                continue
            for p in d["partitions"]:
                if not p["isFuture"]:
                    t, _, n = p["partition"].rpartition("-")
                    out[(b["broker"], t, int(n))] = p["size"]
    return out


def _same_as_kafka_tools(tool, version: str, bootstrap: str, topic: str) -> None:
    from core.kafka.admin import KafkaAdmin
    from core.kafka.offsets import read_topic_sizes

    earliest = _get_offset_shell(tool, version, bootstrap, topic, "-2")
    latest = _get_offset_shell(tool, version, bootstrap, topic, "-1")
    newest = _get_offset_shell(tool, version, bootstrap, topic, "-3")  # nothing printed for the empty partition
    assert earliest[0] == 10 and latest == {0: 30, 1: 3, 2: 0} and set(newest) == {0, 1}, (earliest, latest, newest)

    def same() -> None:
        doc = _log_dirs(tool, version, bootstrap)
        with KafkaAdmin(bootstrap) as admin:
            sizes = read_topic_sizes(admin)
        mine = sizes.partitions_of(topic)
        assert [p.partition for p in mine] == [0, 1, 2]
        assert {p.partition: p.earliest for p in mine} == earliest
        assert {p.partition: p.latest for p in mine} == latest
        assert {p.partition: p.newest_offset for p in mine if p.newest_offset is not None} == newest
        assert {p.partition: p.messages for p in mine} == {0: 20, 1: 3, 2: 0}
        assert {p.partition: p.newest_timestamp for p in mine} == {0: T0 + 29_000, 1: T0 + 9000, 2: None}
        assert newest[1] == 1  # the record with the highest timestamp, not the last one
        theirs = _replicas_in(doc)
        assert {(b, p.partition): n for p in mine for b, n in p.replicas} == \
            {(b, p): n for (b, t, p), n in theirs.items() if t == topic}
        assert all(p.size == max(n for _, n in p.replicas) for p in mine)
        per_broker: dict[int, int] = {}
        for (b, _t, _p), n in theirs.items():
            per_broker[b] = per_broker.get(b, 0) + n
        assert dict(sizes.brokers) == per_broker
        total = sizes.topics[topic]
        assert (total.partitions, total.messages, total.newest_timestamp) == (3, 23, T0 + 29_000)
        assert total.size == sum(p.size or 0 for p in mine) > 0
        assert total.on_disk == sum(n for p in mine for _, n in p.replicas) == 2 * total.size
        assert sizes.timestamps_note is None
        leaders = len({b for b in per_broker})
        assert sizes.requests == {"ListOffsets": 3 * leaders, "DescribeLogDirs": len(per_broker)}, sizes.requests

    # a follower may still be appending the last batch; __consumer_offsets may grow between the two reads
    eventually(same, timeout=30, interval=1)


def _delete_first_ten(admin, topic: str) -> None:
    from kafka import TopicPartition

    admin.delete_records({TopicPartition(topic, 0): 10})


@SINCE_3_0
def test_sizes_and_offsets_equal_get_offset_shell_and_log_dirs_zookeeper_mode(healthy: RealKafka):
    topic = f"sizes-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    _produce(healthy.bootstrap, topic)
    _delete_first_ten(healthy.admin, topic)
    _same_as_kafka_tools(healthy.cluster.tool, healthy.cluster.version, healthy.bootstrap, topic)


def test_sizes_and_offsets_equal_get_offset_shell_and_log_dirs_kraft(kraft):
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"sizes-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=kraft.bootstrap_servers, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2], 1: [2, 3], 2: [3, 1]})])

        def online() -> None:
            parts = admin.describe_topics([topic])[0]["partitions"]
            assert len(parts) == 3 and all(p["leader"] >= 0 if "leader" in p else p["leader_id"] >= 0
                                           for p in parts), parts
        eventually(online)
        _produce(kraft.bootstrap_servers, topic)
        _delete_first_ten(admin, topic)
    finally:
        admin.close()
    _same_as_kafka_tools(kraft.tool, kraft.version, kraft.bootstrap_servers, topic)


def test_a_partition_without_a_leader_is_unknown_not_zero(healthy: RealKafka):
    """A leader that is not there: the partition's offsets are unknown, with why; the others are read."""
    from core.kafka.admin import KafkaAdmin
    from core.kafka.offsets import read_offsets

    topic = f"sizes-nl-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3]})
    with KafkaAdmin(healthy.bootstrap) as admin:
        offsets, requests, _ = read_offsets(admin, {(topic, 0): -1, (topic, 1): 2})
    # partition 0's leader is asked again from fresh metadata: it has one, so it is read
    assert offsets[(topic, 0)].latest == 0 and offsets[(topic, 1)].latest is not None
    with KafkaAdmin(healthy.bootstrap) as admin:
        offsets, _, _ = read_offsets(admin, {(topic, 0): 99})
    assert offsets[(topic, 0)].latest is None and "broker 99" in offsets[(topic, 0)].error


def _page(at, page: str, ready, tries: int = 40):
    """Run `page` until `ready(at)` (the sizes are read in the background: a rerun shows them)."""
    at.switch_page(page).run()
    for _ in range(tries):
        assert not at.exception, at.exception
        if ready(at):
            return at
        time.sleep(0.25)
        at.run()
    raise AssertionError(f"{page}: the sizes never showed")


@SINCE_3_0
def test_topics_and_broker_pages_show_what_the_tools_report(healthy: RealKafka, tmp_path, monkeypatch):
    import streamlit as st

    from tests.dashboard.test_dashboard_apptest import app, metrics, table_with, texts, write_config

    topic = f"sizes-page-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    _produce(healthy.bootstrap, topic)
    _delete_first_ten(healthy.admin, topic)
    doc = eventually(lambda: _settled_log_dirs(healthy, topic), timeout=30, interval=1)
    theirs = _replicas_in(doc)
    size = sum(max(n for (b, t, p), n in theirs.items() if t == topic and p == q) for q in (0, 1, 2))

    write_config(tmp_path, monkeypatch, {"real": {"zk": healthy.zk_connect, "bootstrap": healthy.bootstrap}},
                 role="viewer")
    st.cache_resource.clear()
    try:
        at = app()
        at.run()

        def listed(at) -> bool:
            df = table_with(at, "Topic", "dataframe")
            return "Size" in df.columns and df["Size"].map(lambda v: isinstance(v, (int, float))).all()
        _page(at, "views/topics.py", listed)
        listing = table_with(at, "Topic", "dataframe")
        row = listing[listing["Topic"] == topic].iloc[0]
        assert (row["Size"], row["Messages"], row["Newest"]) == (size, 23, "2023-11-14 22:13:49 UTC")  # T0 + 29 s
        assert row["On disk"] == 2 * size
        assert list(listing["Size"]) == sorted(listing["Size"], reverse=True)  # biggest topics first
        assert "ListOffsets" in texts(at.caption) and "DescribeLogDirs" in texts(at.caption)

        at.selectbox(key="topic").select(topic).run()
        assert not at.exception, at.exception
        parts = table_with(at, "Partition", "dataframe")
        assert list(parts["Earliest"]) == [10, 0, 0] and list(parts["Latest"]) == [30, 3, 0]
        assert list(parts["Messages"]) == [20, 3, 0]
        assert metrics(at)["Messages"] == "23"

        at.query_params["broker"] = "2"
        _page(at, "views/broker.py", lambda at: metrics(at).get("Bytes", "—") != "—")
        per_broker = sum(n for (b, _t, _p), n in theirs.items() if b == 2)
        from dashboard.topic_sizes import human_bytes
        assert metrics(at)["Bytes"] == human_bytes(per_broker), (metrics(at), per_broker)
    finally:
        st.cache_resource.clear()


def _settled_log_dirs(kafka: RealKafka, topic: str) -> dict:
    """kafka-log-dirs' document once both replicas of each partition of `topic` are the same size."""
    doc = _log_dirs(kafka.cluster.tool, kafka.cluster.version, kafka.bootstrap)
    mine: dict[int, set[int]] = {}
    for (_b, t, p), n in _replicas_in(doc).items():
        if t == topic:
            mine.setdefault(p, set()).add(n)
    assert sorted(mine) == [0, 1, 2] and all(len(v) == 1 for v in mine.values()), mine
    return doc


def test_without_bootstrap_the_columns_say_what_they_need(healthy: RealKafka, tmp_path, monkeypatch):
    import streamlit as st

    from core.topic_sizes import NO_BOOTSTRAP
    from tests.dashboard.test_dashboard_apptest import app, metrics, table_with, texts, write_config

    write_config(tmp_path, monkeypatch, {"real": {"zk": healthy.zk_connect}}, role="viewer")
    st.cache_resource.clear()
    try:
        at = app()
        at.run()
        at.switch_page("views/topics.py").run()
        assert not at.exception, at.exception
        listing = table_with(at, "Topic", "dataframe")
        assert set(listing["Size"]) == set(listing["Messages"]) == {"needs bootstrap"}
        assert "bootstrap" in texts(at.caption) and NO_BOOTSTRAP.split(":")[0] in texts(at.caption)
        at.query_params["broker"] = "1"
        at.switch_page("views/broker.py").run()
        assert not at.exception, at.exception
        assert metrics(at)["Bytes"] == "—"
    finally:
        st.cache_resource.clear()


@SINCE_3_0
def test_topics_and_broker_pages_readable_in_a_browser_at_900_and_1600_px(healthy: RealKafka, tmp_path):
    """The new metrics (Size, On disk, Messages, Newest; a broker's Bytes) fit at 900 and 1600 px, and the list shows
    the size columns beside the topic (headless Chromium; screenshots in tmp_path, KEEL_E2E_SCREENSHOTS copies)."""
    import pytest

    from tests.support.browser import chromium, have_chromium, serve_dashboard

    if not have_chromium():
        pytest.skip("Debian chromium and chromedriver are needed")
    from tests.e2e.test_e2e_layout import CUT_BUTTONS, TRUNCATED_METRICS, shot, wait_js

    topic = f"sizes-e2e-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    _produce(healthy.bootstrap, topic)
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "viewer"\n\n[clusters.real]\nzk = "{healthy.zk_connect}"\n'
                      f'bootstrap = "{healthy.bootstrap}"\n')
    with serve_dashboard(config, tmp_path) as url, chromium(1600, 1300) as driver:
        for width in (1600, 900):
            driver.set_window_size(width, 1300)
            for path, label in ((f"topics?topic={topic}", "Newest"), ("broker?broker=2", "Bytes")):
                driver.get(f"{url}/{path}")
                wait_js(driver, "return [...document.querySelectorAll('[data-testid=stMetricLabel]')]"
                        f".some(e => e.innerText.trim() === {label!r})", timeout=60, message=f"{label} on /{path}")
                wait_js(driver, "return ![...document.querySelectorAll('[data-testid=stMetricValue]')]"
                        ".some(e => e.innerText.trim() === '—')", timeout=30, message=f"the sizes on /{path}")
                time.sleep(1.0)
                found = driver.execute_script(TRUNCATED_METRICS)
                shot(driver, tmp_path, f"sizes-{width}-{path.split('?')[0]}")
                assert found["truncated"] == [], (width, path, found["truncated"])
                assert driver.execute_script(CUT_BUTTONS) == [], (width, path)
            driver.get(f"{url}/topics")
            heads = wait_js(driver, "const h = [...document.querySelectorAll('[data-testid=stDataFrame] thead th')]"
                            ".map(c => c.innerText.trim()); return h.includes('Size') ? h : null", timeout=60,
                            message="the list's Size column")
            # right after Health: on screen without scrolling (the grid draws only the columns in view)
            assert heads.index("Size") == heads.index("Health") + 1, heads
            shot(driver, tmp_path, f"sizes-{width}-topics-list")


def test_older_brokers_cannot_tell_the_newest_timestamp(healthy: RealKafka, monkeypatch):
    """Brokers before Kafka 3.0 answer ListOffsets up to v6, without MAX_TIMESTAMP: Keel does not ask, says why, and
    still reads earliest / latest (two requests per leader). On 3.0+ brokers the older answer is simulated (the
    version the brokers announce), the one part of this a current cluster cannot produce."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    from core.kafka import offsets as mod
    from core.kafka.admin import KafkaAdmin

    topic = f"sizes-old-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    _produce(healthy.bootstrap, topic)
    if kafka_runner.version_at_least(healthy.cluster.version, "3.0"):
        monkeypatch.setattr(mod, "list_offsets_version", lambda admin: 6)
    with KafkaAdmin(healthy.bootstrap) as admin:
        sizes = mod.read_topic_sizes(admin)
    mine = sizes.partitions_of(topic)
    theirs = healthy.admin.list_partition_offsets({TopicPartition(topic, p): OffsetSpec.LATEST for p in RECORDS})
    assert {p.partition: p.latest for p in mine} == {tp.partition: o.offset for tp, o in theirs.items()} == \
        {0: 30, 1: 3, 2: 0}
    assert all(p.newest_timestamp is None and p.newest_offset is None for p in mine)
    assert sizes.timestamps_note and "KIP-734" in sizes.timestamps_note and "Kafka 3.0+" in sizes.timestamps_note
    leaders = len(sizes.brokers)
    assert sizes.requests["ListOffsets"] == 2 * leaders
