"""`python -m core fleet ...`: the fleet store and the fleet jobs on the command line.

    fleet collect  --config CLUSTERS --out STORE [--cluster NAME ...] [--sizes CLUSTER=FILE ...] [--parallel N]
                   [--every DURATION [--count N]] [--history] [--spark MASTER]
    fleet export   --snapshot FILE --out STORE [--sizes FILE] [--cluster NAME]
    fleet generate --clusters N --out STORE [--seed S] [--partitions-total P | --scale F]
    fleet run      --input STORE --output DIR [--master local[*]] [--driver-memory 6g]

Handlers return an exit status and raise KeelError for anything a person must fix (core.cli prints it). Nothing
here imports pyspark until `fleet run` is actually run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from core.errors import ValidationError
from core.fleet.options import add_run_arguments


def register(subparsers) -> None:
    p = subparsers.add_parser("fleet", help="fleet store (Parquet) and the Spark jobs that rank clusters by imbalance",
                              description="Snapshot many clusters into a Parquet fleet store, or generate a "
                                          "synthetic one, and run the Spark jobs that rank the clusters by "
                                          "imbalance.")
    sub = p.add_subparsers(dest="fleet_command", required=True, metavar="SUBCOMMAND")

    c = sub.add_parser("collect", help="snapshot every configured cluster into the store (one line per cluster)")
    c.add_argument("--config", metavar="CLUSTERS",
                   help="Keel config listing the clusters (default: $KEEL_CONFIG, else keel.toml)")
    c.add_argument("--out", required=True, metavar="STORE", help="fleet store directory (created if needed)")
    c.add_argument("--cluster", action="append", metavar="NAME", help="only this cluster (repeatable)")
    c.add_argument("--sizes", action="append", default=[], metavar="CLUSTER=FILE",
                   help="kafka-log-dirs.sh --describe output for a cluster's replica sizes (repeatable)")
    c.add_argument("--progress", action="store_true", help="also report each cluster's snapshot loading on stderr")
    c.add_argument("--parallel", type=_positive("--parallel", 256), metavar="N",
                   help="clusters read at once (default: min(8, clusters))")
    c.add_argument("--every", type=interval, metavar="DURATION",
                   help="collect again every DURATION (e.g. 15m, 1h, 30s) until Ctrl-C, keeping each capture in "
                        "STORE/history/ (implies --history)")
    c.add_argument("--count", type=_positive("--count", 10**9), metavar="N", help="with --every: stop after N rounds")
    c.add_argument("--history", action="store_true",
                   help="also keep this capture in STORE/history/ (the latest one is replaced either way)")
    c.add_argument("--spark", metavar="MASTER",
                   help="read each cluster in a Spark task on MASTER (spark://HOST:PORT, local[N], yarn, k8s://...) "
                        "instead of in this process; the store is written here. The executors need Keel installed "
                        "(with --parallel: clusters in flight, default min(64, clusters))")
    c.set_defaults(func=cmd_collect)

    e = sub.add_parser("export", help="write one snapshot JSON file into the store")
    e.add_argument("--snapshot", required=True, metavar="FILE", help="snapshot JSON (python -m core snapshot)")
    e.add_argument("--out", required=True, metavar="STORE", help="fleet store directory (created if needed)")
    e.add_argument("--sizes", metavar="FILE", help="kafka-log-dirs.sh --describe output (replica sizes)")
    e.add_argument("--cluster", metavar="NAME", help="cluster name (default: the snapshot's, else the file name)")
    e.set_defaults(func=cmd_export)

    g = sub.add_parser("generate", help="write a synthetic fleet with realistic skews (demos, benchmarks)")
    g.add_argument("--clusters", type=int, default=10, metavar="N", help="cluster count (default 10)")
    g.add_argument("--out", required=True, metavar="STORE", help="fleet store directory (created if needed)")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0): same seed, same fleet")
    size = g.add_mutually_exclusive_group()
    size.add_argument("--partitions-total", type=int, metavar="P", help="partitions over all clusters")
    size.add_argument("--scale", type=float, default=1.0, metavar="F",
                      help="F x 70,000 partitions per cluster on average (default 1)")
    g.add_argument("--max-partitions", type=int, default=200_000, metavar="P", help="per cluster (default 200,000)")
    g.add_argument("--min-brokers", type=int, default=3, metavar="N", help="per cluster (default 3)")
    g.add_argument("--max-brokers", type=int, default=300, metavar="N", help="per cluster (default 300)")
    g.add_argument("--quiet", action="store_true", help="no line per cluster")
    g.set_defaults(func=cmd_generate)

    r = sub.add_parser("run", help="run the fleet jobs (Spark): broker metrics, per-topic skew, cluster scores")
    add_run_arguments(r)
    r.set_defaults(func=cmd_run)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_INTERVAL = 7 * 86400.0


def interval(text: str) -> float:
    """--every: a duration such as 30s, 15m, 1h, 1d (a bare number is seconds), in (0, 7 days]."""
    refusal = f"expected a duration such as 30s, 15m, 1h or 1d (at most 7d), got {text[:40]!r}"
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:], None)
    try:
        value = float(t[:-1] if unit else t) * (unit or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(refusal) from None
    if not (math.isfinite(value) and 0 < value <= MAX_INTERVAL):
        raise argparse.ArgumentTypeError(refusal)
    return value


def _positive(option: str, maximum: int):
    def parse(text: str) -> int:
        refusal = f"must be a whole number from 1 to {maximum:,}, got {text[:40]!r}"
        try:
            value = int(text.strip()[:40])
        except ValueError:
            raise argparse.ArgumentTypeError(refusal) from None
        if not 1 <= value <= maximum:
            raise argparse.ArgumentTypeError(refusal)
        return value

    parse.__name__ = "whole number"
    return parse


def _sizes_option(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise ValidationError(f"--sizes {v!r}: expected CLUSTER=FILE")
        out[name] = path
    return out


def _check_sizes_file(path: str, option: str) -> None:
    from core.balance.sizes import MAX_LOG_DIRS_BYTES
    from core.cli.io import check_input

    check_input(path, option, limit=MAX_LOG_DIRS_BYTES, what="log-dirs",
                why="kafka-log-dirs.sh --describe of ~6 million replicas")


def cmd_collect(args: argparse.Namespace) -> int:
    from core.cli.io import check_output_dir
    from core.policy.config import load_config
    from core.fleet.export import collect

    if args.count is not None and args.every is None:
        raise ValidationError("--count counts the rounds of --every: give --every DURATION too")
    if args.spark is not None:
        from core.fleet.spark import check_master_url

        check_master_url(args.spark)
        if args.progress:
            raise ValidationError("--progress reports the snapshot reading of this process; with --spark the "
                                  "clusters are read on the executors: leave out --progress")
    check_output_dir(args.out, "--out")
    config = load_config(args.config)
    sizes = _sizes_option(args.sizes)
    for name, path in sizes.items():
        _check_sizes_file(path, f"--sizes (cluster {name})")
    names = args.cluster or list(config.clusters)
    print(f"collecting {len(names)} cluster(s) into {args.out}", file=sys.stderr)

    def show(res) -> None:
        print(res.line(), flush=True)

    def reading(cluster: str, stage: str, done: int, total: int) -> None:
        if done >= total:
            print(f"  {cluster}: {stage} {done:,}/{total:,}", file=sys.stderr, flush=True)

    history = args.history or args.every is not None

    def round_() -> bool:
        from core.audit.store import default_actor
        from core.fleet.collect_run import store_lock

        with store_lock(args.out, default_actor()):  # not beside the dashboard's "Collect now" or another CLI's
            return _one_round()

    def _one_round() -> bool:
        if args.spark is not None:
            from core.fleet.collect_spark import collect_spark

            results = collect_spark(config, args.out, args.spark, clusters=names, sizes=sizes, progress=show,
                                    parallel=args.parallel, history=history)
        else:
            results = collect(config, args.out, clusters=names, sizes=sizes, progress=show, parallel=args.parallel,
                              read_progress=reading if args.progress else None, history=history)
        failed = [r.cluster for r in results if not r.ok]
        if failed:
            print(f"error: {len(failed)} of {len(results)} cluster(s) failed and were skipped: {', '.join(failed)}",
                  file=sys.stderr)
        return not failed

    if args.spark is None:
        return _rounds(args, round_)
    from core.fleet.collect_spark import spark_session
    from core.fleet.spark import session_running, stop_session

    ours = not session_running()
    try:
        # started before the first round: a refusal comes before any round, and --every's rounds do not count it
        spark_session(args.spark)
        return _rounds(args, round_)
    finally:
        if ours:  # the session lives through every round of --every; stop only one this command started
            stop_session()


def _rounds(args: argparse.Namespace, round_) -> int:
    """One round, or a round every `--every` until --count rounds or Ctrl-C."""
    if args.every is None:
        return 0 if round_() else 1
    rounds, all_ok = 0, True
    while args.count is None or rounds < args.count:
        started = time.monotonic()
        all_ok = round_() and all_ok  # Ctrl-C inside a round: the clusters being written finish, then exit 130
        rounds += 1
        if args.count is not None and rounds >= args.count:
            break
        # the next round starts `every` after this one started (at once if this one took longer)
        wait = args.every - (time.monotonic() - started)
        try:  # the notice inside: a Ctrl-C right after it (the earliest a user sees the round done) is between rounds
            print(f"round {rounds} done; next in {max(wait, 0):.0f} s (Ctrl-C stops)", file=sys.stderr, flush=True)
            if wait > 0:
                time.sleep(wait)
        except KeyboardInterrupt:  # between rounds: nothing is half done, a clean stop
            print(f"stopped after {rounds} complete round(s)", file=sys.stderr)
            break
    return 0 if all_ok else 1


def cmd_export(args: argparse.Namespace) -> int:
    from core.cli.io import check_input, check_output_dir
    from core.fleet.export import export_file
    from core.model import MAX_SNAPSHOT_BYTES

    # Checked before anything is read or written: a snapshot is read whole, and a store half made is left behind.
    check_input(args.snapshot, "--snapshot", limit=MAX_SNAPSHOT_BYTES, what="snapshot", why="~2 million partitions")
    if args.sizes:
        _check_sizes_file(args.sizes, "--sizes")
    check_output_dir(args.out, "--out")
    res = export_file(args.snapshot, args.out, cluster=args.cluster, sizes_path=args.sizes)
    print(res.line())
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from core.cli.io import check_output_dir
    from core.fleet.generate import FleetSpec, generate_fleet

    check_output_dir(args.out, "--out")
    spec = FleetSpec(clusters=args.clusters, seed=args.seed, partitions_total=args.partitions_total,
                     scale=args.scale, max_partitions=args.max_partitions, min_brokers=args.min_brokers,
                     max_brokers=args.max_brokers)
    spec.validate()
    started = time.monotonic()

    def show(i: int, n: int, c) -> None:
        skews = ", ".join(c.skews) or "none"
        print(f"[{i}/{n}] {c.name}: {c.brokers} brokers, {c.racks} racks, {c.topics:,} topics, "
              f"{c.partitions:,} partitions, {c.replicas:,} replicas; skews: {skews}", file=sys.stderr, flush=True)

    res = generate_fleet(spec, args.out, progress=None if args.quiet else show)
    print(f"wrote {args.out}: {len(res.clusters)} clusters, {res.brokers:,} brokers, {res.partitions:,} partitions, "
          f"{res.replicas:,} replica rows in {time.monotonic() - started:.1f} s")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from core.cli.io import check_output_dir
    from core.fleet import jobs
    from core.fleet.spark import session_running, stop_session

    check_output_dir(args.output, "--output")  # before Spark starts (seconds) and runs the jobs (minutes)
    ours = not session_running()
    try:
        return jobs.cmd_run(args)
    finally:
        if ours:  # stop only a session this command started
            stop_session()
