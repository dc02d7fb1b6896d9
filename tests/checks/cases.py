"""Per invariant: histories that break exactly it (marked), and clean ones that must pass."""
from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from schemas.events import (
    BrokerChangeKind, ConfigResourceType, ElectionType, LeaderRecoveryState, PartitionChange, PartitionChangeKind,
    SourceKind,
)
from tests.checks.histories import History, baseline

K = PartitionChangeKind
RECOVERING = LeaderRecoveryState.RECOVERING

Case = Callable[[str], History]
# each case that breaks an invariant, by its function's name: the invariant it breaks and the history
VIOLATING: dict[str, tuple[str, Case]] = {}
# each clean case (allowed breaches are fine, violations are not), by its function's name
CLEAN: dict[str, Case] = {}


def violates(invariant: str) -> Callable[[Case], Case]:
    """Registers the decorated history as a case that breaks `invariant` (and nothing else)."""
    def register(case: Case) -> Case:
        assert case.__name__ not in VIOLATING, case.__name__
        VIOLATING[case.__name__] = (invariant, case)
        return case
    return register


def clean(case: Case) -> Case:
    """Registers the decorated history as a clean case."""
    assert case.__name__ not in CLEAN, case.__name__
    CLEAN[case.__name__] = case
    return case


@violates("controller_epoch_monotonic")
def epoch_regressed(c: str) -> History:
    h = baseline(c)
    h.controller = (100, 1)  # a zombie controller of epoch 1 writes after epoch 2 began
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.mark("event_controller_epoch_regressed")
    h.controller = (101, 2)
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    return h


@violates("election_safety")
def two_controllers(c: str) -> History:
    h = baseline(c)
    h.elect_controller(102, 2)
    h.mark("two_controllers_in_one_epoch")
    h.change("t", 0, (K.ISR,), isr=(2,))
    return h


@violates("leader_epoch_monotonic")
def leader_epoch_kept(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.LEADER,), ElectionType.PREFERRED, leader=4, leader_epoch=h.parts[("t", 0)].leader_epoch)
    h.mark("leader_changed_without_epoch_bump")
    return h


@violates("leader_epoch_monotonic")
def leader_epoch_decreased(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,), leader_epoch=h.parts[("t", 0)].leader_epoch - 1)
    h.mark("leader_epoch_decreased")
    return h


@violates("leader_epoch_monotonic")
def isr_shrink_old_mv(c: str) -> History:
    h = baseline(c, mv=11)
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.mark("isr_shrink_without_epoch_bump_before_mv12")
    # Baseline's own shrinks (before this) also lack the bump at MV 11: mark them too.
    for i, e in enumerate(h.events[:-1]):
        p = e.payload
        if type(p).__name__ == "PartitionChange" and p.before and p.after and \
                not set(p.before.isr) <= set(p.after.isr) and p.before.leader == p.after.leader and \
                p.before.leader_epoch == p.after.leader_epoch and set(p.before.replicas) <= set(p.after.replicas):
            h.mark("isr_shrink_without_epoch_bump_before_mv12", i)
    return h


@violates("partition_epoch_monotonic")
def partition_epoch_kept(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,), partition_epoch=h.parts[("t", 0)].partition_epoch)
    h.mark("partition_epoch_not_increased")
    return h


@violates("leader_in_isr")
def leader_outside_isr(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(4,))
    h.mark("leader_not_in_isr")
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    return h


@violates("isr_elr_sanity")
def isr_elr_overlap(c: str) -> History:
    h = baseline(c, mv=23)  # an ELR needs metadata.version >= 22
    h.change("t", 0, (K.ELR,), elr=(4,))
    h.mark("isr_elr_overlap")
    h.change("t", 0, (K.ELR,), elr=())
    return h


