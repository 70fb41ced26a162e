"""The timeline of ZooKeeper -> KRaft migration phases Keel has seen, kept in the audit store (History shows it too):
one row of kind "migration-phase" each time a front end (CLI `migration`, the Migration page) reads a phase other
than the last one recorded for the cluster. Observed, not done: actor "keel", result "observed" (the store's
status column only knows pending / applied / failed, so the row is "applied")."""

from __future__ import annotations

from dataclasses import dataclass

from core.audit.store import Store

KIND = "migration-phase"
ACTOR = "keel"


@dataclass(frozen=True)
class Seen:
    at: str
    key: str
    name: str


def timeline(store: Store, cluster: str, *, limit: int = 200) -> list[Seen]:
    """The phases recorded for `cluster`, oldest first."""
    rows = store.actions(cluster, kind=KIND, limit=limit)
    return [Seen(a.at, a.target, a.summary) for a in reversed(rows)]


def note_phase(store: Store, cluster: str, key: str, name: str) -> bool:
    """Record phase `key` for `cluster` unless it is the last one recorded; True when a row was written."""
    last = store.actions(cluster, kind=KIND, limit=1)
    if last and last[0].target == key:
        return False
    store.record(cluster=cluster, kind=KIND, target=key, summary=name, result="observed", payload={"phase": key},
                 ok=True, actor=ACTOR, source="none")
    return True


__all__ = ["KIND", "Seen", "timeline", "note_phase"]
