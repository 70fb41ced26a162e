"""Issue 17 end to end: sign-in with a real OpenID Connect provider, in headless Chromium.

oidc-provider-mock runs a real discovery / JWKS / authorization-code server on 127.0.0.1 with two predefined users:
vera (group kafka-viewers: no grant, a viewer) and olaf (group kafka-sre: operator). The app runs under
`streamlit run` with `[auth] mode = "oidc"` and its provider settings in a secrets file of the test's own
(`--secrets.files`), redirect URI and browser on the same host name. A sign-in the provider denies is recorded;
vera sees every action disabled; sign-out ends the session; olaf creates a topic and History names him with source
oidc. Afterwards the OIDC client secret, the cookie secret and the cluster's ZooKeeper password are searched for in
every page the browser saw, the server's log and the audit store: none appears."""

from __future__ import annotations

import getpass
import secrets as pysecrets

import pytest

from core.audit.store import Store
from sandbox.processes import zkserver
from tests.support.auth_helpers import HOST, oidc_provider, serve_app
from tests.e2e.test_e2e_chromium import (  # noqa: F401
    body_text,
    click_text,
    screenshot,
    type_until,
    wait_for,
)

oidc_provider_mock = pytest.importorskip("oidc_provider_mock")
from selenium.common.exceptions import WebDriverException  # noqa: E402
CLIENT_SECRET = "oidc-client-s3cret-" + pysecrets.token_hex(8)
COOKIE_SECRET = "cookie-s3cret-" + pysecrets.token_hex(16)
ZK_PASSWORD = "zk-e2e-pa55-" + pysecrets.token_hex(4)


def users():
    User = oidc_provider_mock.User
    return [User(sub="vera", claims={"email": "vera@example.com", "groups": ["kafka-viewers"]}),
            User(sub="olaf", claims={"email": "olaf@example.com", "groups": ["kafka-sre"]})]


