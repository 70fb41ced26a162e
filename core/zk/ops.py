"""The operations of an atomic multi-op (ZkSession.multi), and the one ZooKeeper has no op for: "absent".

ZooKeeper's `check` tests the version of a node that exists; nothing in a multi tests that a node does NOT exist.
Yet a write can depend on a node's absence: adding partitions is valid only while /admin/delete_topics/<t> is
absent, an election only while no reassignment lists its partitions. `Op("absent", path)` asserts it in the same
transaction: it runs as a create of the node followed at once by its delete, which fails the whole multi with
NodeExists exactly when the node exists at commit time, and leaves nothing behind when it does not (the parent's
child count and data are as before; the watches on it fire, and every Kafka handler re-reads and finds nothing).
A missing ancestor is created before and deleted after in the same way, so the multi needs no node to pre-exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass
class Op:
    """One operation of an atomic multi-op (see ZkSession.multi)."""

    kind: str  # create | set | delete | check | absent
    path: str
    data: bytes = b""
    version: int = -1
    sequence: bool = False
    ephemeral: bool = False


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def expand(ops: Sequence[Op], exists: Callable[[str], bool]) -> tuple[list[Op], list[int]]:
    """The ops ZooKeeper runs for `ops`, and for each the index of the op of `ops` it comes from.

    `exists(path)` tells which ancestors of an `absent` node exist now (asked once per ancestor): one that does
    not is created and deleted around the node; one created in between fails the multi with NodeExists on it
    (never a wrong success)."""
    out: list[Op] = []
    origin: list[int] = []
    known: dict[str, bool] = {"/": True}

    def present(path: str) -> bool:
        if path not in known:
            known[path] = exists(path)
        return known[path]

    for i, op in enumerate(ops):
        if op.kind != "absent":
            out.append(op)
            origin.append(i)
            continue
        missing: list[str] = []
        parent = _parent(op.path)
        while not present(parent):
            missing.append(parent)
            parent = _parent(parent)
        chain = [*reversed(missing), op.path]
        out += [Op("create", p) for p in chain] + [Op("delete", p) for p in reversed(chain)]
        origin += [i] * (2 * len(chain))
    return out, origin
