"""The replayed state at each mark of a real scenario against what `kafka-topics --describe` printed then."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def mark_problems(store: Any, marks: Iterable[Any], point_of: Callable[[Any], Any],
                  where: Callable[[Any], str]) -> tuple[list[str], int]:
    """(every difference, one line each; the partition states compared). `point_of(mark)` is the store point
    to ask at, `where(mark)` names the mark in a problem line."""
    from replay.queries import state_as_of

    problems: list[str] = []
    compared = 0
    for m in marks:
        rows = {(r.topic, r.partition): r for r in state_as_of(store, point_of(m)).partitions}
        if set(rows) != set(m.described.partitions):
            problems.append(f"{m.name} @ {where(m)}: partitions: replayed {sorted(rows)}, "
                            f"described {sorted(m.described.partitions)}")
            continue
        for key, d in m.described.partitions.items():
            s = rows[key].state
            got = (s.leader, s.replicas, s.isr, s.adding_replicas, s.removing_replicas, rows[key].topic_id)
            want = (d.leader, d.replicas, d.isr, d.adding, d.removing, m.described.topic_ids[key[0]])
            compared += 1
            if got != want:
                problems.append(f"{m.name} @ {where(m)}: {key}: replayed {got} != described {want}")
    return problems, compared
