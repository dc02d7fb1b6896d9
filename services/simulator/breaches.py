"""Breach injection: one violation of a named invariant at (or right after) a chosen event index.

Each injector emits well-formed events, breaks its invariant in exactly one event where it can,
and repairs the model right after so that the rest of the history stays clean (a state breach is
followed by a legal change out of the broken state). Legal set-up events (a failover, a fence, a
sample) may come first; the ground truth names the breaking event itself.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

from schemas.events import (BrokerChangeKind, ControllerChange, ControllerEvent, ElectionType, LeaderRecoveryState,
                            OffsetSample, PartitionChange, PartitionChangeKind, PartitionState, TopicChange,
                            TopicChangeKind)
from services.simulator import partition_rules as rules
from services.simulator.model import UNCLEAN, Partition
from services.simulator.config import BREACHES, BreachRecord
from services.simulator.late import LIVENESS_BREACHES, LIVENESS_INJECTORS
from services.simulator.workload import Simulator, kafka_uuid

K = PartitionChangeKind


class Injector:
    def __init__(self, inject: Sequence[tuple[str, int]]) -> None:
        for name, index in inject:
            if name not in INJECTORS:
                raise ValueError(f"unknown breach {name!r}; known: {', '.join(INJECTORS)}")
            if index < 0:
                raise ValueError(f"breach index must be >= 0, got {index}")
        self.pending = sorted(inject, key=lambda x: x[1])
        self.records: list[BreachRecord] = []
        self.deferred = 0  # consecutive steps an injection waited for a suitable partition

    def due(self, seq: int) -> bool:
        return bool(self.pending) and self.pending[0][1] <= seq

    def run(self, sim: Simulator) -> None:
        """Inject the first due breach that the current state allows; otherwise let the workload run
        (e.g. no partition has two ISR members right now) and try again next step."""
        for i, (name, index) in enumerate(self.pending):
            if index > sim.j.seq:
                break
            record = INJECTORS[name](sim)
            if record is not None:
                self.pending.pop(i)
                self.records.extend(record if isinstance(record, list) else [record])
                self.deferred = 0
                return
            if len(sim.j.out):  # set-up events were emitted: finish this step with them
                return
        self.deferred += 1
        sim.random_op()


def _record(invariant: str, e: ControllerEvent, description: str, setup_for: str | None = None) -> BreachRecord:
    p = e.payload
    topic = getattr(p, "topic", None)
    partition = getattr(p, "partition", None)
    return BreachRecord(invariant, e.seq, e.event_id, topic, partition, description, setup_for)


def _partition(sim: Simulator, ok: Callable[[Partition], bool]) -> Partition | None:
    """A random partition (not reassigning) that satisfies `ok`; failing that, the first one that does."""
    def fits(p: Partition) -> bool:
        return p.reassignment is None and not p.frozen and ok(p)
    return sim.pick_partition(fits, tries=32) or next((p for p in sim.live if fits(p)), None)


def _turn(sim: Simulator, name: str, variants: int) -> int:
    """Which of an invariant's breach variants this injection plants: they take turns, so a history
    with k breaches of one invariant holds each variant about k / variants times."""
    counts: dict[str, int] = sim.__dict__.setdefault("_breach_turns", {})
    n = counts.get(name, 0)
    return n % variants


def _took_turn(sim: Simulator, name: str) -> None:
    counts = sim.__dict__.setdefault("_breach_turns", {})
    counts[name] = counts.get(name, 0) + 1


def _on(ok: Callable[[Partition], bool]) -> Callable[[Callable[[Simulator, Partition], BreachRecord | None]],
                                                     Callable[[Simulator], BreachRecord | None]]:
    """The decorated injection made in the partition `_partition` picks among those `ok` accepts; nothing
    (None) when there is none."""
    def injector(inject: Callable[[Simulator, Partition], BreachRecord | None]) -> Callable[[Simulator],
                                                                                          BreachRecord | None]:
        @functools.wraps(inject)
        def injected(sim: Simulator) -> BreachRecord | None:
            p = _partition(sim, ok)
            return None if p is None else inject(sim, p)
        return injected
    return injector


def _healthy(p: Partition) -> bool:
    s = p.state
    return s.leader >= 0 and s.leader_recovery_state == LeaderRecoveryState.RECOVERED


def _has_follower_in_isr(p: Partition) -> bool:
    return _healthy(p) and len(p.state.isr) > 1


def _broken_then_repaired(sim: Simulator, p: Partition, broken: PartitionState, injected: str,
                          repaired: str) -> ControllerEvent:
    """`broken` emitted, then in the next change the partition's ISR and ELR as they were: the breach stands in
    exactly one state. The breaking event."""
    s = p.state
    e = _emit_raw(sim, p, broken, reason=injected)
    _emit_raw(sim, p, replace(broken, isr=s.isr, elr=s.elr, partition_epoch=broken.partition_epoch + 1),
              reason=repaired)
    return e


def _emit_raw(sim: Simulator, p: Partition, after: PartitionState, election: ElectionType = ElectionType.NONE,
              extra: tuple[PartitionChangeKind, ...] = (), reason: str | None = None) -> ControllerEvent:
    """Emit a change exactly as given (no completion follow-up)."""
    return sim.apply(p, after, election, extra=extra, reason=reason, follow_up=False)


# --- controller ---------------------------------------------------------------------------------

def controller_epoch_monotonic(sim: Simulator) -> BreachRecord:
    if sim.j.controller_epoch < 2:
        sim.op_controller_failover()
    epoch = sim.j.controller_epoch
    stale_epoch = epoch - 1
    stale_id = sim.controller_history[stale_epoch]
    e = sim.j.record(ControllerChange(leader_id=stale_id, epoch=stale_epoch, previous_leader_id=sim.j.controller_id,
                                      previous_epoch=epoch, voters=sim.voters),
                     controller=(stale_id, stale_epoch))
    sim.become_controller(sim.j.controller_id)  # the quorum re-asserts itself with a higher epoch
    return _record("controller_epoch_monotonic", e,
                   f"controller epoch went back from {epoch} to {stale_epoch} (zombie controller {stale_id})")


def election_safety(sim: Simulator) -> BreachRecord:
    epoch, current = sim.j.controller_epoch, sim.j.controller_id
    other = next(v for v in sim.voters if v != current)
    e = sim.j.record(ControllerChange(leader_id=other, epoch=epoch, previous_leader_id=current, previous_epoch=epoch,
                                      voters=sim.voters), controller=(other, epoch))
    sim.become_controller(current)
    return _record("election_safety", e, f"controllers {current} and {other} both claim epoch {epoch}")


# --- partition epochs ---------------------------------------------------------------------------

@_on(_has_follower_in_isr)
def leader_epoch_monotonic(sim: Simulator, p: Partition) -> BreachRecord | None:
    s = p.state
    new = next(r for r in s.replicas if r in s.isr and r != s.leader)
    after = replace(s, leader=new, partition_epoch=s.partition_epoch + 1)  # leader epoch NOT bumped
    e = _emit_raw(sim, p, after, ElectionType.CLEAN, reason="injected: leader change without epoch bump")
    return _record("leader_epoch_monotonic", e, f"leader {s.leader} -> {new} kept leader epoch {s.leader_epoch}")


@_on(_has_follower_in_isr)
def partition_epoch_monotonic(sim: Simulator, p: Partition) -> BreachRecord | None:
    s = p.state
    r = next(x for x in reversed(s.isr) if x != s.leader)
    after = replace(s, isr=tuple(x for x in s.isr if x != r))  # partition epoch NOT bumped
    e = _emit_raw(sim, p, after, reason="injected: ISR shrink without partition epoch bump")
    return _record("partition_epoch_monotonic", e, f"ISR shrink kept partition epoch {s.partition_epoch}")


# --- state sanity (broken in one event, repaired by the next) ------------------------------------

@_on(_has_follower_in_isr)
def leader_in_isr(sim: Simulator, p: Partition) -> BreachRecord | None:
    s = p.state
    broken = replace(s, isr=tuple(x for x in s.isr if x != s.leader), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: ISR without its leader", "isr expand: leader back in ISR")
    return _record("leader_in_isr", e, f"leader {s.leader} not in ISR {list(broken.isr)}")


def isr_elr_sanity(sim: Simulator) -> BreachRecord | None:
    # the KIP-966 rules need an ELR cluster; an empty ISR is a breach only where no ELR can exist
    turn = _turn(sim, "isr_elr_sanity", 4 if sim.elr else 3)
    if turn == 1:
        return _elr_outsider(sim)
    if turn == 2:
        return _elr_while_isr_at_min_isr(sim) if sim.elr else _isr_emptied_without_elr(sim)
    if turn == 3:
        return _leader_from_elr_while_isr_not_empty(sim)
    p = _partition(sim, lambda q: _healthy(q) and len(q.state.isr) > 1 and not q.state.elr)
    if p is None:
        return None
    s = p.state
    member = next(x for x in s.isr if x != s.leader)
    broken = replace(s, elr=(member,), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: ISR member also in ELR", "ELR cleared")
    _took_turn(sim, "isr_elr_sanity")
    return _record("isr_elr_sanity", e, f"replica {member} is in both ISR {list(s.isr)} and ELR")


def _elr_outsider(sim: Simulator) -> BreachRecord | None:
    """A replica out of sync put into the ELR without having left the ISR (and, below metadata.version
    22, an ELR at all)."""
    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr
                   and any(r not in q.state.isr for r in q.state.replicas))
    if p is None:
        return None
    s = p.state
    outsider = next(r for r in s.replicas if r not in s.isr)
    broken = replace(s, elr=(outsider,), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: ELR member that never was in the ISR", "ELR cleared")
    _took_turn(sim, "isr_elr_sanity")
    return _record("isr_elr_sanity", e, f"replica {outsider} entered the ELR from outside ISR {list(s.isr)}")


def _isr_emptied_without_elr(sim: Simulator) -> BreachRecord | None:
    """The ISR emptied (leader -1) where no ELR can exist, which Kafka never writes (it keeps the last member);
    then the ISR restored, and the leader elected from it as the workload elects one."""
    p = _partition(sim, _healthy)
    if p is None:
        return None
    s = p.state
    broken = replace(s, leader=-1, isr=(), leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    e = _emit_raw(sim, p, broken, reason="injected: ISR emptied without ELR")
    _emit_raw(sim, p, replace(broken, isr=s.isr, partition_epoch=broken.partition_epoch + 1),
              reason="ISR restored: its members never left")
    sim.apply_change(p, sim.build(p), "leader election")
    _took_turn(sim, "isr_elr_sanity")
    return _record("isr_elr_sanity", e, f"ISR {list(s.isr)} emptied at metadata.version {sim.mv}")


def _min_isr(sim: Simulator, p: Partition) -> int:
    return p.topic.min_isr(sim.cfg.min_insync_replicas)


def _elr_set_up(sim: Simulator) -> None:
    """A legal ISR shrink to below min.insync.replicas: the follower moves into the ELR."""
    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr
                   and len(q.state.isr) == _min_isr(sim, q) == 2)
    if p is not None:
        follower = next(r for r in p.state.isr if r != p.state.leader)
        sim.apply_change(p, sim.build(p, target_isr=(p.state.leader,)), "isr shrink: follower lagging")
        assert follower in p.state.elr


def _elr_while_isr_at_min_isr(sim: Simulator) -> BreachRecord | None:
    """A follower leaves the ISR into the ELR although the ISR left behind is still at min ISR."""
    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr
                   and len(q.state.isr) - 1 >= _min_isr(sim, q))
    if p is None:
        return None
    s = p.state
    r = next(x for x in reversed(s.isr) if x != s.leader)
    broken = replace(s, isr=tuple(x for x in s.isr if x != r), elr=(r,), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: ELR populated while the ISR is at min ISR",
                              "isr expand: follower caught up")
    _took_turn(sim, "isr_elr_sanity")
    return _record("isr_elr_sanity", e, f"replica {r} put into the ELR with ISR {list(broken.isr)} at min ISR")


def _leader_from_elr_while_isr_not_empty(sim: Simulator) -> BreachRecord | None:
    """An ELR member elected leader while the ISR still has a live member."""
    p = _partition(sim, lambda q: _healthy(q) and len(q.state.isr) == 1 and q.state.leader in q.state.isr
                   and not q.state.last_known_elr and any(sim.active(r) for r in q.state.elr))
    if p is None:
        _elr_set_up(sim)
        return None
    s = p.state
    new = next(r for r in s.elr if sim.active(r))
    broken = replace(s, leader=new, isr=s.isr + (new,), elr=tuple(r for r in s.elr if r != new),
                     leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    e = _emit_raw(sim, p, broken, ElectionType.ELR, reason="injected: leader from the ELR, ISR not empty")
    _took_turn(sim, "isr_elr_sanity")
    return _record("isr_elr_sanity", e, f"ELR member {new} elected while ISR {list(s.isr)} is not empty")


def fenced_broker_not_in_isr(sim: Simulator) -> BreachRecord | None:
    # a ZooKeeper-mode history shows neither a controlled shutdown nor a fenced registration
    turn = 0 if sim.cfg.zookeeper else _turn(sim, "fenced_broker_not_in_isr", 3 if sim.mv >= 23 else 2)
    if turn == 1:
        return _shutting_down_elected(sim)
    if turn == 2:
        return _registered_while_in_isr(sim)
    fset = {b for b in sorted(sim.brokers) if sim.brokers[b].registered and sim.brokers[b].fenced}

    def candidates(q: Partition) -> list[int]:
        return [r for r in q.state.replicas if r in fset and r not in q.state.isr]
    # no ELR left beside the broker: an ISR grown back to min ISR with an ELR is isr_elr_sanity's breach
    p = _partition(sim, lambda q: _healthy(q) and bool(candidates(q))
                   and set(q.state.elr) <= {candidates(q)[0]}) if fset else None
    if p is None:
        # Fence one more broker (legal set-up events); the breach follows on a later step.
        host = _partition(sim, _has_follower_in_isr)
        if host is not None and sim.down_brokers() < sim.max_down + 1:
            broker = sim.brokers[next(r for r in host.state.isr if r != host.state.leader)]
            sim.fence(broker, f"broker {broker.id} session timed out")
            sim.later(50 + sim.rng.randrange(200), sim.resume, broker)
        return None
    s = p.state
    b = candidates(p)[0]
    # (An ELR member that joins the ISR leaves the ELR, so that only this invariant breaks.)
    broken = replace(s, isr=s.isr + (b,), elr=tuple(x for x in s.elr if x != b), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: stale AlterPartition re-adds a fenced broker",
                              "isr shrink: fenced broker removed")
    _took_turn(sim, "fenced_broker_not_in_isr")
    return _record("fenced_broker_not_in_isr", e, f"fenced broker {b} added to ISR {list(broken.isr)}")


def _shutting_down_elected(sim: Simulator) -> BreachRecord | None:
    """A broker enters controlled shutdown and is elected leader of a partition whose ISR it is in;
    leadership goes back at once, then the shutdown proceeds as Kafka's would."""
    def live_isr(q: Partition) -> list[int]:  # in replica order, as Kafka's elections walk it
        return [r for r in q.state.replicas if r in q.state.isr and sim.brokers[r].active]

    # the leader first among them and the broker the next: neither election here passes over a live
    # ISR member (that would break leader_election_order too)
    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr
                   and len(live_isr(q)) >= 2 and live_isr(q)[0] == q.state.leader)
    if p is None:
        return None
    s = p.state
    b = sim.brokers[live_isr(p)[1]]
    before = b.state()
    b.in_controlled_shutdown = True
    sim.broker_event(b, BrokerChangeKind.CONTROLLED_SHUTDOWN, before)
    broken = replace(s, leader=b.id, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    e = _emit_raw(sim, p, broken, ElectionType.PREFERRED, reason="injected: leader in controlled shutdown")
    _emit_raw(sim, p, replace(broken, leader=s.leader, leader_epoch=broken.leader_epoch + 1,
                              partition_epoch=broken.partition_epoch + 1),
              ElectionType.CONTROLLED_SHUTDOWN, reason=f"broker {b.id} controlled shutdown")
    sim.remove_from_isrs(b.id, ElectionType.CONTROLLED_SHUTDOWN, f"broker {b.id} controlled shutdown")
    sim.later(1 + sim.rng.randrange(10), sim.finish_shutdown, b)
    _took_turn(sim, "fenced_broker_not_in_isr")
    return _record("fenced_broker_not_in_isr", e, f"broker {b.id} in controlled shutdown elected leader")


def _registered_while_in_isr(sim: Simulator) -> BreachRecord | None:
    """At metadata.version >= 23 a broker that registers again (an unclean restart) is taken out of
    the ISRs and ELRs before its registration; here it registers while still in ISRs."""
    member = {r for p in sim.live for r in p.state.isr if _healthy(p) and p.reassignment is None and not p.frozen}
    ids = [b for b in sorted(sim.brokers) if b in member and sim.brokers[b].active]
    if not ids or sim.down_brokers() >= sim.max_down + 1:
        return None
    b = sim.brokers[ids[sim.rng.randrange(len(ids))]]
    sim.register(b)  # a new incarnation, fenced, without leaving its ISRs first
    e = sim.j.out[-1]
    sim.remove_from_isrs(b.id, ElectionType.CLEAN, f"broker {b.id} re-registered")  # the repair
    sim.later(1 + sim.rng.randrange(30), sim.resume, b)
    _took_turn(sim, "fenced_broker_not_in_isr")
    return _record("fenced_broker_not_in_isr", e,
                   f"broker {b.id} registered again (fenced) while in ISRs, metadata.version {sim.mv}")


# --- offsets ------------------------------------------------------------------------------------

def valid_high_watermark(sim: Simulator) -> BreachRecord | None:
    if _turn(sim, "valid_high_watermark", 2 if sim.elr else 1) == 1:
        return _elr_member_behind_hw_at_entry(sim)
    p = _partition(sim, _healthy)
    if p is None:
        return None
    _took_turn(sim, "valid_high_watermark")
    return _hw_above_isr_member_leo(sim, p)


def _elr_member_behind_hw_at_entry(sim: Simulator) -> BreachRecord | None:
    """KIP-966: a follower enters the ELR (a legal shrink below min ISR) after a sample; a sample then shows its
    LEO below that sample's HW. The lie is only in the sample (the model's replica holds every record), and a
    true sample follows at once, so an election from the ELR later is judged against the truth."""
    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr
                   and len(q.state.isr) == _min_isr(sim, q) == 2)
    if p is None or not _sampled_with_hw(sim, p):
        return None
    before = _last_sample(sim)
    follower = next(r for r in p.state.isr if r != p.state.leader)
    sim.apply_change(p, sim.build(p, target_isr=(p.state.leader,)), "isr shrink: follower lagging")
    if follower not in p.state.elr:
        return None
    hw = before.high_watermark
    short = max(0, hw - 1 - sim.rng.randrange(min(hw, 1000)))
    e = sim.j.sample(replace(before, replicas=tuple(replace(o, log_end_offset=short) if o.broker_id == follower else o
                                                    for o in before.replicas)))
    sim.sample(p)
    _took_turn(sim, "valid_high_watermark")
    return _record("valid_high_watermark", e,
                   f"ELR member {follower} sampled at LEO {short}, below the HW {hw} of its entry")


