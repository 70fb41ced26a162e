"""A cluster read through the brokers' Admin API into the same `ClusterSnapshot` the ZooKeeper reader builds.

Clusters without ZooKeeper (KRaft) can be read no other way; a ZooKeeper-mode cluster reads the same through either
(tests/kafka/test_admin_reader.py compares the two on real brokers). `read_snapshot` does the requests
(core.kafka.admin); `snapshot_of` turns their answers into the snapshot and does no I/O.

What the Admin API does not say, compared with ZooKeeper: the controller's epoch and the partition state's
version (ZooKeeper's znodes), a preferred election or a topic deletion in progress (/admin nodes, which KRaft does
not have), and a down broker's registration (only live brokers are described: a replica on a broker the cluster
does not list is shown on a down broker, never dropped).
"""

from __future__ import annotations

import base64
import time
import uuid
from typing import Mapping, Sequence

from core.kafka.admin import BrokerConfig, KafkaAdmin, Reassigning
from core.model import (NO_LEADER, Broker, ClusterSnapshot, Controller, InProgress, Partition, Problem, Quorum,
                        QuorumReplica, Topic, TopicPartitionReplicas, utc_now_iso)

_NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's Uuid.ZERO_UUID: a topic without an id
_DYNAMIC_BROKER = "DYNAMIC_BROKER_CONFIG"
_DYNAMIC_DEFAULT = "DYNAMIC_DEFAULT_BROKER_CONFIG"


def kafka_topic_id(value: object) -> str | None:
    """A topic id as Kafka prints it (url-safe base64 of the 16 bytes, no padding), from kafka-python's UUID
    string; None for no id."""
    if value is None:
        return None
    text = str(value)
    try:
        shown = base64.urlsafe_b64encode(uuid.UUID(text).bytes).rstrip(b"=").decode()
    except ValueError:
        shown = text  # already in Kafka's form
    return None if shown == _NO_TOPIC_ID else shown


def _broker(entry: Mapping) -> Broker:
    host, port = entry.get("host"), entry.get("port")
    return Broker(int(entry["broker_id"]), rack=entry.get("rack") or None, host=host,
                  port=int(port) if port is not None else None,
                  endpoints=(f"{host}:{port}",) if host and port is not None else (),
                  alive=not entry.get("is_fenced"), fenced=bool(entry.get("is_fenced")))


def _partition(topic: str, p: Mapping, moving: Reassigning | None) -> Partition:
    leader = p.get("leader_id")
    return Partition(
        topic=topic, partition=int(p["partition_index"]),
        replicas=tuple(int(r) for r in p.get("replica_nodes") or ()),
        leader=NO_LEADER if leader is None or int(leader) < 0 else int(leader),
        isr=tuple(int(r) for r in p.get("isr_nodes") or ()),
        leader_epoch=max(int(p.get("leader_epoch") or 0), 0),
        adding_replicas=moving.adding if moving else (),
        removing_replicas=moving.removing if moving else (),
        elr=tuple(int(r) for r in p.get("eligible_leader_replicas") or ()),
        last_known_elr=tuple(int(r) for r in p.get("last_known_elr") or ()))


def dynamic_broker_configs(answers: Mapping[int, Mapping[str, BrokerConfig] | str]
                           ) -> dict[str, dict[str, str]]:
    """The brokers' dynamic settings as ZooKeeper's /config/brokers holds them: {"<default>" or broker id: {key:
    value}}, from each broker's described properties and their synonyms (a broker's own value hides the cluster
    default in the property's value, not in its synonyms). Sensitive values the brokers withhold are left out."""
    out: dict[str, dict[str, str]] = {}
    for broker, props in answers.items():
        if isinstance(props, str):  # the broker did not answer
            continue
        for _prop, (_value, _source, synonyms) in props.items():
            for name, value, source in synonyms:
                if value is None:
                    continue
                if source == _DYNAMIC_BROKER:
                    out.setdefault(str(broker), {})[name] = value
                elif source == _DYNAMIC_DEFAULT:
                    out.setdefault("<default>", {})[name] = value
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def quorum_of(answer: Mapping | None) -> Quorum | None:
    """DescribeQuorum's answer (kafka-python's dict of the response) as the snapshot's Quorum; None for none."""
    if not answer:
        return None
    parts = [p for t in answer.get("topics") or () for p in t.get("partitions") or ()]
    if not parts:
        return None
    p = parts[0]

    def replicas(key: str) -> tuple[QuorumReplica, ...]:
        out = []
        for r in p.get(key) or ():
            end, caught = r.get("log_end_offset"), r.get("last_caught_up_timestamp")
            out.append(QuorumReplica(int(r["replica_id"]), None if end is None or end < 0 else int(end),
                                     None if caught is None or caught < 0 else int(caught)))
        return tuple(sorted(out, key=lambda r: r.id))
    leader = p.get("leader_id")
    return Quorum(leader=None if leader is None or leader < 0 else int(leader), epoch=int(p.get("leader_epoch") or 0),
                  high_watermark=int(p.get("high_watermark") or 0), voters=replicas("current_voters"),
                  observers=replicas("observers"))


