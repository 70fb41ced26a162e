"""The audit store (SQLite, or PostgreSQL for several Keel instances): who did what to which cluster, when, with
what result, and how to undo it.

An action is recorded *before* anything is written to ZooKeeper (status "pending", with the exact
payload and, where there is one, the rollback), then finished as "applied" or "failed". A crash
between the two leaves a pending row: the history never loses a write that may have happened.

Every row names the person: the actor (an email or subject when signed in, the OS user otherwise), how they were
identified (`source`: oidc, proxy, cli, none) and their role at the time. The engine's writers only pass `actor`;
the dashboard and the CLI wrap a write in `acting(...)`, which `begin` reads for the rest. A rollback is its own
kind ("rollback") whose `rollback_of` names the reassignment it undoes (`Action.rolled_back_by` is the other way);
`completed_at` is when verify found a reassignment complete. Refused actions (kind "refused") and failed
sign-ins (kind "sign-in") are recorded finished, as failed. Older databases gain the new columns on open.

Where: $KEEL_STORE (a file or a postgresql:// URL), else keel.toml's [store] url, else keel.sqlite in the run
directory ($RUN_DIR, else .run/ of the checkout). The SQL of both databases is in core.audit.sql.
"""

from __future__ import annotations

import getpass
import json
import os
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from core.audit import sql
from core.audit.sql import STORE_ENV
from core.model import utc_now_iso

RUN_DIR_ENV = "RUN_DIR"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STORE = REPO_ROOT / ".run" / "keel.sqlite"  # when neither KEEL_STORE nor RUN_DIR is set


def run_dir() -> Path:
    """Where runtime state lives: $RUN_DIR (relative to the checkout, as make and scripts/run.sh use it), else .run/."""
    return (REPO_ROOT / (os.environ.get(RUN_DIR_ENV, "").strip() or ".run")).resolve()


def default_store_target() -> str | Path:
    """$KEEL_STORE (a file or a postgresql:// URL), else keel.toml's [store] url, else keel.sqlite in run_dir()."""
    from core.policy.config import store_url

    named = os.environ.get(STORE_ENV, "").strip()
    if named:
        return named if sql.is_url(named) else Path(named)
    return store_url() or run_dir() / "keel.sqlite"

NO_CLUSTER = ""  # the cluster of a row about no cluster (a failed sign-in)


@dataclass(frozen=True)
class Action:
    id: int
    at: str
    actor: str
    cluster: str
    kind: str
    target: str
    summary: str
    payload: Any
    rollback: Any
    status: str
    result: str | None
    finished: str | None
    source: str | None = None  # oidc | proxy | cli | none (None: recorded before Keel knew)
    role: str | None = None  # the actor's role on the cluster at the time
    completed_at: str | None = None  # a reassignment: when verify found every partition at its target
    rollback_of: int | None = None  # a rollback: the action it undoes
    rolled_back_by: tuple[int, ...] = ()  # the rollbacks of this action
    cluster_id: str | None = None  # the cluster's own id (/cluster/id) when the gate read it: one cluster, however
    #                                its connect string was spelled


@dataclass(frozen=True)
class Acting:
    actor: str
    source: str
    role: str | None
    cluster_id: str | None = None


_ACTING: ContextVar[Acting | None] = ContextVar("keel_acting", default=None)
_UNDONE_IN_KIND = ("acl-add", "acl-remove", "quota-alter")  # kinds whose undo (core.cluster.security) is linked
_ROLLBACK_OF: ContextVar[int | None] = ContextVar("keel_rollback_of", default=None)


@contextmanager
def acting(actor: str, source: str, role: str | None, cluster_id: str | None = None) -> Iterator[Acting]:
    """Within: every action `begin` records names this actor, source and role (unless given explicitly), and the
    id of the cluster the gate admitted the write to."""
    a = Acting(actor, source, role, cluster_id)
    token = _ACTING.set(a)
    try:
        yield a
    finally:
        _ACTING.reset(token)


def default_actor() -> str:
    """The local user: $KEEL_ACTOR, else the OS user. A signed-in person's actor comes from `acting` instead."""
    acting_now = _ACTING.get()
    if acting_now is not None:
        return acting_now.actor
    try:
        return os.environ.get("KEEL_ACTOR") or getpass.getuser()
    except Exception:  # no passwd entry (containers)
        return "unknown"


