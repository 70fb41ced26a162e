"""Topic deletion as Kafka's ZooKeeper-mode controller runs it: pure decisions.

From kafka.controller.KafkaController.processTopicDeletion and kafka.controller.TopicDeletionManager
(onTopicDeletion, onPartitionDeletion, resumeDeletions, completeDeleteTopic, ControllerDeletionClient):

- /admin/delete_topics/<t> for a topic that does not exist: the admin node is removed ("Ignoring request to
  delete non-existing topics"); with delete.topic.enable=false every admin node is removed and the topics
  stay;
- a queued topic is ineligible while any of its partitions is being reassigned (it resumes when the
  reassignment completes) or while a broker holding one of its replicas is down (it resumes when that
  broker starts);
- an eligible topic's live replicas go OfflineReplica (out of the ISR, leader -1 when the leader goes, one
  epoch bump per replica), then are deleted (StopReplica with delete; instantaneous here);
- once every replica is deleted: /brokers/topics/<t> with everything below it, /config/topics/<t>, then
  /admin/delete_topics/<t> are deleted;
- while queued, a topic takes no part in leader elections (offline or preferred) nor reassignments.

No I/O here: the emulator's handler (sandbox.emulator.admin_deletion) reads, calls these and writes conditionally.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Iterable

from core import zkformat as zf
from sandbox.emulator.reassign import in_progress


def split_requests(requested: Iterable[str], existing: Collection[str], *, enabled: bool = True
                   ) -> tuple[list[str], list[str]]:
    """(admin nodes to remove at once, topics to queue for deletion)."""
    requested = sorted(set(requested))
    if not enabled:
        return requested, []
    return [t for t in requested if t not in existing], [t for t in requested if t in existing]


@dataclass(frozen=True)
class DeletionPlan:
    topic: str
    waiting_for: str | None                        # why deletion cannot start now (None: it can)
    to_stop: dict[int, tuple[int, ...]] = field(default_factory=dict)  # partition -> live replicas to stop now
    dead_brokers: tuple[int, ...] = ()             # brokers whose replicas must come back to be deleted

    @property
    def complete(self) -> bool:
        """Every replica is (or is now being) deleted: the topic's znodes can go."""
        return self.waiting_for is None and not self.dead_brokers


def plan_deletion(topic: str, assignment: zf.TopicAssignment, live: Collection[int],
                  deleted: Collection[tuple[int, int]] = ()) -> DeletionPlan:
    """`onPartitionDeletion` for one queued topic; `deleted` holds the (partition, replica) pairs already gone."""
    reassigning = in_progress(assignment)
    if reassigning:
        return DeletionPlan(topic, f"reassignment of {len(reassigning)} partition"
                                   f"{'' if len(reassigning) == 1 else 's'} in progress")
    to_stop: dict[int, tuple[int, ...]] = {}
    dead: set[int] = set()
    for p, replicas in sorted(assignment.partitions.items()):
        alive = tuple(r for r in replicas if r in live and (p, r) not in deleted)
        if alive:
            to_stop[p] = alive
        dead.update(r for r in replicas if r not in live and (p, r) not in deleted)
    return DeletionPlan(topic, None, to_stop, tuple(sorted(dead)))


__all__ = ["DeletionPlan", "split_requests", "plan_deletion"]
