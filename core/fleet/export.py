"""Snapshot -> fleet store rows: `fleet export` (one snapshot JSON file) and `fleet collect` (every configured cluster).

Replica rows come straight from the snapshot's partitions; sizes, which ZooKeeper does not hold, come from the
JSON `kafka-log-dirs.sh --describe` prints (optional: `size_bytes` is null without it).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from functools import partial
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pyarrow as pa

from core.errors import KeelError
from core.fleet.errors import FleetInputError
from core.fleet.schema import BROKER_SCHEMA, REPLICA_SCHEMA, check_cluster_name
from core.fleet.store import append_history, write_cluster
from core.model import ClusterSnapshot

SizeKey = tuple[int, str, int]  # (broker, topic, partition)


# --- kafka-log-dirs.sh --describe ---------------------------------------------------------------


def parse_log_dirs(text: str, *, source: str = "log-dirs JSON") -> dict[SizeKey, int]:
    """(broker, topic, partition) -> size in bytes, from `kafka-log-dirs.sh --describe` output.

    The tool prints two status lines ("Querying brokers...", "Received log directory information...") before
    the JSON; they are skipped. Log dirs reporting an error and future replicas (`isFuture`, a move between log
    dirs in flight) are left out, so each replica gets the size of its current log.
    """
    start = text.find("{")
    if start < 0:
        raise FleetInputError(f"{source}: no JSON found (expected the output of kafka-log-dirs.sh --describe)")
    try:
        doc = json.loads(text[start:])
    except ValueError as e:
        raise FleetInputError(f"{source}: not valid JSON: {e}") from None
    sizes: dict[SizeKey, int] = {}
    try:
        brokers = doc["brokers"]
        if not isinstance(brokers, list):
            raise TypeError("'brokers' is not a list")
        for b in brokers:
            broker = int(b["broker"])
            for d in b.get("logDirs") or ():
                if d.get("error"):
                    continue
                for p in d.get("partitions") or ():
                    if p.get("isFuture"):
                        continue
                    topic, sep, num = str(p["partition"]).rpartition("-")
                    if not sep or not topic:
                        raise ValueError(f"partition name {p['partition']!r} is not TOPIC-N")
                    key = (broker, topic, int(num))
                    sizes[key] = max(sizes.get(key, 0), int(p["size"]))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise FleetInputError(f"{source}: not kafka-log-dirs.sh --describe JSON: {type(e).__name__}: {e}") from None
    return sizes


def read_sizes_file(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except OSError as e:
        raise FleetInputError(f"cannot read sizes file {p}: {e.strerror or e}") from None


def load_log_dirs(path: str | Path) -> dict[SizeKey, int]:
    return parse_log_dirs(read_sizes_file(path), source=str(path))


# --- snapshot -> Arrow ----------------------------------------------------------------------------


def parse_captured_at(value: str) -> datetime:
    try:
        dt = datetime.fromisoformat(value.strip())
    except (AttributeError, ValueError):
        raise FleetInputError(f"snapshot captured_at {value!r} is not an ISO-8601 time") from None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def snapshot_tables(snapshot: ClusterSnapshot, sizes: Mapping[SizeKey, int] | None = None) -> tuple[pa.Table, pa.Table]:
    """(replica rows, broker rows) of one snapshot, in the store's schemas (without the `cluster` column)."""
    captured = parse_captured_at(snapshot.captured_at)
    alive = snapshot.alive_broker_ids
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    sizes = sizes or {}
    topic, part, pos, broker, lead, isr_col, size = [], [], [], [], [], [], []
    for t in snapshot.topics:
        name = t.name
        for p in t.partitions:
            isr = p.isr
            for i, b in enumerate(p.replicas):
                topic.append(name)
                part.append(p.partition)
                pos.append(i)
                broker.append(b)
                lead.append(b == p.leader)
                isr_col.append(b in isr)
                size.append(sizes.get((b, name, p.partition)))
    n = len(topic)
    replicas = pa.Table.from_pydict({
        "captured_at": pa.array([captured] * n, REPLICA_SCHEMA.field("captured_at").type),
        "topic": pa.array(topic, pa.string()).dictionary_encode(),
        "partition": pa.array(part, pa.int32()),
        "position": pa.array(pos, pa.int32()),
        "broker": pa.array(broker, pa.int32()),
        "rack": pa.array([rack_of.get(b) for b in broker], pa.string()).dictionary_encode(),
        "alive": pa.array([b in alive for b in broker], pa.bool_()),
        "is_leader": pa.array(lead, pa.bool_()),
        "is_preferred": pa.array([i == 0 for i in pos], pa.bool_()),
        "in_isr": pa.array(isr_col, pa.bool_()),
        "size_bytes": pa.array(size, pa.int64()),
    })
    ids = sorted(set(rack_of) | set(broker))
    brokers = pa.Table.from_pydict({
        "captured_at": pa.array([captured] * len(ids), BROKER_SCHEMA.field("captured_at").type),
        "broker": pa.array(ids, pa.int32()),
        "rack": pa.array([rack_of.get(b) for b in ids], pa.string()),
        "alive": pa.array([b in alive for b in ids], pa.bool_()),
    })
    return replicas, brokers


