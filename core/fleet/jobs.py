"""The fleet jobs: pure DataFrame -> DataFrame transforms, and a thin runner that reads, transforms and writes.

    python -m core fleet run --input STORE --output DIR [--master local[*]]
    spark-submit --master spark://host:7077 core/fleet/jobs.py --input STORE --output DIR

The transforms (`broker_metrics`, `topic_broker`, `cluster_scores`) take and return Spark DataFrames and do no
I/O; their definitions are in core.fleet.reference, which computes the same numbers with pandas. `run_jobs`
checks the input (every Parquet footer), writes all outputs into a hidden directory beside the output, and renames
it into place only when everything succeeded: a failed or interrupted run leaves the output directory as it was.
Input and output must be paths the driver and every executor can see (local, or a shared filesystem).
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and not __package__:  # run as a script (spark-submit core/fleet/jobs.py)
    from pathlib import Path as _Path

    _here = str(_Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p not in ("", _here)]
    sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))

import argparse
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from core.errors import KeelError
from core.fleet.options import add_run_arguments
from core.fleet.errors import FleetInputError, FleetOutputError
from core.fleet.outputs import MANIFEST, MANIFEST_FORMAT
from core.fleet.reference import LEADER_THRESHOLD_PERCENT, SCORE_WEIGHTS
from core.fleet.schema import (BROKER_METRICS, BROKER_METRICS_SCHEMA, BROKER_SCHEMA, BROKERS, CLUSTER_SCORES,
                               CLUSTER_SCORES_SCHEMA, OUTPUTS, PARTITION_COLUMN, REPLICA_SCHEMA, REPLICAS,
                               TOPIC_BROKER, check_store)
from core.fleet.spark import (_LOCK, DEFAULT_EXECUTOR_TIMEOUT, JobProgress, ProgressFn, get_session, report,
                              run_tracked, session_running, stop_session)

STEPS = ("check input", "start Spark", BROKER_METRICS, TOPIC_BROKER, CLUSTER_SCORES, "commit")

__all__ = ["JobProgress", "RunResult", "broker_metrics", "cluster_scores", "fleet_metrics", "main", "read_fleet",
           "run_jobs", "spark_schema", "topic_broker"]


# --- schemas ------------------------------------------------------------------------------------------


def _spark_type(t: pa.DataType) -> T.DataType:
    if pa.types.is_string(t):
        return T.StringType()
    if pa.types.is_int32(t):
        return T.IntegerType()
    if pa.types.is_int64(t):
        return T.LongType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    raise TypeError(f"no Spark type for {t}")


def spark_schema(schema: pa.Schema, *, with_cluster: bool = True) -> T.StructType:
    """The Spark schema of a store dataset (plus the `cluster` partition column)."""
    fields = [T.StructField(f.name, _spark_type(f.type), True) for f in schema]
    if with_cluster and PARTITION_COLUMN not in schema.names:
        fields.append(T.StructField(PARTITION_COLUMN, T.StringType(), True))
    return T.StructType(fields)


def read_fleet(spark: SparkSession, store: str | Path) -> tuple[DataFrame, DataFrame]:
    """(replicas, brokers) of a fleet store as Spark DataFrames, with the store's schema imposed."""
    root = Path(store)
    replicas = spark.read.schema(spark_schema(REPLICA_SCHEMA)).parquet(str(root / REPLICAS))
    brokers = spark.read.schema(spark_schema(BROKER_SCHEMA)).parquet(str(root / BROKERS))
    return replicas, brokers


# --- the transforms (pure) ------------------------------------------------------------------------------


def _count(cond) -> "F.Column":
    return F.sum(cond.cast("long"))


