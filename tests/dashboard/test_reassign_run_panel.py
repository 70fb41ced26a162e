"""Issue 24, item 7: the Reassign page's run panel through Streamlit's AppTest, against a real ZooKeeper.

- One count: the partitions the panel says are in progress are the ones its Cancel offers (core.plans'
  reassignment_status for both); a partition whose topic went is "gone", neither in progress nor cancellable.
- A run picked up from History that Verify already found complete is shown as verified, not "Verify to remove the
  throttles".
- The list of earlier runs names a rollback as the rollback of its action, not "reassignment of N partitions".
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

from core import zkformat as zf
from core.plans import ReassignmentEntry, ReassignmentPlan, parse_reassignment, reassignment_status
from core.zk import reassign_writes
from dashboard.reassign import plan_view
from tests.support.kafka_tree import write_topic
from tests.support.sandbox_helpers import wait_until
from tests.dashboard.test_dashboard_actions import ACTOR, ok, open_page  # noqa: F401
from tests.dashboard.test_dashboard_apptest import live_connection, texts  # noqa: F401
from tests.dashboard.test_dashboard_reassign import PAGE, metrics  # noqa: F401
from tests.dashboard.test_reassign_cancel_page import cluster, execute_from_page, open_reassign  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")


def test_cancel_offers_the_partitions_the_panel_counts_in_progress(frozen_tree, zk_connect, tmp_path, monkeypatch,
                                                                   store, closed_port):
    write_topic(frozen_tree, "u", {0: [1, 2], 1: [2, 3]})
    at = open_reassign(tmp_path, monkeypatch, cluster(zk_connect, closed_port))
    conn = live_connection("demo")
    wait_until(lambda: conn.snapshot().topic("u") is not None, timeout=10, message="topic u in the live view")
    # no controller: the node stays, every partition of the plan is in progress
    execute_from_page(at, {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [3, 4]}, {"topic": "t", "partition": 1, "replicas": [4, 1]},
        {"topic": "u", "partition": 0, "replicas": [3, 4]}, {"topic": "u", "partition": 1, "replicas": [4, 1]}]})
    [action] = store.actions("demo")
    assert metrics(at)["In progress"] == "4"
    assert offered(at, action.id) == 4

    # topic u goes while its partitions are still listed in /admin/reassign_partitions
    frozen_tree.delete(zf.topic_path("u"), recursive=True)
    frozen_tree.delete(zf.topic_config_path("u"))
    wait_until(lambda: conn.snapshot().topic("u") is None, timeout=10, message="topic u gone from the live view")
    assert {(e.topic, e.partition) for e in zf.decode_reassignment(frozen_tree.get(zf.REASSIGN).data)} == \
        {("t", 0), ("t", 1), ("u", 0), ("u", 1)}
    at.run()
    ok(at)
    shown = metrics(at)
    assert (shown["In progress"], shown["Gone"]) == ("2", "2"), shown
    assert offered(at, action.id) == int(shown["In progress"]), at.checkbox(key=f"ra_cancel_confirm_{action.id}")
    assert f"Cancel the 2 running partition(s) of action #{action.id}" in \
        at.checkbox(key=f"ra_cancel_confirm_{action.id}").label


def offered(at, action_id: int) -> int:
    """How many partitions the run panel's Cancel confirmation names."""
    return int(re.search(r"Cancel the (\d+) ", at.checkbox(key=f"ra_cancel_confirm_{action_id}").label).group(1))


def _one_move(sb) -> ReassignmentPlan:
    snap = sb.snapshot()
    part = next(p for p in snap.partitions() if not p.topic.startswith("_") and len(p.replicas) >= 2)
    newcomer = next(b.id for b in snap.brokers if b.alive and b.id not in part.replicas)
    return ReassignmentPlan((ReassignmentEntry(part.topic, part.partition, (newcomer, *part.replicas[1:])),))


def _finished(sb, plan: ReassignmentPlan) -> None:
    wait_until(lambda: all(s.status.finished for s in reassignment_status(plan, sb.snapshot())) and
               not sb.session.exists(zf.REASSIGN), timeout=30, message="the reassignment to finish")


def _follow(at, action_id: int) -> None:
    at.selectbox(key="ra_follow_id").select(action_id).run()
    at.button(key="ra_follow").click().run()
    ok(at)


def test_a_verified_run_is_followed_as_verified_and_a_rollback_is_named_so(quick, zk_connect, tmp_path, monkeypatch,
                                                                           store):
    plan = _one_move(quick)
    done = reassign_writes.execute(quick.session, store, plan, cluster="demo", throttle=5_000_000, actor=ACTOR)
    _finished(quick, plan)
    assert reassign_writes.verify(quick.session, store, plan, cluster="demo", actor=ACTOR).complete
    assert store.action(done.action_id).completed_at

    # another session picks it up from the list of earlier runs
    at = open_page(quick, zk_connect, tmp_path, monkeypatch, PAGE, role="admin")
    _follow(at, done.action_id)
    panel = texts(at.success)
    assert "Complete and verified" in panel, panel
    assert "Verify to remove the throttles" not in panel

    # its rollback, run from the CLI's engine, and the list of earlier runs
    rolled = reassign_writes.rollback(quick.session, store, done.action_id, cluster="demo", actor=ACTOR)
    _finished(quick, recorded_plan(store, rolled.action_id))
    at.button(key="ra_dismiss").click().run()  # the list is offered while the session follows no run
    ok(at)
    labels = {int(o.split(" · ")[0].lstrip("#")): o for o in at.selectbox(key="ra_follow_id").options}
    assert f"rollback of action #{done.action_id} (1 partitions)" in labels[rolled.action_id], labels
    assert "reassignment of" not in labels[rolled.action_id]
    assert "verified complete" in labels[done.action_id] and f"rolled back by #{rolled.action_id}" in \
        labels[done.action_id], labels
    # followed, it is headed as the rollback it is; not verified yet, it asks for Verify (it ran throttled)
    _follow(at, rolled.action_id)
    assert f"Action #{rolled.action_id}: Rollback of action #{done.action_id}" in [s.value for s in at.subheader]
    assert "Verify to remove the throttles" in texts(at.success)


def recorded_plan(store, action_id: int) -> ReassignmentPlan:
    return parse_reassignment(store.action(action_id).payload["plan"])


def test_run_labels_are_pure():
    from core.audit.store import Action

    def action(**kw):
        base = dict(id=7, at="2026-11-22T03:00:00Z", actor="bob", cluster="c", kind="reassignment",
                    target="27 partitions", summary="reassignment of 27 partitions (27 moving replicas sets)",
                    payload={}, rollback=None, status="applied", result=None, finished=None)
        return Action(**{**base, **kw})

    assert plan_view.run_label(action()) == \
        "#7 · 2026-11-22 03:00:00 · bob · reassignment of 27 partitions (27 moving replicas sets)"
    assert plan_view.run_label(action(kind="rollback", rollback_of=3, completed_at="2026-11-22T04:00:00Z")) == \
        "#7 · 2026-11-22 03:00:00 · bob · rollback of action #3 (27 partitions) · verified complete 2026-11-22 04:00:00"
    assert plan_view.run_label(action(rolled_back_by=(9,))).endswith("· rolled back by #9")
    assert plan_view.epoch("2026-11-22T03:00:00Z") == datetime(2026, 11, 22, 3, tzinfo=timezone.utc).timestamp()
    assert abs(plan_view.epoch("not a time") - time.time()) < 60