@violates("fenced_broker_not_in_isr")
def fenced_joins_isr(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.broker(4, BrokerChangeKind.FENCED, fenced=True)
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    h.mark("fenced_broker_joined_isr")
    return h


@violates("fenced_broker_not_in_isr")
def fenced_while_in_isr(c: str) -> History:
    h = baseline(c)
    h.broker(4, BrokerChangeKind.FENCED, fenced=True)  # t-0 still has 4 in its ISR
    h.mark("fenced_while_leader_or_in_isr")
    return h


@violates("valid_high_watermark")
def hw_above_leo(c: str) -> History:
    h = baseline(c)
    h.sample("t", 0, 200, {2: 210, 4: 190})
    h.mark("hw_above_isr_member_leo")
    return h


@violates("high_watermark_monotonic")
def hw_decreased(c: str) -> History:
    h = baseline(c)
    h.sample("t", 0, 145, {2: 160, 4: 150})
    h.mark("hw_decreased")
    return h


def _topic_u(h: History) -> None:
    h.topic("u")
    h.create("u", 0, (2, 3, 4))
    h.change("u", 0, (K.ISR,), isr=(2,))
    h.change("u", 0, (K.LEADER,), ElectionType.CLEAN, leader=-1)


@violates("unclean_election_allowed")
def unclean_not_allowed(c: str) -> History:
    h = baseline(c)
    _topic_u(h)
    h.change("u", 0, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=3, isr=(3,),
             leader_recovery_state=RECOVERING)
    h.mark("unclean_election_not_allowed")
    return h


@violates("unclean_election_allowed")
def unclean_without_recovering(c: str) -> History:
    h = baseline(c)
    # t allows unclean elections (baseline's topic config), but the new leader stays RECOVERED
    h.change("t", 1, (K.LEADER, K.ISR), ElectionType.UNCLEAN, leader=4, isr=(4,))
    h.mark("unclean_election_without_recovering")
    return h


@violates("unclean_election_allowed")
def unclean_without_recovering_kraft_logs(c: str) -> History:
    """The same read from broker logs without a BrokerChange (a KRaft cluster's: its lines state the recovery)."""
    h = baseline(c)
    h.source = SourceKind.BROKER_LOG
    h.change("t", 1, (K.LEADER, K.ISR), ElectionType.UNCLEAN, leader=4, isr=(4,))
    h.mark("unclean_election_without_recovering")
    return h


def _kip966_leaderless(h: History, last_known: tuple[int, ...]) -> None:
    """u-0 after its last ISR member (2) died uncleanly, as Kafka 4.x with ELR records it: no leader,
    ISR and ELR empty, the last known ELR holding `last_known`. (Broker 2's fence and unfence are left
    out: it also serves t's partitions, which fenced_broker_not_in_isr would then judge.)"""
    h.topic("u")
    h.create("u", 0, (2, 3, 4))
    h.change("u", 0, (K.ISR,), isr=(2,))
    h.change("u", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.NONE, leader=-1, isr=(), last_known_elr=last_known)


@violates("unclean_election_allowed")
def last_known_not_the_new_leader(c: str) -> History:
    h = baseline(c, mv=23)  # KIP-966 needs metadata.version >= 22
    _kip966_leaderless(h, (3,))  # the last known ELR names 3, yet 2 is elected: plain unclean
    h.change("u", 0, (K.LEADER, K.ISR, K.ELR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=2, isr=(2,),
             last_known_elr=(), leader_recovery_state=RECOVERING)
    h.mark("unclean_election_not_allowed")
    return h


@violates("reassignment_legal")
def adding_in_isr_at_start(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.REPLICAS, K.ISR, K.REASSIGNMENT_START), replicas=(2, 4, 1, 3), adding_replicas=(1,),
             removing_replicas=(3,), isr=(1, 2, 4))
    h.mark("adding_joined_isr_at_start")
    return h


@violates("state_continuity")
def lost_event(c: str) -> History:
    h = baseline(c)
    from dataclasses import replace

    h.change("t", 0, (K.ISR,), before=replace(h.parts[("t", 0)], isr=(2,)), isr=(2, 4))
    h.mark("before_differs_from_previous_after")
    return h


@violates("state_continuity")
def lost_event_across_a_request_log_gap(c: str) -> History:
    """Lines of a request log not read are a gap of attribution: they excuse no break of the controller's state."""
    h = baseline(c)
    from dataclasses import replace

    h.request_log_gap()
    h.change("t", 0, (K.ISR,), before=replace(h.parts[("t", 0)], isr=(2,)), isr=(2, 4))
    h.mark("before_differs_from_previous_after")
    return h


@violates("distinct_replicas")
def duplicate_replica(c: str) -> History:
    h = baseline(c)
    h.create("t", 2, (2, 2, 4))  # the ISR (the replicas) has the duplicate too
    h.mark("duplicate_replica")
    h.mark("duplicate_in_isr")
    return h


@violates("distinct_replicas")
def rack_unaware_create(c: str) -> History:
    h = baseline(c)
    h.create("t", 2, (1, 4, 2))  # racks a, a, b while racks a, b, c have active brokers
    h.mark("replicas_share_rack")
    return h


# --- clean histories (allowed breaches are fine, violations are not) ---------------------------------

@clean
def clean_baseline(c: str) -> History:
    return baseline(c)


@clean
def clean_unknown_mv(c: str) -> History:
    return baseline(c, mv=None)


@clean
def clean_unclean_by_cluster_default(c: str) -> History:
    h = baseline(c)
    h.config(ConfigResourceType.BROKER, "", "unclean.leader.election.enable", "true")
    _topic_u(h)
    h.change("u", 0, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=3, isr=(3,),
             leader_recovery_state=RECOVERING)
    return h


@clean
def clean_zookeeper_broker_logs_unclean_recovered(c: str) -> History:
    """ZooKeeper-mode broker logs (a controller's registered-brokers cache read from them: a BrokerChange) of a
    release before 3.2: an unclean election the topic allows, and no recovery state, as ZooKeeper's own."""
    h = baseline(c)
    h.source = SourceKind.BROKER_LOG
    h.broker(5, BrokerChangeKind.REGISTERED, fenced=False)
    h.change("t", 1, (K.LEADER, K.ISR), ElectionType.UNCLEAN, leader=4, isr=(4,))
    return h


@clean
def clean_gap_then_bootstrap(c: str) -> History:
    """A capture gap, then a resync: bootstrap states jump (lower epochs), a later break is allowed."""
    from dataclasses import replace

    h = baseline(c)
    h.gap()
    cur = h.parts[("t", 0)]
    h.change("t", 0, (), bootstrap=True, before=cur, leader_epoch=1, partition_epoch=1, isr=(2,))
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    h.gap()
    h.change("t", 1, (K.ISR,), before=replace(h.parts[("t", 1)], isr=(3, 4)), isr=(3,))  # allowed (gap)
    return h


@clean
def clean_hw_drop_after_unclean(c: str) -> History:
    h = baseline(c)
    h.sample("t", 1, 70, {3: 80})
    h.change("t", 1, (K.ISR,), isr=(3, 4))
    h.change("t", 1, (K.ISR,), isr=(4,), leader=4)
    h.change("t", 1, (K.ISR,), isr=(4,), leader=-1)
    h.broker(2, BrokerChangeKind.UNFENCED, fenced=False)
    h.change("t", 1, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=2, isr=(2,),
             leader_recovery_state=RECOVERING)
    h.sample("t", 1, 40, {2: 40})
    return h


@clean
def clean_removal_only_and_cancel(c: str) -> History:
    h = baseline(c)
    # removal-only reassignment completing in one step (leader epoch bumps: a replica left)
    h.create("t", 3, (1, 2, 3))
    h.change("t", 3, (K.REPLICAS, K.ISR, K.REASSIGNMENT_COMPLETE), replicas=(1, 2), isr=(1, 2),
             leader_epoch=1)
    # start then cancel
    h.change("t", 3, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(1, 4, 2), adding_replicas=(4,),
             removing_replicas=(2,))
    h.change("t", 3, (K.REPLICAS, K.REASSIGNMENT_CANCEL), replicas=(1, 2), adding_replicas=(),
             removing_replicas=(), leader_epoch=2)
    return h


@clean
def clean_zookeeper_source(c: str) -> History:
    h = baseline(c, mv=None)
    from dataclasses import replace

    h.events = [replace(e, source=replace(e.source, kind=SourceKind.ZOOKEEPER)) for e in h.events]
    return h


@clean
def clean_reassignment_moves_leader(c: str) -> History:
    """KRaft completes a reassignment in the record that adds the target replica to the ISR; when the
    old leader is removed, leadership moves to that replica, which was not in the previous ISR. Not
    an unclean election (seen on real 3.9 and 4.x clusters)."""
    h = baseline(c)
    h.create("t", 4, (1, 2, 3))
    h.change("t", 4, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 2, 3, 1), adding_replicas=(4,),
             removing_replicas=(1,))
    h.change("t", 4, (K.LEADER, K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE), ElectionType.REASSIGNMENT,
             replicas=(4, 2, 3), isr=(2, 3, 4), leader=4, adding_replicas=(), removing_replicas=())
    return h


