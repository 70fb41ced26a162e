"""`fleet collect --spark MASTER` (issue 31, item 3): the same collection as Spark tasks, one per cluster, on a real
standalone master and worker on 127.0.0.1, against real ZooKeeper-backed clusters and two that never answer. The
store it writes is the local collection's (captured_at aside), each cluster's failure is reported as locally, and
Spark refusing to start writes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.fleet.export import collect
from core.fleet.store import read_history, read_store
from core.policy.config import load_config
from core.zk.session import ZkSession
from tests.fleet.test_fleet import LOG_DIRS, assert_frames_equal, run_cli, write_kafka_tree
from tests.fleet.test_fleet_collect import BlackHole, cluster_snapshot
from tests.support.spark_helpers import free_port, spark_env, standalone_cluster

ROOT = Path(__file__).resolve().parents[2]
FAST = {"fast0": (120, 5), "fast1": (60, 3), "fast2": (200, 6)}


@pytest.fixture
def spark_fleet(zk_connect, tmp_path):
    """keel.toml: three real clusters (a ZooKeeper chroot each), one with a --sizes file, and one that hangs."""
    hole = BlackHole()
    lines = []
    with ZkSession.open(zk_connect) as root:
        for name, (parts, brokers) in FAST.items():
            root.ensure_path(f"/{name}")
            write_kafka_tree(f"{zk_connect}/{name}", cluster_snapshot(name, parts, brokers))
            lines.append(f'[clusters.{name}]\nzk = "{zk_connect}/{name}"\n')
    lines.append(f'[clusters.hangs]\nzk = "127.0.0.1:{hole.port}"\nconnect_timeout = 2.0\n')
    path = tmp_path / "keel.toml"
    path.write_text("\n".join(lines))
    # sizes of fast1's "events" partitions 0-2 on brokers 1-3 (the file is read where `fleet collect` runs)
    sizes = tmp_path / "fast1-log-dirs.json"
    sizes.write_text(LOG_DIRS.replace('"a-', '"events-'))
    try:
        yield path, sizes
    finally:
        hole.close()


def _apps(web_port: int) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=5) as r:
        state = json.loads(r.read())
    return state.get("activeapps", []) + state.get("completedapps", [])


def test_spark_collect_on_a_standalone_master_writes_the_local_store(spark_fleet, tmp_path):
    config_path, sizes = spark_fleet
    config = load_config(str(config_path))
    local = tmp_path / "local"
    results = collect(config, local, sizes={"fast1": sizes}, history=True)
    assert [r.ok for r in results] == [True, True, True, False]

    store = tmp_path / "spark-store"
    with standalone_cluster(tmp_path) as cluster:
        cluster.start_worker(cores=2, memory="2g")
        run = subprocess.run([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config_path),
                              "--out", str(store), "--spark", cluster.url, "--sizes", f"fast1={sizes}",
                              "--history"], cwd=tmp_path, env=spark_env(), capture_output=True, text=True,
                             timeout=300)
        apps = _apps(cluster.web_port)
        log = cluster.log_tail()
    assert run.returncode == 1, run.stdout + run.stderr[-3000:] + log
    # each cluster's line as locally; the one that never answers fails alone, with the local collection's reason
    lines = dict(line.split(": ", 1) for line in run.stdout.strip().splitlines())
    assert sorted(lines) == ["fast0", "fast1", "fast2", "hangs"], run.stdout
    assert lines["hangs"].startswith("FAILED: ") and "could not connect to ZooKeeper" in lines["hangs"]
    assert lines["fast0"].startswith("5 brokers, 120 partitions, 360 replicas")
    assert lines["fast1"].startswith("3 brokers, 60 partitions, 180 replicas, 5 with sizes")
    assert "1 of 4 cluster(s) failed and were skipped: hangs" in run.stderr
    assert "Traceback" not in run.stderr
    # the reads ran as the application's tasks on the worker's executor (the master granted it cores)
    collect_apps = [a for a in apps if a.get("name") == "keel-fleet-collect"]
    assert len(collect_apps) == 1 and collect_apps[0]["cores"] >= 1, apps
    assert any((tmp_path / "worker").glob(f"{collect_apps[0]['id']}/*/stderr")), "no executor was launched"

    # the same store as the local collection (captured_at aside: the time of each reading), history included
    for which, keys in ((0, ["cluster", "topic", "partition", "position"]), (1, ["cluster", "broker"])):
        a = read_store(local)[which].drop(columns=["captured_at"]).astype({"cluster": str})
        b = read_store(store)[which].drop(columns=["captured_at"]).astype({"cluster": str})
        assert set(b.cluster) == set(FAST)
        assert_frames_equal(b, a, keys, "store")
    replicas, _ = read_store(store)
    assert replicas[replicas.cluster == "fast1"].size_bytes.notna().sum() == 5
    history, brokers = read_history(store)
    assert history.groupby("cluster", observed=True).captured_at.nunique().to_dict() == {n: 1 for n in FAST}
    assert len(history) == len(replicas) and brokers.cluster.nunique() == 3
    assert not list(store.rglob(".tmp-*"))


def test_spark_collect_refusals_write_nothing(spark_fleet, tmp_path, capsys):
    config_path, _ = spark_fleet
    store = tmp_path / "never"
    with pytest.raises(SystemExit) as exc:  # argparse: --spark needs its MASTER
        run_cli("collect", "--config", config_path, "--out", store, "--spark")
    assert exc.value.code == 2
    capsys.readouterr()
    cases = [
        (["--spark", "spark:/nohost"], "invalid Spark master URL 'spark:/nohost'"),
        (["--spark", "local[2]", "--progress"], "with --spark the clusters are read on the executors"),
        (["--spark", f"spark://127.0.0.1:{free_port()}"], "cannot reach the Spark master at spark://127.0.0.1:"),
    ]
    for extra, message in cases:
        started = time.monotonic()
        status = run_cli("collect", "--config", config_path, "--out", store, *extra)
        err = capsys.readouterr().err
        assert status != 0 and message in err, (extra, err)
        assert "Traceback" not in err and time.monotonic() - started < 30
        assert not store.exists(), extra  # refused before any cluster was read or anything written


def test_a_failed_spark_task_fails_its_cluster_with_the_reason(spark_fleet, tmp_path):
    """Executors whose Python lacks Keel's packages (the system python3 here: no pyarrow): each cluster's task
    fails, each cluster says why, and nothing is written."""
    config_path, _ = spark_fleet
    store = tmp_path / "store"
    run = subprocess.run([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config_path), "--out",
                          str(store), "--cluster", "fast0", "--cluster", "fast1", "--spark", "local[2]"],
                         cwd=tmp_path, env={**spark_env(), "PYSPARK_PYTHON": "/usr/bin/python3"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in run.stdout.strip().splitlines())
    assert sorted(lines) == ["fast0", "fast1"], run.stdout
    for line in lines.values():
        assert line.startswith("FAILED: the Spark task failed: ") and "No module named 'pyarrow'" in line, line
        assert "the executors' Python, /usr/bin/python3, needs Keel" in line, line
    assert "2 of 2 cluster(s) failed" in run.stderr and not store.exists()


def test_spark_collect_every_keeps_one_capture_per_round(zk_connect, tmp_path):
    """--every on Spark: one session for every round (started before the first: the rounds 4 s apart are not
    pushed together by its start), one capture per round in STORE/history/."""
    write_kafka_tree(zk_connect, cluster_snapshot("one", 40, 3))
    config = tmp_path / "keel.toml"
    config.write_text(f'[clusters.one]\nzk = "{zk_connect}"\n')
    store = tmp_path / "store"
    run = subprocess.run([sys.executable, "-m", "core", "fleet", "collect", "--config", str(config), "--out",
                          str(store), "--spark", "local[2]", "--every", "4s", "--count", "2"], cwd=tmp_path,
                         env=spark_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert [ln.split(",")[0] for ln in run.stdout.strip().splitlines()] == ["one: 3 brokers"] * 2
    history, _ = read_history(store)
    assert history.groupby("captured_at").size().tolist() == [120, 120]  # two captures of 40 x RF 3 replicas
    assert run.stderr.count("could not start Spark") == 0 and "Traceback" not in run.stderr
