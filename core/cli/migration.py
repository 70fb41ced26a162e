"""`python -m core migration` (issue 27): where a ZooKeeper -> KRaft migration stands (the phase as Kafka's docs name
it, what Kafka does, the next step, whether and how to revert), readiness before starting, and the timeline of the
phases Keel has seen (the audit store's "migration-phase" rows). Reads only (the timeline row aside)."""

from __future__ import annotations

import argparse
import json
import sys

from core.cli.common import add_store_option, add_bootstrap_option, add_zk_options
from core.errors import KeelError


def _mode_through_brokers(args: argparse.Namespace) -> int:
    """`migration --bootstrap-server` alone: what the brokers say of the mode (a KRaft cluster has no ZooKeeper
    to migrate from: it has migrated, or was KRaft from the start)."""
    from core.cli.common import read_cluster
    from core.migration_phases import phase_of

    snap = read_cluster(args)
    quorum = snap.quorum
    doc = {"mode": snap.mode, "controller": snap.controller.broker_id if snap.controller else None,
           "voters": [v.id for v in quorum.voters] if quorum else None}
    if snap.is_kraft:
        phase = phase_of(snap, None)
        doc.update(phase.to_dict())
        _timeline(args, phase, doc)
    if args.json:
        print(json.dumps(doc, indent=2))
    elif snap.is_kraft:
        print(f"KRaft mode: no ZooKeeper (migrated, or KRaft from the start); active controller "
              f"{doc['controller']}, quorum voters {', '.join(map(str, doc['voters']))}")
        _print_timeline(doc)
    else:
        print("ZooKeeper mode (the brokers do not answer DescribeQuorum): give --zk to read the migration state")
    return 0


def _label(args: argparse.Namespace) -> str:
    """The cluster's name as the gate and the pages know it (keel.toml's, when --zk or --bootstrap-server reaches
    one of its clusters)."""
    from core.cli.common import resolve_host
    from core.policy import gate
    from core.policy.config import load_cli_config

    try:
        config = load_cli_config()
    except KeelError:
        config = None
    return gate.identify(config, zk=args.zk, bootstrap=args.bootstrap_server, named=args.cluster,
                         resolve=resolve_host).label


def _timeline(args: argparse.Namespace, phase, doc: dict) -> None:
    from core.audit.migration_timeline import note_phase, timeline
    from core.audit.store import Store

    store = Store(args.store)
    label = _label(args)
    try:
        note_phase(store, label, phase.key, phase.name)
        doc["timeline"] = [{"at": s.at, "key": s.key, "name": s.name} for s in timeline(store, label)]
    except KeelError as e:  # an unwritable store does not hide the phase
        print(f"warning: the timeline is not recorded: {e}", file=sys.stderr)
        doc["timeline"] = None


def _print_timeline(doc: dict) -> None:
    if doc.get("timeline"):
        print("timeline (phases Keel has seen):")
        for s in doc["timeline"]:
            print(f"  {s['at']}  {s['name']}")


def _with_controllers(args: argparse.Namespace, facts):
    """The quorum asked of --bootstrap-controller (with the brokers' --command-config), when given."""
    from core.cli.common import kafka_security
    from core.kafka.controller_quorum import quorum_fact
    from core.migration_readiness import with_controller_quorum

    if not args.bootstrap_controller:
        return with_controller_quorum(facts, None, None, None)
    quorum, via, error = quorum_fact(args.bootstrap_controller, security=kafka_security(args),
                                     timeout=args.kafka_timeout)
    return with_controller_quorum(facts, quorum, via, error)


