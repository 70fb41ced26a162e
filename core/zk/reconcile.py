"""Settle audit rows that an interrupted run left `pending`, by looking for their write in ZooKeeper.

Every write is recorded as pending *before* it is committed, and finished afterwards; a process killed in
between (SIGKILL, OOM, a lost machine) leaves the row pending although its multi-op may well have been
committed. On the next start (a CLI write command, or the dashboard's connect), `reconcile_pending` checks
each pending row of the cluster against ZooKeeper and marks it applied or failed (status `failed`, result
"reconciled: not applied ..."), saying how it was judged. The multi-ops are atomic, so one distinctive part
of a write is enough to tell whether all of it happened.

Only rows older than GRACE_SECONDS are judged, so a write still in flight in another process is not
misjudged; should such a process finish later anyway, its own `finish` overwrites the reconciled status.

Rules, per kind (the payloads are those of core.zk.topic_admin, reassign and election):
* create-topic: the topic node exists with the recorded topic id (or, without one, the recorded assignment).
* add-partitions: the topic node holds every recorded partition with the recorded replicas (partitions
  being reassigned right now are not compared).
* alter-config: the topic's config node holds the recorded value of every key the action changed (the
  rollback has the old config), so a later unrelated change such as a throttle does not count against it.
* delete-topic: /admin/delete_topics/<t> exists, or the topic is gone (the controller finished the deletion).
* reassignment: one of the plan's partitions is in /admin/reassign_partitions with the plan's target; or
  every partition the plan moves (target differs from the recorded rollback) is at its target or moving
  towards it (its replicas include the target and it has adding replicas); or the plan's throttle is set on
  its topics. A plan that moved nothing leaves no trace: it is marked not applied (it changed nothing).
* remove-throttles: no throttle is left on the recorded topics nor on any broker.
* throttle (the rate of a running reassignment changed, by `throttle` or the auto-throttle loop): every recorded
  broker's config holds the recorded leader and follower rates (none of them, for a removal).
* preferred-election: the election node is transient (the controller deletes it when done), so: the node
  exists and lists the recorded partitions -> applied; it is gone and every recorded partition is led by its
  preferred replica -> applied, the result saying it is inferred ("unknown (the election node is transient)");
  otherwise -> not applied, with the same caveat. Kafka's own auto leader rebalance can produce the same end
  state, so an election is never reported as certainly applied unless its node was found.
* any other payload that is a list of ops: every create (non-sequential) or set op finds its recorded data
  and every delete its node gone -> applied; else not applied.
A row whose payload cannot be read, or whose nodes are corrupt, is left pending (and logged).
"""

from __future__ import annotations

import logging
import time
from calendar import timegm
from dataclasses import dataclass
from typing import Any, Callable

from core import zkformat as zf
from core.errors import KeelError, ZooKeeperUnreachableError
from core.audit.store import Action, Store
from core.zk.session import ZkSession, ZkWriteOutcomeUnknownError

log = logging.getLogger(__name__)

GRACE_SECONDS = 60.0  # a pending row younger than this may belong to a run still in flight: left alone
UNKNOWN_ELECTION = "unknown (the election node is transient)"
SETTLE_SYNC_TIMEOUT = 1.0  # after a write timeout: how long settle_unknown_write waits for ZooKeeper to answer

_LEADER_THROTTLED = "leader.replication.throttled.replicas"
_FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"
_LEADER_RATE = "leader.replication.throttled.rate"
_FOLLOWER_RATE = "follower.replication.throttled.rate"


@dataclass(frozen=True)
class Reconciled:
    action_id: int
    applied: bool
    kind: str
    target: str
    result: str  # what was stored as the action's result
    why: str = ""  # how it was judged, e.g. "/brokers/topics/t has topic id ..."

    @property
    def verdict(self) -> str:
        if self.kind == "preferred-election" and UNKNOWN_ELECTION in self.result:
            return f"{UNKNOWN_ELECTION}; recorded as {'applied' if self.applied else 'not applied'}"
        return "found applied" if self.applied else "not applied"

    @property
    def note(self) -> str:
        """The one line the CLI prints about it."""
        return (f"note: action #{self.action_id} ({self.kind} {self.target}) was left pending by an interrupted "
                f"run: {self.verdict}")


