"""Issue 16 where only a browser shows it: the real app under `streamlit run` on the `make run` demo cluster, driven
by headless Chromium (the harness of tests/test_e2e_chromium.py).

- the heatmaps' cell texts as plotly.js draws them, each compared with the number of the cell it sits on;
- every metric readable at 900 px and 1600 px (no label, value or delta cut short);
- the topic filter filters while typing (no Enter);
- an invalid partition count on Create topic leaves no earlier valid count in effect;
- number fields are text fields: 10**20 typed reaches the engine (a number input dropped it), text that is no number
  gets a message under the field's row, and the fields line up with their row at 900 and 1600 px;
- after an election the topic picker keeps its value (the browser reset it when its labels changed).

Screenshots land in the test's tmp dir (KEEL_E2E_SCREENSHOTS=<dir> copies them there too).
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest

from core import elections
from core.sandbox.seed import SandboxSpec
from tests.sandbox_helpers import running_sandbox
from tests.test_e2e_chromium import browser, serve  # noqa: F401  (browser: fixture)

selenium = pytest.importorskip("selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
DEMO = SandboxSpec(demo=True)  # `make run`'s cluster: 9 brokers, 3 racks, broker 2 down, broker 9 empty

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed")

HEATMAP_CELLS = """
// Per heatmap trace: how many cell texts plotly drew, and those that do not read as the z value of the cell they sit
// on (the row and column found from the text's position on the axes, not from the order of the texts).
const out = [];
for (const p of document.querySelectorAll('.js-plotly-plot')) {
  const traces = (p._fullData || []).filter(t => t.type === 'heatmap');
  const layers = [...p.querySelectorAll('g.heatmaplayer')];
  traces.forEach((tr, i) => {
    const layer = layers[i];
    if (!layer) return;
    const axis = (name, letter) => p._fullLayout[name === letter ? letter + 'axis' : letter + 'axis' + name.slice(1)];
    const ya = axis(tr.yaxis, 'y'), xa = axis(tr.xaxis, 'x');
    const bad = []; let cells = 0;
    for (const t of layer.querySelectorAll('text')) {
      const yc = ya._categories[Math.round(ya.p2c(parseFloat(t.getAttribute('y'))))];
      const xc = xa._categories[Math.round(xa.p2c(parseFloat(t.getAttribute('x'))))];
      const v = tr.z[tr.y.indexOf(yc)][tr.x.indexOf(xc)];
      cells++;
      const shown = t.textContent.replace(/,/g, '');
      // a count reads "1,234"; a change reads "+2" where it grows, "-3" where it shrinks, "0" where it stays
      if (shown !== String(v) && !(v > 0 && shown === '+' + v)) bad.push([yc, xc, t.textContent, v]);
    }
    out.push({cells, bad: bad.slice(0, 5), nbad: bad.length});
  });
}
return out;
"""

TRUNCATED_METRICS = """
// Metric labels, values and deltas whose text does not fit (cut with an ellipsis or clipped).
const out = [];
for (const m of document.querySelectorAll('[data-testid=stMetric]')) {
  for (const part of ['stMetricLabel', 'stMetricValue', 'stMetricDelta']) {
    const e = m.querySelector(`[data-testid=${part}]`);
    if (!e) continue;
    for (const x of [e, ...e.querySelectorAll('*')]) {
      if (x.scrollWidth > x.clientWidth + 1 && getComputedStyle(x).overflow !== 'visible') {
        out.push([part, e.innerText, x.scrollWidth, x.clientWidth]);
        break;
      }
    }
  }
}
return {count: document.querySelectorAll('[data-testid=stMetric]').length, truncated: out};
"""


@pytest.fixture
def demo(zk_connect):
    with running_sandbox(zk_connect, DEMO) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


@pytest.fixture
def url(demo, zk_connect, tmp_path):
    with serve(f'[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "{zk_connect}"\n', tmp_path) as base:
        yield base


def wait_js(driver, js: str, timeout: float = 60, message: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(js)
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {message or js}")


def shot(driver, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    keep = os.environ.get("KEEL_E2E_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def alerts(driver) -> str:
    return "\n".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, "[data-testid=stAlert]"))


def idle(driver) -> bool:
    return driver.execute_script("return !document.querySelector('[data-testid=stStatusWidget]')")


# --- 1. heatmap cell texts ------------------------------------------------------------------------------------


def test_heatmap_cells_show_the_numbers_of_their_own_cell(url, browser, tmp_path):
    """Issue 16, defect 1: the top row printed the numbers of the "other" row (and blue cells read "+0"). Every text
    plotly.js draws is compared with the value of the cell it sits on."""
    browser.set_window_size(1600, 1300)
    for view in ("Heatmap", "Change"):
        browser.get(f"{url}/reassign?goal={urllib.parse.quote('Fill new brokers')}&view={view}")
        wait_js(browser, "return document.querySelectorAll('.js-plotly-plot g.heatmaplayer text').length > 20",
                message="the heatmap's cell texts")
        time.sleep(1)
        traces = browser.execute_script("return (() => {" + HEATMAP_CELLS + "})()")
        shot(browser, tmp_path, f"heatmap-{view.lower()}")
        assert traces and all(t["cells"] > 0 for t in traces), traces
        assert [t["bad"] for t in traces if t["nbad"]] == [], traces


# --- 3. readable at 900 px -------------------------------------------------------------------------------------

PAGES = {  # path -> how many metrics it shows at least, once drawn
    "": 14, "topics?topic=orders.v1": 5, "brokers": 4, "broker?broker=3": 7, "leaders": 5,
    f"reassign?goal={urllib.parse.quote('Fill new brokers')}": 11,
}


@pytest.mark.parametrize("width", [900, 1600])
def test_every_metric_is_readable(url, browser, tmp_path, width):
    """Issue 16, defect 3: at 900 px "Replicas moved 226" showed as "2.", "Brokers alive 9/9" as "9..", health labels
    shrank to one letter; at 1600 px "Moves ÷ lower bou…" was cut. No metric's label, value or delta is cut, and
    no button's label either."""
    browser.set_window_size(width, 1300)
    for path, count in PAGES.items():
        browser.get(f"{url}/{path}")
        wait_js(browser, f"return document.querySelectorAll('[data-testid=stMetric]').length >= {count}",
                message=f"the metrics of /{path}")
        time.sleep(1.0)  # let the layout settle (fonts, scroll bars)
        found = browser.execute_script(TRUNCATED_METRICS)
        shot(browser, tmp_path, f"metrics-{width}-{path.split('?')[0] or 'overview'}")
        assert found["count"] >= count
        assert found["truncated"] == [], (width, path, found["truncated"])
        assert browser.execute_script(CUT_BUTTONS) == [], (width, path, "button labels cut short")


