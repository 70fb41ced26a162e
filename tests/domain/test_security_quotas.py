"""core.security.quotas: Kafka's quota precedence (ClientQuotaManager, 3.9), values without SCRAM credentials,
validation (ClientQuotaControlManager) and kafka-configs --describe (ConfigCommand)."""

from __future__ import annotations

import pytest

from core.errors import ValidationError
from core.security import quotas as q
from core.security.model import DEFAULT, QUOTA_KEYS, Quota, QuotaEntity

E = QuotaEntity
P = "producer_byte_rate"


def test_levels_are_kafkas_eight_most_specific_first():
    assert q.level_entities("alice", "c1") == (
        E("alice", "c1"), E("alice", DEFAULT), E("alice", None), E(DEFAULT, "c1"), E(DEFAULT, DEFAULT),
        E(DEFAULT, None), E(None, "c1"), E(None, DEFAULT))
    assert len(q.LEVELS) == 8


def test_each_level_wins_over_every_less_specific_one():
    levels = q.level_entities("alice", "c1")
    for i, entity in enumerate(levels):
        quotas = [Quota(e, {P: float(100 + j)}) for j, e in enumerate(levels) if j >= i]
        assert q.effective(quotas, "alice", "c1") == {P: (float(100 + i), entity)}, entity


def test_levels_of_other_users_and_clients_do_not_apply():
    quotas = [Quota(E("bob", "c1"), {P: 1.0}), Quota(E("bob", None), {P: 2.0}), Quota(E(None, "c9"), {P: 3.0}),
              Quota(E("bob", DEFAULT), {P: 4.0}), Quota(E(DEFAULT, "c9"), {P: 5.0})]
    assert q.effective(quotas, "alice", "c1") == {}  # no quota at any level: unlimited
    assert q.effective(quotas + [Quota(E(None, DEFAULT), {P: 6.0})], "alice", "c1") == {P: (6.0, E(None, DEFAULT))}


def test_each_key_is_resolved_on_its_own():
    quotas = [Quota(E("alice", "c1"), {"request_percentage": 50.0}),
              Quota(E("alice", None), {P: 1024.0, "consumer_byte_rate": 2048.0}),
              Quota(E(None, DEFAULT), {P: 1.0, "controller_mutation_rate": 10.0})]
    assert q.effective(quotas, "alice", "c1") == {
        "request_percentage": (50.0, E("alice", "c1")),
        P: (1024.0, E("alice", None)),
        "consumer_byte_rate": (2048.0, E("alice", None)),
        "controller_mutation_rate": (10.0, E(None, DEFAULT)),
    }
    # another client of alice: the user+client quota is not its own, the user one still is
    assert q.effective(quotas, "alice", "c2") == {P: (1024.0, E("alice", None)),
                                                  "consumer_byte_rate": (2048.0, E("alice", None)),
                                                  "controller_mutation_rate": (10.0, E(None, DEFAULT))}


def test_a_user_default_beats_a_client_id_quota():
    # /config/users/<default> (level 6) comes before /config/clients/<client-id> (level 7)
    quotas = [Quota(E(DEFAULT, None), {P: 1.0}), Quota(E(None, "c1"), {P: 2.0})]
    assert q.effective(quotas, "alice", "c1") == {P: (1.0, E(DEFAULT, None))}


def test_an_empty_client_id_skips_the_user_and_client_levels_as_kafka_does():
    # DefaultQuotaCallback: the sensor is (user, "") and quotaLimit reads /config/users/<user> then <default>
    quotas = [Quota(E("alice", DEFAULT), {P: 1.0}), Quota(E(DEFAULT, None), {P: 2.0})]
    assert q.effective(quotas, "alice", "") == {P: (2.0, E(DEFAULT, None))}
    assert q.effective(quotas, "alice", "c1") == {P: (1.0, E("alice", DEFAULT))}


def test_values_of_keeps_quota_keys_only_and_drops_scram_credentials():
    node = {"SCRAM-SHA-256": "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
            "SCRAM-SHA-512": "salt=eA==,stored_key=eQ==,server_key=eg==,iterations=4096",
            "producer_byte_rate": "1048576", "request_percentage": "12.5", "something.else": "1"}
    values = q.values_of(node)
    assert values == {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}
    assert "salt" not in repr(values) and set(values) <= set(QUOTA_KEYS)
    with pytest.raises(ValidationError, match="producer_byte_rate is not a number"):
        q.values_of({"producer_byte_rate": "fast"})


def test_validate_refuses_what_the_brokers_refuse():
    q.validate(E("alice", None), {P: 1024, "request_percentage": 0.5, "consumer_byte_rate": None})
    q.validate(E(DEFAULT, DEFAULT), {})
    cases = [
        (E(None, None), {P: 1.0}, "at least one"),
        (E("", None), {P: 1.0}, "empty user"),
        (E("alice", None), {"producer.byte.rate": 1.0}, "unknown quota key"),
        (E("alice", None), {"SCRAM-SHA-256": 1.0}, "SCRAM credential, not a quota"),
        (E("alice", None), {P: 0}, "greater than 0"),
        (E("alice", None), {"request_percentage": -1.0}, "greater than 0"),
        (E("alice", None), {P: 10.5}, "cannot be a fractional value"),
        (E("alice", None), {P: "fast"}, "must be a number"),
        (E("alice", None), {P: float("inf")}, "must be a number"),
        (E("alice", None), {P: True}, "must be a number"),
    ]
    for entity, values, message in cases:
        with pytest.raises(ValidationError, match=message):
            q.validate(entity, values)