def _hw_above_isr_member_leo(sim: Simulator, p: Partition) -> BreachRecord | None:
    sim.sample(p)  # legal; brings the model up to date
    s = p.state
    low = min(p.leo.get(r, 0) for r in s.isr)
    bad_hw = low + 1 + sim.rng.randrange(100)
    e = sim.j.sample(replace(_last_sample(sim), high_watermark=bad_hw))
    # Repair: from now on the true HW is bad_hw, and the ISR holds it, so later samples are valid
    # and the HW does not go back.
    for r in s.isr:
        p.leo[r] = max(p.leo.get(r, 0), bad_hw)
    p.hw = bad_hw
    # ...and a sample of the repaired state at once: an election judged against the bad sample would
    # find its new leader behind that HW (high_watermark_monotonic's rule), a second breach
    sim.sample(p)
    return _record("valid_high_watermark", e, f"HW {bad_hw} above min ISR LEO {low}")


def _sampled_with_hw(sim: Simulator, p: Partition) -> bool:
    """p sampled, a second time when the first sample found no HW yet; whether it has one now (>= 1)."""
    sim.sample(p)
    if p.hw < 1:
        sim.sample(p)
    return p.hw >= 1


def _last_sample(sim: Simulator) -> OffsetSample:
    return cast(OffsetSample, sim.j.out[-1].payload)  # the callers sampled last