# --- search as you type -----------------------------------------------------------------------------------------


def test_topic_filter_filters_while_typing(url, browser, tmp_path):
    """Typing into the topic filter narrows the list without Enter, and the filter is in the URL."""
    browser.set_window_size(1600, 1300)
    browser.get(f"{url}/topics")
    count = "return ([...document.querySelectorAll('p')].map(p => p.innerText).find(t => / of [0-9,]+ topics/" \
            ".test(t)) || '')"
    total = wait_js(browser, count, message="the topic count")
    field = wait_js(browser, "return document.querySelector('.st-key-q input')", message="the topic filter")
    field.click()
    field.send_keys("orders")  # no Enter, no blur
    shown = wait_js(browser, f"const t = ({count[7:]}); return t && t !== {total!r} ? t : null", timeout=15,
                    message="the list to narrow while typing")
    assert shown.split(" of ")[0] != total.split(" of ")[0]
    assert int(shown.split(" of ")[0].replace(",", "")) >= 1
    assert browser.switch_to.active_element == field  # still typing: nothing took the focus
    assert "q=orders" in browser.current_url
    rows = wait_js(browser, "const r = [...document.querySelectorAll('[data-testid=stDataFrame] table tbody tr')]"
                            ".map(r => r.querySelector('td').innerText); "
                            "return r.length && r.every(t => t.includes('orders')) ? r : null", timeout=15,
                   message="the table to hold only matching topics")
    assert len(rows) == int(shown.split(" of ")[0].replace(",", ""))
    shot(browser, tmp_path, "topics-filter")


# --- 8. create topic with 0 partitions ---------------------------------------------------------------------------


