"""The event contract of ctrlaudit: Avro schemas, the Python event model and the codec.

Everything else in the project depends on this package; it depends on nothing of ours.
"""
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ClientRequest, ConfigChange, ConfigResourceType,
    ControllerChange, ControllerEvent, ElectionType, FeatureLevelChange, LeaderRecoveryState, OffsetSample, PartitionChange,
    PartitionChangeKind, PartitionState, Payload, ReplicaOffset, SourceKind, SourcePosition, TopicChange,
    TopicChangeKind, UnknownRecord,
)
from schemas.errors import CodecError, ContractError

__all__ = [
    "BrokerChange", "BrokerChangeKind", "BrokerState", "CaptureGap", "ClientRequest", "CodecError", "ConfigChange",
    "ConfigResourceType", "ContractError", "ControllerChange", "ControllerEvent", "ElectionType",
    "FeatureLevelChange", "LeaderRecoveryState", "OffsetSample", "PartitionChange",
    "PartitionChangeKind", "PartitionState", "Payload", "ReplicaOffset", "SourceKind",
    "SourcePosition", "TopicChange", "TopicChangeKind", "UnknownRecord",
]
