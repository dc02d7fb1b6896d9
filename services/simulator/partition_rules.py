"""Kafka's KRaft controller rules for partition registrations, as pure functions.

Modelled on Kafka's PartitionChangeBuilder / PartitionReassignmentReplicas / ReplicationControlManager
(org.apache.kafka.controller): every change bumps the partition epoch; the leader epoch rises
on every leader change and on forced bumps (a replica leaves the replica set; an ISR shrink only
below metadata.version 12 = 3.6-IV0); ISR shrink/expand and reassignment start that only adds
keep it. A change that changes nothing is dropped (returns None).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from schemas.events import ElectionType, LeaderRecoveryState, PartitionChangeKind, PartitionState
from schemas.fastbuild import fast_constructor

K = PartitionChangeKind
# Read on every change the simulator makes: an enum member read off its class costs ~0.17 us on
# Python 3.11, a frozen dataclass's __init__ ~2x its slot stores.
_NONE, _CLEAN, _PREFERRED, _ELR, _UNCLEAN = (ElectionType.NONE, ElectionType.CLEAN, ElectionType.PREFERRED,
                                             ElectionType.ELR, ElectionType.UNCLEAN)
_RECOVERED, _RECOVERING = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING
_new_state = fast_constructor(PartitionState)
NO_LEADER = -1
MV_NO_BUMP_ON_ISR_SHRINK = 12  # 3.6-IV0
MV_ELR = 23  # 4.0-IV1: eligible leader replicas supported

Acceptable = Callable[[int], bool]


class Change:
    """The next state of a partition and how its leader was chosen."""

    __slots__ = ("after", "election")

    def __init__(self, after: PartitionState, election: ElectionType) -> None:
        self.after = after
        self.election = election


def target_elr(s: PartitionState, target_isr: tuple[int, ...], min_isr: int,
               unclean_shutdown: Sequence[int] = ()) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """KIP-966 populateTargetElr: (elr, last_known_elr) after the ISR becomes `target_isr`."""
    if len(target_isr) >= min_isr:
        return (), ()
    in_isr = set(target_isr)
    candidates = list(dict.fromkeys(s.elr + s.isr))
    elr = tuple(sorted(r for r in candidates if r not in in_isr and r not in unclean_shutdown))
    lke = tuple(sorted(r for r in dict.fromkeys(candidates + list(s.last_known_elr))
                       if r not in in_isr and r not in elr))
    return elr, lke


def build(
    s: PartitionState,
    *,
    target_isr: tuple[int, ...] | None = None,
    acceptable: Acceptable,
    mv: int,
    elr_enabled: bool,
    min_isr: int,
    unclean_ok: bool = False,
    preferred: bool = False,
    clean_type: ElectionType = _CLEAN,
    recovered: bool = False,
) -> Change | None:
    """An AlterPartition, broker fence/unfence/shutdown or election change of `s` (no reassignment)."""
    isr = s.isr if target_isr is None else target_isr
    if not isr and not elr_enabled:
        isr = s.isr  # Kafka keeps the last ISR member when no other is left (pre-KIP-966)
    elr, lke = (target_elr(s, isr, min_isr) if elr_enabled else (s.elr, s.last_known_elr))
    leader, election, recovery = s.leader, _NONE, s.leader_recovery_state
    if recovered:
        recovery = _RECOVERED

    def valid(r: int) -> bool:
        return r in isr and acceptable(r)

    if preferred and s.replicas and s.replicas[0] != s.leader and valid(s.replicas[0]):
        leader, election = s.replicas[0], _PREFERRED
    elif not (s.leader != NO_LEADER and valid(s.leader)):
        new = next((r for r in s.replicas if valid(r)), NO_LEADER)
        if new != NO_LEADER:
            leader, election = new, clean_type
        elif elr_enabled and any(acceptable(r) for r in elr):
            leader = next(r for r in s.replicas if r in elr and acceptable(r))
            election = _ELR
            isr = (leader,)
            elr = tuple(r for r in elr if r != leader)
        elif unclean_ok and not elr and any(acceptable(r) for r in s.replicas):
            leader = next(r for r in s.replicas if acceptable(r))
            election = _UNCLEAN
            isr = (leader,)
            elr, lke = (), ()
            recovery = _RECOVERING
        else:
            leader = NO_LEADER
    leader_epoch = s.leader_epoch
    if leader != s.leader:
        leader_epoch += 1
    elif mv < MV_NO_BUMP_ON_ISR_SHRINK and leader != NO_LEADER and not set(s.isr) <= set(isr):
        leader_epoch += 1  # forced bump on ISR shrink (before 3.6-IV0)
    if (leader == s.leader and leader_epoch == s.leader_epoch and isr == s.isr and elr == s.elr
            and lke == s.last_known_elr and recovery == s.leader_recovery_state):
        return None  # changeRecordIsNoOp
    after = _new_state(s.replicas, isr, leader, leader_epoch, s.partition_epoch + 1, s.adding_replicas,
                           s.removing_replicas, elr, lke, recovery)
    return Change(after, election if leader != s.leader else _NONE)


def start_reassignment(s: PartitionState, target: Sequence[int]) -> PartitionState:
    """Grow to OAR ∪ RAR: replicas = target + removing; adding/removing sorted; ISR and leader kept."""
    current = set(s.replicas)
    removing = tuple(sorted(current - set(target)))
    adding = tuple(sorted(set(target) - current))
    replicas = tuple(target) + removing
    bump = not current <= set(replicas)  # never for a grow; kept for the rule's sake
    return replace(s, replicas=replicas, adding_replicas=adding, removing_replicas=removing,
                   leader_epoch=s.leader_epoch + (1 if bump else 0), partition_epoch=s.partition_epoch + 1)


def can_complete(s: PartitionState) -> bool:
    """maybeCompleteReassignment's condition: ISR \\ removing ⊇ replicas \\ removing, both non-empty."""
    if not s.adding_replicas and not s.removing_replicas:
        return False
    removing = set(s.removing_replicas)
    new_isr = [r for r in s.isr if r not in removing]
    new_replicas = [r for r in s.replicas if r not in removing]
    return bool(new_isr) and bool(new_replicas) and set(new_replicas) <= set(new_isr)


