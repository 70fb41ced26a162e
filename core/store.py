"""The audit store (SQLite): who did what to which cluster, when, with what result, and how to undo it.

An action is recorded *before* anything is written to ZooKeeper (status "pending", with the exact
payload and, where there is one, the rollback), then finished as "applied" or "failed". A crash
between the two leaves a pending row: the history never loses a write that may have happened.
Saved plans (reassignments, elections) live here too.
"""

from __future__ import annotations

import getpass
import json
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StoreError
from core.model import utc_now_iso

STORE_ENV = "KEEL_STORE"
DEFAULT_STORE = Path(__file__).resolve().parents[1] / ".run" / "keel.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS actions (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,
    actor     TEXT NOT NULL,
    cluster   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    target    TEXT NOT NULL,
    summary   TEXT NOT NULL,
    payload   TEXT NOT NULL,
    rollback  TEXT,
    status    TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'failed')),
    result    TEXT,
    finished  TEXT
);
CREATE INDEX IF NOT EXISTS actions_cluster ON actions (cluster, id);
CREATE TABLE IF NOT EXISTS plans (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,
    actor     TEXT NOT NULL,
    cluster   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    name      TEXT NOT NULL,
    plan      TEXT NOT NULL,
    report    TEXT
);
"""


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


@dataclass(frozen=True)
class SavedPlan:
    id: int
    at: str
    actor: str
    cluster: str
    kind: str
    name: str
    plan: Any
    report: Any


def default_actor() -> str:
    """Who is acting: $KEEL_ACTOR (set by the dashboard's login/proxy), else the OS user."""
    try:
        return os.environ.get("KEEL_ACTOR") or getpass.getuser()
    except Exception:  # no passwd entry (containers)
        return "unknown"


_STORE_HINT = f"point {STORE_ENV} (or --store) at a writable SQLite file; a new one is created if absent"


def _check_store_path(path: Path) -> None:
    """Before SQLite sees it: a directory, a path under a file, or an unwritable place gets a StoreError."""
    if path.is_dir():
        raise StoreError(f"action history {path} is a directory, not a SQLite file", str(path), hint=_STORE_HINT)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StoreError(f"action history {path}: a part of {path.parent} is not a directory", str(path),
                         hint=_STORE_HINT) from None
    except OSError as e:
        raise StoreError(f"action history {path}: cannot create directory {path.parent}: {e.strerror or e}",
                         str(path), hint=_STORE_HINT) from None
    # SQLite writes its -wal and -shm files next to the database: the directory must be writable too.
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"action history {path}: directory {path.parent} is not writable", str(path),
                         hint=_STORE_HINT)
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"action history {path} is not readable and writable by this user", str(path),
                         hint=_STORE_HINT)


def _store_error(path: Path, e: sqlite3.Error) -> StoreError:
    text = str(e)
    if "not a database" in text or "malformed" in text:
        problem = f"is not a SQLite database (corrupt, or another kind of file): {text}"
        hint = f"move it aside to keep it, or point {STORE_ENV} (or --store) at another file"
        return StoreError(f"action history {path} {problem}", str(path), hint=hint)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"action history {path} is read-only: {text}", str(path), hint=_STORE_HINT)
    return StoreError(f"action history {path} cannot be opened: {text}", str(path), hint=_STORE_HINT)


