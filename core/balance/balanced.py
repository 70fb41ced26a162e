"""The balanced strategy: move only what a goal needs, and reach the goals in this order.

Hard constraints: the replication factor (unless changed on purpose), no broker twice in a partition, only target
brokers, every partition across min(RF, racks) racks. Then: replicas per broker within floor/ceil of the broker's
mean (`metrics.replica_means`, which honours what racks of unequal size force), preferred leaders per broker within
floor/ceil (reached by reordering replicas: no data moves), bytes per broker within 5% of its target
(`metrics.byte_targets`) when sizes are known, the fewest replicas moved, then the fewest bytes moved.

Phases, each a greedy pass over flat int lists (brokers are indexes 0..n-1, target brokers first):
 1. hard moves: drop replicas for an RF decrease, add replicas for an increase, empty non-target brokers
    (a down broker only when drained: partitions holding a replica of an undrained down broker are frozen, left
    as they are by every phase, see base.py), repair rack spread; each lands on the broker that most needs a
    replica and can take it;
 2. shed: every broker over its ceiling gives replicas away, first of the topics that a broker under its floor
    lacks, then of the topic it holds most above that topic's fair share; a leader replica while it leads more than
    its share (so leadership travels with the excess). Receivers: under their floor first, then the one holding
    least of the topic, then the lightest in bytes. Spreading each topic also spreads its bytes;
 3. fill: brokers still under their floor take replicas from the fullest compatible broker; then chains of moves
    (breadth-first over brokers) for what single moves cannot do;
 4. per-topic spread (option): moves or swaps that bring each topic within floor/ceil per broker;
 5. bytes: single moves or swaps between the heaviest and the lightest brokers until all are within 5%;
 5b. write rates (traffic.py), when partition rates are given: the same between the hottest and the coolest
    brokers, until every broker writes within the rate tolerance of its target, keeping 1-5;
 6. leaders: RF-1 partitions spread first (their leadership cannot be reordered), then swap a partition's first
    replica with a follower (partitions already changing first), then along augmenting paths, until every broker
    leads within floor/ceil of its share.
Same inputs, same plan: every choice is a sort on explicit keys.
"""
from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from dataclasses import replace
from typing import Callable

from core.balance.base import PlanRequest, PlanResult, Scope, finish, resolve
from core.balance.leaders import LeaderPhase
from core.balance.metrics import BYTES_TOLERANCE, byte_targets, replica_means
from core.balance.traffic import TrafficPhase
from core.errors import PlanError
from core.model import ClusterSnapshot

NAME = "balanced"


def plan(snapshot: ClusterSnapshot, request: PlanRequest) -> PlanResult:
    scope = resolve(snapshot, request)
    balancer = _Balancer(scope, request)
    after = balancer.run()
    price = None
    if request.per_topic_spread:
        plain = _Balancer(scope, replace(request, per_topic_spread=False)).run()
        price = sum(len(set(new).difference(old)) for old, new in zip(scope.current, plain))
    return finish(scope, after, NAME, request, balancer.warnings, price, balancer.rates_why,
                  balancer.rate_loads() if scope.rates is not None else None)


