"""The ACL of a znode Keel creates: the one Kafka would give it there (no kazoo; I/O only through the reader
an AclPolicy is given).

Kafka (kafka.zk.ZkData.defaultAcls) creates every node with
* `zookeeper.set.acl=false`: world:anyone ALL (ZooDefs.Ids.OPEN_ACL_UNSAFE);
* `zookeeper.set.acl=true`: CREATOR_ALL_ACL (the creating session's identity, ALL) plus world:anyone READ,
  except under the sensitive roots (`/config/users`, `/config/brokers`, `/delegation_token`, matched as a
  string prefix like ZkData.sensitivePath) which get no world READ; `/consumers` itself stays open.

Keel cannot see `zookeeper.set.acl`, so it reads it off the tree: a node is created "secure" when the
session has an identity and the node's parent (the nearest existing ancestor, read once per session, see
core.zk.session) is not open, i.e. does not grant world:anyone ALL. With digest credentials the identity is
written out as `digest:<user>:<base64(sha1(user:password))>` (what ZooKeeper expands CREATOR_ALL_ACL to for a
digest session); a session authenticated only by its TLS client certificate uses CREATOR_ALL_ACL itself
(`auth:` ALL), which the server turns into its `x509:<subject>` identity. Without an identity, or under an
open parent, nodes are open as before.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

READ, WRITE, CREATE, DELETE, ADMIN = 1, 2, 4, 8, 16
ALL = READ | WRITE | CREATE | DELETE | ADMIN

# ZkData.SensitiveRootPaths (Kafka 1.1 - 3.9): string prefixes, as sensitivePath compares them.
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token")
# ZkData.defaultAcls keeps the old consumers' root open: old consumers write under it.
CONSUMERS = "/consumers"


@dataclass(frozen=True)
class Acl:
    perms: int
    scheme: str
    id: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.id}:{perms_text(self.perms)}"


OPEN: tuple[Acl, ...] = (Acl(ALL, "world", "anyone"),)
WORLD_READ = Acl(READ, "world", "anyone")


def perms_text(perms: int) -> str:
    """ZooKeeper's short form: 'cdrwa' for ALL."""
    return "".join(c for c, bit in (("c", CREATE), ("d", DELETE), ("r", READ), ("w", WRITE), ("a", ADMIN))
                   if perms & bit)


def digest_id(credentials: str) -> str:
    """DigestAuthenticationProvider.generateDigest: 'user:password' -> 'user:base64(sha1(user:password))'."""
    user = credentials.split(":", 1)[0]
    return f"{user}:{base64.b64encode(hashlib.sha1(credentials.encode()).digest()).decode()}"


def is_open(acls: Iterable[Acl] | None) -> bool:
    """True when world:anyone has every permission (OPEN_ACL_UNSAFE, what an unsecured Kafka writes)."""
    return acls is not None and any(a.scheme == "world" and a.id == "anyone" and a.perms & ALL == ALL for a in acls)


def sensitive_path(path: str) -> bool:
    """ZkData.sensitivePath (a plain prefix test, so `/config/brokers` itself is sensitive)."""
    return path.startswith(SENSITIVE_ROOTS)


def creator(digest: str | None, tls_identity: bool = False) -> Acl | None:
    """The creator's full-rights entry: the digest identity, else CREATOR_ALL_ACL for a session known to the
    server by its TLS client certificate; None without an identity (nodes are then created open)."""
    if digest:
        return Acl(ALL, "digest", digest_id(digest))
    if tls_identity:
        return Acl(ALL, "auth", "")
    return None


def secure_acls(path: str, owner: Acl) -> tuple[Acl, ...]:
    """defaultAcls(isSecure=true, path) for the creator entry `owner`."""
    if path == CONSUMERS:
        return OPEN
    return (owner,) if sensitive_path(path) else (owner, WORLD_READ)


def protects(parent_acl: Sequence[Acl] | None) -> bool:
    """Whether a parent with this ACL marks a protected (zookeeper.set.acl=true) tree. None: the ACL could
    not be read (no READ or ADMIN right on the node), itself a sign of a protected tree."""
    return parent_acl is None or not is_open(parent_acl)


def acl_for(path: str, *, owner: Acl | None, protected: bool) -> tuple[Acl, ...]:
    """The ACL for creating `path` (relative to the chroot) by `owner` (see creator) under a parent that
    `protects` (or not)."""
    if owner is None or not protected:
        return OPEN
    return secure_acls(path, owner)


class Missing(LookupError):
    """Raised by an AclPolicy's reader for a node that does not exist."""


def parent(path: str) -> str:
    """'/a/b' -> '/a'; '/a' -> '/'. (A sequential node's prefix has its real parent.)"""
    return path.rsplit("/", 1)[0] or "/"


class AclPolicy:
    """One session's ACL decisions: `owner` (see creator) and, per path, whether the subtree is protected.

    `read_acl(path)` returns the node's ACL, None when the ACL may not be read (itself a sign of protection),
    or raises Missing. A node's decision is read once (the nearest existing ancestor of what is created) and
    recorded for the nodes the session creates; missing ancestors share their nearest ancestor's decision,
    since they are created under the same rule.
    """

    def __init__(self, owner: Acl | None, read_acl: Callable[[str], Sequence[Acl] | None]):
        self.owner = owner
        self._read_acl = read_acl
        self._protected: dict[str, bool] = {}

    def for_path(self, path: str) -> tuple[Acl, ...]:
        if self.owner is None:
            return OPEN
        return acl_for(path, owner=self.owner, protected=self._parent_protected(path))

    def for_batch(self, paths: Sequence[str]) -> list[tuple[Acl, ...]] | None:
        """Each node of a parents-first batch; a node whose parent is in the batch follows the parent's
        decision without a read. None: all open (no identity)."""
        if self.owner is None:
            return None
        decided: dict[str, bool] = {}
        out = []
        for path in paths:
            up = parent(path)
            protected = decided[up] if up in decided else self._parent_protected(path)
            acls = acl_for(path, owner=self.owner, protected=protected)
            decided[path] = protects(acls)
            out.append(acls)
        return out

    def created(self, path: str, acls: Sequence[Acl]) -> None:
        if self.owner is not None:
            self._protected[path] = protects(acls)

    def _parent_protected(self, path: str) -> bool:
        node, missing = parent(path), []
        while node not in self._protected:
            try:
                self._protected[node] = protects(self._read_acl(node))
            except Missing:
                if node == "/":
                    break  # a chroot that does not exist: the create fails on its own
                missing.append(node)
                node = parent(node)
        protected = self._protected.get(node, False)
        for m in missing:
            self._protected[m] = protected
        return protected
