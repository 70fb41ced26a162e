"""Kafka's authorizer as pure functions: what a set of ACL bindings lets a principal do, who may use a resource, what
a removal would take away, and the text `kafka-acls --list` prints. Pure.

The rules are those of AclAuthorizer (ZooKeeper mode, kafka/security/authorizer/AclAuthorizer.scala, 3.9) and
StandardAuthorizer (KRaft, org.apache.kafka.metadata.authorizer.StandardAuthorizerData), which agree:
- a super user (super.users) is allowed everything, ACLs unread;
- the bindings that apply to (type, name) are the LITERAL ones named `name`, the LITERAL "*" one and every PREFIXED
  one whose name `name` starts with; none at all: denied unless allow.everyone.if.no.acl.found=true (false by default);
- a binding applies to a principal when it names it or "User:*", to a host when it names it or "*";
- a DENY of the operation (or of ALL) beats any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE,
  of ALTER_CONFIGS also DESCRIBE_CONFIGS, of ALL everything; a DENY denies only its own operation (ALL: all).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, TypeVar

from core.errors import ValidationError
from core.security.model import (CLUSTER_NAME, WILDCARD, Acls, Binding, Operation, PatternType, Permission, Resource,
                                 ResourceType)

__all__ = ["Decision", "Access", "Right", "WHO_MAY_OPERATIONS", "WILDCARD_PRINCIPAL", "implied", "denied_by",
           "supported_operations", "resource_matches", "applies_to", "decide", "who_may", "principals_allowed",
           "rights_of", "filter_bindings", "list_text", "parse_list_text", "removal_risks", "binding_from_args",
           "validate_bindings", "binding_label"]

WILDCARD_PRINCIPAL = "User:*"  # KafkaPrincipal("User", "*"): AclEntry.WILDCARD_PRINCIPAL
# the operations who_may answers for (a topic's page: who may read, write, describe, alter, delete it, ...)
WHO_MAY_OPERATIONS = (Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALTER, Operation.DELETE,
                      Operation.CREATE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS)

_O = Operation
_IMPLIES_DESCRIBE = frozenset({_O.READ, _O.WRITE, _O.DELETE, _O.ALTER})  # StandardAuthorizerData.IMPLIES_DESCRIBE
# AclEntry.supportedOperations (server/.../security/authorizer/AclEntry.java, 3.9); ALL is accepted on every type
_SUPPORTED = {
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                                   _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}


@dataclass(frozen=True)
class Decision:
    """What the authorizer answers: `by` holds the bindings that decided (the DENYs when denied by one, else the
    ALLOWs); empty for a super user or when nothing allows."""

    allowed: bool
    by: tuple[Binding, ...]
    reason: str


@dataclass(frozen=True)
class Access:
    """The bindings on a resource that grant (`allowed`) or deny (`denied`) one operation, whoever they name."""

    allowed: tuple[Binding, ...]
    denied: tuple[Binding, ...]


@dataclass(frozen=True)
class Right:
    """One thing a principal may (ALLOW) or may not (DENY) do, and the binding it comes from."""

    resource: Resource
    operation: Operation
    permission: Permission
    binding: Binding


_E = TypeVar("_E", bound=Enum)


# --- the rules ------------------------------------------------------------------------------------------------------


def implied(op: Operation) -> frozenset[Operation]:
    """The operations an ALLOW of `op` grants: itself, DESCRIBE for READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS for
    ALTER_CONFIGS, every operation for ALL."""
    if op is Operation.ALL:
        return frozenset(Operation)
    if op in _IMPLIES_DESCRIBE:
        return frozenset({op, Operation.DESCRIBE})
    if op is Operation.ALTER_CONFIGS:
        return frozenset({op, Operation.DESCRIBE_CONFIGS})
    return frozenset({op})


def denied_by(op: Operation) -> frozenset[Operation]:
    """The operations a DENY of `op` denies: only itself (a DENY of READ leaves DESCRIBE alone), every one for ALL."""
    return frozenset(Operation) if op is Operation.ALL else frozenset({op})


def supported_operations(type: ResourceType) -> frozenset[Operation]:
    """The operations a resource type has (AclEntry.supportedOperations), ALL not included."""
    return _SUPPORTED[type]


def _covers(binding: Binding, operation: Operation) -> bool:
    ops = implied(binding.operation) if binding.permission is Permission.ALLOW else denied_by(binding.operation)
    return operation in ops


def resource_matches(resource: Resource, type: ResourceType, name: str) -> bool:
    """Whether a binding's resource applies to the resource (type, name): LITERAL equal or LITERAL "*", PREFIXED a
    prefix of name."""
    if resource.type is not type:
        return False
    if resource.pattern is PatternType.PREFIXED:
        return name.startswith(resource.name)
    return resource.name == name or resource.name == WILDCARD


def applies_to(binding: Binding, principal: str, host: str = WILDCARD) -> bool:
    """Whether `binding` names `principal` (or "User:*") and `host` (or "*"). host "*" stands for a client address no
    binding names: a binding for one host never applies to it (Kafka compares the client's address as a string)."""
    return (binding.principal in (principal, WILDCARD_PRINCIPAL)) and binding.host in (host, WILDCARD)


def decide(acls: Acls, principal: str, operation: Operation, type: ResourceType, name: str, host: str = WILDCARD,
           *, allow_everyone_if_no_acl: bool = False) -> Decision:
    """What the brokers' authorizer answers to `principal` ("User:alice") from `host` asking `operation` on the
    resource (type, name): AclAuthorizer.authorizeAction / StandardAuthorizerData.authorize."""
    what = f"{operation.name} on {type.name} {name!r}"
    if acls.super_users is not None and principal in acls.super_users:
        return Decision(True, (), f"{principal} is a super user (super.users): allowed everything, ACLs not read")
    unknown_super = ("; super.users is not known here (ZooKeeper does not hold it): a super user is allowed anyway"
                     if acls.super_users is None else "")
    on_resource = [b for b in acls.bindings if resource_matches(b.resource, type, name)]
    if not on_resource:
        verdict = "allowed" if allow_everyone_if_no_acl else "denied"
        return Decision(allow_everyone_if_no_acl, (),
                        f"no ACL applies to {type.name} {name!r}: {verdict}, as allow.everyone.if.no.acl.found="
                        f"{str(allow_everyone_if_no_acl).lower()} decides (false by default){unknown_super}")
    mine = [b for b in on_resource if applies_to(b, principal, host)]
    denies = tuple(b for b in mine if b.permission is Permission.DENY and _covers(b, operation))
    if denies:
        return Decision(False, denies, f"{principal} is denied {what} by {binding_label(denies[0])}: a DENY beats "
                                       f"every ALLOW{unknown_super}")
    allows = tuple(b for b in mine if b.permission is Permission.ALLOW and _covers(b, operation))
    if allows:
        return Decision(True, allows, f"{principal} is allowed {what} by {binding_label(allows[0])}")
    return Decision(False, (), f"ACLs apply to {type.name} {name!r} but none allows {principal} {what}: "
                               f"denied{unknown_super}")


def who_may(acls: Acls, type: ResourceType, name: str) -> dict[Operation, Access]:
    """For READ, WRITE, DESCRIBE, ALTER, DELETE, CREATE, DESCRIBE_CONFIGS and ALTER_CONFIGS: every binding that applies
    to (type, name) and grants it (implied operations, "*" and prefixed resources included) or denies it, whoever it
    names and from whichever host."""
    on_resource = [b for b in acls.bindings if resource_matches(b.resource, type, name)]
    out = {}
    for op in WHO_MAY_OPERATIONS:
        out[op] = Access(
            allowed=tuple(sorted((b for b in on_resource if b.permission is Permission.ALLOW and _covers(b, op)),
                                 key=_sort_key)),
            denied=tuple(sorted((b for b in on_resource if b.permission is Permission.DENY and _covers(b, op)),
                                key=_sort_key)))
    return out


def principals_allowed(acls: Acls, op: Operation, type: ResourceType, name: str, *, host: str = WILDCARD) -> set[str]:
    """The principals named in bindings on (type, name) that end up allowed `op` from `host` (a DENY applied;
    "User:*" stands for everyone else). Super users are not named here: see acls.super_users."""
    named = {b.principal for b in acls.bindings if resource_matches(b.resource, type, name)}
    return {p for p in named if decide(acls, p, op, type, name, host).allowed}


def rights_of(acls: Acls, principal: str) -> tuple[Right, ...]:
    """Everything `principal` may or may not do and through which binding (its own and "User:*" ones): an ALLOW
    counts for the operations it implies, an ALL for each operation of the resource type."""
    rights = []
    for b in acls.bindings:
        if b.principal not in (principal, WILDCARD_PRINCIPAL):
            continue
        ops = _SUPPORTED[b.resource.type] if b.operation is Operation.ALL else (
            implied(b.operation) if b.permission is Permission.ALLOW else {b.operation})
        rights += [Right(b.resource, op, b.permission, b) for op in ops]
    return tuple(sorted(rights, key=lambda r: (r.resource.key, r.operation.name, r.permission.name,
                                                _sort_key(r.binding))))


def _coerce(enum: type[_E], value) -> _E:
    """An enum member from a member, its name ("WRITE", "write") or its value ("Write")."""
    if isinstance(value, enum):
        return value
    text = str(value).strip()
    for m in enum:
        if text.upper() == m.name or text == m.value or text.lower() == m.value.lower():
            return m
    raise ValidationError(f"unknown {enum.__name__} {value!r}",
                          hint="one of " + ", ".join(m.name for m in enum))


def filter_bindings(bindings: Iterable[Binding], *, type=None, name: str | None = None, principal: str | None = None,
                    operation=None, permission=None, pattern=None) -> tuple[Binding, ...]:
    """The bindings that match every filter given (None: any). `name`: the bindings that apply to that name as Kafka
    matches it (literal, "*", prefixes; `kafka-acls --list --resource-pattern-type match`); `principal` exact. Enums
    may be given as members or names."""
    type = None if type is None else _coerce(ResourceType, type)
    operation = None if operation is None else _coerce(Operation, operation)
    permission = None if permission is None else _coerce(Permission, permission)
    pattern = None if pattern is None else _coerce(PatternType, pattern)
    out = []
    for b in bindings:
        r = b.resource
        if (type is not None and r.type is not type or pattern is not None and r.pattern is not pattern
                or operation is not None and b.operation is not operation
                or permission is not None and b.permission is not permission
                or principal is not None and b.principal != principal
                or name is not None and not resource_matches(r, r.type, name)):
            continue
        out.append(b)
    return tuple(out)


# --- kafka-acls --list ----------------------------------------------------------------------------------------------

def _sort_key(b: Binding) -> tuple:
    return (b.resource.key, b.principal, b.host, b.operation.name, b.permission.name)


def _pattern_text(r: Resource) -> str:  # ResourcePattern.toString
    return f"ResourcePattern(resourceType={r.type.name}, name={r.name}, patternType={r.pattern.name})"


def _entry_text(b: Binding) -> str:  # AccessControlEntryData.toString
    return f"(principal={b.principal}, host={b.host}, operation={b.operation.name}, permissionType={b.permission.name})"


def binding_label(b: Binding) -> str:
    """One line for a binding: 'ALLOW User:alice WRITE on TOPIC orders (LITERAL) from *'."""
    return (f"{b.permission.name} {b.principal} {b.operation.name} on {b.resource.type.name} {b.resource.name} "
            f"({b.resource.pattern.name}) from {b.host}")


def list_text(bindings: Iterable[Binding]) -> str:
    """What `kafka-acls --list` prints for these bindings (AclCommand.printResourceAcls, 3.9): per resource
    "Current ACLs for resource `ResourcePattern(...)`: \\n \\t(entry)\\n\\t(entry) \\n\\n". Kafka's order is a hash
    map's; Keel's is sorted (resource, principal, host, operation, permission). Empty: ""."""
    by_resource: dict[Resource, list[Binding]] = {}
    for b in sorted(set(bindings), key=_sort_key):
        by_resource.setdefault(b.resource, []).append(b)
    return "".join(f"Current ACLs for resource `{_pattern_text(r)}`: \n "
                   + "\n".join("\t" + _entry_text(b) for b in bs) + " \n\n" for r, bs in by_resource.items())


_RESOURCE_RE = re.compile(r"^Current ACLs for resource `ResourcePattern\(resourceType=(\w+), name=(.*), "
                          r"patternType=(\w+)\)`:\s*$")
_ENTRY_RE = re.compile(r"^\s*\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)\s*$")


def parse_list_text(text: str) -> frozenset[Binding]:
    """The bindings in the output of `kafka-acls --list` (or list_text), in any order; "ACLs for principal" headers
    and other lines (warnings) are skipped. An entry outside a resource or an unknown name: ValidationError."""
    found = set()
    resource = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _RESOURCE_RE.match(line)
        if m:
            resource = Resource(_enum_by_name(ResourceType, m[1], number), m[2],
                                _enum_by_name(PatternType, m[3], number))
            continue
        m = _ENTRY_RE.match(line)
        if m:
            if resource is None:
                raise ValidationError(f"line {number}: an ACL entry before any 'Current ACLs for resource' line")
            found.add(Binding(resource, m[1], m[2], _enum_by_name(Operation, m[3], number),
                              _enum_by_name(Permission, m[4], number)))
    return frozenset(found)


def _enum_by_name(enum: type[_E], name: str, number: int) -> _E:
    try:
        return enum[name]
    except KeyError:
        raise ValidationError(f"line {number}: unknown {enum.__name__} {name!r} in kafka-acls output") from None


# --- edits ----------------------------------------------------------------------------------------------------------

def _checked_names(b: Binding) -> list[tuple[Operation, str]]:
    """The (operation, resource name) pairs an ALLOW binding grants, a concrete name standing for its pattern (a
    PREFIXED 'pay' -> 'pay', LITERAL '*' -> '*': a name no other LITERAL binding holds)."""
    ops = _SUPPORTED[b.resource.type] if b.operation is Operation.ALL else implied(b.operation)
    return [(op, b.resource.name) for op in sorted(ops, key=lambda o: o.name)]


def removal_risks(acls: Acls, removing: Iterable[Binding], relied_on: Mapping[str, str]) -> list[str]:
    """The named risks of removing `removing` (core.topics.drafts.require_accepted): a principal of `relied_on`
    (principal -> why, "Keel connects as it") or one that may CLUSTER_ACTION on the cluster (the brokers'
    replication) that loses an operation it was allowed, because the removal takes away the last ALLOW it had."""
    removing = set(removing)
    after = Acls(tuple(b for b in acls.bindings if b not in removing), acls.source, acls.super_users, acls.authorizer)
    risks: list[str] = []
    for principal, why in sorted(relied_on.items()):
        for b in sorted(removing, key=_sort_key):
            if b.permission is not Permission.ALLOW or b.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            lost = [op.name for op, name in _checked_names(b)
                    if decide(acls, principal, op, b.resource.type, name).allowed
                    and not decide(after, principal, op, b.resource.type, name).allowed]
            if lost:
                risks.append(f"{principal} ({why}) loses {', '.join(lost)} on {b.resource.type.name} "
                             f"{b.resource.name!r}: removing {binding_label(b)} takes away the last ALLOW it had")
    cluster = (Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    replicators = sorted({b.principal for b in acls.bindings if b.permission is Permission.ALLOW
                          and resource_matches(b.resource, ResourceType.CLUSTER, CLUSTER_NAME)
                          and _covers(b, Operation.CLUSTER_ACTION)})
    for principal in replicators:
        if decide(acls, principal, *cluster).allowed and not decide(after, principal, *cluster).allowed:
            who = "every principal (User:*)" if principal == WILDCARD_PRINCIPAL else principal
            risks.append(f"{who} loses CLUSTER_ACTION on the cluster: brokers that connect as it can no longer "
                         f"replicate (the last ALLOW of ClusterAction it had is removed)")
    return risks


def binding_from_args(*, principals: Iterable[str], operations: Iterable, type, name: str,
                      permission=Permission.ALLOW, hosts: Iterable[str] = (WILDCARD,),
                      pattern=PatternType.LITERAL) -> tuple[Binding, ...]:
    """The bindings `kafka-acls --add` makes of its flags (AclCommand.getAcls): every principal x host x operation on
    one resource, validated (ValidationError, nothing made). A cluster resource is always named kafka-cluster."""
    type = _coerce(ResourceType, type)
    if type is ResourceType.CLUSTER and not name:
        name = CLUSTER_NAME
    resource = Resource(type, name.strip() if type is not ResourceType.TRANSACTIONAL_ID else name,
                        _coerce(PatternType, pattern))
    permission = _coerce(Permission, permission)
    made = tuple(Binding(resource, p.strip(), h.strip(), _coerce(Operation, op), permission)
                 for p in principals for h in hosts for op in operations)
    if not made:
        raise ValidationError("no binding to make", hint="give at least one principal and one operation")
    validate_bindings(made)
    return made


def validate_bindings(bindings: Iterable[Binding]) -> None:
    """Refuse (ValidationError, listing every problem) a binding Kafka would refuse or that could never apply."""
    problems: list[str] = []
    for b in bindings:
        label = binding_label(b)
        kind, sep, who = b.principal.partition(":")
        if not sep or not kind or not who:
            problems.append(f"{label}: principal {b.principal!r} is not 'Type:name' (e.g. 'User:alice', 'User:*')")
        if b.host != WILDCARD:
            try:
                ipaddress.ip_address(b.host)
            except ValueError:
                problems.append(f"{label}: host {b.host!r} is not '*' or an IP address (the brokers compare the "
                                f"client's address, so a host name never matches)")
        r = b.resource
        if not r.name:
            problems.append(f"{label}: the resource name is empty")
        elif "/" in r.name:
            problems.append(f"{label}: a resource name may not contain '/' (AclAuthorizer refuses it)")
        if r.type is ResourceType.CLUSTER and (r.name != CLUSTER_NAME or r.pattern is not PatternType.LITERAL):
            problems.append(f"{label}: the cluster resource is the LITERAL {CLUSTER_NAME!r}")
        if r.pattern is PatternType.PREFIXED and r.name == WILDCARD:
            problems.append(f"{label}: a PREFIXED '*' matches no name (every name is the LITERAL '*')")
        if b.operation is not Operation.ALL and b.operation not in _SUPPORTED[r.type]:
            ops = ", ".join(sorted(o.name for o in _SUPPORTED[r.type] | {Operation.ALL}))
            problems.append(f"{label}: resource type {r.type.name} only supports operations {ops}")
    if problems:
        raise ValidationError("invalid ACL binding: " + "; ".join(problems))
