"""replication_progress, live (the definition of record: replication_progress.sql).

Per replica of a partition, at the partition's samples with a HW: owed where its sampled LEO is below the HW
of the sample before; met at the first sample where it has reached that HW or that no longer names it, or at
the partition's delete (which also forgets the HW). LEO -1 (no answer) neither opens nor meets. Met later than
the deadline: `replica_behind_hw` at the sample that met it (related_seq: the one that opened it); still owed
at the end: pending (at_end).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, met, pending, tp

NAME, RULE = "replication_progress", "replica_behind_hw"


def on_offset_sample(c: Cluster, part: Partition, r: Row, out: list[Alert]) -> None:
    prev = part.rp_prev_hw
    leos: dict[int, int | None] = {}
    for b, leo in zip(r["s_replicas"] or (), r["s_leos"] or ()):
        leos.setdefault(b, leo)  # a broker named twice: its first entry, as the SQL's position
    for b in [b for b in part.rp_open if b not in leos]:  # no longer assigned
        _met(c, part, b, r, out)
    for b, leo in leos.items():
        if leo is None or leo < 0:
            continue  # no answer: no evidence
        owed = prev is not None and leo < prev
        if owed and b not in part.rp_open:
            part.rp_open[b] = dict(r, rp_leo=leo, rp_hw=prev)
        elif not owed and b in part.rp_open:
            _met(c, part, b, r, out)
    part.rp_prev_hw = r["s_hw"]


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if r["has_after"]:
        return
    for b in list(part.rp_open):  # deleted: nothing is owed, and the HW starts again
        _met(c, part, b, r, out)
    part.rp_prev_hw = None


def at_end(c: Cluster, out: list[Alert]) -> None:
    for part in c.parts.values():
        for b, opened in part.rp_open.items():
            pending(c, out, opened, NAME, RULE, _expected(c), f"{_what(opened, b)} at the end of the history")


def _met(c: Cluster, part: Partition, b: int, r: Row, out: list[Alert]) -> None:
    opened = part.rp_open.pop(b)
    met(c, out, opened, r, NAME, RULE, _expected(c),
        lambda took: f"{_what(opened, b)} for {took} ms (from the related seq)")


def _what(opened: Row, b: int) -> str:
    return f"{tp(opened)} replica {b}: LEO {opened['rp_leo']} below HW {opened['rp_hw']}"


def _expected(c: Cluster) -> str:
    return f"LEO reaches the HW sampled before within {c.deadlines[NAME]} ms"
