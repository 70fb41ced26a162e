"""Operations commands (issue 18): `advise-partitions`, `rack-skew`, `restart-plan`, `restart-check`;
the Admin API ones (`log-dirs*`, `consumer-groups`) and `state-changes` are in core.cli.ops_kafka, registered here.

Exit statuses: 0 success, 1 an error (`error: ...`), 2 usage; `restart-check` exits 3 when stopping the broker is
not safe now (the reasons printed), `restart-plan` exits 3 when no order keeps every partition available.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

from core.cli.argtypes import REQUEST, WAIT, seconds, whole
from core.cli.cluster import add_min_isr_options
from core.cli.common import add_bootstrap_option, add_zk_options
from core.cli.ops_kafka import snapshot_from_args as _snapshot
from core.errors import ValidationError

NOT_SAFE = 3


def _print_json(doc: object) -> None:
    print(json.dumps(doc, indent=2))


# --- advise-partitions ----------------------------------------------------------------------------------


def cmd_advise_partitions(args: argparse.Namespace) -> int:
    from core.capacity import advise_partitions

    a = advise_partitions(args.target_mbps, args.producer_mbps, args.consumer_mbps, brokers=args.brokers,
                          replication_factor=args.replication_factor, current=args.current_partitions)
    if args.json:
        _print_json(a.to_dict())
        return 0
    print(f"partitions: {a.partitions}")
    print(f"  by the producers: {a.target_mbps:g} / {a.producer_mbps:g} MB/s = {a.by_producer}")
    print(f"  by the consumers: {a.target_mbps:g} / {a.consumer_mbps:g} MB/s = {a.by_consumer}")
    print(f"  minimum {a.minimum} (bound by {a.bound_by}); {a.rounding}")
    if a.current_note:
        print(f"  {a.current_note}")
    for w in a.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print("trade-offs of more partitions:")
    for t in a.tradeoffs:
        print(f"  - {t}")
    return 0


# --- rack-skew -------------------------------------------------------------------------------------------


def cmd_rack_skew(args: argparse.Namespace) -> int:
    from core.assignment import parse_broker_list
    from core.capacity import cluster_rack_skew, rack_skew, skew_inputs

    if args.brokers:
        brokers = parse_broker_list(args.brokers)
        skew = rack_skew(brokers, skew_inputs(brokers, [], args.replication_factor), args.partitions)
    else:
        skew = cluster_rack_skew(_snapshot(args), args.replication_factor, args.partitions)
    if skew is None:
        print("not every broker has a rack: Kafka places replicas rack-unaware (evenly)")
        return 0
    if args.json:
        _print_json(skew.to_dict())
        return 0
    print(skew.summary())
    print(f"{'broker':>6} {'rack':<12} {'rack size':>9} {'rack-aware':>10} {'unaware':>8} {'even':>8} {'extra':>7}")
    for s in skew.shares:
        print(f"{s.broker:>6} {s.rack:<12} {s.rack_brokers:>9} {s.aware:>10g} {s.unaware:>8g} {s.even:>8g} "
              f"{s.extra:>+7.0%}")
    for note in skew.notes:
        print(f"note: {note}")
    return 0


# --- rolling restarts ------------------------------------------------------------------------------------


def _scoped(args: argparse.Namespace):
    """The cluster, limited to the topics --topic matches (all without it)."""
    return _scope(_snapshot(args), args)


def _scope(snap, args: argparse.Namespace):
    if not getattr(args, "topic", None):
        return snap
    from core.errors import UnknownTopicError
    from core.health import filter_partitions, matching_topics

    if not matching_topics(snap, args.topic):
        raise UnknownTopicError(f"Topic '{args.topic}' does not exist as expected")
    return filter_partitions(snap, topic_regex=args.topic)


def _defaults(args: argparse.Namespace, snap):
    """The brokers' own settings (--bootstrap-server), else --min-isr-default assumed; a note on stderr when the
    figures rest on an assumption or the brokers disagree."""
    from core.cli.cluster import broker_defaults_from_args
    from core.health import min_isr_note

    defaults = broker_defaults_from_args(args, snap.alive_broker_ids)
    basis = min_isr_note(snap, defaults)
    if basis.assumed or basis.differs:
        print(f"note: {basis.text}", file=sys.stderr)
    return defaults


def cmd_restart_plan(args: argparse.Namespace) -> int:
    from core.restarts import restart_plan

    snap = _scoped(args)
    plan = restart_plan(snap, defaults=_defaults(args, snap))
    if args.json:
        _print_json(plan.to_dict())
        return 0 if plan.keeps_available else NOT_SAFE
    if not plan.steps:
        print("no broker is running: nothing to restart")
        return 0
    print(f"restart order: {' -> '.join(map(str, plan.order))} (one broker at a time; the controller last)")
    zk = (f" --zk {args.zk}" if args.zk else "") + (f" --bootstrap-server {args.bootstrap_server}"
                                                    if args.bootstrap_server else "")
    for s in plan.steps:
        c = s.check
        moves = ", ".join(f"{n} to {'nobody' if b is None else f'broker {b}'}"
                          for b, n in c.moves_by_target().items()) or "none"
        print(f"{s.position}. broker {s.broker}" + (f" (rack {s.rack})" if s.rack else "")
              + (" [controller]" if s.is_controller else ""))
        print(f"   before stopping: python -m core restart-check{zk} --broker {s.broker} --wait 600"
              "   # waits until under-replicated = 0")
        print(f"   leaderships moving: {len(c.leader_moves)} ({moves})")
        if c.goes_offline:
            print(f"   UNAVAILABLE while it restarts: {len(c.goes_offline)} partition(s): "
                  + ", ".join(f"{r.topic}-{r.partition}" for r in c.goes_offline[:10]))
        if c.under_min_isr:
            print(f"   under min.insync.replicas while it restarts: {len(c.under_min_isr)} partition(s): "
                  + ", ".join(f"{r.topic}-{r.partition}" for r in c.under_min_isr[:10]))
        print("   stop it (controlled shutdown: SIGTERM / kafka-server-stop.sh), start it, wait until it is registered")
    print("leaders per broker: before " + ", ".join(f"{b}: {n}" for b, n in plan.leaders_before.items())
          + "; after " + ", ".join(f"{b}: {n}" for b, n in plan.leaders_after.items()))
    for note in plan.notes:
        print(f"note: {note}")
    return 0 if plan.keeps_available else NOT_SAFE


def cmd_restart_check(args: argparse.Namespace) -> int:
    from core.restarts import check_stop

    if args.wait is not None and args.wait < 0:
        raise ValidationError(f"--wait must be 0 or more seconds, got {args.wait:g}")
    deadline = time.monotonic() + (args.wait or 0)
    defaults, read_for = None, None
    with contextlib.ExitStack() as stack:
        session = None
        if args.wait and not args.snapshot and args.zk:  # one session for the whole wait
            from core.cli.common import zk_session

            session = stack.enter_context(zk_session(args))
        first = True
        while True:
            if session is not None:
                from core.zk.reader import read_snapshot

                session.sync()  # the bulk reader may sit on a lagging server of the ensemble
                snap = _scope(read_snapshot(session), args)
            else:
                snap = _scoped(args)
            if read_for != snap.alive_broker_ids:  # a broker restarted may run with another server.properties
                defaults, read_for = _defaults(args, snap), snap.alive_broker_ids
            check = check_stop(snap, args.broker, defaults=defaults,
                               ignore_under_replicated=args.allow_under_replicated)
            if check.safe or not args.wait or time.monotonic() >= deadline or args.snapshot:
                break
            if first:
                print(f"waiting up to {args.wait:g} s: {'; '.join(check.reasons())}", file=sys.stderr)
                first = False
            time.sleep(args.interval)
    if args.json:
        _print_json(check.to_dict())
    else:
        print(check.summary())
        for m in check.leader_moves[:args.limit]:
            print(f"  leader of {m.topic}-{m.partition} moves to "
                  + ("nobody (offline)" if m.to is None else f"broker {m.to}"))
        if len(check.leader_moves) > args.limit:
            print(f"  ... and {len(check.leader_moves) - args.limit} more leadership(s)")
        if check.already_unavailable:
            print(f"note: {len(check.already_unavailable)} partition(s) have no live leader already, whoever stops")
    return 0 if check.safe else NOT_SAFE


def register(sub) -> None:
    p = sub.add_parser("advise-partitions", help="how many partitions a topic needs for a target throughput")
    p.add_argument("--target-mbps", type=float, required=True, metavar="MB/S", help="target throughput Tt")
    p.add_argument("--producer-mbps", type=float, required=True, metavar="MB/S",
                   help="measured producer throughput of one partition Tp")
    p.add_argument("--consumer-mbps", type=float, required=True, metavar="MB/S",
                   help="measured consumer throughput of one partition Tc")
    p.add_argument("--brokers", type=whole, metavar="N", help="broker count: round up to a multiple of it")
    p.add_argument("--replication-factor", type=whole, metavar="R", help="for the per-broker figures")
    p.add_argument("--current-partitions", type=whole, metavar="P", help="the topic's partition count today")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_advise_partitions)

    p = sub.add_parser("rack-skew", help="extra load on the brokers of a small rack under rack-aware placement")
    add_zk_options(p, required=False)
    add_bootstrap_option(p, "the brokers: read the cluster through Kafka's Admin API instead of ZooKeeper")
    p.add_argument("--snapshot", metavar="FILE", help="a snapshot file instead of --zk")
    p.add_argument("--brokers", metavar="ID:RACK,...", help="brokers instead of a cluster, e.g. 1:a,2:a,3:b,4:c")
    p.add_argument("--replication-factor", type=whole, metavar="R", help="default: the most common one (else 3)")
    p.add_argument("--partitions", type=whole, metavar="P", help="partitions per topic (default 12 x brokers)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rack_skew)

    for name, func, text in (("restart-plan", cmd_restart_plan, "an order to restart every broker, one at a time, "
                              "that keeps every partition available"),
                             ("restart-check", cmd_restart_check, "is it safe to stop broker B now? (exit 0 safe, "
                              "3 not safe)")):
        p = sub.add_parser(name, help=text)
        add_zk_options(p, required=False)
        p.add_argument("--snapshot", metavar="FILE", help="a snapshot file instead of --zk")
        add_min_isr_options(p, "the min-ISR checks")
        p.add_argument("--topic", metavar="REGEX", help="only the partitions of topics whose whole name matches "
                                                         "(default: all; e.g. to leave out scratch topics of RF 1)")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
        if name == "restart-check":
            p.add_argument("--broker", type=whole, required=True, metavar="B")
            p.add_argument("--wait", type=seconds(WAIT), metavar="S",
                           help="re-check until safe (e.g. until under-replicated = 0), for at most S seconds")
            p.add_argument("--interval", type=seconds(REQUEST), default=1.0, metavar="S", help=argparse.SUPPRESS)
            p.add_argument("--allow-under-replicated", action="store_true",
                           help="only check availability and min ISR (e.g. with a broker down for good)")
            p.add_argument("--limit", type=whole, default=20, metavar="N", help="leadership moves listed (default 20)")

    from core.cli import migration

    migration.register(sub)  # issue 27: phases, readiness, timeline

    from core.cli import ops_kafka

    ops_kafka.register(sub)  # the Admin API and log-file commands