@pytest.fixture
def oidc_app(sandbox, zk_connect, tmp_path):
    with oidc_provider(users()) as provider:
        port = zkserver.free_port()
        secrets_file = tmp_path / "secrets.toml"
        secrets_file.write_text(
            f'[auth]\nredirect_uri = "http://{HOST}:{port}/oauth2callback"\ncookie_secret = "{COOKIE_SECRET}"\n'
            f'client_id = "keel"\nclient_secret = "{CLIENT_SECRET}"\n'
            f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n')
        config = (f'[keel]\nrole = "viewer"\n[auth]\nmode = "oidc"\n[access]\noperator = ["group:kafka-sre"]\n'
                  f'[clusters.e2e]\nzk = "{zk_connect}"\ndescription = "oidc sandbox"\n')
        with serve_app(tmp_path, config, port=port, args=["--secrets.files", str(secrets_file)],
                       env={"KEEL_ZK_DIGEST_E2E": f"keel:{ZK_PASSWORD}"}) as url:
            yield url


class Seen:
    """Every page source the browser showed, for the secrets search."""

    def __init__(self, driver):
        self.driver, self.sources = driver, []

    def body(self) -> str:
        try:  # a page being replaced (a redirect) has no body for a moment
            self.sources.append(self.driver.page_source)
            return body_text(self.driver)
        except WebDriverException:
            return ""


def sign_in(driver, url: str, who: str, seen: Seen) -> None:
    driver.get(url + "/")
    wait_for(lambda: "Sign in to use Keel" in seen.body(), 45, "the sign-in screen")
    click_text(driver, "button", "Sign in")
    wait_for(lambda: "Authorize Client" in seen.body(), 30, "the provider's authorization form")
    click_text(driver, "button", who)


def test_oidc_sign_in_roles_sign_out_and_audit(oidc_app, browser, tmp_path):
    url, seen = oidc_app, Seen(browser)
    store = Store(tmp_path / "keel.sqlite")

    # a sign-in the provider denies goes to the audit store
    browser.get(url + "/")
    wait_for(lambda: "Sign in to use Keel" in seen.body(), 45, "the sign-in screen")
    click_text(browser, "button", "Sign in")
    wait_for(lambda: "Authorize Client" in seen.body(), 30, "the provider's authorization form")
    click_text(browser, "button", "Deny")
    wait_for(lambda: "Sign in to use Keel" in seen.body(), 30, "the sign-in screen again")
    failed = wait_for(lambda: [a for a in store.actions() if a.kind == "sign-in"], 15, "the failed sign-in row")
    assert (failed[0].status, failed[0].source, failed[0].cluster) == ("failed", "oidc", "")
    assert "access_denied" in failed[0].result

    # vera: no grant, so a viewer; every action disabled
    sign_in(browser, url, "vera", seen)
    wait_for(lambda: "Signed in as vera@example.com (oidc)" in seen.body(), 45, "vera signed in")
    assert "role: viewer" in seen.body()
    for page, blocked in (("/create_topic", "cannot create topic"), ("/leaders", "cannot trigger a preferred leader")):
        browser.get(url + page)
        wait_for(lambda b=blocked: b in seen.body() and "Signed in as vera@example.com" in seen.body(), 45, page)
        assert "the role of vera@example.com on cluster e2e is 'viewer'; only an operator may write" in seen.body()
        primary = browser.find_elements("css selector", 'button[data-testid="stBaseButton-primary"]')
        assert all(not b.is_enabled() for b in primary), page
        assert primary or page != "/create_topic"
    screenshot(browser, tmp_path, "oidc-viewer")

    # sign-out ends the session: the provider's end-session page, then the sign-in screen
    browser.get(url + "/")
    click_text(browser, "button", "Sign out", timeout=45)
    wait_for(lambda: "Sign in to use Keel" in seen.body() or browser.find_elements(
        "xpath", "//button[contains(., 'Log out') or contains(., 'Logout') or contains(., 'End')]"), 30, "sign-out")
    if "Sign in to use Keel" not in seen.body():
        browser.find_elements("xpath", "//button")[0].click()  # the provider asks to confirm the end of the session
    wait_for(lambda: "Sign in to use Keel" in seen.body(), 30, "the sign-in screen after sign-out")
    browser.get(url + "/topics")
    wait_for(lambda: "Sign in to use Keel" in seen.body(), 30, "no session any more")
    assert not any(c["name"].startswith("_streamlit_user") for c in browser.get_cookies())

    # olaf: operator; creates a topic; History names him, source oidc
    sign_in(browser, url, "olaf", seen)
    wait_for(lambda: "Signed in as olaf@example.com (oidc)" in seen.body(), 45, "olaf signed in")
    assert "role: operator" in seen.body()
    browser.get(url + "/create_topic")
    type_until(browser, "input[placeholder='e.g. orders.v1']", "made-by-olaf",
               lambda: "I have reviewed the placement of made-by-olaf" in seen.body(), 60, "the preview")
    click_text(browser, "label", "I have reviewed the placement of made-by-olaf")
    click_text(browser, "button", "Create topic")
    wait_for(lambda: "Created topic made-by-olaf" in seen.body(), 30, "the topic to be created")
    [created] = [a for a in store.actions() if a.kind == "create-topic"]
    assert (created.actor, created.source, created.role, created.cluster) == \
        ("olaf@example.com", "oidc", "operator", "e2e")
    browser.get(f"{url}/history?action={created.id}")
    wait_for(lambda: f"Action #{created.id}: create-topic made-by-olaf" in seen.body(), 45, "the History row")
    assert "By olaf@example.com (via oidc, role operator)" in seen.body()
    screenshot(browser, tmp_path, "oidc-history")

    # nobody in the audit store is the server's OS user, and no secret is anywhere
    assert all(a.actor != getpass.getuser() for a in store.actions())
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("keel.sqlite"))
    log = (tmp_path / "streamlit.log").read_text()
    for secret in (CLIENT_SECRET, COOKIE_SECRET, ZK_PASSWORD):
        for where, text in (("a page", "\n".join(seen.sources)), ("the server log", log),
                            ("the audit store", files.decode("utf-8", "replace"))):
            assert secret not in text, f"a secret appears in {where}"
