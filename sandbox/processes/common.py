"""What every runner here shares (ZooKeeper, the ensemble, the Kafka brokers): whether a process still runs, the
children this Python process started, a free loopback port, the last lines of a log.

Standard library only: zkserver imports it and runs under the system python before the venv exists.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

HOST = "127.0.0.1"  # every server of the sandbox binds loopback

# Popen objects of the servers this Python process started, by pid: lets a runner reap its own children, and
# pid_alive() ask the child itself (a finished child is a zombie until reaped).
CHILDREN: dict[int, subprocess.Popen] = {}


def started_at(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), None when it is gone or there is
    no /proc. With it a waiting runner tells "still running" from "its pid now belongs to another process": pids
    come round again (pid_max is 32,768 here) and a busy test run reuses one within minutes."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie is dead for our purposes. PermissionError: alive, someone else's."""
    child = CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a server's log, for an error message."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return "(no log)"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


__all__ = ["CHILDREN", "HOST", "free_port", "log_tail", "pid_alive"]
