"""A minimal ZooKeeper wire-protocol client for bulk reads (and bulk seeding).

kazoo sends one request per turn of its connection loop, which caps it near 5,000 reads a
second however many requests are in flight. Loading a 200,000-partition cluster needs more, so
bulk reads (no watches) go through this small synchronous client instead: it writes a window of
getData / getChildren requests in one `sendall` and parses the replies straight out of a receive
buffer. It speaks only what reading needs: connect (chroot, digest auth, TLS), getData,
getChildren, multiRead (ZooKeeper 3.6+: a thousand getData in one request; read_parallel), create (for bulk
seeding), ping, close. Watches and all other writes stay with kazoo (core.zk.session).
"""

from __future__ import annotations

import logging
import queue
import socket
import ssl
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

from core.errors import KeelError, ZkNoNodeError, ZkOperationError, ZooKeeperAuthError, ZooKeeperUnreachableError
from core.zk.acl import Acl

log = logging.getLogger(__name__)

_OP_CREATE = 1
_OP_GET_DATA = 4
_OP_GET_CHILDREN = 8
_OP_SYNC = 9
_OP_PING = 11
_OP_AUTH = 100
_OP_MULTI_READ = 22  # ZooKeeper 3.6+ (ZOOKEEPER-3402): many reads in one request, answered in one reply
_OP_CLOSE = -11
_OP_ERROR = -1
_XID_PING = -2
_XID_AUTH = -4
_XID_WATCH = -1
_ERR_NONODE = -101
_ERR_NOAUTH = -102
_ERR_NODEEXISTS = -110
_ERR_AUTHFAILED = -115
# world:anyone with all permissions: what kazoo and Kafka (without zookeeper.set.acl) create with.
_OPEN_ACL = struct.pack(">iii5si6s", 1, 31, 5, b"world", 6, b"anyone")


def encode_acl(acls: Sequence[Acl]) -> bytes:
    """A jute vector<ACL>: count, then per entry perms, scheme, id."""
    out = [struct.pack(">i", len(acls))]
    for a in acls:
        scheme, ident = a.scheme.encode(), a.id.encode()
        out.append(struct.pack(">ii", a.perms, len(scheme)) + scheme + struct.pack(">i", len(ident)) + ident)
    return b"".join(out)

_I = struct.Struct(">i")
_REQ = struct.Struct(">iii")  # frame length, xid, op
_REPLY = struct.Struct(">iqi")  # xid, zxid, err
_STAT_TAIL = struct.Struct(">i8xq")  # a Stat's version, (cversion, aversion), ephemeralOwner
_MULTI_HEAD = struct.Struct(">i?i")  # MultiHeader: type, done, err
_MULTI_GET = _MULTI_HEAD.pack(_OP_GET_DATA, False, -1)
_MULTI_END = _MULTI_HEAD.pack(-1, True, -1)
# Servers that answered a multiRead probe with anything but a multiRead reply (ZooKeeper < 3.6): read one by one.
_NO_MULTI_READ: set[tuple[str, int]] = set()
_STAT_LEN = 68


@dataclass(frozen=True)
class WireSettings:
    hosts: tuple[tuple[str, int], ...]
    chroot: str | None = None
    digest: str | None = None
    tls_context: ssl.SSLContext | None = None
    connect_timeout: float = 10.0
    session_timeout_ms: int = 30_000


