"""Issue 31, item 3b in a real browser: the Fleet page's "Collect now" under `streamlit run`, driven by headless
Chromium, against real ZooKeeper clusters (chroots of the session's server) and one that hangs until its timeout.

The page shows one line per cluster as it finishes while the hanging one is still being read, then the outcome; a
second click adds a capture, and "Imbalance over time" draws one line per cluster with a point per capture. At 900
and 1600 px no button label is cut and the chart (with its legend) fits the main column.

Screenshots land in the test's tmp dir (KEEL_E2E_SCREENSHOTS=<dir> copies them there too).
"""

from __future__ import annotations

import os
import time

import pytest

from core.zk.session import ZkSession
from tests.e2e.test_e2e_layout import CUT_BUTTONS, shot, wait_js
from tests.fleet.test_fleet import write_kafka_tree
from tests.fleet.test_fleet_collect import BlackHole
from tests.fleet.test_fleet_history import skewed

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed")
SLOW_TIMEOUT = 6.0  # the hanging cluster: long enough for the browser to see the others done before it gives up

MAIN = "document.querySelector('[data-testid=stMain]').innerText"
CHART = """
const p = document.querySelector('.st-key-fleet_history_chart .js-plotly-plot');
if (!p || !p.data) return null;
const main = document.querySelector('[data-testid=stMain] [data-testid=stMainBlockContainer]')
  || document.querySelector('[data-testid=stMain]');
const r = p.getBoundingClientRect(), m = main.getBoundingClientRect();
const legend = [...p.querySelectorAll('.legend .traces')].map(t => {
  const b = t.getBoundingClientRect(); return {text: t.textContent, left: b.left, right: b.right}; });
return {traces: p.data.map(t => ({name: t.name, points: t.x.length})), left: r.left, right: r.right,
        mainLeft: m.left, mainRight: m.right, legend, scroll: document.documentElement.scrollWidth - innerWidth};
"""


@pytest.fixture
def clusters(zk_connect, tmp_path):
    hole = BlackHole()
    with ZkSession.open(zk_connect) as root:
        for i, (parts, brokers, crowd) in enumerate([(90, 6, 2), (40, 4, 0), (60, 5, 1)]):
            root.ensure_path(f"/c{i}")
            write_kafka_tree(f"{zk_connect}/c{i}", skewed(f"prod-{i}", "2026-11-22T03:00:00Z", parts, brokers,
                                                          crowd=crowd))
    config = tmp_path / "keel.toml"
    config.write_text('[keel]\nrole = "operator"\n\n' + "".join(
        f'[clusters.prod-{i}]\nzk = "{zk_connect}/c{i}"\n\n' for i in range(3))
        + f'[clusters.hung]\nzk = "127.0.0.1:{hole.port}"\nconnect_timeout = {SLOW_TIMEOUT}\n')
    try:
        yield config
    finally:
        hole.close()


def collect(browser, tmp_path, name: str) -> str:
    """Click Collect now; wait for the three real clusters' lines while the hanging one is read, then the end."""
    button = wait_js(browser, "return [...document.querySelectorAll('button')].find(b => b.innerText.includes("
                              "'Collect now') && !b.disabled)", message="Collect now")
    button.click()
    live = wait_js(browser, f"const t = {MAIN}; return t.includes('3/4 clusters') && t.includes('prod-2: ') ? t : null",
                   timeout=SLOW_TIMEOUT, message="the live lines of the three real clusters")
    shot(browser, tmp_path, f"{name}-live")
    assert "Still reading: hung: connecting" in live and "hung: FAILED" not in live
    done = wait_js(browser, f"const t = {MAIN}; return t.includes('4 clusters: 3 collected, 1 failed (hung)') ? t : null",
                   timeout=SLOW_TIMEOUT + 30, message="the outcome")
    return done


def test_collect_now_in_the_browser_and_the_history_at_1600_and_900(clusters, tmp_path, browser):
    from tests.support.browser import serve_dashboard

    env = {"KEEL_FLEET_STORE": str(tmp_path / "fleet" / "store"), "KEEL_FLEET_OUTPUT": str(tmp_path / "fleet" / "out")}
    with serve_dashboard(clusters, tmp_path, env=env) as base:
        browser.set_window_size(1600, 1100)
        browser.get(f"{base}/fleet")
        wait_js(browser, f"return {MAIN}.includes('No history in this store yet')",
                message="the empty history")
        text = collect(browser, tmp_path, "fleet-collect-1600")
        for name in ("prod-0", "prod-1", "prod-2"):
            assert f"{name}: " in text and "partitions" in text
        assert "hung: FAILED" in text
        time.sleep(1.1)  # captures are named by their whole second
        collect(browser, tmp_path, "fleet-collect-again-1600")
        chart = wait_js(browser, CHART.replace("if (!p || !p.data) return null;",
                                               "if (!p || !p.data || !p.data.length || p.data[0].x.length < 2) "
                                               "return null;"), timeout=30, message="the history chart")
        assert sorted((t["name"], t["points"]) for t in chart["traces"]) == [
            ("prod-0", 2), ("prod-1", 2), ("prod-2", 2)], chart
        assert chart["traces"][0]["name"] == "prod-0"  # worst first
        for width in (1600, 900):
            browser.set_window_size(width, 1100)
            time.sleep(2)
            browser.execute_script("document.querySelector('.st-key-fleet_history_chart').scrollIntoView()")
            time.sleep(1)
            shot(browser, tmp_path, f"fleet-history-{width}")
            chart = browser.execute_script(CHART)
            assert chart["scroll"] <= 1, chart  # no sideways scrolling
            assert chart["mainLeft"] - 1 <= chart["left"] and chart["right"] <= chart["mainRight"] + 1, chart
            assert len(chart["legend"]) == 3 and all(chart["left"] <= e["left"] and e["right"] <= chart["right"]
                                                     for e in chart["legend"]), chart
            browser.execute_script("document.querySelector('.st-key-fleet_collect').scrollIntoView()")
            time.sleep(0.5)
            shot(browser, tmp_path, f"fleet-buttons-{width}")
            cut = browser.execute_script(CUT_BUTTONS)
            assert cut == [], f"button labels cut short at {width} px: {cut}"
