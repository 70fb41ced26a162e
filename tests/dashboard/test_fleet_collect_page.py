"""The Fleet page's "Collect now" and "Imbalance over time" (issue 31, item 3b) through Streamlit's AppTest, with
real ZooKeeper clusters (chroots of the session's server) and one that hangs until its connect timeout.

Collect now reads every keel.toml cluster into the page's store in a background thread: the page shows one line per
cluster as it finishes while the others are still read, then the outcome and the history chart (one line per
cluster). A viewer gets a disabled button and the reason; a store another Keel instance is collecting is refused
with who and when. No Spark: the page draws the history with pandas.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from core.fleet import collect_run
from core.fleet.collect_run import start_collection
from core.fleet.history import load_history
from core.policy import access
from core.policy.config import load_config
from core.zk.session import ZkSession
from dashboard.fleet import collect_panel
from dashboard.text import unescape
from tests.fleet.test_fleet import write_kafka_tree
from tests.fleet.test_fleet_collect import BlackHole
from tests.fleet.test_fleet_history import skewed

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
PAGE, URL_PATH = "fleet/page.py", "fleet"
SLOW_TIMEOUT = 3.0  # the hanging cluster's connect_timeout: the real ones finish well before it


def app() -> AppTest:
    """The Fleet page opened at /fleet (the router routes on the hash of the url_path)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at._page_hash = calc_hash(URL_PATH)
    at.run()
    assert at.switch_page(PAGE)._page_hash == calc_hash(URL_PATH)
    return at


def shown(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "success", "info") for e in at.get(kind)]
    parts += [p.proto.text for p in at.get("progress")]
    return unescape("\n".join(str(p) for p in parts))


@pytest.fixture
def fleet(zk_connect, tmp_path, monkeypatch, store):  # store: the test's audit store (KEEL_STORE), actor ACTOR
    """keel.toml with two real clusters and one that hangs; the page's fleet store and output in tmp_path."""
    hole = BlackHole()
    with ZkSession.open(zk_connect) as root:
        for i, (parts, brokers, crowd) in enumerate([(60, 6, 2), (30, 3, 0)]):
            root.ensure_path(f"/c{i}")
            write_kafka_tree(f"{zk_connect}/c{i}", skewed(f"k{i}", "2026-11-22T03:00:00Z", parts, brokers,
                                                          crowd=crowd))
    path = tmp_path / "keel.toml"

    def config(role: str = "operator") -> Path:
        path.write_text(f'[keel]\nrole = "{role}"\n\n' + "".join(
            f'[clusters.k{i}]\nzk = "{zk_connect}/c{i}"\n\n' for i in (0, 1))
            + f'[clusters.hang]\nzk = "127.0.0.1:{hole.port}"\nconnect_timeout = {SLOW_TIMEOUT}\n')
        return path

    monkeypatch.setenv("KEEL_CONFIG", str(config()))
    monkeypatch.setenv("KEEL_FLEET_STORE", str(tmp_path / "fleet"))
    monkeypatch.setenv("KEEL_FLEET_OUTPUT", str(tmp_path / "out"))
    try:
        yield config
    finally:
        job = collect_panel.current()
        if job is not None:
            job.thread.join(SLOW_TIMEOUT + 30)
        hole.close()


