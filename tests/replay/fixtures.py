"""Fixed fixtures in Kafka's TopicsImageTest style: DELTA1 events (one comment each) and IMAGE1.

Ids, offsets and times are fixed, never random.
"""
from __future__ import annotations

from immutables import Map

from schemas.events import (
    BrokerChange, BrokerChangeKind as BK, BrokerState, CaptureGap, ConfigChange, ConfigResourceType as CRT,
    ControllerChange, ControllerEvent, ElectionType as E, FeatureLevelChange, LeaderRecoveryState,
    OffsetSample, PartitionChange, PartitionChangeKind as K, PartitionState as PS, ReplicaOffset,
    SourceKind, SourcePosition, TopicChange, TopicChangeKind as TK, UnknownRecord,
)
from schemas.state.image import (
    CaptureGapSeen, ClusterImage, ControllerImage, Provenance, TopicImage, TopicsImage,
)

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
ORDERS = "yH3Ir3xNQxqgO8Fh6K2Lsw"
AUDIT = "b7ZJ0m3dR7mq1D6sYk4Wcg"

B1 = BrokerState(1, 10, fenced=False, rack="a")
B2 = BrokerState(2, 11, fenced=False, rack="b")
B3 = BrokerState(3, 12, fenced=False, rack="a")
B3_FENCED = BrokerState(3, 12, fenced=True, rack="a")

O0_CREATED = PS((1, 2, 3), (1, 2, 3), 1, 0, 0)
O0_SHRUNK = PS((1, 2, 3), (1, 2), 1, 0, 1)
O0_MOVED = PS((1, 2, 3), (1, 2), 2, 1, 2)
O1_CREATED = PS((2, 3, 1), (2, 3, 1), 2, 0, 0)
A0_CREATED = PS((3, 1), (3, 1), 3, 0, 0)


def ev(seq: int, payload: object, offset: int | None = None, *, index: int = 0, bootstrap: bool = False,
       controller: tuple[int, int] = (3000, 7), time: int | None = None) -> ControllerEvent:
    off = 1000 + 10 * seq if offset is None else offset
    return ControllerEvent(
        event_id=f"{seq:032x}", cluster_id=CLUSTER, seq=seq,
        source=SourcePosition(SourceKind.KRAFT_LOG, off, index),
        event_time_ms=1_700_000_000_000 + 1000 * seq if time is None else time,
        capture_time_ms=1_700_000_000_500 + 1000 * seq, controller_id=controller[0],
        controller_epoch=controller[1], payload=payload, metadata_version=21, bootstrap=bootstrap,
    )


DELTA1 = [
    ev(0, ControllerChange(3000, 7, -1, -1, (3000, 3001, 3002), (3000, 3001))),  # controller 3000 wins epoch 7
    ev(1, FeatureLevelChange("metadata.version", 21)),  # metadata.version 3.9-IV0
    ev(2, BrokerChange(1, BK.REGISTERED, None, B1)),  # broker 1 registers, epoch 10
    ev(3, BrokerChange(2, BK.REGISTERED, None, B2)),  # broker 2 registers, epoch 11
    ev(4, BrokerChange(3, BK.REGISTERED, None, B3)),  # broker 3 registers, epoch 12
    ev(5, TopicChange(TK.CREATED, "orders", ORDERS)),  # topic orders created
    ev(6, ConfigChange(CRT.TOPIC, "orders", "min.insync.replicas", "2"), index=1),  # orders min ISR 2
    ev(7, PartitionChange("orders", ORDERS, 0, None, O0_CREATED, (K.CREATE,))),  # orders-0 on 1,2,3
    ev(8, PartitionChange("orders", ORDERS, 1, None, O1_CREATED, (K.CREATE,))),  # orders-1 on 2,3,1
    ev(9, BrokerChange(3, BK.FENCED, B3, B3_FENCED)),  # broker 3 fenced
    ev(10, PartitionChange("orders", ORDERS, 0, O0_CREATED, O0_SHRUNK, (K.ISR,))),  # orders-0 isr 1,2,3 -> 1,2
    ev(11, PartitionChange("orders", ORDERS, 0, O0_SHRUNK, O0_MOVED, (K.LEADER,), E.CLEAN)),  # leader 1 -> 2
    ev(12, TopicChange(TK.CREATED, "audit", AUDIT)),  # topic audit created
    ev(13, PartitionChange("audit", AUDIT, 0, None, A0_CREATED, (K.CREATE,))),  # audit-0 on 3,1
    ev(14, OffsetSample("orders", 0, 2, 1, 50, 1_700_000_014_000,
                        (ReplicaOffset(2, 50, 1), ReplicaOffset(1, 50, 1)))),  # a sample: no state change
    ev(15, CaptureGap(1150, 1155, "segment deleted before read")),  # a gap is remembered
    ev(16, UnknownRecord(99, 0, b"\x01", "unknown apiKey 99")),  # an unknown record is counted
    ev(17, ConfigChange(CRT.TOPIC, "audit", "unclean.leader.election.enable", "true")),  # audit allows unclean
    ev(18, TopicChange(TK.DELETED, "audit", AUDIT)),  # audit deleted: partitions and configs go too
    ev(19, ControllerChange(3001, 8, 3000, 7, (3000, 3001, 3002)), controller=(3001, 8)),  # failover to 3001
]

IMAGE1 = ClusterImage(
    cluster_id=CLUSTER,
    provenance=Provenance(19, f"{19:032x}", 1190, 0, 1_700_000_019_000, 3001, 8),
    controller=ControllerImage(3001, 8, (3000, 3001, 3002)),
    brokers=Map({1: B1, 2: B2, 3: B3_FENCED}),
    topics=TopicsImage(
        by_id=Map({ORDERS: TopicImage("orders", ORDERS, Map({0: O0_MOVED, 1: O1_CREATED}))}),
        by_name=Map({"orders": ORDERS}),
    ),
    configs=Map({(CRT.TOPIC, "orders"): Map({"min.insync.replicas": "2"})}),
    features=Map({"metadata.version": 21}),
    gaps=(CaptureGapSeen(15, 1150, 1155, "segment deleted before read"),),
    unknown_records=1,
)

# DELTA2 continues DELTA1 (seq 20-23) for the query tests.
O1_OFFLINE = PS((2, 3, 1), (2,), -1, 1, 1)
O1_UNCLEAN = PS((2, 3, 1), (3,), 3, 2, 2, leader_recovery_state=LeaderRecoveryState.RECOVERING)
O0_REASSIGN = PS((1, 2, 4, 3), (1, 2), 2, 1, 3, adding_replicas=(4,), removing_replicas=(3,))
DELTA2 = [
    ev(20, PartitionChange("orders", ORDERS, 1, O1_CREATED, O1_OFFLINE, (K.LEADER, K.ISR), E.UNKNOWN)),  # orders-1 offline
    ev(21, ConfigChange(CRT.BROKER, "", "unclean.leader.election.enable", "true")),  # cluster allows unclean
    ev(22, PartitionChange("orders", ORDERS, 1, O1_OFFLINE, O1_UNCLEAN, (K.LEADER, K.ISR, K.RECOVERY_STATE),
                           E.UNCLEAN)),  # 3 elected uncleanly
    ev(23, PartitionChange("orders", ORDERS, 0, O0_MOVED, O0_REASSIGN, (K.REPLICAS, K.REASSIGNMENT_START))),  # move 3 -> 4
]
