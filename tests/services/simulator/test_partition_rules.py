"""Kafka's controller rules, one by one."""
from __future__ import annotations

from schemas.events import ElectionType, LeaderRecoveryState, PartitionChangeKind, PartitionState
from services.normalize.classify import change_kinds
from services.simulator import partition_rules as rules

K = PartitionChangeKind
S = PartitionState((1, 2, 3), (1, 2, 3), leader=1, leader_epoch=5, partition_epoch=9)


def everyone(r: int) -> bool:
    return True


def without(*down: int):
    return lambda r: r not in down


def build(s=S, mv=21, elr=False, min_isr=2, **kw):
    kw.setdefault("acceptable", everyone)
    return rules.build(s, mv=mv, elr_enabled=elr, min_isr=min_isr, **kw)


def test_isr_shrink_and_expand_keep_leader_epoch_at_mv_12_and_later():
    shrink = build(target_isr=(1, 2)).after
    assert (shrink.isr, shrink.leader_epoch, shrink.partition_epoch) == ((1, 2), 5, 10)
    expand = build(shrink, target_isr=(1, 2, 3)).after
    assert (expand.leader_epoch, expand.partition_epoch) == (5, 11)
    assert change_kinds(S, shrink) == (K.ISR,)


def test_isr_shrink_forces_leader_epoch_bump_before_mv_12():
    ch = build(target_isr=(1, 2), mv=11)
    assert (ch.after.leader, ch.after.leader_epoch, ch.election) == (1, 6, ElectionType.NONE)
    assert change_kinds(S, ch.after) == (K.LEADER_EPOCH, K.ISR)
    assert build(build(target_isr=(1, 2), mv=11).after, target_isr=(1, 2, 3), mv=11).after.leader_epoch == 6


def test_no_op_change_is_dropped():
    assert build(target_isr=S.isr) is None
    assert build(preferred=True) is None  # the preferred replica already leads


def test_preferred_election():
    s = PartitionState((1, 2, 3), (1, 2, 3), leader=2, leader_epoch=5, partition_epoch=9)
    ch = build(s, preferred=True)
    assert (ch.after.leader, ch.after.leader_epoch, ch.election) == (1, 6, ElectionType.PREFERRED)
    assert build(s, preferred=True, acceptable=without(1)) is None  # preferred replica down: keep leader


def test_fencing_the_leader_elects_the_next_isr_replica_cleanly():
    ch = build(target_isr=(2, 3), acceptable=without(1))
    assert (ch.after.leader, ch.after.isr, ch.after.leader_epoch, ch.election) == (2, (2, 3), 6, ElectionType.CLEAN)
    cs = build(target_isr=(2, 3), acceptable=without(1), clean_type=ElectionType.CONTROLLED_SHUTDOWN)
    assert cs.election == ElectionType.CONTROLLED_SHUTDOWN


def test_fencing_the_last_isr_member_leaves_no_leader_and_keeps_the_isr():
    s = PartitionState((1, 2, 3), (1,), leader=1, leader_epoch=5, partition_epoch=9)
    ch = build(s, target_isr=(), acceptable=without(1))
    assert (ch.after.leader, ch.after.isr, ch.after.leader_epoch) == (-1, (1,), 6)
    assert ch.election == ElectionType.NONE


def test_unclean_election_only_when_allowed_sets_isr_and_recovering():
    s = PartitionState((1, 2, 3), (1,), leader=1, leader_epoch=5, partition_epoch=9)
    ch = build(s, target_isr=(), acceptable=without(1), unclean_ok=True)
    a = ch.after
    assert (a.leader, a.isr, a.leader_recovery_state, ch.election) == (2, (2,), LeaderRecoveryState.RECOVERING,
                                                                        ElectionType.UNCLEAN)
    recovered = build(a, recovered=True)
    assert recovered.after.leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert recovered.after.leader_epoch == a.leader_epoch
    assert change_kinds(a, recovered.after) == (K.RECOVERY_STATE,)


def test_elr_tracks_isr_below_min_isr_and_elects_from_it():
    s = PartitionState((1, 2, 3), (1, 2), leader=1, leader_epoch=5, partition_epoch=9)
    shrunk = build(s, target_isr=(1,), elr=True, mv=25).after
    assert (shrunk.isr, shrunk.elr) == ((1,), (2,))
    # The last ISR member is fenced: with ELR the ISR may become empty.
    off = build(shrunk, target_isr=(), elr=True, mv=25, acceptable=without(1, 2)).after
    assert (off.leader, off.isr, off.elr) == (-1, (), (1, 2))
    back = build(off, elr=True, mv=25, acceptable=without(1))
    assert (back.after.leader, back.after.isr, back.after.elr, back.election) == (2, (2,), (1,), ElectionType.ELR)
    full = build(back.after, target_isr=(2, 1, 3), elr=True, mv=25).after
    assert (full.elr, full.last_known_elr) == ((), ())


def test_reassignment_start_grows_to_oar_union_rar():
    s = PartitionState((1, 2, 3), (1, 2, 3), leader=1, leader_epoch=5, partition_epoch=9)
    a = rules.start_reassignment(s, (4, 1, 5))
    assert a.replicas == (4, 1, 5, 2, 3)
    assert (a.adding_replicas, a.removing_replicas) == ((4, 5), (2, 3))
    assert (a.isr, a.leader, a.leader_epoch, a.partition_epoch) == ((1, 2, 3), 1, 5, 10)
    assert not rules.can_complete(a)
    caught = PartitionState(a.replicas, (1, 2, 3, 4, 5), 1, 5, 11, (4, 5), (2, 3))
    assert rules.can_complete(caught)
    done = rules.complete_reassignment(caught, everyone)
    d = done.after
    assert (d.replicas, d.isr, d.adding_replicas, d.removing_replicas) == ((4, 1, 5), (1, 4, 5), (), ())
    assert (d.leader, d.leader_epoch, d.partition_epoch, done.election) == (1, 6, 12, ElectionType.NONE)


def test_reassignment_completion_moves_a_removed_leader():
    s = PartitionState((4, 5, 1, 2), (1, 2, 4, 5), 1, 5, 11, (4, 5), (1, 2))
    done = rules.complete_reassignment(s, everyone)
    assert (done.after.leader, done.after.leader_epoch, done.election) == (4, 6, ElectionType.REASSIGNMENT)


def test_reassignment_cancel_restores_the_original_replicas():
    s = PartitionState((1, 2, 3), (1, 2, 3), leader=1, leader_epoch=5, partition_epoch=9)
    started = rules.start_reassignment(s, (1, 4, 2))
    with_4 = PartitionState(started.replicas, (1, 2, 3, 4), 1, 5, 11, started.adding_replicas,
                            started.removing_replicas)
    cancel = rules.cancel_reassignment(with_4, everyone)
    c = cancel.after
    assert (c.replicas, c.isr, c.adding_replicas, c.removing_replicas) == ((1, 2, 3), (1, 2, 3), (), ())
    assert (c.leader, c.leader_epoch) == (1, 6)  # a replica left the replica set: forced bump


def test_new_partition():
    s = rules.new_partition((3, 1, 2), without(1))
    assert (s.replicas, s.isr, s.leader, s.leader_epoch, s.partition_epoch) == ((3, 1, 2), (3, 2), 3, 0, 0)
