"""Whether a process still runs, for every runner here (ZooKeeper, the ensemble, the Kafka brokers).

Standard library only: zkserver imports it and runs under the system python before the venv exists.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Popen objects of the servers this Python process started, by pid: lets a runner reap its own children, and
# pid_alive() ask the child itself (a finished child is a zombie until reaped).
CHILDREN: dict[int, subprocess.Popen] = {}


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


__all__ = ["CHILDREN", "pid_alive"]
