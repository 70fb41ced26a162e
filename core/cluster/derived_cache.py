"""The cells of Connection.derived: one value per derived name, snapshot and key, computed once by the first
caller while the others wait for it (core.cluster.connection)."""

from __future__ import annotations

import threading
from typing import Any

from core.model import ClusterSnapshot

DERIVED_KEYS = 64  # values kept per derived name and snapshot (e.g. the partition tables of that many topics)


class Cell:
    """One derived value: computed under its lock by the first caller."""

    __slots__ = ("lock", "done", "value")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = False
        self.value: Any = None


class Slot:
    """The derived values of one name for one snapshot, by key (compared with ==: a key need not be hashable),
    the most recently used last."""

    __slots__ = ("snapshot", "values")

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.values: list[tuple[Any, Cell]] = []

    def take(self, key: Any) -> Cell:
        """The cell of `key`, a new one if there is none; the least recently used beyond DERIVED_KEYS go."""
        for i, (k, cell) in enumerate(self.values):
            if k is key or k == key:
                self.values.append(self.values.pop(i))
                return cell
        cell = Cell()
        self.values.append((key, cell))
        del self.values[:-DERIVED_KEYS]
        return cell
