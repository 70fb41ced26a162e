"""Issue 17: who may do what. core.policy.access's rules (pure), and the same rules as the dashboard applies them
through Streamlit's AppTest (oidc identities seeded with `AppTest.user`, proxy headers through dashboard.identity),
against a real ZooKeeper holding a sandbox cluster: per-cluster overrides, read-only, no groups, unknown mode,
exposure beyond loopback, a role taken away mid-session, and the audit rows that name the person."""

from __future__ import annotations

import pytest

from core.policy import access
from core.policy.access import AccessRules, Identity, Role
from core.policy.config import ConfigError, KeelConfig, parse_config
from core.audit.store import Store
from dashboard.text import unescape
from tests.support.kafka_tree import dump_tree
from tests.dashboard.test_dashboard_actions import by_prefix, errors  # noqa: F401
from tests.dashboard.test_dashboard_apptest import (  # noqa: F401
    DEMO,
    app,
    live_connection,
    settle,
    texts,
)
from tests.support.sandbox_helpers import Sandbox, running_sandbox

SECRET = "proxy-shared-secret-0123456789"
ALICE = {"is_logged_in": True, "email": "Alice@Example.com", "sub": "alice-sub", "groups": ["kafka-sre"]}


def cfg(text: str, env: dict | None = None) -> KeelConfig:
    return parse_config(text, source="/etc/keel/keel.toml", env=env or {})


BASE = """
[keel]
role = "viewer"
[auth]
mode = "oidc"
[access]
operator = ["group:kafka-sre"]
admin = ["carol@example.com"]
[clusters.dev]
zk = "h:1/dev"
[clusters.prod]
zk = "h:1/prod"
[clusters.prod.access]
operator = ["group:prod-sre", "user:bob-sub"]
"""


def oidc(email=None, sub=None, groups=()) -> Identity:
    return Identity(actor=email or sub, source="oidc", email=email, subject=sub, groups=tuple(groups))


# --- core.policy.access, pure -------------------------------------------------------------------------------


def test_per_cluster_override_replaces_that_roles_list_only():
    c = cfg(BASE)
    alice = oidc("alice@example.com", groups=["kafka-sre"])
    assert access.resolve(alice, c, "dev").role is Role.OPERATOR
    assert access.resolve(alice, c, "prod").role is Role.VIEWER  # prod names its own operators
    bob = oidc("bob@example.com", sub="bob-sub")
    assert access.resolve(bob, c, "prod").role is Role.OPERATOR and access.resolve(bob, c, "dev").role is Role.VIEWER
    carol = oidc("CAROL@example.com")  # emails match case-insensitively; admin is inherited by prod
    assert access.resolve(carol, c, "dev").role is Role.ADMIN and access.resolve(carol, c, "prod").role is Role.ADMIN


def test_no_groups_and_default_role():
    c = cfg(BASE)
    assert access.resolve(oidc(sub="nobody"), c, "dev").role is Role.VIEWER
    c2 = cfg(BASE.replace("[access]\n", '[access]\ndefault = "operator"\n'))
    assert access.resolve(oidc(sub="nobody"), c2, "dev").role is Role.OPERATOR
    star = cfg(BASE.replace('admin = ["carol@example.com"]', 'admin = ["*"]'))
    assert access.resolve(oidc(sub="anyone"), star, "dev").role is Role.ADMIN


def test_read_only_forbids_everything_whatever_the_role():
    c = cfg(BASE.replace('role = "viewer"', 'role = "viewer"\nread_only = true'))
    carol = oidc("carol@example.com")
    d = access.resolve(carol, c, "dev")
    assert d.role is Role.ADMIN and not d.can() and not d.can(Role.ADMIN)
    with pytest.raises(access.ReadOnlyError, match="read-only"):
        access.check(carol, c, "dev", Role.OPERATOR, "create topic t")


