"""The checks an event must pass against the image before it is applied.

Shared by the pure `apply` and the fast `ImageBuilder` so both refuse exactly the same events.
Each check takes the current values (looked up by the caller) and returns a reason string when the
event does not fit, or None. Bootstrap events describe state, so they skip the "before" checks.
"""
from __future__ import annotations

from schemas.events import (
    BrokerChange,
    BrokerChangeKind,
    BrokerState,
    ControllerEvent,
    PartitionChange,
    PartitionState,
    TopicChange,
    TopicChangeKind,
)
from schemas.state.errors import ReplayError

_PARTITION_FIELDS = (
    "leader", "leader_epoch", "partition_epoch", "isr", "replicas", "adding_replicas",
    "removing_replicas", "elr", "last_known_elr", "leader_recovery_state",
)
_BROKER_FIELDS = ("epoch", "fenced", "in_controlled_shutdown", "rack", "incarnation_id", "endpoints")


def error(event: ControllerEvent, reason: str, partition: str | None = None) -> ReplayError:
    return ReplayError(
        reason, seq=event.seq, event_id=event.event_id, source_offset=event.source.offset,
        partition=partition, record_type=type(event.payload).__name__,
    )


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def mismatch(prefix: str, stated: object, current: object, fields: tuple[str, ...]) -> str:
    """`before.leader_epoch=4 but image has 5; before.isr=[1, 2] but image has [1]`."""
    parts = []
    for name in fields:
        s, c = getattr(stated, name), getattr(current, name)
        if s != c:
            parts.append(f"{prefix}.{name}={_show(s)} but image has {_show(c)}")
    return "; ".join(parts)


def check_envelope(event: ControllerEvent, cluster_id: str | None, image_seq: int) -> str | None:
    if cluster_id is not None and event.cluster_id != cluster_id:
        return f"event of cluster {event.cluster_id!r} applied to the image of cluster {cluster_id!r}"
    if image_seq >= 0 and event.seq != image_seq + 1:
        if event.seq <= image_seq:
            return f"seq {event.seq} is not after the image's seq {image_seq} (replayed twice or out of order)"
        return f"seq gap: image is at seq {image_seq}, event has seq {event.seq} ({event.seq - image_seq - 1} missing)"
    return None


def check_partition(
    event: ControllerEvent, pc: PartitionChange, topic_name: str | None, current: PartitionState | None,
) -> str | None:
    """`topic_name` is the image's name for pc.topic_id (None: topic unknown)."""
    if pc.before is None and pc.after is None:
        return "partition change with neither before nor after state"
    if event.bootstrap:
        return None
    if topic_name is None:
        return f"topic id {pc.topic_id} ({pc.topic}) is not in the image"
    if topic_name != pc.topic:
        return f"topic id {pc.topic_id} is named {topic_name!r} in the image but {pc.topic!r} in the event"
    if pc.before is None:
        if current is not None:
            return f"partition created but the image already has it ({current.describe()})"
        return None
    if current is None:
        return f"partition is not in the image (before.leader_epoch={pc.before.leader_epoch})"
    if current != pc.before:
        return mismatch("before", pc.before, current, _PARTITION_FIELDS)
    return None


_VERB = {
    BrokerChangeKind.FENCED: "fence", BrokerChangeKind.UNFENCED: "unfence",
    BrokerChangeKind.CONTROLLED_SHUTDOWN: "start controlled shutdown of",
    BrokerChangeKind.UNREGISTERED: "unregister", BrokerChangeKind.UPDATED: "update",
    BrokerChangeKind.REGISTERED: "register", BrokerChangeKind.UNKNOWN: "change",
}


def check_broker(event: ControllerEvent, bc: BrokerChange, current: BrokerState | None) -> str | None:
    verb = _VERB[bc.kind]
    if bc.kind is BrokerChangeKind.UNREGISTERED:
        if bc.after is not None:
            return f"broker {bc.broker_id} unregistered but the event carries an after state"
    elif bc.after is None:
        return f"tried to {verb} broker {bc.broker_id} without an after state"
    if event.bootstrap:
        return None
    stated = bc.before
    if stated is None:
        if current is not None and bc.kind is not BrokerChangeKind.REGISTERED:
            return f"tried to {verb} broker {bc.broker_id} as unregistered but it is registered at epoch {current.epoch}"
        return None
    if current is None:
        return f"tried to {verb} broker {bc.broker_id} at epoch {stated.epoch} but it is not registered"
    if stated.epoch != current.epoch:
        return (f"tried to {verb} broker {bc.broker_id} at epoch {stated.epoch} "
                f"but registered epoch is {current.epoch}")
    if stated != current:
        return mismatch("before", stated, current, _BROKER_FIELDS)
    return None


def check_topic(
    event: ControllerEvent, tc: TopicChange, name_of_id: str | None, id_of_name: str | None,
) -> str | None:
    """`name_of_id`: the image's name for tc.topic_id; `id_of_name`: the image's id for tc.topic."""
    if tc.kind is TopicChangeKind.CREATED:
        if event.bootstrap and name_of_id in (None, tc.topic):
            return None
        if name_of_id is not None:
            return f"topic id {tc.topic_id} created but the image already has it as {name_of_id!r}"
        if id_of_name is not None:
            return f"topic {tc.topic!r} created with id {tc.topic_id} but the image has it with id {id_of_name}"
        return None
    if tc.kind is TopicChangeKind.DELETED:
        if name_of_id is None and not event.bootstrap:
            return f"topic {tc.topic!r} (id {tc.topic_id}) deleted but it is not in the image"
        return None
    return f"topic change of kind {tc.kind.value} for {tc.topic!r} cannot be applied"
