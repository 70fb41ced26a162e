"""Issue 29 in a real browser: the Security page and a topic's "who may" section under `streamlit run`, on the
`make run` demo cluster (the seeder writes its ACL bindings and quotas) with a user node that also holds SCRAM
credentials in Kafka's format; headless Chromium at 1600 and 900 px.

- the page lists the demo's bindings and quotas, and no SCRAM value is anywhere in the page (DOM text or source);
- an admin adds a binding from the keyboard and mouse: preview, confirmation, the write in ZooKeeper, the History link;
- a topic's page answers who may read and write it.

Screenshots land in the test's tmp dir (KEEL_E2E_SCREENSHOTS=<dir> copies them there too).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.dashboard.test_security_page import SCRAM_256, SECRETS, config_node
from tests.e2e.test_e2e_chromium import page_idle
from tests.e2e.test_e2e_layout import CHROMEDRIVER, CHROMIUM, CUT_BUTTONS, DEMO, alerts, shot, wait_js
from tests.e2e.test_e2e_chromium import serve
from tests.support.browser import chromium
from tests.support.sandbox_helpers import running_sandbox

selenium = pytest.importorskip("selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed")

TABLE_ROWS = """
// The rows of the (first) st.dataframe with a column named arguments[0], from the accessible table glide-data-grid
// keeps in the DOM (textContent: the table is not painted, the canvas is).
const text = c => (c.textContent || '').trim();
const t = [...document.querySelectorAll('[data-testid=stDataFrame] table')].find(x =>
  [...x.querySelectorAll('thead th')].some(c => text(c) === arguments[0]));
