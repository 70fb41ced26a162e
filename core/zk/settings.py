"""How to reach a cluster's ZooKeeper: the connect string (Kafka's zookeeper.connect, chroot included), TLS
options and the session settings. Pure data and parsing; core.zk.session opens the session from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from core.errors import ConnectStringError

_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)(?::(\d+))?$")
_CHROOT_SEGMENT = re.compile(r"^[^/\x00]+$")


@dataclass(frozen=True)
class ConnectString:
    hosts: tuple[tuple[str, int], ...]
    chroot: str | None

    @property
    def hosts_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.hosts)

    def __str__(self) -> str:
        return self.hosts_text + (self.chroot or "")

    @property
    def canonical(self) -> str:
        """The same ensemble and chroot however it was spelled: host names lower-cased, duplicates dropped, sorted."""
        hosts = sorted({(h.lower(), p) for h, p in self.hosts})
        return ",".join(f"{h}:{p}" for h, p in hosts) + (self.chroot or "")


# host, port -> the addresses it stands for (core.cluster_identity's resolver; socket.getaddrinfo at the edge)
Resolver = Callable[[str, int], frozenset[str]]


def same_zookeeper(a: ConnectString, b: ConnectString, resolve: Resolver) -> bool:
    """Do two connect strings reach the same Kafka cluster: the same chroot, and at least one server in common once
    host names are resolved (`zk1:2181` and `zk1:2181,zk2:2181` are one ensemble; `localhost` is `127.0.0.1`)."""
    if (a.chroot or "") != (b.chroot or ""):
        return False
    ours = {(addr, p) for h, p in a.hosts for addr in resolve(h, p)}
    return any((addr, p) in ours for h, p in b.hosts for addr in resolve(h, p))


def parse_connect_string(text: str) -> ConnectString:
    """`host:port[,host:port][/chroot]` as ZooKeeper and Kafka's zookeeper.connect accept it."""
    if not isinstance(text, str) or not text.strip():
        raise ConnectStringError("empty ZooKeeper connect string: expected host:port[,host:port][/chroot]")
    text = text.strip()
    slash = text.find("/")
    hosts_part, chroot = (text, None) if slash < 0 else (text[:slash], text[slash:])
    if chroot is not None:
        if chroot == "/":
            chroot = None
        else:
            segments = chroot[1:].split("/")
            if any(not _CHROOT_SEGMENT.match(s) or s in (".", "..") for s in segments):
                raise ConnectStringError(
                    f"invalid chroot {chroot!r} in {text!r}: segments must be non-empty, without '.' or '..', "
                    "and the path must not end with '/'"
                )
    hosts = []
    for item in hosts_part.split(","):
        m = _HOST.match(item.strip())
        if not m:
            raise ConnectStringError(f"invalid ZooKeeper host {item!r} in {text!r}: expected host:port")
        port = int(m[2]) if m[2] else 2181
        if not 0 < port < 65536:
            raise ConnectStringError(f"invalid port {port} in {text!r}: must be 1-65535")
        hosts.append((m[1], port))
    return ConnectString(tuple(hosts), chroot)


@dataclass(frozen=True)
class TlsOptions:
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    key_password: str | None = None
    verify: bool = True


@dataclass(frozen=True)
class ZkSettings:
    connect: str
    digest: str | None = None  # "user:password"
    tls: TlsOptions | None = None
    connect_timeout: float = 10.0
    session_timeout: float = 15.0
    retries: int = 3
    # How long a write waits for ZooKeeper's answer (None: session_timeout + connect_timeout). kazoo queues a
    # write while it reconnects, for as long as that takes; past this bound its outcome is unknown (ZkSession.multi).
    write_timeout: float | None = None

    @classmethod
    def from_cluster(cls, cluster) -> "ZkSettings":
        """From a keel.toml cluster (core.policy.config.ClusterConfig, or anything with its fields): the one mapping
        the dashboard, the fleet collector and the CLI's --cluster share, TLS key password and verify included."""
        t = cluster.tls
        tls = None if t is None else TlsOptions(ca=t.ca, cert=t.cert, key=t.key, key_password=t.key_password,
                                                verify=t.verify)
        return cls(connect=cluster.zk, digest=cluster.digest, tls=tls, connect_timeout=cluster.connect_timeout)