@dataclass(frozen=True)
class ExportResult:
    cluster: str
    brokers: int
    partitions: int
    replicas: int
    sized_replicas: int
    seconds: float

    def line(self) -> str:
        sized = f", {self.sized_replicas:,} with sizes" if self.sized_replicas else ""
        return (f"{self.cluster}: {self.brokers} brokers, {self.partitions:,} partitions, "
                f"{self.replicas:,} replicas{sized} ({self.seconds:.1f} s)")


def export_snapshot(snapshot: ClusterSnapshot, store: str | Path, *, cluster: str | None = None,
                    sizes: Mapping[SizeKey, int] | None = None, history: bool = False) -> ExportResult:
    """Write one snapshot into the store as cluster `cluster` (default: the snapshot's own name), replacing it;
    with `history`, also keep it as one more capture in STORE/history/."""
    started = time.monotonic()
    name = cluster or snapshot.cluster
    if not name:
        raise FleetInputError("the snapshot names no cluster: give one with --cluster")
    check_cluster_name(name)
    replicas, brokers = snapshot_tables(snapshot, sizes)
    return write_tables(store, name, replicas, brokers, partitions=snapshot.partition_count, history=history,
                        started=started)


def write_tables(store: str | Path, name: str, replicas: pa.Table, brokers: pa.Table, *, partitions: int,
                 history: bool = False, started: float | None = None) -> ExportResult:
    """Write one cluster's tables (snapshot_tables) into the store, and into STORE/history/ with `history`: the one
    writer of the local and the Spark collection (core.fleet.collect_spark writes the rows its tasks return)."""
    started = time.monotonic() if started is None else started
    write_cluster(store, name, replicas, brokers)
    if history:
        append_history(store, name, replicas, brokers)
    sized = replicas.num_rows - replicas.column("size_bytes").null_count
    return ExportResult(name, brokers.num_rows, partitions, replicas.num_rows, sized, time.monotonic() - started)


def load_snapshot_file(path: str | Path) -> ClusterSnapshot:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise FleetInputError(f"cannot read snapshot {p}: {e.strerror or e}") from None
    return ClusterSnapshot.from_json(text)


def export_file(snapshot_path: str | Path, store: str | Path, *, cluster: str | None = None,
                sizes_path: str | Path | None = None) -> ExportResult:
    """`fleet export`: a snapshot JSON file (as `python -m core snapshot` writes it) into the store."""
    snap = load_snapshot_file(snapshot_path)
    sizes = load_log_dirs(sizes_path) if sizes_path else None
    return export_snapshot(snap, store, cluster=cluster or snap.cluster or Path(snapshot_path).stem, sizes=sizes)