def complete_reassignment(s: PartitionState, acceptable: Acceptable) -> Change:
    removing = set(s.removing_replicas)
    replicas = tuple(r for r in s.replicas if r not in removing)
    isr = tuple(r for r in s.isr if r not in removing)
    leader, election = s.leader, ElectionType.NONE
    if leader == NO_LEADER or leader in removing or not acceptable(leader):
        new = next((r for r in replicas if r in isr and acceptable(r)), NO_LEADER)
        leader, election = new, (ElectionType.REASSIGNMENT if new != NO_LEADER else ElectionType.NONE)
    after = replace(
        s, replicas=replicas, isr=isr, adding_replicas=(), removing_replicas=(),
        elr=tuple(r for r in s.elr if r not in removing),
        last_known_elr=tuple(r for r in s.last_known_elr if r not in removing),
        leader=leader, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1,
    )
    return Change(after, election)


def cancel_reassignment(s: PartitionState, acceptable: Acceptable) -> Change | None:
    """PartitionReassignmentRevert: drop the adding replicas from replicas and ISR, clear adding/removing.
    None when the ISR would be left empty (that needs an unclean election; the simulator waits)."""
    adding = set(s.adding_replicas)
    replicas = tuple(r for r in s.replicas if r not in adding)
    isr = tuple(r for r in s.isr if r not in adding)
    if not isr:
        return None
    leader, election = s.leader, ElectionType.NONE
    if leader == NO_LEADER or leader in adding or not acceptable(leader):
        new = next((r for r in replicas if r in isr and acceptable(r)), NO_LEADER)
        leader, election = new, (ElectionType.CLEAN if new != NO_LEADER else ElectionType.NONE)
    bump = not set(s.replicas) <= set(replicas)
    after = replace(
        s, replicas=replicas, isr=isr, adding_replicas=(), removing_replicas=(),
        elr=tuple(r for r in s.elr if r not in adding),
        last_known_elr=tuple(r for r in s.last_known_elr if r not in adding),
        leader=leader, leader_epoch=s.leader_epoch + (1 if bump or leader != s.leader else 0),
        partition_epoch=s.partition_epoch + 1,
    )
    return Change(after, election)


def new_partition(replicas: Sequence[int], acceptable: Acceptable) -> PartitionState:
    """PartitionRecord of a new topic: ISR = the active replicas, leader = the first of them."""
    isr = tuple(r for r in replicas if acceptable(r))
    return PartitionState(replicas=tuple(replicas), isr=isr, leader=isr[0] if isr else NO_LEADER,
                          leader_epoch=0, partition_epoch=0)
