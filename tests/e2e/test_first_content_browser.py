"""Issue 31, item 1, in a real browser: a cluster Keel has not read yet, large enough that its partition states take
seconds to read (30,000 partitions), opened on the Overview. The outline (brokers table, controller, topic and
partition counts, a progress bar) shows first, with every health figure "reading…" and nothing saying "Live"; the
full view replaces it once the states are read, without a click. Screenshots of the outline at 1600 and 900 px land
in the test's tmp dir (KEEL_E2E_SCREENSHOTS=<dir> copies them there too).
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest

from sandbox.seed import SandboxSpec
from tests.e2e.test_e2e_chromium import serve
from tests.support.browser import CHROMEDRIVER, CHROMIUM, chromium
from tests.support.sandbox_helpers import running_sandbox

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed")

SPEC = SandboxSpec(brokers=12, racks=3, topics=1_560, seed=11)  # about 30,000 partitions
FRESH = "[data-testid=stElementContainer]:not([data-stale=true])"  # drawn by the current run (not left from the last)
OUTLINE = f"document.querySelector('{FRESH} table[aria-label=\"Brokers of the cluster (outline)\"]')"
FULL = f"document.querySelector('{FRESH} table[aria-label=\"Brokers of the cluster\"]')"


def fresh_text(where: str) -> str:
    return f"[...document.querySelectorAll('[data-testid={where}] {FRESH}')].map(e => e.innerText).join('\\n')"


SIDEBAR, MAIN = fresh_text("stSidebar"), fresh_text("stMain")


@pytest.fixture
def big(zk_connect):
    with running_sandbox(zk_connect, SPEC) as sb:
        assert sb.emulator.wait_idle(120)
        yield sb


def _shot(driver, tmp_path, name: str) -> None:
    path = tmp_path / name
    driver.save_screenshot(str(path))
    if os.environ.get("KEEL_E2E_SCREENSHOTS"):
        shutil.copy(path, os.environ["KEEL_E2E_SCREENSHOTS"])


@pytest.mark.parametrize("width", [1600, 900])
def test_the_outline_comes_first_and_claims_no_health(big, zk_connect, tmp_path, width):
    with serve(f'[keel]\nrole = "viewer"\n\n[clusters.big]\nzk = "{zk_connect}"\n', tmp_path) as url, \
            chromium(width, 1400) as driver:
        started = time.monotonic()
        driver.get(url)
        outline_seen = None
        while time.monotonic() - started < 120:
            state = driver.execute_script(f"return [!!({OUTLINE}), !!({FULL}), {SIDEBAR}, {MAIN}]")
            has_outline, has_full, sidebar, main = state
            if has_full:
                break
            if has_outline and "Partitions" in main and outline_seen is None:
                outline_seen = time.monotonic() - started
                _shot(driver, tmp_path, f"first-content-outline-{width}.png")
                assert "Live" not in sidebar, sidebar
                assert "Reading the cluster" in sidebar
                assert "have a live leader" not in main
                assert main.count("reading…") >= 6, main  # every health figure
                flat = " ".join(main.split())
                assert "Brokers registered 12" in flat and "Controller broker" in flat, flat
                assert re.search(r"Topics 1,56\d Partitions (— reading…|2\d,\d{3})", flat), flat
            elif has_outline:
                assert "Live" not in sidebar and "have a live leader" not in main
            time.sleep(0.1)
        assert outline_seen is not None, "the outline never showed before the full view"
        assert driver.execute_script(f"return !!({FULL})"), "the full view never followed"
        time.sleep(0.5)
        _shot(driver, tmp_path, f"first-content-full-{width}.png")
        assert "Live" in driver.execute_script(f"return {SIDEBAR}")
        assert not driver.execute_script(f"return !!({OUTLINE})")
