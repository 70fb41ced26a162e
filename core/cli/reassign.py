"""Reassignment commands of `python -m core`: plan, execute, verify, rollback, cancel.

`plan` reads a snapshot (a file, or live from ZooKeeper), settles a running reassignment (core.plans.settled:
the Reassign page plans on the same), and writes Kafka's reassignment JSON plus an optional report of the metrics;
`plan --import FILE` validates and scores a plan made elsewhere with the same report. Partition sizes come from
a kafka-log-dirs file (`--sizes`) or from the brokers (`--bootstrap-server`, the Admin API's describeLogDirs).
`execute`, `verify` and `rollback` act through ZooKeeper (--zk: core.zk.reassign_writes) or, without --zk, through
the brokers' Admin API (--bootstrap-server, KRaft: core.kafka.reassign_writes); `cancel` (Kafka 2.4+) always through
the Admin API, then the throttles through ZooKeeper or the same Admin API. `status` follows the running reassignment
in bytes (core.reassign_progress, sampled by core.cluster.reassign_progress) and `throttle` changes its throttle while
it runs (the engines' change_throttle).
"""

from __future__ import annotations

import argparse
import json
import sys

from core.cli.argtypes import WAIT, id_list, seconds, whole
from core.cli.common import add_store_option, UsageError
from core.errors import KeelError, ValidationError


