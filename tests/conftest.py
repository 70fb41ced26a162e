"""Shared fixtures: one real ZooKeeper per test session, a fresh chroot per test.

- ``zk_server``     (session)  "127.0.0.1:PORT"; ``KEEL_TEST_ZK`` overrides it with an existing server.
- ``zk_connect``    (function) ``f"{zk_server}/t-<test name>-<uuid8>"``; the chroot node exists, removed afterwards.
- ``kazoo_client``  (function) a started KazooClient bound to ``zk_connect``; stopped and closed afterwards.
- ``KEEL_STORE``    (session, autouse) points at a fresh file in the session's tmp dir: no test (nor a process it
  starts) ever writes a developer's .run/keel.sqlite; a test that needs its own store sets KEEL_STORE again.
- ``sandbox``       (function) the default sandbox cluster in ``zk_connect`` with its controller emulator running.
- ``fresh_connections`` (function) Streamlit's process-global connections cleared before and after a test, their
  watcher threads ended (autouse in tests/dashboard; AppTest modules elsewhere name it).

Fixtures used by one folder live in that folder's conftest.py; helpers (plain functions, classes) in tests/support/.

Markers are applied here, by folder and by the fixtures a test uses (pytest_collection_modifyitems): zk, kafka,
browser, spark, slow; and xdist groups for `make test -n N --dist loadgroup` (see MARKERS below).
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from sandbox.processes import zkserver
from tests.support.sandbox_helpers import Sandbox, running_sandbox, wait_until


@pytest.fixture(scope="session", autouse=True)
def _session_store(tmp_path_factory: pytest.TempPathFactory):
    """KEEL_STORE -> <session tmp>/keel.sqlite for the whole session (restored afterwards)."""
    saved = os.environ.get("KEEL_STORE")
    os.environ["KEEL_STORE"] = str(tmp_path_factory.mktemp("store") / "keel.sqlite")
    try:
        yield os.environ["KEEL_STORE"]
    finally:
        if saved is None:
            os.environ.pop("KEEL_STORE", None)
        else:
            os.environ["KEEL_STORE"] = saved


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory):
    """Connect string of the session's ZooKeeper, e.g. "127.0.0.1:40123" (no chroot)."""
    external = os.environ.get("KEEL_TEST_ZK", "").strip().rstrip("/")
    if external:
        yield external
        return
    base = tmp_path_factory.mktemp("zk")
    last_error: Exception | None = None
    for attempt in range(5):  # a free port can be taken by someone else before ZooKeeper binds it
        data_dir = base / f"server{attempt}"
        try:
            server = zkserver.start(zkserver.free_port(), data_dir, timeout=60, detach=False)
            break
        except zkserver.ZkPortInUse as exc:
            last_error = exc
    else:
        raise RuntimeError(f"could not start the test ZooKeeper: {last_error}")
    atexit.register(zkserver.stop, data_dir)  # belt and braces if the session dies before teardown
    try:
        yield server.connect
    finally:
        server.stop()


def _chroot_name(nodeid_name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid_name).strip("_.")[:60] or "test"
    return f"t-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def zk_connect(zk_server: str, request: pytest.FixtureRequest):
    """``f"{zk_server}/t-<sanitised test name>-<uuid8>"``: a fresh, existing chroot for this test."""
    chroot = "/" + _chroot_name(request.node.name)
    root = KazooClient(hosts=zk_server, timeout=10)
    root.start(timeout=30)
    try:
        root.ensure_path(chroot)
    finally:
        root.stop()
        root.close()
    yield f"{zk_server}{chroot}"
    # best effort: keep a shared (KEEL_TEST_ZK) server tidy; a failure here must not fail the test. Pipelined:
    # kazoo's recursive delete pays a round trip per znode (49 s for a 30,000-partition sandbox, CI)
    from core.zk.session import ZkSession

    try:
        with ZkSession.open(zk_server) as root:
            root.delete_tree(chroot)
    except Exception:
        pass


@pytest.fixture
def kazoo_client(zk_connect: str):
    """A started KazooClient whose root is this test's chroot."""
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def sandbox(zk_connect: str) -> Iterator[Sandbox]:
    """The default sandbox (9 brokers, 3 racks, 30 topics, seed 7) with its emulator running."""
    with running_sandbox(zk_connect) as sb:
        yield sb


def dashboard_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.is_alive() and t.name.startswith(("keel-watch-", "keel-connect-"))]


@pytest.fixture
def fresh_connections():
    """The dashboard's connections live in st.cache_resource, which is process-global: cleared before and after
    the test, which stops the LiveCluster watchers and closes their ZooKeeper sessions."""
    import streamlit as st  # here, not at the top: the pure tests need no Streamlit

    st.cache_resource.clear()
    yield
    st.cache_resource.clear()  # on_release: stop every LiveCluster, close every ZooKeeper session
    wait_until(lambda: not dashboard_threads(), timeout=10, message="the dashboard's threads to end")


