"""ZooKeeper outages under Keel's watchers (issue 12, item 2): restarts and a stalled server.

kazoo 2.11 re-registers no watch when it resumes a session (no SetWatches), ZooKeeper drops a connection's
watches with the connection, and a restarted server restores its sessions from its log with fresh clocks:
after a restart or a stall the session usually survives while every watch is gone. Each test therefore
checks that something that changed during or after the outage shows up within seconds:

- the live view (core.zk.watcher.LiveCluster) and the dashboard's Connection (dashboard/frame.py): a topic
  created afterwards by another client, and a broker whose process died during the outage (its ephemeral
  registration goes when its session ends), with the status saying it re-read the cluster;
- the sandbox controller emulator as a real `python -m sandbox controller` process: a topic created
  through ZooKeeper afterwards gets its partition states, and the process is still running.

Each outage test runs its own ZooKeeper (the session-wide one is shared by other tests), started with a
maxSessionTimeout of SESSION_TIMEOUT so that every client's session times out that fast; restarts keep its
data dir and port. The outages: "short-restart" (down 3 s), "long-restart" (down longer than the session
timeout: ZooKeeper still restores the sessions, see above) and "pause" (SIGSTOP of the server JVM longer
than the session timeout: its session clocks keep running, so sessions usually expire on SIGCONT; both
outcomes are valid). The expiry path is also forced deterministically, on the shared server, by closing
a session from a second client that presents its id and password.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from streamlit.testing.v1 import AppTest

from core import zkformat as zf
from core.policy.config import ClusterConfig
from core.errors import ZooKeeperUnreachableError
from sandbox.emulator.controller import ControllerEmulator
from sandbox.seed import EMULATOR, SandboxSpec, decode_status, seed_cluster
from core.zk.session import ZkSession, ZkSettings
from core.zk.watcher import LiveCluster
from dashboard import frame
from tests.support.kafka_tree import write_broker, write_cluster, write_topic
from tests.support.own_zk import SESSION_TIMEOUT, OwnZooKeeper
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("ignore:No chroot path exists")]

ROOT = Path(__file__).resolve().parents[2]
DOWN = {"short-restart": 3.0, "long-restart": SESSION_TIMEOUT + 2.0, "pause": SESSION_TIMEOUT + 2.0}
CATCH_UP = 15.0  # "within seconds": the longest a change may take to show after ZooKeeper is back
NOTE = re.compile(r"(reconnected to ZooKeeper|ZooKeeper session expired; reconnected with a new session)"
                  r"( with a new session)? after \d+ s: re-read the cluster")
SANDBOX = SandboxSpec(brokers=3, racks=0, topics=2, seed=3)


# --- a ZooKeeper of the test's own, to restart and pause -------------------------------------------------


def outage(server: OwnZooKeeper, kind: str, during=lambda: None) -> None:
    """Take ZooKeeper away for DOWN[kind] seconds, run `during()` meanwhile, return once it serves again."""
    if kind == "pause":
        server.pause()
        during()
        time.sleep(DOWN[kind])
        server.resume()
    else:
        server.stop()
        during()
        time.sleep(DOWN[kind])
        server.start()


def chroot(server: OwnZooKeeper, name: str) -> str:
    with ZkSession.open(server.connect) as root:
        root.ensure_path(f"/{name}")
    return f"{server.connect}/{name}"


# --- the three watchers under test ----------------------------------------------------------------------


class BrokerProcess:
    """A broker's registration held by a session of its own; `die()` ends the process mid-outage: the server
    removes the registration when it notices (at once, or once the session times out)."""

    def __init__(self, connect: str, broker_id: int):
        self.session = ZkSession.open(ZkSettings(connect=connect, session_timeout=SESSION_TIMEOUT))
        write_broker(self.session, broker_id, ephemeral=True)
        self._closer: threading.Thread | None = None

    def die(self) -> None:  # closing blocks while ZooKeeper is away: do not hold the outage up
        def close():
            try:
                self.session.close()
            except Exception:  # kazoo gives up waiting for a connection that cannot answer: dead all the same
                pass

        if self._closer is None:
            self._closer = threading.Thread(target=close, daemon=True)
            self._closer.start()

    def join(self) -> None:
        if self._closer is not None:
            self._closer.join(timeout=SESSION_TIMEOUT * 3)


class Fragment:
    """What the dashboard's live fragments do every REFRESH_SECONDS: Connection.ensure(), which opens a
    replacement session when the live one has been down for a while."""

    def __init__(self, conn: frame.Connection):
        self.conn, self._stop = conn, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(frame.REFRESH_SECONDS):
            self.conn.ensure(retry_after=frame.RETRY_SECONDS)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class GatedResync:
    """Holds the live view's next re-read until released, to see the status while it re-reads."""

    def __init__(self, live: LiveCluster):
        self.entered, self.release = threading.Event(), threading.Event()
        real = live._reload

        def gated():
            self.entered.set()
            self.release.wait(30)
            real()

        live._reload = gated


