"""Decoding and encoding of every Kafka znode payload and version (pure, no ZooKeeper)."""

import json

import pytest

from core import zkformat as zf
from core.errors import CorruptZnodeError
from core.model import TopicPartitionReplicas


def js(obj) -> bytes:
    return json.dumps(obj).encode()


# --- broker registrations v1..v5 -------------------------------------------------------------

BROKER_V1 = {"version": 1, "host": "kafka1", "port": 9092, "jmx_port": 9999, "timestamp": "2233345666"}
BROKER_V2 = {"version": 2, "host": "kafka1", "port": 9092, "jmx_port": 9999, "timestamp": "2233345666",
             "endpoints": ["PLAINTEXT://kafka1:9092", "SSL://kafka1:9093"]}
BROKER_V3 = dict(BROKER_V2, version=3, rack="dc1")
BROKER_V4 = {"version": 4, "host": None, "port": -1, "jmx_port": -1, "timestamp": "1",
             "endpoints": ["CLIENT://kafka1:9092", "REPLICATION://kafka1:9093"], "rack": "dc1",
             "listener_security_protocol_map": {"CLIENT": "SSL", "REPLICATION": "PLAINTEXT"}}
BROKER_V5 = dict(BROKER_V4, version=5, features={"metadata.version": {"min_version": 1, "max_version": 7}})


def test_broker_v1_has_a_single_plaintext_endpoint():
    reg = zf.decode_broker(1, js(BROKER_V1))
    assert (reg.version, reg.host, reg.port, reg.endpoints) == (1, "kafka1", 9092, ("PLAINTEXT://kafka1:9092",))
    assert reg.jmx_port == 9999 and reg.timestamp == "2233345666" and reg.rack is None


def test_broker_v2_and_v3_endpoints_and_rack():
    assert zf.decode_broker(1, js(BROKER_V2)).endpoints == ("PLAINTEXT://kafka1:9092", "SSL://kafka1:9093")
    reg = zf.decode_broker(1, js(BROKER_V3))
    assert reg.rack == "dc1" and reg.to_broker().rack == "dc1" and reg.to_broker().alive


def test_broker_v4_listener_map_and_no_plaintext_port():
    reg = zf.decode_broker(7, js(BROKER_V4))
    assert reg.port is None and reg.host is None
    assert reg.security_protocol("CLIENT") == "SSL" and reg.security_protocol("REPLICATION") == "PLAINTEXT"


def test_broker_v5_features():
    reg = zf.decode_broker(7, js(BROKER_V5))
    assert reg.version == 5 and reg.features["metadata.version"]["max_version"] == 7


def test_broker_ipv6_endpoint():
    reg = zf.decode_broker(1, js(dict(BROKER_V2, endpoints=["PLAINTEXT://[::1]:9092"])))
    assert zf.parse_endpoint(reg.endpoints[0]) == ("PLAINTEXT", "::1", 9092)


@pytest.mark.parametrize("payload,needle", [
    (b"", "empty payload"),
    (b"{not json", "not JSON"),
    (b"[1,2]", "expected a JSON object"),
    (js({"host": "h"}), "missing 'version'"),
    (js({"version": 0}), "unsupported version"),
    (js(dict(BROKER_V2, endpoints="PLAINTEXT://h:1")), "'endpoints' must be a list"),
    (js(dict(BROKER_V2, endpoints=["garbage"])), "unable to parse"),
    (js(dict(BROKER_V3, rack=5)), "'rack' must be a string"),
])
def test_corrupt_broker_names_path(payload, needle):
    with pytest.raises(CorruptZnodeError) as e:
        zf.decode_broker(3, payload)
    assert e.value.path == "/brokers/ids/3" and needle in str(e.value)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_broker_round_trip_every_version(version):
    data = zf.encode_broker(["PLAINTEXT://h:9092", "SSL://h:9093"], version=version, rack="r1", timestamp_ms=42)
    doc = json.loads(data)
    reg = zf.decode_broker(4, data)
    assert doc["version"] == version and reg.host == "h" and reg.port == 9092
    assert ("rack" in doc) == (version >= 3) and ("features" in doc) == (version >= 5)
    assert ("listener_security_protocol_map" in doc) == (version >= 4)
    assert doc["timestamp"] == "42"


def test_broker_encode_without_plaintext_registers_null_host():
    doc = json.loads(zf.encode_broker(["SSL://h:9093"], timestamp_ms=1))
    assert doc["host"] is None and doc["port"] == -1


# --- topic nodes v1..v3 ----------------------------------------------------------------------


