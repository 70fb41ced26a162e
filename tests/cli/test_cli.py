"""`python -m core` commands against a real ZooKeeper (in-process main() plus one real subprocess)."""

import json
import subprocess
import sys

import pytest

from core.cli import main
from core.model import ClusterSnapshot
from core.zk.session import ZkSession
from tests.support.kafka_tree import write_cluster, write_topic


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, states={0: (1, [1, 2, 3]), 1: (3, [3])},
                    config={"min.insync.replicas": "2"})
        write_topic(s, "logs", {0: [3, 4]}, states={0: (4, [4])}, topic_id=None)  # 4 is dead
    return zk_connect


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_describe_prints_like_kafka_topics(cluster, capsys):
    code, out, _ = run(capsys, "describe", "--zk", cluster, "--topic", "orders")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("Topic: orders\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 2\tReplicationFactor: 3\t"
                        "Configs: min.insync.replicas=2")
    assert lines[1] == "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3"
    assert lines[2] == "\tTopic: orders\tPartition: 1\tLeader: 3\tReplicas: 2,3,1\tIsr: 3"


def test_describe_health_flags_print_partition_lines_only(cluster, capsys):
    code, out, _ = run(capsys, "describe", "--zk", cluster, "--under-replicated-partitions")
    assert code == 0
    assert out.splitlines() == ["\tTopic: logs\tPartition: 0\tLeader: 4\tReplicas: 3,4\tIsr: 4",
                                "\tTopic: orders\tPartition: 1\tLeader: 3\tReplicas: 2,3,1\tIsr: 3"]
    _, out, _ = run(capsys, "describe", "--zk", cluster, "--unavailable-partitions")
    assert [line.split("\t")[1:3] for line in out.splitlines()] == [["Topic: logs", "Partition: 0"]]
    _, out, _ = run(capsys, "describe", "--zk", cluster, "--under-min-isr-partitions")
    assert [line.split("\t")[1:3] for line in out.splitlines()] == [["Topic: logs", "Partition: 0"],
                                                              ["Topic: orders", "Partition: 1"]]


def test_describe_json_holds_only_matching_partitions(cluster, capsys):
    code, out, _ = run(capsys, "describe", "--zk", cluster, "--under-min-isr-partitions", "--topic", "ord.*", "--json")
    assert code == 0
    snap = ClusterSnapshot.from_json(out)
    assert [(t.name, [p.partition for p in t.partitions]) for t in snap.topics] == [("orders", [1])]
    assert [b.id for b in snap.brokers] == [1, 2, 3, 4]


def test_describe_unknown_topic(cluster, capsys):
    code, _, err = run(capsys, "describe", "--zk", cluster, "--topic", "nope")
    assert code == 1 and "Topic 'nope' does not exist as expected" in err


def test_snapshot_writes_the_full_json(cluster, tmp_path, capsys):
    out = tmp_path / "snap.json"
    code, _, err = run(capsys, "snapshot", "--zk", cluster, "-o", str(out), "--cluster", "prod")
    assert code == 0 and "2 topics" in err
    snap = ClusterSnapshot.from_json(out.read_text())
    assert snap.cluster == "prod" and snap.partition_count == 3 and snap.controller.broker_id == 1
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("connect,needle", [
    ("zk1:notaport", "invalid ZooKeeper host"),
    ("127.0.0.1:1", "could not connect to ZooKeeper at 127.0.0.1:1 within 1 s"),
])
def test_bad_connect_exits_1_with_a_message(connect, needle, capsys):
    code, _, err = run(capsys, "describe", "--zk", connect, "--connect-timeout", "1")
    assert code == 1 and needle in err


def test_assign_prints_kafka_json(capsys):
    code, out, _ = run(capsys, "assign", "--brokers", "0,1,2,3,4", "--partitions", "10", "--replication-factor", "3",
                       "--fixed-start-index", "0")
    assert code == 0
    assert json.loads(out)["partitions"] == {"0": [0, 1, 2], "1": [1, 2, 3], "2": [2, 3, 4], "3": [3, 4, 0],
                                             "4": [4, 0, 1], "5": [0, 2, 3], "6": [1, 3, 4], "7": [2, 4, 0],
                                             "8": [3, 0, 1], "9": [4, 1, 2]}
    code, _, err = run(capsys, "assign", "--brokers", "0:r1,1", "--partitions", "1", "--replication-factor", "1")
    assert code == 1 and "Not all brokers have rack information" in err


def test_python_dash_m_core_runs(cluster):
    proc = subprocess.run([sys.executable, "-m", "core", "describe", "--zk", cluster, "--topic", "logs"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Topic: logs\tPartitionCount: 1\tReplicationFactor: 2" in proc.stdout
    usage = subprocess.run([sys.executable, "-m", "core", "describe"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "--zk" in usage.stderr
