"""A rollback runs at the throttle its reassignment ran with unless told otherwise (issue 23, item 6): the CLI's
`rollback` (default, --throttle, --no-throttle, and what it prints) and the Reassign page's rollback control (the
rate offered, changed, turned off, confirmed per rate, guarded against a click that races an edit), against a real
ZooKeeper holding a hand-written cluster whose reassignment is recorded as finished. No controller runs: the
rollback's node and throttles stay as written, to be read. The brokers' view of the same throttles is in
tests/kafka/test_rollback_throttle.py.
"""

from __future__ import annotations

import json

import pytest

from core import zkformat as zf
from core.cli import main
from core.audit.store import Store
from core.zk.reassign_writes import (AS_RECORDED, FOLLOWER_RATE, FOLLOWER_THROTTLED, LEADER_RATE, LEADER_THROTTLED,
                                     rollback)
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.dashboard.test_dashboard_actions import ACTOR, by_prefix, errors, ok  # noqa: F401
from tests.dashboard.test_dashboard_apptest import app, texts, write_config  # noqa: F401
from tests.dashboard.test_dashboard_reassign import throttle_configs

PAGE = "reassign/page.py"
RATE = 2_000_000
BEFORE = {0: [1, 2], 1: [2, 1]}
AFTER = {0: [3, 2], 1: [3, 1]}  # the reassignment's target: every broker takes part in moving back


def _doc(assignment: dict[int, list[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": p, "replicas": r}
                                                    for p, r in assignment.items()]})


@pytest.fixture
def tree(zk_connect):
    """Brokers 1-3, topic t at the reassignment's target; no controller, so nothing the rollback writes moves."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None}, controller=1)
        write_topic(s, "t", AFTER)
        yield s


def recorded(store: Store, cluster: str, throttle: int | None) -> int:
    """A finished reassignment BEFORE -> AFTER in the action history, executed at `throttle`."""
    action = store.begin(cluster=cluster, kind="reassignment", target="2 partitions", summary="reassignment",
                         payload={"plan": _doc(AFTER), "throttle": throttle, "writes": []}, rollback=_doc(BEFORE))
    store.finish(action, ok=True, result="started")
    return action


def rates(session) -> dict[str, dict[str, str]]:
    """What the rollback wrote: the brokers' rates, and the topic's throttled replicas as sets."""
    out = {}
    for path, keys in throttle_configs(session).items():
        out[path] = {k: (set(v.split(",")) if k.endswith("replicas") else v) for k, v in keys.items()}
    return out


def throttled_at(rate: int) -> dict:
    """Kafka's throttles for moving t back: leaders on the current replicas, followers on the ones added."""
    brokers = {zf.broker_config_path(b): {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)} for b in (1, 2, 3)}
    return {**brokers, zf.topic_config_path("t"): {LEADER_THROTTLED: {"0:3", "0:2", "1:3", "1:1"},
                                                   FOLLOWER_THROTTLED: {"0:1", "1:2"}}}


# --- the CLI and the engine ---------------------------------------------------------------------------------------


