"""A ZooKeeper session: the only place Keel touches kazoo.

`ZkSession` opens a bounded connection (connect-string parsing, digest auth, TLS, retries) and
offers the few calls the rest of Keel needs, translating kazoo's exceptions into core.errors so
that no other package has to import kazoo. `get_many` pipelines reads: it keeps a window of
asynchronous requests in flight instead of paying one round trip per znode.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KeeperState
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id

from core.errors import (
    ConnectStringError,
    KeelError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkNotEmptyError,
    ZkOperationError,
    ZooKeeperAuthError,
    ZooKeeperUnreachableError,
)
from core.zk import acl as zacl
from core.zk import faults
from core.zk.ops import Op, expand  # noqa: F401  (Op re-exported: callers import it from here)
from core.zk.settings import (  # noqa: F401  (re-exported: callers import these from core.zk.session)
    ConnectString,
    TlsOptions,
    ZkSettings,
    parse_connect_string,
)
from core.zk.wire import WireReader, WireSettings

log = logging.getLogger(__name__)


class _RedactAuth(logging.Filter):
    """kazoo logs every request and answer with its data at its lowest level: the digest `Auth(... auth='user:pass')`
    and a user's SCRAM credentials (/config/users/<user>, issue 29) stay out of every log line (issue 17)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if any(type(a).__name__ == "Auth" for a in (record.args or ()) if not isinstance(record.args, dict)):
            record.msg, record.args = re.sub(r"auth='[^']*'", "auth='<redacted>'", record.getMessage()), ()
        elif "SCRAM-" in (text := record.getMessage()):
            record.msg, record.args = re.sub(r'(SCRAM-[\w-]+\\?"\s*:\s*\\?")[^"\\]*', r"\1<redacted>", text), ()
        return True


logging.getLogger("keel.kazoo").addFilter(_RedactAuth())
CLOSE_TIMEOUT = 1.0  # seconds close() waits for kazoo's stop(): ms against a live server


@dataclass(frozen=True)
class Node:
    path: str
    data: bytes | None  # None: the znode does not exist
    version: int = -1
    ephemeral_owner: int = 0

    @property
    def exists(self) -> bool:
        return self.data is not None


# Watch callbacks receive (path, kind) with kind one of "created", "deleted", "changed", "child", "none".
WatchFn = Callable[[str, str], None]
_EVENT_KIND = {
    EventType.CREATED: "created",
    EventType.DELETED: "deleted",
    EventType.CHANGED: "changed",
    EventType.CHILD: "child",
    EventType.NONE: "none",
}


def _wrap(fn: WatchFn):
    return lambda event: fn(event.path, _EVENT_KIND.get(event.type, "none"))


class ZkWriteOutcomeUnknownError(ZkOperationError):
    """A write (all or nothing) with no answer: connection or session lost, or none within the write timeout
    (`timed_out`, which ends at `deadline`, a time.monotonic()). core.zk.reconcile settles its pending action."""

    def __init__(self, message: str, path: str | None = None, *, timed_out: bool = False,
                 deadline: float | None = None):
        super().__init__(message, path)
        self.timed_out = timed_out
        self.deadline = deadline


def _translate(e: Exception, path: str | None) -> Exception:
    if isinstance(e, NoNodeError):
        return ZkNoNodeError(f"znode {path} does not exist", path)
    if isinstance(e, NodeExistsError):
        return ZkNodeExistsError(f"znode {path} already exists", path)
    if isinstance(e, BadVersionError):
        return ZkBadVersionError(f"znode {path} changed since it was read", path)
    if isinstance(e, NotEmptyError):
        return ZkNotEmptyError(f"znode {path} has children", path)
    if isinstance(e, (NoAuthError, AuthFailedError)):
        return ZooKeeperAuthError(f"ZooKeeper denied access to {path}: check the digest credentials and ACLs")
    if isinstance(e, KazooTimeoutError):
        return ZooKeeperUnreachableError(f"ZooKeeper did not answer a request for {path} in time")
    return ZkOperationError(f"ZooKeeper error on {path}: {type(e).__name__} {e}", path)


