"""Start and stop a throwaway local ZooKeeper 3.8 server (standalone mode).

Used by ``make run`` (through the command line below) and by the test session (through :func:`start`).
Standard library only: this module must work before the virtualenv exists.

Everything a server needs lives in one directory ``data_dir``::

    data_dir/zoo.cfg    written by start() on every start
    data_dir/data/      ZooKeeper's dataDir (snapshots and transaction logs)
    data_dir/zk.log     stdout + stderr of the JVM (appended)
    data_dir/zk.pid     pid of the running JVM; removed by stop()

Command line::

    python -m sandbox.processes.zkserver start  --port 2181 --dir .run/zk   # returns once ZooKeeper answers; leaves it running
    python -m sandbox.processes.zkserver status --dir .run/zk               # exit 0 if running and healthy, 3 otherwise
    python -m sandbox.processes.zkserver stop   --dir .run/zk               # SIGTERM, then SIGKILL; fine if nothing runs

The server binds 127.0.0.1 only. The Debian package ``zookeeper`` (``make deps``) provides the jar; override the
locations with ``KEEL_ZK_JAR``, ``KEEL_ZK_CONF_DIR`` and ``KEEL_JAVA`` (or ``JAVA_HOME``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Mapping

from sandbox.processes.common import CHILDREN, HOST, free_port, pid_alive, started_at
from sandbox.processes.common import log_tail as _tail

__all__ = [
    "DEFAULT_JAR",
    "DEFAULT_CONF_DIR",
    "ZkServerError",
    "ZkPortInUse",
    "ZkProcess",
    "TlsServer",
    "start",
    "stop",
    "is_running",
    "status",
    "four_letter_word",
    "ruok",
    "free_port",
    "main",
]

DEFAULT_JAR = "/usr/share/java/zookeeper.jar"
DEFAULT_CONF_DIR = "/etc/zookeeper/conf_example"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# The Debian jar ships slf4j-api but no binding, so ZooKeeper would log nothing; slf4j-simple (same Debian
# package family, pulled in by `zookeeper`) sends its log to stderr, i.e. to zk.log. Optional.
_SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
# A TLS port needs ZooKeeper's Netty connection factory; the Debian jar's manifest names only part of Netty
# (no netty-codec, netty-resolver), so TLS mode adds these from the jar's directory when they are there.
_NETTY_JARS = ("netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar")

CFG_NAME = "zoo.cfg"
PID_NAME = "zk.pid"
LOG_NAME = "zk.log"
LOCK_NAME = ".zkserver.lock"
DATA_SUBDIR = "data"

_DEPS_HINT = "Install the system packages with `make deps` (Debian: apt-get install zookeeper default-jre-headless)."


class TlsServer:
    """Optional TLS port for start(): `secureClientPort` with Netty, PEM key store and trust store.

    ``keystore``: a PEM file with the server's private key (unencrypted PKCS#8) and certificate chain;
    ``truststore``: a PEM file with the CA certificates that sign client certificates. ``client_auth``: need |
    want | none (ZooKeeper's ssl.clientAuth). Client certificates become `x509:<subject DN>` identities.
    """

    def __init__(self, port: int, keystore: str | os.PathLike, truststore: str | os.PathLike, *,
                 client_auth: str = "need") -> None:
        self.port = port
        self.keystore = str(keystore)
        self.truststore = str(truststore)
        self.client_auth = client_auth

    def settings(self) -> dict[str, object]:
        return {
            "secureClientPortAddress": HOST,
            "secureClientPort": self.port,
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": self.keystore,
            "ssl.keyStore.type": "PEM",
            "ssl.trustStore.location": self.truststore,
            "ssl.trustStore.type": "PEM",
            "ssl.clientAuth": self.client_auth,
            "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        }


class ZkServerError(RuntimeError):
    """ZooKeeper could not be started, or the request makes no sense (e.g. another server owns the port)."""


class ZkPortInUse(ZkServerError):
    """The requested client port is already bound by another process (another ZooKeeper or anything else)."""


# --------------------------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------------------------



def four_letter_word(port: int, word: str = "ruok", *, host: str = HOST, timeout: float = 2.0) -> str | None:
    """Send a ZooKeeper four-letter word; return the reply, or None when nothing answers on the port."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(word.encode("ascii"))
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", "replace")


def ruok(port: int, *, host: str = HOST, timeout: float = 2.0) -> bool:
    """True when a ZooKeeper on the port answers ``ruok`` with ``imok`` and reports that it serves requests."""
    if four_letter_word(port, "ruok", host=host, timeout=timeout) != "imok":
        return False
    # `ruok` answers imok as soon as the socket is up; `srvr` tells whether the server actually serves.
    srvr = four_letter_word(port, "srvr", host=host, timeout=timeout) or ""
    return srvr.startswith("Zookeeper version")


def _port_bound(port: int) -> bool:
    """True when something listens on the port (a bind probe: no connection, so no noise in the owner's log)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # ignore TIME_WAIT leftovers of a stopped server
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def _find_java(java: str | None = None) -> str:
    candidates = [java, os.environ.get("KEEL_JAVA")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("java")
    if found:
        return found
    raise ZkServerError(f"No Java runtime found (`java` is not on PATH). {_DEPS_HINT}")


def _find_jar(jar: str | os.PathLike | None = None) -> Path:
    path = Path(jar or os.environ.get("KEEL_ZK_JAR") or DEFAULT_JAR)
    if not path.is_file():
        raise ZkServerError(f"ZooKeeper jar not found at {path}. {_DEPS_HINT}")
    return path



def _read_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def _read_port(data_dir: Path) -> int | None:
    try:
        for line in (data_dir / CFG_NAME).read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "clientPort":
                return int(value.strip())
    except (OSError, ValueError):
        pass
    return None




def _is_our_server(pid: int, data_dir: Path) -> bool:
    """The pid is alive and is a ZooKeeper started with this directory's zoo.cfg (guards against pid reuse)."""
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (not Linux): trust the pid file
    cfg = str(data_dir / CFG_NAME).encode()
    return MAIN_CLASS.encode() in cmdline and cfg in cmdline


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / LOCK_NAME, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_config(data_dir: Path, port: int, extra: Mapping[str, object] | None) -> Path:
    settings: dict[str, object] = {
        "tickTime": 2000,
        "dataDir": data_dir / DATA_SUBDIR,
        "clientPortAddress": HOST,
        "clientPort": port,
        "maxClientCnxns": 0,
        "forceSync": "no",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,mntr",
        "preAllocSize": 4096,  # KB; the default 64 MB per transaction log is wasteful for a sandbox
        "autopurge.snapRetainCount": 3,
        "autopurge.purgeInterval": 1,
    }
    settings.update(extra or {})
    cfg = data_dir / CFG_NAME
    body = "# Written by sandbox.processes.zkserver; rewritten on every start.\n"
    body += "".join(f"{k}={v}\n" for k, v in settings.items())
    tmp = cfg.with_suffix(".tmp")
    tmp.write_text(body)
    tmp.replace(cfg)
    return cfg


def _kill(pid: int, timeout: float) -> None:
    """SIGTERM, wait up to timeout, then SIGKILL; reaps the process when it is our child. Another process's server is
    followed by its start time as well as its pid, which a new process may get once it has exited (never killed)."""
    child = CHILDREN.pop(pid, None)
    born = started_at(pid)

    def gone() -> bool:
        return not pid_alive(pid) or (born is not None and started_at(pid) != born)

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child is not None:
            if child.poll() is not None:
                return
        elif gone():
            return
        time.sleep(0.05)
    if child is None and gone():
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
    else:
        deadline = time.monotonic() + 10
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.05)


