"""Issue 24, items 3 and 4, in a real browser: a topic's Edit config tab driven from the keyboard in headless Chromium,
against the real app under `streamlit run` and a sandbox cluster in a real ZooKeeper.

3. The key picker of the overrides editor (a SelectboxColumn: react-select filters the options by substring, and
   Enter or Tab takes the first one shown). Typing a key in full then Tab must give that key, not the first key that
   contains it (`retention.ms` gave `delete.retention.ms`).
4. Applying a topic's first override keeps the Edit config tab open, with the success message in it (the tabs jumped to
   Add partitions, pre-filled with its "partitions increased" warning, the message hidden in the other tab).

The data editor is a canvas (glide-data-grid); its cells are read from the accessible table it keeps in the DOM.
"""

from __future__ import annotations

import os
import time

import pytest

from sandbox.seed import SandboxSpec
from tests.support.browser import CHROMEDRIVER, CHROMIUM, DashboardDidNotStart, chromium, serve_dashboard
from tests.support.sandbox_helpers import running_sandbox, wait_until

selenium = pytest.importorskip("selenium")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

SPEC = SandboxSpec(brokers=3, racks=1, topics=10, seed=3)
TABS = "[data-testid=stTabs] [role=tab]"
ROW = 35  # px: glide-data-grid's header and row height in Streamlit

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="Debian chromium and chromedriver are needed")


@pytest.fixture(scope="module")
def console(zk_server, tmp_path_factory):
    """A sandbox cluster and an operator's console on it, shared by the tests of this file (each uses its own topic)."""
    from kazoo.client import KazooClient

    chroot = f"/e2e-topic-config-{os.getpid()}"
    root = KazooClient(hosts=zk_server, timeout=10)
    root.start(timeout=30)
    root.ensure_path(chroot)
    root.stop()
    root.close()
    connect = zk_server + chroot
    work = tmp_path_factory.mktemp("console")
    config = work / "keel.toml"
    config.write_text(f'[keel]\nrole = "operator"\n\n[clusters.e2e]\nzk = "{connect}"\n')
    try:
        with running_sandbox(connect, SPEC) as sb:
            assert sb.emulator.wait_idle(10)
            try:
                with serve_dashboard(config, work) as url, chromium(1500, 1900) as driver:
                    yield sb, url, driver
            except DashboardDidNotStart as e:
                pytest.fail(str(e))
    finally:  # best effort: keep a shared ZooKeeper tidy
        root = KazooClient(hosts=zk_server, timeout=10)
        try:
            root.start(timeout=10)
            root.delete(chroot, recursive=True)
        except Exception:
            pass
        finally:
            root.stop()
            root.close()


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except Exception:  # the page is being redrawn: an element went stale
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def _body(d) -> str:
    return d.find_element("tag name", "body").text


def selected_tab(d) -> str:
    return d.execute_script(f"const t = document.querySelector('{TABS}[aria-selected=true]');"
                            "return t ? t.innerText : null;") or ""


def _open_edit_config(d, url: str, topic: str):
    d.get(f"{url}/topics?topic={topic}")
    tab = _wait(lambda: next((e for e in d.find_elements("css selector", TABS) if "Edit config" in e.text), None),
                60, "the topic's tabs")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", tab)
    tab.click()
    _wait(lambda: "Edit config" in selected_tab(d), 10, "the Edit config tab")
    editor = _wait(lambda: d.find_element("css selector", "[class*=st-key-cfg_edit] [data-testid=stDataFrame]"),
                   20, "the overrides editor")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", editor)
    time.sleep(0.3)
    return editor


