"""Issue 17 end to end: sign-in through an authenticating reverse proxy, in headless Chromium.

The app runs with `[auth] mode = "proxy"` and the proxy's shared secret in $KEEL_PROXY_SECRET. A small reverse proxy
on 127.0.0.1 (tests/support/auth_helpers.HeaderProxy: HTTP and Streamlit's websocket) plays oauth2-proxy: it strips the
identity headers a client sends and sets X-Forwarded-User / -Email / -Groups for pat plus the shared secret. Pat
signs in through it, acts as an operator, and the audit row names pat with source proxy. Clients that reach Keel
around the proxy are refused, whatever identity headers they forge: one with no headers, one forging pat's headers
without the secret, one with a wrong secret; and headers forged through the proxy are replaced by the proxy's."""

from __future__ import annotations

import getpass

import pytest

from core.audit.store import Store
from tests.support.auth_helpers import HOST, HeaderProxy, serve_app
from tests.e2e.test_e2e_chromium import (  # noqa: F401
    body_text,
    click_text,
    screenshot,
    type_until,
    wait_for,
)

from selenium.common.exceptions import WebDriverException  # noqa: E402

SECRET = "proxy-e2e-shared-secret-7f3a9c"
PAT = {"X-Forwarded-User": "pat", "X-Forwarded-Email": "pat@example.com", "X-Forwarded-Groups": "kafka-sre,ops"}
MALLORY = {"X-Forwarded-User": "mallory", "X-Forwarded-Email": "mallory@example.com",
           "X-Forwarded-Groups": "kafka-admins"}


def body(driver) -> str:
    try:
        return body_text(driver)
    except WebDriverException:
        return ""


@pytest.fixture
def proxied(sandbox, zk_connect, tmp_path):
    config = ('[keel]\nrole = "viewer"\n[auth]\nmode = "proxy"\n'
              '[access]\noperator = ["group:kafka-sre"]\nadmin = ["group:kafka-admins"]\n'
              f'[clusters.e2e]\nzk = "{zk_connect}"\n')
    with serve_app(tmp_path, config, env={"KEEL_PROXY_SECRET": SECRET}) as url:
        port = int(url.rsplit(":", 1)[1])
        with HeaderProxy((HOST, port), {**PAT, "X-Keel-Proxy-Secret": SECRET}) as proxy:
            yield url, proxy


def refused(driver, url: str) -> str:
    driver.get(url + "/")
    wait_for(lambda: "its identity headers are not trusted" in body(driver), 45, "the refusal")
    text = body(driver)
    assert "did not come through Keel's authenticating proxy" in text and "ZooKeeper" not in text
    return text


def test_proxy_sign_in_and_forged_headers(proxied, browser, tmp_path):
    direct, proxy = proxied
    store = Store(tmp_path / "keel.sqlite")

    # through the proxy: pat, an operator by group, acts; the row names pat with source proxy
    browser.get(proxy.url + "/create_topic")
    wait_for(lambda: "Signed in as pat@example.com (proxy)" in body(browser), 45, "pat signed in")
    assert "groups kafka-sre, ops" in body(browser) and "role: operator" in body(browser)
    type_until(browser, "input[placeholder='e.g. orders.v1']", "made-by-pat",
               lambda: "I have reviewed the placement of made-by-pat" in body(browser), 60, "the preview")
    click_text(browser, "label", "I have reviewed the placement of made-by-pat")
    click_text(browser, "button", "Create topic")
    wait_for(lambda: "Created topic made-by-pat" in body(browser), 30, "the topic to be created")
    [created] = [a for a in store.actions() if a.kind == "create-topic"]
    assert (created.actor, created.source, created.role) == ("pat@example.com", "proxy", "operator")
    screenshot(browser, tmp_path, "proxy-operator")

    # around the proxy: no headers, forged headers without the secret, a wrong secret -> refused, recorded
    refused(browser, direct)
    with HeaderProxy((HOST, int(direct.rsplit(":", 1)[1])), MALLORY, strip=False) as forger:
        refused(browser, forger.url)
    with HeaderProxy((HOST, int(direct.rsplit(":", 1)[1])), {**MALLORY, "X-Keel-Proxy-Secret": SECRET[:-2] + "xx"},
                     strip=False) as forger:
        text = refused(browser, forger.url)
    assert SECRET not in text and SECRET[:-2] not in browser.page_source
    screenshot(browser, tmp_path, "proxy-forged")
    failed = [a for a in store.actions() if a.kind == "sign-in"]
    assert [(a.status, a.source) for a in failed] == [("failed", "proxy")] * 3
    assert sorted(a.target for a in failed) == ["mallory@example.com", "mallory@example.com", "unknown"]

    # mallory's headers sent through the proxy are stripped: the proxy's own identity wins
    with HeaderProxy((HOST, proxy.port), MALLORY, strip=False) as through:
        browser.get(through.url + "/")
        wait_for(lambda: "Signed in as pat@example.com (proxy)" in body(browser), 45, "the proxy's identity")
        assert "mallory" not in body(browser)

    assert all(a.actor not in (getpass.getuser(), "root") for a in store.actions())
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("keel.sqlite"))
    assert SECRET.encode() not in files and SECRET not in (tmp_path / "streamlit.log").read_text()
