"""Issue 23 item 5, on REAL brokers: health flags (Overview, Topics), `describe`, the effective config and the restart
checks take the brokers' own settings (server.properties) into account when Keel has their bootstrap servers, and say
what they assume when it has not. The truth they are held to: which partitions Kafka refuses acks=all writes to, and
Kafka's own ConfigCommand (`kafka-configs --describe --all`).

One cluster for this module (its brokers need their own server.properties, which the package's shared cluster cannot
take): 3 brokers with min.insync.replicas=2 and log.retention.hours=100 in server.properties, broker 3 with
min.insync.replicas=3 instead; log.segment.delete.delay.ms=1000 comes with every sandbox broker (sandbox.processes.kafka_setup).
"""

from __future__ import annotations

import atexit
import json
import re
import sys
import time
import uuid

import pytest

from sandbox.processes import kafka as kafka_runner
from sandbox.processes.kafka import KafkaCluster
from core.zk.session import ZkSession
from tests.kafka.conftest import VERSION
from tests.kafka.realkafka import (RealKafka, compat_admin, config_command, create_topic, eventually, keel_zk,
                                   needs_kafka)
from tests.dashboard.test_dashboard_apptest import app, metrics, table_with, texts, write_config  # noqa: F401

pytestmark = [needs_kafka("2.0", "kafka-configs --bootstrap-server --describe --all (ConfigCommand, KIP-226/248)"),
              pytest.mark.usefixtures("fresh_connections")]

STATIC = {"min.insync.replicas": "2", "log.retention.hours": "100"}
PER_BROKER = {3: {"min.insync.replicas": "3"}}
CLUSTER = "strict"
# partition -> replicas (the first leads); relaxed overrides min.insync.replicas=1
TOPICS = {"lonely": {0: [1]}, "pair": {0: [1, 2], 1: [2, 1]}, "trio": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
          "relaxed": {0: [3, 1]}}
# Kafka 3.7+ caps min.insync.replicas at the replica count (KAFKA-15583): lonely (RF 1, min 2) takes acks=all there
CAPPED = kafka_runner.version_at_least(VERSION, "3.7")
# Kafka's rule with the leaders' values (2 on brokers 1 and 2, 3 on broker 3), every replica in sync
UNDER = set() if CAPPED else {("lonely", 0)}
AT = {("pair", 0), ("pair", 1), ("trio", 2)} | ({("lonely", 0)} if CAPPED else set())
# ... and with broker 2 stopped: pair keeps ISR [1] (< 2); trio-1 and trio-2 are led by broker 3 with ISR [3, 1] (< 3)
STOP_2 = {("pair", 0), ("pair", 1), ("trio", 1), ("trio", 2)}


class _OwnProperties(KafkaCluster):
    """A sandbox cluster whose brokers get STATIC, and PER_BROKER's entries for their id, in server.properties."""

    def settings(self, b):
        props = super().settings(b)
        props.update(STATIC)
        props.update(PER_BROKER.get(b.id, {}))
        return props


@pytest.fixture(scope="module")
def strict(zk_server: str, tmp_path_factory: pytest.TempPathFactory):
    """The module's cluster, with TOPICS created and every leader its preferred replica."""
    from kafka.admin import KafkaAdminClient

    base = tmp_path_factory.mktemp("strict")
    connect = f"{zk_server}/strict-{uuid.uuid4().hex[:8]}"
    cluster = _OwnProperties.create(base / "cluster", connect, brokers=3, detach=False, version=VERSION)
    atexit.register(cluster.stop)
    started = time.monotonic()
    cluster.start(timeout=120)
    print(f"\nreal Kafka {cluster.version} with its own server.properties: up in {time.monotonic() - started:.1f} s",
          file=sys.stderr)
    admin = compat_admin(KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="keel-tests-strict",
                                          request_timeout_ms=20000), cluster.version)
    zk = ZkSession.open(connect)
    real = RealKafka(cluster=cluster, zk_connect=connect, admin=admin, zk=zk, store=base / "keel.sqlite")
    try:
        real.ensure_healthy()
        for name, assignment in TOPICS.items():
            create_topic(real, name, assignment, **({"min.insync.replicas": "1"} if name == "relaxed" else {}))
        real.ensure_healthy()
        yield real
    finally:
        try:
            real.admin.close()
        finally:
            zk.close()
            cluster.stop()


