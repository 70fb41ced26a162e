"""Each cluster's imbalance over time: the fleet job's cluster_scores metrics, per cluster and capture, from the
captures `fleet collect --history / --every` (and the Fleet page's "Collect now") keep in STORE/history/.

The numbers are core.fleet.reference's (the pandas oracle the Spark job is tested against), computed once over
every capture: a capture is scored as if it were a cluster of its own (key = cluster + captured_at), so one capture
gets exactly the score the fleet job gives that cluster when it is the latest. No Spark: a few hundred captures of
a few dozen clusters are a few million rows at most, which pandas scores in seconds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from core.fleet.reference import pandas_reference
from core.fleet.schema import BROKERS, HISTORY, hidden
from core.fleet.store import read_history

_SEP = "\x1f"  # between cluster and capture time in the scoring key: cluster names cannot hold it

#: The metrics a trend is drawn for, in the order the page offers them, with their meaning.
METRICS = {
    "imbalance_score": "0 even and healthy … 100 worst (the fleet ranking's score)",
    "replica_cv": "replicas per alive broker: standard deviation / mean",
    "leader_cv": "leaders per alive broker: standard deviation / mean",
    "under_replicated": "partitions whose ISR is smaller than the replicas",
    "offline": "partitions without a live leader",
    "rack_violations": "partitions on fewer racks than min(RF, racks)",
    "brokers_over_leader_threshold": "brokers whose preferred-leader imbalance exceeds the threshold",
    "partitions": "partitions of the cluster",
    "alive_brokers": "alive brokers",
}
COLUMNS = ["cluster", "captured_at"] + list(METRICS) + ["brokers", "max_replica_dev", "max_leader_dev"]


def imbalance_history(replicas: pd.DataFrame, brokers: pd.DataFrame) -> pd.DataFrame:
    """One row per (cluster, capture) of the history frames (as core.fleet.store.read_history returns them), with
    the fleet job's cluster metrics of that capture; sorted by cluster, then time. A capture is the broker rows
    (and replica rows) sharing one captured_at; a capture with brokers and no replica is scored too (0 partitions)."""
    if brokers.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in COLUMNS})

    def keyed(df: pd.DataFrame) -> pd.DataFrame:
        out = df.copy()
        stamp = pd.to_datetime(out["captured_at"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        out["cluster"] = out["cluster"].astype(str) + _SEP + stamp
        return out

    scores = pandas_reference(keyed(replicas), keyed(brokers)).cluster_scores
    parts = scores["cluster"].str.split(_SEP, n=1, expand=True)
    scores["cluster"] = parts[0]
    scores["captured_at"] = pd.to_datetime(parts[1], utc=True)
    return scores[COLUMNS].sort_values(["cluster", "captured_at"], ignore_index=True)


def history_stamp(store: str | Path) -> str:
    """Changes whenever a capture is added to (or removed from) STORE/history/: the page's cache key. Only directory
    listings are read; a capture counts once its brokers file is there (append_history writes it last)."""
    d = Path(store) / HISTORY / BROKERS
    if not d.is_dir():
        return "none"
    names = sorted(f"{c.name}/{f.name}" for c in d.iterdir() if c.is_dir() and not hidden(c.name)
                   for f in c.iterdir() if not hidden(f.name))
    return f"{len(names)}:{hashlib.sha1(chr(10).join(names).encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class History:
    scores: pd.DataFrame  # imbalance_history's rows
    captures: int  # (cluster, capture) pairs scored
    clusters: tuple[str, ...]


def load_history(store: str | Path, *, clusters: Iterable[str] | None = None) -> History:
    """Read STORE/history/ and score every capture. A capture whose replica file is not there yet (being written)
    is left out: only captures with a brokers file are scored, and their replicas are matched by time."""
    replicas, brokers = read_history(store, clusters=clusters)
    if not brokers.empty and not replicas.empty:
        done = brokers[["cluster", "captured_at"]].astype({"cluster": str}).drop_duplicates()
        r = replicas.astype({"cluster": str})
        replicas = r.merge(done, on=["cluster", "captured_at"], how="inner")
    elif brokers.empty:
        replicas = replicas.iloc[0:0]
    scores = imbalance_history(replicas, brokers)
    names = tuple(sorted(scores["cluster"].unique())) if len(scores) else ()
    return History(scores, len(scores), names)


def latest_first(scores: pd.DataFrame, metric: str = "imbalance_score") -> list[str]:
    """Cluster names, the highest `metric` at its latest capture first (ties by name): whom to draw first."""
    if scores.empty:
        return []
    last = scores.sort_values("captured_at").groupby("cluster", sort=False).tail(1)
    last = last.assign(_v=last[metric].astype("float64").fillna(float("-inf")))
    return last.sort_values(["_v", "cluster"], ascending=[False, True])["cluster"].tolist()


__all__ = ["COLUMNS", "METRICS", "History", "history_stamp", "imbalance_history", "latest_first", "load_history"]
