"""Reading the cluster: `describe` (as kafka-topics --describe prints it), `snapshot` (the snapshot JSON), and
`assign` (Kafka's exact replica assignment, no cluster needed). `broker_defaults_from_args`: the brokers' own settings
(server.properties) through --bootstrap-server, for every command whose figures depend on min.insync.replicas."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from typing import Iterable

from core.cli.argtypes import whole
from core.cli.common import add_bootstrap_option, add_zk_options, cluster_name, read_cluster, stderr_progress
from core.cli.io import check_output, write_output
from core.errors import KeelError, TooLargeError, UnknownTopicError, ValidationError
from core.model import ClusterSnapshot


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
            if snapshot.mode == "kraft":  # KIP-966's columns, as kafka-topics prints them from DescribeTopicPartitions
                line += f"\tElr: {_ids(p.elr)}\tLastKnownElr: {_ids(p.last_known_elr)}"
            if not p.has_state:
                line += "\t(no partition state yet)"
            out.append(line)
    return "\n".join(out)


def add_min_isr_options(p: argparse.ArgumentParser, what: str) -> None:
    """--bootstrap-server (+ --command-config, --kafka-timeout) and --min-isr-default, for `what`. A write command
    already has --bootstrap-server (core.cli.common.add_cluster_options): the same brokers are read then."""
    if "--bootstrap-server" not in p._option_string_actions:
        add_bootstrap_option(p, f"the brokers, to read their own settings (server.properties: min.insync.replicas) "
                                f"for {what}; without it they are unknown and --min-isr-default (else 1) is assumed")
    p.add_argument("--min-isr-default", type=whole, metavar="N",
                   help="the brokers' static min.insync.replicas (server.properties), assumed where Keel cannot read "
                        "it (no --bootstrap-server, or a broker that does not answer); topic overrides and dynamic "
                        "broker configs (ZooKeeper) win over it, as in Kafka. Default: 1")


def broker_defaults_from_args(args: argparse.Namespace, brokers: Iterable[int]):
    """The brokers' own settings (core.broker_defaults.BrokerDefaults): read from `brokers` (the live ones) through
    --bootstrap-server, else unknown with --min-isr-default (else 1) assumed. Brokers that cannot be read at all are
    an error (the figures would rest on a guess the operator did not choose); a broker that alone does not answer
    is a warning."""
    from core.broker_defaults import FROM_CLI, unknown

    assumed = getattr(args, "min_isr_default", None)
    if assumed is not None and assumed < 1:
        raise ValidationError(f"--min-isr-default must be at least 1, got {assumed}")
    if not getattr(args, "bootstrap_server", None):
        return unknown("no --bootstrap-server, so Keel reads only ZooKeeper", min_isr=assumed, assumed_from=FROM_CLI)
    from core.cli.common import kafka_admin
    from core.kafka.broker_configs import read_broker_defaults

    with kafka_admin(args, "reading the brokers' own settings") as admin:
        found = read_broker_defaults(admin, brokers, min_isr=assumed, assumed_from=FROM_CLI)
    if found.failed:
        raise KeelError(f"could not read the brokers' own settings: {found.problem}",
                        hint="check --bootstrap-server, or leave it out and give --min-isr-default N")
    for broker, why in sorted(found.unread.items()):
        print(f"warning: broker {broker}'s settings could not be read ({why}): its partitions use the values the "
              "other brokers agree on", file=sys.stderr)
    return found


def cmd_describe(args: argparse.Namespace) -> int:
    from core.health import filter_partitions, matching_topics, min_isr_note

    snap = read_cluster(args, cluster=cluster_name(args) if args.json else "", progress=stderr_progress(args.progress))
    flags = dict(under_replicated=args.under_replicated_partitions, unavailable=args.unavailable_partitions,
                 under_min_isr=args.under_min_isr_partitions, at_min_isr=args.at_min_isr_partitions)
    if args.topic and not matching_topics(snap, args.topic):
        raise UnknownTopicError(f"Topic '{args.topic}' does not exist as expected")
    defaults = None
    if flags["under_min_isr"] or flags["at_min_isr"]:  # only these depend on the brokers' settings
        defaults = broker_defaults_from_args(args, snap.alive_broker_ids)
        print(f"note: {min_isr_note(snap, defaults).text}", file=sys.stderr)
    shown = filter_partitions(snap, topic_regex=args.topic, defaults=defaults, **flags)
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
    check_output(args.output, "-o")  # before reading what may be a 200,000-partition cluster
    snap = read_cluster(args, cluster=cluster_name(args), progress=stderr_progress(args.progress))
    text = snap.to_json(indent=None if args.compact else 1)
    write_output(args.output, text, "-o")  # atomic: never half a snapshot
    if args.output != "-":
        out = Path(args.output)
        print(f"wrote {out}: {len(snap.brokers)} brokers, {len(snap.topics)} topics, "
              f"{snap.partition_count:,} partitions", file=sys.stderr)
    for problem in snap.problems:
        print(f"warning: {problem.path}: {problem.error}", file=sys.stderr)
    return 0


def cmd_assign(args: argparse.Namespace) -> int:
    import random

    from core.assignment import (RackAwareMode, assign_replicas, brokers_for_mode, format_assignment_json,
                                 parse_broker_list)
    from core.topics import MAX_NEW_PARTITIONS

    if args.partitions > MAX_NEW_PARTITIONS:  # before placing 10,000,000 partitions in memory
        raise TooLargeError(
            f"{args.partitions:,} partitions is more than Keel places in one request (at most {MAX_NEW_PARTITIONS:,})",
            hint="the topic znode must fit ZooKeeper's 1 MiB request limit (jute.maxbuffer) and the controller "
                 "creates every new partition's state in one pass; create fewer and add partitions in steps")
    mode = RackAwareMode.DISABLED if args.disable_rack_aware else RackAwareMode.ENFORCED
    brokers = brokers_for_mode(parse_broker_list(args.brokers), mode)
    assignment = assign_replicas(brokers, args.partitions, args.replication_factor, args.fixed_start_index,
                                 args.start_partition_id, random.Random(args.seed))
    print(format_assignment_json(assignment))
    return 0



def register(sub) -> None:
    p = sub.add_parser("describe", help="topics, partitions, leaders and ISR like kafka-topics --describe")
    add_zk_options(p, required=False)
    p.add_argument("--topic", metavar="REGEX", help="only topics whose whole name matches REGEX")
    p.add_argument("--under-replicated-partitions", action="store_true", help="only under-replicated partitions")
    p.add_argument("--unavailable-partitions", action="store_true", help="only partitions without a live leader")
    p.add_argument("--under-min-isr-partitions", action="store_true", help="only partitions under min.insync.replicas")
    p.add_argument("--at-min-isr-partitions", action="store_true", help="only partitions at min.insync.replicas")
    p.add_argument("--json", action="store_true", help="print the snapshot JSON of the matching partitions")
    p.add_argument("--progress", action="store_true", help="report loading progress on stderr")
    add_min_isr_options(p, "--under-min-isr-partitions and --at-min-isr-partitions")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("snapshot", help="write the cluster's full snapshot JSON")
    add_zk_options(p, required=False)
    add_bootstrap_option(p, "the brokers: read the cluster through Kafka's Admin API instead of ZooKeeper (KRaft "
                            "clusters have no ZooKeeper)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output file, or - for stdout")
    p.add_argument("--cluster", metavar="NAME",
                   help="cluster name recorded in the snapshot (default: the keel.toml cluster --zk reaches, else "
                        "the connect string)")
    p.add_argument("--compact", action="store_true", help="no indentation")
    p.add_argument("--progress", action="store_true", help="report loading progress on stderr")
    p.set_defaults(func=cmd_snapshot)

    p = sub.add_parser("assign", help="Kafka's exact replica assignment for a new topic (or new partitions)")
    p.add_argument("--brokers", required=True, metavar="ID[:RACK],...", help="brokers, e.g. 0:r1,1:r2,2:r1")
    p.add_argument("--partitions", type=whole, required=True, metavar="N")
    p.add_argument("--replication-factor", type=whole, required=True, metavar="R")
    p.add_argument("--fixed-start-index", type=whole, default=-1, metavar="I",
                   help="first broker index (default: random, as Kafka)")
    p.add_argument("--start-partition-id", type=whole, default=-1, metavar="P")
    p.add_argument("--disable-rack-aware", action="store_true", help="ignore racks (kafka-topics' flag)")
    p.add_argument("--seed", type=whole, help="seed for the random start index and shift")
    p.set_defaults(func=cmd_assign)