class WireReader:
    """One ZooKeeper session used only for pipelined reads. Not thread-safe; close() when done."""

    def __init__(self, settings: WireSettings):
        self.settings = settings
        self._prefix = settings.chroot or ""
        self._sock = self._connect()
        self._buf = bytearray()
        self._pos = 0
        self._xid = 0
        self._last_send = time.monotonic()
        self._multi_read: bool | None = None

    # --- connection ------------------------------------------------------------------------

    def _connect(self) -> socket.socket:
        s = self.settings
        errors = []
        deadline = time.monotonic() + s.connect_timeout
        for host, port in s.hosts:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                sock = socket.create_connection((host.strip("[]"), port), timeout=left)
                if s.tls_context is not None:
                    sock = s.tls_context.wrap_socket(sock, server_hostname=host.strip("[]"))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._sock = sock
                self._buf, self._pos = bytearray(), 0
                self._handshake(sock)
                self.server = (host, port)
                sock.settimeout(max(s.session_timeout_ms / 1000, 5.0))
                return sock
            except ZooKeeperAuthError:
                raise
            except (OSError, ssl.SSLError, ConnectionError) as e:
                errors.append(f"{host}:{port}: {e}")
        raise ZooKeeperUnreachableError(
            f"could not connect to ZooKeeper at {','.join(f'{h}:{p}' for h, p in s.hosts)} within "
            f"{s.connect_timeout:g} s ({'; '.join(errors) or 'timed out'})"
        )

    def _handshake(self, sock: socket.socket) -> None:
        body = struct.pack(">iqiqi16s?", 0, 0, self.settings.session_timeout_ms, 0, 16, b"\0" * 16, False)
        sock.sendall(_I.pack(len(body)) + body)
        frame = self._read_frame()
        if len(frame) < 20:
            raise ConnectionError("short connect response")
        _, timeout_ms, session_id = struct.unpack_from(">iiq", frame)
        if session_id == 0 or timeout_ms <= 0:
            raise ConnectionError("ZooKeeper refused the session (is the server in read-only or standalone startup?)")
        if self.settings.digest:
            scheme, auth = b"digest", self.settings.digest.encode()
            body = struct.pack(">iii", _XID_AUTH, _OP_AUTH, 0) + _I.pack(len(scheme)) + scheme + _I.pack(len(auth)) + auth
            sock.sendall(_I.pack(len(body)) + body)
            xid, _, err = _REPLY.unpack_from(self._read_frame())
            if err != 0:
                raise ZooKeeperAuthError("ZooKeeper rejected the digest credentials")

    def close(self) -> None:
        try:
            self._sock.sendall(_REQ.pack(8, self._next_xid(), _OP_CLOSE))
        except OSError:
            pass
        finally:
            self._sock.close()

    def __enter__(self) -> "WireReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- framing ---------------------------------------------------------------------------

    def _fill(self, need: int) -> None:
        while len(self._buf) - self._pos < need:
            if self._pos > (1 << 20):  # compact so the buffer doesn't grow without bound
                del self._buf[: self._pos]
                self._pos = 0
            chunk = self._sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("ZooKeeper closed the connection")
            self._buf += chunk

    def _read_frame(self) -> bytes:
        self._fill(4)
        (length,) = _I.unpack_from(self._buf, self._pos)
        self._fill(4 + length)
        start = self._pos + 4
        self._pos = start + length
        # A copy, not a view: a live view would stop the buffer from growing.
        return bytes(self._buf[start:start + length])

    def _next_xid(self) -> int:
        self._xid += 1
        return self._xid

    def _request(self, op: int, path: str, data: bytes | None = None) -> tuple[int, bytes]:
        xid = self._next_xid()
        full = (self._prefix + path) if path != "/" or not self._prefix else self._prefix
        raw = full.encode()
        if op == _OP_CREATE:  # data, ACL vector, flags: pre-encoded by create_many
            tail = data
        else:  # path, watch=false
            tail = b"\0"
        body = _I.pack(len(raw)) + raw + tail
        return xid, _REQ.pack(8 + len(body), xid, op) + body

    def _reply(self, expected_xid: int) -> tuple[int, bytes]:
        while True:
            frame = self._read_frame()
            xid, _, err = _REPLY.unpack_from(frame)
            if xid in (_XID_PING, _XID_WATCH):
                continue
            if xid != expected_xid:
                raise ConnectionError(f"out-of-order ZooKeeper reply: expected xid {expected_xid}, got {xid}")
            return err, frame[16:]

    def _keepalive(self) -> None:
        # A consumer may pause between windows: ping before the session's idle limit. A reader idle for
        # longer than the session timeout has lost its session; say so, and the caller reconnects.
        idle = time.monotonic() - self._last_send
        if idle > self.settings.session_timeout_ms / 1000 * 0.9:
            raise ConnectionError(f"reader idle for {idle:.0f} s: its ZooKeeper session has expired")
        if idle > self.settings.session_timeout_ms / 3000:
            self._sock.sendall(_REQ.pack(8, _XID_PING, _OP_PING))
            self._last_send = time.monotonic()

    def _send_window(self, op: int, batch: Sequence[str], payloads: Sequence[bytes] | None) -> list[int]:
        self._keepalive()
        xids, out = [], []
        for i, path in enumerate(batch):
            xid, packet = self._request(op, path, payloads[i] if payloads is not None else None)
            xids.append(xid)
            out.append(packet)
        self._sock.sendall(b"".join(out))
        self._last_send = time.monotonic()
        return xids

    def _pipeline(self, op: int, paths: Sequence[str], window: int,
                  payloads: Sequence[bytes] | None = None) -> Iterator[tuple[str, int, bytes]]:
        """Double-buffered: window k+1 is on the wire while the replies of window k are parsed."""
        windows = [(paths[i:i + window], None if payloads is None else payloads[i:i + window])
                   for i in range(0, len(paths), window)]
        in_flight = self._send_window(op, *windows[0]) if windows else []
        for k, (batch, _) in enumerate(windows):
            current = in_flight
            if k + 1 < len(windows):
                in_flight = self._send_window(op, *windows[k + 1])
            for path, xid in zip(batch, current):
                err, body = self._reply(xid)
                if err == _ERR_NOAUTH:
                    raise ZooKeeperAuthError(f"ZooKeeper denied access to {path}: check the digest credentials and ACLs")
                if err not in (0, _ERR_NONODE) and not (op == _OP_CREATE and err == _ERR_NODEEXISTS):
                    raise ZkOperationError(f"ZooKeeper error {err} on {path}", path)
                yield path, err, body

    # --- reads -----------------------------------------------------------------------------

    def sync(self, path: str = "/", *, timeout: float | None = None) -> None:
        """ZooKeeper's sync: the server this session talks to catches up with the leader before it
        answers, so the reads that follow see every write committed before the call (from any session).
        With `timeout`: no answer within it closes the reader and raises ZooKeeperUnreachableError."""
        self._keepalive()
        raw = ((self._prefix + path) if path != "/" or not self._prefix else self._prefix).encode()
        xid = self._next_xid()
        body = _I.pack(len(raw)) + raw
        self._sock.sendall(_REQ.pack(8 + len(body), xid, _OP_SYNC) + body)
        self._last_send = time.monotonic()
        saved = self._sock.gettimeout()
        if timeout is not None:
            self._sock.settimeout(timeout)
        try:
            err, _ = self._reply(xid)
        except TimeoutError:  # a late answer would be taken for the next request's: this reader is done
            self._sock.close()
            raise ZooKeeperUnreachableError(f"ZooKeeper did not answer a sync within {timeout:g} s") from None
        self._sock.settimeout(saved)
        if err not in (0, _ERR_NONODE):
            raise ZkOperationError(f"ZooKeeper error {err} on sync of {path}", path)

    def get_many(self, paths: Sequence[str], window: int = 2000) -> Iterator[tuple[str, bytes | None, int, int]]:
        """Yields (path, data or None if absent, version, ephemeral_owner) in the order of `paths`."""
        for chunk in self.get_chunks(paths, window):
            yield from chunk

    def get_chunks(self, paths: Sequence[str], window: int = 2000) -> Iterator[list[tuple[str, bytes | None, int, int]]]:
        """get_many a window at a time: one list of (path, data, version, ephemeral_owner) per window, in order.

        Double-buffered like _pipeline (window k+1 is on the wire while window k is parsed), but the replies
        are parsed in one tight loop straight out of the receive buffer: a state read is ~100 bytes, and at
        200,000 of them the per-reply function calls and copies of the generic path cost more than ZooKeeper."""
        windows = [paths[i:i + window] for i in range(0, len(paths), window)]
        in_flight = self._send_window(_OP_GET_DATA, windows[0], None) if windows else []
        for k, batch in enumerate(windows):
            current = in_flight
            if k + 1 < len(windows):
                in_flight = self._send_window(_OP_GET_DATA, windows[k + 1], None)
            yield self._get_replies(batch, current[0])

    def _get_replies(self, batch: Sequence[str], first_xid: int) -> list[tuple[str, bytes | None, int, int]]:
        out: list[tuple[str, bytes | None, int, int]] = []
        append = out.append
        buf = self._buf
        stat_tail, length_of = _STAT_TAIL.unpack_from, _I.unpack_from
        xid_expected = first_xid
        i, n = 0, len(batch)
        while i < n:
            pos = self._pos
            avail = len(buf) - pos
            if avail < 4 or avail < 4 + length_of(buf, pos)[0]:
                self._fill(4 if avail < 4 else 4 + length_of(buf, pos)[0])
                continue
            (length,) = length_of(buf, pos)
            start = pos + 4
            self._pos = start + length
            xid, _, err = _REPLY.unpack_from(buf, start)
            if xid == _XID_PING or xid == _XID_WATCH:
                continue
            path = batch[i]
            if xid != xid_expected:
                raise ConnectionError(f"out-of-order ZooKeeper reply: expected xid {xid_expected}, got {xid}")
            xid_expected += 1
            i += 1
            if err:
                if err == _ERR_NONODE:
                    append((path, None, -1, 0))
                    continue
                if err == _ERR_NOAUTH:
                    raise ZooKeeperAuthError(f"ZooKeeper denied access to {path}: check the digest credentials and ACLs")
                raise ZkOperationError(f"ZooKeeper error {err} on {path}", path)
            (size,) = length_of(buf, start + 16)
            body = start + 20
            if size < 0:
                data, stat = b"", body
            else:
                data, stat = bytes(buf[body:body + size]), body + size
            version, owner = stat_tail(buf, stat + 32)
            append((path, data, version, owner))
        return out

    # --- multiRead (ZooKeeper 3.6+) --------------------------------------------------------

    def multi_read(self) -> bool:
        """Whether the server answers multiRead: asked once per server with a one-read multiRead of the root.
        A server that closes the connection on it is remembered as without (the caller reconnects)."""
        if self._multi_read is None:
            if self.server in _NO_MULTI_READ:
                self._multi_read = False
                return False
            try:
                err, body = self._reply(self._send_multi(["/"]))
                self._multi_read = err == 0 and len(body) > _MULTI_HEAD.size and len(_parse_multi(body, ["/"])) == 1
            except KeelError:  # a multiRead reply, refusing the read: the server has multiRead
                self._multi_read = True
            except (OSError, ConnectionError, struct.error):
                _NO_MULTI_READ.add(self.server)
                raise
            if not self._multi_read:
                log.info("ZooKeeper at %s:%s has no multiRead (< 3.6): reading znodes one by one", *self.server)
                _NO_MULTI_READ.add(self.server)
        return self._multi_read

    def _send_multi(self, batch: Sequence[str]) -> int:
        self._keepalive()
        xid = self._next_xid()
        prefix = self._prefix
        parts = []
        for path in batch:  # MultiHeader + GetDataRequest(path, watch=false) per read, then the end header
            raw = ((prefix + path) if path != "/" or not prefix else prefix).encode()
            parts.append(_MULTI_GET + _I.pack(len(raw)) + raw + b"\0")
        parts.append(_MULTI_END)
        body = b"".join(parts)
        self._sock.sendall(_REQ.pack(8 + len(body), xid, _OP_MULTI_READ) + body)
        self._last_send = time.monotonic()
        return xid

    def multi_get_chunks(self, paths: Sequence[str], batch: int = 1000, depth: int = 4) -> Iterator[Chunk]:
        """get_chunks through multiRead: `batch` reads per request, `depth` requests in flight. ZooKeeper answers
        a multiRead with one reply, so it serves 200,000 state reads for ~1/10 of the CPU that single getData
        requests cost it (and this side parses a few hundred replies, not 200,000). 1,000 paths of at most
        ~300 bytes (Kafka's 249-character topic names) stay far below the server's 1 MiB request limit."""
        batches = [paths[i:i + batch] for i in range(0, len(paths), batch)]
        in_flight: deque[tuple[int, Sequence[str]]] = deque()
        k = 0
        while k < len(batches) or in_flight:
            while k < len(batches) and len(in_flight) < depth:
                in_flight.append((self._send_multi(batches[k]), batches[k]))
                k += 1
            xid, current = in_flight.popleft()
            err, body = self._reply(xid)
            try:
                if err != 0:
                    raise ZkOperationError(f"ZooKeeper error {err} on a multiRead from {current[0]}", current[0])
                chunk = _parse_multi(body, current)
            except KeelError:  # read the replies still in flight first: the connection stays in step
                for xid, _ in in_flight:
                    self._reply(xid)
                raise
            yield chunk

    def children_many(self, paths: Sequence[str], window: int = 5000) -> Iterator[tuple[str, list[str] | None]]:
        for path, err, body in self._pipeline(_OP_GET_CHILDREN, paths, window):
            if err == _ERR_NONODE:
                yield path, None
                continue
            (count,) = _I.unpack_from(body)
            names, off = [], 4
            for _ in range(count):
                (n,) = _I.unpack_from(body, off)
                names.append(body[off + 4:off + 4 + n].decode())
                off += 4 + n
            yield path, names

    def create_many(self, nodes: Sequence[tuple[str, bytes]], window: int = 5000, *,
                    acls: Sequence[Sequence[Acl]] | None = None) -> tuple[int, int]:
        """Pipelined persistent creates, parents first. Returns (created, already existing).

        `acls`: the ACL of each node (same order as `nodes`); None: every node open (world:anyone ALL)."""
        if acls is not None and len(acls) != len(nodes):
            raise ValueError("create_many: one ACL per node")
        encoded: dict[tuple[Acl, ...], bytes] = {}

        def acl_bytes(i: int) -> bytes:
            if acls is None:
                return _OPEN_ACL
            key = tuple(acls[i])
            if key not in encoded:
                encoded[key] = encode_acl(key)
            return encoded[key]

        tails = [_I.pack(len(d)) + d + acl_bytes(i) + _I.pack(0) for i, (_, d) in enumerate(nodes)]
        created = existed = 0
        orphans = []
        for path, err, _ in self._pipeline(_OP_CREATE, [p for p, _ in nodes], window, tails):
            if err == 0:
                created += 1
            elif err == _ERR_NONODE:  # the parent is missing: not "already there"
                orphans.append(path)
            else:
                existed += 1
        if orphans:  # raised once every reply is read, so the connection stays usable
            raise ZkNoNodeError(f"cannot create {orphans[0]}: its parent does not exist"
                                + (f" (and {len(orphans) - 1} more nodes)" if len(orphans) > 1 else ""), orphans[0])
        return created, existed


