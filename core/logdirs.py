"""JBOD: brokers with several `log.dirs`. Per broker and per directory the partitions and bytes, the imbalance
between the directories of one broker, and plans that move replicas between directories of the same broker.

The input is the document `kafka-log-dirs.sh --describe` prints (``{"version":1,"brokers":[{"broker":1,"logDirs":
[{"logDir":"/d","error":null,"partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}``),
uploaded, or built from the Admin API's describeLogDirs (core.kafka.admin.KafkaAdmin.log_dirs().to_document()).

A plan is Kafka's reassignment JSON with its `log_dirs` field (ReassignPartitionsCommand's format): per partition
the CURRENT replicas (no broker changes) and, per replica, the absolute directory it moves to or "any" for no move::

    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/data-1","any"]}]}

Kafka's tool executes the `log_dirs` part with the Admin API's alterReplicaLogDirs (one request per broker; the
broker copies the replica into a "future" log in the target directory and swaps it in once caught up); ZooKeeper's
/admin/reassign_partitions never carries log dirs. Keel does the same (core.kafka.jbod).

Pure: plain data in, plain data out (no I/O).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from core.balance.sizes import MAX_LOG_DIRS_BYTES, load_log_dirs_document  # noqa: F401  (re-exported)
from core.errors import PlanError
from core.numbers import json_int

ANY = "any"  # Kafka's "no preference" log dir


@dataclass(frozen=True)
class DirReplica:
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class Dir:
    broker: int
    path: str
    error: str | None
    replicas: tuple[DirReplica, ...]

    @property
    def online(self) -> bool:
        return self.error is None

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.replicas if not r.is_future)

    @property
    def partitions(self) -> int:
        return sum(1 for r in self.replicas if not r.is_future)

    @property
    def future(self) -> tuple[DirReplica, ...]:
        return tuple(r for r in self.replicas if r.is_future)


@dataclass(frozen=True)
class BrokerDirs:
    """One broker's directories and how unevenly they are filled."""

    broker: int
    dirs: tuple[Dir, ...]  # sorted by path

    @property
    def online(self) -> tuple[Dir, ...]:
        return tuple(d for d in self.dirs if d.online)

    @property
    def total(self) -> int:
        return sum(d.bytes for d in self.online)

    @property
    def spread(self) -> int:
        """Bytes between the fullest and the emptiest online directory."""
        sizes = [d.bytes for d in self.online]
        return max(sizes) - min(sizes) if len(sizes) > 1 else 0

    @property
    def imbalance(self) -> float:
        """(fullest - emptiest) / mean of the online directories: 0 even, 2.0 all in one of two directories."""
        online = self.online
        if len(online) < 2 or self.total == 0:
            return 0.0
        return self.spread / (self.total / len(online))


@dataclass(frozen=True)
class JbodView:
    dirs: tuple[Dir, ...]  # sorted by broker, then path

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(sorted({d.broker for d in self.dirs}))

    def broker(self, broker: int) -> BrokerDirs:
        return BrokerDirs(broker, tuple(d for d in self.dirs if d.broker == broker))

    def per_broker(self) -> list[BrokerDirs]:
        return [self.broker(b) for b in self.brokers]

    def location(self) -> dict[tuple[str, int, int], str]:
        """(topic, partition, broker) -> the directory holding the replica (future replicas excluded)."""
        return {(r.topic, r.partition, d.broker): d.path for d in self.dirs for r in d.replicas if not r.is_future}

    def future(self) -> dict[tuple[str, int, int], str]:
        """(topic, partition, broker) -> the directory an intra-broker move in flight copies it to."""
        return {(r.topic, r.partition, d.broker): d.path for d in self.dirs for r in d.replicas if r.is_future}

    def heatmap(self) -> tuple[list[int], list[str], list[list[int | None]], list[list[str]]]:
        """Brokers x directory slots (the i-th directory of each broker, by path): (brokers, column labels, bytes
        with None where a broker has fewer directories or the directory is offline, the paths)."""
        brokers = list(self.brokers)
        width = max((len(self.broker(b).dirs) for b in brokers), default=0)
        cols = [f"dir {i + 1}" for i in range(width)]
        values, paths = [], []
        for b in brokers:
            dirs = self.broker(b).dirs
            values.append([(dirs[i].bytes if dirs[i].online else None) if i < len(dirs) else None
                           for i in range(width)])
            paths.append([(dirs[i].path + ("" if dirs[i].online else f" ({dirs[i].error})")) if i < len(dirs)
                          else "" for i in range(width)])
        return brokers, cols, values, paths

    def to_document(self) -> dict:
        return {"brokers": [{"broker": b, "logDirs": [
            {"partitions": [{"partition": f"{r.topic}-{r.partition}", "size": r.size, "offsetLag": r.offset_lag,
                             "isFuture": r.is_future} for r in d.replicas], "error": d.error, "logDir": d.path}
            for d in self.dirs if d.broker == b]} for b in self.brokers], "version": 1}


