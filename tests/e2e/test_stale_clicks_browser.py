"""A click that arrives with an edit the page has not drawn yet writes nothing: the same race as
tests/dashboard/test_stale_clicks.py, through a real keyboard and mouse in headless Chromium."""

from __future__ import annotations

import time

from core import zkformat as zf
from tests.dashboard.test_stale_clicks import STALE, partitions_of
from tests.e2e.test_e2e_chromium import body_text, click_text, page_idle, screenshot, wait_for


def field(driver, label):
    return wait_for(lambda: [e for e in driver.find_elements("css selector", f'input[aria-label="{label}"]')
                             if e.is_displayed()], 45, label)[0]


def type_name(driver, name: str) -> None:
    """Type the topic name once the page's first run has ended: keys sent while a run still draws the page can land
    in a field that run then replaces, and are lost (once, with four test workers). Typed again, at most twice, when
    the field does not hold them."""
    for _ in range(3):
        wait_for(lambda: page_idle(driver), 45, "the page to be idle")
        box = field(driver, "Topic name")
        box.send_keys(name)
        time.sleep(0.5)
        if field(driver, "Topic name").get_attribute("value") == name:
            return
        field(driver, "Topic name").clear()
    raise AssertionError(f"the Topic name field never held {name!r}")


def test_typing_then_clicking_in_a_browser(sandbox, operator_url, browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    browser.get(operator_url + "/create_topic")
    type_name(browser, "race-t")
    wait_for(lambda: "I have reviewed the placement of race-t (6 partitions" in body_text(browser), 45,
             "the preview of 6 partitions")
    click_text(browser, "label", "I have reviewed the placement of race-t")
    wait_for(lambda: not browser.find_elements("xpath", "//button[contains(., 'Create topic') and @disabled]"),
             20, "Create to be enabled")
    p = field(browser, "Partitions")
    p.send_keys(Keys.CONTROL, "a")
    p.send_keys("12")  # no Enter, no Tab: the click below is what takes the focus away
    click_text(browser, "button", "Create topic", timeout=5)
    wait_for(lambda: STALE in body_text(browser) or sandbox.session.exists(zf.topic_path("race-t")), 30,
             "the click's outcome")
    time.sleep(1)
    screenshot(browser, tmp_path, "stale-click")
    assert partitions_of(sandbox.session, "race-t") is None, "created from a preview that was no longer on screen"
    assert STALE in body_text(browser)
    wait_for(lambda: "I have reviewed the placement of race-t (12 partitions" in body_text(browser), 30,
             "the preview of 12 partitions")