class Store:
    """The audit store at `path`: a SQLite file, or a postgresql:// URL (one history for several Keel instances).
    None: $KEEL_STORE, else keel.toml's [store] url, else keel.sqlite in the run directory."""

    def __init__(self, path: str | os.PathLike | None = None):
        target = path if path else default_store_target()
        self.backend = sql.backend(str(target) if sql.is_url(str(target)) else Path(target))
        # What the History page and messages name: the file, or the URL without its password.
        self.path: Path | str = self.backend.path if isinstance(self.backend, sql.SqliteBackend) else self.backend.where
        self.backend.open()

    @property
    def _select(self) -> str:
        return (f"SELECT a.*, (SELECT {self.backend.select_rolled_back_by} FROM actions b WHERE b.rollback_of = a.id)"
                " AS rolled_back_by FROM actions a")

    def transaction(self):
        """One transaction (committed when the block ends normally): `db.execute(sql with ?, args)`."""
        return self.backend.transaction()

    # --- actions ---------------------------------------------------------------------------

    def begin(self, *, cluster: str, kind: str, target: str, summary: str, payload: Any,
              rollback: Any = None, actor: str | None = None, source: str | None = None, role: str | None = None,
              rollback_of: int | None = None) -> int:
        """Record an action about to be written (pending). Within `recording_rollback_of(n)`, a "reassignment"
        is recorded as a "rollback" of action n, an ACL or quota change as linked to n (its undo)."""
        now = _ACTING.get()
        linked = _ROLLBACK_OF.get()
        if rollback_of is None and linked is not None and kind == "reassignment":
            kind, rollback_of = "rollback", linked
            if summary.startswith("reassignment of "):  # History says what it is
                summary = f"rollback of action #{linked}: " + summary.removeprefix("reassignment of ")
        elif rollback_of is None and linked is not None and kind in _UNDONE_IN_KIND:
            rollback_of = linked  # an ACL / quota undo is the inverse write, of its own kind, linked
        with self.transaction() as db:
            return db.insert(
                "INSERT INTO actions (at, actor, cluster, kind, target, summary, payload, rollback, status, source,"
                " role, rollback_of, cluster_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
                (utc_now_iso(), actor or default_actor(), cluster, kind, target, summary, json.dumps(payload),
                 None if rollback is None else json.dumps(rollback),
                 source or (now.source if now else "none"), role or (now.role if now else None), rollback_of,
                 now.cluster_id if now else None),
            )

    def record(self, *, cluster: str, kind: str, target: str, summary: str, result: str, payload: Any = None,
               ok: bool = False, actor: str | None = None, source: str | None = None,
               role: str | None = None) -> int:
        """A finished row in one go: an action refused before anything was written, a failed sign-in."""
        action_id = self.begin(cluster=cluster, kind=kind, target=target, summary=summary, payload=payload or {},
                               actor=actor, source=source, role=role)
        self.finish(action_id, ok=ok, result=result)
        return action_id

    @contextmanager
    def recording_rollback_of(self, action_id: int) -> Iterator[None]:
        """Within: the reassignment `begin` records is the rollback of `action_id` (kind "rollback", linked)."""
        token = _ROLLBACK_OF.set(action_id)
        try:
            yield
        finally:
            _ROLLBACK_OF.reset(token)

    def mark_completed(self, cluster: str, plan: Any) -> int | None:
        """verify found `plan` (reassignment JSON, text or dict) complete: set completed_at on the newest
        applied reassignment or rollback of `cluster` that wrote this plan and has none yet; its id, or None."""
        want = _plan_key(plan)
        if want is None:
            return None
        with self.transaction() as db:
            rows = db.execute("SELECT id, payload FROM actions WHERE cluster = ? AND kind IN ('reassignment', "
                              "'rollback') AND status = 'applied' AND completed_at IS NULL ORDER BY id DESC LIMIT 200",
                              (cluster,)).fetchall()
            for r in rows:
                try:
                    written = json.loads(r["payload"]).get("plan")
                except (ValueError, AttributeError):
                    continue
                if _plan_key(written) == want:
                    db.execute("UPDATE actions SET completed_at = ? WHERE id = ?", (utc_now_iso(), r["id"]))
                    return int(r["id"])
        return None

    def finish(self, action_id: int, *, ok: bool, result: str = "") -> None:
        with self.transaction() as db:
            db.execute("UPDATE actions SET status = ?, result = ?, finished = ? WHERE id = ?",
                       ("applied" if ok else "failed", result, utc_now_iso(), action_id))

    def actions(self, cluster: str | Sequence[str] | None = None, *, kind: str | Sequence[str] | None = None,
                actor: str | Sequence[str] | None = None, limit: int = 200) -> list[Action]:
        """Newest first; each filter is one value or several (None: any)."""
        query, args = self._select + " WHERE 1=1", []
        for column, value in (("cluster", cluster), ("kind", kind), ("actor", actor)):
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            # an empty list matches nothing (PostgreSQL has no "IN ()")
            query += f" AND a.{column} IN ({', '.join('?' * len(values))})" if values else " AND 1 = 0"
            args += values
        query += " ORDER BY a.id DESC LIMIT ?"
        with self.transaction() as db:
            return [_action(r) for r in db.execute(query, args + [limit])]

    def action(self, action_id: int) -> Action | None:
        with self.transaction() as db:
            row = db.execute(self._select + " WHERE a.id = ?", (action_id,)).fetchone()
        return None if row is None else _action(row)

    def facets(self) -> dict[str, list[str]]:
        """The distinct clusters, actors and kinds recorded (the History page's filter choices)."""
        with self.transaction() as db:
            # sorted here: a PostgreSQL collation would order them otherwise than SQLite does
            return {c: sorted(r[c] for r in db.execute(f"SELECT DISTINCT {c} FROM actions"))
                    for c in ("cluster", "actor", "kind")}

    # --- pending actions left by interrupted runs (see core.zk.reconcile) ---------------------------

    def pending(self, cluster: str, cluster_id: str | None = None) -> list[Action]:
        """The actions of `cluster` still marked pending, oldest first; with `cluster_id`, those recorded with that
        cluster id too, whatever the cluster was called then (another spelling of its connect string)."""
        who, args = ("a.cluster = ?", [cluster]) if cluster_id is None else \
            ("(a.cluster = ? OR a.cluster_id = ?)", [cluster, cluster_id])
        with self.transaction() as db:
            rows = db.execute(self._select + f" WHERE {who} AND a.status = 'pending' ORDER BY a.id", args).fetchall()
        return [_action(r) for r in rows]

    def cluster_names(self, cluster_id: str) -> list[str]:
        """The names rows of the cluster with this id were recorded under, newest first (core.policy.gate identifies a
        connect string keel.toml does not name by its /cluster/id)."""
        with self.transaction() as db:
            rows = db.execute("SELECT cluster, MAX(id) AS last FROM actions WHERE cluster_id = ? GROUP BY cluster "
                              "ORDER BY last DESC", (cluster_id,)).fetchall()
        return [r["cluster"] for r in rows]

    def resolve(self, action_id: int, applied: bool, result: str) -> bool:
        """Settle a pending action after the fact: 'applied' or 'failed' with `result` saying how it was judged.

        Only a row still pending changes (a run that finishes it meanwhile wins); True if this call changed it.
        """
        with self.transaction() as db:
            cur = db.execute("UPDATE actions SET status = ?, result = ?, finished = ? WHERE id = ? AND status = 'pending'",
                             ("applied" if applied else "failed", result, utc_now_iso(), action_id))
            return cur.rowcount == 1