@clean
def clean_kip966_last_known_leader(c: str) -> History:
    """Kafka 4.x gives a leaderless partition back to its last known leader (the one member of the
    last known ELR), in RECOVERING, with unclean.leader.election.enable unset: allowed, and named."""
    h = baseline(c, mv=23)  # KIP-966 needs metadata.version >= 22
    _kip966_leaderless(h, (2,))
    h.change("u", 0, (K.LEADER, K.ISR, K.ELR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=2, isr=(2,),
             last_known_elr=(), leader_recovery_state=RECOVERING)
    return h


# --- blind spots the catalog once had ----------------------------------------------------------------
# At the end of baseline: t-0 replicas (2,3,4), isr (2,4), leader 2; t-1 replicas (2,3,4), isr (3,),
# leader 3; brokers 1, 2, 3, 4 registered and unfenced.

@violates("distinct_replicas")
def dup_isr_on_expand(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2, 4, 4))
    h.mark("duplicate_in_isr")
    return h


@violates("distinct_replicas")
def dup_elr_on_shrink(c: str) -> History:
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4, 4))  # 4 leaves the ISR for the ELR, listed twice
    h.mark("duplicate_in_elr")
    return h


@violates("distinct_replicas")
def dup_adding_at_start(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(2, 3, 4, 1), adding_replicas=(1, 1),
             removing_replicas=(3,))
    h.mark("duplicate_in_adding")
    return h


@violates("distinct_replicas")
def dup_removing_at_start(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(2, 3, 4, 1), adding_replicas=(1,),
             removing_replicas=(3, 3))
    h.mark("duplicate_in_removing")
    return h


def _fence_4(h: History, kind: BrokerChangeKind = BrokerChangeKind.FENCED) -> None:
    """Broker 4 leaves t-0's ISR, then is fenced (or unregistered): the legal order."""
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.broker(4, kind, fenced=True)


@violates("fenced_broker_not_in_isr")
def fenced_never_in_isr_last_standing(c: str) -> History:
    h = baseline(c)
    _fence_4(h)
    h.change("t", 1, (K.LEADER, K.ISR), leader=-1, isr=(4,))  # 4 was not in t-1's ISR (3)
    h.mark("fenced_broker_joined_isr")
    return h


@violates("fenced_broker_not_in_isr")
def unregistered_never_in_isr_last_standing(c: str) -> History:
    h = baseline(c)
    _fence_4(h, BrokerChangeKind.UNREGISTERED)
    h.change("t", 1, (K.LEADER, K.ISR), leader=-1, isr=(4,))
    h.mark("unregistered_broker_joined_isr")
    return h


@violates("fenced_broker_not_in_isr")
def fenced_sole_member_at_create(c: str) -> History:
    h = baseline(c)
    _fence_4(h)
    h.create("t", 2, (4, 2, 3), isr=(4,), leader=-1)  # a create is no "last replica standing"
    h.mark("fenced_broker_joined_isr")
    return h


def _shut_down_4(h: History) -> None:
    """Broker 4 enters controlled shutdown, and Kafka moves it out of t-0's ISR."""
    h.broker(4, BrokerChangeKind.CONTROLLED_SHUTDOWN, fenced=False, shutdown=True)
    h.change("t", 0, (K.ISR,), isr=(2,))


@violates("fenced_broker_not_in_isr")
def shutting_down_elected(c: str) -> History:
    h = baseline(c)
    h.broker(4, BrokerChangeKind.CONTROLLED_SHUTDOWN, fenced=False, shutdown=True)
    h.change("t", 0, (K.LEADER,), ElectionType.PREFERRED, leader=4)  # 4 is in the ISR but shutting down
    h.mark("shutting_down_broker_became_leader")
    return h


@violates("fenced_broker_not_in_isr")
def shutting_down_joins_isr(c: str) -> History:
    h = baseline(c)
    _shut_down_4(h)
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    h.mark("shutting_down_broker_joined_isr")
    return h


@violates("fenced_broker_not_in_isr")
def shutting_down_leads_new_partition(c: str) -> History:
    h = baseline(c)
    _shut_down_4(h)
    h.create("t", 2, (4, 2, 3))
    h.mark("shutting_down_broker_became_leader")
    return h


@violates("isr_elr_sanity")
def elr_from_outside_isr(c: str) -> History:
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(3,))  # 3 was not in the ISR (2,4)
    h.mark("elr_member_not_from_isr")
    return h


@violates("isr_elr_sanity")
def elr_outsider_elected(c: str) -> History:
    """The case once missed: a broker put in the ELR without coming from the ISR, then elected leader
    from the ELR (which unclean_election_allowed counts as clean)."""
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(4,), elr=(3,), leader=4)
    h.mark("elr_member_not_from_isr")
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.CLEAN, leader=3, isr=(3,), elr=())
    return h


@violates("isr_elr_sanity")
def elr_at_old_metadata_version(c: str) -> History:
    h = baseline(c)  # metadata.version 21 (3.9): records without ELR fields
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.mark("elr_before_metadata_version_22")
    return h


