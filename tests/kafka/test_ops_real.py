"""Issue 18 on the real cluster: a rolling restart in Keel's order never makes a partition unavailable; state-change
logs of real brokers merged after a kill and an election; a replica moved between the two log dirs of its broker;
consumer-group lag with real producers and consumers, next to Kafka's own tools."""

from __future__ import annotations

import json
import re
import shlex
import threading
import time
import uuid

from core import zkformat as zf
from core.zk.session import ZkSession
from tests.kafka.realkafka import RealKafka, create_topic, eventually, keel_zk, produce, reassign_command, tool_class


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _keel_json(kafka: RealKafka, *argv: str) -> tuple[int, object, str]:
    code, out, err = kafka.keel(*argv)
    return code, (json.loads(out) if out.strip() else None), err


# --- rolling restart ----------------------------------------------------------------------------------------


class AvailabilityWatch:
    """Polls ZooKeeper (partition states, registered brokers) and the brokers' metadata (Admin API) every ~100 ms
    and records every moment a watched partition has no live leader."""

    def __init__(self, kafka: RealKafka, topics: set[str]):
        self.kafka, self.topics = kafka, topics
        self.violations: list[str] = []
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "AvailabilityWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        from kafka.admin import KafkaAdminClient

        zk = ZkSession.open(self.kafka.zk_connect)
        admin = KafkaAdminClient(bootstrap_servers=self.kafka.bootstrap, client_id="keel-availability",
                                 request_timeout_ms=5000)
        try:
            while not self._stop.is_set():
                self.polls += 1
                registered = {int(b) for b in zk.children(zf.BROKER_IDS) or ()}
                for t in sorted(self.topics):
                    for p in sorted(int(x) for x in zk.children(zf.partitions_path(t)) or ()):
                        node = zk.get(zf.state_path(t, p))
                        if node.exists:
                            state = zf.decode_partition_state(node.data, zf.state_path(t, p))
                            if state.leader < 0 or state.leader not in registered:
                                self.violations.append(f"ZooKeeper: {t}-{p} leader {state.leader} "
                                                       f"(registered {sorted(registered)})")
                try:
                    described = admin.describe_topics(sorted(self.topics))
                except Exception:  # a broker going away mid-request: not an availability fact
                    described = []
                for t in described:
                    for p in t.get("partitions") or ():
                        if p["leader_id"] < 0:
                            self.violations.append(f"metadata: {t['name']}-{p['partition_index']} has no leader")
                time.sleep(0.1)
        finally:
            admin.close()
            zk.close()


def test_rolling_restart_in_the_advised_order_keeps_every_partition_available(healthy: RealKafka):
    kafka = healthy
    topic = _topic("rr")
    create_topic(kafka, topic, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3], 5: [3, 2, 1]},
                 **{"min.insync.replicas": "2"})
    produce(kafka, topic, {p: 200_000 for p in range(6)})
    scope = ["--topic", f"{topic}|__consumer_offsets"]  # other tests of this cluster leave RF-1 topics behind

    code, plan, err = _keel_json(kafka, "restart-plan", "--zk", kafka.zk_connect, *scope, "--json")
    assert code == 0, err
    assert plan["keeps_available"] and sorted(plan["order"]) == kafka.cluster.broker_ids
    controller = kafka.cluster.controller()
    assert plan["order"][-1] == controller  # the controller last

    waited = {}
    with AvailabilityWatch(kafka, {topic, "__consumer_offsets"}) as watch:
        for i, broker in enumerate(plan["order"]):
            started = time.monotonic()
            code, check, err = _keel_json(kafka, "restart-check", "--zk", kafka.zk_connect, "--broker", str(broker),
                                          *scope, "--wait", "120", "--json")
            waited[broker] = time.monotonic() - started
            assert code == 0 and check["safe"], (broker, check, err)
            assert kafka.cluster.stop_broker(broker, timeout=60)  # SIGTERM: controlled shutdown
            # while it is down, another broker is NOT safe to stop: ISR 2 of 3 with min.insync.replicas 2
            other = next(b for b in kafka.cluster.broker_ids if b != broker)
            code, down, _ = _keel_json(kafka, "restart-check", "--zk", kafka.zk_connect, "--broker", str(other),
                                       *scope, "--json")
            assert code == 3 and not down["safe"], down
            assert down["under_min_isr"] or down["under_replicated"], down
            code, _, _ = _keel_json(kafka, "restart-check", "--zk", kafka.zk_connect, "--broker", str(broker),
                                    *scope, "--json")
            assert code == 3  # the stopped broker itself: not running
            kafka.cluster.start_broker(broker)
        # and after the last one, the wait check passes again once it has caught up
        code, _, err = _keel_json(kafka, "restart-check", "--zk", kafka.zk_connect, "--broker",
                                  str(plan["order"][0]), *scope, "--wait", "120", "--json")
        assert code == 0, err
    assert watch.polls > 20
    assert watch.violations == [], watch.violations[:10]
    print(f"\nrolling restart: order {plan['order']}, restart-check waited {waited}, {watch.polls} availability polls")


