"""`fleet collect` of a KRaft cluster, which keel.toml names by `bootstrap` only (issue 31, item 3): read through the
brokers' Admin API as the dashboard reads it, locally and as a Spark task (`--spark local[2]`), into the same rows:
the assignment, leaders, ISR and racks the brokers report, and each replica's size as Kafka's own
kafka-log-dirs --describe prints it. A bootstrap-only cluster whose brokers do not answer fails alone."""

from __future__ import annotations

import subprocess
import sys
import types
import uuid

import pytest

from core.cli import main
from core.fleet.export import parse_log_dirs
from core.fleet.store import read_store
from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import read_snapshot
from sandbox.processes.kraft import KraftCluster
from tests.fleet.test_fleet import assert_frames_equal
from tests.kafka.realkafka import eventually, produce, tool_class
from tests.kafka.test_traffic_kraft import _create
from tests.support.spark_helpers import free_port, spark_env

ASSIGNMENT = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
SIZES = {0: 300_000, 1: 600_000, 2: 900_000}


def _kafka_log_dirs(kraft: KraftCluster) -> dict:
    main_class = tool_class(kraft.version, "org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
    proc = kraft.tool(main_class, "--bootstrap-server", kraft.bootstrap_servers, "--describe")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return parse_log_dirs(proc.stdout)


@pytest.mark.spark  # its last part runs the collection on Spark (local[2], in a child process)
def test_collect_reads_a_bootstrap_only_cluster_through_its_brokers(kraft: KraftCluster, tmp_path, capsys):
    topic = f"fleet-kraft-{uuid.uuid4().hex[:6]}"
    _create(kraft.bootstrap_servers, {topic: ASSIGNMENT})
    produce(types.SimpleNamespace(bootstrap=kraft.bootstrap_servers), topic, SIZES)
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.kraft]\nbootstrap = "{kraft.bootstrap_servers}"\n\n'
                      f'[clusters.gone]\nbootstrap = "127.0.0.1:{free_port()}"\nconnect_timeout = 1.0\n')
    store = tmp_path / "store"

    def collected() -> tuple:
        assert main(["fleet", "collect", "--config", str(config), "--out", str(store)]) == 1
        out = capsys.readouterr().out
        replicas, brokers = read_store(store)
        stored = {(int(r.broker), str(r.topic), int(r.partition)): r.size_bytes for r in replicas.itertuples()}
        theirs = _kafka_log_dirs(kraft)
        assert stored == {k: theirs.get(k) for k in stored}  # every replica sized as Kafka's tool reports it
        return out, replicas, brokers

    out, replicas, brokers = eventually(collected, timeout=60, interval=1)  # a follower may still be appending
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["gone"].startswith("FAILED: ") and "FAILED" not in lines["kraft"], out
    assert set(replicas.cluster) == {"kraft"}

    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
        snap = read_snapshot(admin)
    ours = replicas[replicas.topic == topic].sort_values(["partition", "position"])
    assert [(int(r.partition), int(r.broker)) for r in ours.itertuples()] == \
        [(p, b) for p, reps in ASSIGNMENT.items() for b in reps]
    for r in ours.itertuples():
        part = snap.topic(topic).partitions[int(r.partition)]
        assert r.is_leader == (int(r.broker) == part.leader) and r.in_isr == (int(r.broker) in part.isr)
        assert r.size_bytes >= SIZES[int(r.partition)]
    assert {int(b.broker): b.rack for b in brokers.itertuples()} == {1: "rack-a", 2: "rack-b", 3: "rack-c"}
    assert brokers.alive.all() and len(replicas) == sum(len(p.replicas) for t in snap.topics for p in t.partitions)

    # the same collection as a Spark task: the same rows (captured_at aside)
    on_spark = tmp_path / "spark-store"
    run = subprocess.run([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config), "--out",
                          str(on_spark), "--cluster", "kraft", "--spark", "local[2]"], cwd=tmp_path,
                         env=spark_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    for which, keys in ((0, ["cluster", "topic", "partition", "position"]), (1, ["cluster", "broker"])):
        a = read_store(store)[which].drop(columns=["captured_at"]).astype({"cluster": str})
        b = read_store(on_spark)[which].drop(columns=["captured_at"]).astype({"cluster": str})
        if which == 0:  # sizes grow while the followers catch up and the logs roll: compare them above, not here
            a, b = a.drop(columns=["size_bytes"]), b.drop(columns=["size_bytes"])
        assert_frames_equal(b, a, keys, "store")
