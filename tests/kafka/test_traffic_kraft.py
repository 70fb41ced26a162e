"""Issue 28 item 5 on a KRaft cluster: producers write at known rates, and `plan --bootstrap-server ...
--sample-rates 10:2` (describeLogDirs through the Admin API, no ZooKeeper) measures each broker's write rate within
20 % of the true rate (every replica writes what its leader takes).

On the newest KRaft version only: the sampler sends the same request (DescribeLogDirs, the version kafka-python and
the broker agree on) to 3.9.1 and 4.x, and Kafka 4's narrower protocol range (KIP-896) is the one worth a check;
3.9.1 is covered in ZooKeeper mode by test_traffic_real.py. One 10 s sample window."""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout

import pytest

from core.cli import main
from core.kafka.admin import KafkaAdmin
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import eventually, kraft_versions
from tests.kafka.test_traffic_real import _produce

# Distinct true rates per broker: A writes 50 kB/s into each of its 3 partitions, B 30 kB/s into its one.
A_RATE, A = 150_000, {0: [1, 2], 1: [1, 3], 2: [2, 1]}
B_RATE, B = 30_000, {0: [3]}
TRUE = {1: 150_000, 2: 100_000, 3: 80_000}
SAMPLE_SECONDS = 10


def _newest(versions: tuple[str, ...]) -> str:
    return max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


def _create(bootstrap: str, topics: dict[str, dict[int, list[int]]]) -> None:
    from kafka.admin import NewTopic

    with KafkaAdmin(bootstrap, timeout=20) as admin:
        admin._admin.create_topics([NewTopic(t, replica_assignments=a) for t, a in topics.items()])

        def led() -> None:  # every partition has its leader before the producers start
            for t in admin.topic_partitions(list(topics)):
                assert all(p["leader_id"] in p["replica_nodes"] for p in t["partitions"]), t
                assert len(t["partitions"]) == len(topics[t["name"]])
        eventually(led, timeout=30, interval=0.5)


@pytest.mark.parametrize("kraft", [_newest(kraft_versions())], indirect=True)  # the fixture, newest version only
def test_sampled_write_rates_per_broker_on_kraft(kraft: KraftCluster, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    a, b = f"rate-a-{suffix}", f"rate-b-{suffix}"
    _create(kraft.bootstrap_servers, {a: A, b: B})
    stop = threading.Event()
    threads = [threading.Thread(target=_produce, args=(kraft.bootstrap_servers, t, len(parts), rate, stop),
                                daemon=True) for t, parts, rate in ((a, A, A_RATE), (b, B, B_RATE))]
    for t in threads:
        t.start()
    try:
        time.sleep(2)  # producers connected and at their pace before the first sample
        topics = tmp_path / "topics.json"
        topics.write_text(json.dumps({"version": 1, "topics": [{"topic": a}, {"topic": b}]}))
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["plan", "--bootstrap-server", kraft.bootstrap_servers, "--sample-rates",
                         f"{SAMPLE_SECONDS}:2", "--rates-output", str(tmp_path / "rates.json"),
                         "--topics-to-move-json-file", str(topics), "-o", str(tmp_path / "plan.json"),
                         "--report", str(tmp_path / "report.json")])
        took = time.monotonic() - started
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=15)
    assert code == 0, err.getvalue()
    assert SAMPLE_SECONDS <= took < SAMPLE_SECONDS + 15, took

    measured = {(r["topic"], r["partition"]): r["bytes_per_s"]
                for r in json.loads((tmp_path / "rates.json").read_text())["rates"]}
    per_broker = Counter()
    for topic, assignment in ((a, A), (b, B)):
        for p, replicas in assignment.items():
            for broker in replicas:
                per_broker[broker] += measured[(topic, p)]
    for broker, rate in TRUE.items():
        assert abs(per_broker[broker] - rate) <= 0.2 * rate, (broker, per_broker[broker], rate, measured)
    # the plan's report shows the same rates, before the plan, per broker
    traffic = json.loads((tmp_path / "report.json").read_text())["report"]["traffic"]
    before = dict(zip(traffic["brokers"], traffic["before"]))
    assert all(abs(before[broker] - per_broker[broker]) <= 1 for broker in TRUE), (before, per_broker)
