"""Replica placement against the worked outputs of the seeds (001: rack-unaware and a two-rack
example; 004: three racks). The seeds' outputs used random startIndex/nextReplicaShift; the
parameters below (each in range(len(brokers)), as Kafka draws them) reproduce them exactly."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator.placement import (
    assign_replicas_to_brokers,
    assign_replicas_to_brokers_rack_aware,
    place,
    rack_alternated_broker_list,
)

BROKERS = [0, 1, 2, 3]


def as_lists(assignment: dict[int, list[int]]) -> list[list[int]]:
    return [assignment[p] for p in sorted(assignment)]


def test_seed_001_three_partitions():
    assert as_lists(assign_replicas_to_brokers(BROKERS, 3, 3, start_index=3, next_replica_shift=2)) == [
        [3, 2, 0], [0, 3, 1], [1, 0, 2]]


def test_seed_001_five_partitions():
    assert as_lists(assign_replicas_to_brokers(BROKERS, 5, 3, start_index=3, next_replica_shift=1)) == [
        [3, 1, 2], [0, 2, 3], [1, 3, 0], [2, 0, 1], [3, 2, 0]]


def test_seed_001_nine_partitions_shift_moves_after_a_full_round():
    assert as_lists(assign_replicas_to_brokers(BROKERS, 9, 3, start_index=1, next_replica_shift=2)) == [
        [1, 0, 2], [2, 1, 3], [3, 2, 0], [0, 3, 1], [1, 2, 3], [2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 3, 0]]


def test_seed_001_parameters_are_the_only_ones_in_kafkas_range():
    found = [(s, h) for s in range(4) for h in range(4)
             if as_lists(assign_replicas_to_brokers(BROKERS, 9, 3, s, h))[8] == [1, 3, 0]
             and as_lists(assign_replicas_to_brokers(BROKERS, 9, 3, s, h))[0] == [1, 0, 2]]
    assert found == [(1, 2)]


def test_seed_001_rack_example_two_racks():
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 4, 2, 5]
    # "partition 0 on broker 4, then 2, then 5; partition 1 on 2, then 5, then 0"
    got = as_lists(assign_replicas_to_brokers_rack_aware(racks, 2, 3, start_index=3, next_replica_shift=0))
    assert got == [[4, 2, 5], [2, 5, 0]]


def test_seed_004_three_racks():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    got = as_lists(assign_replicas_to_brokers_rack_aware(racks, 7, 3, start_index=0, next_replica_shift=0))
    assert got[0] == [0, 3, 1]
    # "six partitions fill the list once; partition 6 -> 0,4,2 (not 0,3,1 again)"
    assert [p[0] for p in got[:6]] == [0, 3, 1, 5, 4, 2]
    assert got[6] == [0, 4, 2]


def test_start_partition_id():
    whole = assign_replicas_to_brokers(BROKERS, 9, 3, 1, 2)
    tail = assign_replicas_to_brokers(BROKERS, 4, 3, 1, 2, start_partition_id=5)
    # Kafka recomputes the shift from the partition id only through the increments it sees.
    assert sorted(tail) == [5, 6, 7, 8]
    assert tail[5][0] == whole[5][0]


@settings(max_examples=200, deadline=None)
@given(
    n_racks=st.integers(1, 5), per_rack=st.lists(st.integers(1, 4), min_size=5, max_size=5),
    rf=st.integers(1, 6), partitions=st.integers(1, 40), seed=st.integers(0, 2**32),
)
def test_rack_aware_property(n_racks, per_rack, rf, partitions, seed):
    racks: dict[int, str] = {}
    bid = 0
    for r in range(n_racks):
        for _ in range(per_rack[r]):
            racks[bid] = f"r{r}"
            bid += 1
    if rf > len(racks):
        return
    rng = random.Random(seed)
    got = assign_replicas_to_brokers_rack_aware(racks, partitions, rf, rng.randrange(len(racks)),
                                                rng.randrange(len(racks)))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas))
        used = [racks[b] for b in replicas]
        # Distinct racks while RF <= racks; otherwise every rack has a replica.
        assert len(set(used)) == min(rf, n_racks)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 12), rf=st.integers(1, 12), partitions=st.integers(1, 50), seed=st.integers(0, 2**32))
def test_rack_unaware_property(n, rf, partitions, seed):
    if rf > n:
        return
    got = place(random.Random(seed), list(range(n)), {}, partitions, rf)
    for replicas in got.values():
        assert len(set(replicas)) == rf
    leaders = [r[0] for r in got.values()]
    # Leaders go round-robin: no broker leads more than ceil(partitions / n).
    assert max(leaders.count(b) for b in set(leaders)) <= -(-partitions // n)
