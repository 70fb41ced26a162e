"""Issue 24, item 1: what an open browser session costs the server (the real app under `streamlit run`, a sandbox
cluster in a real ZooKeeper, headless Chromium).

The browser's WebSocket is wrapped before the app loads (a script the DevTools protocol adds to every new
document), so the test reads what the session sent and received, and when its tab was hidden. An idle session on
an unchanged cluster must receive next to nothing (no live view redrawn, nothing resent), must still show a change
of the cluster within a few seconds, and a hidden tab must send no request at all until it is shown again.
"""

from __future__ import annotations

import os
import time

import pytest

from sandbox.processes import zkserver
from sandbox.seed import SandboxSpec
from tests.support.browser import CHROMEDRIVER, CHROMIUM, DashboardDidNotStart, chromium, serve_dashboard
from tests.support.sandbox_helpers import running_sandbox, wait_until

pytest.importorskip("selenium")

SPEC = SandboxSpec(brokers=5, racks=3, topics=6, seed=3)
WIDE = SandboxSpec(brokers=30, racks=3, topics=1000, partitions=100, seed=11)  # issue 24's 1,000 x 100 shape
TOPICS_DRAWN = ("[...document.querySelectorAll('h1')].some(h => h.innerText.trim() === 'Topics') && "
                "document.querySelector('[data-testid=stDataFrame] canvas') && "
                "[...document.querySelectorAll('p')].some(p => / of [0-9,]+ topics/.test(p.innerText))")
BROKER_TABLE = 'table[aria-label="Brokers of the cluster"]'
OVERVIEW_DRAWN = (f"document.querySelector('{BROKER_TABLE}') && "
                  "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
IDLE_SECONDS = 10.0
IDLE_SESSIONS = 5  # beside the Topics page of the 1,000 x 100 cluster: the issue saw the server saturate at six

# Counts the app's WebSocket traffic and the tab's visibility changes, from before the app's own scripts run.
WS_SPY = """
(() => {
  const log = window.__keelWs = {sent: [], received: [], visibility: [[performance.now(), document.visibilityState]]};
  const size = d => (d && (d.byteLength ?? d.size ?? d.length)) || 0;
  const Native = window.WebSocket;
  class Counted extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => log.received.push([performance.now(), size(e.data)]));
    }
    send(data) { log.sent.push([performance.now(), size(data)]); return super.send(data); }
  }
  window.WebSocket = Counted;
  document.addEventListener('visibilitychange',
                            () => log.visibility.push([performance.now(), document.visibilityState]));
})();
"""

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed (apt-get install chromium "
                                       "chromium-driver)")


@pytest.fixture
def sandbox(zk_connect):
    with running_sandbox(zk_connect, SPEC) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


def serve(zk_connect: str, tmp_path):
    config = tmp_path / "keel.toml"
    config.write_text(f'[keel]\nrole = "viewer"\nread_only = true\n\n[clusters.e2e]\nzk = "{zk_connect}"\n')
    try:
        return serve_dashboard(config, tmp_path)
    except DashboardDidNotStart as e:
        pytest.fail(str(e))


@pytest.fixture
def app_url(sandbox, zk_connect, tmp_path):
    with serve(zk_connect, tmp_path) as url:
        yield url


@pytest.fixture
def browser():
    with chromium(1400, 1000) as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WS_SPY})
        yield driver


def wait_js(driver, js: str, timeout: float = 60.0, message: str = "") -> None:
    wait_until(lambda: driver.execute_script(f"return !!({js})"), timeout=timeout, interval=0.2,
               message=message or js)


def traffic(driver, start: float, end: float | None = None) -> tuple[int, int, int]:
    """(messages sent, messages received, bytes received) between two performance.now() times."""
    return tuple(driver.execute_script(
        "const [a, b] = [arguments[0], arguments[1] ?? Infinity], w = window.__keelWs;"
        "const inside = xs => xs.filter(([t]) => t >= a && t < b);"
        "return [inside(w.sent).length, inside(w.received).length,"
        "        inside(w.received).reduce((n, [, s]) => n + s, 0)];", start, end))


def now(driver) -> float:
    return driver.execute_script("return performance.now()")


def open_overview(driver, url: str) -> None:
    driver.get(url)
    wait_js(driver, OVERVIEW_DRAWN, message="the Overview's broker table and charts")
    time.sleep(3)  # let the first run's trailing messages and the first ticks pass


