"""Writing clusters into a fleet store (atomically, one cluster at a time) and reading it back with pyarrow/pandas.

Writers put a cluster's file in a hidden temporary directory next to its final place, then rename it into
place, so a reader never sees half a cluster and an interrupted export leaves the previous data intact.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from core.fleet.schema import (BROKER_SCHEMA, BROKERS, HISTORY, PARTITION_COLUMN, REPLICA_SCHEMA, REPLICAS,
                               check_cluster_name, check_store)

ROW_GROUP_ROWS = 256 * 1024


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly the columns of `schema`, in order, cast where needed (dictionary strings are kept)."""
    cols = []
    for f in schema:
        col = table.column(f.name)
        if pa.types.is_dictionary(col.type) and pa.types.is_string(f.type):
            cols.append(col)
        elif not col.type.equals(f.type):
            cols.append(col.cast(f.type))
        else:
            cols.append(col)
    fields = [pa.field(f.name, c.type, nullable=f.nullable) for f, c in zip(schema, cols)]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace directory `final` by `tmp` (two renames); the old one is deleted afterwards."""
    old = None
    if final.exists():
        old = final.with_name(f".old-{final.name}-{uuid.uuid4().hex[:8]}")
        os.rename(final, old)
    os.rename(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_cluster(store: str | Path, cluster: str, replicas: pa.Table, brokers: pa.Table, *,
                  compression: str = "snappy") -> tuple[int, int]:
    """Write (or replace) one cluster's replica and broker rows; returns (replica rows, broker rows)."""
    check_cluster_name(cluster)
    root = Path(store)
    tables = {REPLICAS: _conform(replicas, REPLICA_SCHEMA), BROKERS: _conform(brokers, BROKER_SCHEMA)}
    staged: list[tuple[Path, Path]] = []
    try:
        for name, table in tables.items():
            dataset = root / name
            dataset.mkdir(parents=True, exist_ok=True)
            final = dataset / f"{PARTITION_COLUMN}={cluster}"
            tmp = dataset / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir()
            staged.append((tmp, final))
            pq.write_table(table, tmp / "part-00000.parquet", compression=compression,
                           row_group_size=ROW_GROUP_ROWS, use_dictionary=True)
        for tmp, final in staged:
            _swap_in(tmp, final)
    except BaseException:
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tables[REPLICAS].num_rows, tables[BROKERS].num_rows


def append_history(store: str | Path, cluster: str, replicas: pa.Table, brokers: pa.Table, *,
                   compression: str = "snappy") -> Path:
    """Add one capture of a cluster to STORE/history/ (kept beside the latest one, which write_cluster replaces).

    One file per capture, named by its captured_at, written under a hidden name and renamed into place, so a
    reader sees a capture whole or not at all. Returns the replica file's path.
    """
    check_cluster_name(cluster)
    tables = {REPLICAS: _conform(replicas, REPLICA_SCHEMA), BROKERS: _conform(brokers, BROKER_SCHEMA)}
    captured = tables[BROKERS].column("captured_at") if tables[BROKERS].num_rows else tables[REPLICAS].column(
        "captured_at")
    stamp = captured[0].as_py().strftime("%Y%m%dT%H%M%S%f")[:-3] + "Z" if len(captured) else "empty"
    written = Path()
    for name, table in tables.items():  # replicas first: a capture counts once its brokers file is there
        d = Path(store) / HISTORY / name / f"{PARTITION_COLUMN}={cluster}"
        d.mkdir(parents=True, exist_ok=True)
        final = d / f"capture-{stamp}.parquet"
        tmp = d / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
        try:
            pq.write_table(table, tmp, compression=compression, row_group_size=ROW_GROUP_ROWS, use_dictionary=True)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if name == REPLICAS:
            written = final
    return written


def read_history(store: str | Path, *, clusters: Iterable[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(replicas, brokers) of every capture kept in STORE/history/ (empty frames when there is none)."""
    frames = []
    for name, schema in ((REPLICAS, REPLICA_SCHEMA), (BROKERS, BROKER_SCHEMA)):
        d = Path(store) / HISTORY / name
        cols = [PARTITION_COLUMN] + schema.names
        if not d.is_dir():
            frames.append(pd.DataFrame(columns=cols))
            continue
        frames.append(read_dataset(d, clusters=clusters).select(cols).to_pandas())
    return frames[0], frames[1]


# --- reading with pyarrow / pandas (no Spark) ----------------------------------------------------


def _partitioning(dictionary: bool) -> pds.Partitioning:
    if dictionary:
        return pds.partitioning(pa.schema([(PARTITION_COLUMN, pa.dictionary(pa.int32(), pa.string()))]),
                                flavor="hive", dictionaries="infer")
    return pds.partitioning(pa.schema([(PARTITION_COLUMN, pa.string())]), flavor="hive")


def read_dataset(path: str | Path, *, clusters: Iterable[str] | None = None, columns: list[str] | None = None,
                 filter=None, dictionary: bool = True) -> pa.Table:
    """A hive-partitioned (cluster=NAME) Parquet directory as one Arrow table; `cluster` dictionary-encoded
    (a pandas categorical: 21 million rows of cluster names cost 21 million small ints, not strings)."""
    ds = pds.dataset(str(path), format="parquet", partitioning=_partitioning(dictionary),
                     exclude_invalid_files=False, ignore_prefixes=[".", "_"])
    expr = filter
    if clusters is not None:
        wanted = pds.field(PARTITION_COLUMN).isin(list(clusters))
        expr = wanted if expr is None else expr & wanted
    return ds.to_table(columns=columns, filter=expr)


def read_store(store: str | Path, *, clusters: Iterable[str] | None = None,
               check: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(replicas, brokers) of a fleet store as pandas DataFrames; cluster, topic and rack as categoricals."""
    if check:
        check_store(store)
    root = Path(store)
    frames = []
    for name, schema in ((REPLICAS, REPLICA_SCHEMA), (BROKERS, BROKER_SCHEMA)):
        table = read_dataset(root / name, clusters=clusters)
        cols = [PARTITION_COLUMN] + schema.names
        table = table.select(cols)
        frames.append(table.to_pandas())
    return frames[0], frames[1]


