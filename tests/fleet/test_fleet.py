"""Fleet store and fleet jobs: export / collect / generate, the Spark jobs against the pandas reference (locally and
on a real standalone cluster), and every kind of bad input leaving nothing half-written."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.cli import build_parser
from core.cli import main as cli_main
from core.assignment import assign_replicas
from core.errors import SnapshotFormatError
from core.cli import fleet as commands
from core.fleet.errors import (FleetInputError, FleetOutputError, FleetSchemaError, JavaMissingError,
                               SparkMasterUnreachableError)
from core.fleet.export import export_snapshot, parse_log_dirs, snapshot_tables
from core.fleet.generate import FleetSpec, generate_fleet, placement_table
from core.fleet.outputs import read_broker_metrics, read_cluster_scores, read_manifest, read_topic_broker
from core.fleet.reference import pandas_reference
from core.fleet.schema import BROKER_SCHEMA, REPLICA_SCHEMA, check_store
from core.fleet.spark import check_java, spark_bin
from core.fleet.store import read_store
from core.health import summarize
from core.model import Broker, ClusterSnapshot, Partition, Topic
from tests.support.spark_helpers import LOCAL_MASTER, free_port, spark_env, standalone_cluster

ROOT = Path(__file__).resolve().parents[2]


# --- helpers ---------------------------------------------------------------------------------------------


def hand_snapshot() -> ClusterSnapshot:
    """5 brokers in 2 racks: 4 empty, 5 dead; a leader off its preferred replica, an offline partition, URPs, and
    two partitions whose replicas sit in one rack."""
    brokers = (Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r1"), Broker(4, "r2"), Broker(5, "r1", alive=False))
    topics = (
        Topic("a", (Partition("a", 0, (1, 2, 3), leader=1, isr=(1, 2, 3)),
                    Partition("a", 1, (2, 3, 1), leader=3, isr=(2, 3, 1)),
                    Partition("a", 2, (3, 1, 5), leader=3, isr=(3, 1)))),
        Topic("b", (Partition("b", 0, (5,), leader=-1, isr=()),
                    Partition("b", 1, (1, 3), leader=1, isr=(1, 3)))),
    )
    return ClusterSnapshot(cluster="hand", captured_at="2026-11-22T03:00:00Z", source="test", brokers=brokers,
                           topics=topics)


LOG_DIRS = """Querying brokers for log directories information
Received log directory information from brokers 1,2,3
{"version":1,"brokers":[
 {"broker":1,"logDirs":[{"logDir":"/d1","error":null,"partitions":[
   {"partition":"a-0","size":100,"offsetLag":0,"isFuture":false},
   {"partition":"a-1","size":110,"offsetLag":0,"isFuture":false},
   {"partition":"a-2","size":120,"offsetLag":0,"isFuture":false},
   {"partition":"a-2","size":999,"offsetLag":0,"isFuture":true}]}]},
 {"broker":2,"logDirs":[{"logDir":"/d1","error":null,"partitions":[
   {"partition":"a-0","size":100,"offsetLag":0,"isFuture":false},
   {"partition":"a-1","size":110,"offsetLag":0,"isFuture":false}]}]},
 {"broker":3,"logDirs":[{"logDir":"/d1","error":"KafkaStorageException","partitions":[
   {"partition":"a-0","size":100,"offsetLag":0,"isFuture":false}]}]}]}
