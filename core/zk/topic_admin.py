"""Apply topic drafts to ZooKeeper: create, add partitions, alter config, delete.

Every apply re-reads live state, re-computes the draft against it (so a preview made minutes ago
cannot write something the cluster no longer allows), records the action in the store *before*
writing, writes as Kafka's admin tools write (one multi-op where Kafka's semantics allow), and
finishes the record with the result. Bad input raises a typed error and writes nothing.

No lost updates: every znode whose new content is computed from what was read is written with the
stat version of that same read (ClusterTree.versions), so a change made by anyone in between fails
the whole multi-op instead of being overwritten.
"""

from __future__ import annotations

import base64
import uuid
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from core import zkformat as zf
from core.errors import (
    BusyError,
    InvalidPartitionsError,
    InvalidTopicError,
    KeelError,
    TopicExistsError,
    ValidationError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
)
from core.model import ClusterSnapshot
from core.audit.store import Store
from core.topics import (
    AddPartitionsDraft,
    AlterConfigDraft,
    CreateTopicDraft,
    DeleteTopicDraft,
    redraft_add_partitions,
    draft_alter_config,
    draft_create_topic,
    draft_delete_topic,
    require_accepted,
)
from core.zk.reader import read_for_write, refuse_corrupt
from core.zk.reconcile import settle_unknown_write
from core.zk.session import Op, ZkSession, ZkWriteOutcomeUnknownError
from core.zk.tree import ClusterTree
from core.writes import Applied, changed_meanwhile  # noqa: F401  (Applied re-exported)


def live_state(session: ZkSession) -> tuple[ClusterSnapshot, ClusterTree]:
    """Brokers, topics, configs and /admin nodes as they are now (partition states are not needed),
    with the versions the write must check."""
    return read_for_write(session, with_states=False)


def refuse_unreadable(snapshot: ClusterSnapshot, name: str, action: str, *, config: bool = False) -> None:
    """Refuse a topic write that depends on an unreadable znode, naming it: /controller (it may hide a KRaft
    controller), the topic's node when it is unreadable (the topic is then missing from the snapshot, and
    "does not exist" would be wrong), and with `config` the topic's config node (rewriting it from an
    unreadable one would drop whatever it holds)."""
    paths = [zf.CONTROLLER]
    if snapshot.topic(name) is None:
        paths.append(zf.topic_path(name))
    if config:
        paths.append(zf.topic_config_path(name))
    refuse_corrupt(snapshot, paths, action)


_changed_meanwhile = changed_meanwhile


def new_topic_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 random bytes, no padding, never '-' first."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def topic_node_version(tree: ClusterTree) -> tuple[int, bool]:
    """The topic-node version the cluster's topics use (the most common), and whether they carry topic ids.

    A new topic written in the same version keeps an older cluster's brokers able to read it; a
    cluster without topics gets what Kafka 3.x writes (v3 with a topic id).
    """
    if not tree.assignments:
        return 3, True
    versions = Counter(a.version for a in tree.assignments.values())
    version = versions.most_common(1)[0][0]
    with_ids = any(a.topic_id for a in tree.assignments.values())
    return version, with_ids and version >= 3


def _record(store: Store, cluster: str, kind: str, target: str, summary: str, ops: list[Op],
            rollback: object, actor: str | None) -> int:
    payload = [{"op": op.kind, "path": op.path, "data": op.data.decode(errors="replace")}
               for op in ops if op.kind != "absent"]  # what is written; an absent op writes nothing
    return store.begin(cluster=cluster, kind=kind, target=target, summary=summary, payload=payload,
                       rollback=rollback, actor=actor)


# How a failed multi is reported: keyed by (error type, the failing op's path) first, then by error type alone.
Translate = Mapping[Any, KeelError]


def _mapped(e: KeelError, translate: Translate) -> KeelError:
    path = getattr(e, "path", None)
    exact = [err for key, err in translate.items() if isinstance(key, tuple) and isinstance(e, key[0])
             and key[1] == path]
    return next(iter(exact), None) or next(
        (err for key, err in translate.items() if isinstance(key, type) and isinstance(e, key)), e)


def _run(session: ZkSession, store: Store, action_id: int, ops: list[Op], summary: str,
         translate: Translate | None = None) -> Applied:
    try:
        results = session.multi(ops)
    except ZkWriteOutcomeUnknownError as e:  # committed or not: find out, or leave the action pending
        summary += f" ({settle_unknown_write(session, store, action_id, e)})"
        results = [None] * len(ops)
    except KeelError as e:
        mapped = _mapped(e, translate or {})
        store.finish(action_id, ok=False, result=str(mapped))
        if mapped is e:
            raise
        raise mapped from None
    written = tuple(r or op.path for op, r in zip(ops, results))
    store.finish(action_id, ok=True, result=summary)
    return Applied(action_id, summary, written)


