"""Topic writes and preferred elections on KRaft clusters (Kafka 3.9.1 and 4.x, no ZooKeeper), through the Admin API
(core.kafka.topic_writes, core.kafka.election_writes): what Kafka reports afterwards is exactly what Keel previewed,
a write planned on a state that has changed is refused with nothing written, and the audit rows are the ZooKeeper
engine's."""

from __future__ import annotations

import uuid
from random import Random

import pytest

from core.audit.store import Store
from core.elections import select
from core.errors import InvalidPartitionsError, InvalidTopicError, KeelError, TopicExistsError, ValidationError
from core.kafka import election_writes, topic_writes
from core.kafka.admin import KafkaAdmin
from core.kafka.topic_writes import kafka_uuid, refusal_error
from core.topics import draft_add_partitions, draft_create_topic
from sandbox.processes.kraft import KraftCluster
from tests.kafka.realkafka import eventually, tool_class

CLUSTER = "kraft"


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def admin(kraft: KraftCluster):
    with KafkaAdmin(kraft.bootstrap_servers, timeout=20) as client:
        yield client


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "keel.sqlite")


@pytest.fixture(autouse=True)
def whole(admin: KafkaAdmin) -> None:
    """Every node up and every replica in sync, as each broker answers (a test of another module may just have
    restarted a node, which then catches up with the metadata log)."""
    def check():
        for _ in range(3):  # each read may reach another broker
            snap = topic_writes.live_state(admin)
            assert [b.id for b in snap.brokers if b.alive] == [1, 2, 3]
            assert all(set(p.isr) == set(p.replicas) for p in snap.partitions())
    eventually(check, timeout=120, interval=0.5)


def kafka_partitions(admin: KafkaAdmin, topic: str) -> dict[int, tuple[list[int], int, list[int]]]:
    """{partition: (replicas, leader, isr)} as the brokers' metadata says (kafka-python's own describe)."""
    [meta] = admin._admin.describe_topics([topic])
    assert int(meta.get("error_code") or 0) == 0, meta
    return {p["partition_index"]: (list(p["replica_nodes"]), p["leader_id"], sorted(p["isr_nodes"]))
            for p in meta["partitions"]}


def kafka_overrides(admin: KafkaAdmin, topic: str) -> dict[str, str]:
    from kafka.admin import ConfigResource, ConfigResourceType

    answer = admin._admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    entries = answer["topic"][topic]
    assert entries, f"{topic}: no settings described yet"
    return {k: v["value"] for k, v in entries.items() if v.get("config_source") == "DYNAMIC_TOPIC_CONFIG"}


def settled(admin: KafkaAdmin, topic: str, assignment: dict[int, tuple[int, ...]]) -> None:
    """Kafka reports exactly `assignment`, every partition led by its first replica with a full ISR."""
    def check():
        got = kafka_partitions(admin, topic)
        assert {p: tuple(r) for p, (r, _, _) in got.items()} == {p: tuple(r) for p, r in assignment.items()}
        assert all(isr == sorted(r) and leader == r[0] for r, leader, isr in got.values()), got
    eventually(check, timeout=30, interval=0.3)


def wait_until(predicate, timeout: float = 30) -> None:
    def check():
        assert predicate()
    eventually(check, timeout=timeout, interval=0.3)


def actions(store: Store, kind: str):
    return store.actions(CLUSTER, kind=kind)


def create(admin: KafkaAdmin, store: Store, topic: str, assignment, config=None):
    snap = topic_writes.live_state(admin)
    draft = draft_create_topic(snap, topic, replica_assignment=assignment, config=config or {})
    applied = topic_writes.create_topic(admin, store, draft, cluster=CLUSTER, actor="alice")
    settled(admin, topic, draft.assignment)
    # every broker has applied it (a read may reach any of them; one that lags does not list the topic yet)
    wait_until(lambda: all(topic_writes.live_state(admin).topic(topic) is not None for _ in range(3)))
    return applied


# --- create ----------------------------------------------------------------------------------------------------------