@pytest.fixture
def page(strict: RealKafka, tmp_path, monkeypatch) -> RealKafka:
    write_config(tmp_path, monkeypatch, {CLUSTER: {"zk": strict.zk_connect, "bootstrap": strict.bootstrap}})
    return strict


# --- the truth: what Kafka refuses ------------------------------------------------------------------------------


def refused(kafka: RealKafka) -> set[tuple[str, int]]:
    """The partitions of TOPICS whose leader refuses an acks=all write (NotEnoughReplicas)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError, NotEnoughReplicasError

    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", retries=0, request_timeout_ms=10000,
                             max_block_ms=10000)
    out = set()
    try:
        sent = {(t, p): producer.send(t, b"x", partition=p) for t, ps in TOPICS.items() for p in ps}
        for key, future in sent.items():
            try:
                future.get(timeout=15)
            except NotEnoughReplicasError:
                out.add(key)
            except KafkaError as e:
                raise AssertionError(f"{key}: {e!r}") from e
    finally:
        producer.close(timeout=5)
    return out


def kafka_topic_config(kafka: RealKafka, topic: str) -> dict[str, tuple[str, str, str | None]]:
    """`kafka-configs --describe --entity-type topics --entity-name T --all`: {key: (value, source, synonym)}, the
    source and synonym being the first of Kafka's synonyms (DEFAULT_CONFIG and None when it lists none)."""
    out = {}
    for line in config_command(kafka, "--describe", "--entity-type", "topics", "--entity-name", topic,
                               "--all").splitlines():
        m = re.match(r"^\s+([a-z0-9.]+)=(.*) sensitive=(?:true|false) synonyms=\{(.*)\}$", line)
        if m:
            first = re.match(r"([A-Z_]+):([a-z0-9.]+)=", m[3])
            out[m[1]] = (m[2], first[1], first[2]) if first else (m[2], "DEFAULT_CONFIG", None)
    assert out, "kafka-configs printed no config"
    return out


def keel_topic_config(kafka: RealKafka, topic: str, *, bootstrap: bool = True) -> dict:
    from core.kafka.admin import KafkaAdmin
    from core.kafka.broker_configs import read_broker_defaults
    from core.topics.effective import effective_config

    snap = kafka.snapshot()
    defaults = None
    if bootstrap:
        with KafkaAdmin(kafka.bootstrap) as admin:
            defaults = read_broker_defaults(admin, snap.alive_broker_ids)
    t = snap.topic(topic)
    return {r.key: r for r in effective_config(t.config, dynamic=snap.broker_configs, defaults=defaults,
                                               brokers={b for p in t.partitions for b in p.replicas})}


