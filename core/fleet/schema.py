"""The fleet store: its layout, its Parquet schemas, and the check every reader runs before trusting it.

A fleet store is a directory with two hive-partitioned Parquet datasets::

    STORE/replicas/cluster=<name>/part-*.parquet    one row per replica (topic, partition, position, broker, ...)
    STORE/brokers/cluster=<name>/part-*.parquet     one row per broker, replicas or not (an empty broker matters)

Scheduled collection (`fleet collect --every`, or `--history`) also keeps every capture, beside the latest::

    STORE/history/replicas/cluster=<name>/capture-<captured_at>.parquet   the same schemas, one file per capture
    STORE/history/brokers/cluster=<name>/capture-<captured_at>.parquet

The jobs read only replicas/ and brokers/ (the latest capture); history/ is for trends over time.
`cluster` is the hive partition column (the directory name), not a column inside the files. Each cluster's
directories hold exactly one snapshot of that cluster; writers replace a cluster's directory atomically.
Files and directories whose names start with "." or "_" are ignored, as Spark and pyarrow ignore them.

Pure pyarrow; no pyspark (the Spark schemas are derived from these in core.fleet.jobs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core.fleet.errors import FleetInputError, FleetSchemaError

REPLICAS = "replicas"
BROKERS = "brokers"
HISTORY = "history"
PARTITION_COLUMN = "cluster"
TIMESTAMP = pa.timestamp("ms", tz="UTC")

#: One row per replica. `position` is the index in the partition's replica list (0 = the preferred leader).
REPLICA_SCHEMA = pa.schema([
    pa.field("captured_at", TIMESTAMP, nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("position", pa.int32(), nullable=False),
    pa.field("broker", pa.int32(), nullable=False),
    pa.field("rack", pa.string()),
    pa.field("alive", pa.bool_(), nullable=False),
    pa.field("is_leader", pa.bool_(), nullable=False),
    pa.field("is_preferred", pa.bool_(), nullable=False),
    pa.field("in_isr", pa.bool_(), nullable=False),
    pa.field("size_bytes", pa.int64()),
])

#: One row per broker of the cluster: every registered broker, and every dead broker an assignment names.
BROKER_SCHEMA = pa.schema([
    pa.field("captured_at", TIMESTAMP, nullable=False),
    pa.field("broker", pa.int32(), nullable=False),
    pa.field("rack", pa.string()),
    pa.field("alive", pa.bool_(), nullable=False),
])

SCHEMAS = {REPLICAS: REPLICA_SCHEMA, BROKERS: BROKER_SCHEMA}

CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def check_cluster_name(name: str) -> str:
    if not isinstance(name, str) or not CLUSTER_NAME.match(name):
        raise FleetInputError(f"invalid cluster name {name!r}: use letters, digits, '.', '_' and '-', "
                              "starting with a letter or digit")
    return name


def hidden(name: str) -> bool:
    return name.startswith(".") or name.startswith("_")


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if pa.types.is_dictionary(actual):
        actual = actual.value_type
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    if pa.types.is_timestamp(expected):
        return pa.types.is_timestamp(actual) and actual.unit in ("ms", "us") and actual.tz in ("UTC", "+00:00", "Z",
                                                                                              "Etc/UTC")
    return actual.equals(expected)


def schema_problems(actual: pa.Schema, expected: pa.Schema) -> list[str]:
    """What keeps `actual` from being read as `expected` (empty: compatible). Extra columns are allowed."""
    problems = []
    if PARTITION_COLUMN in actual.names:
        problems.append(f"column {PARTITION_COLUMN!r} must not be stored in the file (it is the directory name)")
    for f in expected:
        i = actual.get_field_index(f.name)
        if i < 0:
            problems.append(f"missing column {f.name!r} ({f.type})")
        elif not _same_type(actual.field(i).type, f.type):
            problems.append(f"column {f.name!r} has type {actual.field(i).type}, expected {f.type}")
    return problems


@dataclass(frozen=True)
class StoreFiles:
    root: Path
    files: dict[str, list[Path]]  # dataset -> parquet files
    clusters: tuple[str, ...]     # every cluster named by either dataset, sorted

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())


def dataset_files(dataset_dir: Path) -> dict[str, list[Path]]:
    """cluster -> data files of one dataset; raises FleetInputError for a file outside cluster=NAME/."""
    out: dict[str, list[Path]] = {}
    for path in sorted(dataset_dir.rglob("*")):
        rel = path.relative_to(dataset_dir)
        if any(hidden(part) for part in rel.parts):
            continue
        if path.is_dir():
            if len(rel.parts) == 1 and not rel.parts[0].startswith(PARTITION_COLUMN + "="):
                raise FleetInputError(f"{path}: expected only {PARTITION_COLUMN}=NAME directories in {dataset_dir}")
            continue
        if len(rel.parts) != 2 or not rel.parts[0].startswith(PARTITION_COLUMN + "="):
            raise FleetInputError(f"{path}: data files must sit in {dataset_dir}/{PARTITION_COLUMN}=NAME/")
        cluster = rel.parts[0].split("=", 1)[1]
        try:
            check_cluster_name(cluster)
        except FleetInputError as e:
            raise FleetInputError(f"{path.parent}: {e}") from None
        out.setdefault(cluster, []).append(path)
    return out


def check_store(store: str | Path, *, check_schemas: bool = True) -> StoreFiles:
    """Verify that `store` is a readable fleet store; return its files. Reads only Parquet footers.

    Raises FleetInputError (missing / empty / misplaced files) or FleetSchemaError (a file of the wrong schema,
    or not Parquet at all) naming the file, so that no job starts on input it would choke on halfway.
    """
    root = Path(store)
    how = "write one with `python -m core fleet collect`, `fleet export` or `fleet generate`"
    if not root.exists():
        raise FleetInputError(f"fleet store {root} does not exist", hint=how)
    if not root.is_dir():
        raise FleetInputError(f"fleet store {root} is not a directory", hint=how)
    files: dict[str, list[Path]] = {}
    clusters: set[str] = set()
    for name in (REPLICAS, BROKERS):
        d = root / name
        if not d.is_dir():
            raise FleetInputError(f"fleet store {root} has no {name}/ dataset "
                                  f"(expected {name}/{PARTITION_COLUMN}=NAME/*.parquet)", hint=how)
        by_cluster = dataset_files(d)
        files[name] = [p for ps in by_cluster.values() for p in ps]
        clusters |= set(by_cluster)
    if not files[BROKERS]:
        raise FleetInputError(f"fleet store {root} is empty: no Parquet files under {BROKERS}/", hint=how)
    if check_schemas:
        for name, paths in files.items():
            for path in paths:
                try:
                    actual = pq.read_schema(path)
                except (pa.ArrowException, OSError) as e:
                    raise FleetSchemaError(str(path), f"cannot be read as Parquet ({e})") from None
                problems = schema_problems(actual, SCHEMAS[name])
                if problems:
                    raise FleetSchemaError(str(path), problems)
    return StoreFiles(root=root, files=files, clusters=tuple(sorted(clusters)))


# --- job outputs (written by core.fleet.jobs, read by core.fleet.outputs) ---------------------------

BROKER_METRICS = "broker_metrics"
TOPIC_BROKER = "topic_broker"
CLUSTER_SCORES = "cluster_scores"
OUTPUTS = (BROKER_METRICS, TOPIC_BROKER, CLUSTER_SCORES)
OUTPUT_TIMESTAMP = pa.timestamp("us", tz="UTC")

BROKER_METRICS_SCHEMA = pa.schema([
    ("cluster", pa.string()),
    ("broker", pa.int32()),
    ("rack", pa.string()),
    ("alive", pa.bool_()),
    ("replicas", pa.int64()),
    ("leaders", pa.int64()),
    ("preferred", pa.int64()),
    ("preferred_not_leading", pa.int64()),
    ("leader_imbalance_ratio", pa.float64()),
    ("over_leader_threshold", pa.bool_()),
    ("bytes", pa.int64()),
    ("replica_dev", pa.float64()),
    ("leader_dev", pa.float64()),
    ("bytes_dev", pa.float64()),
])

TOPIC_BROKER_SCHEMA = pa.schema([
    ("cluster", pa.string()),
    ("topic", pa.string()),
    ("broker", pa.int32()),
    ("replicas", pa.int64()),
    ("leaders", pa.int64()),
])

CLUSTER_SCORES_SCHEMA = pa.schema([
    ("rank", pa.int32()),
    ("cluster", pa.string()),
    ("captured_at", OUTPUT_TIMESTAMP),
    ("imbalance_score", pa.float64()),
    ("brokers", pa.int64()),
    ("alive_brokers", pa.int64()),
    ("racks", pa.int64()),
    ("topics", pa.int64()),
    ("partitions", pa.int64()),
    ("replicas", pa.int64()),
    ("replica_cv", pa.float64()),
    ("leader_cv", pa.float64()),
    ("max_replica_dev", pa.float64()),
    ("max_leader_dev", pa.float64()),
    ("under_replicated", pa.int64()),
    ("offline", pa.int64()),
    ("rack_violations", pa.int64()),
    ("brokers_over_leader_threshold", pa.int64()),
])

OUTPUT_SCHEMAS = {BROKER_METRICS: BROKER_METRICS_SCHEMA, TOPIC_BROKER: TOPIC_BROKER_SCHEMA,
                  CLUSTER_SCORES: CLUSTER_SCORES_SCHEMA}
