"""Phase 5b of the balanced strategy: bytes written per broker within `request.rate_tolerance` of each broker's
target, when partition write rates are known (core.balance.rates). Every replica writes its partition's bytes-in, so
a broker's write rate is the sum of the rates of the partitions it holds.

Like the bytes phase: the broker furthest from its target exchanges with the most opposite brokers (4 of its rack,
4 of others) a single replica when the replica counts allow, else a swap of a hotter replica for a cooler one,
shifting about half the gap. Constraints that stay hard: replica counts within floor/ceil (a move only from a
broker above its floor to one under its ceiling; a swap keeps both counts), racks (`_fits`), the per-topic spread
when asked, and bytes: a broker within the byte tolerance stays within it, one outside gets no further out. Only
leadership order is left for phase 6, which moves no data and no write rate (followers write as leaders do).
A mixin of balanced._Balancer: it reads and writes the balancer's state.
"""

from __future__ import annotations

import bisect
from typing import Iterator

from core.balance.metrics import BYTES_TOLERANCE

_TRIES = 8  # candidates looked at around the wanted rate before giving up on a pair of brokers
_SWAP_PARTNERS = 64  # replicas of the cooler broker tried as the swap's return (spread over its rates)


class TrafficPhase:
    rates_why: str | None = None

    def _rate_dev(self, b: int) -> float:
        t = self.rate_target[b]
        return (self.wr[b] - t) / t if t else 0.0

    def _balance_rates(self) -> None:
        if not self.rack_locked:  # a share of all writes, weighted like replicas
            total, share = sum(self.wr[:self.nt]), sum(self.mean[:self.nt])
            self.rate_target = [total * m / share for m in self.mean]
        else:  # one replica per rack: each rack's writes are fixed, its brokers share them (as byte_targets)
            load, share = [0.0] * self.k, [0.0] * self.k
            for b in range(self.nt):
                load[self.rack[b]] += self.wr[b]
                share[self.rack[b]] += self.mean[b]
            self.rate_target = [load[self.rack[b]] * self.mean[b] / share[self.rack[b]] if self.mean[b] else 0.0
                                for b in range(self.nt)] + [0.0] * (self.nb - self.nt)
        self._even_rates()
        self._explain_rates()

    def _even_rates(self) -> None:
        tol = self.request.rate_tolerance
        stuck: set[int] = set()
        for _ in range(20 * self.nt):
            dev = [self._rate_dev(b) for b in range(self.nt)]  # once per round: the sort below reads it ~nt times
            live = [b for b in range(self.nt) if b not in stuck]
            if not live:
                break
            x = max(live, key=lambda b: (abs(dev[b]), -b))
            if abs(dev[x]) <= tol or not self._may_move():
                break
            hot = dev[x] > 0
            rank = sorted((b for b in range(self.nt) if b != x), key=lambda b: (dev[b] if hot else -dev[b], b))
            partners = ([b for b in rank if self.rack[b] == self.rack[x]][:4]
                        + [b for b in rank if self.rack[b] != self.rack[x]][:4])
            if not any(self._shift_rate(x, y) if hot else self._shift_rate(y, x) for y in partners):
                stuck.add(x)

    def _by_rate(self, b: int) -> tuple[list[float], list[int]]:
        """The replicas on b sorted by (rate, partition), as two parallel lists (rates, partitions): built once,
        then kept sorted by _place / _unplace. A sort of ints on a float key, about twice as fast as one of (rate, id)
        tuples (~13,000 replicas a broker at 2.8 million); stable on the index-ordered list, so equal rates stay in
        partition order, as the tuples sorted."""
        if b not in self.rsorted:
            rate = self.rate
            ids = sorted(self._on(b), key=rate.__getitem__)
            self.rsorted[b] = ([rate[p] for p in ids], ids)
        return self.rsorted[b]

    def _add_rated(self, b: int, p: int) -> None:
        rates, ids = self.rsorted[b]
        r = self.rate[p]
        lo = bisect.bisect_left(rates, r)
        i = bisect.bisect_left(ids, p, lo, bisect.bisect_right(rates, r, lo))  # equal rates in partition order
        rates.insert(i, r)
        ids.insert(i, p)

    def _drop_rated(self, b: int, p: int) -> None:
        rates, ids = self.rsorted[b]
        r = self.rate[p]
        lo = bisect.bisect_left(rates, r)
        hi = bisect.bisect_right(rates, r, lo)
        i = bisect.bisect_left(ids, p, lo, hi)
        if i < hi and ids[i] == p:
            del rates[i], ids[i]

    def _bytes_ok(self, src: int, dst: int, delta: int) -> bool:
        """Moving `delta` bytes from src to dst keeps each within the byte tolerance, or no further out."""
        if not self.size or not delta:
            return True
        for b, d in ((src, -delta), (dst, delta)):
            t = self.byte_target[b]
            if t:
                after = abs(self.byt[b] + d - t) / t
                if after > BYTES_TOLERANCE and after > abs(self.byt[b] - t) / t:
                    return False
        return True

    def _movable(self, p: int, src: int, dst: int) -> bool:
        return self._fits(p, src, dst) and self._topic_ok(p, src, dst)

    def _shift_rate(self, src: int, dst: int) -> bool:
        """Shift write rate from src (hotter) to dst: about half the gap between their deviations, so that the sum
        of squared deviations falls and the phase converges."""
        want = ((self.wr[src] - self.rate_target[src]) - (self.wr[dst] - self.rate_target[dst])) / 2
        if want <= 0:
            return False
        out = self._by_rate(src)
        size = self.size
        if self.cnt[src] > self.lo[src] and self.cnt[dst] < self.hi[dst]:
            for p in _near(out, want, 0.0, 2 * want):
                if self._movable(p, src, dst) and self._bytes_ok(src, dst, size[p] if size else 0):
                    self._move(p, src, dst)
                    return True
        back_rates, back = self._by_rate(dst)
        step = max(1, len(back) // _SWAP_PARTNERS)
        best = None
        for rate_q, q in zip(back_rates[::step], back[::step]):
            if not self._movable(q, dst, src):
                continue
            for p in _near(out, rate_q + want, rate_q, rate_q + 2 * want):
                if self._movable(p, src, dst) and self._bytes_ok(src, dst, (size[p] - size[q]) if size else 0):
                    key = (abs(self.rate[p] - rate_q - want), p, q)
                    if best is None or key < best:
                        best = key
                    break
        if best is None:
            return False
        self._move(best[1], src, dst)
        self._move(best[2], dst, src)
        return True

    def rate_loads(self) -> tuple[dict[int, float], dict[int, float]]:
        """Bytes/s per broker id before and after, for the report (rates.traffic_report): the same sums as a pass
        over every replica would give, before (summed in the same order), after up to rounding (kept by _place /
        _unplace); a broker left with no replica writes 0 exactly."""
        before = {self.ids[b]: w for b, w in enumerate(self.wr_before)}
        after = {self.ids[b]: (w if w > 0 and self.cnt[b] else 0.0) for b, w in enumerate(self.wr)
                 if b < self.nt or self.cnt[b]}
        return before, after

    def _explain_rates(self) -> None:
        tol = self.request.rate_tolerance
        far = [b for b in range(self.nt) if abs(self._rate_dev(b)) > tol + 1e-9]
        if not far:
            return
        x = max(far, key=lambda b: (abs(self._rate_dev(b)), -b))
        why = (f"broker {self.ids[x]} writes {self.wr[x]:,.0f} B/s for a target of {self.rate_target[x]:,.0f} "
               f"({self._rate_dev(x):+.0%})")
        hottest = max(((self.rate[p], p) for p in range(len(self.reps))), default=(0.0, -1))
        if self.budget_hit:
            why += f": the move budget ({self.request.max_moves}) was reached"
        elif hottest[0] > tol * self.rate_target[x]:
            t, p = self.topic_names[self.topic[hottest[1]]], self.keys[hottest[1]][1]
            why += (f": partition {t}-{p} alone writes {hottest[0]:,.0f} B/s, more than the {tol:.0%} band "
                    "around a broker's target, so whole replicas cannot land closer")
        else:
            why += (": no move or swap of its replicas brings it closer within the replica-count floor/ceil, the "
                    "racks" + (", the per-topic spread" if self.request.per_topic_spread else "")
                    + " and the byte tolerance")
        self.rates_why = why
        self.warnings.append(f"{len(far)} broker(s) more than {tol:.0%} from their write-rate target; {why}")


def _near(pairs: tuple[list[float], list[int]], want: float, low: float, high: float) -> Iterator[int]:
    """In (rates, ids) sorted by rate (then id), ids with a rate strictly between low and high, nearest `want` first
    (at most _TRIES)."""
    rates, ids = pairs
    end = len(rates)
    i = bisect.bisect_left(rates, want)
    j, n = i - 1, 0
    while n < _TRIES and (j >= 0 or i < end):
        if i < end and (j < 0 or rates[i] - want <= want - rates[j]):
            rate, p = rates[i], ids[i]
            i += 1
            if rate >= high:
                i = end
                continue
        else:
            rate, p = rates[j], ids[j]
            j -= 1
            if rate <= low:
                j = -1
                continue
        if low < rate < high:
            n += 1
            yield p