def cmd_migration(args: argparse.Namespace) -> int:
    from core.migration_readiness import parse_controller_ids

    controller_ids = parse_controller_ids(args.controller_ids)
    if args.zk is None:
        if args.bootstrap_controller:
            from core.cli.common import UsageError

            raise UsageError("--bootstrap-controller is read by the readiness checks, which need --zk (the "
                             "ZooKeeper the cluster is migrating from)")
        return _mode_through_brokers(args)
    if args.bootstrap_controller:  # a malformed address is refused before anything is read
        from core.kafka.bootstrap import parse_bootstrap

        parse_bootstrap(args.bootstrap_controller, "--bootstrap-controller")
    from core.cli.common import zk_session
    from core.migration import migration_status
    from core.migration_phases import phase_of
    from core.migration_readiness import readiness, ready
    from core.zk.migration_state import read_migration, readiness_facts
    from core.zk.reader import read_snapshot

    with zk_session(args) as session:
        snap = read_snapshot(session)
        try:
            znode = read_migration(session)
        except KeelError as e:  # malformed: the phase is read without it, readiness names it
            znode, bad = None, str(e)
        else:
            bad = None
        broker, admin_error = None, None
        if args.bootstrap_server:
            from core.cli.common import kafka_admin
            from core.kafka.migration_facts import broker_facts

            try:
                with kafka_admin(args, "reading the brokers' migration facts") as admin:
                    broker = broker_facts(admin, sorted(snap.alive_broker_ids))
            except KeelError as e:
                admin_error = str(e)
        facts = readiness_facts(session, snap, controller_ids=controller_ids, broker=broker, admin_error=admin_error)
    facts = _with_controllers(args, facts)
    flags = broker.migration_flags if broker is not None else None
    phase = phase_of(snap, znode, flags)
    status = migration_status(snap, znode, flags)
    checks = readiness(facts)
    doc = {**phase.to_dict(), "status": None if status is None else status.to_dict(),
           "migration_znode_error": bad, "readiness": [c.to_dict() for c in checks], "ready": ready(checks)}
    _timeline(args, phase, doc)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"phase: {phase.name}")
    print(f"Kafka: {phase.kafka_does}")
    print(f"next step: {phase.next_step}")
    if bad:
        print(f"/migration is malformed: {bad}")
    if status is not None and status.kraft_brokers:
        print(f"brokers that left /brokers/ids for KRaft: {', '.join(map(str, status.kraft_brokers))} "
              f"(they lead {status.kraft_led} partition(s): not an outage)")
    for note in phase.notes:
        print(f"note: {note}")
    if phase.rollback_possible:
        print(f"rollback: possible (Kafka's docs, \"Reverting to ZooKeeper mode\", row \"{phase.rollback_from}\"):")
        for i, step in enumerate(phase.rollback_steps, 1):
            print(f"  {i}. {step}")
    else:
        print("rollback: not possible")
    if status is not None:
        print(status.write_block_reason)
    print("readiness:" + (" ready" if doc["ready"] else ""))
    for c in checks:
        print(f"  [{c.verdict:^7}] {c.title}: {c.detail}" + (f" Fix: {c.fix}" if c.verdict != "ok" and c.fix else ""))
    _print_timeline(doc)
    return 0


def register(sub) -> None:
    p = sub.add_parser("migration", help="ZooKeeper -> KRaft migration: the phase, the next step, the way back, "
                                         "readiness and the timeline")
    add_zk_options(p, required=False)
    add_bootstrap_option(p, "the brokers: with --zk, their versions, settings, log dirs and quorum for readiness "
                            "and which run with the migration settings; alone, whether the cluster runs in KRaft mode")
    p.add_argument("--controller-ids", metavar="ID,...", help="the KRaft controllers' node.id values (e.g. "
                                                                "3000,3001,3002): checked against the broker ids")
    p.add_argument("--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT]",
                   help="the KRaft controllers' controller listener: readiness asks them for the quorum "
                        "(DescribeQuorum, as kafka-metadata-quorum.sh --bootstrap-controller does; ZooKeeper-mode "
                        "brokers cannot tell it), with --command-config's security settings")
    p.add_argument("--cluster", metavar="NAME", help="the name the timeline is kept under (default: the keel.toml "
                                                     "cluster --zk reaches, else the connect string)")
    add_store_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_migration)


__all__ = ["cmd_migration", "register"]
