"""Auto-throttle on the command line (issue 28, item 3): `execute --auto-throttle BUDGET` runs the loop after starting
the reassignment, `auto-throttle --budget BUDGET` attaches it to one already running (started by Keel or anyone
else). The loop (core.cluster.auto_throttle) prints a line per interval and every change, writes through the
engines' change_throttle (History, kind "throttle") and removes the throttles when nothing is copied any more.
`loop_notes` is what verify and status print about the loops of a cluster (alive, or dead with the rate left).
"""

from __future__ import annotations

import argparse
import sys

from core.cli.argtypes import WAIT, seconds, whole


def add_loop_options(p: argparse.ArgumentParser, *, budget_option: str) -> None:
    g = p.add_argument_group("auto-throttle (core.auto_throttle)")
    if budget_option == "--budget":
        g.add_argument("--budget", type=whole, required=True, metavar="BYTES_PER_S",
                       help="inbound budget of each broker receiving new replicas, all inbound together")
    else:
        g.add_argument("--auto-throttle", type=whole, metavar="BUDGET",
                       help="keep each receiving broker's copy inbound under BUDGET minus its other measured "
                            "inbound (leaders' produce, followers' replication), re-measured every --interval; "
                            "stays in the foreground until the reassignment completes, then removes the throttles")
    g.add_argument("--floor", type=whole, metavar="BYTES_PER_S", help="never below (default: budget / 10)")
    g.add_argument("--ceiling", type=whole, metavar="BYTES_PER_S", help="never above (default: the budget)")
    g.add_argument("--interval", type=seconds(WAIT), default=30.0, metavar="SECONDS",
                   help="measure and decide every SECONDS (default 30)")
    g.add_argument("--margin", type=float, default=0.10, metavar="FRACTION",
                   help="write only when the new rate differs from the one in force by more than this fraction "
                        "(default 0.1)")


def policy_of(args: argparse.Namespace, budget: int):
    from core.auto_throttle import policy

    return policy(budget, args.floor, args.ceiling, args.margin, args.interval)


def run_loop(args: argparse.Namespace, w, pol, *, plan=None) -> int:
    """The loop in this process, on the write session `w` (the gate admitted it), until the reassignment completes.
    Ctrl-C leaves the last rate in place (exit 130, as every command)."""
    from contextlib import ExitStack

    from core.cli.common import kafka_admin
    from core.cluster import auto_throttle as loop

    with ExitStack() as stack:
        admin = w.admin if w.session is None else stack.enter_context(kafka_admin(args, "auto-throttle"))
        loop_id = loop.begin(w.store, w.cluster, pol, owner="cli")
        print(f"auto-throttle loop #{loop_id}: budget {pol.budget:,} B/s per receiving broker, floor "
              f"{pol.floor:,}, ceiling {pol.ceiling:,}, every {pol.interval:g} s, margin {pol.margin:.0%}; Ctrl-C "
              "stops it and leaves the last rate in place", flush=True)
        loop.run(lambda: (w.handle, admin), w.store, pol, cluster=w.cluster, loop_id=loop_id, plan=plan,
                 on_line=lambda s: print(s, flush=True))
    return 0


def check_needs(args: argparse.Namespace) -> None:
    from core.errors import ValidationError

    if not args.bootstrap_server:
        raise ValidationError("auto-throttle measures the brokers' inbound from their log sizes, which only the "
                              "brokers report (describeLogDirs): give --bootstrap-server HOST:PORT[,HOST:PORT]",
                              hint="with --zk too for a ZooKeeper-mode cluster; nothing was written")


def cmd_auto_throttle(args: argparse.Namespace) -> int:
    from core.cli.common import write_session

    check_needs(args)
    pol = policy_of(args, args.budget)
    with write_session(args) as w:
        return run_loop(args, w, pol)


def loop_notes(store, cluster: str, *, settle: str | None = None) -> None:
    """Print (stderr) what the loops of `cluster` are: alive, or dead with the rate they left. With `settle` (verify
    found the reassignment complete and removed the throttles) the dead ones are closed with that reason."""
    from core.cluster import auto_throttle as loop

    from core.auto_throttle import DEAD

    for row, state, line in loop.loops_report(store, cluster):
        if settle and state == DEAD:
            line = (f"auto-throttle loop #{row.id} (pid {row.pid} on {row.host}) had died; {settle}")
        print(f"note: {line}", file=sys.stderr)
    if settle:
        loop.settle_dead(store, cluster, settle)


def register(sub) -> None:
    from core.cli.common import add_cluster_options

    p = sub.add_parser("auto-throttle", help="keep a running reassignment's throttle within an inbound budget",
                       description="Attach the auto-throttle loop to the running reassignment (started by Keel or "
                                   "anyone else): every --interval, each broker receiving new replicas is measured "
                                   "(the growth of its log sizes, describeLogDirs), and the throttle is set to the "
                                   "smallest BUDGET minus a receiving broker's other inbound, within --floor and "
                                   "--ceiling, written only past --margin (History, kind throttle). When nothing is "
                                   "copied any more the throttles are removed. If the loop dies the last rate stays; "
                                   "verify and status say so.")
    add_cluster_options(p)
    add_loop_options(p, budget_option="--budget")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
    from core.cli.common import add_store_option

    add_store_option(p)
    p.set_defaults(func=cmd_auto_throttle)
