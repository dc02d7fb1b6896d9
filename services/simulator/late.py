"""Breaches of the bounded-liveness checks: an obligation the controller meets later than its deadline.

Each injector opens an obligation (a partition left leaderless with a live ISR, a reassignment started, a broker
fenced, a follower left behind the HW, a metadata record), lets the journal's clock jump past the check's
default deadline (`LATE_MS`; NoOpRecords take offsets meanwhile, as a working controller writes them, but for the
silent metadata log, whose point is that nothing at all was written), and meets it. The clock only moves
forward: the archive's hourly files keep their events in seq order. So that the jump makes no other obligation
late, the long ones first settle what the workload left open (`_settle`: fenced brokers unfenced, reassignments
cancelled, followers caught up and every partition sampled), legal set-up events before the breach. The ground
truth names the event that meets the obligation, where the check reports.

`broker_unfenced` and `controller_heartbeat` have no ZooKeeper-mode breach (ZooKeeper mode has no fenced state
and no metadata log): KRAFT_ONLY.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from schemas.events import BrokerChangeKind, ControllerEvent, ElectionType, LeaderRecoveryState, PartitionChangeKind
from services.simulator import partition_rules as rules
from services.simulator.config import BreachRecord
from services.simulator.model import Partition, catch_up
from services.simulator.workload import Simulator

K = PartitionChangeKind
LIVENESS_BREACHES = ("leader_elected", "reassignment_completes", "broker_unfenced", "replication_progress",
                     "controller_heartbeat")
KRAFT_ONLY = ("broker_unfenced", "controller_heartbeat")
# how much later than the journal's clock each obligation is met: a minute (a second for the short ones) beyond
# the checks' default deadlines (checks.catalog; tests/checks/test_detection_matrix.py holds them to it)
LATE_MS = {"leader_elected": 6_000, "reassignment_completes": 3_660_000, "broker_unfenced": 660_000,
           "replication_progress": 360_000, "controller_heartbeat": 11_000}


def _jump(sim: Simulator, ms: int, noops: bool = True) -> None:
    """The journal's clock `ms` later; with `noops`, the controller's NoOpRecords took offsets meanwhile."""
    if noops:
        sim.j.advance(ms)
    else:
        sim.j.time_ms += ms


def _settleable(sim: Simulator) -> bool:
    """Whether `_settle` can meet every open obligation now: each reassignment can be cancelled (the original
    replicas keep a live ISR member). Asked before any event is emitted: an injector that emits set-up events
    and then gives up is tried again at the next step, before the injections due after it."""
    return all(not p.deleted and p.reassignment is not None and rules.cancel_reassignment(p.state, sim.active)
               for p in sim.reassigning)


def _settle(sim: Simulator) -> bool:
    """Meet every obligation the workload has open, in legal steps: fenced brokers unfenced (their leaderless
    partitions elected), reassignments cancelled, followers out of the ISR caught up, every partition sampled
    (a replica's obligation is met at a sample). False when a reassignment cannot be cancelled yet."""
    if not _settleable(sim):
        return False
    for b in list(sim.brokers.values()):
        if b.registered and b.fenced:
            sim.unfence(b)
    for p in list(sim.reassigning):
        ch = None if p.deleted or p.reassignment is None else rules.cancel_reassignment(p.state, sim.active)
        if ch is None:
            return False
        sim.finish_reassignment(p)
        sim.apply(p, ch.after, ch.election, extra=(K.REASSIGNMENT_CANCEL,), reason="reassignment cancelled")
    for p in list(sim.live):
        if p.deleted:
            continue
        s = p.state
        for r in s.replicas:
            if r not in s.isr and r in sim.brokers and sim.brokers[r].registered:
                catch_up(p, r)
        sim.sample(p)
    return True


def _record(name: str, e: ControllerEvent, description: str) -> BreachRecord:
    p = e.payload
    return BreachRecord(name, e.seq, e.event_id, getattr(p, "topic", None), getattr(p, "partition", None),
                        description)


def _pick(sim: Simulator, ok: Callable[[Partition], bool]) -> Partition | None:
    def fits(p: Partition) -> bool:
        s = p.state
        return (p.reassignment is None and not p.frozen and s.leader >= 0
                and s.leader_recovery_state == LeaderRecoveryState.RECOVERED and ok(p))
    return sim.pick_partition(fits, tries=32) or next((p for p in sim.live if fits(p)), None)


def leader_elected(sim: Simulator) -> BreachRecord | None:
    """A partition's leader dropped (-1) while it and its ISR are live; the election comes 6 s later."""
    p = _pick(sim, lambda q: sim.active(q.state.leader))
    if p is None:
        return None
    s = p.state
    sim.apply(p, replace(s, leader=-1, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1),
              reason="injected: leader dropped while its ISR is live", follow_up=False)
    s = p.state
    new = next(r for r in s.replicas if r in s.isr and sim.active(r))
    _jump(sim, LATE_MS["leader_elected"])
    e = sim.apply(p, replace(s, leader=new, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1),
                  ElectionType.CLEAN, reason="leader elected late", follow_up=False)
    return _record("leader_elected", e, f"{p.topic.name}-{p.id} without a leader for {LATE_MS['leader_elected']} ms "
                   "while its ISR was live")


def reassignment_completes(sim: Simulator) -> BreachRecord | None:
    """A reassignment started and cancelled an hour and a minute later."""
    p = _pick(sim, lambda q: True)
    target = None if p is None else sim.choose_target(p.state, cancel=True)
    if p is None or target is None or not _settle(sim) or p.reassignment is not None or p.state.leader < 0:
        return None
    sim.start_reassignment(p, target, cancel=True)
    ch = rules.cancel_reassignment(p.state, sim.active)
    if ch is None:  # the original replicas have no live ISR member: the workload cancels it when they do
        return None
    sim.finish_reassignment(p)
    _jump(sim, LATE_MS["reassignment_completes"])
    e = sim.apply(p, ch.after, ch.election, extra=(K.REASSIGNMENT_CANCEL,), reason="reassignment cancelled late")
    return _record("reassignment_completes", e, f"{p.topic.name}-{p.id} reassigning for "
                   f"{LATE_MS['reassignment_completes']} ms")


def broker_unfenced(sim: Simulator) -> BreachRecord | None:
    """A broker fenced and unfenced 11 minutes later (KRaft)."""
    if sim.j.zookeeper or not _settle(sim):
        return None
    # once the fenced brokers are unfenced, the only ones down are those in controlled shutdown: one of them
    # is the one fenced (its shutdown's end, which the workload would have fenced it at), else an active one
    b = next((x for x in sim.brokers.values() if x.registered and x.in_controlled_shutdown), None)
    b = b or sim.broker_to_take_down()
    if b is None:
        return None
    sim.fence(b, f"broker {b.id} session timed out")
    _jump(sim, LATE_MS["broker_unfenced"])
    before = b.state()
    b.fenced = False
    e = sim.broker_event(b, BrokerChangeKind.UNFENCED, before)
    sim.elect_offline(f"broker {b.id} unfenced")
    return _record("broker_unfenced", e, f"broker {b.id} fenced for {LATE_MS['broker_unfenced']} ms")


def replication_progress(sim: Simulator) -> BreachRecord | None:
    """A follower leaves the ISR and stays behind the sampled HW for 6 minutes, then catches up."""
    # three or more ISR members, all live, and one more than min.insync.replicas: with ELR on the HW advances only
    # while |ISR| >= min ISR, and it must, past the follower left behind
    least = sim.cfg.min_insync_replicas

    def fits(q: Partition) -> bool:
        isr = q.state.isr
        return len(isr) > max(2, q.topic.min_isr(least)) and all(sim.active(r) for r in isr)
    p = _pick(sim, fits)
    if p is None or not _settle(sim) or not fits(p) or p.reassignment is not None or p.state.leader < 0:
        return None
    s = p.state
    r = next(x for x in s.isr if x != s.leader)
    sim.apply_change(p, sim.build(p, target_isr=tuple(x for x in s.isr if x != r)), "isr shrink: follower stuck")
    for _ in range(8):  # samples until one's HW is above the follower's LEO: the next sample owes
        sim.sample(p)
        if p.leo.get(r, 0) < p.hw:
            break
    else:
        return None  # the HW did not move (ELR: below min ISR); the workload expands it again
    sim.sample(p)
    _jump(sim, LATE_MS["replication_progress"])
    catch_up(p, r)
    e = sim.sample(p)
    return _record("replication_progress", e, f"{p.topic.name}-{p.id} replica {r} behind the HW for "
                   f"{LATE_MS['replication_progress']} ms")


def controller_heartbeat(sim: Simulator) -> BreachRecord | None:
    """Two metadata records at adjacent offsets 11 s apart: nothing written between them (KRaft)."""
    p = None if sim.j.zookeeper else _pick(sim, lambda q: True)
    if p is None:
        return None
    sim.set_topic_config(p.topic, "retention.ms", "604800000")
    _jump(sim, LATE_MS["controller_heartbeat"], noops=False)
    e = sim.set_topic_config(p.topic, "retention.ms", "604800001")
    return _record("controller_heartbeat", e, f"no metadata record for {LATE_MS['controller_heartbeat']} ms")


LIVENESS_INJECTORS: dict[str, Callable[[Simulator], BreachRecord | None]] = {
    "leader_elected": leader_elected,
    "reassignment_completes": reassignment_completes,
    "broker_unfenced": broker_unfenced,
    "replication_progress": replication_progress,
    "controller_heartbeat": controller_heartbeat,
}
assert tuple(LIVENESS_INJECTORS) == LIVENESS_BREACHES
