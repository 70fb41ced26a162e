"""`fleet collect --spark MASTER`: the collection of core.fleet.export.collect as Spark tasks, one per cluster.

Each cluster's keel.toml settings (and the contents of its --sizes file, read here) travel to an executor inside
its task; the task reads the cluster there (export.read_cluster: ZooKeeper, or the brokers' Admin API for a KRaft
cluster), turns it into the store's rows (export.snapshot_tables) and returns them as Arrow IPC bytes. This driver
writes them with the local collection's writer (export.write_tables), so both give the same store, into any path
this machine can write (no filesystem shared with the executors needed).

One single-task Spark job per cluster, submitted from a bounded pool of driver threads: Spark runs the jobs' tasks
on whichever executor cores are free, each cluster's line comes as its job finishes (as locally), and the driver
holds the rows of the clusters in flight only (a 200,000-partition cluster: 22 MB of Arrow, sent zstd-compressed).
A cluster that fails is that cluster's failure, whether the read failed in the task or the task itself did (an
executor lost after Spark's retries, an executor Python without Keel's packages).

The executors run Keel's code: they need Keel and its requirements installed (the Docker image, or the same
virtualenv), and the files keel.toml names (TLS certificates, command_config) at the same paths. Their Python is
PYSPARK_PYTHON, by default this interpreter's path.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pyarrow as pa

from core.errors import KeelError
from core.fleet.export import (CollectResult, ExportResult, collect_request, read_cluster, read_sizes_file,
                               run_bounded, snapshot_tables, write_tables)

MAX_PARALLEL = 64  # driver threads waiting on Spark jobs; the executors' cores bound the reads further


def default_spark_parallel(clusters: int) -> int:
    return max(1, min(MAX_PARALLEL, clusters))


@dataclass(frozen=True)
class ClusterTask:
    """What one Spark task gets: the cluster's name and keel.toml settings, and its --sizes file's contents."""

    name: str
    config: object  # core.policy.config.ClusterConfig (pickled with the task)
    sizes_path: str | None = None
    sizes_text: str | None = field(default=None, repr=False)


def _ipc(table: pa.Table) -> bytes:
    codec = "zstd" if pa.Codec.is_available("zstd") else None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def run_task(task: ClusterTask) -> dict:
    """Runs on an executor: read one cluster into the store's rows. Never raises (a failure is the answer), so
    Spark retries only what is Spark's (a lost executor), not a cluster that does not answer."""
    started = time.monotonic()
    try:
        snap, sizes = read_cluster(task.name, task.config, sizes_path=task.sizes_path, sizes_text=task.sizes_text)
        replicas, brokers = snapshot_tables(snap, sizes)
        return {"ok": True, "replicas": _ipc(replicas), "brokers": _ipc(brokers),
                "partitions": snap.partition_count, "seconds": time.monotonic() - started}
    except KeelError as e:
        return {"ok": False, "error": str(e)}
    except Exception as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def _collect_on_spark(sc, task: ClusterTask, store: str | Path, history: bool) -> CollectResult:
    """One cluster: its Spark job (in this driver thread), then its rows written into the store."""
    started = time.monotonic()
    try:
        sc.setJobGroup(f"keel-collect-{task.name}-{uuid.uuid4().hex[:8]}", f"keel fleet collect: {task.name}",
                       interruptOnCancel=True)
        [answer] = sc.parallelize([task], 1).map(run_task).collect()
    except Exception as e:  # the task itself failed (Spark gave up on it): this cluster's failure only
        return CollectResult(task.name, False, error=f"the Spark task failed: {task_failure(e, sc.pythonExec)}")
    if not answer["ok"]:
        return CollectResult(task.name, False, error=answer["error"])
    try:
        res = write_tables(store, task.name, _table(answer["replicas"]), _table(answer["brokers"]),
                           partitions=answer["partitions"], history=history)
    except KeelError as e:
        return CollectResult(task.name, False, error=str(e))
    except Exception as e:
        return CollectResult(task.name, False, error=f"{type(e).__name__}: {e}")
    return CollectResult(task.name, True, ExportResult(**{**res.__dict__, "seconds": time.monotonic() - started}))


_PY_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)(\b.*)?:")


def task_failure(e: BaseException, python: str) -> str:
    """Why a task failed: the Python error the executor raised (the last line of its traceback, which Spark wraps
    in Java stack frames), else Spark's first useful line."""
    from core.fleet.spark import _first_line

    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    raised = [ln for ln in lines if _PY_ERROR.match(ln) and not ln.startswith("org.apache.")]
    if not raised:
        return _first_line(e)
    why = raised[-1][:500]
    if why.startswith(("ModuleNotFoundError", "ImportError")):
        why += (f" (the executors' Python, {python}, needs Keel and its requirements installed: set PYSPARK_PYTHON "
                "to one that has them)")
    return why


def _task(name: str, cluster_config, sizes_path: str | Path | None) -> ClusterTask | CollectResult:
    """The cluster's task, or its failure when its --sizes file cannot be read here (as collect_one reports it)."""
    if sizes_path is None:
        return ClusterTask(name, cluster_config)
    try:
        return ClusterTask(name, cluster_config, str(sizes_path), read_sizes_file(sizes_path))
    except KeelError as e:
        return CollectResult(name, False, error=str(e))


def spark_session(master: str):
    """The SparkSession of a collection on `master`; the executors' Python defaults to this interpreter."""
    from core.fleet.spark import get_session

    # read when the SparkContext starts: without it PySpark runs "python3", which has no Keel in a virtualenv
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return get_session(master, app_name="keel-fleet-collect")


def collect_spark(config, store: str | Path, master: str, *, clusters: Iterable[str] | None = None,
                  sizes: Mapping[str, str | Path] | None = None,
                  progress: Callable[[CollectResult], None] | None = None,
                  parallel: int | None = None, history: bool = False) -> list[CollectResult]:
    """`collect` (core.fleet.export) with each cluster read by a Spark task on `master`; same arguments, same
    results (in the order of `clusters`), same store. Spark failing to start (no Java, master unreachable, no
    executor granted) raises its typed error before anything is written."""
    names, sizes, workers = collect_request(config, clusters, sizes, parallel, default_spark_parallel)
    if not names:
        return []
    sc = spark_session(master).sparkContext
    done: dict[str, CollectResult] = {}
    tasks = {name: _task(name, config.clusters[name], sizes.get(name)) for name in names}
    for name, task in tasks.items():
        if isinstance(task, CollectResult):
            done[name] = task
            if progress is not None:
                progress(task)
    todo = [t for t in tasks.values() if isinstance(t, ClusterTask)]
    done.update(run_bounded([partial(_collect_on_spark, sc, task, store, history) for task in todo], workers,
                            progress, prefix="fleet-spark"))
    return [done[name] for name in names]
