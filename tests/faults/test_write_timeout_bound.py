"""Issue 23, item 9: `--write-timeout S` bounds the whole command once the write is sent, even against a ZooKeeper
frozen (SIGSTOP) at that moment: the command returns within S + MARGIN, says the outcome is unknown, and leaves the
action pending for reconciliation.

- no-answer: a server of ZooKeeper's default tick (Keel's 15 s session granted as asked, as on a production
  ensemble; kazoo notices a silent server only after 2/3 of it, 10 s), `--write-timeout 3`. Before the fix the
  command took 13 s past the write (41 s in the report): the sync that tries to settle the outcome waited until
  kazoo dropped the connection, and the close waited for the frozen server to answer it.
- connection-lost: a server capping sessions at 4 s (tests.support.own_zk), so kazoo drops the connection 2.7 s into the
  write, `--write-timeout 5 --connect-timeout 20`. Before the fix the settle then waited the whole connect timeout
  for the session to come back (24 s in all).
Now the settle waits for ZooKeeper only until the write timeout ends plus core.zk.reconcile.SETTLE_SYNC_TIMEOUT
(1 s), and the close at most core.zk.session.CLOSE_TIMEOUT (1 s).
"""

from __future__ import annotations

import time

import pytest

from core import zkformat as zf
from sandbox.processes import zkserver
from core.audit.store import Store
from core.zk.reconcile import SETTLE_SYNC_TIMEOUT, reconcile_pending
from core.zk.session import CLOSE_TIMEOUT, ZkSession
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.own_zk import OwnZooKeeper
from tests.faults.test_faults import Cli

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

PAUSE = 1.0  # the CLI sleeps this long at its pause point, then sends the write
MARGIN = SETTLE_SYNC_TIMEOUT + CLOSE_TIMEOUT  # the stated bound: README, "What Keel survives"
SLACK = 1.0  # printing, the store, the interpreter's exit, a loaded machine


class DefaultTickZooKeeper(OwnZooKeeper):
    """ZooKeeper's own defaults (tickTime 2000: sessions of 4 to 40 s), not tests.support.own_zk's short sessions."""

    def start(self) -> None:
        zkserver.start(self.port, self.dir, timeout=60, detach=False)


# case: (server, --write-timeout, --connect-timeout, what the CLI says happened)
CASES = {"no-answer": (DefaultTickZooKeeper, 3.0, 10.0, "ZooKeeper did not answer within 3 s"),
         "connection-lost": (OwnZooKeeper, 5.0, 20.0, "the connection to ZooKeeper was lost before it answered")}


@pytest.fixture(params=list(CASES))
def case(request, tmp_path):
    server_kind, write_timeout, connect_timeout, said = CASES[request.param]
    server = server_kind(tmp_path)
    try:
        yield request.param, server, write_timeout, connect_timeout, said
    finally:
        server.close()


def test_write_timeout_bounds_the_command_against_a_frozen_zookeeper(case, tmp_path):
    name, zk, write_timeout, connect_timeout, said = case
    with ZkSession.open(zk.connect) as root:
        root.ensure_path("/kafka")
    connect = f"{zk.connect}/kafka"
    with ZkSession.open(connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]})
    store = tmp_path / "keel.sqlite"
    started = time.monotonic()
    cli = Cli(["add-partitions", "--zk", connect, "--store", str(store), "--cluster", "bound", "--topic", "t",
               "--partitions", "4", "--write-timeout", f"{write_timeout:g}", "--connect-timeout", f"{connect_timeout:g}"],
              KEEL_TEST_PAUSE_BEFORE_WRITE=f"{PAUSE:g}")
    cli.wait_paused()
    zk.pause()  # frozen when the write goes out, PAUSE s from the marker
    code, out, err = cli.finish()
    after_write = time.monotonic() - (cli.paused_at + PAUSE)
    total = time.monotonic() - started
    zk.resume()
    print(f"\nRECOVERY write timeout {write_timeout:g} s against a frozen ZooKeeper ({name}): {after_write:.1f} s "
          f"from the write to the exit ({total:.1f} s for the whole command, {PAUSE:g} s of test pause included)",
          flush=True)

    assert "Traceback" not in err, err
    assert code == 1 and said in err and "may or may not have been applied" in err, (out, err)
    [action] = Store(store).actions()
    assert action.status == "pending" and f"Action #{action.id} stays pending" in err, (action, err)
    assert after_write <= write_timeout + MARGIN + SLACK, \
        f"the command took {after_write:.1f} s after its write, past --write-timeout {write_timeout:g} + {MARGIN:g} s"

    # ZooKeeper back: a reconcile finds out, all or nothing.
    with ZkSession.open(connect) as s:
        settled = reconcile_pending(s, Store(store), "bound", grace=0)
        partitions = len(zf.decode_topic("t", s.get(zf.topic_path("t")).data).partitions)
    assert [r.action_id for r in settled] == [action.id]
    assert partitions in (2, 4)
    assert Store(store).action(action.id).status == ("applied" if partitions == 4 else "failed")
