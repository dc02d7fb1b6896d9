"""One fixed event of each payload kind (fixed ids and times, never random)."""
from __future__ import annotations

from schemas import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ClientRequest, ConfigChange, ConfigResourceType,
    ControllerChange, ControllerEvent, ElectionType, FeatureLevelChange, OffsetSample, PartitionChange, PartitionChangeKind, PartitionState, ReplicaOffset, SourceKind,
    SourcePosition, TopicChange, TopicChangeKind, UnknownRecord,
)
from schemas.archive.chain import Chain
from schemas.event_ids import event_id

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TOPIC_ID = "vHJ9Vt4bQe2WfT3nD1xN0A"

S_BEFORE = PartitionState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=4, partition_epoch=9)
S_AFTER = PartitionState(replicas=(1, 2, 3), isr=(2, 3), leader=2, leader_epoch=5, partition_epoch=10)

PAYLOADS = {
    "ControllerChange": ControllerChange(leader_id=2, epoch=7, previous_leader_id=1, previous_epoch=6,
                                         voters=(1, 2, 3), granting_voters=(2, 3)),
    "BrokerChange": BrokerChange(
        broker_id=3, kind=BrokerChangeKind.FENCED,
        before=BrokerState(3, 120, fenced=False, incarnation_id="Zm9vYmFyYmF6cXV4cXV1eA", rack="r1",
                           endpoints=("PLAINTEXT://127.0.0.1:9392",)),
        after=BrokerState(3, 120, fenced=True, incarnation_id="Zm9vYmFyYmF6cXV4cXV1eA", rack="r1",
                          endpoints=("PLAINTEXT://127.0.0.1:9392",)),
    ),
    "TopicChange": TopicChange(kind=TopicChangeKind.CREATED, topic="orders", topic_id=TOPIC_ID),
    "PartitionChange": PartitionChange(
        topic="orders", topic_id=TOPIC_ID, partition=7, before=S_BEFORE, after=S_AFTER,
        changes=(PartitionChangeKind.LEADER, PartitionChangeKind.ISR), election=ElectionType.CLEAN,
        reason="broker 1 fenced",
    ),
    "ConfigChange": ConfigChange(resource_type=ConfigResourceType.TOPIC, resource_name="orders",
                                 name="min.insync.replicas", value="2", previous_value=None),
    "FeatureLevelChange": FeatureLevelChange(feature="metadata.version", level=21, previous_level=20),
    "OffsetSample": OffsetSample(
        topic="orders", partition=7, leader=2, leader_epoch=5, high_watermark=1000, hw_time_ms=1_700_000_000_100,
        replicas=(ReplicaOffset(2, 1010, 1_700_000_000_101), ReplicaOffset(3, 1000, 1_700_000_000_102),
                  ReplicaOffset(1, -1, 1_700_000_000_103)),
    ),
    "CaptureGap": CaptureGap(from_offset=500, to_offset=899, reason="segment deleted before it was read"),
    "UnknownRecord": UnknownRecord(api_key=99, version=0, data=b"\x01\x63\x00", reason="unknown apiKey 99"),
    "ClientRequest": ClientRequest(
        log="kafka.authorizer.logger", form="standard-authorizer", level="INFO", principal="User:mallory",
        api="DeleteTopics", api_key=20, host="10.0.9.9", outcome="denied", operation="DELETE",
        resources=("Topic:LITERAL:orders", "Topic:LITERAL:pay:ments"), rule="DefaultDeny", ref_count=1,
        error_codes=(29,), forwarded=True, body='{"topics": ["orders"]}'),
}


def sample_event(kind: str, offset: int = 1234) -> ControllerEvent:
    """An unchained event (seq 0, no hashes) with a fixed envelope and the payload of `kind`."""
    source = SourcePosition(SourceKind.KRAFT_LOG, offset=offset, index=0, node_id=1,
                            file="00000000000000000000.log")
    return ControllerEvent(
        event_id=event_id(CLUSTER, source), cluster_id=CLUSTER, seq=0, source=source,
        event_time_ms=1_700_000_000_000, capture_time_ms=1_700_000_000_250, controller_id=2,
        controller_epoch=7, payload=PAYLOADS[kind], metadata_version=21,
    )


def chained_history() -> list[ControllerEvent]:
    """All nine kinds, chained in a fixed order."""
    chain = Chain(CLUSTER)
    return [chain.append(sample_event(kind, offset=1000 + i)) for i, kind in enumerate(PAYLOADS)]
