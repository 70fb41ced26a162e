"""core.policy.gate.ClusterProbe over the brokers' Admin API: what a cluster Keel reaches without ZooKeeper (KRaft)
says right before a write, never what a page cached."""

from __future__ import annotations

from core.kafka.admin import KafkaAdmin, KafkaAdminError
from core.kafka.metadata import quorum_of


class BrokersProbe:
    def __init__(self, admin: KafkaAdmin):
        self.admin = admin
        self._id: str | None = None

    def cluster_id(self) -> str | None:
        if self._id is None:
            self._id = self.admin.describe_cluster().get("cluster_id") or None
        return self._id

    def refuse_writes(self) -> None:
        """Refuse while the metadata quorum has no leader: no controller would act on the write (Kafka would
        time it out, its outcome unknown)."""
        answer = self.admin.quorum()
        if answer is not None and (quorum_of(answer) is None or quorum_of(answer).leader is None):
            raise KafkaAdminError(f"the KRaft controller quorum of {self.admin.bootstrap} has no leader right now: "
                                  "no controller would act on a write; nothing was written",
                                  hint="wait for a controller to be elected (the Overview's Controller quorum), "
                                       "then try again")