def broker_metrics(replicas: DataFrame, brokers: DataFrame,
                   threshold_percent: int = LEADER_THRESHOLD_PERCENT) -> DataFrame:
    """One row per (cluster, broker): every listed broker (with zero replicas too) and every broker a replica names.

    Only fixed-width aggregates over the replica rows (strings in aggregation buffers would force a sort-based
    aggregation over every row); rack and alive come from brokers/ (a broker only replicas name: no rack, and
    alive as its replica rows say).
    """
    per = replicas.groupBy("cluster", "broker").agg(
        F.count(F.lit(1)).alias("replicas"),
        _count(F.col("is_leader")).alias("leaders"),
        _count(F.col("is_preferred")).alias("preferred"),
        _count(F.col("is_preferred") & ~F.col("is_leader")).alias("preferred_not_leading"),
        F.sum("size_bytes").alias("r_bytes"),
        F.max("alive").alias("r_alive"),
    )
    listed = brokers.select("cluster", "broker", F.col("rack").alias("b_rack"), F.col("alive").alias("b_alive"),
                            F.lit(True).alias("listed")).dropDuplicates(["cluster", "broker"])
    is_listed = F.coalesce(F.col("listed"), F.lit(False))
    counts = ("replicas", "leaders", "preferred", "preferred_not_leading")
    m = listed.join(per, ["cluster", "broker"], "full_outer").select(
        "cluster", "broker",
        F.when(is_listed, F.col("b_rack")).alias("rack"),
        F.when(is_listed, F.col("b_alive")).otherwise(F.col("r_alive")).alias("alive"),
        *[F.coalesce(F.col(c), F.lit(0).cast("long")).alias(c) for c in counts],
        "r_bytes",
    )
    w = Window.partitionBy("cluster")
    sized = F.max(F.col("r_bytes").isNotNull()).over(w)
    m = m.withColumn("bytes", F.when(sized, F.coalesce(F.col("r_bytes"), F.lit(0).cast("long"))))

    def dev(c: str):
        alive_mean = F.avg(F.when(F.col("alive"), F.col(c))).over(w)
        return F.try_divide(F.col(c).cast("double"), alive_mean) - F.lit(1.0)

    pnl, pref = F.col("preferred_not_leading"), F.col("preferred")
    return m.select(
        "cluster", "broker", "rack", "alive", *counts,
        F.try_divide(pnl.cast("double"), pref.cast("double")).alias("leader_imbalance_ratio"),
        (pnl * 100 > F.lit(int(threshold_percent)) * pref).alias("over_leader_threshold"),
        "bytes",
        dev("replicas").alias("replica_dev"),
        dev("leaders").alias("leader_dev"),
        dev("bytes").alias("bytes_dev"),
    )


def topic_broker(replicas: DataFrame) -> DataFrame:
    """Replicas and leaders per (cluster, topic, broker) -- the per-topic skew.

    The rows are shuffled by cluster before aggregating: the result is then already laid out by cluster for the
    partitioned write (one shuffle instead of two, no partial aggregation that would barely reduce the rows).
    """
    return replicas.repartition("cluster").groupBy("cluster", "topic", "broker").agg(
        F.count(F.lit(1)).alias("replicas"), _count(F.col("is_leader")).alias("leaders"))


def _cv(col: str):
    alive_vals = F.when(F.col("alive"), F.col(col))
    mean = F.avg(alive_vals)
    return (F.when(F.sum(F.col("alive").cast("long")) == 0, F.lit(None).cast("double"))
            .when(mean == 0, F.lit(0.0))
            .otherwise(F.try_divide(F.stddev_pop(alive_vals), mean)))


RACK_BITS = 62  # racks per bit mask (a long); clusters with more racks use several masks


def broker_rack_index(brokers: DataFrame) -> DataFrame:
    """(cluster, broker, rack_idx): each listed broker's rack as a small integer, dense within its cluster."""
    racks = (brokers.where(F.col("rack").isNotNull()).select("cluster", "rack").distinct()
             .withColumn("rack_idx", F.dense_rank().over(Window.partitionBy("cluster").orderBy("rack")) - 1))
    return (brokers.select("cluster", "broker", "rack").dropDuplicates(["cluster", "broker"])
            .join(racks, ["cluster", "rack"], "inner").select("cluster", "broker", "rack_idx"))


