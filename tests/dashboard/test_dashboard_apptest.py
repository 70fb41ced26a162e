"""Every dashboard page through Streamlit's AppTest, against a real ZooKeeper holding a sandbox cluster.

The router (dashboard/streamlit_app.py) is the entry point, as `streamlit run` uses it; pages are reached
with AppTest.switch_page. Each test writes its own keel.toml and points KEEL_CONFIG at it. The
connections live in st.cache_resource, which is process-global: the autouse fixture clears it before
and after every test, which stops the LiveCluster watchers and closes their ZooKeeper sessions.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core import health
from core import zkformat as zf
from core.policy.config import load_config
from core.model import NO_LEADER, ClusterSnapshot
from sandbox.processes import zkserver
from sandbox.seed import SandboxSpec, seed_cluster
from core.zk.session import ZkSession
from dashboard import frame
from dashboard.text import unescape
from tests.support.sandbox_helpers import Sandbox, wait_until

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
RUN_TIMEOUT = 60
DEMO = SandboxSpec(brokers=6, racks=3, topics=8, seed=11, demo=True)


# --- helpers (fixtures: tests/conftest.py, tests/dashboard/conftest.py) ------------------------


def write_config(tmp_path, monkeypatch, clusters: dict[str, dict], *, role="admin", read_only=False) -> Path:
    lines = ["[keel]", f'role = "{role}"', f"read_only = {'true' if read_only else 'false'}", ""]
    for name, body in clusters.items():
        lines.append(f"[clusters.{name}]")
        for k, v in body.items():
            lines.append(f"{k} = {v!r}".replace("'", '"') if isinstance(v, str) else f"{k} = {v}")
        lines.append("")
    path = tmp_path / "keel.toml"
    path.write_text("\n".join(lines))
    monkeypatch.setenv("KEEL_CONFIG", str(path))
    return path


def app(cluster: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=RUN_TIMEOUT)
    if cluster is not None:
        at.session_state[frame.CLUSTER_KEY] = cluster
    return at


def live_connection(name: str) -> frame.Connection:
    """The Connection the app uses for cluster `name` (st.cache_resource is shared with the test)."""
    return frame.connection(load_config().clusters[name])


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def texts(elements) -> str:
    """What the elements read as: values from the cluster are escaped markdown (dashboard.text.md), resolved here."""
    return "\n".join(unescape(str(e.value)) for e in elements)


def table_with(at: AppTest, column: str, kind: str = "table"):
    for t in getattr(at, kind):
        df = t.value
        if column in df.columns:
            return df
    raise AssertionError(f"no {kind} with a {column!r} column; have {[list(t.value.columns) for t in getattr(at, kind)]}")


def settle(sb: Sandbox, conn: frame.Connection, predicate) -> ClusterSnapshot:
    """Wait until the emulator is idle and the app's live view agrees with ZooKeeper on `predicate`."""
    sb.emulator.wait_idle(10)
    wait_until(lambda: conn.live is not None and predicate(conn.snapshot()), timeout=15, message="live view")
    truth = sb.snapshot()
    wait_until(lambda: _same(conn.snapshot(), truth), timeout=15, message="live view equal to a fresh read")
    return conn.snapshot()


def _same(a: ClusterSnapshot, b: ClusterSnapshot) -> bool:
    da, db = a.as_read().to_dict(), b.as_read().to_dict()  # a live view also remembers down brokers' racks
    for d in (da, db):
        d.pop("captured_at"), d.pop("cluster"), d.pop("source")
    return da == db


# --- overview -----------------------------------------------------------------------------------