def _parse_multi(body: bytes, batch: Sequence[str]) -> "Chunk":
    """A MultiResponse of getData results, one per path of `batch`: (path, data or None, version, owner)."""
    head, size_of, stat_tail = _MULTI_HEAD.unpack_from, _I.unpack_from, _STAT_TAIL.unpack_from
    out: Chunk = []
    append = out.append
    off = 0
    for path in batch:
        kind, _, _ = head(body, off)
        off += 9
        if kind == _OP_GET_DATA:
            (size,) = size_of(body, off)
            off += 4
            if size < 0:
                data = b""
            else:
                data = body[off:off + size]
                off += size
            version, owner = stat_tail(body, off + 32)
            off += _STAT_LEN
            append((path, data, version, owner))
        elif kind == _OP_ERROR:
            (err,) = size_of(body, off)
            off += 4
            if err == _ERR_NONODE:
                append((path, None, -1, 0))
            elif err == _ERR_NOAUTH:
                raise ZooKeeperAuthError(f"ZooKeeper denied access to {path}: check the digest credentials and ACLs")
            else:
                raise ZkOperationError(f"ZooKeeper error {err} on {path}", path)
        else:
            raise ConnectionError(f"unexpected result type {kind} in a multiRead reply")
    if not head(body, off)[1]:
        raise ConnectionError("a multiRead reply with more results than reads")
    return out


