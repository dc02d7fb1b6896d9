"""reassignment_completes, live (the definition of record: reassignment_completes.sql).

Per partition (topic, partition): owed from the change that leaves it with adding or removing replicas to the
first change that leaves it with neither (or deletes it); met later than the deadline: `reassignment_not_ended`
at the change that met it (related_seq: the one that opened it); still owed at the end: pending (at_end).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, met, pending, settle, show, tp

NAME, RULE = "reassignment_completes", "reassignment_not_ended"


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    key = (r["topic"], r["partition"])
    owed = bool(r["has_after"] and (r["a_adding"] or r["a_removing"]))
    opened = settle(c.rc_open, key, owed, r)
    if opened is not None:
        met(c, out, opened, r, NAME, RULE, _expected(c),
            lambda took: f"{_what(opened)}: ended {took} ms after it began (related seq)")


def at_end(c: Cluster, out: list[Alert]) -> None:
    for opened in c.rc_open.values():
        pending(c, out, opened, NAME, RULE, _expected(c), f"{_what(opened)}: still reassigning at the end of the history")


def _expected(c: Cluster) -> str:
    return f"completed or cancelled within {c.deadlines[NAME]} ms"


def _what(r: Row) -> str:
    return f"{tp(r)} adding {show(r['a_adding'])} removing {show(r['a_removing'])}"
