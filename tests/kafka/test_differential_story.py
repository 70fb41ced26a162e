"""One operator's story, told through `python -m core` to a ZooKeeper-mode cluster (--zk: Keel writes ZooKeeper) and
to KRaft clusters (--bootstrap-server alone: Keel writes through the brokers' Admin API), with the same commands and
the same plan: a topic created with an explicit placement, grown, reconfigured, a broker killed and restarted, a
preferred election, a throttled reassignment verified and rolled back, the topic deleted. What Keel shows at each
step must be the same for both kinds of cluster, and so must the History it records (kinds and outcomes; what was
written differs by nature: znode paths, or Admin API requests, README's KRaft section)."""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from core.audit.store import Store
from core.cli import main
from core.model import ClusterSnapshot
from tests.kafka.realkafka import RealKafka, eventually, produce, started_action

THROTTLE = 2_000_000  # B/s: throttled, yet a few MB move in a few seconds

@dataclass
class Side:
    """A cluster and how the command line reaches it."""

    name: str
    where: list[str]  # --zk CONNECT, or --bootstrap-server HOST:PORT
    bootstrap: str
    read: Callable[[], ClusterSnapshot]
    cluster: object  # sandbox.processes.kafka.KafkaCluster or .kraft.KraftCluster
    store: Path

    def keel(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, *self.where, "--store", str(self.store)])
        return code, out.getvalue(), err.getvalue()

    def ok(self, *argv: str) -> str:
        code, out, err = self.keel(*argv)
        assert code == 0, f"{self.name}: keel {' '.join(argv)} failed ({code}): {err}"
        return out


def _zk_side(kafka: RealKafka, tmp_path: Path) -> Side:
    from core.zk.reader import read_snapshot

    return Side("zookeeper", ["--zk", kafka.zk_connect], kafka.bootstrap, lambda: read_snapshot(kafka.zk),
                kafka.cluster, tmp_path / "zk.sqlite")


def _kraft_side(kraft, tmp_path: Path) -> Side:
    from core.kafka.admin import KafkaAdmin, KafkaUnreachableError
    from core.kafka.metadata import read_snapshot

    def read() -> ClusterSnapshot:
        with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as admin:
            try:
                return read_snapshot(admin)
            except KafkaUnreachableError as e:  # a read that met the node just killed: the next one asks another
                raise AssertionError(str(e)) from None
    return Side(f"kraft {kraft.version}", ["--bootstrap-server", kraft.bootstrap_servers], kraft.bootstrap_servers,
                read, kraft, tmp_path / "kraft.sqlite")


def _topic_view(snap: ClusterSnapshot, topic: str) -> dict:
    t = snap.topic(topic)
    if t is None:
        return {"exists": False}
    return {"exists": True, "config": dict(t.config),
            "partitions": {p.partition: {"replicas": list(p.replicas), "leader": p.leader, "isr": sorted(p.isr)}
                           for p in t.partitions}}


def _settled(side: Side, topic: str, check: Callable[[dict], bool], timeout: float = 60.0) -> dict:
    """Keel's view of `topic` once `check` holds on it (both modes apply a write asynchronously)."""
    def once() -> dict:
        view = _topic_view(side.read(), topic)
        assert check(view), f"{side.name}: {view}"
        return view
    return eventually(once, timeout=timeout, interval=0.5)


def _full_isr(view: dict) -> bool:
    return view["exists"] and all(sorted(p["replicas"]) == p["isr"] for p in view["partitions"].values())