# --- markers and xdist groups, by folder and by fixture ------------------------------------------------------------
#
#   zk       needs a ZooKeeper server (the session's or one of its own)
#   kafka    real Kafka brokers (tests/kafka)
#   browser  headless Chromium
#   spark    a real SparkSession or Spark cluster
#   slow     seconds a test: whole folders (faults, e2e, kafka, fleet) and tests/slow.txt; out of make test-fast
#
# `make test-fast` is `-m "not (kafka or browser or spark or slow)"`: the pure and ZooKeeper tests.
# Under `-n N --dist loadgroup` (make test) a group runs on one worker: tests/kafka shares one cluster (three broker
# JVMs, package-scoped) and its KRaft tests their clusters (group kraft, on another worker), tests/fleet one
# SparkSession, and a module with a module-scoped fixture of its own (a
# server, a certificate) keeps it to one worker instead of starting it on each.

HERE = Path(__file__).resolve().parent
FOLDER_MARKS = {"zk": ("zk",), "faults": ("zk", "slow"), "sandbox": ("zk",), "kafka": ("kafka", "slow"),
                "e2e": ("browser", "slow"), "fleet": ("spark", "slow")}
FIXTURE_MARKS = {"zk_server": "zk", "own_zk": "zk", "kafka": "kafka", "browser": "browser", "chromium": "browser",
                 "spark": "spark"}
FOLDER_GROUPS = {"kafka": "kafka", "fleet": "spark"}
# The real ZooKeeper -> KRaft migrations: in the kraft group, after (not beside) the KRaft clusters' tests: four more
# JVMs starting at once beside the ZooKeeper-mode cluster's rolling restart left it leaderless for a poll (CI).
MIGRATION_TESTS = {"tests/kafka/test_migration_real.py"}
# Modules with a secured one-node cluster of their own (not the shared one): each in a group of its own, beside the
# kafka and kraft groups rather than after them
OWN_CLUSTER_TESTS = {"tests/kafka/test_security_zk_real.py", "tests/kafka/test_security_kraft.py",
                     # `make run-kafka` / `run-kafka-kraft` start a cluster of their own; the authorizer oracle runs
                     # Kafka's classes in a JVM of its own: none needs the shared cluster's worker (make test near
                     # 20 min with issue 31's tests)
                     "tests/kafka/test_make_run_real.py", "tests/kafka/test_make_run_kraft.py",
                     "tests/kafka/test_security_kafka_rules.py"}
# Tests that start Spark through the app (the Fleet page's Run job), which no fixture shows: marked spark and run on
# the spark group's worker, not beside a second Spark.
SPARK_TESTS = {"tests/e2e/test_e2e_layout.py::test_fleet_after_generating_a_demo_and_its_ranking"}
# Tests of the other folders that take seconds: `path::function` lines of tests/slow.txt (how they were chosen is
# written there).
SLOW = frozenset(line.strip() for line in (HERE / "slow.txt").read_text().splitlines()
                 if line.strip() and not line.startswith("#"))


def _folder(item: pytest.Item) -> str:
    try:
        rel = Path(str(item.path)).resolve().relative_to(HERE)
    except ValueError:  # collected from outside tests/
        return ""
    return rel.parts[0] if len(rel.parts) > 1 else ""


def _module_scoped_fixture(item: pytest.Item) -> bool:
    """Does the test use a module-scoped fixture defined in its own module?"""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name) or ()
        if defs and defs[-1].scope == "module" and defs[-1].baseid == item.nodeid.split("::")[0]:
            return True
    return False


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        folder = _folder(item)
        marks = set(FOLDER_MARKS.get(folder, ()))
        marks |= {mark for name, mark in FIXTURE_MARKS.items() if name in item.fixturenames}
        function = item.nodeid.split("[")[0]
        if function in SLOW:
            marks.add("slow")
        if function in SPARK_TESTS:
            marks.add("spark")
        for mark in sorted(marks):
            item.add_marker(getattr(pytest.mark, mark))
        if item.nodeid.split("::")[0] in MIGRATION_TESTS:
            # each test migrates a cluster of its own (three brokers and a controller)
            item.add_marker(pytest.mark.xdist_group("kraft"))
        elif item.nodeid.split("::")[0] in OWN_CLUSTER_TESTS:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        elif folder == "kafka" and "kraft" in item.fixturenames:
            # the KRaft clusters (tests/kafka/conftest.py `kraft`) beside, not after, the ZooKeeper-mode one
            item.add_marker(pytest.mark.xdist_group("kraft"))
        elif folder in FOLDER_GROUPS:
            item.add_marker(pytest.mark.xdist_group(FOLDER_GROUPS[folder]))
        elif function in SPARK_TESTS:
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif _module_scoped_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
