"""Issue 23 item 5, the pure side: Kafka's precedence for what a broker applies where a topic sets nothing
(core.broker_defaults), and its use by health, the effective config, the restart checks and the risks; keel.toml's
`min_insync_replicas`; the dashboard's reader giving up on unreachable brokers without holding a page. The same on
real brokers: tests/kafka/test_broker_defaults.py."""

from __future__ import annotations

import socket
import time

import pytest

from core import health
from core.broker_defaults import (ASSUMED, DEFAULT, DYNAMIC_BROKER, DYNAMIC_DEFAULT, FROM_CLI, FROM_KEEL_TOML,
                                  STATIC, BrokerDefaults, BrokerSettings, MinIsrRule, broker_min_isr, broker_value,
                                  min_isr_basis, unknown)
from core.policy.config import ConfigError, parse_config
from core.model import Broker, ClusterSnapshot, Partition, Topic
from core.restarts import check_stop
from core.topics import draft_alter_config, draft_create_topic
from core.topics.effective import effective_config

KAFKA_DEFAULTS = {"min.insync.replicas": "1", "log.retention.hours": "168", "log.segment.delete.delay.ms": "60000",
                  "log.roll.hours": "168", "log.cleanup.policy": "delete"}


def brokers(**static_by_id) -> BrokerDefaults:
    """BrokerDefaults read from brokers b1, b2, ...: b1={"min.insync.replicas": "2"} (Kafka's defaults added)."""
    return BrokerDefaults({int(k[1:]): BrokerSettings(int(k[1:]), v, KAFKA_DEFAULTS) for k, v in static_by_id.items()},
                          problem=None, read_at="10:00:00")


def P(topic, n, replicas, leader=None, isr=None):
    replicas = tuple(replicas)
    return Partition(topic, n, replicas, replicas[0] if leader is None else leader,
                     replicas if isr is None else tuple(isr))


def snap(topics, *, ids=(1, 2, 3), dynamic=None) -> ClusterSnapshot:
    return ClusterSnapshot("c", "2026-01-01T00:00:00Z", "zk", tuple(Broker(b) for b in ids), tuple(topics),
                           broker_configs=dynamic or {})


# --- Kafka's precedence ------------------------------------------------------------------------------------------


def test_dynamic_broker_beats_dynamic_default_beats_server_properties_beats_kafkas_default():
    d = brokers(b1={"min.insync.replicas": "2"}, b2={})
    assert broker_value(d, {}, 1, "min.insync.replicas") == ("2", STATIC, "min.insync.replicas")
    assert broker_value(d, {}, 2, "min.insync.replicas") == ("1", DEFAULT, "min.insync.replicas")
    dyn = {"<default>": {"min.insync.replicas": "3"}}
    assert broker_value(d, dyn, 1, "min.insync.replicas") == ("3", DYNAMIC_DEFAULT, "min.insync.replicas")
    dyn["1"] = {"min.insync.replicas": "4"}
    assert broker_value(d, dyn, 1, "min.insync.replicas") == ("4", DYNAMIC_BROKER, "min.insync.replicas")
    assert broker_value(d, dyn, 2, "min.insync.replicas") == ("3", DYNAMIC_DEFAULT, "min.insync.replicas")
    # nothing read: only ZooKeeper's layers are known
    assert broker_value(BrokerDefaults(), {}, 1, "min.insync.replicas") is None
    assert broker_value(BrokerDefaults(), dyn, 2, "min.insync.replicas") == ("3", DYNAMIC_DEFAULT,
                                                                             "min.insync.replicas")


