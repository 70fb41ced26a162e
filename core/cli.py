"""`python -m core ...`: every engine feature without the browser.

Each subcommand parses its arguments, calls the engine, prints, and returns an exit status:
0 success, 1 a KeelError (printed as `error: ...` on stderr), 2 a usage error (argparse).
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from core.errors import KeelError, UnknownTopicError
from core.model import ClusterSnapshot
from core import cli_leaders, cli_reassign, cli_topics
from core.fleet import commands as fleet_commands
from core.sandbox import commands as sandbox_commands

if TYPE_CHECKING:
    from core.zk.session import ZkSession


# --- shared ZooKeeper options -----------------------------------------------------------------


def add_zk_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_argument_group("ZooKeeper")
    g.add_argument("--zk", required=required, metavar="CONNECT",
                   help="ZooKeeper connect string host:port[,host:port][/chroot] (Kafka's zookeeper.connect)")
    g.add_argument("--zk-digest", metavar="USER:PASSWORD", default=os.environ.get("KEEL_ZK_DIGEST"),
                   help="digest credentials (default: $KEEL_ZK_DIGEST)")
    g.add_argument("--zk-tls-ca", metavar="PEM", help="CA bundle: connect with TLS")
    g.add_argument("--zk-tls-cert", metavar="PEM", help="client certificate for TLS")
    g.add_argument("--zk-tls-key", metavar="PEM", help="client key for TLS")
    g.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="give up connecting after S seconds (default 10)")


@contextmanager
def zk_session(args: argparse.Namespace) -> Iterator[ZkSession]:
    from core.zk.session import TlsOptions, ZkSession, ZkSettings

    tls = None
    if args.zk_tls_ca or args.zk_tls_cert:
        tls = TlsOptions(ca=args.zk_tls_ca, cert=args.zk_tls_cert, key=args.zk_tls_key)
    session = ZkSession.open(ZkSettings(connect=args.zk, digest=args.zk_digest, tls=tls,
                                        connect_timeout=args.connect_timeout))
    try:
        yield session
    finally:
        session.close()


def stderr_progress(enabled: bool) -> Callable[[str, int, int], None] | None:
    if not enabled:
        return None

    def report(stage: str, done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{stage:>8}: {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)

    return report


# --- describe / snapshot ------------------------------------------------------------------------


def _ids(ids) -> str:
    return ",".join(str(i) for i in ids)


def format_describe(snapshot: ClusterSnapshot, with_topic_lines: bool) -> str:
    """Text as `kafka-topics.sh --describe` prints it (topic line, then one line per partition)."""
    out = []
    for t in snapshot.topics:
        if with_topic_lines:
            configs = ",".join(f"{k}={v}" for k, v in sorted(t.config.items()))
            tid = f"\tTopicId: {t.topic_id}" if t.topic_id else ""
            out.append(f"Topic: {t.name}{tid}\tPartitionCount: {len(t.partitions)}\t"
                       f"ReplicationFactor: {t.replication_factor}\tConfigs: {configs}")
        for p in t.partitions:
            leader = "none" if p.leader < 0 else str(p.leader)
            line = (f"\tTopic: {t.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                    f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}")
            if p.adding_replicas:
                line += f"\tAdding Replicas: {_ids(p.adding_replicas)}"
            if p.removing_replicas:
                line += f"\tRemoving Replicas: {_ids(p.removing_replicas)}"
            if not p.has_state:
                line += "\t(no partition state yet)"
            out.append(line)
    return "\n".join(out)


def cmd_describe(args: argparse.Namespace) -> int:
    from core.health import filter_partitions, matching_topics
    from core.zk.reader import read_snapshot

    with zk_session(args) as session:
        snap = read_snapshot(session, progress=stderr_progress(args.progress))
    flags = dict(under_replicated=args.under_replicated_partitions, unavailable=args.unavailable_partitions,
                 under_min_isr=args.under_min_isr_partitions, at_min_isr=args.at_min_isr_partitions)
    if args.topic and not matching_topics(snap, args.topic):
        raise UnknownTopicError(f"Topic '{args.topic}' does not exist as expected")
    shown = filter_partitions(snap, topic_regex=args.topic, **flags)
    if args.json:
        print(shown.to_json(indent=2))
    else:
        text = format_describe(shown, with_topic_lines=not any(flags.values()))
        if text:
            print(text)
    for problem in snap.problems:
        print(f"warning: {problem.path}: {problem.error}", file=sys.stderr)
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from core.zk.reader import read_snapshot

    with zk_session(args) as session:
        snap = read_snapshot(session, cluster=args.cluster or "", progress=stderr_progress(args.progress))
    text = snap.to_json(indent=None if args.compact else 1)
    if args.output == "-":
        print(text)
    else:
        out = Path(args.output)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(out)  # never leave half a snapshot behind
        print(f"wrote {out}: {len(snap.brokers)} brokers, {len(snap.topics)} topics, "
              f"{snap.partition_count:,} partitions", file=sys.stderr)
    for problem in snap.problems:
        print(f"warning: {problem.path}: {problem.error}", file=sys.stderr)
    return 0


# --- parser ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="Keel: a console for ZooKeeper-mode Kafka.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("describe", help="topics, partitions, leaders and ISR like kafka-topics --describe")
    add_zk_options(p)
    p.add_argument("--topic", metavar="REGEX", help="only topics whose whole name matches REGEX")
    p.add_argument("--under-replicated-partitions", action="store_true", help="only under-replicated partitions")
    p.add_argument("--unavailable-partitions", action="store_true", help="only partitions without a live leader")
    p.add_argument("--under-min-isr-partitions", action="store_true", help="only partitions under min.insync.replicas")
    p.add_argument("--at-min-isr-partitions", action="store_true", help="only partitions at min.insync.replicas")
    p.add_argument("--json", action="store_true", help="print the snapshot JSON of the matching partitions")
    p.add_argument("--progress", action="store_true", help="report loading progress on stderr")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("snapshot", help="write the cluster's full snapshot JSON")
    add_zk_options(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output file, or - for stdout")
    p.add_argument("--cluster", metavar="NAME", help="cluster name recorded in the snapshot")
    p.add_argument("--compact", action="store_true", help="no indentation")
    p.add_argument("--progress", action="store_true", help="report loading progress on stderr")
    p.set_defaults(func=cmd_snapshot)

    p = sub.add_parser("assign", help="Kafka's exact replica assignment for a new topic (or new partitions)")
    p.add_argument("--brokers", required=True, metavar="ID[:RACK],...", help="brokers, e.g. 0:r1,1:r2,2:r1")
    p.add_argument("--partitions", type=int, required=True, metavar="N")
    p.add_argument("--replication-factor", type=int, required=True, metavar="R")
    p.add_argument("--fixed-start-index", type=int, default=-1, metavar="I",
                   help="first broker index (default: random, as Kafka)")
    p.add_argument("--start-partition-id", type=int, default=-1, metavar="P")
    p.add_argument("--disable-rack-aware", action="store_true", help="ignore racks (kafka-topics' flag)")
    p.add_argument("--seed", type=int, help="seed for the random start index and shift")
    p.set_defaults(func=cmd_assign)

    cli_topics.register(sub)
    cli_leaders.register(sub)
    cli_reassign.register(sub)
    fleet_commands.register(sub)
    sandbox_commands.register(sub)
    return parser


def cmd_assign(args: argparse.Namespace) -> int:
    import random

    from core.assignment import (RackAwareMode, assign_replicas, brokers_for_mode, format_assignment_json,
                                 parse_broker_list)

    mode = RackAwareMode.DISABLED if args.disable_rack_aware else RackAwareMode.ENFORCED
    brokers = brokers_for_mode(parse_broker_list(args.brokers), mode)
    assignment = assign_replicas(brokers, args.partitions, args.replication_factor, args.fixed_start_index,
                                 args.start_partition_id, random.Random(args.seed))
    print(format_assignment_json(assignment))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
