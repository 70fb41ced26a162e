"""Values read from a cluster are shown as text on every page, never as markdown (issue 12, item 7).

A cluster is written by hand with kazoo: a broker whose rack is a markdown image pointing at a counting HTTP server on
loopback, a host that is an HTML <img>, a rack that is plotly markup, a topic named `__x__` (legal, and bold "x" as
markdown), a topic config value that is another image, a cluster id that is a Streamlit colour directive. Every page
is rendered with AppTest and every markdown-rendering string of it (bodies, labels, help, metric values, table
cells) is checked: no raw value in it, the escaped one present, reading back as the value. Then the real app under
headless Chromium opens the Overview, the Brokers page and the topic's config table, and the server must see no
request at all.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time

import pytest
from kazoo.client import KazooClient

from dashboard import charts
from dashboard.fleet import charts as fleet_charts
from dashboard.text import md, md_text, unescape
from tests.test_dashboard_actions import by_prefix, set_config_rows, store  # noqa: F401  (store: fixture)
from tests.test_dashboard_apptest import (  # noqa: F401  (fresh_connections: autouse fixture)
    app,
    fresh_connections,
    live_connection,
    texts,
    write_config,
)
from tests.sandbox_helpers import wait_until

try:
    from tests import test_e2e_chromium as e2e  # serve(), broker_rows(), wait_for(), click_text()
except pytest.skip.Exception:  # no selenium: the AppTest checks still run
    e2e = None

TOPIC = "__x__"
PLAIN_TOPIC = "plain"
# element types whose strings are not markdown (data grids, code, JSON, figures, plain text)
PLAIN_TYPES = {"arrow_data_frame", "dataframe", "data_editor", "code", "json", "text", "plotly_chart"}
MARKDOWN_FIELDS = {"body", "label", "help", "text", "delta", "caption"}


# --- the counting server and the cluster ---------------------------------------------------------------


class Counter(http.server.ThreadingHTTPServer):
    hits: list[str]


@pytest.fixture
def leak_server():
    """An HTTP server on loopback that counts every request (a 1x1 PNG for each)."""
    png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.server.hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, *args):
            pass

    server = Counter(("127.0.0.1", 0), Handler)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def values(port: int) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    return {
        "rack": f"![r]({base}/leak-rack)",
        "host": f"<img src={base}/leak-host>",
        "bold_rack": "<b>bold-rack</b>",
        "config": f"![c]({base}/leak-config)",
        "cluster_id": ":red[__cid__]",
        "name": f"x![n]({base}/leak-name)",
    }


def write_json(zk: KazooClient, path: str, obj, *, ephemeral: bool = False) -> None:
    zk.create(path, json.dumps(obj).encode(), makepath=True, ephemeral=ephemeral)


def write_cluster(zk: KazooClient, v: dict[str, str]) -> None:
    """Three brokers (racks: the image, plotly markup, plain), two topics, `__x__` with the image as a config value
    and partition 0 led off its preferred replica, as Kafka's brokers and controller would leave them."""
    for path in ("/admin/delete_topics", "/config/changes", "/config/brokers", "/isr_change_notification",
                 "/latest_producer_id_block", "/log_dir_event_notification"):
        zk.ensure_path(path)
    racks = {1: v["rack"], 2: v["bold_rack"], 3: "r3"}
    for b, rack in racks.items():
        write_json(zk, f"/brokers/ids/{b}", {
            "version": 5, "host": v["host"] if b == 1 else f"broker{b}", "port": 9092, "jmx_port": -1,
            "endpoints": [f"PLAINTEXT://broker{b}:9092"], "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "timestamp": "1700000000000", "rack": rack, "features": {}})
    topics = {TOPIC: ({"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}, {"compression.type": v["config"]}),
              PLAIN_TOPIC: ({"0": [2, 3, 1], "1": [3, 1, 2]}, {})}
    for name, (assignment, config) in topics.items():
        write_json(zk, f"/brokers/topics/{name}", {"version": 3, "partitions": assignment, "adding_replicas": {},
                                                   "removing_replicas": {}, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"})
        write_json(zk, f"/config/topics/{name}", {"version": 1, "config": config})
        for p, replicas in assignment.items():
            leader = replicas[1] if (name, p) == (TOPIC, "0") else replicas[0]  # one leader off preferred
            write_json(zk, f"/brokers/topics/{name}/partitions/{p}/state",
                       {"version": 1, "leader": leader, "leader_epoch": 1, "controller_epoch": 1, "isr": replicas})
    write_json(zk, "/cluster/id", {"version": "1", "id": v["cluster_id"]})
    zk.create("/controller_epoch", b"1")
    write_json(zk, "/controller", {"version": 1, "brokerid": 1, "timestamp": "1700000000000"})


@pytest.fixture
def cluster(kazoo_client, leak_server) -> dict[str, str]:
    v = values(leak_server.server_address[1])
    write_cluster(kazoo_client, v)
    return v


# --- what AppTest rendered ---------------------------------------------------------------------------------


def _strings(message, out: list[str]) -> None:
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            for m in ([value] if hasattr(value, "ListFields") else value):
                _strings(m, out)
        elif field.type == field.TYPE_STRING and field.name in MARKDOWN_FIELDS:
            out.extend([value] if isinstance(value, str) else value)


def markdown_strings(at) -> list[str]:
    """Every string of the page that Streamlit renders as markdown, st.table cells included."""
    out: list[str] = []

    def walk(node) -> None:
        if getattr(node, "type", None) in PLAIN_TYPES:
            return
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            _strings(proto, out)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    for table in at.table:
        out.extend(str(c) for c in table.value.to_numpy().ravel() if isinstance(c, str))
    return out


def assert_text_only(at, raw: list[str], *, escaped: list[str] = ()) -> list[str]:
    """No raw value in any markdown string of the page; each of `escaped` is there escaped, reading as itself."""
    assert not at.exception, at.exception
    strings = markdown_strings(at)
    for s in strings:
        active = re.sub(r"\\[!-/:-@\[-`{-~]", "\0", s)  # what markdown still acts on: escaped characters do not
        for r in raw:
            assert r not in active, f"raw {r!r} rendered as markdown in {s!r}"
    for e in escaped:
        assert any(md(e) in s for s in strings), f"{md(e)!r} not on the page: {strings}"
        assert any(e in unescape(s) for s in strings)
    return strings


def raw_values(v: dict[str, str]) -> list[str]:
    # the topic name is raw in a string only where it is not escaped: `__x__` where it should read `\_\_x\_\_`
    return [v["rack"], v["host"], v["config"], v["cluster_id"], v["name"], "![", "<img", TOPIC, "__cid__"]


def open_app(zk_connect, tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, {"x": {"zk": zk_connect}})
    at = app().run()
    assert not at.exception, at.exception
    wait_until(lambda: (s := live_connection("x").snapshot()) is not None and s.topic(TOPIC) is not None,
               timeout=15, message="the live view")
    return at.run()


# --- every page through AppTest ----------------------------------------------------------------------------


def test_cluster_values_are_text_on_every_page(cluster, zk_connect, tmp_path, monkeypatch, store):
    v = cluster
    raw = raw_values(v)
    at = open_app(zk_connect, tmp_path, monkeypatch)

    # Overview (and the router's sidebar): the broker table's cells, the cluster id
    assert_text_only(at, raw, escaped=[v["cluster_id"]])
    brokers = next(t.value for t in at.table if "Rack" in t.value.columns)
    rack, host = dict(zip(brokers["Broker"], brokers["Rack"])), dict(zip(brokers["Broker"], brokers["Host"]))
    assert rack[1] == md(v["rack"]) and host[1] == md(v["host"]) and rack[2] == md(v["bold_rack"])
    assert unescape(rack[1]) == v["rack"]
    legends = {tr["name"] for c in at.get("plotly_chart") for tr in json.loads(c.proto.spec)["data"]}
    assert "&lt;b&gt;bold-rack&lt;/b&gt;" in legends and v["bold_rack"] not in legends  # plotly shows the tags

    # Brokers: racks in data grids only
    at.switch_page("views/brokers.py").run()
    assert_text_only(at, raw)
    racks = next(t.value for t in at.dataframe if list(t.value.columns)[:1] == ["Rack"])
    assert v["rack"] in set(racks["Rack"])  # a data grid cell is plain text: shown as is

    # Topics: the topic's labels, its config table, its actions
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(TOPIC).run()
    strings = assert_text_only(at, raw, escaped=[TOPIC])
    assert f"Marks **{md(TOPIC)}** for deletion" in "\n".join(strings)
    assert at.text_input(key=f"del_confirm::{TOPIC}").label == f"Type **{md(TOPIC)}** to confirm"
    assert not at.table  # the config overrides are a data grid now
    config = next(t.value for t in at.dataframe if list(t.value.columns) == ["Key", "Value"])
    assert dict(zip(config["Key"], config["Value"])) == {"compression.type": v["config"]}
    # an action on it: its result quotes the topic (and goes to History)
    editor = by_prefix(at.data_editor, f"cfg_edit::{TOPIC}::")
    set_config_rows(at, editor.key, [{"Key": "retention.ms", "Value": "3600000"}])
    at.run()
    assert by_prefix(at.checkbox, "cfg_confirm::").label.endswith(f"**{md(TOPIC)}**")
    by_prefix(at.checkbox, "cfg_confirm::").check().run()
    at.button(key="cfg_apply").click().run()
    assert not at.error, texts(at.error)
    assert f"Altered config of {TOPIC}: retention.ms=3600000" in texts(at.success)
    assert_text_only(at, raw, escaped=[f"Altered config of {TOPIC}"])

    # History: the action about it
    at.switch_page("views/history.py").run()
    at.session_state["history_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert_text_only(at, raw, escaped=[TOPIC])
    assert at.subheader[0].value.endswith(f"alter-config {md(TOPIC)}")

    # Leaders: the topic as the election's scope
    at.switch_page("views/leaders.py").run()
    at.radio(key="scope").set_value("One topic").run()
    at.selectbox(key="topic").select(TOPIC).run()
    assert_text_only(at, raw, escaped=[f"topic {TOPIC}"])

    # Create topic: a name that exists, one that is an image; racks in the charts
    at.switch_page("views/create_topic.py").run()
    at.text_input(key="ct_name").input(TOPIC).run()
    assert_text_only(at, raw, escaped=[f"Topic '{TOPIC}' already exists."])
    at.text_input(key="ct_name").input(v["name"]).run()
    assert_text_only(at, raw, escaped=[v["name"]])
    at.text_input(key="ct_name").input("fine.name").run()
    assert_text_only(at, raw)
    legends = {tr["name"] for c in at.get("plotly_chart") for tr in json.loads(c.proto.spec)["data"]}
    assert "&lt;b&gt;bold-rack&lt;/b&gt;" in legends and v["rack"].replace("&", "&amp;") in legends

    # Reassign: the topic in the plan's labels and heatmaps
    at.switch_page("reassign/page.py").run()
    at.radio(key="goal").set_value("Change replication factor").run()
    at.multiselect(key="ra_rf_topics").select(TOPIC).run()
    at.text_input(key="ra_rf").input("2").run()
    assert_text_only(at, raw)
    heat = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(TOPIC in (tr.get("y") or []) for fig in heat for tr in fig["data"])


def test_text_helpers():
    # what the issue saw, and what Streamlit and GFM would otherwise make of a value
    for value in ("![r](http://127.0.0.1:8719/leak-rack)", "__x__", "<img src=x onerror=y>", "$x^2$", ":red[a]",
                  ":material/home:", ":smile:", "`c`", "~~s~~", "# h", "> q", "- l", "+ l", "1. l", "2) l", "a|b",
                  "&amp;", "x@y.org", "a\\b", "[t]: http://x"):
        escaped = md(value)
        assert unescape(escaped) == value
        for ch in "![]()<>_*$:`~#|&@":
            assert escaped.count(ch) == escaped.count("\\" + ch), (value, escaped)
    assert md("1. l").startswith("1\\.") and md("- l").startswith("\\-")
    assert md("a\nb") == "a\\\\nb"  # one line: a control character is shown as its escape
    assert md_text("one\n- two") == "one  \n\\- two"
    assert md("payments.v2 is read-only, 3 → 4") == "payments.v2 is read-only, 3 → 4"  # prose reads as typed


def test_charts_escape_names_for_plotly():
    fig = charts.per_broker_bars([1, 2], [3, 4], ["<b>r</b>", "r&2"], [True, True], title="t", y_title="y")
    assert {tr.name for tr in fig.data} == {"&lt;b&gt;r&lt;/b&gt;", "r&amp;2"}
    assert fig.data[0].customdata[0][0] in ("&lt;b&gt;r&lt;/b&gt;", "r&amp;2")
    heat = charts.replica_heatmaps([1, 2], [True, True], ["<i>t</i>"], [[1, 0]], [[0, 1]])
    assert list(heat.data[0].y) == ["&lt;i&gt;t&lt;/i&gt;"]
    import pandas as pd
    metrics = pd.DataFrame({"cluster": ["c"] * 2, "broker": [1, 2], "rack": ["<b>r</b>", None], "replicas": [3, 1],
                            "leaders": [1, 1], "alive": [True, True], "replica_dev": [0.5, -0.5]})
    grid = fleet_charts.rack_broker_grid(metrics)
    assert grid.y[0] == "&lt;b&gt;r&lt;/b&gt; (1)" and "<b>rack &lt;b&gt;r&lt;/b&gt;</b>" in grid.text[0][0]


# --- the real app in headless Chromium: no request leaves ---------------------------------------------------


@pytest.fixture
def chromium():
    """Headless Chromium as tests/test_e2e_chromium.py drives it."""
    from tests.browser import chromium as start_chromium, have_chromium

    if e2e is None or not have_chromium():
        pytest.skip("selenium, Debian chromium and chromedriver are needed")
    with start_chromium(1500, 1900) as driver:
        yield driver


def test_chromium_fetches_nothing_a_cluster_wrote(cluster, leak_server, zk_connect, tmp_path, chromium):
    v = cluster
    browser = chromium
    with e2e.serve(f'[keel]\nrole = "operator"\n\n[clusters.x]\nzk = "{zk_connect}"\n', tmp_path) as url:
        # Overview: the broker table (st.table) with the rack and the host
        browser.get(url + "/")
        rows = e2e.wait_for(lambda: (r := e2e.broker_rows(browser)) and len(r) == 3 and r, 45, "the broker table")
        time.sleep(1)  # time for any image the page would load
        assert leak_server.hits == [], f"the Overview made the browser fetch {leak_server.hits}"
        assert rows[1]["Rack"] == v["rack"] and rows[1]["Host"] == v["host"]  # shown literally
        body = e2e.body_text(browser)
        assert v["cluster_id"] in body

        # Brokers: loads and racks
        browser.get(url + "/brokers")
        e2e.wait_for(lambda: "Racks" in e2e.body_text(browser), 45, "the Racks section")
        time.sleep(1)
        assert leak_server.hits == [], f"the Brokers page made the browser fetch {leak_server.hits}"

        # Topics: choose __x__, open its config overrides
        browser.get(url + "/topics")
        box = e2e.wait_for(lambda: [b for b in browser.find_elements("css selector",
                                                                      '[data-testid="stSelectbox"]')
                                    if b.text.startswith("Topic")], 45, "the topic picker")[0]
        field = box.find_element("css selector", "input")
        field.click()
        field.send_keys(TOPIC)
        field.send_keys(e2e.Keys.ENTER)
        e2e.click_text(browser, "summary", "config override(s)", timeout=30)
        e2e.wait_for(lambda: browser.find_elements("css selector", '[data-testid="stExpanderDetails"] table, '
                                                   '[data-testid="stExpanderDetails"] [data-testid="stDataFrame"]'),
                     20, "the config table")
        time.sleep(2)  # time for any image the page would load
        e2e.screenshot(browser, tmp_path, "markdown-injection")
        assert leak_server.hits == [], f"the topic's config table made the browser fetch {leak_server.hits}"
        assert f"to {TOPIC} (3 → 4)" in e2e.body_text(browser)  # the name as typed, not a bold "x"
