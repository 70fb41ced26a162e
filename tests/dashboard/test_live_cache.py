"""Issue 24: what the dashboard derives from a snapshot (tables, figures) is computed once per snapshot for all
sessions, in the Connection that every session shares (st.cache_resource), however many sessions ask and in
whatever order; and a script run does not pay a full garbage collection.

Real parts: a real ZooKeeper holding a sandbox cluster, the router under Streamlit's AppTest (one AppTest per
browser session; they share the process-wide st.cache_resource, as a server's sessions do).
"""

from __future__ import annotations

import threading
import time
import tomllib
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core import health
from core.policy.config import ClusterConfig, load_config
from core.model import ClusterSnapshot
from sandbox.seed import SandboxSpec
from core.cluster.connection import Connection
from dashboard import charts, frame
from tests.support.sandbox_helpers import running_sandbox, wait_until

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "streamlit_app.py")
SPEC = SandboxSpec(brokers=5, racks=3, topics=8, seed=5)


def empty_snapshot() -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", captured_at="2026-11-25T00:00:00Z", source="test", brokers=(), topics=())


def test_a_value_many_sessions_ask_for_at_once_is_computed_once():
    """Every session's live view reruns on the same change of the cluster: before issue 24 each of them computed
    the same table (the cache was filled by whoever finished last)."""
    conn = Connection(ClusterConfig(name="c", zk="127.0.0.1:1"))  # never connects: derived needs no connection
    snap = empty_snapshot()
    calls = []
    start = threading.Barrier(8)

    def slow(s):
        calls.append(s)
        time.sleep(0.3)
        return object()

    values = []

    def session():
        start.wait()
        values.append(conn.derived("table", snap, slow))

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(v) for v in values}) == 1
    assert conn.derived("table", snap, slow) is values[0] and len(calls) == 1
    newer = empty_snapshot()
    conn.derived("table", newer, slow)
    assert len(calls) == 2, "a new snapshot computes it again"


def test_an_error_is_not_cached():
    conn = Connection(ClusterConfig(name="c", zk="127.0.0.1:1"))
    snap = empty_snapshot()
    attempts = []

    def flaky(s):
        attempts.append(s)
        if len(attempts) == 1:
            raise ValueError("first try fails")
        return "ok"

    with pytest.raises(ValueError):
        conn.derived("v", snap, flaky)
    assert conn.derived("v", snap, flaky) == "ok"
    assert len(attempts) == 2


# --- sessions of the real app (AppTest) ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_connections():
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


@pytest.fixture
def cluster(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SPEC) as sb:
        assert sb.emulator.wait_idle(10)
        config = tmp_path / "keel.toml"
        config.write_text(f'[keel]\nrole = "viewer"\n\n[clusters.c]\nzk = "{zk_connect}"\n')
        monkeypatch.setenv("KEEL_CONFIG", str(config))
        yield sb


def session(page: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_sessions_viewing_different_topics_share_their_partition_tables(cluster, monkeypatch):
    """Before issue 24 the cache held one value per name: two sessions on two topics evicted each other's table,
    so every refresh of either recomputed it."""
    first = session()
    conn = frame.connection(load_config().clusters["c"])
    wait_until(lambda: conn.snapshot() is not None, timeout=30)
    snap = conn.snapshot()
    a, b = (t.name for t in sorted(snap.topics, key=lambda t: -len(t.partitions))[:2])

    tables: list[str] = []  # the topics whose partition table was computed (core.health walks its partitions)
    real = health.iter_partition_health

    def counting(s, *args, **kwargs):
        tables.extend(t.name for t in s.topics)
        return real(s, *args, **kwargs)

    monkeypatch.setattr(health, "iter_partition_health", counting)
    sessions = [session("views/topics.py", topic=a), session("views/topics.py", topic=b)]
    assert any("Partitions 1–" in c.value for c in sessions[0].caption)
    assert sorted(tables) == sorted([a, b])
    for _ in range(3):  # every session refreshes, in turn, on the same snapshot
        for at in sessions:
            at.run()
            assert not at.exception, at.exception
    assert conn.snapshot() is snap, "the cluster did not change meanwhile"
    assert sorted(tables) == sorted([a, b]), f"partition tables computed again: {tables}"
    first.run()


def test_three_sessions_on_the_overview_compute_its_tables_and_charts_once(cluster, monkeypatch):
    """Before issue 24 each session built both charts of the Overview on every refresh."""
    calls: list[str] = []
    for module, name in ((health, "summarize"), (charts, "per_broker_bars")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    sessions = [session() for _ in range(3)]
    conn = frame.connection(load_config().clusters["c"])
    snap = conn.snapshot()
    for at in sessions:
        at.run()
        assert at.get("plotly_chart"), "the Overview draws its charts"
    assert conn.snapshot() is snap, "the cluster did not change meanwhile"
    assert sorted(calls) == ["per_broker_bars", "per_broker_bars", "summarize"], calls


def test_the_server_does_no_full_garbage_collection_after_every_script_run():
    """Streamlit's runner.postScriptGC runs gc.collect(2) after every script run, each live refresh of each
    session included: 0.25-0.4 s of the interpreter lock with a 100,000-partition snapshot in memory, which
    saturated the server at a few open sessions (issue 24). The app's own config turns it off."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