# --- reading the document ---------------------------------------------------------------------------------


def parse_log_dirs_view(text: str | bytes) -> JbodView:
    """The output of `kafka-log-dirs.sh --describe` (progress lines before the JSON accepted)."""
    return view_from_document(load_log_dirs_document(text, hint="give the output of kafka-log-dirs.sh --describe"))


def view_from_document(doc: Any) -> JbodView:
    brokers = doc.get("brokers") if isinstance(doc, dict) else None
    if not isinstance(brokers, list):
        raise PlanError('log-dirs data must be an object with a "brokers" list (what kafka-log-dirs.sh --describe '
                        "prints)")
    dirs = []
    for i, b in enumerate(brokers):
        if not isinstance(b, dict) or isinstance(b.get("broker"), bool) or not isinstance(b.get("broker"), int):
            raise PlanError(f'brokers[{i}] must be an object with an integer "broker"')
        log_dirs = b.get("logDirs")
        if not isinstance(log_dirs, list):
            raise PlanError(f'brokers[{i}] (broker {b["broker"]}) must have a "logDirs" list')
        for j, d in enumerate(log_dirs):
            where = f"broker {b['broker']} logDirs[{j}]"
            if not isinstance(d, dict) or not isinstance(d.get("logDir"), str) or not d["logDir"]:
                raise PlanError(f'{where} must be an object with a "logDir" path')
            error = d.get("error")
            if error is not None and not isinstance(error, str):
                raise PlanError(f'{where}: "error" must be null or a string, got {json.dumps(error)}')
            parts = d.get("partitions") or []
            if not isinstance(parts, list):
                raise PlanError(f'{where}: "partitions" must be a list')
            replicas = tuple(sorted((_replica(r, f"{where}.partitions[{k}]") for k, r in enumerate(parts)),
                                    key=lambda r: (r.topic, r.partition, r.is_future)))
            dirs.append(Dir(b["broker"], d["logDir"], error, replicas))
    return JbodView(tuple(sorted(dirs, key=lambda d: (d.broker, d.path))))


def _replica(r: Any, where: str) -> DirReplica:
    if not isinstance(r, dict):
        raise PlanError(f"{where} must be an object")
    name, size = r.get("partition"), r.get("size")
    topic, dash, number = name.rpartition("-") if isinstance(name, str) else ("", "", "")
    if not (topic and dash and number.isascii() and number.isdigit()):
        raise PlanError(f'{where}: "partition" must look like "<topic>-<number>", got {json.dumps(name)}')
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise PlanError(f'{where}: "size" must be a non-negative integer, got {json.dumps(size)}')
    lag = r.get("offsetLag", 0)
    return DirReplica(topic, int(number), size, lag if isinstance(lag, int) and not isinstance(lag, bool) else 0,
                      r.get("isFuture") is True)


# --- plans: moves between the directories of one broker ---------------------------------------------------


@dataclass(frozen=True)
class DirMove:
    topic: str
    partition: int
    broker: int
    source: str | None  # the directory it is in now (None when unknown)
    target: str
    size: int