def test_synonyms_layer_first_then_the_most_precise_name():
    # DynamicBrokerConfig.overrideProps removes a property's synonyms before a higher layer sets it: a dynamic
    # log.retention.hours beats a static log.retention.ms; inside one layer .ms beats .minutes beats .hours
    d = brokers(b1={"log.retention.ms": "1000", "log.retention.hours": "5"}, b2={"log.retention.minutes": "2",
                                                                               "log.retention.hours": "5"})
    assert broker_value(d, {}, 1, "log.retention.ms") == ("1000", STATIC, "log.retention.ms")
    assert broker_value(d, {}, 2, "log.retention.ms") == ("120000", STATIC, "log.retention.minutes")
    dyn = {"<default>": {"log.retention.hours": "1"}}
    assert broker_value(d, dyn, 1, "log.retention.ms") == ("3600000", DYNAMIC_DEFAULT, "log.retention.hours")
    assert broker_value(brokers(b1={}), {}, 1, "log.retention.ms") == (str(168 * 3_600_000), DEFAULT,
                                                                       "log.retention.hours")


def test_a_broker_not_read_uses_what_the_others_agree_on_else_the_assumed_value():
    d = BrokerDefaults({1: BrokerSettings(1, {"min.insync.replicas": "2", "log.segment.delete.delay.ms": "1"},
                                          KAFKA_DEFAULTS),
                        2: BrokerSettings(2, {"min.insync.replicas": "2", "log.segment.delete.delay.ms": "2"},
                                          KAFKA_DEFAULTS)},
                       {3: "no answer in time"}, None).assuming(4, FROM_KEEL_TOML)
    assert broker_min_isr(d, {}, 3) == (2, STATIC, "min.insync.replicas")
    # they disagree on log.segment.delete.delay.ms: broker 3's is unknown (not Kafka's default, which they agree on)
    assert broker_value(d, {}, 3, "log.segment.delete.delay.ms") is None
    assert broker_min_isr(unknown("no bootstrap", min_isr=4), {}, 3) == (4, ASSUMED, FROM_KEEL_TOML)
    assert broker_min_isr(unknown("no bootstrap"), {}, 3) == (1, ASSUMED, "Kafka's default")
    # an invalid dynamic value is skipped (the broker refuses it and keeps the layer below)
    assert broker_min_isr(d, {"1": {"min.insync.replicas": "zero"}}, 1).value == 2


# --- health: the leader's value ----------------------------------------------------------------------------------

# brokers 1 and 2 run with min.insync.replicas=2 in server.properties, broker 3 with 3
STRICT = brokers(b1={"min.insync.replicas": "2"}, b2={"min.insync.replicas": "2"}, b3={"min.insync.replicas": "3"})
TOPICS = [Topic("lonely", (P("lonely", 0, [1]),)),
          Topic("pair", (P("pair", 0, [1, 2]), P("pair", 1, [3, 1]))),
          Topic("trio", (P("trio", 0, [1, 2, 3]), P("trio", 1, [2, 3, 1]), P("trio", 2, [3, 1, 2]))),
          Topic("relaxed", (P("relaxed", 0, [3, 1]),), config={"min.insync.replicas": "1"})]


def _flags(s, defaults):
    rows = health.partition_health(s, defaults)
    return ({(h.topic, h.partition) for h in rows if h.under_min_isr},
            {(h.topic, h.partition) for h in rows if h.at_min_isr})


def test_flags_use_each_partitions_leaders_min_isr():
    s = snap(TOPICS)
    under, at = _flags(s, STRICT)
    assert under == {("lonely", 0), ("pair", 1)}  # ISR 1 < 2; ISR 2 < broker 3's 3
    assert at == {("pair", 0), ("trio", 2)}
    # before issue 23 (nothing known, 1 assumed): nothing under min ISR while acks=all producers fail
    assert _flags(s, None) == (set(), {("lonely", 0)})
    summary = health.summarize(s, defaults=STRICT)
    assert (summary.under_min_isr, summary.at_min_isr) == (2, 2)
    narrowed = health.filter_partitions(s, under_min_isr=True, defaults=STRICT)
    assert [(p.topic, p.partition) for p in narrowed.partitions()] == [("lonely", 0), ("pair", 1)]
    # a leaderless partition: its preferred replica's value (no live leader is under min ISR anyway)
    rule = MinIsrRule(s, STRICT)
    assert rule.leader(-1, (3, 1)) == 3 and rule.uniform is None
    assert MinIsrRule(s, brokers(b1={}, b2={}, b3={})).uniform == 1


