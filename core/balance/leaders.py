"""Phase 6 of the balanced strategy: preferred leaders per broker within floor/ceil of each broker's share.

RF-1 partitions are spread first (their leadership cannot be reordered), then a partition's first replica is
swapped with a follower (partitions already changing first), then along augmenting paths (breadth-first over
brokers) until every broker leads within its bounds. Reordering replicas moves no data. A mixin of
balanced._Balancer: it reads and writes the balancer's state (`self.assign`, `self.lead`, bounds, ...).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Iterator

from core.balance.metrics import leader_means


class LeaderPhase:
    def _balance_leaders(self) -> None:
        # Frozen partitions keep their order: one led by a down broker is no target's to lead.
        n = len(self.reps) - sum(1 for p, f in enumerate(self.frozen) if f and self.reps[p][0] >= self.nt)
        means = leader_means(n, {b: self.cnt[b] for b in range(self.nt)})
        lo = [math.floor(round(means[b], 6)) for b in range(self.nt)]
        hi = [math.ceil(round(means[b], 6)) for b in range(self.nt)]
        forced = self._spread_single_replicas(hi)
        self.lead = [0] * self.nb
        self.led: list[list[int]] = [[] for _ in range(self.nb)]
        for p, replicas in enumerate(self.reps):
            self.lead[replicas[0]] += 1
            if not self.frozen[p]:
                self.led[replicas[0]].append(p)
        # Exact targets summing to n: brokers that must lead more than their floor (RF 1), then the brokers leading
        # most now, keep the ceiling (fewest swaps).
        self.lead_target = lo[:]
        extra = n - sum(lo)
        for b in sorted(range(self.nt), key=lambda b: (forced[b] <= lo[b], lo[b] - self.lead[b], b)):
            if extra > 0 and hi[b] > lo[b]:
                self.lead_target[b] = hi[b]
                extra -= 1
        for forward in (True, False):
            for b in range(self.nt):
                self._direct(b, forward)
            for b in range(self.nt):
                while self._off(b, forward) and self._augment(b, forward):
                    pass

    def _spread_single_replicas(self, hi: list[int]) -> list[int]:
        """A partition of RF 1 is led by its only replica: reordering cannot move that leadership, so a broker
        holding more of them than its leader ceiling gives some away (a swap when replica counts are tight).
        Returns how many each broker holds: leaderships it cannot hand over."""
        single = [[] for _ in range(self.nt)]
        for p, replicas in enumerate(self.reps):
            if len(replicas) == 1 and replicas[0] < self.nt and not self.frozen[p]:
                single[replicas[0]].append(p)
        for x in range(self.nt):
            while len(single[x]) > hi[x] and self._may_move():
                p = single[x][-1]
                ys = sorted((y for y in range(self.nt) if len(single[y]) < hi[y] - 1 and self._fits(p, x, y)),
                            key=lambda y: (len(single[y]) - hi[y], y))
                for y in ys:
                    if self.cnt[x] > self.lo[x] and self.cnt[y] < self.hi[y]:
                        back = None
                    else:  # a replica y follows goes back to x, so x leads no more than before
                        back = min((q for q in self._on(y) if self.reps[q][0] != y and self._fits(q, y, x)),
                                   key=lambda q: (abs((self.size[q] - self.size[p]) if self.size else 0), q),
                                   default=-1)
                        if back == -1:
                            continue
                    self._move(p, x, y)
                    if back is not None:
                        self._move(back, y, x)
                    single[y].append(single[x].pop())
                    break
                else:
                    break  # no broker can take one: reported as leaders off target
        return [len(ps) for ps in single]

    def _off(self, b: int, forward: bool) -> bool:
        return self.lead[b] > self.lead_target[b] if forward else self.lead[b] < self.lead_target[b]

    def _direct(self, b: int, forward: bool) -> None:
        """Single swaps: hand leaderships of b to followers under their target (forward), or take them from leaders
        over theirs. Partitions already in the plan go first: reordering an untouched one adds it to the plan."""
        if not self._off(b, forward):
            return
        candidates = sorted(set(self.led[b]) if forward else self._on(b), key=lambda p: (not self.touched[p], p))
        for p in candidates:
            if not self._off(b, forward):
                return
            first = self.reps[p][0]
            if forward and first == b:
                v = min((v for v in self.reps[p][1:] if v < self.nt and self._off(v, False)),
                        key=lambda v: (self.lead[v] - self.lead_target[v], v), default=None)
                if v is not None:
                    self._make_leader(p, v)
            elif not forward and first != b and first < self.nt and self._off(first, True):
                self._make_leader(p, b)

    def _augment(self, start: int, forward: bool) -> bool:
        """Breadth-first search for a chain of leader swaps that moves one leadership away from `start` (forward)
        or to it, ending at a broker under (forward) or over its target."""
        parent: dict[int, tuple[int, int]] = {start: (-1, -1)}
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for p, v in self._leader_edges(u, forward):
                if v in parent or v >= self.nt:
                    continue
                parent[v] = (u, p)
                if self._off(v, not forward):
                    while v != start:
                        u, p = parent[v]
                        self._make_leader(p, v if forward else u)
                        v = u
                    return True
                queue.append(v)
        return False

    def _leader_edges(self, u: int, forward: bool) -> Iterator[tuple[int, int]]:
        if forward:  # u leads p; a follower v could lead it instead
            for p in self.led[u]:
                if self.reps[p][0] == u:
                    for v in self.reps[p][1:]:
                        yield p, v
        else:  # u follows p; its leader v could hand it over
            for p in self._on(u):
                if self.reps[p][0] != u:
                    yield p, self.reps[p][0]

    def _make_leader(self, p: int, b: int) -> None:
        replicas = self.reps[p]
        old = replicas[0]
        i = replicas.index(b)
        replicas[0], replicas[i] = b, old
        self.touched[p] = 1
        self.lead[old] -= 1
        self.lead[b] += 1
        self.led[b].append(p)