def cluster_scores(replicas: DataFrame, brokers: DataFrame, broker_metrics_df: DataFrame,
                   max_racks: int | None = None) -> DataFrame:
    """One row per cluster: balance (cv, max dev), health counts, imbalance_score and rank (1 = worst).

    A replica's rack is its broker's rack in brokers/. The racks a partition spans are counted with bit masks
    (bit_or of 1 << rack index, then bit_count) so the per-partition aggregation stays a plain hash aggregation;
    `max_racks` (the most racks any cluster has) sizes the masks, computed from brokers/ when not given.
    """
    alive = F.col("alive")
    per_cluster = broker_metrics_df.groupBy("cluster").agg(
        F.count(F.lit(1)).alias("brokers"),
        _count(alive).alias("alive_brokers"),
        F.countDistinct("rack").alias("racks"),
        _cv("replicas").alias("replica_cv"),
        _cv("leaders").alias("leader_cv"),
        F.max(F.when(alive, F.abs(F.col("replica_dev")))).alias("max_replica_dev"),
        F.max(F.when(alive, F.abs(F.col("leader_dev")))).alias("max_leader_dev"),
        _count(F.col("over_leader_threshold")).alias("brokers_over_leader_threshold"),
    )
    if max_racks is None:
        max_racks = (brokers.where(F.col("rack").isNotNull()).groupBy("cluster")
                     .agg(F.countDistinct("rack").alias("n")).agg(F.max("n")).first()[0]) or 0
    masks = max(1, -(-int(max_racks) // RACK_BITS))
    idx = F.col("rack_idx")
    rows = replicas.select("cluster", "topic", "partition", "broker", "in_isr", "is_leader", "alive").join(
        F.broadcast(broker_rack_index(brokers)), ["cluster", "broker"], "left")
    bit = F.pow(F.lit(2.0), idx % RACK_BITS).cast("long")  # 1 << (idx mod 62), exact in a double
    mask_aggs = [F.bit_or(F.when(F.floor(idx / RACK_BITS) == k, bit)).alias(f"m{k}") for k in range(masks)]
    parts = rows.groupBy("cluster", "topic", "partition").agg(
        F.count(F.lit(1)).alias("rf"),
        _count(F.col("in_isr")).alias("isr"),
        F.max(F.col("is_leader") & F.col("alive")).alias("live"),
        *mask_aggs,
    )
    part_racks = sum((F.coalesce(F.bit_count(F.col(f"m{k}")), F.lit(0)) for k in range(masks)), F.lit(0))
    racks = F.coalesce(F.col("racks"), F.lit(0).cast("long"))
    parts = parts.join(F.broadcast(per_cluster.select("cluster", "racks")), "cluster", "left").select(
        "cluster", "topic", "rf",
        (F.col("isr") < F.col("rf")).alias("under_replicated"),
        (~F.col("live")).alias("offline"),
        (part_racks < F.least(F.col("rf"), racks)).alias("rack_violation"),
    )
    per_partition = parts.groupBy("cluster").agg(
        F.countDistinct("topic").alias("topics"),
        F.count(F.lit(1)).alias("partitions"),
        F.sum("rf").alias("replicas"),
        _count(F.col("under_replicated")).alias("under_replicated"),
        _count(F.col("offline")).alias("offline"),
        _count(F.col("rack_violation")).alias("rack_violations"),
    )
    times = brokers.groupBy("cluster").agg(F.max("captured_at").alias("captured_at"))
    out = per_cluster.join(per_partition, "cluster", "full_outer").join(times, "cluster", "left")
    zero = F.lit(0).cast("long")
    for c in ("brokers", "alive_brokers", "racks", "topics", "partitions", "replicas", "under_replicated", "offline",
              "rack_violations", "brokers_over_leader_threshold"):
        out = out.withColumn(c, F.coalesce(F.col(c), zero))

    def share(c: str):
        return F.coalesce(F.try_divide(F.col(c).cast("double"), F.col("partitions").cast("double")), F.lit(0.0))

    def capped(c: str):
        return F.least(F.coalesce(F.col(c), F.lit(1.0)), F.lit(1.0))

    wt = SCORE_WEIGHTS
    score = F.lit(100.0) * (
        F.lit(wt["replica_cv"]) * capped("replica_cv") + F.lit(wt["leader_cv"]) * capped("leader_cv")
        + F.lit(wt["offline"]) * share("offline") + F.lit(wt["rack_violations"]) * share("rack_violations")
        + F.lit(wt["under_replicated"]) * share("under_replicated"))
    out = out.withColumn("imbalance_score", score)
    rank = F.row_number().over(Window.orderBy(F.col("imbalance_score").desc(), F.col("cluster").asc()))
    return out.withColumn("rank", rank.cast("int")).select(*CLUSTER_SCORES_SCHEMA.names)


def fleet_metrics(replicas: DataFrame, brokers: DataFrame,
                  threshold_percent: int = LEADER_THRESHOLD_PERCENT) -> dict[str, DataFrame]:
    """All three outputs as lazy DataFrames (cluster_scores recomputes broker_metrics; run_jobs avoids that)."""
    bm = broker_metrics(replicas, brokers, threshold_percent)
    return {BROKER_METRICS: bm, TOPIC_BROKER: topic_broker(replicas),
            CLUSTER_SCORES: cluster_scores(replicas, brokers, bm)}


# --- the runner ---------------------------------------------------------------------------------------


@dataclass
class RunResult:
    output: Path
    master: str
    clusters: int
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    spark_seconds: float = 0.0  # the three outputs, Spark session start excluded


def local_path(path: str | os.PathLike, what: str) -> Path:
    text = os.fspath(path)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif "://" in text:
        raise FleetInputError(f"{what} {text}: only local paths (or a filesystem mounted on the driver and every "
                              "worker) are supported")
    return Path(text).expanduser().resolve()


def check_output_target(out: Path, inp: Path) -> None:
    """The output may be absent, an empty directory or a previous fleet output; it must not overlap the input."""
    if out == inp or inp in out.parents or out in inp.parents:
        raise FleetOutputError(f"output {out} overlaps the input {inp}: choose a directory outside the store")
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise FleetOutputError(f"output {out} exists and is not a directory")
        if any(out.iterdir()) and not (out / MANIFEST).is_file():
            raise FleetOutputError(f"output {out} is not empty and holds no earlier fleet output ({MANIFEST}): "
                                   "refusing to replace it", hint="choose a new or empty directory")


def _write(df: DataFrame, name: str, target: Path) -> None:
    if name == TOPIC_BROKER:  # already laid out by cluster (see topic_broker): one file per cluster
        df.write.mode("errorifexists").partitionBy(PARTITION_COLUMN).parquet(str(target))
    elif name == BROKER_METRICS:
        df.repartition(1).sortWithinPartitions("cluster", "broker").write.mode("errorifexists").parquet(str(target))
    else:
        df.repartition(1).sortWithinPartitions("rank").write.mode("errorifexists").parquet(str(target))


def _rows(path: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in path.rglob("*.parquet")
               if not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))


def _max_racks(store: Path) -> int:
    """The most racks any cluster of the store has (read with pyarrow from the small brokers/ dataset)."""
    from core.fleet.store import read_dataset

    t = read_dataset(store / BROKERS, columns=[PARTITION_COLUMN, "rack"], dictionary=False).to_pandas()
    return int(t.dropna().groupby(PARTITION_COLUMN)["rack"].nunique().max()) if t["rack"].notna().any() else 0


def _commit(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        if old is not None:
            os.rename(old, out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_jobs(input_dir: str | os.PathLike, output_dir: str | os.PathLike, master: str | None = "local[*]",
             progress: ProgressFn | None = None, *, spark: SparkSession | None = None,
             threshold_percent: int = LEADER_THRESHOLD_PERCENT, shuffle_partitions: int | None = None,
             driver_memory: str | None = None, executor_timeout: float = DEFAULT_EXECUTOR_TIMEOUT,
             fail_after: str | None = None) -> RunResult:
    """Compute broker_metrics, topic_broker and cluster_scores of the store `input_dir` into `output_dir`.

    `progress(JobProgress)` is called from the calling thread: at each step and whenever the Spark tasks of the
    running step advance. `spark` reuses a given session (else `get_session(master, ...)`, kept for the next
    run; `stop_session()` ends it). Raises FleetInputError / FleetSchemaError (bad store), FleetOutputError,
    JavaMissingError, SparkMasterUnreachableError, FleetJobError; in every case the output is left untouched.
    `fail_after` (tests only) raises after writing that output, to prove nothing half-written is left.
    """
    started = time.monotonic()
    steps = len(STEPS)
    with _LOCK:
        report(progress, STEPS[0], 1, steps, started)
        inp = local_path(input_dir, "input")
        out = local_path(output_dir, "output")
        store = check_store(inp)
        check_output_target(out, inp)

        report(progress, STEPS[1], 2, steps, started)
        if spark is None:
            spark = get_session(master, shuffle_partitions=shuffle_partitions, driver_memory=driver_memory,
                                executor_timeout=executor_timeout)
        elif shuffle_partitions:
            spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        spark_started = time.monotonic()
        replicas, brokers = read_fleet(spark, inp)

        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        rows: dict[str, int] = {}
        try:
            for i, name in enumerate(OUTPUTS):
                target = tmp / name
                if name == BROKER_METRICS:
                    df = broker_metrics(replicas, brokers, threshold_percent)
                elif name == TOPIC_BROKER:
                    df = topic_broker(replicas)
                else:  # reuse the broker metrics just written instead of recomputing them
                    bm = spark.read.schema(spark_schema(BROKER_METRICS_SCHEMA, with_cluster=False)).parquet(
                        str(tmp / BROKER_METRICS))
                    df = cluster_scores(replicas, brokers, bm, max_racks=_max_racks(inp))
                run_tracked(spark, name, 3 + i, steps, lambda df=df, name=name, target=target: _write(df, name, target),
                            progress, started)
                rows[name] = _rows(target)
                if fail_after == name:
                    raise FleetOutputError(f"simulated failure after writing {name}")
            spark_seconds = time.monotonic() - spark_started

            report(progress, STEPS[5], 6, steps, started)
            manifest = {
                "format": MANIFEST_FORMAT, "input": str(inp), "master": spark.sparkContext.master,
                "spark_version": spark.version,
                "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "seconds": round(time.monotonic() - started, 3), "threshold_percent": int(threshold_percent),
                "clusters": len(store.clusters), "rows": rows,
            }
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            _commit(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        result = RunResult(output=out, master=spark.sparkContext.master, clusters=len(store.clusters), rows=rows,
                           seconds=time.monotonic() - started, spark_seconds=spark_seconds)
        report(progress, "done", steps, steps, started, done=True)
        return result


# --- command line (python -m core fleet run, and spark-submit core/fleet/jobs.py) --------------------------


def stderr_progress() -> Callable[[JobProgress], None]:
    state = {"step": None, "at": 0.0}

    def show(p: JobProgress) -> None:
        now = time.monotonic()
        if p.step != state["step"] or now - state["at"] >= 2.0 or p.done:
            state["step"], state["at"] = p.step, now
            print(p.line(), file=sys.stderr, flush=True)

    return show


def cmd_run(args: argparse.Namespace) -> int:
    from core.fleet.outputs import read_cluster_scores

    result = run_jobs(args.input, args.output, master=args.master,
                      progress=None if args.quiet else stderr_progress(), threshold_percent=args.threshold,
                      shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory,
                      executor_timeout=args.executor_timeout)
    counts = ", ".join(f"{name} {n:,} rows" for name, n in result.rows.items())
    print(f"wrote {result.output}: {counts} ({result.clusters} clusters, {result.seconds:.1f} s on {result.master})")
    scores = read_cluster_scores(result.output).head(10)
    if len(scores):
        print(scores[["rank", "cluster", "imbalance_score", "brokers", "partitions", "replica_cv", "leader_cv",
                      "under_replicated", "offline", "rack_violations", "brokers_over_leader_threshold"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="core/fleet/jobs.py",
                                     description="Keel fleet jobs: broker metrics, per-topic skew and cluster "
                                                 "imbalance scores of a fleet store.")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    ours = not session_running()
    try:
        return cmd_run(args)
    except KeelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if ours:
            stop_session()


if __name__ == "__main__":
    sys.exit(main())
