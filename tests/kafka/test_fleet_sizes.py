"""`fleet collect` sizes each replica from the cluster's `bootstrap` in keel.toml (issue 31, item 3): with no
--sizes file, the stored size_bytes are what the brokers report (Kafka's own kafka-log-dirs --describe)."""

from __future__ import annotations

import uuid

from core.fleet.export import parse_log_dirs
from core.fleet.store import read_store
from tests.kafka.realkafka import RealKafka, create_topic, eventually, produce, tool_class

SIZES = {0: 300_000, 1: 600_000, 2: 900_000}


def _kafka_log_dirs(kafka: RealKafka) -> dict:
    main = tool_class(kafka.cluster.version, "org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
    proc = kafka.cluster.tool(main, "--bootstrap-server", kafka.bootstrap, "--describe")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return parse_log_dirs(proc.stdout)


def test_collect_stores_the_sizes_the_brokers_report(healthy: RealKafka, tmp_path):
    from core.cli import main

    topic = f"fleet-sizes-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    produce(healthy, topic, SIZES)
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.real]\nzk = "{healthy.zk_connect}"\nbootstrap = "{healthy.bootstrap}"\n')
    store = tmp_path / "store"

    def same() -> dict:
        assert main(["fleet", "collect", "--config", str(config), "--out", str(store)]) == 0
        replicas, _ = read_store(store)
        stored = {(int(r.broker), str(r.topic), int(r.partition)): r.size_bytes for r in replicas.itertuples()}
        theirs = _kafka_log_dirs(healthy)
        assert stored == {k: theirs.get(k) for k in stored}  # every replica, as Kafka's tool reports it
        return stored

    stored = eventually(same, timeout=30, interval=1)  # a follower may still be appending the last batch
    ours = {(b, p): s for (b, t, p), s in stored.items() if t == topic}
    assert sorted(ours) == [(1, 0), (1, 2), (2, 0), (2, 1), (3, 1), (3, 2)]
    assert all(s >= SIZES[p] for (_, p), s in ours.items())


def test_unreachable_bootstrap_fails_that_cluster_only(healthy: RealKafka, tmp_path, capsys):
    from core.cli import main
    from tests.support.spark_helpers import free_port

    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.real]\nzk = "{healthy.zk_connect}"\n\n'
                      f'[clusters.nobrokers]\nzk = "{healthy.zk_connect}"\nbootstrap = "127.0.0.1:{free_port()}"\n'
                      'connect_timeout = 1.0\n')
    store = tmp_path / "store"
    assert main(["fleet", "collect", "--config", str(config), "--out", str(store)]) == 1
    out, _ = capsys.readouterr()
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["nobrokers"].startswith("FAILED: ") and "FAILED" not in lines["real"]
    replicas, _ = read_store(store)
    assert set(replicas.cluster) == {"real"}
