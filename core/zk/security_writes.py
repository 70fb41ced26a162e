"""ACLs and client quotas of a ZooKeeper-mode cluster, read and written in ZooKeeper as Kafka's own tools do
(`kafka-acls --authorizer-properties zookeeper.connect=...`: AclAuthorizer; `kafka-configs --entity-type
users|clients`: AdminZkClient). The znode formats are core.security.znodes'; the audit records core.security.records'
(kinds "acl-add", "acl-remove", "quota-alter", the same payload and rollback shapes as the Admin API engine,
core.kafka.security_writes).

    read_acls(session) -> Acls                     # super_users None: ZooKeeper does not hold the brokers' super.users
    read_quotas(session) -> tuple[Quota, ...]      # QUOTA_KEYS only: never a SCRAM credential
    add_acls(session, store, bindings, *, cluster, actor=None) -> Applied
    remove_acls(session, store, bindings, *, cluster, actor=None, accept_risks=False, relied_on=None) -> Applied
    alter_quota(session, store, entity, values, *, cluster, actor=None) -> Applied   # values {key: float | None}

A write re-reads the nodes it changes (synced first), refuses during a ZooKeeper -> KRaft migration, records the
action before writing, and writes every changed node with the version of that read together with the change
notification in one multi-op: a node changed meanwhile fails the whole write (nothing written, typed error), where
AclAuthorizer would re-read and retry.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from core import zkformat as zf
from core.audit.store import Store
from core.errors import (CorruptZnodeError, ValidationError, ZkBadVersionError, ZkNodeExistsError,
                         ZkNoNodeError, ZkNotEmptyError)
from core.security import records
from core.security import znodes as zn
from core.security.acls import binding_label, removal_risks, validate_bindings
from core.security.quotas import entity_label, validate, values_of
from core.security.model import Acls, Binding, PatternType, Quota, QuotaEntity, Resource
from core.topics.drafts import require_accepted
from core.writes import Applied, changed_meanwhile
from core.zk.session import Op, ZkSession

# --- reads -----------------------------------------------------------------------------------------------------------


def _stores(session: ZkSession) -> list[tuple[str, PatternType]]:
    """(root, pattern) of every ACL store present: /kafka-acl and the pattern directories of /kafka-acl-extended."""
    out = [(zn.ACL_ROOT, PatternType.LITERAL)]
    for d in session.children(zn.EXTENDED_ROOT) or ():
        pattern = zn.pattern_of_store(d)
        if pattern is not None:  # AclAuthorizer reads only the stores it knows
            out.append((f"{zn.EXTENDED_ROOT}/{d}", pattern))
    return out


def _resource_nodes(session: ZkSession) -> list[tuple[Resource, str]]:
    type_dirs = []
    for root, pattern in _stores(session):
        for d in session.children(root) or ():
            rtype = zn.resource_type_of(d)
            if rtype is not None:  # an unknown type is ignored, as AclAuthorizer.loadCache does
                type_dirs.append((f"{root}/{d}", rtype, pattern))
    names = session.children_many([p for p, _, _ in type_dirs]) if type_dirs else {}
    return [(Resource(rtype, name, pattern), f"{path}/{name}")
            for path, rtype, pattern in type_dirs for name in sorted(names.get(path) or ())]


def read_acls(session: ZkSession) -> Acls:
    """Every binding held in ZooKeeper; CorruptZnodeError naming a resource node Kafka could not read either."""
    resources = _resource_nodes(session)
    bindings: list[Binding] = []
    for (resource, path), node in zip(resources, session.get_many([p for _, p in resources])):
        bindings += zn.decode_acls(resource, node.data, path)
    return Acls(tuple(sorted(bindings, key=_binding_key)), source="zookeeper", super_users=None, authorizer=None)


def _binding_key(b: Binding):
    return (b.resource.key, b.principal, b.operation.name, b.permission.name, b.host)


def _values(data: bytes | None, path: str) -> dict[str, float]:
    """The quota values of a config node (core.security.quotas.values_of: SCRAM credentials never leave it)."""
    try:
        return values_of(zf.decode_config(data, path))
    except ValidationError as e:
        raise CorruptZnodeError(path, e.message) from None


def _quota_nodes(session: ZkSession) -> list[tuple[QuotaEntity, str]]:
    users = sorted(session.children(zn.CONFIG_USERS) or ())
    clients = sorted(session.children(zn.CONFIG_CLIENTS) or ())
    below = session.children_many([f"{zn.CONFIG_USERS}/{u}/clients" for u in users]) if users else {}
    out = [(zn.user_entity(u), f"{zn.CONFIG_USERS}/{u}") for u in users]
    out += [(zn.user_entity(u, c), f"{zn.CONFIG_USERS}/{u}/clients/{c}")
            for u in users for c in sorted(below.get(f"{zn.CONFIG_USERS}/{u}/clients") or ())]
    out += [(zn.client_entity(c), f"{zn.CONFIG_CLIENTS}/{c}") for c in clients]
    return out


def read_quotas(session: ZkSession) -> tuple[Quota, ...]:
    """The client quotas of every user, client id and user + client id (defaults included) that has one, sorted by
    entity. A node holding only SCRAM credentials (or nothing) is no quota."""
    nodes = _quota_nodes(session)
    out = []
    for (entity, path), node in zip(nodes, session.get_many([p for _, p in nodes])):
        values = _values(node.data, path)
        if values:
            out.append(Quota(entity, values))
    return tuple(sorted(out, key=lambda q: _entity_key(q.entity)))


def _entity_key(e: QuotaEntity):
    return (e.user is None, e.user or "", e.client is None, e.client or "")


# --- writes ----------------------------------------------------------------------------------------------------------


def _live_resources(session: ZkSession, resources: Iterable[Resource]) -> dict[Resource, tuple[frozenset, int]]:
    """Each resource's bindings and its node's version now (-1: no node)."""
    resources = sorted(set(resources), key=lambda r: r.key)
    paths = [zn.acl_path(r) for r in resources]
    out = {}
    for r, path, node in zip(resources, paths, session.get_many(paths)):
        out[r] = (frozenset(zn.decode_acls(r, node.data, path)), node.version if node.exists else -1)
    return out


def _prepare(session: ZkSession, action: str) -> None:
    """Synced (the reads see every write committed before now); refused during a migration (a KRaft controller
    owns the ACLs and quotas then)."""
    from core.zk.migration_state import refuse_during_migration

    session.sync()
    refuse_during_migration(session)


def _acl_ops(session: ZkSession, changed: Mapping[Resource, tuple[frozenset, frozenset, int]]) -> list[Op]:
    """Per changed resource: its node set (version-checked), created, or deleted once empty (as AclAuthorizer does),
    then the change notification the brokers' authorizers listen to. Parents a broker creates at start-up
    (KafkaZkClient.createAclPaths) are made first when missing."""
    ops: list[Op] = []
    for r, (old, new, version) in sorted(changed.items(), key=lambda kv: kv[0].key):
        path = zn.acl_path(r)
        if not new:
            ops.append(Op("delete", path, version=version))
        elif version >= 0:
            ops.append(Op("set", path, zn.encode_acls(new), version=version))
        else:
            session.ensure_path(path.rsplit("/", 1)[0])
            ops.append(Op("create", path, zn.encode_acls(new)))
        prefix = zn.acl_change_prefix(r.pattern)
        session.ensure_path(prefix.rsplit("/", 1)[0])
        ops.append(Op("create", prefix, zn.encode_acl_change(r), sequence=True))
    return ops


def _run(session: ZkSession, store: Store, action_id: int, ops: list[Op], summary: str, what: str) -> Applied:
    from core.zk.topic_admin import _run as run

    changed = ValidationError(changed_meanwhile(what))
    return run(session, store, action_id, ops, summary, {ZkBadVersionError: changed, ZkNodeExistsError: changed,
                                                         ZkNoNodeError: changed, ZkNotEmptyError: changed})


def add_acls(session: ZkSession, store: Store, bindings: Iterable[Binding], *, cluster: str,
             actor: str | None = None) -> Applied:
    """kafka-acls --add: each resource's node gets the new bindings (those it already holds are left as they are);
    ValidationError when every one is there already or one is invalid."""
    wanted = frozenset(bindings)
    if not wanted:
        raise ValidationError("no ACL binding to add")
    validate_bindings(wanted)
    for b in wanted:
        zn.check_resource_name(b.resource)
    _prepare(session, "add ACLs")
    live = _live_resources(session, (b.resource for b in wanted))
    changed, added = {}, []
    for r, (old, version) in live.items():
        mine = {b for b in wanted if b.resource == r}
        if mine - old:
            changed[r] = (old, old | mine, version)
            added += sorted(mine - old, key=_binding_key)
    if not added:
        raise ValidationError("nothing to change: every one of these ACL bindings exists already")
    ops = _acl_ops(session, changed)
    payload, rollback = records.acl_record(records.ACL_ADD, added)
    summary = records.acl_summary(records.ACL_ADD, added)
    action = store.begin(cluster=cluster, kind=records.ACL_ADD, target=records.target_text(added), summary=summary,
                         payload=payload, rollback=rollback, actor=actor)
    return _run(session, store, action, ops, summary, "The ACLs of " + records.target_text(added))


def remove_acls(session: ZkSession, store: Store, bindings: Iterable[Binding], *, cluster: str,
                actor: str | None = None, accept_risks: bool | Sequence[str] = False,
                relied_on: Mapping[str, str] | None = None) -> Applied:
    """kafka-acls --remove of these exact bindings. Refused (ValidationError) when one of them does not exist, and
    (RiskNotAcceptedError) when the removal takes away the last ALLOW a principal Keel or the brokers rely on had
    (core.security.acls.removal_risks; `relied_on`: principal -> why, e.g. Keel's own) unless the risk is accepted."""
    removing = frozenset(bindings)
    if not removing:
        raise ValidationError("no ACL binding to remove")
    _prepare(session, "remove ACLs")
    live = read_acls(session)  # the whole set: a removal's risks depend on every other binding
    present = set(live.bindings)
    missing = sorted(removing - present, key=_binding_key)
    if missing:
        raise ValidationError("no such ACL binding: " + "; ".join(binding_label(b) for b in missing),
                              hint="`acls` lists the bindings as they are now; nothing was written")
    require_accepted(removal_risks(live, removing, relied_on or {}), accept_risks)
    now = _live_resources(session, (b.resource for b in removing))
    changed = {}
    for r, (old, version) in now.items():
        gone = {b for b in removing if b.resource == r}
        if not gone <= old:  # removed by someone else between the two reads
            raise ValidationError(changed_meanwhile(f"The ACLs of {r.type.name} {r.name}"))
        changed[r] = (old, old - gone, version)
    ops = _acl_ops(session, changed)
    payload, rollback = records.acl_record(records.ACL_REMOVE, removing)
    summary = records.acl_summary(records.ACL_REMOVE, removing)
    action = store.begin(cluster=cluster, kind=records.ACL_REMOVE, target=records.target_text(removing),
                         summary=summary, payload=payload, rollback=rollback, actor=actor)
    return _run(session, store, action, ops, summary, "The ACLs of " + records.target_text(removing))


def alter_quota(session: ZkSession, store: Store, entity: QuotaEntity, values: Mapping[str, float | None], *,
                cluster: str, actor: str | None = None) -> Applied:
    """kafka-configs --alter --entity-type users|clients: set (a number) or delete (None) quota keys of one entity.
    The entity's node keeps everything else it holds (a user's SCRAM credentials); a node left empty and without
    children is deleted, as AdminZkClient does. ValidationError for an unknown key, a bad value, deleting a key
    that is not set, or a change that changes nothing."""
    values = dict(values)
    if not values:
        raise ValidationError("no quota to set or delete", hint="give --add-config key=value or --delete-config key")
    validate(entity, values)
    zn.check_entity(entity)
    label = entity_label(entity)
    _prepare(session, f"alter the quotas of {label}")
    path = zn.quota_path(entity)
    node = session.get(path)
    config = zf.decode_config(node.data, path)
    old = _values(node.data, path)
    not_set = sorted(k for k, v in values.items() if v is None and k not in old)
    if not_set:  # ConfigCommand's wording for deleting what is not there
        raise ValidationError(f"Invalid config(s): {', '.join(not_set)}", hint=f"{label} has no such quota set")
    new = zn.quota_config(config, values)
    if new == {k: str(v) for k, v in config.items()} and node.exists:
        raise ValidationError(f"nothing to change: {label} already has these quotas")
    if node.exists and not new and not session.children(path):
        entity_op = Op("delete", path, version=node.version)
    elif node.exists:
        entity_op = Op("set", path, zf.encode_config(new), version=node.version)
    else:
        session.ensure_path(path.rsplit("/", 1)[0])
        entity_op = Op("create", path, zf.encode_config(new))
    session.ensure_path(zf.CONFIG_CHANGES)
    ops = [entity_op, Op("create", zf.CONFIG_CHANGE_PREFIX, zf.encode_config_change(zn.quota_entity_path(entity)),
                         sequence=True)]
    payload, rollback = records.quota_record(entity, values, old)
    summary = records.quota_summary(entity, values)
    action = store.begin(cluster=cluster, kind=records.QUOTA_ALTER, target=label, summary=summary, payload=payload,
                         rollback=rollback, actor=actor)
    return _run(session, store, action, ops, summary, f"The quotas of {label}")
