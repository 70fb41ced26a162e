"""Read both sides of a migrating cluster and feed the drift tracker (core.migration_drift): ZooKeeper through a
session, the brokers through the Admin API. The CLI's `migration-drift` and the dashboard's drift section use it.

ZooKeeper is read first (synced, so a lagging server of the ensemble does not pass for a write stuck behind), then
the brokers. The two reads are a moment apart and either side may change in between (during dual-write the KRaft
controller commits a change, then writes it into ZooKeeper), so when they differ both are read once more and the
second comparison is the one that counts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from core.migration_drift import Drift, DriftReport, DriftTracker, differences
from core.model import ClusterSnapshot

if TYPE_CHECKING:
    from core.kafka.admin import KafkaAdmin
    from core.zk.session import ZkSession

SETTLE_SECONDS = 0.5  # the pause before reading again when the two sides differed


def read_both(session: "ZkSession", admin: "KafkaAdmin", *, cluster: str = "") -> tuple[ClusterSnapshot,
                                                                                         ClusterSnapshot]:
    """ZooKeeper's snapshot, then the brokers'."""
    from core.kafka.metadata import read_snapshot as read_brokers
    from core.zk.reader import read_snapshot as read_zk

    session.sync()
    zk = read_zk(session, cluster=cluster)
    return zk, read_brokers(admin, cluster=cluster)


def compare(session: "ZkSession", admin: "KafkaAdmin", *, cluster: str = "",
            settle: float = SETTLE_SECONDS) -> list[Drift]:
    """The differences between the two sides, read again once (after `settle` seconds) when there are some."""
    found = differences(*read_both(session, admin, cluster=cluster))
    if found:
        time.sleep(settle)
        found = differences(*read_both(session, admin, cluster=cluster))
    return found


def read_drift(session: "ZkSession", admin: "KafkaAdmin", tracker: DriftTracker, now: float | None = None, *,
               cluster: str = "", settle: float = SETTLE_SECONDS) -> DriftReport:
    """Compare both sides and feed `tracker`: each difference with its age at `now` (default time.monotonic() as
    the reading starts: the clock the tracker must always be given). Stamped at the start, so that reads started S
    seconds apart are S seconds apart in the ages, however long each took."""
    at = time.monotonic() if now is None else now
    found = compare(session, admin, cluster=cluster, settle=settle)
    return tracker.update(found, at)


__all__ = ["SETTLE_SECONDS", "compare", "read_both", "read_drift"]