class Store:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path or os.environ.get(STORE_ENV) or DEFAULT_STORE)
        _check_store_path(self.path)
        try:
            with closing(self._connect()) as db, db:
                db.executescript(_SCHEMA)
        except sqlite3.Error as e:
            raise _store_error(self.path, e) from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        # WAL is a property of the file, set once. Switching needs an exclusive lock that the busy timeout
        # does not wait for, so two processes opening a new store at once would fail with "database is locked".
        for attempt in range(50):
            try:
                if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or attempt == 49:
                    raise
                time.sleep(0.05)
        db.row_factory = sqlite3.Row
        return db

    # --- actions ---------------------------------------------------------------------------

    def begin(self, *, cluster: str, kind: str, target: str, summary: str, payload: Any,
              rollback: Any = None, actor: str | None = None) -> int:
        with closing(self._connect()) as db, db:
            cur = db.execute(
                "INSERT INTO actions (at, actor, cluster, kind, target, summary, payload, rollback, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                (utc_now_iso(), actor or default_actor(), cluster, kind, target, summary, json.dumps(payload),
                 None if rollback is None else json.dumps(rollback)),
            )
            return int(cur.lastrowid)

    def finish(self, action_id: int, *, ok: bool, result: str = "") -> None:
        with closing(self._connect()) as db, db:
            db.execute("UPDATE actions SET status = ?, result = ?, finished = ? WHERE id = ?",
                       ("applied" if ok else "failed", result, utc_now_iso(), action_id))

    def actions(self, cluster: str | None = None, *, kind: str | None = None, limit: int = 200) -> list[Action]:
        sql, args = "SELECT * FROM actions WHERE 1=1", []
        if cluster is not None:
            sql, args = sql + " AND cluster = ?", args + [cluster]
        if kind is not None:
            sql, args = sql + " AND kind = ?", args + [kind]
        sql += " ORDER BY id DESC LIMIT ?"
        with closing(self._connect()) as db:
            return [_action(r) for r in db.execute(sql, args + [limit])]

    def action(self, action_id: int) -> Action | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM actions WHERE id = ?", (action_id,)).fetchone()
        return None if row is None else _action(row)

    # --- plans -----------------------------------------------------------------------------

    def save_plan(self, *, cluster: str, kind: str, name: str, plan: Any, report: Any = None,
                  actor: str | None = None) -> int:
        with closing(self._connect()) as db, db:
            cur = db.execute(
                "INSERT INTO plans (at, actor, cluster, kind, name, plan, report) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (utc_now_iso(), actor or default_actor(), cluster, kind, name, json.dumps(plan),
                 None if report is None else json.dumps(report)),
            )
            return int(cur.lastrowid)

    def plans(self, cluster: str | None = None, limit: int = 100) -> list[SavedPlan]:
        sql, args = "SELECT * FROM plans", []
        if cluster is not None:
            sql, args = sql + " WHERE cluster = ?", [cluster]
        with closing(self._connect()) as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ?", args + [limit]).fetchall()
        return [SavedPlan(r["id"], r["at"], r["actor"], r["cluster"], r["kind"], r["name"], json.loads(r["plan"]),
                          None if r["report"] is None else json.loads(r["report"])) for r in rows]

    # --- pending actions left by interrupted runs (see core.zk.reconcile) ---------------------------

    def pending(self, cluster: str) -> list[Action]:
        """The actions of `cluster` still marked pending, oldest first."""
        with closing(self._connect()) as db:
            rows = db.execute("SELECT * FROM actions WHERE cluster = ? AND status = 'pending' ORDER BY id",
                              (cluster,)).fetchall()
        return [_action(r) for r in rows]

    def resolve(self, action_id: int, applied: bool, result: str) -> bool:
        """Settle a pending action after the fact: 'applied' or 'failed' with `result` saying how it was judged.

        Only a row still pending changes (a run that finishes it meanwhile wins); True if this call changed it.
        """
        with closing(self._connect()) as db, db:
            cur = db.execute("UPDATE actions SET status = ?, result = ?, finished = ? WHERE id = ? AND status = 'pending'",
                             ("applied" if applied else "failed", result, utc_now_iso(), action_id))
            return cur.rowcount == 1


def _action(r: sqlite3.Row) -> Action:
    return Action(id=r["id"], at=r["at"], actor=r["actor"], cluster=r["cluster"], kind=r["kind"], target=r["target"],
                  summary=r["summary"], payload=json.loads(r["payload"]),
                  rollback=None if r["rollback"] is None else json.loads(r["rollback"]), status=r["status"],
                  result=r["result"], finished=r["finished"])

