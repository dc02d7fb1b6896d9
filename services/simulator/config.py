"""Simulator configuration and results."""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.archive.manifest import FileManifest
from schemas.archive.checkpoint import Checkpoint

# The invariant names of DESIGN §6 as the checks catalog spells them; inject=[(name, index)].
BREACHES = (
    "controller_epoch_monotonic", "election_safety", "leader_epoch_monotonic", "partition_epoch_monotonic",
    "leader_in_isr", "isr_elr_sanity", "fenced_broker_not_in_isr", "valid_high_watermark",
    "high_watermark_monotonic", "unclean_election_allowed", "reassignment_legal", "state_continuity",
    "distinct_replicas", "leader_election_order",
)


@dataclass(frozen=True)
class SimConfig:
    seed: int = 0
    brokers: int = 6
    racks: int = 3  # 0 = brokers have no rack
    topics: int = 8
    partitions: int = 12  # per topic
    replication_factor: int = 3
    events: int = 10_000  # exact length of the history
    metadata_version: int = 21  # 3.9-IV0
    elr: bool = False  # KIP-966 eligible leader replicas (needs metadata_version >= 23)
    min_insync_replicas: int = 2
    unclean_topic_fraction: float = 0.25  # topics created with unclean.leader.election.enable=true
    controllers: int = 3  # KRaft voters, node ids 3000..
    cluster_id: str | None = None  # default "sim-<seed>"
    start_time_ms: int = 1_735_689_600_000  # 2025-01-01T00:00:00Z
    mean_gap_ms: float = 40.0  # mean time between controller decisions / samples
    max_down_brokers: int | None = None  # default max(1, brokers // 4)
    topic_churn: bool = True  # create and delete topics while running
    # a ZooKeeper-mode cluster's history (services/simulator/journal.py): no metadata.version, brokers
    # registered or gone; every check runs with its ZooKeeper exemptions
    zookeeper: bool = False

    def __post_init__(self) -> None:
        if self.replication_factor > self.brokers:
            raise ValueError(f"replication factor {self.replication_factor} > brokers {self.brokers}")
        if self.zookeeper and self.elr:
            raise ValueError("a ZooKeeper-mode cluster has no ELR")
        if self.elr and self.metadata_version < 23:
            raise ValueError("ELR needs metadata_version >= 23 (4.0-IV1)")
        if self.events < 1 or self.topics < 1 or self.partitions < 1:
            raise ValueError("events, topics and partitions must be positive")

    @property
    def cluster(self) -> str:
        return self.cluster_id or f"sim-{self.seed}"


@dataclass(frozen=True)
class BreachRecord:
    """Ground truth of one injected breach: the event that breaks the invariant."""

    invariant: str
    seq: int
    event_id: str
    topic: str | None
    partition: int | None
    description: str
    # a breach of another invariant that the injection of `setup_for` needs before its own (ELR laundering
    # needs an ELR that could not exist): ground truth all the same, but not one of the injections asked for
    setup_for: str | None = None


@dataclass
class SimResult:
    config: SimConfig
    events: int = 0
    files: list[FileManifest] = field(default_factory=list)
    breaches: list[BreachRecord] = field(default_factory=list)
    not_injected: list[tuple[str, int]] = field(default_factory=list)  # requested but past the end
    chain_head_hash: str = ""
    checkpoint: Checkpoint | None = None  # the last one signed, when the archive was signed
    seconds: float = 0.0

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0
