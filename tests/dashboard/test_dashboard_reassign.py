"""The Reassign page through Streamlit's AppTest, against a real ZooKeeper holding a sandbox cluster.

The sandbox's controller emulator executes the reassignments in-process; its copies take (base delay + partition size
/ follower throttle), so a 1 MB/s throttle (1 MB partitions) keeps a reassignment running for about a second: long
enough to read the node the page wrote, short enough for bounded waits. The refusal of a second reassignment uses a
hand-written tree with no controller, so the first node stays put. Every refusal compares a dump of the tree before
and after. The pure helpers of dashboard/reassign/plan_view.py are tested in test_reassign_state.py.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter

import pytest
import streamlit as st
from streamlit.runtime.media_file_manager import MediaFileManager

from core import zkformat as zf
from core.balance import STRATEGIES, PlanRequest
from core.model import ClusterSnapshot
from core.plans import parse_reassignment
from sandbox.seed import SandboxSpec
from core.zk.reassign_writes import FOLLOWER_RATE, FOLLOWER_THROTTLED, LEADER_RATE, LEADER_THROTTLED
from core.zk.session import ZkSession
from dashboard.reassign import plan_view
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.support.sandbox_helpers import wait_until
from tests.dashboard.test_dashboard_actions import (  # noqa: F401
    ACTOR,
    by_prefix,
    errors,
    ok,
    open_page,
)
from tests.dashboard.test_dashboard_apptest import (  # noqa: F401
    app,
    live_connection,
    texts,
    write_config,
)

PAGE = "reassign/page.py"
SPEC = SandboxSpec(brokers=5, racks=3, topics=6, seed=5)
SLOW_MB = 1.0  # MB/s: a default 1 MB partition copies in ~1 s under it


# --- fixtures and helpers --------------------------------------------------------------------------------


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """file name -> the bytes a download button of the page was given (AppTest's media storage is a mock)."""
    got: dict[str, bytes] = {}
    real = MediaFileManager.add

    def add(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name:
            got[file_name] = path_or_data.encode() if isinstance(path_or_data, str) else path_or_data
        return real(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", add)
    return got


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def assignment(snap: ClusterSnapshot) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(p.topic, p.partition): p.replicas for p in snap.partitions()}


def node_entries(session: ZkSession) -> list[tuple[str, int, tuple[int, ...]]]:
    return [(e.topic, e.partition, e.replicas) for e in zf.decode_reassignment(session.get(zf.REASSIGN).data)]


def doc_entries(text: str) -> list[tuple[str, int, tuple[int, ...]]]:
    return [(e.topic, e.partition, e.replicas) for e in parse_reassignment(text).entries]


def victim_of(snap: ClusterSnapshot) -> int:
    """A broker holding replicas that is not the controller."""
    held = Counter(b for p in snap.partitions() for b in p.replicas)
    return next(b.id for b in snap.brokers if b.alive and held[b.id] and b.id != snap.controller.broker_id)


def plan_drain(at, broker: int, throttle_mb: float | None = None):
    at.radio(key="goal").set_value(plan_view.GOAL_DRAIN).run()
    at.multiselect(key="drain").set_value([broker])
    if throttle_mb is not None:
        at.text_input(key="ra_throttle").input(str(throttle_mb))
    at.run()
    ok(at)
    assert not at.error, errors(at)
    return at


PLAN_CHARTS = ("ra_heatmap", "ra_heatmap_after", "ra_change_heatmap", "ra_replicas_chart", "ra_leaders_chart", "ra_bytes_chart")


def plan_charts(at):
    """The plan's figures (the page may embed others, e.g. a rack warning's chart)."""
    return [c for c in at.get("plotly_chart") if c.key in PLAN_CHARTS]


def view(at, name: str):
    """Pick the "Before and after" view (one figure set at a time)."""
    at.session_state["view"] = name
    return at.run()


def rerun_until(at, predicate, timeout: float = 30, message: str = "the page"):
    def check():
        at.run()
        ok(at)
        return predicate(at)
    return wait_until(check, timeout=timeout, interval=0.3, message=message)


def panel_complete(at) -> bool:
    m = metrics(at)
    return "Complete" in m and m["In progress"] == "0" and m["Not at target"] == "0" \
        and "Complete" in texts(at.success)


def throttle_configs(session: ZkSession) -> dict[str, dict[str, str]]:
    """Every throttle key left in /config/brokers and /config/topics."""
    out = {}
    for kind in ("brokers", "topics"):
        for entity in session.children(f"/config/{kind}") or ():
            path = f"/config/{kind}/{entity}"
            cfg = zf.decode_config(session.get(path).data, path)
            keys = {k: v for k, v in cfg.items()
                    if k in (LEADER_RATE, FOLLOWER_RATE, LEADER_THROTTLED, FOLLOWER_THROTTLED)}
            if keys:
                out[path] = keys
    return out


# --- plan: the engine's numbers, the engine's JSON ----------------------------------------------------------


def test_drain_plan_shows_the_engines_cost_and_downloads_its_json(quick, zk_connect, tmp_path, monkeypatch, store,
                                                                   downloads):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    assert at.title[0].value == "Reassign"
    snap = live_connection("demo").snapshot()
    victim = victim_of(snap)
    plan_drain(at, victim)
    snap = live_connection("demo").snapshot()  # the snapshot the page planned on (the emulator is idle)

    expected = STRATEGIES["balanced"](snap, PlanRequest(drain_brokers=(victim,)))
    r = expected.report
    assert r.replicas_moved >= sum(victim in reps for reps in assignment(snap).values()) > 0
    m = metrics(at)
    assert m["Replicas moved"] == f"{r.replicas_moved:,}"
    assert r.brokers_off_target[1] == 0 and m["Moves ÷ bound"] == f"{r.moves_over_lower_bound:.2f}×"
    assert m["Leader changes"] == f"{r.leader_changes:,}"
    assert m["Partitions changed"] == f"{len(expected.proposed):,}"
    assert m["Waves"] == "1"
    assert m["Bytes moved"] == "—" and m["Est. time"] == "—"  # no sizes
    assert m["Rack violations"] == f"{r.rack_violations[0]} → {r.rack_violations[1]}"
    assert m["Off target"] == f"{r.brokers_off_target[0]} → {r.brokers_off_target[1]}"
    assert f"Lower bound {r.lower_bound:,}:" in next(x.help for x in at.metric if x.label == "Moves ÷ bound")

    # the diff table is the plan, partition by partition (on one page of 500)
    if len(expected.proposed) > 100:
        at.selectbox(key="ra_diff_pages_size").select(500).run()
    diff = next(t.value for t in at.dataframe if "Added" in t.value.columns)
    assert len(diff) == len(expected.proposed)
    for _, row in diff.iterrows():
        key = (row["Topic"], int(row["Partition"]))
        assert row["After"] == ", ".join(map(str, expected.proposed[key]))
        assert row["Before"] == ", ".join(map(str, expected.rollback[key]))
        assert str(victim) not in row["After"].split(", ")
    # one view at a time: heatmaps (before / after), then the change, then per-broker bars (replicas, preferred
    # leaders; no bytes without sizes)
    charts_ = plan_charts(at)  # before and after: two figures, side by side where they fit (issue 24)
    assert [c.key for c in charts_] == ["ra_heatmap", "ra_heatmap_after"]
    heat = [json.loads(c.proto.spec) for c in charts_]
    assert [t["type"] for h in heat for t in h["data"]] == ["heatmap", "heatmap"]
    assert f"{victim} (drain)" in heat[0]["data"][0]["x"] and heat[0]["data"][0]["x"] == heat[1]["data"][0]["x"]
    assert [c.key for c in plan_charts(view(at, "Change"))] == ["ra_change_heatmap"]
    assert [c.key for c in plan_charts(view(at, "Per broker"))] == ["ra_replicas_chart", "ra_leaders_chart"]
    view(at, "Heatmap")

    # the downloads are the engine's documents
    assert json.loads(downloads["reassignment.json"]) == json.loads(expected.reassignment_json())
    assert json.loads(downloads["rollback.json"]) == json.loads(expected.rollback_json())
    report = json.loads(downloads["reassignment-report.json"])
    assert report["report"]["replicas_moved"] == r.replicas_moved and report["strategy"] == "balanced"
    assert at.download_button(key="ra_download_plan").label == f"Plan JSON ({len(expected.proposed)} partitions)"

    # a rerun does not re-plan (same snapshot generation, same request)
    at.run()
    assert "cached: same cluster state and inputs" in texts(at.caption)

    # kafka-generate: every topic listed, as --generate needs; its much larger cost is shown
    at.selectbox(key="strategy").select("kafka-generate").run()
    ok(at)
    generated = STRATEGIES["kafka-generate"](snap, PlanRequest(topics=tuple(t.name for t in snap.topics),
                                                                drain_brokers=(victim,)))
    assert metrics(at)["Replicas moved"] == f"{generated.report.replicas_moved:,}"
    assert json.loads(downloads["reassignment.json"]) == json.loads(generated.reassignment_json())
    assert store.actions() == []  # planning writes nothing


def test_other_goals_plan_what_the_engine_plans(quick, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    snap = live_connection("demo").snapshot()
    # the default goal: rebalance every topic
    assert metrics(at)["Replicas moved"] == f"{STRATEGIES['balanced'](snap, PlanRequest()).report.replicas_moved:,}"

    topic = next(t.name for t in snap.topics if not t.name.startswith("__"))
    at.radio(key="goal").set_value(plan_view.GOAL_RF).run()
    assert not at.metric  # no topic chosen yet
    at.multiselect(key="ra_rf_topics").set_value([topic])
    at.text_input(key="ra_rf").input("2").run()
    ok(at)
    expected = STRATEGIES["balanced"](snap, PlanRequest(topics=(topic,), replication_factor=2))
    assert metrics(at)["Replicas moved"] == f"{expected.report.replicas_moved:,}"
    diff = next(t.value for t in at.dataframe if "Added" in t.value.columns)
    assert {len(a.split(", ")) for a in diff["After"]} == {2}

    at.text_input(key="ra_rf").input("5")
    at.multiselect(key="ra_rf_topics").set_value([topic]).run()
    ok(at)
    at.radio(key="goal").set_value(plan_view.GOAL_REBALANCE).run()
    at.toggle(key="ra_some_topics").set_value(True).run()  # the topic list only when asked for
    at.multiselect(key="topics").set_value([topic]).run()
    ok(at)
    expected = STRATEGIES["balanced"](snap, PlanRequest(topics=(topic,)))
    assert metrics(at)["Replicas moved"] == f"{expected.report.replicas_moved:,}"
    # a request the engine refuses shows its message
    at.radio(key="goal").set_value(plan_view.GOAL_REBALANCE)
    at.text_input(key="ra_max_moves").input("0")
    at.selectbox(key="strategy").select("kafka-generate").run()
    ok(at)
    assert "over the budget of 0" in errors(at)


def test_fill_new_brokers_highlights_the_empty_ones(zk_connect, tmp_path, monkeypatch, store):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None, 4: None}, controller=1)
        write_topic(s, "t", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)})
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page(PAGE).run()
        at.radio(key="goal").set_value(plan_view.GOAL_FILL).run()
        ok(at)
        assert "1 alive broker(s) hold no replica yet: 4" in texts(at.info)
        snap = live_connection("demo").snapshot()
        expected = STRATEGIES["balanced"](snap, PlanRequest())
        assert metrics(at)["Replicas moved"] == f"{expected.report.replicas_moved:,}" != "0"
        bars = json.loads(plan_charts(view(at, "Per broker"))[0].proto.spec)
        assert "4 (empty)" in bars["data"][0]["x"]
        after = dict(zip(bars["data"][1]["x"], bars["data"][1]["y"]))
        assert after["4 (empty)"] == 3  # 12 replicas over 4 brokers


