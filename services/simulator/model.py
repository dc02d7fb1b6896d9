"""The simulator's cluster: the controller's view is replay's image, the workload's truth sits beside it.

The controller's view is one `schemas.state.delta.ImageBuilder`, the journal's (journal.py): every event the
simulator emits is applied to it as it is made, and partition states and topic configs are read from it
(`Partition.state`, `Topic.config`), so the simulator decides from exactly what `schemas.state.delta.fold` makes
of the history it emitted (tests/services/simulator/test_one_image.py). A change is made by emitting it:
nothing here stores a partition state or a config value.

What stays here is what that image does not hold, or does not hold truly:
- LEOs and the HW (`Partition.leo`, `.hw`): offsets are not controller metadata; samples report them.
- reassignment plans (`Partition.reassignment`): the operator's target and whether it will be cancelled;
  the image holds only the adding/removing replicas of the step under way.
- brokers (`Broker`): in ZooKeeper mode the journal shows a broker only as registered or gone
  (journal.py), so the image's brokers are not the flags the workload fences, elects and shuts down by;
  one truth for both modes. `Broker.replicas` (a count for unregistering) is no controller record.
- `deleted`, `frozen`: workload bookkeeping (`frozen`: kept out of the workload by breach fixtures).
- `sampled_hw`, `elr_entry_hw`: what the samples said, for the ground truth of a breach that lies in one.
Mutable for speed; a partition's state is the immutable `PartitionState` of the event contract, shared
as the next event's `before`.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from schemas.state.delta import ImageBuilder
from schemas.events import BrokerState, ConfigResourceType, PartitionState

T = TypeVar("T")

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
_TOPIC = ConfigResourceType.TOPIC  # (an enum member read off its class costs ~150 ns on Python 3.11)


class IndexedSet(Generic[T]):
    """A set with O(1) add, discard and uniform random choice; iteration in a deterministic order."""

    __slots__ = ("_items", "_pos")

    def __init__(self) -> None:
        self._items: list[T] = []
        self._pos: dict[T, int] = {}

    def add(self, item: T) -> None:
        if item not in self._pos:
            self._pos[item] = len(self._items)
            self._items.append(item)

    def discard(self, item: T) -> None:
        i = self._pos.pop(item, None)
        if i is None:
            return
        last = self._items.pop()
        if i < len(self._items):
            self._items[i] = last
            self._pos[last] = i

    def choice(self, rng: random.Random) -> T:
        return self._items[int(rng.random() * len(self._items))]

    def __contains__(self, item: object) -> bool:
        return item in self._pos

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))


@dataclass(slots=True, eq=False)
class Broker:
    id: int
    rack: str | None
    epoch: int = -1  # offset of its registration record
    registered: bool = False
    fenced: bool = True
    in_controlled_shutdown: bool = False
    incarnation: int = 0
    replicas: int = 0  # how many partitions list it as a replica (for unregistering empty brokers)

    @property
    def active(self) -> bool:
        """Kafka's isActive: registered, unfenced and not shutting down: may lead and join ISRs."""
        return self.registered and not self.fenced and not self.in_controlled_shutdown

    def state(self) -> BrokerState | None:
        if not self.registered:
            return None
        return BrokerState(
            broker_id=self.id, epoch=self.epoch, fenced=self.fenced, in_controlled_shutdown=self.in_controlled_shutdown,
            incarnation_id=f"sim-{self.id}-{self.incarnation}", rack=self.rack,
            endpoints=(f"PLAINTEXT://broker-{self.id}:9092",),
        )


@dataclass(slots=True, eq=False)
class Reassignment:
    original: tuple[int, ...]  # OAR, in order
    target: tuple[int, ...]  # RAR
    cancel: bool  # decided at the start: this one will be cancelled instead of completed


@dataclass(slots=True, eq=False)
class Partition:
    topic: Topic
    id: int
    leo: dict[int, int] = field(default_factory=dict)
    hw: int = 0
    reassignment: Reassignment | None = None
    deleted: bool = False
    frozen: bool = False  # excluded from the workload (breach fixtures)
    # ground truth of the ELR rule (valid_high_watermark's elr_member_behind_hw_at_entry): the HW sampled last,
    # and per broker the HW sampled last before it entered the ELR (None: no sample before)
    sampled_hw: int | None = None
    elr_entry_hw: dict[int, int | None] = field(default_factory=dict)

    @property
    def state(self) -> PartitionState:
        """The image's state of this partition (only read while it exists: None once deleted)."""
        t = self.topic
        return t.delta.partition(t.topic_id, self.id)  # type: ignore[return-value]  # only read while it exists

    @property
    def online(self) -> bool:
        return self.state.leader >= 0


@dataclass(slots=True, eq=False)
class Topic:
    name: str
    topic_id: str
    delta: ImageBuilder  # the controller's view (the journal's): this topic's configs and partition states
    partitions: list[Partition] = field(default_factory=list)
    deleted: bool = False

    def config(self, key: str) -> str | None:
        return self.delta.config(_TOPIC, self.name, key)

    def min_isr(self, default: int) -> int:
        value = self.delta.config(_TOPIC, self.name, MIN_ISR)
        return default if value is None else int(value)

    @property
    def unclean_allowed(self) -> bool:
        return self.delta.config(_TOPIC, self.name, UNCLEAN) == "true"


# --- offsets ---------------------------------------------------------------------------------
# LEO per replica and the leader's HW. Invariants kept here (and so in every sample):
# every ISR member's LEO >= HW; HW = max(HW, min LEO over the ISR) never decreases; LEOs only
# decrease by truncation to a new leader's LEO, which is >= HW.

def produce(p: Partition, s: PartitionState, rng: random.Random, strict_min_isr: int | None) -> None:
    """A produce burst on `p`, whose state `s` the caller read: the LEOs grow, the HW follows."""
    if s.leader < 0:
        return
    leo = p.leo
    lead = leo[s.leader] = leo.get(s.leader, 0) + int(rng.random() * 400)
    low = lead
    for r in s.isr:
        if r != s.leader:
            v = leo.get(r, 0)
            nv = lead - int(rng.random() * 40)
            if nv > v:
                leo[r] = v = nv
            if v < low:
                low = v
    # KIP-966 (ELR on): the HW only advances while |ISR| >= min ISR.
    if strict_min_isr is not None and len(s.isr) < strict_min_isr:
        return
    if low > p.hw:
        p.hw = low


def on_leader_change(p: Partition, new_leader: int, unclean: bool) -> None:
    """Followers truncate to the new leader's log; an unclean leader keeps at least the HW here so
    that clean histories stay free of HW regressions (the data loss is in the election record)."""
    if new_leader < 0:
        return
    lead = p.leo.get(new_leader, 0)
    if unclean and lead < p.hw:
        lead = p.leo[new_leader] = p.hw
    for r, v in p.leo.items():
        if v > lead:
            p.leo[r] = lead


def catch_up(p: Partition, replica: int) -> None:
    """A follower that caught up with the leader (before it joins the ISR)."""
    s = p.state
    lead = p.leo.get(s.leader, 0) if s.leader >= 0 else p.hw
    p.leo[replica] = max(p.leo.get(replica, 0), lead, p.hw)
