"""The audit store's two databases behind one small interface: SQLite (a file, the embedded default) and PostgreSQL
(a server several Keel instances share). core.audit.store writes its SQL once, with `?` placeholders and rows read
by column name; a backend opens one transaction at a time (`transaction()`), creates and migrates the schema, and
takes the write lock a check-then-insert needs (`lock`), so that a rule such as "one auto-throttle loop per
cluster" holds between processes and machines, not only between threads.

The schema is the same on both (PostgreSQL spells the types it must: BIGSERIAL ids, DOUBLE PRECISION beats, BIGINT
rates). Columns added after the first release are added to an older database when it is opened.

The PostgreSQL driver (psycopg 3) is imported only when a postgresql:// store is opened: SQLite needs nothing.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

from core.errors import StoreError

STORE_ENV = "KEEL_STORE"
PG_SCHEMES = ("postgresql", "postgres")
CONNECT_TIMEOUT = 5  # seconds: an unreachable PostgreSQL is reported, not waited for

_TABLES = {
    "actions": """(
    id        {id},
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
)""",
    "throttle_loops": """(
    id         {id},
    cluster    TEXT NOT NULL,
    owner      TEXT NOT NULL,
    actor      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    started    TEXT NOT NULL,
    beat       {real} NOT NULL,
    policy     TEXT NOT NULL,
    rate       {bigint},
    note       TEXT,
    ended      TEXT,
    end_reason TEXT
)""",
}
# Columns added after the first release: added to an older database when it is opened (ALTER TABLE ADD COLUMN).
ADDED_COLUMNS = (("source", "TEXT"), ("role", "TEXT"), ("completed_at", "TEXT"),
                 ("rollback_of", "{bigint} REFERENCES actions (id)"), ("cluster_id", "TEXT"))
INDEXES = (("actions_cluster", "actions (cluster, id)"), ("throttle_loops_cluster", "throttle_loops (cluster, id)"),
           ("actions_rollback_of", "actions (rollback_of)"), ("actions_actor", "actions (actor, id)"),
           ("actions_cluster_id", "actions (cluster_id, id)"))


def is_url(target: str | os.PathLike) -> bool:
    return isinstance(target, str) and target.split("://", 1)[0].lower() in PG_SCHEMES and "://" in target


def redact(url: str) -> str:
    """The URL without its password: what messages and the History page show."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        netloc = f"{parts.username}@{host}" if parts.username else host
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:  # a malformed port: show the scheme and say no more
        return url.split("://", 1)[0] + "://…"


def lock_key(name: str) -> int:
    """A stable signed 64-bit key for PostgreSQL's advisory locks."""
    return int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "big", signed=True)


class Db:
    """One open transaction: `execute(sql with ?, args)` -> a cursor whose rows are read by column name."""

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def insert(self, sql: str, args: Sequence[Any]) -> int:
        """An INSERT; the new row's id."""
        rows = self.execute(sql + " RETURNING id", args).fetchall()
        return int(rows[0]["id"])

    def lock(self, name: str) -> None:
        """Hold the write lock named `name` until the transaction ends (a check, then an insert, as one)."""
        raise NotImplementedError


# --- SQLite -------------------------------------------------------------------------------------------------------

_SQLITE_HINT = f"point {STORE_ENV} (or --store) at a writable SQLite file; a new one is created if absent"


def check_sqlite_path(path: Path) -> None:
    """Before SQLite sees it: a directory, a path under a file, or an unwritable place gets a StoreError."""
    if path.is_dir():
        raise StoreError(f"action history {path} is a directory, not a SQLite file", str(path), hint=_SQLITE_HINT)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StoreError(f"action history {path}: a part of {path.parent} is not a directory", str(path),
                         hint=_SQLITE_HINT) from None
    except OSError as e:
        raise StoreError(f"action history {path}: cannot create directory {path.parent}: {e.strerror or e}",
                         str(path), hint=_SQLITE_HINT) from None
    # SQLite writes its -wal and -shm files next to the database: the directory must be writable too.
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"action history {path}: directory {path.parent} is not writable", str(path),
                         hint=_SQLITE_HINT)
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"action history {path} is not readable and writable by this user", str(path),
                         hint=_SQLITE_HINT)


