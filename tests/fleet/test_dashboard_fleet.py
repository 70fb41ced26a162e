"""The Fleet page through Streamlit's AppTest, with a real local Spark (the test session's shared SparkSession).

One tiny synthetic fleet is ranked once, from the page (module fixture `ranked`); the other tests read that output
(reading never starts Spark) or fail before Spark does any work. The page runs under the router, which needs a
Keel config: its clusters point at a closed port with a short connect timeout, so they fail fast and the Fleet
page (which needs no cluster connection) is drawn below the failure. KEEL_FLEET_MASTER=local[2] makes the page
reuse the shared session instead of starting its own.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from core.fleet import spark as fleet_spark
from core.fleet.generate import FleetSpec, generate_fleet
from core.fleet.outputs import read_broker_metrics, read_cluster_scores, read_manifest, read_topic_broker
from core.fleet.schema import check_store
from core.fleet.errors import FleetInputError
from dashboard import frame
from dashboard.fleet import charts as fleet_charts
from dashboard.fleet import job as fleet_job
from dashboard.text import unescape
from tests.support.spark_helpers import LOCAL_MASTER, free_port

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
PAGE = "fleet/page.py"
URL_PATH = "fleet"  # the st.Page url_path the router gives it
RUN_TIMEOUT = 240  # one AppTest run that waits for a Spark job (a cold JVM on a 2-core machine is slow)
TINY = FleetSpec(clusters=4, seed=5, partitions_total=1_200, max_partitions=600, min_brokers=3, max_brokers=12)
RANKING = ["rank", "cluster", "imbalance_score", "brokers", "partitions", "replica_cv", "leader_cv",
           "under_replicated", "offline", "rack_violations", "brokers_over_leader_threshold"]
OTHER = "elsewhere"  # a configured cluster that is not in the fleet (the router's default: listed first)


@dataclass
class Ranked:
    store: Path
    out: Path
    configured: str  # a fleet cluster that is also in the Keel config
    seconds: float
    at: AppTest


def write_config(path: Path, clusters: list[str]) -> Path:
    port = free_port()  # nothing listens there: the router's connect fails within connect_timeout
    body = ['[keel]', 'role = "viewer"', ""]
    for name in clusters:
        body += [f"[clusters.{name}]", f'zk = "127.0.0.1:{port}/none"', "connect_timeout = 0.5", ""]
    path.write_text("\n".join(body))
    return path


def app() -> AppTest:
    """The Fleet page opened directly, as a browser at /fleet opens it: not through the Overview, whose cluster may
    be slow to connect. AppTest maps a page file to its st.Page url_path only after a first run, so the first run
    asks for the page by the hash of its url_path (what Streamlit routes on), checked against the file afterwards."""
    at = AppTest.from_file(APP, default_timeout=RUN_TIMEOUT)
    at._page_hash = calc_hash(URL_PATH)
    at.run()
    assert at.switch_page(PAGE)._page_hash == calc_hash(URL_PATH), "the router's url_path of the Fleet page"
    return at


def errors(at: AppTest) -> str:
    return "\n".join(unescape(str(e.value)) for e in at.error)  # messages are escaped for markdown


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def figure(at: AppTest, key: str) -> dict:
    """The plotly figure (JSON) of the chart whose key is `key`."""
    for el in at.get("plotly_chart"):
        if key in el.proto.id:
            return json.loads(el.proto.spec)
    raise AssertionError(f"no plotly chart {key!r}; have {[el.proto.id for el in at.get('plotly_chart')]}")


def fill(at: AppTest, store=None, output=None, master=None) -> AppTest:
    for key, value in (("fleet_store_input", store), ("fleet_output_input", output), ("fleet_master_input", master)):
        if value is not None:
            at.text_input(key=key).input(str(value))
    return at.run()


@pytest.fixture(autouse=True)
def fresh_resources():
    st.cache_resource.clear()  # the router's connections and the page's job slot
    yield
    st.cache_resource.clear()



def run_job(at: AppTest, timeout: float = 240) -> AppTest:
    """Click Run job and wait for the job: the page does not hold its script run while it runs (the live ticker
    would end that run); a fragment redraws the progress and then the whole page, as the next run here does."""
    at.button(key="fleet_run").click().run()
    job = fleet_job.current_job()
    assert job is None or not job.running or at.get("progress"), "no progress drawn while the job runs"
    started = time.monotonic()
    while job is not None and job.running:
        assert time.monotonic() - started < timeout, "the fleet job did not finish"
        time.sleep(0.2)
    return at.run()

@pytest.fixture(scope="module")
def ranked(spark, tmp_path_factory) -> Ranked:  # spark: tests/fleet/conftest.py's shared SparkSession
    base = tmp_path_factory.mktemp("fleet-page")
    store, out = base / "store", base / "out"
    generated = generate_fleet(TINY, store)
    configured = sorted(c.name for c in generated.clusters)[1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KEEL_CONFIG", str(write_config(base / "keel.toml", [OTHER, configured])))
        mp.setenv("KEEL_FLEET_STORE", str(store))
        mp.setenv("KEEL_FLEET_OUTPUT", str(out))
        mp.setenv("KEEL_FLEET_MASTER", LOCAL_MASTER)  # get_session reuses the shared local[2] session
        st.cache_resource.clear()
        at = app()
        assert not at.exception, at.exception
        assert "No results" in texts(at.info)
        assert not at.button(key="fleet_run").disabled
        started = time.monotonic()
        run_job(at)
        seconds = time.monotonic() - started
        assert not at.exception, at.exception
        assert not at.error, errors(at)
        yield Ranked(store, out, configured, seconds, at)
        st.cache_resource.clear()


# --- a run from the page ---------------------------------------------------------------------------


def test_run_job_ranks_the_fleet(ranked):
    at = ranked.at
    manifest = read_manifest(ranked.out)
    assert manifest["clusters"] == TINY.clusters and manifest["master"] == LOCAL_MASTER
    assert Path(manifest["input"]) == ranked.store.resolve()
    assert f"Ranked {TINY.clusters} clusters" in texts(at.success) and f"on `{LOCAL_MASTER}`" in texts(at.success)
    assert not at.button(key="fleet_run").disabled  # the job is over: Run is back

    expected = read_cluster_scores(ranked.out)[RANKING]
    table = at.dataframe(key="fleet_table").value
    assert list(table.columns) == RANKING
    pd.testing.assert_frame_equal(table.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)
    assert list(table["rank"]) == list(range(1, TINY.clusters + 1))
    assert "**imbalance_score** = 100 × (0.3·replica CV + 0.3·leader CV" in texts(at.markdown)
    assert "Rank 1 needs attention most" in texts(at.markdown)


def test_heatmaps_match_the_output(ranked):
    at = ranked.at
    scores = read_cluster_scores(ranked.out)
    top = scores["cluster"].iloc[0]
    bm = read_broker_metrics(ranked.out, top)

    # clusters x brokers: one row per cluster by rank, one column per broker index (no cluster is wide here)
    heat = figure(at, "fleet_heatmap")["data"][0]
    assert heat["type"] == "heatmap"
    z = heat["z"]
    assert len(z) == len(heat["y"]) <= fleet_charts.MAX_ROWS and all(len(r) <= fleet_charts.MAX_COLS for r in z)
    assert heat["y"] == [f"#{r} {c}" for r, c in zip(scores["rank"], scores["cluster"])]
    widest = read_broker_metrics(ranked.out).groupby("cluster").size().max()
    assert len(heat["x"]) == widest <= fleet_charts.MAX_COLS
    expected = bm.sort_values("broker")["replica_dev"].tolist()
    row = z[0]
    assert row[len(expected):] == [None] * (len(row) - len(expected))
    assert np.allclose([math.nan if v is None else v for v in row[: len(expected)]], expected, equal_nan=True)
    assert f"broker {bm['broker'].iloc[0]}" in heat["text"][0][0]

    # the chosen cluster defaults to rank 1
    assert at.selectbox(key="fleet_cluster").value == top

    # topics x brokers of rank 1: replicas above / below an even spread over the alive brokers
    topic = figure(at, "fleet_topic_heatmap")["data"][0]
    tb = read_topic_broker(ranked.out, top)
    ids = bm.sort_values("broker")["broker"].tolist()
    alive = dict(zip(bm["broker"], bm["alive"]))
    n_alive = sum(alive.values())
    assert len(topic["x"]) == len(ids)
    assert len(topic["y"]) <= fleet_charts.TOP_TOPICS + 1
    excess_by_topic = {}
    for name, g in tb.groupby("topic"):
        count = dict(zip(g["broker"], g["replicas"]))
        total = sum(count.values())
        lo, hi = total // n_alive, -(-total // n_alive)
        row = []
        for b in ids:
            c = count.get(b, 0)
            row.append(c if not alive[b] else (c - hi if c > hi else c - lo if c < lo else 0))
        excess_by_topic[name] = row
    shown = [y for y in topic["y"] if not y.startswith("other ")]
    for i, name in enumerate(shown):
        assert topic["z"][i] == excess_by_topic[name], name
    above = {t: sum(v for v in row if v > 0) for t, row in excess_by_topic.items()}
    assert [above[t] for t in shown] == sorted(above.values(), reverse=True)[: len(shown)]
    if len(topic["y"]) > len(shown):  # the rest, summed
        rest = [t for t in excess_by_topic if t not in shown]
        assert topic["y"][-1] == f"other {len(rest):,} topics"
        assert topic["z"][-1] == [sum(excess_by_topic[t][j] for t in rest) for j in range(len(ids))]

    # racks x brokers of rank 1: every broker once, its replica count
    rack = figure(at, "fleet_rack_heatmap")["data"][0]
    cells = sorted(v for r in rack["z"] for v in r if v is not None)
    assert cells == sorted(bm["replicas"].astype(float))
    assert len(rack["y"]) == bm["rack"].fillna(fleet_charts.NO_RACK).nunique()


def test_choosing_a_cluster_redraws_its_heatmaps(ranked):
    scores = read_cluster_scores(ranked.out)
    last = scores["cluster"].iloc[-1]
    at = app()
    assert not at.exception, at.exception
    at.selectbox(key="fleet_cluster").set_value(last).run()
    assert not at.exception, at.exception
    m = {x.label: x.value for x in at.metric}
    assert m["Rank"] == f"{TINY.clusters} of {TINY.clusters}"
    rack = figure(at, "fleet_rack_heatmap")["data"][0]
    bm = read_broker_metrics(ranked.out, last)
    assert sorted(v for r in rack["z"] for v in r if v is not None) == sorted(bm["replicas"].astype(float))


def test_open_a_configured_cluster_in_overview(ranked):
    at = app()
    assert at.session_state[frame.CLUSTER_KEY] == OTHER  # the router's default
    fleet_only = next(c for c in read_cluster_scores(ranked.out)["cluster"] if c != ranked.configured)
    at.selectbox(key="fleet_cluster").set_value(fleet_only).run()
    assert not _has_button(at, "fleet_open_overview")
    assert f"[clusters.{fleet_only}]" in texts(at.caption)  # not configured: says how to add it

    at.selectbox(key="fleet_cluster").set_value(ranked.configured).run()
    button = at.button(key="fleet_open_overview")
    assert button.label == f"Open {ranked.configured} in Overview"
    button.click().run()
    assert not at.exception, at.exception
    assert at.session_state[frame.CLUSTER_KEY] == ranked.configured
    assert at.sidebar.selectbox[0].value == ranked.configured
    assert at.title[0].value == ranked.configured  # the Overview's title is the selected cluster
    assert not _has_button(at, "fleet_run")  # we left the Fleet page


def _has_button(at: AppTest, key: str) -> bool:
    try:
        at.button(key=key)
        return True
    except KeyError:
        return False


def test_the_page_needs_no_cluster_and_survives_a_broken_config(ranked, monkeypatch, tmp_path):
    # a cluster whose connect would take 30 s: the Fleet page does not wait for it
    slow = tmp_path / "slow.toml"
    slow.write_text(f'[clusters.far]\nzk = "127.0.0.1:{free_port()}/none"\nconnect_timeout = 30\n')
    monkeypatch.setenv("KEEL_CONFIG", str(slow))
    started = time.monotonic()
    at = app()
    assert time.monotonic() - started < 20
    assert not at.exception, at.exception
    assert at.dataframe(key="fleet_table").value["rank"].tolist() == list(range(1, TINY.clusters + 1))

    # a config Keel cannot read: the error is shown and the fleet is still drawn
    broken = tmp_path / "broken.toml"
    broken.write_text("[clusters.x\n")
    monkeypatch.setenv("KEEL_CONFIG", str(broken))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = app()
    assert not at.exception, at.exception
    assert str(broken) in errors(at)
    assert at.dataframe(key="fleet_table").value["rank"].tolist() == list(range(1, TINY.clusters + 1))
    assert "not in the Keel config" in texts(at.caption)


def test_the_job_slot_runs_one_job_and_cancel_writes_nothing(tmp_path):
    out = tmp_path / "out"
    job = fleet_job.start_job(str(tmp_path / "no-store"), str(out), LOCAL_MASTER)
    job.thread.join(60)
    assert isinstance(job.error, FleetInputError) and not job.running and fleet_job.current_job() is job
    assert not out.exists()

    again = fleet_job.FleetJob(str(tmp_path / "no-store"), str(out), LOCAL_MASTER)
    again.cancel.set()  # cancelled before it starts: it never reads the input
    again.start()
    again.thread.join(60)
    assert isinstance(again.error, fleet_job.Cancelled) and not out.exists()

    slot = fleet_job._slot()
    with slot["lock"]:
        slot["job"] = busy = fleet_job.FleetJob("s", "o", LOCAL_MASTER)  # never started: running
    assert fleet_job.start_job(str(tmp_path), str(out), LOCAL_MASTER) is None
    assert fleet_job.current_job() is busy


# --- failures: typed errors, nothing written -------------------------------------------------------


def test_missing_store_says_so_writes_nothing_and_offers_a_demo(ranked, tmp_path):
    at = app()
    missing, out = tmp_path / "no-store", tmp_path / "out"
    fill(at, store=missing, output=out)
    assert not at.exception, at.exception
    assert f"No fleet store at `{missing}` yet" in texts(at.info)
    assert "python -m core fleet collect --config keel.toml --out DIR" in texts(at.info)
    assert "No results" in texts(at.info)

    run_job(at)
    assert not at.exception, at.exception
    assert f"fleet store {missing} does not exist" in errors(at)
    assert f"Nothing was written to `{out}`" in errors(at)
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())

    # the demo fleet: generated into the store directory, which the page then describes
    at.button(key="fleet_generate").click().run()
    assert not at.exception, at.exception
    assert "Generated 12 clusters" in texts(at.success)
    assert "Store `" in texts(at.caption) and "12 clusters" in texts(at.caption)
    assert not _has_button(at, "fleet_generate")
    assert sorted(p.name for p in (missing / "brokers").iterdir()) == sorted(
        f"cluster={c}" for c in check_store(missing).clusters)
    assert len(check_store(missing).clusters) == 12


def test_wrong_schema_is_refused(ranked, tmp_path):
    bad = tmp_path / "bad"
    (bad / "replicas" / "cluster=x").mkdir(parents=True)
    (bad / "brokers" / "cluster=x").mkdir(parents=True)
    pd.DataFrame({"broker": [1]}).to_parquet(bad / "brokers" / "cluster=x" / "part-0.parquet")
    pd.DataFrame({"topic": ["t"]}).to_parquet(bad / "replicas" / "cluster=x" / "part-0.parquet")
    out = tmp_path / "out"
    at = fill(app(), store=bad, output=out)
    run_job(at)
    assert not at.exception, at.exception
    assert "Wrong schema in the fleet store" in errors(at) and "missing column" in errors(at)
    assert not out.exists()


def test_unreachable_master_is_a_clear_error_within_seconds(ranked, tmp_path):
    out = tmp_path / "out"
    master = f"spark://127.0.0.1:{free_port()}"  # nothing listens there
    at = fill(app(), output=out, master=master)
    started = time.monotonic()
    run_job(at)
    took = time.monotonic() - started
    assert not at.exception, at.exception
    assert "Spark master unreachable" in errors(at)
    assert f"cannot reach the Spark master at {master}" in errors(at)
    assert took < fleet_spark.MASTER_CONNECT_TIMEOUT + 10
    assert not out.exists()
    # the results of the earlier run are not these: the page says there are none in this output
    assert "No results" in texts(at.info)


def test_missing_java_disables_run(ranked, monkeypatch, tmp_path):
    monkeypatch.setattr(fleet_spark, "_java_checked", None)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    at = app()
    assert not at.exception, at.exception
    assert "Java is missing" in errors(at) and "has no bin/java" in errors(at)
    assert at.button(key="fleet_run").disabled


# --- the grids: bounded whatever the fleet ---------------------------------------------------------------


def synthetic_metrics(clusters: int, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, scores = [], []
    for i in range(clusters):
        n = int(rng.integers(3, 301))
        reps = rng.integers(0, 1000, n)
        dev = reps / reps.mean() - 1
        for b in range(n):
            rows.append({"cluster": f"c{i:03d}", "broker": 1000 + b, "rack": f"r{b % 3}", "alive": True,
                         "replicas": int(reps[b]), "leaders": int(reps[b] // 3), "replica_dev": float(dev[b])})
        scores.append({"cluster": f"c{i:03d}", "rank": i + 1})
    return pd.DataFrame(scores), pd.DataFrame(rows)


def test_cluster_grid_is_bounded_and_keeps_the_extremes():
    scores, metrics = synthetic_metrics(120)
    grid = fleet_charts.cluster_broker_grid(scores, metrics, start=40)
    rows, cols = grid.shape
    assert rows == fleet_charts.MAX_ROWS and cols <= fleet_charts.MAX_COLS
    assert grid.y[0] == "#41 c040" and "ranks 41–80 of 120 clusters" in grid.note
    widest = metrics[metrics["cluster"].isin([f"c{i:03d}" for i in range(40, 80)])].groupby("cluster").size().max()
    assert grid.bin_size == math.ceil(widest / fleet_charts.MAX_COLS) > 1
    # every cell is the most extreme replica_dev of its bin of brokers
    for i, name in enumerate(f"c{k:03d}" for k in range(40, 80)):
        dev = metrics[metrics["cluster"] == name].sort_values("broker")["replica_dev"].to_numpy()
        for j in range(cols):
            chunk = dev[j * grid.bin_size:(j + 1) * grid.bin_size]
            assert grid.z[i][j] == (None if chunk.size == 0 else chunk[np.argmax(np.abs(chunk))])
    fig = fleet_charts.cluster_broker_heatmap(grid)
    assert np.array(fig.data[0].z, dtype=float).shape == (rows, cols)


def test_topic_grid_is_bounded_and_sums_the_rest():
    rng = np.random.default_rng(3)
    brokers = pd.DataFrame({"broker": range(250), "alive": [b != 7 for b in range(250)],
                            "rack": [f"r{b % 4}" for b in range(250)], "replicas": 0, "leaders": 0})
    rows = []
    for t in range(400):
        for b in rng.choice(250, size=int(rng.integers(1, 60)), replace=False):
            rows.append({"topic": f"t{t:03d}", "broker": int(b), "replicas": int(rng.integers(1, 20)), "leaders": 0})
    tb = pd.DataFrame(rows)
    grid = fleet_charts.topic_broker_grid(tb, brokers)
    assert grid.shape == (fleet_charts.TOP_TOPICS + 1, 84)  # 250 brokers in bins of 3
    assert grid.y[-1] == f"other {400 - fleet_charts.TOP_TOPICS} topics" and grid.rows_total == 400
    unbinned = fleet_charts.topic_broker_grid(tb, brokers, max_cols=250)
    pivot = tb.pivot_table(index="topic", columns="broker", values="replicas", aggfunc="sum", fill_value=0)
    pivot = pivot.reindex(columns=range(250), fill_value=0)
    excess = fleet_charts.topic_excess(pivot.to_numpy(), brokers["alive"].to_numpy())
    rest = [i for i, t in enumerate(pivot.index) if t not in unbinned.y]
    assert np.allclose(unbinned.z[-1], excess[rest].sum(axis=0))
    assert "(down)" in unbinned.x[7]


def test_rack_grid():
    metrics = pd.DataFrame({"broker": [5, 1, 2, 3, 4], "rack": ["b", "a", "a", None, "b"],
                            "alive": [True, True, False, True, True], "replicas": [10, 20, 30, 0, 40],
                            "leaders": [1, 2, 3, 0, 4]})
    grid = fleet_charts.rack_broker_grid(metrics)
    assert grid.y == ["a (2)", "b (2)", "no rack (1)"]
    assert grid.z == [[20.0, 30.0], [40.0, 10.0], [0.0, None]]
    assert "broker 2 (down)" in grid.text[0][1]
