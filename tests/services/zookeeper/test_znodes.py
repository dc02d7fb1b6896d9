"""The znodes' JSON as the readers keep it."""
from __future__ import annotations

import json

from services.zookeeper import znodes


def test_a_state_znode_keeps_its_leader_recovery_state():
    """A real Kafka 3.9.2 controller's write after an unclean election (tests/services/zookeeper/test_real_zookeeper.py,
    version 3 of /brokers/topics/zkscn-d/partitions/0/state): RECOVERING (1) until the leader recovered, which the
    ZooKeeper import and the live watch read from it."""
    d = json.loads('{"controller_epoch":2,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":3,'
                   '"isr":[2]}')
    got = znodes.leader_and_isr(d)
    assert got["leader_recovery_state"] == 1 and got["leader"] == 2 and got["leader_epoch"] == 3
    assert list(got["isr"]) == [2]
    assert "leader_recovery_state" not in znodes.leader_and_isr(
        json.loads('{"controller_epoch":2,"leader":2,"version":1,"leader_epoch":3,"isr":[2,1]}'))
