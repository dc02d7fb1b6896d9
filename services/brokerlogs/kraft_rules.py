"""What a KRaft cluster's logs say of a partition beyond the lines that state it: the rules of Kafka's controller that
let the broker-log normalizer complete a state a line gives in part, and the evidence each rule needs.

A KRaft leader change is stated by the new leader (``Leader t-p ... starts at leader epoch E ... with partition epoch
N, ... ISR [..], adding replicas [..] and removing replicas [..]``) and its followers (leader only); no INFO line
states the replica set or the ELR with it. Both follow from what the controller does and logs:

- **The replica set** changes only by a reassignment (PartitionChangeBuilder sets ``replicas`` only to a reassignment's
  target). Every controller logs at INFO each record that changes the adding or removing replicas (``Replayed
  partition assignment change``), and the active one logs how many reassignments it accepted (``Successfully altered
  k out of m partition reassignment(s).``) right before it replays their records. A reassignment whose record states
  no adding or removing change (one that only reorders the replicas, or removes some and completes at once) leaves
  that count short: from then on no partition's replicas are carried (they are known again once a line states them).
  So, while a KRaft controller's lines are among the logs and every accepted reassignment is accounted for, the
  replicas, adding and removing of an epoch no line states them for are those of the state before it.
- **The ELR and last known ELR** are both emptied by every record the controller makes while the ISR has at least
  ``min.insync.replicas`` members (PartitionChangeBuilder.maybePopulateTargetElr); the value is the topic's override
  or the cluster's default, each replayed at INFO (``Replayed ConfigRecord for ConfigResource(type=TOPIC, name='t')
  which set configuration min.insync.replicas to 2``; with ELR on, Kafka keeps the cluster's default in the metadata
  log). Every value either ever had counts, the largest wins: a value a restarted controller replays late, or one
  set between, can only make the rule apply less.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.events import PartitionState
from services.brokerlogs.said import (
    AssignmentChange, AssignmentReplayed, ConfigStated, Evidence, Fields, Ints, ReassignmentsAltered, Seen,
    TopicConfigs, ints_of,
)
from services.brokerlogs.lines import LogLine

MIN_ISR = "min.insync.replicas"
ASSIGNMENT = ("replicas", "adding", "removing")


@dataclass
class _Altering:
    """Reassignments a controller accepted whose records its next lines must state."""
    file: str
    remaining: int
    record: int


@dataclass
class KRaftRules:
    controller_seen: bool = False  # a KRaft controller's lines are among the logs
    unsure_at: int = -1  # the log record of the last reassignment whose records are not all stated
    # partition -> the log record of the line that stated the replicas its last state emitted holds
    stated_at: dict[tuple[str, int], int] = field(default_factory=dict)
    # partition -> the lowest epoch its assignment may be of, after an assignment change no line numbered (3.9),
    # and those changes (replicas, adding, removing: None where the record leaves it) since it was last settled
    changed_after: dict[tuple[str, int], int] = field(default_factory=dict)
    unnumbered: dict[tuple[str, int], list[AssignmentChange]] = field(default_factory=dict)
    min_isr: dict[str, set[int]] = field(default_factory=dict)  # topic -> every override it had
    cluster_min_isr: set[int] = field(default_factory=set)  # every cluster default
    # when a line was written, relative to the change it states (see ``seen``)
    fresh: set[tuple[int, tuple[str, int]]] = field(default_factory=set)  # (broker, partition): a replica made anew
    applied_at: dict[int, int] = field(default_factory=dict)  # broker -> log record of its last line applying metadata
    # partition -> (file, time) of the last line of a KRaft controller that stated an epoch of it
    stated_by_controller: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    _altering: _Altering | None = None

    def seen(self, node: int, key: tuple[str, int], s: Seen, line: LogLine, controller_line: bool) -> bool:
        """Whether line `line` of `node` states `s` as the node lived the change (``Seen.prompt``): not a broker's
        first line of a replica it just made, which states the partition as it finds it."""
        prompt = s.prompt and (node, key) not in self.fresh
        self.fresh.discard((node, key))
        if controller_line:
            self.stated_by_controller[key] = (line.file, line.time_ms)
        return prompt

    def applied(self, node: int, s: Seen, prompt: bool, record: int) -> None:
        """A broker's state-change line of a change it lived: it applied the metadata log up to there (an ISR update
        answers the broker's own request instead). Every broker applies every record and states each change of a
        partition it holds as it applies it: until its next such line, no change of its partitions is older."""
        if prompt and not s.leader_update:
            self.applied_at[node] = record

    def numbered_just_before(self, key: tuple[str, int], line: LogLine) -> bool:
        """A controller's line in the same file and millisecond stated an epoch of `key`: the same record."""
        return self.stated_by_controller.get(key) == (line.file, line.time_ms)

    def line(self, file: str, said: list[Evidence], record: int) -> None:
        """Account one line: after a ``ReassignmentsAltered`` the same file's next lines are its records."""
        if self._altering is not None and file == self._altering.file:
            if any(isinstance(e, AssignmentReplayed) for e in said):
                self._altering.remaining -= 1
                if self._altering.remaining <= 0:
                    self._altering = None
            else:
                self.finish()
        for ev in said:
            if isinstance(ev, ReassignmentsAltered) and ev.altered > 0:
                self._altering = _Altering(file, ev.altered, record)

    def unnumbered_change(self, key: tuple[str, int], current: PartitionState | None, a: AssignmentReplayed) -> None:
        """An assignment change of `key` at an epoch no line numbers: after the state known now (a line of it read
        later, a standby's or a replaying controller's, only makes this wait for more)."""
        settled = current is not None and current.partition_epoch >= self.changed_after.get(key, 0)
        if settled or key not in self.unnumbered:
            self.unnumbered[key] = []
        self.unnumbered[key].append((a.replicas, a.adding, a.removing))
        self.changed_after[key] = max(self.changed_after.get(key, -1),
                                      current.partition_epoch + 1 if current is not None else 0)

    def _after_unnumbered(self, key: tuple[str, int], out: Fields, current: PartitionState) -> Ints | None:
        """The replicas of an epoch whose lines state adding and removing replicas other than the state before's and
        equal to the one assignment change since, which no line numbered: that change's (only a logged record
        changes them, so the epoch is at or after it)."""
        changes = self.unnumbered.get(key, [])
        if len(changes) != 1 or any(v is None for v in changes[0]) or "adding" not in out or "removing" not in out:
            return None
        replicas, adding, removing = changes[0]
        stated = (ints_of(out, "adding"), ints_of(out, "removing"))
        if stated == (adding, removing) and stated != (current.adding_replicas, current.removing_replicas):
            return replicas
        return None

    def reassignments_pending(self) -> bool:
        """Accepted reassignments whose records the controller's next lines have not all stated yet: a broker's line
        written in between (its own file, the same moment) may already state an epoch one of them made, whose
        replicas no line has stated (a shrink completed at once), so none is carried meanwhile."""
        return self._altering is not None and self._altering.remaining > 0

    def finish(self) -> None:
        """The lines after accepted reassignments ended: any not stated may have changed replicas unlogged."""
        if self._altering is not None and self._altering.remaining > 0:
            self.unsure_at = self._altering.record
        self._altering = None

    def config(self, c: ConfigStated) -> None:
        if c.name != MIN_ISR or c.value is None or not c.value.isdigit():
            return
        if c.resource_type == "TOPIC":
            self.min_isr.setdefault(c.resource_name, set()).add(int(c.value))
        elif c.resource_type == "BROKER" and c.resource_name == "":
            self.cluster_min_isr.add(int(c.value))

    def topic_configs(self, c: TopicConfigs) -> None:
        value = dict(c.configs).get(MIN_ISR)
        if value is not None and value.isdigit():
            self.min_isr.setdefault(c.topic, set()).add(int(value))

    def deleted(self, topic: str) -> None:
        """The live topic of that name is gone, and its overrides with it (the controller deletes them)."""
        self.min_isr.pop(topic, None)

    def complete(self, key: tuple[str, int], f: Fields, current: PartitionState | None, between: list[Fields],
                 elr: bool) -> Fields:
        """`f` (the fields the lines give of one epoch, leader, leader epoch and ISR among them) with what these rules
        add: the assignment of `current` (the state before it) unless a line of an epoch `between` them (in epoch
        order) states part of one; the leader recovery state the last of those states, if any; and with ELR on an
        empty ELR and last known ELR where the ISR has at least min.insync.replicas."""
        out = dict(f)
        if (any(n not in out for n in ASSIGNMENT) and current is not None and self.controller_seen
                and self.stated_at.get(key, -1) > self.unsure_at and not self.reassignments_pending()
                and not any(n in b for b in between for n in ASSIGNMENT)
                and current.partition_epoch >= self.changed_after.get(key, -1)):
            carried: Fields = {"replicas": current.replicas, "adding": current.adding_replicas,
                       "removing": current.removing_replicas}
            out = {**carried, **out}
        elif ("replicas" not in out and current is not None and self.controller_seen
              and current.partition_epoch < self.changed_after.get(key, -1)
              and not any("replicas" in b for b in between)):
            replicas = self._after_unnumbered(key, out, current)
            if replicas is not None:
                out["replicas"] = replicas
        stated = [b["recovery"] for b in between if "recovery" in b]
        if "recovery" not in out and stated:  # an unclean election (RECOVERING) and its end (RECOVERED): both at INFO
            out["recovery"] = stated[-1]
        if elr and ("elr" not in out or "last_known_elr" not in out):
            bound = self.min_isr_bound(key[0])
            if bound is not None and len(ints_of(out, "isr")) >= bound:
                out = {"elr": (), "last_known_elr": (), **out}
        return out

    def min_isr_bound(self, topic: str) -> int | None:
        """The largest min.insync.replicas the topic can have had (None: the cluster's default is not in the logs)."""
        if not self.cluster_min_isr:
            return None
        return max(self.cluster_min_isr | self.min_isr.get(topic, set()))