def test_overview_brokers_controller_and_health(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect, "description": "AppTest sandbox"}})
    at = app().run()
    assert not at.exception, at.exception

    # sidebar frame: cluster picker from the config, role, connection status
    assert at.sidebar.selectbox[0].options == ["demo — AppTest sandbox"]
    assert "role: admin" in texts(at.sidebar.markdown) and "Not signed in" in texts(at.sidebar.markdown)
    assert "Live" in texts(at.sidebar.markdown)

    conn = live_connection("demo")
    snap = settle(demo, conn, lambda s: True)
    at.run()
    assert not at.exception, at.exception
    summary = health.summarize(snap)

    m = metrics(at)
    assert m["Brokers alive"] == f"{summary.brokers_alive} / {summary.brokers_total}"
    assert m["Controller"] == f"broker {snap.controller.broker_id}"
    assert m["Topics"] == f"{len(snap.topics):,}"
    assert m["Partitions"] == f"{snap.partition_count:,}"
    assert m["Replicas"] == f"{snap.replica_count:,}"
    assert m["Under-replicated"] == f"{summary.under_replicated:,}"
    assert m["Unavailable"] == f"{summary.unavailable:,}"
    assert m["Under min ISR"] == f"{summary.under_min_isr:,}"
    assert m["At min ISR"] == f"{summary.at_min_isr:,}"
    assert m["Without state"] == f"{summary.missing_state:,}"
    assert m["Problems"] == "0"
    assert summary.under_replicated > 0  # the demo state has something to show

    brokers = table_with(at, "Broker")
    assert [int(b) for b in brokers["Broker"]] == [b.broker_id for b in summary.brokers]
    status = dict(zip(brokers["Broker"].astype(int), brokers["Status"]))
    for b in summary.brokers:
        assert status[b.broker_id] == ("alive" if b.alive else "DOWN")
    assert demo.seed.down and all(status[d] == "DOWN" for d in demo.seed.down)
    roles = dict(zip(brokers["Broker"].astype(int), brokers["Role"]))
    assert roles[snap.controller.broker_id] == "controller"
    assert any("Broker" in e.value and "down" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) == 2


def test_overview_follows_a_broker_stop_without_reconnecting(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    conn = live_connection("demo")
    live_before = conn.live
    victim = next(b.id for b in demo.snapshot().brokers if b.alive and b.id != demo.snapshot().controller.broker_id)
    assert dict(zip(table_with(at, "Broker")["Broker"].astype(int), table_with(at, "Broker")["Status"]))[victim] \
        == "alive"

    demo.stop_broker(victim)
    snap = settle(demo, conn, lambda s: not s.broker_by_id[victim].alive)
    at.run()
    assert not at.exception, at.exception
    assert conn.live is live_before  # kept current by watches, not by a new session
    brokers = table_with(at, "Broker")
    assert dict(zip(brokers["Broker"].astype(int), brokers["Status"]))[victim] == "DOWN"
    summary = health.summarize(snap)
    m = metrics(at)
    assert m["Brokers alive"] == f"{summary.brokers_alive} / {summary.brokers_total}"
    assert m["Under-replicated"] == f"{summary.under_replicated:,}"
    assert m["Unavailable"] == f"{summary.unavailable:,}"


def test_overview_lists_corrupt_znodes_and_admin_operations(demo, zk_connect, tmp_path, monkeypatch):
    topic = "support.tickets"
    with ZkSession.open(zk_connect) as s:
        s.set(zf.state_path(topic, 0), b"{not json")
        s.create(zf.PREFERRED_ELECTION, b'{"version":1,"partitions":[{"topic":"' + topic.encode() + b'","partition":1}]}')
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app()
    at.run()
    conn = live_connection("demo")
    # the emulator acts on the election and deletes the node; either way the corrupt state stays
    snap = conn.snapshot()
    assert any(p.path.endswith(f"/{topic}/partitions/0/state") for p in snap.problems)
    at.run()
    m = metrics(at)
    assert int(m["Problems"]) == len(conn.snapshot().problems) >= 1
    problems = table_with(at, "Path", "dataframe")
    assert any(p.endswith(f"/{topic}/partitions/0/state") for p in problems["Path"])


def test_viewer_role_and_read_only_shown(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}}, role="viewer", read_only=True)
    at = app().run()
    assert not at.exception, at.exception
    side = texts(at.sidebar.markdown) + texts(at.sidebar.caption)
    assert "role: viewer" in side and "read-only" in side
    assert "Write actions are disabled" in side


# --- topics -------------------------------------------------------------------------------------


