"""`migration-drift`: during a ZooKeeper -> KRaft migration's dual-write, what ZooKeeper says that the brokers do not
(topics, partition states, topic and broker settings), each difference with its age (core.migration_drift,
read by core.cluster.drift). Exit 3 when a difference lasted --lasting seconds or more.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from core.cli.argtypes import WAIT, seconds, whole
from core.cli.common import UsageError, add_bootstrap_option, add_zk_options
from core.migration_drift import DEFAULT_LASTING, DriftReport

LASTING = 3


def _reads(args: argparse.Namespace) -> int:
    if args.reads is not None:
        if args.reads < 1:
            raise UsageError(f"--reads must be 1 or more, got {args.reads}")
        if args.reads > 1 and args.watch is None:
            raise UsageError("--reads N needs --watch S: the seconds between two reads")
        return args.reads
    if args.watch is None:
        return 1
    return math.ceil(args.lasting / args.watch) + 1  # the last read comes --lasting seconds after the first


def cmd_migration_drift(args: argparse.Namespace) -> int:
    from core.cli.common import kafka_admin, zk_session
    from core.cluster.drift import read_drift
    from core.migration_drift import DriftTracker

    if not args.bootstrap_server:
        raise UsageError("migration-drift compares ZooKeeper with the brokers: give --bootstrap-server "
                         "HOST:PORT[,HOST:PORT] too")
    reads = _reads(args)
    tracker = DriftTracker(lasting_after=args.lasting)
    with zk_session(args) as session, kafka_admin(args, "migration-drift") as admin:
        for n in range(1, reads + 1):
            started = time.monotonic()
            report = read_drift(session, admin, tracker, started, cluster=args.zk)
            if reads > 1:
                print(f"read {n}/{reads}: {len(report.aged)} difference(s), {len(report.lasting)} lasting",
                      file=sys.stderr)
            if n < reads:
                time.sleep(max(args.watch - (time.monotonic() - started), 0.0))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        _print(report)
    return LASTING if report.lasting else 0


def _print(report: DriftReport) -> None:
    reads = f"{report.reads} read(s)"
    if not report.aged:
        print(f"no drift: ZooKeeper and the brokers agree on topics, partition states and settings ({reads})")
        return
    print(f"{len(report.aged)} difference(s) between ZooKeeper and the brokers, {len(report.lasting)} lasting "
          f"(seen for {report.lasting_after:g} s or more; {reads}):")
    rows = [("age", "what", "key", "field", "ZooKeeper", "brokers", "")] + [
        (f"{a.age:.0f} s", a.drift.what, a.drift.key, a.drift.field, a.drift.zookeeper, a.drift.brokers,
         "LASTING" if a.lasting else "") for a in report.aged]
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def register(sub) -> None:
    p = sub.add_parser("migration-drift", help="during a ZooKeeper -> KRaft migration: what ZooKeeper says that the "
                                               "brokers do not, and for how long")
    add_zk_options(p)
    add_bootstrap_option(p, "the brokers (required): the metadata they serve is compared with ZooKeeper's")
    p.add_argument("--watch", type=seconds(WAIT), metavar="S",
                   help="read both sides again every S seconds (default: read once), enough times to see a "
                        "difference last --lasting seconds unless --reads says how many")
    p.add_argument("--reads", type=whole, metavar="N", help="how many reads with --watch")
    p.add_argument("--lasting", type=seconds(WAIT), default=DEFAULT_LASTING, metavar="S",
                   help=f"a difference seen for S seconds or more lasts: a warning, exit 3 (default "
                        f"{DEFAULT_LASTING:g})")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_migration_drift)
