"""Which engine writes to a cluster, by the handle a front end holds: a core.zk.session.ZkSession (ZooKeeper mode:
core.zk.topic_admin, reassign_writes, election_writes) or a core.kafka.admin.KafkaAdmin (the brokers' Admin API,
KRaft clusters: core.kafka.topic_writes, reassign_writes, election_writes). The two engines take the same arguments
and return the same results (core.writes), so the CLI and the pages call `topics(h).create_topic(h, ...)` and never
branch on the mode themselves; what differs between the two is said here.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable

from core.model import ClusterSnapshot

if TYPE_CHECKING:
    from core.audit.store import Store

Handle = Any  # ZkSession | KafkaAdmin


def through_brokers(handle: Handle) -> bool:
    """True for a KafkaAdmin: the cluster is written through its brokers' Admin API."""
    from core.kafka.admin import KafkaAdmin

    return isinstance(handle, KafkaAdmin)


def topics(handle: Handle) -> ModuleType:
    """create_topic, add_partitions, alter_config, delete_topic."""
    if through_brokers(handle):
        from core.kafka import topic_writes

        return topic_writes
    from core.zk import topic_admin

    return topic_admin


def reassignments(handle: Handle) -> ModuleType:
    """execute, verify, rollback (and `cancel` below, whose arguments differ)."""
    if through_brokers(handle):
        from core.kafka import reassign_writes

        return reassign_writes
    from core.zk import reassign_writes

    return reassign_writes


def elections(handle: Handle) -> ModuleType:
    """plan_election, trigger, wait_for_outcome."""
    if through_brokers(handle):
        from core.kafka import election_writes

        return election_writes
    from core.zk import election_writes

    return election_writes


def security(handle: Handle) -> ModuleType:
    """read_acls, read_quotas, add_acls, remove_acls, alter_quota (core.security.model's docstring). Through ZooKeeper
    the brokers' super.users cannot be seen (Acls.super_users is None); through the brokers they come from a broker's
    configuration."""
    if through_brokers(handle):
        from core.kafka import security_writes

        return security_writes
    from core.zk import security_writes

    return security_writes


def live_snapshot(handle: Handle, *, states: bool = False) -> ClusterSnapshot:
    """The cluster as it is now, for drafting a write. Through ZooKeeper the partition states (leader, ISR: one
    znode per partition) are read only with `states`; the brokers always answer them."""
    if through_brokers(handle):
        from core.kafka.metadata import read_snapshot

        return read_snapshot(handle)
    if states:
        from core.zk.reader import read_snapshot as read_zk

        return read_zk(handle)
    from core.zk.topic_admin import live_state

    return live_state(handle)[0]


def refuse_unreadable(handle: Handle, snapshot: ClusterSnapshot, topic: str, action: str, *,
                      config: bool = False) -> None:
    """Refuse a topic write that depends on something the read could not decode: ZooKeeper's znodes
    (core.zk.topic_admin.refuse_unreadable), or through the brokers the topic's settings when `config`."""
    if through_brokers(handle):
        from core.errors import ValidationError
        from core.kafka.metadata import topic_config_problem

        if config:
            bad = [p for p in snapshot.problems if p.path == topic_config_problem(topic)]
            if bad:
                raise ValidationError(f"cannot {action}: the settings of topic {topic} could not be read "
                                        f"({bad[0].error}); nothing was written", hint="try again in a moment")
        return
    from core.zk.topic_admin import refuse_unreadable as refuse

    refuse(snapshot, topic, action, config=config)


def cancel(handle: Handle, store: "Store", admin: Any, *, cluster: str,
           partitions: Iterable[tuple[str, int]] | None = None, preserve_throttles: bool = False,
           actor: str | None = None):
    """Cancel running reassignments: always through the Admin API (`admin`); the throttles go through ZooKeeper in
    ZooKeeper mode, through the same Admin API for a KRaft cluster (where `handle` is that admin)."""
    common = dict(cluster=cluster, partitions=partitions, preserve_throttles=preserve_throttles, actor=actor)
    if through_brokers(handle):
        from core.kafka.reassign_writes import cancel as through_admin

        return through_admin(handle, store, **common)
    from core.zk.reassign_writes import cancel as through_zk

    return through_zk(handle, store, admin, **common)