def _sqlite_error(path: Path, e: sqlite3.Error) -> StoreError:
    text = str(e)
    if "not a database" in text or "malformed" in text:
        problem = f"is not a SQLite database (corrupt, or another kind of file): {text}"
        hint = f"move it aside to keep it, or point {STORE_ENV} (or --store) at another file"
        return StoreError(f"action history {path} {problem}", str(path), hint=hint)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"action history {path} is read-only: {text}", str(path), hint=_SQLITE_HINT)
    return StoreError(f"action history {path} cannot be opened: {text}", str(path), hint=_SQLITE_HINT)


class _SqliteDb(Db):
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.db.execute(sql, args)

    def lock(self, name: str) -> None:
        # One writer per file: BEGIN IMMEDIATE takes the write lock before the check reads (waits up to the timeout).
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")


class SqliteBackend:
    name = "sqlite"
    select_rolled_back_by = "group_concat(b.id)"

    def __init__(self, path: Path):
        self.path = path
        self.where = str(path)

    def open(self) -> None:
        check_sqlite_path(self.path)
        try:
            with self.transaction() as db:
                for table, body in _TABLES.items():
                    db.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                               + body.format(id="INTEGER PRIMARY KEY AUTOINCREMENT", real="REAL", bigint="INTEGER"))
                have = {r["name"] for r in db.execute("PRAGMA table_info(actions)")}
                for column, decl in ADDED_COLUMNS:
                    if column not in have:
                        try:
                            db.execute(f"ALTER TABLE actions ADD COLUMN {column} {decl.format(bigint='INTEGER')}")
                        except sqlite3.OperationalError as e:  # another process added it meanwhile
                            if "duplicate column" not in str(e):
                                raise
                for name, on in INDEXES:
                    db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")
        except sqlite3.Error as e:
            raise _sqlite_error(self.path, e) from None

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

    @contextmanager
    def transaction(self) -> Iterator[Db]:
        with closing(self._connect()) as db, db:
            yield _SqliteDb(db)


# --- PostgreSQL ---------------------------------------------------------------------------------------------------

_PG_HINT = (f"check [store] url in keel.toml (or {STORE_ENV}): postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE; "
            "the password may come from PGPASSWORD or ~/.pgpass instead")
_SCHEMA_READY: set[str] = set()  # URLs whose schema this process found complete: not checked again on every open


class _PgDb(Db):
    def __init__(self, conn):
        self.conn = conn

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), args)

    def lock(self, name: str) -> None:
        # Held until commit or rollback, by whichever Keel instance asks first; the others wait here.
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(name),))


