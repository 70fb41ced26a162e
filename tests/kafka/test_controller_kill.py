"""Issue 19, item 2: the real Kafka controller broker killed (-9) during a throttled reassignment.

One story on the package's 3-broker cluster:

1. The controller C is read from /controller; a topic with RF 1 is created on the two other brokers A and B
   (partitions alternating A, B) and filled with real data; the plan swaps every partition to the other broker, so
   the reassignment never needs C and can finish under the next controller.
2. Keel executes the plan (core.zk.reassign_writes.execute) with a low throttle, so that the copy lasts well past the
   failover (ZooKeeper notices the kill after zookeeper.session.timeout.ms = 6 s).
3. Once the reassignment is seen running, C is killed with SIGKILL. Until it is over, every pass compares Keel's
   progress (core.plans.reassignment_status over core.zk.reader.read_snapshot) with Kafka's: the partitions Keel
   says are in progress lie between two Admin API listings (list_partition_reassignments) taken before and after
   Keel's read, whenever a controller answers them; a moving partition holds target + origin replicas with the
   adding / removing sets the controller writes; and Keel's verify (core.zk.reassign_writes.verify) says "in progress"
   and removes nothing until the end, then says complete only when Kafka's metadata (describe_topics,
   list_partition_reassignments) shows every partition at its target, and removes every throttle.
4. Keel's rollback (core.zk.reassign_writes.rollback) then restores the original assignment, still under the new
   controller; C is restarted and the cluster left healthy (3 brokers registered, no under-replicated partition).

The recovery time printed: from the kill to the new controller in Keel's live view (core.zk.watcher.LiveCluster,
the dashboard's view) and in a fresh read_snapshot, next to when the killed broker's registration expired and when
the Admin API named the new controller.

Before Kafka 2.4 there is no listPartitionReassignments: Kafka's own record of what is still moving is then
/admin/reassign_partitions, which the controller shrinks as partitions complete and which the next controller
resumes from (realkafka.running_reassignments); the listings compared are read there.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid

import pytest

from core import health
from core import zkformat as zf
from core.plans import ReassignStatus, parse_reassignment, reassignment_status
from sandbox.processes.kafka import version_at_least
from core.audit.store import Store
from core.zk import reassign_writes
from core.zk.session import ZkSession
from core.zk.watcher import LiveCluster
from tests.kafka.realkafka import (
    THROTTLE_KEYS,
    RealKafka,
    config_znodes,
    create_topic,
    describe_cluster,
    eventually,
    produce,
    running_reassignments,
    throttle_configs_of,
)

CLUSTER = "controller-kill"
THROTTLE = 500_000  # B/s per broker: each of A and B sends (and receives) 2 x PARTITION_BYTES
PARTITION_BYTES = 6_000_000  # ~24 s of copying at THROTTLE (less a burst of up to ~10 s x the rate, see
#                              test_reassign_real.QUIET): the failover (~6-8 s) happens well inside it
FINISH_WITHIN = 150.0  # s: the reassignment must be over by then
MB = 1_000_000


class Admin:
    """A second Admin client with a short timeout, for the listings taken while the controller is down.

    kafka-python caches the controller's id and keeps sending controller requests to it; when it is dead the request
    fails: the cached id is then forgotten, so that the next call asks the cluster again."""

    def __init__(self, kafka: RealKafka):
        from kafka.admin import KafkaAdminClient

        self.kafka = kafka
        self.client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, client_id="keel-controller-kill",
                                       request_timeout_ms=3000)
        self.failures = 0
        self.listing = version_at_least(kafka.cluster.version, "2.4")  # else /admin/reassign_partitions

    def _call(self, fn):
        try:
            return fn()
        except Exception:
            self.failures += 1
            self.client._controller_id = None
            return None

    def running(self, topic: str) -> set[tuple[str, int]] | None:
        """The topic's partitions being reassigned, as the controller lists them; None when no controller answers.
        Before Kafka 2.4: as /admin/reassign_partitions holds them (module docstring)."""
        if not self.listing:
            return running_reassignments(self.kafka, topic)
        found = self._call(self.client.list_partition_reassignments)
        return None if found is None else {(tp.topic, tp.partition) for tp in found if tp.topic == topic}

    def replicas(self, topic: str) -> dict[int, list[int]] | None:
        meta = self._call(lambda: self.client.describe_topics([topic]))
        if not meta or meta[0]["error_code"] != 0:
            return None
        return {p["partition_index"]: list(p["replica_nodes"]) for p in meta[0]["partitions"]}

    def controller(self) -> int | None:
        found = self._call(lambda: describe_cluster(self.client))
        return None if found is None else found["controller_id"]

    def close(self) -> None:
        self.client.close()


def _doc(topic: str, assignment: dict[int, list[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r}
                                                    for p, r in sorted(assignment.items())]})


def _controller_id(kafka: RealKafka) -> int:
    kafka.zk.sync()
    return json.loads(kafka.zk.get(zf.CONTROLLER).data)["brokerid"]


def _throttles_in_zk(kafka: RealKafka, topic: str) -> dict[str, dict[str, str]]:
    return {path: {k: v for k, v in config.items() if k in THROTTLE_KEYS}
            for path, config in config_znodes(kafka, [topic]).items() if set(config) & set(THROTTLE_KEYS)}


def test_controller_killed_during_a_throttled_reassignment(healthy: RealKafka):
    kafka = healthy
    killed = _controller_id(kafka)
    a, b = [x for x in kafka.cluster.broker_ids if x != killed]
    topic = f"ck-{uuid.uuid4().hex[:6]}"
    original = {0: [a], 1: [b], 2: [a], 3: [b]}
    target = {0: [b], 1: [a], 2: [b], 3: [a]}
    create_topic(kafka, topic, original)
    produce(kafka, topic, {p: PARTITION_BYTES for p in original})
    plan = parse_reassignment(_doc(topic, target))
    keys = {(topic, p) for p in target}
    store = Store(kafka.store)
    admin = Admin(kafka)
    session = ZkSession.open(kafka.zk_connect)
    live = LiveCluster(session, cluster=CLUSTER).start()
    seen: dict[str, float] = {}
    try:
        epoch = live.snapshot().controller.epoch
        assert live.snapshot().controller.broker_id == killed

        executed = reassign_writes.execute(kafka.zk, store, plan, cluster=CLUSTER, throttle=THROTTLE,
                                           actor="keel-tests")
        started = time.monotonic()
        assert executed.moving == len(target) and executed.throttles is not None
        assert set(executed.throttles.brokers) == {a, b}
        eventually(lambda: _assert_equal(admin.running(topic), keys), timeout=15)

        # --- kill the controller while every partition is still moving; watch the failover from Keel's live view
        def failover() -> None:
            live.wait_for(lambda s: s.controller.broker_id not in (None, killed), timeout=60)
            seen["live: new controller"] = time.monotonic()

        def unregistered() -> None:
            live.wait_for(lambda s: killed not in s.alive_broker_ids, timeout=60)
            seen["live: killed broker unregistered"] = time.monotonic()

        watchers = [threading.Thread(target=f, daemon=True) for f in (failover, unregistered)]
        for w in watchers:
            w.start()
        assert kafka.cluster.kill_broker(killed)
        killed_at = time.monotonic()

        # --- until it is over: Keel's progress and verify against Kafka's, pass after pass
        progress: list[int] = []
        compared = during_failover = verified_in_progress = verified_without_controller = 0
        moving_at_takeover = None
        while True:
            before = admin.running(topic)
            snap = kafka.snapshot()
            after = admin.running(topic)
            now = time.monotonic()
            statuses = reassignment_status(plan, snap)
            moving = {(s.topic, s.partition) for s in statuses if s.status == ReassignStatus.IN_PROGRESS}
            by_status = {s.status for s in statuses}
            assert by_status <= {ReassignStatus.IN_PROGRESS, ReassignStatus.COMPLETE}, statuses
            if snap.controller.broker_id not in (None, killed) and "read_snapshot: new controller" not in seen:
                seen["read_snapshot: new controller"] = now
                assert snap.controller.epoch > epoch, (snap.controller, epoch)
                moving_at_takeover = len(moving)
            if "admin: new controller" not in seen and now > killed_at and admin.controller() not in (None, killed):
                seen["admin: new controller"] = time.monotonic()
            if before is not None and after is not None:
                # the controller only ever finishes partitions: Keel's "in progress" lies between two listings
                assert after <= moving <= before, (before, moving, after)
                compared += 1
            elif now > killed_at:
                during_failover += 1
            for s in statuses:
                p = snap.topic(topic).partitions[s.partition]
                if s.status == ReassignStatus.IN_PROGRESS and (p.adding_replicas or p.removing_replicas):
                    # the controller's phase U1: target + origin, adding = target - origin, removing = the rest
                    assert set(p.replicas) == set(target[s.partition]) | set(original[s.partition]), p
                    assert set(p.adding_replicas) == set(target[s.partition]) - set(original[s.partition]), p
                    assert set(p.removing_replicas) == set(original[s.partition]) - set(target[s.partition]), p
                elif s.status == ReassignStatus.COMPLETE:
                    assert list(p.replicas) == target[s.partition], p
            progress.append(len(moving))

            verified = reassign_writes.verify(kafka.zk, store, plan, cluster=CLUSTER)
            if not verified.complete:
                assert not verified.throttles_removed
                assert _throttles_in_zk(kafka, topic), "a throttle went while the reassignment runs"
                verified_in_progress += 1
                verified_without_controller += "read_snapshot: new controller" not in seen
            else:
                # complete only when Kafka's metadata says so: nothing listed as moving, every partition at target
                assert verified.throttles_removed
                assert admin.running(topic) == set(), "verify said complete while Kafka still reassigns"
                eventually(lambda: _assert_equal(admin.replicas(topic), target), timeout=10)
                done_at = time.monotonic()
                break
            assert time.monotonic() - started < FINISH_WITHIN, f"the reassignment did not finish: {progress}"
            time.sleep(0.3)
        for w in watchers:
            w.join(timeout=60)

        recovery = {k: v - killed_at for k, v in sorted(seen.items(), key=lambda i: i[1])}
        print(f"\ncontroller {killed} killed {killed_at - started:.1f} s into a reassignment of "
              f"{len(target) * PARTITION_BYTES / MB:.0f} MB at {THROTTLE / MB:g} MB/s; failover as seen after the "
              f"kill: " + ", ".join(f"{k} {v:.2f} s" for k, v in recovery.items())
              + f"; reassignment complete {done_at - started:.1f} s after execute (verify in progress "
                f"{verified_in_progress}x, {verified_without_controller}x before Keel saw the new controller; "
                f"{compared} passes compared with {'the Admin API' if admin.listing else '/admin/reassign_partitions'}, "
                f"{during_failover} without a controller to ask; "
                f"partitions moving: {_runs(progress)})", file=sys.stderr)
        assert {"live: new controller", "read_snapshot: new controller", "live: killed broker unregistered"} \
            <= set(seen), seen
        assert moving_at_takeover, f"the reassignment was over before the new controller took over: {progress}"
        assert progress == sorted(progress, reverse=True), progress
        assert compared > 0 and verified_in_progress > 0 and verified_without_controller > 0
        new_controller = live.snapshot().controller.broker_id
        assert new_controller in (a, b)

        # --- every throttle gone: in ZooKeeper, and as the live brokers report them
        assert _throttles_in_zk(kafka, topic) == {}
        eventually(lambda: _assert_equal(_throttles_seen(admin, [a, b], topic), {}), timeout=15)

        # --- rollback under the new controller, with the old one still down
        rolled = reassign_writes.rollback(kafka.zk, store, executed.action_id, cluster=CLUSTER, actor="keel-tests")
        assert parse_reassignment(rolled.rollback.to_json()).assignment() == {(topic, p): tuple(r)
                                                                             for p, r in target.items()}
        eventually(lambda: _assert_equal(admin.replicas(topic), original), timeout=60)
        eventually(lambda: _assert_equal(admin.running(topic), set()), timeout=30)
        eventually(lambda: _assert_false(kafka.zk.exists(zf.REASSIGN)), timeout=30)
        back = reassign_writes.verify(kafka.zk, store, parse_reassignment(_doc(topic, original)), cluster=CLUSTER)
        assert back.complete
        assert kafka.assignment(topic) == original
        kinds = [x.kind for x in store.actions(CLUSTER, limit=10)]
        assert kinds[:2] == ["remove-throttles", "rollback"] and "reassignment" in kinds
    finally:
        live.stop()
        session.close()
        admin.close()
        # --- leave the cluster healthy for the tests after this one: the killed broker back, 3 registered, no URP
        restarted = time.monotonic()
        kafka.ensure_healthy(timeout=120)
        kafka.admin._controller_id = None  # the shared client may still have the killed controller cached
        eventually(lambda: _assert_equal(health.summarize(kafka.snapshot()).under_replicated, 0), timeout=60)
        eventually(lambda: _assert_equal(len(kafka.kafka_cluster()["brokers"]), 3), timeout=60)
        print(f"broker {killed} restarted and the cluster healthy again in {time.monotonic() - restarted:.1f} s",
              file=sys.stderr)


def _throttles_seen(admin: Admin, brokers: list[int], topic: str) -> dict[str, dict[str, str]] | None:
    """describe_configs of the live brokers and the topic, reduced to the throttle keys (entities without one left
    out); None when the Admin API does not answer."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resources = [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers]
    resources.append(ConfigResource(ConfigResourceType.TOPIC, topic))
    res = admin._call(lambda: admin.client.describe_configs(resources))
    return None if res is None else throttle_configs_of(res)