def test_check_names_the_actor_role_and_how_to_get_it():
    c = cfg(BASE)
    alice = oidc("alice@example.com", groups=["kafka-sre"])
    assert access.check(alice, c, "dev", Role.OPERATOR, "create topic t").role is Role.OPERATOR
    with pytest.raises(access.RoleDeniedError) as e:
        access.check(alice, c, "dev", access.needed_role("delete-topic"), "delete topic t")
    msg = str(e.value)
    assert "alice@example.com on cluster dev is 'operator'" in msg and "only an admin may delete topics" in msg
    assert "[clusters.dev.access]" in msg and e.value.role is Role.OPERATOR
    assert access.needed_role("rollback") is Role.ADMIN and access.needed_role("roll back the reassignment") \
        is Role.ADMIN and access.needed_role("preferred-election") is Role.OPERATOR


def test_none_mode_beyond_loopback_is_a_viewer():
    c = cfg('[keel]\nrole = "admin"\n[clusters.a]\nzk = "h:1"\n')
    me = access.local_identity("sam")
    assert access.resolve(me, c, "a").role is Role.ADMIN
    d = access.resolve(me, c, "a", exposed=True)
    assert d.role is Role.VIEWER and d.exposed
    with pytest.raises(access.RoleDeniedError, match="configure sign-in"):
        access.check(me, c, "a", Role.OPERATOR, "create topic t", exposed=True)
    for addr, loop in (("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True), ("127.0.0.2", True),
                       ("0.0.0.0", False), ("::", False), ("", False), (None, False), ("10.1.2.3", False)):
        assert access.is_loopback(addr) is loop, addr


def test_the_cli_keeps_its_rights_unless_access_names_it():
    plain = cfg(BASE)
    me = access.cli_identity("sam")
    d = access.check(me, plain, None, Role.ADMIN, "delete-topic")
    assert d.role is Role.ADMIN
    with pytest.raises(access.ReadOnlyError):  # issue 23: read_only binds the command line, cli rules or not
        access.check(me, cfg(BASE.replace('role = "viewer"', 'role = "viewer"\nread_only = true')), "dev",
                     Role.OPERATOR, "create-topic")
    governed = cfg(BASE.replace('admin = ["carol@example.com"]', 'admin = ["carol@example.com", "cli:ops"]')
                   .replace('operator = ["group:kafka-sre"]', 'operator = ["group:kafka-sre", "cli"]'))
    assert access.resolve(me, governed, "dev").role is Role.OPERATOR
    assert access.resolve(access.cli_identity("ops"), governed, "dev").role is Role.ADMIN
    with pytest.raises(access.RoleDeniedError, match='grant "cli:sam" the admin role'):
        access.check(me, governed, "dev", Role.ADMIN, "delete-topic")
    # a person's rules never match the CLI, the CLI's never a person
    assert access.resolve(oidc("sam@example.com"), governed, "dev").role is Role.VIEWER


@pytest.mark.parametrize("text,key,words", [
    ('[auth]\nmode = "kerberos"\n', "auth.mode", "unknown sign-in mode 'kerberos'"),
    ('[auth]\nmode = "oidc"\ngroups_claims = "g"\n', "auth.groups_claims", "unknown key"),
    ('[auth]\nmode = "proxy"\n', "auth.proxy_secret_file", "shared secret"),
    ('[auth]\nmode = "proxy"\nuser_header = "X User"\n', "auth.user_header", "not an HTTP header name"),
    ('[access]\nsuperuser = ["group:x"]\n', "access.superuser", "unknown role 'superuser'"),
    ('[access]\ndefault = "root"\n', "access.default", "unknown role 'root'"),
    ('[access]\noperator = "group:x"\n', "access.operator", "list of principals"),
    ('[access]\noperator = ["sre"]\n', "access.operator", "not a principal: 'sre'"),
    ('[clusters.a.access]\nadmin = ["group:"]\n', "clusters.a.access.admin", "not a principal"),
])
def test_bad_auth_and_access_settings_are_config_errors(text, key, words):
    with pytest.raises(ConfigError) as e:
        cfg('[keel]\nrole = "viewer"\n[clusters.a]\nzk = "h:1"\n' + text)
    assert e.value.key == key and words in str(e.value) and "/etc/keel/keel.toml" in str(e.value)


def test_proxy_secret_from_env_never_echoed():
    text = '[auth]\nmode = "proxy"\n[clusters.a]\nzk = "h:1"\n'
    with pytest.raises(ConfigError) as e:
        cfg(text, env={"KEEL_PROXY_SECRET": "short-s3cr3t"})
    assert "shorter than 16" in str(e.value) and "short-s3cr3t" not in str(e.value)
    c = cfg(text, env={"KEEL_PROXY_SECRET": SECRET})
    assert c.auth.proxy_secret == SECRET and SECRET not in repr(c) and SECRET not in repr(c.auth)


def test_identity_from_headers_refuses_forgeries():
    auth = cfg('[auth]\nmode = "proxy"\n[clusters.a]\nzk = "h:1"\n', env={"KEEL_PROXY_SECRET": SECRET}).auth
    good = {"x-forwarded-user": "pat", "X-Forwarded-Email": "pat@example.com", "X-Forwarded-Groups": "kafka-sre, ops",
            "X-Keel-Proxy-Secret": SECRET}
    who = access.identity_from_headers(good, auth)
    assert (who.actor, who.source, who.subject, who.groups) == ("pat@example.com", "proxy", "pat", ("kafka-sre", "ops"))
    for forged in ({k: v for k, v in good.items() if k != "X-Keel-Proxy-Secret"},
                   {**good, "X-Keel-Proxy-Secret": SECRET[:-1] + "x"}):
        with pytest.raises(access.SignInError) as e:
            access.identity_from_headers(forged, auth)
        assert e.value.claimed == "pat@example.com" and SECRET not in str(e.value)
    with pytest.raises(access.SignInError, match="neither X-Forwarded-User nor X-Forwarded-Email"):
        access.identity_from_headers({"X-Keel-Proxy-Secret": SECRET}, auth)
    with pytest.raises(access.SignInError, match="neither an email nor a subject"):
        access.identity_from_claims({"name": "No One"}, auth)
    assert access.identity_from_claims({"sub": "s1", "groups": "a,b"}, auth).groups == ("a", "b")


def test_rules_merge_keeps_unnamed_roles():
    base = AccessRules(((Role.OPERATOR, ("group:a",)), (Role.ADMIN, ("group:b",))), Role.VIEWER)
    merged = base.merged(AccessRules(((Role.OPERATOR, ("group:c",)),), None))
    assert merged.principals(Role.OPERATOR) == ("group:c",) and merged.principals(Role.ADMIN) == ("group:b",)
    assert merged.default is Role.VIEWER


# --- the dashboard (AppTest) -------------------------------------------------------------------------------


@pytest.fixture
def demo(zk_connect) -> Sandbox:
    with running_sandbox(zk_connect, DEMO) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    path = tmp_path / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(path))
    monkeypatch.delenv("KEEL_ACTOR", raising=False)
    return Store(path)