def test_zero_partitions_leaves_no_earlier_count_in_effect(url, browser, tmp_path):
    """Issue 16, defect 8: the field stayed red at 0 while the preview and the confirmation still said 6 (what Create
    would write). The engine's message shows and nothing of the earlier count remains."""
    browser.set_window_size(1600, 1300)
    browser.get(f"{url}/create_topic")
    name = wait_js(browser, "return document.querySelector('.st-key-ct_name input')", message="the form")
    name.send_keys("zero-test")
    wait_js(browser, "return [...document.querySelectorAll('[data-testid=stCheckbox] label')].some("
                     "l => l.innerText.includes('6 partition'))", message="the preview of 6 partitions")
    field = browser.find_element(By.CSS_SELECTOR, ".st-key-ct_partitions input")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("0", Keys.TAB)
    wait_js(browser, "return [...document.querySelectorAll('[data-testid=stAlert]')].some("
                     "a => a.innerText.includes('The partitions must be greater than 0'))", timeout=20,
            message="the engine's message")
    time.sleep(0.5)
    page = browser.find_element(By.CSS_SELECTOR, "[data-testid=stMain]").text
    assert "6 partition" not in page
    assert not browser.execute_script("return [...document.querySelectorAll('button')].some("
                                      "b => b.innerText.includes('Create topic') && !b.disabled)")
    shot(browser, tmp_path, "create-zero")


# --- 9. the topic picker after an election ----------------------------------------------------------------------


def test_topic_picker_keeps_its_value_after_an_election(url, browser, demo, tmp_path):
    """Issue 16, defect 9: after an election the topic picker reset to "Choose a topic…" (its labels carried live
    counts, which the election changed); and "Nothing to elect" sat above the election's success."""
    browser.set_window_size(1600, 1300)
    topic = next(c.topic for c in elections.candidates(demo.snapshot()) if c.eligible)
    browser.get(f"{url}/leaders?scope={urllib.parse.quote('One topic')}&topic={urllib.parse.quote(topic)}")
    wait_js(browser, "return [...document.querySelectorAll('[data-testid=stCheckbox] label')].some("
                     "l => l.innerText.startsWith('Move the leadership'))", message="the election preview")
    next(e for e in browser.find_elements(By.CSS_SELECTOR, "[data-testid=stCheckbox] label")
         if e.text.startswith("Move the leadership")).click()
    wait_js(browser, "return [...document.querySelectorAll('button')].some(b => b.innerText.includes("
                     "'Elect preferred leaders') && !b.disabled)", message="the Elect button")
    next(b for b in browser.find_elements(By.CSS_SELECTOR, "button") if "Elect preferred leaders" in b.text).click()
    wait_js(browser, "return [...document.querySelectorAll('[data-testid=stAlert]')].some(a => a.innerText.includes("
                     "'Election written'))", message="the election's outcome")
    time.sleep(3)  # the live fragment redraws with the new leaders
    shot(browser, tmp_path, "leaders-after-election")
    picker = browser.execute_script("return document.querySelector('.st-key-topic input').value")
    assert picker == topic
    assert f"topic={urllib.parse.quote(topic)}" in browser.current_url or f"topic={topic}" in browser.current_url
    texts = alerts(browser)
    if "Nothing to elect" in texts:
        assert texts.index("Election written") < texts.index("Nothing to elect")


# --- 10. number fields keep what was typed -------------------------------------------------------------------------

FIELD_BOXES = """
// The box (input or select) of each widget whose key starts with one of arguments[0], in page order.
const out = [];
for (const prefix of arguments[0]) {
  for (const w of document.querySelectorAll(`[class*="st-key-${prefix}"]`)) {
    const box = w.querySelector('[data-testid=stTextInputRootElement], .react-aria-ComboBox [role=group]');
    if (!box) continue;
    const r = box.getBoundingClientRect();
    const input = w.querySelector('input');
    out.push({key: prefix, left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
              height: r.height, value: input ? input.value : null,
              align: input ? getComputedStyle(input).textAlign : null});
  }
}
return out;
"""

ALERT_BOXES = """
return [...document.querySelectorAll('[data-testid=stAlert]')].filter(a => a.innerText.includes(arguments[0]))
  .map(a => { const r = a.getBoundingClientRect(); return {left: r.left, top: r.top, width: r.width}; });
"""


def type_into(driver, css: str, text: str) -> None:
    field = driver.find_element(By.CSS_SELECTOR, css)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text, Keys.TAB)


def assert_row_lines_up(boxes: list[dict]) -> None:
    """Boxes on the same line (they may wrap at 900 px) share their bottom edge and height; none is squeezed."""
    assert boxes
    for b in boxes:
        assert b["width"] >= 60, b
        assert b["align"] in (None, "start", "left"), b
    lines: dict[int, list[dict]] = {}
    for b in boxes:
        lines.setdefault(round(b["top"] / 20), []).append(b)
    for line in lines.values():
        assert max(b["bottom"] for b in line) - min(b["bottom"] for b in line) <= 2, line
        assert max(b["height"] for b in line) - min(b["height"] for b in line) <= 2, line


