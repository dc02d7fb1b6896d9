"""What a partition change was: its kinds of change and, when the leader moved, the election type.

Plain functions over two PartitionStates, so the offline import, the live normalize agent and the
tests all classify alike. The KRaft log does not say why a leader was chosen; these rules infer it
the way Kafka's own TopicDelta/PartitionChangeBuilder would have decided.
"""
from __future__ import annotations

from schemas.events import ElectionType, LeaderRecoveryState, PartitionChangeKind, PartitionState

K = PartitionChangeKind
# The kinds as module constants: `K.LEADER` is an enum class attribute lookup, ~0.17 us each, and
# every partition event of an import or of live capture is classified here.
_CREATE, _DELETE, _LEADER, _LEADER_EPOCH, _ISR, _REPLICAS = K.CREATE, K.DELETE, K.LEADER, K.LEADER_EPOCH, K.ISR, K.REPLICAS
_START, _COMPLETE, _CANCEL = K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE, K.REASSIGNMENT_CANCEL
_ELR, _RECOVERY_STATE = K.ELR, K.RECOVERY_STATE
_RECOVERING = LeaderRecoveryState.RECOVERING
E = ElectionType
_E_CLEAN, _E_CONTROLLED_SHUTDOWN, _E_ELR, _E_NONE, _E_PREFERRED, _E_REASSIGNMENT, _E_UNCLEAN = E.CLEAN, E.CONTROLLED_SHUTDOWN, E.ELR, E.NONE, E.PREFERRED, E.REASSIGNMENT, E.UNCLEAN


def change_kinds(before: PartitionState | None, after: PartitionState | None) -> tuple[PartitionChangeKind, ...]:
    if before is None:
        return (_CREATE,)
    if after is None:
        return (_DELETE,)
    kinds: list[PartitionChangeKind] = []
    if before.leader != after.leader:
        kinds.append(_LEADER)
    elif before.leader_epoch != after.leader_epoch:
        kinds.append(_LEADER_EPOCH)
    if before.isr != after.isr:
        kinds.append(_ISR)
    if before.replicas != after.replicas:
        kinds.append(_REPLICAS)
    was_moving = bool(before.adding_replicas or before.removing_replicas)
    is_moving = bool(after.adding_replicas or after.removing_replicas)
    if is_moving and (not was_moving or (before.adding_replicas, before.removing_replicas)
                      != (after.adding_replicas, after.removing_replicas)):
        kinds.append(_START)
    elif was_moving and not is_moving:
        kinds.append(reassignment_end(before, after))
    if before.elr != after.elr or before.last_known_elr != after.last_known_elr:
        kinds.append(_ELR)
    if before.leader_recovery_state != after.leader_recovery_state:
        kinds.append(_RECOVERY_STATE)
    return tuple(kinds)


def reassignment_end(before: PartitionState, after: PartitionState) -> PartitionChangeKind:
    """Completion leaves the target (replicas minus removing); a cancel restores the original
    (replicas minus adding). When both are the same set, Kafka completed it."""
    target = [r for r in before.replicas if r not in before.removing_replicas]
    original = [r for r in before.replicas if r not in before.adding_replicas]
    if sorted(after.replicas) == sorted(target):
        return _COMPLETE
    if sorted(after.replicas) == sorted(original):
        return _CANCEL
    return _COMPLETE if set(after.replicas) <= set(target) else _CANCEL


def election_type(
    before: PartitionState | None,
    after: PartitionState | None,
    kinds: tuple[PartitionChangeKind, ...],
    old_leader_shutting_down: bool = False,
) -> ElectionType:
    """How the new leader was chosen; NONE when the leader did not change or went offline."""
    if before is None or after is None or _LEADER not in kinds or after.leader < 0:
        return _E_NONE
    new, old = after.leader, before.leader
    if (after.leader_recovery_state is _RECOVERING
            and before.leader_recovery_state is not _RECOVERING):
        return _E_UNCLEAN
    if new in before.elr and new not in before.isr:
        return _E_ELR
    # Before the ISR test: a completing reassignment sets the new ISR (with the new leader) in
    # the same record that elects the leader, so the leader need not be in the ISR before.
    if _COMPLETE in kinds or _CANCEL in kinds or old in before.removing_replicas:
        return _E_REASSIGNMENT
    if new not in before.isr:
        return _E_UNCLEAN
    if old_leader_shutting_down:
        return _E_CONTROLLED_SHUTDOWN
    if old >= 0 and new == after.replicas[0] and old in after.isr:
        # The old leader is still in sync: nothing forced the move but preference.
        return _E_PREFERRED
    return _E_CLEAN