def _runs(xs: list[int]) -> str:
    """[4, 4, 4, 3, 0] -> "4 x3, 3, 0"."""
    out: list[list[int]] = []
    for x in xs:
        if out and out[-1][0] == x:
            out[-1][1] += 1
        else:
            out.append([x, 1])
    return ", ".join(f"{x} x{n}" if n > 1 else str(x) for x, n in out)


def _assert_equal(a, b) -> None:
    assert a == b, (a, b)


def _assert_false(x) -> None:
    assert not x, x


@pytest.fixture(autouse=True)
def _no_reassignment_left(healthy: RealKafka):
    """A failed test must not leave a reassignment (or its throttles) running into the next one."""
    yield
    from tests.kafka.realkafka import keel_zk

    healthy.ensure_healthy(timeout=120)
    healthy.admin._controller_id = None
    if not (healthy.zk.exists(zf.REASSIGN) or running_reassignments(healthy)):
        return
    if version_at_least(healthy.cluster.version, "2.4"):
        keel_zk(healthy, "cancel", "--bootstrap-server", healthy.bootstrap, "--all")
    else:  # nothing cancels a reassignment before 2.4: it is waited for
        eventually(lambda: _assert_false(healthy.zk.exists(zf.REASSIGN)), timeout=180, interval=1)