def _type_a_new_row(d, editor, rows: int, key: str, value: str) -> None:
    """Add a row with the toolbar's button, then from the keyboard: the key, Tab, the value, Enter."""
    ActionChains(d).move_to_element(editor).perform()
    add = _wait(lambda: d.find_element("css selector", "[class*=st-key-cfg_edit] button[aria-label='Add row']"),
                10, "the editor's Add row button")
    d.execute_script("arguments[0].click();", add)  # the toolbar shows on hover, over the caption above
    _wait(lambda: len(_cells(d, "cfg_edit")) >= 2 * (rows + 1), 10, "the new row")
    _idle(d)  # the new row reruns the page: typing into a grid being redrawn loses keys
    r = editor.rect
    # the new row's Key cell (offsets from the editor's centre): past the row marker, under the header and rows
    ActionChains(d).move_to_element_with_offset(editor, -r["width"] / 2 + 100,
                                                -r["height"] / 2 + ROW * (rows + 1) + ROW // 2).click().perform()
    time.sleep(0.3)
    # as a person types: the first key opens the picker with that letter, the rest goes into its search field
    ActionChains(d).send_keys(key[0]).perform()
    _wait(lambda: d.find_elements("css selector", "[id*=-option-]"), 10, "the key picker's options")
    for ch in key[1:]:
        ActionChains(d).send_keys(ch).perform()
        time.sleep(0.03)
    typed = d.execute_script("return document.activeElement.value;")
    assert typed == key, f"the key picker got {typed!r}"
    ActionChains(d).send_keys(Keys.TAB).perform()
    time.sleep(0.5)
    ActionChains(d).send_keys(value).perform()
    time.sleep(0.2)
    ActionChains(d).send_keys(Keys.ENTER).perform()


def _idle(d, quiet: float = 1.0, timeout: float = 20) -> None:
    """Until no script run has been under way for `quiet` seconds (Streamlit's status widget shows while one is)."""
    since = time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < quiet:
        if d.find_elements("css selector", "[data-testid=stStatusWidget]"):
            since = time.monotonic()
        if time.monotonic() > deadline:
            pytest.fail("the page kept running")
        time.sleep(0.1)


def _cells(d, key: str) -> list[str]:
    """The text of every cell glide-data-grid keeps in its accessible table, for the element with this key."""
    return d.execute_script(f"return [...document.querySelectorAll('[class*=st-key-{key}] table td')]"
                            ".map(c => c.innerText.trim());")


OPEN_PANEL = ("[...document.querySelectorAll('[data-testid=stTabPanel]')]"
              ".find(p => getComputedStyle(p).display !== 'none')")


def _diff_keys(d) -> list[str]:
    """The Key column of the change preview (Key, Change, Current, New, Kafka default): the open tab's second table
    (the editor, then the preview, in the left column; a st.dataframe without selection carries no key class)."""
    cells = d.execute_script(f"const p = {OPEN_PANEL}; const t = p && p.querySelectorAll('[data-testid=stDataFrame]');"
                             "return t && t.length > 2 ? [...t[1].querySelectorAll('table td')]"
                             ".map(c => c.innerText.trim()) : [];")
    return cells[0::5]


def _topic(sb, *, without_overrides: bool = False) -> tuple[str, int]:
    for t in sb.snapshot().topics:
        if t.name.startswith("_") or (without_overrides and t.config):
            continue
        return t.name, len(t.config)
    pytest.fail("the sandbox has no suitable topic")


@pytest.mark.parametrize("key, value", [("retention.ms", "86400000"), ("segment.ms", "3600000"),
                                        ("cleanup.policy", "compact")])
def test_a_key_typed_in_full_then_tab_is_that_key(console, key, value, tmp_path):
    sb, url, d = console
    topic, rows = _topic(sb)
    if key in sb.snapshot().topic(topic).config:
        topic, rows = _topic(sb, without_overrides=True)
    editor = _open_edit_config(d, url, topic)
    _type_a_new_row(d, editor, rows, key, value)
    got = _wait(lambda: _diff_keys(d), 20, "the change preview")
    d.save_screenshot(str(tmp_path / f"typed-{key}.png"))
    assert got == [key], f"typed {key!r} then Tab: the preview changes {got}"
    assert "Edit config" in selected_tab(d)


def test_the_first_override_keeps_the_edit_config_tab_with_its_message(console, tmp_path):
    sb, url, d = console
    topic, rows = _topic(sb, without_overrides=True)
    editor = _open_edit_config(d, url, topic)
    _type_a_new_row(d, editor, rows, "segment.ms", "3600000")  # a key no other contains: only item 4 here
    _wait(lambda: _diff_keys(d) == ["segment.ms"], 20, "the change preview")
    box = _wait(lambda: next(e for e in d.find_elements("css selector", "label")
                             if "Apply 1 config change(s)" in e.text), 10, "the confirmation")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)
    box.click()
    button = _wait(lambda: next(e for e in d.find_elements("css selector", "button")
                                if e.text.strip() == "Apply config" and e.is_enabled()), 10, "Apply config enabled")
    button.click()
    wait_until(lambda: sb.snapshot().topic(topic).config.get("segment.ms") == "3600000", timeout=20)
    _wait(lambda: "1 config override(s)" in _body(d), 20, "the page to show the new override")
    time.sleep(2.5)  # a live update of the page (every 2 s) must not move it either
    d.save_screenshot(str(tmp_path / "first-override.png"))
    assert "Edit config" in selected_tab(d), f"the tabs jumped to {selected_tab(d)!r}"
    message = d.execute_script(f"const p = {OPEN_PANEL}; return p ? p.innerText : '';")
    assert "action #" in message and "segment.ms" in message, message
    assert "If partitions are increased" not in message