# --- create ----------------------------------------------------------------------------------


def create_topic(session: ZkSession, store: Store, draft: CreateTopicDraft, *, cluster: str,
                 actor: str | None = None, accept_risks: bool | Sequence[str] = False, defaults=None) -> Applied:
    """Write the draft's exact placement (re-validated as an explicit assignment against live state).

    `accept_risks`: True, or the exact risk texts the operator confirmed (see CreateTopicDraft.risks); `defaults`:
    the brokers' own settings the draft was checked with (core.broker_defaults), so the risks re-checked match."""
    snap, tree = live_state(session)
    refuse_unreadable(snap, draft.name, f"create topic {draft.name}")
    checked = draft_create_topic(snap, draft.name, config=draft.config, replica_assignment=draft.assignment,
                                 defaults=defaults)
    require_accepted(checked.risks, accept_risks)
    version, with_id = topic_node_version(tree)
    topic_id = new_topic_id() if with_id else None
    config_path = zf.topic_config_path(checked.name)
    config_op = Op("create", config_path, zf.encode_config(checked.config))
    stale = session.get(config_path)  # a config left behind by an old topic of the same name: overwrite it
    if stale.exists:
        config_op = Op("set", config_path, zf.encode_config(checked.config), version=stale.version)
    topic_path = zf.topic_path(checked.name)
    marker = zf.delete_topic_path(checked.name)
    colliding = colliding_names(checked.name)
    ops = [config_op,
           Op("create", topic_path, zf.encode_topic(checked.assignment, version=version, topic_id=topic_id)),
           # What was validated at read time must still hold at commit time, in the same transaction (each fails
           # the multi as a whole): not marked for deletion, and no topic whose name collides created meanwhile.
           Op("absent", marker), *(Op("absent", zf.topic_path(other)) for other in colliding)]
    summary = (f"created topic {checked.name}: {checked.partitions} partitions, replication factor "
               f"{checked.replication_factor}" + (f", {len(checked.config)} config overrides" if checked.config else ""))
    action = _record(store, cluster, "create-topic", checked.name, summary, ops,
                     {"action": "delete-topic", "topic": checked.name}, actor)
    exists = TopicExistsError(f"Topic '{checked.name}' already exists.")
    translate: dict[Any, KeelError] = {
        (ZkNodeExistsError, topic_path): exists, (ZkNodeExistsError, config_path): exists,
        (ZkNodeExistsError, marker): TopicExistsError(
            f"Topic '{checked.name}' is still marked for deletion ({marker} exists).",
            hint="it was marked while this write was on its way; wait until the controller has deleted it"),
        **{(ZkNodeExistsError, zf.topic_path(other)): InvalidTopicError(
            f"Topic '{checked.name}' collides with existing topics: {other}",
            hint=f"'{other}' was created while this write was on its way") for other in colliding},
        ZkNodeExistsError: ValidationError(_changed_meanwhile("The cluster")),
        ZkBadVersionError: ValidationError(_changed_meanwhile(f"The config node of topic {checked.name}"))}
    return _run(session, store, action, ops, summary, translate)


MAX_COLLIDING_CHECKS = 255  # names with up to 8 '.' / '_': checked in the multi; beyond, at read time only (as Kafka)


def colliding_names(name: str) -> list[str]:
    """The other valid topic names that collide with `name` once '.' -> '_' (Kafka's Topic.hasCollision), for the
    create to check their absence at commit time. Kafka checks them only when it reads (validateTopicCreate), so
    two creates at once can both pass; Keel's own cannot. Empty past MAX_COLLIDING_CHECKS (2**k - 1 names for k
    such characters): those names are checked at read time only, as Kafka does."""
    spots = [i for i, c in enumerate(name) if c in "._"]
    if not spots or 2 ** len(spots) - 1 > MAX_COLLIDING_CHECKS:
        return []
    out = []
    for mask in range(2 ** len(spots)):
        chars = list(name)
        for bit, i in enumerate(spots):
            chars[i] = "." if mask >> bit & 1 else "_"
        other = "".join(chars)
        if other != name and other not in (".", ".."):  # not topic names, nor valid ZooKeeper paths
            out.append(other)
    return out


# --- add partitions ----------------------------------------------------------------------------