def test_create_writes_exactly_the_previewed_rack_aware_assignment_and_config(kraft, admin, store):
    topic = name("kt-create")
    snap = topic_writes.live_state(admin)
    racks = {b.id: b.rack for b in snap.brokers}
    draft = draft_create_topic(snap, topic, partitions=6, replication_factor=3, rng=Random(11),
                               config={"min.insync.replicas": "2", "retention.ms": "3600000"})
    assert all(len({racks[b] for b in reps}) == 3 for reps in draft.assignment.values())  # one replica per rack
    applied = topic_writes.create_topic(admin, store, draft, cluster=CLUSTER, actor="alice")

    assert applied.written == (f"CreateTopics {topic}",)
    assert applied.summary == f"created topic {topic}: 6 partitions, replication factor 3, 2 config overrides"
    settled(admin, topic, draft.assignment)  # Kafka's placement is Keel's preview, not a random one of its own
    wait_until(lambda: kafka_overrides(admin, topic) == {"min.insync.replicas": "2", "retention.ms": "3600000"})
    # ... and Kafka's own tool says the same
    tool = tool_class(kraft.version, "org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand")
    out = kraft.tool(tool, "--bootstrap-server", kraft.bootstrap_servers, "--describe", "--topic", topic).stdout
    for p, reps in draft.assignment.items():
        assert f"\tPartition: {p}\tLeader: {reps[0]}\tReplicas: {','.join(map(str, reps))}\t" in out
    assert "min.insync.replicas=2" in out and "retention.ms=3600000" in out

    [row] = actions(store, "create-topic")
    assert (row.id, row.target, row.status, row.actor) == (applied.action_id, topic, "applied", "alice")
    assert row.summary == applied.summary and row.result == applied.summary
    assert row.rollback == {"action": "delete-topic", "topic": topic}
    assert row.payload == [{"request": "CreateTopics", "topic": topic, "config": draft.config,
                            "assignment": {str(p): list(r) for p, r in draft.assignment.items()}}]


def test_create_is_refused_when_the_name_exists_and_nothing_is_recorded(admin, store):
    topic = name("kt-exists")
    snap = topic_writes.live_state(admin)
    draft = draft_create_topic(snap, topic, replica_assignment={0: [1, 2], 1: [2, 3]})
    # someone else creates the topic after the preview was made
    assert admin.create_topic(topic, {0: [3, 1]}, {}) is None
    with pytest.raises(TopicExistsError, match=f"Topic '{topic}' already exists"):
        topic_writes.create_topic(admin, store, draft, cluster=CLUSTER)
    assert actions(store, "create-topic") == []

    def theirs_untouched():  # as every broker answers once it has applied the topic
        assert kafka_partitions(admin, topic).get(0, ([],))[0] == [3, 1]
    eventually(theirs_untouched, timeout=15, interval=0.3)

    # Kafka's own refusals (what reaches the write when the re-read raced), in Kafka's words and Keel's types
    refused = admin.create_topic(topic, {0: [1, 2]}, {}, validate_only=True)
    assert refused == ("TOPIC_ALREADY_EXISTS", f"Topic '{topic}' already exists.")
    assert isinstance(refusal_error(refused), TopicExistsError)
    under = name("kt_col")
    assert admin.create_topic(under, {0: [1, 2]}, {}) is None
    refused = admin.create_topic(under.replace("_", "."), {0: [1, 2]}, {}, validate_only=True)
    assert refused is not None and refused[0] == "INVALID_TOPIC_EXCEPTION" and under in refused[1], refused
    assert isinstance(refusal_error(refused), InvalidTopicError)
    refused = admin.create_topic(name("kt-badrep"), {0: [1, 1]}, {}, validate_only=True)
    assert refused is not None and refused[0] == "INVALID_REPLICA_ASSIGNMENT", refused
    code, message = admin.create_topic(name("kt-badcfg"), {0: [1, 2]}, {"cleanup.policy": "nope"}, validate_only=True)
    assert code == "INVALID_CONFIG" and "cleanup.policy" in message


# --- add partitions --------------------------------------------------------------------------------------------------


