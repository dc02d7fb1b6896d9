"""Replica placement: Kafka's AdminUtils.assignReplicasToBrokers, rack-unaware and rack-aware.

Kafka draws `startIndex` and `nextReplicaShift` at random (or both = fixedStartIndex); here they
are parameters, so the simulator draws them from its seeded RNG and tests can reproduce the worked
outputs of the seeds exactly.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def _check(n_partitions: int, replication_factor: int, n_brokers: int) -> None:
    if n_partitions <= 0:
        raise ValueError("number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise ValueError("replication factor must be larger than 0")
    if replication_factor > n_brokers:
        raise ValueError(f"replication factor: {replication_factor} larger than available brokers: {n_brokers}")


def _each_partition(n: int, n_partitions: int, start_index: int, next_replica_shift: int, start_partition_id: int,
                    replicas: Callable[[int, int], list[int]]) -> dict[int, list[int]]:
    """Kafka's walk over the new partitions: partition id -> replicas(first, shift), where `first` is the index
    of its first replica among the `n` brokers and `shift` grows by one each time the ids pass a multiple of `n`."""
    ret: dict[int, list[int]] = {}
    current = max(0, start_partition_id)
    shift = next_replica_shift
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        ret[current] = replicas((current + start_index) % n, shift)
        current += 1
    return ret


def assign_replicas_to_brokers(broker_list: Sequence[int], n_partitions: int, replication_factor: int,
                               start_index: int, next_replica_shift: int,
                               start_partition_id: int = 0) -> dict[int, list[int]]:
    """Rack-unaware placement: partition id -> replicas (replicas[0] is the preferred leader)."""
    n = len(broker_list)
    _check(n_partitions, replication_factor, n)

    def replicas(first: int, shift: int) -> list[int]:
        return [broker_list[first], *(broker_list[_replica_index(first, shift, j, n)]
                                      for j in range(replication_factor - 1))]
    return _each_partition(n, n_partitions, start_index, next_replica_shift, start_partition_id, replicas)


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered by taking one from each rack in turn (racks sorted, brokers sorted per rack)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    iterators = {rack: iter(sorted(bs)) for rack, bs in by_rack.items()}
    racks = sorted(iterators)
    result: list[int] = []
    i = 0
    while len(result) < len(broker_racks):
        b = next(iterators[racks[i]], None)
        if b is not None:
            result.append(b)
        i = (i + 1) % len(racks)
    return result


def assign_replicas_to_brokers_rack_aware(broker_racks: Mapping[int, str], n_partitions: int,
                                          replication_factor: int, start_index: int, next_replica_shift: int,
                                          start_partition_id: int = 0) -> dict[int, list[int]]:
    """Rack-aware placement: each replica goes to a rack without one yet until every rack has one."""
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    _check(n_partitions, replication_factor, n)
    n_racks = len(set(broker_racks.values()))

    def replicas(first: int, shift: int) -> list[int]:
        leader = arranged[first]
        out = [leader]
        racks_with = {broker_racks[leader]}
        brokers_with = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * n_racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none, and a
                # broker that already has one while some broker has none.
                if ((rack not in racks_with or len(racks_with) == n_racks)
                        and (broker not in brokers_with or len(brokers_with) == n)):
                    out.append(broker)
                    racks_with.add(rack)
                    brokers_with.add(broker)
                    break
        return out
    return _each_partition(n, n_partitions, start_index, next_replica_shift, start_partition_id, replicas)


def place(
    rng: random.Random,
    brokers: Sequence[int],
    racks: Mapping[int, str | None],
    n_partitions: int,
    replication_factor: int,
) -> dict[int, list[int]]:
    """What Kafka does on topic creation: rack-aware if every broker has a rack, random start."""
    ordered = sorted(brokers)
    if ordered and all(racks.get(b) for b in ordered):
        by_rack = {b: racks[b] for b in ordered}
        n = len(ordered)
        return assign_replicas_to_brokers_rack_aware(
            # every broker has a rack here (the test above): by_rack's values are all str
            by_rack, n_partitions, replication_factor, rng.randrange(n), rng.randrange(n)  # type: ignore[arg-type]
        )
    n = len(ordered)
    return assign_replicas_to_brokers(ordered, n_partitions, replication_factor, rng.randrange(n), rng.randrange(n))
