"""Kafka client properties (`--command-config`, keel.toml `command_config`): parsed as Java does, refused by name
when Keel cannot honour a setting, and never echoing a secret. The real brokers behind these settings are in
tests/kafka/test_client_security.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.policy.config import ConfigError, load_config
from core.kafka.client_config import (
    ClientConfigError,
    load_command_config,
    parse_jaas,
    parse_properties,
    security_from_properties,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-Pa55"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_java_properties_format():
    text = "\n".join([
        "# a comment", "   ! another", "a=1", "b : two", "c three", "d=x\\", "   y", "e=\\u0041\\tz", "f",
        "key\\=x=v", "a=last wins", "path=C:\\\\kafka\\\\ca.pem",
    ])
    assert parse_properties(text) == {"a": "last wins", "b": "two", "c": "three", "d": "xy", "e": "A\tz", "f": "",
                                      "key=x": "v", "path": "C:\\kafka\\ca.pem"}
    with pytest.raises(ClientConfigError, match="malformed"):
        parse_properties("a=\\u12")


def test_jaas_line():
    module, options = parse_jaas(f'{SCRAM} required username="ke\\"el" password="p w;x" tokenauth=false;', "f")
    assert module == SCRAM and options == {"username": 'ke"el', "password": "p w;x", "tokenauth": "false"}
    for bad in [f'{SCRAM} required username="a"', f'{SCRAM} username="a";', f'{SCRAM} required username="a" %%;']:
        with pytest.raises(ClientConfigError) as e:
            parse_jaas(bad, "f")
        assert '"a"' not in e.value.message  # the line (with its secrets) is never echoed


def sec(**props):
    return security_from_properties(props, "admin.properties")


def test_the_supported_settings():
    assert sec().protocol == "PLAINTEXT"
    s = sec(**{"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
               "sasl.jaas.config": f'{SCRAM} required username="keel" password="{SECRET}";',
               "request.timeout.ms": "5000", "client.id": "x"})
    assert (s.protocol, s.mechanism, s.username, s.password) == ("SASL_PLAINTEXT", "SCRAM-SHA-512", "keel", SECRET)
    assert s.ignored == ("client.id", "request.timeout.ms")
    assert SECRET not in repr(s) and SECRET not in s.summary()
    assert s.summary() == "SASL_PLAINTEXT, SCRAM-SHA-512 as keel"
    tls = sec(**{"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                 "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----...",
                 "ssl.endpoint.identification.algorithm": ""})
    assert tls.uses_ssl and not tls.check_hostname and tls.ca_pem and tls.ca_file is None
    assert tls.summary() == "SSL, inline CA, host names not checked"


@pytest.mark.parametrize("props, message", [
    ({"security.protocol": "SASL_SSL2"}, "security.protocol must be one of"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI is Kafka's default"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{SCRAM} required username="k" password="{SECRET}";'}, "needs " + PLAIN),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{PLAIN} required username="k";'}, "has no password"),
    ({"sasl.mechanism": "PLAIN"}, "security.protocol is PLAINTEXT"),
    ({"ssl.truststore.location": "/x"}, "ssl.* settings"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/etc/hosts"}, "ssl.truststore.type JKS"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/etc/hosts"},
     "PKCS12 is not supported"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nonexistent/ca.pem"},
     "not a readable file"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"}, "https or empty"),
    ({"security.protocol": "SSL", "ssl.keystore.key": SECRET}, "ssl.keystore.key is not supported"),
    ({"sasl.login.callback.handler.class": "com.example.Handler"}, "Java callback handlers"),
])
def test_what_keel_cannot_honour_is_refused_by_name(props, message):
    props = {k: v.replace("SECRET", SECRET) for k, v in props.items()}
    with pytest.raises(ClientConfigError) as e:
        sec(**props)
    assert message in e.value.message
    assert SECRET not in str(e.value) and SECRET not in (e.value.hint or "")


def test_files_relative_to_the_properties_file(tmp_path):
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "admin.properties").write_text("security.protocol=SSL\nssl.truststore.type=PEM\n"
                                               "ssl.truststore.location=ca.pem\n")
    assert load_command_config(tmp_path / "admin.properties").ca_file == str(tmp_path / "ca.pem")
    with pytest.raises(ClientConfigError, match="cannot read it"):
        load_command_config(tmp_path / "missing.properties")
    (tmp_path / "bin.properties").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ClientConfigError, match="not a text file"):
        load_command_config(tmp_path / "bin.properties")


def test_keel_toml_command_config(tmp_path):
    (tmp_path / "admin.properties").write_text(
        f'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n'
        f'sasl.jaas.config={PLAIN} required username="keel" password="{SECRET}";\n')
    toml = tmp_path / "keel.toml"
    toml.write_text('[clusters.prod]\nzk = "127.0.0.1:2181/prod"\nbootstrap = "127.0.0.1:9092"\n'
                    'command_config = "admin.properties"\n')
    cluster = load_config(toml).clusters["prod"]
    assert cluster.kafka_security.username == "keel" and SECRET not in repr(cluster)
    toml.write_text('[clusters.prod]\nzk = "127.0.0.1:2181/prod"\ncommand_config = "admin.properties"\n')
    with pytest.raises(ConfigError, match="give bootstrap too"):
        load_config(toml)
    (tmp_path / "admin.properties").write_text("security.protocol=SASL_PLAINTEXT\n")
    toml.write_text('[clusters.prod]\nzk = "127.0.0.1:2181/prod"\nbootstrap = "127.0.0.1:9092"\n'
                    'command_config = "admin.properties"\n')
    with pytest.raises(ConfigError, match=r"clusters\.prod\.command_config.*GSSAPI"):
        load_config(toml)


def test_cli_refuses_a_bad_command_config_before_connecting(tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN} required "
                     f'username="keel" pass="{SECRET}";\n')
    # port 9 (discard) on loopback: nothing listens; the refusal must come before any connection attempt
    run = subprocess.run([sys.executable, "-m", "core", "consumer-groups", "--bootstrap-server", "127.0.0.1:9",
                          "--command-config", str(props)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "sasl.jaas.config has no password" in run.stderr and "Traceback" not in run.stderr
    assert SECRET not in run.stderr + run.stdout
