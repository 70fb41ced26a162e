"""ZooKeeper's ACL and client-quota znodes, as Kafka 3.9 writes them (kafka.zk.ZkData, AclEntry, Sanitizer). Pure.

ACLs (AclAuthorizer):
- `/kafka-acl/<Type>/<name>` holds a LITERAL resource's bindings, `/kafka-acl-extended/prefixed/<Type>/<name>` a
  PREFIXED one's (ZkAclStore; <Type> is SecurityUtils.resourceTypeName: "Topic", "TransactionalId"), each
  `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Write","host":"*"}]}`.
  The authorizer deletes a resource node whose last binding goes.
- A change is announced by a PERSISTENT_SEQUENTIAL `/kafka-acl-changes/acl_changes_` holding the bytes
  `TOPIC:<name>` (LiteralAclChangeStore: ResourceType's enum name, ':' and the name) for a literal resource, or
  `/kafka-acl-extended-changes/acl_changes_` holding `{"version":1,"resourceType":"TOPIC","name":"...",
  "patternType":"PREFIXED"}` (ExtendedAclChangeStore) for a prefixed one.

Client quotas (AdminZkClient.changeUserOrUserClientIdConfig / changeClientIdConfig):
- `/config/users/<user>`, `/config/clients/<client-id>`, `/config/users/<user>/clients/<client-id>`, each name
  sanitized (Sanitizer.sanitize: URL-encoded, '*' and ' ' as %2A / %20), the default of either as `<default>`;
  `{"version":1,"config":{...}}` (the encoding of core.zkformat). A user's node also holds its SCRAM credentials.
- The change notification is `/config/changes/config_change_` with `{"version":2,"entity_path":"users/alice"}`
  (the sanitized path below /config).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from core.errors import CorruptZnodeError, ValidationError
from core.security.model import (DEFAULT, Binding, Operation, PatternType, Permission, QuotaEntity, Resource,
                                 ResourceType)

ACL_ROOT = "/kafka-acl"  # LiteralAclStore
EXTENDED_ROOT = "/kafka-acl-extended"  # ExtendedAclZNode; below it one directory per pattern type, lower case
ACL_CHANGES = "/kafka-acl-changes"  # LiteralAclChangeStore
EXTENDED_CHANGES = "/kafka-acl-extended-changes"  # ExtendedAclChangeStore
ACL_CHANGE_SEQUENCE = "acl_changes_"  # ZkAclChangeStore.SequenceNumberPrefix
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"

_TYPES = {t.value: t for t in ResourceType}
_OPERATIONS = {o.value: o for o in Operation}
_PERMISSIONS = {p.value: p for p in Permission}


# --- ACL nodes ----------------------------------------------------------------------------------------------------


def acl_store(pattern: PatternType) -> str:
    """The root of a pattern type's resource nodes: /kafka-acl, /kafka-acl-extended/prefixed."""
    return ACL_ROOT if pattern is PatternType.LITERAL else f"{EXTENDED_ROOT}/{pattern.name.lower()}"


def pattern_of_store(directory: str) -> PatternType | None:
    """The pattern type of a directory under /kafka-acl-extended ("prefixed"), None for one Kafka 3.9 does not know."""
    return next((p for p in PatternType if p is not PatternType.LITERAL and p.name.lower() == directory), None)


def resource_type_of(directory: str) -> ResourceType | None:
    """The resource type a store's child names ("Topic"), None for an unknown one (AclAuthorizer ignores those)."""
    return _TYPES.get(directory)


def check_resource_name(resource: Resource) -> None:
    """A resource name ZooKeeper can hold as one znode name; ValidationError otherwise (nothing written)."""
    name = resource.name
    if not name or "/" in name or name in (".", "..") or "\x00" in name:
        raise ValidationError(f"invalid resource name {name!r} for {resource.type.value}: a ZooKeeper-mode cluster "
                              "keeps each resource's ACLs in one znode named after it, which cannot be empty, '.', "
                              "'..' or hold '/'")


def acl_path(resource: Resource) -> str:
    """ResourceZNode.path: /kafka-acl/Topic/t, /kafka-acl-extended/prefixed/Group/g-."""
    check_resource_name(resource)
    return f"{acl_store(resource.pattern)}/{resource.type.value}/{resource.name}"


def _entry(b: Binding) -> dict[str, str]:
    return {"principal": b.principal, "permissionType": b.permission.value, "operation": b.operation.value,
            "host": b.host}


def encode_acls(bindings: Iterable[Binding]) -> bytes:
    """ResourceZNode.encode (AclEntry.toJsonCompatibleMap) of one resource's bindings, in a stable order."""
    entries = sorted({json.dumps(_entry(b), sort_keys=True) for b in bindings})
    return json.dumps({"version": 1, "acls": [json.loads(e) for e in entries]}, separators=(",", ":")).encode()