# --- collect: every configured cluster ---------------------------------------------------------------


@dataclass(frozen=True)
class CollectResult:
    cluster: str
    ok: bool
    result: ExportResult | None = None
    error: str | None = None

    def line(self) -> str:
        return self.result.line() if self.ok and self.result else f"{self.cluster}: FAILED: {self.error}"


def broker_sizes(cluster_config) -> dict[SizeKey, int]:
    """(broker, topic, partition) -> bytes from the cluster's brokers (describeLogDirs through core.kafka), the same
    rows a `kafka-log-dirs.sh --describe` file gives (future replicas and failed log dirs left out)."""
    from core.kafka.admin import KafkaAdmin

    with KafkaAdmin.for_cluster(cluster_config) as admin:
        dirs = admin.log_dirs()
    return parse_log_dirs(dirs.to_json(), source=f"describeLogDirs of cluster {cluster_config.name}")


def read_cluster(name: str, cluster_config, *, sizes_path: str | Path | None = None,
                 sizes_text: str | None = None,
                 read_progress: Callable[[str, str, int, int], None] | None = None
                 ) -> tuple[ClusterSnapshot, dict[SizeKey, int] | None]:
    """One cluster's snapshot and replica sizes, read where this runs (this process, or a Spark executor).

    The snapshot: through ZooKeeper when keel.toml gives `zk`, else (a KRaft cluster: `bootstrap` only) through the
    brokers' Admin API, as the dashboard reads it (core.kafka.metadata). Sizes: the --sizes file (`sizes_text`, its
    contents already read, named by `sizes_path`) if one is given, else the brokers of `bootstrap` when keel.toml
    names them, else none (size_bytes null)."""
    check_cluster_name(name)
    if sizes_text is not None:
        size_map = parse_log_dirs(sizes_text, source=str(sizes_path or f"sizes of cluster {name}"))
    elif sizes_path is not None:
        size_map = load_log_dirs(sizes_path)
    else:
        size_map = None
    if cluster_config.zk is None:
        snap, size_map = _read_through_brokers(name, cluster_config, size_map, read_progress)
        return _stamped(snap), size_map
    if size_map is None and getattr(cluster_config, "bootstrap", None):
        size_map = broker_sizes(cluster_config)
    from core.zk.reader import read_snapshot
    from core.zk.session import ZkSession, ZkSettings

    session = ZkSession.open(ZkSettings.from_cluster(cluster_config))
    try:
        relay = None if read_progress is None else (
            lambda stage, done, total: read_progress(name, stage, done, total))
        snap = read_snapshot(session, cluster=name, progress=relay)
    finally:
        session.close()
    return _stamped(snap), size_map


