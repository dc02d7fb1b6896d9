"""The immutable controller image: what the controller knew as of one event.

A tree of frozen dataclasses over persistent maps (`immutables.Map`), so an image shares all
unchanged parts with the one before it and can be kept for every point of a history cheaply.
Modelled on Kafka's `image/` package (ClusterImage, TopicsImage, TopicImage, MetadataProvenance).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from immutables import Map

from schemas.events import BrokerState, ConfigResourceType, PartitionState

ConfigKey: TypeAlias = tuple[ConfigResourceType, str]
"""A config resource: (TOPIC, topic name) or (BROKER, broker id or "" for the cluster default)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """The last event an image reflects: answers say "as of seq/offset/time N" from this."""

    seq: int = -1
    event_id: str = ""
    source_offset: int = -1
    source_index: int = 0
    event_time_ms: int = -1
    controller_id: int = -1
    controller_epoch: int = -1

    def describe(self) -> str:
        return (f"seq {self.seq}, offset {self.source_offset}, time {self.event_time_ms}, "
                f"controller {self.controller_id} epoch {self.controller_epoch}")


@dataclass(frozen=True, slots=True)
class ControllerImage:
    """The active controller as the last ControllerChange announced it."""

    leader_id: int = -1
    epoch: int = -1
    voters: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Map[int, PartitionState] = field(default_factory=Map)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    """Topics by id, plus the name index Kafka keeps beside them."""

    by_id: Map[str, TopicImage] = field(default_factory=Map)
    by_name: Map[str, str] = field(default_factory=Map)

    def get_by_name(self, name: str) -> TopicImage | None:
        topic_id = self.by_name.get(name)
        return None if topic_id is None else self.by_id[topic_id]


@dataclass(frozen=True, slots=True)
class CaptureGapSeen:
    """A CaptureGap event as the image remembers it: a stretch of the source nobody read."""

    seq: int
    from_offset: int
    to_offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class ClusterImage:
    cluster_id: str | None = None
    provenance: Provenance = Provenance()
    controller: ControllerImage = ControllerImage()
    brokers: Map[int, BrokerState] = field(default_factory=Map)
    topics: TopicsImage = TopicsImage()
    # Config values by resource; a deleted key is absent (back to its default).
    configs: Map[ConfigKey, Map[str, str]] = field(default_factory=Map)
    features: Map[str, int] = field(default_factory=Map)
    gaps: tuple[CaptureGapSeen, ...] = ()
    unknown_records: int = 0

    @property
    def metadata_version(self) -> int | None:
        return self.features.get("metadata.version")

    @property
    def partitions(self) -> dict[tuple[str, int], PartitionState]:
        """Every partition's state by (topic id, partition), in that order (a flat view, built per call)."""
        return {(tid, p): state for tid in sorted(self.topics.by_id.keys())
                for p, state in sorted(self.topics.by_id[tid].partitions.items())}

    @property
    def topic_names(self) -> dict[str, str]:
        """Topic names by topic id (built per call)."""
        return {tid: t.name for tid, t in self.topics.by_id.items()}

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        t = self.topics.get_by_name(topic)
        return None if t is None else t.partitions.get(partition)

    def topic_configs(self, topic: str) -> Map[str, str]:
        return self.configs.get((ConfigResourceType.TOPIC, topic), _NO_CONFIGS)

    def broker_configs(self, broker: int | str = "") -> Map[str, str]:
        return self.configs.get((ConfigResourceType.BROKER, str(broker)), _NO_CONFIGS)

    def effective_topic_config(self, topic: str, name: str, default: str | None = None) -> str | None:
        """Topic override, else the cluster-wide broker default (`log.`-less names as Kafka maps
        min.insync.replicas and unclean.leader.election.enable one to one), else `default`."""
        value = self.topic_configs(topic).get(name)
        if value is None:
            value = self.broker_configs("").get(name)
        return default if value is None else value


_NO_CONFIGS: Map[str, str] = Map()
EMPTY = ClusterImage()