def test_the_note_says_what_topics_are_checked_against_and_why():
    s = snap(TOPICS)
    basis = health.summarize(s, defaults=STRICT).min_isr_basis
    assert basis.differs and not basis.assumed and not basis.failed
    assert basis.text.startswith("The brokers apply different min.insync.replicas to topics without an override: "
                                 "2 on brokers 1, 2 (STATIC_BROKER_CONFIG); 3 on broker 3 (STATIC_BROKER_CONFIG). "
                                 "Each partition is checked against its leader's value")
    assert "read at 10:00:00" in basis.text
    none = health.summarize(s, defaults=unknown("no bootstrap servers", min_isr=2)).min_isr_basis
    assert none.assumed and not none.failed
    assert none.text == ("Topics without a min.insync.replicas override are checked against 2 (assumed: "
                         "min_insync_replicas in keel.toml). Static broker settings (server.properties) are unknown: "
                         "no bootstrap servers. 2 is assumed (min_insync_replicas in keel.toml).")
    assert "1 is assumed (Kafka's default)" in health.summarize(s).min_isr_basis.text
    failed = min_isr_basis(unknown("timeout", failed=True), {}, [1, 2, 3])
    assert failed.failed and failed.assumed
    # ZooKeeper's dynamic default covers every broker: nothing assumed
    dyn = min_isr_basis(unknown("no bootstrap"), {"<default>": {"min.insync.replicas": "2"}}, [1, 2])
    assert not dyn.assumed and dyn.text == ("Topics without a min.insync.replicas override are checked against 2 "
                                            "(DYNAMIC_DEFAULT_BROKER_CONFIG, /config/brokers/<default>).")
    # a KRaft cluster has no such znode: named as kafka-configs sets it
    kraft = min_isr_basis(unknown("no bootstrap"), {"<default>": {"min.insync.replicas": "2"}}, [1, 2], kraft=True)
    assert kraft.text.endswith("(DYNAMIC_DEFAULT_BROKER_CONFIG, kafka-configs --entity-type brokers --entity-default).")


# --- the effective config ----------------------------------------------------------------------------------------


def test_effective_config_takes_server_properties_with_kafkas_source_names():
    d = brokers(b1={"log.segment.delete.delay.ms": "1000", "min.insync.replicas": "2"},
                b2={"log.segment.delete.delay.ms": "1000", "min.insync.replicas": "2"},
                b3={"log.segment.delete.delay.ms": "1000", "min.insync.replicas": "3"})
    rows = {r.key: r for r in effective_config({"retention.ms": "5"}, dynamic={}, defaults=d, brokers=[1, 2, 3])}
    fd = rows["file.delete.delay.ms"]  # the example: Kafka's ConfigCommand says the same
    assert (fd.value, fd.source, fd.synonym, fd.label) == ("1000", STATIC, "log.segment.delete.delay.ms",
                                                           "STATIC_BROKER_CONFIG: log.segment.delete.delay.ms")
    assert (rows["retention.ms"].value, rows["retention.ms"].source) == ("5", "DYNAMIC_TOPIC_CONFIG")
    mi = rows["min.insync.replicas"]
    assert (mi.value, mi.source, mi.others) == ("2", STATIC, ((3, "3", STATIC),))
    assert mi.differs == "broker 3: 3 (STATIC_BROKER_CONFIG)"
    assert (rows["segment.ms"].value, rows["segment.ms"].source) == (str(168 * 3_600_000), DEFAULT)
    # only the topic's brokers count
    assert not {r.key: r for r in effective_config({}, dynamic={}, defaults=d, brokers=[1])}[
        "min.insync.replicas"].others
    # nothing read: Kafka's default, saying server.properties is unknown; a configured min ISR is the assumed one
    blind = {r.key: r for r in effective_config({}, dynamic={}, defaults=unknown("no bootstrap", min_isr=2))}
    assert blind["file.delete.delay.ms"].label == "DEFAULT_CONFIG (server.properties unknown)"
    assert (blind["min.insync.replicas"].value, blind["min.insync.replicas"].label) == (
        "2", "assumed (min_insync_replicas in keel.toml): server.properties unknown")
    assert {r.key: r for r in effective_config({}, dynamic={})}["min.insync.replicas"].label == \
        "DEFAULT_CONFIG (server.properties unknown)"


