"""Consumer-group writes of `python -m core`, with kafka-consumer-groups' flags: reset-offsets (--dry-run, the
default, or --execute; --export prints the tool's CSV), delete-offsets, delete-group, offsets-undo. Through the brokers'
Admin API (--bootstrap-server: ZooKeeper-mode and KRaft clusters alike), operator role, through the write gate,
audited with the offsets before the write (offsets-undo --action N puts them back). core.offset_reset decides,
core.kafka.group_writes reads and writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from typing import Iterator

from core.cli.common import add_store_option, UsageError
from core.errors import InputFileError

MODE_FLAGS = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration",
              "from-file")


@contextmanager
def _writing(args: argparse.Namespace) -> Iterator[tuple[object, object]]:
    """(the brokers' Admin API, core.cli.common.Writing) through the write gate. The offsets live in the brokers, so
    --bootstrap-server is needed; with --zk too, the gate reads the cluster's role, id and migration state from
    ZooKeeper, as for every ZooKeeper-mode write."""
    from core.cli.common import kafka_admin, write_session

    if not getattr(args, "bootstrap_server", None):
        raise UsageError(f"{args.command} needs the brokers: give --bootstrap-server HOST:PORT[,HOST:PORT]")
    with write_session(args) as w:
        if w.admin is not None:
            yield w.admin, w
        else:
            with kafka_admin(args, args.command) as admin:
                yield admin, w


def _spec(args: argparse.Namespace):
    from core.kafka.group_writes import now_ms
    from core.offset_reset import spec

    chosen = [m for m in MODE_FLAGS if getattr(args, m.replace("-", "_")) not in (None, False)]
    if len(chosen) != 1:
        raise UsageError("Option --reset-offsets takes exactly one of: " + ", ".join(f"--{m}" for m in MODE_FLAGS))
    mode = chosen[0]
    value = getattr(args, mode.replace("-", "_"))
    if mode == "from-file":
        try:
            with open(value, encoding="utf-8") as f:
                value = f.read(16 << 20)
        except OSError as e:
            raise InputFileError(f"--from-file {value}: {e.strerror or e}") from None
    return spec(mode, None if value is True else str(value), group=args.group, now_ms=now_ms())


def _scope(args: argparse.Namespace):
    from core.offset_reset import parse_topic_scope

    if args.all_topics and args.topic:
        raise UsageError("give --all-topics or --topic, not both")
    return parse_topic_scope(args.topic or [])


def cmd_reset_offsets(args: argparse.Namespace) -> int:
    from core.kafka.group_writes import execute_reset, plan
    from core.offset_reset import export_csv, format_plan

    if args.dry_run and args.execute:
        raise UsageError("Option --reset-offsets only accepts one of --execute and --dry-run")
    spec = _spec(args)
    topics = _scope(args)
    if not args.all_topics and not topics and spec.mode != "from-file":
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if not args.execute and not args.dry_run:
        print("WARN: No action will be performed as the --execute option is missing. Add --execute to reset the "
              "offsets, or --dry-run to say so explicitly.", file=sys.stderr)
    args.dry_run = not args.execute
    with _writing(args) as (admin, w):
        if args.execute:
            done, result = execute_reset(admin, w.store, args.group, spec, cluster=w.cluster,
                                         all_topics=args.all_topics, topics=topics)
        else:
            done, result = None, plan(admin, args.group, spec, all_topics=args.all_topics, topics=topics)
    for r in result.rows:
        if r.note:
            print(f"warning: {r.note}", file=sys.stderr)
    if args.export:
        sys.stdout.write(export_csv(result.new_offsets))
    elif args.json:
        print(json.dumps({**result.to_dict(), "action": done.action_id if done else None}, indent=2))
    else:
        print(format_plan(result))
    if done is not None:
        print(f"action #{done.action_id}: {done.summary}; undo with `offsets-undo --action {done.action_id}`",
              file=sys.stderr)
    return 0


def cmd_delete_offsets(args: argparse.Namespace) -> int:
    from core.kafka.group_writes import delete_offsets
    from core.offset_reset import parse_topic_scope

    topics = parse_topic_scope(args.topic)
    with _writing(args) as (admin, w):
        done = delete_offsets(admin, w.store, args.group, topics, cluster=w.cluster)
    print(f"Request succeed for deleting offsets with topic {', '.join(args.topic)} group {args.group}")
    print(f"action #{done.action_id}: {done.summary}; undo with `offsets-undo --action {done.action_id}`")
    return 0


def cmd_delete_group(args: argparse.Namespace) -> int:
    from core.kafka.group_writes import delete_group

    with _writing(args) as (admin, w):
        done = delete_group(admin, w.store, args.group, cluster=w.cluster)
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    print(f"action #{done.action_id}: {done.summary}; undo with `offsets-undo --action {done.action_id}`")
    return 0


def cmd_offsets_undo(args: argparse.Namespace) -> int:
    from core.kafka.group_writes import undo

    with _writing(args) as (admin, w):
        done = undo(admin, w.store, args.action, cluster=w.cluster)
    print(f"action #{done.action_id}: {done.summary}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    from core.cli.common import add_cluster_options

    # --zk optional: the gate then reads the cluster's role, id and migration state from ZooKeeper
    add_cluster_options(p, "the brokers' Admin API, HOST:PORT[,HOST:PORT] (required; any cluster, KRaft included)")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history (default: the keel.toml "
                                                     "cluster the brokers belong to, else the bootstrap servers)")
    add_store_option(p)


def register(sub) -> None:
    p = sub.add_parser("reset-offsets", help="reset a consumer group's offsets (kafka-consumer-groups "
                                             "--reset-offsets): dry run by default, --execute writes (operator)")
    _common(p)
    p.add_argument("--group", required=True, metavar="G")
    p.add_argument("--all-topics", action="store_true", help="every partition the group has committed offsets for")
    p.add_argument("--topic", action="append", metavar="T[:P,P]", help="a topic, or some of its partitions "
                                                                        "(repeatable)")
    m = p.add_argument_group("reset specification (exactly one)")
    m.add_argument("--to-earliest", action="store_true")
    m.add_argument("--to-latest", action="store_true")
    m.add_argument("--to-current", action="store_true")
    m.add_argument("--to-offset", metavar="N")
    m.add_argument("--shift-by", metavar="N", help="positive or negative")
    m.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="UTC unless a zone follows (Z, +02:00)")
    m.add_argument("--by-duration", metavar="PnDTnHnMnS", help="that long before now, e.g. PT1H")
    m.add_argument("--from-file", metavar="CSV", help="topic,partition,offset lines (what --export prints)")
    p.add_argument("--dry-run", action="store_true", help="show the new offsets (the default)")
    p.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.add_argument("--export", action="store_true", help="print the new offsets as the tool's CSV")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reset_offsets)

    p = sub.add_parser("delete-offsets", help="delete a consumer group's committed offsets of topics "
                                              "(kafka-consumer-groups --delete-offsets; operator)")
    _common(p)
    p.add_argument("--group", required=True, metavar="G")
    p.add_argument("--topic", required=True, action="append", metavar="T[:P,P]")
    p.set_defaults(func=cmd_delete_offsets)

    p = sub.add_parser("delete-group", help="delete an empty consumer group (kafka-consumer-groups --delete; "
                                            "operator)")
    _common(p)
    p.add_argument("--group", required=True, metavar="G")
    p.set_defaults(func=cmd_delete_group)

    p = sub.add_parser("offsets-undo", help="put back the offsets a recorded reset-offsets, delete-offsets or "
                                            "delete-group found (operator)")
    _common(p)
    p.add_argument("--action", required=True, type=int, metavar="N", help="the action id (History, or what the "
                                                                          "write printed)")
    p.set_defaults(func=cmd_offsets_undo)
