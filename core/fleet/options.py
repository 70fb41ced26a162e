"""The command-line options of a fleet run, shared by `python -m core fleet run` (core.cli.fleet) and
`spark-submit core/fleet/jobs.py`, so that neither imports the other."""

from __future__ import annotations

import argparse

from core.fleet.spark import DEFAULT_EXECUTOR_TIMEOUT
from core.health import IMBALANCE_DEFAULT_PERCENT as LEADER_THRESHOLD_PERCENT


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, metavar="STORE",
                   help="fleet store written by fleet collect / export / generate")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="output directory (absent, empty, or an earlier fleet output, which is replaced)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master: local[*] (default), local[N], spark://HOST:PORT; under spark-submit, "
                        "the master it was given")
    p.add_argument("--driver-memory", metavar="SIZE", help="driver JVM heap, e.g. 6g (in local mode, all of it)")
    p.add_argument("--shuffle-partitions", type=int, metavar="N", help="spark.sql.shuffle.partitions")
    p.add_argument("--threshold", type=int, default=LEADER_THRESHOLD_PERCENT, metavar="PERCENT",
                   help="leader.imbalance.per.broker.percentage (default 10, Kafka's)")
    p.add_argument("--executor-timeout", type=float, default=DEFAULT_EXECUTOR_TIMEOUT, metavar="S",
                   help="fail when a cluster master grants no executor within S seconds (default 30)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
