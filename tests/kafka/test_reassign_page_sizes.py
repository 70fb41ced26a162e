"""Issue 24, item 6, on real brokers: with the cluster's `bootstrap` in keel.toml the Reassign page reads partition sizes
from the brokers (describeLogDirs, as `plan --bootstrap-server` and the Log dirs page do), so Bytes moved and Est. time
show without a kafka-log-dirs file ("—" before). Kafka's own describeLogDirs (kafka-python, not Keel's reader) gives the
expected bytes.
"""

from __future__ import annotations

import json
import uuid

import streamlit as st

from dashboard.reassign import plan_view
from tests.kafka.realkafka import RealKafka, create_topic, produce
from tests.dashboard.test_dashboard_apptest import app, metrics, texts, write_config

PAGE = "reassign/page.py"
ORIGINAL = {0: [1, 2], 1: [2, 3]}
TARGET = {0: [3, 2], 1: [1, 3]}  # one new replica each: broker 3 receives partition 0, broker 1 partition 1
BYTES = {0: 1_500_000, 1: 700_000}


def _kafka_sizes(kafka: RealKafka, topic: str) -> dict[int, int]:
    """The largest replica of each partition of `topic`, from kafka-python's describe_log_dirs."""
    out: dict[int, int] = {}
    for entry in kafka.admin.describe_log_dirs():
        for d in entry["log_dirs"]:
            for t in d.get("topics") or ():
                if t["name"] == topic:
                    for p in t["partitions"]:
                        if not p["is_future_key"]:
                            out[p["partition_index"]] = max(out.get(p["partition_index"], 0), p["partition_size"])
    return out


def test_bytes_moved_and_the_estimate_come_from_the_brokers(healthy: RealKafka, tmp_path, monkeypatch):
    kafka = healthy
    topic = f"sizes-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, topic, ORIGINAL)
    produce(kafka, topic, BYTES)
    sizes = _kafka_sizes(kafka, topic)
    assert sizes[0] >= BYTES[0] and sizes[1] >= BYTES[1]

    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}},
                 role="operator")
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    st.cache_resource.clear()
    try:
        at = app().run()
        at.switch_page(PAGE).run()
        assert not at.exception, at.exception
        at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
        at.text_input(key="ra_throttle").input("0.5").run()  # 500,000 B/s
        at.text_area(key="ra_import_text").input(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": p, "replicas": r} for p, r in TARGET.items()]})).run()
        assert not at.exception, at.exception

        shown = metrics(at)
        assert shown["Bytes moved"] == plan_view.human_bytes(sizes[0] + sizes[1]), shown
        assert "read from the brokers at" in texts(at.caption)
        # one wave; the busiest broker moves max(in, out) of its bytes at 500,000 B/s: broker 1 sends partition 0
        # (its leader) and receives partition 1, broker 3 receives partition 0, broker 2 sends partition 1
        assert shown["Est. time"] != "—", shown
        assert shown["Est. time"] == plan_view.human_duration(max(sizes[0], sizes[1]) / 500_000), shown
    finally:
        st.cache_resource.clear()