def test_an_idle_session_on_an_unchanged_cluster_receives_next_to_nothing(app_url, browser, sandbox):
    """Before issue 24 every live fragment redrew every 2 s: the Overview's table, metrics and both charts were
    resent (tens of kB per refresh) and each refresh cost the server a full script run."""
    open_overview(browser, app_url)
    start = now(browser)
    time.sleep(IDLE_SECONDS)
    sent, received, received_bytes = traffic(browser, start)
    assert sent >= 3, "the session still asks every 2 s whether something changed"
    # what one answer may cost: Streamlit's run bookkeeping and the ticker itself (about 2.7 kB); a redraw of the
    # Overview resends its table, metrics and charts (about 15 kB on this 5-broker cluster)
    assert received_bytes < 4_000 * sent, (
        f"{received_bytes:,} bytes in {received} messages for {sent} ticks in {IDLE_SECONDS:g} s on an unchanged "
        "cluster")

    # still live: a broker stops, the page shows it without a reload
    victim = sandbox.seed.brokers[-1]
    sandbox.stop_broker(victim)
    wait_js(browser, f"[...document.querySelectorAll('{BROKER_TABLE} tr')].some(tr => "
                     f"tr.innerText.startsWith('{victim}') && tr.innerText.includes('DOWN'))",
            timeout=8, message=f"broker {victim} shown DOWN without a reload")


def test_a_hidden_tab_asks_for_nothing_and_catches_up_when_shown(app_url, browser, sandbox):
    """Before issue 24 the browser's 2 s timers kept asking the server to rerun a hidden tab's fragments."""
    open_overview(browser, app_url)
    page = browser.current_window_handle
    browser.switch_to.new_window("tab")  # the Overview's tab is now behind this one: hidden
    browser.get("about:blank")
    victim = sandbox.seed.brokers[-1]
    time.sleep(4)
    sandbox.stop_broker(victim)  # changes while nobody looks
    time.sleep(6)
    browser.close()
    browser.switch_to.window(page)  # shown again
    shown_at = now(browser)
    wait_js(browser, f"[...document.querySelectorAll('{BROKER_TABLE} tr')].some(tr => "
                     f"tr.innerText.startsWith('{victim}') && tr.innerText.includes('DOWN'))",
            timeout=6, message=f"broker {victim} shown DOWN once the tab is visible again")
    assert now(browser) - shown_at < 4_000, "a tab shown again asks at once, not after a long timer"
    hidden = browser.execute_script("return window.__keelWs.visibility")
    hidden_at = next(t for t, state in hidden if state == "hidden")
    back_at = max(t for t, state in hidden if state == "visible")
    assert back_at - hidden_at > 8_000
    sent, received, _ = traffic(browser, hidden_at + 500, back_at)  # half a second for a request under way
    assert sent == 0, f"the hidden tab sent {sent} message(s) in {(back_at - hidden_at) / 1000:.1f} s"


def test_topics_opens_within_seconds_on_1000_topics_of_100_partitions_beside_idle_sessions(tmp_path, browser):
    """Issue 24, item 2: the Topics page of a 1,000 x 100 cluster took 28 s to open. Each idle session's live
    fragments reran every 2 s, each run followed by a full garbage collection of the 100,000-partition snapshot
    (0.3 s of the interpreter lock): a few open sessions kept the server busy and a new page waited its turn (35 s
    beside five idle Overview sessions on the code before the fix, 2.4 s after, on a loaded machine; the bound is
    loose for a loaded 2-core machine, bench/sessions.py and bench/pages.py measure the 3 s target). A ZooKeeper
    of the test's own: thrown away whole, not 200,000 znodes deleted one by one."""
    with zkserver.start(zkserver.free_port(), tmp_path / "zk") as server, \
            running_sandbox(server.connect, WIDE) as sb:
        assert sb.emulator.wait_idle(120)
        with serve(server.connect, tmp_path) as url:
            browser.get(url)
            wait_js(browser, OVERVIEW_DRAWN, timeout=300, message="the first load of 100,000 partitions")
            for _ in range(IDLE_SESSIONS - 1):  # idle sessions on the Overview, each in its own (visible) window
                browser.switch_to.new_window("window")
                browser.get(url)
                wait_js(browser, OVERVIEW_DRAWN, timeout=120, message="an Overview beside the others")
            time.sleep(4)
            browser.switch_to.new_window("window")
            started = time.perf_counter()
            browser.get(f"{url}/topics")
            wait_js(browser, TOPICS_DRAWN, timeout=120, message="the Topics page")
            seconds = time.perf_counter() - started
    assert seconds < 12, f"the Topics page took {seconds:.1f} s to draw beside {IDLE_SESSIONS} idle sessions"