def banner_script(conn):
    import streamlit as st

    from dashboard import frame

    frame.show_staleness(conn)
    color, text = frame.status_line(conn)
    st.caption(f"status {color}: {text}")


def render_banner(conn: frame.Connection) -> tuple[str, str]:
    """(info banners, status line) as the pages draw them for this connection."""
    at = AppTest.from_function(banner_script, args=(conn,), default_timeout=30).run()
    assert not at.exception, at.exception
    return "\n".join(str(e.value) for e in at.info), "\n".join(str(e.value) for e in at.caption)


def start_controller(connect: str, log_path: Path) -> subprocess.Popen:
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "controller", "--zk", connect],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    log.close()
    return proc


def wait_for_controller(predicate, what: str, log_path: Path, timeout: float = CATCH_UP) -> None:
    try:
        wait_until(predicate, timeout=timeout, message=what)
    except pytest.fail.Exception:
        pytest.fail(f"timed out after {timeout:g} s waiting for {what}; controller log:\n{log_path.read_text()}")


def partitions_have_states(zk: ZkSession, topic: str, partitions: int, live: set[int]) -> bool:
    nodes = list(zk.get_many([zf.state_path(topic, p) for p in range(partitions)]))
    return all(n.exists and zf.decode_partition_state(n.data, n.path).leader in live for n in nodes)


def sees(view_snapshot, topic: str, gone_broker: int) -> bool:
    if view_snapshot is None:
        return False
    t = view_snapshot.topic(topic)
    return (t is not None and all(p.has_state for p in t.partitions)
            and gone_broker not in view_snapshot.alive_broker_ids)


