"""What the lines state of one partition at one partition epoch (``Part``), and when that is its whole state (``whole``):
the broker-log normalizer's assembly of a partition state from lines that each state part of it."""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.events import LeaderRecoveryState, PartitionState
from schemas.gap_reasons import partition_reason
from services.brokerlogs.kraft_rules import KRaftRules
from services.brokerlogs.said import Fields, Ints, int_of, ints_of

REQUIRED = ("leader", "leader_epoch", "isr")
Assignment = tuple[Ints, Ints, Ints]  # replicas, adding, removing


@dataclass
class Part:
    """What the lines said so far of one partition at one partition epoch."""
    fields: Fields = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # file:line of each line that said part of it
    from_epoch: int | None = None
    # lines that disagree on this epoch (a controller's line of a record never committed, which a leader
    # change truncated, against the brokers' lines of the committed one): the epoch is then never emitted
    conflicts: list[str] = field(default_factory=list)
    leader_update: bool = False  # a leader's ISR update said part of it: not the ELR, which that write may change
    isr_unordered: bool = False  # ... and outside ZooKeeper mode the ISR as a set only: whole once a line orders it
    replicas_at: int = -1  # the log record of the first line that stated its replicas


def whole(key: tuple[str, int], part: Part, current: PartitionState | None, between: list[Fields], *,
          zookeeper_mode: bool, elr: bool, assignment: Assignment | None, kraft: KRaftRules) -> PartitionState | None:
    """The state of `key` at `part`'s epoch when the lines state it whole (None: not yet, or never: they disagree),
    with what follows from the state before it (`current`), from the lines of the epochs `between`, and from the
    controller's rules: ZooKeeper mode's `assignment` (the topic znode last written), a KRaft controller's
    (`kraft`); `elr`: the cluster may have eligible leader replicas."""
    if part.conflicts:
        return None  # which line is right is not for the logs to say: a gap, never a pick
    if part.isr_unordered and "isr" not in part.fields:
        return None  # never the epoch before's ISR for one a leader changed
    f: Fields = dict(part.fields)
    if part.from_epoch is not None and current is not None and current.partition_epoch == part.from_epoch:
        f = {"leader": current.leader, "leader_epoch": current.leader_epoch, "isr": current.isr,
             "replicas": current.replicas, "adding": current.adding_replicas,
             "removing": current.removing_replicas, "elr": current.elr, "last_known_elr": current.last_known_elr,
             "recovery": current.leader_recovery_state, **f}
        if part.leader_update and elr and not zookeeper_mode:
            for name in ("elr", "last_known_elr"):  # unless a line of this epoch stated them
                if name not in part.fields:
                    del f[name]
    if not all(n in f for n in REQUIRED):
        return None
    if not zookeeper_mode:
        # a difference from an epoch not known says nothing of what it keeps: nothing is carried into it
        carry = part.from_epoch is None or (current is not None and current.partition_epoch == part.from_epoch)
        f = kraft.complete(key, f, current if carry else None, between, elr)
    if zookeeper_mode:
        if "replicas" not in f and assignment is None:
            return None
        replicas, adding, removing = assignment if assignment is not None else ((), (), ())
        f = {"replicas": replicas, "adding": adding, "removing": removing, "elr": (), "last_known_elr": (), **f}
    elif not elr and current is not None:
        f = {"elr": current.elr, "last_known_elr": current.last_known_elr, **f}
    elif not elr:
        f = {"elr": (), "last_known_elr": (), **f}
    if any(n not in f for n in ("replicas", "adding", "removing", "elr", "last_known_elr")):
        return None
    recovery = f.get("recovery")
    return PartitionState(
        ints_of(f, "replicas"), ints_of(f, "isr"), int_of(f, "leader"), int_of(f, "leader_epoch"), -1,
        ints_of(f, "adding"), ints_of(f, "removing"), ints_of(f, "elr"), ints_of(f, "last_known_elr"),
        recovery if isinstance(recovery, LeaderRecoveryState)
        else current.leader_recovery_state if current else LeaderRecoveryState.RECOVERED)


def partial_reason(key: tuple[str, int], parts: dict[int, Part], where: str, low: int | None = None,
                   high: int | None = None) -> str:
    """The reason of a gap of `key`: epochs `low`..`high` (or those of `parts`) `where`, and what lines stated of
    them in part."""
    said = "; ".join(f"epoch {e}: {', '.join(f'{k}={v}' for k, v in sorted(p.fields.items()))} "
                     f"({', '.join(p.lines[:3])})"
                     + (f", lines disagree: {'; '.join(p.conflicts[:3])}" if p.conflicts else "")
                     for e, p in sorted(parts.items()))
    span = f"{low}..{high}" if low is not None and high is not None and low <= high else \
        ", ".join(map(str, sorted(parts)))
    text = partition_reason(key[0], key[1], f"{span} {where} are stated whole in no log given")
    return text + (f"; stated in part: {said}" if said else "")


def at_epoch(state: PartitionState, epoch: int) -> PartitionState:
    """`state` as of partition epoch `epoch` (a state stated whole is assembled without it)."""
    return PartitionState(state.replicas, state.isr, state.leader, state.leader_epoch, epoch, state.adding_replicas,
                          state.removing_replicas, state.elr, state.last_known_elr, state.leader_recovery_state)
