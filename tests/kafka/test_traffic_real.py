"""Issue 28 items 4-5 on real brokers (the ZooKeeper-mode cluster with bootstrap): producers write at known rates
into two topics created with their replicas concentrated on brokers 1 and 2; `plan --sample-rates` measures the
write rates from the growth of the log sizes (describeLogDirs) and its plan spreads the hot topic.

True per-broker rate = the sum, over the replicas a broker holds, of the rate produced into that partition (every
replica writes what its leader takes). The messages are 10 kB of random bytes (no compression), so a sample
misses at most one message per partition: 10 s of sampling keeps that well under the 20 % asked."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter

from kafka import KafkaProducer

from tests.kafka.realkafka import RealKafka, create_topic, keel_zk_ok, needs_kafka

pytestmark = needs_kafka("1.1", "describeLogDirs (KIP-113)")

MESSAGE = 10_000
HOT_RATE, COOL_RATE = 200_000, 20_000  # B/s into each topic, spread evenly over its partitions
HOT = {0: [1, 2], 1: [2, 1], 2: [1, 2]}  # 3 partitions, all on brokers 1 and 2
COOL = {0: [1, 2], 1: [2, 1]}
SAMPLE_SECONDS = 10


def _produce(bootstrap: str, topic: str, partitions: int, rate: int, stop: threading.Event) -> None:
    """`rate` B/s into `topic`, round-robin over its partitions, one MESSAGE at a time on a fixed schedule."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0, compression_type=None)
    value, every, start, n = os.urandom(MESSAGE), MESSAGE / rate, time.monotonic(), 0
    try:
        while not stop.is_set():
            producer.send(topic, value, partition=n % partitions)
            n += 1
            time.sleep(max(0.0, start + n * every - time.monotonic()))
        producer.flush(timeout=10)
    finally:
        producer.close(timeout=10)


def test_measured_write_rates_and_the_hot_topic_spread(healthy: RealKafka, tmp_path):
    kafka = healthy
    suffix = uuid.uuid4().hex[:6]
    hot, cool = f"hot-{suffix}", f"cool-{suffix}"
    create_topic(kafka, hot, HOT)
    create_topic(kafka, cool, COOL)
    stop = threading.Event()
    threads = [threading.Thread(target=_produce, args=(kafka.bootstrap, t, len(a), r, stop), daemon=True)
               for t, a, r in ((hot, HOT, HOT_RATE), (cool, COOL, COOL_RATE))]
    for t in threads:
        t.start()
    try:
        time.sleep(2)  # producers connected and at their pace before the first sample
        (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": hot}, {"topic": cool}]}))
        started = time.monotonic()
        keel_zk_ok(kafka, "plan", "--bootstrap-server", kafka.bootstrap, "--sample-rates", f"{SAMPLE_SECONDS}:2",
                   "--rates-output", str(tmp_path / "rates.json"), "--topics-to-move-json-file",
                   str(tmp_path / "topics.json"), "-o", str(tmp_path / "plan.json"),
                   "--report", str(tmp_path / "report.json"))
        took = time.monotonic() - started
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=15)
    assert SAMPLE_SECONDS <= took < SAMPLE_SECONDS + 15, took

    measured = {(r["topic"], r["partition"]): r["bytes_per_s"]
                for r in json.loads((tmp_path / "rates.json").read_text())["rates"]}
    true_partition = {**{(hot, p): HOT_RATE / len(HOT) for p in HOT}, **{(cool, p): COOL_RATE / len(COOL) for p in COOL}}
    true_broker, measured_broker = Counter(), Counter()
    for (topic, p), rate in true_partition.items():
        for b in (HOT if topic == hot else COOL)[p]:
            true_broker[b] += rate
            measured_broker[b] += measured[(topic, p)]
    for b, rate in true_broker.items():
        assert abs(measured_broker[b] - rate) <= 0.2 * rate, (b, measured_broker[b], rate)
    assert all(measured.get((t, p), 0) < 1_000 for t, p in measured if t not in (hot, cool))  # idle topics

    report = json.loads((tmp_path / "report.json").read_text())["report"]
    traffic = report["traffic"]
    assert traffic["max_deviation"][0] > 0.5 and traffic["within_tolerance"], traffic
    assert traffic["max_deviation"][1] <= 0.10
    target = json.loads((tmp_path / "plan.json").read_text())["partitions"]
    after = {p: r for p, r in HOT.items()} | {e["partition"]: e["replicas"] for e in target if e["topic"] == hot}
    hot_per_broker = Counter(b for r in after.values() for b in r)
    assert sorted(hot_per_broker.values()) == [2, 2, 2], hot_per_broker  # the hot topic on every broker
    assert report["rack_violations"][1] == 0


def test_the_reassign_page_measures_write_rates_and_shows_bytes_in_per_broker(healthy: RealKafka, tmp_path,
                                                                               monkeypatch):
    import streamlit as st

    from tests.dashboard.test_dashboard_apptest import app, texts, write_config

    kafka = healthy
    hot = f"hotpage-{uuid.uuid4().hex[:6]}"
    create_topic(kafka, hot, HOT)
    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}},
                 role="operator")
    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "keel.sqlite"))
    st.cache_resource.clear()
    stop = threading.Event()
    thread = threading.Thread(target=_produce, args=(kafka.bootstrap, hot, len(HOT), HOT_RATE, stop), daemon=True)
    thread.start()
    try:
        at = app().run()
        at.switch_page("reassign/page.py").run()
        assert not at.exception, at.exception
        assert "Without write rates" in texts(at.caption)
        at.number_input(key="ra_rates_seconds").set_value(3).run()
        at.button(key="ra_rates_measure").click().run(timeout=60)
        assert not at.exception, at.exception
        shown = texts(at.caption)
        assert "Write rates:" in shown and "measured over 3 s" in shown, shown
        assert "Write rate per broker: max deviation from target" in shown, shown
    finally:
        stop.set()
        thread.join(timeout=15)
        st.cache_resource.clear()
