"""Issue 27 item 2, the quorum check ("KRaft quorum: a leader, every voter caught up") read from the KRaft
controllers themselves (`migration --bootstrap-controller`), as `kafka-metadata-quorum.sh --bootstrap-controller`
does: before a migration the brokers run in ZooKeeper mode and never answer DescribeQuorum.

On real parts: the shared ZooKeeper-mode cluster (`healthy`: its brokers cannot tell the quorum) with the shared
KRaft cluster's controller listeners (`kraft`: three combined nodes, every one a voter, as a migration's controllers
are voters); a voter stopped by PID fails the check by name, and the node is started again and the quorum caught up
before the test ends (the fixture is shared)."""

from __future__ import annotations

import json
import time

import pytest

from core.kafka.controller_quorum import ControllerQuorumError, controller_quorum, quorum_fact
from core.migration_readiness import (FAIL, OK, QUORUM_CAUGHT_UP_MAX_MS, UNKNOWN, ReadinessFacts, check_quorum,
                                      with_controller_quorum)
from core.model import Quorum, QuorumReplica
from sandbox.processes.common import free_port
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import RealKafka, eventually


def quorum_row(kafka: RealKafka, *extra: str) -> dict:
    out = kafka.keel_ok("migration", "--zk", kafka.zk_connect, "--bootstrap-server", kafka.bootstrap,
                        "--store", str(kafka.store), "--json", *extra)
    return {c["key"]: c for c in json.loads(out)["readiness"]}["quorum"]


def controllers(kraft: KraftCluster) -> str:
    return ",".join(b.controller_endpoint for b in kraft.brokers)


def check(addresses: str):
    return check_quorum(with_controller_quorum(ReadinessFacts(broker_ids=()), *quorum_fact(addresses, timeout=5)))


def test_the_quorum_asked_of_a_controller_is_ok_where_the_zookeeper_brokers_cannot_tell(healthy, kraft):
    assert quorum_row(healthy)["verdict"] == UNKNOWN  # ZooKeeper-mode brokers never answer DescribeQuorum
    quorum, leader_at = controller_quorum(controllers(kraft), timeout=5)
    assert quorum.leader in kraft.broker_ids and [v.id for v in quorum.voters] == sorted(kraft.broker_ids)
    follower = next(b for b in kraft.brokers if b.id != quorum.leader)
    # a follower only answers NOT_LEADER_OR_FOLLOWER: the leader's controller listener comes from DescribeCluster
    row = quorum_row(healthy, "--bootstrap-controller", follower.controller_endpoint)
    assert row["verdict"] == OK, row
    assert f"Leader {quorum.leader}" in row["detail"] and f"controller {leader_at}" in row["detail"]
    assert leader_at == kraft.broker(quorum.leader).controller_endpoint


def test_a_controller_address_that_does_not_answer_is_unknown_with_the_reason(healthy):
    nobody = f"127.0.0.1:{free_port()}"
    broker = healthy.bootstrap.split(",")[0]  # a ZooKeeper-mode broker answers ApiVersions, not DescribeQuorum
    started = time.monotonic()
    row = quorum_row(healthy, "--bootstrap-controller", f"{nobody},{broker}")
    assert time.monotonic() - started < 15
    assert row["verdict"] == UNKNOWN, row
    assert nobody in row["detail"] and "ECONNREFUSED" in row["detail"]
    assert f"{broker}: answers, but not DescribeQuorum: not a KRaft controller" in row["detail"]
    assert "--bootstrap-controller" in row["fix"]
    with pytest.raises(ControllerQuorumError, match="no KRaft controller"):
        controller_quorum(nobody, timeout=3)
    code, _, err = healthy.keel("migration", "--zk", healthy.zk_connect, "--bootstrap-controller", "nohost",
                                "--store", str(healthy.store))
    assert code != 0 and "--bootstrap-controller: 'nohost' is not host:port" in err