class PostgresBackend:
    name = "postgresql"
    select_rolled_back_by = "string_agg(b.id::text, ',' ORDER BY b.id)"

    def __init__(self, url: str):
        self.url = url
        self.where = redact(url)

    def _error(self, e: Exception) -> StoreError:
        text = " ".join(str(e).split()) or type(e).__name__
        if self.url in text:  # never echo a password
            text = text.replace(self.url, self.where)
        low = text.lower()
        if "password authentication failed" in low or "no pg_hba.conf entry" in low or "role" in low and \
                "does not exist" in low:
            return StoreError(f"action history {self.where}: PostgreSQL refused the login: {text}", self.where,
                              hint="check the user and password (PGPASSWORD, ~/.pgpass) and the server's pg_hba.conf")
        if "database" in low and "does not exist" in low:
            return StoreError(f"action history {self.where}: no such database: {text}", self.where,
                              hint="create it first (createdb, or CREATE DATABASE) and grant the user CREATE on it")
        if "permission denied" in low or "must be owner" in low:
            return StoreError(f"action history {self.where}: PostgreSQL denied the user: {text}", self.where,
                              hint="the user needs CREATE on the schema (once, to create the tables) and "
                                   "SELECT, INSERT, UPDATE on Keel's tables")
        return StoreError(f"action history {self.where}: PostgreSQL cannot be reached: {text}", self.where,
                          hint=_PG_HINT)

    def _driver(self):
        try:
            import psycopg
        except ImportError:
            raise StoreError(f"action history {self.where}: the PostgreSQL driver (psycopg 3) is not installed",
                             self.where, hint="pip install 'psycopg[binary]' (requirements.txt pins it)") from None
        return psycopg

    def open(self) -> None:
        psycopg = self._driver()
        if self.url in _SCHEMA_READY:
            return
        try:
            with self.transaction() as db:
                if not self._complete(db):
                    db.lock("keel.audit.schema")  # two instances opening a new database at once: one creates it
                    self._create(db)
        except psycopg.Error as e:
            raise self._error(e) from None
        _SCHEMA_READY.add(self.url)

    @staticmethod
    def _complete(db: Db) -> bool:
        columns = {r["column_name"] for r in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'actions'")}
        indexes = {r["indexname"] for r in db.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        have_loops = db.execute("SELECT to_regclass('throttle_loops') IS NOT NULL AS ok").fetchone()["ok"]
        return bool(columns) and have_loops and {c for c, _ in ADDED_COLUMNS} <= columns and \
            {n for n, _ in INDEXES} <= indexes

    @staticmethod
    def _create(db: Db) -> None:
        # Only what is missing: ALTER TABLE locks the table even when IF NOT EXISTS finds the column.
        for table, body in _TABLES.items():
            db.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                       + body.format(id="BIGSERIAL PRIMARY KEY", real="DOUBLE PRECISION", bigint="BIGINT"))
        have = {r["column_name"] for r in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'actions'")}
        for column, decl in ADDED_COLUMNS:
            if column not in have:
                db.execute(f"ALTER TABLE actions ADD COLUMN IF NOT EXISTS {column} {decl.format(bigint='BIGINT')}")
        for name, on in INDEXES:
            db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")

    @contextmanager
    def transaction(self) -> Iterator[Db]:
        psycopg = self._driver()
        conn = self._checkout(psycopg)
        try:
            with conn.transaction():  # commits when the block ends normally, rolls back on an exception
                yield _PgDb(conn)
        except psycopg.OperationalError as e:  # the server went away mid-transaction
            conn.close()
            raise self._error(e) from None
        finally:
            _checkin(self.url, conn)  # back to the pool when it is idle and open (a refusal rolled back: it is)

    def _checkout(self, psycopg):
        """An idle pooled connection that still answers, else a new one: a new connection per operation costs
        a server process and an authentication (tens of ms); a stale one (the server restarted, an idle timeout)
        is dropped here rather than failing the operation."""
        while (conn := _pooled(self.url)) is not None:
            try:
                conn.execute("SELECT 1")
                return conn
            except psycopg.Error:
                conn.close()
        from psycopg.rows import dict_row

        try:
            # autocommit: each transaction is the explicit conn.transaction() block, nothing left open between
            return psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT, row_factory=dict_row, autocommit=True,
                                   application_name="keel")
        except psycopg.Error as e:
            raise self._error(e) from None


_POOL_SIZE = 4  # idle connections kept per URL and process
_POOL: dict[str, list] = {}
_POOL_PID = os.getpid()
_POOL_LOCK = threading.Lock()
_INHERITED: list = []  # a forked child's copies of its parent's connections: never used, never closed (the parent's)


def _pooled(url: str):
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL_PID != os.getpid():
            _INHERITED.append(_POOL)
            _POOL, _POOL_PID = {}, os.getpid()
        idle = _POOL.get(url)
        return idle.pop() if idle else None


def _checkin(url: str, conn) -> None:
    from psycopg.pq import TransactionStatus

    with _POOL_LOCK:
        idle = _POOL.setdefault(url, [])
        if _POOL_PID == os.getpid() and len(idle) < _POOL_SIZE and not conn.closed and \
                conn.info.transaction_status == TransactionStatus.IDLE:
            idle.append(conn)
            return
    conn.close()


def backend(target: str | os.PathLike) -> SqliteBackend | PostgresBackend:
    return PostgresBackend(target) if is_url(target) else SqliteBackend(Path(target))


__all__ = ["PG_SCHEMES", "PostgresBackend", "SqliteBackend", "STORE_ENV", "backend", "check_sqlite_path", "is_url",
           "lock_key", "redact"]
