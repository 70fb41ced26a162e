"""Issue 29: `make run`'s demo cluster holds a few ACL bindings and client quotas (sandbox.security_seed), written as
Kafka writes them, so the Security page and a topic's "who may" section have something to show; read back through
the ZooKeeper engine the page uses."""

from __future__ import annotations

from core.cluster import engines
from core.security.model import DEFAULT, QuotaEntity
from core.zk.session import ZkSession
from sandbox.seed import SandboxSpec, seed_cluster
from sandbox.security_seed import DEMO_QUOTAS, demo_bindings


def test_the_demo_seeds_bindings_and_quotas_the_engine_reads(zk_connect):
    with ZkSession.open(zk_connect) as s:
        seed_cluster(s, SandboxSpec(brokers=4, racks=2, topics=5, seed=3, demo=True))
        acls = engines.security(s).read_acls(s)
        seeded_topic = next(b.resource.name for b in acls.bindings if b.principal == "User:orders-service")
        assert seeded_topic in s.children("/brokers/topics") and not seeded_topic.startswith("_")
        assert set(acls.bindings) == set(demo_bindings(seeded_topic))
        quotas = {q.entity: dict(q.values) for q in engines.security(s).read_quotas(s)}
        assert quotas == {e: {k: float(v) for k, v in c.items()} for e, c in DEMO_QUOTAS.items()}
        assert QuotaEntity(None, DEFAULT) in quotas and QuotaEntity("analytics", "spark-loader") in quotas


def test_a_plain_sandbox_has_no_acls(zk_connect):
    with ZkSession.open(zk_connect) as s:
        seed_cluster(s, SandboxSpec(brokers=3, racks=0, topics=2))
        assert engines.security(s).read_acls(s).bindings == ()
        assert engines.security(s).read_quotas(s) == ()
