"""Client quotas as Kafka resolves them: the eight levels of precedence, the quota values of a config node (never a
SCRAM credential), validation, and the text `kafka-configs --describe --entity-type users|clients` prints. Pure.

Sources (Kafka 3.9): kafka/server/ClientQuotaManager.scala (DefaultQuotaCallback.quotaMetricTags / quotaLimit: the
precedence), org.apache.kafka.server.config.QuotaConfigs (the keys and their types),
org.apache.kafka.controller.ClientQuotaControlManager (validation), kafka/admin/ConfigCommand.scala (the text).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Iterable, Mapping

from core.errors import ValidationError
from core.security.model import DEFAULT, QUOTA_KEYS, Quota, QuotaEntity

__all__ = ["USER", "CLIENT", "LEVELS", "level_entities", "effective", "values_of", "validate", "describe_text",
           "parse_describe_text", "entity_label", "java_double"]

USER = "user"  # in LEVELS: the user asked about
CLIENT = "client"  # in LEVELS: the client id asked about
# Kafka's eight levels, most specific first (ClientQuotaManager, "Quotas" in Kafka's docs): (user part, client part),
# DEFAULT for <default>, None for no such part
LEVELS: tuple[tuple[str | None, str | None], ...] = (
    (USER, CLIENT),  # /config/users/<user>/clients/<client-id>
    (USER, DEFAULT),  # /config/users/<user>/clients/<default>
    (USER, None),  # /config/users/<user>
    (DEFAULT, CLIENT),  # /config/users/<default>/clients/<client-id>
    (DEFAULT, DEFAULT),  # /config/users/<default>/clients/<default>
    (DEFAULT, None),  # /config/users/<default>
    (None, CLIENT),  # /config/clients/<client-id>
    (None, DEFAULT),  # /config/clients/<default>
)
_INTEGRAL = ("producer_byte_rate", "consumer_byte_rate")  # QuotaConfigs: LONG; the other two DOUBLE


def level_entities(user: str, client: str) -> tuple[QuotaEntity, ...]:
    """The entities whose quota may apply to (user, client), in LEVELS' order."""
    pick = {USER: user, CLIENT: client, DEFAULT: DEFAULT, None: None}
    return tuple(QuotaEntity(pick[u], pick[c]) for u, c in LEVELS)


def _resolve(have: Mapping[QuotaEntity, float], user: str, client: str) -> tuple[float, QuotaEntity] | None:
    """One key's quota for (user, client): DefaultQuotaCallback's two steps, kept as Kafka wrote them (they pick the
    first of LEVELS that has the key, but for an empty user or client id)."""
    E = QuotaEntity
    # quotaMetricTags: which sensor (user tag, client tag) the connection is counted under
    if E(user, client) in have or E(user, DEFAULT) in have:
        tags = (user, client)
    elif E(user, None) in have:
        tags = (user, "")
    elif E(DEFAULT, client) in have or E(DEFAULT, DEFAULT) in have:
        tags = (user, client)
    elif E(DEFAULT, None) in have:
        tags = (user, "")
    else:
        tags = ("", client)
    # quotaLimit: the quota of that sensor
    u, c = tags
    if u and c:
        order = (E(u, c), E(u, DEFAULT), E(DEFAULT, c), E(DEFAULT, DEFAULT))
    elif u:
        order = (E(u, None), E(DEFAULT, None))
    elif c:
        order = (E(None, c), E(None, DEFAULT))
    else:
        order = ()
    for entity in order:
        if entity in have:
            return have[entity], entity
    return None


def effective(quotas: Iterable[Quota], user: str, client: str) -> dict[str, tuple[float, QuotaEntity]]:
    """Per quota key, the value Kafka applies to a connection of `user` (the principal's name, "alice") with client id
    `client`, and the entity it comes from. Each key is resolved on its own (a quota manager per key); a key with no
    quota at any level is absent: unlimited."""
    by_key: dict[str, dict[QuotaEntity, float]] = {}
    for q in quotas:
        for key, value in q.values.items():
            by_key.setdefault(key, {})[q.entity] = value
    out = {}
    for key in QUOTA_KEYS:
        hit = _resolve(by_key.get(key, {}), user, client)
        if hit is not None:
            out[key] = hit
    return out


def values_of(config: Mapping[str, str]) -> dict[str, float]:
    """The quota values of a user / client config node (or DescribeClientQuotas entry): QUOTA_KEYS only, so SCRAM
    credentials (SCRAM-SHA-256, SCRAM-SHA-512, which /config/users/<user> also holds) and anything else never leave."""
    out = {}
    for key in QUOTA_KEYS:
        if key in config:
            try:
                out[key] = float(config[key])
            except (TypeError, ValueError):
                raise ValidationError(f"quota {key} is not a number: {config[key]!r}") from None
    return out


