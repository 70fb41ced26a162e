"""Fixtures of the fleet tests (Spark): one local SparkSession per test session (per xdist worker)."""

from __future__ import annotations

import pytest

from core.fleet.spark import get_session, stop_session
from tests.support.spark_helpers import LOCAL_MASTER


@pytest.fixture(scope="session")
def spark():
    """The test session's SparkSession: local[2], no UI, 2 shuffle partitions, driver bound to 127.0.0.1."""
    session = get_session(LOCAL_MASTER, shuffle_partitions=2, driver_memory="1g",
                          conf={"spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
                                "spark.default.parallelism": "2"})
    try:
        yield session
    finally:
        stop_session()
