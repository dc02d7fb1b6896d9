"""The normalizer's working image: mutable, because it is private to one normalizer and is
rebuilt record by record; what leaves it is an immutable PartitionState/BrokerState."""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.events import BrokerState, PartitionState

REDACTED = "[redacted]"
# Kafka's sensitive config types are PASSWORD; by name these are the ones that carry secrets.
_SENSITIVE = ("password", "secret", "sasl.jaas.config", "ssl.key", "credentials", "token")


def redact(name: str, value: str | None, previous: str | None) -> tuple[str | None, str | None, bool]:
    """Values of sensitive configs never reach the archive (the metadata shell's Strict mode)."""
    if any(s in name.lower() for s in _SENSITIVE):
        return (None if value is None else REDACTED), (None if previous is None else REDACTED), True
    return value, previous, False


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
