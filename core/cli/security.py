"""ACL and client-quota commands of `python -m core`: acls, quotas (reads), acl-add, acl-remove, quota-alter,
security-undo (writes: admin role, through the write gate, audited).

They take Kafka's own tools' flags (kafka-acls: --allow-principal, --operation, --topic, --resource-pattern-type ...;
kafka-configs: --add-config, --delete-config) and work on a ZooKeeper-mode cluster (--zk: the ACL and config znodes,
core.zk.security_writes) and on any cluster through its brokers (--bootstrap-server: the Admin API,
core.kafka.security_writes), picked by core.cluster.engines.security. `acls` prints what `kafka-acls --list` prints,
`quotas` what `kafka-configs --describe --entity-type users|clients` prints. Since kafka-acls' --cluster names the
cluster resource, the name the action history records the cluster under is --cluster-name here.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from typing import Iterator

from core.cli.common import add_store_option, UsageError
from core.errors import ValidationError
from core.security.model import DEFAULT, QUOTA_KEYS, QuotaEntity, ResourceType


# --- reading -----------------------------------------------------------------------------------------------------


@contextmanager
def _read_handle(args: argparse.Namespace) -> Iterator[object]:
    """ZooKeeper's session (--zk) or the brokers' Admin API (--bootstrap-server), as write_session picks them."""
    from core.cli.common import kafka_admin, zk_session

    if getattr(args, "zk", None) is not None:
        with zk_session(args) as session:
            yield session
    elif getattr(args, "bootstrap_server", None):
        with kafka_admin(args, "reading ACLs and quotas") as admin:
            yield admin
    else:
        raise UsageError("give the cluster: --zk CONNECT (ZooKeeper mode) or --bootstrap-server HOST:PORT "
                         "(the brokers' Admin API: any cluster, KRaft included)")


def cmd_acls(args: argparse.Namespace) -> int:
    from core.cluster.engines import security
    from core.security import records
    from core.security.acls import filter_bindings, list_text

    with _read_handle(args) as h:
        acls = security(h).read_acls(h)
    bindings = acls.bindings
    for rtype, name in ((ResourceType.TOPIC, args.topic), (ResourceType.GROUP, args.group)):
        if name is not None:  # the bindings that apply to that name: literal, "*" and prefixes (Kafka's matching)
            bindings = filter_bindings(bindings, type=rtype, name=name)
    if args.principal is not None:
        bindings = filter_bindings(bindings, principal=args.principal)
    if args.json:
        print(json.dumps({"source": acls.source, "super_users": acls.super_users, "authorizer": acls.authorizer,
                          "bindings": [records.binding_dict(b) for b in bindings]}, indent=2))
    else:
        sys.stdout.write(list_text(bindings))
        if acls.super_users is None:
            where = "are not in ZooKeeper" if acls.source == "zookeeper" else "are not shown by the brokers"
            print(f"note: the brokers' super.users {where}: they may do everything, whatever these ACLs say",
                  file=sys.stderr)
    return 0


def cmd_quotas(args: argparse.Namespace) -> int:
    from core.cluster.engines import security
    from core.security import records
    from core.security.quotas import describe_text, effective

    with _read_handle(args) as h:
        quotas = security(h).read_quotas(h)
    if args.effective:
        user, client = args.effective
        got = effective(quotas, user, client)
        if args.json:
            print(json.dumps({k: {"value": v, "from": records.entity_dict(e)} for k, (v, e) in got.items()},
                             indent=2))
            return 0
        from core.security.quotas import entity_label

        for key in QUOTA_KEYS:
            if key in got:
                value, entity = got[key]
                print(f"{key}={value:g}  (from {entity_label(entity)})")
            else:
                print(f"{key}: no quota")
        return 0
    if args.user is not None:
        quotas = tuple(q for q in quotas if q.entity.user == args.user)
    if args.client_id is not None:
        quotas = tuple(q for q in quotas if q.entity.client == args.client_id)
    if args.json:
        print(json.dumps([{"entity": records.entity_dict(q.entity), "values": dict(q.values)} for q in quotas],
                         indent=2))
    else:
        sys.stdout.write(describe_text(quotas))
    return 0


# --- writing -----------------------------------------------------------------------------------------------------

_RESOURCE_FLAGS = (("topic", ResourceType.TOPIC), ("group", ResourceType.GROUP),
                   ("transactional_id", ResourceType.TRANSACTIONAL_ID))


def _bindings(args: argparse.Namespace):
    """The bindings kafka-acls --add / --remove makes of these flags (AclCommand.getAcls): every allow principal x
    allow host x operation as ALLOW, every deny principal x deny host x operation as DENY, on one resource."""
    from core.security.acls import binding_from_args
    from core.security.model import CLUSTER_NAME, Permission

    given = [(t, getattr(args, f)) for f, t in _RESOURCE_FLAGS if getattr(args, f) is not None]
    if args.cluster_resource:
        given.append((ResourceType.CLUSTER, CLUSTER_NAME))
    if len(given) != 1:
        raise UsageError("give exactly one resource: --topic, --group, --transactional-id or --cluster")
    if not (args.allow_principal or args.deny_principal):
        raise UsageError("give --allow-principal and / or --deny-principal (Keel never touches every ACL of a "
                         "resource at once)")
    rtype, name = given[0]
    ops = args.operation or ["All"]
    made = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, Permission.ALLOW),
                                          (args.deny_principal, args.deny_host, Permission.DENY)):
        if principals:
            made += binding_from_args(principals=principals, operations=ops, type=rtype,
                                      name=name, permission=permission, hosts=hosts or ["*"],
                                      pattern=args.resource_pattern_type)
    return tuple(made)


def _relied_on(args: argparse.Namespace) -> dict[str, str]:
    from core.cli.common import kafka_security
    from core.cluster.security import relied_on

    return relied_on(kafka_security(args))


def _acl_change(args: argparse.Namespace, remove: bool) -> int:
    from core.cli.common import write_session
    from core.cli.topics import _accepted_risks, _show_risks
    from core.cluster.engines import security
    from core.security.acls import binding_label, list_text, removal_risks

    bindings = _bindings(args)
    relied = _relied_on(args) if remove else {}
    with write_session(args) as w:
        engine = security(w.handle)
        risks: list[str] = []
        if remove:  # the preview refuses what the removal would: bindings that are not there, unconfirmed risks
            live = engine.read_acls(w.handle)
            missing = [b for b in bindings if b not in set(live.bindings)]
            if missing:
                raise ValidationError("no such ACL binding: " + "; ".join(binding_label(b) for b in missing),
                                      hint="`acls` lists the bindings as they are now; nothing was written")
            risks = removal_risks(live, bindings, relied)
            _show_risks(risks, args.accept_risk)
        if args.dry_run:
            print(f"would {'remove' if remove else 'add'} {len(bindings)} ACL binding(s):")
            sys.stdout.write(list_text(bindings))
            if risks and not args.accept_risk:
                print("would be refused without --accept-risk (see the warnings)", file=sys.stderr)
            return 0
        if remove:
            done = engine.remove_acls(w.handle, w.store, bindings, cluster=w.cluster,
                                      accept_risks=_accepted_risks(risks, args), relied_on=relied or None)
        else:
            done = engine.add_acls(w.handle, w.store, bindings, cluster=w.cluster)
    print(done.summary)
    print(f"action #{done.action_id}: undo with `security-undo --action {done.action_id}`")
    return 0


def cmd_acl_add(args: argparse.Namespace) -> int:
    return _acl_change(args, remove=False)


def cmd_acl_remove(args: argparse.Namespace) -> int:
    return _acl_change(args, remove=True)


def _number(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValidationError(f"invalid --add-config {key}={text!r}: a quota is a number") from None


def _quota_values(args: argparse.Namespace) -> dict[str, float | None]:
    values: dict[str, float | None] = {}
    for item in args.add_config or ():
        for pair in item.split(","):  # kafka-configs takes k1=v1,k2=v2
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise ValidationError(f"invalid --add-config {pair!r}: expected key=value")
            values[key.strip()] = _number(key.strip(), value.strip())
    for item in args.delete_config or ():
        for key in (k.strip() for k in item.split(",")):
            if key:
                if key in values:
                    raise ValidationError(f"{key} is both set and deleted")
                values[key] = None
    if not values:
        raise UsageError("give --add-config KEY=VALUE[,KEY=VALUE] and / or --delete-config KEY[,KEY]")
    return values


def _entity(args: argparse.Namespace) -> QuotaEntity:
    if args.user is not None and args.user_defaults or args.client_id is not None and args.client_defaults:
        raise UsageError("give a name or the defaults of users / client ids, not both")
    user = DEFAULT if args.user_defaults else args.user
    client = DEFAULT if args.client_defaults else args.client_id
    if user is None and client is None:
        raise UsageError("give --user / --user-defaults and / or --client-id / --client-defaults")
    return QuotaEntity(user, client)


def cmd_quota_alter(args: argparse.Namespace) -> int:
    from core.cli.common import write_session
    from core.cluster.engines import security
    from core.security import records
    from core.security.quotas import validate

    entity, values = _entity(args), _quota_values(args)
    validate(entity, values)
    with write_session(args) as w:
        if args.dry_run:
            print("would " + records.quota_summary(entity, values).replace("altered", "alter", 1))
            return 0
        done = security(w.handle).alter_quota(w.handle, w.store, entity, values, cluster=w.cluster)
    print(done.summary)
    print(f"action #{done.action_id}: undo with `security-undo --action {done.action_id}`")
    return 0


def cmd_security_undo(args: argparse.Namespace) -> int:
    from core.audit.store import Store
    from core.cli.common import write_session
    from core.cluster.security import undo
    from core.security import records

    if args.dry_run:  # what the undo would do, from the record alone
        action = Store(getattr(args, "store", None)).action(args.action)
        if action is None or action.kind not in records.KINDS:
            raise ValidationError(f"action {args.action} is not a recorded ACL or quota change")
        print(f"would undo action #{action.id} ({action.summary}): {json.dumps(action.rollback)}")
        return 0
    relied = _relied_on(args)
    with write_session(args) as w:
        done = undo(w.handle, w.store, args.action, cluster=w.cluster, accept_risks=bool(args.accept_risk),
                    relied_on=relied or None)
    print(f"undid action #{args.action}: {done.summary}")
    return 0


# --- arguments ---------------------------------------------------------------------------------------------------


def _read_options(p: argparse.ArgumentParser) -> None:
    from core.cli.common import add_cluster_options

    add_cluster_options(p, "the brokers' Admin API, HOST:PORT[,HOST:PORT]: the cluster without --zk (KRaft)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the Kafka tool's text")


def _write_options(p: argparse.ArgumentParser, risk: bool = False) -> None:
    from core.cli.common import add_cluster_options

    add_cluster_options(p)
    p.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
    p.add_argument("--cluster-name", dest="cluster", metavar="NAME",
                   help="cluster name for the action history (default: the connect string)")
    add_store_option(p)
    if risk:
        p.add_argument("--accept-risk", action="store_true",
                       help="remove even the last ALLOW of a principal Keel (its --command-config user) or the "
                            "brokers (ClusterAction) rely on; accepts the risks shown, no others")


def _acl_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-principal", action="append", metavar="TYPE:NAME", help="e.g. User:alice (repeatable)")
    p.add_argument("--deny-principal", action="append", metavar="TYPE:NAME")
    p.add_argument("--allow-host", action="append", metavar="IP", help="default: * (every host)")
    p.add_argument("--deny-host", action="append", metavar="IP", help="default: * (every host)")
    p.add_argument("--operation", action="append", metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                        "IdempotentWrite, All (repeatable; default All)")
    p.add_argument("--topic")
    p.add_argument("--group")
    p.add_argument("--transactional-id")
    p.add_argument("--cluster", dest="cluster_resource", action="store_true", help="the cluster resource")
    p.add_argument("--resource-pattern-type", choices=("literal", "prefixed"), default="literal", type=str.lower)


def _entity_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", metavar="NAME", help="a user principal's name (alice, not User:alice)")
    p.add_argument("--user-defaults", action="store_true", help="the default of every user (<default>)")
    p.add_argument("--client-id", metavar="ID")
    p.add_argument("--client-defaults", action="store_true", help="the default of every client id (<default>)")


def register(sub) -> None:
    p = sub.add_parser("acls", help="list ACL bindings as kafka-acls --list prints them")
    _read_options(p)
    p.add_argument("--topic", help="the bindings that apply to this topic (literal, '*' and prefixed)")
    p.add_argument("--group", help="the bindings that apply to this consumer group")
    p.add_argument("--principal", metavar="TYPE:NAME", help="only this principal's bindings (e.g. User:alice)")
    p.set_defaults(func=cmd_acls)

    p = sub.add_parser("acl-add", help="add ACL bindings (kafka-acls --add; admin role)")
    _write_options(p)
    _acl_flags(p)
    p.set_defaults(func=cmd_acl_add)

    p = sub.add_parser("acl-remove", help="remove ACL bindings (kafka-acls --remove; admin role)")
    _write_options(p, risk=True)
    _acl_flags(p)
    p.set_defaults(func=cmd_acl_remove)

    p = sub.add_parser("quotas", help="client quotas as kafka-configs --describe prints them, or one's effective quota")
    _read_options(p)
    p.add_argument("--user", metavar="NAME", help="only this user's quotas (<default>: the default's)")
    p.add_argument("--client-id", metavar="ID", help="only this client id's quotas")
    p.add_argument("--effective", nargs=2, metavar=("USER", "CLIENT_ID"),
                   help="the quota that applies to this user and client id, per key, and the level it comes from")
    p.set_defaults(func=cmd_quotas)

    p = sub.add_parser("quota-alter", help="set or delete client quotas (kafka-configs --alter; admin role)")
    _write_options(p)
    _entity_flags(p)
    p.add_argument("--add-config", action="append", metavar="KEY=VALUE[,KEY=VALUE]",
                   help="producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate")
    p.add_argument("--delete-config", action="append", metavar="KEY[,KEY]")
    p.set_defaults(func=cmd_quota_alter)

    p = sub.add_parser("security-undo", help="undo a recorded ACL or quota change (admin role)")
    _write_options(p, risk=True)
    p.add_argument("--action", type=int, required=True, metavar="N", help="the action's number (History)")
    p.set_defaults(func=cmd_security_undo)