def _ids(text: str | None, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    return id_list(text, what)


def _write(path: str, text: str, option: str = "-o") -> None:
    from core.cli.io import write_output

    write_output(path, text, option)


_PLAN_WHY = "a reassignment of every partition of a large cluster is ~20 MiB; a larger file is a mistake"


def _read_plan_input(path: str, option: str, what: str) -> bytes:
    from core.cli.io import read_input
    from core.plans import MAX_PLAN_BYTES

    return read_input(path, option, limit=MAX_PLAN_BYTES, what=what, why=_PLAN_WHY)


def cmd_plan(args: argparse.Namespace) -> int:
    from core.balance import import_plan
    from core.balance.costs import copy_seconds
    from core.balance.requests import plan
    from core.balance.sizes import MAX_LOG_DIRS_BYTES, parse_log_dirs
    from core.cli.io import check_output, naming_problems, print_problems, read_input
    from core.model import MAX_SNAPSHOT_BYTES, ClusterSnapshot
    from core.plans import parse_topics_to_move

    if args.output is None and not args.import_file:
        raise ValidationError("give the plan's output file: -o FILE (or - for stdout)")
    # Every output and input is checked before the (possibly long) planning: nothing is written unless all can be.
    for path, option in ((args.output, "-o"), (args.rollback_output, "--rollback-output"), (args.report, "--report"),
                         (args.rates_output, "--rates-output")):
        check_output(path, option)
    topics = parse_topics_to_move(_read_plan_input(args.topics_to_move_json_file, "--topics-to-move-json-file",
                                                   "topics-to-move")) if args.topics_to_move_json_file else None
    if args.sizes and args.bootstrap_server:
        raise ValidationError("give the partition sizes either from a file (--sizes) or from the brokers "
                              "(--bootstrap-server), not both")
    sizes = parse_log_dirs(read_input(args.sizes, "--sizes", limit=MAX_LOG_DIRS_BYTES, what="log-dirs",
                                      why="kafka-log-dirs.sh --describe of ~6 million replicas")) if args.sizes else None
    from core.cli.rates import rates_of, sample_rates_of

    rates = rates_of(args)
    if args.bootstrap_server:
        from core.cli.common import kafka_admin

        with kafka_admin(args, "reading partition sizes") as admin:
            sizes = admin.partition_sizes()
            if args.sample_rates:
                rates = sample_rates_of(admin, args)
    if args.snapshot:
        snap = ClusterSnapshot.from_json(read_input(args.snapshot, "--snapshot", limit=MAX_SNAPSHOT_BYTES,
                                                    what="snapshot", why="~2 million partitions"))
    elif args.zk is None and not args.bootstrap_server:
        raise UsageError("give the cluster to plan for: --snapshot FILE, --zk CONNECT or --bootstrap-server "
                         "HOST:PORT")
    else:
        from core.cli.common import read_cluster

        snap = read_cluster(args)
    print_problems(snap)
    if args.import_file:
        text = _read_plan_input(args.import_file, "--import", "reassignment")
        with naming_problems(snap):
            imported = import_plan(snap, text, sizes=sizes, wave_partitions=args.wave_partitions,
                                   wave_broker_moves=args.wave_broker_moves)
        result, plan_json, rollback_json = imported.result, imported.plan.to_json(), imported.rollback.to_json()
        warnings = imported.warnings
    else:
        # core.balance.requests: the request and the settled cluster (a running reassignment counted as done), as
        # the Reassign page plans
        with naming_problems(snap):
            result = plan(snap, args.strategy, _request(args, snap, topics, sizes, rates))
        plan_json, rollback_json, warnings = result.reassignment_json(), result.rollback_json(), result.warnings
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    from core.plans import plan_risks

    for risk in plan_risks(result.plan if not args.import_file else imported.plan, snap):
        print(f"risk: {risk} (execute refuses it without --accept-risk)", file=sys.stderr)
    r = result.report
    ratio = r.moves_over_lower_bound
    print(f"{result.strategy}: {len(result.proposed)} partitions change, {r.replicas_moved} replicas move "
          f"(lower bound {r.lower_bound}{'' if ratio is None else f', {ratio:.2f}x'}"
          f"{'' if r.bytes_moved is None else f'; {r.bytes_moved:,} bytes'}), "
          f"replica spread {r.replicas[0].spread:g} -> {r.replicas[1].spread:g}, "
          f"leader spread {r.leaders[0].spread:g} -> {r.leaders[1].spread:g}, "
          f"rack violations {r.rack_violations[0]} -> {r.rack_violations[1]}", file=sys.stderr)
    if r.traffic is not None:
        print(r.traffic.summary(), file=sys.stderr)
    seconds = copy_seconds(result, sizes, snap, args.throttle)
    if args.throttle and seconds is not None:
        print(f"copy time at {args.throttle:,} B/s: about {seconds:,.0f} s (the busiest broker's bytes per wave / "
              "throttle, waves one after another)", file=sys.stderr)
    elif args.throttle:
        print("copy time: unknown without partition sizes (--sizes or --bootstrap-server)", file=sys.stderr)
    if args.output:
        _write(args.output, plan_json)
    if args.rollback_output:
        _write(args.rollback_output, rollback_json, "--rollback-output")
    if args.report:
        _write(args.report, json.dumps(_report(result, snap, sizes, args.throttle, seconds), indent=2), "--report")
    return 0


def _report(result, snap, sizes, throttle: int | None, seconds: float | None) -> dict:
    """The plan's report (PlanResult.to_dict), the copy time at --throttle and the per-broker loads before / after
    (core.balance.shape: what the Reassign page draws)."""
    from core.balance.shape import broker_loads, shown_brokers

    before = {k: result.rollback.get(k, v) for k, v in result.target.items()}
    brokers = shown_brokers(snap, before, result.target)
    loads = broker_loads(before, result.target, brokers, sizes)
    return {**result.to_dict(), "throttle": throttle, "copy_seconds": seconds,
            "brokers": [{"broker": b, "replicas": [loads.replicas[0][i], loads.replicas[1][i]],
                         "preferred_leaders": [loads.leaders[0][i], loads.leaders[1][i]],
                         **({"bytes": [loads.bytes[0][i], loads.bytes[1][i]]} if loads.bytes else {})}
                        for i, b in enumerate(brokers)]}


def _request(args: argparse.Namespace, snap, topics, sizes, rates=None):
    from core.balance.requests import plan_request

    return plan_request(
        snap, args.strategy, topics=topics, target_brokers=_ids(args.broker_list, "--broker-list"),
        drain=_ids(args.exclude_brokers, "--exclude-brokers") or (),
        replication_factor=args.replication_factor, sizes=sizes, rates=rates, rate_tolerance=args.rate_tolerance,
        max_moves=args.max_moves, seed=args.seed, rack_aware=not args.disable_rack_aware,
        per_topic_spread=args.per_topic_spread, wave_partitions=args.wave_partitions,
        wave_broker_moves=args.wave_broker_moves)


def _plan_file(path: str):
    from core.plans import parse_reassignment

    return parse_reassignment(_read_plan_input(path, "--reassignment-json-file", "reassignment"))


def cmd_execute(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cluster import engines
    from core.errors import RiskNotAcceptedError

    plan = _plan_file(args.reassignment_json_file)
    pol = None
    if args.auto_throttle is not None:  # checked before anything is written
        from core.cli.auto_throttle import check_needs, policy_of

        check_needs(args)
        pol = policy_of(args, args.auto_throttle)
    throttle = args.throttle if pol is None or args.throttle else pol.floor  # the loop starts from the floor
    with write_session(args) as w:
        session, store = w.handle, w.store
        execute = engines.reassignments(session).execute
        try:
            done = execute(session, store, plan, cluster=w.cluster, throttle=throttle)
        except RiskNotAcceptedError as e:
            for risk in e.risks:
                print(f"warning: {risk}" + (" (accepted with --accept-risk)" if args.accept_risk else ""),
                      file=sys.stderr)
            if not args.accept_risk:
                raise RiskNotAcceptedError(
                    f"refused: {len(e.risks)} risk(s) shown above need an explicit confirmation; nothing was written",
                    e.risks, hint="re-run with --accept-risk to execute it anyway") from None
            # exactly the risks shown: one that appears only on the engine's next read is refused again
            done = execute(session, store, plan, cluster=w.cluster, throttle=throttle,
                           accept_risks=e.risks)
        if pol is not None:
            _executed(args, done)
            from core.cli.auto_throttle import run_loop

            return run_loop(args, w, pol, plan=plan)
    _executed(args, done)
    return 0


def _executed(args: argparse.Namespace, done) -> None:
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # One rollback instruction: Keel's (the action history keeps the current assignment and the throttle it ran
    # with). Kafka's "Save this to use as the --reassignment-json-file option during rollback" beside it told the
    # operator to do by hand what `rollback --action` does.
    print(f"Current partition replica assignment (saved as the rollback of action {done.action_id})\n\n"
          + done.rollback.to_json() + "\n")
    print(f"Successfully started reassignment of {done.partitions} partitions (action {done.action_id})"
          + (f"; throttle {done.throttles.rate:,} B/s on brokers {','.join(map(str, done.throttles.brokers))}"
             if done.throttles else ""))
    print(f"To roll it back once it has completed: {rollback_command(args, done.action_id)}", flush=True)


def rollback_command(args: argparse.Namespace, action_id: int) -> str:
    """The rollback of `action_id`, shell-quoted, with the --zk, --cluster and --store execute was given."""
    import shlex

    where = ["--zk", args.zk] if getattr(args, "zk", None) is not None else ["--bootstrap-server",
                                                                            args.bootstrap_server]
    argv = ["python", "-m", "core", "rollback", *where, "--action", str(action_id)]
    for option, value in (("--cluster", args.cluster), ("--store", args.store)):
        if value:
            argv += [option, value]
    return shlex.join(argv)


def cmd_verify(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cluster import engines
    from core.plans import ReassignStatus

    COMPLETE, GONE = ReassignStatus.COMPLETE, ReassignStatus.GONE
    plan = _plan_file(args.reassignment_json_file)
    with write_session(args) as w:
        result = engines.reassignments(w.handle).verify(w.handle, w.store, plan, cluster=w.cluster)
    print("Status of partition reassignment:")
    for p in result.partitions:
        line = f"Reassignment of partition {p.topic}-{p.partition} is {p.status}."
        if p.status == GONE:
            line = (f"Partition {p.topic}-{p.partition} does not exist (its topic was deleted, or never existed): "
                    "nothing to wait for.")
        elif p.status not in (COMPLETE, "in progress"):
            line += f" (replicas {','.join(map(str, p.replicas))}, target {','.join(map(str, p.target))})"
        print(line)
    if result.throttles_removed:
        print("Throttle was removed.")
    from core.cli.auto_throttle import loop_notes

    loop_notes(w.store, w.cluster, settle="the reassignment completed: verify removed the throttles"
               if result.complete else None)
    return 0 if result.complete else 3


def cmd_rollback(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cluster import engines
    from core.writes import AS_RECORDED

    throttle = None if args.no_throttle else AS_RECORDED if args.throttle is None else args.throttle
    with write_session(args) as w:
        done = engines.reassignments(w.handle).rollback(w.handle, w.store, args.action, cluster=w.cluster,
                                                        throttle=throttle)
    print(f"Successfully started the rollback of action {args.action}: {done.partitions} partitions "
          f"(action {done.action_id})")
    chosen = done.rollback_throttle
    line = f"Rollback {chosen.describe()}"
    if done.throttles:
        line += f", on brokers {','.join(map(str, done.throttles.brokers))} until verify"
    elif chosen.rate:
        line += ": no replica moves, so no throttle was set"
    if args.throttle is None and not args.no_throttle:  # the default: say how to choose another
        line += ("; --throttle BYTES_PER_S to change it, --no-throttle to run it unthrottled" if chosen.rate
                 else "; --throttle BYTES_PER_S to throttle it")
    print(line + ".")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from core.cli.common import kafka_admin, write_session
    from core.cluster import engines
    from core.plans import format_reassignment

    if not args.bootstrap_server:
        raise ValidationError("cancel needs Kafka's Admin API (Kafka 2.4+): give --bootstrap-server "
                              "HOST:PORT[,HOST:PORT]; ZooKeeper alone cannot cancel a running reassignment",
                              hint="without it: wait for the reassignment to finish (verify), then roll it back")
    partitions = None if args.all else list(_plan_file(args.reassignment_json_file).assignment())
    with write_session(args) as w, kafka_admin(args, "cancel") as admin:
        done = engines.cancel(w.handle, w.store, admin, cluster=w.cluster, partitions=partitions,
                              preserve_throttles=args.preserve_throttles)
    if done.cancelled:
        print(f"Successfully cancelled partition reassignment{'s' if len(done.cancelled) > 1 else ''} for: "
              + ",".join(f"{t}-{p}" for t, p in done.cancelled) + f" (action {done.action_id})")
    else:
        print("None of the specified partition reassignments are active.")
    if done.not_running and not args.all and done.cancelled:
        print("Not running (nothing to cancel): " + ",".join(f"{t}-{p}" for t, p in done.not_running))
    if done.throttles_removed:
        print("Throttle was removed.")
    if done.reordered:
        print("note: Kafka puts a cancelled partition back on its original replicas in the order of the "
              "reassignment (target first), not in their original order, so its preferred leader changed for: "
              + ", ".join(f"{t}-{p} ({','.join(map(str, now))} instead of {','.join(map(str, was))})"
                          for (t, p), now, was, _ in done.reordered)
              + ". This reassignment restores the order without moving data:", file=sys.stderr)
        print(format_reassignment({key: was for key, _, was, _ in done.reordered}), file=sys.stderr)
    return 0


# --- following a reassignment in bytes, and its throttle (issue 28) -----------------------------------------------

MEASURE_SECONDS = 5.0  # a one-shot status samples twice, this far apart, when it holds no earlier sample to compare


def _load_samples(path: str | None, cluster: str):
    import os

    from core.reassign_progress import samples_from_json

    if not path or not os.path.exists(path):
        return ()
    from core.cli.io import read_input

    text = read_input(path, "--samples", limit=64 * 1024 * 1024, what="samples",
                      why="a minute of samples of 100,000 moving partitions is a few MB")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ValidationError(f"--samples {path} is not JSON: {e}",
                              hint="give a file `status --samples FILE` wrote, or a new file name") from None
    return samples_from_json(doc, cluster)


def _save_samples(path: str, samples, cluster: str) -> None:
    import os

    from core.reassign_progress import samples_to_json

    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(samples_to_json(samples, cluster), f, separators=(",", ":"))
    os.replace(tmp, path)  # a watcher killed mid-write leaves the previous file whole


def _print_status(p, *, as_json: bool, watching: bool, loops: list[dict] = ()) -> None:
    import time

    from core.reassign_progress import format_bytes, format_seconds, line

    for loop in loops:  # stderr: stdout keeps one line (or JSON object) per interval for scripts reading --watch
        print(f"note: {loop['note']}", file=sys.stderr, flush=True)
    if as_json:
        print(json.dumps({**p.to_dict(), "auto_throttle_loops": list(loops)},
                         separators=(",", ":") if watching else (", ", ": "), indent=None if watching else 2),
              flush=True)
        return
    if not p.partitions:
        print(f"{time.strftime('%H:%M:%S', time.localtime(p.at))}  No reassignment is running.", flush=True)
        return
    print(f"{time.strftime('%H:%M:%S', time.localtime(p.at))}  {line(p)}", flush=True)
    if watching:
        return
    if p.eta is not None and p.eta_note:
        print(f"ETA: {p.eta_note}")
    print("\nBroker  Partitions  Copied      Total       %       Rate/s")
    for b in p.brokers:
        print(f"{b.broker:<7} {b.partitions:<11} {format_bytes(b.copied):<11} {format_bytes(b.total):<11} "
              f"{100 * b.fraction:<7.1f} {format_bytes(b.rate)}")
    print("\nSlowest partitions (least copied first):")
    for x in p.partitions[:10]:
        state = "finished" if x.finished else f"{format_bytes(x.rate)}/s"
        left = "" if x.finished or not x.rate else f", {format_seconds(x.remaining / x.rate)} at its rate"
        print(f"  {x.topic}-{x.partition}: {format_bytes(x.copied)} of {format_bytes(x.total)} "
              f"({100 * x.fraction:.1f} %) to broker(s) {','.join(str(r.broker) for r in x.replicas)}, {state}{left}")
    if len(p.partitions) > 10:
        print(f"  ... and {len(p.partitions) - 10:,} more (--json lists them all)")


def cmd_status(args: argparse.Namespace) -> int:
    """The running reassignment in bytes (core.reassign_progress), once or every --watch seconds."""
    import time
    from contextlib import ExitStack

    from core.cli.common import kafka_admin, zk_session
    from core.cluster import reassign_progress as sampler
    from core.reassign_progress import progress, record

    if not args.bootstrap_server:
        raise ValidationError(
            "status measures the bytes copied from the replicas' log sizes, which only the brokers report "
            "(describeLogDirs): give --bootstrap-server HOST:PORT[,HOST:PORT]",
            hint="with --zk too for a ZooKeeper-mode cluster (the running reassignment is read there); "
                 "--bootstrap-server alone for KRaft")
    cluster = args.cluster or args.zk or args.bootstrap_server
    samples = _load_samples(args.samples, cluster)
    with ExitStack() as stack:
        admin = stack.enter_context(kafka_admin(args, "status"))
        handle = stack.enter_context(zk_session(args)) if args.zk is not None else admin

        def measure():
            nonlocal samples
            samples = record(samples, sampler.take(handle, admin, samples[-1] if samples else None), args.window)
            if args.samples:
                _save_samples(args.samples, samples, cluster)
            return progress(samples, args.window)

        p = measure()
        if args.watch is None:
            if p.rate is None and p.running:  # one sample gives no rate: a second a few seconds later does
                time.sleep(MEASURE_SECONDS)
                p = measure()
            _print_status(p, as_json=args.json, watching=False, loops=_loops(args))
            return 0
        while True:
            _print_status(p, as_json=args.json, watching=True, loops=_loops(args))
            if not p.running:
                return 0
            time.sleep(args.watch)
            p = measure()


def _loops(args: argparse.Namespace) -> list[dict]:
    """This cluster's auto-throttle loops (alive, or dead with the rate left) from History, every --watch interval."""
    from core.audit.store import Store
    from core.cli.common import cluster_name
    from core.cluster import auto_throttle as loop

    try:
        return [{"id": row.id, "pid": row.pid, "host": row.host, "state": state, "note": note}
                for row, state, note in loop.loops_report(Store(args.store), cluster_name(args))]
    except KeelError as e:  # a status without a readable history still shows the bytes
        return [{"id": None, "state": "unknown", "note": f"the auto-throttle loops could not be read: {e}"}]


def cmd_throttle(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cluster import engines

    rate = None if args.unthrottled else args.rate
    with write_session(args) as w:
        done = engines.reassignments(w.handle).change_throttle(w.handle, w.store, rate, cluster=w.cluster)
    brokers = ",".join(map(str, done.throttles.brokers))
    was = (f"{done.previous:,} B/s" if done.previous is not None
           else "unthrottled" if not any(done.previous_rates.values())
           else "per broker " + ", ".join(f"{b}: {v or 'none'}" for b, v in sorted(done.previous_rates.items())))
    now = f"The inter-broker throttle limit was set to {rate} B/s" if rate else "The inter-broker throttle was removed"
    print(f"{now} on brokers {brokers} ({done.partitions} moving partitions; it was {was}) (action {done.action_id})")
    where = ["--zk", args.zk] if args.zk is not None else ["--bootstrap-server", args.bootstrap_server]
    if done.previous is not None or not any(done.previous_rates.values()):
        import shlex

        back = ["--rate", str(done.previous)] if done.previous is not None else ["--unthrottled"]
        print("To undo it: " + shlex.join(["python", "-m", "core", "throttle", *where, *back]))
    return 0


def register(sub) -> None:
    from core.balance import STRATEGIES
    from core.cli.common import add_bootstrap_option, add_cluster_options, add_zk_options
    from core.cli.rates import sampling

    p = sub.add_parser("plan", help="compute a reassignment plan (Kafka's reassignment JSON)")
    add_zk_options(p, required=False)
    p.add_argument("--snapshot", metavar="FILE", help="plan from a snapshot file instead of --zk")
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="balanced")
    p.add_argument("--topics-to-move-json-file", metavar="F", help='{"topics":[{"topic":"t"}],"version":1}')
    p.add_argument("--broker-list", metavar="1,2,3", help="target brokers (default: every alive broker)")
    p.add_argument("--exclude-brokers", metavar="4,5", help="brokers to drain")
    p.add_argument("--replication-factor", type=whole, metavar="R", help="change every planned topic's RF to R")
    p.add_argument("--sizes", metavar="LOGDIRS.json", help="kafka-log-dirs.sh --describe output, for byte balance")
    add_bootstrap_option(p, "read the partition sizes from the brokers (Admin API describeLogDirs) instead of "
                            "a --sizes file")
    p.add_argument("--rates", metavar="RATES.json",
                   help='partition write rates for the write-rate goal: {"topic-partition": bytes_per_s, ...} or '
                        '[{"topic", "partition", "bytes_per_s"}, ...] (what --rates-output writes)')
    p.add_argument("--sample-rates", type=sampling, metavar="SECONDS[:N]",
                   help="measure the write rates (needs --bootstrap-server): N samples (default 2) of every "
                        "replica's log size, SECONDS apart; each sample is one describeLogDirs per broker")
    p.add_argument("--rate-tolerance", type=float, default=0.10, metavar="FRACTION",
                   help="with rates: each broker's bytes written within this fraction of its target (default 0.1)")
    p.add_argument("--rates-output", metavar="FILE", help="write the rates --sample-rates measured (a --rates file)")
    p.add_argument("--max-moves", type=whole, metavar="N", help="move at most N replicas")
    p.add_argument("--seed", type=whole, default=0)
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument("--per-topic-spread", action="store_true", help="also spread each topic evenly (more moves)")
    p.add_argument("--wave-partitions", type=whole, metavar="K", help="waves of at most K moving partitions")
    p.add_argument("--wave-broker-moves", type=whole, metavar="L", help="waves of at most L moves per broker")
    p.add_argument("--import", dest="import_file", metavar="FILE",
                   help="validate and score a reassignment JSON made elsewhere (same report; -o is optional)")
    p.add_argument("-o", "--output", metavar="FILE", help="the plan (reassignment JSON), - for stdout")
    p.add_argument("--rollback-output", metavar="FILE", help="the current assignment of the changed partitions")
    p.add_argument("--report", metavar="FILE", help="the metrics report (JSON): the plan's metrics, the per-broker "
                                                    "loads before / after and, with --throttle, the copy time")
    p.add_argument("--throttle", type=whole, metavar="BYTES_PER_S",
                   help="estimate the copy time at this replication throttle (needs partition sizes: --sizes or "
                        "--bootstrap-server), as the Reassign page does")
    p.set_defaults(func=cmd_plan)

    for name, fn, helptext in (("execute", cmd_execute, "start a reassignment (kafka-reassign-partitions --execute)"),
                               ("verify", cmd_verify, "check a reassignment; removes throttles once complete")):
        p = sub.add_parser(name, help=helptext)
        add_cluster_options(p)
        p.add_argument("--reassignment-json-file", required=True, metavar="F")
        if name == "execute":
            from core.cli.auto_throttle import add_loop_options

            p.add_argument("--throttle", type=whole, metavar="BYTES_PER_S",
                           help="replication throttle (with --auto-throttle: the starting rate, default the floor)")
            add_loop_options(p, budget_option="--auto-throttle")
            p.add_argument("--accept-risk", action="store_true",
                           help="execute even though Keel warned of a risk (a partition with no live in-sync "
                                "replica: the reassignment cannot complete until its broker returns); accepts the "
                                "risks shown, no others")
        p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
        add_store_option(p)
        p.set_defaults(func=fn)

    p = sub.add_parser("rollback", help="execute the rollback saved with a reassignment, once it has finished",
                       description="Move the partitions of a reassignment Keel executed back to the replicas they had "
                                   "before it (saved in the action history when it was executed), once no "
                                   "reassignment is running. The rollback is throttled at the rate the reassignment "
                                   "ran with unless --throttle or --no-throttle says otherwise; verify removes the "
                                   "throttle once it is complete.")
    add_cluster_options(p)
    p.add_argument("--action", type=whole, required=True, metavar="ID",
                   help="the reassignment's action id (printed by execute; History lists them)")
    rate = p.add_mutually_exclusive_group()
    rate.add_argument("--throttle", type=whole, metavar="BYTES_PER_S",
                      help="replication throttle of the rollback in bytes/s, set on the brokers and topics involved "
                           "as execute --throttle does (default: the rate the reassignment ran with, from the action "
                           "history; none if it ran unthrottled)")
    rate.add_argument("--no-throttle", action="store_true",
                      help="run the rollback unthrottled even though the reassignment was throttled")
    p.add_argument("--cluster", metavar="NAME",
                   help="cluster name the rollback is recorded under in the action history (default: the --zk "
                        "connect string, as execute records it)")
    add_store_option(p, "the action history holding the reassignment")
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("status", help="follow a running reassignment in bytes: copied, rate, ETA",
                       description="The running reassignment (started by Keel or anyone else) in bytes: per partition "
                                   "what its new replicas hold against the leader's log size, per target broker and "
                                   "in total, the copy rate over the last --window seconds and the ETA. The sizes "
                                   "come from the brokers (describeLogDirs: one request per broker holding a moving "
                                   "replica, per sample); which partitions move from ZooKeeper (--zk) or the "
                                   "controller (--bootstrap-server alone: KRaft). One sample gives no rate: a "
                                   "one-shot status samples twice, 5 s apart, unless --samples holds a recent one.")
    add_zk_options(p, required=False)
    add_bootstrap_option(p, "the brokers' Admin API, required (the log sizes); without --zk the running "
                            "reassignment is read there too (KRaft)")
    p.add_argument("--json", action="store_true", help="print the progress as JSON (one object per line with --watch)")
    p.add_argument("--watch", nargs="?", type=seconds(WAIT), const=10.0, metavar="SECONDS",
                   help="print a line every SECONDS (default 10) until nothing runs")
    p.add_argument("--window", type=seconds(WAIT), default=60.0, metavar="SECONDS",
                   help="measure the copy rate over the last SECONDS of samples (default 60)")
    p.add_argument("--samples", metavar="FILE",
                   help="keep the samples in FILE between runs (created if missing): the rate of a one-shot status "
                        "is then measured since the previous run")
    p.add_argument("--cluster", metavar="NAME", help="the cluster's name in the samples file and the action history")
    add_store_option(p, "action history, where auto-throttle loops beat")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("throttle", help="raise or lower the replication throttle of a running reassignment",
                       description="Set the replication throttle of the running reassignment (started by Keel or "
                                   "anyone else), as kafka-reassign-partitions --execute --additional --throttle "
                                   "does: leader/follower.replication.throttled.rate on every broker that moves "
                                   "data, and the moving partitions' throttled-replica lists. Recorded in the action "
                                   "history with the values it replaces; prints the command that undoes it. Refused "
                                   "when no reassignment runs.")
    add_cluster_options(p)
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rate", type=whole, metavar="BYTES_PER_S", help="the new throttle, bytes per second")
    rate.add_argument("--unthrottled", action="store_true",
                      help="remove the throttle of the running reassignment (verify also removes it at the end)")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
    add_store_option(p)
    p.set_defaults(func=cmd_throttle)

    p = sub.add_parser("cancel", help="cancel a running reassignment (Kafka 2.4+, kafka-reassign-partitions --cancel)",
                       description="Cancel running reassignments through Kafka's Admin API (alterPartitionReassignments "
                                   "with no target, Kafka 2.4+): each partition goes back to its original replicas. "
                                   "Then the throttles are removed, as Kafka's --cancel does, unless "
                                   "--preserve-throttles.")
    add_zk_options(p, required=False)
    add_bootstrap_option(p, "the brokers' Admin API, required: ZooKeeper alone cannot cancel (without --zk: the "
                            "cluster is written through them alone, KRaft)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--reassignment-json-file", metavar="F", help="cancel the partitions of this plan")
    which.add_argument("--all", action="store_true", help="cancel every running reassignment")
    p.add_argument("--preserve-throttles", action="store_true", help="leave the throttles in place")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history")
    add_store_option(p)
    p.set_defaults(func=cmd_cancel)
