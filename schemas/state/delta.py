"""`ImageBuilder`: a mutable delta over a base image for folding long histories fast.

Kafka's MetadataDelta pattern: `replay(event)` records changes in plain dicts layered over the
base image's persistent maps, `apply()` returns a new immutable image sharing everything that did
not change. It refuses exactly what `schemas.state.apply.apply` refuses (same `schemas.state.rules`); tests prove
the fold through a builder equals the fold of `apply`, in any batching.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from immutables import Map

from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ClientRequest, ConfigChange, ConfigResourceType,
    ControllerChange, ControllerEvent, FeatureLevelChange, OffsetSample, PartitionChange, PartitionState, TopicChange,
    SourceKind, TopicChangeKind, UnknownRecord,
)
from schemas.state import rules
from schemas.state.apply import OnError, provenance_of, raise_error
from schemas.state.errors import ReplayError
from schemas.state.image import (
    EMPTY, CaptureGapSeen, ClusterImage, ConfigKey, ControllerImage, TopicImage, TopicsImage,
)

_MISSING: Any = object()


class _TopicDelta:
    """Changed partitions of one topic over its base map; None in `changed` = deleted."""

    __slots__ = ("name", "topic_id", "base", "changed")

    def __init__(self, name: str, topic_id: str, base: Map[int, PartitionState]) -> None:
        self.name = name
        self.topic_id = topic_id
        self.base = base
        self.changed: dict[int, PartitionState | None] = {}

    def get(self, partition: int) -> PartitionState | None:
        state = self.changed.get(partition, _MISSING)
        return self.base.get(partition) if state is _MISSING else state

    def finish(self) -> TopicImage:
        if not self.changed:
            return TopicImage(self.name, self.topic_id, self.base)
        m = self.base.mutate()
        for p, state in self.changed.items():
            if state is None:
                if p in m:
                    del m[p]
            else:
                m[p] = state
        return TopicImage(self.name, self.topic_id, m.finish())


class ImageBuilder:
    """Fold events onto `base`; call `apply()` for the immutable image. Not thread-safe."""

    def __init__(self, base: ClusterImage = EMPTY, on_error: OnError = raise_error) -> None:
        self.base = base
        self.on_error = on_error
        self._cluster_id = base.cluster_id
        self._seq = base.provenance.seq
        self._last: ControllerEvent | None = None
        self._controller = base.controller
        # Overlays on the base maps; None = removed.
        self._topics: dict[str, _TopicDelta | None] = {}
        self._names: dict[str, str | None] = {}
        self._brokers: dict[int, BrokerState | None] = {}
        self._configs: dict[ConfigKey, dict[str, str]] = {}
        self._features = dict(base.features)  # a handful: kept whole, read on every normalized event
        self._gaps: list[CaptureGapSeen] = []
        self._unknown = 0

    # --- folding ---------------------------------------------------------------------------

    def replay(self, event: ControllerEvent) -> ImageBuilder:
        lenient = event.bootstrap
        if event.seq != self._seq + 1 or event.cluster_id != self._cluster_id:
            reason = rules.check_envelope(event, self._cluster_id, self._seq)
            if reason is not None:
                self.on_error(rules.error(event, reason), event)
                lenient = True
        handler = _HANDLERS.get(type(event.payload))
        if handler is None:
            self.on_error(rules.error(event, f"unknown payload type {type(event.payload).__name__}"), event)
        else:
            try:
                handler(self, event, event.payload, lenient)
            except ReplayError as exc:
                self.on_error(exc, event)
                handler(self, event, event.payload, True)
        self._cluster_id = event.cluster_id
        self._seq = event.seq
        self._last = event
        return self

    def replay_all(self, events: Iterable[ControllerEvent]) -> ImageBuilder:
        # The usual event (the next seq of this cluster, a partition change, not bootstrap) skips
        # replay()'s envelope check and handler lookup: ~10% of the fold's time per event.
        partition, replay = self._partition, self.replay
        for event in events:
            payload = event.payload
            if (type(payload) is PartitionChange and event.seq == self._seq + 1
                    and event.cluster_id == self._cluster_id and not event.bootstrap):
                try:
                    partition(event, payload, False)
                except ReplayError as exc:
                    self.on_error(exc, event)
                    partition(event, payload, True)
                self._seq = event.seq
                self._last = event
            else:
                replay(event)
        return self

    # --- lookups over base + overlay ------------------------------------------------------

    def _topic_delta(self, topic_id: str) -> _TopicDelta | None:
        td = self._topics.get(topic_id, _MISSING)
        if td is _MISSING:
            base = self.base.topics.by_id.get(topic_id)
            if base is None:
                return None
            td = self._topics[topic_id] = _TopicDelta(base.name, topic_id, base.partitions)
        return td  # type: ignore[no-any-return]

    def _id_of_name(self, name: str) -> str | None:
        topic_id = self._names.get(name, _MISSING)
        return self.base.topics.by_name.get(name) if topic_id is _MISSING else topic_id

    # --- the working image of a normalizer --------------------------------------------------
    # services/normalize turns source records into events and applies each to its builder as it makes it:
    # the state it reads its "before" from is this image, so what it emits folds (replay) to what it saw.

    def put(self, event: ControllerEvent) -> None:
        """Apply an unchained event (seq 0, as a normalizer makes it) without the envelope and "before"
        checks: its before was read from this builder, so they hold by construction."""
        payload = event.payload
        if type(payload) is PartitionChange:  # most events: _partition's lenient branch, inlined
            td = self._topics.get(payload.topic_id, _MISSING)
            if td is _MISSING:
                td = self._topic_delta(payload.topic_id)
            if td is not None:
                td.changed[payload.partition] = payload.after
                self._last = event
                return
        _HANDLERS[type(payload)](self, event, payload, True)
        self._last = event

    def partition(self, topic_id: str, partition: int) -> PartitionState | None:
        td = self._topics.get(topic_id, _MISSING)  # (the normalizer's hot path: _topic_delta and get inlined)
        if td is _MISSING:
            td = self._topic_delta(topic_id)
        if td is None:
            return None
        state = td.changed.get(partition, _MISSING)
        return td.base.get(partition) if state is _MISSING else state  # type: ignore[no-any-return]

    def partitions_of(self, topic_id: str) -> list[int]:
        """The partition ids of a topic, ascending."""
        td = self._topic_delta(topic_id)
        return [] if td is None else _present(td.base.keys(), td.changed)

    def topic_ids(self) -> list[str]:
        """Ids of the topics the image holds, ascending."""
        return _present(self.base.topics.by_id.keys(), self._topics)

    def topic_id(self, name: str) -> str | None:
        """The id of the live topic of that name."""
        return self._id_of_name(name)

    def topic_name(self, topic_id: str) -> str | None:
        td = self._topics.get(topic_id, _MISSING)
        if td is _MISSING:
            td = self._topic_delta(topic_id)
        return None if td is None else td.name

    def broker(self, broker_id: int) -> BrokerState | None:
        state = self._brokers.get(broker_id, _MISSING)
        return self.base.brokers.get(broker_id) if state is _MISSING else state

    def broker_ids(self) -> list[int]:
        return sorted(b for b in {*self.base.brokers.keys(), *self._brokers} if self.broker(b) is not None)

    def configs_of(self, resource_type: ConfigResourceType, resource: str) -> dict[str, str]:
        """The config values of one resource, as the archive holds them (sensitive ones redacted)."""
        values = self._configs.get((resource_type, resource))
        return dict(self.base.configs.get((resource_type, resource), {}) if values is None else values)

    def config(self, resource_type: ConfigResourceType, resource: str, name: str) -> str | None:
        values = self._configs.get((resource_type, resource))
        return (self.base.configs.get((resource_type, resource), {}) if values is None else values).get(name)

    def config_resources(self, resource_type: ConfigResourceType) -> list[str]:
        """The resources of a type that hold at least one config value, ascending."""
        keys = {k for k in self.base.configs.keys() if k[0] is resource_type}
        keys |= {k for k in self._configs if k[0] is resource_type}
        return sorted(k[1] for k in keys if self.configs_of(*k))

    def feature(self, name: str) -> int | None:
        return self._features.get(name)

    @property
    def controller(self) -> ControllerImage:
        return self._controller

    # --- handlers, one per payload type ----------------------------------------------------

    def _partition(self, event: ControllerEvent, pc: PartitionChange, lenient: bool) -> None:
        td = self._topics.get(pc.topic_id, _MISSING)
        if td is _MISSING:
            td = self._topic_delta(pc.topic_id)
        if lenient:  # a normalizer's own event or a bootstrap: its after is the state, no "before" to check
            if td is not None:
                td.changed[pc.partition] = pc.after
                return
            current = None
        else:
            current = None if td is None else td.get(pc.partition)
        # Fast path: the usual event's before is the image's state.
        if not lenient and (td is None or pc.before is None or current != pc.before or td.name != pc.topic):
            reason = rules.check_partition(event, pc, None if td is None else td.name, current)
            if reason is not None:
                raise rules.error(event, reason, f"{pc.topic}-{pc.partition}")
        if td is None:
            if pc.after is None:
                return
            td = self._topics[pc.topic_id] = _TopicDelta(pc.topic, pc.topic_id, Map())
            self._names[pc.topic] = pc.topic_id
        td.changed[pc.partition] = pc.after

    def _broker(self, event: ControllerEvent, bc: BrokerChange, lenient: bool) -> None:
        current = self._brokers.get(bc.broker_id, _MISSING)
        if current is _MISSING:
            current = self.base.brokers.get(bc.broker_id)
        if not lenient:
            reason = rules.check_broker(event, bc, current)
            if reason is not None:
                raise rules.error(event, reason)
        self._brokers[bc.broker_id] = None if bc.kind is BrokerChangeKind.UNREGISTERED else bc.after

    def _topic(self, event: ControllerEvent, tc: TopicChange, lenient: bool) -> None:
        td = self._topic_delta(tc.topic_id)
        if tc.kind is TopicChangeKind.UNKNOWN and lenient:
            return
        if not lenient or tc.kind is TopicChangeKind.UNKNOWN:
            reason = rules.check_topic(event, tc, None if td is None else td.name, self._id_of_name(tc.topic))
            if reason is not None:
                raise rules.error(event, reason)
        if tc.kind is TopicChangeKind.CREATED:
            if td is None:
                self._topics[tc.topic_id] = _TopicDelta(tc.topic, tc.topic_id, Map())
                self._names[tc.topic] = tc.topic_id
            return
        if td is None:
            return
        self._topics[tc.topic_id] = None
        if self._id_of_name(td.name) == tc.topic_id:
            self._names[td.name] = None
        self._configs[(ConfigResourceType.TOPIC, td.name)] = {}

    def _controller_change(self, event: ControllerEvent, cc: ControllerChange, lenient: bool) -> None:
        self._controller = ControllerImage(cc.leader_id, cc.epoch, cc.voters)

    def _config(self, event: ControllerEvent, cfg: ConfigChange, lenient: bool) -> None:
        key = (cfg.resource_type, cfg.resource_name)
        values = self._configs.get(key)
        if values is None:
            values = self._configs[key] = dict(self.base.configs.get(key, {}))
        if cfg.value is None:
            values.pop(cfg.name, None)
        else:
            values[cfg.name] = cfg.value

    def _feature(self, event: ControllerEvent, f: FeatureLevelChange, lenient: bool) -> None:
        if f.level == 0:
            self._features.pop(f.feature, None)
        else:
            self._features[f.feature] = f.level

    def _sample(self, event: ControllerEvent, s: OffsetSample, lenient: bool) -> None:
        pass  # samples feed the HW checks; the controller's view does not change

    def _gap(self, event: ControllerEvent, gap: CaptureGap, lenient: bool) -> None:
        if event.source.kind is SourceKind.REQUEST_LOG:
            return  # lines of a request log not read: who asked may be there, the state is all read
        self._gaps.append(CaptureGapSeen(event.seq, gap.from_offset, gap.to_offset, gap.reason))

    def _unknown_record(self, event: ControllerEvent, u: UnknownRecord, lenient: bool) -> None:
        self._unknown += 1

    def _request(self, event: ControllerEvent, r: ClientRequest, lenient: bool) -> None:
        pass  # evidence of who asked: the controller's own records are the changes

    # --- the immutable result --------------------------------------------------------------

    def apply(self) -> ClusterImage:
        base = self.base
        if self._last is None:
            return base
        by_id = base.topics.by_id.mutate()
        for topic_id, td in self._topics.items():
            if td is None:
                if topic_id in by_id:
                    del by_id[topic_id]
            else:
                by_id[topic_id] = td.finish()
        by_name = _overlay(base.topics.by_name, self._names)
        configs = base.configs.mutate()
        for key, values in self._configs.items():
            if values:
                configs[key] = Map(values)
            elif key in configs:
                del configs[key]
        return ClusterImage(
            cluster_id=self._cluster_id,
            provenance=provenance_of(self._last),
            controller=self._controller,
            brokers=_overlay(base.brokers, self._brokers),
            topics=TopicsImage(by_id.finish(), by_name),
            configs=configs.finish(),
            features=Map(self._features),
            gaps=base.gaps + tuple(self._gaps),
            unknown_records=base.unknown_records + self._unknown,
        )


# One handler per payload type (a class-level table: bound methods held by the builder would make it a
# reference cycle, freed only by the cyclic GC together with every state it holds).
_HANDLERS: dict[type, Callable[[ImageBuilder, ControllerEvent, Any, bool], None]] = {
    PartitionChange: ImageBuilder._partition, BrokerChange: ImageBuilder._broker, TopicChange: ImageBuilder._topic,
    ControllerChange: ImageBuilder._controller_change, ConfigChange: ImageBuilder._config,
    FeatureLevelChange: ImageBuilder._feature, OffsetSample: ImageBuilder._sample, CaptureGap: ImageBuilder._gap,
    UnknownRecord: ImageBuilder._unknown_record, ClientRequest: ImageBuilder._request,
}


def _present(base_keys: Iterable[Any], overlay: dict[Any, Any]) -> list[Any]:
    """The keys of a base map with an overlay on it (None: removed), ascending."""
    keys = set(base_keys)
    for key, value in overlay.items():
        if value is None:
            keys.discard(key)
        else:
            keys.add(key)
    return sorted(keys)


def _overlay(base: Map[Any, Any], changes: dict[Any, Any]) -> Map[Any, Any]:
    if not changes:
        return base
    m = base.mutate()
    for key, value in changes.items():
        if value is None:
            if key in m:
                del m[key]
        else:
            m[key] = value
    return m.finish()


def fold(events: Iterable[ControllerEvent], start: ClusterImage = EMPTY, on_error: OnError = raise_error) -> ClusterImage:
    """The image after `events`, through one builder: equal to `schemas.state.apply.replay`, faster."""
    return ImageBuilder(start, on_error).replay_all(events).apply()
