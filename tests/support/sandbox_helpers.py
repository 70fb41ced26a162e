"""Helpers for tests that need a running sandbox cluster (seeded tree + controller emulator, in-process).

    from tests.support.sandbox_helpers import running_sandbox, wait_until

    def test_something(sandbox):   # the fixture is tests/conftest.py's
        snap = sandbox.snapshot()
        sandbox.stop_broker(3)

    with running_sandbox(zk_connect, SandboxSpec(demo=True)) as sb: ...
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

import pytest

from core.model import ClusterSnapshot
from sandbox.emulator.brokers import BrokerChange, start_broker, stop_broker
from sandbox.emulator.controller import ControllerEmulator
from sandbox.seed import SandboxSpec, SeedResult, seed_cluster
from core.zk.reader import read_snapshot
from core.zk.session import ZkSession

T = TypeVar("T")


@dataclass
class Sandbox:
    connect: str
    session: ZkSession
    emulator: ControllerEmulator
    seed: SeedResult | None

    def snapshot(self) -> ClusterSnapshot:
        return read_snapshot(self.session, cluster="sandbox")

    def stop_broker(self, broker_id: int, timeout: float = 10.0) -> BrokerChange:
        return stop_broker(self.session, broker_id, timeout=timeout)

    def start_broker(self, broker_id: int, timeout: float = 10.0) -> BrokerChange:
        return start_broker(self.session, broker_id, timeout=timeout)


@contextmanager
def running_sandbox(connect: str, spec: SandboxSpec | None = None, *, seed: bool = True) -> Iterator[Sandbox]:
    """Seed `spec` (unless seed=False: the tree is already there) and run the emulator; both torn down after."""
    session = ZkSession.open(connect)
    try:
        result = seed_cluster(session, spec or SandboxSpec()) if seed else None
        with ControllerEmulator(session) as emulator:
            yield Sandbox(connect, session, emulator, result)
    finally:
        session.close()


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05,
               message: str = "condition") -> T:
    """Poll until predicate() is truthy; returns its value. Fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(interval)
