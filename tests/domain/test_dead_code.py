"""No dead code in the product (issue 25): vulture over core/ and dashboard/ reports nothing that
tests/vulture_whitelist.py does not keep with a reason.

The sandbox (sandbox/, not shipped), bench/ and scripts/ are scanned too, as users of the product's code (zkformat's encoders seed the sandbox); what vulture says about them is not checked here. Tests
are not scanned: what only tests use is dead unless the whitelist says why it stays.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "core").is_dir() and (p / "dashboard").is_dir())
PRODUCT = ("core/", "dashboard/")
USERS = ("sandbox", "bench", "scripts")
MIN_CONFIDENCE = 60


def whitelist() -> Path:
    return next(ROOT.glob("tests/**/vulture_whitelist.py"))


def vulture_report() -> list[str]:
    paths = ["core", "dashboard", *(u for u in USERS if (ROOT / u).is_dir()), str(whitelist().relative_to(ROOT))]
    done = subprocess.run([sys.executable, "-m", "vulture", *paths, "--min-confidence", str(MIN_CONFIDENCE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 3), done.stderr  # 3: dead code found (checked below); anything else: vulture failed
    return [line for line in done.stdout.splitlines()
            if line.startswith(PRODUCT)]


def test_vulture_finds_nothing_unexplained():
    found = vulture_report()
    assert found == [], ("unused code in core/ or dashboard/: remove it, or keep it with a reason in "
                         f"{whitelist().relative_to(ROOT)}:\n" + "\n".join(found))


def test_every_whitelist_entry_says_why():
    lines = whitelist().read_text().splitlines()
    entries = [line for line in lines if line.startswith("_.")]
    assert entries, "the whitelist is empty: drop it"
    assert [e for e in entries if "  # " not in e] == [], "an entry without its reason"
    body = lines[lines.index("_ = None  # vulture's placeholder for \"an attribute of something\"") + 1:]
    assert [line for line in body if line.strip() and not line.startswith(("_.", "#"))] == [], "entries are `_.name`"
