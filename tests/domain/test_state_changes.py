"""State-change logs merged into one timeline (core.state_changes), as Kafka's StateChangeLogMerger does.
Real files from the real cluster's brokers are in tests/kafka/test_ops_real.py."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from core.cli import main
from core.errors import ValidationError
from core.state_changes import NotAStateChangeLogError, merge, parse_log

B1 = """\
[2026-11-23 16:20:12,325] INFO [Broker id=1] Leader ev-0 with topic id Some(x) starts at leader epoch 0 from offset 0 with partition epoch 0, high watermark 0, ISR [1,2,3], adding replicas [] and removing replicas [] . Previous leader None and previous leader epoch was -1. (state.change.logger)
[2026-11-23 16:20:22,484] INFO [Controller id=1 epoch=2] Partition ev-1 state changed to (Leader:-1,ISR:3,1,LeaderRecoveryState:RECOVERED,LeaderEpoch:1,ZkVersion:1,ControllerEpoch:2) after removing replica 2 from the ISR as part of transition to OfflineReplica (state.change.logger)
[2026-11-23 16:20:22,493] ERROR [Broker id=1] Received LeaderAndIsrRequest with correlation id 3 from controller 1 epoch 2 for partition ev-1 (last update controller epoch 2) but cannot become follower since the new leader -1 is unavailable. (state.change.logger)
java.lang.IllegalStateException: example
\tat kafka.Foo.bar(Foo.scala:1)
[2026-11-23 16:20:22,513] INFO [Controller id=1 epoch=2] Changed partition ev-1 from OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=3, leaderEpoch=2, isrWithBrokerEpoch=List(BrokerState(brokerId=3, brokerEpoch=-1), BrokerState(brokerId=1, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=2) (state.change.logger)
[2026-11-23 16:20:22,520] INFO [Broker id=1] Add 3 partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request sent by controller 1 epoch 2 with correlation id 2 (state.change.logger)
"""
B3 = """\
[2026-11-23 16:20:12,503] INFO [Broker id=3] Follower ev-0 starts at leader epoch 0 from offset 0 with partition epoch 0 and high watermark 0. Current leader is 1. Previous leader Some(1) and previous leader epoch was 0. (state.change.logger)
[2026-11-23 16:20:22,484] INFO [Broker id=3] Follower other-topic-10 starts at leader epoch 3 from offset 0 with partition epoch 0 and high watermark 0. Current leader is 2. Previous leader None and previous leader epoch was 0. (state.change.logger)
[2026-11-23 16:20:22,514] INFO [Broker id=3] Leader ev-1 with topic id Some(x) starts at leader epoch 2 from offset 33 with partition epoch 2, high watermark 33, ISR [3,1], adding replicas [] and removing replicas [] . Previous leader Some(2) and previous leader epoch was 1. (state.change.logger)
"""
# Kafka 0.10 - 1.0: "[topic,partition]", which is what StateChangeLogMerger's regex matches
OLD = """\
[2017-03-01 10:00:00,000] TRACE Controller 2 epoch 5 changed partition [ev,0] state from OnlinePartition to OfflinePartition (state.change.logger)
[2017-03-01 10:00:01,500] TRACE Broker 2 cached leader info (LeaderAndIsrInfo:(Leader:3,ISR:3,LeaderEpoch:7,ControllerEpoch:5),ReplicationFactor:3),AllReplicas:2,3,1) for partition [ev, 0] in response to UpdateMetadata request sent by controller 2 epoch 5 with correlation id 9 (state.change.logger)
"""


def test_merge_orders_by_time_and_names_each_lines_broker():
    t = merge([("b1.log", B1), ("b3.log", B3)], topic="ev")
    assert [(e.stamp[-12:], e.broker) for e in t.entries] == [
        ("16:20:12,325", 1), ("16:20:12,503", 3), ("16:20:22,484", 1),
        ("16:20:22,493", 1), ("16:20:22,513", 1), ("16:20:22,514", 3)]
    assert t.brokers == (1, 3) and t.lines_read == 8
    error = t.entries[3]
    assert error.kind == "error" and error.leader == -1 and "IllegalStateException" in error.text  # continuation kept
    assert t.entries[2].kind == "no leader" and t.entries[2].isr == (3, 1) and t.entries[2].leader_epoch == 1
    assert t.entries[4].leader == 3 and t.entries[4].isr == (3, 1)
    assert t.entries[5].kind == "became leader" and t.entries[5].leader == 3 and t.entries[5].leader_epoch == 2
    # the metadata line names no partition: Kafka's merger drops it; all_lines keeps it (without a topic filter)
    assert not any(e.kind == "metadata" for e in merge([("b1.log", B1)]).entries)
    assert any(e.kind == "metadata" for e in merge([("b1.log", B1)], all_lines=True).entries)


def test_filters_partition_and_time_range_inclusive():
    logs = [("b1.log", B1), ("b3.log", B3)]
    assert [e.partition for e in merge(logs, topic="ev", partitions=[0]).entries] == [0, 0]
    t = merge(logs, start="2026-11-23 16:20:22,484", end="2026-11-23 16:20:22,513")
    assert [(e.topic, e.partition) for e in t.entries] == [("ev", 1), ("other-topic", 10), ("ev", 1), ("ev", 1)]
    assert merge(logs, topic="other-topic").entries[0].partition == 10  # a dash in the name
    with pytest.raises(ValidationError, match="partitions need a topic"):
        merge(logs, partitions=[0])
    with pytest.raises(ValidationError, match="repeated entries: 1"):
        merge(logs, topic="ev", partitions=[1, 1])
    with pytest.raises(ValidationError, match="is not a time"):
        merge(logs, start="yesterday")
    with pytest.raises(ValidationError, match="before the start"):
        merge(logs, start="2026-01-02", end="2026-01-01")


def test_old_bracket_format_and_broker_from_the_label():
    t = merge([("old.log", OLD)], topic="ev", partitions=[0])
    assert [(e.broker, e.kind) for e in t.entries] == [(2, "no leader"), (2, "metadata")]
    # a line with no broker identifier takes the label's (broker-7/... or 7=)
    e = parse_log("[2026-01-01 00:00:00,000] INFO Partition [t,0] something (state.change.logger)",
                  "/logs/broker-7/state-change.log")[0]
    assert (e.broker, e.topic, e.partition) == (7, "t", 0)
    assert parse_log("[2026-01-01 00:00:00,000] INFO x [t,1] (state.change.logger)", "f", 4)[0].broker == 4


@pytest.mark.parametrize("text, needle", [
    ("", "is empty"),
    ("hello\nworld\n", "none of its 2 line(s) carries a log4j date"),
    ("\x00\x01binary", "it is binary"),
    ("[2026-01-01 00:00:00,000] INFO Created log for partition t-0 (kafka.log.LogManager)\n",
     "come from other loggers (kafka.log.LogManager)"),
    ('{"version":1,"brokers":[]}', "carries a log4j date"),
])
def test_a_state_change_log_that_is_not_one(text, needle):
    with pytest.raises(NotAStateChangeLogError) as e:
        merge([("x.log", text)])
    assert needle in str(e.value) and "x.log" in str(e.value)


def test_state_changes_command(tmp_path, capsys):
    (tmp_path / "broker-1").mkdir()
    f1, f3 = tmp_path / "broker-1" / "state-change.log", tmp_path / "three.log"
    f1.write_text(B1)
    f3.write_text(B3)
    assert main(["state-changes", str(f1), f"3={f3}", "--topic", "ev", "--partition", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[broker 1] [2026-11-23 16:20:22,484]") and out[-1].startswith("[broker 3]")
    assert main(["state-changes", str(f1), "--json", "--start", "2026-11-23 16:20:22,500"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["line"] for e in doc["entries"]] == [6]
    bad = tmp_path / "server.log"
    bad.write_text("[2026-01-01 00:00:00,000] INFO started (kafka.server.KafkaServer)\n")
    assert main(["state-changes", str(bad)]) == 1
    assert "is not a Kafka state-change log" in capsys.readouterr().err
    assert main(["state-changes", str(tmp_path / "missing.log")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_time_parsing():
    from core.state_changes import parse_time
    assert parse_time("2026-11-23 16:20:22,484") == datetime(2026, 11, 23, 16, 20, 22, 484000)
    assert parse_time("2026-11-23T16:20:22.5") == datetime(2026, 11, 23, 16, 20, 22, 500000)
    assert parse_time("2026-11-23") == datetime(2026, 11, 23)