def write(tmp_path, monkeypatch, text: str):
    path = tmp_path / "keel.toml"
    path.write_text(text)
    monkeypatch.setenv("KEEL_CONFIG", str(path))
    return path


def two_clusters(zk: str, *, extra_keel: str = "", mode: str = "oidc") -> str:
    return (f'[keel]\nrole = "viewer"\n{extra_keel}\n[auth]\nmode = "{mode}"\n'
            '[access]\noperator = ["group:kafka-sre"]\n'
            f'[clusters.dev]\nzk = "{zk}"\n[clusters.prod]\nzk = "{zk}"\n'
            '[clusters.prod.access]\noperator = ["group:prod-sre"]\n')


def side(at) -> str:
    return texts(at.sidebar.markdown) + "\n" + texts(at.sidebar.caption)


def signed_in(user: dict, cluster: str | None = None):
    at = app(cluster)
    at.user = dict(user)
    return at.run()


def test_apptest_per_cluster_override(demo, zk_connect, tmp_path, monkeypatch, store):
    write(tmp_path, monkeypatch, two_clusters(zk_connect))
    at = signed_in(ALICE, "dev")
    assert not at.exception, at.exception
    assert "Signed in as **Alice@Example.com** (oidc)" in side(at) and "role: operator" in side(at)
    at = signed_in(ALICE, "prod")
    assert "role: viewer" in side(at) and "Write actions are disabled" in side(at)


