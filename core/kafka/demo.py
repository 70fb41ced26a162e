"""Demo data for real brokers (`make run KAFKA=real|kraft`): write incompressible records so that partitions have
real, unequal sizes (partition i of a topic gets a share proportional to i + 1) for the dashboard's sizes and plans;
and, for a KRaft demo (no ZooKeeper to write through), create its topics with the Admin API (`create_topics`).

    python -m core.kafka.demo --bootstrap-server HOST:PORT[,...] --topic NAME:BYTES [--topic NAME:BYTES ...]

Uses kafka-python's producer (acks=all); like core.kafka.admin, its exceptions become a KeelError here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Mapping, Sequence

from core.errors import KeelError, ValidationError
from core.kafka.bootstrap import parse_bootstrap

RECORD = 50_000  # bytes a record


def produce(bootstrap: str, sizes: dict[str, int], *, timeout: float = 30.0) -> dict[str, int]:
    """Write about `sizes[topic]` bytes to each topic; returns the bytes written per topic."""
    import kafka.errors as kerrors
    from kafka import KafkaProducer

    servers = list(parse_bootstrap(bootstrap))
    written: dict[str, int] = {}
    try:
        producer = KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=20, batch_size=1 << 20,
                                 max_request_size=2 << 20, request_timeout_ms=int(timeout * 1000),
                                 max_block_ms=int(timeout * 1000), client_id="keel-demo")
    except kerrors.KafkaError as e:
        raise KeelError(f"could not connect a producer to {bootstrap}: {type(e).__name__}: {e}") from None
    try:
        value = os.urandom(RECORD)
        for topic, size in sizes.items():
            partitions = sorted(producer.partitions_for(topic) or ())
            if not partitions:
                raise KeelError(f"topic {topic} has no partitions the brokers know of")
            weights = {p: i + 1 for i, p in enumerate(partitions)}
            total = sum(weights.values())
            written[topic] = 0
            for p in partitions:
                for _ in range(max(1, size * weights[p] // total // RECORD)):
                    producer.send(topic, value, partition=p)
                    written[topic] += RECORD
        producer.flush(timeout=timeout)
    except kerrors.KafkaError as e:
        raise KeelError(f"could not write demo data through {bootstrap}: {type(e).__name__}: {e}") from None
    finally:
        producer.close(timeout=10)
    return written


def create_topics(bootstrap: str, topics: Sequence[tuple[str, int, int, Mapping[str, str]]], *,
                  timeout: float = 30.0) -> dict[str, bool]:
    """CreateTopics for each (name, partitions, replication factor, config), Kafka placing the replicas (rack-aware),
    then wait until every partition has a leader. Returns {name: True if created, False if it already existed}.
    A demo's seeding, not Keel's audited write path (core.kafka's topic writes)."""
    import kafka.errors as kerrors
    from kafka.admin import NewTopic

    from core.kafka.admin import KafkaAdmin

    created: dict[str, bool] = {}
    with KafkaAdmin(bootstrap, timeout=timeout, client_id="keel-demo-admin") as admin:
        for name, partitions, rf, config in topics:
            new = NewTopic(name, num_partitions=partitions, replication_factor=rf,
                           topic_configs=dict(config) or None)
            with admin._translate(f"create topic {name}"):
                try:
                    admin._to_controller(lambda: admin._admin.create_topics([new], timeout_ms=int(timeout * 1000)))
                    created[name] = True
                except kerrors.TopicAlreadyExistsError:
                    created[name] = False
        # A KRaft broker applies the controller's records a moment after CreateTopics returns: wait for leaders.
        want = {name: partitions for name, partitions, _rf, _config in topics}
        deadline = time.monotonic() + timeout
        while True:
            try:
                led = {t["name"]: sum(1 for p in t["partitions"] if int(p.get("leader_id", -1)) >= 0)
                       for t in admin.topic_partitions(sorted(want)) if not t.get("error_code")}
            except KeelError:  # the answering broker does not know a topic yet (UnknownTopicOrPartition)
                led = {}
            if all(led.get(name, 0) >= n for name, n in want.items()):
                return created
            if time.monotonic() >= deadline:
                missing = sorted(name for name, n in want.items() if led.get(name, 0) < n)
                raise KeelError(f"topics {', '.join(missing)} have partitions without a leader after {timeout:g} s")
            time.sleep(0.3)


def _topic(text: str) -> tuple[str, int]:
    name, colon, size = text.rpartition(":")
    if not colon or not name or not size.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME:BYTES, got {text!r}")
    return name, int(size)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m core.kafka.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    p.add_argument("--topic", type=_topic, action="append", required=True, metavar="NAME:BYTES")
    args = p.parse_args(argv)
    try:
        written = produce(args.bootstrap_server, dict(args.topic))
    except (KeelError, ValidationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for topic, n in written.items():
        print(f"wrote {n / 1e6:.1f} MB to {topic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