# --------------------------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------------------------


class ZkProcess:
    """A ZooKeeper server on 127.0.0.1:port whose files live in data_dir.

    ``started`` is False when start() found this server already running (from the same dir on the same port);
    used as a context manager it then leaves the server running on exit, otherwise it stops it.
    """

    def __init__(self, port: int, data_dir: Path, pid: int, *, started: bool = True,
                 tls_port: int | None = None) -> None:
        self.port = port
        self.data_dir = Path(data_dir)
        self.pid = pid
        self.started = started
        self.tls_port = tls_port  # the secureClientPort when started with tls=

    host = HOST

    @property
    def connect(self) -> str:
        """Connect string for ZooKeeper clients, e.g. ``"127.0.0.1:2181"`` (append ``/chroot`` as needed)."""
        return f"{HOST}:{self.port}"

    @property
    def tls_connect(self) -> str | None:
        """Connect string of the TLS port (start(tls=...)), else None."""
        return f"{HOST}:{self.tls_port}" if self.tls_port else None

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    def is_running(self) -> bool:
        return is_running(self.data_dir)

    def stop(self, *, timeout: float = 10) -> bool:
        return stop(self.data_dir, timeout=timeout)

    def __enter__(self) -> "ZkProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            self.stop()

    def __repr__(self) -> str:
        return f"ZkProcess(connect={self.connect!r}, pid={self.pid}, data_dir={str(self.data_dir)!r})"