def test_topics_list_filter_and_partitions(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    conn = live_connection("demo")
    snap = settle(demo, conn, lambda s: True)
    at.switch_page("views/topics.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Topics"
    assert at.sidebar.selectbox(key=frame.CLUSTER_KEY).value == "demo"  # the router's frame, on a rerun

    listing = table_with(at, "Topic", "dataframe")
    assert list(listing["Topic"]) == [t.name for t in snap.topics]
    for t in snap.topics:
        row = listing[listing["Topic"] == t.name].iloc[0]
        rows = [h for h in health.partition_health(snap) if h.topic == t.name]
        assert row["Partitions"] == len(t.partitions)
        assert row["RF"] == t.replication_factor
        assert row["Under-replicated"] == sum(h.under_replicated for h in rows)
        assert row["Unavailable"] == sum(h.unavailable for h in rows)
        assert row["Under min ISR"] == sum(h.under_min_isr for h in rows)
        assert row["Off preferred"] == sum(h.off_preferred_leader for h in rows)
        assert row["min ISR"] == ", ".join(map(str, sorted({h.min_isr for h in rows})))  # text: leaders may differ
        assert row["Config overrides"] == ", ".join(f"{k}={v}" for k, v in sorted(t.config.items()))

    # name filter
    at.text_input(key="q").input("ORDERS").run()
    listing = table_with(at, "Topic", "dataframe")
    assert list(listing["Topic"]) == [t.name for t in snap.topics if "orders" in t.name.lower()]

    # choose the topic with the most leaders off their preferred replica
    offpref = {t.name: sum(health.is_off_preferred_leader(p) for p in t.partitions) for t in snap.topics}
    name = max(sorted(offpref), key=offpref.get)
    assert offpref[name] > 0
    at.text_input(key="q").input("").run()
    at.selectbox(key="topic").select(name).run()
    assert not at.exception, at.exception
    topic = snap.topic(name)
    parts = table_with(at, "Partition", "dataframe")
    expected = topic.partitions[:100]
    assert len(parts) == len(expected)
    for (_, row), p in zip(parts.iterrows(), expected):
        assert row["Partition"] == p.partition
        assert row["Leader"] == ("none" if p.leader == NO_LEADER else str(p.leader))
        assert row["Replicas"] == ", ".join(map(str, p.replicas))
        assert row["ISR"] == (", ".join(map(str, p.isr)) or "—")
        off = health.is_off_preferred_leader(p)
        assert ("leader off preferred" in row["Flags"]) == off
        oos = health.out_of_sync_replicas(p)
        assert row["Out of sync"] == ", ".join(map(str, oos))
        assert ("replicas out of sync" in row["Flags"]) == bool(oos)
    assert metrics(at)["Off preferred"] == str(offpref[name])


def test_topic_partitions_are_paginated(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    snap = settle(demo, live_connection("demo"), lambda s: True)
    big = max(snap.topics, key=lambda t: len(t.partitions))
    assert len(big.partitions) > 25
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(big.name).run()
    at.selectbox(key="part_page_size").select(25).run()
    parts = table_with(at, "Partition", "dataframe")
    assert list(parts["Partition"]) == [p.partition for p in big.partitions[:25]]
    at.number_input(key="part_page").set_value(2).run()
    parts = table_with(at, "Partition", "dataframe")
    assert list(parts["Partition"]) == [p.partition for p in big.partitions[25:50]]
    assert any(f"of {len(big.partitions)}" in c.value for c in at.caption)


# --- brokers ------------------------------------------------------------------------------------


def test_brokers_page_imbalance_vs_threshold(demo, zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    snap = settle(demo, live_connection("demo"), lambda s: True)
    at.switch_page("views/brokers.py").run()
    assert not at.exception, at.exception
    summary = health.summarize(snap)
    loads = health.broker_loads(snap)

    m = metrics(at)
    assert m["Threshold"] == f"{summary.leader_imbalance_threshold}%"
    over = [b for b in summary.brokers_over_threshold if b in snap.alive_broker_ids]  # a down broker is not "over"
    assert m["Over threshold"] == str(len(over))
    df = table_with(at, "Imbalance %", "dataframe")
    assert [int(b) for b in df["Broker"]] == [b.broker_id for b in loads]
    for (_, row), b in zip(df.iterrows(), loads):
        assert row["Status"] == ("alive" if b.alive else "DOWN")
        assert row["Replicas"] == b.replicas and row["Leaders"] == b.leaders and row["Preferred"] == b.preferred
        # 0 for a broker that is the preferred replica of nothing (issue 16: it showed None)
        assert row["Imbalance %"] == pytest.approx(round((b.imbalance_ratio or 0) * 100, 1))
        assert row["Over threshold"] == (("YES" if b.over_threshold else "no") if b.alive else "down")
    assert len(at.get("plotly_chart")) == 1
    if summary.brokers_over_threshold:
        assert any("Leader imbalance over" in w.value for w in at.warning)


# --- bad states ---------------------------------------------------------------------------------


def test_unreachable_zookeeper_gives_a_banner_quickly(tmp_path, monkeypatch):
    port = zkserver.free_port()  # nothing listens there
    write_config(tmp_path, monkeypatch, {"nowhere": {"zk": f"127.0.0.1:{port}/kafka", "connect_timeout": 2}})
    started = time.monotonic()
    at = app().run()
    elapsed = time.monotonic() - started
    assert not at.exception, at.exception
    assert elapsed < 15, f"the page took {elapsed:.1f} s to give up"
    err = texts(at.error)
    assert "ZooKeeper unreachable" in err and f"127.0.0.1:{port}" in err and "within 2 s" in err
    assert "ZooKeeper unreachable" in texts(at.sidebar.markdown)
    # every page says the same, and the next full run retries
    conn = live_connection("nowhere")
    attempts = conn.attempts
    for page in ("views/topics.py", "views/brokers.py"):
        at.switch_page(page).run()
        assert "ZooKeeper unreachable" in texts(at.error)
    assert conn.attempts > attempts


def test_chroot_without_kafka_shows_no_kafka_error(zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"empty": {"zk": zk_connect}})
    at = app().run()
    assert not at.exception, at.exception
    err = texts(at.error)
    assert "No Kafka cluster" in err
    assert "no Kafka brokers are registered under" in err  # NoKafkaError's own message


def test_missing_config_file(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("KEEL_CONFIG", str(missing))
    at = app().run()
    assert not at.exception, at.exception
    err = texts(at.error)
    assert str(missing) in err and "not found" in err


def test_invalid_config_names_the_key(tmp_path, monkeypatch):
    path = tmp_path / "keel.toml"
    path.write_text('[keel]\nrole = "superuser"\n[clusters.a]\nzk = "127.0.0.1:1"\n')
    monkeypatch.setenv("KEEL_CONFIG", str(path))
    for page in (None, "views/topics.py"):
        at = app().run()
        if page:
            at.switch_page(page).run()
        assert not at.exception, at.exception
        err = texts(at.error)
        assert str(path) in err and "keel.role" in err


@pytest.mark.filterwarnings("ignore:No chroot path exists")  # the point of the test: kazoo warns too
def test_second_cluster_is_picked_from_session_state(demo, zk_connect, zk_server, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect},
                                         "other": {"zk": f"{zk_server}/does-not-exist-{time.time_ns()}"}})
    at = app(cluster="other").run()
    assert "No Kafka cluster" in texts(at.error)
    at = app(cluster="demo").run()
    assert "No Kafka cluster" not in texts(at.error)
    assert metrics(at)["Controller"].startswith("broker ")
    # and through the sidebar picker
    at.sidebar.selectbox(key=frame.CLUSTER_KEY).select("other").run()
    assert "No Kafka cluster" in texts(at.error)
    at.sidebar.selectbox(key=frame.CLUSTER_KEY).select("demo").run()
    assert "No Kafka cluster" not in texts(at.error) and "Live" in texts(at.sidebar.markdown)


# --- ZooKeeper going away under a live view ---------------------------------------------------------


def test_zookeeper_outage_keeps_last_snapshot_and_recovers(tmp_path, monkeypatch):
    port = zkserver.free_port()
    data = tmp_path / "zk"
    server = zkserver.start(port, data, timeout=60, detach=False)
    try:
        connect = f"127.0.0.1:{port}/outage"
        with ZkSession.open(f"127.0.0.1:{port}") as root:
            root.ensure_path("/outage")
        with ZkSession.open(connect) as s:
            seed_cluster(s, SandboxSpec(brokers=3, racks=3, topics=3, seed=5))  # no emulator: all brokers down
        write_config(tmp_path, monkeypatch, {"outage": {"zk": connect, "connect_timeout": 2}})
        at = app().run()
        assert not at.exception, at.exception
        assert not at.warning
        brokers_before = list(table_with(at, "Broker")["Broker"])

        server.stop()
        conn = live_connection("outage")
        wait_until(lambda: conn.live.status != "connected", timeout=20, message="the session to notice")
        at.run()
        assert not at.exception, at.exception
        warn = texts(at.warning)
        assert "ZooKeeper unreachable" in warn and "last good snapshot" in warn
        assert frame.hhmmss(conn.stale_since()) in warn
        assert list(table_with(at, "Broker")["Broker"]) == brokers_before  # still drawn

        server = zkserver.start(port, data, timeout=60, detach=False)

        def recovered():
            conn.ensure()
            return conn.healthy

        wait_until(recovered, timeout=40, interval=0.5, message="a fresh session")
        at.run()
        assert not at.exception, at.exception
        assert not at.warning
        assert list(table_with(at, "Broker")["Broker"]) == brokers_before
    finally:
        st.cache_resource.clear()
        server.stop()
