"""Keel's read commands on KRaft clusters (Kafka 3.9.1 and 4.x, no ZooKeeper): `--bootstrap-server` without `--zk`
reads the cluster through the Admin API, and what Keel prints is what Kafka's own tools print."""

from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stderr, redirect_stdout

from core.cli import main
from core.kafka.admin import KafkaAdmin
from core.model import ClusterSnapshot
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import by_topic, eventually, tool_class, without_configs


def keel(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def kafka_topics(cluster: KraftCluster, *args: str) -> str:
    main_class = tool_class(cluster.version, "org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand")
    proc = cluster.tool(main_class, "--bootstrap-server", cluster.bootstrap_servers, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _topics(cluster: KraftCluster) -> str:
    from kafka.admin import NewTopic

    suffix = uuid.uuid4().hex[:6]
    with KafkaAdmin(cluster.bootstrap_servers, timeout=20) as admin:
        admin._admin.create_topics([
            NewTopic(f"kc-a-{suffix}", replica_assignments={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                     topic_configs={"min.insync.replicas": "2"}),
            NewTopic(f"kc-b-{suffix}", replica_assignments={0: [2, 1], 1: [3, 2]})])

    def in_sync():
        code, out, _ = keel("describe", "--bootstrap-server", cluster.bootstrap_servers,
                            "--under-replicated-partitions", "--topic", f"kc-.-{suffix}")
        assert code == 0 and out == ""
        code, out, _ = keel("describe", "--bootstrap-server", cluster.bootstrap_servers, "--topic", f"kc-.-{suffix}")
        assert out.count("\tPartition: ") == 5
    eventually(in_sync, timeout=30, interval=0.5)
    return suffix


def test_describe_through_the_brokers_prints_what_kafka_topics_prints(kraft: KraftCluster):
    suffix = _topics(kraft)
    pattern = f"kc-.-{suffix}"
    code, out, err = keel("describe", "--bootstrap-server", kraft.bootstrap_servers, "--topic", pattern)
    assert code == 0, err
    # the ELR columns included (KIP-966): a KRaft cluster answers them through DescribeTopicPartitions
    ours = [line for line in out.splitlines() if line.strip()]
    # kafka-topics asks one broker, which may not have applied the new topics yet ("does not exist as expected")
    described = eventually(lambda: kafka_topics(kraft, "--describe", "--topic", pattern), timeout=30, interval=1)
    theirs = by_topic([line for line in described.splitlines() if line.strip()])
    assert without_configs(ours) == without_configs(theirs)
    assert all("\tElr: " in line and "\tLastKnownElr: " in line for line in ours if line.startswith("\t"))
    assert f"Topic: kc-a-{suffix}\t" in out and "Configs: min.insync.replicas=2" in out


def test_snapshot_plan_and_restart_check_through_the_brokers(kraft: KraftCluster, tmp_path):
    suffix = _topics(kraft)
    code, _, err = keel("snapshot", "--bootstrap-server", kraft.bootstrap_servers, "-o", str(tmp_path / "s.json"))
    assert code == 0, err
    snap = ClusterSnapshot.from_json((tmp_path / "s.json").read_text())
    assert snap.mode == "kraft" and [v.id for v in snap.quorum.voters] == [1, 2, 3]
    assert snap.topic(f"kc-a-{suffix}").config == {"min.insync.replicas": "2"}
    assert snap.cluster == ",".join(sorted(kraft.bootstrap_servers.split(",")))  # named by its servers

    # a plan from the live cluster: moving kc-b off broker 3 (Kafka's reassignment JSON, read back)
    topics = tmp_path / "move.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": f"kc-b-{suffix}"}]}))
    code, out, err = keel("plan", "--bootstrap-server", kraft.bootstrap_servers, "--topics-to-move-json-file",
                          str(topics), "--broker-list", "1,2", "-o", "-")
    assert code == 0, err
    plan = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert plan["partitions"] and all(set(p["replicas"]) <= {1, 2} for p in plan["partitions"])

    code, out, err = keel("restart-check", "--bootstrap-server", kraft.bootstrap_servers, "--broker", "1",
                          "--topic", pattern_of(suffix), "--json")
    assert code == 0, err
    assert json.loads(out)["safe"] is True

    code, out, err = keel("migration", "--bootstrap-server", kraft.bootstrap_servers, "--json")
    assert code == 0, err
    assert json.loads(out)["mode"] == "kraft" and json.loads(out)["controller"] == kraft.controller()