@violates("isr_elr_sanity")
def last_known_elr_at_old_metadata_version(c: str) -> History:
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,), last_known_elr=(4,))
    h.mark("elr_before_metadata_version_22")
    return h


# legal look-alikes of the blind-spot rules

@clean
def clean_lists_reordered(c: str) -> History:
    """The same members in another order, and a broker in adding that is (rightly) in replicas too."""
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(4, 2))
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(2, 3, 4, 1), adding_replicas=(1,),
             removing_replicas=(3,))
    return h


@clean
def clean_last_replica_standing_then_fence(c: str) -> History:
    """The last ISR member's broker goes away: the partition keeps it (leader -1), then it is fenced."""
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.change("t", 0, (K.LEADER,), ElectionType.CLEAN, leader=-1)  # isr stays (2,)
    h.broker(2, BrokerChangeKind.FENCED, fenced=True)
    return h


@clean
def clean_controlled_shutdown(c: str) -> History:
    """Broker 4 leads t-0, enters controlled shutdown (still leader and in the ISR at that record),
    Kafka moves leadership and the ISR away, then fences it: nothing to report."""
    h = baseline(c)
    h.change("t", 0, (K.LEADER,), ElectionType.PREFERRED, leader=4)
    h.broker(4, BrokerChangeKind.CONTROLLED_SHUTDOWN, fenced=False, shutdown=True)
    h.change("t", 0, (K.LEADER, K.ISR), ElectionType.CONTROLLED_SHUTDOWN, leader=2, isr=(2,))
    h.broker(4, BrokerChangeKind.FENCED, fenced=True)
    return h


@clean
def clean_elr_from_isr(c: str) -> History:
    """KIP-966: ISR members removed below min ISR move into the ELR; later the ELR empties."""
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.change("t", 0, (K.ISR, K.ELR), isr=(2, 4), elr=())
    return h


def _start_move(h: History) -> None:
    """t-0 from (2,3,4) to target (2,4,1): grow to the union, adding (1), removing (3)."""
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(2, 3, 4, 1), adding_replicas=(1,),
             removing_replicas=(3,))


@violates("reassignment_legal")
def retarget_removes_a_stranger(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 3, 4, 1, 5), removing_replicas=(3, 5))  # 5 was never a replica
    h.mark("retarget_removing_not_replicas")
    return h


@violates("reassignment_legal")
def retarget_removes_strangers_and_retargets(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 3, 4, 1, 5, 6), adding_replicas=(1, 5), removing_replicas=(3, 6))
    h.mark("retarget_removing_not_replicas")
    return h


@violates("reassignment_legal")
def retarget_removes_stranger_second_time(c: str) -> History:
    h = baseline(c)
    h.register(5)
    _start_move(h)
    # a legal re-target to (2,4,5) first (KRaft: replicas = target ∪ current), then one naming broker 6
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 5, 3, 1), adding_replicas=(5,), removing_replicas=(3, 1))
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 5, 3, 1, 6), removing_replicas=(3, 1, 6))
    h.mark("retarget_removing_not_replicas")
    return h


@violates("reassignment_legal")
def retarget_shrinks_early(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 1), removing_replicas=(),  # 3 dropped, 1 not in the ISR
             leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    h.mark("retarget_shrank_before_adding_in_isr")
    return h


@violates("reassignment_legal")
def retarget_shrinks_to_target(c: str) -> History:
    h = baseline(c)
    h.register(5)
    _start_move(h)
    # re-target to (2,5): replicas cut straight to target + adding while neither 1 nor 5 is in the ISR
    h.change("t", 0, (K.REPLICAS, K.ISR), replicas=(2, 5, 1), isr=(2,), adding_replicas=(5, 1), removing_replicas=(),
             leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    h.mark("retarget_shrank_before_adding_in_isr")
    return h


@violates("reassignment_legal")
def retarget_shrinks_while_adding_more(c: str) -> History:
    h = baseline(c)
    _start_move(h)
    # re-target adds 5 and drops the removing replica 3 at once, before 1 (or 5) is in the ISR
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 1, 5), adding_replicas=(1, 5), removing_replicas=(),
             leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    h.mark("retarget_shrank_before_adding_in_isr")
    return h


@clean
def clean_retarget_kraft(c: str) -> History:
    """KRaft re-targets (2,3,4)->(2,4,1) to (2,4,5): replicas = target ∪ current, adding = target -
    current, removing = current - target (1 goes from adding to removing); then 5 joins the ISR via the
    leader and the move completes."""
    h = baseline(c)
    h.register(5)
    _start_move(h)
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 5, 3, 1), adding_replicas=(5,), removing_replicas=(3, 1))
    h.change("t", 0, (K.ISR,), isr=(2, 4, 5))
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(2, 4, 5), adding_replicas=(),
             removing_replicas=(), leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    return h