class ZkSession:
    """A started ZooKeeper client bound to one connect string (chroot included)."""

    def __init__(self, settings: ZkSettings):
        self.settings = settings
        self.target = parse_connect_string(settings.connect)
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()
        self._wire: WireReader | None = None
        # One kazoo watcher per callback: kazoo keeps a set of watchers per path, so a fresh lambda on
        # each read would register the same callback again and again.
        self._watchers: dict[WatchFn, Callable] = {}
        self._wire_failed = False
        owner = zacl.creator(settings.digest, tls_identity=bool(settings.tls and settings.tls.cert))
        self._acls = zacl.AclPolicy(owner, self._read_acl)  # the ACLs of created nodes: Kafka's (core.zk.acl)
        kwargs = {}
        if settings.tls:
            # Missing or non-PEM files would otherwise surface as "could not connect ... is ZooKeeper running?"
            # after the whole connect timeout: check them first and name the file.
            from core.policy.config import check_tls_files

            check_tls_files(settings.tls.ca, settings.tls.cert, settings.tls.key, settings.tls.key_password)
            kwargs.update(use_ssl=True, ca=settings.tls.ca, certfile=settings.tls.cert, keyfile=settings.tls.key,
                          keyfile_password=settings.tls.key_password, verify_certs=settings.tls.verify)
        if settings.digest:
            if ":" not in settings.digest:
                raise ConnectStringError("digest credentials must look like user:password")
            kwargs["auth_data"] = [("digest", settings.digest)]
        self._client = KazooClient(
            hosts=str(self.target),
            timeout=settings.session_timeout,
            # Once connected, reconnect for as long as it takes (a live view must survive a ZooKeeper
            # restart); the first connect is bounded by start()'s timeout instead.
            connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0, ignore_expire=False),
            command_retry=KazooRetry(max_tries=settings.retries, delay=0.2, max_delay=2.0),
            logger=logging.getLogger("keel.kazoo"),
            **kwargs,
        )
        self._client.add_listener(self._on_state)

    # --- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: ZkSettings | str, **overrides) -> "ZkSession":
        if isinstance(settings, str):
            settings = ZkSettings(connect=settings, **overrides)
        session = cls(settings)
        session.start()
        return session

    def start(self) -> None:
        try:
            self._start_client()
        except KazooTimeoutError:
            self.close()
            raise ZooKeeperUnreachableError(
                f"could not connect to ZooKeeper at {self.target.hosts_text} within "
                f"{self.settings.connect_timeout:g} s: check the host, the port and that ZooKeeper is running"
            ) from None
        except AuthFailedError:
            self.close()
            raise ZooKeeperAuthError(f"ZooKeeper at {self.target.hosts_text} rejected the digest credentials") from None
        except Exception as e:  # SSL errors and the like surface here
            self.close()
            raise ZooKeeperUnreachableError(f"could not connect to ZooKeeper at {self.target.hosts_text}: {e}") from None

    def _start_client(self) -> None:
        """kazoo's start() without its stop() on a timeout, which waits out the connection attempt in flight (the
        session timeout against a stalled server: "could not connect within 2 s" after 15 s). close() does not."""
        self._client.start_async().wait(timeout=self.settings.connect_timeout)
        if self._client.client_state == KeeperState.AUTH_FAILED:
            raise AuthFailedError()
        if not self._client.connected:
            raise KazooTimeoutError("Connection time-out")
        if self._client.chroot and not self._client.exists("/"):
            warnings.warn("No chroot path exists, the chroot path should be created before normal use.")

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Stop the session within `timeout` s. kazoo's stop() waits out a connection attempt in flight (see
        _start_client) and, connected, the close's answer: the session timeout against a frozen server. Past
        `timeout` it goes on in a daemon thread (kazoo no longer reconnects: a queued write is never sent)."""
        with self._lock:
            self._close_wire()
        closer = threading.Thread(target=self._stop_client, name="keel-zk-close", daemon=True)
        closer.start()
        closer.join(timeout=timeout)

    def _stop_client(self) -> None:
        try:
            try:
                self._client.stop()
            finally:
                self._client.close()
        except Exception as e:  # in close()'s thread: kazoo gave up waiting for a frozen server
            log.info("ZooKeeper session not closed cleanly: %s", e)

    def __enter__(self) -> "ZkSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._client.state == KazooState.CONNECTED

    @property
    def session_id(self) -> int | None:
        cid = self._client.client_id
        return cid[0] if cid else None

    def on_state_change(self, fn: Callable[[str], None]) -> None:
        """fn("connected" | "suspended" | "lost") from kazoo's thread; keep it quick."""
        self._listeners.append(fn)

    def _on_state(self, state) -> None:
        name = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}[state]
        for fn in list(self._listeners):
            try:
                fn(name)
            except Exception:  # a listener must not break kazoo's event thread
                log.exception("state listener failed")

    # --- reads -----------------------------------------------------------------------------

    def _kazoo_watch(self, fn: WatchFn | None):
        if fn is None:
            return None
        watcher = self._watchers.get(fn)
        if watcher is None:
            watcher = self._watchers[fn] = _wrap(fn)
        return watcher

    def get(self, path: str, watch: WatchFn | None = None) -> Node:
        return self._get_kw(path, self._kazoo_watch(watch))

    def _get_kw(self, path: str, kw) -> Node:
        while True:
            try:
                data, stat = self._client.get(path, watch=kw)
            except NoNodeError:
                if self._missing(path, kw):
                    return Node(path, None)
                continue
            except KazooException as e:
                raise _translate(e, path) from None
            return Node(path, data if data is not None else b"", stat.version, stat.ephemeralOwner)

    def _missing(self, path: str, kw) -> bool:
        """After NoNode: True if the node is still missing (an exists-watch now waits for its creation).

        False if it was created between the two calls: that creation will fire no watch, so the
        caller must read it again.
        """
        if kw is None:
            return True
        try:
            return self._client.exists(path, watch=kw) is None
        except KazooException as e:
            raise _translate(e, path) from None

    def children(self, path: str, watch: WatchFn | None = None) -> list[str] | None:
        """Child names, or None when the node does not exist (then a watch waits for its creation)."""
        kw = self._kazoo_watch(watch)
        while True:
            try:
                return self._client.get_children(path, watch=kw)
            except NoNodeError:
                if self._missing(path, kw):
                    return None
            except KazooException as e:
                raise _translate(e, path) from None

    def sync(self, path: str = "/", *, timeout: float | None = None) -> None:
        """Make the reads that follow see every write committed before this call, through both of this session's
        connections (kazoo's, the bulk reader's: maybe on other servers); ZooKeeperUnreachableError past `timeout`."""
        try:
            self._client.sync_async(path).get(timeout=timeout)
        except (KazooException, KazooTimeoutError) as e:
            raise _translate(e, path) from None
        if self._wire_usable():
            self._wire_call(lambda wire: wire.sync(path, timeout=timeout))

    def exists(self, path: str, watch: WatchFn | None = None) -> bool:
        try:
            return self._client.exists(path, watch=self._kazoo_watch(watch)) is not None
        except KazooException as e:
            raise _translate(e, path) from None

    def get_many(
        self,
        paths: Sequence[str],
        *,
        watch: WatchFn | None = None,
        window: int = 2000,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[Node]:
        """Pipelined reads: up to `window` requests in flight; yields Nodes in the order of `paths`.

        `progress(n)` is called with the number of nodes read so far, every `window` nodes.
        """
        if watch is None and self._wire_usable():
            yield from self._get_many_wire(paths, progress)
            return
        kw = self._kazoo_watch(watch)
        pending: list[tuple[str, object]] = []
        done = 0
        for path in paths:
            pending.append((path, self._client.get_async(path, watch=kw)))
            if len(pending) >= window:
                yield from self._drain(pending, kw)
                done += len(pending)
                pending = []
                if progress:
                    progress(done)
        yield from self._drain(pending, kw)
        if progress and pending:
            progress(done + len(pending))

    def children_many(self, paths: Sequence[str], *, watch: WatchFn | None = None) -> dict[str, list[str] | None]:
        if watch is None and self._wire_usable():
            return self._wire_call(lambda wire: dict(wire.children_many(list(paths))))
        kw = self._kazoo_watch(watch)
        asyncs = [(p, self._client.get_children_async(p, watch=kw)) for p in paths]
        out: dict[str, list[str] | None] = {}
        for p, res in asyncs:
            try:
                out[p] = res.get()
            except NoNodeError:
                out[p] = None
            except KazooException as e:
                raise _translate(e, p) from None
        return out

    # --- bulk reads over the wire reader (no watches) ---------------------------------------

    def _wire_usable(self) -> bool:
        with self._lock:
            return self._wire_reader() is not None

    def _wire_reader(self) -> WireReader | None:
        """The pipelined reader, opened on first use; None (kazoo is used) if it cannot connect."""
        if self._wire is None and not self._wire_failed:
            tls = None
            if self.settings.tls:
                t = self.settings.tls
                tls = ssl.create_default_context(cafile=t.ca)
                if t.cert:
                    tls.load_cert_chain(t.cert, t.key, t.key_password)
                if not t.verify:
                    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
            try:
                self._wire = WireReader(WireSettings(
                    hosts=self.target.hosts, chroot=self.target.chroot, digest=self.settings.digest,
                    tls_context=tls, connect_timeout=self.settings.connect_timeout,
                    session_timeout_ms=int(self.settings.session_timeout * 1000)))
            except KeelError as e:
                log.warning("pipelined reader unavailable, reading through kazoo: %s", e)
                self._wire_failed = True
        return self._wire

    def _wire_call(self, fn):
        """Run fn(reader) under the lock; a reader whose session lapsed while idle is reopened once."""
        with self._lock:
            wire = self._wire_reader()
            try:
                return fn(wire)
            except (OSError, ConnectionError) as e:
                log.info("pipelined reader connection lost (%s); reconnecting", e)
                self._close_wire()
                wire = self._wire_reader()
                if wire is None:
                    raise ZooKeeperUnreachableError(f"lost the connection to ZooKeeper: {e}") from None
                return fn(wire)

    def _close_wire(self) -> None:
        if self._wire is not None:
            self._wire.close()
            self._wire = None

    def _get_many_wire(self, paths: Sequence[str], progress) -> Iterator[Node]:
        paths = list(paths)

        def read(wire: WireReader) -> list[Node]:
            # Materialised under the lock: the reader is one socket shared by this session's threads.
            nodes = []
            for i, (path, data, version, owner) in enumerate(wire.get_many(paths), 1):
                nodes.append(Node(path, data, version, owner))
                if progress and i % 5000 == 0:
                    progress(i)
            return nodes

        nodes = self._wire_call(read)
        if progress and paths:
            progress(len(paths))
        yield from nodes

    def _drain(self, pending, kw) -> Iterator[Node]:
        for path, res in pending:
            try:
                data, stat = res.get()
            except NoNodeError:
                yield Node(path, None) if self._missing(path, kw) else self._get_kw(path, kw)
                continue
            except KazooException as e:
                raise _translate(e, path) from None
            yield Node(path, data if data is not None else b"", stat.version, stat.ephemeralOwner)

    # --- ACLs of created nodes (core.zk.acl) ------------------------------------------------

    def acl_for(self, path: str) -> tuple[zacl.Acl, ...]:
        """The ACL Keel creates `path` with: Kafka's secure default under a protected parent, else open."""
        return self._acls.for_path(path)

    def _read_acl(self, path: str) -> list[zacl.Acl] | None:
        try:
            acls, _ = self._client.get_acls(path)
        except NoNodeError:
            raise zacl.Missing(path) from None
        except NoAuthError:
            return None
        except KazooException as e:
            raise _translate(e, path) from None
        return [zacl.Acl(a.perms, a.id.scheme, a.id.id) for a in acls]

    # --- writes ----------------------------------------------------------------------------

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False,
               makepath: bool = False) -> str:
        if makepath:  # parents one by one, each with its own ACL (kazoo's makepath would give them this node's)
            self.ensure_path(zacl.parent(path))
        acls = self.acl_for(path)
        try:
            created = self._client.create(path, data, acl=_kazoo_acl(acls), ephemeral=ephemeral, sequence=sequence)
        except KazooException as e:
            raise _translate(e, path) from None
        if not ephemeral and not sequence:
            self._acls.created(path, acls)
        return created

    def create_many(self, nodes: Iterable[tuple[str, bytes]]) -> int:
        """Pipelined, non-atomic creates of persistent nodes, parents before children.

        For bulk seeding only: an error stops at the failing node and raises; nodes created
        before it stay; nodes that already exist are skipped. Returns the number created.
        """
        nodes = list(nodes)
        if not self._wire_usable():
            created = 0
            for path, data in nodes:
                try:
                    self.create(path, data)
                    created += 1
                except ZkNodeExistsError:
                    pass
            return created
        acls = self._acls.for_batch([p for p, _ in nodes])
        return self._wire_call(lambda wire: wire.create_many(nodes, acls=acls)[0])

    def ensure_path(self, path: str) -> None:
        """Create `path` and its missing ancestors (persistent, empty), each with the ACL Keel gives it."""
        try:
            if path == "/" or self._client.exists(path) is not None:
                return
        except KazooException as e:
            raise _translate(e, path) from None
        self.ensure_path(zacl.parent(path))
        acls = self.acl_for(path)
        try:
            self._client.create(path, b"", acl=_kazoo_acl(acls))
        except NodeExistsError:
            return
        except KazooException as e:
            raise _translate(e, path) from None
        self._acls.created(path, acls)

    def set(self, path: str, data: bytes, version: int = -1) -> int:
        try:
            return self._client.set(path, data, version=version).version
        except KazooException as e:
            raise _translate(e, path) from None

    def delete(self, path: str, *, version: int = -1, recursive: bool = False) -> None:
        try:
            self._client.delete(path, version=version, recursive=recursive)
        except KazooException as e:
            raise _translate(e, path) from None

    def delete_tree(self, path: str, *, window: int = 2000) -> int:
        """Delete `path` and everything below it with pipelined calls (kazoo's recursive delete
        pays a round trip per node). Not atomic. Returns the number of nodes deleted."""
        levels: list[list[str]] = [[path]]
        while levels[-1]:
            below = self.children_many(levels[-1])
            levels.append([f"{p.rstrip('/')}/{c}" for p in levels[-1] for c in (below[p] or ())])
        count = 0
        for level in reversed(levels):
            for i in range(0, len(level), window):
                batch = [(p, self._client.delete_async(p)) for p in level[i:i + window]]
                for p, res in batch:
                    try:
                        res.get()
                        count += 1
                    except NoNodeError:
                        pass
                    except KazooException as e:
                        raise _translate(e, p) from None
        return count

    @property
    def write_timeout(self) -> float:
        s = self.settings
        return s.write_timeout if s.write_timeout is not None else s.session_timeout + s.connect_timeout

    def multi(self, ops: Iterable[Op]) -> list[str | None]:
        """Apply ops atomically (ZooKeeper multi). Raises the translated error of the op that failed (for an
        `absent` op: NodeExists on its path, see core.zk.ops), or ZkWriteOutcomeUnknownError when no answer came
        (within `write_timeout`, connection or session lost). Returns, per op, the path a create made."""
        ops = list(ops)
        run, origin = expand(ops, self.exists)
        tx = self._client.transaction()
        created: list[tuple[str, tuple[zacl.Acl, ...]]] = []
        for op, i in zip(run, origin):
            if op.kind == "create":
                acls = self.acl_for(op.path)
                tx.create(op.path, op.data, acl=_kazoo_acl(acls), ephemeral=op.ephemeral, sequence=op.sequence)
                if ops[i].kind == "create" and not op.ephemeral and not op.sequence:
                    created.append((op.path, acls))
            elif op.kind == "set":
                tx.set_data(op.path, op.data, version=op.version)
            elif op.kind == "delete":
                tx.delete(op.path, version=op.version)
            elif op.kind == "check":
                tx.check(op.path, op.version)
            else:
                raise ValueError(f"unknown op kind {op.kind!r}")
        faults.pause("before-multi")
        timeout = self.write_timeout
        deadline = time.monotonic() + timeout
        try:
            results = tx.commit_async().get(timeout=timeout)
        except (ConnectionLoss, SessionExpiredError, KazooTimeoutError) as e:
            # Sent, or queued to be sent on reconnect, and unanswered: committed or not, nobody can say here.
            why = {KazooTimeoutError: f"ZooKeeper did not answer within {timeout:g} s",
                   ConnectionLoss: "the connection to ZooKeeper was lost before it answered"}.get(
                type(e), "the ZooKeeper session expired before it answered")
            first = ops[0].path if ops else None
            raise ZkWriteOutcomeUnknownError(f"{why}: the write ({len(ops)} operations on {first} ...) may or may "
                                             "not have been applied", first,
                                             timed_out=isinstance(e, KazooTimeoutError), deadline=deadline) from None
        except KazooException as e:
            raise _translate(e, None) from None
        for op, res in zip(run, results):
            if isinstance(res, Exception) and not isinstance(res, RolledBackError):
                raise _translate(res, op.path)
        for path, acls in created:
            self._acls.created(path, acls)
        faults.pause("after-multi")
        made = dict(reversed(list(zip(origin, results))))  # each op's first result: what its create made
        return [made[i] if op.kind == "create" and isinstance(made[i], str) else None for i, op in enumerate(ops)]


def _kazoo_acl(acls: Sequence[zacl.Acl]) -> list[ACL]:
    return [ACL(a.perms, Id(a.scheme, a.id)) for a in acls]


