"""Values read from a cluster are shown as text on every page, never as markdown (issue 12, item 7) and never as a
link (issue 23, item 4).

A cluster is written by hand with kazoo: a broker whose rack is a markdown image pointing at a counting HTTP server on
loopback, a host that is an HTML <img>, a rack that is plotly markup, a topic named `__x__` (legal, and bold "x" as
markdown), a topic config value that is another image, a cluster id that is a Streamlit colour directive. And what
GFM would make a link of even once escaped: a topic `www.evil-topic.example` (legal) with URL config values, a
cluster id with a URL, a broker whose host and endpoint are `www.` names and whose rack is an e-mail address. Every
page is rendered with AppTest and every markdown-rendering string of it (bodies, labels, help, metric values, table
cells) is checked: no raw value in it, the escaped one present, reading back as the value, and nothing GFM would
autolink (`autolinks`, remark-gfm's rules). Then the real app under headless Chromium, behind an authenticating
proxy whose identity headers are an e-mail address and URL-like groups, opens every page (the topic, the brokers,
uploads of a state-change log and a log-dirs document naming the topic, History's row about it): the counting
server must see no request and no page may hold a link out of the app; the names read and copy as they are.
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
from dashboard.text import INERT, md, md_text, unescape
from tests.dashboard.test_dashboard_actions import by_prefix, set_config_rows  # noqa: F401
from tests.dashboard.test_dashboard_apptest import (  # noqa: F401
    app,
    live_connection,
    texts,
    write_config,
)
from tests.support.sandbox_helpers import wait_until

try:
    from tests.e2e import test_e2e_chromium as e2e  # serve(), broker_rows(), wait_for(), click_text()
except pytest.skip.Exception:  # no selenium: the AppTest checks still run
    e2e = None

TOPIC = "__x__"
PLAIN_TOPIC = "plain"
LINK_TOPIC = "www.evil-topic.example"  # a legal topic name GFM would link
MAIL = "ops@evil.example"  # a rack here; an actor (X-Forwarded-Email) in the browser test
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
        "cluster_id": f":red[__cid__] {base}/leak-cid",
        "name": f"x![n]({base}/leak-name)",
        "link_host": "www.evil-host.example",
        "link_config": f"{base}/leak-config-link",
        "www_config": "see www.evil-config.example",
    }


def write_json(zk: KazooClient, path: str, obj, *, ephemeral: bool = False) -> None:
    zk.create(path, json.dumps(obj).encode(), makepath=True, ephemeral=ephemeral)


def write_cluster(zk: KazooClient, v: dict[str, str]) -> None:
    """Three brokers (racks: the image, plotly markup, an e-mail address; broker 3's host a `www.` name), three
    topics, `__x__` with the image as a config value and partition 0 led off its preferred replica, LINK_TOPIC with
    URL config values, as Kafka's brokers and controller would leave them."""
    for path in ("/admin/delete_topics", "/config/changes", "/config/brokers", "/isr_change_notification",
                 "/latest_producer_id_block", "/log_dir_event_notification"):
        zk.ensure_path(path)
    racks = {1: v["rack"], 2: v["bold_rack"], 3: MAIL}
    hosts = {1: v["host"], 2: "broker2", 3: v["link_host"]}
    for b, rack in racks.items():
        write_json(zk, f"/brokers/ids/{b}", {
            "version": 5, "host": hosts[b], "port": 9092, "jmx_port": -1,
            "endpoints": [f"PLAINTEXT://{hosts[b] if b == 3 else f'broker{b}'}:9092"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "timestamp": "1700000000000", "rack": rack, "features": {}})
    write_json(zk, "/config/brokers/3", {"version": 1, "config": {"log.cleaner.threads": v["www_config"]}})
    topics = {TOPIC: ({"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}, {"compression.type": v["config"]}),
              PLAIN_TOPIC: ({"0": [2, 3, 1], "1": [3, 1, 2]}, {}),
              LINK_TOPIC: ({"0": [3, 1, 2], "1": [1, 2, 3]},
                           {"cleanup.policy": v["link_config"], "message.timestamp.type": v["www_config"]})}
    for name, (assignment, config) in topics.items():
        write_json(zk, f"/brokers/topics/{name}", {"version": 3, "partitions": assignment, "adding_replicas": {},
                                                   "removing_replicas": {}, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"})
        write_json(zk, f"/config/topics/{name}", {"version": 1, "config": config})
        for p, replicas in assignment.items():
            leader = replicas[1] if p == "0" and name != PLAIN_TOPIC else replicas[0]  # leaders off preferred
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


# --- what GFM makes a link of ------------------------------------------------------------------------------

# remark-gfm (mdast-util-gfm-autolink-literal, in Streamlit's StreamlitMarkdown bundle) looks for these in every text
# node of the parsed markdown, escapes already resolved: `www.` or `http(s)://` after a word boundary, an address
# whose `@` has a domain after it. dashboard.text.INERT ends a text node.
_GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE | re.ASCII)
_GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.ASCII)


def _after_boundary(text: str, i: int, *, email: bool = False) -> bool:
    prev = text[i - 1] if i else ""
    return not prev.isalnum() and not (email and prev == "/")


def _domain(domain: str) -> bool:
    parts = domain.split(".")
    return len(parts) >= 2 and all("_" not in p and re.search(r"[a-zA-Z\d]", p) for p in parts[-2:] if p)


def autolinks(markdown: str) -> list[str]:
    """What GFM would turn into links in this markdown string (remark-gfm's rules, as Streamlit runs them)."""
    found = []
    for node in markdown.split(INERT):
        text = unescape(node)
        pos = 0
        while m := _GFM_URL.search(text, pos):
            domain = m.group(2) if m.group(1).lower().startswith("http") else "www" + m.group(2)
            if _after_boundary(text, m.start()) and _domain(domain):
                found.append(m.group(0))
            pos = m.start() + 1
        found += [m.group(0) for m in _GFM_EMAIL.finditer(text)
                  if _after_boundary(text, m.start(), email=True) and not re.search(r"[-\d_]$", m.group(2))]
    return found


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
        assert not autolinks(s), f"GFM links {autolinks(s)} in {s!r}"
    for e in escaped:
        assert any(md(e) in s for s in strings), f"{md(e)!r} not on the page: {strings}"
        assert any(e in unescape(s) for s in strings)
    return strings


def raw_values(v: dict[str, str]) -> list[str]:
    # the topic name is raw in a string only where it is not escaped: `__x__` where it should read `\_\_x\_\_`
    return [v["rack"], v["host"], v["config"], v["cluster_id"], v["name"], "![", "<img", TOPIC, "__cid__", MAIL,
            v["link_config"]]


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

    # issue 23 item 4: what GFM would link (assert_text_only checks every string of each page for it)
    monkeypatch.setenv("KEEL_ACTOR", MAIL)  # the local user, in the sidebar
    store.record(cluster="x", kind="alter-config", target=LINK_TOPIC, ok=True, actor=MAIL, source="none",
                 summary=f"altered config of {LINK_TOPIC}: cleanup.policy={v['link_config']}", result="written",
                 payload={LINK_TOPIC: {"cleanup.policy": v["link_config"]}})
    at.switch_page("views/topics.py").run()
    at.selectbox(key="topic").select(LINK_TOPIC).run()
    assert_text_only(at, raw, escaped=[LINK_TOPIC, MAIL])
    at.switch_page("views/broker.py").run()
    at.selectbox(key="broker").select(3).run()
    assert_text_only(at, raw, escaped=[MAIL])  # its rack, a metric value
    at.switch_page("views/leaders.py").run()
    at.radio(key="scope").set_value("One topic").run()
    at.selectbox(key="topic").select(LINK_TOPIC).run()
    assert_text_only(at, raw, escaped=[f"topic {LINK_TOPIC}"])
    at.switch_page("views/restart.py").run()
    assert_text_only(at, raw)
    at.switch_page("views/create_topic.py").run()
    at.text_input(key="ct_name").input(LINK_TOPIC).run()
    assert_text_only(at, raw, escaped=[f"Topic '{LINK_TOPIC}' already exists."])
    at.switch_page("views/history.py").run()
    at.session_state["history_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert_text_only(at, raw, escaped=[f"alter-config {LINK_TOPIC}", v["link_config"], MAIL])

    # Reassign: the topic in the plan's labels and heatmaps
    at.switch_page("reassign/page.py").run()
    at.radio(key="goal").set_value("Drain brokers").run()
    assert_text_only(at, raw, escaped=[MAIL])  # the brokers' racks
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
        escaped = escaped.replace(INERT, "")  # the one markup md writes (test_md_leaves_gfm_nothing_to_link)
        for ch in "![]()<>_*$:`~#|&@":
            assert escaped.count(ch) == escaped.count("\\" + ch), (value, escaped)
    assert md("1. l").startswith("1\\.") and md("- l").startswith("\\-")
    assert md("a\nb") == "a\\\\nb"  # one line: a control character is shown as its escape
    assert md_text("one\n- two") == "one  \n\\- two"
    assert md("payments.v2 is read-only, 3 → 4") == "payments.v2 is read-only, 3 → 4"  # prose reads as typed


LINKABLE = ("www.evil-topic.example", "WWW.Evil.example", "x.www.evil.example", "PLAINTEXT://www.h.example:9092",
            "http://127.0.0.1:8719/x", "HTTPS://evil.example/a?b=c", "ops@evil.example", "mailto:ops@evil.example",
            "a www.b.example and c@d.example", "[kafka-sre, http://127.0.0.1/g]", ":red[__cid__] http://h.example/c")


def test_md_leaves_gfm_nothing_to_link():
    """Backslash escapes do not stop GFM's autolink literals (they are found after escapes are resolved); md's
    INERT, an empty directive between where a link would start and its rest, does, and reads as nothing."""
    for value in LINKABLE:
        escaped = md(value)
        assert autolinks(escaped.replace(INERT, "")), f"escapes alone: GFM links nothing in {value!r}?"
        assert autolinks(escaped) == [], (value, escaped)
        assert unescape(escaped) == value
    assert autolinks(md_text("line one\ntwo www.evil.example")) == []
    assert md("www.x.example") == f"www{INERT}.x.example" and md("a@b.example") == f"a\\@{INERT}b.example"
    assert md("http://h") == f"http{INERT}\\:\\/\\/h" and INERT not in md("wwwx.example  httpx://")
    assert md(f"a{INERT}b") == "a\\:small\\[\\]b"  # a value that spells INERT is escaped like any other
    assert unescape(md(f"a{INERT}b")) == f"a{INERT}b"
    # and the detector sees what GFM sees: no link inside a word, none for a domain it would refuse
    assert autolinks("xwww.a.example") == [] and autolinks("www.a_b.c_d") == [] and autolinks("a@b.c-") == []
    assert autolinks("(www.a.example)") and autolinks("\\_http://a.example")


def test_charts_escape_names_for_plotly():
    fig = charts.per_broker_bars([1, 2], [3, 4], ["<b>r</b>", "r&2"], [True, True], title="t", y_title="y")
    assert {tr.name for tr in fig.data} == {"&lt;b&gt;r&lt;/b&gt;", "r&amp;2"}
    assert fig.data[0].customdata[0][0] in ("&lt;b&gt;r&lt;/b&gt;", "r&amp;2")
    for heat in charts.replica_heatmaps([1, 2], [True, True], ["<i>t</i>"], [[1, 0]], [[0, 1]]):
        assert list(heat.data[0].y) == ["&lt;i&gt;t&lt;/i&gt;"]
    import pandas as pd
    metrics = pd.DataFrame({"cluster": ["c"] * 2, "broker": [1, 2], "rack": ["<b>r</b>", None], "replicas": [3, 1],
                            "leaders": [1, 1], "alive": [True, True], "replica_dev": [0.5, -0.5]})
    grid = fleet_charts.rack_broker_grid(metrics)
    assert grid.y[0] == "&lt;b&gt;r&lt;/b&gt; (1)" and "<b>rack &lt;b&gt;r&lt;/b&gt;</b>" in grid.text[0][0]


# --- the real app in headless Chromium: no request leaves ---------------------------------------------------


@pytest.fixture
def chromium():
    """Headless Chromium as tests/e2e/test_e2e_chromium.py drives it."""
    from tests.support.browser import chromium as start_chromium, have_chromium

    if e2e is None or not have_chromium():
        pytest.skip("selenium, Debian chromium and chromedriver are needed")
    with start_chromium(1500, 1900) as driver:
        yield driver


PROXY_SECRET = "links-e2e-proxy-shared-secret"
# <a> elements that lead out of the app (Keel links only to its own pages): what GFM made of cluster data
OUT_LINKS = """
return [...document.querySelectorAll('a[href]')].filter(a => {
    try { return new URL(a.href, location.href).origin !== location.origin; } catch (e) { return true; }
}).map(a => a.getAttribute('href') + ' ' + JSON.stringify(a.innerText));
"""
# select the first occurrence of arguments[0] in the text of a markdown element on screen, as a mouse would (across
# the text nodes it spans)
SELECT = """
for (const root of document.querySelectorAll('[data-testid="stMarkdownContainer"]')) {
    if (!root.checkVisibility()) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = []; let text = "";
    while (walker.nextNode()) { nodes.push([walker.currentNode, text.length]); text += walker.currentNode.data; }
    const at = text.indexOf(arguments[0]), end = at + arguments[0].length;
    if (at < 0) continue;
    const [a, aoff] = nodes.find(([n, off]) => at >= off && at < off + n.data.length);
    const [b, boff] = nodes.find(([n, off]) => end > off && end <= off + n.data.length);
    const r = document.createRange(); r.setStart(a, at - aoff); r.setEnd(b, end - boff);
    getSelection().removeAllRanges(); getSelection().addRange(r);
    return getSelection().toString();
}
return null;
"""


def identity_headers(port: int) -> dict[str, str]:
    """What the authenticating proxy says of the person: an e-mail address, groups that GFM would link."""
    return {"X-Forwarded-User": "ops", "X-Forwarded-Email": MAIL,
            "X-Forwarded-Groups": f"sre,www.evil-group.example,http://127.0.0.1:{port}/leak-group",
            "X-Keel-Proxy-Secret": PROXY_SECRET}


def uploads(tmp_path, v: dict[str, str]) -> tuple[str, str]:
    """A state-change log and a kafka-log-dirs.sh document that name LINK_TOPIC (and a log dir that is a URL)."""
    from tests.domain.test_logdirs import doc
    from tests.domain.test_state_changes import B1

    log = tmp_path / "broker-1.log"
    log.write_text(B1.replace(" ev-", f" {LINK_TOPIC}-"))
    dirs = tmp_path / "logdirs-www.evil-file.example.json"
    dirs.write_text(json.dumps(doc({1: {v["link_config"]: {f"{LINK_TOPIC}-0": 900, f"{LINK_TOPIC}-1": 500},
                                        "/d1/b": {}},
                                    3: {"/d3/a": {f"{LINK_TOPIC}-0": 900}, "/d3/b": {f"{LINK_TOPIC}-1": 500}}})))
    return str(log), str(dirs)


NAME_FIELD = "input[placeholder='e.g. orders.v1']"  # Create topic's name


def test_chromium_fetches_and_links_nothing_a_cluster_wrote(cluster, leak_server, zk_connect, tmp_path, chromium):
    """Every page, behind the proxy: no request to the counting server, no link out of the app, the names as typed."""
    from selenium.webdriver.common.action_chains import ActionChains

    from core.audit.store import Store
    from tests.support.auth_helpers import HOST, HeaderProxy, serve_app

    v = cluster
    browser = chromium
    port = leak_server.server_address[1]
    groups_url = f"http://127.0.0.1:{port}/leak-group"
    Store(tmp_path / "keel.sqlite").record(
        cluster="x", kind="alter-config", target=LINK_TOPIC, ok=True, actor=MAIL, source="proxy", role="admin",
        summary=f"altered config of {LINK_TOPIC}: cleanup.policy={v['link_config']}", result="written",
        payload={LINK_TOPIC: {"cleanup.policy": v["link_config"]}})  # History shows it as JSON
    state_log, log_dirs = uploads(tmp_path, v)
    config = ('[keel]\nrole = "viewer"\n[auth]\nmode = "proxy"\n[access]\nadmin = ["group:sre"]\n'
              f'[clusters.x]\nzk = "{zk_connect}"\n')
    links: dict[str, list[str]] = {}

    def body() -> str:
        return e2e.body_text(browser)

    def visit(path: str, ready: str, *, then=None) -> str:
        browser.get(url + path)
        e2e.wait_for(lambda: ready in body() and MAIL in body(), 45, f"{ready!r} on {path}")
        if then is not None:
            then()
        time.sleep(1.5)  # time for any image to load and the live fragments to redraw
        assert leak_server.hits == [], f"{path} made the browser fetch {leak_server.hits}"
        links[path] = browser.execute_script(OUT_LINKS)
        return body()

    def upload(path: str, ready: str):
        def go():
            browser.find_element("css selector", "input[type=file]").send_keys(path)
            e2e.wait_for(lambda: ready in body(), 45, ready)
        return go

    def copy(text: str) -> None:
        assert browser.execute_script(SELECT, text) == text, f"{text!r} is not on the page as typed"
        ActionChains(browser).key_down(e2e.Keys.CONTROL).send_keys("c").key_up(e2e.Keys.CONTROL).perform()

    def paste_into(field) -> str:
        field.click()
        field.send_keys(e2e.Keys.CONTROL, "a")
        field.send_keys(e2e.Keys.DELETE)
        ActionChains(browser).key_down(e2e.Keys.CONTROL).send_keys("v").key_up(e2e.Keys.CONTROL).perform()
        return field.get_attribute("value")

    def paste_name(expected: str):
        """Paste into Create topic's name field once the page is idle; a rerun that remounts the field while the
        page still draws itself drops the paste (seen under three test workers): pasted again, at most twice."""
        from selenium.common.exceptions import StaleElementReferenceException

        value = None
        for _ in range(3):
            e2e.wait_for(lambda: e2e.page_idle(browser), 45, "the page to be idle")
            field = e2e.wait_for(lambda: browser.find_elements("css selector", NAME_FIELD), 45, "the topic name")[0]
            try:
                value = paste_into(field)
                time.sleep(0.5)
                if field.get_attribute("value") == expected:
                    return field
            except StaleElementReferenceException:
                continue
        raise AssertionError(f"the name field holds {value!r} after pasting {expected!r}")

    with serve_app(tmp_path, config, env={"KEEL_PROXY_SECRET": PROXY_SECRET}) as direct, \
            HeaderProxy((HOST, int(direct.rsplit(":", 1)[1])), identity_headers(port)) as proxy:
        url = proxy.url
        # Overview: the broker table (st.table) with the racks and hosts, the cluster id, who is signed in
        browser.get(url + "/")
        rows = e2e.wait_for(lambda: (r := e2e.broker_rows(browser)) and len(r) == 3 and r, 45, "the broker table")
        text = visit("/", "Partition health")
        assert rows[1]["Rack"] == v["rack"] and rows[1]["Host"] == v["host"]  # shown literally
        assert rows[3]["Rack"] == MAIL and rows[3]["Host"] == v["link_host"]
        assert v["cluster_id"] in text and f"Signed in as {MAIL} (proxy)" in text
        assert f"groups sre, www.evil-group.example, {groups_url}" in text

        visit("/brokers", "Racks")
        for b in (1, 2, 3):
            visit(f"/broker?broker={b}", "Endpoints")
        assert MAIL in body()  # broker 3's rack, a metric
        visit("/topics", "Choose a topic")
        # __x__ through the picker: its config overrides and the preview that names it
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
        assert f"to {TOPIC} (3 → 4)" in body()  # the name as typed, not a bold "x"
        links["/topics (__x__)"] = browser.execute_script(OUT_LINKS)
        text = visit(f"/topics?topic={LINK_TOPIC}", "config override(s)",
                     then=lambda: e2e.click_text(browser, "summary", "config override(s)", timeout=30))
        assert f"to {LINK_TOPIC} (2 → 3)" in text
        visit("/leaders", "Preferred-leader election")
        visit(f"/leaders?scope=One+topic&topic={LINK_TOPIC}", f"of {LINK_TOPIC} off their preferred leader")
        # commands to copy are code blocks: in a code span the escapes would show
        assert f"--zk {zk_connect} --broker 1" in visit("/restart", "Restart order")
        visit("/log_dirs", "Upload the output",
              then=upload(log_dirs, "Imbalance between the directories of one broker"))
        visit("/consumer_groups", "Consumer groups live in the brokers")
        text = visit("/state_changes", "Upload one or more", then=upload(state_log, "Download the merged timeline"))
        assert f"state-changes FILE... --topic {LINK_TOPIC}" in text
        visit("/reassign", "Goal")
        visit("/reassign?goal=Drain+brokers", "Choose the broker(s) to drain")
        visit("/history", "actions, newest first")
        visit("/fleet", "Fleet heatmaps")
        text = visit("/history?action=1", f"alter-config {LINK_TOPIC}")
        assert f"altered config of {LINK_TOPIC}: cleanup.policy={v['link_config']}" in text
        e2e.screenshot(browser, tmp_path, "links-history")
        bad = {page: found for page, found in links.items() if found}
        assert not bad, (f"{sum(map(len, bad.values()))} link(s) out of the app, made of cluster data, on {len(bad)} "
                         f"of {len(links)} pages: {bad}")

        # what an operator copies is the name: the cluster id and the topic, pasted into Create topic's name field
        copy(v["link_config"])
        browser.get(url + "/create_topic")
        paste_name(v["link_config"])  # the text pasted is the value shown
        browser.get(url + "/history?action=1")
        e2e.wait_for(lambda: f"alter-config {LINK_TOPIC}" in body(), 45, "the action")
        copy(LINK_TOPIC)
        text = visit("/create_topic", "replica-assignment algorithm", then=lambda: (
            paste_name(LINK_TOPIC).send_keys(e2e.Keys.ENTER),
            e2e.wait_for(lambda: "already exists" in body(), 30, "the name check")))
        assert f"Topic '{LINK_TOPIC}' already exists." in text and not links["/create_topic"]

