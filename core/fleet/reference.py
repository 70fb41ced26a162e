"""The fleet metrics in plain pandas: the definitions, written once more without Spark.

The Spark job (core.fleet.jobs) must produce exactly these numbers; tests compare the two on generated fleets and
the benchmark times both. Definitions (per cluster; "alive brokers" includes alive brokers holding nothing):

broker_metrics, one row per broker (every broker of the brokers/ dataset, plus any broker a replica names):
  rack, alive                from brokers/ (a broker only replica rows name: no rack, alive as those rows say)
  replicas, leaders          replica rows of the broker; rows with is_leader
  preferred                  rows with position 0 (the broker is the partition's preferred leader)
  preferred_not_leading      rows with position 0 and not is_leader (leader -1 included)
  leader_imbalance_ratio     preferred_not_leading / preferred -- the controller's formula; null when preferred = 0
  over_leader_threshold      preferred_not_leading * 100 > threshold_percent * preferred (Kafka: ratio > 10 %)
  bytes                      sum of the known size_bytes of its replicas; null when the cluster has no sizes at all
  replica_dev, leader_dev, bytes_dev
                             value / mean over the cluster's alive brokers - 1; null when that mean is 0 (or null)
topic_broker: per (cluster, topic, broker) with at least one replica: replicas, leaders.
cluster_scores, one row per cluster:
  captured_at                the latest captured_at of its broker rows
  brokers, alive_brokers, racks (distinct racks of its brokers), topics, partitions, replicas
  replica_cv, leader_cv      population std / mean of replicas (leaders) over alive brokers; 0 when the mean is 0,
                             null without alive brokers
  max_replica_dev, max_leader_dev   the largest |dev| over alive brokers
  under_replicated           partitions with fewer in-ISR replicas than replicas
  offline                    partitions with no alive leader
  rack_violations            partitions whose replicas span fewer racks than min(replicas, racks of the cluster);
                             a replica's rack is its broker's rack in brokers/
  brokers_over_leader_threshold   brokers with over_leader_threshold
  imbalance_score            100 * (0.3 min(1, replica_cv) + 0.3 min(1, leader_cv) + 0.2 offline share
                             + 0.1 rack-violation share + 0.1 under-replicated share); a null cv counts as 1
  rank                       1 = highest score; ties by cluster name
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.health import IMBALANCE_DEFAULT_PERCENT as LEADER_THRESHOLD_PERCENT  # Kafka's default, 10

SCORE_WEIGHTS = {"replica_cv": 0.3, "leader_cv": 0.3, "offline": 0.2, "rack_violations": 0.1,
                 "under_replicated": 0.1}


@dataclass
class FleetMetrics:
    broker_metrics: pd.DataFrame
    topic_broker: pd.DataFrame
    cluster_scores: pd.DataFrame

    def __iter__(self):
        return iter((self.broker_metrics, self.topic_broker, self.cluster_scores))


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    num = num.astype("float64")
    den = den.astype("float64")
    return (num / den).where(den > 0)


def broker_metrics(replicas: pd.DataFrame, brokers: pd.DataFrame,
                   threshold_percent: int = LEADER_THRESHOLD_PERCENT) -> pd.DataFrame:
    r = replicas
    g = pd.DataFrame({
        "cluster": r["cluster"], "broker": r["broker"].astype("int64"),
        "is_leader": r["is_leader"].astype("int64"), "is_preferred": r["is_preferred"].astype("int64"),
        "pnl": (r["is_preferred"] & ~r["is_leader"]).astype("int64"),
        "size_bytes": r["size_bytes"].fillna(0).astype("int64"), "sized": r["size_bytes"].notna().astype("int64"),
        "alive": r["alive"].astype("int64"),
    })
    per = g.groupby(["cluster", "broker"], observed=True, sort=False).agg(
        replicas=("broker", "size"), leaders=("is_leader", "sum"), preferred=("is_preferred", "sum"),
        preferred_not_leading=("pnl", "sum"), bytes=("size_bytes", "sum"), sized=("sized", "sum"),
        r_alive=("alive", "max")).reset_index()
    per["cluster"] = per["cluster"].astype(str)
    per["r_alive"] = per["r_alive"].astype(bool)
    per["bytes"] = per["bytes"].where(per["sized"] > 0)
    b = pd.DataFrame({"cluster": brokers["cluster"].astype(str), "broker": brokers["broker"].astype("int64"),
                      "b_rack": brokers["rack"].astype(object), "b_alive": brokers["alive"].astype(bool)})
    b = b.groupby(["cluster", "broker"], sort=False).agg(b_rack=("b_rack", "first"),
                                                         b_alive=("b_alive", "max")).reset_index()
    b["listed"] = True
    m = b.merge(per, on=["cluster", "broker"], how="outer")
    listed = m["listed"].eq(True)
    m["rack"] = m["b_rack"].where(listed & m["b_rack"].notna(), None).astype(object)
    m["alive"] = m["b_alive"].where(listed, m["r_alive"]).astype(bool)
    for c in ("replicas", "leaders", "preferred", "preferred_not_leading"):
        m[c] = m[c].fillna(0).astype("int64")
    has_sizes = per.groupby("cluster")["sized"].sum() > 0
    sized = m["cluster"].map(has_sizes).eq(True)
    m["bytes"] = m["bytes"].fillna(0).where(sized)
    m["leader_imbalance_ratio"] = _ratio(m["preferred_not_leading"], m["preferred"])
    m["over_leader_threshold"] = m["preferred_not_leading"] * 100 > threshold_percent * m["preferred"]

    alive = m[m["alive"]]
    means = alive.groupby("cluster").agg(mr=("replicas", "mean"), ml=("leaders", "mean"), mb=("bytes", "mean"))
    m = m.join(means, on="cluster")
    m["replica_dev"] = _ratio(m["replicas"], m["mr"]) - 1
    m["leader_dev"] = _ratio(m["leaders"], m["ml"]) - 1
    m["bytes_dev"] = _ratio(m["bytes"], m["mb"]) - 1
    m["bytes"] = m["bytes"].round().astype("Int64")
    cols = ["cluster", "broker", "rack", "alive", "replicas", "leaders", "preferred", "preferred_not_leading",
            "leader_imbalance_ratio", "over_leader_threshold", "bytes", "replica_dev", "leader_dev", "bytes_dev"]
    return m[cols].sort_values(["cluster", "broker"], ignore_index=True)


def topic_broker(replicas: pd.DataFrame) -> pd.DataFrame:
    g = pd.DataFrame({"cluster": replicas["cluster"], "topic": replicas["topic"],
                      "broker": replicas["broker"].astype("int64"),
                      "is_leader": replicas["is_leader"].astype("int64")})
    out = g.groupby(["cluster", "topic", "broker"], observed=True, sort=False).agg(
        replicas=("is_leader", "size"), leaders=("is_leader", "sum")).reset_index()
    out["cluster"] = out["cluster"].astype(str)
    out["topic"] = out["topic"].astype(str)
    return out.sort_values(["cluster", "topic", "broker"], ignore_index=True)


def _cv(values: pd.Series) -> float:
    if len(values) == 0:
        return np.nan
    mean = values.mean()
    if mean == 0:
        return 0.0
    return float(values.std(ddof=0) / mean)


def cluster_scores(replicas: pd.DataFrame, brokers: pd.DataFrame, brokers_metrics: pd.DataFrame) -> pd.DataFrame:
    r = replicas
    parts = pd.DataFrame({
        "cluster": r["cluster"], "topic": r["topic"], "partition": r["partition"],
        "in_isr": r["in_isr"].astype("int64"), "live_leader": (r["is_leader"] & r["alive"]).astype("int64"),
    })
    keys = ["cluster", "topic", "partition"]
    p = parts.groupby(keys, observed=True, sort=False).agg(
        rf=("in_isr", "size"), isr=("in_isr", "sum"), live=("live_leader", "max"))
    # a replica's rack is its broker's rack in brokers/
    rk = pd.DataFrame({"cluster": r["cluster"].astype(str) if not isinstance(r["cluster"].dtype, pd.CategoricalDtype)
                       else r["cluster"], "broker": r["broker"].astype("int64"), "topic": r["topic"],
                       "partition": r["partition"]})
    b = pd.DataFrame({"cluster": brokers["cluster"].astype(str), "broker": brokers["broker"].astype("int64"),
                      "rack": brokers["rack"].astype(object)}).drop_duplicates(["cluster", "broker"])
    b = b[b["rack"].notna()]
    if isinstance(rk["cluster"].dtype, pd.CategoricalDtype):
        b["cluster"] = pd.Categorical(b["cluster"], categories=rk["cluster"].cat.categories)
    b["rack"] = b["rack"].astype("category").cat.codes
    rk = rk.merge(b, on=["cluster", "broker"], how="left")
    p["part_racks"] = rk.groupby(keys, observed=True, sort=False)["rack"].nunique()
    p = p.reset_index()
    p["cluster"] = p["cluster"].astype(str)

    bm = brokers_metrics
    cluster_racks = bm[bm["rack"].notna()].groupby("cluster")["rack"].nunique()
    p["cluster_racks"] = p["cluster"].map(cluster_racks).fillna(0).astype("int64")
    p["under_replicated"] = p["isr"] < p["rf"]
    p["offline"] = p["live"] == 0
    p["rack_violation"] = p["part_racks"] < np.minimum(p["rf"], p["cluster_racks"])
    pc = p.groupby("cluster").agg(
        topics=("topic", "nunique"), partitions=("rf", "size"), replicas=("rf", "sum"),
        under_replicated=("under_replicated", "sum"), offline=("offline", "sum"),
        rack_violations=("rack_violation", "sum"))

    rows = []
    for cluster, grp in bm.groupby("cluster"):
        alive = grp[grp["alive"]]
        rows.append({
            "cluster": cluster, "brokers": len(grp), "alive_brokers": len(alive),
            "racks": int(cluster_racks.get(cluster, 0)),
            "replica_cv": _cv(alive["replicas"]), "leader_cv": _cv(alive["leaders"]),
            "max_replica_dev": alive["replica_dev"].abs().max(), "max_leader_dev": alive["leader_dev"].abs().max(),
            "brokers_over_leader_threshold": int(grp["over_leader_threshold"].sum()),
        })
    out = pd.DataFrame(rows).set_index("cluster").join(pc, how="outer").reset_index()
    for c in ("topics", "partitions", "replicas", "under_replicated", "offline", "rack_violations",
              "brokers", "alive_brokers", "racks", "brokers_over_leader_threshold"):
        out[c] = out[c].fillna(0).astype("int64")

    t = pd.DataFrame({"cluster": brokers["cluster"].astype(str), "captured_at": brokers["captured_at"]})
    out["captured_at"] = out["cluster"].map(t.groupby("cluster")["captured_at"].max())

    share = lambda c: (out[c] / out["partitions"]).where(out["partitions"] > 0, 0.0)  # noqa: E731
    w = SCORE_WEIGHTS
    out["imbalance_score"] = 100 * (
        w["replica_cv"] * out["replica_cv"].fillna(1.0).clip(upper=1.0)
        + w["leader_cv"] * out["leader_cv"].fillna(1.0).clip(upper=1.0)
        + w["offline"] * share("offline") + w["rack_violations"] * share("rack_violations")
        + w["under_replicated"] * share("under_replicated"))
    out = out.sort_values(["imbalance_score", "cluster"], ascending=[False, True], ignore_index=True)
    out["rank"] = np.arange(1, len(out) + 1, dtype="int32")
    cols = ["rank", "cluster", "captured_at", "imbalance_score", "brokers", "alive_brokers", "racks", "topics",
            "partitions", "replicas", "replica_cv", "leader_cv", "max_replica_dev", "max_leader_dev",
            "under_replicated", "offline", "rack_violations", "brokers_over_leader_threshold"]
    return out[cols]


def pandas_reference(replicas: pd.DataFrame, brokers: pd.DataFrame,
                     threshold_percent: int = LEADER_THRESHOLD_PERCENT) -> FleetMetrics:
    """All three outputs from the store's two datasets (as `core.fleet.store.read_store` returns them)."""
    bm = broker_metrics(replicas, brokers, threshold_percent)
    return FleetMetrics(bm, topic_broker(replicas), cluster_scores(replicas, brokers, bm))