def _story(side: Side, tmp_path: Path) -> dict:
    """The story on one cluster; what Keel showed after each step, and the History it recorded."""
    topic = f"story-{uuid.uuid4().hex[:6]}"
    shown: dict[str, object] = {}

    side.ok("create-topic", "--topic", topic, "--replica-assignment", "1:2,2:3,3:1", "--config", "retention.ms=3600000")
    shown["created"] = _settled(side, topic, _full_isr)

    def add_partitions() -> None:  # as kafka-topics takes it: every partition, the existing ones first
        code, out, err = side.keel("add-partitions", "--topic", topic, "--partitions", "4", "--replica-assignment",
                                   "1:2,2:3,3:1,1:3")
        # KRaft: the broker answering Keel may not have applied the new topic's record yet (each broker applies the
        # metadata log on its own; kafka-topics --alter meets the same): that refusal is asked again, nothing else
        assert code == 0 or "does not exist as expected" not in err, f"{side.name}: {err}"
        if code != 0:
            raise RuntimeError(f"{side.name}: add-partitions failed ({code}): {out}{err}")
    eventually(add_partitions, timeout=30, interval=1.0)
    shown["grown"] = _settled(side, topic, lambda v: _full_isr(v) and len(v["partitions"]) == 4)

    side.ok("alter-config", "--topic", topic, "--add-config", "cleanup.policy=compact", "--delete-config",
            "retention.ms")
    shown["reconfigured"] = _settled(side, topic, lambda v: v["config"] == {"cleanup.policy": "compact"})

    # broker 1 killed: its partitions lose it from the ISR and their leadership moves; restarted: back in the ISR,
    # but leading nothing until an election
    assert side.cluster.kill_broker(1), f"{side.name}: broker 1 was not running"
    # 120 s: a KRaft controller fences a broker after its session times out (9 s); with the machine at a load of 15
    # (CI beside other work), the leadership had still not moved after 60 s once. A new leader from the ISR, not just
    # "not 1": when broker 1 was ZooKeeper mode's controller, the next controller takes 1 out of the ISR (leader -1)
    # some 100 ms before it elects the new leader, and a read in between once saw that (CI, Kafka 3.9.1)
    shown["broker 1 down"] = _settled(side, topic, lambda v: all(
        1 not in p["isr"] and p["leader"] in p["isr"] for p in v["partitions"].values()), timeout=120)
    side.cluster.start_broker(1)
    shown["broker 1 back"] = _settled(side, topic, _full_isr)
    def elect() -> None:
        code, out, err = side.keel("elect", "--topic", topic, "--timeout", "60")
        # a broker just back may be in the ISR one broker reports before the broker answering Keel lists it as live
        # (KRaft: each broker applies the metadata log on its own): that refusal is asked again, nothing else
        assert code == 0 or "is down" not in err, f"{side.name}: elect refused ({code}): {out}{err}"
        if code != 0:
            raise RuntimeError(f"{side.name}: elect failed ({code}): {out}{err}")
        # the same lag, met by the read Keel plans from: a partition whose preferred leader that broker does not
        # show in the ISR yet is left out ("not eligible", as Kafka's controller would) and the rest elected (CI)
        assert "not eligible:" not in out, f"{side.name}: {out}"
    eventually(elect, timeout=30, interval=1.0)
    shown["elected"] = _settled(side, topic, lambda v: _full_isr(v) and all(
        p["leader"] == p["replicas"][0] for p in v["partitions"].values()))

    # a throttled reassignment of real data: partition 0 from 1,2 to 2,3; verified, then rolled back
    produce(_Producer(side.bootstrap), topic, {0: 3_000_000})
    plan = tmp_path / f"{side.name.replace(' ', '-')}-plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3]}]}))
    action = started_action(side.ok("execute", "--reassignment-json-file", str(plan), "--throttle", str(THROTTLE)))
    shown["reassigned"] = _settled(side, topic, lambda v: _full_isr(v) and v["partitions"][0]["replicas"] == [2, 3])
    eventually(lambda: _verified(side, plan), timeout=90, interval=1)
    started_action(side.ok("rollback", "--action", str(action)))
    rollback = tmp_path / f"{side.name.replace(' ', '-')}-rollback.json"
    rollback.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                                  "replicas": [1, 2]}]}))
    shown["rolled back"] = _settled(side, topic, lambda v: _full_isr(v) and v["partitions"][0]["replicas"] == [1, 2])
    eventually(lambda: _verified(side, rollback), timeout=90, interval=1)

    def unthrottled() -> dict:  # each broker applies a config change a moment after the controller accepted it
        seen = _throttles(side.read(), topic)
        assert seen == {"topic": {}, "brokers": {}}, f"{side.name}: {seen}"
        return seen
    shown["throttles after verify"] = eventually(unthrottled, timeout=15, interval=0.5)

    side.ok("delete-topic", "--topic", topic)
    shown["deleted"] = _settled(side, topic, lambda v: not v["exists"])

    history = [(a.kind, a.status) for a in reversed(Store(side.store).actions(limit=100))]
    return {"shown": _renamed(shown, topic), "history": history}


class _Producer:
    """What tests.kafka.realkafka.produce needs of a cluster: its bootstrap servers."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap


def _verified(side: Side, plan: Path) -> None:
    code, out, err = side.keel("verify", "--reassignment-json-file", str(plan))
    assert code == 0, f"{side.name}: verify ({code}): {out}{err}"


def _throttles(snap: ClusterSnapshot, topic: str) -> dict:
    keys = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
    rates = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
    t = snap.topic(topic)
    return {"topic": {k: v for k, v in (t.config if t else {}).items() if k in keys},
            "brokers": {e: {k: v for k, v in c.items() if k in rates} for e, c in snap.broker_configs.items()
                        if any(k in rates for k in c)}}


def _renamed(shown: dict, topic: str) -> dict:
    return json.loads(json.dumps(shown).replace(topic, "<topic>"))


@pytest.fixture(scope="module")
def zk_story(kafka: RealKafka, tmp_path_factory) -> dict:
    """The story on the ZooKeeper-mode cluster, told once for every KRaft version it is compared with."""
    kafka.ensure_healthy()
    tmp = tmp_path_factory.mktemp("zk-story")
    return _story(_zk_side(kafka, tmp), tmp)


def test_one_story_shows_the_same_on_zookeeper_and_kraft(zk_story: dict, kraft, tmp_path):
    zk = zk_story
    kr = _story(_kraft_side(kraft, tmp_path), tmp_path)
    assert kr["shown"] == zk["shown"]
    assert kr["history"] == zk["history"]
    assert [kind for kind, _ in zk["history"]] == [
        "create-topic", "add-partitions", "alter-config", "preferred-election", "reassignment", "remove-throttles",
        "rollback", "remove-throttles", "delete-topic"]
    assert all(status == "applied" for _, status in zk["history"]), zk["history"]
