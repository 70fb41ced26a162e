"""What the brokers tell of a ZooKeeper -> KRaft migration, for core.migration_readiness and core.migration_phases:
each broker's Kafka version (its own ApiVersions answer), its inter.broker.protocol.version, reserved.broker.max.id
and zookeeper.metadata.migration.enable (DescribeConfigs: server.properties, which ZooKeeper does not hold), its
offline log directories (DescribeLogDirs) and, where the brokers answer it, the KRaft quorum (DescribeQuorum).
Reads only. A broker that does not answer is named with why, never taken as ready."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from core.errors import KeelError
from core.kafka.admin import KafkaAdmin
from core.kafka.metadata import quorum_of
from core.model import Quorum

KEYS = ("inter.broker.protocol.version", "reserved.broker.max.id", "zookeeper.metadata.migration.enable",
        "process.roles")


@dataclass(frozen=True)
class BrokerFacts:
    versions: dict[int, tuple[int, ...] | None]
    configs: dict[int, dict[str, str | None] | str]
    offline_dirs: tuple[tuple[int, str, str], ...] | None
    quorum: Quorum | None
    errors: tuple[str, ...] = ()

    @property
    def migration_flags(self) -> dict[int, bool]:
        """broker -> zookeeper.metadata.migration.enable, for the brokers that answered."""
        return {b: str(c.get("zookeeper.metadata.migration.enable")).lower() == "true"
                for b, c in self.configs.items() if not isinstance(c, str)}


def broker_versions(admin: KafkaAdmin, brokers: Iterable[int]) -> dict[int, tuple[int, ...] | None]:
    """Each broker's version as kafka-python infers it from that broker's own ApiVersions answer, asked here on a
    connection to each (a rolling upgrade leaves brokers on different versions); None for one that did not answer.

    Not the connection's `broker_version`: kafka-python caps every connection at the version of the broker it
    bootstrapped from, so a 3.9 broker reached after a 3.8 one read as 3.8 (seen on a real mixed cluster)."""
    from kafka.errors import UnsupportedVersionError
    from kafka.protocol.broker_version_data import BrokerVersionData
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    manager = admin._admin._manager
    ms = int(admin.timeout * 1000)

    async def one(b: int) -> tuple[int, ...]:
        conn = await manager.get_connection(b, timeout_ms=ms)
        version = 3  # Kafka 2.4+; an older broker answers UNSUPPORTED_VERSION with the highest it has
        for _ in range(2):
            answer = await manager.wait_for(conn.send_request(ApiVersionsRequest(
                version=version, client_software_name="keel", client_software_version="1")), ms)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            if answer.error_code != UnsupportedVersionError.errno:
                break
            version = min(version - 1, ranges.get(ApiVersionsRequest.API_KEY, (0, 0))[1])
        return tuple(BrokerVersionData(api_versions=ranges).broker_version)

    async def ask() -> dict[int, tuple[int, ...] | None]:
        out: dict[int, tuple[int, ...] | None] = {}
        for b in brokers:
            try:
                out[b] = await one(b)
            except Exception:  # not in the metadata, not reachable: unknown, said so by the check
                out[b] = None
        return out

    return manager.run(ask)


def broker_facts(admin: KafkaAdmin, brokers: Iterable[int]) -> BrokerFacts:
    ids = sorted({int(b) for b in brokers})
    errors: list[str] = []
    versions = broker_versions(admin, ids)
    configs: dict[int, dict[str, str | None] | str] = {}
    for b, answer in admin.broker_configs(ids, KEYS).items():
        configs[b] = answer if isinstance(answer, str) else {k: v[0] for k, v in answer.items()}
    offline: tuple[tuple[int, str, str], ...] | None
    try:
        offline = tuple((d.broker, d.path, d.error) for d in admin.log_dirs(ids).dirs if d.error)
    except KeelError as e:
        offline, _ = None, errors.append(str(e))
    quorum = None
    with contextlib.suppress(KeelError):  # ZooKeeper-mode brokers do not answer DescribeQuorum
        quorum = quorum_of(admin.quorum())
    return BrokerFacts(versions, configs, offline, quorum, tuple(errors))


__all__ = ["BrokerFacts", "broker_facts", "broker_versions", "KEYS"]