"""


def run_cli(*argv: str) -> int:
    return cli_main(["fleet", *map(str, argv)])


def _norm(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s):
        return pd.to_datetime(s, utc=True).astype("datetime64[ns, UTC]")
    return s


def assert_frames_equal(actual: pd.DataFrame, expected: pd.DataFrame, keys: list[str], what: str) -> None:
    a = actual.sort_values(keys, ignore_index=True)
    e = expected.sort_values(keys, ignore_index=True)
    assert list(a.columns) == list(e.columns), what
    assert len(a) == len(e), f"{what}: {len(a)} rows, expected {len(e)}"
    for col in a.columns:
        av, ev = _norm(a[col]), _norm(e[col])
        if pd.api.types.is_float_dtype(av) or pd.api.types.is_float_dtype(ev):
            np.testing.assert_allclose(av.astype("float64").to_numpy(), ev.astype("float64").to_numpy(),
                                       rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=f"{what}.{col}")
        else:
            al = [None if pd.isna(v) else v for v in av.astype(object)]
            el = [None if pd.isna(v) else v for v in ev.astype(object)]
            assert al == el, f"{what}.{col} differs"


def assert_outputs_match(out: Path, ref) -> None:
    assert_frames_equal(read_broker_metrics(out), ref.broker_metrics, ["cluster", "broker"], "broker_metrics")
    assert_frames_equal(read_topic_broker(out), ref.topic_broker, ["cluster", "topic", "broker"], "topic_broker")
    assert_frames_equal(read_cluster_scores(out), ref.cluster_scores, ["cluster"], "cluster_scores")


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# --- session fixtures: one small store, one local Spark run ------------------------------------------------


@pytest.fixture(scope="session")
def fleet_store(tmp_path_factory) -> Path:
    """6 generated clusters (about 6,000 partitions, every skew), the hand-made snapshot as cluster `hand`, and a
    cluster without topics (`idle`)."""
    store = tmp_path_factory.mktemp("fleet") / "store"
    assert run_cli("generate", "--clusters", 6, "--out", store, "--seed", 3, "--partitions-total", 6000,
                   "--min-brokers", 5, "--max-brokers", 12, "--quiet") == 0
    export_snapshot(hand_snapshot(), store, sizes=parse_log_dirs(LOG_DIRS))
    idle = ClusterSnapshot(cluster="idle", captured_at="2026-11-22T04:00:00Z", source="test",
                           brokers=(Broker(1, None), Broker(2, None)), topics=())
    export_snapshot(idle, store)  # brokers, no topics: an empty replicas file
    return store


@pytest.fixture(scope="session")
def local_run(spark, fleet_store, tmp_path_factory):
    """run_jobs on the shared local session: (output dir, progress reports)."""
    out = tmp_path_factory.mktemp("fleet-out") / "metrics"
    seen = []
    from core.fleet.jobs import run_jobs

    result = run_jobs(fleet_store, out, master=LOCAL_MASTER, progress=seen.append)
    assert result.output == out.resolve()
    return out, seen, result


# --- generation ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,racks,skewed", [(3, 0, False), (5, 3, False), (7, 3, True), (12, 4, True), (13, 0, False),
                                            (20, 6, True)])
def test_placement_table_is_kafkas_assignment(n, racks, skewed):
    rng = np.random.default_rng(n)
    if racks == 0:
        brokers = [(100 + i, None) for i in range(n)]
    else:
        idx = list(range(racks)) + list(rng.choice(racks, n - racks, p=[0.6] + [0.4 / (racks - 1)] * (racks - 1))
                                         if skewed else np.arange(racks, n) % racks)
        brokers = [(100 + i, f"rack-{idx[i]}") for i in range(n)]
    for rf in range(1, min(4, n) + 1):
        table = placement_table(brokers, rf)
        kafka = assign_replicas(brokers, n * (n - 1), rf, fixed_start_index=0)
        expected = np.array([kafka[p] for p in range(n * (n - 1))]).reshape(n - 1, n, rf)
        assert (table == expected).all()


def test_generate_is_deterministic_fast_and_skewed(tmp_path):
    spec = FleetSpec(clusters=6, seed=11, partitions_total=20_000, min_brokers=6, max_brokers=40)
    started = time.monotonic()
    first = generate_fleet(spec, tmp_path / "a")
    assert time.monotonic() - started < 30
    generate_fleet(spec, tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")  # same seed, same bytes
    assert first.partitions == 20_000
    assert {s for c in first.clusters for s in c.skews} >= {"new_broker", "hot_broker", "unequal_racks",
                                                            "leader_drift", "dead_broker"}
    assert all(6 <= c.brokers <= 40 for c in first.clusters)
    check_store(tmp_path / "a")

    replicas, brokers = read_store(tmp_path / "a")
    assert len(replicas) == first.replicas
    m = pandas_reference(replicas, brokers)
    bm = m.broker_metrics
    dead = [(c.name, b) for c in first.clusters for b in c.dead]
    empty = [(c.name, b) for c in first.clusters for b in c.empty]
    assert dead and empty
    for cluster, b in dead:
        row = bm[(bm.cluster == cluster) & (bm.broker == b)].iloc[0]
        assert not row.alive and row.leaders == 0 and row.replicas > 0
    for cluster, b in empty:  # the empty brokers are there, with zero replicas and a deviation of -1
        row = bm[(bm.cluster == cluster) & (bm.broker == b)].iloc[0]
        assert row.alive and row.replicas == 0 and row.replica_dev == -1.0
    # dead brokers are in no ISR; a partition has at most one leader, and it is alive
    assert not replicas[~replicas.alive].in_isr.any()
    leaders = replicas[replicas.is_leader]
    assert leaders.alive.all()
    assert not leaders.duplicated(["cluster", "topic", "partition"]).any()
    # a replica list never repeats a broker
    assert not replicas.duplicated(["cluster", "topic", "partition", "broker"]).any()
    cs = m.cluster_scores
    assert (cs.brokers_over_leader_threshold > 0).any() and (cs.under_replicated > 0).any()
    assert (cs.rack_violations > 0).any()


def test_generate_partition_caps(tmp_path):
    res = generate_fleet(FleetSpec(clusters=4, seed=1, partitions_total=10_000, max_partitions=1_000), tmp_path)
    assert [c.partitions for c in res.clusters] == [1_000] * 4
    with pytest.raises(Exception, match="clusters must be at least 1"):
        generate_fleet(FleetSpec(clusters=0), tmp_path / "x")


# --- export / collect ---------------------------------------------------------------------------------------------


def test_snapshot_rows_and_sizes():
    replicas, brokers = snapshot_tables(hand_snapshot(), parse_log_dirs(LOG_DIRS))
    assert replicas.schema.names == REPLICA_SCHEMA.names and brokers.schema.names == BROKER_SCHEMA.names
    rows = replicas.to_pylist()
    assert len(rows) == 12
    a2 = [r for r in rows if r["topic"] == "a" and r["partition"] == 2]
    assert [(r["position"], r["broker"], r["rack"], r["alive"], r["is_leader"], r["is_preferred"], r["in_isr"],
             r["size_bytes"]) for r in a2] == [(0, 3, "r1", True, True, True, True, None),
                                               (1, 1, "r1", True, False, False, True, 120),
                                               (2, 5, "r1", False, False, False, False, None)]
    sizes = {(r["broker"], r["topic"], r["partition"]): r["size_bytes"] for r in rows}
    assert sizes[(1, "a", 0)] == 100 and sizes[(2, "a", 1)] == 110
    assert sizes[(3, "a", 0)] is None  # that log dir reported an error
    assert brokers.to_pydict()["broker"] == [1, 2, 3, 4, 5]  # broker 4 holds nothing, and is still there
    assert brokers.to_pydict()["alive"] == [True, True, True, True, False]


def test_log_dirs_errors():
    with pytest.raises(FleetInputError, match="no JSON"):
        parse_log_dirs("Querying brokers for log directories information\n")
    with pytest.raises(FleetInputError, match="not kafka-log-dirs"):
        parse_log_dirs('{"version":1,"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"x"}]}]}]}')


def test_reference_matches_kafka_definitions(tmp_path):
    snap = hand_snapshot()
    export_snapshot(snap, tmp_path, sizes=parse_log_dirs(LOG_DIRS))
    m = pandas_reference(*read_store(tmp_path))
    bm = m.broker_metrics.set_index("broker")
    for load in summarize(snap).brokers:  # core.health: the controller's own definitions
        row = bm.loc[load.broker_id]
        assert (row.replicas, row.leaders, row.preferred, row.preferred_not_leading, bool(row.over_leader_threshold),
                bool(row.alive)) == (load.replicas, load.leaders, load.preferred, load.preferred_not_leading,
                                     load.over_threshold, load.alive)
        assert (pd.isna(row.leader_imbalance_ratio) and load.imbalance_ratio is None) or \
            row.leader_imbalance_ratio == pytest.approx(load.imbalance_ratio)
    assert list(bm.replica_dev) == pytest.approx([0.6, -0.2, 0.6, -1.0, -0.2])  # alive mean 2.5
    assert list(bm.bytes) == [330, 210, 0, 0, 0]  # known sizes only; the cluster has sizes, so 0 not null
    cs = m.cluster_scores.iloc[0]
    assert (cs.brokers, cs.alive_brokers, cs.racks, cs.topics, cs.partitions, cs.replicas) == (5, 4, 2, 2, 5, 12)
    assert (cs.under_replicated, cs.offline, cs.rack_violations, cs.brokers_over_leader_threshold) == (2, 1, 2, 2)
    rcv = np.std([4, 2, 4, 0]) / 2.5
    lcv = np.std([2, 0, 2, 0]) / 1.0
    assert cs.imbalance_score == pytest.approx(100 * (0.3 * rcv + 0.3 * min(1, lcv) + 0.2 / 5 + 0.1 * 2 / 5
                                                      + 0.1 * 2 / 5))


def test_export_cli_replaces_a_cluster_atomically(tmp_path):
    snap_file = tmp_path / "hand.json"
    snap_file.write_text(hand_snapshot().to_json())
    sizes = tmp_path / "sizes.json"
    sizes.write_text(LOG_DIRS)
    store = tmp_path / "store"
    assert run_cli("export", "--snapshot", snap_file, "--out", store, "--sizes", sizes) == 0
    assert run_cli("export", "--snapshot", snap_file, "--out", store, "--cluster", "other") == 0
    assert check_store(store).clusters == ("hand", "other")
    before = tree(store)
    assert run_cli("export", "--snapshot", snap_file, "--out", store, "--sizes", sizes) == 0  # replace "hand"
    assert {k for k in tree(store)} == set(before)  # no stray temporary directories
    replicas, _ = read_store(store, clusters=["other"])
    assert replicas.size_bytes.isna().all() and len(replicas) == 12

    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something/else"}')
    with pytest.raises(SnapshotFormatError):
        commands.cmd_export(build_parser().parse_args(["fleet", "export", "--snapshot", str(bad),
                                                                "--out", str(store)]))
    assert run_cli("export", "--snapshot", bad, "--out", store) == 1
    assert run_cli("export", "--snapshot", snap_file, "--out", store, "--cluster", "no/slashes") == 1
    assert set(tree(store)) == set(before)


def write_kafka_tree(connect: str, snap: ClusterSnapshot) -> None:
    """Write `snap` into ZooKeeper the way Kafka lays it out (alive brokers registered, dead ones not)."""
    from core import zkformat as zf
    from core.zk.session import ZkSession

    with ZkSession.open(connect) as session:
        for path in zf.PERSISTENT_PATHS:
            session.ensure_path(path)
        for b in snap.brokers:
            if b.alive:
                session.create(zf.broker_path(b.id), zf.encode_broker([f"PLAINTEXT://127.0.0.1:{9092 + b.id}"],
                                                                      rack=b.rack, timestamp_ms=0))
        for t in snap.topics:
            session.create(zf.topic_path(t.name), zf.encode_topic({p.partition: p.replicas for p in t.partitions}))
            session.ensure_path(zf.partitions_path(t.name))
            for p in t.partitions:
                session.ensure_path(zf.partition_path(t.name, p.partition))
                session.create(zf.state_path(t.name, p.partition),
                               zf.encode_partition_state(p.leader, 1, 1, p.isr))


def test_collect_reports_each_cluster_and_skips_failures(zk_connect, tmp_path, capsys):
    snap = hand_snapshot()
    write_kafka_tree(zk_connect, snap)
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.hand]\nzk = "{zk_connect}"\n\n'
                      f'[clusters.down]\nzk = "127.0.0.1:{free_port()}"\nconnect_timeout = 1.0\n')
    sizes = tmp_path / "sizes.txt"
    sizes.write_text(LOG_DIRS)
    store = tmp_path / "store"
    status = run_cli("collect", "--config", config, "--out", store, "--sizes", f"hand={sizes}")
    out, err = capsys.readouterr()
    assert status == 1
    lines = out.strip().splitlines()
    assert lines[0].startswith("hand: 5 brokers, 5 partitions, 12 replicas, 5 with sizes")
    assert lines[1].startswith("down: FAILED: could not connect to ZooKeeper")
    assert "1 of 2 cluster(s) failed" in err and "down" in err
    replicas, brokers = read_store(store)
    assert set(replicas.cluster) == {"hand"} and list(brokers.broker) == [1, 2, 3, 4, 5]
    # ZooKeeper does not know a dead broker's rack: broker 5 comes back without one
    seen_from_zk = dataclasses.replace(snap, brokers=snap.brokers[:4] + (Broker(5, None, alive=False),))
    expected, _ = snapshot_tables(seen_from_zk, parse_log_dirs(LOG_DIRS))
    got = replicas.drop(columns=["cluster", "captured_at"]).astype({"topic": str, "rack": object})
    want = expected.to_pandas().drop(columns=["captured_at"]).astype({"topic": str, "rack": object})
    assert_frames_equal(got, want, ["topic", "partition", "position"], "collected replicas")
    assert run_cli("collect", "--config", config, "--out", store, "--cluster", "nope") == 1


# --- the Spark jobs -----------------------------------------------------------------------------------------------


def test_jobs_equal_pandas_reference(local_run, fleet_store):
    out, seen, result = local_run
    ref = pandas_reference(*read_store(fleet_store))
    assert_outputs_match(out, ref)
    assert result.rows == {"broker_metrics": len(ref.broker_metrics), "topic_broker": len(ref.topic_broker),
                           "cluster_scores": 8}
    manifest = read_manifest(out)
    assert manifest["rows"] == result.rows and manifest["clusters"] == 8 and manifest["master"] == LOCAL_MASTER
    # the dashboard's readers
    hand = read_broker_metrics(out, cluster="hand")
    assert list(hand.broker) == [1, 2, 3, 4, 5] and list(hand.bytes) == [330, 210, 0, 0, 0]
    tb = read_topic_broker(out, cluster="hand", topic="a")
    assert list(tb.broker) == [1, 2, 3, 5] and list(tb.replicas) == [3, 2, 3, 1]
    scores = read_cluster_scores(out)
    assert list(scores["rank"]) == list(range(1, 9))
    idle = scores[scores.cluster == "idle"].iloc[0]
    assert (idle.brokers, idle.partitions, idle.replicas, idle.replica_cv, idle.imbalance_score) == (2, 0, 0, 0, 0)
    assert scores.imbalance_score.is_monotonic_decreasing
    # progress: every step in order, a fraction that never goes back, Spark task counts, and a final "done"
    steps = [p.step for p in seen]
    assert steps[0] == "check input" and steps[-1] == "done" and seen[-1].fraction == 1.0
    order = ["check input", "start Spark", "broker_metrics", "topic_broker", "cluster_scores", "commit", "done"]
    assert [s for i, s in enumerate(steps) if i == 0 or steps[i - 1] != s] == order
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions)
    assert any(p.tasks_total > 0 and p.tasks_done == p.tasks_total for p in seen if p.step == "broker_metrics")
    # a second run replaces the earlier output in place
    again = run_cli("run", "--input", fleet_store, "--output", out, "--master", LOCAL_MASTER, "--quiet")
    assert again == 0
    assert_outputs_match(out, ref)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_failed_run_leaves_output_untouched(spark, local_run, fleet_store, tmp_path):
    from core.fleet.jobs import run_jobs

    out = tmp_path / "metrics"
    shutil.copytree(local_run[0], out)
    before = tree(out)
    with pytest.raises(FleetOutputError, match="simulated failure"):
        run_jobs(fleet_store, out, master=LOCAL_MASTER, fail_after="topic_broker")
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics"]  # no temporary directory left beside it


def test_standalone_cluster_gives_the_local_result(local_run, fleet_store, tmp_path):
    """A real master and worker on 127.0.0.1; spark-submit core/fleet/jobs.py unchanged; same output as local.

    Alongside, a second application asks for more executor memory than the worker has: it must fail within its
    --executor-timeout with a clear message instead of waiting for resources forever."""
    out, starved_out = tmp_path / "cluster-out", tmp_path / "starved-out"
    env = spark_env()
    log4j = f"-Dlog4j2.configurationFile={(ROOT / 'core' / 'fleet' / 'log4j2.properties').as_uri()}"

    def submit(url: str, output: Path, timeout: int, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([spark_bin("spark-submit"), "--master", url, "--driver-memory", "1g",
                                 "--conf", f"spark.driver.extraJavaOptions={log4j}",
                                 "--conf", "spark.sql.shuffle.partitions=2", *extra,
                                 str(ROOT / "core" / "fleet" / "jobs.py"), "--input", str(fleet_store),
                                 "--output", str(output), "--executor-timeout", str(timeout)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)

    with standalone_cluster(tmp_path) as cluster:
        cluster.start_worker(memory="2g")
        started = time.monotonic()
        job = submit(cluster.url, out, 60, "--executor-memory", "1g")
        starved = submit(cluster.url, starved_out, 3, "--executor-memory", "64g")
        try:
            s_out, s_err = starved.communicate(timeout=120)
            starved_seconds = time.monotonic() - started
            j_out, j_err = job.communicate(timeout=240)
        finally:
            for p in (job, starved):
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
        assert job.returncode == 0, j_out[-3000:] + j_err[-3000:] + cluster.log_tail()
    # spark-submit merges the Python driver's stderr into its stdout
    assert starved.returncode == 1, s_out[-3000:] + s_err[-3000:]
    assert f"error: the Spark master at {cluster.url} granted no executor within 3 s" in s_out + s_err
    assert starved_seconds < 90 and not starved_out.exists()
    run = subprocess.CompletedProcess(job.args, job.returncode, j_out, j_err)
    assert read_manifest(out)["master"] == cluster.url
    assert "rank" in run.stdout and "hand" in run.stdout
    local = local_run[0]
    assert_frames_equal(read_broker_metrics(out), read_broker_metrics(local), ["cluster", "broker"], "broker_metrics")
    assert_frames_equal(read_topic_broker(out), read_topic_broker(local), ["cluster", "topic", "broker"],
                        "topic_broker")
    assert_frames_equal(read_cluster_scores(out), read_cluster_scores(local), ["cluster"], "cluster_scores")


# --- bad input -------------------------------------------------------------------------------------------------------


def _run(inp, out, **kw):
    from core.fleet.jobs import run_jobs

    return run_jobs(inp, out, master=kw.pop("master", LOCAL_MASTER), **kw)


def test_missing_and_empty_input(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(FleetInputError, match="does not exist"):
        _run(tmp_path / "nope", out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FleetInputError, match="no replicas/ dataset"):
        _run(tmp_path / "empty", out)
    (tmp_path / "empty" / "replicas").mkdir()
    (tmp_path / "empty" / "brokers").mkdir()
    with pytest.raises(FleetInputError, match="is empty"):
        _run(tmp_path / "empty", out)
    assert not out.exists()
    assert run_cli("run", "--input", tmp_path / "nope", "--output", out, "--quiet") == 1


def test_wrong_schema_and_foreign_files(fleet_store, tmp_path):
    out = tmp_path / "out"
    store = tmp_path / "store"
    shutil.copytree(fleet_store, store)
    bad = store / "replicas" / "cluster=hand" / "part-00001.parquet"
    pq.write_table(pa.table({"topic": ["a"], "partition": pa.array([0], pa.int64()), "broker": [1]}), bad)
    with pytest.raises(FleetSchemaError) as e:
        _run(store, out)
    assert str(bad) in str(e.value) and "missing column 'position'" in str(e.value)
    assert "column 'partition' has type int64, expected int32" in str(e.value)
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(FleetSchemaError, match="cannot be read as Parquet"):
        _run(store, out)
    bad.unlink()
    (store / "brokers" / "stray.parquet").write_bytes(b"x")
    with pytest.raises(FleetInputError, match="must sit in"):
        _run(store, out)
    assert not out.exists()


def test_output_that_is_not_ours_is_refused(fleet_store, tmp_path):
    mine = tmp_path / "home"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    with pytest.raises(FleetOutputError, match="refusing to replace it"):
        _run(fleet_store, mine)
    assert (mine / "notes.txt").read_text() == "precious"
    with pytest.raises(FleetOutputError, match="overlaps the input"):
        _run(fleet_store, fleet_store / "out")
    with pytest.raises(FleetInputError, match="only local paths"):
        _run(fleet_store, "hdfs://nn/out")
    with pytest.raises(FleetInputError, match="no fleet job output"):
        read_cluster_scores(mine)


def test_unreachable_master_fails_fast(spark, fleet_store, tmp_path):
    port = free_port()
    started = time.monotonic()
    with pytest.raises(SparkMasterUnreachableError, match=f"cannot reach the Spark master at spark://127.0.0.1:{port}"):
        _run(fleet_store, tmp_path / "out", master=f"spark://127.0.0.1:{port}")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "out").exists()
    assert spark.sparkContext.master == LOCAL_MASTER  # the working session was not torn down
    assert spark.range(3).count() == 3
    from core.fleet.spark import InvalidMasterError

    with pytest.raises(InvalidMasterError):
        _run(fleet_store, tmp_path / "out", master="spark://nohost")


def test_master_without_executors_fails_within_the_timeout():
    """A master that accepts the application but grants no executor (no worker, or none big enough)."""
    from core.fleet.spark import wait_for_executors

    class Tracker:
        def getExecutorInfos(self):
            return ["driver"]  # Spark lists the driver too

    class Stub:
        class sparkContext:  # noqa: N801
            @staticmethod
            def statusTracker():
                return Tracker()

    started = time.monotonic()
    with pytest.raises(SparkMasterUnreachableError, match="granted no executor within 0.5 s"):
        wait_for_executors(Stub(), "spark://127.0.0.1:7077", 0.5)
    assert time.monotonic() - started < 5


def test_java_missing_is_a_clear_error(fleet_store, tmp_path):
    with pytest.raises(JavaMissingError, match="apt-get install default-jre-headless"):
        check_java({"PATH": str(tmp_path)})
    with pytest.raises(JavaMissingError, match="has no bin/java"):
        check_java({"JAVA_HOME": str(tmp_path), "PATH": "/usr/bin"})
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env["PATH"] = str(tmp_path)  # no java here (the interpreter is called by its full path)
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([sys.executable, "-m", "core.fleet.jobs", "--input", str(fleet_store), "--output",
                          str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1
    assert "Spark needs Java" in run.stderr and "apt-get install default-jre-headless" in run.stderr
    assert "make deps" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()
    assert check_java().split(".")[0].isdigit()