# --- the outage test ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["short-restart", "long-restart", "pause"])
def test_watchers_ride_through_a_zookeeper_outage(own_zk, tmp_path, kind):
    # The cluster the live view and the dashboard watch: brokers 1-3, broker 3 a process of its own.
    view_connect = chroot(own_zk, "kafka")
    with ZkSession.open(view_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]})
    broker3 = BrokerProcess(view_connect, 3)

    # A sandbox with its controller emulator running as a process.
    ctl_connect = f"{own_zk.connect}/sandbox"
    with ZkSession.open(ctl_connect) as s:
        seed_cluster(s, SANDBOX)
    ctl_log = tmp_path / "controller.log"
    controller = start_controller(ctl_connect, ctl_log)

    live_session = ZkSession.open(ZkSettings(connect=view_connect, session_timeout=SESSION_TIMEOUT))
    live = LiveCluster(live_session, cluster="outage").start()
    conn = frame.Connection(ClusterConfig(name=f"outage-{kind}", zk=view_connect, connect_timeout=2.0))
    fragment = None
    try:
        conn.ensure()
        wait_until(lambda: conn.healthy, timeout=20, message="the dashboard's first snapshot")
        assert live.snapshot().broker_by_id[3].alive and conn.snapshot().broker_by_id[3].alive
        with ZkSession.open(ctl_connect) as zk:  # started: its last step publishes its status with the controller
            wait_for_controller(lambda: decode_status(zk.get(EMULATOR).data).get("controller") is not None,
                                "the controller process to start", ctl_log, timeout=30)
        # With nobody looking at a page, only the live view's own re-read can bring the dashboard back; the
        # longer outages run with the page open (its fragments may swap in a fresh session instead).
        gate = GatedResync(conn.live) if kind == "short-restart" else None
        fragment = None if gate is not None else Fragment(conn)

        outage(own_zk, kind, during=broker3.die)

        if gate is not None:  # the status says it re-reads, and writes wait for it
            assert gate.entered.wait(CATCH_UP), "the dashboard's live view did not start re-reading"
            assert conn.live.status == "resyncing"
            banner, status = render_banner(conn)
            assert "Reconnected to ZooKeeper: re-reading the cluster" in banner
            assert "re-reading the cluster" in status and "status orange" in status
            with pytest.raises(ZooKeeperUnreachableError, match="re-reading ZooKeeper after a reconnect"):
                conn.write_session()
            gate.release.set()
            fragment = Fragment(conn)

        with ZkSession.open(view_connect) as writer:
            write_topic(writer, "created-after", {0: [1, 2], 1: [2, 1]})
        with ZkSession.open(ctl_connect) as writer:  # as kafka-topics.sh does: the states are the controller's
            writer.create(zf.topic_path("created-after"), zf.encode_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]}),
                          makepath=True)
            writer.create(zf.topic_config_path("created-after"), zf.encode_config({}), makepath=True)

        live.wait_for(lambda snap: sees(snap, "created-after", 3), timeout=CATCH_UP)
        wait_until(lambda: sees(conn.snapshot(), "created-after", 3) and conn.healthy, timeout=CATCH_UP,
                   message="the dashboard to show the new topic and broker 3 gone")
        with ZkSession.open(ctl_connect) as zk:
            wait_for_controller(lambda: partitions_have_states(zk, "created-after", 3, {1, 2, 3}),
                                "the controller to create the partition states", ctl_log)
            assert controller.poll() is None, ctl_log.read_text()
            # ...and it still holds its brokers (a broker whose session expired registered again) and /controller
            wait_for_controller(lambda: len(zk.children(zf.BROKER_IDS) or ()) == 3 and zk.exists(zf.CONTROLLER)
                                and zk.exists(EMULATOR), "the sandbox brokers and /controller", ctl_log)

        # What the status says once it is live again.
        assert live.status == "connected" and live.resyncs >= 1 and NOTE.fullmatch(live.resync_note), live.resync_note
        assert conn.live.resync_note and NOTE.fullmatch(conn.live.resync_note), conn.live.resync_note
        banner, status = render_banner(conn)
        assert "re-read the cluster at " in banner and "status green" in status and "re-read after a reconnect" in status
        log = ctl_log.read_text()
        assert ("reconnected to ZooKeeper after" in log or "ZooKeeper session expired; new session" in log), log
        assert "re-read the cluster and re-armed every watch" in log

        # The watches are armed again, not just read once: later changes show up too.
        with ZkSession.open(view_connect) as writer:
            write_topic(writer, "created-later", {0: [2, 1]})
            writer.delete(zf.broker_path(2))
        live.wait_for(lambda snap: sees(snap, "created-later", 2), timeout=CATCH_UP)
        wait_until(lambda: sees(conn.snapshot(), "created-later", 2), timeout=CATCH_UP,
                   message="the dashboard to follow a change made after the outage")
        with ZkSession.open(ctl_connect) as zk:
            zk.create(zf.topic_path("created-later"), zf.encode_topic({0: [3, 1]}), makepath=True)
            wait_for_controller(lambda: partitions_have_states(zk, "created-later", 1, {1, 2, 3}),
                                "the controller to follow a change made after the outage", ctl_log)

        controller.send_signal(signal.SIGTERM)
        assert controller.wait(timeout=30) == 0, ctl_log.read_text()
    finally:
        if fragment is not None:
            fragment.stop()
        if controller.poll() is None:
            controller.kill()
            controller.wait(timeout=10)
        conn.close()
        live.stop()
        live_session.close()
        broker3.die()
        broker3.join()