# --- state-change logs ------------------------------------------------------------------------------------


def test_state_change_logs_after_a_kill_and_an_election(healthy: RealKafka, tmp_path):
    kafka = healthy
    topic = _topic("sc")
    create_topic(kafka, topic, {0: [2, 3, 1], 1: [3, 1, 2]})
    produce(kafka, topic, {0: 100_000, 1: 100_000})
    killed_at = time.time()
    kafka.cluster.kill_broker(2)  # leader of partition 0
    eventually(lambda: _leader(kafka, topic, 0) not in (-1, 2), timeout=30)
    kafka.cluster.start_broker(2)
    kafka.ensure_healthy()
    code, _, err = keel_zk(kafka, "elect", "--topic", topic)  # partition 0 back to its preferred leader 2
    assert code == 0, err
    eventually(lambda: _leader(kafka, topic, 0) == 2, timeout=30)
    time.sleep(1)  # log4j flushes each line; give the brokers' appenders a moment

    files = [str(kafka.cluster.logs_dir(b) / "state-change.log") for b in kafka.cluster.broker_ids]
    code, out, err = kafka.keel("state-changes", *files, "--topic", topic, "--partition", "0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    entries = doc["entries"]
    stamps = [e["time"] for e in entries]
    assert stamps == sorted(stamps)  # one timeline, ordered by time
    assert {e["broker"] for e in entries} == set(kafka.cluster.broker_ids)  # every broker logged about it
    for e in entries:  # each line's broker: its own [Broker id=N] / [Controller id=N ...], which is its file's
        m = re.search(r"\[(?:Broker|Controller) id=(\d+)", e["text"])
        assert m and int(m.group(1)) == e["broker"] and e["source"].endswith(f"broker-{e['broker']}/logs/"
                                                                              "state-change.log")
        assert f"{topic}-0" in e["text"]
    after = [e for e in entries if _epoch_seconds(e["time"]) >= killed_at - 1]
    # after the kill: a new leader other than 2 took over, then the election made 2 the leader again
    leaders = [e["leader"] for e in after if e["kind"] in ("became leader", "state change", "ISR change",
                                                            "ISR shrink", "no leader") and e["leader"] is not None]
    assert any(x not in (2, -1) for x in leaders), after
    assert leaders[-1] == 2, leaders
    assert any(e["kind"] == "became leader" and e["broker"] == 2 for e in after)
    # the time range (inclusive): only the lines from the first one after the kill on
    start = after[0]["time"]
    code, out, err = kafka.keel("state-changes", *files, "--topic", topic, "--partition", "0", "--start", start,
                                "--json")
    assert code == 0, err
    assert [e["time"] for e in json.loads(out)["entries"]] == [t for t in stamps if t >= start]
    assert 0 < len(after) <= len(entries)  # all of them when the topic was created within a second of the kill
    # a state-change log that is not one
    code, _, err = kafka.keel("state-changes", str(kafka.cluster.server_log(1)))
    assert code == 1 and "is not a Kafka state-change log" in err and "server.log" in err


def _leader(kafka: RealKafka, topic: str, partition: int) -> int:
    node = kafka.zk.get(zf.state_path(topic, partition))
    return zf.decode_partition_state(node.data, "s").leader if node.exists else -1


def _epoch_seconds(stamp: str) -> float:
    return time.mktime(time.strptime(stamp.split(",")[0], "%Y-%m-%d %H:%M:%S"))


# --- JBOD: a replica moved between the log dirs of its broker ----------------------------------------------


def test_replica_moves_between_the_two_log_dirs_of_its_broker(healthy: RealKafka, tmp_path):
    kafka = healthy
    topic = _topic("jbod")
    create_topic(kafka, topic, {0: [1, 2], 1: [2, 3]})
    produce(kafka, topic, {0: 400_000, 1: 400_000})

    code, before, err = _keel_json(kafka, "log-dirs", "--bootstrap-server", kafka.bootstrap, "--json")
    assert code == 0, err
    dirs1 = {d["path"] for b in before["brokers"] if b["broker"] == 1 for d in b["dirs"]}
    assert dirs1 == {str(d) for d in kafka.cluster.log_dirs(1)}  # both log.dirs of broker 1

    from core.kafka.admin import KafkaAdmin
    from core.kafka.jbod import describe

    with KafkaAdmin(kafka.bootstrap) as admin:
        source = describe(admin).location()[(topic, 0, 1)]
    target = next(d for d in sorted(dirs1) if d != source)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}]}))

    # refused before anything is asked: a directory the broker does not have, replicas that are not the current
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": ["/nowhere", "any"]}]}))
    code, _, err = keel_zk(kafka, "log-dirs-execute", "--bootstrap-server", kafka.bootstrap,
                           "--reassignment-json-file", str(bad))
    assert code == 1 and "/nowhere is not a log directory of broker 1" in err
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 1], "log_dirs": ["any", target]}]}))
    code, _, err = keel_zk(kafka, "log-dirs-execute", "--bootstrap-server", kafka.bootstrap,
                           "--reassignment-json-file", str(bad))
    assert code == 1 and "not the current ones [1, 2]" in err

    code, out, err = keel_zk(kafka, "log-dirs-execute", "--bootstrap-server", kafka.bootstrap,
                             "--reassignment-json-file", str(plan), "--timeout", "60")
    assert code == 0, out + err
    assert "all 1 replica(s) are in their target directories" in out

    # describeLogDirs (kafka-python's own call) shows the replica in the target dir, and no future replica
    answer = kafka.admin.describe_log_dirs(brokers=[1])
    found = {(d["log_dir"], p["is_future_key"]) for e in answer for d in e["log_dirs"] for t in d.get("topics") or ()
             if t["name"] == topic for p in t["partitions"] if p["partition_index"] == 0}
    assert found == {(target, False)}
    assert (kafka.cluster.broker_dir(1) / target.rsplit("/", 1)[1] / f"{topic}-0").is_dir()
    # Kafka's own tool agrees the plan is done (before 2.5 it also needs --zookeeper: realkafka.reassign_command)
    out = reassign_command(kafka, "--verify", "--reassignment-json-file", str(plan))
    assert f"Reassignment of replica {topic}-0-1 completed successfully" in out, out
    # the action history has it
    from core.audit.store import Store
    assert any(a.kind == "log-dir-move" and a.status == "applied" for a in Store(kafka.store).actions())
    # and a plan Keel makes for the cluster is a reassignment JSON with log_dirs for current replicas only
    out_plan = tmp_path / "balance.json"
    code, _, err = kafka.keel("log-dirs-plan", "--bootstrap-server", kafka.bootstrap, "--zk", kafka.zk_connect, "-o",
                              str(out_plan))
    assert code == 0, err
    snap = kafka.snapshot()
    for e in json.loads(out_plan.read_text())["partitions"]:
        assert tuple(e["replicas"]) == snap.topic(e["topic"]).partitions[e["partition"]].replicas