@clean
def clean_retarget_zookeeper_style(c: str) -> History:
    """ZooKeeper's controller re-targets from the original replicas: RS = TRS ∪ ORS, so an adding replica
    the new target drops leaves the replica set (1 here), which is legal."""
    h = baseline(c)
    h.register(5)
    _start_move(h)
    h.change("t", 0, (K.REPLICAS,), replicas=(2, 4, 5, 3), adding_replicas=(5,), removing_replicas=(3,),
             leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    return h


# --- partitions keyed by topic id, a live topic for every change -------------------------------------

def _topic_u_deleted(h: History) -> str:
    """Topic u created with partition u-0 and deleted (partitions first, as KRaft does); its old id."""
    h.topic("u", "UOLDAAAAAAAAAAAAAAAAAA")
    h.create("u", 0, (2, 3, 4))
    h.delete_topic("u")
    return "UOLDAAAAAAAAAAAAAAAAAA"


@violates("state_continuity")
def partition_created_under_deleted_id(c: str) -> History:
    h = baseline(c)
    _topic_u_deleted(h)
    h.create("u", 0, (2, 3, 4))  # no TopicChange: created under the deleted id
    h.mark("partition_change_without_live_topic")
    return h


@violates("state_continuity")
def partition_of_a_topic_never_created(c: str) -> History:
    h = baseline(c)
    h.create("v", 0, (2, 3, 4))
    h.mark("partition_change_without_live_topic")
    return h


@violates("state_continuity")
def old_id_written_after_recreate(c: str) -> History:
    """u is deleted and re-created under a new id; then a change is written under the old id, with a
    before: the old lineage was deleted (continuity by id), and the old id is no live topic."""
    from dataclasses import replace

    h = baseline(c)
    old = _topic_u_deleted(h)
    h.topic("u", "UNEWAAAAAAAAAAAAAAAAAA")
    h.create("u", 0, (2, 3, 4))
    st = h.parts[("u", 0)]
    after = replace(st, isr=(2, 3), partition_epoch=st.partition_epoch + 1)
    h._emit(PartitionChange("u", old, 0, st, after, (K.ISR,), ElectionType.NONE))
    h.mark("before_of_deleted_partition")
    h.mark("partition_change_without_live_topic")
    return h


@clean
def clean_topic_recreated(c: str) -> History:
    """Delete and re-create under a new id, then changes under the new id: a fresh lineage."""
    h = baseline(c)
    _topic_u_deleted(h)
    h.topic("u", "UNEWAAAAAAAAAAAAAAAAAA")
    h.create("u", 0, (3, 4, 2))
    h.change("u", 0, (K.ISR,), isr=(3, 4))
    return h


@clean
def clean_topic_lost_in_a_gap(c: str) -> History:
    """The topic's creation fell into a capture gap: its partition's change is allowed, not violated."""
    h = baseline(c)
    h.gap()
    h.create("w", 0, (2, 3, 4))
    return h


# --- a re-registration while still in ISRs, by metadata.version --------------------------------------
# Kafka < 4.0-IV1 (e.g. 3.9 at metadata.version 21) writes a returning broker's RegisterBrokerRecord
# (fenced) while the broker is still in ISRs: a known anomaly, allowed. From 4.0-IV1 (23) the controller
# removes it from the ISRs and ELRs first (KAFKA-15586), so the same history is a violation.

def _reregister(h: History, bid: int) -> None:
    h.broker(bid, BrokerChangeKind.REGISTERED, fenced=True)


@violates("fenced_broker_not_in_isr")
def reregistered_in_isr_at_mv23(c: str) -> History:
    h = baseline(c, mv=23)
    _reregister(h, 4)  # t-0's ISR still holds 4
    h.mark("fenced_while_leader_or_in_isr")
    return h


@violates("fenced_broker_not_in_isr")
def reregistered_leader_at_mv27(c: str) -> History:
    h = baseline(c, mv=27)
    _reregister(h, 3)  # 3 leads t-1
    h.mark("fenced_while_leader_or_in_isr")
    return h


@violates("fenced_broker_not_in_isr")
def reregistered_twice_at_mv25(c: str) -> History:
    h = baseline(c, mv=25)
    _reregister(h, 2)  # in t-0's ISR, and leader
    h.mark("fenced_while_leader_or_in_isr")
    h.broker(2, BrokerChangeKind.UNFENCED, fenced=False)
    _reregister(h, 2)
    h.mark("fenced_while_leader_or_in_isr")
    return h


@clean
def clean_reregistered_in_isr_at_mv21(c: str) -> History:
    """Kafka 3.9 after a whole-cluster kill -9: every returning broker re-registers while in ISRs."""
    h = baseline(c, mv=21)
    _reregister(h, 4)
    _reregister(h, 3)
    _reregister(h, 2)
    return h


@clean
def clean_reregistered_after_removal_at_mv23(c: str) -> History:
    """Kafka 4.x: the ISR removal comes first, then the registration."""
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR,), isr=(2,))
    _reregister(h, 4)
    return h


# --- KIP-966 ELR rules that need min.insync.replicas, and elections from the ELR ---------------------

def _min_isr(h: History, value: str, topic: str | None = None) -> None:
    if topic is None:
        h.config(ConfigResourceType.BROKER, "", "min.insync.replicas", value)
    else:
        h.config(ConfigResourceType.TOPIC, topic, "min.insync.replicas", value)


def _elr_entered(c: str, min_isr: str) -> History:
    """metadata.version 23, min.insync.replicas `min_isr`: t-0's ISR shrinks to [2], 4 going into the ELR."""
    h = baseline(c, mv=23)
    _min_isr(h, min_isr)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    return h


def _elected_from_elr(c: str, min_isr: str, elr: tuple[int, ...]) -> History:
    """_elr_entered, then the ISR empties into the ELR (`elr`) and 4 is elected from it: legal."""
    h = _elr_entered(c, min_isr)
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), leader=-1, isr=(), elr=elr)
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(2,))
    return h


@violates("isr_elr_sanity")
def elr_kept_after_isr_recovers(c: str) -> History:
    h = _elr_entered(c, "2")  # below min ISR: 4 into the ELR, legal
    h.change("t", 0, (K.ISR,), isr=(2, 3))  # |ISR| = 2 again, but the ELR is not cleared
    h.mark("elr_while_isr_at_min_isr")
    return h


@violates("isr_elr_sanity")
def elr_at_topic_min_isr(c: str) -> History:
    h = baseline(c, mv=23)
    _min_isr(h, "2")
    _min_isr(h, "1", topic="t")  # the topic's override wins: |ISR| = 1 is at min ISR
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.mark("elr_while_isr_at_min_isr")
    return h


@violates("isr_elr_sanity")
def elr_kept_after_min_isr_lowered(c: str) -> History:
    h = _elr_entered(c, "2")
    _min_isr(h, "1")  # Kafka clears every ELR on this change (ClearElrRecord); here t-0 keeps it
    h.change("t", 0, ())
    h.mark("elr_while_isr_at_min_isr")
    return h


@violates("isr_elr_sanity")
def elr_leader_while_isr_member_left(c: str) -> History:
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(2, 4), elr=())
    h.mark("leader_from_elr_while_isr_not_empty")
    return h