def decode_acls(resource: Resource, data: bytes | None, path: str) -> tuple[Binding, ...]:
    """AclEntry.fromBytes: the bindings a resource node holds (empty for an empty node); CorruptZnodeError naming
    `path` for anything else than what Kafka writes."""
    if not data:
        return ()
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptZnodeError(path, f"not JSON ({e})") from None
    if not isinstance(obj, dict) or obj.get("version") != 1 or not isinstance(obj.get("acls"), list):
        raise CorruptZnodeError(path, 'expected {"version":1,"acls":[...]}')
    out = []
    for item in obj["acls"]:
        if not isinstance(item, dict):
            raise CorruptZnodeError(path, f"an ACL entry must be an object, got {item!r}")
        principal, host = item.get("principal"), item.get("host")
        operation = _OPERATIONS.get(item.get("operation"))  # type: ignore[arg-type]
        permission = _PERMISSIONS.get(item.get("permissionType"))  # type: ignore[arg-type]
        if not (isinstance(principal, str) and ":" in principal and isinstance(host, str) and operation
                and permission):
            raise CorruptZnodeError(path, f"not an ACL entry Kafka writes: {item!r}")
        out.append(Binding(resource, principal, host, operation, permission))
    return tuple(out)


def acl_change_prefix(pattern: PatternType) -> str:
    """Where the sequential change notification of a resource of this pattern type is created."""
    root = ACL_CHANGES if pattern is PatternType.LITERAL else EXTENDED_CHANGES
    return f"{root}/{ACL_CHANGE_SEQUENCE}"


def encode_acl_change(resource: Resource) -> bytes:
    """The notification's bytes: `TOPIC:name` (literal) or ExtendedAclChangeEvent's JSON (prefixed)."""
    if resource.pattern is PatternType.LITERAL:
        return f"{resource.type.name}:{resource.name}".encode()
    return json.dumps({"version": 1, "resourceType": resource.type.name, "name": resource.name,
                       "patternType": resource.pattern.name}, separators=(",", ":")).encode()


# --- client quota nodes --------------------------------------------------------------------------------------------

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Sanitizer.sanitize: Java's URLEncoder (UTF-8), then '*' -> %2A and '+' (a space) -> %20."""
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name)


def desanitize(name: str) -> str:
    """Sanitizer.desanitize: Java's URLDecoder ('+' is a space, %XX a UTF-8 byte)."""
    out = bytearray()
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and _hex(name[i + 1:i + 3]):
            out.append(int(name[i + 1:i + 3], 16))
            i += 3
            continue
        out += b" " if c == "+" else c.encode()
        i += 1
    return out.decode(errors="replace")


def _hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def _node_name(name: str) -> str:
    return name if name == DEFAULT else sanitize(name)


def _entity_name(node: str) -> str:
    return DEFAULT if node == DEFAULT else desanitize(node)


def check_entity(entity: QuotaEntity) -> None:
    """A user, a client id, or both (each a name or DEFAULT); ValidationError otherwise."""
    if entity.user is None and entity.client is None:
        raise ValidationError("a quota needs a user, a client id, or both (or their defaults)")
    for what, name in (("user", entity.user), ("client id", entity.client)):
        if name is not None and not name:
            raise ValidationError(f"empty {what}: give a name, or the default of {what}s")


def quota_entity_path(entity: QuotaEntity) -> str:
    """users/alice, clients/c1, users/alice/clients/c1 (sanitized): the notification's entity_path; the znode is
    /config/ + it."""
    check_entity(entity)
    if entity.user is None:
        return f"clients/{_node_name(entity.client or '')}"
    path = f"users/{_node_name(entity.user)}"
    return path if entity.client is None else f"{path}/clients/{_node_name(entity.client)}"


def quota_path(entity: QuotaEntity) -> str:
    return f"/config/{quota_entity_path(entity)}"


def user_entity(node: str, client_node: str | None = None) -> QuotaEntity:
    """The entity of /config/users/<node>[/clients/<client_node>] (names desanitized)."""
    return QuotaEntity(_entity_name(node), None if client_node is None else _entity_name(client_node))


def client_entity(node: str) -> QuotaEntity:
    return QuotaEntity(None, _entity_name(node))


def quota_config(config: Mapping[str, Any], values: Mapping[str, float | None]) -> dict[str, str]:
    """The whole config node after setting (a number) or deleting (None) quota keys: every other key, a user's SCRAM
    credentials included, kept as it was. Numbers as Kafka's tools write them ("1024.0" stays parseable as a double:
    QuotaConfigs are DOUBLE)."""
    out = {k: str(v) for k, v in config.items()}
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _number(value)
    return out


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
