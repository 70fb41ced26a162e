"""Fixtures of the end-to-end tests: the real app under `streamlit run`, headless Chromium.

- ``sandbox``       the 5-broker sandbox of test_e2e_chromium.SPEC with its controller emulator, idle (it replaces
  tests/conftest.py's default sandbox here).
- ``app_url``       a read-only viewer's console on that sandbox; ``operator_url`` an operator's (writes enabled).
- ``browser``       headless Chromium, 1500 x 1900.
"""

from __future__ import annotations

import pytest

from tests.e2e.test_e2e_chromium import SPEC, serve
from tests.support.browser import chromium
from tests.support.sandbox_helpers import running_sandbox


@pytest.fixture
def sandbox(zk_connect):
    with running_sandbox(zk_connect, SPEC) as sb:
        assert sb.emulator.wait_idle(10)
        yield sb


@pytest.fixture
def app_url(sandbox, zk_connect, tmp_path):
    """A read-only viewer's console."""
    with serve(f'[keel]\nrole = "viewer"\nread_only = true\n\n'
               f'[clusters.e2e]\nzk = "{zk_connect}"\ndescription = "end-to-end sandbox"\n', tmp_path) as url:
        yield url


@pytest.fixture
def operator_url(sandbox, zk_connect, tmp_path):
    """An operator's console: write actions enabled."""
    with serve(f'[keel]\nrole = "operator"\n\n[clusters.e2e]\nzk = "{zk_connect}"\n', tmp_path) as url:
        yield url


@pytest.fixture
def browser():
    with chromium(1500, 1900) as driver:
        yield driver
