"""Start and stop a throwaway PostgreSQL server on 127.0.0.1 (tests of the audit store, the several-replicas sandbox).

`start()` runs Debian's `initdb` into a fresh directory (a password-protected superuser, scram-sha-256 on loopback,
no Unix socket) and `postgres` on a free port, and returns once the server accepts connections; `stop()` ends it by
its pid and removes the directory. PostgreSQL refuses to run as root: as root, both run as the `postgres` OS user
(Debian's package creates it), and the data directory lives under /tmp where that user can reach it.

Standard library only. The binaries: $KEEL_PG_BIN, else initdb on PATH, else the newest /usr/lib/postgresql/*/bin
(`make deps` installs Debian's `postgresql`).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.processes.common import CHILDREN, HOST, free_port, log_tail, pid_alive

PG_BIN_ENV = "KEEL_PG_BIN"
OS_USER = "postgres"  # who runs the server when we are root
SUPERUSER = "keel"
_DEPS_HINT = "Install Debian's postgresql with `make deps` (apt-get install postgresql), or set KEEL_PG_BIN."


class PgServerError(RuntimeError):
    pass


@dataclass
class PgServer:
    pid: int
    port: int
    data_dir: Path
    user: str
    password: str

    def url(self, database: str = "postgres", *, user: str | None = None, password: str | None = None) -> str:
        who = user or self.user
        secret = self.password if password is None and user is None else password
        auth = f"{who}:{secret}" if secret else who
        return f"postgresql://{auth}@{HOST}:{self.port}/{database}"


def bin_dir() -> Path:
    named = os.environ.get(PG_BIN_ENV, "").strip()
    if named:
        return Path(named)
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                      if p.parent.parent.name.isdigit() else 0)
    if not versions:
        raise PgServerError(f"no PostgreSQL server binaries (initdb) found. {_DEPS_HINT}")
    return versions[-1].parent


def _as_user() -> dict:
    """Popen arguments that drop root to the postgres OS user (postgres will not run as root)."""
    if os.geteuid() != 0:
        return {}
    try:
        pw = pwd.getpwnam(OS_USER)
    except KeyError:
        raise PgServerError(f"running as root and there is no {OS_USER!r} OS user to run PostgreSQL as. "
                            f"{_DEPS_HINT}") from None
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": [],
            "env": {**os.environ, "HOME": pw.pw_dir, "USER": OS_USER, "LOGNAME": OS_USER}}


def _chown(path: Path) -> None:
    if os.geteuid() == 0:
        pw = pwd.getpwnam(OS_USER)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def start(*, port: int | None = None, timeout: float = 30.0) -> PgServer:
    """A new server on 127.0.0.1:`port` (a free one when None), with superuser `keel` and a random password."""
    bins, drop = bin_dir(), _as_user()
    base = Path(tempfile.mkdtemp(prefix="keel-pg-"))
    os.chmod(base, 0o755)
    data, pwfile, log = base / "data", base / "pw", base / "postgres.log"
    password = secrets.token_hex(12)
    pwfile.write_text(password + "\n")
    log.touch()
    for p in (base, pwfile, log):
        _chown(p)
    done = subprocess.run([str(bins / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}",
                           "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"],
                          capture_output=True, text=True, **drop)
    pwfile.unlink()
    if done.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        raise PgServerError(f"initdb failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    port = port or free_port()
    # Throwaway data: no fsync; loopback only; no Unix socket (nothing to clean up, nothing shared).
    args = [str(bins / "postgres"), "-D", str(data), "-p", str(port), "-c", f"listen_addresses={HOST}",
            "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off", "-c", "max_connections=200"]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, **drop)
    CHILDREN[proc.pid] = proc
    server = PgServer(proc.pid, port, base, SUPERUSER, password)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stop(server)
            raise PgServerError(f"postgres exited with {proc.returncode}:\n{log_tail(log)}")
        if _accepts(bins, port):
            return server
        time.sleep(0.1)
    stop(server)
    raise PgServerError(f"postgres did not accept connections on {HOST}:{port} within {timeout:.0f} s:\n"
                        f"{log_tail(log)}")


def _accepts(bins: Path, port: int) -> bool:
    ready = bins / "pg_isready"
    if ready.exists():
        return subprocess.run([str(ready), "-q", "-h", HOST, "-p", str(port), "-t", "1"]).returncode == 0
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def stop(server: PgServer, *, timeout: float = 20.0) -> None:
    """Fast shutdown (SIGINT) of the server by its pid, SIGKILL if it lingers; then its directory goes."""
    if pid_alive(server.pid):
        try:
            os.kill(server.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while pid_alive(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(server.pid):
            try:
                os.killpg(server.pid, signal.SIGKILL)  # its own session: the postmaster and its backends
            except ProcessLookupError:
                pass
    child = CHILDREN.pop(server.pid, None)
    if child is not None:
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    shutil.rmtree(server.data_dir, ignore_errors=True)


__all__ = ["PgServer", "PgServerError", "bin_dir", "start", "stop"]
