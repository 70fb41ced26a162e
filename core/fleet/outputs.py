"""Reading the fleet jobs' outputs as pandas DataFrames (pyarrow only: the dashboard never starts Spark to read).

An output directory, as `core.fleet.jobs.run_jobs` leaves it::

    OUT/_keel_fleet.json                         manifest: input, master, when, row counts, threshold
    OUT/broker_metrics/part-*.parquet            one row per (cluster, broker)
    OUT/topic_broker/cluster=NAME/part-*.parquet one row per (cluster, topic, broker) holding replicas
    OUT/cluster_scores/part-*.parquet            one row per cluster, with imbalance_score and rank
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pds

from core.fleet.errors import FleetInputError
from core.fleet.schema import (BROKER_METRICS, CLUSTER_SCORES, OUTPUT_SCHEMAS, OUTPUTS, PARTITION_COLUMN,
                               TOPIC_BROKER)

MANIFEST = "_keel_fleet.json"
MANIFEST_FORMAT = "keel.fleet-metrics/1"
PARTITIONED = {TOPIC_BROKER}


def read_manifest(output_dir: str | Path) -> dict[str, Any]:
    """The run's manifest; FleetInputError when `output_dir` holds no completed fleet run."""
    path = Path(output_dir) / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FleetInputError(f"{output_dir} holds no fleet job output (no {MANIFEST})",
                              hint="run `python -m core fleet run --input STORE --output DIR` first") from None
    except (OSError, ValueError) as e:
        raise FleetInputError(f"{path}: unreadable manifest: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise FleetInputError(f"{path}: not a Keel fleet output manifest")
    return doc


def read_output(output_dir: str | Path, name: str, *, clusters: Iterable[str] | None = None,
                filter: pds.Expression | None = None) -> pd.DataFrame:
    """One output (broker_metrics, topic_broker or cluster_scores) as a DataFrame with the documented columns."""
    if name not in OUTPUT_SCHEMAS:
        raise ValueError(f"unknown fleet output {name!r}: expected one of {', '.join(OUTPUTS)}")
    read_manifest(output_dir)
    schema = OUTPUT_SCHEMAS[name]
    path = Path(output_dir) / name
    files = [p for p in path.rglob("*.parquet") if not any(part.startswith((".", "_"))
                                                          for part in p.relative_to(path).parts)] \
        if path.is_dir() else []
    if not files:
        return schema.empty_table().to_pandas()
    partitioning = (pds.partitioning(pa.schema([(PARTITION_COLUMN, pa.string())]), flavor="hive")
                    if name in PARTITIONED else None)
    ds = pds.dataset(str(path), format="parquet", partitioning=partitioning, ignore_prefixes=[".", "_"])
    expr = filter
    if clusters is not None:
        c = pds.field(PARTITION_COLUMN).isin(list(clusters))
        expr = c if expr is None else expr & c
    table = ds.to_table(filter=expr)
    table = table.select(schema.names).cast(schema)
    return table.to_pandas()


def read_broker_metrics(output_dir: str | Path, cluster: str | None = None) -> pd.DataFrame:
    """Per-broker metrics, sorted by cluster and broker (one cluster's brokers when `cluster` is given)."""
    df = read_output(output_dir, BROKER_METRICS, clusters=None if cluster is None else [cluster])
    return df.sort_values(["cluster", "broker"], ignore_index=True)


def read_topic_broker(output_dir: str | Path, cluster: str | None = None, topic: str | None = None) -> pd.DataFrame:
    """Replicas and leaders per (cluster, topic, broker); filtered to one cluster / topic when given."""
    expr = None if topic is None else pds.field("topic") == topic
    df = read_output(output_dir, TOPIC_BROKER, clusters=None if cluster is None else [cluster], filter=expr)
    return df.sort_values(["cluster", "topic", "broker"], ignore_index=True)


def read_cluster_scores(output_dir: str | Path) -> pd.DataFrame:
    """One row per cluster, rank 1 first (the cluster that most needs attention)."""
    return read_output(output_dir, CLUSTER_SCORES).sort_values("rank", ignore_index=True)