def test_apptest_read_only_and_no_groups(demo, zk_connect, tmp_path, monkeypatch, store):
    write(tmp_path, monkeypatch, two_clusters(zk_connect, extra_keel="read_only = true"))
    at = signed_in(ALICE, "dev")
    assert "role: operator" in side(at) and "read-only" in side(at) and "this instance is read-only" in side(at)
    write(tmp_path, monkeypatch, two_clusters(zk_connect))
    at = signed_in({"is_logged_in": True, "email": "ned@example.com", "sub": "ned"}, "dev")
    assert "no groups" in side(at) and "role: viewer" in side(at)
    at.switch_page("views/create_topic.py").run()
    at.text_input(key="ct_name").input("from-ned").run()
    button = at.button(key="ct_create")
    assert button.disabled and "ned@example.com on cluster dev is 'viewer'" in unescape(button.help)


def test_apptest_unknown_mode_is_a_configuration_error(tmp_path, monkeypatch, store):
    path = write(tmp_path, monkeypatch, '[keel]\nrole = "viewer"\n[auth]\nmode = "kerberos"\n'
                                        '[clusters.a]\nzk = "127.0.0.1:1"\n')
    at = signed_in(ALICE)
    assert not at.exception, at.exception
    err = texts(at.error)
    assert str(path) in err and "auth.mode" in err and "unknown sign-in mode 'kerberos'" in err
    assert not at.sidebar.selectbox  # no cluster is opened


def test_apptest_oidc_not_signed_in_sees_only_the_sign_in(tmp_path, monkeypatch, store):
    write(tmp_path, monkeypatch, two_clusters("127.0.0.1:1/none"))
    at = signed_in({"is_logged_in": False})
    assert not at.exception, at.exception
    assert at.button(key="keel_login") and not at.sidebar.selectbox and "Sign in to use Keel" in texts(at.info)


def test_apptest_operator_acts_and_a_revoked_role_is_refused_at_the_click(demo, zk_connect, tmp_path, monkeypatch,
                                                                         store):
    write(tmp_path, monkeypatch, two_clusters(zk_connect))
    at = signed_in(ALICE, "dev")
    settle(demo, live_connection("dev"), lambda s: True)
    at.switch_page("views/create_topic.py").run()
    at.text_input(key="ct_name").input("by-alice").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    at.button(key="ct_create").click().run()
    assert not at.exception and not at.error, errors(at)
    [created] = store.actions()
    assert (created.kind, created.actor, created.source, created.role, created.cluster) == \
        ("create-topic", "Alice@Example.com", "oidc", "operator", "dev")

    # the operator grant goes away while the page is open: the next click is refused and recorded
    at.text_input(key="ct_name").input("too-late").run()
    by_prefix(at.checkbox, "ct_confirm_").check().run()
    assert not at.button(key="ct_create").disabled
    write(tmp_path, monkeypatch, two_clusters(zk_connect).replace('operator = ["group:kafka-sre"]', ""))
    before = dump_tree(demo.session, "/brokers/topics")
    at.button(key="ct_create").click().run()
    assert "cannot create topic too-late: the role of Alice@Example.com on cluster dev is 'viewer'" in errors(at)
    assert dump_tree(demo.session, "/brokers/topics") == before
    refused = store.actions()[0]
    assert (refused.kind, refused.status, refused.actor, refused.source, refused.role, refused.target) == \
        ("refused", "failed", "Alice@Example.com", "oidc", "viewer", "create topic too-late")
    assert all(a.actor != "root" for a in store.actions())


