"""Issue 17: the container image, checked without a Docker engine. `.dockerignore` keeps the host's virtualenv, runtime
state (the action history) and secrets out of `COPY . .`; the image runs as a non-root user and writes only RUN_DIR.

The matcher follows Docker's rules for .dockerignore (Go's filepath.Match per path segment, `**` for any number of
directories, a later `!pattern` re-including, a matched directory excluding everything under it)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def patterns() -> list[tuple[bool, str]]:
    out = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        out.append((negate, line.lstrip("!").strip().strip("/")))
    return out


def _match(pattern: str, path: str) -> bool:
    """Does `pattern` match `path` or one of its parent directories (segment-wise, ** = any depth)?"""
    pat, parts = pattern.split("/"), path.split("/")

    def rec(i: int, j: int) -> bool:
        if i == len(pat):
            return True  # the pattern matched a prefix: a directory, so everything under it
        if j == len(parts):
            return False
        if pat[i] == "**":
            return any(rec(i + 1, k) for k in range(j, len(parts) + 1))
        return fnmatch.fnmatchcase(parts[j], pat[i]) and rec(i + 1, j + 1)

    return rec(0, 0)


def ignored(path: str) -> bool:
    result = False
    for negate, pattern in patterns():
        if _match(pattern, path):
            result = not negate
    return result


@pytest.mark.parametrize("path", [
    ".venv/bin/python", ".venv/lib/python3.11/site-packages/x.py",
    ".run/keel.sqlite", ".run/zk/data/version-2/log.1", ".run/fleet/store/part-0.parquet",
    ".streamlit/secrets.toml", "deploy/secrets.toml",
    ".git/HEAD", "core/__pycache__/store.cpython-311.pyc", "dashboard/views/__pycache__/x.pyc",
    "bench/out/figures.json", "keel.egg-info/PKG-INFO", "spark-warehouse/t/part-0",
])
def test_dockerignore_keeps_host_state_and_secrets_out(path):
    assert ignored(path), f"{path} would be copied into the image"


@pytest.mark.parametrize("path", [
    "core/store.py", "dashboard/streamlit_app.py", "scripts/run.sh", "requirements.txt", "pyproject.toml",
    "keel.toml", ".streamlit/config.toml", "Makefile", "tests/domain/test_container.py",
])
def test_dockerignore_keeps_what_the_image_needs(path):
    assert not ignored(path), f"{path} is needed in the image"


def test_the_matcher_follows_docker_rules():
    assert _match("**/__pycache__", "__pycache__/x.pyc") and _match("**/__pycache__", "a/b/__pycache__/x")
    assert _match(".run", ".run/a/b") and not _match(".run", "x/.run") and not _match(".run", ".runner")
    assert _match("*.egg-info", "keel.egg-info/x") and not _match("bench/out", "bench/output/x")


def test_the_image_runs_as_a_non_root_user_writing_only_run_dir():
    text = (ROOT / "Dockerfile").read_text()
    lines = [ln.strip() for ln in re.sub(r"\\\n", " ", text).splitlines() if ln.strip() and not ln.startswith("#")]
    users = [ln.split()[1] for ln in lines if ln.startswith("USER ")]
    assert users and users[-1] not in ("root", "0", "0:0"), "the image must end as a non-root user"
    last_user = max(i for i, ln in enumerate(lines) if ln.startswith("USER "))
    assert lines[-1].startswith("CMD") and last_user < len(lines) - 1
    assert not any(ln.startswith(("RUN ", "COPY ", "ADD ")) for ln in lines[last_user:]), \
        "nothing is installed or copied as the runtime user: it cannot change the code or the venv"
    assert any("useradd" in ln and users[-1] in ln for ln in lines)
    env = " ".join(ln for ln in lines if ln.startswith("ENV "))
    assert "RUN_DIR=/var/lib/keel" in env and "KEEL_BIND_ADDRESS=0.0.0.0" in env
    assert any("chown" in ln and "/var/lib/keel" in ln for ln in lines)
    assert "secrets.toml" not in " ".join(ln for ln in lines if ln.startswith(("COPY", "ADD")))
