"""Client quotas through the brokers (KIP-546, Kafka 2.6+): DescribeClientQuotas (API key 48) and AlterClientQuotas
(key 49), the requests `kafka-configs --bootstrap-server ... --entity-type users|clients` sends. kafka-python has
the request classes but no call for them: they are sent here through the admin client's connection manager, as
KafkaAdmin.broker_configs sends its requests.

Entities are core.security.model.QuotaEntity values; on the wire an entity is a list of (entity type, name) with
entity types "user" and "client-id" and name None for the default ("<default>" in ZooKeeper and in Keel). Entities
of other types (an "ip" connection-rate quota) are not quotas of users or clients and are left out.
"""

from __future__ import annotations

from typing import Mapping

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from core.kafka.admin import KafkaAdmin, KafkaAdminError
from core.kafka.write_requests import KafkaRefusal, refusal
from core.security.model import DEFAULT, QuotaEntity
from core.security.quotas import entity_label

__all__ = ["DESCRIBE_CLIENT_QUOTAS", "ALTER_CLIENT_QUOTAS", "describe_client_quotas", "alter_client_quotas",
           "wire_entity", "entity_key"]

DESCRIBE_CLIENT_QUOTAS = 48  # Kafka's ApiKeys
ALTER_CLIENT_QUOTAS = 49
_USER, _CLIENT = "user", "client-id"  # ClientQuotaEntity.USER / CLIENT_ID


def wire_entity(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """The entity as the requests carry it: [("user", "alice"), ("client-id", None)] (None: the default)."""
    parts = []
    if entity.user is not None:
        parts.append((_USER, None if entity.user == DEFAULT else entity.user))
    if entity.client is not None:
        parts.append((_CLIENT, None if entity.client == DEFAULT else entity.client))
    if not parts:
        raise KafkaAdminError("a quota entity needs a user, a client id or both")
    return parts


def _entity(parts) -> QuotaEntity | None:
    """The QuotaEntity of an answer's entity, None for one that is not a user / client quota (an "ip" one)."""
    names: dict[str, str] = {}
    for part in parts:
        if part.entity_type not in (_USER, _CLIENT):
            return None
        names[part.entity_type] = DEFAULT if part.entity_name is None else part.entity_name
    if not names:
        return None
    return QuotaEntity(user=names.get(_USER), client=names.get(_CLIENT))


def describe_client_quotas(admin: KafkaAdmin) -> dict[QuotaEntity, dict[str, float]]:
    """Every user / client-id quota the brokers hold: {entity: {key: value}} (an empty, non-strict filter matches
    every entity). DescribeClientQuotas answers quotas only, never SCRAM credentials (those are
    DescribeUserScramCredentials')."""
    request = DescribeClientQuotasRequest(components=[], strict=False)
    answer = admin.ask(request, "describe the client quotas")
    refused = refusal(answer.error_code, answer.error_message)
    if refused is not None:
        raise KafkaAdminError(f"could not describe the client quotas: Kafka refused it: {refused[0]}: {refused[1]}",
                              hint="Keel's principal needs DESCRIBE_CONFIGS on the cluster"
                              if "AUTHORIZATION" in refused[0] else None)
    out: dict[QuotaEntity, dict[str, float]] = {}
    for entry in answer.entries or ():
        entity = _entity(entry.entity)
        if entity is not None:
            out.setdefault(entity, {}).update({str(v.key): float(v.value) for v in entry.values})
    return dict(sorted(out.items(), key=lambda kv: entity_key(kv[0])))


def entity_key(e: QuotaEntity) -> tuple:
    """A sort key (QuotaEntity's own order fails on None parts), core.zk.security_writes' order."""
    return (e.user is None, e.user or "", e.client is None, e.client or "")


def alter_client_quotas(admin: KafkaAdmin, entity: QuotaEntity, changes: Mapping[str, float | None], *,
                        validate_only: bool = False) -> KafkaRefusal | None:
    """AlterClientQuotas of one entity: set each key to its value, remove it for None; keys not named keep their
    values. Kafka's refusal (error name, message), or None when accepted. `validate_only`: Kafka checks the keys
    and values as it would apply them and changes nothing."""
    Entry = AlterClientQuotasRequest.EntryData
    entry = Entry(entity=[Entry.EntityData(entity_type=t, entity_name=n) for t, n in wire_entity(entity)],
                  ops=[Entry.OpData(key=str(k), value=0.0 if v is None else float(v), remove=v is None)
                       for k, v in sorted(changes.items())])
    request = AlterClientQuotasRequest(entries=[entry], validate_only=validate_only)
    answer = admin.ask(request, f"alter the quotas of {entity_label(entity)}")
    rows = list(answer.entries or ())
    if not rows:
        return "UNKNOWN", "Kafka's answer did not mention the entity"
    for row in rows:
        refused = refusal(row.error_code, row.error_message)
        if refused is not None:
            return refused
    return None
