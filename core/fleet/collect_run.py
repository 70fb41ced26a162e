"""A collection of every configured cluster started by a person (the Fleet page's "Collect now"): who may start
one, one at a time per store, and its row in the audit store. The collection itself is core.fleet.export.collect,
called as the CLI calls it, with history kept.

Who may: the operator role on every cluster it reads. A collection writes nothing to any cluster (only the local
fleet store), but it opens a session to each cluster's ZooKeeper and brokers and reads every partition state and
log dir: at 200,000 partitions that is load on production ensembles, the kind of thing a viewer (anyone signed in,
during an incident) must not be able to set off for the whole fleet with a click. read_only does not stop it:
like a peek, it writes nothing to a cluster.

One at a time: a lock file in the store (STORE/_keel_collect.lock, flock: released by the kernel if the process
dies) that names who holds it and since when, so a second collection of the same store, from this or another Keel
instance on a shared disk, is refused with that name. The dashboard keeps one collection per process on top.

Recorded: one "fleet-collect" row per run (begun before any cluster is read, finished with the outcome) about no
single cluster (core.audit.store.NO_CLUSTER: the pending-write reconciliation of a cluster never sees it); a refusal
of the role is recorded as "refused" on the cluster that refused, as the write gate records its refusals.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from core.audit.store import NO_CLUSTER
from core.errors import BusyError
from core.fleet.errors import FleetInputError
from core.fleet.export import CollectResult, collect
from core.policy import access, gate

if TYPE_CHECKING:
    from core.audit.store import Store
    from core.policy.config import KeelConfig

KIND = "fleet-collect"
NEEDED = access.Role.OPERATOR
LOCK_NAME = "_keel_collect.lock"  # "_": ignored by every reader of the store, as Spark and pyarrow ignore it
WHAT = "collect the fleet"


class CollectionRunningError(BusyError):
    """Another collection of this store is running; `holder` says whose (actor, started_at, host, pid)."""

    def __init__(self, message: str, holder: dict, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.holder = holder


def check_collect(who: access.Identity, config: "KeelConfig", *, exposed: bool = False) -> tuple[str, ...]:
    """The clusters a collection by `who` reads (all of keel.toml's, in its order); RoleDeniedError naming the
    first cluster on which `who` is not an operator. read_only does not apply (nothing is written to a cluster)."""
    names = tuple(config.clusters)
    where = config.path or "keel.toml"
    if not names:
        raise FleetInputError(f"{where} names no cluster to collect", hint="add [clusters.NAME] tables to it")
    for name in names:
        d = access.resolve(who, config, name, exposed=exposed)
        if d.role.allows(NEEDED):
            continue
        if d.exposed:
            hint = ("nobody is signed in and this instance listens beyond loopback, so everyone who reaches it is a "
                    f'viewer: configure sign-in ([auth] mode = "oidc" or "proxy" in {where}), or listen on '
                    "127.0.0.1 only")
        elif who.source == access.NONE or config.auth.mode == access.NONE:
            hint = f'set role = "operator" in the [keel] table of {where}'
        else:
            hint = (f"ask for the operator role on every cluster: [access] or [clusters.{name}.access] of {where} "
                    "grants it; or collect from the command line (`python -m core fleet collect`)")
        raise access.RoleDeniedError(
            f"cannot {WHAT}: the role of {who.actor} on cluster {name} is {d.role.value!r}; reading every "
            "configured cluster takes the operator role on each", role=d.role, needed=NEEDED, cluster=name, hint=hint)
    return names


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class CollectionRun:
    """A started collection: the role was checked, the store's lock is held and the audit row begun. `read_all`
    runs it and releases the lock; `abandon` releases it without running (e.g. the thread could not start)."""

    store: Path
    clusters: tuple[str, ...]
    actor: str
    started_at: str
    action_id: int | None
    _config: "KeelConfig" = field(repr=False)
    _audit: "Store" = field(repr=False)
    _lock_fd: int | None = field(default=None, repr=False)

    def read_all(self, *, progress: Callable[[CollectResult], None] | None = None,
                read_progress: Callable[[str, str, int, int], None] | None = None,
                parallel: int | None = None) -> list[CollectResult]:
        """Collect every cluster into the store, each capture also kept in STORE/history/; one result per cluster
        (a cluster that fails is a failed result, never an exception). Finishes the audit row either way."""
        results: list[CollectResult] = []
        try:
            results = collect(self._config, self.store, clusters=self.clusters, progress=progress,
                              read_progress=read_progress, parallel=parallel, history=True)
        except BaseException as e:
            self._finish(False, f"interrupted: {type(e).__name__}: {e}"[:500])
            raise
        finally:
            self._release()
        failed = [r.cluster for r in results if not r.ok]
        self._finish(not failed, summary(results))
        return results

    def abandon(self, why: str) -> None:
        self._finish(False, f"not run: {why}"[:500])
        self._release()

    def _finish(self, ok: bool, result: str) -> None:
        if self.action_id is not None:
            self._audit.finish(self.action_id, ok=ok, result=result)
            self.action_id = None

    def _release(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            _drop_lock(fd)


def _drop_lock(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the only descriptor releases the flock


def summary(results: list[CollectResult]) -> str:
    failed = [r.cluster for r in results if not r.ok]
    text = f"{len(results)} clusters: {len(results) - len(failed)} collected"
    return text + (f", {len(failed)} failed ({', '.join(failed)})" if failed else "")


def _take_lock(store: Path, holder: dict) -> int:
    try:
        store.mkdir(parents=True, exist_ok=True)
        fd = os.open(store / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise FleetInputError(f"fleet store {store}: cannot create {LOCK_NAME}: {e.strerror or e}",
                              hint="choose a fleet store directory this Keel instance may write") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            other = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:
            other = {}
        os.close(fd)
        who = other.get("actor", "someone")
        since = str(other.get("started_at", "?")).replace("T", " ").rstrip("Z")
        on = f" on {other['host']} (pid {other.get('pid')})" if other.get("host") else ""
        raise CollectionRunningError(
            f"a collection of {store} started by {who} at {since} UTC{on} is running; one collection of a store "
            "runs at a time", other, hint="wait for it to finish: its captures are added to the history as each "
                                          "cluster is read") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)
    return fd


@contextmanager
def store_lock(store: str | Path, actor: str) -> Iterator[None]:
    """Hold the store's collection lock for a CLI collection (CollectionRunningError naming the holder when the
    dashboard's "Collect now" or another `fleet collect` holds it): two collections of one store never overlap."""
    holder = {"actor": actor, "started_at": _now(), "host": socket.gethostname(), "pid": os.getpid()}
    root = Path(store).expanduser()
    new = not root.exists()
    fd = _take_lock(root, holder)
    try:
        yield
    finally:
        _drop_lock(fd)
        # a collection that stored nothing (every cluster failed) leaves no store behind
        with suppress(OSError):
            if new and [p.name for p in root.iterdir()] == [LOCK_NAME]:
                (root / LOCK_NAME).unlink()
                root.rmdir()


def start_collection(who: access.Identity, config: "KeelConfig", store: str | Path, *, audit: "Store",
                     exposed: bool = False) -> CollectionRun:
    """Check the role (a refusal is recorded and raised), take the store's lock (CollectionRunningError naming the
    holder) and record the run as begun. Nothing has been read from any cluster yet when this returns."""
    try:
        names = check_collect(who, config, exposed=exposed)
    except access.RoleDeniedError as e:
        gate.refuse(who, e, gate.Target.named(e.cluster or ""), WHAT, audit)
    root = Path(store).expanduser()
    started = _now()
    holder = {"actor": who.actor, "started_at": started, "host": socket.gethostname(), "pid": os.getpid()}
    fd = _take_lock(root, holder)
    try:
        action_id = audit.begin(cluster=NO_CLUSTER, kind=KIND, target=f"{len(names)} clusters",
                                summary=f"fleet collect of {len(names)} clusters into {root}"[:300],
                                payload={"clusters": list(names), "store": str(root), "history": True},
                                actor=who.actor, source=who.source, role=NEEDED.value)
    except BaseException:
        os.close(fd)
        raise
    return CollectionRun(root, names, who.actor, started, action_id, config, audit, fd)


__all__ = ["KIND", "CollectionRun", "CollectionRunningError", "check_collect", "start_collection", "store_lock", "summary"]
