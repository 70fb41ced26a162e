"""The one way into a write, for every front end: the command line, the dashboard, and anything added later.

`identify` says which keel.toml cluster a write is aimed at, however its connect string is spelled; `admit` lets
the write through or refuses it, recording the refusal in the audit store (kind "refused"):

* keel.toml cannot be read: a KEEL_CONFIG naming a missing file never opens a cluster (its read_only or roles
  would silently be dropped);
* `read_only = true`, or a role short of the action on that cluster (core.policy.access.check). A cluster keel.toml does
  not name gets the least role any of its clusters gives, so another spelling never opens more;
* the cluster's live state forbids it: a ZooKeeper -> KRaft migration under way. The probe reads it from the
  cluster right now (ZooKeeper, later the Admin API), never from what a page cached.

What `admit` lets through runs inside `acting(...)`, so that every row the write records names the actor, how
they were identified, their role and the cluster's id. The engine's writers refuse a migration again on their own
read (core.zk.reader.read_for_write): a caller that skipped the gate still cannot write during one.

Pure apart from what is passed in: the probe, the audit store and the host-name resolver.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

from core.policy import access
from core.errors import (ConnectStringError, CorruptZnodeError, KeelError, KRaftControllerError, ValidationError)
from core.kafka.bootstrap import parse_bootstrap, same_brokers
from core.zk.settings import ConnectString, Resolver, parse_connect_string, same_zookeeper

if TYPE_CHECKING:
    from core.policy.config import ConfigError, KeelConfig
    from core.audit.store import Store

log = logging.getLogger(__name__)

__all__ = ["Admission", "ClusterProbe", "Target", "acting", "admit", "identify", "refuse"]


class ClusterProbe(Protocol):
    """What the gate asks the cluster itself, right before a write (core.zk.migration_state.ZkClusterProbe)."""

    def cluster_id(self) -> str | None: ...

    def refuse_writes(self) -> None:
        """Raise (MigrationInProgressError, CorruptZnodeError) when the cluster's state forbids writing now."""


@dataclass(frozen=True)
class Target:
    """The cluster a write is aimed at."""

    label: str  # what the audit store records as its cluster: keel.toml's name, else the connect string
    configured: tuple[str, ...]  # the keel.toml cluster(s) it is; () when it is none of them
    how: str = ""  # how it was identified, for messages
    cluster_id: str | None = None

    @classmethod
    def named(cls, name: str, cluster_id: str | None = None) -> "Target":
        """A keel.toml cluster chosen by name (the dashboard's picker)."""
        return cls(name, (name,), "chosen by name", cluster_id)


# --- which cluster -----------------------------------------------------------------------------------------


def _literal(a: ConnectString, b: ConnectString) -> bool:
    """Same chroot and a server spelled the same way: no resolving needed."""
    return (a.chroot or "") == (b.chroot or "") and bool({(h.lower(), p) for h, p in a.hosts}
                                                          & {(h.lower(), p) for h, p in b.hosts})


def identify(config: "KeelConfig | None", *, zk: str | None = None, bootstrap: str | None = None,
             named: str | None = None, resolve: Resolver, cluster_id: str | None = None,
             recorded: Callable[[str], Sequence[str]] | None = None) -> Target:
    """The cluster that `zk` (a connect string) or, without one, `bootstrap` reaches, among keel.toml's.

    Two connect strings are one cluster when their chroots are equal and they share a server once host names are
    resolved (`resolve(host, port) -> addresses`), duplicates and order ignored. `named` (the CLI's --cluster)
    that names a keel.toml cluster must be that cluster: naming a better-privileged one for another ZooKeeper is
    refused. Failing an address match, `cluster_id` (/cluster/id) is looked up among the names the audit store
    `recorded` it under. What matches nothing is labelled by `named`, else the canonical connect string."""
    zk_cs = parse_connect_string(zk) if zk else None
    boot = parse_bootstrap(bootstrap) if bootstrap and not zk else None
    label = named or (zk_cs.canonical if zk_cs is not None else ",".join(sorted(boot or ())))
    if config is None:
        return Target(label, (), "no keel.toml", cluster_id)
    by_id = [n for n in (recorded(cluster_id) if cluster_id and recorded else ()) if n in config.clusters]

    def reaches(name: str) -> bool:
        c = config.clusters[name]
        if zk_cs is not None:
            if c.zk is None:  # read through its brokers only
                return False
            try:
                theirs = parse_connect_string(c.zk)
            except ConnectStringError:
                return False
            return _literal(theirs, zk_cs) or same_zookeeper(theirs, zk_cs, resolve)
        if boot is not None and c.bootstrap:
            return same_brokers(tuple(c.bootstrap.split(",")), boot, resolve)
        return False

    if named is not None and named in config.clusters:
        if zk_cs is None and boot is None or reaches(named) or named in by_id:
            return Target(named, (named,), f"--cluster {named}", cluster_id)
        given = f"--zk {zk}" if zk_cs is not None else f"--bootstrap-server {bootstrap}"
        raise ValidationError(
            f"--cluster {named} is {config.clusters[named].zk or config.clusters[named].bootstrap} in {config.path or 'keel.toml'}, but {given} reaches "
            "another cluster: nothing was written",
            hint=f"give {named}'s own connect string, or drop --cluster (its role on {named} does not carry over)")
    matches = tuple(n for n in config.clusters if reaches(n)) or tuple(dict.fromkeys(by_id))
    if matches:
        how = "its address" if not by_id or any(reaches(n) for n in matches) else f"/cluster/id {cluster_id}"
        return Target(matches[0], matches, f"keel.toml's {', '.join(matches)} by {how}", cluster_id)
    if named is None and cluster_id and recorded:  # keep one History name for one cluster, however it is spelled
        label = next(iter(recorded(cluster_id)), label)
    return Target(label, (), "not a cluster keel.toml names", cluster_id)