@violates("isr_elr_sanity")
def elr_leader_with_other_isr(c: str) -> History:
    h = baseline(c, mv=23)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4, 3), elr=(2,))
    h.mark("leader_from_elr_while_isr_not_empty")
    return h


@violates("isr_elr_sanity")
def elr_leader_under_min_isr_config(c: str) -> History:
    h = _elr_entered(c, "3")
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4, 2), elr=())
    h.mark("leader_from_elr_while_isr_not_empty")
    return h


@clean
def clean_elr_below_min_isr(c: str) -> History:
    """min.insync.replicas 2: the ISR drops to one member, the other goes to the ELR; it recovers and the
    ELR is cleared in the same change."""
    h = _elr_entered(c, "2")
    h.change("t", 0, (K.ISR, K.ELR), isr=(2, 4), elr=())
    return h


@clean
def clean_elr_election_with_empty_isr(c: str) -> History:
    """The last ISR member goes away: ISR empty, both in the ELR; an ELR member is elected (legal)."""
    return _elected_from_elr(c, "2", elr=(4, 2))


# --- committed data at elections (high_watermark_monotonic) ------------------------------------------

def _elr_then_leaderless(h: History, hw: int, leos: dict[int, int]) -> None:
    """t-0: 4 leaves the ISR for the ELR, a sample (hw, leos), then the ISR empties into the ELR."""
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.sample("t", 0, hw, leos)
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.NONE, leader=-1, isr=(), elr=(4, 2))


@violates("high_watermark_monotonic")
def elr_leader_behind_committed(c: str) -> History:
    h = baseline(c, mv=23)
    _elr_then_leaderless(h, 200, {2: 210, 4: 150})
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(2,))
    h.mark("new_leader_behind_committed")
    return h


@violates("high_watermark_monotonic")
def elr_leader_one_record_behind(c: str) -> History:
    h = baseline(c, mv=23)
    _elr_then_leaderless(h, 200, {2: 200, 4: 199})
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(2,))
    h.mark("new_leader_behind_committed")
    return h


@violates("high_watermark_monotonic")
def elr_leader_behind_after_later_sample(c: str) -> History:
    h = baseline(c, mv=23)
    _elr_then_leaderless(h, 200, {2: 220, 4: 210})
    h.sample("t", 0, 230, {4: 180})  # the last sample before the election: 4 in the ELR, behind the HW
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(2,))
    h.mark("new_leader_behind_committed")
    return h


@clean
def clean_elr_leader_holds_committed(c: str) -> History:
    h = baseline(c, mv=23)
    _elr_then_leaderless(h, 200, {2: 210, 4: 200})
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(2,))
    return h


@clean
def clean_stale_sample_of_a_rejoined_follower(c: str) -> History:
    """4 was out of the ISR (and behind) when sampled, caught up, rejoined and was elected: the sample is
    no evidence against it."""
    h = baseline(c)
    h.change("t", 0, (K.ISR,), isr=(2,))
    h.sample("t", 0, 300, {2: 320, 4: 250})
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    h.change("t", 0, (K.LEADER,), ElectionType.PREFERRED, leader=4)
    return h


@clean
def unclean_election_with_measured_loss(c: str) -> History:
    """An allowed unclean election whose new leader was 30 records behind the sampled HW: reported as
    allowed, with the loss as its magnitude."""
    h = baseline(c)
    h.config(ConfigResourceType.TOPIC, "u", "unclean.leader.election.enable", "true")
    _topic_u(h)
    h.sample("u", 0, 100, {2: 100, 3: 70}, leader=2)
    h.change("u", 0, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=3, isr=(3,),
             leader_recovery_state=RECOVERING)
    return h


# --- ZooKeeper mode: the same catalog with the ZooKeeper-era controller's order ----------------------

@clean
def zk_baseline(c: str) -> History:
    """A ZooKeeper-mode history as `ctrlaudit import zk` writes it (no metadata.version, brokers
    only registered or gone): a broker dies and its znode goes before the controller moves its
    leaderships; it comes back; a reassignment in the controller's steps: the assignment
    znode grows to OAR + RAR (the state znode, and its version, untouched), the state znode gets the
    leader-epoch bumps and the ISR changes, then the assignment znode becomes RAR on its own."""
    h = History(c, mv=None)
    h.source = SourceKind.ZOOKEEPER
    h.elect_controller(1, 1)
    for b in (1, 2, 3, 4):
        h.broker(b, BrokerChangeKind.REGISTERED, fenced=False)
    h.topic("z")
    h.create("z", 0, (1, 2, 3))
    h.create("z", 1, (3, 2))
    h.broker(1, BrokerChangeKind.UNREGISTERED, fenced=True)  # its /brokers/ids znode is gone first
    h.change("z", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=2, isr=(2, 3))
    h.broker(1, BrokerChangeKind.REGISTERED, fenced=False)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1))
    z1 = lambda: h.parts[("z", 1)]  # noqa: E731
    h.change("z", 1, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(1, 3, 2), adding_replicas=(1,),
             removing_replicas=(2,), partition_epoch=z1().partition_epoch)
    h.change("z", 1, (K.LEADER_EPOCH,), leader_epoch=z1().leader_epoch + 1)
    h.change("z", 1, (K.ISR,), isr=(3, 2, 1))
    h.change("z", 1, (K.LEADER_EPOCH,), leader_epoch=z1().leader_epoch + 1)
    h.change("z", 1, (K.LEADER_EPOCH, K.ISR), leader_epoch=z1().leader_epoch + 1, isr=(3, 1))
    h.change("z", 1, (K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(1, 3), adding_replicas=(),
             removing_replicas=(), partition_epoch=z1().partition_epoch)
    return h


@violates("partition_epoch_monotonic")
def zk_state_write_kept_version(c: str) -> History:
    h = zk_baseline(c)
    h.change("z", 0, (K.ISR,), isr=(2, 3), partition_epoch=h.parts[("z", 0)].partition_epoch)
    h.mark("partition_epoch_not_increased")
    return h


@violates("partition_epoch_monotonic")
def zk_assignment_version_went_back(c: str) -> History:
    h = zk_baseline(c)
    h.change("z", 1, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 1, 3), adding_replicas=(4,),
             removing_replicas=(3,), partition_epoch=h.parts[("z", 1)].partition_epoch - 1)
    h.mark("partition_epoch_not_increased")
    return h


