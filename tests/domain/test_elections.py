"""Preferred-leader election engine (pure) and trigger refusals (real ZooKeeper)."""

import pytest

from core import zkformat as zf
from core.elections import candidates, leaders_per_broker, outcomes, select
from core.errors import ElectionInProgressError, PlanError, ValidationError
from core.model import Broker, ClusterSnapshot, InProgress, Partition, Topic, TopicPartitionReplicas
from core.plans import parse_election
from core.audit.store import Store
from core.zk.election_writes import trigger
from core.zk.session import ZkSession
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic


def snap(partitions, alive=(1, 2, 3), in_progress=InProgress()):
    topics = {}
    for p in partitions:
        topics.setdefault(p.topic, []).append(p)
    brokers = sorted({r for p in partitions for r in p.replicas} | set(alive))
    return ClusterSnapshot(cluster="c", captured_at="", source="", in_progress=in_progress,
                           brokers=tuple(Broker(b, alive=b in alive) for b in brokers),
                           topics=tuple(Topic(n, tuple(ps)) for n, ps in sorted(topics.items())))


P = Partition
CLUSTER = snap([
    P("a", 0, (1, 2, 3), leader=2, isr=(1, 2, 3)),   # eligible
    P("a", 1, (2, 3, 1), leader=2, isr=(2, 3, 1)),   # already preferred
    P("a", 2, (4, 1, 2), leader=1, isr=(1, 2)),      # preferred broker 4 down
    P("b", 0, (3, 1, 2), leader=1, isr=(1, 2)),      # 3 alive but not in ISR
    P("b", 1, (1, 2, 3), leader=-1, isr=(1,)),       # offline but 1 alive and in ISR -> eligible
])


def test_candidates_and_reasons():
    got = {(c.topic, c.partition): (c.eligible, c.reason) for c in candidates(CLUSTER)}
    assert got == {("a", 0): (True, ""), ("a", 2): (False, "preferred broker 4 is down"),
                   ("b", 0): (False, "preferred broker 3 is not in the ISR"), ("b", 1): (True, "")}


def test_deletion_and_reassignment_make_partitions_ineligible():
    s = snap(CLUSTER.partitions(), in_progress=InProgress(
        reassignment=(TopicPartitionReplicas("a", 0, (1, 2, 3)),), deletion=("b",)))
    reasons = {(c.topic, c.partition): c.reason for c in candidates(s)}
    assert reasons[("a", 0)] == "partition is being reassigned" and reasons[("b", 1)] == "topic is being deleted"


@pytest.mark.parametrize("scope,eligible,ineligible,already", [
    (dict(all_partitions=True), [("a", 0), ("b", 1)], [("a", 2), ("b", 0)], 1),
    (dict(topic="a"), [("a", 0)], [("a", 2)], 1),
    (dict(broker=3), [], [("b", 0)], 0),
    (dict(partitions=[("b", 1), ("a", 1)]), [("b", 1)], [], 1),
])
def test_selection_scopes(scope, eligible, ineligible, already):
    sel = select(CLUSTER, **scope)
    assert [c.key for c in sel.eligible] == eligible
    assert [c.key for c in sel.ineligible] == ineligible and sel.already_preferred == already


@pytest.mark.parametrize("scope,message", [
    (dict(topic="nope"), "Topic 'nope' does not exist"),
    (dict(broker=9), "broker 9 is not part of this cluster"),
    (dict(partitions=[("a", 0), ("a", 0)]), "Preferred replica election data contains duplicate partitions: a-0"),
    (dict(partitions=[("a", 7)]), "do not exist in the cluster: a-7"),
    (dict(partitions=[]), "holds no partitions"),
    (dict(), "choose exactly one"),
])
def test_selection_refusals(scope, message):
    with pytest.raises(ValidationError, match=message):
        select(CLUSTER, **scope)


def test_leaders_per_broker_before_and_after():
    assert leaders_per_broker(CLUSTER) == {1: 2, 2: 2, 3: 0, 4: 0}
    # electing a-0 (2 -> 1) and the offline b-1 (none -> 1)
    after = leaders_per_broker(CLUSTER, select(CLUSTER, all_partitions=True).partitions)
    assert after == {1: 4, 2: 1, 3: 0, 4: 0}


def test_outcomes():
    res = {(o.topic, o.partition): (o.elected, o.detail) for o in outcomes(CLUSTER, [("a", 1), ("a", 2), ("z", 0)])}
    assert res == {("a", 1): (True, "led by preferred broker 2"), ("a", 2): (False, "preferred broker 4 is down"),
                   ("z", 0): (False, "partition no longer exists")}


def test_election_json_parsing_matches_kafka():
    assert parse_election('{"partitions":[{"topic":"t","partition":1},{"topic":"t","partition":0}]}') == (
        ("t", 0), ("t", 1))
    with pytest.raises(PlanError, match="Preferred replica election data contains duplicate partitions: t-0"):
        parse_election('{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0}]}')


# --- trigger refusals against a real ZooKeeper ------------------------------------------------


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: None, 2: None, 3: None}, controller=1)
        write_topic(s, "t", {0: [1, 2, 3], 1: [2, 3, 1]}, states={0: (2, [1, 2, 3]), 1: (2, [2, 3, 1])})
        yield s


def test_trigger_writes_only_eligible_partitions(tree, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    done = trigger(tree, store, cluster="c", all_partitions=True)
    assert done.selection.partitions == [("t", 0)]
    assert zf.decode_preferred_election(tree.get(zf.PREFERRED_ELECTION).data) == (("t", 0),)
    assert store.actions()[0].kind == "preferred-election"


@pytest.mark.parametrize("scope,exc,message", [
    (dict(topic="nope"), ValidationError, "does not exist"),
    (dict(partitions=[("t", 0), ("t", 0)]), ValidationError, "duplicate partitions"),
    (dict(partitions=[("t", 1)]), ValidationError, "nothing to elect"),
])
def test_trigger_refusals_write_nothing(tree, tmp_path, scope, exc, message):
    store = Store(tmp_path / "s.sqlite")
    before = dump_tree(tree)
    with pytest.raises(exc, match=message):
        trigger(tree, store, cluster="c", **scope)
    assert dump_tree(tree) == before and store.actions() == []


def test_trigger_refused_while_an_election_runs(tree, tmp_path):
    tree.create(zf.PREFERRED_ELECTION, zf.encode_preferred_election([("t", 1)]))
    before = dump_tree(tree)
    with pytest.raises(ElectionInProgressError,
                       match=r"Preferred replica leader election currently in progress for t-1. Aborting operation"):
        trigger(tree, Store(tmp_path / "s.sqlite"), cluster="c", all_partitions=True)
    assert dump_tree(tree) == before
