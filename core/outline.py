"""What is known of a cluster before its partition states are read (issue 31): the first content of a page.

A ZooKeeper reader learns the brokers, the controller and the topic names in a few round trips, the partition count
of every topic once the topic znodes are read, and only then the partition states: at 200,000 partitions the states
are nearly all of the time. An Outline carries the first part so a page can draw it at once. It holds no leader, no
ISR and no health: nothing in it may be shown as healthy or live (a page marks health "reading…").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.model import Broker, Controller

# stage of the read -> what a person is told it is doing
# A first read is drawn as an outline at once when it is this large (its states take seconds), else only once it has
# run FIRST_CONTENT_SECONDS: a small cluster is read whole by then, and its pages never show an outline.
LARGE_PARTITIONS = 5_000
LARGE_TOPICS = 500  # before the partition counts are known
FIRST_CONTENT_SECONDS = 1.5

STAGES = {"brokers": "Reading brokers", "topics": "Reading topic assignments",
          "states": "Reading partition states", "configs": "Reading configs"}


@dataclass(frozen=True)
class Outline:
    cluster: str
    brokers: tuple[Broker, ...]  # registered under /brokers/ids (alive), sorted by id
    controller: Controller | None
    topics: tuple[str, ...]  # every topic name, sorted
    # partitions per topic, once the topic znodes are read (None before); a topic deleted meanwhile is left out
    partitions: dict[str, int] | None = None
    progress: tuple[str, int, int] | None = field(default=None, compare=False)  # (stage, done, total) of the read

    def worth_drawing(self, elapsed: float) -> bool:
        """Whether a page draws this outline rather than wait for the snapshot, `elapsed` seconds into the read."""
        if elapsed >= FIRST_CONTENT_SECONDS:
            return True
        if self.partitions is not None:
            return sum(self.partitions.values()) >= LARGE_PARTITIONS
        return len(self.topics) >= LARGE_TOPICS

    @property
    def partition_count(self) -> int | None:
        return None if self.partitions is None else sum(self.partitions.values())

    def fraction(self) -> float:
        """How far the whole read is, for a progress bar: the states are nearly all of it."""
        stage, done, total = self.progress or ("brokers", 0, 0)
        part = min(done / total, 1.0) if total else 0.0
        return {"brokers": 0.0, "topics": 0.05 * part, "states": 0.05 + 0.9 * part,
                "configs": 0.95 + 0.05 * part}.get(stage, 0.0)

    def progress_text(self) -> str:
        stage, done, total = self.progress or ("brokers", 0, 0)
        return f"{STAGES.get(stage, stage)} ({done:,} / {total:,})"
