"""The demo's ACL bindings and client quotas (issue 29): a few of each, so that `make run` shows the Security page and
a topic's "who may" section with something in them. Written as Kafka writes them (core.security.znodes: the resource
nodes under /kafka-acl and /kafka-acl-extended, the quota nodes under /config/users and /config/clients), without
change notifications: a broker reads every node when it starts, as it does for the seeded topics."""

from __future__ import annotations

from core import zkformat as zf
from core.security import znodes as zn
from core.security.model import (CLUSTER_NAME, DEFAULT, WILDCARD, Binding, Operation as O, PatternType, Permission,
                                 QuotaEntity, Resource, ResourceType)

_ALLOW, _DENY = Permission.ALLOW, Permission.DENY


def demo_bindings(topic: str) -> tuple[Binding, ...]:
    """An estate's usual shape around `topic` (one of the seeded topics): its producing service, a reader denied
    writes, a prefixed read for analytics, describe for everyone, and the brokers' replication right."""
    t = Resource(ResourceType.TOPIC, topic)
    click = Resource(ResourceType.TOPIC, "clickstream.", PatternType.PREFIXED)
    group = Resource(ResourceType.GROUP, "analytics-", PatternType.PREFIXED)
    everything = Resource(ResourceType.TOPIC, WILDCARD)
    cluster = Resource(ResourceType.CLUSTER, CLUSTER_NAME)
    return (
        Binding(t, "User:orders-service", WILDCARD, O.WRITE, _ALLOW),
        Binding(t, "User:orders-service", WILDCARD, O.DESCRIBE, _ALLOW),
        Binding(t, "User:analytics", WILDCARD, O.READ, _ALLOW),
        Binding(t, "User:analytics", WILDCARD, O.WRITE, _DENY),
        Binding(click, "User:analytics", WILDCARD, O.READ, _ALLOW),
        Binding(group, "User:analytics", WILDCARD, O.READ, _ALLOW),
        Binding(everything, "User:monitoring", WILDCARD, O.DESCRIBE, _ALLOW),
        Binding(cluster, "User:kafka-broker", WILDCARD, O.CLUSTER_ACTION, _ALLOW),
    )


DEMO_QUOTAS = {  # entity -> its quota config as kafka-configs writes it (every value a string)
    QuotaEntity("analytics"): {"consumer_byte_rate": "10485760"},
    QuotaEntity("analytics", "spark-loader"): {"consumer_byte_rate": "52428800"},
    QuotaEntity(DEFAULT): {"producer_byte_rate": "5242880"},
    QuotaEntity(None, DEFAULT): {"request_percentage": "50"},
}


def security_nodes(topic: str) -> list[tuple[str, bytes]]:
    """(path, data) of every node to create, parents left to the caller (the seeder's ops create them)."""
    by_resource: dict[Resource, list[Binding]] = {}
    for b in demo_bindings(topic):
        by_resource.setdefault(b.resource, []).append(b)
    nodes = [(zn.acl_path(r), zn.encode_acls(bs)) for r, bs in by_resource.items()]
    # a user+client node sits below its user's node: users first (sorted paths put /config/users/analytics first)
    nodes += sorted((zn.quota_path(e), zf.encode_config(c)) for e, c in DEMO_QUOTAS.items())
    return nodes
