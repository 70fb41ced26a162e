"""A broker's even share of the cluster's replicas: what each broker would hold if the assignment were even.

Counted over the brokers that take part in the assignment: every alive broker (an empty one too: it is there to
take a share) and every down broker that still holds replicas. A down broker's replicas stay assigned to it — the
controller does not move them, they come back with it and a reassignment must name them — so dividing the
replicas by the alive brokers alone gave every broker the down broker's part on top of its own (4 brokers of 300
replicas each, one down: "even" read 400 while each held 300). A down broker holding nothing is left out: it is
no longer part of the assignment.

Pure: a ClusterSnapshot in, numbers out (the Broker page shows them; core.restarts counts brokers the same way:
running or not, a broker that holds replicas is part of the cluster).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.model import ClusterSnapshot


@dataclass(frozen=True)
class EvenShare:
    replicas: int  # every replica of the cluster
    brokers: int  # the brokers sharing them: alive, or down but holding replicas
    down_holding: tuple[int, ...]  # down brokers counted because they hold replicas

    @property
    def per_broker(self) -> float:
        return self.replicas / self.brokers if self.brokers else 0.0


def even_share(snapshot: ClusterSnapshot) -> EvenShare:
    holding = {b for p in snapshot.partitions() for b in p.replicas}
    alive = snapshot.alive_broker_ids
    down = tuple(sorted(holding - alive))
    return EvenShare(snapshot.replica_count, len(alive) + len(down), down)


__all__ = ["EvenShare", "even_share"]