# --- an expired session, forced ---------------------------------------------------------------------------


def expire(client_id: tuple[int, bytes], hosts: str) -> None:
    """End a session on the server as its expiry would: a second client takes it over by id and password
    and closes it (its ephemeral nodes go; the owner learns "session expired" when it reconnects)."""
    thief = KazooClient(hosts=hosts, client_id=client_id, timeout=10)
    thief.start(timeout=10)
    thief.stop()
    thief.close()


def test_live_view_reloads_after_its_session_expired(zk_connect):
    with ZkSession.open(zk_connect) as writer:
        write_cluster(writer, {1: None, 2: None}, controller=1)
        write_topic(writer, "orders", {0: [1, 2]})
        session = ZkSession.open(ZkSettings(connect=zk_connect, session_timeout=SESSION_TIMEOUT))
        live = LiveCluster(session, cluster="expiry").start()
        try:
            old = session.session_id
            expire(session._client.client_id, zk_connect)
            wait_until(lambda: session.session_id not in (None, old) and live.resyncs >= 1, timeout=CATCH_UP,
                       message="a new session and a re-read")
            write_topic(writer, "created-after", {0: [2, 1]})
            writer.delete(zf.broker_path(2))
            live.wait_for(lambda snap: sees(snap, "created-after", 2), timeout=CATCH_UP)
            assert live.status == "connected"
            assert live.resync_note.startswith("ZooKeeper session expired; reconnected with a new session after ")
        finally:
            live.stop()
            session.close()


def test_controller_emulator_survives_its_sessions_expiring(zk_connect):
    """The emulator's own session (holding /controller and its status node) and a broker's session expire:
    it claims them back (a controller failover, epoch + 1), the broker registers again, and it keeps reacting."""
    with ZkSession.open(zk_connect) as zk:
        seed_cluster(zk, SANDBOX)
        with ControllerEmulator(zk) as emu:
            assert emu.wait_idle(10)
            controller, epoch = emu.controller_id, emu.epoch
            broker_session = emu._brokers[2]
            old_broker_sid = broker_session.session_id
            expire(broker_session._client.client_id, zk_connect)
            expire(emu._zk._client.client_id, zk_connect)
            wait_until(lambda: emu.resyncs >= 1 and emu.controller_id is not None and emu.epoch > epoch,
                       timeout=CATCH_UP, message=f"the emulator to claim /controller again: {list(emu.reactions)}")
            assert emu.running and emu.failed is None
            assert any("ZooKeeper session expired; new session after" in r for r in emu.reactions), list(emu.reactions)

            def reclaimed():
                ctl, status, reg = zk.get(zf.CONTROLLER), zk.get(EMULATOR), zk.get(zf.broker_path(2))
                return (ctl.exists and ctl.ephemeral_owner == emu._zk.session_id and status.exists
                        and status.ephemeral_owner == emu._zk.session_id and reg.exists
                        and reg.ephemeral_owner not in (0, old_broker_sid)
                        and len(zk.children(zf.BROKER_IDS)) == 3)

            wait_until(reclaimed, timeout=CATCH_UP, message=f"/controller, the status node and broker 2 back: "
                                                            f"{list(emu.reactions)}")
            assert zf.decode_controller(zk.get(zf.CONTROLLER).data).broker_id == controller
            zk.create(zf.topic_path("created-after"), zf.encode_topic({0: [1, 2], 1: [2, 3]}), makepath=True)
            wait_until(lambda: partitions_have_states(zk, "created-after", 2, {1, 2, 3}), timeout=CATCH_UP,
                       message=f"the emulator to keep reacting: {list(emu.reactions)}")
            assert emu.running