def test_entity_label():
    assert q.entity_label(E("alice", "c1")) == "user alice, client-id c1"
    assert q.entity_label(E(DEFAULT, None)) == "default user"
    assert q.entity_label(E("alice", DEFAULT)) == "user alice, default client-id"
    assert q.entity_label(E(None, "c1")) == "client-id c1"
    assert q.entity_label(E(None, DEFAULT)) == "default client-id"


def test_java_double_is_javas_double_to_string():
    assert [q.java_double(x) for x in (1024, 12.5, 10.0, 20971520, 1e7, 9999999.0, 0.001, 5e-4)] == [
        "1024.0", "12.5", "10.0", "2.097152E7", "1.0E7", "9999999.0", "0.001", "5.0E-4"]


# `kafka-configs --describe`, Kafka 3.9.1 (ConfigCommand), captured verbatim from a broker after
#   --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=20971520
#   --alter --entity-type users --entity-default --add-config producer_byte_rate=1024
#   --alter --entity-type users --entity-name alice --entity-type clients --entity-name c1 --add-config
#       request_percentage=12.5
#   --alter --entity-type clients --entity-default --add-config consumer_byte_rate=4096
#   --alter --entity-type clients --entity-name c2 --add-config controller_mutation_rate=10
#   --alter --entity-type users --entity-name alice --add-config SCRAM-SHA-256=[iterations=4096,password=...]
KAFKA_USERS = ("Quota configs for the default user-principal are producer_byte_rate=1024.0\n"
               "Quota configs for user-principal 'alice' are consumer_byte_rate=2.097152E7, "
               "producer_byte_rate=1048576.0\n"
               "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096\n")
KAFKA_CLIENTS = ("Quota configs for client-id 'c2' are controller_mutation_rate=10.0\n"
                 "Quota configs for the default client-id are consumer_byte_rate=4096.0\n")
KAFKA_USERS_CLIENTS = "Quota configs for user-principal 'alice', client-id 'c1' are request_percentage=12.5\n"
# the same with --zookeeper (deprecated; it prints the SCRAM credential itself: the salt and keys here are made up)
KAFKA_USERS_ZK = ("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.\n"
                  "Use --bootstrap-server instead to specify a broker to connect to.\n"
                  "Configs for user-principal 'alice' are SCRAM-SHA-256=salt=bWFkZXVw,stored_key=bWFkZQ==,"
                  "server_key=dXA=,iterations=4096,producer_byte_rate=1048576,consumer_byte_rate=20971520\n"
                  "Configs for default user-principal are producer_byte_rate=1024\n")
USERS = (Quota(E(DEFAULT, None), {P: 1024.0}),
         Quota(E("alice", None), {P: 1048576.0, "consumer_byte_rate": 20971520.0}))
CLIENTS = (Quota(E(None, "c2"), {"controller_mutation_rate": 10.0}),
           Quota(E(None, DEFAULT), {"consumer_byte_rate": 4096.0}))
USERS_CLIENTS = (Quota(E("alice", "c1"), {"request_percentage": 12.5}),)


def _as_set(quotas):
    return {(x.entity, tuple(sorted(x.values.items()))) for x in quotas}


def test_parse_describe_text_reads_kafkas_output_without_scram():
    assert _as_set(q.parse_describe_text(KAFKA_USERS)) == _as_set(USERS)
    assert _as_set(q.parse_describe_text(KAFKA_CLIENTS)) == _as_set(CLIENTS)
    assert _as_set(q.parse_describe_text(KAFKA_USERS_CLIENTS)) == _as_set(USERS_CLIENTS)
    parsed = q.parse_describe_text(KAFKA_USERS_ZK)
    assert _as_set(parsed) == _as_set(USERS) and "salt" not in repr(parsed)


def test_describe_text_is_kafkas_lines_and_round_trips():
    for quotas, kafka in ((USERS, KAFKA_USERS), (CLIENTS, KAFKA_CLIENTS), (USERS_CLIENTS, KAFKA_USERS_CLIENTS)):
        text = q.describe_text(quotas)
        assert _as_set(q.parse_describe_text(text)) == _as_set(quotas)
        # line for line Kafka's (entries sorted by key, as Kafka printed these), without the SCRAM line
        kafka_lines = {line for line in kafka.splitlines() if line.startswith("Quota configs")}
        assert set(text.splitlines()) == kafka_lines
    assert q.describe_text([Quota(E("x", None), {})]) == ""
    assert "SCRAM" not in q.describe_text([Quota(E("alice", None), {"SCRAM-SHA-256": 1.0, P: 1.0})])


def test_describe_text_round_trips_names_with_commas_and_equals():
    # an SSL principal's name ("CN=alice,OU=ops") is a quota user as it is; ConfigCommand quotes it
    quotas = (Quota(E("CN=alice,OU=ops", "app-1"), {P: 2048.0}), Quota(E(None, "c=1,2"), {"request_percentage": 1.5}))
    text = q.describe_text(quotas)
    assert "Quota configs for user-principal 'CN=alice,OU=ops', client-id 'app-1' are producer_byte_rate=2048.0" in text
    assert _as_set(q.parse_describe_text(text)) == _as_set(quotas)