def test_topic_v1_partitions_only():
    a = zf.decode_topic("t", js({"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}}))
    assert a.partitions == {0: (1, 2), 1: (2, 3)} and a.adding_replicas == {} and a.topic_id is None


def test_topic_v2_in_flight_maps():
    a = zf.decode_topic("t", js({"version": 2, "partitions": {"0": [1, 2, 3, 4]},
                                  "adding_replicas": {"0": [4]}, "removing_replicas": {"0": [1]}}))
    assert a.adding_replicas == {0: (4,)} and a.removing_replicas == {0: (1,)}


def test_topic_v3_topic_id():
    a = zf.decode_topic("t", js({"version": 3, "partitions": {"0": [1]}, "adding_replicas": {},
                                  "removing_replicas": {}, "topic_id": "Q2rW0k2eQ5y1a6U8fXqk5A"}))
    assert a.version == 3 and a.topic_id == "Q2rW0k2eQ5y1a6U8fXqk5A"


@pytest.mark.parametrize("payload,needle", [
    (js({"version": 1}), "missing 'partitions'"),
    (js({"version": 1, "partitions": {"x": [1]}}), "not a non-negative integer"),
    (js({"version": 1, "partitions": {"0": [1, "2"]}}), "list of integers"),
    (js({"version": 2, "partitions": {"0": [1]}, "adding_replicas": []}), "'adding_replicas' must be an object"),
    (js({"version": 3, "partitions": {}, "topic_id": 7}), "'topic_id' must be a string"),
])
def test_corrupt_topic(payload, needle):
    with pytest.raises(CorruptZnodeError, match=needle) as e:
        zf.decode_topic("orders", payload)
    assert e.value.path == "/brokers/topics/orders"


def test_topic_encode_keeps_topic_id_and_maps():
    data = zf.encode_topic({1: [2, 3], 0: [1, 2, 3]}, adding_replicas={0: [3]}, removing_replicas={0: []},
                           topic_id="abc")
    doc = json.loads(data)
    assert doc == {"version": 3, "partitions": {"0": [1, 2, 3], "1": [2, 3]}, "adding_replicas": {"0": [3]},
                   "removing_replicas": {}, "topic_id": "abc"}
    assert json.loads(zf.encode_topic({0: [1]}, version=1)) == {"version": 1, "partitions": {"0": [1]}}
    assert "topic_id" not in json.loads(zf.encode_topic({0: [1]}, version=2, topic_id="abc"))


# --- partition state -------------------------------------------------------------------------


def test_partition_state_and_no_leader():
    st = zf.decode_partition_state(js({"version": 1, "leader": -1, "leader_epoch": 4, "controller_epoch": 2,
                                       "isr": [3]}), "/s")
    assert (st.leader, st.leader_epoch, st.controller_epoch, st.isr) == (-1, 4, 2, (3,))
    assert st.leader_recovery_state is None


def test_partition_state_leader_recovery_state():
    data = zf.encode_partition_state(2, 1, 1, [2], leader_recovery_state=1)
    assert zf.decode_partition_state(data, "/s").leader_recovery_state == 1
    assert "leader_recovery_state" not in json.loads(zf.encode_partition_state(2, 1, 1, [2]))


def test_partition_state_absent_is_no_state_but_empty_or_garbage_is_corrupt():
    assert zf.decode_partition_state(None, "/s") is None
    with pytest.raises(CorruptZnodeError, match="empty payload"):  # issue 12: an empty node is damage, named
        zf.decode_partition_state(b"", "/s")
    with pytest.raises(CorruptZnodeError, match="isr must be a list"):
        zf.decode_partition_state(js({"leader": 1, "leader_epoch": 0, "controller_epoch": 1, "isr": "1"}), "/s")
    with pytest.raises(CorruptZnodeError, match="missing 'leader'"):
        zf.decode_partition_state(js({"leader_epoch": 0, "controller_epoch": 1, "isr": []}), "/s")


# --- controller, epoch, cluster id, configs, admin ---------------------------------------------


def test_controller_v1_and_v2():
    c = zf.decode_controller(zf.encode_controller(3, 1000), epoch=9)
    assert (c.broker_id, c.epoch, c.is_kraft) == (3, 9, False)
    c2 = zf.decode_controller(zf.encode_controller(3000, 1, kraft_controller_epoch=5))
    assert c2.kraft_controller_epoch == 5 and c2.is_kraft
    assert json.loads(zf.encode_controller(3, 1000)) == {"version": 1, "brokerid": 3, "timestamp": "1000"}
    with pytest.raises(CorruptZnodeError, match="unsupported version 3"):
        zf.decode_controller(js({"version": 3, "brokerid": 1}))


def test_controller_epoch_and_cluster_id():
    assert zf.decode_controller_epoch(b"17") == 17
    with pytest.raises(CorruptZnodeError, match="decimal epoch"):
        zf.decode_controller_epoch(b"seventeen")
    assert zf.decode_cluster_id(zf.encode_cluster_id("abc")) == "abc"
    assert json.loads(zf.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}


def test_configs():
    data = zf.encode_config({"retention.ms": "1000", "cleanup.policy": "compact"})
    assert json.loads(data) == {"version": 1, "config": {"cleanup.policy": "compact", "retention.ms": "1000"}}
    assert zf.decode_config(data, "/config/topics/t") == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert zf.decode_config(b"", "/config/topics/t") == {}
    with pytest.raises(CorruptZnodeError, match="must be a string"):
        zf.decode_config(js({"version": 1, "config": {"retention.ms": 1000}}), "/config/topics/t")
    assert json.loads(zf.encode_config_change("topics/t")) == {"version": 2, "entity_path": "topics/t"}
    assert zf.decode_config_change(js({"version": 1, "entity_type": "topics", "entity_name": "t"}), "/c") == "topics/t"


def test_admin_nodes_round_trip():
    entries = [TopicPartitionReplicas("b", 1, (3, 4)), TopicPartitionReplicas("a", 0, (1, 2))]
    data = zf.encode_reassignment(entries)
    assert json.loads(data)["partitions"][0] == {"topic": "a", "partition": 0, "replicas": [1, 2]}
    assert zf.decode_reassignment(data) == tuple(sorted(entries, key=lambda e: (e.topic, e.partition)))
    pe = zf.encode_preferred_election([("t", 1), ("t", 0)])
    assert json.loads(pe) == {"version": 1, "partitions": [{"topic": "t", "partition": 0},
                                                           {"topic": "t", "partition": 1}]}
    assert zf.decode_preferred_election(pe) == (("t", 0), ("t", 1))
    with pytest.raises(CorruptZnodeError, match="'partitions' must be a list"):
        zf.decode_reassignment(js({"version": 1, "partitions": {}}))
    with pytest.raises(CorruptZnodeError, match="unsupported version 2"):
        zf.decode_preferred_election(js({"version": 2, "partitions": []}))
