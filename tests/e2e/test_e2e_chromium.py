"""End to end: the real app under `streamlit run`, a sandbox cluster in a real ZooKeeper, headless Chromium.

The app runs as a subprocess on a free port with KEEL_CONFIG pointing at the test's chroot; the sandbox
(seeded tree + controller emulator) runs in this process, so the test can stop a broker and watch the
page change without reloading it. Screenshots land in the test's tmp dir (path printed; keep them with
`pytest -s`, or set KEEL_E2E_SCREENSHOTS=<dir> to also copy them there).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from sandbox.seed import SandboxSpec
from tests.support.browser import CHROMEDRIVER, CHROMIUM, DashboardDidNotStart, chromium, serve_dashboard  # noqa: F401

selenium = pytest.importorskip("selenium")
from selenium.webdriver.common.keys import Keys  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = SandboxSpec(brokers=5, racks=3, topics=6, seed=3)
BROKER_TABLE = 'table[aria-label="Brokers of the cluster"]'

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed (apt-get install chromium "
                                       "chromium-driver)")


# --- serving the app (fixtures: tests/e2e/conftest.py) -----------------------------------------


@contextlib.contextmanager
def serve(config_text: str, tmp_path: Path):
    """`streamlit run` the app on a free port with this Keel config; yields its URL, stops it afterwards."""
    config = tmp_path / "keel.toml"
    config.write_text(config_text)
    try:
        with serve_dashboard(config, tmp_path) as url:
            yield url
    except DashboardDidNotStart as e:
        pytest.fail(str(e))


# --- helpers ------------------------------------------------------------------------------------


def broker_rows(driver) -> dict[int, dict[str, str]]:
    """The Overview's broker table as {broker id: {column: cell text}}, read from the DOM."""
    rows = driver.execute_script(
        """
        const t = document.querySelector(arguments[0]);
        if (!t) return null;
        const head = [...t.querySelectorAll('thead th')].map(c => c.innerText.trim());
        const body = [...t.querySelectorAll('tbody tr')].map(
            r => [...r.querySelectorAll('th, td')].map(c => c.innerText.trim()));
        return {head, body};
        """,
        BROKER_TABLE,
    )
    if not rows or not rows["head"]:
        return {}
    head = rows["head"]
    out = {}
    for cells in rows["body"]:
        cells = cells[-len(head):]  # drop a hidden index cell if one is rendered
        row = dict(zip(head, cells))
        if row.get("Broker", "").isdigit():
            out[int(row["Broker"])] = row
    return out


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.25)


def page_idle(driver) -> bool:
    """No rerun in flight: Streamlit shows its status widget ("Running...") while a script run draws the page."""
    return driver.execute_script("return !document.querySelector('[data-testid=stStatusWidget]')")


