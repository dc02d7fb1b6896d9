"""The normalizer's working image: mutable, because it is private to one normalizer and is
rebuilt record by record; what leaves it is an immutable PartitionState/BrokerState."""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.events import BrokerState, PartitionState

@dataclass
class KRaftImage:
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    configs: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (type, resource, name)
    features: dict[str, int] = field(default_factory=dict)
    controller: int = -1
    epoch: int = -1
    leaders_by_epoch: dict[int, int] = field(default_factory=dict)
