"""A live view of a cluster without ZooKeeper: the Admin API polled (KRaft gives clients no watches).

`PolledCluster` reads the whole cluster through core.kafka.metadata every `interval` seconds (default 2) in a
background thread and keeps the last snapshot. It offers what the ZooKeeper watcher (core.zk.watcher.LiveCluster)
offers the dashboard's connection: `snapshot()`, `generation`, `status`, `error`, `last_good_at`, `wait_for`.

* An unchanged cluster keeps its snapshot object and generation, so nothing derived from it is recomputed or
  redrawn. "Unchanged" ignores the capture time and the quorum's offsets (the metadata log grows every half second
  with no-op records; its leader, epoch and members count as a change).
* A big cluster is read less often: the next read waits at least READ_SHARE_FACTOR times as long as the last one
  took (a 20,000-partition read takes 0.7 s here, bench/kraft_read.py), so polling costs at most a quarter of a
  core whatever the size; `effective_interval` says what it is now.
* `status` is "connected" only while the last poll succeeded: a failed poll makes it "disconnected" (with the
  error) at once, and the view keeps the last good snapshot, saying since when (`last_good_at`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable

from core.errors import KeelError
from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import read_snapshot
from core.model import ClusterSnapshot, utc_now_iso

DEFAULT_INTERVAL = 2.0
READ_SHARE_FACTOR = 4  # wait at least 4x the last read's duration: polling uses at most ~1/4 of a core


def _content(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot without what changes on every read of an unchanged cluster."""
    quorum = snap.quorum
    if quorum is not None:
        quorum = dataclasses.replace(
            quorum, high_watermark=0,
            voters=tuple(dataclasses.replace(v, log_end_offset=None, last_caught_up_ms=None) for v in quorum.voters),
            observers=tuple(dataclasses.replace(o, log_end_offset=None, last_caught_up_ms=None)
                            for o in quorum.observers))
    return dataclasses.replace(snap, captured_at="", quorum=quorum)


class PolledCluster:
    """The cluster behind `admin`, re-read every `interval` seconds. `start()` reads it once (raising what the
    brokers answered when they cannot be read), then polls in the background until `stop()`."""

    def __init__(self, admin: KafkaAdmin, *, cluster: str = "", interval: float = DEFAULT_INTERVAL,
                 read: Callable[[KafkaAdmin], ClusterSnapshot] | None = None):
        if not interval > 0:
            raise KeelError(f"the poll interval must be positive, got {interval!r}")
        self.admin = admin
        self.cluster = cluster
        self.interval = float(interval)
        self._read = read or (lambda a: read_snapshot(a, cluster=cluster))
        self.status = "connecting"  # connected | disconnected | connecting | stopped
        self.error: str | None = None
        self.last_good_at: str | None = None  # ISO time of the last successful poll
        self.polls = 0
        self.last_read_seconds = 0.0
        self.resync_note: str | None = None  # what the ZooKeeper watcher says after a reconnect: nothing to say here
        self.resynced_monotonic: float | None = None
        self._snapshot: ClusterSnapshot | None = None
        self._content: ClusterSnapshot | None = None
        self._generation = 0
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._wake = threading.Event()  # poll_now(): a write just landed, read it without waiting out the interval
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> "PolledCluster":
        self._poll(raise_errors=True)
        self._thread = threading.Thread(target=self._run, name=f"keel-poll-{self.cluster}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.status = "stopped"
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.admin.timeout + self.interval + 5)

    @property
    def effective_interval(self) -> float:
        """Seconds between two reads: the configured interval, longer for a cluster whose read takes long."""
        return max(self.interval, READ_SHARE_FACTOR * self.last_read_seconds)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.effective_interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._poll(raise_errors=False)

    def poll_now(self) -> None:
        """Read the cluster again now rather than at the next interval (after a write Keel made)."""
        self._wake.set()

    def _poll(self, *, raise_errors: bool) -> None:
        started = time.monotonic()
        try:
            snap = self._read(self.admin)
        except Exception as e:  # every failure is the view's status, never the thread's end
            if self.status != "stopped":  # the reason first: whoever sees "disconnected" sees why
                self.error = str(e) if isinstance(e, KeelError) else f"{type(e).__name__}: {e}"
                self.status = "disconnected"
            if raise_errors:
                raise
            return
        content = _content(snap)
        with self._changed:
            self.polls += 1
            self.last_read_seconds = time.monotonic() - started
            if self._content is None or content != self._content:
                self._snapshot, self._content = snap, content
                self._generation += 1
            if self.status != "stopped":
                self.status, self.error = "connected", None
            self.last_good_at = utc_now_iso()
            self._changed.notify_all()

    # --- reading -------------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        if self._snapshot is None:
            raise KeelError("the cluster has not been read yet")
        return self._snapshot

    @property
    def generation(self) -> int:
        return self._generation

    def wait_for(self, predicate: Callable[[ClusterSnapshot], bool], timeout: float = 10.0) -> ClusterSnapshot:
        """The first snapshot that satisfies `predicate`, polled for up to `timeout` seconds; TimeoutError after."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if self._snapshot is not None and predicate(self._snapshot):
                    return self._snapshot
                left = deadline - time.monotonic()
                if left <= 0:
                    why = f" (the last poll failed: {self.error})" if self.error else ""
                    raise TimeoutError(f"the cluster did not show the change within {timeout:g} s{why}")
                self._changed.wait(left)
