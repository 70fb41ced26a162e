"""ACLs and client quotas through the brokers' Admin API (KRaft clusters, or any cluster reached by bootstrap):
the engine functions of core.security.model's docstring on a KafkaAdmin, the ZooKeeper engine's twin
(core.zk.security_writes): same arguments, results, audit kinds, payloads and rollbacks.

Reads: DescribeAcls (everything: an ANY filter) with authorizer.class.name from describeConfigs of one broker;
super.users stays unknown (None), as through ZooKeeper: a broker lists it but withholds its value (it is the
authorizer's own setting, which Kafka describes as of unknown type, hence sensitive). DescribeClientQuotas
(core.kafka.client_quotas) never carries SCRAM credentials.

Writes, as core.kafka.topic_writes does them: the input is validated (pure, core.security), the live state is read
again right before writing (the Admin API has no compare-and-set) and the write computed against it, Kafka
validates the request first where it can (AlterClientQuotas' validate_only; CreateAcls / DeleteAcls have none),
the action is recorded with its rollback (the inverse, in the same shape the ZooKeeper engine records), sent, and
finished with Kafka's answer. Kafka's refusals become typed errors in Kafka's words.
- add_acls creates only the bindings not there yet (Kafka would accept the others silently) and its rollback
  removes exactly those;
- remove_acls deletes each binding by an exact filter (a filter with every field given matches that binding only),
  refuses bindings that are not there, and refuses a removal that leaves a principal Keel or the brokers rely on
  without the access it had, unless that named risk is accepted;
- alter_quota sends only the keys that change (set, or remove for None); its rollback restores the old values.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable, Iterable, Mapping, Sequence

import kafka.errors as kerrors
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         ResourcePattern, ResourcePatternFilter)
from kafka.admin import ResourceType as KResourceType
from kafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest

from core.audit.store import Store
from core.errors import KeelError, ValidationError
from core.kafka.admin import KafkaAdmin, KafkaAdminError
from core.kafka.admin_client import AdminClient
from core.kafka.client_quotas import alter_client_quotas, describe_client_quotas, entity_key
from core.kafka.topic_writes import _send, _validate
from core.kafka.write_requests import KafkaRefusal, refusal
from core.security import records
from core.security.acls import binding_label, removal_risks, validate_bindings
from core.security.model import (Acls, Binding, Operation, PatternType, Permission, Quota, QuotaEntity, Resource,
                                 ResourceType)
from core.security.quotas import entity_label, validate, values_of
from core.topics import require_accepted
from core.writes import Applied

__all__ = ["read_acls", "read_quotas", "add_acls", "remove_acls", "alter_quota"]

SUPER_USERS, AUTHORIZER = "super.users", "authorizer.class.name"
_ACLS_CHECK = "kafka-acls.sh --bootstrap-server HOST:PORT --list (or python -m core acls --bootstrap-server HOST:PORT)"
_ALTER_CLUSTER = "ALTER on the cluster (kafka-acls --add --operation Alter --cluster)"
SETTLE_SECONDS = 3.0  # how long a write waits for the answering broker to show it (see _settle)
_QUOTAS_CHECK = "kafka-configs.sh --bootstrap-server HOST:PORT --describe --entity-type users (or clients)"


# --- kafka-python's values ------------------------------------------------------------------------------------


def _acl(b: Binding) -> ACL:
    return ACL(b.principal, b.host, ACLOperation[b.operation.name], ACLPermissionType[b.permission.name],
               ResourcePattern(KResourceType[b.resource.type.name], b.resource.name,
                               ACLResourcePatternType[b.resource.pattern.name]))


def _binding(acl) -> Binding | None:
    """A binding of DescribeAcls' answer; None for one Keel's model has no name for (an UNKNOWN enum value)."""
    try:
        p = acl.resource_pattern
        return Binding(Resource(ResourceType[p.resource_type.name], p.resource_name, PatternType[p.pattern_type.name]),
                       acl.principal, acl.host, Operation[acl.operation.name], Permission[acl.permission_type.name])
    except KeyError:
        return None


def _explained(refused: KafkaRefusal | None, need: str) -> KafkaRefusal | None:
    """Kafka's refusal, with what Keel's principal lacks when it is an authorization refusal."""
    if refused is not None and refused[0] == "CLUSTER_AUTHORIZATION_FAILED":
        return refused[0], f"{refused[1]} (the principal Keel connects as needs {need})"
    return refused


# --- reads ------------------------------------------------------------------------------------------------------


def _broker_settings(admin: KafkaAdmin) -> tuple[tuple[str, ...] | None, str | None]:
    """(super.users, authorizer.class.name) of one live broker; None for what it did not describe or withheld.
    Kafka 3.9 and 4.x list super.users with no value (module doc): unknown, unless a broker ever gives it."""
    brokers = sorted(int(b["broker_id"]) for b in admin.describe_cluster().get("brokers") or ())
    for broker in brokers[:2]:
        answer = admin.broker_configs([broker], [SUPER_USERS, AUTHORIZER]).get(broker)
        if isinstance(answer, dict):
            supers = answer[SUPER_USERS][0] if SUPER_USERS in answer else None
            authorizer = answer[AUTHORIZER][0] or "" if AUTHORIZER in answer else None
            return (None if supers is None else tuple(p.strip() for p in supers.split(";") if p.strip())), authorizer
    return None, None


def _describe_acls(admin: KafkaAdmin) -> tuple[Binding, ...] | None:
    """DescribeAcls of everything, sorted; None when the brokers run without an authorizer (SECURITY_DISABLED)."""
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY))
    try:
        with admin._translate("describe the ACLs"):
            found, _ = admin._admin.describe_acls(everything)
    except kerrors.SecurityDisabledError:
        return None
    return tuple(_unique(b for b in map(_binding, found) if b is not None))


def read_acls(admin: KafkaAdmin) -> Acls:
    """Every binding the brokers' authorizer holds (DescribeAcls), sorted, with super.users and the authorizer.
    Brokers without an authorizer answer SECURITY_DISABLED: no bindings, authorizer ""."""
    super_users, authorizer = _broker_settings(admin)
    bindings = _describe_acls(admin)
    return Acls(bindings or (), "brokers", super_users, "" if bindings is None else authorizer)


def _settle(read: Callable[[], object], done: Callable[[object], bool], timeout: float = SETTLE_SECONDS) -> bool:
    """Wait (a little) until `done(read())`. Under KRaft a write is answered once the controller committed it; the
    broker answering the next read shows it only when it has replayed the metadata log, a moment later. Without
    this, a read right after a write (the page redrawn, the next write's re-check) may not see it yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if done(read()):
                return True
        except KeelError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def read_quotas(admin: KafkaAdmin) -> tuple[Quota, ...]:
    """Every user / client-id quota, sorted by entity; QUOTA_KEYS only."""
    out = []
    for entity, values in describe_client_quotas(admin).items():
        kept = values_of({k: str(v) for k, v in values.items()})
        if kept:
            out.append(Quota(entity, kept))
    return tuple(sorted(out, key=lambda q: entity_key(q.entity)))


# --- ACL requests -------------------------------------------------------------------------------------------------


def _create(admin: KafkaAdmin, bindings: Sequence[Binding]) -> KafkaRefusal | None:
    creations = [AdminClient._convert_create_acls_resource_request(_acl(b)) for b in bindings]
    user = any(b.resource.type is ResourceType.USER for b in bindings)
    request = CreateAclsRequest(creations=creations, min_version=3 if user else 0)
    answer = admin.ask(request, "create the ACL bindings")
    for b, result in zip(bindings, answer.results):
        refused = _explained(refusal(result.error_code, result.error_message), _ALTER_CLUSTER)
        if refused is not None:
            return refused[0], f"{refused[1]}: {binding_label(b)}"
    return None


def _delete(admin: KafkaAdmin, bindings: Sequence[Binding]) -> tuple[KafkaRefusal | None, list[Binding]]:
    """DeleteAcls with one exact filter per binding: (the first refusal, the bindings no filter matched)."""
    filters = [AdminClient._convert_delete_acls_resource_request(_acl(b)) for b in bindings]
    user = any(b.resource.type is ResourceType.USER for b in bindings)
    request = DeleteAclsRequest(filters=filters, min_version=3 if user else 0)
    answer = admin.ask(request, "delete the ACL bindings")
    unmatched = []
    for b, result in zip(bindings, answer.filter_results):
        refused = _explained(refusal(result.error_code, result.error_message), _ALTER_CLUSTER)
        if refused is not None:
            return (refused[0], f"{refused[1]}: {binding_label(b)}"), unmatched
        for acl in result.matching_acls:
            refused = refusal(acl.error_code, acl.error_message)
            if refused is not None:
                return (refused[0], f"{refused[1]}: {binding_label(b)}"), unmatched
        if not result.matching_acls:
            unmatched.append(b)
    return None, unmatched


def _unique(bindings: Iterable[Binding]) -> list[Binding]:
    return sorted(set(bindings), key=lambda b: (b.resource.key, b.principal, b.host, b.operation.name,
                                                 b.permission.name))


def add_acls(admin: KafkaAdmin, store: Store, bindings: Iterable[Binding], *, cluster: str,
             actor: str | None = None) -> Applied:
    """kafka-acls --add through CreateAcls, of the bindings not there yet (Kafka would accept the others silently,
    and the rollback must not remove what this did not add); ValidationError when every one exists already or one
    is invalid."""
    wanted = _unique(bindings)
    if not wanted:
        raise ValidationError("no ACL binding to add")
    validate_bindings(wanted)
    live = read_acls(admin)
    _require_authorizer(live)
    present = set(live.bindings)
    new = [b for b in wanted if b not in present]
    if not new:
        raise ValidationError("nothing to change: every one of these ACL bindings exists already")
    payload, rollback = records.acl_record(records.ACL_ADD, new)
    summary = records.acl_summary(records.ACL_ADD, new)
    action = store.begin(cluster=cluster, kind=records.ACL_ADD, target=records.target_text(new), summary=summary,
                         payload=payload, rollback=rollback, actor=actor)
    done = _send(store, action, partial(_create, admin, new), summary, ("CreateAcls",),
                 what="the creation of the ACL bindings", check=_ACLS_CHECK)
    _settle(lambda: _describe_acls(admin) or (), lambda found: set(new) <= set(found))
    return done


def remove_acls(admin: KafkaAdmin, store: Store, bindings: Iterable[Binding], *, cluster: str,
                actor: str | None = None, accept_risks: bool | Sequence[str] = False,
                relied_on: Mapping[str, str] | None = None) -> Applied:
    """kafka-acls --remove of these exact bindings through DeleteAcls (one filter per binding, every field given:
    it matches that binding only). Refused (ValidationError) when one of them does not exist, and
    (RiskNotAcceptedError) when the removal takes away the last ALLOW a principal Keel or the brokers rely on had
    (core.security.acls.removal_risks) unless the risk is accepted. `relied_on`: principal -> why; by default the
    principal this client connects as, which the handle knows here."""
    wanted = _unique(bindings)
    if not wanted:
        raise ValidationError("no ACL binding to remove")
    live = read_acls(admin)  # the whole set: a removal's risks depend on every other binding
    _require_authorizer(live)
    missing = [b for b in wanted if b not in set(live.bindings)]
    if missing:
        raise ValidationError("no such ACL binding: " + "; ".join(map(binding_label, missing)),
                              hint="`acls` lists the bindings as they are now; nothing was written")
    if relied_on is None:  # the SASL user this client connects as (core.cluster.security imports this module)
        user = admin.security.username if admin.security is not None and admin.security.uses_sasl else None
        relied_on = {f"User:{user}": "Keel connects to the brokers as it"} if user else {}
    require_accepted(removal_risks(live, wanted, relied_on), accept_risks)
    payload, rollback = records.acl_record(records.ACL_REMOVE, wanted)
    summary = records.acl_summary(records.ACL_REMOVE, wanted)
    action = store.begin(cluster=cluster, kind=records.ACL_REMOVE, target=records.target_text(wanted),
                         summary=summary, payload=payload, rollback=rollback, actor=actor)
    gone: list[Binding] = []

    def send() -> KafkaRefusal | None:
        refused, unmatched = _delete(admin, wanted)
        gone.extend(unmatched)
        return refused

    done = _send(store, action, send, summary, ("DeleteAcls",), what="the removal of the ACL bindings",
                 check=_ACLS_CHECK)
    _settle(lambda: _describe_acls(admin) or (), lambda found: not set(wanted) & set(found))
    if gone:  # removed by someone else between the read and the delete: the end state is the one asked for
        note = summary + f" ({len(gone)} already gone when the request arrived)"
        store.finish(action, ok=True, result=note)
        return Applied(done.action_id, note, done.written)
    return done


def _require_authorizer(live: Acls) -> None:
    if live.authorizer == "":
        raise KafkaAdminError("the brokers run without an authorizer (authorizer.class.name is empty): ACLs cannot "
                              "be changed and would not be enforced; nothing was written",
                              hint="set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer "
                                   "(KRaft) or kafka.security.authorizer.AclAuthorizer (ZooKeeper mode)")


# --- quotas ---------------------------------------------------------------------------------------------------------


def alter_quota(admin: KafkaAdmin, store: Store, entity: QuotaEntity, values: Mapping[str, float | None], *,
                cluster: str, actor: str | None = None) -> Applied:
    """kafka-configs --bootstrap-server --alter --entity-type users|clients: set (a number) or delete (None) quota
    keys of one entity through AlterClientQuotas, only the keys that change, validated by Kafka first
    (validate_only). ValidationError for an unknown key, a bad value, deleting a key that is not set, or a change
    that changes nothing (as the ZooKeeper engine)."""
    values = dict(values)
    if not values:
        raise ValidationError("no quota to set or delete", hint="give --add-config key=value or --delete-config key")
    validate(entity, values)
    label = entity_label(entity)
    old = dict(describe_client_quotas(admin).get(entity, {}))
    not_set = sorted(k for k, v in values.items() if v is None and k not in old)
    if not_set:  # ConfigCommand's wording for deleting what is not there
        raise ValidationError(f"Invalid config(s): {', '.join(not_set)}", hint=f"{label} has no such quota set")
    changes = {k: (None if v is None else float(v)) for k, v in sorted(values.items())
               if v is None or old.get(k) != float(v)}
    if not changes:
        raise ValidationError(f"nothing to change: {label} already has these quotas")
    def send(validate_only: bool = False) -> KafkaRefusal | None:
        return _explained(alter_client_quotas(admin, entity, changes, validate_only=validate_only),
                          "ALTER_CONFIGS on the cluster")

    _validate(send, f"the quota change of {label}")
    payload, rollback = records.quota_record(entity, changes, old)
    summary = records.quota_summary(entity, changes)
    action = store.begin(cluster=cluster, kind=records.QUOTA_ALTER, target=label, summary=summary, payload=payload,
                         rollback=rollback, actor=actor)
    done = _send(store, action, send, summary, (f"AlterClientQuotas {label}",),
                 what=f"the quota change of {label}", check=_QUOTAS_CHECK)
    after = {k: v for k, v in {**old, **changes}.items() if v is not None}
    _settle(lambda: describe_client_quotas(admin).get(entity, {}), lambda found: found == after)
    return done
