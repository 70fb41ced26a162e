"""Fleet jobs at fleet scale: a synthetic fleet of ~21 million replica rows, the Spark job, and pandas on the same data.

Generates 100 clusters (about 7 million partitions at RF 3, about 21 million replica rows) into a temporary
directory, then times, in the same run:
  - generation   core.fleet.generate (numpy + pyarrow, Kafka's placement, skews)
  - spark        core.fleet.jobs.run_jobs on local[2]: broker_metrics, topic_broker, cluster_scores written as
                 Parquet (the session start is reported apart)
  - pandas       core.fleet.reference.pandas_reference on the same store (reading it included)
and checks that both give the same cluster scores and broker metrics.

    .venv/bin/python bench/fleet.py [--clusters 100] [--scale 1.0] [--master local[2]] [--driver-memory 6g]
                                    [--no-pandas] [--keep DIR]

--scale 0.1 makes every cluster ten times smaller; --clusters 10 a fleet ten times smaller. The data lives under a
temporary directory that is removed at the end (unless --keep names a directory to keep it in).
"""

from __future__ import annotations

import argparse
import gc
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path


import numpy as np  # noqa: E402

from core.fleet.generate import FleetSpec, generate_fleet  # noqa: E402
from core.fleet.outputs import read_broker_metrics, read_cluster_scores  # noqa: E402

TARGET_SECONDS = 120.0


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clusters", type=int, default=100)
    ap.add_argument("--scale", type=float, default=1.0, help="partitions per cluster: scale x 70,000 on average")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas baseline")
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    args = ap.parse_args(argv)

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="keel-bench-fleet-"))
    store, out = base / "store", base / "metrics"
    try:
        spec = FleetSpec(clusters=args.clusters, seed=args.seed, scale=args.scale)
        t = time.perf_counter()
        gen = generate_fleet(spec, store)
        gen_s = time.perf_counter() - t
        print(f"fleet:      {len(gen.clusters)} clusters, {gen.brokers:,} brokers, {gen.partitions:,} partitions, "
              f"{gen.replicas:,} replica rows, {_du(store) / 2**20:,.0f} MiB of Parquet")
        print(f"generation: {gen_s:7.1f} s  ({gen.replicas / gen_s / 1e6:.1f} M rows/s)")
        del gen
        gc.collect()

        from core.fleet.jobs import run_jobs
        from core.fleet.spark import get_session, stop_session

        t = time.perf_counter()
        spark = get_session(args.master, driver_memory=args.driver_memory,
                            shuffle_partitions=args.shuffle_partitions)
        start_s = time.perf_counter() - t
        steps: dict[str, float] = {}
        t = time.perf_counter()
        result = run_jobs(store, out, spark=spark, progress=lambda p: steps.setdefault(p.step, p.elapsed))
        spark_s = time.perf_counter() - t
        stop_session()
        verdict = "within" if spark_s <= TARGET_SECONDS else "OVER"
        print(f"spark:      {spark_s:7.1f} s  on {args.master}, driver {args.driver_memory} "
              f"(+{start_s:.1f} s session start; {verdict} the {TARGET_SECONDS:.0f} s target)  "
              + ", ".join(f"{k} {v:,}" for k, v in result.rows.items()))
        names = list(steps)
        print("            steps: " + ", ".join(f"{a} {steps[b] - steps[a]:.1f} s" for a, b in zip(names, names[1:])))

        if not args.no_pandas:
            from core.fleet.reference import pandas_reference
            from core.fleet.store import read_store

            t = time.perf_counter()
            replicas, brokers = read_store(store)
            read_s = time.perf_counter() - t
            ref = pandas_reference(replicas, brokers)
            pandas_s = time.perf_counter() - t
            del replicas, brokers
            print(f"pandas:     {pandas_s:7.1f} s  (reading {read_s:.1f} s; peak RSS of this process "
                  f"{_peak_rss_gib():.1f} GiB)")
            print(f"ratio:      spark / pandas = {spark_s / pandas_s:.2f}  "
                  f"(pandas / spark = {pandas_s / spark_s:.2f})")
            cs, bm = read_cluster_scores(out), read_broker_metrics(out)
            a = cs.sort_values("cluster", ignore_index=True)
            b = ref.cluster_scores.sort_values("cluster", ignore_index=True)
            same = (list(a.cluster) == list(b.cluster) and list(a["rank"]) == list(b["rank"])
                    and np.allclose(a.imbalance_score, b.imbalance_score, rtol=1e-9)
                    and len(bm) == len(ref.broker_metrics)
                    and (bm.replicas.to_numpy() == ref.broker_metrics.replicas.to_numpy()).all()
                    and len(ref.topic_broker) == result.rows["topic_broker"])
            print(f"check:      Spark and pandas agree: {'yes' if same else 'NO'}")
            if not same:
                return 1
        top = read_cluster_scores(out).head(5)
        print("top 5:      " + "; ".join(f"#{r.rank} {r.cluster} {r.imbalance_score:.1f}" for r in top.itertuples()))
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