def _stamped(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The capture's time to the millisecond (a snapshot's own is whole seconds): history files are named by it,
    and two rounds of `--every` within one second would otherwise share a name, the later replacing the earlier."""
    now = datetime.now(timezone.utc)
    return replace(snap, captured_at=now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z")


def _read_through_brokers(name: str, cluster_config, size_map, read_progress):
    """A bootstrap-only (KRaft) cluster: snapshot and sizes from one Admin API client."""
    from core.kafka.admin import KafkaAdmin
    from core.kafka.metadata import read_snapshot

    with KafkaAdmin.for_cluster(cluster_config) as admin:
        snap = read_snapshot(admin, cluster=name)
        if size_map is None:
            size_map = parse_log_dirs(admin.log_dirs().to_json(), source=f"describeLogDirs of cluster {name}")
    if read_progress is not None:  # one request per kind of answer: nothing to report until it is all read
        read_progress(name, "partitions", snap.partition_count, snap.partition_count)
    return snap, size_map


def collect_one(name: str, cluster_config, store: str | Path, *, sizes_path: str | Path | None = None,
                read_progress: Callable[[str, str, int, int], None] | None = None,
                history: bool = False) -> CollectResult:
    """Snapshot one cluster into `store` (read_cluster, then write it); never raises (a failure is the result)."""
    started = time.monotonic()
    try:
        snap, size_map = read_cluster(name, cluster_config, sizes_path=sizes_path, read_progress=read_progress)
        exported = export_snapshot(snap, store, cluster=name, sizes=size_map, history=history)
        return CollectResult(name, True, ExportResult(**{**exported.__dict__, "seconds": time.monotonic() - started}))
    except KeelError as e:
        return CollectResult(name, False, error=str(e))
    except Exception as e:  # one broken cluster must not stop the fleet collection
        return CollectResult(name, False, error=f"{type(e).__name__}: {e}")


def default_parallel(clusters: int) -> int:
    return max(1, min(8, clusters))


def collect_request(config, clusters: Iterable[str] | None, sizes: Mapping[str, str | Path] | None,
                    parallel: int | None, default: Callable[[int], int]) -> tuple[list[str], dict, int]:
    """(cluster names, sizes files, clusters at once) of a collection, checked before anything connects: the
    local and the Spark collection take the same arguments."""
    names = list(clusters) if clusters is not None else list(config.clusters)
    sizes = dict(sizes or {})
    unknown = sorted(set(names) - set(config.clusters)) + sorted(set(sizes) - set(config.clusters))
    if unknown:
        known = ", ".join(config.clusters) or "none"
        raise FleetInputError(f"unknown cluster {unknown[0]!r} (configured: {known})")
    workers = default(len(names)) if parallel is None else int(parallel)
    if workers < 1:
        raise FleetInputError(f"parallel collections must be at least 1, got {parallel!r}")
    return names, sizes, workers


def collect(config, store: str | Path, *, clusters: Iterable[str] | None = None,
            sizes: Mapping[str, str | Path] | None = None,
            progress: Callable[[CollectResult], None] | None = None,
            read_progress: Callable[[str, str, int, int], None] | None = None,
            parallel: int | None = None, history: bool = False) -> list[CollectResult]:
    """Snapshot each cluster of `config` (a KeelConfig) into `store`, `parallel` at a time (default
    min(8, clusters)); a cluster that fails is reported and skipped, the others go on.

    `sizes` maps a cluster name to its kafka-log-dirs JSON file. `progress` gets one CollectResult per cluster as
    it finishes (in the calling thread, in finishing order); `read_progress(cluster, stage, done, total)` relays
    the snapshot readers' progress (from the worker threads). Returns the results in the order of `clusters`.
    """
    names, sizes, workers = collect_request(config, clusters, sizes, parallel, default_parallel)
    if not names:
        return []
    # Threads: a collection mostly waits on ZooKeeper and the brokers; each cluster has its own session and its
    # own store directory, so the clusters share nothing but the GIL.
    done = run_bounded([partial(collect_one, name, config.clusters[name], store, sizes_path=sizes.get(name),
                                read_progress=read_progress, history=history) for name in names],
                       workers, progress, prefix="fleet-collect")
    return [done[name] for name in names]


def run_bounded(calls: list[Callable[[], CollectResult]], workers: int,
                progress: Callable[[CollectResult], None] | None, *, prefix: str) -> dict[str, CollectResult]:
    """Each call's result by cluster, `workers` calls at a time in threads; `progress` gets each result as it
    finishes, in this thread. Ctrl-C starts no further call; those running finish (and their own write)."""
    done: dict[str, CollectResult] = {}
    if not calls:
        return done
    with ThreadPoolExecutor(max_workers=min(workers, len(calls)), thread_name_prefix=prefix) as pool:
        futures = [pool.submit(call) for call in calls]
        try:
            for fut in as_completed(futures):
                res = fut.result()
                done[res.cluster] = res
                if progress is not None:
                    progress(res)
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
    return done
