"""Topic commands of `python -m core`: create-topic, add-partitions, alter-config, delete-topic.

Each previews with --dry-run (nothing is written anywhere: not ZooKeeper, not the action history) and otherwise
applies through core.zk.topic_admin (--zk) or core.kafka.topic_writes (--bootstrap-server without --zk: KRaft), which
re-validates against live state and records the action in the store.
create-topic prints the placement it writes (or would write), one line per partition, and how it was chosen: a
random draw (Kafka's start index) prints the --seed that places the replicas the same way again.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from core.cli.argtypes import whole
from core.cli.cluster import add_min_isr_options, broker_defaults_from_args
from core.errors import RiskNotAcceptedError, ValidationError


def _config_pairs(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValidationError(f"invalid --config {item!r}: expected key=value")
        out[key.strip()] = value
    return out


def _common(p: argparse.ArgumentParser) -> None:
    from core.cli.common import add_cluster_options, add_store_option

    add_cluster_options(p)
    p.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
    p.add_argument("--cluster", metavar="NAME", help="cluster name for the action history (default: the connect string)")
    add_store_option(p)


def _show_risks(risks, accepted: bool) -> None:
    for risk in risks:
        print(f"warning: {risk}" + (" (accepted with --accept-risk)" if accepted else ""), file=sys.stderr)


def _accepted_risks(risks, args: argparse.Namespace) -> tuple[str, ...] | bool:
    """What the write may go ahead with: the risks shown here, confirmed with --accept-risk, and no others.

    The engine re-drafts against live state; a risk that appears only there (the cluster changed in between)
    was never shown, so it refuses it."""
    if risks and not args.accept_risk:
        raise RiskNotAcceptedError(
            f"refused: {len(risks)} risk(s) shown above need an explicit confirmation; nothing was written",
            tuple(risks), hint="re-run with --accept-risk to apply it anyway")
    return tuple(risks)


def _assignment_lines(assignment) -> str:
    return "\n".join(f"  partition {p}: replicas {','.join(map(str, r))}" for p, r in sorted(assignment.items()))


# Seeds Keel draws itself when none is given: small enough to retype.
_SEED_RANGE = 2**31


def _placement_seed(args: argparse.Namespace) -> int | None:
    """The seed of the random draws (Kafka's start index and follower shift): --seed, else one drawn here so that
    it can be printed; None when nothing is drawn (--replica-assignment, --fixed-start-index)."""
    if args.replica_assignment is not None or args.fixed_start_index >= 0:
        return None
    return args.seed if args.seed is not None else random.SystemRandom().randrange(_SEED_RANGE)


def _placement_note(args: argparse.Namespace, seed: int | None) -> str | None:
    """How the placement shown was chosen, and how to get it again."""
    if args.replica_assignment is not None:
        return None
    if args.fixed_start_index >= 0:
        return (f"placement: Kafka's, with --fixed-start-index {args.fixed_start_index} (no random draw: the same "
                "alive brokers and racks give the same placement)")
    same = "while the alive brokers and their racks stay the same"
    if args.seed is not None:
        return f"placement: drawn with --seed {seed}: the same seed gives the same placement {same}"
    return (f"placement: drawn at random (Kafka draws its start index and follower shift at random, so every run "
            f"places the replicas differently); --seed {seed} reproduces this one {same}")


def cmd_create_topic(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cli.io import naming_problems
    from core.topics import draft_create_topic, kafka_topics_command
    from core.cluster import engines

    seed = _placement_seed(args)
    with write_session(args) as w:
        snap = engines.live_snapshot(w.handle)
        engines.refuse_unreadable(w.handle, snap, args.topic, f"create topic {args.topic}")
        defaults = broker_defaults_from_args(args, snap.alive_broker_ids)  # the brokers' min.insync.replicas
        with naming_problems(snap):
            draft = draft_create_topic(
                snap, args.topic, partitions=args.partitions, replication_factor=args.replication_factor,
                config=_config_pairs(args.config), replica_assignment=args.replica_assignment,
                rack_mode="disabled" if args.disable_rack_aware else "enforced", rng=random.Random(seed),
                fixed_start_index=args.fixed_start_index, defaults=defaults)
        for warning in draft.warnings:
            print(warning, file=sys.stderr)
        _show_risks(draft.risks, args.accept_risk)
        note = _placement_note(args, seed)
        if args.dry_run:
            print(f"would create topic {draft.name} ({draft.partitions} partitions, replication factor "
                  f"{draft.replication_factor}):")
            print(_assignment_lines(draft.assignment))
            if note:
                print(note)
            print("equivalent: " + kafka_topics_command(draft, "BOOTSTRAP"))
            if draft.risks and not args.accept_risk:
                print("would be refused without --accept-risk (see the warnings)", file=sys.stderr)
            return 0
        accepted = _accepted_risks(draft.risks, args)
        done = engines.topics(w.handle).create_topic(w.handle, w.store, draft, cluster=w.cluster,
                                                     accept_risks=accepted, defaults=defaults)
    print(done.summary)
    # create_topic writes the draft's placement as an explicit assignment: this is what the topic node holds
    print(_assignment_lines(draft.assignment))
    if note:
        print(note)
    return 0


def cmd_add_partitions(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cli.io import naming_problems
    from core.topics import draft_add_partitions
    from core.cluster import engines

    with write_session(args) as w:
        snap = engines.live_snapshot(w.handle)
        engines.refuse_unreadable(w.handle, snap, args.topic, f"add partitions to topic {args.topic}")
        with naming_problems(snap):
            draft = draft_add_partitions(snap, args.topic, args.partitions,
                                         replica_assignment=args.replica_assignment)
        for warning in draft.warnings:
            print(warning, file=sys.stderr)
        if args.dry_run:
            print(f"would grow {draft.name} from {draft.old_total} to {draft.new_total} partitions:")
            print(_assignment_lines(draft.new_assignment))
            return 0
        done = engines.topics(w.handle).add_partitions(w.handle, w.store, draft, cluster=w.cluster)
    print(done.summary)
    return 0


def cmd_alter_config(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.topics import draft_alter_config
    from core.cluster import engines

    sets = _config_pairs(args.add_config)
    deletes = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    with write_session(args) as w:
        snap = engines.live_snapshot(w.handle)
        engines.refuse_unreadable(w.handle, snap, args.topic, f"alter the config of topic {args.topic}",
                                  config=True)
        defaults = broker_defaults_from_args(args, snap.alive_broker_ids)  # the brokers' min.insync.replicas
        draft = draft_alter_config(snap, args.topic, set=sets, delete=deletes, defaults=defaults)
        _show_risks(draft.risks, args.accept_risk)
        if args.dry_run:
            print(json.dumps({"topic": draft.name, "old": draft.old, "new": draft.new,
                              "changes": [r._asdict() for r in draft.diff]}, indent=2))
            if draft.risks and not args.accept_risk:
                print("would be refused without --accept-risk (see the warnings)", file=sys.stderr)
            return 0
        accepted = _accepted_risks(draft.risks, args)
        done = engines.topics(w.handle).alter_config(w.handle, w.store, args.topic, sets, deletes,
                                                     cluster=w.cluster, accept_risks=accepted, defaults=defaults)
    print(done.summary)
    return 0


def cmd_delete_topic(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.topics import draft_delete_topic
    from core.cluster import engines

    with write_session(args) as w:
        snap = engines.live_snapshot(w.handle)
        engines.refuse_unreadable(w.handle, snap, args.topic, f"delete topic {args.topic}")
        draft = draft_delete_topic(snap, args.topic)
        if args.dry_run:
            print(f"would mark {draft.name} for deletion ({draft.partitions} partitions, {draft.replicas} replicas)")
            return 0
        done = engines.topics(w.handle).delete_topic(w.handle, w.store, args.topic, cluster=w.cluster)
    print(done.summary)
    for warning in draft.warnings:
        print(warning, file=sys.stderr)
    return 0


def _accept_risk(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accept-risk", action="store_true",
                   help="apply it even though Keel warned of a risk (e.g. min.insync.replicas above the replication "
                        "factor: the topic is unwritable for acks=all producers); accepts the risks shown, no others")


def register(sub) -> None:
    p = sub.add_parser("create-topic", help="create a topic with Kafka's exact replica assignment")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=whole, metavar="N")
    p.add_argument("--replication-factor", type=whole, metavar="R")
    p.add_argument("--replica-assignment", metavar="B:B,B:B", help="explicit placement, as kafka-topics takes it")
    p.add_argument("--config", action="append", metavar="KEY=VALUE", help="topic config override (repeatable)")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument("--fixed-start-index", type=whole, default=-1, metavar="I",
                   help="Kafka's start index (and follower shift): the placement is then fixed, no random draw")
    p.add_argument("--seed", type=whole, metavar="N",
                   help="seed of the random start index and follower shift, so that a run places the replicas as "
                        "an earlier one did (every run prints the seed of its placement; default: a new draw)")
    _accept_risk(p)
    add_min_isr_options(p, "the min.insync.replicas risk of a topic without an override")
    p.set_defaults(func=cmd_create_topic)

    p = sub.add_parser("add-partitions", help="grow a topic to N partitions (Kafka's placement)")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=whole, required=True, metavar="N", help="the new total")
    p.add_argument("--replica-assignment", metavar="B:B,B:B", help="explicit placement of the new partitions")
    p.set_defaults(func=cmd_add_partitions)

    p = sub.add_parser("alter-config", help="set or delete topic config overrides (kafka-configs --alter)")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--add-config", action="append", metavar="KEY=VALUE")
    p.add_argument("--delete-config", metavar="KEY[,KEY]")
    _accept_risk(p)
    add_min_isr_options(p, "the min.insync.replicas risk of a topic without an override")
    p.set_defaults(func=cmd_alter_config)

    p = sub.add_parser("delete-topic", help="mark a topic for deletion (/admin/delete_topics)")
    _common(p)
    p.add_argument("--topic", required=True)
    p.set_defaults(func=cmd_delete_topic)