def test_add_partitions_with_the_drafted_assignment(admin, store):
    topic = name("kt-grow")
    create(admin, store, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    draft = draft_add_partitions(topic_writes.live_state(admin), topic, 5, replica_assignment={3: [2, 1], 4: [3, 2]})
    applied = topic_writes.add_partitions(admin, store, draft, cluster=CLUSTER, actor="bob")
    assert applied.written == (f"CreatePartitions {topic}",)
    settled(admin, topic, draft.full_assignment)
    [row] = actions(store, "add-partitions")
    assert row.summary == f"added 2 partitions to {topic} (3 -> 5)" and row.status == "applied"
    assert row.rollback == {"action": "none", "reason": "Kafka cannot remove partitions from a topic"}


def test_an_add_partitions_draft_made_before_the_topic_grew_is_refused(admin, store):
    topic = name("kt-stale")
    create(admin, store, topic, {0: [1, 2], 1: [2, 3]})
    draft = draft_add_partitions(topic_writes.live_state(admin), topic, 3, replica_assignment={2: [3, 1]})
    assert admin.create_partitions(topic, 4, [[1, 3], [2, 1]]) is None  # someone else grows it meanwhile
    wait_until(lambda: all(len(topic_writes.live_state(admin).topic(topic).partitions) == 4 for _ in range(3)))
    with pytest.raises(InvalidPartitionsError, match="It now has 4 partitions; the draft was made for 2"):
        topic_writes.add_partitions(admin, store, draft, cluster=CLUSTER)
    assert actions(store, "add-partitions") == []
    # and Kafka itself refuses the stale request (CreatePartitions names the new total): never a partition too many
    refused = admin.create_partitions(topic, draft.new_total, [[3, 1]], validate_only=True)
    assert refused is not None and refused[0] == "INVALID_PARTITIONS", refused
    assert isinstance(refusal_error(refused), InvalidPartitionsError)
    assert len(kafka_partitions(admin, topic)) == 4


# --- alter config ----------------------------------------------------------------------------------------------------


class FrozenSettings(KafkaAdmin):
    """The Admin client of an operator whose read of the topics' settings happened before another's write landed:
    the race the Admin API cannot rule out (no compare-and-set), made deterministic."""

    frozen: dict[str, dict[str, str]] = {}

    def topic_overrides(self, topics, *, batch=500):
        return {t: dict(c) for t, c in self.frozen.items() if t in topics}


def test_alter_config_sends_only_the_changed_keys_so_concurrent_edits_of_other_keys_both_survive(kraft, admin, store):
    topic = name("kt-config")
    create(admin, store, topic, {0: [1, 2, 3]}, config={"retention.ms": "3600000", "segment.bytes": "1048576"})
    wait_until(lambda: kafka_overrides(admin, topic) == {"retention.ms": "3600000", "segment.bytes": "1048576"})
    with FrozenSettings(kraft.bootstrap_servers, timeout=20) as late:
        late.frozen = admin.topic_overrides([topic])  # both operators read the same settings
        first = topic_writes.alter_config(admin, store, topic, set={"retention.ms": "7200000"}, cluster=CLUSTER,
                                          actor="alice")
        wait_until(lambda: kafka_overrides(admin, topic)["retention.ms"] == "7200000")
        # the second drafts from the read made before the first write: its own key only, the first one's kept
        second = topic_writes.alter_config(late, store, topic, set={"max.message.bytes": "2000000"},
                                           delete=["segment.bytes"], cluster=CLUSTER, actor="bob")
    want = {"retention.ms": "7200000", "max.message.bytes": "2000000"}
    wait_until(lambda: kafka_overrides(admin, topic) == want)

    assert first.written == second.written == (f"IncrementalAlterConfigs {topic}",)
    rows = {r.actor: r for r in actions(store, "alter-config")}
    assert rows["alice"].summary == f"altered config of {topic}: retention.ms=7200000"
    assert rows["alice"].rollback == {"action": "alter-config", "topic": topic,
                                      "config": {"retention.ms": "3600000", "segment.bytes": "1048576"}}
    assert rows["bob"].summary == f"altered config of {topic}: max.message.bytes=2000000, -segment.bytes"
    assert rows["bob"].payload == [{"request": "IncrementalAlterConfigs", "topic": topic,
                                    "set": {"max.message.bytes": "2000000"}, "delete": ["segment.bytes"]}]
    assert all(r.status == "applied" for r in rows.values())

    with pytest.raises(ValidationError, match="nothing to change"):
        topic_writes.alter_config(admin, store, topic, set={"retention.ms": "7200000"}, cluster=CLUSTER)
    # Kafka's refusal of a bad value, from validate_only (Keel's own check refuses it first in alter_config)
    refused = admin.alter_topic_config(topic, {"retention.ms": "soon"}, validate_only=True)
    assert refused is not None and refused[0] == "INVALID_CONFIG", refused
    assert len(actions(store, "alter-config")) == 2


def test_alter_config_is_refused_when_the_topics_settings_were_not_described(kraft, admin, store):
    topic = name("kt-unread")
    create(admin, store, topic, {0: [1, 2]}, config={"retention.ms": "3600000"})
    with FrozenSettings(kraft.bootstrap_servers, timeout=20) as blind:
        blind.frozen = {}  # the broker asked did not describe the topic's settings (not applied yet)
        with pytest.raises(KeelError, match=f"did not describe topic {topic}: settings.*nothing was written"):
            topic_writes.alter_config(blind, store, topic, set={"segment.bytes": "1048576"}, cluster=CLUSTER)
    assert actions(store, "alter-config") == []
    assert kafka_overrides(admin, topic) == {"retention.ms": "3600000"}


# --- delete ----------------------------------------------------------------------------------------------------------


def test_delete_topic_and_a_topic_recreated_since_the_read_is_not_deleted(admin, store):
    topic = name("kt-delete")
    create(admin, store, topic, {0: [1, 2], 1: [2, 3]})
    applied = topic_writes.delete_topic(admin, store, topic, cluster=CLUSTER, actor="carol")
    assert applied.written == (f"DeleteTopics {topic}",)

    def gone():
        assert topic not in admin.topic_names()
    eventually(gone, timeout=30, interval=0.3)
    [row] = actions(store, "delete-topic")
    assert (row.target, row.status, row.summary) == (topic, "applied", f"deleted topic {topic} (2 partitions, 4 replicas)")
    assert row.rollback == {"action": "none", "reason": "a deleted topic's data cannot be restored"}

    # DeleteTopics names the topic by the id that was read: a topic of that name created since is another one
    other = name("kt-recreated")
    create(admin, store, other, {0: [1, 2]})
    old_id = topic_writes.live_state(admin).topic(other).topic_id
    assert admin.delete_topic(other) is None
    wait_until(lambda: other not in admin.topic_names())
    assert admin.create_topic(other, {0: [2, 3]}, {}) is None
    wait_until(lambda: other in admin.topic_names())
    refused = admin.delete_topic(other, kafka_uuid(old_id))
    assert refused is not None and refused[0] == "UNKNOWN_TOPIC_ID", refused
    wait_until(lambda: other in admin.topic_names())


# --- preferred elections ---------------------------------------------------------------------------------------------


def test_preferred_election_moves_leadership_back_to_the_preferred_replica(admin, store):
    from kafka import TopicPartition

    topic = name("kt-elect")
    create(admin, store, topic, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    # the same replicas in another order: the preferred leader of partition 0 becomes 2, no data moves, 1 still leads
    admin._admin.alter_partition_reassignments({TopicPartition(topic, 0): [2, 1, 3]}, timeout_ms=20000)

    def reordered():
        assert kafka_partitions(admin, topic)[0][:2] == ([2, 1, 3], 1)
        assert not admin.reassignments([(topic, 0)])
    eventually(reordered, timeout=30, interval=0.3)


    def planned():  # as every broker answers
        snap, selection = election_writes.plan_election(admin, topic=topic)
        assert selection.partitions == [(topic, 0)] and selection.already_preferred == 2
        return snap, selection
    snap, selection = [eventually(planned, timeout=30, interval=0.3) for _ in range(3)][-1]
    assert selection == select(snap, topic=topic)
    triggered = election_writes.trigger(admin, store, cluster=CLUSTER, actor="dave", topic=topic)
    assert triggered.selection.partitions == [(topic, 0)]
    done, found = election_writes.wait_for_outcome(admin, [(topic, 0)], timeout=30)
    assert done and [(o.topic, o.partition, o.elected, o.leader) for o in found] == [(topic, 0, True, 2)]

    def kafka_agrees():  # Kafka says so too, once the broker asked has applied the leader change
        assert kafka_partitions(admin, topic)[0][1] == 2
    eventually(kafka_agrees, timeout=15, interval=0.3)

    [row] = actions(store, "preferred-election")
    assert (row.id, row.target, row.status, row.actor) == (triggered.action_id, f"topic {topic}", "applied", "dave")
    assert row.summary == f"preferred leader election for topic {topic}: 1 partitions to move"
    assert row.payload == [{"request": "ElectLeaders", "election_type": "PREFERRED",
                            "partitions": [{"topic": topic, "partition": 0}]}]
    assert row.rollback is None

    # nothing left to elect: refused, nothing recorded; Kafka answers ELECTION_NOT_NEEDED, which is no error
    def nothing_left():  # as every broker answers (each read may reach another one: a lagging one elects again)
        assert not election_writes.plan_election(admin, topic=topic)[1].partitions
    for _ in range(3):
        eventually(nothing_left, timeout=30, interval=0.3)
    with pytest.raises(ValidationError, match="every partition is already led by its preferred replica"):
        election_writes.trigger(admin, store, cluster=CLUSTER, topic=topic)
    assert admin.elect_preferred([(topic, 0), (topic, 1)]) == {(topic, 0): None, (topic, 1): None}
    assert len(actions(store, "preferred-election")) == 1
    with pytest.raises(ValidationError, match=f"The following partitions do not exist in the cluster: {topic}-9"):
        election_writes.plan_election(admin, partitions=[(topic, 0), (topic, 9)])
    # a partition Kafka does not know, asked directly: its refusal, per partition
    assert admin.elect_preferred([(topic, 9)])[(topic, 9)][0] == "UNKNOWN_TOPIC_OR_PARTITION"
