"""`make run KAFKA=real` (issue 14, item 3): the demo on REAL brokers. ZooKeeper, three Kafka brokers in the chroot
/keel-real, the demo topics created through Keel and filled with data, broker 3 stopped, and the dashboard pointed at
them through a generated keel.toml (cluster `real`, with the bootstrap servers); no controller emulator. Ctrl-C
stops everything, the brokers by PID included. The brokers are the Kafka version this run of tests/kafka is about
(KAFKA_VERSION=<that version> make run KAFKA=real).
"""

from __future__ import annotations

import json
import sys
import time

from sandbox.processes.common import pid_alive
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession
from tests.kafka.realkafka import kafka_version
from tests.support.make_run import DEMO_TOPICS as TOPICS
from tests.support.make_run import listening, make_run
from tests.support.sandbox_helpers import wait_until


def test_make_run_kafka_real_shows_real_brokers_and_leaves_nothing_behind(tmp_path):
    from core.policy.config import load_config
    from core.kafka.admin import KafkaAdmin

    # the version this run of tests/kafka is about (make test-kafka-matrix)
    with make_run(tmp_path, "real", kafka_version(), "kafka-cluster") as run:
        run_dir, zk_port = run.run_dir, run.zk_port
        cluster_dir = run_dir / "kafka-cluster"
        run.wait_for_dashboard()
        print(f"\nmake run KAFKA=real: dashboard up in {time.monotonic() - run.started:.1f} s", file=sys.stderr)

        # three real brokers in /keel-real, broker 3 stopped; no controller emulator
        state = json.loads((cluster_dir / "cluster.json").read_text())
        assert state["zk_connect"] == f"127.0.0.1:{zk_port}/keel-real"
        pids = [b["pid"] for b in state["brokers"] if b["pid"]]
        assert [b["id"] for b in state["brokers"] if b["pid"]] == [1, 2] and all(pid_alive(p) for p in pids)
        assert not (run_dir / "controller.pid").exists()
        with ZkSession.open(f"127.0.0.1:{zk_port}/keel-real") as zk:
            assert sorted(zk.children("/brokers/ids")) == ["1", "2"]
            snap = read_snapshot(zk)
        assert {b.id: b.alive for b in snap.brokers} == {1: True, 2: True, 3: False}
        assert {t.name: len(t.partitions) for t in snap.topics if t.name in TOPICS} == TOPICS
        assert snap.topic("payments").config == {"min.insync.replicas": "2"}

        # the dashboard's config: one cluster, `real`, with the bootstrap servers; the demo topics hold data
        config = load_config(run_dir / "keel.toml", env={})
        assert list(config.clusters) == ["real"]
        real = config.clusters["real"]
        assert real.zk == f"127.0.0.1:{zk_port}/keel-real"
        bootstrap = ",".join(f"127.0.0.1:{b['port']}" for b in state["brokers"])
        assert real.bootstrap == bootstrap
        with KafkaAdmin(real.bootstrap) as admin:
            sizes = admin.partition_sizes()
        for topic in TOPICS:
            assert sum(v for (t, _), v in sizes.items() if t == topic) > 0, f"{topic} holds no data"

        run.ctrl_c()
        wait_until(lambda: not any(pid_alive(p) for p in pids), 45, message="the Kafka brokers to stop")
        wait_until(lambda: not listening(zk_port), 30, message="ZooKeeper to stop")
        wait_until(lambda: not (run_dir / "kafka.started-by-run").exists(), 30, message="kafka.started-by-run to go")
        wait_until(lambda: not (run_dir / "zk.started-by-run").exists(), 30, message="zk.started-by-run to go")
        assert not any(listening(b["port"]) for b in state["brokers"])
        print(f"make run KAFKA=real: up and down in {time.monotonic() - run.started:.1f} s", file=sys.stderr)