def type_until(driver, selector: str, text: str, shown, timeout: float, what: str):
    """Type `text` into the field at `selector` once the page is idle, then wait for `shown()`. A rerun that
    lands while the page is still drawing itself can remount the field and drop the keys (seen under three test
    workers), so the keys are typed again, at most twice more, when the field no longer holds them."""
    deadline = time.monotonic() + timeout
    for _ in range(3):
        wait_for(lambda: page_idle(driver), 45, "the page to be idle")
        box = wait_for(lambda: driver.find_elements("css selector", selector), 45, what)[0]
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(text)
        typed, committed = time.monotonic(), False
        while time.monotonic() < deadline:
            if shown():
                return
            fields = driver.find_elements("css selector", selector)
            if not fields or fields[0].get_attribute("value") != text:
                break  # remounted: type again
            if not committed and time.monotonic() - typed > 10:
                # the keys are there but no rerun took them (its message lost under load): Enter sends the value
                fields[0].send_keys(Keys.ENTER)
                committed = True
            time.sleep(0.25)
        else:
            break
    # what the page showed, so that a timeout under load can be told from a page that drew something else
    fields = driver.find_elements("css selector", selector)
    held = fields[0].get_attribute("value") if fields else "(no field)"
    shown_text = " ".join(body_text(driver).split())[-800:]
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}; the field holds {held!r}, the page is "
                f"{'idle' if page_idle(driver) else 'running'} and ends: {shown_text}")


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    keep = os.environ.get("KEEL_E2E_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
    print(f"screenshot: {path}")
    return path


# --- tests --------------------------------------------------------------------------------------


def test_overview_shows_brokers_and_follows_a_broker_stop(sandbox, app_url, browser, tmp_path):
    snap = sandbox.snapshot()
    alive = sorted(b.id for b in snap.brokers if b.alive)
    assert len(alive) == SPEC.brokers

    browser.get(app_url + "/")
    rows = wait_for(lambda: (r := broker_rows(browser)) and len(r) == len(alive) and r, 45, "the broker table")
    assert sorted(rows) == alive
    assert all(r["Status"] == "alive" for r in rows.values())
    assert rows[snap.controller.broker_id]["Role"] == "controller"
    body = browser.find_element("tag name", "body").text
    assert "Partition health" in body and "role: viewer" in body and "read-only" in body
    wait_for(lambda: len(browser.find_elements("css selector", ".js-plotly-plot")) >= 2, 30, "the plotly charts")
    screenshot(browser, tmp_path, "overview")

    victim = next(b for b in alive if b != snap.controller.broker_id)
    sandbox.stop_broker(victim)
    started = time.monotonic()
    rows = wait_for(lambda: (r := broker_rows(browser)) and r.get(victim, {}).get("Status") == "DOWN" and r,
                    15, f"broker {victim} to show as down without a reload")
    print(f"broker {victim} shown down after {time.monotonic() - started:.1f} s")
    assert all(r["Status"] == "alive" for b, r in rows.items() if b != victim)
    wait_for(lambda: f"Broker down: {victim}" in browser.find_element("tag name", "body").text, 10,
             "the broker-down banner")
    screenshot(browser, tmp_path, "overview-broker-down")


def test_topics_and_brokers_pages_render(sandbox, app_url, browser, tmp_path):
    snap = sandbox.snapshot()
    browser.get(app_url + "/topics")
    wait_for(lambda: browser.find_elements("css selector", '[data-testid="stDataFrame"]'), 45, "the topic list")
    body = browser.find_element("tag name", "body").text
    assert "Topics" in body and f"{len(snap.topics)} of {len(snap.topics)} topics" in body
    # the first request of a fresh server is for a page URL: it must still get the router's frame
    wait_for(lambda: "Connection" in browser.find_element("tag name", "body").text, 20, "the sidebar frame")
    nav = browser.find_element("css selector", '[data-testid="stSidebarNav"]').text
    assert "Overview" in nav and "streamlit app" not in nav.lower()
    screenshot(browser, tmp_path, "topics")

    browser.get(app_url + "/brokers")
    wait_for(lambda: "Over threshold" in browser.find_element("tag name", "body").text, 45, "the brokers page")
    wait_for(lambda: browser.find_elements("css selector", ".js-plotly-plot"), 30, "the imbalance chart")
    assert browser.find_elements("css selector", '[data-testid="stDataFrame"]')
    screenshot(browser, tmp_path, "brokers")


def body_text(driver) -> str:
    return driver.find_element("tag name", "body").text


def click_text(driver, tag: str, text: str, timeout: float = 20):
    """Click the first enabled `tag` element whose visible text contains `text`."""
    xpath = f"//{tag}[contains(normalize-space(.), {json.dumps(text)})]"

    def clickable():
        for el in driver.find_elements("xpath", xpath):
            if el.is_displayed() and el.is_enabled() and el.get_attribute("disabled") is None:
                return el
        return None
    el = wait_for(clickable, timeout, f"a clickable <{tag}> with {text!r}")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", el)
    el.click()
    return el


def test_import_execute_follow_and_verify_a_reassignment(sandbox, operator_url, browser, tmp_path):
    snap = sandbox.snapshot()
    part = next(p for p in snap.partitions() if len(p.replicas) >= 2)
    newcomer = next(b.id for b in snap.brokers if b.alive and b.id not in part.replicas)
    target = [newcomer, *part.replicas[1:]]
    doc = json.dumps({"version": 1, "partitions": [{"topic": part.topic, "partition": part.partition,
                                                    "replicas": target}]})

    browser.get(operator_url + "/reassign")
    wait_for(lambda: "Strategy and options" in body_text(browser), 45, "the Reassign page")
    click_text(browser, "label", "Import a plan")
    area = wait_for(lambda: browser.find_elements("css selector", "textarea[placeholder*='partitions']"), 20,
                    "the plan text area")[0]
    area.send_keys(doc)
    area.send_keys(Keys.CONTROL, Keys.ENTER)  # Streamlit commits a text area on Ctrl+Enter
    wait_for(lambda: "Replicas moved" in body_text(browser), 30, "the cost of the imported plan")
    # one view at a time (issue 16): the before / after heatmaps first
    wait_for(lambda: browser.find_elements("css selector", ".js-plotly-plot g.heatmaplayer"), 30,
             "the before/after heatmaps")
    assert "source imported" in body_text(browser)
    screenshot(browser, tmp_path, "reassign-plan")

    click_text(browser, "label", "Move 1 replica(s) of 1 partition(s)")
    click_text(browser, "button", "Execute reassignment")
    wait_for(lambda: "Reassignment started: 1 partition(s) written" in body_text(browser), 30, "the started message")
    wait_for(lambda: "Complete: every partition is at its target" in body_text(browser), 45,
             "the progress panel to follow the controller to the end")
    wait_for(lambda: "A reassignment of 1 partition(s) is running" not in body_text(browser), 15, "the page to redraw once it is over")
    moved = sandbox.snapshot().topic_by_name[part.topic].partitions[part.partition]
    assert list(moved.replicas) == target
    screenshot(browser, tmp_path, "reassign-complete")

    click_text(browser, "button", "Verify")
    wait_for(lambda: "Verified: all 1 partition(s) are at their target" in body_text(browser), 30, "the verification")