# --- execute, follow, verify, roll back ------------------------------------------------------------------------


def test_execute_follow_verify_and_roll_back(quick, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    conn = live_connection("demo")
    original = assignment(quick.snapshot())
    victim = victim_of(conn.snapshot())
    plan_drain(at, victim, throttle_mb=SLOW_MB)
    snap = conn.snapshot()
    expected = STRATEGIES["balanced"](snap, PlanRequest(drain_brokers=(victim,)))
    moving = sum(1 for k, v in expected.proposed.items() if set(v) != set(expected.rollback[k]))

    execute = at.button(key="ra_execute")
    assert execute.disabled  # not confirmed yet
    confirm = by_prefix(at.checkbox, "ra_confirm_")
    assert f"Move {expected.report.replicas_moved} replica(s) of {moving} partition(s)" in confirm.label
    assert "throttled at 1 MB/s (1,000,000 B/s) per broker" in confirm.label
    confirm.check().run()
    at.button(key="ra_execute").click().run()
    ok(at)
    assert not at.error, errors(at)

    # the node holds exactly the plan, and the throttles are set
    assert node_entries(quick.session) == doc_entries(expected.reassignment_json())
    throttles = throttle_configs(quick.session)
    assert any(v.get(FOLLOWER_RATE) == "1000000" for v in throttles.values())
    started = texts(at.success)
    assert f"Reassignment started: {len(expected.proposed)} partition(s) written to /admin/reassign_partitions" \
        in started and "throttled at 1,000,000 B/s" in started
    [action] = store.actions("demo")
    assert (action.kind, action.status, action.actor) == ("reassignment", "applied", ACTOR)
    assert doc_entries(action.payload["plan"]) == doc_entries(expected.reassignment_json())

    # the progress panel follows the controller to the end
    assert metrics(at)["In progress"] != "0" or panel_complete(at)
    rerun_until(at, panel_complete, message="the progress panel to show the reassignment complete")
    assert metrics(at)["Complete"] == f"{len(expected.proposed):,}"
    status = next(t.value for t in at.dataframe if "Status" in t.value.columns)
    assert set(status["Status"]) == {"complete"}
    assert not quick.session.exists(zf.REASSIGN)
    assert all(victim not in reps for reps in assignment(quick.snapshot()).values())
    assert throttle_configs(quick.session)  # still throttled until verified

    # rollback is refused while a reassignment runs: here none does, so it is offered
    assert at.button(key="ra_rollback").disabled  # not confirmed
    at.button(key="ra_verify").click().run()
    ok(at)
    assert "Verified: all" in texts(at.success) and "Throttles removed" in texts(at.success)
    assert throttle_configs(quick.session) == {}  # broker and topic configs clean
    assert [a.kind for a in store.actions("demo")] == ["remove-throttles", "reassignment"]

    by_prefix(at.checkbox, "ra_roll_confirm_").check().run()
    at.button(key="ra_rollback").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert f"Rollback of action #{action.id} started" in texts(at.success)
    rerun_until(at, panel_complete, message="the rollback to complete")
    wait_until(lambda: not quick.session.exists(zf.REASSIGN), timeout=15, message="the rollback node to go")
    assert assignment(quick.snapshot()) == original
    at.button(key="ra_verify").click().run()
    assert throttle_configs(quick.session) == {}
    kinds = [a.kind for a in store.actions("demo")]
    # the rollback is recorded as a reassignment, or as its own kind ("rollback") once History links them
    assert kinds.count("reassignment") + kinds.count("rollback") == 2
    assert all(a.status == "applied" for a in store.actions("demo"))


def test_sizes_and_waves_execute_one_wave_at_a_time(quick, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    conn = live_connection("demo")
    snap = conn.snapshot()
    victim = victim_of(snap)
    sizes = {(p.topic, p.partition): 1_000_000 * (1 + p.partition % 7) for p in snap.partitions()}
    log_dirs = {"version": 1, "brokers": [{"broker": b.id, "logDirs": [{"logDir": "/data", "error": None, "partitions": [
        {"partition": f"{t}-{p}", "size": n, "offsetLag": 0, "isFuture": False}
        for (t, p), n in sizes.items() if b.id in snap.topic(t).partitions[p].replicas]}]} for b in snap.brokers]}
    text = "Querying brokers for log directories information\nReceived log directory information from brokers 1\n" \
        + json.dumps(log_dirs)
    at.file_uploader(key="ra_sizes_file").set_value(("sizes.json", text.encode(), "application/json"))
    at.text_input(key="ra_wave_k").input("40")
    plan_drain(at, victim, throttle_mb=SLOW_MB)
    assert "partition sizes" in texts(at.caption)

    expected = STRATEGIES["balanced"](snap, PlanRequest(drain_brokers=(victim,), partition_sizes=sizes,
                                                        wave_partitions=40))
    waves = expected.waves
    assert len(waves) > 1 and all(len(w) <= 40 for w in waves)
    leaders = {(p.topic, p.partition): p.leader for p in snap.partitions()}
    seconds = 0.0
    for wave in waves:  # the estimate, worked out independently: busiest broker in or out, per wave
        load = Counter()
        for key in wave:
            for b in set(expected.proposed[key]) - set(expected.rollback[key]):
                load[("in", b)] += sizes[key]
                load[("out", leaders[key])] += sizes[key]
        seconds += max(load.values(), default=0) / 1_000_000
    m = metrics(at)
    assert m["Bytes moved"] == plan_view.human_bytes(expected.report.bytes_moved)
    assert m["Waves"] == str(len(waves))
    assert m["Est. time"] == plan_view.human_duration(seconds)
    assert len(plan_charts(view(at, "Per broker"))) == 3  # + bytes per broker
    at.selectbox(key="ra_diff_pages_size").select(500).run()
    diff = next(t.value for t in at.dataframe if "Added" in t.value.columns)
    assert "Wave" in diff.columns and diff["Wave"].max() == len(waves)

    by_prefix(at.checkbox, "ra_confirm_").check().run()
    assert at.button(key="ra_execute").label == f"Execute wave 1 of {len(waves)}"
    at.button(key="ra_execute").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert [(t, p) for t, p, _ in node_entries(quick.session)] == sorted(waves[0])
    rerun_until(at, panel_complete, message="wave 1 to complete")
    at.button(key="ra_next_wave").click().run()
    ok(at)
    assert not at.error, errors(at)
    assert f"Wave 2 of {len(waves)} started" in texts(at.success)
    assert [(t, p) for t, p, _ in node_entries(quick.session)] == sorted(waves[1])
    rerun_until(at, panel_complete, message="wave 2 to complete")


def test_a_topic_deleted_meanwhile_is_gone_and_verify_removes_the_throttles(zk_connect, tmp_path, monkeypatch, store):
    """No controller: the test plays it. "keep" reaches its target, "doomed" is deleted (its partitions dropped from
    the node, as Kafka's controller does): the panel counts them as gone, not as waiting, and Verify finishes."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "keep", {0: [1, 2]})
        write_topic(s, "doomed", {0: [1, 2], 1: [2, 1]})
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page(PAGE).run()
        at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
        at.text_area(key="ra_import_text").input(_doc([("keep", 0, [3, 2]), ("doomed", 0, [3, 1]),
                                                       ("doomed", 1, [1, 3])]))
        at.text_input(key="ra_throttle").input(str(SLOW_MB)).run()
        ok(at)
        assert not at.error, errors(at)
        by_prefix(at.checkbox, "ra_confirm_").check().run()
        at.button(key="ra_execute").click().run()
        ok(at)
        assert not at.error, errors(at)
        assert throttle_configs(s) and metrics(at)["In progress"] == "3" and "Gone" not in metrics(at)
        at.text_area(key="ra_import_text").input("").run()  # the document would name a topic that no longer exists

        # as the controller: "keep" completes, "doomed" is deleted, nothing is left in the node
        keep = zf.decode_topic("keep", s.get(zf.topic_path("keep")).data)
        s.set(zf.topic_path("keep"), zf.encode_topic({0: [3, 2]}, topic_id=keep.topic_id))
        s.delete(zf.topic_path("doomed"), recursive=True)
        s.delete(zf.topic_config_path("doomed"))
        s.delete(zf.REASSIGN)

        rerun_until(at, lambda a: metrics(a).get("Gone") == "2" and metrics(a)["In progress"] == "0",
                    message="the panel to count the deleted topic")
        m = metrics(at)
        assert (m["Complete"], m["In progress"], m["Not at target"]) == ("1", "0", "0")
        assert "Complete: every partition is at its target or gone. Verify" in texts(at.success)
        assert "2 partition(s) belong to topics that no longer exist" in texts(at.caption)
        status = next(t.value for t in at.dataframe if "Status" in t.value.columns)
        assert dict(zip(status["Topic"] + "-" + status["Partition"].astype(str), status["Status"])) == {
            "keep-0": "complete", "doomed-0": "gone", "doomed-1": "gone"}
        assert throttle_configs(s)  # still throttled until verified

        at.button(key="ra_verify").click().run()
        ok(at)
        assert not at.error, errors(at)
        done = texts(at.success)
        assert "Verified: all 3 partition(s) are finished: 1 at their target, 2 gone" in done, done
        assert "Throttles removed" in done and "Complete and verified" in done
        assert throttle_configs(s) == {}  # the brokers' rates and the remaining topic's lists
        assert [a.kind for a in store.actions("demo")] == ["remove-throttles", "reassignment"]

        # picked up again from the audit store (as after a reload): the same counts
        at.button(key="ra_dismiss").click().run()
        assert not [b for b in at.button if b.key == "ra_verify"]
        [action] = store.actions("demo", kind="reassignment")
        assert at.selectbox(key="ra_follow_id").value == action.id
        at.button(key="ra_follow").click().run()
        ok(at)
        assert f"Action #{action.id}" in texts(at.markdown)
        m = metrics(at)
        assert (m["Complete"], m["Gone"], m["In progress"]) == ("1", "2", "0")
        assert at.button(key="ra_rollback")  # the stored rollback was read


# --- import -------------------------------------------------------------------------------------------------


def _doc(entries) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries]})


@pytest.mark.parametrize("case,message", [
    ("broker", "The proposed assignment contains non-existent brokerIDs: 99"),
    ("partition", "The proposed assignment contains non-existent partitions: {topic}-999"),
    ("duplicate", "Partition reassignment contains duplicate topic partitions: {topic}-0"),
    ("empty", "Partition reassignment data file is empty"),
    ("syntax", "The input string is not a valid JSON"),
])
def test_imported_plan_kafka_refuses_shows_its_message_and_writes_nothing(quick, zk_connect, tmp_path, monkeypatch,
                                                                           store, case, message):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    snap = quick.snapshot()
    topic = next(t.name for t in snap.topics if not t.name.startswith("__"))
    reps = list(snap.topic(topic).partitions[0].replicas)
    text = {"broker": _doc([(topic, 0, reps[:-1] + [99])]),
            "partition": _doc([(topic, 0, reps), (topic, 999, reps)]),
            "duplicate": _doc([(topic, 0, reps), (topic, 0, reps[::-1])]),
            "empty": _doc([]),
            "syntax": '{"version":1,"partitions":[{"topic":'}[case]
    before = dump_tree(quick.session)
    at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
    at.text_area(key="ra_import_text").input(text).run()
    ok(at)
    assert message.format(topic=topic) in errors(at)
    assert not [b for b in at.button if b.key == "ra_execute"] and not at.metric
    assert dump_tree(quick.session) == before
    assert store.actions() == []


def test_imported_plan_is_scored_and_executed_as_given(quick, zk_connect, tmp_path, monkeypatch, store):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE)
    snap = quick.snapshot()
    alive = sorted(snap.alive_broker_ids)
    topic = next(t.name for t in snap.topics if not t.name.startswith("__"))
    parts = snap.topic(topic).partitions
    entries = []
    for p in parts[:3]:  # replace the last replica with a broker that does not hold the partition
        other = next(b for b in alive if b not in p.replicas)
        entries.append((topic, p.partition, list(p.replicas[:-1]) + [other]))
    entries.append((topic, parts[3].partition, list(parts[3].replicas)))  # an entry that changes nothing
    text = _doc(entries)
    at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
    at.file_uploader(key="ra_import_file").set_value(("plan.json", text.encode(), "application/json"))
    at.text_input(key="ra_throttle").input(str(SLOW_MB)).run()
    ok(at)
    assert not at.error, errors(at)
    m = metrics(at)
    assert m["Replicas moved"] == "3" and m["Partitions changed"] == "3"
    # three moves leave the demo's empty brokers empty: no flattering ratio against a balance it never reaches
    assert not m["Off target"].endswith(" 0") and m["Moves ÷ bound"] == "n/a"
    assert at.selectbox(key="strategy").disabled
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    at.button(key="ra_execute").click().run()
    ok(at)
    assert not at.error, errors(at)
    given = [(t, p, tuple(r)) for t, p, r in entries]
    [action] = store.actions("demo")
    assert doc_entries(action.payload["plan"]) == given  # the document as given, no-op entry included
    node = node_entries(quick.session)  # the controller drops the no-op entry at once; the rest is still moving
    assert node[:3] == given[:3] and node in (given[:3], given)
    rerun_until(at, panel_complete, message="the imported plan to complete")
    now = assignment(quick.snapshot())
    assert all(now[(t, p)] == tuple(r) for t, p, r in entries)


# --- refusals -------------------------------------------------------------------------------------------------


def test_execute_refused_while_a_reassignment_runs(frozen_tree, zk_connect, tmp_path, monkeypatch, store):
    frozen_tree.create(zf.REASSIGN, zf.encode_reassignment([]).replace(b"[]", b'[{"topic":"t","partition":0,'
                                                                               b'"replicas":[2,1]}]'))
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page(PAGE).run()
    plan_drain(at, 3)
    assert "There is an existing assignment running." in texts(at.warning)
    before = dump_tree(frozen_tree)
    by_prefix(at.checkbox, "ra_confirm_").check().run()
    at.button(key="ra_execute").click().run()
    ok(at)
    assert "There is an existing assignment running." in errors(at)
    assert dump_tree(frozen_tree) == before
    assert store.actions() == []


@pytest.mark.parametrize("role,read_only,why", [("viewer", False, "only an operator may write"),
                                                ("operator", True, "this Keel instance is read-only")])
def test_viewer_and_read_only_cannot_execute(quick, zk_connect, tmp_path, monkeypatch, store, role, read_only, why):
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE, role=role, read_only=read_only)
    before = dump_tree(quick.session)
    plan_drain(at, victim_of(quick.snapshot()))
    assert metrics(at)["Replicas moved"] != "0"  # the plan is for everyone
    assert at.download_button(key="ra_download_plan")
    button = at.button(key="ra_execute")
    assert button.disabled and why in button.help
    assert by_prefix(at.checkbox, "ra_confirm_").disabled
    assert why in texts(at.caption)
    assert dump_tree(quick.session) == before and store.actions() == []


# --- a large cluster: aggregated and paginated ------------------------------------------------------------------


def test_a_50000_partition_plan_is_aggregated_and_paginated(zk_connect, tmp_path, monkeypatch, store):
    brokers, topics, per_topic = 24, 250, 200
    with ZkSession.open(zk_connect) as s:
        for path in zf.PERSISTENT_PATHS:
            s.ensure_path(path)
        for b in range(brokers):
            s.create(zf.broker_path(b), zf.encode_broker([f"PLAINTEXT://h{b}:9092"], timestamp_ms=0))

        def nodes():
            for i in range(topics):
                name = f"topic-{i:04d}"
                parts = {p: [(i + p + k) % (brokers - 4) for k in range(3)] for p in range(per_topic)}  # 4 empty
                yield zf.topic_path(name), zf.encode_topic(parts, topic_id=uuid.uuid4().hex[:22])
                yield zf.partitions_path(name), b""
                for p, reps in parts.items():
                    yield zf.partition_path(name, p), b""
                    yield zf.state_path(name, p), zf.encode_partition_state(reps[0], 0, 1, reps)
                yield zf.topic_config_path(name), zf.encode_config({})
        s.create_many(nodes())
        try:
            _large_plan_page(zk_connect, tmp_path, monkeypatch, topics)
        finally:  # pipelined deletes: the chroot fixture's recursive delete pays a round trip per znode
            st.cache_resource.clear()  # stop the app's watches first
            for child in s.children("/") or ():
                if child != "zookeeper":
                    s.delete_tree(f"/{child}")


def _large_plan_page(zk_connect, tmp_path, monkeypatch, topics: int) -> None:
    """Plan kafka-generate over every partition; check that what is drawn stays small."""
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    ok(at)
    at.switch_page(PAGE).run(timeout=180)
    deadline = time.monotonic() + 180
    while not any(s.key == "strategy" for s in at.selectbox):  # 50,000 partitions: the outline first (issue 31)
        assert time.monotonic() < deadline, "the Reassign page never left the outline"
        time.sleep(0.5)
        at.run(timeout=180)
    ok(at)
    at.selectbox(key="strategy").select("kafka-generate")  # re-places every partition
    started = time.monotonic()
    at.run(timeout=180)
    ok(at)
    assert not at.error, errors(at)
    changed = int(metrics(at)["Partitions changed"].replace(",", ""))
    assert changed > 45_000
    diff = next(t for t in at.dataframe if "Added" in t.value.columns)
    assert len(diff.value) == 100  # one page of the diff
    assert f"Partitions 1–100 of {changed:,}" in texts(at.caption)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for trace in spec["data"]:
            cells = sum(len(row) for row in trace["z"]) if trace["type"] == "heatmap" else len(trace["x"])
            assert cells <= plan_view.MAX_HEATMAP_CELLS
            if trace["type"] == "heatmap":
                assert len(trace["y"]) <= plan_view.TOP_TOPICS and trace["y"][-1] == f"other ({topics - 19} topics)"
    assert not at.code  # the JSON preview is drawn only once its expander is opened
    at.session_state["ra_json_open"] = True
    at.run(timeout=60)
    assert len(at.code[0].value) < plan_view.MAX_JSON_PREVIEW + 10
    first = time.monotonic() - started
    started = time.monotonic()
    at.run(timeout=60)  # cached: no re-plan, no re-aggregation
    assert "cached: same cluster state and inputs" in texts(at.caption)
    assert time.monotonic() - started < first

