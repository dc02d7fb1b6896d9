"""Plain-Python predicates for the DESIGN §6 invariants, used to test the simulator's histories.

A small streaming checker, independent of the simulator's code: it replays the events and
reports every violation as (invariant, seq). The real checks live in checks/ (SQL); this one only
has to agree with the simulator's ground truth.

Conventions it applies (Kafka's: PartitionChangeBuilder, ReplicationControlManager):
- leader = -1 with a non-empty ISR is legal (the last ISR member is kept), so the fenced-broker
  rule is judged only for partitions that have a leader;
- a clean leader change picks a member of the previous ISR (ELR elections one of the previous ELR);
- completion of a reassignment is judged against the state before it (adding ⊆ ISR).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from schemas.events import (BrokerChange, BrokerState, ConfigChange, ControllerEvent, ElectionType,
                            LeaderRecoveryState, OffsetSample, PartitionChange, PartitionChangeKind, PartitionState)

K = PartitionChangeKind


def leader_in_isr(s: PartitionState) -> bool:
    return (s.leader == -1 or s.leader in s.isr) and set(s.isr) <= set(s.replicas)


def isr_elr_sane(s: PartitionState) -> bool:
    replicas = set(s.replicas)
    return (set(s.elr) <= replicas and not set(s.isr) & set(s.elr)
            and not set(s.adding_replicas) & set(s.removing_replicas)
            and set(s.adding_replicas) | set(s.removing_replicas) <= replicas)


def distinct_replicas(s: PartitionState, racks: dict[int, str | None], n_racks: int) -> bool:
    if len(set(s.replicas)) != len(s.replicas):
        return False
    placed = [racks.get(r) for r in s.replicas]
    if n_racks > 1 and len(s.replicas) > 1 and all(placed) and len(set(placed)) == 1:
        return False
    return True


@dataclass
class Checker:
    violations: list[tuple[str, int, str]] = field(default_factory=list)
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    configs: dict[tuple[str, str], str] = field(default_factory=dict)
    epoch_owner: dict[int, int] = field(default_factory=dict)
    max_epoch: int = -1
    last_hw: dict[tuple[str, int], int] = field(default_factory=dict)
    original: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    target: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)

    def bad(self, name: str, e: ControllerEvent, why: str = "") -> None:
        self.violations.append((name, e.seq, why))

    def run(self, events: Iterable[ControllerEvent]) -> Checker:
        for e in events:
            self.check(e)
        return self

    def by_invariant(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for name, seq, _ in self.violations:
            out.setdefault(name, []).append(seq)
        return out

    def check(self, e: ControllerEvent) -> None:
        self.counts[e.kind] += 1
        if e.controller_epoch < self.max_epoch:
            self.bad("controller_epoch_monotonic", e)
        self.max_epoch = max(self.max_epoch, e.controller_epoch)
        owner = self.epoch_owner.setdefault(e.controller_epoch, e.controller_id)
        if owner != e.controller_id:
            self.bad("election_safety", e)
        p = e.payload
        if isinstance(p, PartitionChange):
            self.partition_change(e, p)
        elif isinstance(p, BrokerChange):
            if p.after is None:
                self.brokers.pop(p.broker_id, None)
            else:
                self.brokers[p.broker_id] = p.after
        elif isinstance(p, ConfigChange):
            key = (p.resource_name, p.name)
            if p.value is None:
                self.configs.pop(key, None)
            else:
                self.configs[key] = p.value
        elif isinstance(p, OffsetSample):
            self.sample(e, p)

    def sample(self, e: ControllerEvent, p: OffsetSample) -> None:
        key = (p.topic, p.partition)
        s = self.partitions[key]
        leos = {r.broker_id: r.log_end_offset for r in p.replicas}
        if p.high_watermark > min(leos[r] for r in s.isr):
            self.bad("valid_high_watermark", e)
        if p.high_watermark < self.last_hw.get(key, 0):
            self.bad("high_watermark_monotonic", e)
        self.last_hw[key] = max(self.last_hw.get(key, 0), p.high_watermark)
        if p.leader != s.leader or p.leader_epoch != s.leader_epoch:
            self.bad("sample_matches_state", e)

    def _live(self, broker: int) -> bool:
        st = self.brokers.get(broker)
        return st is not None and not st.fenced and not st.in_controlled_shutdown

    def partition_change(self, e: ControllerEvent, p: PartitionChange) -> None:
        key = (p.topic, p.partition)
        b, a = p.before, p.after
        prev = self.partitions.get(key)
        if b is None:
            if prev is not None:
                self.bad("state_continuity", e, "created twice")
            self.last_hw.pop(key, None)
        elif prev != b:
            self.bad("state_continuity", e)
        if a is None:
            self.partitions.pop(key, None)
            self.original.pop(key, None)
            return
        self.partitions[key] = a
        racks = {i: s.rack for i, s in self.brokers.items()}
        if not leader_in_isr(a):
            self.bad("leader_in_isr", e)
        if not isr_elr_sane(a):
            self.bad("isr_elr_sanity", e)
        if not distinct_replicas(a, racks, len({r for r in racks.values() if r})):
            self.bad("distinct_replicas", e)
        if a.leader >= 0 and any(self.brokers.get(r) is None or self.brokers[r].fenced for r in (a.leader, *a.isr)):
            self.bad("fenced_broker_not_in_isr", e)
        if b is None:
            return
        if a.partition_epoch <= b.partition_epoch:
            self.bad("partition_epoch_monotonic", e)
        if a.leader_epoch < b.leader_epoch or (a.leader != b.leader and a.leader_epoch == b.leader_epoch):
            self.bad("leader_epoch_monotonic", e)
        unclean_ok = self.configs.get((p.topic, "unclean.leader.election.enable")) == "true"
        if p.election == ElectionType.UNCLEAN:
            if not unclean_ok or a.leader_recovery_state != LeaderRecoveryState.RECOVERING:
                self.bad("unclean_election_allowed", e)
        elif a.leader >= 0 and a.leader != b.leader:
            pool = b.elr if p.election == ElectionType.ELR else b.isr
            if a.leader not in pool:
                self.bad("unclean_election_allowed", e, "leader from outside the ISR, not marked unclean")
        if (a.leader >= 0 and a.leader != b.leader and a.leader in b.isr
                and p.election not in (ElectionType.UNCLEAN, ElectionType.ELR)):
            # Kafka's elections take the first replica in the ISR whose broker is live (not the old leader)
            ahead = a.replicas[:a.replicas.index(a.leader)] if a.leader in a.replicas else ()
            if any(r != b.leader and r in a.isr and self._live(r) for r in ahead):
                self.bad("leader_election_order", e)
        if K.REASSIGNMENT_START in p.changes:
            self.original[key] = b.replicas
            self.target[key] = tuple(r for r in a.replicas if r not in a.removing_replicas)
            if set(a.adding_replicas) & set(a.isr) or a.isr != b.isr:
                self.bad("reassignment_legal", e, "ISR changed by reassignment start")
        if K.REASSIGNMENT_COMPLETE in p.changes:
            if not set(b.adding_replicas) <= set(b.isr) or a.replicas != self.target.get(key) \
                    or a.adding_replicas or a.removing_replicas:
                self.bad("reassignment_legal", e)
        if K.REASSIGNMENT_CANCEL in p.changes:
            if a.replicas != self.original.get(key) or a.adding_replicas or a.removing_replicas:
                self.bad("reassignment_legal", e, "cancel did not restore OAR")
