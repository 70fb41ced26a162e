"""Files and findings the CLI commands share: inputs read with bounds, outputs written atomically, the
unreadable znodes of a snapshot named in errors.

Every path problem becomes a typed error naming the file and the option (exit 1 with `error: ...`), checked
before the work it would otherwise end: a missing output directory is found before a 200,000-partition
cluster is read, an oversized input from its size before it is read. Imports nothing from core.cli, so that
every command module (and the core.fleet and sandbox commands) can use it without an import cycle.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core.errors import InputFileError, KeelError, OutputPathError, TooLargeError
from core.model import ClusterSnapshot

__all__ = ["check_input", "read_input", "check_output", "check_output_dir", "write_output", "naming_problems",
           "print_problems"]


def check_input(path: str, option: str, *, limit: int, what: str, why: str | None = None) -> Path:
    """Refuse a missing file, a directory, or a file over `limit` bytes (from its size, before reading it)."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputFileError(f"{option} {p}: file does not exist", str(p)) from None
    except OSError as e:
        raise InputFileError(f"{option} {p}: cannot be read: {e.strerror or e}", str(p)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFileError(f"{option} {p}: is a directory, not a {what} file", str(p))
    if stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise _too_large(p, st.st_size, limit, what, why)
    return p


def read_input(path: str, option: str, *, limit: int, what: str, why: str | None = None) -> bytes:
    """The bytes of an input file, checked as check_input does; a pipe is read up to `limit` bytes only."""
    p = check_input(path, option, limit=limit, what=what, why=why)
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputFileError(f"{option} {p}: cannot be read: {e.strerror or e}", str(p)) from None
    if len(data) > limit:
        raise _too_large(p, None, limit, what, why)
    return data


def _too_large(p: Path, size: int | None, limit: int, what: str, why: str | None) -> TooLargeError:
    shown = f"{size:,} bytes" if size is not None else "larger than that"
    return TooLargeError(f"{what} file {p} is {shown}; Keel reads at most {limit // 2**20} MiB", hint=why)


def check_output(path: str | None, option: str) -> None:
    """Refuse, before any work, an output whose directory is missing (or not a directory) or that is a directory."""
    if path is None or path == "-":
        return
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{option} {p}: is a directory; give a file name", str(p))
    parent = p.parent
    try:
        st = parent.stat()
    except FileNotFoundError:
        raise OutputPathError(f"{option} {p}: directory {parent} does not exist", str(p),
                              hint=f"create it first (mkdir -p {parent})") from None
    except NotADirectoryError:
        raise OutputPathError(f"{option} {p}: a part of {parent} is not a directory", str(p)) from None
    except OSError as e:
        raise OutputPathError(f"{option} {p}: cannot use {parent}: {e.strerror or e}", str(p)) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{option} {p}: {parent} is not a directory", str(p))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {p}: directory {parent} is not writable", str(p))


def check_output_dir(path: str, option: str) -> None:
    """An output directory that is created if needed: it must not be a file, and its nearest existing
    ancestor must be a writable directory."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{option} {p}: is a file, not a directory", str(p))
    ancestor = p
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(f"{option} {p}: {ancestor} is not a directory", str(p))
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {p}: directory {ancestor} is not writable", str(p))


def write_output(path: str, text: str, option: str) -> None:
    """Write `text` (plus a newline) to `path` atomically, or print it for "-"; never half a file."""
    if path == "-":
        print(text)
        return
    check_output(path, option)
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(text + "\n")
        tmp.replace(out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputPathError(f"{option} {out}: cannot be written: {e.strerror or e}", str(out)) from None


@contextmanager
def naming_problems(snapshot: ClusterSnapshot) -> Iterator[None]:
    """Add the snapshot's unreadable znodes to an error raised inside: an unreadable broker registration
    shows up as "Not all brokers have rack information", which alone does not say where to look."""
    try:
        yield
    except KeelError as e:
        if snapshot.problems and "unreadable znode" not in e.message:
            shown = "; ".join(f"{p.path} ({p.error})" for p in snapshot.problems[:5])
            more = len(snapshot.problems) - 5
            e.message += (f" [the cluster has {len(snapshot.problems)} unreadable znode(s), which may be why: "
                          f"{shown}{f'; and {more} more' if more > 0 else ''}]")
        raise


def print_problems(snapshot: ClusterSnapshot) -> None:
    for problem in snapshot.problems:
        print(f"warning: {problem.path}: {problem.error}", file=sys.stderr)


