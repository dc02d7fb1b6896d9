"""Handmade histories of the rules anchored to the specs' properties: the ISR never empty where no ELR can exist
(v3_5_properties.tla's ValidControllerState), an ELR member holding the HW of its entry (the ELR half of
LeaderCandidateCompletenessProperty), and the unclean election laundered through an ELR that could not exist.
KRaft, ZooKeeper mode and a migration; each breaks exactly what it marks, the look-alikes nothing."""
from __future__ import annotations

from schemas.events import ConfigResourceType, ElectionType, LeaderRecoveryState, PartitionChangeKind
from tests.checks.cases import _elected_from_elr, _elr_entered, _min_isr, _migrated, clean, violates, zk_baseline
from tests.checks.histories import History, baseline

K = PartitionChangeKind


# --- isr_elr_sanity: isr_empty_without_elr ------------------------------------------------------------

def _isr_emptied(h: History, topic: str, p: int) -> History:
    """`topic`-`p`'s last ISR member's broker goes and the ISR empties (leader -1): marked, as where no ELR can
    exist."""
    h.change(topic, p, (K.LEADER, K.ISR), leader=-1, isr=())
    h.mark("isr_empty_without_elr")
    return h


@violates("isr_elr_sanity")
def isr_emptied_at_mv21(c: str) -> History:
    """metadata.version 21 (3.9): no ELR, so Kafka keeps the last ISR member when its broker goes."""
    return _isr_emptied(baseline(c), "t", 1)


@violates("isr_elr_sanity")
def zk_isr_emptied(c: str) -> History:
    """ZooKeeper mode: ReplicaStateMachine keeps the last ISR member in the state znode."""
    return _isr_emptied(zk_baseline(c), "z", 0)


@violates("isr_elr_sanity")
def migrated_isr_emptied_before_elr(c: str) -> History:
    """After a ZooKeeper -> KRaft migration, KRaft at metadata.version 21 (migrations end on 3.x levels)."""
    h = _migrated(c)
    h.mv = 21
    return _isr_emptied(h, "z", 0)


@clean
def clean_last_isr_member_kept_at_mv21(c: str) -> History:
    """The legal look-alike: the leader's broker goes, the ISR keeps it (leader -1, ISR [3])."""
    h = baseline(c)
    h.change("t", 1, (K.LEADER,), leader=-1)
    return h


@clean
def clean_empty_isr_where_elr_can_exist(c: str) -> History:
    """metadata.version 23 with min ISR 2: the ISR may empty into the ELR; and a KRaft history whose
    metadata.version is unknown is not judged (ELR may exist there)."""
    h = _elr_entered(c, "2")
    h.change("t", 0, (K.LEADER, K.ISR, K.ELR), leader=-1, isr=(), elr=(4, 2))
    h.mv = None
    h.change("t", 1, (K.LEADER, K.ISR), leader=-1, isr=())
    return h


# --- valid_high_watermark: elr_member_behind_hw_at_entry ---------------------------------------------

def _elr_entry(c: str, hw: int) -> History:
    """metadata.version 23, min ISR 2: t-0 sampled at `hw` with ISR [2, 4] caught up, then 4 enters the ELR."""
    h = baseline(c, mv=23)
    _min_isr(h, "2")
    h.sample("t", 0, hw, {2: hw + 10, 4: hw + 5})
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    return h


@violates("valid_high_watermark")
def elr_member_behind_hw_at_entry(c: str) -> History:
    h = _elr_entry(c, 200)
    h.sample("t", 0, 200, {2: 220, 4: 150})  # 4, in the ELR, lost records committed before it entered
    h.mark("elr_member_behind_hw_at_entry")
    return h


@violates("valid_high_watermark")
def elr_member_behind_after_reentry(c: str) -> History:
    """4 leaves the ELR back into the ISR, then enters again after a higher HW: judged against that one."""
    h = _elr_entry(c, 200)
    h.change("t", 0, (K.ISR, K.ELR), isr=(2, 4), elr=())
    h.sample("t", 0, 300, {2: 310, 4: 305})
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.sample("t", 0, 300, {2: 320, 4: 250})  # above the first entry's HW, below the second's
    h.mark("elr_member_behind_hw_at_entry")
    return h


