"""core.policy.config: parsing keel.toml, env digests, typed errors naming file and key, the role gate."""

from __future__ import annotations

import pytest

from core.policy.config import (
    DEFAULT_CONFIG,
    ClusterConfig,
    ConfigError,
    KeelConfig,
    Role,
    TlsConfig,
    can_act,
    config_path,
    digest_env_var,
    load_config,
    parse_config,
    require_operator,
)
from core.errors import KeelError, PermissionDeniedError, ValidationError

SAMPLE = """
[keel]
role = "operator"        # viewer | operator
read_only = false

[clusters.demo]
zk = "127.0.0.1:2181/keel-demo"
description = "Sandbox cluster started by make run"

[clusters.prod-eu]
zk = "zk1:2181,zk2:2181/kafka"
digest = "keel:s3cret"
tls = { ca = "certs/ca.pem", cert = "/abs/client.pem", key = "certs/client.key" }
connect_timeout = 2.5
"""


def write(tmp_path, text, name="keel.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_parses_sample(tmp_path):
    p = write(tmp_path, SAMPLE)
    cfg = load_config(p, env={})
    assert cfg.role is Role.OPERATOR and cfg.read_only is False
    assert list(cfg.clusters) == ["demo", "prod-eu"]  # file order kept
    assert cfg.default_cluster == "demo"
    demo = cfg.clusters["demo"]
    assert demo == ClusterConfig(name="demo", zk="127.0.0.1:2181/keel-demo",
                                 description="Sandbox cluster started by make run")
    assert demo.connect_timeout == 5.0 and demo.digest is None and demo.tls is None
    eu = cfg.cluster("prod-eu")
    assert eu.digest == "keel:s3cret" and eu.digest_user == "keel"
    assert eu.tls == TlsConfig(ca=str(tmp_path / "certs/ca.pem"), cert="/abs/client.pem",
                               key=str(tmp_path / "certs/client.key"))
    assert eu.connect_timeout == 2.5
    assert cfg.path == str(p)
    assert can_act(cfg)


def test_a_cluster_read_through_its_brokers_needs_no_zookeeper():
    """KRaft clusters have no ZooKeeper: bootstrap alone is a cluster, read through the Admin API (issue 26)."""
    cfg = parse_config('[clusters.k]\nbootstrap = "b1:9092,b2:9092"\npoll_interval = 5\n', env={})
    k = cfg.clusters["k"]
    assert k.zk is None and k.through_brokers and k.bootstrap == "b1:9092,b2:9092" and k.poll_interval == 5.0
    demo = parse_config(SAMPLE, env={}).clusters["demo"]
    assert not demo.through_brokers and demo.poll_interval == 2.0


def test_frozen_and_hashable():
    cfg = parse_config(SAMPLE, env={})
    with pytest.raises(Exception):
        cfg.role = Role.VIEWER  # type: ignore[misc]
    with pytest.raises(Exception):
        cfg.clusters["demo"].zk = "x"  # type: ignore[misc]
    assert hash(cfg) == hash(parse_config(SAMPLE, env={}))
    assert cfg == parse_config(SAMPLE, env={})


def test_secrets_not_in_repr():
    cfg = parse_config(SAMPLE, env={})
    assert "s3cret" not in repr(cfg)


def test_defaults_are_safe():
    cfg = parse_config('[clusters.a]\nzk = "h:2181"\n', env={})
    assert cfg.role is Role.VIEWER and cfg.read_only is False
    assert not can_act(cfg)


def test_digest_from_env_wins():
    env = {"KEEL_ZK_DIGEST_PROD_EU": "ops:fromenv"}
    cfg = parse_config(SAMPLE, env=env)
    assert cfg.clusters["prod-eu"].digest == "ops:fromenv"
    cfg = parse_config(SAMPLE, env={"KEEL_ZK_DIGEST_DEMO": "u:p"})
    assert cfg.clusters["demo"].digest == "u:p"


@pytest.mark.parametrize("name,var", [("demo", "KEEL_ZK_DIGEST_DEMO"), ("prod-eu", "KEEL_ZK_DIGEST_PROD_EU"),
                                      ("a.b_c", "KEEL_ZK_DIGEST_A_B_C")])
def test_digest_env_var_name(name, var):
    assert digest_env_var(name) == var


def test_config_path_env(tmp_path):
    assert config_path({}) == DEFAULT_CONFIG
    assert config_path({"KEEL_CONFIG": str(tmp_path / "k.toml")}) == tmp_path / "k.toml"
    p = write(tmp_path, SAMPLE, "other.toml")
    assert load_config(env={"KEEL_CONFIG": str(p)}).path == str(p)


def test_tls_true_and_cert_pairing():
    cfg = parse_config('[clusters.a]\nzk = "h:2181"\ntls = true\n', env={})
    assert cfg.clusters["a"].tls == TlsConfig()
    with pytest.raises(ConfigError) as e:
        parse_config('[clusters.a]\nzk = "h:2181"\ntls = { cert = "c.pem" }\n', source="k.toml", env={})
    assert e.value.key == "clusters.a.tls" and "cert and key" in str(e.value)


@pytest.mark.parametrize("text,key,fragment", [
    ("[keel]\nrole = \"superuser\"\n[clusters.a]\nzk = \"h:1\"\n", "keel.role", "viewer"),
    ("[keel]\nread_only = \"yes\"\n[clusters.a]\nzk = \"h:1\"\n", "keel.read_only", "true or false"),
    ("[keel]\nrolee = \"viewer\"\n[clusters.a]\nzk = \"h:1\"\n", "keel.rolee", "unknown key"),
    ("[keel]\nrole = \"viewer\"\n", "clusters", "no clusters"),
    ("clusters = 3\n", "clusters", "must be a table"),
    ("[clusters]\n", "clusters", "no clusters"),
    ("[clusters.a]\ndescription = \"x\"\n", "clusters.a.zk", "missing"),
    ("[clusters.a]\ndescription = \"x\"\n", "clusters.a.zk", "or bootstrap"),
    ("[clusters.a]\nbootstrap = \"b:9092\"\npoll_interval = 0.1\n", "clusters.a.poll_interval", "[0.5, 600]"),
    ("[clusters.a]\nbootstrap = \"b:9092\"\npoll_interval = \"2\"\n", "clusters.a.poll_interval", "seconds"),
    ("[clusters.a]\nzk = \"\"\n", "clusters.a.zk", "non-empty"),
    ("[clusters.a]\nzk = 2181\n", "clusters.a.zk", "non-empty"),
    ("[clusters.a]\nzk = \"h:1 /x\"\n", "clusters.a.zk", "whitespace"),
    ("[clusters.a]\nzk = \"h:1\"\nzk_connect = \"h\"\n", "clusters.a.zk_connect", "unknown key"),
    ("[clusters.a]\nzk = \"h:1\"\ndigest = \"nocolon\"\n", "clusters.a.digest", "user:password"),
    ("[clusters.a]\nzk = \"h:1\"\ntls = \"yes\"\n", "clusters.a.tls", "must be a table"),
    ("[clusters.a]\nzk = \"h:1\"\ntls = { ca = 3 }\n", "clusters.a.tls.ca", "file path"),
    ("[clusters.a]\nzk = \"h:1\"\ntls = { bogus = 1 }\n", "clusters.a.tls.bogus", "unknown key"),
    ("[clusters.a]\nzk = \"h:1\"\nconnect_timeout = 0\n", "clusters.a.connect_timeout", "seconds"),
    ("[clusters.a]\nzk = \"h:1\"\nconnect_timeout = true\n", "clusters.a.connect_timeout", "seconds"),
    ("[clusters.\"bad name\"]\nzk = \"h:1\"\n", "clusters.bad name", "cluster names"),
    ("[clusters]\na = \"h:1\"\n", "clusters.a", "must be a table"),
    ("keel = 1\n[clusters.a]\nzk = \"h:1\"\n", "keel", "must be a table"),
])
def test_bad_config_names_file_and_key(text, key, fragment):
    with pytest.raises(ConfigError) as e:
        parse_config(text, source="/etc/keel/keel.toml", env={})
    err = e.value
    assert isinstance(err, ValidationError) and isinstance(err, KeelError)
    assert err.key == key
    assert err.path == "/etc/keel/keel.toml"
    assert "/etc/keel/keel.toml" in str(err) and key in str(err)
    assert fragment in str(err)


def test_bad_digest_from_env_never_echoed():
    with pytest.raises(ConfigError) as e:
        parse_config('[clusters.a]\nzk = "h:1"\n', source="k.toml", env={"KEEL_ZK_DIGEST_A": "secretnocolon"})
    assert "KEEL_ZK_DIGEST_A" in str(e.value)
    assert "secretnocolon" not in str(e.value)


def test_invalid_toml_names_file(tmp_path):
    p = write(tmp_path, "[clusters.a\nzk = 1\n")
    with pytest.raises(ConfigError) as e:
        load_config(p, env={})
    assert str(p) in str(e.value) and "not valid TOML" in str(e.value)
    assert e.value.key is None


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as e:
        load_config(env={"KEEL_CONFIG": str(missing)})
    assert str(missing) in str(e.value) and "not found" in str(e.value) and "KEEL_CONFIG" in str(e.value)
    with pytest.raises(ConfigError):
        load_config(tmp_path, env={})  # a directory


def test_unknown_cluster_lookup():
    cfg = parse_config(SAMPLE, source="k.toml", env={})
    with pytest.raises(ConfigError) as e:
        cfg.cluster("nope")
    assert "demo, prod-eu" in str(e.value)


# --- role gate ----------------------------------------------------------------------------


def _cfg(role: Role, read_only: bool) -> KeelConfig:
    return KeelConfig(role=role, read_only=read_only, clusters={}, path="/srv/keel.toml")


def test_role_gate():
    assert can_act(_cfg(Role.OPERATOR, False))
    assert not can_act(_cfg(Role.OPERATOR, True))
    assert not can_act(_cfg(Role.VIEWER, False))
    assert not can_act(_cfg(Role.VIEWER, True))
    require_operator(_cfg(Role.OPERATOR, False))  # no raise


def test_require_operator_messages():
    with pytest.raises(PermissionDeniedError) as e:
        require_operator(_cfg(Role.VIEWER, False), "run a preferred-leader election")
    msg = str(e.value)
    assert "cannot run a preferred-leader election" in msg and "'viewer'" in msg
    assert 'role = "operator"' in msg and "/srv/keel.toml" in msg
    with pytest.raises(PermissionDeniedError) as e:
        require_operator(_cfg(Role.OPERATOR, True))
    assert "read-only" in str(e.value) and "read_only = false" in str(e.value)


def test_repo_keel_toml_parses_if_present():
    if not DEFAULT_CONFIG.exists():
        pytest.skip("keel.toml not written yet")
    cfg = load_config(DEFAULT_CONFIG, env={})
    assert cfg.clusters
