"""Issue 24, item 9: every command the pages show for copying is a code block of shell-quoted words, copyable as is.

In a markdown code span the escapes that keep cluster values text showed (`127\\.0.0.1\\:55509`, `--topic
\\_\\_consumer\\_offsets`). Each page and state that shows a command is opened through AppTest on a real ZooKeeper;
every line of every bash block must hold no backslash and split (shlex, as a shell does) into the argv the page
means: the cluster's own connect string, bootstrap servers and names, word for word.
"""

from __future__ import annotations

import json
import shlex

from core import zkformat as zf
from sandbox.seed import SandboxSpec
from dashboard import actions
from dashboard.reassign import plan_view
from tests.support.sandbox_helpers import running_sandbox, wait_until
from tests.dashboard.test_dashboard_actions import ok, open_page  # noqa: F401
from tests.dashboard.test_dashboard_apptest import app, live_connection, texts, write_config  # noqa: F401
from tests.domain.test_logdirs import DOC


def commands(at) -> list[list[str]]:
    """The argv of every line of every bash code block on the page (markdown escapes are refused first)."""
    out = []
    for block in at.code:
        if block.proto.language != "bash":
            continue
        assert "\\" not in block.value, block.value  # an escape, or a line continuation nobody asked for
        out += [shlex.split(line) for line in block.value.splitlines() if line.strip()]
    return out


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_commands_on_create_topic_leaders_reassign_and_restart(zk_connect, tmp_path, monkeypatch, store):
    with running_sandbox(zk_connect, SandboxSpec(brokers=4, racks=2, topics=4, seed=3)) as sb:
        assert sb.emulator.wait_idle(10)
        sb.stop_broker(1)  # its leaderships move; back, it leads nothing: an election has work
        sb.start_broker(1)
        sb.emulator.wait_idle(10)
        at = open_page(sb, zk_connect, tmp_path, monkeypatch, "views/create_topic.py")
        conn = live_connection("demo")
        wait_until(lambda: 1 in conn.snapshot().alive_broker_ids, timeout=10, message="broker 1 back")
        servers = actions.bootstrap_servers(conn.snapshot())
        assert servers.count(",") == 2 and "127.0.0.1:" in servers

        name = "my_orders.v2"
        at.text_input(key="ct_name").input(name).run()
        ok(at)
        found = commands(at)
        by_tool = {argv[0] if argv[0] != "python" else argv[3]: argv for argv in found}
        topics, zk_form = [a for a in found if a[0] == "kafka-topics.sh"]
        assert option(topics, "--bootstrap-server") == servers and option(topics, "--topic") == name
        assert option(zk_form, "--zookeeper") == zk_connect and option(zk_form, "--topic") == name
        assert topics[3:] == zk_form[3:]  # the same create
        assert by_tool["advise-partitions"] == ["python", "-m", "core", "advise-partitions", "--target-mbps", "100",
                                                "--producer-mbps", "10", "--consumer-mbps", "20", "--brokers", "4"]

        at.switch_page("views/leaders.py").run()
        ok(at)
        kafka, keel = [a for a in commands(at) if "preferred-election.json" in a]
        assert kafka == ["kafka-leader-election.sh", "--bootstrap-server", servers, "--election-type", "preferred",
                         "--path-to-json-file", "preferred-election.json"]
        assert keel == ["python", "-m", "core", "elect", "--zk", zk_connect, "--path-to-json-file",
                        "preferred-election.json"]

        at.switch_page("reassign/page.py").run()
        at.radio(key="goal").set_value(plan_view.GOAL_DRAIN).run()
        at.multiselect(key="drain").set_value([4]).run()
        at.session_state["ra_json_open"] = True
        at.run()
        ok(at)
        lines = [a for a in commands(at) if a[0] == "kafka-reassign-partitions.sh"]
        assert [(a[1], a[2], a[-1] if "--throttle" not in a else a[-3]) for a in lines] == [
            ("--bootstrap-server", servers, "--execute"), ("--bootstrap-server", servers, "--verify"),
            ("--zookeeper", zk_connect, "--execute"), ("--zookeeper", zk_connect, "--verify")]
        assert all(option(a, "--reassignment-json-file") == "reassignment.json" for a in lines)
        assert option(lines[0], "--throttle").isdigit()

        at.switch_page("views/restart.py").run()
        ok(at)
        [check] = [a for a in commands(at) if "restart-check" in a]
        assert option(check, "--zk") == zk_connect


def test_commands_for_a_reassignment_running_without_bootstrap(frozen_tree, zk_connect, tmp_path, monkeypatch,
                                                               store):
    frozen_tree.create(zf.REASSIGN, json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [3, 4]}]}).encode())
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page("reassign/page.py").run()
    ok(at)
    found = {argv[3]: argv for argv in commands(at) if argv[:3] == ["python", "-m", "core"]}
    assert found["verify"] == ["python", "-m", "core", "verify", "--zk", zk_connect, "--reassignment-json-file",
                               "plan.json"]
    assert found["cancel"] == ["python", "-m", "core", "cancel", "--zk", zk_connect, "--bootstrap-server",
                               "HOST:PORT", "--all", "--cluster", "demo"]
    assert "exit status 3 while it runs" in texts(at.info)


def test_commands_on_the_log_dirs_page(zk_connect, tmp_path, monkeypatch):
    with running_sandbox(zk_connect, SandboxSpec(brokers=2, racks=0, topics=0, seed=1)) as sb:
        sb.session.create(zf.topic_path("t"), zf.encode_topic({0: [1, 2], 1: [2, 1], 2: [1, 2]}), makepath=True)
        sb.emulator.wait_idle(10)
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
        at = app().run()
        at.switch_page("views/log_dirs.py").run()
        ok(at)
        servers = actions.bootstrap_servers(live_connection("demo").snapshot())
        assert commands(at) == [["kafka-log-dirs.sh", "--bootstrap-server", servers, "--describe"]]
        at.file_uploader(key="ld_upload").set_value(("logdirs.json", json.dumps(DOC).encode(),
                                                     "application/json")).run()
        ok(at)
        assert commands(at) == [["kafka-reassign-partitions.sh", "--bootstrap-server", servers,
                                 "--reassignment-json-file", "log-dirs-plan.json", "--execute"]]
