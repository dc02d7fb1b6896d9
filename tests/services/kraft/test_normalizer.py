"""KRaftNormalizer on synthetic logs: Kafka's merge rules, change kinds, election types."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.events import (
    BrokerChangeKind, ElectionType, LeaderRecoveryState, PartitionChangeKind as K, TopicChangeKind,
)
from services.kraft import LogReader
from services.kraft.normalizer import KRaftNormalizer
from services.kraft.batch import build_batch
from services.kraft.messages import CATALOGUE
from tests.services.normalize.logs import INC, T1, LogBuilder, broker, change, partition


def events_of(b: LogBuilder, tmp_path: Path):
    norm = KRaftNormalizer("c1", node_id=1, clock=lambda: 42)
    return norm.feed_all(LogReader(b.write(tmp_path / "00000000000000000000.log"))), norm


def base() -> LogBuilder:
    b = LogBuilder()
    b.leader_change(leader=2, epoch=1)                                          # 0 controller 2, epoch 1
    b.record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21)  # 1 3.9-IV0
    for bid in (1, 2, 3):
        broker(b, bid)                                                           # 2..4
    for bid in (1, 2, 3):
        b.record("BrokerRegistrationChangeRecord", 0, brokerId=bid, brokerEpoch=2 + bid - 1, fenced=-1)  # 5..7
    b.record("TopicRecord", 0, name="orders", topicId=T1)                        # 8
    partition(b, T1, 0, [1, 2, 3], [1, 2, 3], leader=1)                          # 9
    return b


def pcs(events):
    return [e.payload for e in events if e.kind == "PartitionChange"]


def test_envelope_carries_position_controller_and_version(tmp_path: Path) -> None:
    events, _ = events_of(base(), tmp_path)
    kinds = [e.kind for e in events]
    assert kinds == ["ControllerChange", "FeatureLevelChange"] + ["BrokerChange"] * 6 + ["TopicChange",
                                                                                          "PartitionChange"]
    create = events[-1]
    assert (create.source.offset, create.source.kind.value, create.controller_id, create.controller_epoch,
            create.metadata_version, create.capture_time_ms) == (9, "KRAFT_LOG", 2, 1, 21, 42)
    assert create.event_time_ms == 1_700_000_000_000 + 8 * 10
    assert create.payload.changes == (K.CREATE,) and create.payload.before is None


def test_isr_shrink_keeps_leader_epoch_and_bumps_partition_epoch(tmp_path: Path) -> None:
    b = base()
    change(b, T1, 0, isr=[1, 2])
    pc = pcs(events_of(b, tmp_path)[0])[-1]
    assert pc.before.isr == (1, 2, 3) and pc.after.isr == (1, 2)
    assert (pc.after.leader_epoch, pc.after.partition_epoch) == (0, 1)
    assert pc.changes == (K.ISR,) and pc.election is ElectionType.NONE


def test_leader_field_bumps_leader_epoch_even_when_unchanged(tmp_path: Path) -> None:
    b = base()
    change(b, T1, 0, leader=1)  # the controller's forced bump: Leader = current leader
    pc = pcs(events_of(b, tmp_path)[0])[-1]
    assert pc.after.leader == 1 and pc.after.leader_epoch == 1
    assert pc.changes == (K.LEADER_EPOCH,)


def test_clean_and_preferred_elections(tmp_path: Path) -> None:
    b = base()
    change(b, T1, 0, leader=2, isr=[2, 3])        # broker 1 gone: clean election of 2
    change(b, T1, 0, isr=[2, 3, 1])                # 1 back in sync
    change(b, T1, 0, leader=1)                     # back to the preferred replica
    clean, expand, preferred = pcs(events_of(b, tmp_path)[0])[-3:]
    assert clean.election is ElectionType.CLEAN and clean.changes == (K.LEADER, K.ISR)
    assert expand.election is ElectionType.NONE
    assert preferred.election is ElectionType.PREFERRED and preferred.after.leader_epoch == 2


def test_unclean_election_sets_recovering(tmp_path: Path) -> None:
    b = base()
    change(b, T1, 0, isr=[1])
    change(b, T1, 0, leader=3, isr=[3], leaderRecoveryState=1)
    pc = pcs(events_of(b, tmp_path)[0])[-1]
    assert pc.election is ElectionType.UNCLEAN
    assert pc.after.leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert K.RECOVERY_STATE in pc.changes


def test_reassignment_start_complete(tmp_path: Path) -> None:
    b = base()
    broker(b, 4)
    # move 1 -> 4: replicas = target + removing, adding = [4], removing = [1]
    change(b, T1, 0, replicas=[2, 3, 4, 1], addingReplicas=[4], removingReplicas=[1])
    change(b, T1, 0, isr=[1, 2, 3, 4])
    change(b, T1, 0, leader=2, replicas=[2, 3, 4], isr=[2, 3, 4], addingReplicas=[], removingReplicas=[])
    start, catch_up, complete = pcs(events_of(b, tmp_path)[0])[-3:]
    assert K.REASSIGNMENT_START in start.changes and start.after.leader_epoch == 0
    assert catch_up.changes == (K.ISR,)
    assert K.REASSIGNMENT_COMPLETE in complete.changes
    assert complete.election is ElectionType.REASSIGNMENT
    assert complete.after.replicas == (2, 3, 4) and complete.after.adding_replicas == ()


def test_reassignment_cancel(tmp_path: Path) -> None:
    b = base()
    broker(b, 4)
    change(b, T1, 0, replicas=[2, 3, 4, 1], addingReplicas=[4], removingReplicas=[1])
    change(b, T1, 0, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[])
    cancel = pcs(events_of(b, tmp_path)[0])[-1]
    assert K.REASSIGNMENT_CANCEL in cancel.changes


def test_fencing_and_controlled_shutdown(tmp_path: Path) -> None:
    b = base()
    b.record("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=2, inControlledShutdown=1)
    change(b, T1, 0, leader=2, isr=[2, 3])
    b.record("BrokerRegistrationChangeRecord", 0, brokerId=1, brokerEpoch=2, fenced=1)
    events, norm = events_of(b, tmp_path)
    shutdown, move, fence = events[-3:]
    assert shutdown.payload.kind is BrokerChangeKind.CONTROLLED_SHUTDOWN
    assert move.payload.election is ElectionType.CONTROLLED_SHUTDOWN
    assert fence.payload.kind is BrokerChangeKind.FENCED and fence.payload.after.fenced
    assert not fence.payload.after.in_controlled_shutdown
    assert norm.image.brokers[1].fenced


def test_remove_topic_deletes_every_partition_first(tmp_path: Path) -> None:
    b = base()
    partition(b, T1, 1, [2, 3, 1], [2, 3, 1], leader=2)
    b.record("RemoveTopicRecord", 0, topicId=T1)
    events, norm = events_of(b, tmp_path)
    tail = events[-3:]
    assert [e.kind for e in tail] == ["PartitionChange", "PartitionChange", "TopicChange"]
    assert [e.source.index for e in tail] == [0, 1, 2]
    assert all(e.payload.after is None and e.payload.changes == (K.DELETE,) for e in tail[:2])
    assert tail[2].payload.kind is TopicChangeKind.DELETED and tail[2].payload.topic == "orders"
    assert len({e.event_id for e in tail}) == 3
    assert not norm.image.partitions


def test_controller_failover(tmp_path: Path) -> None:
    b = base()
    b.leader_change(leader=3, epoch=2)
    change(b, T1, 0, isr=[1, 2], epoch=2)
    events, _ = events_of(b, tmp_path)
    cc, pc = events[-2:]
    assert (cc.payload.leader_id, cc.payload.epoch, cc.payload.previous_leader_id, cc.payload.previous_epoch) \
        == (3, 2, 2, 1)
    assert (pc.controller_id, pc.controller_epoch) == (3, 2)


def test_config_changes_and_redaction(tmp_path: Path) -> None:
    b = base()
    b.record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="unclean.leader.election.enable",
             value="true")
    b.record("ConfigRecord", 0, resourceType=4, resourceName="1", name="listener.name.sasl.jaas.config",
             value="secret stuff")
    b.record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="unclean.leader.election.enable",
             value=None)
    topic_set, secret, deleted = [e.payload for e in events_of(b, tmp_path)[0][-3:]]
    assert (topic_set.value, topic_set.previous_value, topic_set.redacted) == ("true", None, False)
    assert secret.redacted and secret.value == "[redacted]" and "secret" not in repr(secret)
    assert (deleted.value, deleted.previous_value) == (None, "true")


def test_metadata_transactions_are_buffered_and_aborts_dropped(tmp_path: Path) -> None:
    b = base()
    b.record("BeginTransactionRecord", 0, name="t1")
    change(b, T1, 0, isr=[1, 2])
    b.record("AbortTransactionRecord", 0, reason="test")
    b.record("BeginTransactionRecord", 0, name="t2")
    change(b, T1, 0, isr=[1, 3])
    b.record("EndTransactionRecord", 0)
    changes = pcs(events_of(b, tmp_path)[0])
    assert changes[-1].before.isr == (1, 2, 3) and changes[-1].after.isr == (1, 3)
    assert changes[-1].after.partition_epoch == 1  # the aborted change never happened


def test_change_for_unknown_partition_is_kept_as_unknown_record(tmp_path: Path) -> None:
    b = base()
    change(b, "AAAAAAAAAAAAAAAAAAAACQ", 0, isr=[1])
    last = events_of(b, tmp_path)[0][-1]
    assert last.kind == "UnknownRecord" and "unknown partition" in last.payload.reason


def test_controller_registrations_say_nothing_of_controller_state(tmp_path: Path) -> None:
    """RegisterControllerRecord and Kafka 4.4's UnregisterControllerRecord (apiKey 29) are decoded and
    emit nothing; a record type no Kafka release has (apiKey 120) is still kept as an UnknownRecord."""
    assert CATALOGUE[("UnregisterControllerRecord", 0)].api_key == 29
    b = base()
    b.record("RegisterControllerRecord", 0, controllerId=3000, incarnationId=INC, zkMigrationReady=False,
             endPoints=[{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093, "securityProtocol": 0}],
             features=[])
    b.record("UnregisterControllerRecord", 0, controllerId=3000)
    for sub in "abc":
        (tmp_path / sub).mkdir()
    events, _ = events_of(b, tmp_path / "a")
    expected, _ = events_of(base(), tmp_path / "b")
    assert [e.kind for e in events] == [e.kind for e in expected]

    unknown = base()
    unknown.batches.append(build_batch([(None, b"\x01\x78\x00\x00")], base_offset=unknown.offset, leader_epoch=1,
                                       timestamp=unknown.time))
    last = events_of(unknown, tmp_path / "c")[0][-1]
    assert last.kind == "UnknownRecord" and last.payload.api_key == 120


def test_rereading_the_same_offsets_emits_nothing(tmp_path: Path) -> None:
    path = base().write(tmp_path / "00000000000000000000.log")
    norm = KRaftNormalizer("c1")
    first = norm.feed_all(LogReader(path))
    assert first and norm.feed_all(LogReader(path)) == []


@pytest.mark.parametrize("field", ["isr", "replicas"])
def test_event_ids_are_deterministic(tmp_path: Path, field: str) -> None:
    b = base()
    change(b, T1, 0, **{field: [1, 2]})
    a = [e.event_id for e in events_of(b, tmp_path)[0]]
    again = [e.event_id for e in KRaftNormalizer("c1", node_id=3).feed_all(LogReader(tmp_path / "00000000000000000000.log"))]
    assert a == again and len(set(a)) == len(a)