# --- may it write ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Admission:
    decision: access.Decision
    target: Target


def _decision(who: access.Identity, config: "KeelConfig", target: Target, needed: access.Role, what: str,
              exposed: bool) -> access.Decision:
    """core.policy.access.check on the cluster; a write aimed at several keel.toml clusters at once (two names for one
    ZooKeeper) needs the role on each of them."""
    names: Sequence[str | None] = target.configured or (None,)
    decisions = [access.check(who, config, name, needed, what, exposed=exposed) for name in names]
    return min(decisions, key=lambda d: d.role.rank)


def admit(who: access.Identity, config: "KeelConfig | ConfigError | None", target: Target, action: str, *,
          what: str | None = None, needs: access.Role | None = None, exposed: bool = False,
          probe: ClusterProbe | None = None, store: "Store | None" = None) -> Admission:
    """Let `who` do `action` (a kind, as the store records it: "create-topic", "reassignment", ...) on `target`,
    or raise: the ConfigError, ReadOnlyError / RoleDeniedError (core.policy.access), or the probe's refusal
    (MigrationInProgressError, CorruptZnodeError). Refusals are recorded in `store`. `config` None: there is no
    keel.toml at all (the command line then keeps every right; read_only and roles need a keel.toml)."""
    what = what or action
    role: str | None = None
    try:
        if isinstance(config, KeelError):
            raise config
        if config is None:
            decision = access.Decision(access.Role.ADMIN, "no keel.toml: the command line keeps every right")
        else:
            role = min((access.resolve(who, config, n, exposed=exposed) for n in target.configured or (None,)),
                       key=lambda d: d.role.rank).role.value  # recorded with a refusal, read_only's included
            decision = _decision(who, config, target, needs or access.needed_role(action), what, exposed)
        role = decision.role.value
        if probe is not None:
            probe.refuse_writes()
    except (access.ReadOnlyError, access.RoleDeniedError, ValidationError, KRaftControllerError,
            CorruptZnodeError) as e:
        if isinstance(e, access.RoleDeniedError):
            role = e.role.value
        _record_refusal(store, who, target, what, e, role)
        raise
    return Admission(decision, target)


def refuse(who: access.Identity, error: KeelError, target: Target, what: str, store: "Store | None") -> None:
    """Record `error` as a refused `what` on `target` and raise it: for a refusal found before `admit` could run
    (keel.toml unreadable, a --cluster naming another cluster)."""
    _record_refusal(store, who, target, what, error, None)
    raise error


def _record_refusal(store: "Store | None", who: access.Identity, target: Target, what: str, error: KeelError,
                    role: str | None) -> None:
    if store is None:
        return
    try:
        store.record(cluster=target.label, kind="refused", target=what[:200], summary=f"refused: {what}"[:300],
                     result=str(error), actor=who.actor, source=who.source, role=role)
    except Exception as e:  # the refusal itself is what the person must see
        log.warning("could not record a refused action: %s", e)


@contextmanager
def acting(admission: Admission, who: access.Identity) -> Iterator[None]:
    """Within: every action the write records names `who`, their role and the cluster's id."""
    from core.audit.store import acting as store_acting

    with store_acting(who.actor, who.source, admission.decision.role.value, admission.target.cluster_id):
        yield