@dataclass(frozen=True)
class DirPlan:
    moves: tuple[DirMove, ...]
    before: dict[tuple[int, str], int]  # (broker, dir) -> bytes
    after: dict[tuple[int, str], int]
    skipped: tuple[str, ...] = ()

    @property
    def bytes_moved(self) -> int:
        return sum(m.size for m in self.moves)

    def document(self, replicas: Mapping[tuple[str, int], tuple[int, ...]]) -> dict:
        """Kafka's reassignment JSON with log_dirs: each moved partition with its current replicas."""
        by_partition: dict[tuple[str, int], dict[int, str]] = {}
        for m in self.moves:
            by_partition.setdefault((m.topic, m.partition), {})[m.broker] = m.target
        out = []
        for (t, p), targets in sorted(by_partition.items()):
            reps = list(replicas[(t, p)])
            out.append({"topic": t, "partition": p, "replicas": reps,
                        "log_dirs": [targets.get(b, ANY) for b in reps]})
        return {"version": 1, "partitions": out}


def plan_balance(view: JbodView, replicas: Mapping[tuple[str, int], tuple[int, ...]], *,
                 brokers: set[int] | None = None, max_moves: int | None = None,
                 busy: set[tuple[str, int]] = frozenset()) -> DirPlan:
    """Moves that even out the bytes of each broker's online directories: repeatedly the replica of the fullest
    directory whose size is closest to half the gap to the emptiest one, while that narrows the gap. Deterministic.

    `replicas`: the current assignment ((topic, partition) -> replicas, from the snapshot): a replica moves only if
    the broker holds it there. `busy`: partitions being reassigned or with a log-dir move in flight (left alone)."""
    if max_moves is not None and max_moves < 0:
        raise PlanError(f"the move budget must be 0 or more, got {max_moves}")
    moves: list[DirMove] = []
    skipped = []
    in_flight = {(t, p) for t, p, _ in view.future()}
    before = {(d.broker, d.path): d.bytes for d in view.dirs if d.online}
    after = dict(before)
    for bd in view.per_broker():
        if brokers is not None and bd.broker not in brokers:
            continue
        online = bd.online
        if len(online) < 2:
            continue
        content = {d.path: {(r.topic, r.partition): r.size for r in d.replicas if not r.is_future} for d in online}
        for d in online:
            for key in list(content[d.path]):
                if key in busy or key in in_flight or bd.broker not in replicas.get(key, ()):
                    content[d.path].pop(key)
                    skipped.append(f"{key[0]}-{key[1]} on broker {bd.broker}: "
                                   + ("reassignment or log-dir move in flight" if key in busy or key in in_flight
                                      else "not assigned to this broker in the cluster's metadata"))
        while max_moves is None or len(moves) < max_moves:
            fullest = max(online, key=lambda d: (after[(bd.broker, d.path)], d.path))
            emptiest = min(online, key=lambda d: (after[(bd.broker, d.path)], d.path))
            gap = after[(bd.broker, fullest.path)] - after[(bd.broker, emptiest.path)]
            candidates = [(abs(gap - 2 * s), -s, k) for k, s in content[fullest.path].items() if 0 < s < gap]
            if not candidates:
                break
            _, neg, key = min(candidates)
            size = -neg
            content[fullest.path].pop(key)
            content[emptiest.path][key] = size
            after[(bd.broker, fullest.path)] -= size
            after[(bd.broker, emptiest.path)] += size
            moves.append(DirMove(key[0], key[1], bd.broker, fullest.path, emptiest.path, size))
    # a replica moved twice (A -> B, then B -> C) is one move A -> C; one moved back is none
    merged: dict[tuple[str, int, int], DirMove] = {}
    for m in moves:
        k = (m.topic, m.partition, m.broker)
        first = merged.get(k)
        merged[k] = m if first is None else DirMove(m.topic, m.partition, m.broker, first.source, m.target, m.size)
    final = tuple(m for m in merged.values() if m.source != m.target)
    return DirPlan(final, before, after, tuple(skipped))


# --- executing a plan: what to ask each broker ------------------------------------------------------------


@dataclass(frozen=True)
class DirRequest:
    topic: str
    partition: int
    broker: int
    target: str
    current: str | None  # where it is now


