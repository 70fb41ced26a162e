"""`make run KAFKA=kraft` (issue 26): the demo on a REAL KRaft cluster, no ZooKeeper. Three combined broker +
controller nodes (racks rack-a..c) of the newest Kafka the `kraft` fixture runs (4.4.0; KEEL_KRAFT_VERSIONS), the
demo topics of `make run KAFKA=real` created through the Admin API and filled with data, node 3 stopped, and the
dashboard on a generated keel.toml naming the cluster by `bootstrap` alone: its Overview says KRaft and shows the
controller quorum. Ctrl-C stops everything by PID and frees every port.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import read_snapshot
from core.policy.config import load_config
from sandbox.processes.common import pid_alive
from tests.kafka.realkafka import kraft_versions
from tests.support.browser import chromium
from tests.support.make_run import DEMO_TOPICS, listening, make_run
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.kraft, pytest.mark.browser]


def _newest(versions: tuple[str, ...]) -> str:
    return max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


def test_make_run_kafka_kraft_shows_a_kraft_cluster_and_leaves_nothing_behind(tmp_path):
    from selenium.webdriver.common.by import By

    version = _newest(kraft_versions())
    with make_run(tmp_path, "kraft", version, "kraft-cluster") as run:
        run_dir = run.run_dir
        run.wait_for_dashboard(timeout=240)
        print(f"\nmake run KAFKA=kraft ({version}): dashboard up in {time.monotonic() - run.started:.1f} s",
              file=sys.stderr)

        # three KRaft nodes of that version with racks, node 3 stopped; no ZooKeeper, no controller emulator
        state = json.loads((run_dir / "kraft-cluster" / "cluster.json").read_text())
        assert state["mode"] == "kraft" and state["version"] == version
        assert [(b["id"], b["rack"]) for b in state["brokers"]] == [(1, "rack-a"), (2, "rack-b"), (3, "rack-c")]
        pids = [b["pid"] for b in state["brokers"] if b["pid"]]
        assert [b["id"] for b in state["brokers"] if b["pid"]] == [1, 2] and all(pid_alive(p) for p in pids)
        ports = [p for b in state["brokers"] for p in (b["port"], b["controller_port"])]
        assert not listening(run.zk_port) and not (run_dir / "zk").exists()
        assert not (run_dir / "controller.pid").exists()

        # the dashboard's config: one cluster, `kraft`, by its bootstrap servers alone
        config = load_config(run_dir / "keel.toml", env={})
        assert list(config.clusters) == ["kraft"]
        kraft = config.clusters["kraft"]
        assert kraft.zk is None
        assert kraft.bootstrap == ",".join(f"127.0.0.1:{b['port']}" for b in state["brokers"])

        # the demo topics, read as Keel reads a KRaft cluster; they hold data
        with KafkaAdmin(kraft.bootstrap, timeout=20) as admin:
            snap = read_snapshot(admin)
            sizes = admin.partition_sizes()
        assert snap.is_kraft
        assert {b.id: b.alive for b in snap.brokers} == {1: True, 2: True, 3: False}
        assert {t.name: len(t.partitions) for t in snap.topics if t.name in DEMO_TOPICS} == DEMO_TOPICS
        assert snap.topic("payments").config == {"min.insync.replicas": "2"}
        assert snap.topic("inventory").config == {"retention.ms": "604800000"}
        assert sorted(v.id for v in snap.quorum.voters) == [1, 2, 3] and snap.quorum.leader in (1, 2)
        for topic in DEMO_TOPICS:
            assert sum(v for (t, _), v in sizes.items() if t == topic) > 0, f"{topic} holds no data"

        # the Overview, in a browser, as `make run` serves it: mode KRaft, the controller quorum, a node down
        with chromium(1500, 1900) as driver:
            driver.get(f"http://127.0.0.1:{run.http_port}/")

            def main_text() -> str:
                found = driver.find_elements(By.CSS_SELECTOR, "[data-testid=stMain]")
                return found[0].text if found else ""

            wait_until(lambda: "Controller quorum" in main_text() and "2 / 3" in main_text(), 90,
                       message="the Overview with the controller quorum")
            shown = main_text()
        assert "Mode KRaft (no ZooKeeper" in shown
        assert "Active controller" in shown and "3 voter(s)" in shown
        assert "ZooKeeper unreachable" not in shown

        run.ctrl_c()
        wait_until(lambda: not any(pid_alive(p) for p in pids), 45, message="the KRaft nodes to stop")
        wait_until(lambda: not (run_dir / "kraft.started-by-run").exists(), 30, message="kraft.started-by-run to go")
        assert not any(listening(p) for p in ports)
        assert not (run_dir / "zk.started-by-run").exists()
        print(f"make run KAFKA=kraft: up and down in {time.monotonic() - run.started:.1f} s", file=sys.stderr)
