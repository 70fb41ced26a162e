"""What the audit store records for an ACL or client-quota change, whichever engine made it (core.zk.security_writes
through ZooKeeper, core.kafka.security_writes through the Admin API): the kinds, summaries, payloads and rollback
recipes, so that History and `security-undo` read both alike. Pure.

Kinds: "acl-add", "acl-remove", "quota-alter".
- acl-add / acl-remove: payload `{"bindings": [B, ...]}` (the bindings the change actually added / removed),
  rollback `{"action": "acl-remove" | "acl-add", "bindings": [B, ...]}` (the inverse), where B is
  `{"resource_type": "TOPIC", "name": "t", "pattern": "LITERAL", "principal": "User:alice", "host": "*",
  "operation": "WRITE", "permission": "ALLOW"}` (the enums' names, as `kafka-acls --list` prints them).
- quota-alter: payload `{"entity": E, "values": {key: number | null}, "old": {key: number}}` (null: deleted; "old":
  the entity's quota values before, QUOTA_KEYS only), rollback `{"action": "quota-alter", "entity": E, "values":
  {key: old number | null}}` for every key the change touched, where E is `{"user": "alice" | "<default>" | null,
  "client": ...}`. Never a SCRAM credential: only QUOTA_KEYS enter a quota record.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from core.errors import ValidationError
from core.security.acls import binding_label
from core.security.quotas import entity_label
from core.security.model import (QUOTA_KEYS, Binding, Operation, PatternType, Permission, QuotaEntity, Resource,
                                 ResourceType)

ACL_ADD, ACL_REMOVE, QUOTA_ALTER = "acl-add", "acl-remove", "quota-alter"
KINDS = (ACL_ADD, ACL_REMOVE, QUOTA_ALTER)


def binding_dict(b: Binding) -> dict[str, str]:
    r = b.resource
    return {"resource_type": r.type.name, "name": r.name, "pattern": r.pattern.name, "principal": b.principal,
            "host": b.host, "operation": b.operation.name, "permission": b.permission.name}


def binding_from_dict(d: Mapping[str, Any]) -> Binding:
    try:
        return Binding(Resource(ResourceType[d["resource_type"]], str(d["name"]), PatternType[d["pattern"]]),
                       str(d["principal"]), str(d["host"]), Operation[d["operation"]], Permission[d["permission"]])
    except (KeyError, TypeError) as e:
        raise ValidationError(f"not a recorded ACL binding: {dict(d) if isinstance(d, Mapping) else d!r} ({e})") \
            from None


def entity_dict(e: QuotaEntity) -> dict[str, str | None]:
    return {"user": e.user, "client": e.client}


def entity_from_dict(d: Mapping[str, Any]) -> QuotaEntity:
    if not isinstance(d, Mapping) or set(d) - {"user", "client"}:
        raise ValidationError(f"not a recorded quota entity: {d!r}")
    return QuotaEntity(d.get("user"), d.get("client"))


def target_text(bindings: Iterable[Binding]) -> str:
    """The resources a change touches, for the store's target column: "TOPIC orders, GROUP g (PREFIXED)"."""
    seen = dict.fromkeys(
        f"{b.resource.type.name} {b.resource.name}" + (" (PREFIXED)" if b.resource.pattern is PatternType.PREFIXED
                                                        else "") for b in bindings)
    return ", ".join(seen)[:200]


def acl_summary(kind: str, bindings: Iterable[Binding]) -> str:
    done = sorted(bindings, key=lambda b: (b.resource.key, b.principal, b.operation.name, b.permission.name, b.host))
    verb = "added" if kind == ACL_ADD else "removed"
    return f"{verb} {len(done)} ACL binding(s): " + "; ".join(binding_label(b) for b in done)


def acl_record(kind: str, bindings: Iterable[Binding]) -> tuple[dict, dict]:
    """(payload, rollback) of an acl-add / acl-remove that changed exactly `bindings`."""
    if kind not in (ACL_ADD, ACL_REMOVE):
        raise ValueError(kind)
    items = [binding_dict(b) for b in sorted(
        bindings, key=lambda b: (b.resource.key, b.principal, b.operation.name, b.permission.name, b.host))]
    return {"bindings": items}, {"action": ACL_REMOVE if kind == ACL_ADD else ACL_ADD, "bindings": items}


def _value_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def quota_summary(entity: QuotaEntity, values: Mapping[str, float | None]) -> str:
    changes = ", ".join(f"{k}={_value_text(v)}" if v is not None else f"-{k}" for k, v in sorted(values.items()))
    return f"altered quota of {entity_label(entity)}: {changes}"


def quota_record(entity: QuotaEntity, values: Mapping[str, float | None], old: Mapping[str, float]) -> tuple[dict, dict]:
    """(payload, rollback) of a quota-alter that set / deleted `values` on an entity whose quotas were `old`.
    QUOTA_KEYS only: whatever else the entity's config holds (SCRAM credentials) never enters the record."""
    touched = {k: (None if v is None else float(v)) for k, v in values.items() if k in QUOTA_KEYS}
    before = {k: float(v) for k, v in old.items() if k in QUOTA_KEYS}
    payload = {"entity": entity_dict(entity), "values": touched, "old": before}
    rollback = {"action": QUOTA_ALTER, "entity": entity_dict(entity), "values": {k: before.get(k) for k in touched}}
    return payload, rollback


def parse_rollback(rollback: Any) -> tuple[str, Any]:
    """A recorded security rollback as (action, argument): ("acl-add" | "acl-remove", bindings) or ("quota-alter",
    (entity, values)); ValidationError for anything else."""
    action = rollback.get("action") if isinstance(rollback, Mapping) else None
    if action in (ACL_ADD, ACL_REMOVE):
        items = rollback.get("bindings")
        if not isinstance(items, list) or not items:
            raise ValidationError("the recorded rollback names no ACL binding")
        return action, tuple(binding_from_dict(d) for d in items)
    if action == QUOTA_ALTER:
        values = rollback.get("values")
        if not isinstance(values, Mapping) or not values or any(
                k not in QUOTA_KEYS or not (v is None or isinstance(v, (int, float))) for k, v in values.items()):
            raise ValidationError(f"the recorded rollback holds no quota values Keel knows: {values!r}")
        return action, (entity_from_dict(rollback.get("entity")), dict(values))
    raise ValidationError(f"not an ACL or quota rollback: {rollback!r}")
