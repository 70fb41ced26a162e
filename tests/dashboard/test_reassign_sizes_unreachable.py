"""Issue 24, item 6, without Kafka: when the cluster's `bootstrap` does not answer, the Reassign page says the partition
sizes could not be read and plans without them, once per connection and a bounded wait (not on every rerun); an
uploaded kafka-log-dirs file is used instead when given. Reading them from real brokers is
tests/kafka/test_reassign_page_sizes.py.
"""

from __future__ import annotations

import json
import time

import pytest

from dashboard.reassign import plan_view
from dashboard.reassign import sizes as broker_sizes
from tests.dashboard.test_dashboard_actions import ok  # noqa: F401
from tests.dashboard.test_dashboard_apptest import live_connection, metrics, texts  # noqa: F401
from tests.dashboard.test_reassign_cancel_page import cluster, open_reassign  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
PLAN = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [4, 2]}]}
LOG_DIRS = {"version": 1, "brokers": [{"broker": b, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
    {"partition": f"t-{p}", "size": 2_000_000, "offsetLag": 0, "isFuture": False} for p in range(4)]}]}
    for b in (1, 2, 3)]}


def _read(conn, bootstrap: str):
    return conn.memo(broker_sizes.MEMO).get(bootstrap)


def test_unreachable_brokers_give_a_note_once_and_a_file_still_works(frozen_tree, zk_connect, tmp_path, monkeypatch,
                                                                     store, closed_port):
    started = time.monotonic()
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect, closed_port))
    assert time.monotonic() - started < 30  # the client's timeout is 2 s here (twice connect_timeout)
    at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
    at.text_area(key="ra_import_text").input(json.dumps(PLAN)).run()
    ok(at)
    note = texts(at.caption)
    assert "Partition sizes could not be read from the brokers" in note, note
    assert f"no Kafka broker of {closed_port} answered" in note
    assert metrics(at)["Bytes moved"] == "—" and metrics(at)["Est. time"] == "—"
    assert metrics(at)["Replicas moved"] == "1"  # the plan is there, without sizes

    # kept for the connection: the next runs do not wait for the brokers again
    conn = live_connection("demo")
    first = _read(conn, closed_port)
    assert first is not None and first.sizes is None
    at.run()
    assert _read(conn, closed_port) is first
    # "Read again" asks the brokers now
    at.button(key="ra_sizes_reread").click().run()
    ok(at)
    again = _read(conn, closed_port)
    assert again is not first and again.at > first.at and again.sizes is None

    # a pasted kafka-log-dirs output is used instead
    at.text_area(key="ra_sizes_text").input(json.dumps(LOG_DIRS)).run()
    ok(at)
    assert metrics(at)["Bytes moved"] == plan_view.human_bytes(2_000_000)
    assert "Partition sizes could not be read" not in texts(at.caption)


class _Memos:
    """What from_brokers needs of a Connection: its memo dicts."""

    def __init__(self):
        self.memos: dict[str, dict] = {}

    def memo(self, name: str) -> dict:
        return self.memos.setdefault(name, {})


def test_reads_are_kept_for_a_while_and_failures_for_less():
    from types import SimpleNamespace

    from core.errors import KeelError

    conn, cluster = _Memos(), SimpleNamespace(bootstrap="b:9092")
    reads = []

    def reader(answer, age):
        def read(c):
            reads.append(c.bootstrap)
            return broker_sizes.BrokerSizes(answer, time.time() - age, None if answer else KeelError("down"))
        return read

    got = broker_sizes.from_brokers(conn, cluster, reader=reader({("t", 0): 5}, 0))
    assert broker_sizes.from_brokers(conn, cluster, reader=reader({}, 0)) is got and len(reads) == 1
    assert broker_sizes.from_brokers(conn, cluster, force=True, reader=reader({("t", 0): 6}, 0)).sizes == \
        {("t", 0): 6}
    # sizes older than MAX_AGE are read again; a failure is retried after RETRY_AFTER only
    conn.memo(broker_sizes.MEMO)[cluster.bootstrap] = broker_sizes.BrokerSizes({}, time.time() - broker_sizes.MAX_AGE
                                                                              - 1)
    assert broker_sizes.from_brokers(conn, cluster, reader=reader(None, 0)).sizes is None and len(reads) == 3
    assert broker_sizes.from_brokers(conn, cluster, reader=reader({("t", 0): 7}, 0)).sizes is None
    conn.memo(broker_sizes.MEMO)[cluster.bootstrap] = broker_sizes.BrokerSizes(
        None, time.time() - broker_sizes.RETRY_AFTER - 1, KeelError("down"))
    assert broker_sizes.from_brokers(conn, cluster, reader=reader({("t", 0): 7}, 0)).sizes == {("t", 0): 7}
    assert len(reads) == 4
