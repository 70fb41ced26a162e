"""Kafka-exact replica assignment: Kafka's own test vectors, its error messages, and property tests.

`kafka_literal` below is a line-by-line port of `AdminUtils.assignReplicasToBrokers` (Java, server-common) kept as
the reference: core.assignment memoises per-partition work and must give the same output on every input.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from core.assignment import (RackAwareMode, add_partitions_assignment, assign_replicas, brokers_for_mode,
                             format_assignment_json, parse_broker_list, rack_alternated_brokers)
from core.errors import AdminOperationError, InvalidPartitionsError, InvalidReplicationFactorError, ValidationError
from core.model import Broker


# --- the reference: a literal port of Kafka's code -------------------------------------------


def kafka_literal(broker_metadatas, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1,
                  rand=None):
    """AdminUtils.assignReplicasToBrokers, statement for statement (validation left to the caller)."""
    if all(rack is None for _, rack in broker_metadatas):
        return _literal_rack_unaware(n_partitions, replication_factor, [b for b, _ in broker_metadatas],
                                     fixed_start_index, start_partition_id, rand)
    return _literal_rack_aware(n_partitions, replication_factor, broker_metadatas, fixed_start_index,
                               start_partition_id, rand)


def _literal_rack_unaware(n_partitions, replication_factor, broker_list, fixed_start_index, start_partition_id, rand):
    ret = {}
    broker_array = list(broker_list)
    start_index = fixed_start_index if fixed_start_index >= 0 else rand.randrange(len(broker_array))
    current_partition_id = max(0, start_partition_id)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rand.randrange(len(broker_array))
    for _ in range(n_partitions):
        if current_partition_id > 0 and current_partition_id % len(broker_array) == 0:
            next_replica_shift += 1
        first_replica_index = (current_partition_id + start_index) % len(broker_array)
        replica_buffer = [broker_array[first_replica_index]]
        for j in range(replication_factor - 1):
            replica_buffer.append(broker_array[_literal_replica_index(first_replica_index, next_replica_shift, j,
                                                                      len(broker_array))])
        ret[current_partition_id] = replica_buffer
        current_partition_id += 1
    return ret


def _literal_rack_aware(n_partitions, replication_factor, broker_metadatas, fixed_start_index, start_partition_id,
                        rand):
    broker_rack_map = {b: rack for b, rack in broker_metadatas}
    num_racks = len(set(broker_rack_map.values()))
    arranged_broker_list = _literal_rack_alternated(broker_rack_map)
    num_brokers = len(arranged_broker_list)
    ret = {}
    start_index = fixed_start_index if fixed_start_index >= 0 else rand.randrange(len(arranged_broker_list))
    current_partition_id = max(0, start_partition_id)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rand.randrange(len(arranged_broker_list))
    for _ in range(n_partitions):
        if current_partition_id > 0 and current_partition_id % len(arranged_broker_list) == 0:
            next_replica_shift += 1
        first_replica_index = (current_partition_id + start_index) % len(arranged_broker_list)
        leader = arranged_broker_list[first_replica_index]
        replica_buffer = [leader]
        racks_with_replicas = {broker_rack_map[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _j in range(replication_factor - 1):
            done = False
            while not done:
                broker = arranged_broker_list[_literal_replica_index(
                    first_replica_index, next_replica_shift * num_racks, k, len(arranged_broker_list))]
                rack = broker_rack_map[broker]
                if ((rack not in racks_with_replicas or len(racks_with_replicas) == num_racks)
                        and (broker not in brokers_with_replicas or len(brokers_with_replicas) == num_brokers)):
                    replica_buffer.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    done = True
                k += 1
        ret[current_partition_id] = replica_buffer
        current_partition_id += 1
    return ret


def _literal_rack_alternated(broker_rack_map):
    inverse = {}
    for broker, rack in broker_rack_map.items():
        inverse.setdefault(rack, []).append(broker)
    iterators = {rack: iter(sorted(ids)) for rack, ids in inverse.items()}
    racks = sorted(iterators, key=lambda r: r.encode("utf-16-be"))
    result, rack_index = [], 0
    while len(result) < len(broker_rack_map):
        nxt = next(iterators[racks[rack_index]], None)
        if nxt is not None:
            result.append(nxt)
        rack_index = (rack_index + 1) % len(racks)
    return result


def _literal_replica_index(first_replica_index, second_replica_shift, replica_index, n_brokers):
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


# --- Kafka's RackAwareTest.checkReplicaDistribution ------------------------------------------


def check_replica_distribution(assignment, rack_of, num_brokers, num_partitions, replication_factor,
                               verify_rack_aware=True, verify_leaders=True, verify_replicas=True):
    for replicas in assignment.values():
        assert len(set(replicas)) == len(replicas), "more than one replica of a partition on the same broker"
    if verify_rack_aware:
        assert [len({rack_of[b] for b in reps}) for reps in assignment.values()] == \
            [replication_factor] * num_partitions, "more than one replica of a partition in the same rack"
    if verify_leaders:
        leaders = Counter(reps[0] for reps in assignment.values())
        assert sorted(leaders.values()) == [num_partitions // num_brokers] * num_brokers, \
            "preferred leader count is not even for brokers"
    if verify_replicas:
        replicas = Counter(b for reps in assignment.values() for b in reps)
        assert sorted(replicas.values()) == [num_partitions * replication_factor // num_brokers] * num_brokers, \
            "replica count is not even for brokers"


def racked(rack_map):
    return [(b, rack_map[b]) for b in sorted(rack_map)]


def unracked(ids):
    return [(b, None) for b in ids]


# --- DESIGN.md vectors (from Kafka's AdminTest, AdminRackAwareTest, AddPartitionsTest) --------


def test_design_rack_unaware_five_brokers():
    assert assign_replicas(unracked(range(5)), 10, 3, 0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_design_rack_alternated_list_and_rack_aware_assignment():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    assert assign_replicas(racked(racks), 7, 3, 0, 0) == {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2]}


def test_design_add_partitions_all_servers():
    assert add_partitions_assignment({0: [2, 3, 0, 1]}, unracked(range(4)), 7) == {
        1: [3, 2, 0, 1], 2: [0, 3, 1, 2], 3: [1, 0, 2, 3], 4: [2, 3, 0, 1], 5: [3, 0, 1, 2], 6: [0, 1, 2, 3]}


def test_design_add_partitions_partial_servers():
    assert add_partitions_assignment({0: [1, 2]}, unracked(range(4)), 3) == {1: [2, 0], 2: [3, 1]}


def test_design_three_brokers_fixed_two():
    assert assign_replicas(unracked(range(3)), 6, 3, 2) == {
        0: [2, 0, 1], 1: [0, 1, 2], 2: [1, 2, 0], 3: [2, 1, 0], 4: [0, 2, 1], 5: [1, 0, 2]}


def test_design_eight_brokers_fixed_one():
    got = assign_replicas(unracked(range(8)), 8, 3, 1)
    assert (got[0], got[1], got[7]) == ([1, 3, 4], [2, 4, 5], [0, 2, 3])
    assert got == kafka_literal(unracked(range(8)), 8, 3, 1)


# --- more of Kafka's own tests ----------------------------------------------------------------


def test_rack_alternated_list_without_broker_5():  # AdminRackAwareTest
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 4, 2]


def test_rack_alternated_list_javadoc_example():  # the javadoc of getRackAlternatedBrokerList
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_brokers(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_add_partitions_leaders_and_replica_sets():  # AddPartitionsTest.testReplicaPlacementAllServers
    got = add_partitions_assignment({0: [2, 3, 0, 1]}, unracked(range(4)), 7)
    assert [reps[0] for _, reps in sorted(got.items())] == [3, 0, 1, 2, 3, 0]
    assert all(set(reps) == {0, 1, 2, 3} for reps in got.values())


def test_add_partitions_partial_servers_sets():  # AddPartitionsTest.testReplicaPlacementPartialServers
    got = add_partitions_assignment({0: [1, 2]}, unracked(range(4)), 3)
    assert (got[1][0], set(got[1]), got[2][0], set(got[2])) == (2, {0, 2}, 3, {1, 3})


SIX_RACKED = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


@pytest.mark.parametrize("seed", range(50))
def test_kafka_rack_aware_distribution_cases(seed):  # AdminRackAwareTest, random start indexes over many seeds
    rng = random.Random(seed)
    check_replica_distribution(assign_replicas(racked(SIX_RACKED), 6, 3, 2, 0), SIX_RACKED, 6, 6, 3)
    check_replica_distribution(assign_replicas(racked(SIX_RACKED), 6, 3, rng=rng), SIX_RACKED, 6, 6, 3)
    check_replica_distribution(assign_replicas(racked(SIX_RACKED), 13, 3, 0, 0), SIX_RACKED, 6, 13, 3,
                               verify_leaders=False, verify_replicas=False)
    uneven = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    check_replica_distribution(assign_replicas(racked(uneven), 12, 3, rng=rng), uneven, 6, 12, 3,
                               verify_replicas=False)
    check_replica_distribution(assign_replicas(racked(SIX_RACKED), 12, 2, rng=rng), SIX_RACKED, 6, 12, 2)
    expansion = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    check_replica_distribution(assign_replicas(racked(expansion), 12, 2, start_partition_id=12, rng=rng),
                               expansion, 6, 12, 2)
    check_replica_distribution(assign_replicas(racked(SIX_RACKED), 6, 2, rng=rng), SIX_RACKED, 6, 6, 2)
    three = {0: "rack1", 1: "rack2", 4: "rack3"}
    check_replica_distribution(assign_replicas(racked(three), 3, 2, rng=rng), three, 3, 3, 2)
    large = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
             6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}
    check_replica_distribution(assign_replicas(racked(large), 96, 3, rng=rng), large, 12, 96, 3)


@pytest.mark.parametrize("seed", range(20))
def test_kafka_more_fewer_single_racks(seed):  # AdminRackAwareTest.testMore/LessReplicasThanRacks, testSingleRack
    rng = random.Random(seed)
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    more = assign_replicas(racked(racks), 6, 5, rng=rng)
    assert all(len(reps) == 5 and len({racks[b] for b in reps}) == 3 for reps in more.values())
    fewer = assign_replicas(racked(racks), 6, 2, rng=rng)
    assert all(len(reps) == 2 and len({racks[b] for b in reps}) == 2 for reps in fewer.values())
    single = dict.fromkeys(range(6), "rack1")
    one = assign_replicas(racked(single), 6, 3, rng=rng)
    assert Counter(reps[0] for reps in one.values()) == dict.fromkeys(range(6), 1)


def test_skip_broker_with_replica_already_assigned():  # AdminRackAwareTest
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    got = assign_replicas(racked(racks), 6, 4, fixed_start_index=2)
    check_replica_distribution(got, racks, 5, 6, 4, verify_rack_aware=False, verify_leaders=False,
                               verify_replicas=False)
    assert got == kafka_literal(racked(racks), 6, 4, 2)


@pytest.mark.parametrize("seed", range(30))
def test_create_then_alter_rack_aware(seed):  # TopicCommandTest.testCreateAlterTopicWithRackAware
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack1", 4: "rack3", 5: "rack3"}
    brokers = brokers_for_mode(racked(racks), RackAwareMode.ENFORCED)
    created = assign_replicas(brokers, 18, 3, rng=random.Random(seed))
    check_replica_distribution(created, racks, 6, 18, 3)
    altered = created | add_partitions_assignment(created, brokers, 36, topic="foo")
    assert sorted(altered) == list(range(36))
    check_replica_distribution(altered, racks, 6, 36, 3)


def test_get_broker_metadatas():  # AdminZkClientTest.testGetBrokerMetadatas
    rack_info = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack1", 5: "rack3"}
    brokers = [(b, rack_info.get(b)) for b in (5, 3, 1, 0, 4, 2)]
    assert brokers_for_mode(brokers, RackAwareMode.DISABLED) == unracked(range(6))
    assert brokers_for_mode(brokers, "safe") == unracked(range(6))
    with pytest.raises(AdminOperationError) as e:
        brokers_for_mode(brokers, "enforced")
    assert str(e.value) == ("Not all brokers have rack information. Add --disable-rack-aware in command line to make "
                            "replica assignment without rack information.")
    partial = [b for b in brokers if b[0] in (0, 1, 2, 3, 5)]
    assert brokers_for_mode(partial, "enforced") == [(b, rack_info[b]) for b in (0, 1, 2, 3, 5)]
    assert len(assign_replicas(brokers_for_mode(brokers, "safe"), 3, 2)) == 3


def test_rack_modes_on_fully_racked_and_unracked_clusters():
    full = [Broker(2, "b"), Broker(1, "a")]
    assert brokers_for_mode(full, "enforced") == brokers_for_mode(full, "safe") == [(1, "a"), (2, "b")]
    assert brokers_for_mode(full, "disabled") == [(1, None), (2, None)]
    assert brokers_for_mode(unracked([3, 1]), "enforced") == unracked([1, 3])
    assert brokers_for_mode([], "enforced") == []
    with pytest.raises(ValidationError, match="unknown rack-aware mode 'strict'"):
        brokers_for_mode(full, "strict")


# --- error messages ---------------------------------------------------------------------------


@pytest.mark.parametrize("args, error, message", [
    ((unracked(range(5)), 0, 3), InvalidPartitionsError, "Number of partitions must be larger than 0."),
    ((unracked(range(5)), -1, 3), InvalidPartitionsError, "Number of partitions must be larger than 0."),
    ((unracked(range(5)), 10, 0), InvalidReplicationFactorError, "Replication factor must be larger than 0."),
    ((unracked(range(5)), 10, 6), InvalidReplicationFactorError,
     "Replication factor: 6 larger than available brokers: 5."),
    (([], 1, 1), InvalidReplicationFactorError, "Replication factor: 1 larger than available brokers: 0."),
    (([(0, "r1"), (1, None)], 2, 1), AdminOperationError,
     "Not all brokers have rack information for replica rack aware assignment."),
    (([(0, None), (1, None), (0, None)], 2, 1), ValidationError, "broker id(s) listed more than once: 0"),
])
def test_assign_errors(args, error, message):
    with pytest.raises(error) as e:
        assign_replicas(*args)
    assert str(e.value) == message


def test_partition_count_is_checked_before_replication_factor():
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([], 0, 0)


def test_add_partitions_must_grow():
    for new_total in (2, 3):
        with pytest.raises(InvalidPartitionsError) as e:
            add_partitions_assignment({0: [0], 1: [1], 2: [2]}, unracked(range(3)), new_total, topic="t")
        assert str(e.value) == ("Topic already has 3 partitions." if new_total == 3 else
                                f"Topic currently has 3 partitions, which is higher than the requested {new_total}.")


def test_add_partitions_needs_partition_zero():  # AddPartitionsTest.testMissingPartition0
    with pytest.raises(AdminOperationError) as e:
        add_partitions_assignment({1: [0, 1]}, unracked(range(4)), 2, topic="new-topic5")
    assert str(e.value).startswith("Unexpected existing replica assignment for topic 'new-topic5', "
                                   "partition id 0 is missing. Assignment: ")


def test_add_partitions_errors_from_the_assignment():
    with pytest.raises(InvalidReplicationFactorError,
                       match=r"^Replication factor: 3 larger than available brokers: 2\.$"):
        add_partitions_assignment({0: [0, 1, 2]}, unracked([0, 1]), 2)
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information for replica"):
        add_partitions_assignment({0: [0]}, [(0, "a"), (1, None)], 2)


# --- add-partitions start index ---------------------------------------------------------------


def test_add_partitions_start_index_is_first_sorted_id_not_below_partition_zero_leader():
    brokers = unracked([30, 10, 20, 40])  # Kafka's list is sorted: [10, 20, 30, 40]
    sorted_ids = [10, 20, 30, 40]
    for leader, start in ((25, 2), (10, 0), (5, 0), (40, 3), (99, 0)):  # no id >= leader: index 0
        got = add_partitions_assignment({0: [leader], 1: [10]}, brokers, 6)
        assert got == assign_replicas(unracked(sorted_ids), 4, 1, start, 2)


def test_add_partitions_rack_aware_applies_sorted_index_to_the_alternated_list():
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}  # rack-alternated list: [0, 2, 1, 3]
    got = add_partitions_assignment({0: [2, 0]}, racked(racks), 2)
    # Start index 2 is broker 2's place among sorted ids; in the alternated list it makes partition 1's leader
    # alternated[(1 + 2) % 4] = 3, not broker 1, which follows broker 2 there.
    assert got == kafka_literal(racked(racks), 1, 2, 2, 1) == {1: [3, 1]}


def test_add_partitions_is_deterministic_and_returns_only_new_partitions():
    existing = {0: [2, 0], 1: [0, 1], 2: [1, 2]}
    first = add_partitions_assignment(existing, unracked(range(3)), 5)
    assert sorted(first) == [3, 4] and first == add_partitions_assignment(existing, unracked(range(3)), 5)


# --- inputs -----------------------------------------------------------------------------------


def test_broker_objects_and_pairs_give_the_same_assignment():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    objects = [Broker(b, r, host="h", port=9092) for b, r in racked(racks)]
    assert assign_replicas(objects, 7, 3, 0, 0) == assign_replicas(racked(racks), 7, 3, 0, 0)


def test_rack_unaware_uses_the_order_given_and_rack_aware_ignores_it():
    assert assign_replicas(unracked([2, 0, 1]), 3, 2, 0) == {0: [2, 0], 1: [0, 1], 2: [1, 2]}
    racks = {0: "a", 1: "b", 2: "a", 3: "b"}
    assert assign_replicas(racked(racks)[::-1], 8, 2, 1) == assign_replicas(racked(racks), 8, 2, 1)


def test_rack_names_sort_as_java_strings():
    # Java compares UTF-16 code units: a surrogate pair (0xD83D...) sorts before U+FF61.
    assert rack_alternated_brokers({0: "\uff61", 1: "\U0001F600"}) == [1, 0]
    assert rack_alternated_brokers({0: "b", 1: "B", 2: "a"}) == [1, 2, 0]


def test_random_start_draws_start_index_then_shift():
    class Draws(random.Random):
        def __init__(self, values):
            super().__init__()
            self.values = list(values)

        def randrange(self, n):
            assert n == 5
            return self.values.pop(0)

    # start index 3, shift 1: the leader of partition 0 is broker 3, its follower is 3 + 1 + 1.
    got = assign_replicas(unracked(range(5)), 5, 2, rng=Draws([3, 1]))
    assert got == kafka_literal(unracked(range(5)), 5, 2, rand=Draws([3, 1]))
    assert got[0] == [3, 0]


def test_seeded_rng_is_deterministic_and_default_rng_works():
    brokers = racked(SIX_RACKED)
    seeded = assign_replicas(brokers, 50, 3, rng=random.Random(7))
    assert seeded == assign_replicas(brokers, 50, 3, rng=random.Random(7))
    check_replica_distribution(assign_replicas(brokers, 60, 3), SIX_RACKED, 6, 60, 3)


def test_single_broker():
    assert assign_replicas(unracked([7]), 3, 1) == {0: [7], 1: [7], 2: [7]}
    assert assign_replicas([(7, "r")], 2, 1, start_partition_id=5) == {5: [7], 6: [7]}


# --- property tests over many random inputs ---------------------------------------------------


def random_cluster(rng):
    """Brokers with sparse ids, shuffled; racked, unracked, equal-sized racks or uneven racks."""
    kind = rng.choice(["unracked", "equal", "uneven"])
    if kind == "equal":
        num_racks, per_rack = rng.randint(1, 5), rng.randint(1, 5)
        ids = rng.sample(range(200), num_racks * per_rack)
        brokers = [(b, f"rack-{i % num_racks}") for i, b in enumerate(ids)]
    else:
        ids = rng.sample(range(200), rng.randint(1, 16))
        names = [f"r{i}" for i in range(rng.randint(1, 6))]
        brokers = [(b, None if kind == "unracked" else rng.choice(names)) for b in ids]
    rng.shuffle(brokers)
    return kind, brokers


def test_fast_path_equals_the_literal_port():
    rng = random.Random(20261122)
    for _ in range(3000):
        _, brokers = random_cluster(rng)
        n = len(brokers)
        rf = rng.randint(1, n)
        n_partitions = rng.randint(1, 4 * n + 3)
        fixed = rng.choice([-1, -1, rng.randint(0, 3 * n)])
        start_pid = rng.choice([-1, 0, rng.randint(0, 5 * n)])
        seed = rng.random()
        got = assign_replicas(brokers, n_partitions, rf, fixed, start_pid, rng=random.Random(seed))
        assert got == kafka_literal(brokers, n_partitions, rf, fixed, start_pid, rand=random.Random(seed)), \
            (brokers, n_partitions, rf, fixed, start_pid, seed)


def test_add_partitions_equals_the_literal_add_path():
    rng = random.Random(11)
    for _ in range(1000):
        _, brokers = random_cluster(rng)
        rf = rng.randint(1, len(brokers))
        existing = assign_replicas(brokers, rng.randint(1, 20), rf, rng=rng)
        new_total = len(existing) + rng.randint(1, 20)
        ordered = sorted(brokers)
        start = max(0, next((i for i, (b, _) in enumerate(ordered) if b >= existing[0][0]), -1))
        assert add_partitions_assignment(existing, brokers, new_total) == \
            kafka_literal(ordered, new_total - len(existing), rf, start, len(existing))


def test_distribution_properties():
    """Kafka's checkReplicaDistribution over random clusters, under the preconditions Kafka's tests use:
    leaders even when the partition count is a multiple of the broker count; replicas even when, in addition,
    the first partition id is such a multiple and racks (if any) are equal-sized; rack spread always."""
    rng = random.Random(5)
    for _ in range(2000):
        kind, brokers = random_cluster(rng)
        n = len(brokers)
        rf = rng.randint(1, n)
        rack_of = {b: (r if r is not None else f"broker-{b}") for b, r in brokers}
        whole_blocks = rng.random() < 0.6
        n_partitions = n * rng.randint(1, 4) if whole_blocks else rng.randint(1, 4 * n)
        start_pid = n * rng.randint(0, 3) if rng.random() < 0.7 else rng.randint(0, 4 * n)
        got = assign_replicas(brokers, n_partitions, rf, start_partition_id=start_pid, rng=rng)
        assert sorted(got) == list(range(start_pid, start_pid + n_partitions))
        assert all(len(reps) == rf for reps in got.values())
        num_racks = len(set(rack_of.values()))
        spread = [len({rack_of[b] for b in reps}) for reps in got.values()]
        assert kind == "unracked" or spread == [min(rf, num_racks)] * n_partitions
        check_replica_distribution(
            got, rack_of, n, n_partitions, rf, verify_rack_aware=False,
            verify_leaders=n_partitions % n == 0,
            verify_replicas=n_partitions % n == 0 and start_pid % n == 0 and kind != "uneven")


# --- JSON out, broker list in -----------------------------------------------------------------


def test_format_assignment_json():
    text = format_assignment_json({10: [1, 2], 2: [2, 3], 0: (3, 1)})
    assert text == '{"version":1,"partitions":{"0":[3,1],"2":[2,3],"10":[1,2]}}'
    assert json.loads(format_assignment_json(assign_replicas(unracked(range(3)), 3, 2, 0)))["partitions"] == \
        {"0": [0, 1], "1": [1, 2], "2": [2, 0]}


def test_parse_broker_list():
    assert parse_broker_list("0:r1,1:r2,2") == [(0, "r1"), (1, "r2"), (2, None)]
    assert parse_broker_list(" 5 : us-east-1a , 3 ") == [(5, "us-east-1a"), (3, None)]
    assert parse_broker_list("7") == [(7, None)]


@pytest.mark.parametrize("text, message", [
    ("", "empty broker list"),
    ("   ", "empty broker list"),
    ("0,,1", "empty broker entry"),
    ("0,", "empty broker entry"),
    (":r1", "empty broker entry"),
    ("a:r1", "broker id 'a' is not a non-negative integer"),
    ("-1", "broker id '-1' is not a non-negative integer"),
    ("1.5", "broker id '1.5' is not a non-negative integer"),
    ("0:", "broker 0 has an empty rack"),
    ("0:r1,0:r2", "broker 0 is listed more than once"),
])
def test_parse_broker_list_errors(text, message):
    with pytest.raises(ValidationError, match="^" + message.replace(".", r"\.")):
        parse_broker_list(text)