# --- consumer groups ----------------------------------------------------------------------------------------


def test_consumer_group_lag_with_real_producers_and_consumers(healthy: RealKafka):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    kafka = healthy
    topic, group = _topic("lag"), _topic("group")
    create_topic(kafka, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
    for p, n in ((0, 30), (1, 20), (2, 10)):
        for i in range(n):
            producer.send(topic, f"m{i}".encode(), partition=p)
    producer.flush(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka.bootstrap, group_id=group, client_id="keel-lag-test",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(500)
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1),
                         TopicPartition(topic, 1): OffsetAndMetadata(20, "", -1)})  # partition 2: nothing committed

        def described():
            code, doc, err = _keel_json(kafka, "consumer-groups", "--bootstrap-server", kafka.bootstrap,
                                        "--group", group, "--json")
            assert code == 0, err
            g = doc["groups"][0]
            assert g["state"] == "Stable" and len(g["members"]) == 1
            return g
        g = eventually(described, timeout=20)
        rows = {r["partition"]: (r["committed"], r["log_end"], r["lag"], r["client_id"]) for r in g["partitions"]}
        assert rows == {0: (5, 30, 25, "keel-lag-test"), 1: (20, 20, 0, "keel-lag-test"),
                        2: (None, 10, None, "keel-lag-test")}
        assert g["total_lag"] == 25 and g["lag_by_topic"] == {topic: 25}

        # Kafka's kafka-consumer-groups --describe says the same
        main = tool_class(kafka.cluster.version, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                          "kafka.admin.ConsumerGroupCommand")
        proc = kafka.cluster.tool(main, "--bootstrap-server", kafka.bootstrap, "--describe", "--group", group)
        assert proc.returncode == 0, proc.stderr
        theirs = {}
        lines = [line.split() for line in proc.stdout.splitlines()]
        # the columns by their header: Kafka before 2.3 prints no GROUP column (TOPIC PARTITION CURRENT-OFFSET ...)
        at = {name: i for i, name in enumerate(next(cols for cols in lines if "CURRENT-OFFSET" in cols))}
        for cols in lines:
            if len(cols) <= at["LAG"] or cols[at["TOPIC"]] != topic or ("GROUP" in at and cols[at["GROUP"]] != group):
                continue
            current, lag = cols[at["CURRENT-OFFSET"]], cols[at["LAG"]]
            theirs[int(cols[at["PARTITION"]])] = (None if current == "-" else int(current),
                                                  int(cols[at["LOG-END-OFFSET"]]), None if lag == "-" else int(lag))
        assert theirs == {p: v[:3] for p, v in rows.items()}

        code, out, err = kafka.keel("consumer-groups", "--bootstrap-server", kafka.bootstrap, "--totals")
        assert code == 0 and re.search(rf"{group}\s+Stable\s+{topic}\s+3\s+25", out), out + err
        code, _, err = kafka.keel("consumer-groups", "--bootstrap-server", kafka.bootstrap, "--group", "no-such-group")
        assert code == 1 and "Consumer group 'no-such-group' does not exist." in err
    finally:
        consumer.close()


