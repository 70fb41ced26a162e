"""The demo topics of `make run KAFKA=real` and `make run KAFKA=kraft`, in one place: created, then filled with data.

A ZooKeeper-mode cluster gets them through Keel itself (`python -m core create-topic`: Kafka's rack-aware
placement, written to ZooKeeper and recorded in the action history); a KRaft cluster, which has no ZooKeeper,
through the Admin API's CreateTopics (Kafka's controller places them, rack-aware too). Then every topic created by
this run gets data (core.kafka.demo), so that partitions have real, unequal sizes. A topic left by an earlier run
is kept as it is.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class DemoTopic:
    name: str
    partitions: int
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)
    data_bytes: int = 500_000


DEMO_TOPICS: tuple[DemoTopic, ...] = (
    DemoTopic("orders", 12, 3, data_bytes=6_000_000),
    DemoTopic("payments", 6, 3, {"min.insync.replicas": "2"}, data_bytes=2_000_000),
    DemoTopic("clicks", 8, 2, data_bytes=3_000_000),
    DemoTopic("inventory", 3, 3, {"retention.ms": "604800000"}),
    DemoTopic("audit-log", 1, 2),
)


def _create_through_keel(t: DemoTopic, zk: str, cluster: str, store: str) -> bool:
    """`python -m core create-topic` (a child process, as an operator would run it); False when it already exists."""
    cmd = [sys.executable, "-m", "core", "create-topic", "--zk", zk, "--cluster", cluster, "--store", store,
           "--topic", t.name, "--partitions", str(t.partitions), "--replication-factor", str(t.replication_factor)]
    for key, value in t.config.items():
        cmd += ["--config", f"{key}={value}"]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode == 0:
        return True
    out = proc.stdout + proc.stderr
    if "already exists" in out:
        return False
    from core.errors import KeelError

    raise KeelError(f"creating demo topic {t.name} failed (exit {proc.returncode}):\n{out.strip()}")


def seed_demo_topics(bootstrap: str, *, zk: str | None = None, cluster: str = "real", store: str | None = None,
                     say: Callable[[str], None] = print) -> list[str]:
    """Create DEMO_TOPICS (through Keel on ZooKeeper when `zk` is given, else through the Admin API of
    `bootstrap`), then write data to the ones this call created. Returns their names."""
    from core.kafka.demo import create_topics, produce

    if zk is not None:
        if store is None:
            raise ValueError("creating topics through Keel needs the action history's store")
        created = {t.name: _create_through_keel(t, zk, cluster, store) for t in DEMO_TOPICS}
    else:
        created = create_topics(bootstrap, [(t.name, t.partitions, t.replication_factor, t.config)
                                            for t in DEMO_TOPICS])
    for name, new in created.items():
        say(f"created topic {name}" if new else f"topic {name} already exists")
    sizes = {t.name: t.data_bytes for t in DEMO_TOPICS if created[t.name]}
    if sizes:
        for topic, n in produce(bootstrap, sizes).items():
            say(f"wrote {n / 1e6:.1f} MB to {topic}")
    return [name for name, new in created.items() if new]


__all__ = ["DEMO_TOPICS", "DemoTopic", "seed_demo_topics"]