def pattern_of(suffix: str) -> str:
    return f"kc-.-{suffix}"


def test_without_zk_or_brokers_the_read_commands_say_what_to_give():
    for argv in (["describe"], ["snapshot", "-o", "-"], ["restart-check", "--broker", "1"]):
        code, out, err = keel(*argv)
        assert code == 2 and out == ""  # a usage error, as argparse's
        assert "--zk CONNECT" in err and "--bootstrap-server HOST:PORT" in err, (argv, err)


def test_writes_through_the_brokers_pass_the_same_gate(kraft: KraftCluster, tmp_path, monkeypatch):
    """--bootstrap-server without --zk writes: keel.toml's read_only and roles bind it on the cluster the brokers are
    (however the list is spelled), refusals are recorded, an admitted write names actor, role and the cluster's id."""
    from core.audit.store import Store

    monkeypatch.setenv("KEEL_ACTOR", "sam")
    store = tmp_path / "keel.sqlite"
    config = tmp_path / "keel.toml"
    monkeypatch.setenv("KEEL_CONFIG", str(config))
    # the brokers spelled in another order than keel.toml lists them: still cluster k
    spelled = ",".join(reversed(kraft.bootstrap_servers.split(",")))
    topic = f"gate-{uuid.uuid4().hex[:6]}"
    argv = ("create-topic", "--bootstrap-server", spelled, "--topic", topic, "--partitions", "2",
            "--replication-factor", "2", "--store", str(store))

    def configured(access: str, read_only: bool = False) -> None:
        config.write_text(f'[keel]\nrole = "viewer"\nread_only = {str(read_only).lower()}\n[auth]\nmode = "oidc"\n'
                          f'{access}\n[clusters.k]\nbootstrap = "{kraft.bootstrap_servers}"\n')

    configured('[access]\noperator = ["cli:ops"]')  # sam is no operator
    code, out, err = keel(*argv)
    assert code == 1 and "the role of sam on cluster k is 'viewer'" in err, err
    configured('[access]\noperator = ["cli"]', read_only=True)
    code, out, err = keel(*argv)
    assert code == 1 and "read-only" in err, err
    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
        assert topic not in admin.topic_names()  # nothing was written

    configured('[access]\noperator = ["cli"]')
    code, out, err = keel(*argv)
    assert code == 0, err
    created, *refused = Store(store).actions()
    assert [(a.kind, a.status) for a in refused] == [("refused", "failed")] * 2
    assert (created.kind, created.status, created.actor, created.source, created.role, created.cluster) == \
        ("create-topic", "applied", "sam", "cli", "operator", "k")
    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
        assert created.cluster_id == admin.describe_cluster()["cluster_id"]

        def present():
            assert topic in admin.topic_names()
        eventually(present, timeout=20)


def test_a_replica_moves_between_log_dirs_through_the_brokers_alone(kraft: KraftCluster, tmp_path, monkeypatch):
    """log-dirs-execute without --zk: the gate reads the KRaft cluster through its brokers, the move is made with
    AlterReplicaLogDirs and recorded."""
    from kafka.admin import NewTopic

    from core.audit.store import Store
    from core.kafka.jbod import describe

    monkeypatch.delenv("KEEL_CONFIG", raising=False)
    topic = f"kjbod-{uuid.uuid4().hex[:6]}"
    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
        admin._admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2]})])

        def placed() -> str:
            where = describe(admin).location()
            assert (topic, 0, 1) in where
            return where[(topic, 0, 1)]
        source = eventually(placed, timeout=30, interval=0.5)
        dirs = {d.path for d in admin.log_dirs([1]).dirs}
    assert len(dirs) == 2, dirs  # the fixture's two log dirs per node
    target = next(d for d in sorted(dirs) if d != source)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}]}))
    store = tmp_path / "keel.sqlite"
    code, out, err = keel("log-dirs-execute", "--bootstrap-server", kraft.bootstrap_servers, "--reassignment-json-file",
                          str(plan), "--timeout", "60", "--store", str(store))
    assert code == 0, out + err
    assert "all 1 replica(s) are in their target directories" in out
    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
        assert describe(admin).location()[(topic, 0, 1)] == target
    [moved] = Store(store).actions()
    assert (moved.kind, moved.status) == ("log-dir-move", "applied")
