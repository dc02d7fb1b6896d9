"""The znodes' JSON as the controller writes it: what each carries reaches the events, and a value Kafka would
refuse is one error naming it."""
from __future__ import annotations

import json

import pytest

from schemas.events import LeaderRecoveryState, PartitionChange
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import Op, Txn, znodes

TOPIC_ID = "2DFyH9nsQ722Pzh8c0PzYw"


def _states(*states: dict) -> list:
    """A topic created, then its partition 0's state znode written with each of `states` in turn."""
    n = ZooKeeperNormalizer("c", clock=lambda: 42)
    assignment = {"version": 3, "topic_id": TOPIC_ID, "partitions": {"0": [1, 3]}, "adding_replicas": {},
                  "removing_replicas": {}}
    out = n.feed(Txn(1, 0, 1, 1001, 5, (Op("create", "/brokers/topics/t", json.dumps(assignment).encode(), 0),),
                     "log.1"))
    for i, state in enumerate(states):
        kind = "create" if i == 0 else "setData"
        out += n.feed(Txn(1, 0, 2 + i, 1002 + i, 5, (Op(kind, "/brokers/topics/t/partitions/0/state",
                                                        json.dumps(state).encode(), i),), "log.1"))
    return [e.payload.after for e in out if isinstance(e.payload, PartitionChange) and e.payload.after]


def test_an_unclean_elections_recovering_state_is_kept():
    """Kafka 3.2+ in ZooKeeper mode writes "leader_recovery_state": 1 after an unclean election (as a real 3.9
    cluster's transaction log holds it) and leaves the key out once the leader recovered."""
    after = _states({"controller_epoch": 2, "leader": -1, "version": 1, "leader_epoch": 2, "isr": [1]},
                    {"controller_epoch": 2, "leader": 3, "version": 1, "leader_recovery_state": 1,
                     "leader_epoch": 3, "isr": [3]},
                    {"controller_epoch": 2, "leader": 3, "version": 1, "leader_epoch": 3, "isr": [3, 1]})
    assert [(s.leader, s.isr, s.leader_recovery_state) for s in after] == [
        (-1, (1,), LeaderRecoveryState.RECOVERED), (3, (3,), LeaderRecoveryState.RECOVERING),
        (3, (3, 1), LeaderRecoveryState.RECOVERED)]


@pytest.mark.parametrize("value", [2, -1, "1", 1.5])
def test_a_recovery_state_kafka_would_refuse_is_named(value):
    with pytest.raises(znodes.ZnodeError, match="leader_recovery_state"):
        znodes.leader_and_isr({"leader": 3, "leader_epoch": 3, "isr": [3], "leader_recovery_state": value})