def start(
    port: int,
    data_dir: str | os.PathLike,
    *,
    timeout: float = 30,
    detach: bool = True,
    extra_config: Mapping[str, object] | None = None,
    java: str | None = None,
    jar: str | os.PathLike | None = None,
    heap: str = "1g",
    tls: TlsServer | None = None,
) -> ZkProcess:
    """Start a standalone ZooKeeper on 127.0.0.1:port with its files under data_dir; return once it serves.

    Already running from data_dir on that port: returns it (``started=False``). Running from data_dir on another
    port, or the port is bound by anything else: ZkServerError (ZkPortInUse for the latter). If the server does
    not come up within ``timeout`` seconds it is killed and ZkServerError carries the tail of zk.log.
    ``detach=True`` puts the JVM in its own session so it outlives the caller and ignores the caller's Ctrl-C.
    ``tls`` also opens a TLS port (see TlsServer); the plain port stays, and health checks use it.
    """
    data_dir = Path(data_dir).resolve()
    java_bin = _find_java(java)
    jar_path = _find_jar(jar)
    conf_dir = Path(os.environ.get("KEEL_ZK_CONF_DIR") or DEFAULT_CONF_DIR)

    with _locked(data_dir):
        pid = _read_pid(data_dir)
        if pid is not None and _is_our_server(pid, data_dir):
            running_port = _read_port(data_dir)
            if running_port == port:
                if _wait_healthy(port, pid, min(timeout, 10)):
                    return ZkProcess(port, data_dir, pid, started=False)
                raise ZkServerError(
                    f"ZooKeeper from {data_dir} (pid {pid}) is running on port {port} but does not answer; "
                    f"stop it first (stop --dir {data_dir}).\n--- {data_dir / LOG_NAME} ---\n"
                    + _tail(data_dir / LOG_NAME)
                )
            raise ZkServerError(
                f"ZooKeeper from {data_dir} is already running on port {running_port} (pid {pid}), not {port}; "
                f"stop it first (stop --dir {data_dir})."
            )
        if pid is not None:  # stale pid file
            (data_dir / PID_NAME).unlink(missing_ok=True)

        if _port_bound(port):
            if four_letter_word(port, "ruok", timeout=1.0) == "imok":
                raise ZkPortInUse(
                    f"Port {port} is already served by another ZooKeeper (not the one from {data_dir}); "
                    f"pick another port or stop that server."
                )
            raise ZkPortInUse(f"Port {port} on {HOST} is already in use by another process; pick another port.")

        (data_dir / DATA_SUBDIR).mkdir(parents=True, exist_ok=True)
        if tls is not None:
            extra_config = {**tls.settings(), **(extra_config or {})}
        cfg = _write_config(data_dir, port, extra_config)
        classpath = [str(conf_dir), str(jar_path)]
        if os.path.isfile(_SLF4J_BINDING):
            classpath.append(_SLF4J_BINDING)
        if tls is not None:
            classpath += [str(j) for j in (jar_path.resolve().parent / n for n in _NETTY_JARS) if j.is_file()]
        cmd = [
            java_bin,
            f"-Xmx{heap}",
            "-Djava.awt.headless=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
            "-cp",
            ":".join(classpath),
            MAIN_CLASS,
            str(cfg),
        ]
        log_path = data_dir / LOG_NAME
        with open(log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting ZooKeeper on {HOST}:{port} ===\n".encode())
            log.flush()
            proc = subprocess.Popen(
                cmd,
                cwd=data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=detach,
            )
        CHILDREN[proc.pid] = proc
        pid_tmp = data_dir / (PID_NAME + ".tmp")
        pid_tmp.write_text(f"{proc.pid}\n")
        pid_tmp.replace(data_dir / PID_NAME)

        if not _wait_healthy(port, proc.pid, timeout):
            exited = proc.poll()
            _kill(proc.pid, timeout=5)
            (data_dir / PID_NAME).unlink(missing_ok=True)
            tail = _tail(log_path)
            what = f"exited with status {exited}" if exited is not None else f"did not answer within {timeout:g}s"
            err_cls = ZkPortInUse if "Address already in use" in tail else ZkServerError
            raise err_cls(f"ZooKeeper on {HOST}:{port} {what}.\n--- last lines of {log_path} ---\n{tail}")
        return ZkProcess(port, data_dir, proc.pid, started=True, tls_port=tls.port if tls is not None else None)


def _wait_healthy(port: int, pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if not pid_alive(pid):
            return False
        if ruok(port, timeout=1.0):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def stop(data_dir: str | os.PathLike, *, timeout: float = 10) -> bool:
    """Stop the ZooKeeper started from data_dir (SIGTERM, then SIGKILL after ``timeout`` s).

    Idempotent: returns True if a server was stopped, False if none was running. Never signals a process that is
    not this directory's ZooKeeper (a stale pid file is just removed).
    """
    data_dir = Path(data_dir).resolve()
    if not data_dir.is_dir():
        return False
    with _locked(data_dir):
        pid = _read_pid(data_dir)
        stopped = False
        if pid is not None and _is_our_server(pid, data_dir):
            _kill(pid, timeout)
            stopped = True
        (data_dir / PID_NAME).unlink(missing_ok=True)
        return stopped


def is_running(data_dir: str | os.PathLike) -> bool:
    """True when the pid file in data_dir names a live ZooKeeper started from data_dir."""
    data_dir = Path(data_dir).resolve()
    pid = _read_pid(data_dir)
    return pid is not None and _is_our_server(pid, data_dir)


def status(data_dir: str | os.PathLike) -> dict:
    """``{"running", "healthy", "pid", "port", "connect", "data_dir", "log"}`` for the server of data_dir."""
    data_dir = Path(data_dir).resolve()
    pid = _read_pid(data_dir)
    running = pid is not None and _is_our_server(pid, data_dir)
    port = _read_port(data_dir)
    healthy = bool(running and port and ruok(port))
    return {
        "running": running,
        "healthy": healthy,
        "pid": pid if running else None,
        "port": port,
        "connect": f"{HOST}:{port}" if port else None,
        "data_dir": str(data_dir),
        "log": str(data_dir / LOG_NAME),
    }


# --------------------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.processes.zkserver", description="Throwaway local ZooKeeper for Keel's sandbox and tests."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_start = sub.add_parser("start", help="start ZooKeeper in the background and wait until it serves")
    p_start.add_argument("--port", type=int, default=2181)
    p_start.add_argument("--dir", default=".run/zk", help="directory for zoo.cfg, data, zk.log, zk.pid")
    p_start.add_argument("--timeout", type=float, default=30)
    p_stop = sub.add_parser("stop", help="stop the ZooKeeper started from --dir (no-op if none)")
    p_stop.add_argument("--dir", default=".run/zk")
    p_stop.add_argument("--timeout", type=float, default=10)
    p_status = sub.add_parser("status", help="exit 0 if the ZooKeeper of --dir runs and answers, 3 otherwise")
    p_status.add_argument("--dir", default=".run/zk")
    args = parser.parse_args(argv)

    if args.command == "start":
        try:
            zk = start(args.port, args.dir, timeout=args.timeout, detach=True)
        except ZkServerError as exc:
            print(f"zkserver: {exc}", file=sys.stderr)
            return 1
        if zk.started:
            print(f"ZooKeeper started on {zk.connect} (pid {zk.pid}, dir {zk.data_dir}, log {zk.log_path})")
        else:
            print(f"ZooKeeper already running on {zk.connect} (pid {zk.pid}, dir {zk.data_dir})")
        CHILDREN.pop(zk.pid, None)  # leave it running; we exit without reaping it
        return 0
    if args.command == "stop":
        port = _read_port(Path(args.dir).resolve())
        if stop(args.dir, timeout=args.timeout):
            print(f"ZooKeeper on {HOST}:{port} stopped (dir {Path(args.dir).resolve()})")
        else:
            print(f"ZooKeeper not running (dir {Path(args.dir).resolve()})")
        return 0
    st = status(args.dir)
    if st["running"]:
        state = "running" if st["healthy"] else "running but not answering"
        print(f"ZooKeeper {state} on {st['connect']} (pid {st['pid']}, dir {st['data_dir']})")
        return 0 if st["healthy"] else 3
    print(f"ZooKeeper not running (dir {st['data_dir']})")
    return 3


# --------------------------------------------------------------------------------------------------------------
# stalls (tests of ZooKeeper outages)
# --------------------------------------------------------------------------------------------------------------


def _signal_server(data_dir: str | os.PathLike, sig: int) -> int:
    data_dir = Path(data_dir).resolve()
    pid = _read_pid(data_dir)
    if pid is None or not _is_our_server(pid, data_dir):
        raise ZkServerError(f"no ZooKeeper is running from {data_dir}")
    os.kill(pid, sig)
    return pid


def pause(data_dir: str | os.PathLike) -> int:
    """SIGSTOP the ZooKeeper of data_dir: a stalled server (connections stay open, nothing answers, and its
    session clocks keep running). Returns its pid. Undo with resume()."""
    return _signal_server(data_dir, signal.SIGSTOP)


def resume(data_dir: str | os.PathLike) -> int:
    """SIGCONT the ZooKeeper of data_dir after pause(). Returns its pid."""
    return _signal_server(data_dir, signal.SIGCONT)


if __name__ == "__main__":
    sys.exit(main())