# --- several sessions at once -------------------------------------------------------------------

# One session's replies come back at ~25,000 a second whatever the window (ZooKeeper serves each connection's
# requests one at a time and wakes its selector per reply); eight sessions to the same server read 200,000 state
# znodes ~3x faster and cost ZooKeeper less CPU in all. Each extra session is opened for one read and closed after.
PARALLEL_SESSIONS = 8
PER_SESSION_MIN = 5000  # fewer paths than this per session: not worth a connection
_SIBLING_CONNECT_TIMEOUT = 3.0

Chunk = list[tuple[str, bytes | None, int, int]]


def read_parallel(primary: WireReader, paths: Sequence[str], consume: Callable[[int, Chunk], None], *,
                  sessions: int = PARALLEL_SESSIONS, window: int = 1000) -> None:
    """Read `paths` (no watches) in bulk; consume(offset, chunk) is called on the calling thread with each batch of
    (path, data or None, version, owner) as it arrives, `offset` being the chunk's first index in `paths`, so
    decoding overlaps the reads.

    ZooKeeper 3.6+: multiRead, a thousand reads per request, on `primary` alone. Older servers: `primary` and up to
    sessions - 1 more sessions, each a contiguous slice, pipelined (slices interleave). The extra sessions connect
    to the server `primary` is on: that server's tree only moves forward, so they see at least what `primary`
    sees (a sync on `primary` covers them). One that cannot connect (a server at maxClientCnxns, say) is done
    without: its share goes to the others."""
    paths = list(paths)
    if not paths:
        return
    if primary.multi_read():  # one session is plenty: ZooKeeper answers a thousand reads at once
        offset = 0
        for chunk in primary.multi_get_chunks(paths):
            consume(offset, chunk)
            offset += len(chunk)
        return
    wanted = max(1, min(sessions, len(paths) // PER_SESSION_MIN))
    readers = [primary]
    if wanted > 1:
        sibling = replace(primary.settings, hosts=(primary.server,),
                          connect_timeout=min(primary.settings.connect_timeout, _SIBLING_CONNECT_TIMEOUT))
        for _ in range(wanted - 1):
            try:
                readers.append(WireReader(sibling))
            except KeelError as e:
                log.info("bulk read with %d session(s): another could not connect (%s)", len(readers), e)
                break
    try:
        if len(readers) == 1:
            offset = 0
            for chunk in primary.get_chunks(paths, window):
                consume(offset, chunk)
                offset += len(chunk)
            return
        _fan_out(readers, paths, consume, window)
    finally:
        for r in readers[1:]:
            r.close()


def _fan_out(readers: list[WireReader], paths: list[str], consume: Callable[[int, Chunk], None], window: int) -> None:
    replies: queue.SimpleQueue = queue.SimpleQueue()
    done = object()
    step = -(-len(paths) // len(readers))

    def work(reader: WireReader, start: int) -> None:
        try:
            offset = start
            for chunk in reader.get_chunks(paths[start:start + step], window):
                replies.put((offset, chunk))
                offset += len(chunk)
        except BaseException as e:  # handed to the calling thread, which raises the first one
            replies.put((start, e))
        finally:
            replies.put((start, done))

    threads = [threading.Thread(target=work, args=(r, i * step), name=f"keel-zk-read-{i}", daemon=True)
               for i, r in enumerate(readers)]
    for t in threads:
        t.start()
    error: BaseException | None = None
    running = len(threads)
    while running:
        offset, item = replies.get()
        if item is done:
            running -= 1
        elif isinstance(item, BaseException):
            error = error or item
        elif error is None:
            try:
                consume(offset, item)
            except BaseException as e:  # the readers still finish their windows: their sockets stay in step
                error = e
    for t in threads:
        t.join()
    if error is not None:
        raise error