def high_watermark_monotonic(sim: Simulator) -> BreachRecord | list[BreachRecord] | None:
    if _turn(sim, "high_watermark_monotonic", 2 if sim.elr else 1) == 1:
        return _elr_leader_behind_committed(sim)
    p = _partition(sim, _has_follower_in_isr)
    if p is None or not _sampled_with_hw(sim, p):
        return None
    s = p.state
    new = next(r for r in s.replicas if r in s.isr and r != s.leader)
    election = ElectionType.PREFERRED if new == s.replicas[0] else ElectionType.CLEAN
    after = replace(s, leader=new, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    _emit_raw(sim, p, after, election, reason="leader moved")
    true_hw = p.hw
    low = max(0, true_hw - 1 - sim.rng.randrange(min(true_hw, 1000)))
    e = sim.sample(p, hw=low)
    _took_turn(sim, "high_watermark_monotonic")
    return _record("high_watermark_monotonic", e, f"HW went back from {true_hw} to {low} after leader change")


def _elr_leader_behind_committed(sim: Simulator) -> list[BreachRecord] | None:
    """KIP-966: the ISR's last member goes and an ELR member is elected, a clean election; but the
    last sample before it had the new leader's LEO below the HW, so committed records are gone."""
    def fits(q: Partition) -> bool:
        s = q.state
        return (_healthy(q) and len(s.isr) == 1 and s.leader in s.isr and not s.last_known_elr
                and any(sim.active(r) for r in s.elr))
    p = _partition(sim, fits)
    if p is None:
        _elr_set_up(sim)
        return None
    s = p.state
    sim.sample(p)
    if p.hw < 1:
        sim.sample(p)
    if p.hw < 1:
        return None
    new = next(r for r in s.elr if sim.active(r))
    true = _last_sample(sim)
    short = max(0, p.hw - 1 - sim.rng.randrange(min(p.hw, 1000)))
    # The sample says the ELR member is behind the HW (the model's replica is not: the lie is only
    # in the sample, so the rest of the history stays clean).
    lie = sim.j.sample(replace(true, replicas=tuple(replace(o, log_end_offset=short) if o.broker_id == new else o
                                                    for o in true.replicas)))
    # The lie is an ELR member behind the HW of its entry too, where a sample came before its entry (an ELR
    # member behind the HW is one, as the HW does not advance while it is there): ground truth as well.
    entry_hw = p.elr_entry_hw.get(new)
    also = ([_record("valid_high_watermark", lie, f"ELR member {new} sampled at LEO {short}, below the HW "
                     f"{entry_hw} of its entry", setup_for="high_watermark_monotonic")]
            if entry_hw is not None and short < entry_hw else [])
    after = replace(s, leader=new, isr=(new,), elr=tuple(sorted((set(s.elr) - {new}) | {s.leader})),
                    leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    e = _emit_raw(sim, p, after, ElectionType.ELR, reason="injected: ELR member behind the HW elected")
    _took_turn(sim, "high_watermark_monotonic")
    return also + [_record("high_watermark_monotonic", e,
                           f"ELR member {new} with sampled LEO {short} elected over HW {p.hw}: committed records lost")]


# --- elections and reassignment -----------------------------------------------------------------

def unclean_election_allowed(sim: Simulator) -> BreachRecord | list[BreachRecord] | None:
    # ELR laundering needs a KRaft cluster where no ELR can exist (metadata.version below 22)
    launder = not sim.cfg.zookeeper and 12 <= sim.mv < 22  # (below 12 its ISR shrink would need a bump too)
    if _turn(sim, "unclean_election_allowed", 2 if launder else 1) == 1:
        return _elr_laundered_election(sim)
    p = _partition(sim, lambda q: _healthy(q) and not q.topic.unclean_allowed
                   and any(sim.active(r) and r != q.state.leader for r in q.state.replicas))
    if p is None:
        # Every topic allows unclean elections: take that back on one (a legal config change).
        allowing = [t for t in sim.topics.values() if t.unclean_allowed]
        if allowing:
            sim.set_topic_config(allowing[sim.rng.randrange(len(allowing))], UNCLEAN, None)
        return None
    s = p.state
    outside = [r for r in s.replicas if sim.active(r) and r not in s.isr]
    inside = [r for r in s.replicas if sim.active(r) and r != s.leader]
    new = (outside or inside)[0]
    after = replace(s, leader=new, isr=(new,), leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1,
                    elr=(), last_known_elr=(), leader_recovery_state=LeaderRecoveryState.RECOVERING)
    e = _emit_raw(sim, p, after, ElectionType.UNCLEAN, reason="injected: unclean election on a topic that forbids it")
    sim.later(2 + sim.rng.randrange(10), sim.mark_recovered, p)
    _took_turn(sim, "unclean_election_allowed")
    return _record("unclean_election_allowed", e,
                   f"unclean election of {new} on {p.topic.name} (unclean.leader.election.enable is not true)")


def _elr_laundered_election(sim: Simulator) -> list[BreachRecord] | None:
    """A follower moved from the ISR into an ELR at a metadata.version that has none (isr_elr_sanity's breach,
    recorded as its set-up), then elected leader 'from the ELR' on a topic that forbids unclean elections: an
    unclean election that looks clean, and stays RECOVERED."""
    p = _partition(sim, lambda q: _has_follower_in_isr(q) and not q.topic.unclean_allowed and not q.state.elr
                   and any(sim.active(r) for r in q.state.isr if r != q.state.leader))
    if p is None:
        return None
    sim.sample(p)  # the new leader's LEO as of the election is its true one (in the ISR until now)
    s = p.state
    new = next(r for r in s.isr if r != s.leader and sim.active(r))
    elr = replace(s, isr=tuple(r for r in s.isr if r != new), elr=(new,), partition_epoch=s.partition_epoch + 1)
    first = _emit_raw(sim, p, elr, reason="injected: ELR below metadata.version 22")
    after = replace(elr, leader=new, isr=(new,), elr=(), leader_epoch=s.leader_epoch + 1,
                    partition_epoch=elr.partition_epoch + 1)
    e = _emit_raw(sim, p, after, ElectionType.ELR, reason="injected: leader from an ELR that cannot exist")
    _took_turn(sim, "unclean_election_allowed")
    return [_record("isr_elr_sanity", first, f"replica {new} put into an ELR at metadata.version {sim.mv}",
                    setup_for="unclean_election_allowed"),
            _record("unclean_election_allowed", e, f"replica {new} elected from that ELR on {p.topic.name}")]


def leader_election_order(sim: Simulator) -> BreachRecord | None:
    """A clean election that takes an ISR member although a live one comes before it in the replica list
    (Kafka's election strategies take the first); the state stays legal, so nothing needs repairing."""
    def eligible(q: Partition) -> list[int]:
        s = q.state
        return [r for r in s.replicas if r in s.isr and r != s.leader and sim.brokers[r].active]

    p = _partition(sim, lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr
                   and len(eligible(q)) >= 2)
    if p is None:
        return None
    s = p.state
    first, *_, new = eligible(p)
    broken = replace(s, leader=new, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
    e = _emit_raw(sim, p, broken, ElectionType.CLEAN, reason="injected: election passes over a live ISR member")
    return _record("leader_election_order", e, f"leader {new} elected over live ISR member {first}")


@_on(lambda q: _healthy(q) and not q.state.elr and not q.state.last_known_elr)
def reassignment_legal(sim: Simulator, p: Partition) -> BreachRecord | None:
    s = p.state
    current = set(s.replicas)
    followers = [r for r in s.replicas if r != s.leader]
    if not followers:
        return None
    kept = tuple(r for r in s.replicas if r != followers[-1])
    kept_racks = {sim.brokers[r].rack for r in kept}
    spare = [b for b in sorted(sim.brokers) if sim.brokers[b].active and b not in current]
    spare.sort(key=lambda b: sim.brokers[b].rack in kept_racks)  # another rack first
    if not spare:
        # No broker to move to: a removal, "completed" without removing anything. (Started by
        # hand: Kafka would complete a removal at once, in the same record.)
        started = rules.start_reassignment(s, kept)
        _emit_raw(sim, p, started, extra=(K.REASSIGNMENT_START,), reason=f"reassignment to {list(kept)}")
        after = replace(started, removing_replicas=(), partition_epoch=started.partition_epoch + 1)
        e = _emit_raw(sim, p, after, extra=(K.REASSIGNMENT_COMPLETE,), reason="injected: completion kept OAR")
        return _record("reassignment_legal", e, f"completed with replicas {list(after.replicas)} != target {list(kept)}")
    target = kept + (spare[0],)
    sim.start_reassignment(p, target, cancel=False)
    started = p.state
    sim.finish_reassignment(p)
    removing = set(started.removing_replicas)
    after = replace(started, replicas=target, isr=tuple(r for r in started.isr if r not in removing),
                    adding_replicas=(), removing_replicas=(), leader_epoch=started.leader_epoch + 1,
                    partition_epoch=started.partition_epoch + 1)
    e = _emit_raw(sim, p, after, extra=(K.REASSIGNMENT_COMPLETE,), reason="injected: completed before catch-up")
    return _record("reassignment_legal", e,
                   f"reassignment completed while adding {list(started.adding_replicas)} not in ISR {list(started.isr)}")


def state_continuity(sim: Simulator) -> BreachRecord | None:
    if _turn(sim, "state_continuity", 2) == 1:
        return _partition_without_topic(sim)
    p = _partition(sim, _has_follower_in_isr)
    if p is None:
        return None
    s = p.state
    r = next(x for x in reversed(s.isr) if x != s.leader)
    lost = sim.build(p, target_isr=tuple(x for x in s.isr if x != r))
    if lost is None:
        return None
    sim.apply(p, lost.after, lost.election, reason="lost")
    sim.j.out.pop()  # the change happened (the image keeps it), its event was lost
    sim.j.seq -= 1
    e = sim.expand(p, r, "isr expand")
    if e is None:
        return None
    _took_turn(sim, "state_continuity")
    before = cast(PartitionState, cast(PartitionChange, e.payload).before)  # expand's change: the partition exists
    return _record("state_continuity", e, f"before {before.diff(s)} vs the previous after: a lost event")


def _created_and_deleted(sim: Simulator, name: str, topic_id: str, state: PartitionState,
                         reason: str) -> ControllerEvent:
    """Partition 0 of `name` created in `state` and deleted at the next offset, so that the state shows in
    exactly one event: the creating one."""
    e = sim.j.record(PartitionChange(topic=name, topic_id=topic_id, partition=0, before=None, after=state,
                                     changes=(K.CREATE,), election=ElectionType.NONE, reason=reason))
    sim.j.next_offset()
    sim.j.record(PartitionChange(topic=name, topic_id=topic_id, partition=0, before=state, after=None,
                                 changes=(K.DELETE,), election=ElectionType.NONE), new_offset=False)
    return e


def _partition_without_topic(sim: Simulator) -> BreachRecord | None:
    """A partition created under a topic id no TopicChange ever created (deleted at once, so the stray
    partition shows in exactly one state)."""
    active = [b for b in sorted(sim.brokers) if sim.brokers[b].active]
    if len(active) < 2:
        return None
    name, topic_id = f"stray-{sim.j.seq}", kafka_uuid(sim.rng)
    state = rules.new_partition(tuple(active[:2]), sim.active)
    e = _created_and_deleted(sim, name, topic_id, state, "injected: partition of a topic that was never created")
    _took_turn(sim, "state_continuity")
    return _record("state_continuity", e, f"{name}-0 created under topic id {topic_id}, never created")


def distinct_replicas(sim: Simulator) -> BreachRecord | None:
    if _turn(sim, "distinct_replicas", 2) == 1:
        return _duplicate_isr_member(sim)
    active = [b for b in sorted(sim.brokers) if sim.brokers[b].active]
    if len(active) < 2:
        return None
    a, b = active[0], active[1]
    name, topic_id = f"breach-{sim.j.seq}", kafka_uuid(sim.rng)
    sim.j.record(TopicChange(TopicChangeKind.CREATED, name, topic_id))
    state = rules.new_partition((a, b, a), sim.active)
    state = replace(state, isr=(a, b))
    e = _created_and_deleted(sim, name, topic_id, state, "injected: duplicate replica")
    sim.j.record(TopicChange(TopicChangeKind.DELETED, name, topic_id), index=1, new_offset=False)
    _took_turn(sim, "distinct_replicas")
    return _record("distinct_replicas", e, f"replicas {list(state.replicas)} list broker {a} twice")


@_on(_has_follower_in_isr)
def _duplicate_isr_member(sim: Simulator, p: Partition) -> BreachRecord | None:
    s = p.state
    broken = replace(s, isr=s.isr + (s.isr[-1],), partition_epoch=s.partition_epoch + 1)
    e = _broken_then_repaired(sim, p, broken, "injected: ISR lists a broker twice", "ISR fixed")
    _took_turn(sim, "distinct_replicas")
    return _record("distinct_replicas", e, f"ISR {list(broken.isr)} lists broker {s.isr[-1]} twice")


# an injector gives its breach's ground truth, with the set-up breaches it needed before it if any (a list)
INJECTORS: dict[str, Callable[[Simulator], BreachRecord | list[BreachRecord] | None]] = {
    "controller_epoch_monotonic": controller_epoch_monotonic,
    "election_safety": election_safety,
    "leader_epoch_monotonic": leader_epoch_monotonic,
    "partition_epoch_monotonic": partition_epoch_monotonic,
    "leader_in_isr": leader_in_isr,
    "isr_elr_sanity": isr_elr_sanity,
    "fenced_broker_not_in_isr": fenced_broker_not_in_isr,
    "valid_high_watermark": valid_high_watermark,
    "high_watermark_monotonic": high_watermark_monotonic,
    "unclean_election_allowed": unclean_election_allowed,
    "reassignment_legal": reassignment_legal,
    "leader_election_order": leader_election_order,
    "state_continuity": state_continuity,
    "distinct_replicas": distinct_replicas,
    # the bounded-liveness checks' (warnings): obligations met late (services/simulator/late.py)
    **LIVENESS_INJECTORS,
}
assert set(INJECTORS) == set(BREACHES) | set(LIVENESS_BREACHES)
