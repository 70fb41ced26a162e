"""Issue 28 items 2-3 where only a browser shows it: the run panel's throttle and auto-throttle controls under
`streamlit run` in headless Chromium, on a reassignment running on the real ZooKeeper-mode cluster with bootstrap.
At 900 and 1600 px every control is there and no text in the panel is cut (at 900 px "Change throttle" read "Cha…"
when the controls shared one row of fixed fractions). Screenshots land in the test's tmp dir."""

from __future__ import annotations

import time

import pytest

from tests.kafka.realkafka import RealKafka, keel_zk, needs_kafka
from tests.kafka.test_reassign_progress_real import _moving
from tests.support.browser import chromium, have_chromium, serve_dashboard

pytestmark = [needs_kafka("2.4", "listPartitionReassignments (KIP-455)"),
              pytest.mark.skipif(not have_chromium(), reason="Debian chromium and chromedriver are needed")]

CONTROLS = ("ra_throttle_mb", "ra_throttle_change", "ra_throttle_remove", "ra_auto_mb", "ra_auto_start")
CUT = """
// texts inside the run panel that do not fit their box (cut with an ellipsis or clipped)
const out = [];
for (const e of document.querySelectorAll('.st-key-ra_bytes *')) {
  if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow !== 'visible' && e.innerText
      && !e.closest('[data-testid=stDataFrame]'))  // tables scroll sideways on purpose
    out.push([e.getAttribute('data-testid') || e.tagName, e.innerText.slice(0, 60), e.scrollWidth, e.clientWidth]);
}
return out;
"""


def _controls_drawn(driver) -> bool:
    return all(driver.find_elements("css selector", f".st-key-{k}") for k in CONTROLS) and not \
        driver.find_elements("css selector", ".st-key-ra_bytes [data-testid=stSkeleton]")


def test_throttle_and_auto_throttle_controls_fit_at_900_and_1600_px(healthy: RealKafka, tmp_path):
    kafka = healthy
    topic, plan = _moving(kafka, tmp_path, "autolook", rate=20_000, size=3_000_000)  # runs minutes: cancelled
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "operator"\n\n[clusters.kafka]\nzk = "{kafka.zk_connect}"\n'
                      f'bootstrap = "{kafka.bootstrap}"\n')
    try:
        with serve_dashboard(config, tmp_path) as url:
            for width in (900, 1600):
                with chromium(width, 2400) as driver:
                    driver.get(url + "/reassign")
                    deadline = time.monotonic() + 60
                    while not _controls_drawn(driver):
                        if time.monotonic() > deadline:
                            driver.save_screenshot(str(tmp_path / f"auto-throttle-{width}-missing.png"))
                            raise AssertionError(f"the run panel's controls did not show at {width} px ({tmp_path})")
                        time.sleep(0.3)
                    time.sleep(1.0)  # fonts and icons settled
                    panel = driver.find_element("css selector", ".st-key-ra_bytes")
                    driver.execute_script("arguments[0].scrollIntoView()", panel)
                    driver.save_screenshot(str(tmp_path / f"auto-throttle-{width}.png"))
                    assert driver.execute_script(CUT) == [], f"cut at {width} px"
                    labels = driver.find_element("css selector", ".st-key-ra_throttle_change").text + \
                        driver.find_element("css selector", ".st-key-ra_auto_start").text
                    assert "Change throttle" in labels and "Start auto-throttle" in labels, labels
    finally:
        keel_zk(kafka, "cancel", "--bootstrap-server", kafka.bootstrap, "--all")