@clean
def clean_elr_member_holds_hw_at_entry(c: str) -> History:
    """At the entry's HW exactly, no answer (-1), and behind the HW sampled later (the HW of its entry is what it
    must hold; KIP-966's HW does not advance under min ISR, but the rule does not lean on that)."""
    h = _elr_entry(c, 200)
    h.sample("t", 0, 200, {2: 220, 4: 200})
    h.sample("t", 0, 200, {2: 220, 4: -1})
    h.sample("t", 0, 260, {2: 270, 4: 230})
    return h


@clean
def clean_elr_member_of_a_snapshot(c: str) -> History:
    """An ELR first seen in a bootstrap snapshot (after a gap: when its members entered is not known): no HW at
    entry, no evidence."""
    h = baseline(c, mv=23)
    _min_isr(h, "2")
    h.sample("t", 0, 200, {2: 210, 4: 205})
    h.gap()
    h.change("t", 0, (K.ISR, K.ELR), isr=(2,), elr=(4,), bootstrap=True)
    h.sample("t", 0, 200, {2: 210, 4: 100})
    return h


# --- unclean_election_allowed: unclean_election_via_elr_that_could_not_exist ------------------------

def _laundering(h: History, topic: str, unclean: bool = False) -> None:
    """A new topic's partition 0 (replicas and ISR [2, 3, 4], leader 2): 4 put in an ELR no Kafka of this
    metadata.version could write (isr_elr_sanity's breach, marked), then elected 'from the ELR' (in RECOVERING
    where the topic allows unclean elections)."""
    h.topic(topic)
    if unclean:
        h.config(ConfigResourceType.TOPIC, topic, "unclean.leader.election.enable", "true")
    h.create(topic, 0, (2, 3, 4))
    h.change(topic, 0, (K.ISR, K.ELR), isr=(2,), elr=(4,))
    h.mark("elr_before_metadata_version_22", invariant=None if unclean else "isr_elr_sanity")
    recovery = {"leader_recovery_state": LeaderRecoveryState.RECOVERING} if unclean else {}
    h.change(topic, 0, (K.LEADER, K.ISR, K.ELR), ElectionType.ELR, leader=4, isr=(4,), elr=(), **recovery)


@violates("unclean_election_allowed")
def elr_laundered_election_at_mv21(c: str) -> History:
    h = baseline(c)
    _laundering(h, "v")
    h.mark("unclean_election_via_elr_that_could_not_exist")
    h.mark("unclean_election_without_recovering")  # an unclean election: KIP-704 asks RECOVERING
    return h


@violates("isr_elr_sanity")
def elr_laundered_election_where_unclean_is_allowed(c: str) -> History:
    """The same election on a topic allowing unclean elections, in RECOVERING: an allowed unclean election;
    the ELR stays isr_elr_sanity's violation."""
    h = baseline(c)
    _laundering(h, "w", unclean=True)
    return h


@clean
def clean_elr_election_at_mv23(c: str) -> History:
    """The legal look-alike: the same steps where ELR exists (metadata.version 23, min ISR 3)."""
    return _elected_from_elr(c, "3", elr=(2, 4))


@violates("unclean_election_allowed")
def zk_elr_laundered_election(c: str) -> History:
    """A ZooKeeper source's state with an ELR (the state znode has no such field: a tampered or mis-joined
    import): isr_elr_sanity's breach where it appears, and the election from it is unclean."""
    h = zk_baseline(c)
    h.change("z", 0, (K.ISR, K.ELR), isr=(2,), elr=(3,))
    h.mark("elr_in_zookeeper_mode", invariant="isr_elr_sanity")
    h.change("z", 0, (K.LEADER, K.ISR, K.ELR), leader=3, isr=(3,), elr=())
    h.mark("unclean_election_via_elr_that_could_not_exist")
    return h
