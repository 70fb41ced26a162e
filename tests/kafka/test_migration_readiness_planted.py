"""Issue 27 item 2: the readiness items that need a broker of their own, planted in a REAL ZooKeeper-mode cluster
of two brokers (its own chroot; the shared `kafka` cluster is not touched), read through
`python -m core migration --zk ... --bootstrap-server ... --json`:

- broker 1 runs Kafka 3.8.1 (scripts/kafka.sh fetch with KAFKA_VERSION=3.8.1; `make kafka-fetch` fetches it):
  a broker left behind by a rolling upgrade, told from 3.9 by its own ApiVersions answer (Fetch v17 is 3.9's);
- broker 1001 runs Kafka 3.9.1 started WITHOUT broker.id: Kafka generates reserved.broker.max.id (1000) + 1;
  it also runs with inter.broker.protocol.version=3.8 (the rolling upgrade's state before the IBP bump), and one
  of its two log.dirs fails while it runs (replaced by a regular file: the next high-watermark checkpoint write
  fails, Kafka marks the directory offline, DescribeLogDirs answers KAFKA_STORAGE_ERROR for it).

Each problem fails its check with the broker named and the fix; the checks nothing was planted for stay ok, and
broker 1001's IBP 3.8 does not make its version read as 3.8. The healthy side (every check ok on 3.9.1 brokers)
is tests/kafka/test_migration_readiness_real.py's, on the shared cluster.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import time
import uuid

import pytest

from core.cli import main
from sandbox.processes import kafka as kafka_runner
from tests.kafka.realkafka import eventually, kafka_version, needs_kafka

pytestmark = needs_kafka("3.9", "a 3.9 broker beside an older one, as Kafka 3.9's migration requires")

OLD = "3.8.1"  # the release before 3.9
OLD_ID, GENERATED = 1, 1001  # 1001: the first id Kafka generates (reserved.broker.max.id 1000 + /brokers/seqid 1)
TOPIC = "planted"


def _fetched(version: str) -> None:
    try:
        kafka_runner.lib_dir(version)
    except kafka_runner.KafkaNotFetchedError:
        kafka_runner.fetch(version)  # a failed fetch is an ERROR of the test, never a skip


@pytest.fixture(scope="module")
def planted(zk_server: str, tmp_path_factory: pytest.TempPathFactory):
    """The two brokers, started in parallel; stopped after the module."""
    version = kafka_version()
    for v in (version, OLD):
        _fetched(v)
    base = tmp_path_factory.mktemp("planted")
    connect = f"{zk_server}/planted-{uuid.uuid4().hex[:8]}"
    cluster = kafka_runner.KafkaCluster.create(base / "cluster", connect, brokers=2, racks=0, detach=False,
                                               version=version, heap="256m")
    old, new = cluster.brokers
    old.id, old.version = OLD_ID, OLD
    new.id = GENERATED
    new.overrides = {"broker.id": None, "inter.broker.protocol.version": "3.8",
                     # the failed directory is found at the next checkpoint write: soon, not in 5 s
                     "replica.high.watermark.checkpoint.interval.ms": "300"}
    started = time.monotonic()
    try:
        cluster.start(timeout=120)
        print(f"\nplanted readiness cluster (Kafka {OLD} + {version}) up in {time.monotonic() - started:.1f} s",
              file=sys.stderr)
        yield cluster, base / "keel.sqlite"
    finally:
        cluster.stop()


def readiness(cluster: kafka_runner.KafkaCluster, store) -> dict:
    """The CLI's readiness, bootstrapped from the 3.8.1 broker alone (an operator gives one address; the client then
    knows the other broker from the metadata)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["migration", "--zk", cluster.zk_connect, "--bootstrap-server", cluster.broker(OLD_ID).endpoint,
                     "--store", str(store), "--controller-ids", "3000", "--json"])
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    return {c["key"]: c for c in doc["readiness"]} | {"_doc": doc}


def fail_log_dir(cluster: kafka_runner.KafkaCluster, broker: int):
    """A partition in each of the broker's two log.dirs (RF 1, on it alone), then the second directory replaced by a
    regular file while the broker runs: a disk gone. Returns the failed directory."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [broker], 1: [broker]})])
    finally:
        admin.close()
    dirs = cluster.log_dirs(broker)

    def placed() -> None:  # LogManager puts a new partition in the directory with the fewest
        assert all(any(p.name.startswith(f"{TOPIC}-") for p in d.iterdir()) for d in dirs), dirs
    eventually(placed, timeout=20)
    failed = dirs[1]
    shutil.rmtree(failed)
    failed.write_text("a failed disk\n")
    return failed


def test_planted_broker_problems_fail_their_checks(planted):
    cluster, store = planted
    assert sorted(cluster.registered()) == [OLD_ID, GENERATED]  # Kafka generated 1001 for the broker without one
    failed = fail_log_dir(cluster, GENERATED)

    def offline() -> dict:
        r = readiness(cluster, store)
        assert r["log-dirs"]["verdict"] == "fail", r["log-dirs"]
        return r
    r = eventually(offline, timeout=30, interval=0.5)

    logs = r["log-dirs"]
    assert f"broker {GENERATED} {failed}:" in logs["detail"] and str(cluster.log_dirs(GENERATED)[0]) not in \
        logs["detail"] and "broker 1 " not in logs["detail"], logs
    assert "Repair or replace the failed disk" in logs["fix"]

    versions = r["versions"]
    # only the 3.8.1 broker: the 3.9.1 one (IBP 3.8 or not) answers ApiVersions as 3.9, though the client
    # bootstrapped from the 3.8.1 one (kafka-python caps its connections at that broker's version)
    assert versions["verdict"] == "fail" and versions["detail"] == f"Not on 3.9 (as ApiVersions tells): {OLD_ID}: " \
        "3.8.", versions
    assert "Upgrade every broker to Kafka 3.9" in versions["fix"]

    ibp = r["ibp"]
    assert ibp["verdict"] == "fail" and ibp["detail"] == f"{OLD_ID}: 3.8-IV0; {GENERATED}: 3.8.", ibp
    # (3.8.1's own default, 3.8-IV0, is below 3.9 too)
    assert "inter.broker.protocol.version=3.9" in ibp["fix"]

    reserved = r["reserved-ids"]
    assert reserved["verdict"] == "fail" and reserved["detail"] == f"Broker id(s) {GENERATED} > 1000 (a generated " \
        "broker.id).", reserved
    assert "Set broker.id explicitly" in reserved["fix"]

    for key in ("controller-ids", "migration-node", "reassignment", "deletion"):
        assert r[key]["verdict"] == "ok", r[key]
    assert r["_doc"]["ready"] is False