def _rerun_until(at, predicate, message: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, at.exception
        if predicate(at):
            return at
        assert time.monotonic() < deadline, f"{message}; page shows: {texts(at.caption)} {texts(at.warning)}"
        time.sleep(0.3)


def _listed(lines: str) -> set[tuple[str, int]]:
    return {(m[1], int(m[2])) for m in re.finditer(r"\tTopic: (\S+)\tPartition: (\d+)\t", lines)}


# --- health flags and restart checks ------------------------------------------------------------------------------


def _under(at) -> int:
    return int(metrics(at)["Under min ISR"].replace(",", ""))


def test_flags_and_restart_checks_follow_what_kafka_refuses_acks_all_writes_to(page: RealKafka):
    kafka = page
    assert refused(kafka) == UNDER
    at = app().run()
    assert not at.exception, at.exception
    # the brokers are read in the background: the figures follow within a few reruns
    _rerun_until(at, lambda a: metrics(a)["At min ISR"] == str(len(AT)), f"At min ISR never {len(AT)}")
    assert _under(at) == len(UNDER)
    note = texts(at.caption)
    assert "2 on brokers 1, 2 (STATIC_BROKER_CONFIG); 3 on broker 3 (STATIC_BROKER_CONFIG)" in note, note
    assert "checked against its leader's value" in note and "read at" in note

    # is it safe to stop broker 2? Not with these settings
    code, out, err = kafka.keel("restart-check", "--zk", kafka.zk_connect, "--broker", "2", "--bootstrap-server",
                                kafka.bootstrap, "--json")
    check = json.loads(out)
    assert code == 3 and not check["safe"], err
    assert {(r["topic"], r["partition"]) for r in check["under_min_isr"]} == STOP_2
    assert {(r["topic"], r["partition"], r["min_isr"]) for r in check["under_min_isr"]} >= {("trio", 1, 3)}
    code, out, err = kafka.keel("restart-check", "--zk", kafka.zk_connect, "--broker", "2")
    assert code == 0 and "1 is assumed (Kafka's default)" in err, out + err  # what Keel said before issue 23
    at.switch_page("views/restart.py").run()
    _rerun_until(at, lambda a: "read at" in texts(a.caption), "the restart page never showed the brokers' settings")
    assert not [w for w in at.text_input if w.key == "rr_min_isr"]  # nothing to enter: the brokers said
    checks = table_with(at, "Safe to stop now", "dataframe").set_index("Broker")
    assert (checks.loc[2, "Under min ISR"], checks.loc[2, "Safe to stop now"]) == (len(STOP_2), "NO")

    try:
        assert kafka.cluster.stop_broker(2, timeout=60)  # controlled shutdown: Kafka's answer to the check
        expected = UNDER | STOP_2
        eventually(lambda: _equal(refused(kafka), expected), timeout=30, interval=1)

        at.switch_page("views/overview.py").run()
        _rerun_until(at, lambda a: _under(a) == len(expected), f"Under min ISR never {len(expected)}")  # was 0
        at.switch_page("views/topics.py").run()
        listing = table_with(at, "Topic", "dataframe").set_index("Topic")
        assert (listing.loc["pair", "Under min ISR"], listing.loc["trio", "Under min ISR"]) == (2, 2)
        assert (listing.loc["trio", "min ISR"], listing.loc["relaxed", "Health"]) == ("2, 3", "ok")
        at.selectbox(key="topic").select("trio").run()
        parts = table_with(at, "Partition", "dataframe").set_index("Partition")
        assert parts.loc[1, "min ISR"] == 3 and "under min ISR" in parts.loc[1, "Flags"]  # led by 3 now
        assert parts.loc[0, "min ISR"] == 2 and "under min ISR" not in parts.loc[0, "Flags"]

        code, out, err = keel_zk(kafka, "describe", "--under-min-isr-partitions", "--bootstrap-server",
                                 kafka.bootstrap)
        assert code == 0 and _listed(out) == expected, err
        assert "note: The brokers apply different min.insync.replicas" in err
        code, out, err = keel_zk(kafka, "describe", "--under-min-isr-partitions")
        assert code == 0 and _listed(out) == set(), err  # what Keel said before issue 23, now saying why
        assert "Static broker settings (server.properties) are unknown: no --bootstrap-server" in err
        assert "1 is assumed (Kafka's default)" in err
        code, out, err = keel_zk(kafka, "describe", "--under-min-isr-partitions", "--min-isr-default", "2")
        assert code == 0 and _listed(out) == {("pair", 0), ("pair", 1), ("lonely", 0)}, err
        assert "2 is assumed (--min-isr-default)" in err
    finally:
        kafka.cluster.start_broker(2)
        kafka.ensure_healthy()
        code, out, err = keel_zk(kafka, "elect", "--all")  # leaders back on their preferred replicas
        assert code == 0, err
    eventually(lambda: _equal(refused(kafka), UNDER), timeout=60, interval=1)


def test_without_bootstrap_the_pages_say_what_they_assume(strict: RealKafka, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {CLUSTER: {"zk": strict.zk_connect, "min_insync_replicas": 2}})
    at = app().run()
    assert not at.exception, at.exception
    note = texts(at.caption)
    assert "Static broker settings (server.properties) are unknown: this cluster has no bootstrap servers" in note
    assert "2 is assumed (min_insync_replicas in keel.toml)" in note
    # 2 everywhere, uncapped (the brokers' version is unknown too): lonely under, pair at
    assert (metrics(at)["Under min ISR"], metrics(at)["At min ISR"]) == ("1", "2")
    code, out, err = keel_zk(strict, "describe", "--under-min-isr-partitions", "--min-isr-default", "0")
    assert code == 1 and "--min-isr-default must be at least 1" in err


# --- the effective config -----------------------------------------------------------------------------------------


def _same_as_config_command(ours: dict, theirs: dict) -> None:
    assert set(theirs) <= set(ours), sorted(set(theirs) - set(ours))
    for key, (value, source, synonym) in theirs.items():
        row = ours[key]
        if key == "retention.ms":
            # Kafka drops the synonyms listed before the property (ConfigHelper.configSynonyms' dropWhile): a
            # log.retention.hours of server.properties shows as DEFAULT_CONFIG there, with the right value
            assert (row.value, row.synonym, value, source) == (value, "log.retention.hours", str(100 * 3_600_000),
                                                               "DEFAULT_CONFIG"), row
            continue
        if row.others:  # the brokers differ: Kafka shows the one broker it asked
            assert value in {row.value, *(v for _, v, _ in row.others)}, (key, value, row)
            continue
        assert (row.value or "", row.source) == (value if value != "null" else "", source), (key, value, row)
        if synonym is not None:  # a topic override is its own synonym in Kafka's list
            assert (row.synonym or key) == synonym, (key, synonym, row)


def test_effective_config_is_what_kafka_configs_describe_all_prints(strict: RealKafka):
    ours, theirs = keel_topic_config(strict, "trio"), kafka_topic_config(strict, "trio")
    # the issue's example, both ways: Kafka's "1000 (STATIC_BROKER_CONFIG: log.segment.delete.delay.ms=1000)"
    assert theirs["file.delete.delay.ms"] == ("1000", "STATIC_BROKER_CONFIG", "log.segment.delete.delay.ms")
    fd = ours["file.delete.delay.ms"]
    assert (fd.value, fd.source, fd.synonym) == ("1000", "STATIC_BROKER_CONFIG", "log.segment.delete.delay.ms")
    assert ours["min.insync.replicas"].differs == "broker 3: 3 (STATIC_BROKER_CONFIG)"
    _same_as_config_command(ours, theirs)
    relaxed = keel_topic_config(strict, "relaxed")
    _same_as_config_command(relaxed, kafka_topic_config(strict, "relaxed"))
    mi = relaxed["min.insync.replicas"]
    assert (mi.value, mi.source, mi.synonym) == ("1", "DYNAMIC_TOPIC_CONFIG", None)
    # before issue 23 (and still without bootstrap, saying so): Kafka's default
    blind = keel_topic_config(strict, "trio", bootstrap=False)["file.delete.delay.ms"]
    assert (blind.value, blind.label) == ("60000", "DEFAULT_CONFIG (server.properties unknown)")


def test_effective_config_on_the_topics_page(page: RealKafka):
    at = app().run()
    at.switch_page("views/topics.py").run()
    _rerun_until(at, lambda a: "read at" in texts(a.caption), "the brokers' settings never showed")
    at.selectbox(key="topic").select("trio").run()
    assert not at.exception, at.exception
    table = table_with(at, "Other brokers", "dataframe").set_index("Key")
    assert tuple(table.loc["file.delete.delay.ms", ["Value", "Source"]]) == (
        "1000", "STATIC_BROKER_CONFIG: log.segment.delete.delay.ms")
    assert tuple(table.loc["min.insync.replicas", ["Value", "Source", "Other brokers"]]) == (
        "2", "STATIC_BROKER_CONFIG: min.insync.replicas", "broker 3: 3 (STATIC_BROKER_CONFIG)")
    assert tuple(table.loc["retention.ms", ["Value", "Source"]]) == (str(100 * 3_600_000),
                                                                     "STATIC_BROKER_CONFIG: log.retention.hours")


def kafka_broker_value(kafka: RealKafka, broker: int, key: str) -> tuple[str, str, str | None]:
    """`kafka-configs --describe --entity-type brokers --entity-name B --all`'s value of one key."""
    for line in config_command(kafka, "--describe", "--entity-type", "brokers", "--entity-name", str(broker),
                               "--all").splitlines():
        m = re.match(rf"^\s+{re.escape(key)}=(\S*) sensitive=(?:true|false) synonyms=\{{([A-Z_]+):([a-z0-9.]+)=", line)
        if m:
            return m[1], m[2], m[3]
    raise AssertionError(f"kafka-configs printed no {key} for broker {broker}")


def keel_broker_value(kafka: RealKafka, broker: int, key: str) -> tuple[str, str, str]:
    from core.broker_defaults import broker_value
    from core.kafka.admin import KafkaAdmin
    from core.kafka.broker_configs import read_broker_defaults

    snap = kafka.snapshot()
    with KafkaAdmin(kafka.bootstrap) as admin:
        defaults = read_broker_defaults(admin, snap.alive_broker_ids)
    return tuple(broker_value(defaults, snap.broker_configs, broker, key))


def test_dynamic_configs_beat_server_properties_as_kafka_applies_them(strict: RealKafka):
    lonely = {("lonely", 0)} if CAPPED else set()
    added: list[tuple[str, ...]] = []

    def add(entity: tuple[str, ...], setting: str) -> None:
        config_command(strict, "--entity-type", "brokers", *entity, "--alter", "--add-config", setting)
        added.append((*entity, setting.split("=")[0]))

    try:
        add(("--entity-name", "3"), "min.insync.replicas=2")
        add(("--entity-default",), "log.segment.delete.delay.ms=5000")

        def layered() -> None:
            for broker, key in ((3, "min.insync.replicas"), (1, "min.insync.replicas"),
                                (2, "log.segment.delete.delay.ms")):
                assert keel_broker_value(strict, broker, key) == kafka_broker_value(strict, broker, key), (broker, key)
            assert keel_broker_value(strict, 3, "min.insync.replicas") == ("2", "DYNAMIC_BROKER_CONFIG",
                                                                           "min.insync.replicas")
            ours, theirs = keel_topic_config(strict, "trio"), kafka_topic_config(strict, "trio")
            assert theirs["file.delete.delay.ms"] == ("5000", "DYNAMIC_DEFAULT_BROKER_CONFIG",
                                                      "log.segment.delete.delay.ms")
            _same_as_config_command(ours, theirs)
            assert ours["min.insync.replicas"].differs == "broker 3: 2 (DYNAMIC_BROKER_CONFIG)"
        eventually(layered, timeout=30, interval=1)
        # trio-2 (led by 3, ISR 3) is no longer at broker 3's min ISR
        code, out, err = keel_zk(strict, "describe", "--at-min-isr-partitions", "--bootstrap-server",
                                 strict.bootstrap)
        assert code == 0 and _listed(out) == {("pair", 0), ("pair", 1)} | lonely, err

        # the cluster-wide dynamic default beats server.properties; broker 3's own dynamic value beats both
        add(("--entity-default",), "min.insync.replicas=1")
        eventually(lambda: _equal(keel_broker_value(strict, 1, "min.insync.replicas"),
                                  kafka_broker_value(strict, 1, "min.insync.replicas")), timeout=30, interval=1)
        assert keel_broker_value(strict, 1, "min.insync.replicas")[:2] == ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        assert keel_broker_value(strict, 3, "min.insync.replicas")[:2] == ("2", "DYNAMIC_BROKER_CONFIG")
        code, out, err = keel_zk(strict, "describe", "--at-min-isr-partitions", "--bootstrap-server",
                                 strict.bootstrap)
        assert code == 0 and _listed(out) == {("lonely", 0)}, err
    finally:
        for *entity, key in added:
            config_command(strict, "--entity-type", "brokers", *entity, "--alter", "--delete-config", key)
    eventually(lambda: _equal(kafka_broker_value(strict, 3, "min.insync.replicas")[:2], ("3", "STATIC_BROKER_CONFIG")),
               timeout=30, interval=1)


def _equal(a, b) -> None:
    assert a == b, (a, b)


# --- risks --------------------------------------------------------------------------------------------------------


def test_create_topic_risk_counts_the_brokers_server_properties(page: RealKafka):
    kafka = page
    risk = ("min.insync.replicas=3 (STATIC_BROKER_CONFIG of broker 3) is above the replication factor 2 of topic "
            "risky: ")
    args = ("create-topic", "--topic", "risky", "--replica-assignment", "1:3,3:1")
    code, out, err = kafka.keel(*args, "--bootstrap-server", kafka.bootstrap, "--dry-run")
    assert code == 0 and risk in err, err
    # Kafka 3.7+ caps it at the replica count: writable, but no replica to spare; before, refused outright
    assert ("(Kafka 3.7+) cap it at 2, so every partition led by broker 3 is at min ISR for good" in err) == CAPPED
    code, out, err = kafka.keel(*args, "--dry-run")
    assert code == 0 and "is above the replication factor" not in err  # without the brokers: no risk seen (as before)
    code, out, err = kafka.keel(*args, "--bootstrap-server", kafka.bootstrap)
    assert code == 1 and "--accept-risk" in err and "risky" not in kafka.kafka_topics()  # nothing written

    at = app().run()
    at.switch_page("views/create_topic.py").run()
    _rerun_until(at, lambda a: not a.exception, "the create topic page failed")
    at.text_input(key="ct_name").input("risky").run()
    at.text_input(key="ct_partitions").input("3")
    at.text_input(key="ct_rf").input("2").run()
    assert not at.exception, at.exception
    assert "min.insync.replicas=3 (STATIC_BROKER_CONFIG of broker 3) is above the replication factor 2" in \
        texts(at.warning)