def _age_seconds(at: str, now: float) -> float:
    try:
        return now - timegm(time.strptime(at, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return float("inf")  # an unreadable time is certainly not a run in flight now


def reconcile_pending(session: ZkSession, store: Store, cluster: str, *, cluster_id: str | None = None,
                      grace: float = GRACE_SECONDS, now: float | None = None) -> list[Reconciled]:
    """Judge every pending action of `cluster` (and, with `cluster_id`, of that cluster under any other name it was
    recorded with) older than `grace` seconds; returns what was settled."""
    now = time.time() if now is None else now
    rows = [a for a in store.pending(cluster, cluster_id) if _age_seconds(a.at, now) >= grace]
    if not rows:
        return []
    session.sync()  # see every write committed before now, whichever server committed it
    out = []
    for action in rows:
        settled = _judge(session, store, action)
        if settled is not None:
            out.append(settled)
    return out


def _judge(session: ZkSession, store: Store, action: Action, *, certain_only: bool = False) -> Reconciled | None:
    check = _CHECKS.get(action.kind, _check_ops)
    try:
        verdict = check(session, action)
    except (KeelError, KeyError, TypeError, ValueError) as e:
        log.warning("action #%s (%s %s) is pending and could not be reconciled: %s", action.id, action.kind,
                    action.target, e)
        return None
    if verdict is None:
        log.warning("action #%s (%s %s) is pending and could not be reconciled: unknown payload", action.id,
                    action.kind, action.target)
        return None
    applied, why = verdict
    result = (f"reconciled: the write was found in ZooKeeper ({why})" if applied
              else f"reconciled: not applied ({why})")
    if action.kind == "preferred-election" and UNKNOWN_ELECTION in why:
        if certain_only:
            return None
        result = f"reconciled: {why}"
    if store.resolve(action.id, applied, result):
        return Reconciled(action.id, applied, action.kind, action.target, result, why)
    return None


def settle_unknown_write(session: ZkSession, store: Store, action_id: int, error: ZkWriteOutcomeUnknownError) -> str:
    """Right after a write of `action_id` ended in ZkWriteOutcomeUnknownError (its row still pending): find out
    whether it was applied. Returns a note for the caller's report when it was (the caller then goes on as after
    a success); raises when it was not (nothing was written) or when nobody can tell yet (the row stays pending
    and a later reconcile_pending settles it).

    After a lost connection the session usually comes back soon (another server of the ensemble, or the same one
    restarted): wait for it until the write timeout ends (`error.deadline`; else the connect timeout). After a
    write timeout ZooKeeper has been silent for long already: judge only if it answers a sync within
    SETTLE_SYNC_TIMEOUT. So the write's command ends within its write timeout plus that second (plus the close).
    A write kazoo still holds in its queue is sent before the reads of the check (one session's requests are
    processed in order), so the check sees it."""
    deadline = error.deadline if error.deadline is not None else time.monotonic() + (
        0.0 if error.timed_out else session.settings.connect_timeout)
    while not session.connected and time.monotonic() < deadline:
        time.sleep(0.1)
    settled = None
    action = store.action(action_id)
    if session.connected and action is not None and action.status == "pending":
        try:  # bounded: against a server frozen at the write, kazoo gives up only after 2/3 of the session
            session.sync(timeout=max(deadline - time.monotonic(), 0.0) + SETTLE_SYNC_TIMEOUT)
        except KeelError as e:
            log.info("could not sync to settle action #%s: %s", action_id, e)
        else:
            settled = _judge(session, store, action, certain_only=True)
    if settled is None:
        raise ZkWriteOutcomeUnknownError(
            f"{error.message}. Action #{action_id} stays pending in the action history: a Keel write command "
            f"against this cluster run {GRACE_SECONDS:g} s or more from now (or the dashboard connecting to it) "
            "checks ZooKeeper and records whether it was applied", error.path,
            timed_out=error.timed_out)
    if not settled.applied:
        raise ZooKeeperUnreachableError(f"{error.message}; after reconnecting, ZooKeeper shows it was not applied "
                                        f"({settled.why}): nothing was written (action #{action_id}). Try again.")
    return f"{error.message}; after reconnecting, ZooKeeper shows it applied ({settled.why})"


# --- the checks: (applied, why) or None when the payload says nothing checkable --------------------------

Verdict = tuple[bool, str] | None


def _ops(action: Action) -> list[dict[str, Any]]:
    if not isinstance(action.payload, list):
        raise ValueError("payload is not a list of ops")
    return [op for op in action.payload if isinstance(op, dict) and "path" in op]


def _op(action: Action, prefix: str) -> dict[str, Any]:
    for op in _ops(action):
        if op["path"].startswith(prefix) and op.get("op") in ("create", "set"):
            return op
    raise ValueError(f"no write to {prefix}... in the payload")


def _data(op: dict[str, Any]) -> bytes:
    return str(op.get("data", "")).encode()


def _check_create_topic(session: ZkSession, action: Action) -> Verdict:
    op = _op(action, zf.TOPICS + "/")
    path = op["path"]
    name = path[len(zf.TOPICS) + 1:]
    recorded = zf.decode_topic(name, _data(op), path)
    node = session.get(path)
    if not node.exists:
        return False, f"{path} does not exist"
    current = zf.decode_topic(name, node.data, path)
    if recorded.topic_id:
        if current.topic_id == recorded.topic_id:
            return True, f"{path} has topic id {recorded.topic_id}"
        return False, f"{path} belongs to another topic id ({current.topic_id}, not {recorded.topic_id})"
    if dict(current.partitions) == dict(recorded.partitions):
        return True, f"{path} has the recorded assignment"
    return False, f"{path} has another assignment"


def _check_add_partitions(session: ZkSession, action: Action) -> Verdict:
    op = _op(action, zf.TOPICS + "/")
    path = op["path"]
    name = path[len(zf.TOPICS) + 1:]
    recorded = zf.decode_topic(name, _data(op), path)
    node = session.get(path)
    if not node.exists:
        return False, f"{path} does not exist"
    current = zf.decode_topic(name, node.data, path)
    missing = sorted(set(recorded.partitions) - set(current.partitions))
    if missing:
        return False, f"{name} has {len(current.partitions)} partitions, not {len(recorded.partitions)}"
    moving = set(current.adding_replicas) | set(current.removing_replicas)
    differ = [p for p, r in recorded.partitions.items() if p not in moving and tuple(current.partitions[p]) != tuple(r)]
    if differ:
        return False, f"{name} has {len(recorded.partitions)} partitions but other replicas for partition {differ[0]}"
    return True, f"{name} has the recorded {len(recorded.partitions)} partitions"


def _check_alter_config(session: ZkSession, action: Action) -> Verdict:
    op = _op(action, zf.CONFIG_TOPICS + "/")
    path = op["path"]
    recorded = zf.decode_config(_data(op), path)
    node = session.get(path)
    if not node.exists:
        return False, f"{path} does not exist"
    current = zf.decode_config(node.data, path)
    old = action.rollback.get("config") if isinstance(action.rollback, dict) else None
    if isinstance(old, dict):  # compare what this action changed: later unrelated changes (a throttle) do not count
        changed = {k for k in set(old) | set(recorded) if old.get(k) != recorded.get(k)}
        if changed and all(current.get(k) == recorded.get(k) for k in changed):
            return True, f"{path} holds the recorded {', '.join(sorted(changed))}"
        if changed:
            return False, f"{path} does not hold the recorded {', '.join(sorted(changed))}"
    if current == recorded:
        return True, f"{path} holds the recorded config"
    return False, f"{path} holds another config"


def _check_delete_topic(session: ZkSession, action: Action) -> Verdict:
    op = _op(action, zf.DELETE_TOPICS + "/")
    path = op["path"]
    name = path[len(zf.DELETE_TOPICS) + 1:]
    if session.exists(path):
        return True, f"{path} exists"
    if not session.exists(zf.topic_path(name)):
        return True, f"topic {name} is gone"
    return False, f"{path} does not exist and topic {name} is still there"


def _check_reassignment(session: ZkSession, action: Action) -> Verdict:
    from core.plans import parse_reassignment

    payload = action.payload
    if not isinstance(payload, dict) or "plan" not in payload:
        return None
    plan = parse_reassignment(payload["plan"]).assignment()
    origin = parse_reassignment(action.rollback).assignment() if action.rollback else {}

    node = session.get(zf.REASSIGN)
    if node.exists:
        in_node = {(e.topic, e.partition): tuple(e.replicas) for e in zf.decode_reassignment(node.data)}
        found = [k for k, target in plan.items() if in_node.get(k) == tuple(target)]
        if found:
            return True, f"{zf.REASSIGN} lists {found[0][0]}-{found[0][1]} with the plan's target"

    moving = {k: t for k, t in plan.items() if k in origin and set(origin[k]) != set(t)}
    if moving:
        topics: dict[str, Any] = {}
        behind = []
        for (topic, partition), target in sorted(moving.items()):
            if topic not in topics:
                n = session.get(zf.topic_path(topic))
                topics[topic] = zf.decode_topic(topic, n.data) if n.exists else None
            a = topics[topic]
            replicas = tuple(a.partitions.get(partition, ())) if a else ()
            at_target = replicas == tuple(target)
            towards = a is not None and set(target) <= set(replicas) and bool(a.adding_replicas.get(partition))
            if not (at_target or towards):
                behind.append(f"{topic}-{partition}")
        if not behind:
            return True, f"its {len(moving)} moving partitions are at or moving to their targets"

    throttle = payload.get("throttle")
    if throttle:
        for topic in sorted({t for t, _ in moving or plan}):
            n = session.get(zf.topic_config_path(topic))
            config = zf.decode_config(n.data, n.path) if n.exists else {}
            if _LEADER_THROTTLED in config or _FOLLOWER_THROTTLED in config:
                return True, f"the throttle is set on topic {topic}"
    if not moving:
        return False, "no trace in ZooKeeper; its partitions were already at their targets, so it changed nothing"
    return False, (f"not in {zf.REASSIGN}, {', '.join(behind[:5])}{' ...' if len(behind) > 5 else ''} "
                   "not at or moving to their targets" + (", no throttle set" if throttle else ""))


def _check_cancel(session: ZkSession, action: Action) -> Verdict:
    """A cancel happened when every partition it named is back on its original replicas (recorded replicas minus
    the ones being added) and no longer moving; one that went on to its target was not cancelled."""
    payload = action.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("partitions"), list):
        return None
    node = session.get(zf.REASSIGN)
    listed = {(e.topic, e.partition) for e in zf.decode_reassignment(node.data)} if node.exists else set()
    topics: dict[str, Any] = {}
    for item in payload["partitions"]:
        key = (item["topic"], int(item["partition"]))
        if key in listed:
            return False, f"{zf.REASSIGN} still lists {key[0]}-{key[1]}"
        if key[0] not in topics:
            n = session.get(zf.topic_path(key[0]))
            topics[key[0]] = zf.decode_topic(key[0], n.data) if n.exists else None
        a = topics[key[0]]
        if a is None:
            continue  # the topic is gone: nothing left to cancel
        if a.adding_replicas.get(key[1]) or a.removing_replicas.get(key[1]):
            return False, f"{key[0]}-{key[1]} is still moving"
        original = set(item["replicas"]) - set(item.get("adding_replicas", ()))
        if set(a.partitions.get(key[1], ())) != original:
            return False, f"{key[0]}-{key[1]} is not on its original replicas (the reassignment finished instead)"
    return True, f"its {len(payload['partitions'])} partitions are back on their original replicas"


def _check_remove_throttles(session: ZkSession, action: Action) -> Verdict:
    payload = action.payload
    if not isinstance(payload, dict) or "topics" not in payload:
        return None
    for topic in payload["topics"]:
        n = session.get(zf.topic_config_path(topic))
        config = zf.decode_config(n.data, n.path) if n.exists else {}
        if _LEADER_THROTTLED in config or _FOLLOWER_THROTTLED in config:
            return False, f"topic {topic} is still throttled"
    brokers = session.children(zf.CONFIG_BROKERS) or []
    for node in session.get_many([f"{zf.CONFIG_BROKERS}/{b}" for b in brokers]):
        config = zf.decode_config(node.data, node.path) if node.exists else {}
        if _LEADER_RATE in config or _FOLLOWER_RATE in config:
            return False, f"{node.path} still has a throttle rate"
    return True, "no throttle is left"


def _check_throttle(session: ZkSession, action: Action) -> Verdict:
    payload = action.payload
    if not isinstance(payload, dict) or "brokers" not in payload or "throttle" not in payload:
        return None
    want = None if payload["throttle"] is None else str(payload["throttle"])
    brokers = [int(b) for b in payload["brokers"]]
    for b, node in zip(brokers, session.get_many([zf.broker_config_path(b) for b in brokers])):
        config = zf.decode_config(node.data, node.path) if node.exists else {}
        if config.get(_LEADER_RATE) != want or config.get(_FOLLOWER_RATE) != want:
            return False, (f"{node.path} has leader/follower rates {config.get(_LEADER_RATE)}/"
                           f"{config.get(_FOLLOWER_RATE)}, not {want}")
    what = f"rate {want}" if want else "no rate"
    return True, f"brokers {','.join(map(str, brokers))} have the recorded {what}"


def _check_preferred_election(session: ZkSession, action: Action) -> Verdict:
    op = _op(action, zf.PREFERRED_ELECTION)
    recorded = set(zf.decode_preferred_election(_data(op)))
    node = session.get(zf.PREFERRED_ELECTION)
    if node.exists:
        if recorded & set(zf.decode_preferred_election(node.data)):
            return True, f"{zf.PREFERRED_ELECTION} lists its partitions"
    topics = {t for t, _ in recorded}
    assignments = {}
    for t in topics:
        n = session.get(zf.topic_path(t))
        assignments[t] = zf.decode_topic(t, n.data) if n.exists else None
    keys = sorted(recorded)
    states = session.get_many([zf.state_path(t, p) for t, p in keys])
    not_preferred = []
    for (t, p), state_node in zip(keys, states):
        state = zf.decode_partition_state(state_node.data, state_node.path) if state_node.exists else None
        replicas = assignments[t].partitions.get(p, ()) if assignments[t] else ()
        if state is None or not replicas or state.leader != replicas[0]:
            not_preferred.append(f"{t}-{p}")
    if not not_preferred:
        return True, (f"{UNKNOWN_ELECTION}: the node is gone and all {len(keys)} partitions are led by their "
                      "preferred replica, as the election would leave them")
    return False, (f"{UNKNOWN_ELECTION}: the node is gone and {len(not_preferred)} of {len(keys)} partitions "
                   f"({', '.join(not_preferred[:5])}{' ...' if len(not_preferred) > 5 else ''}) are not led by "
                   "their preferred replica")


def _check_ops(session: ZkSession, action: Action) -> Verdict:
    """Any other list of ops: every checkable op must find its effect."""
    if not isinstance(action.payload, list):
        return None
    checked = 0
    for op in _ops(action):
        kind, path = op.get("op"), op["path"]
        if kind in ("create", "set") and not path.endswith("_"):  # a sequential prefix cannot be found again
            node = session.get(path)
            if not node.exists or node.data != _data(op):
                return False, f"{path} does not hold the recorded data"
            checked += 1
        elif kind == "delete":
            if session.exists(path):
                return False, f"{path} still exists"
            checked += 1
    if not checked:
        return None
    return True, f"all {checked} recorded writes are there"


_CHECKS: dict[str, Callable[[ZkSession, Action], Verdict]] = {
    "create-topic": _check_create_topic,
    "add-partitions": _check_add_partitions,
    "alter-config": _check_alter_config,
    "delete-topic": _check_delete_topic,
    "reassignment": _check_reassignment,
    "rollback": _check_reassignment,  # a reassignment's rollback is a reassignment (the store records its own kind)
    "remove-throttles": _check_remove_throttles,
    "throttle": _check_throttle,
    "cancel-reassignment": _check_cancel,
    "preferred-election": _check_preferred_election,
}

