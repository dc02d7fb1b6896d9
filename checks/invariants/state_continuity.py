"""state_continuity, live (the definition of record: state_continuity.sql).

- Partitions are keyed by topic id (the name where a source has none): after a delete and a re-create,
  a write under the old id continues the old, deleted incarnation (Cluster.lineage).
- `before_differs_from_previous_after`: a PartitionChange's before (not a bootstrap) differs from the
  previous change's after of its partition, in that many fields (magnitude); `before_of_deleted_partition`
  when the previous change deleted it (magnitude 10); related_seq: the previous change. Allowed when a
  CaptureGap came in between.
- `partition_change_without_live_topic`: a change leaving a state (not a bootstrap), once the history has
  shown a topic event, under a topic id never created or deleted (related_seq: the delete); allowed when a
  capture gap came after the id's last topic event (or, with none, anywhere before).
"""
from __future__ import annotations

from typing import Any

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp

_STATE_FIELDS = ("replicas", "isr", "adding", "removing", "elr", "last_known_elr", "leader", "leader_epoch",
                 "partition_epoch", "recovery")


def on_topic_change(c: Cluster, r: Row) -> None:
    if r["topic_id"] is not None:
        c.topics[r["topic_id"]] = (r["topic_change"], r["seq"], c.gaps)
    if c.first_topic_seq is None:
        c.first_topic_seq = r["seq"]


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    lineage_key = (r["topic_id"] if r["topic_id"] is not None else r["topic"], r["partition"])
    lin = c.lineage.get(lineage_key)
    if lin is None:
        lin = c.lineage[lineage_key] = Partition()
    # before = the lineage's previous after
    has_a = r["has_after"]
    after = tuple(r[f"a_{n}"] for n in _STATE_FIELDS) if has_a else None
    if not r["bootstrap"] and r["has_before"] and lin.last_seq is not None:
        before = tuple(r[f"b_{n}"] for n in _STATE_FIELDS)
        last_after = lin.last_after or ()  # a state after every change but a delete
        if not lin.last_has_after:
            n_diff = 10
        else:
            n_diff = sum(1 for x, y in zip(before, last_after) if _distinct(x, y))
        if n_diff:
            allowed = c.gaps > lin.last_gaps
            rule = "before_of_deleted_partition" if not lin.last_has_after else "before_differs_from_previous_after"
            expected = ("no before (partition deleted at related seq)" if not lin.last_has_after else
                        "before = previous after: " + _state_text(last_after))
            alert(out, r, "state_continuity", rule, expected, f"{tp(r)} before: {_state_text(before)}",
                  n_diff, related_seq=lin.last_seq, status="allowed" if allowed else "violated",
                  allowance="capture gap between the two events" if allowed else None)
    lin.last_seq, lin.last_has_after, lin.last_after, lin.last_gaps = r["seq"], bool(has_a), after, c.gaps
    if has_a and not r["bootstrap"]:
        _live_topic(c, r, out)


def _live_topic(c: Cluster, r: Row, out: list[Alert]) -> None:
    tid = r["topic_id"]
    if tid is None or c.first_topic_seq is None or c.first_topic_seq >= r["seq"]:
        return
    known = c.topics.get(tid)
    if known is not None and known[0] != "DELETED":
        return
    after_gap = c.gaps > (known[2] if known is not None else 0)
    why = "never created" if known is None else f"deleted at seq {known[1]}"
    alert(out, r, "state_continuity", "partition_change_without_live_topic",
          f"topic {r['topic']} (id {tid}) created and not deleted before the change",
          f"{tp(r)} under topic id {tid}: {why}", 1,
          related_seq=None if known is None else known[1],
          status="allowed" if after_gap else "violated",
          allowance="capture gap before the change (the topic creation may be lost)" if after_gap else None)


def _distinct(x: Any, y: Any) -> bool:
    """SQL's IS DISTINCT FROM (lists compared element by element, in order)."""
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return list(x) != list(y)
    return bool(x != y)


def _state_text(s: tuple[Any, ...]) -> str:
    d = dict(zip(_STATE_FIELDS, s))
    return (f"leader {d['leader']} le {d['leader_epoch']} pe {d['partition_epoch']} isr {show(d['isr'])} "
            f"replicas {show(d['replicas'])} adding {show(d['adding'])} removing {show(d['removing'])} "
            f"elr {show(d['elr'])} recovery {d['recovery']}")