def cli(capsys, zk_connect, store, *argv) -> tuple[int, str, str]:
    code = main(["rollback", "--zk", zk_connect, "--store", str(store.path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_rollback_defaults_to_the_rate_the_reassignment_ran_with(tree, zk_connect, store, capsys):
    action = recorded(store, zk_connect, RATE)
    code, out, err = cli(capsys, zk_connect, store, "--action", str(action))
    assert code == 0, err
    assert (f"Rollback throttled at 2,000,000 B/s, the rate action #{action} ran with, on brokers 1,2,3 until "
            "verify; --throttle BYTES_PER_S to change it, --no-throttle to run it unthrottled.") in out
    assert rates(tree) == throttled_at(RATE)
    [done] = store.actions(zk_connect, kind="rollback")
    assert done.payload["throttle"] == RATE and done.rollback_of == action


def test_cli_rollback_defaults_to_the_throttle_in_force_after_a_later_change(tree, zk_connect, store, capsys):
    """Issue 28 leftover: a `throttle` change (or the auto-throttle loop) while it ran is the rate in force."""
    action = recorded(store, zk_connect, RATE)
    parts = [["t", 0], ["t", 1]]
    for rate, partitions in ((5_000_000, parts), (7_000_000, [["other", 0]])):  # the second: another reassignment
        change = store.begin(cluster=zk_connect, kind="throttle", target="brokers 1,2,3", summary="throttle",
                             payload={"throttle": rate, "brokers": [1, 2, 3], "partitions": partitions})
        store.finish(change, ok=True, result="set")
    first = change - 1
    code, out, err = cli(capsys, zk_connect, store, "--action", str(action))
    assert code == 0, err
    assert (f"Rollback throttled at 5,000,000 B/s, the rate in force when action #{action} ended (set by action "
            f"#{first}), on brokers 1,2,3 until verify") in out
    assert rates(tree) == throttled_at(5_000_000)
    [done] = store.actions(zk_connect, kind="rollback")
    assert done.payload["throttle"] == 5_000_000


def test_cli_rollback_throttle_given(tree, zk_connect, store, capsys):
    action = recorded(store, zk_connect, RATE)
    code, out, err = cli(capsys, zk_connect, store, "--action", str(action), "--throttle", "3500000")
    assert code == 0, err
    assert f"Rollback throttled at 3,500,000 B/s (action #{action} ran at 2,000,000 B/s), on brokers 1,2,3" in out
    assert "--no-throttle" not in out
    assert rates(tree) == throttled_at(3_500_000)


def test_cli_rollback_no_throttle(tree, zk_connect, store, capsys):
    action = recorded(store, zk_connect, RATE)
    code, out, err = cli(capsys, zk_connect, store, "--action", str(action), "--no-throttle")
    assert code == 0, err
    assert f"Rollback unthrottled (action #{action} ran at 2,000,000 B/s)." in out
    assert rates(tree) == {} and tree.exists(zf.REASSIGN)


def test_cli_rollback_of_an_unthrottled_reassignment_says_so(tree, zk_connect, store, capsys):
    action = recorded(store, zk_connect, None)
    code, out, err = cli(capsys, zk_connect, store, "--action", str(action))
    assert code == 0, err
    assert f"Rollback unthrottled, as action #{action} ran; --throttle BYTES_PER_S to throttle it." in out
    assert rates(tree) == {}


@pytest.mark.parametrize("argv,message", [
    (["--throttle", "5", "--no-throttle"], "not allowed with argument"),
    (["--throttle", "0"], "--throttle must be a positive number of bytes per second, got 0"),
    (["--throttle", str(2**63)], "must be a whole number between -9,223,372,036,854,775,808 and "
                                 "9,223,372,036,854,775,807"),  # a usage error: core.cli.argtypes
])
def test_cli_rollback_refuses_a_bad_throttle_and_writes_nothing(tree, zk_connect, store, capsys, argv, message):
    action = recorded(store, zk_connect, RATE)
    before = dump_tree(tree)
    try:
        code, _, err = cli(capsys, zk_connect, store, "--action", str(action), *argv)
    except SystemExit as e:  # argparse: a usage error
        code, err = e.code, capsys.readouterr().err
    assert code in (1, 2) and message in err, err
    assert dump_tree(tree) == before and [a.id for a in store.actions()] == [action]


def test_rollback_help_describes_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["rollback", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("--throttle BYTES_PER_S replication throttle of the rollback in bytes/s",
                   "(default: the rate the reassignment ran with, from the action history; none if it ran "
                   "unthrottled)", "--no-throttle run the rollback unthrottled",
                   "--cluster NAME cluster name the rollback is recorded under",
                   "--store FILE|URL the action history holding the reassignment"):
        assert needle in text, needle


def test_engine_default_and_explicit_choices(tree, zk_connect, store):
    action = recorded(store, zk_connect, RATE)
    done = rollback(tree, store, action, cluster=zk_connect)
    assert done.rollback_throttle.rate == RATE == done.throttles.rate
    assert done.rollback_throttle.describe() == f"throttled at 2,000,000 B/s, the rate action #{action} ran with"
    assert AS_RECORDED == "as recorded"


# --- the Reassign page ----------------------------------------------------------------------------------------------


def follow(zk_connect, tmp_path, monkeypatch, action: int):
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    ok(at)
    at.switch_page(PAGE).run()
    ok(at)
    at.selectbox(key="ra_follow_id").set_value(action)
    at.button(key="ra_follow").click().run()
    ok(at)
    return at


def roll_back(at) -> None:
    assert at.button(key="ra_rollback").disabled  # not confirmed
    by_prefix(at.checkbox, "ra_roll_confirm_").check().run()
    at.button(key="ra_rollback").click().run()
    ok(at)
    assert not at.error, errors(at)


def test_page_offers_the_rate_the_reassignment_ran_with(tree, zk_connect, tmp_path, monkeypatch, store):
    action = recorded(store, "demo", RATE)
    at = follow(zk_connect, tmp_path, monkeypatch, action)
    assert at.toggle(key=f"ra_roll_throttle_on_{action}").value is True
    assert at.text_input(key=f"ra_roll_throttle_{action}").value == "2"  # MB/s, as Execute's throttle
    said = f"throttled at 2,000,000 B/s, the rate action #{action} ran with"
    assert f"Rollback: {said}." in texts(at.caption)
    assert said in by_prefix(at.checkbox, "ra_roll_confirm_").label.replace("\\", "")  # markdown escapes
    roll_back(at)
    assert rates(tree) == throttled_at(RATE)
    assert f"Rollback of action #{action} started" in texts(at.success) and "throttled at 2,000,000 B/s" in \
        texts(at.success)
    [done] = store.actions("demo", kind="rollback")
    assert (done.payload["throttle"], done.actor) == (RATE, ACTOR)


def test_page_rollback_at_another_rate(tree, zk_connect, tmp_path, monkeypatch, store):
    action = recorded(store, "demo", RATE)
    at = follow(zk_connect, tmp_path, monkeypatch, action)
    by_prefix(at.checkbox, "ra_roll_confirm_").check().run()
    at.text_input(key=f"ra_roll_throttle_{action}").input("3.5").run()
    ok(at)
    # the tick was for 2 MB/s: a new rate needs a new one
    assert at.button(key="ra_rollback").disabled and by_prefix(at.checkbox, "ra_roll_confirm_").value is False
    assert f"Rollback: throttled at 3,500,000 B/s (action #{action} ran at 2,000,000 B/s)." in texts(at.caption)
    roll_back(at)
    assert rates(tree) == throttled_at(3_500_000)


@pytest.mark.parametrize("ran_at,caption", [
    (RATE, "Rollback: unthrottled (action #{action} ran at 2,000,000 B/s)."),  # turned off
    (None, "Rollback: unthrottled, as action #{action} ran."),  # off by default
])
def test_page_rollback_unthrottled(tree, zk_connect, tmp_path, monkeypatch, store, ran_at, caption):
    action = recorded(store, "demo", ran_at)
    at = follow(zk_connect, tmp_path, monkeypatch, action)
    assert at.toggle(key=f"ra_roll_throttle_on_{action}").value is (ran_at is not None)
    if ran_at is not None:
        at.toggle(key=f"ra_roll_throttle_on_{action}").set_value(False).run()
    assert at.text_input(key=f"ra_roll_throttle_{action}").disabled
    assert caption.format(action=action) in texts(at.caption)
    roll_back(at)
    assert rates(tree) == {} and tree.exists(zf.REASSIGN)


def test_page_rollback_refuses_a_bad_rate_and_a_racing_edit(tree, zk_connect, tmp_path, monkeypatch, store):
    action = recorded(store, "demo", RATE)
    at = follow(zk_connect, tmp_path, monkeypatch, action)
    before = dump_tree(tree)
    at.text_input(key=f"ra_roll_throttle_{action}").input("fast").run()
    assert "Rollback throttle (MB/s)" in errors(at) and at.button(key="ra_rollback").disabled
    assert by_prefix(at.checkbox, "ra_roll_confirm_").disabled
    at.text_input(key=f"ra_roll_throttle_{action}").input("2").run()
    by_prefix(at.checkbox, "ra_roll_confirm_").check().run()
    # an edit sent with the click (typed, then clicked before the field lost focus): nothing is written
    at.text_input(key=f"ra_roll_throttle_{action}").input("40")
    at.button(key="ra_rollback").click().run()
    ok(at)
    assert "The form changed as the button was pressed" in errors(at)
    assert dump_tree(tree) == before and store.actions("demo", kind="rollback") == []