class _Balancer(LeaderPhase, TrafficPhase):
    def __init__(self, scope: Scope, request: PlanRequest):
        self.request = request
        self.warnings: list[str] = []
        targets = list(scope.targets)
        others = sorted({b for r in scope.current for b in r} - set(targets))
        self.ids = targets + others
        index = {b: i for i, b in enumerate(self.ids)}
        nt = self.nt = len(targets)
        nb = self.nb = len(self.ids)
        rack_names = sorted({scope.rack_of.get(b) or "" for b in targets})
        k = self.k = len(rack_names)
        self.rack = [rack_names.index(scope.rack_of.get(b) or "") for b in targets] + [-1] * len(others)
        self.racks = [[b for b in range(nt) if self.rack[b] == r] for r in range(k)]

        self.reps = [[index[b] for b in r] for r in scope.current]
        self.orig = [tuple(r) for r in self.reps]
        # Frozen partitions (a replica on an undrained down broker) count as load but never move, reorder or give a
        # replica: they are kept out of `hosted` (the lists every phase picks partitions from) and skipped below.
        self.frozen = bytearray(scope.frozen) if scope.frozen else bytearray(len(self.reps))
        self.touched = bytearray(len(self.reps))  # moved or reordered by this plan
        self.rf = scope.new_rf
        self.topic = scope.topic_of
        self.size = scope.sizes if scope.sizes is not None and any(scope.sizes) else None
        self.rate = scope.rates if scope.rates is not None and any(scope.rates) else None
        self.keys, self.topic_names = scope.keys, scope.topics
        self.rack_locked = False  # set once racks are repaired, see run
        self.moves = 0
        self.budget_hit = False

        # Current loads. `hosted` may hold stale or repeated entries, `gone` the ones that left; _on cleans when dirty.
        self.cnt, self.byt, self.wr = [0] * nb, [0] * nb, [0.0] * nb
        self.rsorted: dict[int, tuple[list[float], list[int]]] = {}  # broker -> replicas by rate (traffic.py)
        self.hosted: list[list[int]] = [[] for _ in range(nb)]
        self.dirty = bytearray(nb)
        self.gone: list[set[int]] = [set() for _ in range(nb)]
        self.tcount: dict[int, int] = {}  # topic * nb + broker -> replicas
        for p, replicas in enumerate(self.reps):
            base = self.topic[p] * nb
            for b in replicas:
                self.cnt[b] += 1
                if not self.frozen[p]:
                    self.hosted[b].append(p)
                self.tcount[base + b] = self.tcount.get(base + b, 0) + 1
            if self.size:
                for b in replicas:
                    self.byt[b] += self.size[p]
        if self.rate:  # summed in partition order, as rates.max_deviation does: the report reuses these (traffic.py)
            wr = self.wr
            for replicas, r in zip(self.reps, self.rate):
                for b in replicas:
                    wr[b] += r
        self.wr_before = list(self.wr)

        # Targets, on the final replication factors: per broker, and per topic and rack (brokers of a rack share a
        # mean, see metrics.replica_means).
        # A frozen partition's replicas on pinned brokers stay there: the targets share the rest.
        rf_counts: dict[int, int] = {}
        self.topic_replicas = [0] * len(scope.topics)
        for p, rf in enumerate(self.rf):
            if self.frozen[p]:
                rf = len(scope.live_replicas(scope.current[p]))
                if not rf:
                    continue
            rf_counts[rf] = rf_counts.get(rf, 0) + 1
            self.topic_replicas[self.topic[p]] += rf
        total = sum(self.topic_replicas)
        means = replica_means(rf_counts, targets, scope.rack_of)
        self.mean = [means[b] for b in targets] + [0.0] * len(others)
        self.lo = [math.floor(m) for m in self.mean]
        self.hi = [math.ceil(m) for m in self.mean]
        rack_share = [self.mean[rack[0]] / total for rack in self.racks]
        self.tmean = [n * s for n in self.topic_replicas for s in rack_share]  # topic * k + rack
        self.tfloor = [math.floor(round(m, 6)) for m in self.tmean]
        self.tceil = [math.ceil(round(m, 6)) for m in self.tmean]
        self.floored = [t for t in range(len(self.topic_replicas)) if max(self.tfloor[t * k:(t + 1) * k]) > 0]
        # A proportional share of all bytes; the bytes phase then settles for each rack's own (see byte_targets).
        total_bytes = sum(s * (len(scope.live_replicas(scope.current[p])) if self.frozen[p] else self.rf[p])
                          for p, s in enumerate(self.size)) if self.size else 0
        self.byte_target = [total_bytes * m / total for m in self.mean]
        self.means = means
        self.rack_of = scope.rack_of
        # Receivers (phase 1-2): per rack the brokers under their ceiling; the ones under their floor are needy,
        # and `missing` (topic * k + rack) sums what the needy lack of each topic's floor.
        self.open: list[list[int]] = [[] for _ in range(k)]
        self.needy = bytearray(nb)
        self.missing = [0] * (len(self.topic_replicas) * k)

    # --- bookkeeping -----------------------------------------------------------------------

    def _place(self, p: int, b: int) -> None:
        self.cnt[b] += 1
        if self.size:
            self.byt[b] += self.size[p]
        if self.rate:
            self.wr[b] += self.rate[p]
            if b in self.rsorted:  # the rate phase's sorted lists, kept up to date (traffic.py)
                self._add_rated(b, p)
        self.hosted[b].append(p)
        self.gone[b].discard(p)
        self.dirty[b] = 1
        t = self.topic[p]
        n = self.tcount.get(t * self.nb + b, 0)
        self.tcount[t * self.nb + b] = n + 1
        if self.needy[b] and n < self.tfloor[t * self.k + self.rack[b]]:
            self.missing[t * self.k + self.rack[b]] -= 1

    def _unplace(self, p: int, b: int) -> None:
        self.cnt[b] -= 1
        if self.size:
            self.byt[b] -= self.size[p]
        if self.rate:
            self.wr[b] -= self.rate[p]
            if b in self.rsorted:
                self._drop_rated(b, p)
        self.gone[b].add(p)
        self.dirty[b] = 1
        t = self.topic[p]
        n = self.tcount[t * self.nb + b] = self.tcount[t * self.nb + b] - 1
        if self.needy[b] and n < self.tfloor[t * self.k + self.rack[b]]:
            self.missing[t * self.k + self.rack[b]] += 1

    def _move(self, p: int, src: int | None, dst: int | None) -> None:
        """Replace `src` by `dst` in place (the position, and so the leadership, is kept); None adds or drops."""
        replicas = self.reps[p]
        if src is None:
            replicas.append(dst)
        elif dst is None:
            replicas.remove(src)
        else:
            replicas[replicas.index(src)] = dst
        self.touched[p] = 1
        if src is not None:
            self._unplace(p, src)
            self.moves -= src not in self.orig[p]
        if dst is not None:
            self._place(p, dst)
            self.moves += dst not in self.orig[p]

    def _on(self, b: int) -> list[int]:
        """The partitions broker `b` holds now, in index order (a set difference: reading reps[p] was slow)."""
        if self.dirty[b]:
            self.hosted[b] = sorted(set(self.hosted[b]).difference(self.gone[b]))
            self.gone[b].clear()
            self.dirty[b] = 0
        return self.hosted[b]

    def _may_move(self) -> bool:
        budget = self.request.max_moves
        if budget is not None and self.moves >= budget:
            self.budget_hit = True
            return False
        return True

    def _count(self, t: int, b: int) -> int:
        return self.tcount.get(t * self.nb + b, 0)

    def _topic_excess(self, t: int, b: int) -> float:
        return self.tcount.get(t * self.nb + b, 0) - self.tmean[t * self.k + self.rack[b]]

    def _dest_racks(self, p: int, leaving: int | None) -> list[int] | None:
        """Racks a replica of `p` may land in when `leaving` goes (None: any rack keeps the spread)."""
        if self.k == 1:
            return None
        if self.rack_locked and leaving is not None and leaving < self.nt:
            return [self.rack[leaving]]
        present = {self.rack[b] for b in self.reps[p] if b != leaving and b < self.nt}
        if len(present) >= min(self.rf[p], self.k):
            return None
        return [r for r in range(self.k) if r not in present]

    def _fits(self, p: int, src: int | None, dst: int) -> bool:
        if dst in self.reps[p]:
            return False
        if src is not None and src < self.nt and self.rack[src] == self.rack[dst]:
            return True  # the partition keeps its racks
        racks = self._dest_racks(p, src)
        return racks is None or self.rack[dst] in racks

    def _byte_dev(self, b: int) -> float:
        return (self.byt[b] - self.byte_target[b]) / self.byte_target[b] if self.byte_target[b] else 0.0

    # --- the phases ------------------------------------------------------------------------

    def run(self) -> list[tuple[int, ...]]:
        self._hard_moves()
        # From here every partition of RF == racks has one replica per rack, and none can change rack.
        self.rack_locked = self.k > 1 and set(self.rf) == {self.k}
        budget = self.request.max_moves
        if budget is not None and self.moves > budget:
            raise PlanError(f"draining, rack repair and replication-factor changes alone move {self.moves} "
                            f"replicas; the budget is {budget}")
        self._shed()
        self._fill()
        self._chains()
        if self.request.per_topic_spread:
            self._spread_topics()
        if self.size:
            self._balance_bytes()
        if self.rate:
            self._balance_rates()
        self._balance_leaders()
        self._report_leftovers()
        return [tuple(self.ids[b] for b in r) for r in self.reps]

    # 1. hard moves

    def _hard_moves(self) -> None:
        for p, replicas in enumerate(self.reps):
            while len(replicas) > self.rf[p]:
                self._move(p, self._victim(p), None)
        self._open_receivers()
        for p, replicas in enumerate(self.reps):
            if self.frozen[p]:
                continue
            if max(replicas) >= self.nt:  # off-target brokers are numbered after the targets
                for b in [b for b in replicas if b >= self.nt]:
                    self._relocate(p, b)
            while len(replicas) < self.rf[p]:
                self._relocate(p, None)
            if self.k > 1:
                self._repair_racks(p)

    def _victim(self, p: int) -> int:
        """The replica an RF decrease drops: off-target first, then one whose rack is doubled, the fullest broker,
        a follower rather than the leader."""
        replicas = self.reps[p]
        need = min(self.rf[p], self.k)

        def key(b: int) -> tuple[bool, bool, float, bool, int]:
            rest = {self.rack[o] for o in replicas if o != b and o < self.nt}
            return b < self.nt, len(rest) < need, self.mean[b] - self.cnt[b], replicas.index(b) == 0, b
        return min(replicas, key=key)

    def _repair_racks(self, p: int) -> None:
        replicas = self.reps[p]
        need = min(self.rf[p], self.k)
        while (span := len({self.rack[b] for b in replicas})) < need:
            crowded = [b for b in replicas if sum(self.rack[o] == self.rack[b] for o in replicas) > 1]
            self._relocate(p, max(crowded, key=lambda b: (self.cnt[b] - self.mean[b], replicas.index(b) > 0, -b)))
            if len({self.rack[b] for b in replicas}) <= span:
                return  # no broker of a missing rack can take it: reported as a rack violation

    def _relocate(self, p: int, src: int | None) -> None:
        """A hard move: to the best receiver, else the least loaded broker that keeps the constraints."""
        dst = self._receiver(p, src)
        if dst is None:
            racks = self._dest_racks(p, src)
            spare = [b for b in range(self.nt) if b not in self.reps[p] and (racks is None or self.rack[b] in racks)]
            spare = spare or [b for b in range(self.nt) if b not in self.reps[p]]
            dst = min(spare, key=lambda b: (self.cnt[b] - self.mean[b], b))
        self._move(p, src, dst)
        self._close(dst)

    def _open_receivers(self) -> None:
        self.open = [[b for b in rack if self.cnt[b] < self.hi[b]] for rack in self.racks]
        for b in range(self.nt):
            if self.cnt[b] < self.lo[b]:
                self.needy[b] = 1
                self._add_lack(b, 1)

    def _add_lack(self, b: int, sign: int) -> None:
        base = self.rack[b]
        for t in self.floored:
            lack = self.tfloor[t * self.k + base] - self.tcount.get(t * self.nb + b, 0)
            if lack > 0:
                self.missing[t * self.k + base] += sign * lack

    def _close(self, b: int) -> None:
        """Update the receiver lists after b received."""
        if self.needy[b] and self.cnt[b] >= self.lo[b]:
            self._add_lack(b, -1)
            self.needy[b] = 0
        if self.cnt[b] >= self.hi[b] and b in self.open[self.rack[b]]:
            self.open[self.rack[b]].remove(b)

    def _receiver(self, p: int, src: int | None) -> int | None:
        """The broker with room that should take a replica of `p` leaving `src`: one under its floor first, then
        the one holding least of the partition's topic, then the lightest in bytes."""
        racks = self._dest_racks(p, src)
        t = self.topic[p]
        replicas = self.reps[p]
        best, best_key = None, None
        for r in range(self.k) if racks is None else racks:
            for b in self.open[r]:
                if b in replicas:
                    continue
                key = (self.cnt[b] >= self.lo[b], self._topic_excess(t, b), self._byte_dev(b), b)
                if best_key is None or key < best_key:
                    best, best_key = b, key
        return best

    # 2. shed

    def _shed(self) -> None:
        donors = sorted((b for b in range(self.nt) if self.cnt[b] > self.hi[b]),
                        key=lambda b: (self.hi[b] - self.cnt[b], b))
        leader_share = len(self.reps) / self.nt
        lead = [0] * self.nb
        for replicas in self.reps:
            lead[replicas[0]] += 1
        for d in donors:
            # topic -> ([partitions d leads], [partitions d follows]), consumed from the end
            by_topic: dict[int, tuple[list[int], list[int]]] = {}
            for p in reversed(self._on(d)):
                by_topic.setdefault(self.topic[p], ([], []))[self.reps[p][0] != d].append(p)
            heap = [self._shed_key(t, d) for t in by_topic]
            heapq.heapify(heap)
            while self.cnt[d] > self.hi[d] and heap and self._may_move():
                key = heapq.heappop(heap)
                t = key[-1]
                if key != (fresh := self._shed_key(t, d)):  # the counts moved since it was pushed
                    heapq.heappush(heap, fresh)
                    continue
                leaders, followers = by_topic[t]
                for candidates in (leaders, followers) if lead[d] > leader_share else (followers, leaders):
                    dst = None
                    while candidates and dst is None:
                        p = candidates.pop()
                        dst = self._receiver(p, d)
                    if dst is not None:
                        led = self.reps[p][0] == d
                        lead[d] -= led
                        lead[dst] += led
                        self._move(p, d, dst)
                        self._close(dst)
                        break
                if leaders or followers:
                    heapq.heappush(heap, self._shed_key(t, d))

    def _shed_key(self, t: int, d: int) -> tuple[bool, float, int]:
        """Which topic d gives away first: one that a needy broker of its rack lacks while d holds more than its own
        floor of it, then the one d holds most above its fair share."""
        i = t * self.k + self.rack[d]
        n = self.tcount.get(t * self.nb + d, 0)
        return not (self.missing[i] > 0 and n > self.tfloor[i]), self.tmean[i] - n, t

    # 3. fill

    def _fill(self) -> None:
        for b in range(self.nt):
            while self.cnt[b] < self.lo[b] and self._may_move():
                donors = sorted((d for d in range(self.nt) if self.cnt[d] > self.lo[d] and d != b
                                 and not (self.rack_locked and self.rack[d] != self.rack[b])),
                                key=lambda d: (self.rack[d] != self.rack[b], self.lo[d] - self.cnt[d], d))
                pick = next(((p, d) for d in donors if (p := self._best_for(d, b)) is not None), None)
                if pick is None:
                    break
                self._move(pick[0], pick[1], b)

    def _best_for(self, src: int, dst: int) -> int | None:
        """The partition on `src` that `dst` should take: of the topic `src` holds most above `dst`."""
        fits = [p for p in self._on(src) if self._fits(p, src, dst)]
        return max(fits, key=lambda p: (self._topic_excess(self.topic[p], src)
                                        - self._topic_excess(self.topic[p], dst), -p), default=None)

    # 3b. chains, for what single moves cannot do (say A's replicas may only go to B, full, whose may go to C)

    def _chains(self) -> None:
        for b in range(self.nt):
            while self.cnt[b] > self.hi[b] and self._chain([b], lambda v: self.cnt[v] < self.hi[v]):
                pass
        for b in range(self.nt):
            while self.cnt[b] < self.lo[b] and self._chain(
                    [d for d in range(self.nt) if self.cnt[d] > self.lo[d] and d != b], lambda v: v == b):
                pass

    def _chain(self, sources: list[int], goal: Callable[[int], bool]) -> bool:
        """Breadth-first search from `sources` for a path of single-replica moves src -> ... -> a broker meeting
        `goal`; every broker on the way gives one and takes one. Distinct partitions along a path keep each move
        valid on its own."""
        parent: dict[int, tuple[int, int] | None] = dict.fromkeys(sources)
        queue = deque(sources)
        while queue:
            u = queue.popleft()
            on_path, node = set(), u
            while (step := parent[node]) is not None:
                node, p = step
                on_path.add(p)
            for p in self._on(u):
                if p in on_path:
                    continue
                racks = self._dest_racks(p, u)
                for v in range(self.nt) if racks is None else (v for r in racks for v in self.racks[r]):
                    if v in parent or v in self.reps[p]:
                        continue
                    parent[v] = (u, p)
                    if goal(v):
                        return self._apply_chain(parent, v)
                    queue.append(v)
        return False

    def _apply_chain(self, parent: dict[int, tuple[int, int] | None], end: int) -> bool:
        path = []
        while (step := parent[end]) is not None:
            path.append((step[1], step[0], end))
            end = step[0]
        if self.request.max_moves is not None and self.moves + len(path) > self.request.max_moves:
            self.budget_hit = True
            return False
        for p, src, dst in path:
            self._move(p, src, dst)
        return True

    # 4. per-topic spread

    def _topic_ok(self, p: int, src: int, dst: int) -> bool:
        """With per_topic_spread, a move may not take a topic over its ceiling on `dst` or under its floor on `src`."""
        if not self.request.per_topic_spread:
            return True
        t = self.topic[p]
        return (self._count(t, dst) < self.tceil[t * self.k + self.rack[dst]]
                and self._count(t, src) > self.tfloor[t * self.k + self.rack[src]])

    def _spread_topics(self) -> None:
        by_topic: dict[int, list[int]] = {}
        for p, t in enumerate(self.topic):
            if not self.frozen[p]:
                by_topic.setdefault(t, []).append(p)
        for t, parts in sorted(by_topic.items()):
            for _ in range(sum(self.rf[p] for p in parts)):
                if not self._may_move() or not self._spread_once(t, parts):
                    break

    def _spread_once(self, t: int, parts: list[int]) -> bool:
        """One move, or a swap when replica counts forbid a move, of topic t from a broker above its floor to one
        under its ceiling, where one of the two is outside its bounds. False when none helps."""
        count = [self._count(t, b) for b in range(self.nt)]
        floor = [self.tfloor[t * self.k + self.rack[b]] for b in range(self.nt)]
        ceil = [self.tceil[t * self.k + self.rack[b]] for b in range(self.nt)]
        if all(floor[b] <= count[b] <= ceil[b] for b in range(self.nt)):
            return False
        srcs = sorted((b for b in range(self.nt) if count[b] > floor[b]), key=lambda b: (ceil[b] - count[b], b))
        dsts = sorted((b for b in range(self.nt) if count[b] < ceil[b]), key=lambda b: (count[b] - floor[b], b))
        for src in srcs:
            held = [p for p in parts if src in self.reps[p]]
            for dst in dsts:
                if dst == src or not (count[src] > ceil[src] or count[dst] < floor[dst]):
                    continue
                p = next((p for p in held if self._fits(p, src, dst)), None)
                if p is None:
                    continue
                if self.cnt[src] > self.lo[src] and self.cnt[dst] < self.hi[dst]:
                    self._move(p, src, dst)
                    return True
                back = self._swap_partner(p, src, dst)
                if back is not None:
                    self._move(p, src, dst)
                    self._move(back, dst, src)
                    return True
        return False

    def _swap_partner(self, p: int, src: int, dst: int) -> int | None:
        """A replica on `dst` of another topic that can go to `src` within its own topic's spread, nearest p's size."""
        size = self.size[p] if self.size else 0
        fits = [q for q in self._on(dst) if self.topic[q] != self.topic[p] and src not in self.reps[q]
                and self._topic_ok(q, dst, src) and self._fits(q, dst, src)]
        return min(fits, key=lambda q: (abs((self.size[q] if self.size else 0) - size), q), default=None)

    # 5. bytes

    def _balance_bytes(self) -> None:
        """Toward the proportional share first (across racks, where partitions can change rack), then toward each
        rack's own mean, which is what the rack rule leaves reachable."""
        self._even_bytes()
        if self.k > 1:
            exact = byte_targets([[self.ids[b] for b in r] for r in self.reps], self.size, self.means, self.rack_of)
            self.byte_target = [exact[b] for b in self.ids[:self.nt]] + [0.0] * (self.nb - self.nt)
            self._even_bytes()

    def _even_bytes(self) -> None:
        stuck: set[int] = set()
        for _ in range(20 * self.nt):
            live = [b for b in range(self.nt) if b not in stuck]
            if not live:
                break
            x = max(live, key=lambda b: (abs(self._byte_dev(b)), -b))
            if abs(self._byte_dev(x)) <= BYTES_TOLERANCE or not self._may_move():
                break
            heavy = self._byte_dev(x) > 0
            # The 4 most opposite brokers of x's rack (with one replica per rack, where x's replicas can go) and
            # of the others: a bounded search, each try sorts two brokers' replicas.
            rank = sorted((b for b in range(self.nt) if b != x),
                          key=lambda b: (self._byte_dev(b) if heavy else -self._byte_dev(b), b))
            partners = ([b for b in rank if self.rack[b] == self.rack[x]][:4]
                        + [b for b in rank if self.rack[b] != self.rack[x]][:4])
            if not any(self._shift_bytes(x, y) if heavy else self._shift_bytes(y, x) for y in partners):
                stuck.add(x)

    def _shift_bytes(self, src: int, dst: int) -> bool:
        """Shift bytes from src to dst, about half the gap between their deviations (any shift strictly inside
        the gap lowers the sum of squared deviations, so this converges): one replica if the replica counts
        allow, else a swap of a larger replica for a smaller one."""
        want = ((self.byt[src] - self.byte_target[src]) - (self.byt[dst] - self.byte_target[dst])) / 2
        if want <= 0:
            return False
        out = sorted((self.size[p], p) for p in self._on(src)
                     if self._fits(p, src, dst) and self._topic_ok(p, src, dst))
        if self.cnt[src] > self.lo[src] and self.cnt[dst] < self.hi[dst]:
            single = _closest(out, want, 0, 2 * want)
            if single is not None:
                self._move(single, src, dst)
                return True
        best = None
        for size_q, q in sorted((self.size[q], q) for q in self._on(dst)
                                if self._fits(q, dst, src) and self._topic_ok(q, dst, src)):
            p = _closest(out, size_q + want, size_q, size_q + 2 * want)
            if p is not None and (best is None or (abs(self.size[p] - size_q - want), p, q) < best):
                best = (abs(self.size[p] - size_q - want), p, q)
        if best is None:
            return False
        self._move(best[1], src, dst)
        self._move(best[2], dst, src)
        return True

    # 6. leaders

    # --- what could not be reached -------------------------------------------------------------

    def _report_leftovers(self) -> None:
        if self.budget_hit:
            self.warnings.append(f"the move budget ({self.request.max_moves}) was reached before every goal")
        off = [b for b in range(self.nt) if not self.lo[b] <= self.cnt[b] <= self.hi[b]]
        if off:
            self.warnings.append(f"{len(off)} broker(s) outside their replica floor/ceil, e.g. broker "
                                 f"{self.ids[off[0]]} holds {self.cnt[off[0]]} for a mean of {self.mean[off[0]]:.1f}")
        if self.size:
            far = [b for b in range(self.nt) if abs(self._byte_dev(b)) > BYTES_TOLERANCE]
            if far:
                self.warnings.append(f"{len(far)} broker(s) more than {BYTES_TOLERANCE:.0%} from their byte target")
        if any(self._off(b, True) or self._off(b, False) for b in range(self.nt)):
            self.warnings.append("preferred leaders could not all be brought within floor/ceil by reordering")


def _closest(pairs: list[tuple[int, int]], want: float, low: float, high: float) -> int | None:
    """In (size, id) pairs sorted by size, the id whose size is nearest `want`, strictly between low and high."""
    i = bisect.bisect_left(pairs, (want, -1))
    near = [j for j in (i - 1, i) if 0 <= j < len(pairs) and low < pairs[j][0] < high]
    return pairs[min(near, key=lambda j: abs(pairs[j][0] - want))][1] if near else None
