"""Issue 23, item 9: `--write-timeout S` bounds the whole command once the write is sent, even against a ZooKeeper
frozen (SIGSTOP) at that moment: the command returns within S + MARGIN, says the outcome is unknown, and leaves the
action pending for reconciliation.

The server is one of the test's own with ZooKeeper's default tick (so Keel's 15 s session is granted as asked, as
on a production ensemble): kazoo notices a silent server only after 2/3 of it, 10 s. Before the fix the command
took 13 s here past its 3 s write timeout (41 s in the report): the sync that tries to settle the outcome waited
until kazoo dropped the connection, and the close waited for the server to answer it. Now the settle's sync waits
at most core.zk.reconcile.SETTLE_SYNC_TIMEOUT (1 s) and the close at most core.zk.session.CLOSE_TIMEOUT (1 s).
"""

from __future__ import annotations

import time

import pytest

from core import zkformat as zf
from core.sandbox import zkserver
from core.store import Store
from core.zk.reconcile import SETTLE_SYNC_TIMEOUT, reconcile_pending
from core.zk.session import CLOSE_TIMEOUT, ZkSession
from tests.kafka_tree import write_cluster, write_topic
from tests.own_zk import OwnZooKeeper
from tests.test_faults import Cli

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

WRITE_TIMEOUT = 3.0
PAUSE = 1.0  # the CLI sleeps this long at its pause point, then sends the write
MARGIN = SETTLE_SYNC_TIMEOUT + CLOSE_TIMEOUT  # the stated bound: README, "What Keel survives"
SLACK = 1.0  # printing, the store, the interpreter's exit, a loaded machine


class DefaultTickZooKeeper(OwnZooKeeper):
    """ZooKeeper's own defaults (tickTime 2000: sessions of 4 to 40 s), not tests.own_zk's short sessions."""

    def start(self) -> None:
        zkserver.start(self.port, self.dir, timeout=60, detach=False)


@pytest.fixture
def zk(tmp_path):
    server = DefaultTickZooKeeper(tmp_path)
    try:
        yield server
    finally:
        server.close()


def test_write_timeout_bounds_the_command_against_a_frozen_zookeeper(zk, tmp_path):
    with ZkSession.open(zk.connect) as root:
        root.ensure_path("/kafka")
    connect = f"{zk.connect}/kafka"
    with ZkSession.open(connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "t", {0: [1, 2], 1: [2, 3]})
    store = tmp_path / "keel.sqlite"
    started = time.monotonic()
    cli = Cli(["add-partitions", "--zk", connect, "--store", str(store), "--cluster", "bound", "--topic", "t",
               "--partitions", "4", "--write-timeout", f"{WRITE_TIMEOUT:g}"],
              KEEL_TEST_PAUSE_BEFORE_WRITE=f"{PAUSE:g}")
    cli.wait_paused()
    zk.pause()  # frozen when the write goes out, PAUSE s from the marker
    code, out, err = cli.finish()
    after_write = time.monotonic() - (cli.paused_at + PAUSE)
    total = time.monotonic() - started
    zk.resume()
    print(f"\nRECOVERY write timeout {WRITE_TIMEOUT:g} s against a frozen ZooKeeper: {after_write:.1f} s from the "
          f"write to the exit ({total:.1f} s for the whole command, {PAUSE:g} s of test pause included)", flush=True)

    assert "Traceback" not in err, err
    assert code == 1 and f"ZooKeeper did not answer within {WRITE_TIMEOUT:g} s" in err, (out, err)
    [action] = Store(store).actions()
    assert action.status == "pending" and f"Action #{action.id} stays pending" in err, (action, err)
    assert after_write <= WRITE_TIMEOUT + MARGIN + SLACK, \
        f"the command took {after_write:.1f} s after its write, past --write-timeout {WRITE_TIMEOUT:g} + {MARGIN:g} s"

    # ZooKeeper back: a reconcile finds out, all or nothing.
    with ZkSession.open(connect) as s:
        settled = reconcile_pending(s, Store(store), "bound", grace=0)
        partitions = len(zf.decode_topic("t", s.get(zf.topic_path("t")).data).partitions)
    assert [r.action_id for r in settled] == [action.id]
    assert partitions in (2, 4)
    assert Store(store).action(action.id).status == ("applied" if partitions == 4 else "failed")