def test_apptest_operator_cannot_delete_admin_can(demo, zk_connect, tmp_path, monkeypatch, store):
    write(tmp_path, monkeypatch, two_clusters(zk_connect).replace(
        "[access]\n", '[access]\nadmin = ["carol@example.com"]\n'))
    name = next(t.name for t in demo.snapshot().topics if not t.name.startswith("__"))
    for user, disabled in ((ALICE, True), ({"is_logged_in": True, "email": "carol@example.com"}, False)):
        at = signed_in(user, "dev")
        settle(demo, live_connection("dev"), lambda s: True)
        at.switch_page("views/topics.py").run()
        at.selectbox(key="topic").select(name).run()
        typed = at.text_input(key=f"del_confirm::{name}")
        assert typed.disabled is disabled
        if not disabled:
            typed.input(name).run()
        button = at.button(key="del_apply")
        assert button.disabled is disabled, user
        if disabled:
            assert "only an admin may delete topics" in unescape(button.help)


def test_apptest_none_mode_beyond_loopback_is_a_viewer(demo, zk_connect, tmp_path, monkeypatch, store):
    write(tmp_path, monkeypatch, f'[keel]\nrole = "admin"\n[clusters.demo]\nzk = "{zk_connect}"\n')
    monkeypatch.setenv("KEEL_BIND_ADDRESS", "0.0.0.0")
    at = app().run()
    assert not at.exception, at.exception
    assert "Not signed in" in side(at) and "role: viewer" in side(at)
    assert "Keel listens beyond loopback" in texts(at.sidebar.warning)
    at.switch_page("views/create_topic.py").run()
    at.text_input(key="ct_name").input("from-the-network").run()
    button = at.button(key="ct_create")
    assert button.disabled and "configure sign-in" in unescape(button.help)
    monkeypatch.setenv("KEEL_BIND_ADDRESS", "127.0.0.1")
    at = app().run()
    assert "role: admin" in side(at) and not at.sidebar.warning


def test_apptest_proxy_headers_and_forgeries(demo, zk_connect, tmp_path, monkeypatch, store):
    from dashboard import identity

    monkeypatch.setenv("KEEL_PROXY_SECRET", SECRET)
    write(tmp_path, monkeypatch, two_clusters(zk_connect, mode="proxy"))
    headers = {"X-Forwarded-User": "pat", "X-Forwarded-Email": "pat@example.com",
               "X-Forwarded-Groups": "kafka-sre", "X-Keel-Proxy-Secret": SECRET}
    monkeypatch.setattr(identity, "request_headers", lambda: dict(headers))
    at = app("dev").run()
    assert "Signed in as **pat@example.com** (proxy)" in side(at) and "role: operator" in side(at)
    headers["X-Forwarded-Email"] = "mallory@example.com"  # read once per session: a later change is not seen
    at.run()
    assert "pat@example.com" in side(at) and "mallory" not in side(at)

    forged = {k: v for k, v in headers.items() if k != "X-Keel-Proxy-Secret"}
    monkeypatch.setattr(identity, "request_headers", lambda: dict(forged))
    at = app("dev").run()
    assert "Sign-in refused" in texts(at.error) and not at.sidebar.selectbox
    at.run()  # recorded once per session
    [failed] = store.actions(cluster="")
    assert (failed.kind, failed.status, failed.source, failed.target, failed.actor) == \
        ("sign-in", "failed", "proxy", "mallory@example.com", "(unverified)")
    assert SECRET not in (failed.result or "") and SECRET not in texts(at.error)


# --- README: the three modes' examples are working configs -------------------------------------------------


def test_readme_examples_parse():
    import re
    import tomllib
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## Pointing Keel at a real cluster"):text.index("## The dashboard")]
    blocks = re.findall(r"```toml\n(.*?)```", section, re.S)
    assert len(blocks) >= 5
    modes = set()
    for block in blocks:
        doc = tomllib.loads(block)  # every block is valid TOML (secrets.toml included)
        if "redirect_uri" in doc.get("auth", {}):
            continue
        body = block if "[clusters." in block else block + '\n[clusters.x]\nzk = "h:2181/kafka"\n'
        c = parse_config(body, source="/etc/keel/keel.toml", env={"KEEL_PROXY_SECRET": SECRET})
        modes.add(c.auth.mode)
    assert modes == {"none", "oidc", "proxy"}