# --- restart checks and risks ------------------------------------------------------------------------------------


def test_restart_check_uses_the_min_isr_of_the_leader_left_after_the_stop():
    s = snap(TOPICS)
    check = check_stop(s, 2, defaults=STRICT)
    # pair-0: ISR 1 < 2; trio-1: led by 3 once 2 stops, ISR 2 < 3; trio-2: led by 3, ISR 2 < 3
    assert {(r.topic, r.partition, r.min_isr) for r in check.under_min_isr} == {
        ("pair", 0, 2), ("trio", 1, 3), ("trio", 2, 3)}
    assert not check.safe
    assert check_stop(s, 2).safe  # before issue 23: 1 assumed, "safe"
    assumed = check_stop(s, 2, min_isr_default=2)  # --min-isr-default: the static value assumed everywhere
    assert {(r.topic, r.partition) for r in assumed.under_min_isr} == {("pair", 0)}
    # the brokers said: --min-isr-default only fills what they did not
    assert check_stop(s, 2, defaults=STRICT, min_isr_default=1).under_min_isr == check.under_min_isr


def test_risks_count_the_brokers_min_isr_of_a_topic_without_an_override():
    s = snap(TOPICS)
    draft = draft_create_topic(s, "new", replica_assignment={0: [1, 2], 1: [2, 3]}, defaults=STRICT)
    assert draft.risks == ["min.insync.replicas=3 (STATIC_BROKER_CONFIG of broker 3) is above the replication factor "
                           "2 of topic new: every partition led by broker 3 stays under min ISR and producers with "
                           "acks=all get NotEnoughReplicas on every write to it"]
    assert draft_create_topic(s, "new", replica_assignment={0: [1, 2], 1: [2, 3]}).risks == []
    every = brokers(b1={"min.insync.replicas": "3"}, b2={"min.insync.replicas": "3"})
    assert "every partition stays under min ISR" in draft_create_topic(
        s, "new", replica_assignment={0: [1, 2]}, defaults=every).risks[0]
    # dropping relaxed's override leaves it with broker 3's 3 > RF 2: that change needs confirming
    alter = draft_alter_config(s, "relaxed", delete=["min.insync.replicas"], defaults=STRICT)
    assert alter.risks and alter.risks[0].startswith("min.insync.replicas=3 (STATIC_BROKER_CONFIG of broker 3)")
    assert draft_alter_config(s, "relaxed", delete=["min.insync.replicas"]).risks == []


# --- keel.toml ---------------------------------------------------------------------------------------------------


def test_keel_toml_min_insync_replicas():
    ok = parse_config('[clusters.a]\nzk = "z:2181"\nmin_insync_replicas = 2\n[clusters.b]\nzk = "z:2181"\n')
    assert (ok.clusters["a"].min_insync_replicas, ok.clusters["b"].min_insync_replicas) == (2, None)
    for bad in ("0", '"2"', "true", "1.5", "-1"):
        with pytest.raises(ConfigError) as e:
            parse_config(f'[clusters.a]\nzk = "z:2181"\nmin_insync_replicas = {bad}\n')
        assert e.value.key == "clusters.a.min_insync_replicas" and "at least 1" in str(e.value)