@violates("leader_epoch_monotonic")
def zk_leader_moved_without_epoch_bump(c: str) -> History:
    h = zk_baseline(c)
    h.change("z", 0, (K.LEADER,), ElectionType.PREFERRED, leader=1, leader_epoch=h.parts[("z", 0)].leader_epoch)
    h.mark("leader_changed_without_epoch_bump")
    return h


@violates("fenced_broker_not_in_isr")
def zk_dead_broker_elected(c: str) -> History:
    h = zk_baseline(c)
    h.broker(3, BrokerChangeKind.UNREGISTERED, fenced=True)
    # 1 left the ISR too (a live ISR member ahead of 3 would also break leader_election_order)
    h.change("z", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(3, 2))
    h.mark("unregistered_broker_became_leader")
    return h


# --- leader_election_order (I14): a clean election takes the first live ISR member in replica order ---

def _order_base(c: str, zk: bool = False) -> History:
    """Topic o, partition 0 on replicas (1, 2, 3), broker 1 leading; KRaft unless `zk`."""
    h = History(c, mv=None if zk else 21)
    if zk:
        h.source = SourceKind.ZOOKEEPER
    h.elect_controller(100, 1)
    for b in (1, 2, 3, 4):
        if zk:
            h.broker(b, BrokerChangeKind.REGISTERED, fenced=False)
        else:
            h.register(b)
    h.topic("o")
    h.create("o", 0, (1, 2, 3))
    return h


@violates("leader_election_order")
def election_skips_live_isr_member(c: str) -> History:
    """KRaft: leader 1 is fenced; 2 and 3 stay in the ISR, both live, and 3 is elected over 2."""
    h = _order_base(c)
    h.change("o", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(2, 3))
    h.mark("leader_not_first_eligible")
    h.broker(1, BrokerChangeKind.FENCED, fenced=True)
    return h


@violates("leader_election_order")
def zk_election_skips_live_isr_member(c: str) -> History:
    """ZooKeeper mode (OfflinePartitionLeaderElectionStrategy): broker 1's znode goes, the controller elects 3
    although 2, ahead of it in the assignment, is alive and in the ISR."""
    h = _order_base(c, zk=True)
    h.broker(1, BrokerChangeKind.UNREGISTERED, fenced=True)
    h.change("o", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(2, 3))
    h.mark("leader_not_first_eligible")
    return h


@violates("leader_election_order")
def reassignment_elects_second_target(c: str) -> History:
    """A reassignment of o-0 to (4, 2) completes; the leader (1) leaves, and 2 is elected although 4, the
    target's first replica, is in the ISR and live (ReassignPartitionLeaderElectionStrategy takes 4)."""
    h = _order_base(c)
    h.change("o", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 2, 1, 3), adding_replicas=(4,),
             removing_replicas=(1, 3))
    h.change("o", 0, (K.ISR,), isr=(1, 2, 3, 4))
    h.change("o", 0, (K.LEADER, K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE), ElectionType.REASSIGNMENT,
             replicas=(4, 2), isr=(4, 2), leader=2, adding_replicas=(), removing_replicas=())
    h.mark("leader_not_first_eligible")
    return h


@clean
def clean_election_passes_fenced_isr_member(c: str) -> History:
    """Kafka 3.9: broker 2 re-registers (fenced) while still in the ISR (the allowed KAFKA-15586 anomaly);
    when leader 1 is fenced, 3 is elected: 2, ahead of it, was not live."""
    h = _order_base(c)
    h.broker(2, BrokerChangeKind.REGISTERED, fenced=True)
    h.change("o", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(2, 3))
    h.broker(1, BrokerChangeKind.FENCED, fenced=True)
    return h


@clean
def clean_election_in_replica_order(c: str) -> History:
    """The legal look-alikes: the first live ISR member is elected (3 once 2 has left the ISR), in ZooKeeper mode
    too, and a reassignment elects the target's first replica."""
    h = _order_base(c)
    h.change("o", 0, (K.ISR,), isr=(1, 3))
    h.change("o", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(3,))
    h.broker(1, BrokerChangeKind.FENCED, fenced=True)
    h.create("o", 1, (2, 4, 3))
    h.change("o", 1, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 3, 2), adding_replicas=(), removing_replicas=(2,))
    h.change("o", 1, (K.LEADER, K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE), ElectionType.REASSIGNMENT,
             replicas=(4, 3), isr=(4, 3), leader=4, adding_replicas=(), removing_replicas=())
    return h


@clean
def clean_election_without_registrations(c: str) -> History:
    """A broker-log import of a KRaft cluster holds no broker registrations: liveness is unknown, so an
    election that passes an ISR member over is not judged."""
    h = History(c, mv=None)
    h.source = SourceKind.BROKER_LOG
    h.topic("o")
    h.create("o", 0, (1, 2, 3))
    h.change("o", 0, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=3, isr=(2, 3))
    return h


# --- ZooKeeper mode: the controller's reassignment steps and epoch fencing ---------------------------

@violates("reassignment_legal")
def zk_reassignment_completed_without_bump(c: str) -> History:
    """The assignment znode becomes RAR although no state write bumped the leader epoch since the start."""
    h = zk_baseline(c)
    z0 = lambda: h.parts[("z", 0)]  # noqa: E731  (replicas (1, 2, 3), leader 2, ISR (2, 3, 1))
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 2, 3, 1), adding_replicas=(4,),
             removing_replicas=(1,), partition_epoch=z0().partition_epoch)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1, 4))
    h.change("z", 0, (K.ISR,), isr=(2, 3, 4))
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(4, 2, 3), adding_replicas=(),
             removing_replicas=(), partition_epoch=z0().partition_epoch)
    h.mark("zk_completed_without_leader_epoch_bump")
    return h