def wait(cond, timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_collect_now_follows_each_cluster_then_draws_the_history(fleet, tmp_path, store):
    at = app()
    assert "No history in this store yet" in shown(at)
    button = at.button(key="fleet_collect")
    assert not button.disabled and not at.exception
    button.click().run()
    job = collect_panel.current()
    assert job is not None and job.run.clusters == ("k0", "k1", "hang")
    # live: the two real clusters are done while the hanging one is still being read
    wait(lambda: len(job.done) == 2, what="the two real clusters")
    assert job.running
    at.run()
    text = shown(at)
    assert "Collecting into" in text and "**2/3** clusters" in text, text
    for name in ("k0", "k1"):
        assert f"{name}: " in text and "partitions" in text
    assert at.button(key="fleet_collect").disabled and at.button(key="fleet_run").disabled  # one at a time
    # a second session sees who is collecting and cannot start another
    other = app()
    assert "A collection started by alice@keel-test at" in shown(other)
    assert other.button(key="fleet_collect").disabled

    wait(lambda: not job.running, timeout=SLOW_TIMEOUT + 30, what="the collection")
    at.run()
    text = shown(at)
    assert "3 clusters: 2 collected, 1 failed (hang)" in text, text
    assert "hang: FAILED: " in text and "could not connect to ZooKeeper" in text
    assert not at.button(key="fleet_collect").disabled
    chart = at.get("plotly_chart")
    assert chart, "no history chart"
    fig = __import__("json").loads(chart[0].proto.spec)
    assert sorted(t["name"] for t in fig["data"]) == ["k0", "k1"]
    assert [len(t["x"]) for t in fig["data"]] == [1, 1]
    # the audit store: one finished run, by the session's actor
    rows = store.actions(kind=collect_run.KIND)
    assert len(rows) == 1 and rows[0].status == "failed" and rows[0].actor == "alice@keel-test"
    assert rows[0].result == "3 clusters: 2 collected, 1 failed (hang)"

    # another click adds one more capture of each cluster: two points per line
    time.sleep(1.1)  # captures are named by their whole second
    at.button(key="fleet_collect").click().run()
    job = collect_panel.current()
    wait(lambda: not job.running, timeout=SLOW_TIMEOUT + 30, what="the second collection")
    at.run()
    fig = __import__("json").loads(at.get("plotly_chart")[0].proto.spec)
    assert [len(t["x"]) for t in fig["data"]] == [2, 2]
    assert load_history(tmp_path / "fleet").scores.groupby("cluster").size().to_dict() == {"k0": 2, "k1": 2}
    # worst first: k0 (two of six brokers empty) leads the legend
    assert fig["data"][0]["name"] == "k0"


def test_viewer_sees_why_and_cannot_collect(fleet, monkeypatch, tmp_path, store):
    monkeypatch.setenv("KEEL_CONFIG", str(fleet("viewer")))
    at = app()
    button = at.button(key="fleet_collect")
    assert button.disabled
    assert "cannot collect the fleet: the role of alice@keel-test on cluster k0 is 'viewer'" in shown(at)
    # a click the page let through (a role taken away after it was drawn) is refused by the engine, and recorded
    monkeypatch.setenv("KEEL_CONFIG", str(fleet("operator")))
    at = app()
    monkeypatch.setenv("KEEL_CONFIG", str(fleet("viewer")))
    at.button(key="fleet_collect").click().run()
    assert "cannot collect the fleet" in "\n".join(unescape(e.value) for e in at.error)
    assert collect_panel.current() is None and not (tmp_path / "fleet" / "replicas").exists()
    assert [a.target for a in store.actions("k0", kind="refused")] == ["collect the fleet"]


def test_a_store_another_instance_collects_is_refused_with_who_and_when(fleet, tmp_path, store):
    cfg = load_config(str(fleet()))
    held = start_collection(access.local_identity("bob"), cfg, tmp_path / "fleet", audit=store)
    try:
        at = app()
        at.button(key="fleet_collect").click().run()
        errors = "\n".join(unescape(e.value) for e in at.error)
        assert f"a collection of {tmp_path / 'fleet'} started by bob at {held.started_at[:10]}" in errors, errors
        assert collect_panel.current() is None
    finally:
        held.abandon("test")
    at.button(key="fleet_collect").click().run()  # free again
    job = collect_panel.current()
    assert job is not None
    wait(lambda: not job.running, timeout=SLOW_TIMEOUT + 30, what="the collection")


def test_the_drawn_clusters_follow_the_history_until_the_person_picks(fleet, tmp_path):
    from core.fleet.export import export_snapshot

    store = tmp_path / "fleet"
    export_snapshot(skewed("a", "2026-11-22T03:00:00Z", 30, 3), store, history=True)
    at = app()
    assert at.multiselect(key="fleet_history_clusters").value == ["a"]
    export_snapshot(skewed("b", "2026-11-22T03:00:00Z", 30, 4, crowd=1), store, history=True)  # b is worse
    at.run()
    assert at.multiselect(key="fleet_history_clusters").value == ["b", "a"]  # untouched: follows, worst first
    at.multiselect(key="fleet_history_clusters").set_value(["a"]).run()
    export_snapshot(skewed("c", "2026-11-22T03:00:00Z", 30, 3), store, history=True)
    at.run()
    assert at.multiselect(key="fleet_history_clusters").value == ["a"]  # the person's choice stays
    at.selectbox(key="fleet_history_metric").set_value("alive_brokers").run()
    fig = __import__("json").loads(at.get("plotly_chart")[0].proto.spec)
    assert [t["name"] for t in fig["data"]] == ["a"] and fig["layout"]["yaxis"]["title"]["text"] == "alive_brokers"