def topic_config_problem(topic: str) -> str:
    """The Problem key of a topic whose settings could not be read (a write computed from them refuses)."""
    return f"topic {topic}: settings"


def snapshot_of(cluster_info: Mapping, topics: Sequence[Mapping], *,
                overrides: Mapping[str, Mapping[str, str]] | None = None,
                reassigning: Mapping[tuple[str, int], Reassigning] | None = None,
                broker_configs: Mapping[str, Mapping[str, str]] | None = None, quorum: Quorum | None = None,
                cluster: str = "", source: str = "", captured_at: str | None = None) -> ClusterSnapshot:
    """The snapshot from the Admin API's answers: `cluster_info` (describe_cluster), `topics`
    (topic_partitions), each topic's `overrides`, the `reassigning` partitions, the dynamic `broker_configs` and,
    for a KRaft cluster, its `quorum` (whose leader is the active controller: under KRaft, DescribeCluster's
    controller id is only a broker that forwards controller requests)."""
    reassigning = reassigning or {}
    problems: list[Problem] = []
    built: list[Topic] = []
    for t in topics:
        name = str(t["name"])
        code = int(t.get("error_code") or 0)
        if code and not t.get("partitions"):
            # deleted between the listing and the description, or not authorised: said, not invented
            problems.append(Problem(f"topic {name}", f"the brokers answered error {code} for it"))
            continue
        parts = sorted((_partition(name, p, reassigning.get((name, int(p["partition_index"]))))
                        for p in t.get("partitions") or ()), key=lambda p: p.partition)
        if overrides is not None and name not in overrides:
            problems.append(Problem(topic_config_problem(name), "the brokers did not describe its settings (not yet "
                                                                "known to the broker asked, or deleted meanwhile)"))
        built.append(Topic(name=name, partitions=tuple(parts), topic_id=kafka_topic_id(t.get("topic_id")),
                           config=dict((overrides or {}).get(name) or {})))
    # Kafka 4's DescribeCluster also lists fenced brokers (KIP-1073): registered, not serving (stopped, or not
    # caught up with the metadata log): down for Keel, as an unregistered broker is in ZooKeeper mode
    brokers = {b.id: b for b in map(_broker, cluster_info.get("brokers") or ())}
    for bid in sorted({r for t in built for p in t.partitions for r in p.replicas} - set(brokers)):
        brokers[bid] = Broker(bid, alive=False)  # a replica on a broker the cluster does not list: down
    if quorum is not None:
        controller = Controller(quorum.leader, epoch=quorum.epoch) if quorum.leader is not None else None
    else:
        cid = cluster_info.get("controller_id")
        controller = Controller(int(cid)) if cid is not None and int(cid) >= 0 else None
    moving = tuple(TopicPartitionReplicas(t, p, tuple(r for r in m.replicas if r not in m.removing))
                   for (t, p), m in sorted(reassigning.items()))
    return ClusterSnapshot(
        cluster=cluster, captured_at=captured_at or utc_now_iso(), source=source,
        brokers=tuple(brokers[b] for b in sorted(brokers)),
        topics=tuple(sorted(built, key=lambda t: t.name)),
        controller=controller,
        in_progress=InProgress(reassignment=moving),
        cluster_id=cluster_info.get("cluster_id"),
        broker_configs=dict(broker_configs or {}),
        problems=tuple(problems),
        mode="kraft" if quorum is not None else "zookeeper", quorum=quorum)


def read_snapshot(admin: KafkaAdmin, *, cluster: str = "", attempts: int = 3) -> ClusterSnapshot:
    """The whole cluster through the Admin API: brokers, topics with every partition, topic overrides, running
    reassignments and the brokers' dynamic settings. A topic the broker asked could not describe (it has not applied
    the topic's records yet: each request may reach another broker) is read again, up to `attempts` reads 0.5 s,
    1 s apart, before the snapshot names it as a problem (then a write that depends on it refuses)."""
    for attempt in range(1, attempts + 1):
        snap = _read_once(admin, cluster=cluster)
        if attempt == attempts or not any(p.path.startswith("topic ") for p in snap.problems):
            return snap
        time.sleep(0.5 * attempt)
    return snap


def _read_once(admin: KafkaAdmin, *, cluster: str) -> ClusterSnapshot:
    info = admin.describe_cluster()
    quorum = quorum_of(admin.quorum())
    names = admin.topic_names()
    topics = admin.topic_partitions(names)
    overrides = admin.topic_overrides(names)
    reassigning = admin.reassignments() if admin.supports_cancel else {}
    live = sorted(int(b["broker_id"]) for b in info.get("brokers") or () if not b.get("is_fenced"))
    dynamic = dynamic_broker_configs(admin.broker_configs(live))
    return snapshot_of(info, topics, overrides=overrides, reassigning=reassigning, broker_configs=dynamic,
                       quorum=quorum, cluster=cluster, source=admin.bootstrap)
