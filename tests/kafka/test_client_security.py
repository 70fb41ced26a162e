"""Keel's Admin API connections through SASL and TLS listeners of a real broker, set up by the same client
properties file Kafka's own tools take (`--command-config`, keel.toml `command_config`).

One broker of its own (the shared three-broker cluster stays PLAINTEXT), in its own chroot, with three listeners:
PLAINTEXT between brokers; SASL_PLAINTEXT with PLAIN and SCRAM-SHA-512; SSL requiring a client certificate (PEM
key and trust stores, Kafka 2.7+). The CA and certificates are made here with `cryptography`. The broker's own key
is an unencrypted PEM file on Kafka 3.3+; before 3.3 a broker refuses a PEM key store without a key password
("SSL PEM key store is specified, but key password is not specified.", KAFKA-12703), and Java 17 cannot decrypt the
PBES2 PEM keys `cryptography` writes, so those brokers get the same key and certificate in a PKCS12 key store.

Each working connection is compared with the PLAINTEXT answer (log dirs: the same partitions and bytes); each
wrong setting (bad password, unknown SCRAM user, an untrusted broker certificate, no client certificate) must end
in one line naming the cause, within the timeout, with no secret in it.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import sys
import time
import uuid
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from sandbox.processes import kafka as kafka_runner
from tests.kafka.conftest import VERSION
from tests.kafka.realkafka import needs_kafka, tool_class
from tests.dashboard.test_dashboard_apptest import app, table_with, texts, write_config

pytestmark = needs_kafka("2.7", "PEM key and trust stores (KIP-651)")

ROOT = Path(__file__).resolve().parents[2]
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_PASSWORD = "plain-Secret-1"
SCRAM_PASSWORD = "scram-Secret-2"
KEY_PASSWORD = "key-Secret-3"
BROKER_STORE_PASSWORD = "broker-Store-5"  # the broker's PKCS12 key store (Kafka before 3.3)
SECRETS = (PLAIN_PASSWORD, SCRAM_PASSWORD, KEY_PASSWORD, "wrong-Secret-4")


# --- certificates ---------------------------------------------------------------------------------------------


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _cert(subject: str, key, issuer_name: str, issuer_key, *, ca: bool = False, ip: str | None = None):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
         .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ip:
        b = b.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, password: str | None = None) -> bytes:
    enc = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca_key, other_key = _key(), _key()
    ca = _cert("keel-test-ca", ca_key, "keel-test-ca", ca_key, ca=True)
    other_ca = _cert("someone-else", other_key, "someone-else", other_key, ca=True)
    broker_key, client_key = _key(), _key()
    (d / "ca.pem").write_bytes(_pem(ca))
    (d / "other-ca.pem").write_bytes(_pem(other_ca))
    # The broker's key unencrypted: Java 17 cannot read PBES2-encrypted PKCS#8 ("PBES2 SecretKeyFactory not
    # available"), which is what `cryptography` writes.
    broker_cert = _cert("127.0.0.1", broker_key, "keel-test-ca", ca_key, ip="127.0.0.1")
    (d / "broker.pem").write_bytes(_key_pem(broker_key) + _pem(broker_cert))
    (d / "broker.p12").write_bytes(pkcs12.serialize_key_and_certificates(  # for brokers before 3.3 (module docstring)
        b"broker", broker_key, broker_cert, None, serialization.BestAvailableEncryption(BROKER_STORE_PASSWORD.encode())))
    (d / "client.pem").write_bytes(_key_pem(client_key, KEY_PASSWORD)
                                   + _pem(_cert("keel", client_key, "keel-test-ca", ca_key)))
    return d


# --- the secured broker ---------------------------------------------------------------------------------------


class Secured:
    def __init__(self, cluster: kafka_runner.KafkaCluster, sasl: str, ssl: str, pki: Path, base: Path):
        self.cluster, self.sasl, self.ssl, self.pki, self.base = cluster, sasl, ssl, pki, base

    def properties(self, name: str, **props: str) -> Path:
        path = self.base / f"{name}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def keel(self, *argv: str) -> tuple[int, str, str]:
        import contextlib
        import io

        from core.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def log_dirs(self, bootstrap: str, props: Path | None = None, timeout: float = 10.0) -> tuple[int, str, str]:
        argv = ["log-dirs", "--bootstrap-server", bootstrap, "--json", "--kafka-timeout", str(timeout)]
        return self.keel(*argv, *(["--command-config", str(props)] if props else []))


def _sasl(mechanism: str, module: str, user: str, password: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{password}";'}


def _ssl(s: Secured, ca: str = "ca.pem", client: bool = True, key_password: str = KEY_PASSWORD) -> dict[str, str]:
    props = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
             "ssl.truststore.location": str(s.pki / ca)}
    if client:
        props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(s.pki / "client.pem"),
                      "ssl.key.password": key_password})
    return props


@pytest.fixture(scope="module")
def secured(zk_server, pki, tmp_path_factory):
    base = tmp_path_factory.mktemp("secured")
    connect = f"{zk_server}/kafka-secured-{uuid.uuid4().hex[:8]}"
    cluster = kafka_runner.KafkaCluster.create(base / "cluster", connect, brokers=1, racks=0, detach=False,
                                               version=VERSION)
    b = cluster.brokers[0]
    sasl, ssl = f"127.0.0.1:{kafka_runner.free_port()}", f"127.0.0.1:{kafka_runner.free_port()}"
    listeners = f"PLAINTEXT://{b.endpoint},SASL_PLAINTEXT://{sasl},SSL://{ssl}"
    cluster.overrides.update({
        "listeners": listeners, "advertised.listeners": listeners, "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f'{PLAIN} required user_keel="{PLAIN_PASSWORD}";',
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f"{SCRAM} required;",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki / "broker.pem"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
    })
    if not kafka_runner.version_at_least(VERSION, "3.3"):  # no unencrypted PEM key (module docstring)
        cluster.overrides.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki / "broker.p12"),
                                  "ssl.keystore.password": BROKER_STORE_PASSWORD,
                                  "ssl.key.password": BROKER_STORE_PASSWORD})
    cluster.start(timeout=120)
    try:
        # a SCRAM user, as an SRE would add one (kafka-configs through the PLAINTEXT listener)
        done = cluster.tool(tool_class(VERSION, "org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
                            "--bootstrap-server", b.endpoint, "--alter", "--entity-type", "users",
                            "--entity-name", "keel-scram", "--add-config", f"SCRAM-SHA-512=[password={SCRAM_PASSWORD}]")
        assert done.returncode == 0, done.stderr
        # a topic with data, so that log dirs have something to compare
        from kafka import KafkaProducer
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=b.endpoint, request_timeout_ms=20000)
        admin.create_topics([NewTopic("secured-data", 2, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=b.endpoint, acks="all")
        for i in range(200):
            producer.send("secured-data", value=b"x" * 1000, partition=0)
        producer.flush()
        producer.close()
        yield Secured(cluster, sasl, ssl, pki, base)
    finally:
        cluster.stop()


def _sizes(out: str) -> dict:
    return {(b["broker"], d["path"]): (d["partitions"], d["bytes"]) for b in json.loads(out)["brokers"]
            for d in b["dirs"]}


def _no_secret(*texts: str) -> None:
    for secret in SECRETS:
        assert all(secret not in t for t in texts), "a secret was printed"


def _plaintext_sizes(s: Secured) -> dict:
    code, out, err = s.log_dirs(s.cluster.bootstrap_servers)
    assert code == 0, err
    sizes = _sizes(out)
    assert sum(n for n, _ in sizes.values()) >= 1 and sum(b for _, b in sizes.values()) >= 200_000
    return sizes


@pytest.mark.parametrize("how", ["PLAIN", "SCRAM-SHA-512", "SSL with a client certificate"])
def test_each_secured_listener_answers_as_plaintext_does(secured, how):
    want = _plaintext_sizes(secured)
    if how == "PLAIN":
        bootstrap, props = secured.sasl, _sasl("PLAIN", PLAIN, "keel", PLAIN_PASSWORD)
    elif how == "SCRAM-SHA-512":
        bootstrap, props = secured.sasl, _sasl("SCRAM-SHA-512", SCRAM, "keel-scram", SCRAM_PASSWORD)
    else:
        bootstrap, props = secured.ssl, _ssl(secured)
    code, out, err = secured.log_dirs(bootstrap, secured.properties(how.split()[0], **props))
    assert code == 0, err
    assert _sizes(out) == want
    _no_secret(out, err)


@pytest.mark.parametrize("case, expect", [
    ("wrong PLAIN password", "refused Keel's credentials"),
    ("unknown SCRAM user", "refused Keel's credentials"),
    ("broker certificate from another CA", "no TLS connection"),
    ("no client certificate", "no TLS connection|could not connect"),
    ("PLAINTEXT client on the SASL listener", "no Kafka broker"),
    ("wrong key password", "ssl.keystore.location holds no private key and certificate"),
])
def test_wrong_settings_fail_fast_with_the_cause(secured, case, expect):
    bootstrap, props = {
        "wrong PLAIN password": (secured.sasl, _sasl("PLAIN", PLAIN, "keel", "wrong-Secret-4")),
        "unknown SCRAM user": (secured.sasl, _sasl("SCRAM-SHA-512", SCRAM, "nobody", SCRAM_PASSWORD)),
        "broker certificate from another CA": (secured.ssl, _ssl(secured, ca="other-ca.pem")),
        "no client certificate": (secured.ssl, _ssl(secured, client=False)),
        "PLAINTEXT client on the SASL listener": (secured.sasl, {"security.protocol": "PLAINTEXT"}),
        "wrong key password": (secured.ssl, _ssl(secured, key_password="wrong-Secret-4")),
    }[case]
    started = time.monotonic()
    # A refusal ends the wait (Kafka's clients treat it as final), so a long timeout costs nothing when the broker is
    # quick, and the claim is that the command ends well before the timeout it was given. On a loaded machine (the
    # suite on three workers beside the KRaft and migration clusters) the command took 5, 10, 20 and once 25 s to
    # report a SASL refusal: hence 60 s given and 45 s allowed.
    silent = case == "PLAINTEXT client on the SASL listener"  # the one that never hears an answer: waits it all
    given = 10 if silent else 60
    code, out, err = secured.log_dirs(bootstrap, secured.properties(case.replace(" ", "-"), **props), timeout=given)
    took = time.monotonic() - started
    assert code != 0 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert re.search(expect, lines[0]), lines[0]
    assert took < (20 if silent else given * 0.75), \
        f"{case}: {took:.1f} s of the {given} s given: the refusal did not end the wait"
    _no_secret(out, err)
    print(f"\n{case}: {lines[0]} ({took:.1f} s)", file=sys.stderr)


def test_the_log_dirs_page_reads_through_command_config(secured, tmp_path, monkeypatch):
    """keel.toml's command_config: the Log dirs page reads the brokers over SCRAM, as the CLI does."""
    want = _plaintext_sizes(secured)
    props = secured.properties("page", **_sasl("SCRAM-SHA-512", SCRAM, "keel-scram", SCRAM_PASSWORD))
    write_config(tmp_path, monkeypatch, {"secured": {"zk": secured.cluster.zk_connect, "bootstrap": secured.sasl,
                                                     "command_config": str(props)}})
    at = app().run()
    at.switch_page("views/log_dirs.py").run()
    assert not at.exception, at.exception
    assert not at.error, texts(at.error)
    shown = {(int(r["Broker"]), r["Log dir"]): int(r["Partitions"])
             for r in table_with(at, "Log dir", "dataframe").to_dict("records")}
    assert shown == {k: n for k, (n, _) in want.items()}
    _no_secret(texts(at.markdown), texts(at.caption))
