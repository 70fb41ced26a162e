"""`python -m core elect`: a preferred-leader election from the command line.

Prints what it writes (or, with --dry-run, would write), then waits for the controller and prints the
outcome per partition, unless --no-wait.
"""

from __future__ import annotations

import argparse
import sys

from core.cli.argtypes import WAIT, seconds, whole


def _scope(args: argparse.Namespace) -> dict:
    from core.plans import parse_election

    if args.all:
        return {"all_partitions": True}
    if args.topic is not None:
        return {"topic": args.topic}
    if args.broker is not None:
        return {"broker": args.broker}
    from core.cli.io import read_input
    from core.plans import MAX_PLAN_BYTES

    data = read_input(args.path_to_json_file, "--path-to-json-file", limit=MAX_PLAN_BYTES, what="election",
                      why="an election of every partition of a large cluster is ~10 MiB; a larger file is a mistake")
    return {"partitions": list(parse_election(data))}


def _print_selection(selection) -> None:
    print(f"{selection.scope}: {len(selection.eligible)} to elect, {len(selection.ineligible)} not eligible, "
          f"{selection.already_preferred} already led by their preferred replica")
    for c in selection.ineligible:
        print(f"  not eligible: {c.topic}-{c.partition} (leader {c.leader}, preferred {c.preferred}): {c.reason}")


def cmd_elect(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.plans import format_election
    from core.cluster import engines

    scope = _scope(args)
    with write_session(args) as w:
        session = w.handle
        plan_election, trigger, wait_for_outcome = (engines.elections(session).plan_election,
                                                    engines.elections(session).trigger,
                                                    engines.elections(session).wait_for_outcome)
        if args.dry_run:
            _, selection = plan_election(session, **scope)
            _print_selection(selection)
            print(format_election(selection.partitions) if selection.eligible else "nothing would be written")
            return 0
        done = trigger(session, w.store, cluster=w.cluster, **scope)
        _print_selection(done.selection)
        how = "asked the controller (ElectLeaders)" if engines.through_brokers(session) else \
            "wrote /admin/preferred_replica_election"
        print(f"{how}: {format_election(done.selection.partitions)}")
        if args.no_wait:
            return 0
        finished, results = wait_for_outcome(session, done.selection.partitions, timeout=args.timeout)
    for r in results:
        print(f"  {r.topic}-{r.partition}: {'elected' if r.elected else 'not elected'} (leader {r.leader}; {r.detail})")
    if not finished:
        print(f"the controller has not completed the election within {args.timeout:g} s "
              "(is a controller running?)", file=sys.stderr)
        return 1
    return 0 if all(r.elected for r in results) else 3


def register(sub) -> None:
    from core.cli.common import add_cluster_options

    p = sub.add_parser("elect", help="preferred-leader election (all, a topic, a broker, or partitions from JSON)")
    add_cluster_options(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every partition")
    which.add_argument("--topic", metavar="T", help="the partitions of one topic")
    which.add_argument("--broker", type=whole, metavar="B", help="the partitions whose preferred leader is broker B")
    which.add_argument("--path-to-json-file", metavar="F", help='{"partitions":[{"topic":"t","partition":0}]}')
    p.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
    p.add_argument("--no-wait", action="store_true", help="do not wait for the controller's outcome")
    p.add_argument("--timeout", type=seconds(WAIT), default=30.0, metavar="S", help="how long to wait for the outcome")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
    from core.cli.common import add_store_option

    add_store_option(p)
    p.set_defaults(func=cmd_elect)
