"""The Reassign page's partition sizes read from the brokers (issue 24): with the cluster's `bootstrap` in keel.toml,
the page reads them as `plan --bootstrap-server` and the Log dirs page do (the Admin API's describeLogDirs through
core.kafka.admin, the largest replica of each partition), so Bytes moved and Est. time show without a
kafka-log-dirs file. An uploaded or pasted file still wins.

One read per connection, shared by every session, kept MAX_AGE seconds; a failed read is kept RETRY_AFTER seconds, so
brokers that do not answer cost one bounded wait (TIMEOUT, or twice the cluster's connect_timeout if shorter), not one
per rerun. The page's "Read again" forces a read.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from core.balance.sizes import PartitionSizes
from core.errors import KeelError

MEMO = "reassign.broker_sizes"  # Connection.memo: bootstrap -> BrokerSizes, and the lock
MAX_AGE = 300.0  # s: sizes change slowly; older ones are read again on the next run
RETRY_AFTER = 60.0  # s: after a failed read
TIMEOUT = 5.0  # s: the sizes are optional; the page waits no longer for them


@dataclass(frozen=True)
class BrokerSizes:
    """One read: the sizes, or why there are none."""

    sizes: PartitionSizes | None
    at: float  # time.time() of the read
    error: KeelError | None = None

    @property
    def key(self) -> str:
        """Identifies this read in the plan cache's key: new sizes, a new plan."""
        return f"brokers@{self.at:.6f}"

    def fresh(self, now: float) -> bool:
        return now - self.at < (MAX_AGE if self.sizes is not None else RETRY_AFTER)


def read(cluster) -> BrokerSizes:
    """Partition sizes from the brokers of `cluster` (a keel.toml cluster with `bootstrap`), never raising."""
    from core.kafka.admin import KafkaAdmin  # kafka-python is loaded only where a cluster has brokers to ask

    try:
        with KafkaAdmin.for_cluster(cluster, timeout=min(TIMEOUT, cluster.connect_timeout * 2)) as admin:
            return BrokerSizes(admin.partition_sizes(), time.time())
    except KeelError as e:
        return BrokerSizes(None, time.time(), e)
    except Exception as e:  # still a note on the page, never a traceback
        return BrokerSizes(None, time.time(), KeelError(f"could not read the partition sizes: {type(e).__name__}: "
                                                        f"{e}"))


def from_brokers(conn, cluster, *, force: bool = False, reader=read) -> BrokerSizes:
    """The connection's last read of `cluster`'s sizes while it is fresh (unless `force`), else a new one."""
    memo = conn.memo(MEMO)
    lock = memo.setdefault("lock", threading.Lock())
    with lock:  # sessions opening the page at once wait for one read
        hit = memo.get(cluster.bootstrap)
        if hit is not None and not force and hit.fresh(time.time()):
            return hit
        got = memo[cluster.bootstrap] = reader(cluster)
        return got
