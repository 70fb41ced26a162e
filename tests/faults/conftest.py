"""Fixtures of the fault tests: a ZooKeeper server of the test's own (tests/support/own_zk.py)."""

from __future__ import annotations

import pytest

from tests.support.own_zk import OwnZooKeeper


@pytest.fixture
def own_zk(tmp_path):
    server = OwnZooKeeper(tmp_path)
    try:
        yield server
    finally:
        server.close()
