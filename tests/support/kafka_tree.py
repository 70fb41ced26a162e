"""Write small Kafka trees by hand (as Kafka's brokers and controller would) for reader tests."""

from __future__ import annotations

from core import zkformat as zf
from core.zk.session import ZkSession


def write_broker(s: ZkSession, broker_id: int, rack: str | None = None, *, version: int = 5,
                 ephemeral: bool = False) -> None:
    s.create(zf.broker_path(broker_id),
             zf.encode_broker([f"PLAINTEXT://host{broker_id}:9092"], version=version, rack=rack, timestamp_ms=1),
             ephemeral=ephemeral, makepath=True)


def write_topic(s: ZkSession, name: str, assignment: dict[int, list[int]], *,
                states: dict[int, tuple[int, list[int]]] | None = None, config: dict[str, str] | None = None,
                topic_id: str | None = "AAAAAAAAAAAAAAAAAAAAAA", leader_epoch: int = 0) -> None:
    """A topic as Kafka leaves it: topic node, config node, and (unless given) states leader=first, isr=all."""
    s.create(zf.topic_path(name), zf.encode_topic(assignment, topic_id=topic_id), makepath=True)
    s.create(zf.topic_config_path(name), zf.encode_config(config or {}), makepath=True)
    states = states if states is not None else {p: (r[0], r) for p, r in assignment.items()}
    for p, (leader, isr) in states.items():
        s.create(zf.state_path(name, p), zf.encode_partition_state(leader, leader_epoch, 1, isr), makepath=True)


def write_cluster(s: ZkSession, brokers: dict[int, str | None], controller: int | None = None) -> None:
    for path in zf.PERSISTENT_PATHS:
        s.ensure_path(path)
    for b, rack in brokers.items():
        write_broker(s, b, rack)
    s.create(zf.CLUSTER_ID, zf.encode_cluster_id("kT3bq0m1RZ2b8iA9o0lHcA"), makepath=True)
    s.create(zf.CONTROLLER_EPOCH, zf.encode_controller_epoch(3))
    if controller is not None:
        s.create(zf.CONTROLLER, zf.encode_controller(controller, 1))


def dump_tree(s: ZkSession, root: str = "/") -> dict[str, bytes]:
    """Every znode under `root` with its data: to assert that a refused write changed nothing."""
    out: dict[str, bytes] = {}
    level = [root]
    while level:
        nodes = list(s.get_many(level))
        out.update({n.path: n.data for n in nodes if n.data is not None})
        below = s.children_many(level)
        level = [f"{p.rstrip('/')}/{c}" for p in level for c in (below[p] or ()) if f"{p.rstrip('/')}/{c}" != "/zookeeper"]
    return out