if (!t) return null;
const head = [...t.querySelectorAll('thead th')].map(text);
const rows = [...t.querySelectorAll('tbody tr')].map(r => {
  const cells = [...r.querySelectorAll('td, th')].map(text).slice(-head.length);
  const o = {}; head.forEach((h, i) => o[h] = cells[i]); return o;
});
return rows.length ? rows : null;
"""


@pytest.fixture
def demo(zk_connect):
    with running_sandbox(zk_connect, DEMO) as sb:
        assert sb.emulator.wait_idle(10)
        sb.session.create("/config/users/alice", config_node({"SCRAM-SHA-256": SCRAM_256,
                                                              "producer_byte_rate": "1048576"}))
        yield sb


@pytest.fixture
def url(demo, zk_connect, tmp_path):
    with serve(f'[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "{zk_connect}"\n', tmp_path) as base:
        yield base


@pytest.fixture
def browser():
    with chromium(1600, 1300) as driver:
        yield driver


def _settle(browser, timeout: float = 20) -> None:
    """Until the app is idle (no running indicator), then a moment for the layout."""
    deadline = time.monotonic() + timeout
    while not page_idle(browser) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)


def _field(browser, key: str):
    return wait_js(browser, f"return document.querySelector('.st-key-{key} input')", timeout=30,
                   message=f"the field {key}")


def _type(browser, key: str, text: str) -> None:
    """Type into a text field and leave it (Tab commits it), then wait for the rerun."""
    _field(browser, key).send_keys(text, Keys.TAB)
    _settle(browser)


def _no_secret(browser) -> None:
    text = browser.execute_script("return document.body.innerText") + browser.page_source
    assert not [s for s in SECRETS if s in text] and "stored_key" not in text


def _rows(browser, column: str):
    return wait_js(browser, f"return (function () {{{TABLE_ROWS}}})({column!r})", timeout=30,
                   message=f"the table with a {column} column")


@pytest.mark.parametrize("width", [1600, 900])
def test_the_security_page_shows_the_demo_and_no_credential(demo, url, browser, tmp_path, width):
    browser.set_window_size(width, 1300)
    browser.get(f"{url}/security")
    wait_js(browser, "return [...document.querySelectorAll('h1')].some(h => h.innerText.includes('Security'))",
            message="the Security page")
    rows = wait_js(browser, "const t = [...document.querySelectorAll('[data-testid=stDataFrame] table tbody tr')];"
                            "return t.length >= 5 ? t.length : null", timeout=30, message="the bindings")
    assert rows >= 5
    _settle(browser)
    assert "Cannot read" not in alerts(browser)
    shot(browser, tmp_path, f"security-bindings-{width}")
    _no_secret(browser)
    assert browser.execute_script(CUT_BUTTONS) == [], (width, "button labels cut short")
    for label in ("Principal", "Quotas", "Undo"):
        tab = next(t for t in browser.find_elements(By.CSS_SELECTOR, "[data-testid=stTabs] [role=tab]")
                   if label in t.text)
        tab.click()
        _settle(browser)
        if label == "Principal":
            field = wait_js(browser, "return document.querySelector('.st-key-sec_principal_typed input')",
                            message="the principal field")
            field.send_keys("User:analytics", Keys.TAB)
            _settle(browser)
        if label == "Quotas":
            field = wait_js(browser, "return document.querySelector('.st-key-sec_eff_user input')",
                            message="the effective quota's user field")
            field.send_keys("alice", Keys.TAB)
            _settle(browser)
        shot(browser, tmp_path, f"security-{label.lower()}-{width}")
        _no_secret(browser)
        assert browser.execute_script(CUT_BUTTONS) == [], (width, label, "button labels cut short")


def test_an_admin_adds_a_binding_in_the_browser(demo, url, browser, tmp_path):
    browser.set_window_size(1600, 1300)
    browser.get(f"{url}/security")
    wait_js(browser, "return document.querySelector('.st-key-sec_add_principal input')", timeout=60,
            message="the add form")
    topic = next(t.name for t in demo.snapshot().topics if not t.name.startswith("_"))
    _type(browser, "sec_add_principal", "User:frank")
    _type(browser, "sec_add_name", topic)
    ops = _field(browser, "sec_add_ops")
    ops.click()
    ops.send_keys("READ", Keys.ENTER)  # no other operation contains READ: Enter takes it alone
    ops.send_keys(Keys.ESCAPE)
    _settle(browser)
    shot(browser, tmp_path, "security-add-form")
    box = wait_js(browser, "return document.querySelector('[class*=st-key-sec_add_confirm] label')", timeout=30,
                  message="the confirmation")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    time.sleep(0.5)
    shot(browser, tmp_path, "security-add-preview")
    box.click()
    button = wait_js(browser, "const b = document.querySelector('.st-key-sec_add_apply button');"
                              "return b && !b.disabled ? b : null", timeout=30, message="Add bindings enabled")
    button.click()
    wait_js(browser, "return document.body.innerText.includes('in History')", timeout=30, message="the outcome")
    shot(browser, tmp_path, "security-add-done")
    node = json.loads(demo.session.get(f"/kafka-acl/Topic/{topic}").data)
    assert {"principal": "User:frank", "permissionType": "Allow", "operation": "Read", "host": "*"} in node["acls"]
    link = browser.find_element(By.PARTIAL_LINK_TEXT, "in History")
    assert "action=" in link.get_attribute("href")


@pytest.mark.parametrize("width", [1600, 900])
def test_a_topic_page_says_who_may_use_it(demo, url, browser, tmp_path, width):
    browser.set_window_size(width, 1300)
    topic = next(t for t in demo.session.children("/kafka-acl/Topic") if t != "*")  # the seeded one
    browser.get(f"{url}/topics?topic={topic}")
    find = ("return [...document.querySelectorAll('[data-testid=stExpander] summary')]"
            ".find(s => s.innerText.includes('Who may use'))")
    who = None
    for _ in range(3):  # the live view may redraw the page as the expander opens: open it again if it closed
        summary = wait_js(browser, find, timeout=60, message="the who-may section")
        _settle(browser)
        summary = wait_js(browser, find, timeout=10, message="the who-may section")
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", summary)
        if not browser.execute_script("return arguments[0].parentElement.open", summary):
            summary.click()
        try:
            # glide-data-grid keeps only the columns on screen in its DOM: at 900 px "Through bindings" is not
            who = wait_js(browser, f"return (function () {{{TABLE_ROWS}}})('Allowed')", timeout=15)
            break
        except BaseException:  # pytest.fail: try once more
            continue
    assert who, "the who-may table never showed"
    by_op = {r["Operation"]: r for r in who}
    assert set(by_op) >= {"READ", "WRITE", "DESCRIBE", "ALTER", "DELETE"}
    assert by_op["WRITE"]["Allowed"] == "User:orders-service"
    assert by_op["WRITE"].get("Denied") in ("User:analytics", None)  # None: scrolled off at 900 px
    assert by_op["READ"]["Allowed"] == "User:analytics"
    _settle(browser)
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", wait_js(browser, find, timeout=10))
    time.sleep(0.5)
    shot(browser, tmp_path, f"topic-who-may-{width}")
    _no_secret(browser)