@violates("controller_epoch_monotonic")
def zk_deposed_controller_writes_state(c: str) -> History:
    """After the failover to epoch 2, a state znode write stamped with epoch 1: the deposed controller's."""
    h = zk_baseline(c)
    h.elect_controller(2, 2)
    h.controller = (1, 1)
    h.change("z", 0, (K.ISR,), isr=(2, 3))
    h.mark("event_controller_epoch_regressed")
    h.controller = (2, 2)
    return h


@clean
def clean_zk_reassignment_with_bumps(c: str) -> History:
    """The same move done in the controller's steps: the leader epoch bumped at the start (A2) and
    before the assignment becomes RAR (B3), the removed replica dropped from the ISR with a bump (B4)."""
    h = zk_baseline(c)
    z0 = lambda: h.parts[("z", 0)]  # noqa: E731
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(4, 2, 3, 1), adding_replicas=(4,),
             removing_replicas=(1,), partition_epoch=z0().partition_epoch)
    h.change("z", 0, (K.LEADER_EPOCH,), leader_epoch=z0().leader_epoch + 1)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1, 4))
    h.change("z", 0, (K.LEADER_EPOCH,), leader_epoch=z0().leader_epoch + 1)
    h.change("z", 0, (K.LEADER_EPOCH, K.ISR), leader_epoch=z0().leader_epoch + 1, isr=(2, 3, 4))
    h.change("z", 0, (K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(4, 2, 3), adding_replicas=(),
             removing_replicas=(), partition_epoch=z0().partition_epoch)
    return h


# --- a ZooKeeper -> KRaft migration (KIP-866): two controller-epoch counters -------------------------

def _migrated(c: str) -> History:
    """zk_baseline, the KRaft controller 3000's claim of /controller in ZooKeeper (ZooKeeper epoch 2), then the
    cutover as `ctrlaudit import kraft --zookeeper-data` writes it: a KRAFT_LOG ControllerChange of the same
    controller whose epoch is the KRaft quorum's (1), then KRaft changes in that epoch."""
    h = zk_baseline(c)
    h.elect_controller(3000, 2)  # the claim: ZooKeeper's /controller_epoch bumped, /controller = 3000
    h.source = SourceKind.KRAFT_LOG
    h.elect_controller(3000, 1)  # the cutover: previous (3000, ZooKeeper epoch 2)
    h.change("z", 0, (K.ISR,), isr=(2, 3))
    return h


@clean
def clean_migration_cutover(c: str) -> History:
    h = _migrated(c)
    h.elect_controller(3000, 2)  # the finalized controller's restart: its quorum's next epoch
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1))
    return h


@violates("controller_epoch_monotonic")
def migration_kraft_epoch_regressed(c: str) -> History:
    """After the cutover the KRaft counter is judged as any other: a write of an older KRaft epoch is caught."""
    h = _migrated(c)
    h.elect_controller(3000, 3)
    h.controller = (3000, 2)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1))
    h.mark("event_controller_epoch_regressed")
    return h


@violates("controller_epoch_monotonic")
def kraft_controller_without_claim(c: str) -> History:
    """A KRaft ControllerChange after ZooKeeper events that is no cutover (its controller did not claim ZooKeeper:
    previous leader 2, not itself): its lower epoch is a regression."""
    h = zk_baseline(c)
    h.elect_controller(2, 3)
    h.source = SourceKind.KRAFT_LOG
    h.elect_controller(3000, 2)  # an epoch no ZooKeeper controller had: only the regression
    h.mark("controller_change_epoch_regressed")
    h.change("z", 0, (K.ISR,), isr=(2, 3))
    h.mark("event_controller_epoch_regressed")
    return h


@violates("election_safety")
def migration_two_kraft_controllers(c: str) -> History:
    """The cutover starts the KRaft counter afresh, not unjudged: two controllers in one KRaft epoch are caught."""
    h = _migrated(c)
    h.controller = (3001, 1)
    h.change("z", 0, (K.ISR,), isr=(2, 3, 1))
    h.mark("two_controllers_in_one_epoch")
    return h


def write_all(directory: Path) -> dict[str, list[tuple[str, str, int]]]:
    """Every case's history as <case>.avro in `directory`; per case, what it marks as broken: (invariant, rule,
    event index), sorted (nothing for a clean case)."""
    marks: dict[str, list[tuple[str, str, int]]] = {}
    for case, (name, make) in sorted(VIOLATING.items()):
        h = make(case)
        h.write(directory / f"{case}.avro")
        marks[case] = sorted([(name, rule, idx) for rule, idx in h.bad] + h.bad_other)
    for case, make in sorted(CLEAN.items()):
        make(case).write(directory / f"{case}.avro")
        marks[case] = []
    return marks


@functools.cache
def duckdb_rows(case: str) -> tuple[tuple, ...]:
    """DuckDB's rows, every invariant, of the handmade case `case` checked alone. Computed once a session and
    read by test_duckdb_cases (the case's own test and the batched run's comparison) and test_live: both
    modules are one xdist group (tests/conftest.py), so a worker computes each case once."""
    from checks.catalog import NAMES
    from checks.duckdb_engine import DuckDBEngine
    from schemas.archive import flat
    from schemas.codec import to_avro

    make = VIOLATING[case][1] if case in VIOLATING else CLEAN[case]
    eng = DuckDBEngine.from_arrow(flat.to_arrow([flat.flatten(to_avro(e)) for e in make(case).chained()]))
    try:
        return tuple(eng.violations(NAMES))
    finally:
        eng.close()


# the cases of the rules anchored to the specs' properties (ISR never empty without ELR, ELR completeness, ELR
# laundering) register themselves on import
from tests.checks import cases_anchored  # noqa: E402, F401
# the bounded-liveness checks' cases (obligations met late, in time, or still open at the end) likewise
from tests.checks import cases_liveness  # noqa: E402, F401