# --- the pages, with the cluster's bootstrap servers --------------------------------------------------------


def test_log_dirs_and_consumer_groups_pages_read_the_real_brokers(healthy: RealKafka, tmp_path, monkeypatch):
    import streamlit as st
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from tests.dashboard.test_dashboard_apptest import app, table_with, texts, write_config
    from tests.dashboard.test_dashboard_markdown import autolinks, markdown_strings

    kafka = healthy
    topic, group = _topic("page"), f"ops@{_topic('page-group')}.example"  # a group id is any string: an address here
    create_topic(kafka, topic, {0: [1, 2], 1: [2, 3]})
    produce(kafka, topic, {0: 300_000, 1: 100_000})
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
    consumer.close()
    write_config(tmp_path, monkeypatch, {"real": {"zk": kafka.zk_connect, "bootstrap": kafka.bootstrap}})
    st.cache_resource.clear()
    try:
        at = app().run()
        at.switch_page("views/log_dirs.py").run()
        assert not at.exception, at.exception
        dirs = table_with(at, "Log dir", "dataframe")
        assert set(dirs["Log dir"]) == {str(d) for b in kafka.cluster.broker_ids for d in kafka.cluster.log_dirs(b)}
        assert len(at.get("plotly_chart")) >= 1  # the broker x directory heatmap
        assert "From the brokers at" in texts(at.caption)
        at.switch_page("views/consumer_groups.py").run()
        assert not at.exception, at.exception
        at.selectbox(key="cg_group").select(group).run()
        rows = next(d.value for d in at.dataframe if {"Partition", "Lag", "Log end"} <= set(d.value.columns))
        lagging = rows[(rows["Topic"] == topic) & (rows["Partition"] == 0)].iloc[0]
        assert lagging["Committed"] == 1 and lagging["Log end"] > 1 and lagging["Lag"] == lagging["Log end"] - 1
        # issue 23 item 4: the id is text, never a mailto link; the command to copy names it exactly
        [command] = [c.value for c in at.code if "consumer-groups" in c.value]
        assert shlex.split(command)[-2:] == ["--group", group]
        assert not [s for s in markdown_strings(at) if autolinks(s)]
    finally:
        st.cache_resource.clear()
