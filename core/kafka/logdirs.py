"""Log directories and the replicas in them, as the Admin API's describeLogDirs reports them per broker.

`LogDirs` holds every (broker, log dir) with its replicas, sizes and error, and gives:
* `to_document()` / `to_json()`: exactly the document `kafka-log-dirs.sh --describe` prints
  (``{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":123,"offsetLag":0,
  "isFuture":false}],"error":null,"logDir":"/d"}]}],"version":1}``), so a file saved from it imports through
  `plan --sizes` like the tool's own output;
* `sizes()`: (topic, partition) -> bytes, by core.balance.sizes' rules (what `parse_log_dirs` gives for that
  document);
* per-broker and per-directory detail (`by_broker`, `dir_bytes`) for JBOD work.
Pure: built by core.kafka.admin from kafka-python's answer, no I/O here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.balance.sizes import PartitionSizes, sizes_from_log_dirs


@dataclass(frozen=True)
class Replica:
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool  # the destination of an intra-broker move (alterReplicaLogDirs) in flight


@dataclass(frozen=True)
class LogDir:
    broker: int
    path: str
    error: str | None  # None when the directory is online; else the error Kafka reports (e.g. KafkaStorageError)
    replicas: tuple[Replica, ...]  # sorted by topic, then partition, then future last
    total_bytes: int | None = None  # the volume's size and free space (describeLogDirs v4+, Kafka 3.3+)
    usable_bytes: int | None = None

    @property
    def bytes(self) -> int:
        """Bytes of the (non-future) replicas in this directory."""
        return sum(r.size for r in self.replicas if not r.is_future)


@dataclass(frozen=True)
class LogDirs:
    dirs: tuple[LogDir, ...]  # sorted by broker, then path

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(sorted({d.broker for d in self.dirs}))

    def to_document(self) -> dict:
        """The document kafka-log-dirs.sh --describe prints (keys in its order)."""
        brokers = []
        for b in self.brokers:
            dirs = [{"partitions": [{"partition": f"{r.topic}-{r.partition}", "size": r.size,
                                     "offsetLag": r.offset_lag, "isFuture": r.is_future} for r in d.replicas],
                     "error": d.error, "logDir": d.path} for d in self.dirs if d.broker == b]
            brokers.append({"broker": b, "logDirs": dirs})
        return {"brokers": brokers, "version": 1}

    def to_json(self) -> str:
        return json.dumps(self.to_document(), separators=(",", ":"))

    def sizes(self) -> PartitionSizes:
        """(topic, partition) -> bytes: the largest replica, future replicas and offline directories ignored."""
        return sizes_from_log_dirs(self.to_document())

    def by_broker(self) -> dict[int, dict[str, dict[tuple[str, int], int]]]:
        """broker -> log dir -> (topic, partition) -> bytes of the replica there (future replicas excluded;
        offline directories appear empty)."""
        out: dict[int, dict[str, dict[tuple[str, int], int]]] = {}
        for d in self.dirs:
            out.setdefault(d.broker, {})[d.path] = {(r.topic, r.partition): r.size for r in d.replicas
                                                    if not r.is_future}
        return out

    def dir_bytes(self) -> dict[tuple[int, str], int]:
        """(broker, log dir) -> bytes held there."""
        return {(d.broker, d.path): d.bytes for d in self.dirs}

    def broker_bytes(self) -> dict[int, int]:
        out: dict[int, int] = {b: 0 for b in self.brokers}
        for d in self.dirs:
            out[d.broker] += d.bytes
        return out

    def offline(self) -> tuple[LogDir, ...]:
        return tuple(d for d in self.dirs if d.error is not None)


__all__ = ["Replica", "LogDir", "LogDirs"]
