"""Partition sizes and log dirs from the brokers (issue 15, item 3): what Keel reads through the Admin API
(core.kafka.admin, describeLogDirs) is what Kafka's own `kafka-log-dirs --describe` (LogDirsCommand) prints, and
that output imports through `plan --sizes` to the very plan `plan --bootstrap-server` makes.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from core.balance.sizes import parse_log_dirs
from tests.kafka.realkafka import RealKafka, create_topic, eventually, keel_zk, keel_zk_ok, produce, tool_class

SIZES = {0: 300_000, 1: 600_000, 2: 900_000}


def _log_dirs_command(kafka: RealKafka) -> str:
    main = tool_class(kafka.cluster.version, "org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
    proc = kafka.cluster.tool(main, "--bootstrap-server", kafka.bootstrap, "--describe")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _normalised(doc: dict) -> dict:
    """Kafka prints brokers and directories in the order its describeLogDirs result map has: sort both sides."""
    return {b["broker"]: {d["logDir"]: (d["error"], sorted(json.dumps(p, sort_keys=True) for p in d["partitions"]))
                          for d in b["logDirs"]} for b in doc["brokers"]}


def _document(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


def test_sizes_read_through_the_admin_api_equal_kafka_log_dirs_describe(healthy: RealKafka):
    topic = f"sizes-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    produce(healthy, topic, SIZES)

    from core.kafka.admin import KafkaAdmin  # here, not at collection: kafka-python warns when it loads

    def same() -> tuple[str, object]:
        theirs = _log_dirs_command(healthy)
        with KafkaAdmin(healthy.bootstrap) as admin:
            ours = admin.log_dirs()
        assert _normalised(ours.to_document()) == _normalised(_document(theirs))
        return theirs, ours

    theirs, ours = eventually(same, timeout=20, interval=1)  # a follower may still be appending the last batch
    assert ours.sizes() == parse_log_dirs(theirs)
    sizes = {p: s for (t, p), s in ours.sizes().items() if t == topic}
    assert sorted(sizes) == [0, 1, 2] and all(sizes[p] >= SIZES[p] for p in sizes)

    # per broker and log dir: the directories are the brokers' log.dirs, each replica in one of them, on disk
    by_broker = ours.by_broker()
    assert set(by_broker) == set(healthy.cluster.broker_ids)
    for b in healthy.cluster.broker_ids:
        assert sorted(by_broker[b]) == sorted(str(d) for d in healthy.cluster.log_dirs(b))
        for path, replicas in by_broker[b].items():
            for t, p in (k for k in replicas if k[0] == topic):
                assert (Path(path) / f"{t}-{p}").is_dir()
    placed = sorted((t, p, b) for b, dirs in by_broker.items() for reps in dirs.values() for t, p in reps if t == topic)
    assert placed == [(topic, 0, 1), (topic, 0, 2), (topic, 1, 2), (topic, 1, 3), (topic, 2, 1), (topic, 2, 3)]
    assert ours.broker_bytes() == {b: sum(ours.dir_bytes()[(b, d)] for d in by_broker[b]) for b in by_broker}


def test_plan_with_bootstrap_reads_the_sizes_the_log_dirs_file_gives(healthy: RealKafka, tmp_path):
    topic = f"plan-sizes-{uuid.uuid4().hex[:6]}"
    create_topic(healthy, topic, {0: [1, 3], 1: [2, 3], 2: [3, 1]})
    produce(healthy, topic, SIZES)
    move = tmp_path / "topics.json"
    move.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    common = ["--strategy", "balanced", "--topics-to-move-json-file", str(move), "--exclude-brokers", "3"]

    def both() -> tuple[dict, dict]:
        logdirs = tmp_path / "logdirs.txt"
        logdirs.write_text(_log_dirs_command(healthy))  # the tool's whole output, progress lines included
        from_file, from_kafka = tmp_path / "file.json", tmp_path / "kafka.json"
        keel_zk_ok(healthy, "plan", *common, "--sizes", str(logdirs), "-o", str(tmp_path / "p1.json"),
                   "--report", str(from_file))
        started = time.monotonic()
        keel_zk_ok(healthy, "plan", *common, "--bootstrap-server", healthy.bootstrap, "-o", str(tmp_path / "p2.json"),
                   "--report", str(from_kafka))
        assert time.monotonic() - started < 10
        a, b = (json.loads(p.read_text()) for p in (from_file, from_kafka))
        assert a == b
        return a, b

    report, _ = eventually(both, timeout=20, interval=1)
    assert (tmp_path / "p1.json").read_text() == (tmp_path / "p2.json").read_text()
    moved = report["report"]["bytes_moved"]
    # draining broker 3 moves its replica of each partition: the bytes moved are those partitions' sizes
    assert moved >= sum(SIZES.values())
    assert "warning" not in keel_zk(healthy, "plan", *common, "--bootstrap-server", healthy.bootstrap, "-o",
                                    str(tmp_path / "p3.json"))[2]


def test_plan_refuses_sizes_from_both_and_names_an_unreachable_bootstrap(healthy: RealKafka, tmp_path):
    logdirs = tmp_path / "logdirs.json"
    logdirs.write_text('{"version":1,"brokers":[]}')
    code, _, err = keel_zk(healthy, "plan", "--sizes", str(logdirs), "--bootstrap-server", healthy.bootstrap,
                           "-o", str(tmp_path / "p.json"))
    assert code == 1 and "not both" in err
    started = time.monotonic()
    code, _, err = keel_zk(healthy, "plan", "--bootstrap-server", "127.0.0.1:1", "--kafka-timeout", "2",
                           "-o", str(tmp_path / "p.json"))
    assert code == 1 and "no Kafka broker of 127.0.0.1:1 answered within 2 s" in err, err
    assert time.monotonic() - started < 10
    code, _, err = keel_zk(healthy, "plan", "--bootstrap-server", "broker-without-port", "-o", str(tmp_path / "p.json"))
    assert code == 1 and "--bootstrap-server: 'broker-without-port' is not host:port" in err, err
    assert not (tmp_path / "p.json").exists()


def test_bootstrap_in_keel_toml_is_validated_and_named():
    import pytest

    from core.policy.config import ConfigError, parse_config

    body = '[clusters.a]\nzk = "zk:2181/kafka"\n'
    assert parse_config(body).clusters["a"].bootstrap is None
    assert parse_config(body + 'bootstrap = "k1:9092,[::1]:9093"\n').clusters["a"].bootstrap == "k1:9092,[::1]:9093"
    for bad, problem in (('""', "must be a non-empty list"), ('"k1"', "'k1' is not host:port"),
                         ('"k1:9092, k2:9092"', "must not contain whitespace"), ('"k1:0"', "'k1:0' is not host:port"),
                         ("9092", "must be a non-empty list"), ('"k1:9092,k1:9092"', "lists a server twice")):
        with pytest.raises(ConfigError, match="clusters.a.bootstrap: " + problem):
            parse_config(body + f"bootstrap = {bad}\n")
