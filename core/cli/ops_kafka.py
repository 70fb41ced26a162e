"""Operations commands that need the brokers or their files (issue 18): `log-dirs`, `log-dirs-plan`,
`log-dirs-execute` (JBOD), `consumer-groups`, and `state-changes` (state-change.log files). Registered by
core.cli.ops."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.cli.argtypes import WAIT, seconds, shown, whole
from core.cli.common import add_store_option, UsageError, add_bootstrap_option, add_zk_options, kafka_admin
from core.errors import ValidationError
from core.model import ClusterSnapshot

BOOTSTRAP_HELP = "Kafka's bootstrap servers (the Admin API)"


def snapshot_from_args(args: argparse.Namespace) -> ClusterSnapshot:
    """The cluster from --snapshot FILE, or live from --zk or the brokers (--bootstrap-server)."""
    if getattr(args, "snapshot", None):
        from core.cli.io import read_input
        from core.model import MAX_SNAPSHOT_BYTES

        return ClusterSnapshot.from_json(read_input(args.snapshot, "--snapshot", limit=MAX_SNAPSHOT_BYTES,
                                                    what="snapshot", why="~2 million partitions"))
    if getattr(args, "zk", None) is None and not getattr(args, "bootstrap_server", None):
        raise UsageError("give the cluster: --zk CONNECT, --bootstrap-server HOST:PORT or --snapshot FILE")
    from core.cli.common import read_cluster

    return read_cluster(args)


def _print_json(doc: object) -> None:
    print(json.dumps(doc, indent=2))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


# --- JBOD log dirs ----------------------------------------------------------------------------------------


def _view(args: argparse.Namespace):
    from core.logdirs import MAX_LOG_DIRS_BYTES, parse_log_dirs_view

    if args.log_dirs_file and args.bootstrap_server:
        raise ValidationError("give the log dirs either from a file (--log-dirs-file) or from the brokers "
                              "(--bootstrap-server), not both")
    if args.log_dirs_file:
        from core.cli.io import read_input

        return parse_log_dirs_view(read_input(args.log_dirs_file, "--log-dirs-file", limit=MAX_LOG_DIRS_BYTES,
                                              what="log-dirs", why="kafka-log-dirs.sh --describe of ~6 million "
                                                                   "replicas"))
    if not args.bootstrap_server:
        raise ValidationError("give the log dirs: --bootstrap-server HOST:PORT (describeLogDirs) or --log-dirs-file "
                              "FILE (the output of kafka-log-dirs.sh --describe)")
    from core.kafka.jbod import describe

    with kafka_admin(args, "describing the log dirs") as admin:
        return describe(admin)


def cmd_log_dirs(args: argparse.Namespace) -> int:
    view = _view(args)
    if args.json:
        per = view.per_broker()
        _print_json({"brokers": [{"broker": b.broker, "bytes": b.total, "imbalance": round(b.imbalance, 4),
                                  "dirs": [{"path": d.path, "error": d.error, "partitions": d.partitions,
                                            "bytes": d.bytes, "future": len(d.future)} for d in b.dirs]}
                                 for b in per]})
        return 0
    print(f"{'broker':>6}  {'log dir':<50} {'partitions':>10} {'bytes':>12}  note")
    for b in view.per_broker():
        for d in b.dirs:
            note = f"OFFLINE: {d.error}" if d.error else (f"{len(d.future)} move(s) in flight" if d.future else "")
            print(f"{b.broker:>6}  {d.path:<50} {d.partitions:>10} {_size(d.bytes):>12}  {note}")
        if len(b.online) > 1:
            print(f"{'':>6}  imbalance between its directories: {b.imbalance:.0%} of the mean "
                  f"({_size(b.spread)} between the fullest and the emptiest)")
    return 0


def cmd_log_dirs_plan(args: argparse.Namespace) -> int:
    from core.cli.io import check_output, write_output
    from core.logdirs import plan_balance

    check_output(args.output, "-o")
    view = _view(args)
    snap = snapshot_from_args(args)
    replicas = {(p.topic, p.partition): p.replicas for p in snap.partitions()}
    busy = {(p.topic, p.partition) for p in snap.partitions() if p.adding_replicas or p.removing_replicas}
    busy |= {(r.topic, r.partition) for r in snap.in_progress.reassignment}
    brokers = None
    if args.broker_list:
        items = [x.strip() for x in args.broker_list.split(",")]
        if not all(x.isascii() and x.isdigit() and len(x) <= 10 for x in items):
            raise ValidationError(f"--broker-list {shown(args.broker_list)} must be broker ids, e.g. 1,2,3")
        brokers = {int(x) for x in items}
    plan = plan_balance(view, replicas, brokers=brokers, max_moves=args.max_moves, busy=busy)
    doc = plan.document(replicas)
    write_output(args.output, json.dumps(doc, separators=(",", ":")) + "\n", "-o")
    print(f"{len(plan.moves)} replica move(s) between directories, {_size(plan.bytes_moved)}", file=sys.stderr)
    for m in plan.moves:
        print(f"  {m.topic}-{m.partition} on broker {m.broker}: {m.source} -> {m.target} ({_size(m.size)})",
              file=sys.stderr)
    for b in sorted({b for b, _ in plan.before}):
        before = [v for (x, _), v in plan.before.items() if x == b]
        after = [v for (x, _), v in plan.after.items() if x == b]
        if len(before) > 1:
            print(f"  broker {b}: spread {_size(max(before) - min(before))} -> {_size(max(after) - min(after))}",
                  file=sys.stderr)
    return 0


def cmd_log_dirs_execute(args: argparse.Namespace) -> int:
    from core.cli.io import read_input
    from core.plans import MAX_PLAN_BYTES

    text = read_input(args.reassignment_json_file, "--reassignment-json-file", limit=MAX_PLAN_BYTES,
                      what="reassignment", why="a plan of every partition of a large cluster is ~20 MiB")
    if args.dry_run:
        return _log_dirs_dry_run(args, text, snapshot_from_args(args))
    if getattr(args, "zk", None) == "":
        raise ValidationError("log-dirs-execute needs a cluster: --zk CONNECT (ZooKeeper mode), or no --zk for a "
                              "cluster read through the brokers alone (KRaft)")
    from core.cli.common import write_session
    from core.cluster import engines
    from core.kafka.jbod import execute, wait_moved

    # the gate checks the cluster's live state (a ZooKeeper -> KRaft migration, the KRaft quorum) and keel.toml's
    # roles on it, whichever way it is reached
    with write_session(args) as w, kafka_admin(args, "moving replicas between log dirs") as admin:
        moves = execute(admin, w.store, text, engines.live_snapshot(w.handle, states=True),
                        cluster=w.cluster)
        for n in moves.notes:
            print(f"note: {n}", file=sys.stderr)
        if not moves.requests:
            print("nothing to move: every replica is already in its target directory")
            return 0
        for r in moves.requests:
            print(f"{r.topic}-{r.partition} on broker {r.broker}: {r.current} -> {r.target}: accepted")
        print(f"recorded as action {moves.action_id}")
        if args.no_wait:
            return 0
        done, pending = wait_moved(admin, moves.requests, timeout=args.timeout)
    if pending:
        print(f"{len(pending)} of {len(moves.requests)} move(s) not finished within {args.timeout:g} s (the broker "
              "copies the replica, then swaps it in): check again with python -m core log-dirs", file=sys.stderr)
        return 1
    print(f"all {len(done)} replica(s) are in their target directories")
    return 0


def _log_dirs_dry_run(args: argparse.Namespace, text: bytes, snap: ClusterSnapshot) -> int:
    """The moves a log-dirs plan would make, printed; nothing asked of the brokers but describeLogDirs."""
    from core.kafka.jbod import describe
    from core.logdirs import parse_dir_plan

    replicas = {(p.topic, p.partition): p.replicas for p in snap.partitions()}
    with kafka_admin(args, "moving replicas between log dirs") as admin:
        requests, notes = parse_dir_plan(text.decode("utf-8", errors="replace"), replicas, describe(admin))
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    if not requests:
        print("nothing to move: every replica is already in its target directory")
    for r in requests:
        print(f"would move {r.topic}-{r.partition} on broker {r.broker}: {r.current} -> {r.target}")
    return 0


# --- consumer groups --------------------------------------------------------------------------------------


def cmd_consumer_groups(args: argparse.Namespace) -> int:
    from core.consumer_groups import format_describe, lag_rows, totals
    from core.kafka.groups import consumer_groups, list_group_ids

    with kafka_admin(args, "consumer groups") as admin:
        if args.list:
            for g in list_group_ids(admin):
                print(g)
            return 0
        groups = consumer_groups(admin, args.group or None)
    rows = lag_rows(groups, sort=args.sort)
    if args.json:
        _print_json({"groups": [g.to_dict() for g in groups], "totals": totals(groups)})
        return 0
    if not groups:
        print("no consumer groups")
        return 0
    if args.totals:
        print(f"{'GROUP':<30} {'STATE':<20} {'TOPIC':<30} {'PARTITIONS':>10} {'LAG':>12}")
        for t in totals(groups):
            print(f"{t['group']:<30} {t['state']:<20} {t['topic']:<30} {t['partitions']:>10} {t['lag']:>12,}")
        return 0
    for g in groups:
        print(f"group {g.group_id}: state {g.state}, {len(g.members)} member(s), total lag {g.total_lag:,}",
              file=sys.stderr)
    print(format_describe(groups, rows))
    return 0


# --- state-change logs ------------------------------------------------------------------------------------


def _partitions(values: list[str] | None) -> list[int] | None:
    if not values:
        return None
    out = []
    for v in values:
        for item in v.split(","):
            if not item.strip().isdigit() or len(item.strip()) > 10:
                raise ValidationError(f"--partition {shown(item)} is not a partition number")
            out.append(int(item))
    return out


def cmd_state_changes(args: argparse.Namespace) -> int:
    from core.cli.io import read_input
    from core.state_changes import MAX_FILE_BYTES, format_line, label_broker, merge

    logs = []
    for spec in args.files:
        label, eq, path = spec.partition("=")
        if not eq or not label.isdigit() or len(label) > 10:
            label, path = spec, spec
            broker = None
        else:
            broker = int(label)
        data = read_input(path, "state-change log", limit=MAX_FILE_BYTES, what="state-change log")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1") if b"\x00" not in data[:4096] else "\x00"
        logs.append((path, text, broker if broker is not None else label_broker(str(Path(path)))))
    timeline = merge(logs, topic=args.topic, partitions=_partitions(args.partition), start=args.start, end=args.end,
                     all_lines=args.all_lines)
    if args.json:
        _print_json(timeline.to_dict())
        return 0
    for e in timeline.entries:
        print(format_line(e))
    print(f"{len(timeline.entries):,} of {timeline.lines_read:,} dated line(s) from {len(timeline.files)} file(s) "
          f"(brokers {', '.join(map(str, timeline.brokers)) or 'unknown'})", file=sys.stderr)
    return 0


def register(sub) -> None:
    def source(p: argparse.ArgumentParser) -> None:
        add_bootstrap_option(p, BOOTSTRAP_HELP)
        p.add_argument("--log-dirs-file", metavar="FILE", help="the output of kafka-log-dirs.sh --describe instead")

    p = sub.add_parser("log-dirs", help="JBOD: partitions and bytes per broker and log directory, and imbalance")
    source(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_log_dirs)

    p = sub.add_parser("log-dirs-plan", help="JBOD: a plan (reassignment JSON with log_dirs) that evens out the "
                                             "directories of each broker")
    source(p)
    add_zk_options(p, required=False)
    p.add_argument("--snapshot", metavar="FILE", help="the cluster's snapshot instead of --zk (current replicas)")
    p.add_argument("--broker-list", metavar="1,2,3", help="only these brokers")
    p.add_argument("--max-moves", type=whole, metavar="N", help="at most N replica moves")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the plan, or - for stdout")
    p.set_defaults(func=cmd_log_dirs_plan)

    p = sub.add_parser("log-dirs-execute", help="JBOD: move replicas between the log directories of their broker "
                                                "(the log_dirs of a plan), through alterReplicaLogDirs")
    add_bootstrap_option(p, BOOTSTRAP_HELP + " (required)")
    add_zk_options(p, required=False)
    p.add_argument("--snapshot", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--reassignment-json-file", required=True, metavar="FILE")
    p.add_argument("--dry-run", action="store_true", help="show the moves; change nothing")
    p.add_argument("--no-wait", action="store_true", help="do not wait for the brokers to finish the copies")
    p.add_argument("--timeout", type=seconds(WAIT), default=120.0, metavar="S", help="how long to wait (default 120)")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
    add_store_option(p)
    p.set_defaults(func=cmd_log_dirs_execute)

    p = sub.add_parser("consumer-groups", help="consumer groups: state, members, committed offsets and lag")
    add_bootstrap_option(p, BOOTSTRAP_HELP + " (required)")
    p.add_argument("--group", action="append", metavar="G", help="only this group (repeatable; default: all)")
    p.add_argument("--list", action="store_true", help="only list the group ids")
    p.add_argument("--sort", default="lag", choices=["lag", "group", "topic", "partition", "committed", "log_end"],
                   help="row order (default: largest lag first)")
    p.add_argument("--totals", action="store_true", help="total lag per group and topic instead of per partition")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_consumer_groups)

    p = sub.add_parser("state-changes", help="merge brokers' state-change.log files into one timeline "
                                             "(as kafka.tools.StateChangeLogMerger)")
    p.add_argument("files", nargs="+", metavar="[BROKER=]FILE", help="state-change.log files (BROKER= names the "
                                                                      "broker when the lines do not)")
    p.add_argument("--topic", metavar="T")
    p.add_argument("--partition", action="append", metavar="P[,P]", help="partition(s) of --topic (repeatable)")
    p.add_argument("--start", metavar="TIME", help='from "yyyy-MM-dd HH:mm:ss,SSS" (inclusive)')
    p.add_argument("--end", metavar="TIME", help='until "yyyy-MM-dd HH:mm:ss,SSS" (inclusive)')
    p.add_argument("--all-lines", action="store_true", help="also lines that name no partition (without --topic)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_state_changes)
