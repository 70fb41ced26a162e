"""Issue 16 through Streamlit's AppTest (and the engine and CLI behind the pages): the console as an SRE uses it.

Each test names the defect it covers. The demo cluster (`make run`'s shape: one broker down holding partitions whose
only in-sync copy is on it, one empty broker) runs in a real ZooKeeper with the controller emulator. What only a
browser shows (cell texts as plotly.js draws them, layout at 900 px, typing without Enter) is in
tests/e2e/test_e2e_layout.py.
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.balance import STRATEGIES, PlanRequest
from core.cli import main
from core.errors import RiskNotAcceptedError
from core.plans import ReassignmentEntry, ReassignmentPlan
from sandbox.seed import SandboxSpec
from core.topics import TOPIC_CONFIGS
from core.zk import reassign_writes
from core.zk.session import ZkSession
from dashboard import charts
from dashboard.reassign import plan_view
from tests.support.kafka_tree import dump_tree
from tests.support.sandbox_helpers import Sandbox, running_sandbox, wait_until
from tests.dashboard.test_dashboard_actions import by_prefix, errors, ok, open_page  # noqa: F401
from tests.dashboard.test_dashboard_apptest import app, live_connection, texts  # noqa: F401

REASSIGN = "reassign/page.py"
DEMO = SandboxSpec(demo=True)  # `make run`'s cluster: 9 brokers, 3 racks, 30 topics, one down, one empty


@pytest.fixture
def demo(zk_connect) -> Sandbox:
    with running_sandbox(zk_connect, DEMO) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


def figure(chart) -> dict:
    return json.loads(chart.proto.spec)


def assert_cells_print_their_own_numbers(fig: dict, *, signed: bool = False) -> int:
    """Every heatmap cell's text is the number of its own (row, column), and plotly draws the rows in trace order
    (no category array that re-sorts rows while the texts stay put: the mirror-row defect). Returns the cells."""
    cells = 0
    for key in ("yaxis", "yaxis2"):
        axis = fig["layout"].get(key)
        if axis is not None:
            assert axis.get("categoryorder", "trace") == "trace" and "categoryarray" not in axis, axis
    for trace in (t for t in fig["data"] if t["type"] == "heatmap"):
        assert trace.get("texttemplate") == "%{text}", trace.get("texttemplate")
        for r, row in enumerate(trace["z"]):
            for c, value in enumerate(row):
                shown = trace["text"][r][c]
                expected = (f"+{value:,}" if value > 0 else f"{value:,}") if signed else f"{value:,}"
                assert shown == expected, (trace["y"][r], trace["x"][c], shown, value)
                cells += 1
    return cells


# --- 1. heatmaps print the numbers of their own cells --------------------------------------------------------


def test_heatmap_cells_print_their_own_numbers_chart_functions():
    """Issue 16, defect 1: the top row printed the "other" row's numbers (plotly.js places texts by trace row while
    the rows were re-sorted by a category array). Rows are now drawn in trace order, top down, each cell with its
    own text; and the change view prints +N where a broker gains and -N where it loses."""
    topics = ["big", "mid", "other (3 topics)"]
    before = [[29, 14, 0], [4, 4, 0], [3, 4, 7]]
    after = [[22, 14, 7], [4, 3, 1], [3, 4, 7]]
    figs = charts.replica_heatmaps([1, 2, 3], [True, False, True], topics, before, after, marks={3: "empty"})
    for fig in figs:  # before, after: one figure each (issue 24: side by side where they fit)
        spec = json.loads(fig.to_json())
        assert assert_cells_print_their_own_numbers(spec) == 9
        assert spec["layout"]["yaxis"]["autorange"] == "reversed"  # the first topic on top
    # one colour scale: a shade means the same count in both; drawn once, beside the second
    scales = [json.loads(f.to_json())["layout"]["coloraxis"] for f in figs]
    assert [(s["cmin"], s["cmax"]) for s in scales] == [(0, 29), (0, 29)]
    assert [s["showscale"] for s in scales] == [False, True]
    change = json.loads(charts.replica_change_heatmap([1, 2, 3], [True, False, True], topics, before, after).to_json())
    assert assert_cells_print_their_own_numbers(change, signed=True) == 9
    assert change["data"][0]["text"][0] == ["-7", "0", "+7"]


def test_reassign_page_heatmaps_print_their_own_numbers(demo, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, REASSIGN)
    at.radio(key="goal").set_value(plan_view.GOAL_FILL).run()
    ok(at)
    heats = [c for c in at.get("plotly_chart") if c.key in ("ra_heatmap", "ra_heatmap_after")]
    assert len(heats) == 2 and all(assert_cells_print_their_own_numbers(figure(h)) > 0 for h in heats)
    at.session_state["view"] = "Change"
    [change] = [c for c in at.run().get("plotly_chart") if c.key == "ra_change_heatmap"]
    assert assert_cells_print_their_own_numbers(figure(change), signed=True) > 0


# --- 2. a plan that can finish ---------------------------------------------------------------------------------


def test_fill_new_brokers_leaves_the_down_brokers_replicas_alone(demo, zk_connect, tmp_path, monkeypatch, store):
    """Issue 16, defect 2: with a broker down, "Fill new brokers" moved every replica off it too (and the run never
    finished). The goal moves only what it names; the page says the down broker keeps its replicas and how to move
    them (Drain brokers)."""
    down, empty = demo.seed.down[0], demo.seed.empty[0]
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, REASSIGN)
    at.radio(key="goal").set_value(plan_view.GOAL_FILL).run()
    ok(at)
    snap = live_connection("demo").snapshot()
    on_down = [p for p in snap.partitions() if down in p.replicas]
    assert on_down
    assert f"Down broker(s) {down} keep their replicas" in texts(at.info)
    assert f"partition(s) with a replica on down broker(s) {down} are left as they are" in texts(at.warning)
    diff = next(t.value for t in at.dataframe if "Added" in t.value.columns)
    assert len(diff) > 0
    keys = set(zip(diff["Topic"], diff["Partition"].astype(int)))
    assert not keys & {(p.topic, p.partition) for p in on_down}  # no partition of the down broker is touched
    assert any(str(empty) in a.split(", ") for a in diff["Added"])  # the empty broker is filled
    expected = STRATEGIES["balanced"](snap, PlanRequest())
    assert {m.label: m.value for m in at.metric}["Replicas moved"] == f"{expected.report.replicas_moved:,}"
    assert not [e for e in texts(at.error).splitlines() if "may never finish" in e]  # nothing risky in this plan


def test_a_plan_with_no_live_in_sync_replica_needs_that_risk_confirmed(demo, zk_connect, tmp_path, monkeypatch,
                                                                       store, capsys):
    """Issue 16, defect 2: draining the down broker touches partitions whose only in-sync copy is on it: the page
    says so before Execute and refuses until that exact risk is ticked; the engine and the CLI refuse it unless the
    risk is accepted; once running, the panel says per partition why it cannot finish and what to do."""
    from core.plans import plan_risks

    down = demo.seed.down[0]
    snap = demo.snapshot()
    no_live = [p for p in snap.partitions() if down in p.replicas and not set(p.isr) & snap.alive_broker_ids]
    assert no_live, "the demo has partitions whose only in-sync replica is on the down broker"

    # the engine: refused before anything is written, unless the exact risk is accepted
    plan = STRATEGIES["balanced"](snap, PlanRequest(drain_brokers=(down,))).plan
    risks = plan_risks(plan, snap)
    assert len(risks) == 1 and f"{len(no_live)} partition(s) have no live in-sync replica" in risks[0]
    before = dump_tree(demo.session)
    with ZkSession.open(zk_connect) as s, pytest.raises(RiskNotAcceptedError) as refused:
        reassign_writes.execute(s, store, plan, cluster="demo")
    assert refused.value.risks == tuple(risks)
    with ZkSession.open(zk_connect) as s, pytest.raises(RiskNotAcceptedError):
        reassign_writes.execute(s, store, plan, cluster="demo", accept_risks=["some other risk"])
    # the CLI: shows the risk and refuses without --accept-risk
    path = tmp_path / "drain.json"
    path.write_text(plan.to_json())
    code = main(["execute", "--zk", zk_connect, "--reassignment-json-file", str(path), "--store", str(store.path)])
    _, err = capsys.readouterr()
    assert code == 1 and "warning: " + risks[0] in err and "--accept-risk" in err and "Traceback" not in err
    assert dump_tree(demo.session) == before and store.actions() == []

    # the page: the risk before Execute, Execute disabled until it is ticked
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, REASSIGN)
    at.radio(key="goal").set_value(plan_view.GOAL_DRAIN).run()
    at.multiselect(key="drain").set_value([down]).run()
    ok(at)
    assert "This plan may never finish." in texts(at.error) and "no live in-sync replica" in texts(at.error)
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    assert at.button(key="ra_execute").disabled  # the risk is not confirmed yet
    risk_box = by_prefix(at.checkbox, "ra_risk_")
    assert "no live in-sync replica" in risk_box.label
    risk_box.check().run()
    assert not at.button(key="ra_execute").disabled
    at.button(key="ra_execute").click().run()
    ok(at)
    assert not [e for e in texts(at.error).splitlines() if "refused" in e]
    [action] = store.actions("demo")
    assert json.loads(action.payload["plan"]) == json.loads(plan.to_json())

    # running: the stuck partitions say why and what to do
    def stuck_shown(a) -> bool:
        a.run()
        return "cannot finish" in texts(a.error)
    wait_until(lambda: stuck_shown(at), timeout=20, interval=0.3, message="the stuck partitions to be explained")
    assert "no live source" in texts(at.error) and f"Start broker(s) {down}" in texts(at.error)
    why = next(t.value for t in at.dataframe if "What to do" in t.value.columns)
    stuck = {(r["Topic"], int(r["Partition"])) for _, r in why.iterrows() if r["Why"] == "no live source"}
    assert stuck == {(p.topic, p.partition) for p in no_live}
    assert f"Action #{action.id}: Reassignment" in [h.value for h in at.subheader]


def test_cli_plan_names_the_risk_and_execute_with_accept_risk_writes_the_plan(demo, zk_connect, tmp_path, store,
                                                                           capsys):
    down = demo.seed.down[0]
    path = tmp_path / "drain.json"
    code = main(["plan", "--zk", zk_connect, "--exclude-brokers", str(down), "--output", str(path)])
    _, err = capsys.readouterr()
    assert code == 0 and "risk: " in err and "no live in-sync replica" in err and "--accept-risk" in err
    plan_text = path.read_text()
    assert str(down) not in {str(b) for e in json.loads(plan_text)["partitions"] for b in e["replicas"]}
    code = main(["execute", "--zk", zk_connect, "--reassignment-json-file", str(path), "--store", str(store.path),
                 "--accept-risk"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "(accepted with --accept-risk)" in err and "Successfully started reassignment" in out
    assert demo.session.exists(zf.REASSIGN)


# --- 5. one run panel, messages scoped to what they are about ---------------------------------------------------


def test_one_run_panel_labelled_with_its_action_and_messages_that_go_away(demo, zk_connect, tmp_path, monkeypatch,
                                                                         store):
    """Issue 16, defect 5: "Reassignment started … (action #5)" stayed after Verify, rollback and a goal change, and a
    new plan's Execute sat above the old run's panel. One panel, headed by its action number; the Execute message
    lives in it until Verify or a goal change; no Execute for a new plan while the run is not finished."""
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, REASSIGN)
    at.radio(key="goal").set_value(plan_view.GOAL_FILL).run()
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    at.button(key="ra_execute").click().run()
    ok(at)
    [action] = store.actions("demo")
    assert f"Action #{action.id}: Reassignment" in [h.value for h in at.subheader]
    assert "Reassignment started" in texts(at.success)
    # while it runs: no Execute of another plan (Kafka refuses it anyway), said plainly
    at.radio(key="goal").set_value(plan_view.GOAL_REBALANCE).run()
    ok(at)
    assert "Reassignment started" not in texts(at.success)  # the goal changed: the message about it went
    subheads = [h.value for h in at.subheader]
    assert subheads.count(f"Action #{action.id}: Reassignment") == 1
    if not [b for b in at.button if b.key == "ra_execute"]:  # running, or nothing left to move
        assert (f"Execute is offered once action #{action.id} above has finished" in texts(at.caption)
                or "Nothing to move" in texts(at.success) + texts(at.info))
    else:  # it already finished: the run panel comes first, then the new plan's Execute
        assert subheads.index(f"Action #{action.id}: Reassignment") < subheads.index("Execute this plan")

    def complete(a) -> bool:
        a.run()
        return "Complete:" in texts(a.success) or "Complete and verified" in texts(a.success)
    wait_until(lambda: complete(at), timeout=30, interval=0.3, message="the run to complete")
    at.button(key="ra_verify").click().run()
    ok(at)
    assert "Verified: all" in texts(at.success) and "Reassignment started" not in texts(at.success)
    subheads = [h.value for h in at.subheader]
    assert subheads.count(f"Action #{action.id}: Reassignment") == 1
    if "Execute this plan" in subheads:
        assert subheads.index(f"Action #{action.id}: Reassignment") < subheads.index("Execute this plan")


# --- 9. Leaders and Brokers ----------------------------------------------------------------------------------


def test_leaders_election_keeps_the_topic_and_shows_its_outcome_first(demo, zk_connect, tmp_path, monkeypatch,
                                                                      store):
    """Issue 16, defect 9: after an election the topic picker reset, and "Nothing to elect" sat above the success of
    the election just run."""
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/leaders.py")
    snap = live_connection("demo").snapshot()
    from core import elections

    cands = elections.candidates(snap)
    by_topic = {}
    for c in cands:
        by_topic.setdefault(c.topic, []).append(c)
    # a topic with partitions to elect and others the controller cannot move (preferred replica down)
    topic = next((t for t, cs in by_topic.items() if any(c.eligible for c in cs) and not all(c.eligible for c in cs)),
                 None) or next(t for t, cs in by_topic.items() if any(c.eligible for c in cs))
    at.radio(key="scope").set_value("One topic").run()
    at.selectbox(key="topic").select(topic).run()
    ok(at)
    labels = at.selectbox(key="topic").options
    by_prefix(at.checkbox, "ld_confirm_").check().run()
    at.button(key="ld_elect").click().run()
    ok(at)
    wait_until(lambda: "Done:" in texts(at.run().success) + texts(at.warning), timeout=20, interval=0.3,
               message="the election to be done")
    assert at.selectbox(key="topic").value == topic  # kept
    assert at.selectbox(key="topic").options == labels  # stable: no live counts in the labels
    assert not [w for w in texts(at.warning).splitlines() if w.startswith("Nothing to elect")]
    assert "Election written" in texts(at.success)


def test_a_down_broker_is_not_over_threshold_and_an_empty_broker_shows_0(demo, zk_connect, tmp_path, monkeypatch):
    """Issue 16, defect 9: a down broker was flagged "over threshold" with advice to run an election that can move
    nothing; an empty broker showed "None" in the table and "n/a" in the chart."""
    down, empty = demo.seed.down[0], demo.seed.empty[0]
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/brokers.py")
    table = next(t.value for t in at.dataframe if "Over threshold" in t.value.columns).set_index("Broker")
    assert table.loc[down, "Over threshold"] == "down"
    assert table.loc[empty, "Imbalance %"] == 0.0
    assert str(down) not in " ".join(w for w in texts(at.warning).splitlines() if "Leader imbalance over" in w)
    chart = figure(at.get("plotly_chart")[0])
    bars = dict(zip(chart["data"][0]["x"], chart["data"][0]["text"]))
    assert bars[f"{empty}"] == "0%" and "n/a" not in bars.values()
    assert chart["data"][0]["marker"]["color"][list(bars).index(f"{down} (down)")] != charts.OVER_COLOR


# --- links, URLs, the broker page, effective config ------------------------------------------------------------


def opened(page: str, **params):
    """A new session opened at `page` with these query parameters (a URL pasted into a browser)."""
    at = app().run()
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(page).run()
    ok(at)
    return at


def test_views_open_from_their_url(demo, zk_connect, tmp_path, monkeypatch):
    """Every view has a URL: ?topic=, ?broker=, ?goal=&drain=, ?scope=&topic= open the same view in a new session."""
    down = demo.seed.down[0]
    open_page(demo, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    topic = next(t.name for t in demo.snapshot().topics if not t.name.startswith("__"))
    at = opened("views/topics.py", topic=topic, q=topic[:3])
    assert at.selectbox(key="topic").value == topic and at.text_input(key="q").value == topic[:3]
    at = opened(REASSIGN, goal=plan_view.GOAL_DRAIN, drain=str(down), view="Change")
    assert at.radio(key="goal").value == plan_view.GOAL_DRAIN and at.multiselect(key="drain").value == [down]
    assert [c.key for c in at.get("plotly_chart") if c.key.startswith("ra_") and "heatmap" in c.key] == \
        ["ra_change_heatmap"]
    at = opened("views/broker.py", broker=str(down))
    assert at.selectbox(key="broker").value == down
    at = opened("views/leaders.py", scope="One topic", topic=topic)
    assert at.radio(key="scope").value == "One topic" and at.selectbox(key="topic").value == topic


def test_broker_page(demo, zk_connect, tmp_path, monkeypatch):
    down = demo.seed.down[0]
    with ZkSession.open(zk_connect) as s:
        s.ensure_path("/config/brokers")
        for entity, config in (("<default>", {"log.retention.hours": "72", "leader.replication.throttled.rate": "5"}),
                               ("1", {"leader.replication.throttled.rate": "9"})):
            path = zf.broker_config_path(entity)
            if s.exists(path):
                s.set(path, zf.encode_config(config))
            else:
                s.create(path, zf.encode_config(config))
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/overview.py")
    labels = [link.proto.label for link in at.get("page_link")]
    assert f"Broker {down} (down)" in labels and "Broker 1" in labels
    snap = live_connection("demo").snapshot()
    wait_until(lambda: live_connection("demo").snapshot().broker_configs.get("1"), timeout=10, message="configs")
    at.query_params["broker"] = "1"
    at.switch_page("views/broker.py").run()
    ok(at)
    m = {x.label: x.value for x in at.metric}
    held = sum(1 in p.replicas for p in snap.partitions())
    assert m["Status"] == "alive" and m["Replicas"] == f"{held:,}"
    configs = next(t.value for t in at.dataframe if "Source" in t.value.columns and "Key" in t.value.columns)
    rows = {r["Key"]: (r["Value"], r["Source"]) for _, r in configs.iterrows()}
    assert rows["leader.replication.throttled.rate"][0] == "9" and rows["log.retention.hours"][0] == "72"
    assert "<default>" in rows["log.retention.hours"][1]
    by_topic = next(t.value for t in at.dataframe if "Share %" in t.value.columns)
    assert by_topic["Replicas"].sum() == held
    only = [p for p in snap.partitions() if tuple(p.isr) == (1,)]
    assert f"{len(only):,}" == m["Only in-sync"]
    # the down broker: no endpoints known, said so
    at.selectbox(key="broker").select(down).run()
    ok(at)
    assert {x.label: x.value for x in at.metric}["Status"] == "DOWN"
    assert "is down" in texts(at.warning)


def test_effective_topic_config_sources():
    from core.topics.effective import BROKER_DEFAULT, KAFKA_DEFAULT, TOPIC, effective_config

    rows = {r.key: r for r in effective_config({"retention.ms": "1000", "x.unknown": "1"},
                                               {"log.retention.hours": "72", "log.cleanup.policy": "compact",
                                                "log.roll.hours": "2"})}
    assert set(TOPIC_CONFIGS) <= set(rows)
    assert (rows["retention.ms"].value, rows["retention.ms"].source) == ("1000", TOPIC)
    assert rows["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert (rows["cleanup.policy"].value, rows["cleanup.policy"].source) == ("compact", BROKER_DEFAULT)
    assert rows["cleanup.policy"].synonym == "log.cleanup.policy"
    assert (rows["segment.ms"].value, rows["segment.ms"].synonym) == (str(2 * 3_600_000), "log.roll.hours")
    assert (rows["max.message.bytes"].source, rows["max.message.bytes"].value) == (
        KAFKA_DEFAULT, TOPIC_CONFIGS["max.message.bytes"].default)
    assert rows["x.unknown"].source == TOPIC
    no_override = {r.key: r for r in effective_config({}, {"log.retention.hours": "72"})}
    assert (no_override["retention.ms"].value, no_override["retention.ms"].source) == (str(72 * 3_600_000),
                                                                                        BROKER_DEFAULT)


def test_topic_view_shows_the_effective_config_beside_the_editor(demo, zk_connect, tmp_path, monkeypatch):
    at = open_page(demo, zk_connect, tmp_path, monkeypatch, "views/topics.py")
    snap = live_connection("demo").snapshot()
    topic = next(t for t in snap.topics if t.config and not t.name.startswith("__"))
    at.selectbox(key="topic").select(topic.name).run()
    ok(at)
    table = next(t.value for t in at.dataframe
                 if list(t.value.columns) == ["Key", "Value", "Source", "Kafka default", "Other brokers"])
    rows = {r["Key"]: (r["Value"], r["Source"]) for _, r in table.iterrows()}
    for key, value in topic.config.items():
        assert rows[key] == (value, "DYNAMIC_TOPIC_CONFIG")
    assert len(rows) >= len(TOPIC_CONFIGS)
    # Kafka's source names (issue 23); no bootstrap servers here: the brokers' server.properties are unknown, said so
    assert all(src.startswith(("DYNAMIC_TOPIC_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"))
               for _, src in rows.values())
    assert rows["file.delete.delay.ms"] == ("60000", "DEFAULT_CONFIG (server.properties unknown)")
    assert "server.properties are unknown" in texts(at.caption)


def test_plan_risks_only_for_partitions_that_change():
    from core.model import Broker, ClusterSnapshot, Partition, Topic
    from core.plans import plan_risks

    snap = ClusterSnapshot("c", "", "t", (Broker(1), Broker(2, alive=False)),
                           (Topic("t", (Partition("t", 0, (2,), -1, (2,)), Partition("t", 1, (1,), 1, (1,)))),))
    assert plan_risks(ReassignmentPlan((ReassignmentEntry("t", 1, (1,)),)), snap) == []
    assert len(plan_risks(ReassignmentPlan((ReassignmentEntry("t", 0, (1,)),)), snap)) == 1