def load_plan(text: str | bytes | Mapping) -> Mapping | object:
    """A plan's JSON document (a Mapping given is returned as is); PlanError when it is not JSON."""
    if isinstance(text, Mapping):
        return text
    try:
        return json.loads(text, parse_int=json_int)
    except ValueError as e:
        raise PlanError(f"the plan is not valid JSON: {e}") from None
    except RecursionError:
        raise PlanError("the plan is nested too deeply to be a reassignment JSON") from None


def parse_dir_plan(text: str | bytes | Mapping, replicas: Mapping[tuple[str, int], tuple[int, ...]],
                   view: JbodView) -> tuple[list[DirRequest], list[str]]:
    """The intra-broker moves of a reassignment JSON with `log_dirs`, checked against the current assignment and the
    brokers' directories: (requests, notes about entries with nothing to do). PlanError for anything Kafka's tool
    or the brokers would refuse, and for broker changes (run those with `python -m core execute` first)."""
    doc = load_plan(text)
    entries = doc.get("partitions") if isinstance(doc, Mapping) else None
    if not isinstance(entries, list):
        raise PlanError('a reassignment JSON is {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..],'
                        '"log_dirs":[..]}]}')
    if not entries:
        raise PlanError("Partition reassignment list cannot be empty")  # ReassignPartitionsCommand's message
    dirs_of: dict[int, dict[str, Dir]] = {}
    for d in view.dirs:
        dirs_of.setdefault(d.broker, {})[d.path] = d
    where_now = view.location()
    requests, notes, seen = [], [], set()
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping) or not isinstance(e.get("topic"), str) or isinstance(e.get("partition"), bool) \
                or not isinstance(e.get("partition"), int):
            raise PlanError(f'partitions[{i}] must have a "topic" string and a "partition" number')
        t, p = e["topic"], e["partition"]
        if (t, p) in seen:
            raise PlanError(f"Found duplicate partition in the reassignment: {t}-{p}")
        seen.add((t, p))
        reps, dirs = e.get("replicas"), e.get("log_dirs")
        if not isinstance(reps, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in reps):
            raise PlanError(f'{t}-{p}: "replicas" must be a list of broker ids')
        if dirs is None:
            notes.append(f"{t}-{p}: no log_dirs, nothing to move between directories")
            continue
        if not isinstance(dirs, list) or not all(isinstance(x, str) for x in dirs):
            raise PlanError(f'{t}-{p}: "log_dirs" must be a list of absolute paths or "any"')
        if len(dirs) != len(reps):
            raise PlanError(f"Size of replicas list {reps} is different from size of log dirs list {dirs} for "
                            f"partition {t}-{p}")
        current = replicas.get((t, p))
        if current is None:
            raise PlanError(f"Topic {t} partition {p} does not exist in the cluster")
        if list(current) != reps:
            raise PlanError(
                f"{t}-{p}: the plan's replicas {reps} are not the current ones {list(current)}: it also moves replicas "
                "between brokers, which ZooKeeper's /admin/reassign_partitions carries without log dirs",
                hint="execute the broker moves first (python -m core execute), then this plan with the new replicas")
        for b, target in zip(reps, dirs):
            if target == ANY:
                continue
            if not target.startswith("/"):
                raise PlanError(f'{t}-{p}: log dir {target!r} for broker {b} must be an absolute path or "any"')
            known = dirs_of.get(b)
            if known is None:
                raise PlanError(f"{t}-{p}: broker {b} did not report its log directories (is it running?)")
            if target not in known:
                raise PlanError(f"{t}-{p}: {target} is not a log directory of broker {b} (its log dirs: "
                                f"{', '.join(sorted(known))})")
            if not known[target].online:
                raise PlanError(f"{t}-{p}: log directory {target} of broker {b} is offline ({known[target].error})")
            now = where_now.get((t, p, b))
            if now == target:
                notes.append(f"{t}-{p} on broker {b} is already in {target}")
                continue
            requests.append(DirRequest(t, p, b, target, now))
    return requests, notes


__all__ = ["DirReplica", "Dir", "BrokerDirs", "JbodView", "parse_log_dirs_view", "view_from_document", "DirMove",
           "DirPlan", "plan_balance", "DirRequest", "parse_dir_plan", "ANY"]
