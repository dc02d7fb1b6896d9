"""The pure `apply(image, event) -> image` and the fold `replay(events)`.

One handler per payload type, dispatched by `match`; an unknown payload type is an error, never
skipped (Kafka's MetadataDelta.replay does the same). Checks live in `schemas.state.rules`, shared with
the fast `schemas.state.delta.ImageBuilder`.

Errors go to `on_error(exc, event)`: the default raises. A handler that returns lets the event be
applied leniently, the way a bootstrap event is: its stated after-state is taken as the truth (so
a lost event costs one wrong "before", not the rest of the history).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from immutables import Map

from schemas.events import (
    BrokerChange, BrokerChangeKind, CaptureGap, ClientRequest, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, FeatureLevelChange, OffsetSample, PartitionChange, SourceKind, TopicChange, TopicChangeKind,
    UnknownRecord,
)
from schemas.state import rules
from schemas.state.errors import ReplayError
from schemas.state.image import (
    EMPTY, CaptureGapSeen, ClusterImage, ControllerImage, Provenance, TopicImage, TopicsImage,
)

OnError = Callable[[ReplayError, ControllerEvent], None]


def raise_error(exc: ReplayError, event: ControllerEvent) -> None:
    raise exc


def provenance_of(event: ControllerEvent) -> Provenance:
    return Provenance(
        seq=event.seq, event_id=event.event_id, source_offset=event.source.offset,
        source_index=event.source.index, event_time_ms=event.event_time_ms,
        controller_id=event.controller_id, controller_epoch=event.controller_epoch,
    )


def apply(image: ClusterImage, event: ControllerEvent, on_error: OnError = raise_error) -> ClusterImage:
    """The image after `event`. Pure: `image` is not changed."""
    lenient = False
    reason = rules.check_envelope(event, image.cluster_id, image.provenance.seq)
    if reason is not None:
        on_error(rules.error(event, reason), event)
        lenient = True
    try:
        body = _apply_payload(image, event, lenient or event.bootstrap)
    except ReplayError as exc:
        on_error(exc, event)
        body = _apply_payload(image, event, True)
    return replace(body, cluster_id=event.cluster_id, provenance=provenance_of(event))


def replay(
    events: Iterable[ControllerEvent], start: ClusterImage = EMPTY, on_error: OnError = raise_error,
) -> ClusterImage:
    """The fold of `apply` over `events`."""
    image = start
    for event in events:
        image = apply(image, event, on_error)
    return image


def _apply_payload(image: ClusterImage, event: ControllerEvent, lenient: bool) -> ClusterImage:
    match event.payload:
        case PartitionChange() as pc:
            return _partition(image, event, pc, lenient)
        case BrokerChange() as bc:
            return _broker(image, event, bc, lenient)
        case TopicChange() as tc:
            return _topic(image, event, tc, lenient)
        case ControllerChange() as cc:
            return replace(image, controller=ControllerImage(cc.leader_id, cc.epoch, cc.voters))
        case ConfigChange() as cfg:
            return _config(image, cfg)
        case FeatureLevelChange() as f:
            if f.level != 0:
                return replace(image, features=image.features.set(f.feature, f.level))
            if f.feature in image.features:  # level 0 = disabled: Kafka drops the feature
                return replace(image, features=image.features.delete(f.feature))
            return image
        case OffsetSample():
            return image  # samples feed the HW checks; the controller's view does not change
        case CaptureGap() as gap:
            if event.source.kind is SourceKind.REQUEST_LOG:
                return image  # lines of a request log not read: who asked may be there, the state is all read
            seen = CaptureGapSeen(event.seq, gap.from_offset, gap.to_offset, gap.reason)
            return replace(image, gaps=image.gaps + (seen,))
        case UnknownRecord():
            return replace(image, unknown_records=image.unknown_records + 1)
        case ClientRequest():
            return image  # evidence of who asked: the controller's own records are the changes
    if lenient:
        return image
    raise rules.error(event, f"unknown payload type {type(event.payload).__name__}")


def _partition(image: ClusterImage, event: ControllerEvent, pc: PartitionChange, lenient: bool) -> ClusterImage:
    topics = image.topics
    topic = topics.by_id.get(pc.topic_id)
    current = None if topic is None else topic.partitions.get(pc.partition)
    if not lenient:
        reason = rules.check_partition(event, pc, None if topic is None else topic.name, current)
        if reason is not None:
            raise rules.error(event, reason, f"{pc.topic}-{pc.partition}")
    if topic is None:
        if pc.after is None:
            return image
        # A bootstrap (or forced) event for a topic the image has not seen: the event names it.
        topic = TopicImage(pc.topic, pc.topic_id)
        topics = TopicsImage(topics.by_id, topics.by_name.set(pc.topic, pc.topic_id))
    if pc.after is None:
        parts = topic.partitions.delete(pc.partition) if pc.partition in topic.partitions else topic.partitions
    else:
        parts = topic.partitions.set(pc.partition, pc.after)
    by_id = topics.by_id.set(pc.topic_id, TopicImage(topic.name, topic.topic_id, parts))
    return replace(image, topics=TopicsImage(by_id, topics.by_name))


def _broker(image: ClusterImage, event: ControllerEvent, bc: BrokerChange, lenient: bool) -> ClusterImage:
    current = image.brokers.get(bc.broker_id)
    if not lenient:
        reason = rules.check_broker(event, bc, current)
        if reason is not None:
            raise rules.error(event, reason)
    if bc.after is None or bc.kind is BrokerChangeKind.UNREGISTERED:
        brokers = image.brokers.delete(bc.broker_id) if current is not None else image.brokers
    else:
        brokers = image.brokers.set(bc.broker_id, bc.after)
    return replace(image, brokers=brokers)


def _topic(image: ClusterImage, event: ControllerEvent, tc: TopicChange, lenient: bool) -> ClusterImage:
    topics = image.topics
    existing = topics.by_id.get(tc.topic_id)
    if tc.kind is TopicChangeKind.UNKNOWN and lenient:
        return image  # nothing to apply even when forced
    if not lenient or tc.kind is TopicChangeKind.UNKNOWN:
        reason = rules.check_topic(event, tc, None if existing is None else existing.name, topics.by_name.get(tc.topic))
        if reason is not None:
            raise rules.error(event, reason)
    if tc.kind is TopicChangeKind.CREATED:
        if existing is not None:
            return image
        by_id = topics.by_id.set(tc.topic_id, TopicImage(tc.topic, tc.topic_id))
        return replace(image, topics=TopicsImage(by_id, topics.by_name.set(tc.topic, tc.topic_id)))
    if existing is None:
        return image
    # Deleting a topic drops its partitions and its config overrides (Kafka's ConfigurationsDelta
    # does the same on RemoveTopicRecord).
    by_name = topics.by_name
    if by_name.get(existing.name) == tc.topic_id:
        by_name = by_name.delete(existing.name)
    key = (ConfigResourceType.TOPIC, existing.name)
    configs = image.configs.delete(key) if key in image.configs else image.configs
    return replace(image, topics=TopicsImage(topics.by_id.delete(tc.topic_id), by_name), configs=configs)


def _config(image: ClusterImage, cfg: ConfigChange) -> ClusterImage:
    key = (cfg.resource_type, cfg.resource_name)
    values = image.configs.get(key, Map())
    if cfg.value is None:
        values = values.delete(cfg.name) if cfg.name in values else values
    else:
        values = values.set(cfg.name, cfg.value)
    configs = image.configs.set(key, values) if len(values) else (
        image.configs.delete(key) if key in image.configs else image.configs)
    return replace(image, configs=configs)

