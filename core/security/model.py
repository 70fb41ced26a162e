"""Who may do what in Kafka: ACL bindings and client quotas as plain values, whichever way they were read (ZooKeeper's
/kafka-acl*, /config/users, /config/clients; or the brokers' DescribeAcls / DescribeClientQuotas). Pure.

Names follow Kafka's Java enums (org.apache.kafka.common.resource / acl): `Operation.WRITE.value == "Write"` is the
spelling ZooKeeper's ACL nodes hold (SecurityUtils.operationName); `.name` ("WRITE") is what `kafka-acls --list`
prints.

The engines (core.zk.security_writes, core.kafka.security_writes; picked by core.cluster.engines.security) offer the
same functions on their handle (ZkSession | KafkaAdmin):

    read_acls(handle) -> Acls
    read_quotas(handle) -> tuple[Quota, ...]          # never a SCRAM credential
    add_acls(handle, store, bindings, *, cluster, actor=None) -> core.writes.Applied
    remove_acls(handle, store, bindings, *, cluster, actor=None, accept_risks=False, relied_on=None) -> Applied
    alter_quota(handle, store, entity, values, *, cluster, actor=None) -> Applied   # values: {key: float | None}
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping

__all__ = ["ResourceType", "PatternType", "Operation", "Permission", "Resource", "Binding", "Acls", "DEFAULT",
           "QUOTA_KEYS", "QuotaEntity", "Quota", "CLUSTER_NAME", "WILDCARD"]

CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
WILDCARD = "*"  # a LITERAL resource named "*" matches every name; "User:*" every principal; host "*" every host


class ResourceType(Enum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"
    USER = "User"


class PatternType(Enum):
    LITERAL = "Literal"
    PREFIXED = "Prefixed"


class Operation(Enum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"
    CREATE_TOKENS = "CreateTokens"
    DESCRIBE_TOKENS = "DescribeTokens"


class Permission(Enum):
    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True)
class Resource:
    type: ResourceType
    name: str
    pattern: PatternType = PatternType.LITERAL

    @property
    def key(self) -> tuple[str, str, str]:  # for sorting and grouping
        return (self.type.name, self.pattern.name, self.name)


@dataclass(frozen=True)
class Binding:
    """One ACL: `principal` ("User:alice", "User:*") from `host` ("*" or an address) may (ALLOW) or may not (DENY)
    do `operation` on `resource`."""

    resource: Resource
    principal: str
    host: str
    operation: Operation
    permission: Permission


@dataclass(frozen=True)
class Acls:
    """Every binding of a cluster, and what the reader could not see."""

    bindings: tuple[Binding, ...]
    source: str  # "zookeeper" | "brokers"
    super_users: tuple[str, ...] | None = None  # None: not known (ZooKeeper does not hold the brokers' super.users)
    authorizer: str | None = None  # the brokers' authorizer.class.name when known ("" : none configured)


DEFAULT = "<default>"  # Kafka's name for the default user / client id (the znode /config/users/<default>)
# the quota keys Kafka knows (QuotaConfigs): what the pages and commands accept and show
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")


@dataclass(frozen=True, order=True)
class QuotaEntity:
    """Whom a quota applies to: a user, a client id, or both; DEFAULT for the default of that kind; None where the
    entity has no such part (a client-id quota has user None)."""

    user: str | None = None
    client: str | None = None


@dataclass(frozen=True)
class Quota:
    entity: QuotaEntity
    values: Mapping[str, float]  # QUOTA_KEYS only: SCRAM credentials and other keys never enter
