"""Issue 19, item 2: ZooKeeper failing in the middle of Keel's work, with real servers and real `python -m core`.

Every test runs ZooKeeper servers of its own (sandbox.processes.zkserver / zkensemble; the session's shared server is
left alone), started with a short session timeout (SESSION_TIMEOUT) so that outages past it are quick.

1. ZooKeeper stopped while a write is on its way, with the pause hook of core.zk.faults (the CLI stops right
   before or right after its one multi-op, says `keel-test-pause: <point>`, and sleeps while the test acts):
   `execute` of a large throttled plan (1,000 partitions: 40 topic configs, 40 + 4 change notifications, 4 broker
   configs, the reassignment node) and `create-topic` of 5,000 partitions. However it ends, either every znode of
   the operation exists or none does, and the action history says which (at once, or once a later command
   reconciles the pending row: core.zk.reconcile).
2. ZooKeeper stalled (SIGSTOP) past the session timeout under the live view, the controller emulator and the CLI:
   the CLI says it cannot reach ZooKeeper; after SIGCONT the live view and the emulator recover and the next
   snapshot is complete (equal to a fresh read; every partition with a live leader).
3. A three-node ensemble whose leader is killed under the live view and during a create-topic: the view stays
   complete and follows changes after the kill; the write either fully happened or not at all, and says which.

Each test prints its measured recovery time (`pytest -s`) as `RECOVERY <case>: <seconds> s (<what>)`; README's
"What Keel survives" table is made from these lines.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core import zkformat as zf
from core.model import ClusterSnapshot
from sandbox.processes import zkserver
from sandbox.seed import SandboxSpec, seed_cluster
from sandbox.processes.zkensemble import Ensemble, start_ensemble
from sandbox.emulator.znodes import EMULATOR, decode_status
from core.audit.store import Store
from core.zk.reader import read_snapshot
from core.zk.reconcile import reconcile_pending
from core.zk.session import ZkSession, ZkSettings
from core.zk.watcher import LiveCluster
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.own_zk import SERVER_CONFIG, SESSION_TIMEOUT
from tests.support.sandbox_helpers import wait_until

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180), pytest.mark.filterwarnings("ignore:No chroot path exists")]

ROOT = Path(__file__).resolve().parents[2]
STALL = SESSION_TIMEOUT + 2.0  # a SIGSTOP longer than the session timeout
RESYNC_NOTE = re.compile(r"(reconnected to ZooKeeper|ZooKeeper session expired; reconnected with a new session)"
                         r" after \d+ s: re-read the cluster")
TOPICS, PARTITIONS = 40, 25  # the large plan: 1,000 partitions


def recovery(case: str, seconds: float, what: str) -> None:
    print(f"\nRECOVERY {case}: {seconds:.1f} s ({what})", flush=True)


# --- servers ------------------------------------------------------------------------------------------------------


@pytest.fixture
def ensemble(tmp_path):
    for attempt in range(3):
        try:
            e = start_ensemble(tmp_path / f"ensemble{attempt}", extra_config=SERVER_CONFIG, detach=False)
            break
        except zkserver.ZkPortInUse:
            continue
    else:
        raise RuntimeError("could not start a ZooKeeper ensemble")
    try:
        yield e
    finally:
        e.stop()


# --- a CLI process that can be caught at its pause point -----------------------------------------------------------


class Cli:
    """`python -m core ARGV` in the background; `paused` is set when it prints the pause marker."""

    def __init__(self, argv: list[str], **env: str):
        self.argv = argv
        self.proc = subprocess.Popen([sys.executable, "-m", "core", *argv], cwd=ROOT, text=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out: list[str] = []
        self.err: list[str] = []
        self.paused = threading.Event()
        self.paused_at = 0.0
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.err, True), daemon=True)]
        for r in self._readers:
            r.start()

    def _read(self, stream, into: list[str], marker: bool = False) -> None:
        for line in stream:
            into.append(line)
            if marker and line.startswith("keel-test-pause:"):
                self.paused_at = time.monotonic()
                self.paused.set()

    def wait_paused(self, timeout: float = 60) -> None:
        if not self.paused.wait(timeout):
            self.proc.kill()
            pytest.fail(f"the CLI never reached its pause point; stderr:\n{''.join(self.err)}")

    def finish(self, timeout: float = 90) -> tuple[int, str, str]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the CLI did not finish within {timeout:g} s; stderr:\n{''.join(self.err)}")
        for r in self._readers:
            r.join(timeout=10)
        return code, "".join(self.out), "".join(self.err)


# --- the operations under test --------------------------------------------------------------------------------------


def seed_large_cluster(connect: str) -> None:
    """Brokers 1-4 and TOPICS x PARTITIONS partitions, written with pipelined creates (parents first)."""
    nodes: list[tuple[str, bytes]] = []
    for t in range(TOPICS):
        name = f"t{t:02d}"
        assignment = {p: [p % 4 + 1, (p + 1) % 4 + 1] for p in range(PARTITIONS)}
        nodes += [(zf.topic_path(name), zf.encode_topic(assignment, topic_id=f"AAAAAAAAAAAAAAAAAAAA{t:02d}")),
                  (zf.topic_config_path(name), zf.encode_config({})),
                  (f"{zf.topic_path(name)}/partitions", b"")]
        for p, replicas in assignment.items():
            nodes += [(f"{zf.topic_path(name)}/partitions/{p}", b""),
                      (zf.state_path(name, p), zf.encode_partition_state(replicas[0], 0, 1, replicas))]
    with ZkSession.open(connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r1", 4: "r2"}, controller=1)
        s.create_many(nodes)


def large_plan(path: Path) -> None:
    """Every partition moves both replicas by two brokers."""
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": f"t{t:02d}", "partition": p, "replicas": [(p + 2) % 4 + 1, (p + 3) % 4 + 1]}
        for t in range(TOPICS) for p in range(PARTITIONS)]}))


class Operation:
    """One CLI write and the znodes it writes: `state(zk)` says for each whether it is there."""

    def __init__(self, kind: str, connect: str, tmp: Path):
        self.kind, self.connect, self.tmp = kind, connect, tmp
        self.store = tmp / "keel.sqlite"
        if kind == "execute":
            large_plan(tmp / "plan.json")
        with ZkSession.open(connect) as zk:
            self.changes_before = len(zk.children(zf.CONFIG_CHANGES) or ())

    def argv(self, *extra: str) -> list[str]:
        common = ["--zk", self.connect, "--store", str(self.store), "--cluster", "faults", "--connect-timeout", "3",
                  *extra]
        if self.kind == "execute":
            return ["execute", *common, "--reassignment-json-file", str(self.tmp / "plan.json"),
                    "--throttle", "10000000"]
        return ["create-topic", *common, "--topic", "big", "--partitions", "5000", "--replication-factor", "3",
                "--config", "retention.ms=3600000", "--seed", "1"]

    def state(self, zk: ZkSession) -> dict[str, bool]:
        if self.kind == "create-topic":
            cfg = zk.get(zf.topic_config_path("big"))
            topic = zk.get(zf.topic_path("big"))
            return {"/config/topics/big": cfg.exists and b"3600000" in cfg.data,
                    "/brokers/topics/big": topic.exists and len(zf.decode_topic("big", topic.data).partitions) == 5000}
        out = {zf.REASSIGN: zk.exists(zf.REASSIGN)}
        for node in zk.get_many([zf.topic_config_path(f"t{t:02d}") for t in range(TOPICS)]):
            out[node.path] = "leader.replication.throttled.replicas" in zf.decode_config(node.data, node.path)
        for node in zk.get_many([zf.broker_config_path(b) for b in (1, 2, 3, 4)]):
            out[node.path] = node.exists and "leader.replication.throttled.rate" in zf.decode_config(node.data,
                                                                                                   node.path)
        out[f"{zf.CONFIG_CHANGES} +{TOPICS + 4}"] = (len(zk.children(zf.CONFIG_CHANGES) or ())
                                                     == self.changes_before + TOPICS + 4)
        return out

    def action(self):
        actions = Store(self.store).actions()
        assert len(actions) == 1, actions
        return actions[0]


def all_or_nothing(op: Operation) -> bool:
    """Asserts that every znode of the operation is there or none is; returns which."""
    with ZkSession.open(op.connect) as zk:
        state = op.state(zk)
    assert len(set(state.values())) == 1, f"half-written: {state}"
    return next(iter(state.values()))


# --- 1. ZooKeeper stopped during a write ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["execute", "create-topic"])
@pytest.mark.parametrize("when", ["before-commit-back-in-time", "before-commit-down-too-long", "after-commit",
                                  "frozen-during-commit"])
def test_zookeeper_fails_during_a_write(own_zk, tmp_path, kind, when):
    """- before-commit-back-in-time: stopped before the commit, restarted within the write timeout: kazoo queues the
         write while it reconnects and sends it once ZooKeeper is back; all of it is written, the history says applied.
       - before-commit-down-too-long: stopped before the commit, restarted after the CLI gave up (--write-timeout 3):
         the CLI says the outcome is unknown and leaves the action pending; nothing was written, and the next
         reconcile records it as not applied.
       - after-commit: stopped right after the commit: all written, applied.
       - frozen-during-commit: SIGSTOP before the commit, so the multi is sent to a server that does not answer and
         the connection times out with the write in flight; the CLI cannot tell and leaves the action pending;
         after SIGCONT ZooKeeper has applied all of it or none, and reconcile records which."""
    connect = f"{own_zk.connect}/kafka"
    with ZkSession.open(own_zk.connect) as root:
        root.ensure_path("/kafka")
    seed_large_cluster(connect)
    op = Operation(kind, connect, tmp_path)
    point = "after" if when == "after-commit" else "before"
    timeout = "15" if when == "before-commit-back-in-time" else "3"
    cli = Cli(op.argv("--write-timeout", timeout), **{f"KEEL_TEST_PAUSE_{point.upper()}_WRITE": "1.5"})
    cli.wait_paused()

    if when == "frozen-during-commit":
        own_zk.pause()
        code, out, err = cli.finish()
        gave_up = time.monotonic()
        own_zk.resume()
        back = time.monotonic()
    else:
        own_zk.stop()
        if when == "before-commit-back-in-time":
            time.sleep(2)  # the pause ends meanwhile: the commit waits in kazoo's queue
            own_zk.start()
            back = time.monotonic()
            code, out, err = cli.finish()
            done = time.monotonic()
        else:
            code, out, err = cli.finish()
            gave_up = time.monotonic()
            own_zk.start()
            back = time.monotonic()
    assert "Traceback" not in err, err

    written = all_or_nothing(op)
    action = op.action()
    if when == "before-commit-back-in-time":
        # The session survives the restart (ZooKeeper restores it), so the queued write goes through.
        assert code == 0 and written and action.status == "applied", (code, err, action)
        recovery(f"{kind}, ZooKeeper stopped before the commit and back in time", done - back,
                 "restart to the write committed and the CLI done")
        return
    if when == "after-commit":
        assert code == 0 and written and action.status == "applied", (code, err, action)
        recovery(f"{kind}, ZooKeeper stopped after the commit", 0.0, "nothing to recover: written and recorded")
        return
    # The CLI could not tell: it says so, exits 1 and leaves the action pending for a later command.
    assert code == 1 and "may or may not have been applied" in err and f"Action #{action.id} stays pending" in err, err
    assert action.status == "pending", action
    if when == "before-commit-down-too-long":
        assert not written, "the CLI gave up and exited: its queued write must die with it"
    with ZkSession.open(connect) as zk:
        started = time.monotonic()
        settled = reconcile_pending(zk, Store(op.store), "faults", grace=0)
        took = time.monotonic() - started
    assert [r.action_id for r in settled] == [action.id]
    action = op.action()
    assert action.status == ("applied" if written else "failed"), (written, action)
    assert action.result.startswith("reconciled: " + ("the write was found" if written else "not applied")), action
    recovery(f"{kind}, ZooKeeper {'stalled' if when.startswith('frozen') else 'stopped'} "
             f"{'with the write in flight' if when.startswith('frozen') else 'until the CLI gave up'}",
             gave_up - cli.paused_at, f"from the outage to the CLI saying the outcome is unknown; reconcile after "
                                      f"ZooKeeper was back took {took:.2f} s and found it "
                                      f"{'applied' if written else 'not applied'}")


def test_zookeeper_frozen_briefly_during_create_topic(own_zk, tmp_path):
    """SIGSTOP right before the commit and SIGCONT 4.5 s later: the connection drops with the write in flight
    (kazoo's read timeout is 2/3 of the 4 s session) and comes back while the CLI waits to find out (up to its
    --connect-timeout, 3 s). Whichever way ZooKeeper went, the CLI says it: exit 0 and "shows it applied" with the
    topic written whole and the action applied, or exit 1 with nothing written and the action failed or pending."""
    connect = f"{own_zk.connect}/kafka"
    with ZkSession.open(own_zk.connect) as root:
        root.ensure_path("/kafka")
    seed_large_cluster(connect)
    op = Operation("create-topic", connect, tmp_path)
    cli = Cli(op.argv("--write-timeout", "15"), KEEL_TEST_PAUSE_BEFORE_WRITE="1.5")
    cli.wait_paused()
    own_zk.pause()
    time.sleep(4.5)
    own_zk.resume()
    back = time.monotonic()
    code, out, err = cli.finish()
    done = time.monotonic()
    assert "Traceback" not in err, err
    written = all_or_nothing(op)
    action = op.action()
    if code == 0:
        assert written and action.status == "applied", (out, err, action)
        said = "shows it applied" in out or "created topic big" in out
    else:
        assert not written and action.status in ("failed", "pending"), (err, action)
        said = "nothing was written" in err or "stays pending" in err
    assert said, (out, err)
    recovery("create-topic, ZooKeeper stalled 4.5 s with the write in flight", done - back,
             f"SIGCONT to the CLI done: exit {code}, {'written' if written else 'nothing written'}, "
             f"history {action.status}")


# --- 2. ZooKeeper stalled past the session timeout -----------------------------------------------------------------


def comparable(snap: ClusterSnapshot) -> dict:
    d = snap.as_read().to_dict()  # a live view also remembers the racks of brokers that went down
    for key in ("captured_at", "cluster", "source"):  # when and through which servers it was read
        d.pop(key, None)
    return d


def complete(snap: ClusterSnapshot, topics: int) -> bool:
    """Every topic there, every partition with a state and a live leader, no unreadable znode."""
    alive = snap.alive_broker_ids
    return (len(snap.topics) == topics and not snap.problems
            and all(p.has_state and p.leader in alive for t in snap.topics for p in t.partitions))


def start_controller(connect: str, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "sandbox", "controller", "--zk", connect],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_stall_past_the_session_timeout(own_zk, tmp_path):
    """SIGSTOP of ZooKeeper for longer than the session timeout under the controller emulator (a process), the live
    view and the CLI; then SIGCONT. The CLI says it cannot reach ZooKeeper while it is stalled; afterwards the
    emulator and the live view say what happened, the live view equals a fresh read, and the next snapshot is
    complete (every partition has a live leader), including a topic created after the stall."""
    spec = SandboxSpec(brokers=3, racks=0, topics=6, seed=5)
    connect = f"{own_zk.connect}/sandbox"
    with ZkSession.open(connect) as zk:
        seed_cluster(zk, spec)
    log_path = tmp_path / "controller.log"
    controller = start_controller(connect, log_path)
    live_session = ZkSession.open(ZkSettings(connect=connect, session_timeout=SESSION_TIMEOUT))
    live = None
    try:
        with ZkSession.open(connect) as zk:
            wait_until(lambda: decode_status(zk.get(EMULATOR).data).get("controller") is not None, timeout=30,
                       message="the controller emulator to start")
            topics = len(zk.children(zf.TOPICS))
            wait_until(lambda: complete(read_snapshot(zk), topics), timeout=30, message="a complete sandbox")
        live = LiveCluster(live_session, cluster="stall").start()

        own_zk.pause()
        stalled = time.monotonic()
        cli = subprocess.run([sys.executable, "-m", "core", "describe", "--zk", connect, "--connect-timeout", "2"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert cli.returncode == 1 and "Traceback" not in cli.stderr, cli.stderr
        assert cli.stderr.startswith("error: could not connect to ZooKeeper at ") and "within 2 s" in cli.stderr
        cli_took = time.monotonic() - stalled
        time.sleep(max(0.0, STALL - cli_took))
        own_zk.resume()
        back = time.monotonic()

        with ZkSession.open(connect) as zk:
            def view_complete():
                if live.status != "connected" or live.resyncs < 1:
                    return False
                fresh = read_snapshot(zk)
                return complete(fresh, topics) and comparable(live.snapshot()) == comparable(fresh)

            wait_until(view_complete, timeout=30, message="the live view to equal a fresh, complete read")
            view_took = time.monotonic() - back
            assert RESYNC_NOTE.fullmatch(live.resync_note), live.resync_note

            # The emulator carries on: a topic created now gets its partition states from it.
            zk.create(zf.topic_path("after-stall"), zf.encode_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]}),
                      makepath=True)
            zk.create(zf.topic_config_path("after-stall"), zf.encode_config({}), makepath=True)
            wait_until(lambda: complete(read_snapshot(zk), topics + 1), timeout=30,
                       message=f"the emulator to serve a topic created after the stall:\n{log_path.read_text()}")
            emulator_took = time.monotonic() - back
            live.wait_for(lambda snap: complete(snap, topics + 1), timeout=15)
        assert controller.poll() is None, log_path.read_text()
        log = log_path.read_text()
        assert "re-read the cluster and re-armed every watch" in log, log

        # The next snapshot, through the CLI, is complete.
        out = tmp_path / "snap.json"
        cli = subprocess.run([sys.executable, "-m", "core", "snapshot", "--zk", connect, "-o", str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert cli.returncode == 0 and "warning" not in cli.stderr, cli.stderr
        assert complete(ClusterSnapshot.from_json(out.read_text()), topics + 1)
        recovery("ZooKeeper stalled (SIGSTOP) past the session timeout: live view", view_took,
                 f"SIGCONT to the view re-read and equal to a fresh read ({live.resync_note})")
        recovery("ZooKeeper stalled (SIGSTOP) past the session timeout: controller emulator", emulator_took,
                 "SIGCONT to a topic created afterwards having live leaders")
        recovery("ZooKeeper stalled (SIGSTOP): CLI while stalled", cli_took,
                 "describe --connect-timeout 2 ends with 'could not connect to ZooKeeper' (process start included)")
    finally:
        if live is not None:
            live.stop()
        live_session.close()
        controller.send_signal(signal.SIGTERM)
        try:
            controller.wait(timeout=30)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait(timeout=10)


# --- 3. a three-node ensemble loses its leader ------------------------------------------------------------------------


def seed_small_cluster(connect: str) -> None:
    hosts, chroot = connect.split("/", 1)
    with ZkSession.open(hosts) as root:
        root.ensure_path(f"/{chroot}")
    with ZkSession.open(connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        for t in range(5):
            write_topic(s, f"t{t}", {p: [p % 3 + 1, (p + 1) % 3 + 1] for p in range(4)})


def test_ensemble_leader_killed_under_the_live_view(ensemble: Ensemble):
    connect = f"{ensemble.connect}/kafka"
    seed_small_cluster(connect)
    live_session = ZkSession.open(ZkSettings(connect=connect, session_timeout=SESSION_TIMEOUT))
    live = LiveCluster(live_session, cluster="ensemble").start()
    try:
        before = comparable(live.snapshot())
        leader = ensemble.leader()
        killed = time.monotonic()
        ensemble.kill(leader)
        rest = [m for m in ensemble.members if m is not leader]
        ensemble.wait_for_quorum(rest, timeout=30)
        quorum_took = time.monotonic() - killed
        # The view was never lost: what it shows meanwhile is the cluster as it was.
        assert comparable(live.snapshot()) == before
        with ZkSession.open(f"{','.join(m.connect for m in rest)}/kafka") as zk:
            write_topic(zk, "after-kill", {0: [1, 2], 1: [2, 3]})
            zk.set(zf.state_path("t0", 0), zf.encode_partition_state(2, 1, 1, [2, 1]))
            live.wait_for(lambda snap: snap.topic("after-kill") is not None
                          and snap.topic("t0").partitions[0].leader == 2, timeout=30)
            view_took = time.monotonic() - killed
            wait_until(lambda: live.status == "connected"
                       and comparable(live.snapshot()) == comparable(read_snapshot(zk)), timeout=15,
                       message="the live view to equal a fresh read")
        recovery("ensemble leader killed: new quorum", quorum_took, "SIGKILL of the leader to a new leader elected")
        recovery("ensemble leader killed: live view", view_took,
                 f"SIGKILL to the view showing changes made afterwards ({live.resync_note or 'no reconnect needed'})")
    finally:
        live.stop()
        live_session.close()


@pytest.mark.parametrize("how", ["killed", "frozen-then-killed"])
def test_ensemble_leader_lost_during_create_topic(ensemble: Ensemble, tmp_path, how):
    """The leader is killed while create-topic waits at its pause point right before the commit ("killed"), or
    frozen there so that the commit goes out while it cannot answer and then killed ("frozen-then-killed"): Keel
    reconnects to the other two servers; the topic is written whole or not at all, and the CLI and the action
    history say which."""
    connect = f"{ensemble.connect}/kafka"
    seed_small_cluster(connect)
    op = Operation("create-topic", connect, tmp_path)
    cli = Cli(op.argv(), KEEL_TEST_PAUSE_BEFORE_WRITE="2")
    cli.wait_paused()
    leader = ensemble.leader()
    started = time.monotonic()
    if how == "killed":
        ensemble.kill(leader)
    else:
        ensemble.kill(leader, signal.SIGSTOP)
        time.sleep(5)  # the pause ends and the commit goes out meanwhile
        ensemble.kill(leader)
    code, out, err = cli.finish()
    took = time.monotonic() - started
    assert "Traceback" not in err, err
    # the check reads from the two servers left: when the CLI gave up first, their election may still be going on
    ensemble.wait_for_quorum(timeout=60)
    written = all_or_nothing(op)
    action = op.action()
    if code == 0:
        assert written and action.status == "applied" and "created topic big" in out, (out, err, action)
    else:
        assert not written and action.status in ("failed", "pending"), (err, action)
        assert "nothing was written" in err or "stays pending" in err, err
        if action.status == "pending":  # a later command settles it
            with ZkSession.open(connect) as zk:
                reconcile_pending(zk, Store(op.store), "faults", grace=0)
            assert op.action().status == "failed"
    recovery(f"ensemble leader {how} during create-topic", took,
             f"from the leader's loss to the CLI done: exit {code}, {'written' if written else 'nothing written'}")