# --- the dashboard's reader: a dead bootstrap never holds a page -------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reader_of_unreachable_brokers_answers_at_once_then_says_they_could_not_be_read():
    from core.kafka.broker_configs import BrokerDefaultsReader

    cfg = parse_config(f'[clusters.gone]\nzk = "z:2181"\nbootstrap = "127.0.0.1:{_closed_port()}"\n'
                       "connect_timeout = 0.5\nmin_insync_replicas = 2\n").clusters["gone"]
    reader = BrokerDefaultsReader(cfg)
    try:
        started = time.monotonic()
        first = reader.get({1, 2}, wait=0.2)
        assert time.monotonic() - started < 1.0
        assert not first.known and not first.failed and "being read" in first.problem
        assert (first.assumed_min_isr, first.assumed_from) == (2, FROM_KEEL_TOML)
        deadline = time.monotonic() + 20
        while not (got := reader.get({1, 2}, wait=0.5)).failed and time.monotonic() < deadline:
            time.sleep(0.2)
        assert got.failed and "could not be read" in got.problem and got.assumed_min_isr == 2
        basis = min_isr_basis(got, {}, [1, 2])
        assert basis.failed and "2 is assumed (min_insync_replicas in keel.toml)" in basis.text
    finally:
        reader.close()


def test_assumed_source_names():
    assert unknown("x", min_isr=3, assumed_from=FROM_CLI).assumed_from == "--min-isr-default"


def test_kafka_3_7_caps_min_isr_at_the_replica_count():
    # Partition.effectiveMinIsr (KAFKA-15583): min(min.insync.replicas, replicas); before 3.7 an RF 1 topic with
    # min.insync.replicas=2 refuses every acks=all write, from 3.7 on it takes them
    from dataclasses import replace

    s = snap(TOPICS)
    new = replace(STRICT, version=(3, 9))
    under, at = _flags(s, new)
    assert under == set() and at == {("lonely", 0), ("pair", 0), ("pair", 1), ("trio", 2)}
    assert _flags(s, replace(STRICT, version=(3, 6)))[0] == {("lonely", 0), ("pair", 1)}
    assert "cap it at each partition's replica count" in health.summarize(s, defaults=new).min_isr_basis.text
    rows = {(h.topic, h.partition): h.min_isr for h in health.partition_health(s, new)}
    assert (rows[("lonely", 0)], rows[("pair", 1)], rows[("trio", 2)]) == (1, 2, 3)
    # stopping broker 3: trio-2 is then led by 1 (value 2), ISR [1, 2]: fine; pair-1 led by 1: ISR [1] < 2
    check = check_stop(s, 3, defaults=new)
    assert {(r.topic, r.partition) for r in check.under_min_isr} == {("pair", 1)}


def test_a_broker_not_read_is_unknown_where_the_others_disagree():
    d = BrokerDefaults({1: BrokerSettings(1, {"min.insync.replicas": "2"}, KAFKA_DEFAULTS),
                        2: BrokerSettings(2, {}, KAFKA_DEFAULTS)}, {3: "no answer in time"}, None).assuming(
        4, FROM_KEEL_TOML)
    assert broker_min_isr(d, {}, 3) == (4, ASSUMED, FROM_KEEL_TOML)  # not Kafka's 1: broker 1 sets 2
    assert broker_min_isr(d, {"3": {"min.insync.replicas": "5"}}, 3) == (5, DYNAMIC_BROKER, "min.insync.replicas")
    assert broker_min_isr(d, {}, 2) == (1, DEFAULT, "min.insync.replicas")


def test_risk_text_on_kafka_3_7_brokers_says_they_cap_min_isr():
    from dataclasses import replace

    draft = draft_create_topic(snap(TOPICS), "new", replica_assignment={0: [1, 2], 1: [2, 3]},
                               defaults=replace(STRICT, version=(3, 9)))
    assert draft.risks == ["min.insync.replicas=3 (STATIC_BROKER_CONFIG of broker 3) is above the replication factor "
                           "2 of topic new: the brokers (Kafka 3.7+) cap it at 2, so every partition led by broker 3 "
                           "is at min ISR for good: with one replica out of sync, producers with acks=all get "
                           "NotEnoughReplicas"]