@dataclass(frozen=True)
class ThrottleLoop:
    """An auto-throttle loop's row (core.auto_throttle): who runs it where, its policy, the last rate it set and
    its last heartbeat (seconds since the epoch); `ended` once it stopped on its own (finished, stopped, failed)."""

    id: int
    cluster: str
    owner: str  # cli | dashboard
    actor: str
    host: str
    pid: int
    started: str
    beat: float
    policy: dict
    rate: int | None
    note: str | None
    ended: str | None
    end_reason: str | None

    def to_dict(self) -> dict:
        return {"id": self.id, "cluster": self.cluster, "owner": self.owner, "actor": self.actor, "host": self.host,
                "pid": self.pid, "started": self.started, "beat": self.beat, **self.policy, "rate": self.rate,
                "note": self.note, "ended": self.ended, "end_reason": self.end_reason}


class ThrottleLoops:
    """The auto-throttle loops' heartbeats, in the audit store's file (every front end reads the same rows)."""

    def __init__(self, store: Store):
        self.store = store

    def start(self, *, cluster: str, owner: str, host: str, pid: int, policy: dict, actor: str | None = None,
              refuse: Callable[[list[ThrottleLoop]], None] | None = None) -> int:
        """A new loop's row. `refuse` sees the cluster's loops (newest first) and raises to write nothing: the check
        and the insert are one transaction under the cluster's write lock, so of two instances starting a loop at
        once the second sees the first's row (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock)."""
        with self.store.transaction() as db:
            db.lock(f"keel.throttle_loops:{cluster}")
            if refuse is not None:
                refuse(self._of(db, cluster, running_only=False, limit=1000))
            return db.insert("INSERT INTO throttle_loops (cluster, owner, actor, host, pid, started, beat, policy) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (cluster, owner, actor or default_actor(), host, pid,
                                                                 utc_now_iso(), time.time(), json.dumps(policy)))

    def beat(self, loop_id: int, *, rate: int | None = None, note: str | None = None) -> None:
        """The loop is alive: its beat now, and the rate it set (kept when None) and what it last decided."""
        with self.store.transaction() as db:
            db.execute("UPDATE throttle_loops SET beat = ?, rate = COALESCE(?, rate), note = COALESCE(?, note) "
                       "WHERE id = ?", (time.time(), rate, note, loop_id))

    def end(self, loop_id: int, reason: str) -> None:
        with self.store.transaction() as db:
            db.execute("UPDATE throttle_loops SET ended = ?, end_reason = ? WHERE id = ? AND ended IS NULL",
                       (utc_now_iso(), reason, loop_id))

    def of(self, cluster: str, *, running_only: bool = False, limit: int = 20) -> list[ThrottleLoop]:
        """The loops of `cluster`, newest first (with `running_only`, those that never said they ended)."""
        with self.store.transaction() as db:
            return self._of(db, cluster, running_only=running_only, limit=limit)

    @staticmethod
    def _of(db, cluster: str, *, running_only: bool, limit: int) -> list[ThrottleLoop]:
        query = "SELECT * FROM throttle_loops WHERE cluster = ?" + (" AND ended IS NULL" if running_only else "")
        rows = db.execute(query + " ORDER BY id DESC LIMIT ?", (cluster, limit)).fetchall()
        return [ThrottleLoop(r["id"], r["cluster"], r["owner"], r["actor"], r["host"], r["pid"], r["started"],
                             r["beat"], json.loads(r["policy"]), r["rate"], r["note"], r["ended"], r["end_reason"])
                for r in rows]





def _plan_key(plan: Any):
    """A reassignment plan (JSON text or dict) as a comparable set of (topic, partition, replicas)."""
    try:
        doc = json.loads(plan) if isinstance(plan, str) else plan
        return frozenset((str(p["topic"]), int(p["partition"]), tuple(int(b) for b in p["replicas"]))
                         for p in doc["partitions"])
    except (ValueError, TypeError, KeyError):
        return None


def _action(r) -> Action:
    linked = r["rolled_back_by"]
    return Action(id=r["id"], at=r["at"], actor=r["actor"], cluster=r["cluster"], kind=r["kind"], target=r["target"],
                  summary=r["summary"], payload=json.loads(r["payload"]),
                  rollback=None if r["rollback"] is None else json.loads(r["rollback"]), status=r["status"],
                  result=r["result"], finished=r["finished"], source=r["source"], role=r["role"],
                  completed_at=r["completed_at"], rollback_of=r["rollback_of"],
                  rolled_back_by=tuple(sorted(int(i) for i in linked.split(","))) if linked else (),
                  cluster_id=r["cluster_id"])

