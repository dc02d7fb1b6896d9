"""What one line of a Kafka log can say about controller state: the kinds of evidence ``evidence`` reads a line into,
each holding only what the line states (a field it does not state stays ``None``)."""
from __future__ import annotations

from dataclasses import dataclass

from schemas.events import LeaderRecoveryState

Ints = tuple[int, ...]
# what lines state of one partition at one partition epoch, by Seen's field names (leader, isr, ...)
Stated = int | Ints | LeaderRecoveryState
Fields = dict[str, Stated]
# an assignment change as a record makes it: replicas, adding, removing (None: the record leaves it)
AssignmentChange = tuple[Ints | None, Ints | None, Ints | None]


def ints_of(fields: Fields, name: str) -> Ints:
    """The broker ids `fields` holds under `name` (a list field: isr, replicas, adding, ...)."""
    value = fields[name]
    if not isinstance(value, tuple):
        raise TypeError(f"{name} is not a list of broker ids: {value!r}")
    return value


def int_of(fields: Fields, name: str) -> int:
    """The number `fields` holds under `name` (leader, leader_epoch)."""
    value = fields[name]
    if not isinstance(value, int):
        raise TypeError(f"{name} is not a number: {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Seen:
    """A partition's LeaderAndIsr (and, when the line says it, its assignment) at one partition epoch.
    ``from_epoch`` set: a change stated as a difference, valid only on the state at that partition epoch."""
    topic: str
    partition: int
    partition_epoch: int
    topic_id: str | None = None
    leader: int | None = None
    leader_epoch: int | None = None
    isr: Ints | None = None
    replicas: Ints | None = None
    adding: Ints | None = None
    removing: Ints | None = None
    elr: Ints | None = None
    last_known_elr: Ints | None = None
    recovery: LeaderRecoveryState | None = None
    controller_epoch: int | None = None
    from_epoch: int | None = None
    # a leader's own ISR update (server.log): the ISR as the leader holds it, a set printed in its order, which a
    # ZooKeeper-mode controller wrote as the leader sent it but a KRaft controller orders itself; and no ELR, which
    # the same write may change where the cluster has eligible leader replicas
    leader_update: bool = False
    # the ISR printed from a Scala Set of more than four members (a broker's "Leader ... starts at"): its order is
    # the set's hash order, not the controller's, so another line must give the order
    isr_as_set: bool = False
    # the line states the epoch as its node applies it live, from the state it held before (a broker's "Skipped ...
    # since it is already the leader", a "Leader"/"Follower ... starts at" naming a previous leader, a leader's ISR
    # update): the change is not much older than the line. A restarted node's or a replaying controller's line is not
    prompt: bool = False


@dataclass(frozen=True, slots=True)
class ByTopicId:
    """A partition's state a line names by topic id only (a KRaft controller's ``Setting new leader for topicId X,
    partition P ... Previous partition: PartitionRegistration(...)``): ``seen.topic`` is empty, the normalizer knows
    the name from the topic's record."""
    topic_id: str
    seen: Seen


@dataclass(frozen=True, slots=True)
class Unnumbered:
    """A partition's LeaderAndIsr stated without its partition epoch: before Kafka 3.1 the ZooKeeper-mode
    controller's ``state changed to (Leader:..,ISR:..,LeaderEpoch:..,ControllerEpoch:..) after removing replica``
    has no ZkVersion. It says whether the controller wrote (the leader epoch moved on) but not which epoch."""
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: Ints


@dataclass(frozen=True, slots=True)
class Assigned:
    """ZooKeeper mode's assignment of one partition (the ``/brokers/topics/<t>`` znode): no partition epoch
    of its own, so it holds from the time of its line."""
    topic: str
    partition: int
    replicas: Ints
    adding: Ints = ()
    removing: Ints = ()
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class ControllerElected:
    node: int
    epoch: int


@dataclass(frozen=True, slots=True)
class TopicCreated:
    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    name: str
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class LiveBrokers:
    """A ZooKeeper-mode controller's cache of the registered brokers and their epochs (the czxids of their
    ``/brokers/ids`` znodes), complete at the time of the line."""
    epochs: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class BrokerRegistered:
    """A ZooKeeper-mode broker's own line once its ``/brokers/ids/<id>`` znode is created (KafkaZkClient, server.log,
    2.8-3.9: ``Registered broker 3 at path /brokers/ids/3 with addresses: ..., czxid (broker epoch): 134``). It
    comes before the controller reacts (elects it, then logs its cache), as the znode does in ZooKeeper's log."""
    broker: int
    epoch: int


@dataclass(frozen=True, slots=True)
class BrokersAdded:
    """A ZooKeeper-mode controller saw brokers register (``Newly added brokers: 3, deleted brokers: , bounced
    brokers: 2, all live brokers: 1,2,3``): it elects them next, and states their epochs only after."""
    added: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicConfigs:
    """A topic's config overrides, all of them, as a broker read them when it created a replica's log (LogManager,
    server.log, 2.8+: ``Created log for partition t-0 in /dir/t-0 with properties {k=v, ...}``, sorted, sensitive
    values ``(redacted)``): what allows an unclean election of that topic, which no other line states."""
    topic: str
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ElrEnabled:
    """A KRaft controller replayed ``eligible.leader.replicas.version`` at a level >= 1: partitions may have ELRs."""


@dataclass(frozen=True, slots=True)
class ZooKeeperController:
    """A line of a ZooKeeper-mode controller: its writes of the assignment znodes are all logged."""


@dataclass(frozen=True, slots=True)
class KRaftController:
    """A line of a KRaft controller (``[QuorumController id=N]``): it logs at INFO every record that changes a
    partition's adding or removing replicas, so a replica set changes unlogged only by a reassignment that does not
    (see ``ReassignmentsAltered``)."""


@dataclass(frozen=True, slots=True)
class ReassignmentsAltered:
    """The active KRaft controller accepted reassignments (``Successfully altered 2 out of 2 partition
    reassignment(s).``, ReplicationControlManager, INFO) and replays the records they make right after, in its own
    log: those that change adding or removing replicas with a ``Replayed partition assignment change`` line each.
    A reassignment that only reorders or shrinks the replicas (completed at once) makes a record no INFO line
    states."""
    altered: int


@dataclass(frozen=True, slots=True)
class AssignmentReplayed:
    """A ``Replayed partition assignment change`` line: one of the records counted against ``ReassignmentsAltered``,
    a change of the partition's assignment. Kafka 3.9 prints it without the partition epoch (no `` (isr: ..,
    partitionEpoch: N, ..)``): the change is at an epoch after the state then known, which no line numbers; then
    the record's new replicas, adding and removing replicas (``None``: null in the record, unchanged)."""
    topic: str
    partition: int
    numbered: bool = True
    replicas: Ints | None = None
    adding: Ints | None = None
    removing: Ints | None = None


@dataclass(frozen=True, slots=True)
class ReplicaCreated:
    """A broker made a partition's replica anew (``Creating new partition t-0 with topic id X.``, or ``Expected
    partition t-0 with topic id X to exist, but it was missing. Creating...``; KRaft, 3.x and 4.x): starting up, or
    a new replica. Its next line of that partition states the partition as it is then, not a change it lived."""
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class ConfigStated:
    """A KRaft controller replayed a config record (``Replayed ConfigRecord for ConfigResource(type=TOPIC,
    name='t') which set configuration min.insync.replicas to 2``; ``null``: removed): the value as of that record."""
    resource_type: str
    resource_name: str
    name: str
    value: str | None


Evidence = Seen | Unnumbered | Assigned | ControllerElected | TopicCreated | TopicDeleted | LiveBrokers | ElrEnabled | \
    ZooKeeperController | TopicConfigs | BrokerRegistered | BrokersAdded | ByTopicId | KRaftController | \
    ReassignmentsAltered | AssignmentReplayed | ConfigStated | ReplicaCreated
