"""Fixtures of the dashboard tests (Streamlit AppTest against a real ZooKeeper).

- ``fresh_connections`` (tests/conftest.py) is autouse here: every test starts and ends with no cached connection.
- ``store``         the test's own audit store (KEEL_STORE), the actor ACTOR.
- ``demo``          the demo sandbox (test_dashboard_apptest.DEMO) with its controller emulator, idle.
- ``small``         a 5-broker sandbox (test_dashboard_actions.SPEC), idle.
- ``quick``         the same 5 brokers with a controller whose copies start after 50 ms.
- ``frozen_tree``   brokers 1-4 registered, no controller: a reassignment node stays until deleted.
- ``election_tree`` brokers 1-3 registered, no controller: an election node stays until deleted.
- ``closed_port``   host:port on the loopback where nothing listens.
"""

from __future__ import annotations

import socket

import pytest

from sandbox.emulator.controller import ControllerEmulator
from sandbox.seed import seed_cluster
from core.audit.store import Store
from core.zk.session import ZkSession
from tests.dashboard.test_dashboard_actions import ACTOR, SPEC
from tests.dashboard.test_dashboard_apptest import DEMO
from tests.support.kafka_tree import write_cluster, write_topic
from tests.support.sandbox_helpers import Sandbox, running_sandbox


@pytest.fixture(autouse=True)
def _fresh_connections(fresh_connections):
    yield


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    path = tmp_path / "keel.sqlite"
    monkeypatch.setenv("KEEL_STORE", str(path))
    monkeypatch.setenv("KEEL_ACTOR", ACTOR)
    return Store(path)


@pytest.fixture
def demo(zk_connect) -> Sandbox:
    with running_sandbox(zk_connect, DEMO) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


@pytest.fixture
def small(zk_connect) -> Sandbox:
    with running_sandbox(zk_connect, SPEC) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


@pytest.fixture
def quick(zk_connect) -> Sandbox:
    """The small sandbox (5 brokers, 3 racks, all alive) with a controller whose copies start after 50 ms."""
    with ZkSession.open(zk_connect) as session:
        seeded = seed_cluster(session, SPEC)
        with ControllerEmulator(session, reassign_base_delay=0.05) as emulator:
            assert emulator.wait_idle(10)
            yield Sandbox(zk_connect, session, emulator, seeded)


@pytest.fixture
def frozen_tree(zk_connect):
    """Brokers 1-4 registered, no controller to act: a reassignment node stays until deleted."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None, 4: None})
        write_topic(s, "t", {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]})
        yield s


@pytest.fixture
def election_tree(zk_connect):
    """Brokers 1-3 registered (persistent nodes), no controller to act: an election node stays until deleted.

    t-0 led by 2 (preferred 1, in the ISR): eligible; t-1 led by 3, preferred 2 not in the ISR: not eligible;
    t-2 led by its preferred 3; u-0 led by 1, preferred 4 is not registered: not eligible."""
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None})
        write_topic(s, "t", {0: [1, 2], 1: [2, 3], 2: [3, 1]}, states={0: (2, [1, 2]), 1: (3, [3]), 2: (3, [3, 1])})
        write_topic(s, "u", {0: [4, 1]}, states={0: (1, [1])})
        yield s


@pytest.fixture
def closed_port() -> str:
    """host:port on the loopback where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"
