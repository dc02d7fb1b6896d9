"""A broker-log import asked by time at every mark of a real scenario, against what `kafka-topics --describe`
printed then: each partition state equal (leader, replicas, ISR, adding, removing, topic id, and the line as the tool
prints it, where the release prints ELR fields), or flagged as not known at that point, never a silent mismatch.
Shared by the ZooKeeper-mode and the KRaft real-cluster tests."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from devtools.cluster.tools import version_tuple


@dataclass(frozen=True)
class MarksCompared:
    marks: int
    compared: int
    equal: int
    lines: int  # of the equal ones, describe lines compared (the release prints Elr/LastKnownElr)
    flagged: int
    silent: tuple[str, ...]
    flagged_at: tuple[str, ...] = ()  # "mark: t-p" of each one flagged

    @property
    def share(self) -> float:
        """The share of partition states flagged as not known."""
        return self.flagged / self.compared if self.compared else 0.0

    def summary(self, what: str) -> str:
        return (f"import logs, {what}, all three logs: {self.marks} marks, {self.compared} partition states compared, "
                f"{self.equal} equal ({self.lines} describe lines equal), {self.flagged} flagged uncertain "
                f"({self.share:.1%}), {len(self.silent)} silent mismatches"
                + (f"\nflagged: {', '.join(self.flagged_at)}" if self.flagged_at else ""))


def compare_marks(store: Any, marks: Iterable[Any], release: str) -> MarksCompared:
    """Every mark with partitions (its ``time_ms`` the wall-clock time describe held), asked by time."""
    from replay.formats import describe_partition
    from replay.queries import state_as_of, zookeeper_mode

    marks = [m for m in marks if m.described.partitions]
    compared = equal = flagged = lines = 0
    silent: list[str] = []
    flagged_at: list[str] = []
    for m in marks:
        assert m.time_ms > 0, f"mark {m.name} has no time"
        point = store.point(time=m.time_ms)
        rows = {(r.topic, r.partition): r for r in state_as_of(store, point).partitions}
        zk = zookeeper_mode(store, point)
        for key in sorted(set(rows) | set(m.described.partitions)):
            compared += 1
            d, r = m.described.partitions.get(key), rows.get(key)
            got = None if r is None else (r.state.leader, r.state.replicas, r.state.isr, r.state.adding_replicas,
                                          r.state.removing_replicas, r.topic_id)
            want = None if d is None else (d.leader, d.replicas, d.isr, d.adding, d.removing,
                                           m.described.topic_ids[key[0]])
            if point.uncertain_about(*key):
                flagged += 1
                flagged_at.append(f"{m.name}: {key[0]}-{key[1]}")
            elif got != want:
                silent.append(f"{m.name} @ {m.time_ms}: {key}: replayed {got} != described {want}")
            else:  # as that release's kafka-topics prints it (Elr/LastKnownElr from 3.7 on): state --kafka-version
                kafka_line = next(line for line in m.described.text.splitlines()
                                  if line.startswith(f"\tTopic: {key[0]}\tPartition: {key[1]}\t"))
                ours = describe_partition(r, zk, version_tuple(release))
                lines += 1
                if ours.rstrip(" ") == kafka_line.rstrip(" "):
                    equal += 1
                else:
                    silent.append(f"{m.name} @ {m.time_ms}: {key}: line {ours!r} != described {kafka_line!r}")
    return MarksCompared(len(marks), compared, equal, lines, flagged, tuple(silent), tuple(flagged_at))