def add_partitions(session: ZkSession, store: Store, draft: AddPartitionsDraft, *, cluster: str,
                   actor: str | None = None) -> Applied:
    snap, tree = live_state(session)
    refuse_unreadable(snap, draft.name, f"add partitions to topic {draft.name}")
    checked, summary = redraft_add_partitions(snap, draft)
    path = zf.topic_path(draft.name)
    current = tree.assignments[draft.name]
    # The version of the very read the new partition list was computed from, not of a later get().
    ops = [Op("set", path, zf.encode_topic(
        checked.full_assignment, version=max(current.version, 1), adding_replicas=current.adding_replicas,
        removing_replicas=current.removing_replicas, topic_id=current.topic_id), version=tree.versions[path])]
    # Refused for a topic queued for deletion (draft_add_partitions): still so at commit time, in the same multi.
    marker = zf.delete_topic_path(draft.name)
    ops.append(Op("absent", marker))
    action = _record(store, cluster, "add-partitions", draft.name, summary, ops,
                     {"action": "none", "reason": "Kafka cannot remove partitions from a topic"}, actor)
    changed = InvalidPartitionsError(_changed_meanwhile(f"Topic {draft.name}"))
    return _run(session, store, action, ops, summary, {
        (ZkNodeExistsError, marker): InvalidTopicError(
            "The topic is queued for deletion.",
            hint=f"topic '{draft.name}' was marked for deletion while this write was on its way; nothing was written"),
        ZkBadVersionError: changed, ZkNodeExistsError: changed})


# --- alter config --------------------------------------------------------------------------------


def alter_config(session: ZkSession, store: Store, name: str, set: Mapping[str, str] | None = None,
                 delete: Iterable[str] = (), *, cluster: str, actor: str | None = None,
                 accept_risks: bool | Sequence[str] = False, defaults=None) -> Applied:
    """kafka-configs --alter: the entity node, then the change notification the brokers listen to. `defaults`: as
    for create_topic."""
    snap, tree = live_state(session)
    refuse_unreadable(snap, name, f"alter the config of topic {name}", config=True)
    draft: AlterConfigDraft = draft_alter_config(snap, name, set=set, delete=delete, defaults=defaults)
    if not draft.changed:
        raise ValidationError(f"nothing to change: topic {name} already has that configuration")
    require_accepted(draft.risks, accept_risks)
    path = zf.topic_config_path(name)
    version = tree.versions.get(path, -1)  # the read draft.old came from; -1: there was no config node
    entity = (Op("set", path, zf.encode_config(draft.new), version=version) if version >= 0
              else Op("create", path, zf.encode_config(draft.new)))
    ops = [entity, Op("create", zf.CONFIG_CHANGE_PREFIX, zf.encode_config_change(f"topics/{name}"), sequence=True)]
    changes = ", ".join(f"{r.key}={r.new}" if r.new is not None else f"-{r.key}" for r in draft.diff)
    summary = f"altered config of {name}: {changes}"
    action = _record(store, cluster, "alter-config", name, summary, ops,
                     {"action": "alter-config", "topic": name, "config": draft.old}, actor)
    changed = ValidationError(_changed_meanwhile(f"The config of topic {name}"))
    return _run(session, store, action, ops, summary, {ZkBadVersionError: changed, ZkNodeExistsError: changed})


# --- delete ----------------------------------------------------------------------------------


def delete_topic(session: ZkSession, store: Store, name: str, *, cluster: str,
                 actor: str | None = None) -> Applied:
    snap, tree = live_state(session)
    refuse_unreadable(snap, name, f"delete topic {name}")
    draft: DeleteTopicDraft = draft_delete_topic(snap, name)
    # The topic must still be the one that was read (not deleted and re-created meanwhile).
    ops = [Op("check", zf.topic_path(name), version=tree.versions[zf.topic_path(name)]),
           Op("create", zf.delete_topic_path(name), b"")]
    summary = f"marked topic {name} for deletion ({draft.partitions} partitions, {draft.replicas} replicas)"
    action = _record(store, cluster, "delete-topic", name, summary, ops,
                     {"action": "none", "reason": "a deleted topic's data cannot be restored"}, actor)
    return _run(session, store, action, ops, summary,
                {ZkNodeExistsError: BusyError(f"Topic {name} is already marked for deletion."),
                 ZkBadVersionError: ValidationError(_changed_meanwhile(f"Topic {name}")),
                 ZkNoNodeError: ValidationError(_changed_meanwhile(f"Topic {name}"))})
