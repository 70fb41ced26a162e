"""Issue 31, item 1: first content whatever the size. While a cluster's partition states are read, the pages draw
what is already known (brokers, controller, topic names and partition counts, the read's progress) and nothing
says "Live" or counts a partition healthy; the full view follows once the states are in.

Real parts: a real ZooKeeper holding the cluster, the real reader and Connection, the router under AppTest. The
state read is made to take as long as the test wants by holding the reader's own progress report of the states
(a pausable read: a real large cluster makes the same pause, only not on demand; bench/pages.py measures that one).
"""

from __future__ import annotations

import threading
import time

import pytest

from core.cluster.connection import Connection, Phase
from core.outline import FIRST_CONTENT_SECONDS, LARGE_TOPICS, Outline
from core.zk.reader import load_tree
from core.zk.session import ZkSession
from core.zk.tree import ClusterTree
from dashboard import frame
from tests.dashboard.test_dashboard_apptest import app, live_connection, metrics, texts, write_config
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until

TOPICS = {f"orders-{i}": 3 + i for i in range(6)}  # name -> partitions: 33 partitions in all
HEALTH = ("Under-replicated", "Unavailable", "Under min ISR", "At min ISR", "Without state", "Problems")
FIRST_RUN_SECONDS = 15  # an AppTest run that blocks on the whole read (the code before issue 31) fails within this


@pytest.fixture
def cluster(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=2)
        for name, n in TOPICS.items():
            write_topic(s, name, {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(n)})
    return zk_connect


@pytest.fixture
def paused(monkeypatch):
    """Holds every first read of a Connection at the start of its state read until `.set()`."""
    gate = threading.Event()
    reached = threading.Event()
    original = Connection._on_progress

    def on_progress(self, stage, done, total):
        original(self, stage, done, total)
        if stage == "states" and done == 0:
            reached.set()
            gate.wait(60)

    monkeypatch.setattr(Connection, "_on_progress", on_progress)
    gate.reached = reached
    yield gate
    gate.set()  # never leave a reader thread blocked


def test_a_large_read_is_drawn_at_once_a_small_one_only_when_slow():
    def outline(topics: int, partitions: int | None) -> Outline:
        names = tuple(f"t{i}" for i in range(topics))
        counts = None if partitions is None else {n: partitions // topics for n in names}
        return Outline("c", (), None, names, counts, ("states", 0, partitions or 0))

    assert outline(1_000, 200_000).worth_drawing(0.0)
    assert outline(LARGE_TOPICS, None).worth_drawing(0.0)  # names known, counts not yet
    assert not outline(10, 100).worth_drawing(0.2) and not outline(10, None).worth_drawing(0.2)
    assert outline(10, 100).worth_drawing(FIRST_CONTENT_SECONDS)  # a slow read of a small cluster
    big = outline(1_000, 200_000)
    assert big.partition_count == 200_000
    assert 0.05 <= big.fraction() < 0.1 and "Reading partition states (0 / 200,000)" == big.progress_text()


def test_the_reader_publishes_the_outline_before_any_state(cluster):
    seen: list[tuple] = []
    with ZkSession.open(cluster) as s:
        tree = ClusterTree()

        def outline(names, counts):
            seen.append((list(names), None if counts is None else dict(counts), len(tree.brokers),
                         tree.controller_broker,
                         sum(1 for v in tree.states.values() for st in v.values() if st is not None)))

        load_tree(s, tree, outline=outline)
    assert [x[0] for x in seen] == [sorted(TOPICS)] * 2
    assert seen[0][1] is None and seen[1][1] == TOPICS  # names first, then partitions per topic
    assert all(x[2] == 3 and x[3] == 2 for x in seen)  # brokers and controller already in the tree
    assert all(x[4] == 0 for x in seen), "no partition state is read before the outline"


def test_pages_draw_the_outline_then_the_full_view(cluster, paused, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"big": {"zk": cluster}})
    started = time.monotonic()
    at = app()
    at.default_timeout = FIRST_RUN_SECONDS
    at.run()
    assert not at.exception, at.exception
    assert time.monotonic() - started < 10
    conn = live_connection("big")
    assert paused.reached.is_set() and conn.phase == Phase.LOADING and conn.snapshot() is None

    # Overview: what is known, and no health
    m = metrics(at)
    assert m["Brokers registered"] == "3"
    assert m["Controller"] == "broker 2"
    assert m["Topics"] == f"{len(TOPICS):,}"
    assert m["Partitions"] == f"{sum(TOPICS.values()):,}"
    for label in HEALTH:
        assert m[label] == "—", label
    assert sum(1 for x in at.metric if x.label in HEALTH and x.delta == "reading…") == len(HEALTH)
    brokers = at.table[0].value
    assert [int(b) for b in brokers["Broker"]] == [1, 2, 3]
    assert dict(zip(brokers["Broker"].astype(int), brokers["Role"]))[2] == "controller"
    sidebar = texts(at.sidebar.markdown)
    assert "Live" not in sidebar and "Reading the cluster" in sidebar
    assert not at.success, "nothing may count a partition healthy before its state is read"
    assert at.get("progress"), "a progress bar of what is still being read"

    # Topics: names and partition counts, health unknown
    at.switch_page("views/topics.py").run()
    assert not at.exception, at.exception
    df = at.dataframe[0].value
    assert list(df["Topic"]) == sorted(TOPICS)
    assert dict(zip(df["Topic"], df["Partitions"])) == TOPICS
    assert set(df["Health"]) == {"reading…"}
    assert "Live" not in texts(at.sidebar.markdown)

    # A page that needs the states: the progress and what is known, nothing else
    at.switch_page("views/brokers.py").run()
    assert not at.exception, at.exception
    assert at.get("progress")
    assert any("Known so far: 3 registered broker(s)" in c.value for c in at.caption)
    assert not at.dataframe and not at.get("plotly_chart")

    # The states come in: the full view follows
    paused.set()
    wait_until(lambda: conn.snapshot() is not None and conn.live.status == "connected", timeout=15,
               message="the full read")
    at.switch_page("views/overview.py").run()
    assert not at.exception, at.exception
    m = metrics(at)
    assert m["Brokers alive"] == "3 / 3" and m["Under-replicated"] == "0" and m["Partitions"] == "33"
    assert "Live" in texts(at.sidebar.markdown)
    assert conn.outline() is None


def test_a_small_cluster_never_shows_an_outline(cluster, tmp_path, monkeypatch):
    """Read whole before its outline is due: the first run draws the full page, as before issue 31."""
    write_config(tmp_path, monkeypatch, {"small": {"zk": cluster}})
    at = app().run()
    assert not at.exception, at.exception
    assert "Brokers alive" in metrics(at) and "Live" in texts(at.sidebar.markdown)
    assert frame.OUTLINE not in at.session_state