def alert_under(driver, text: str, keys: list[str]) -> dict:
    """The alert holding `text`, once shown; it sits under the fields `keys` (measured at the same moment)."""
    wait_js(driver, ALERT_BOXES.replace("arguments[0]", repr(text)), timeout=20, message=text)
    time.sleep(0.5)
    alert = driver.execute_script(ALERT_BOXES, text)[0]
    boxes = driver.execute_script(FIELD_BOXES, keys)
    assert alert["top"] >= max(b["bottom"] for b in boxes), (alert, boxes)  # under the row, not beside it
    return alert


# the labels of visible buttons in the main area whose text does not fit (ellipsis or clipped)
CUT_BUTTONS = """
return [...document.querySelectorAll('[data-testid=stMain] button')].filter(b => b.offsetParent !== null)
  .filter(b => [b, ...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
  .map(b => b.innerText.trim());
"""


@pytest.mark.parametrize("width", [900, 1600])
def test_number_fields_read_what_was_typed(url, browser, tmp_path, width):
    """10**20 partitions typed on Create topic and Add partitions reaches the engine and is refused with its message
    (a number input kept the previous 6 or 3 without a word); text that is no number is refused under the row; the
    Reassign options refuse a seed that is no number and offer no Execute."""
    browser.set_window_size(width, 1300)
    huge = str(10 ** 20)

    browser.get(f"{url}/create_topic")
    wait_js(browser, "return document.querySelector('.st-key-ct_name input')", message="the form")
    browser.find_element(By.CSS_SELECTOR, ".st-key-ct_name input").send_keys("typed-test", Keys.TAB)
    wait_js(browser, "return [...document.querySelectorAll('[data-testid=stCheckbox] label')].some("
                     "l => l.innerText.includes('6 partition'))", message="the preview of 6 partitions")
    cut = browser.execute_script(CUT_BUTTONS)
    assert cut == [], f"button labels cut short at {width} px: {cut}"  # Reshuffle showed as "R…" at 900 px
    keys = ["ct_partitions", "ct_rf", "ct_rack_mode", "ct_fixed"]
    boxes = browser.execute_script(FIELD_BOXES, keys)
    assert [b["key"] for b in boxes] == keys
    assert_row_lines_up(boxes)
    type_into(browser, ".st-key-ct_partitions input", huge)
    alert_under(browser, "The partitions must be at most 2147483647", keys)
    assert "6 partition" not in browser.find_element(By.CSS_SELECTOR, "[data-testid=stMain]").text
    assert browser.execute_script(FIELD_BOXES, ["ct_partitions"])[0]["value"] == huge  # as typed, not 1e+20
    assert not browser.execute_script("return [...document.querySelectorAll('button')].some("
                                      "b => b.innerText.includes('Create topic') && !b.disabled)")
    shot(browser, tmp_path, f"numbers-create-huge-{width}")
    type_into(browser, ".st-key-ct_partitions input", "six")
    alert_under(browser, "Partitions must be a whole number, not 'six'", keys)
    shot(browser, tmp_path, f"numbers-create-text-{width}")

    browser.get(f"{url}/topics?topic=orders.v1")
    total = '[class*="st-key-ap_total"] input'
    wait_js(browser, f"return document.querySelector({total!r})", message="Add partitions")
    type_into(browser, total, huge)
    alert_under(browser, "The partitions must be at most 2147483647", ["ap_total"])
    assert not [b for b in browser.find_elements(By.CSS_SELECTOR, "button") if "Add partitions" in b.text]
    shot(browser, tmp_path, f"numbers-grow-huge-{width}")

    browser.get(f"{url}/reassign")
    wait_js(browser, "return [...document.querySelectorAll('button')].some(b => b.innerText.includes("
                     "'Execute reassignment'))", timeout=90, message="the default plan's Execute")
    keys = ["strategy", "ra_seed", "ra_max_moves", "ra_wave_k", "ra_wave_l", "ra_throttle"]
    boxes = browser.execute_script(FIELD_BOXES, keys)
    assert [b["key"] for b in boxes] == keys
    assert_row_lines_up(boxes)
    type_into(browser, ".st-key-ra_seed input", "abc")
    alert_under(browser, "Seed must be a whole number of 0 or more, not 'abc'", keys)
    wait_js(browser, "return ![...document.querySelectorAll('button')].some(b => b.innerText.includes("
                     "'Execute reassignment'))", timeout=20, message="Execute to go")
    shot(browser, tmp_path, f"numbers-reassign-text-{width}")