def validate(entity: QuotaEntity, values: Mapping[str, float | None]) -> None:
    """Refuse (ValidationError, every problem named) what the brokers would refuse: an entity with no user and no
    client id or an empty name, an unknown key (a SCRAM credential among them), a value not above 0, a fractional
    byte rate. None deletes the key and is always valid."""
    problems = []
    if entity.user is None and entity.client is None:
        problems.append("a quota applies to a user, a client id or both: give at least one")
    for part, name in (("user", entity.user), ("client id", entity.client)):
        if name is not None and not str(name).strip():
            problems.append(f"empty {part} not supported (use <default> for the default {part})")
    for key, value in values.items():
        if key not in QUOTA_KEYS:
            if key.upper().startswith("SCRAM-"):
                problems.append(f"{key} is a SCRAM credential, not a quota: Keel does not read or write credentials")
            else:
                problems.append(f"unknown quota key {key!r} (known: {', '.join(QUOTA_KEYS)})")
            continue
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            problems.append(f"quota {key} must be a number, not {value!r}")
        elif value <= 0:
            problems.append(f"quota {key} must be greater than 0 (delete it to lift the limit)")
        elif key in _INTEGRAL and abs(value % 1.0) > 1e-6:
            problems.append(f"{key} cannot be a fractional value (bytes per second)")
    if problems:
        raise ValidationError(f"invalid quota for {entity_label(entity)}: " + "; ".join(problems))


def entity_label(entity: QuotaEntity) -> str:
    """'user alice, client-id c1', 'default user', 'user alice, default client-id', 'client-id c1' (the words of
    ClientQuotaManager's entities)."""
    parts = []
    if entity.user is not None:
        parts.append("default user" if entity.user == DEFAULT else f"user {entity.user}")
    if entity.client is not None:
        parts.append("default client-id" if entity.client == DEFAULT else f"client-id {entity.client}")
    return ", ".join(parts) or "no entity"


# --- kafka-configs --describe ---------------------------------------------------------------------------------------

def java_double(x: float) -> str:
    """Java's Double.toString, as ConfigCommand prints a quota: '1024.0', '12.5', '1.048576E7' (>= 10^7 or < 10^-3
    in scientific notation)."""
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))  # Python's shortest repr is Java's in this range
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    power = len(digits) - 1 + exp
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{power}"


def _entity_text(entity: QuotaEntity) -> str:  # ConfigCommand.describeQuotaConfigs' entitySubstr
    parts = []
    if entity.user is not None:
        parts.append("the default user-principal" if entity.user == DEFAULT else f"user-principal '{entity.user}'")
    if entity.client is not None:
        parts.append("the default client-id" if entity.client == DEFAULT else f"client-id '{entity.client}'")
    return ", ".join(parts)


def _entity_sort(q: Quota) -> tuple:
    e = q.entity
    return (e.user is None, e.user != DEFAULT, e.user or "", e.client is None, e.client != DEFAULT, e.client or "")


def describe_text(quotas: Iterable[Quota]) -> str:
    """What `kafka-configs --bootstrap-server ... --describe --entity-type users|clients` prints for these quotas
    (ConfigCommand.describeQuotaConfigs, 3.9): one line per entity with a value,
    "Quota configs for user-principal 'alice', client-id 'c1' are producer_byte_rate=1024.0, request_percentage=50.0".
    Kafka's order is a hash map's; Keel's is sorted. Never a SCRAM line (the tool adds "SCRAM credential configs for
    user-principal ..." after, with iterations only)."""
    lines = []
    for q in sorted(quotas, key=_entity_sort):
        values = {k: v for k, v in q.values.items() if k in QUOTA_KEYS}
        if values:
            entries = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items()))
            lines.append(f"Quota configs for {_entity_text(q.entity)} are {entries}\n")
    return "".join(lines)


_PART = r"(?:the default user-principal|default user-principal|user-principal '.*?'|the default client-id|" \
        r"default client-id|client-id '.*?')"
_LINE_RE = re.compile(rf"^(?:Quota configs|Configs) for ({_PART}(?:, {_PART})?) are (.*)$")


def _parse_entity(text: str) -> QuotaEntity:
    user = client = None
    for part in re.findall(_PART, text):
        name = part.split("'", 1)[1][:-1] if "'" in part else DEFAULT
        if "user-principal" in part:
            user = name
        else:
            client = name
    return QuotaEntity(user, client)


def parse_describe_text(text: str) -> tuple[Quota, ...]:
    """The quotas in the output of `kafka-configs --describe --entity-type users|clients` (or describe_text): the
    "Quota configs for ..." lines of --bootstrap-server and the "Configs for ..." lines of --zookeeper; SCRAM lines
    and keys other than QUOTA_KEYS are dropped. Sorted by entity."""
    found: dict[QuotaEntity, dict[str, float]] = {}
    for line in text.splitlines():
        m = _LINE_RE.match(line.strip())
        if not m:
            continue
        entity = _parse_entity(m[1])
        pairs = dict(p.strip().split("=", 1) for p in m[2].split(",") if "=" in p)
        values = values_of({k: v for k, v in pairs.items() if k in QUOTA_KEYS})
        if values:
            found.setdefault(entity, {}).update(values)
    return tuple(sorted((Quota(e, v) for e, v in found.items()), key=_entity_sort))
