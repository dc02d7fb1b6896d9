"""The Python model of `ControllerEvent` (schemas/avro/controller_event.v2.avsc, the newest version).

Frozen, slotted dataclasses with tuples for lists, so an event (and every state it carries) can be
shared between images without copying. Field names and meanings are exactly those of the Avro
schema; `schemas.codec` converts between the two.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Union


class SourceKind(StrEnum):
    KRAFT_LOG = "KRAFT_LOG"
    KRAFT_SNAPSHOT = "KRAFT_SNAPSHOT"
    ZOOKEEPER = "ZOOKEEPER"
    BROKER_LOG = "BROKER_LOG"
    OFFSET_SAMPLER = "OFFSET_SAMPLER"
    SIMULATOR = "SIMULATOR"
    UNKNOWN = "UNKNOWN"
    REQUEST_LOG = "REQUEST_LOG"  # v2: a node's authorizer or request log (ClientRequest)


class BrokerChangeKind(StrEnum):
    REGISTERED = "REGISTERED"
    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    UNREGISTERED = "UNREGISTERED"
    UPDATED = "UPDATED"
    UNKNOWN = "UNKNOWN"


class TopicChangeKind(StrEnum):
    CREATED = "CREATED"
    DELETED = "DELETED"
    UNKNOWN = "UNKNOWN"


class LeaderRecoveryState(StrEnum):
    RECOVERED = "RECOVERED"
    RECOVERING = "RECOVERING"
    UNKNOWN = "UNKNOWN"


class PartitionChangeKind(StrEnum):
    CREATE = "CREATE"
    DELETE = "DELETE"
    LEADER = "LEADER"
    LEADER_EPOCH = "LEADER_EPOCH"
    ISR = "ISR"
    REPLICAS = "REPLICAS"
    REASSIGNMENT_START = "REASSIGNMENT_START"
    REASSIGNMENT_COMPLETE = "REASSIGNMENT_COMPLETE"
    REASSIGNMENT_CANCEL = "REASSIGNMENT_CANCEL"
    ELR = "ELR"
    RECOVERY_STATE = "RECOVERY_STATE"
    UNKNOWN = "UNKNOWN"


class ElectionType(StrEnum):
    NONE = "NONE"
    PREFERRED = "PREFERRED"
    CLEAN = "CLEAN"
    UNCLEAN = "UNCLEAN"
    ELR = "ELR"
    REASSIGNMENT = "REASSIGNMENT"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    UNKNOWN = "UNKNOWN"


class ConfigResourceType(StrEnum):
    TOPIC = "TOPIC"
    BROKER = "BROKER"
    BROKER_LOGGER = "BROKER_LOGGER"
    CLIENT_METRICS = "CLIENT_METRICS"
    GROUP = "GROUP"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class SourcePosition:
    kind: SourceKind
    offset: int
    index: int = 0
    node_id: int = -1
    zxid: int | None = None
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's registration: Kafka's LeaderAndIsr plus assignment, ELR and epochs."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED

    def diff(self, before: PartitionState | None) -> str:
        """`isr: [1, 2] -> [1], leader: 1 -> 2` — Kafka's PartitionRegistration.diff style."""
        if before is None:
            return "created " + self.describe()
        parts = []
        for name in _STATE_FIELDS:
            old, new = getattr(before, name), getattr(self, name)
            if old != new:
                parts.append(f"{name}: {_show(old)} -> {_show(new)}")
        return ", ".join(parts) if parts else "no change"

    def describe(self) -> str:
        return ", ".join(f"{name}={_show(getattr(self, name))}" for name in _STATE_FIELDS)


_STATE_FIELDS = (
    "leader", "isr", "replicas", "adding_replicas", "removing_replicas", "elr", "last_known_elr",
    "leader_epoch", "partition_epoch", "leader_recovery_state",
)


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True, slots=True)
class BrokerState:
    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool = False
    incarnation_id: str | None = None
    rack: str | None = None
    endpoints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ControllerChange:
    leader_id: int
    epoch: int
    previous_leader_id: int = -1
    previous_epoch: int = -1
    voters: tuple[int, ...] = ()
    granting_voters: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerChange:
    broker_id: int
    kind: BrokerChangeKind
    before: BrokerState | None
    after: BrokerState | None


@dataclass(frozen=True, slots=True)
class TopicChange:
    kind: TopicChangeKind
    topic: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class PartitionChange:
    topic: str
    topic_id: str
    partition: int
    before: PartitionState | None
    after: PartitionState | None
    changes: tuple[PartitionChangeKind, ...] = ()
    election: ElectionType = ElectionType.NONE
    reason: str | None = None


REDACTED = "[redacted]"  # the value the archive holds for a secret (`ConfigChange.redacted`), never the secret


@dataclass(frozen=True, slots=True)
class ConfigChange:
    resource_type: ConfigResourceType
    resource_name: str
    name: str
    value: str | None
    previous_value: str | None = None
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class FeatureLevelChange:
    feature: str
    level: int
    previous_level: int | None = None


@dataclass(frozen=True, slots=True)
class ReplicaOffset:
    broker_id: int
    log_end_offset: int
    time_ms: int


@dataclass(frozen=True, slots=True)
class OffsetSample:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    high_watermark: int
    hw_time_ms: int
    replicas: tuple[ReplicaOffset, ...]
    sample_order: str = "HW_THEN_LEO"


@dataclass(frozen=True, slots=True)
class CaptureGap:
    from_offset: int
    to_offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    api_key: int
    version: int
    data: bytes
    reason: str


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """v2: what one line of a node's authorizer or request log says about a request that changes controller
    state (services/requests). Evidence of who asked, not a change: the state model passes it through. None: the
    line does not hold the value."""
    log: str
    form: str
    level: str
    principal: str
    api: str | None = None
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    host: str | None = None
    listener: str | None = None
    security_protocol: str | None = None
    software_name: str | None = None
    software_version: str | None = None
    connection: str | None = None
    forwarded: bool | None = None
    outcome: str | None = None
    operation: str | None = None
    resources: tuple[str, ...] = ()  # <Type>:<PATTERN>:<name>
    rule: str | None = None
    ref_count: int | None = None
    error_codes: tuple[int, ...] = ()
    body: str | None = None  # JSON, sorted keys


Payload = Union[
    ControllerChange, BrokerChange, TopicChange, PartitionChange, ConfigChange,
    FeatureLevelChange, OffsetSample, CaptureGap, UnknownRecord, ClientRequest,
]

PAYLOAD_TYPES: tuple[type, ...] = (
    ControllerChange, BrokerChange, TopicChange, PartitionChange, ConfigChange,
    FeatureLevelChange, OffsetSample, CaptureGap, UnknownRecord, ClientRequest,
)

# ClientRequest's fields in schema order (the Avro record's, the codec's)
CLIENT_REQUEST_FIELDS: tuple[str, ...] = tuple(ClientRequest.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class ControllerEvent:
    """The envelope. `seq`, `prev_hash` and `hash` are assigned by `schemas.archive.chain.Chain`."""

    event_id: str
    cluster_id: str
    seq: int
    source: SourcePosition
    event_time_ms: int
    capture_time_ms: int
    controller_id: int
    controller_epoch: int
    payload: Payload
    metadata_version: int | None = None
    bootstrap: bool = False
    prev_hash: str = ""
    hash: str = ""

    @property
    def kind(self) -> str:
        return type(self.payload).__name__
