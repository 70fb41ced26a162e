"""Issue 31 item 3b, the engine side: each cluster's imbalance over time from STORE/history/ (core.fleet.history,
scored with the fleet job's definitions), and a collection started by a person (core.fleet.collect_run): the
operator role on every cluster, one collection per store at a time (also across processes), its audit row.
Real ZooKeeper clusters (chroots of the session's server); no Spark.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from core.audit.store import NO_CLUSTER, Store
from core.errors import PermissionDeniedError
from core.fleet import collect_run
from core.fleet.collect_run import CollectionRunningError, check_collect, start_collection
from core.fleet.export import export_snapshot
from core.fleet.history import history_stamp, imbalance_history, latest_first, load_history
from core.fleet.reference import pandas_reference
from core.fleet.schema import BROKERS, HISTORY, PARTITION_COLUMN
from core.fleet.store import read_history, read_store
from core.model import Broker, ClusterSnapshot, Partition, Topic
from core.policy import access
from core.policy.config import load_config
from core.zk.session import ZkSession
from tests.fleet.test_fleet import write_kafka_tree

ROOT = Path(__file__).resolve().parents[2]
TIMES = ["2026-11-22T03:00:00Z", "2026-11-22T03:15:00Z", "2026-11-22T03:30:00Z"]


def skewed(name: str, at: str, partitions: int, brokers: int, *, crowd: int = 0, down: int | None = None,
           racks: int = 2) -> ClusterSnapshot:
    """RF 3 over `brokers` brokers, the replicas of the last `crowd` brokers moved to the others (skew grows with
    it), broker `down` dead (its partitions lose it from the ISR and leadership)."""
    used = brokers - crowd
    bs = tuple(Broker(b, f"r{b % racks}", alive=b != down) for b in range(1, brokers + 1))
    parts = []
    for p in range(partitions):
        reps = tuple((p + i) % used + 1 for i in range(3))
        live = [b for b in reps if b != down]
        parts.append(Partition("t", p, reps, leader=live[0] if live else -1, isr=tuple(live)))
    return ClusterSnapshot(cluster=name, captured_at=at, source="test", brokers=bs, topics=(Topic("t", tuple(parts)),))


def history_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    for i, at in enumerate(TIMES):
        export_snapshot(skewed("a", at, 60, 6, crowd=i), store, history=True)
        export_snapshot(skewed("b", at, 40, 4, down=2 if i == 1 else None), store, history=True)
    export_snapshot(skewed("c", TIMES[2], 30, 3), store, history=True)
    return store


def test_each_capture_is_scored_as_the_fleet_job_scores_it_alone(tmp_path):
    store = history_store(tmp_path)
    hist = load_history(store)
    s = hist.scores
    assert hist.captures == 7 and hist.clusters == ("a", "b", "c")
    assert s.groupby("cluster").size().to_dict() == {"a": 3, "b": 3, "c": 1}
    assert s.equals(s.sort_values(["cluster", "captured_at"], ignore_index=True))
    replicas, brokers = read_history(store)
    for _, row in s.iterrows():  # the oracle: pandas_reference of that one capture as the only store
        one = lambda df: df[(df.cluster.astype(str) == row.cluster) & (df.captured_at == row.captured_at)]  # noqa
        ref = pandas_reference(one(replicas).astype({"cluster": str}), one(brokers).astype({"cluster": str}))
        ref = ref.cluster_scores.iloc[0]
        for col in ("imbalance_score", "replica_cv", "leader_cv", "under_replicated", "offline", "rack_violations",
                    "brokers_over_leader_threshold", "partitions", "alive_brokers"):
            assert ref[col] == pytest.approx(row[col]), (row.cluster, row.captured_at, col)
    a = s[s.cluster == "a"]["imbalance_score"].tolist()
    assert a[0] < a[1] < a[2]  # crowding brokers shows as a rising line
    b = s[s.cluster == "b"].set_index("captured_at")
    assert b["alive_brokers"].tolist() == [4, 3, 4] and b["under_replicated"].iloc[1] > 0
    assert latest_first(s)[0] == "a"
    # the latest capture's row is what the fleet ranking gives the latest store
    latest = pandas_reference(*read_store(store)).cluster_scores.set_index("cluster")
    last = s.sort_values("captured_at").groupby("cluster").tail(1).set_index("cluster")
    for name in ("a", "b", "c"):
        assert last.at[name, "imbalance_score"] == pytest.approx(latest.at[name, "imbalance_score"])


def test_no_history_and_half_written_captures(tmp_path):
    empty = tmp_path / "none"
    assert history_stamp(empty) == "none"
    assert load_history(empty).scores.empty and load_history(empty).clusters == ()
    assert imbalance_history(pd.DataFrame(), pd.DataFrame()).empty
    store = history_store(tmp_path)
    stamp = history_stamp(store)
    # a capture whose brokers file is not there yet (append_history writes it last) is not scored
    d = store / HISTORY / BROKERS / f"{PARTITION_COLUMN}=a"
    newest = sorted(d.glob("capture-*.parquet"))[-1]
    newest.rename(d / f".tmp-{newest.name}")
    assert history_stamp(store) != stamp
    assert load_history(store).scores.groupby("cluster").size().to_dict() == {"a": 2, "b": 3, "c": 1}
    # a cluster with brokers and no topic is scored (0 partitions), not dropped
    export_snapshot(ClusterSnapshot(cluster="bare", captured_at=TIMES[0], source="t", brokers=(Broker(1, None),),
                                    topics=()), store, history=True)
    bare = load_history(store).scores.set_index("cluster").loc["bare"]
    assert bare["partitions"] == 0 and bare["imbalance_score"] == 0


# --- a collection started by a person -------------------------------------------------------------------------


@pytest.fixture
def two_clusters(zk_connect, tmp_path):
    with ZkSession.open(zk_connect) as root:
        for i in (0, 1):
            root.ensure_path(f"/c{i}")
            write_kafka_tree(f"{zk_connect}/c{i}", skewed(f"k{i}", TIMES[0], 20 + 10 * i, 3 + i))
    path = tmp_path / "keel.toml"

    def config(role: str = "operator", extra: str = ""):
        path.write_text(f'[keel]\nrole = "{role}"\n{extra}\n' + "".join(
            f'[clusters.k{i}]\nzk = "{zk_connect}/c{i}"\n\n' for i in (0, 1)))
        return load_config(str(path))

    return config


def local(actor: str = "alice") -> access.Identity:
    return access.local_identity(actor)


def test_operator_collects_every_cluster_with_history_and_one_audit_row(two_clusters, tmp_path):
    audit = Store(tmp_path / "audit.sqlite")
    store = tmp_path / "fleet"
    seen = []
    run = start_collection(local(), two_clusters(extra="read_only = true"), store, audit=audit)
    row = audit.action(run.action_id)
    assert row.status == "pending" and row.kind == collect_run.KIND and row.cluster == NO_CLUSTER
    assert row.actor == "alice" and row.payload["clusters"] == ["k0", "k1"]
    results = run.read_all(progress=seen.append)
    assert [r.cluster for r in results] == ["k0", "k1"] and all(r.ok for r in results)
    assert sorted(r.cluster for r in seen) == ["k0", "k1"]
    row = audit.action(row.id)
    assert row.status == "applied" and row.result == "2 clusters: 2 collected"
    assert not audit.pending("k0") and not audit.pending(NO_CLUSTER)
    time.sleep(1.1)  # a snapshot's captured_at has whole seconds: a capture of the same second replaces its file
    start_collection(local(), two_clusters(), store, audit=audit).read_all()  # the lock was released
    assert load_history(store).scores.groupby("cluster").size().to_dict() == {"k0": 2, "k1": 2}
    assert read_store(store)[1].groupby("cluster", observed=True).size().to_dict() == {"k0": 3, "k1": 4}


def test_viewer_may_not_collect_and_the_refusal_is_recorded(two_clusters, tmp_path):
    audit = Store(tmp_path / "audit.sqlite")
    store = tmp_path / "fleet"
    with pytest.raises(access.RoleDeniedError) as e:
        start_collection(local("val"), two_clusters("viewer"), store, audit=audit)
    assert "role of val on cluster k0 is 'viewer'" in str(e.value) and 'role = "operator"' in str(e.value)
    assert not store.exists()  # nothing read, nothing written
    refused = audit.actions("k0", kind="refused")
    assert len(refused) == 1 and refused[0].actor == "val" and "collect the fleet" in refused[0].target
    assert not audit.actions(kind=collect_run.KIND)
    # exposed (listening beyond loopback, nobody signed in): everyone is a viewer, whatever [keel] role says
    with pytest.raises(PermissionDeniedError, match="listens beyond loopback"):
        check_collect(local(), two_clusters("admin"), exposed=True)
    # a cluster-level rule: an operator on k0 who is a viewer on k1 may not collect the fleet
    cfg = two_clusters("viewer", extra='[auth]\nmode = "proxy"\nrequire_secret = false\n'
                                       '[access]\noperator = ["ops@x.org"]\n[clusters.k1.access]\noperator = []\n')
    who = access.Identity(actor="ops@x.org", source=access.PROXY, email="ops@x.org", subject="ops")
    with pytest.raises(access.RoleDeniedError, match="on cluster k1"):
        check_collect(who, cfg)
    assert check_collect(access.Identity(actor="cli", source=access.CLI), cfg) == tuple(cfg.clusters)  # no cli rule


def test_a_second_collection_of_a_store_is_refused_naming_the_first(two_clusters, tmp_path):
    audit = Store(tmp_path / "audit.sqlite")
    store = tmp_path / "fleet"
    first = start_collection(local("alice"), two_clusters(), store, audit=audit)
    with pytest.raises(CollectionRunningError) as e:
        start_collection(local("bob"), two_clusters(), store, audit=audit)
    assert f"a collection of {store} started by alice at {first.started_at[:10]}" in str(e.value)
    assert len(audit.actions(kind=collect_run.KIND)) == 1  # the refused one began nothing
    start_collection(local("bob"), two_clusters(), tmp_path / "other", audit=audit).abandon("test")  # another store
    first.abandon("test")
    assert audit.action(first.action_id or 1).status == "failed"
    start_collection(local("bob"), two_clusters(), store, audit=audit).abandon("test")  # released


def test_the_lock_is_held_across_processes_and_freed_when_its_holder_dies(two_clusters, tmp_path):
    two_clusters()  # writes keel.toml
    store = tmp_path / "fleet"
    code = ("import sys, time\nfrom core.audit.store import Store\nfrom core.policy import access\n"
            "from core.policy.config import load_config\nfrom core.fleet.collect_run import start_collection\n"
            f"run = start_collection(access.local_identity('carol'), load_config({str(tmp_path / 'keel.toml')!r}), "
            f"{str(store)!r}, audit=Store({str(tmp_path / 'other.sqlite')!r}))\n"
            "print('held', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(CollectionRunningError, match=rf"started by carol at .* \(pid {proc.pid}\) is running"):
            start_collection(local(), two_clusters(), store, audit=Store(tmp_path / "audit.sqlite"))
        # the command line takes the same lock: refused, naming the holder, and nothing written
        cli = subprocess.run([sys.executable, "-m", "core", "fleet", "collect", "--config", str(tmp_path / "keel.toml"),
                              "--out", str(store)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert cli.returncode != 0 and "started by carol" in cli.stderr, cli.stderr
        assert [p.name for p in store.iterdir()] == [collect_run.LOCK_NAME]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    run = start_collection(local(), two_clusters(), store, audit=Store(tmp_path / "audit.sqlite"))
    assert [r.ok for r in run.read_all()] == [True, True]