def test_a_stopped_voter_fails_the_check_by_name_until_it_is_back(kraft: KraftCluster):
    addresses = controllers(kraft)
    first = check(addresses)
    assert first.verdict == OK, first
    leader = controller_quorum(addresses, timeout=5)[0].leader
    victim = max(b for b in kraft.broker_ids if b != leader)  # a follower: the leader (and its epoch) stay
    kraft.stop_broker(victim)
    try:
        started = time.monotonic()

        def behind():
            c = check(addresses)
            assert c.verdict == FAIL and f"voter(s) behind: {victim} (" in c.detail, c
            return c
        failed = eventually(behind, timeout=QUORUM_CAUGHT_UP_MAX_MS / 1000 + 30, interval=1)
        # Kafka 3.9's leader: the stopped voter's lastCaughtUpTimestamp stops, its offset lag grows by the
        # controller's no-op records only (about 2 a second), far below QUORUM_LAG_MAX: the time rule says it
        print(f"\nstopped voter {victim} failed the check after {time.monotonic() - started:.1f} s: "
              f"{failed.detail}")
        assert "not caught up for" in failed.detail
    finally:
        kraft.start_broker(victim)
    eventually(lambda: _ok(check(addresses)), timeout=60, interval=1)  # caught up again: left as found
    kraft.wait_ready(timeout=60)


def test_the_page_asks_the_controllers_given_next_to_the_controller_ids(healthy, kraft, tmp_path, monkeypatch,
                                                                          fresh_connections):
    """The KRaft migration page on the ZooKeeper-mode cluster (keel.toml's zk and bootstrap), the controllers'
    address typed next to the controller ids: the quorum check is ok, told by the leader's controller listener."""
    from tests.dashboard.test_dashboard_apptest import app, table_with, write_config

    monkeypatch.setenv("KEEL_STORE", str(tmp_path / "k.sqlite"))
    write_config(tmp_path, monkeypatch, {"mig": {"zk": healthy.zk_connect, "bootstrap": healthy.bootstrap}})
    at = app().run()
    at.switch_page("views/migration.py").run()
    assert not at.exception, at.exception
    at.text_input(key="mig_controller_ids").input("3000,3001,3002").run()
    at.text_input(key="mig_controllers").input(controllers(kraft)).run()
    at.button(key="mig_check").click().run()
    assert not at.exception, at.exception
    rows = table_with(at, "Verdict", "table")
    assert rows.loc["KRaft quorum: a leader, every voter caught up", "Verdict"] == "✓ ok"
    assert rows.loc["Every broker runs Kafka 3.9", "Verdict"] == "✓ ok"


def _ok(c) -> None:
    assert c.verdict == OK, c


def test_the_time_rule_reads_the_leaders_clock_and_keeps_offset_only_answers():
    now = 1_000_000
    q = Quorum(1, 3, 100, (QuorumReplica(1, 100, now), QuorumReplica(2, 99, now - 300),
                           QuorumReplica(3, 98, now - QUORUM_CAUGHT_UP_MAX_MS - 1)))
    c = check_quorum(ReadinessFacts(broker_ids=(), quorum=q))
    assert c.verdict == FAIL and "voter(s) behind: 3 (2 behind, not caught up for 10 s)" in c.detail
    # no timestamps in the answer: the offset lag alone decides, as before
    bare = Quorum(1, 3, 100, (QuorumReplica(1, 100), QuorumReplica(2, 99), QuorumReplica(3, 98)))
    assert check_quorum(ReadinessFacts(broker_ids=(), quorum=bare)).verdict == OK
    # the controllers given win over the brokers' answer, and their failure is said, never hidden by it
    facts = ReadinessFacts(broker_ids=(), quorum=bare)
    assert "as the brokers tell" in check_quorum(with_controller_quorum(facts, None, None, None)).detail
    failed = check_quorum(with_controller_quorum(facts, None, None, "no KRaft controller of h:1 answered"))
    assert failed.verdict == UNKNOWN and "h:1" in failed.detail
