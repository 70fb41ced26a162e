"""The KRaft engine's pure parts (issue 26 item 3): Kafka's error codes become Kafka's error names and then the typed
errors the ZooKeeper engine raises, in Kafka's words; a topic whose settings the brokers did not describe is not
written from; topic ids travel between Kafka's printed form and the request's UUID. No brokers needed."""

from __future__ import annotations

import pytest

from core.errors import (
    AdminOperationError,
    BusyError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    ReassignmentInProgressError,
    TopicExistsError,
    UnknownTopicError,
    ValidationError,
)
from core.kafka.admin import KafkaAdminError
from core.kafka.election_writes import _all_refused, refusals_text
from core.kafka.metadata import kafka_topic_id, snapshot_of
from core.kafka.topic_writes import kafka_uuid, refusal_error, refuse_unreadable
from core.kafka.write_requests import refusal, refusal_of


@pytest.mark.parametrize("code, name", [
    (36, "TOPIC_ALREADY_EXISTS"), (17, "INVALID_TOPIC_EXCEPTION"), (39, "INVALID_REPLICA_ASSIGNMENT"),
    (37, "INVALID_PARTITIONS"), (40, "INVALID_CONFIG"), (44, "POLICY_VIOLATION"), (84, "ELECTION_NOT_NEEDED"),
    (7, "REQUEST_TIMED_OUT"), (999, "ERROR_999")])
def test_error_codes_are_named_as_kafka_names_them(code, name):
    got = refusal(code, None)
    assert got[0] == name and got[1]  # without Kafka's message: the error's description, never empty
    assert refusal(code, "Kafka's own words.") == (name, "Kafka's own words.")
    assert refusal(0, "ignored") is None and refusal(None, None) is None


def test_the_row_of_the_topic_is_the_one_read():
    rows = [{"name": "a", "error_code": 0, "error_message": None},
            {"name": "b", "error_code": 36, "error_message": "Topic 'b' already exists."}]
    assert refusal_of(rows, "a") is None
    assert refusal_of(rows, "b") == ("TOPIC_ALREADY_EXISTS", "Topic 'b' already exists.")
    assert refusal_of(rows, "c")[0] == "UNKNOWN"  # never taken for a success


@pytest.mark.parametrize("name, error", [
    ("TOPIC_ALREADY_EXISTS", TopicExistsError), ("INVALID_TOPIC_EXCEPTION", InvalidTopicError),
    ("INVALID_PARTITIONS", InvalidPartitionsError), ("INVALID_REPLICA_ASSIGNMENT", InvalidReplicaAssignmentError),
    ("INVALID_CONFIG", InvalidConfigurationError), ("POLICY_VIOLATION", ValidationError),
    ("UNKNOWN_TOPIC_OR_PARTITION", UnknownTopicError), ("TOPIC_DELETION_DISABLED", AdminOperationError),
    ("REASSIGNMENT_IN_PROGRESS", ReassignmentInProgressError), ("THROTTLING_QUOTA_EXCEEDED", BusyError)])
def test_kafka_refusals_become_the_zookeeper_engines_typed_errors_in_kafkas_words(name, error):
    got = refusal_error((name, "Kafka's message."))
    assert type(got) is error and got.message == "Kafka's message."


def test_a_refusal_keel_has_no_type_for_names_kafkas_error():
    got = refusal_error(("CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed."))
    assert type(got) is KafkaAdminError
    assert str(got) == "Kafka refused it: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."
    assert "create.topic.policy" in str(refusal_error(("POLICY_VIOLATION", "no")))


def test_topic_ids_round_trip_between_kafkas_form_and_the_requests_uuid():
    printed = kafka_topic_id("5f1483c4-eb76-413a-bacf-46b2a665c87b")
    assert str(kafka_uuid(printed)) == "5f1483c4-eb76-413a-bacf-46b2a665c87b"


def test_a_write_from_settings_the_brokers_did_not_describe_is_refused():
    cluster = {"cluster_id": "x", "brokers": [{"broker_id": 1, "host": "h", "port": 9092}]}
    topics = [{"name": "t", "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1],
                                            "isr_nodes": [1]}]}]
    described = snapshot_of(cluster, topics, overrides={"t": {"retention.ms": "1"}})
    refuse_unreadable(described, "t", "alter the config of topic t", config=True)  # nothing to refuse
    blind = snapshot_of(cluster, topics, overrides={})
    refuse_unreadable(blind, "t", "add partitions to topic t")  # the partitions were read: they are what counts
    with pytest.raises(KafkaAdminError, match="did not describe topic t: settings .*refusing to alter the config of "
                                              "topic t, which depends on it: nothing was written"):
        refuse_unreadable(blind, "t", "alter the config of topic t", config=True)
    failed = snapshot_of(cluster, [{"name": "t", "error_code": 29, "partitions": []}], overrides={})
    with pytest.raises(KafkaAdminError, match="did not describe topic t .*refusing to delete topic t"):
        refuse_unreadable(failed, "t", "delete topic t")


def test_an_election_kafka_refused_for_every_partition_raises_its_typed_error():
    refused = {("t", 1): ("PREFERRED_LEADER_NOT_AVAILABLE", "The preferred leader was not available."),
               ("t", 0): ("PREFERRED_LEADER_NOT_AVAILABLE", "The preferred leader was not available.")}
    text = refusals_text(refused)
    assert text.startswith("t-0: PREFERRED_LEADER_NOT_AVAILABLE (The preferred leader was not available.); t-1: ")
    error = _all_refused(refused, text)
    assert type(error) is ValidationError and error.message.startswith("Kafka elected none of the 2 partitions: t-0")
    mixed = {**refused, ("u", 0): ("REASSIGNMENT_IN_PROGRESS", "moving")}
    assert type(_all_refused(mixed, refusals_text(mixed))) is KafkaAdminError


def test_a_write_without_an_answer_is_recorded_as_failed_with_an_unknown_outcome(tmp_path):
    from core.audit.store import Store
    from core.kafka.admin import KafkaUnreachableError
    from core.kafka.topic_writes import KafkaWriteOutcomeUnknownError, _send

    store = Store(tmp_path / "keel.sqlite")

    def begin():
        return store.begin(cluster="k", kind="create-topic", target="t", summary="s", payload=[], rollback=None)

    def no_answer():
        raise KafkaUnreachableError("could not create topic t: no Kafka broker of h:1 answered within 10 s")

    timed_out = begin()
    with pytest.raises(KafkaWriteOutcomeUnknownError, match="the outcome of creating t is unknown: .*REQUEST_TIMED_OUT"):
        _send(store, timed_out, lambda: ("REQUEST_TIMED_OUT", "Timed out."), "s", (), what="creating t",
              check="kafka-topics.sh --describe")
    silent = begin()
    with pytest.raises(KafkaWriteOutcomeUnknownError, match="may still be carried out. Check with kafka-topics"):
        _send(store, silent, no_answer, "s", (), what="creating t", check="kafka-topics.sh --describe")
    refused = begin()
    with pytest.raises(TopicExistsError):
        _send(store, refused, lambda: ("TOPIC_ALREADY_EXISTS", "Topic 't' already exists."), "s", (),
              what="creating t", check="-")
    rows = {a.id: a for a in store.actions("k")}
    assert [rows[i].status for i in (timed_out, silent, refused)] == ["failed"] * 3
    assert "unknown" in rows[timed_out].result and "unknown" in rows[silent].result
    assert rows[refused].result == "Topic 't' already exists."
