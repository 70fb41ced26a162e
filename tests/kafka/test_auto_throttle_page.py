"""Issue 28 item 3: the Reassign page follows an auto-throttle loop started from the command line, and the command
line follows one started from the page (Streamlit AppTest against the real ZooKeeper-mode cluster with bootstrap).
Both read the same heartbeat rows (the audit store's throttle_loops): (a) a `python -m core auto-throttle` process is
listed on the page as active with its budget, last rate and last beat; killed, the page says it died and that its
rate stays; (b) a loop started with the page's control is alive in `status` and `verify`, and the page's Stop ends
its row."""

from __future__ import annotations

import json

import os
import signal
import subprocess
import sys

import pytest

from core.audit.store import Store, ThrottleLoops
from core.cluster import auto_throttle as loops
from tests.dashboard.test_dashboard_apptest import texts
from tests.kafka.realkafka import RealKafka, eventually, needs_kafka
from tests.kafka.test_reassign_progress_page import ACTOR, CLUSTER, _open, page_env  # noqa: F401
from tests.kafka.test_reassign_progress_real import _moving

pytestmark = [needs_kafka("2.4", "listPartitionReassignments (KIP-455)"), pytest.mark.usefixtures("fresh_connections")]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START, BUDGET = 100_000, 150_000  # B/s: 2 x 3 MB stay copying for the whole test (cancelled at its end)


def _cli(kafka: RealKafka, *argv: str, **kw):
    return subprocess.Popen([sys.executable, "-m", "core", *argv, "--zk", kafka.zk_connect, "--bootstrap-server",
                             kafka.bootstrap, "--store", str(kafka.store), "--cluster", CLUSTER],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": REPO}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _run(kafka: RealKafka, *argv: str) -> tuple[int, str, str]:
    p = _cli(kafka, *argv)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def _captions(at) -> str:
    return texts(at.caption)


def _beaten(store: Store, rate: int | None = None, proc: subprocess.Popen | None = None):
    assert proc is None or proc.poll() is None, proc.communicate()
    rows = ThrottleLoops(store).of(CLUSTER, running_only=True)  # newest first (a killed loop's row stays open)
    assert rows, "no loop row yet"
    row = rows[0]
    assert row.rate is not None and (rate is None or row.rate == rate), row
    return row


def test_the_page_follows_a_cli_loop_and_the_cli_follows_the_pages(page_env: RealKafka, tmp_path):  # noqa: F811
    kafka = page_env
    store = Store(kafka.store)
    topic, plan = _moving(kafka, tmp_path, "autopage", rate=START, size=3_000_000)

    # (a) a loop started from the command line, in its own process
    cli = _cli(kafka, "auto-throttle", "--budget", str(BUDGET), "--interval", "1")
    try:
        row = eventually(lambda: _beaten(store, BUDGET, cli), timeout=20)  # its second measurement raised the rate
        assert (row.owner, row.pid) == ("cli", cli.pid)
        at = _open()
        said = _captions(at)
        assert "auto-throttle active: budget 150.0 KB/s, last rate 150.0 KB/s, last beat" in said, said
        assert f"pid {cli.pid}" in said and "by cli" in said, said
        assert not _has(at, "ra_auto_start"), "a second loop offered while one is alive"
        cli.send_signal(signal.SIGKILL)
        cli.wait(10)
        at.run()
        said = _captions(at)
        assert "an auto-throttle loop was running and is no longer alive" in said, said
        assert "the throttle it last set stays in place (last rate 150.0 KB/s)" in said, said
        assert f"pid {cli.pid}" in said, said
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(10)

    # (b) a loop started from the page: a thread of this (the Streamlit server's) process
    assert _has(at, "ra_auto_start"), "no start control while the only loop is dead"
    at.number_input(key="ra_auto_mb").set_value(0.2)
    at.button(key="ra_auto_start").click().run()
    assert not at.exception, at.exception
    assert not at.error, texts(at.error)
    assert "Auto-throttle loop #" in texts(at.success) and "budget 200.0 KB/s" in texts(at.success), texts(at.success)
    try:
        row = eventually(lambda: _beaten(store), timeout=20)
        assert (row.owner, row.pid, row.actor) == ("dashboard", os.getpid(), ACTOR)
        code, out, err = _run(kafka, "status", "--json")
        assert code == 0, err
        assert "note: auto-throttle active: budget 200.0 KB/s" in err and f"pid {os.getpid()}" in err, err
        listed = json.loads(out)["auto_throttle_loops"]  # in the JSON too (beside part (a)'s dead one)
        [mine] = [x for x in listed if x["pid"] == os.getpid()]
        assert mine["state"] == "alive" and "budget 200.0 KB/s" in mine["note"], listed
        code, out, err = _run(kafka, "verify", "--reassignment-json-file", plan)
        assert code == 3, out + err  # still running
        assert "note: auto-throttle active: budget 200.0 KB/s" in err, err
        at.run()
        assert "auto-throttle active: budget 200.0 KB/s" in _captions(at)
        at.button(key="ra_auto_stop").click().run()
        assert not at.exception, at.exception
        said = texts(at.success)
        assert f"Auto-throttle loop #{row.id} stopped: the last rate (" in said and "stays in place" in said, said
    finally:
        loops.stop_background(CLUSTER)
    [ended] = [r for r in ThrottleLoops(store).of(CLUSTER) if r.id == row.id]
    assert ended.ended and ended.end_reason == "stopped: the last rate stays in place", ended
    assert not loops.background(CLUSTER).thread.is_alive()
    code, out, err = _run(kafka, "status", "--json")
    assert code == 0 and "auto-throttle active" not in err, err
    at.run()
    assert "auto-throttle active" not in _captions(at) and not _has(at, "ra_auto_stop")


def _has(at, key: str) -> bool:
    try:
        at.button(key=key)
    except KeyError:
        return False
    return True
