"""Readiness for a ZooKeeper -> KRaft migration (Kafka 3.9 docs/ops.html, "Preparing for migration",
"Provisioning the KRaft controller quorum", "Enter Migration Mode on the Brokers", "Limitations"): one verdict per
item, with the fix.

Pure: `ReadinessFacts` (collected by core.zk.migration_state.zk_readiness_facts and
core.kafka.migration_facts.broker_readiness_facts) in, `Check`s out. A fact nobody could read is "unknown" with
what to give, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from core.errors import ValidationError

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"
TARGET = (3, 9)  # the docs: brokers on 3.9 with inter.broker.protocol.version=3.9 before the migration
RESERVED_DEFAULT = 1000  # reserved.broker.max.id's default
QUORUM_LAG_MAX = 1000  # records behind the high watermark still counted "caught up" (a few seconds of no-ops)
# A voter not caught up with the leader for this long is behind whatever its offset lag: an idle quorum grows by
# about 2 records/s (the active controller's NoOpRecord every metadata.max.idle.interval.ms, 500 ms), so a stopped
# voter takes minutes to pass QUORUM_LAG_MAX, while its lastCaughtUpTimestamp stops at once (measured on 3.9.1: a
# running voter's trails the leader's by < 0.5 s). 5 x controller.quorum.fetch.timeout.ms (2 s): a running voter
# that heard nothing from the leader for that long would have started an election itself.
QUORUM_CAUGHT_UP_MAX_MS = 10_000


@dataclass(frozen=True)
class Check:
    key: str
    title: str
    verdict: str  # ok | fail | unknown
    detail: str
    fix: str = ""

    def to_dict(self) -> dict:
        return {"key": self.key, "title": self.title, "verdict": self.verdict, "detail": self.detail,
                "fix": self.fix}


@dataclass(frozen=True)
class ReadinessFacts:
    broker_ids: tuple[int, ...]  # registered under /brokers/ids
    assigned_ids: tuple[int, ...] = ()  # every broker id an assignment names (a down broker keeps its id)
    migration_node: str | None = None  # "absent", "ok", or why /migration is malformed; None: not read
    reassigning: tuple[str, ...] = ()  # "topic-partition" with a reassignment in flight
    deleting: tuple[str, ...] = ()  # topics queued for deletion
    controller_ids: tuple[int, ...] | None = None  # the operator's KRaft node.id values; None: not given
    # from the Admin API (None: not asked / not reachable, with `admin_error` saying why)
    versions: Mapping[int, tuple[int, ...] | None] | None = None  # broker -> version from its ApiVersions
    configs: Mapping[int, Mapping[str, str | None] | str] | None = None  # broker -> {property: value} or why not
    offline_dirs: tuple[tuple[int, str, str], ...] | None = None  # (broker, log dir, error)
    quorum: object | None = None  # core.model.Quorum when the brokers (or the controllers) answer DescribeQuorum
    quorum_via: str | None = None  # who told the quorum: "the brokers", "controller host:port"
    quorum_error: str | None = None  # why the controllers given (--bootstrap-controller) did not tell it
    admin_error: str | None = None
    notes: tuple[str, ...] = field(default=())


def _ids(ids) -> str:
    return ", ".join(map(str, ids))


def _admin_unknown(key: str, title: str, facts: ReadinessFacts) -> Check:
    why = facts.admin_error or "the brokers were not asked"
    return Check(key, title, UNKNOWN, f"Needs the Admin API: {why}.",
                 "Give the brokers' bootstrap address (--bootstrap-server, or the cluster's `bootstrap`).")


def check_versions(f: ReadinessFacts) -> Check:
    title = "Every broker runs Kafka 3.9"
    if f.versions is None:
        return _admin_unknown("versions", title, f)
    wrong = {b: v for b, v in sorted(f.versions.items()) if v is None or tuple(v[:2]) != TARGET}
    missing = [b for b in f.broker_ids if b not in f.versions]
    if not wrong and not missing:
        return Check("versions", title, OK, f"Broker(s) {_ids(sorted(f.versions))} answer ApiVersions as 3.9.")
    parts = [f"{b}: {'unknown' if v is None else '.'.join(map(str, v))}" for b, v in wrong.items()]
    parts += [f"{b}: did not answer" for b in missing]
    verdict = FAIL if any(v is not None for v in wrong.values()) else UNKNOWN
    return Check("versions", title, verdict, "Not on 3.9 (as ApiVersions tells): " + "; ".join(parts) + ".",
                 "Upgrade every broker to Kafka 3.9 (a rolling upgrade) before provisioning the KRaft controllers.")


def _config_of(f: ReadinessFacts, key: str) -> tuple[dict[int, str | None], dict[int, str]]:
    values: dict[int, str | None] = {}
    errors: dict[int, str] = {}
    for b, c in sorted((f.configs or {}).items()):
        if isinstance(c, str):
            errors[b] = c
        else:
            values[b] = c.get(key)
    return values, errors


def check_ibp(f: ReadinessFacts) -> Check:
    title = "inter.broker.protocol.version is 3.9 on every broker"
    if f.configs is None:
        return _admin_unknown("ibp", title, f)
    values, errors = _config_of(f, "inter.broker.protocol.version")
    wrong = {b: v for b, v in values.items() if v is None or not (v == "3.9" or v.startswith("3.9-"))}
    if not wrong and not errors:
        return Check("ibp", title, OK, f"Broker(s) {_ids(values)}: inter.broker.protocol.version "
                                       f"{', '.join(sorted({str(v) for v in values.values()}))}.")
    detail = "; ".join([f"{b}: {v}" for b, v in wrong.items()] + [f"{b}: {e}" for b, e in errors.items()])
    return Check("ibp", title, FAIL if wrong else UNKNOWN, detail + ".",
                 "Set inter.broker.protocol.version=3.9 in every broker's server.properties and roll the brokers "
                 "(after they all run 3.9). It must not change during the migration.")


def check_controller_ids(f: ReadinessFacts) -> Check:
    title = "KRaft controller ids collide with no broker id"
    if f.controller_ids is None:
        return Check("controller-ids", title, UNKNOWN, "The KRaft controllers' node.id values were not given.",
                     "Give them (--controller-ids 3000,3001,3002, or the page's input).")
    taken = set(f.broker_ids) | set(f.assigned_ids)
    clash = sorted(set(f.controller_ids) & taken)
    if clash:
        return Check("controller-ids", title, FAIL, f"Controller id(s) {_ids(clash)} are broker ids: brokers and "
                     "controllers share one node id namespace in KRaft mode.",
                     "Give the KRaft controllers node.id values no broker uses (e.g. 3000 and up).")
    return Check("controller-ids", title, OK, f"Controller id(s) {_ids(sorted(f.controller_ids))} are free "
                                              f"(broker ids: {_ids(sorted(taken)) or 'none'}).")


def check_reserved_ids(f: ReadinessFacts) -> Check:
    title = "No broker id above reserved.broker.max.id"
    if f.configs is None:
        # the default applies unless changed: an id above it is a generated one, certain to fail
        over = [b for b in f.broker_ids if b > RESERVED_DEFAULT]
        if not over:
            return _admin_unknown("reserved-ids", title, f)
        values: dict[int, str | None] = {b: None for b in over}
        errors: dict[int, str] = {}
    else:
        values, errors = _config_of(f, "reserved.broker.max.id")
    bad = []
    for b, v in values.items():
        try:
            limit = int(v) if v is not None else RESERVED_DEFAULT
        except ValueError:
            limit = RESERVED_DEFAULT
        if b > limit:
            bad.append(f"{b} > {limit}")
    if bad:
        return Check("reserved-ids", title, FAIL, "Broker id(s) " + "; ".join(bad) + " (a generated broker.id).",
                     "Set broker.id explicitly (a non-negative id not above reserved.broker.max.id) on those "
                     "brokers: KRaft needs a fixed node.id.")
    if errors:
        return Check("reserved-ids", title, UNKNOWN, "; ".join(f"{b}: {e}" for b, e in errors.items()) + ".",
                     "Make every broker answer DescribeConfigs.")
    return Check("reserved-ids", title, OK, f"Broker id(s) {_ids(values)} are within reserved.broker.max.id.")


def check_log_dirs(f: ReadinessFacts) -> Check:
    title = "No offline log directory"
    if f.offline_dirs is None:
        return _admin_unknown("log-dirs", title, f)
    if f.offline_dirs:
        where = "; ".join(f"broker {b} {d}: {e}" for b, d, e in f.offline_dirs)
        return Check("log-dirs", title, FAIL, f"Offline: {where}. During the migration a directory failure shuts a "
                     "ZooKeeper-mode broker down, and a broker with a failed directory cannot move to KRaft "
                     "(KAFKA-16431).",
                     "Repair or replace the failed disk (or remove the directory from log.dirs) and restart the broker "
                     "before starting.")
    return Check("log-dirs", title, OK, "Every log directory answers DescribeLogDirs without an error.")


def check_migration_node(f: ReadinessFacts) -> Check:
    title = "/migration is absent or well-formed"
    if f.migration_node is None:
        return Check("migration-node", title, UNKNOWN, "/migration was not read.", "Give --zk.")
    if f.migration_node == "absent":
        return Check("migration-node", title, OK, "No /migration node: no migration attempt left state behind.")
    if f.migration_node == "ok":
        return Check("migration-node", title, OK, "/migration exists and is well-formed (a migration attempt "
                                                  "has begun).")
    return Check("migration-node", title, FAIL, f"/migration is malformed ({f.migration_node}): the KRaft "
                 "controller cannot parse it and the migration stalls (KAFKA-19480).",
                 "With no KRaft controller running: zookeeper-shell.sh get /migration (keep it), then rmr /migration.")


def check_reassignments(f: ReadinessFacts) -> Check:
    title = "No partition reassignment in flight"
    if f.reassigning:
        shown = _ids(f.reassigning[:10]) + (f" and {len(f.reassigning) - 10} more" if len(f.reassigning) > 10 else "")
        return Check("reassignment", title, FAIL, f"{len(f.reassigning)} partition(s) are being reassigned: {shown}.",
                     "Let it finish (python -m core verify) or cancel it (python -m core cancel), and remove its "
                     "throttles, before starting"
                     + ("; a stale entry of a deleted topic goes with `rmr /admin/reassign_partitions` once nothing "
                        "else is listed in it, then move the controller (`rmr /controller`: another broker takes "
                        "over at once). Kafka's ZooKeeper-mode controller watches that node again only after "
                        "deleting it itself, so a reassignment written after a hand deletion is ignored until the "
                        "controller changes." if any("stale" in r for r in f.reassigning) else "."))
    return Check("reassignment", title, OK, "No /admin/reassign_partitions, no adding or removing replicas.")


def check_deletions(f: ReadinessFacts) -> Check:
    title = "No topic deletion in flight"
    if f.deleting:
        return Check("deletion", title, FAIL, f"Queued for deletion: {_ids(f.deleting)}.",
                     "Wait for the controller to delete them (their /admin/delete_topics nodes go away); a deletion "
                     "that never ends usually has a replica on a down broker: bring it back.")
    return Check("deletion", title, OK, "No /admin/delete_topics children.")


def _behind(q, v) -> str | None:
    """Why voter `v` is not caught up, or None. Times are the leader's own: DescribeQuorum reports the leader's
    lastCaughtUpTimestamp as its current time (Kafka 3.9's RaftUtil.toReplicaState), so no clock of Keel's is
    compared with the controllers'."""
    lag = q.lag(v)
    if lag is None:
        return "never fetched"  # from this leader (a restarted or stopped voter after an election)
    leader = next((r for r in q.voters if r.id == q.leader), None)
    now = leader.last_caught_up_ms if leader is not None else None
    # no timestamps (an answer without them): the offset lag alone decides
    idle = None if now is None or v.last_caught_up_ms is None else now - v.last_caught_up_ms
    if idle is not None and idle > QUORUM_CAUGHT_UP_MAX_MS:
        return f"{lag} behind, not caught up for {idle / 1000:.0f} s"
    if lag > QUORUM_LAG_MAX:
        return f"{lag} behind"
    return None


def check_quorum(f: ReadinessFacts) -> Check:
    title = "KRaft quorum: a leader, every voter caught up"
    q = f.quorum
    how = "bin/kafka-metadata-quorum.sh --bootstrap-controller <a controller> describe --replication"
    if q is None and f.quorum_error:
        return Check("quorum", title, UNKNOWN, f"The controllers given were asked and did not tell the quorum: "
                     f"{f.quorum_error}.",
                     "Give a running controller's controller listener (--bootstrap-controller HOST:PORT, or the "
                     f"page's input), reachable from here; {how} shows what Kafka sees.")
    if q is None:
        return Check("quorum", title, UNKNOWN, "The brokers do not answer DescribeQuorum (ZooKeeper-mode brokers "
                     "never do) and no controller address was given: the controller quorum cannot be seen.",
                     "Give the KRaft controllers' address (--bootstrap-controller HOST:PORT, or the page's input): "
                     f"Keel asks them as {how} does.")
    via = f" (as {f.quorum_via} tells)" if f.quorum_via else ""
    if q.leader is None:
        return Check("quorum", title, FAIL, f"No leader (epoch {q.epoch}){via}.",
                     "Start a majority of the controllers and check that they reach each other.")
    behind = [f"{v.id} ({why})" for v in q.voters if v.id != q.leader and (why := _behind(q, v)) is not None]
    if behind:
        return Check("quorum", title, FAIL, f"Leader {q.leader}; voter(s) behind: {', '.join(behind)}{via}.",
                     "Bring the lagging controllers up and let them catch up before going on.")
    return Check("quorum", title, OK, f"Leader {q.leader} (epoch {q.epoch}), voters "
                                      f"{_ids(v.id for v in q.voters)} caught up{via}.")


def with_controller_quorum(facts: ReadinessFacts, quorum, via: str | None, error: str | None) -> ReadinessFacts:
    """`facts` with the quorum the controllers told (core.kafka.controller_quorum.quorum_fact): the operator's
    controller address wins over the brokers' answer (and its failure is said, never hidden by it); nothing given
    (all None) keeps the brokers' answer."""
    if quorum is None and error is None:
        return replace(facts, quorum_via=facts.quorum_via or ("the brokers" if facts.quorum is not None else None))
    return replace(facts, quorum=quorum, quorum_via=None if via is None else f"controller {via}",
                   quorum_error=error)


CHECKS = (check_versions, check_ibp, check_controller_ids, check_reserved_ids, check_log_dirs, check_migration_node,
          check_reassignments, check_deletions, check_quorum)


def parse_controller_ids(text: str | None) -> tuple[int, ...] | None:
    """The KRaft controllers' node.id values as an operator types them ("3000,3001,3002"); None for nothing."""
    if text is None or not text.strip():
        return None
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or len(item) > 10 or int(item) > 2**31 - 1:
            raise ValidationError(f"KRaft controller ids must be comma-separated non-negative node ids "
                                  f"(e.g. 3000,3001,3002), got {text.strip()[:60]!r}")
        out.append(int(item))
    return tuple(out) or None


def readiness(facts: ReadinessFacts) -> tuple[Check, ...]:
    return tuple(c(facts) for c in CHECKS)


def ready(checks: tuple[Check, ...]) -> bool:
    return all(c.verdict == OK for c in checks)


__all__ = ["Check", "ReadinessFacts", "readiness", "with_controller_quorum", "parse_controller_ids", "ready", "OK", "FAIL",
           "UNKNOWN", "CHECKS"]
