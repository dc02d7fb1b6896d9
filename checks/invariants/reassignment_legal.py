"""reassignment_legal, live (the definition of record: reassignment_legal.sql).

Judged on transitions (before and after, not a bootstrap) that are not a create. The phase, as the SQL
derives it: `start` (no adding/removing before, some after), `during` (some before and after), `cancel`
(labelled REASSIGNMENT_CANCEL, or unlabelled and replicas = old replicas - adding but not old replicas
- removing), `complete` (labelled REASSIGNMENT_COMPLETE, or any other end), `none` (no reassignment).
First rule that holds, per phase:
- start: `adding_joined_isr_at_start`, `start_not_grow_to_union` (replicas = OAR ∪ RAR, removing ⊆ old
  replicas, adding new), `start_changed_leader`, `start_changed_isr`;
- during: `replicas_changed_during_reassignment`, and for a re-target `retarget_removing_not_replicas`,
  `retarget_shrank_before_adding_in_isr`; `adding_joined_isr_not_through_leader` (a clean election in
  the change that adds adding replicas to the ISR);
- complete: `completed_before_adding_in_isr`, `completed_replicas_not_target`, `completed_isr_keeps_removing`;
- cancel: `cancel_not_restoring_replicas`;
- none: `replicas_added_outside_reassignment`.
ZooKeeper mode: `zk_completed_without_leader_epoch_bump`, a completion whose leader epoch is not above
the highest one at a start of the partition (by topic id and partition; related_seq: the latest start).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, is_update, show, tp


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not transition or not is_update(r):
        return
    changes = r["changes"]
    b_rep, b_isr, b_add, b_rem, b_leader = (set(r["b_replicas"]), set(r["b_isr"]), set(r["b_adding"]),
                                            set(r["b_removing"]), r["b_leader"])
    a_rep, a_isr, a_add, a_rem, a_leader = (set(r["a_replicas"]), set(r["a_isr"]), set(r["a_adding"]),
                                            set(r["a_removing"]), r["a_leader"])
    b_in = bool(b_add or b_rem)
    a_in = bool(a_add or a_rem)
    if not b_in and a_in:
        phase = "start"
    elif b_in and a_in:
        phase = "during"
    elif b_in and "REASSIGNMENT_CANCEL" in changes:
        phase = "cancel"
    elif b_in and "REASSIGNMENT_COMPLETE" in changes:
        phase = "complete"
    elif b_in and a_rep == b_rep - b_add and a_rep != b_rep - b_rem:
        phase = "cancel"
    elif b_in:
        phase = "complete"
    else:
        phase = "none"
    rule = None
    if phase == "start":
        if a_isr & a_add:
            rule = "adding_joined_isr_at_start"
        elif not (a_rep == b_rep | a_add and a_rem <= b_rep and not (a_add & b_rep)):
            rule = "start_not_grow_to_union"
        elif a_leader != b_leader:
            rule = "start_changed_leader"
        elif a_isr != b_isr:
            rule = "start_changed_isr"
    elif phase == "during":
        if a_add == b_add and a_rem == b_rem and a_rep != b_rep:
            rule = "replicas_changed_during_reassignment"
        elif not a_rem <= b_rep:
            rule = "retarget_removing_not_replicas"
        elif not (b_rep - a_rep) <= b_add and not b_add <= a_isr:
            rule = "retarget_shrank_before_adding_in_isr"
        elif (not (a_isr & b_add) <= b_isr and (a_leader != b_leader or a_leader == -1)
              and not (a_leader != -1 and a_leader not in b_isr)):
            rule = "adding_joined_isr_not_through_leader"
    elif phase == "complete":
        if not b_add <= a_isr:
            rule = "completed_before_adding_in_isr"
        elif a_rep != b_rep - b_rem:
            rule = "completed_replicas_not_target"
        elif a_isr & b_rem:
            rule = "completed_isr_keeps_removing"
    elif phase == "cancel":
        if a_rep != b_rep - b_add:
            rule = "cancel_not_restoring_replicas"
    elif not a_rep <= b_rep:
        rule = "replicas_added_outside_reassignment"
    if r["source_kind"] == "ZOOKEEPER" and phase in ("start", "complete"):
        # ZooKeeper mode: the controller bumps the leader epoch before the assignment becomes RAR
        key = (r["topic_id"] if r["topic_id"] is not None else r["topic"], r["partition"])
        start = c.zk_starts.get(key)
        if phase == "start":
            epoch = r["a_leader_epoch"] if start is None else max(start[0], r["a_leader_epoch"])
            c.zk_starts[key] = start = (epoch, r["seq"] if start is None else max(start[1], r["seq"]))
        if phase == "complete" and start is not None and r["a_leader_epoch"] <= start[0]:
            alert(out, r, "reassignment_legal", "zk_completed_without_leader_epoch_bump",
                  f"complete: leader epoch > {start[0]}, its value at the start (related seq)", _actual(r), 1,
                  related_seq=start[1])
    if rule is None:
        return
    expected = {
        "start": lambda: f"replicas {show(sorted(b_rep | a_add))}, leader {b_leader}, isr {show(sorted(b_isr))}",
        "during": lambda: f"replicas {show(sorted(b_rep))}, removing ⊆ replicas, adding join isr via leader {b_leader}",
        "complete": lambda: (f"adding {show(sorted(b_add))} ⊆ isr, replicas {show(sorted(b_rep - b_rem))}, "
                             f"isr without {show(sorted(b_rem))}"),
        "cancel": lambda: f"replicas {show(sorted(b_rep - b_add))}",
        "none": lambda: f"replicas ⊆ {show(sorted(b_rep))}",
    }[phase]()
    alert(out, r, "reassignment_legal", rule, f"{phase}: {expected}", _actual(r), 1)


def _actual(r: Row) -> str:
    """The change as the alerts show it (built only for an alert: most changes raise none)."""
    return (f"{tp(r)} replicas {show(r['b_replicas'])} -> {show(r['a_replicas'])}, isr {show(r['b_isr'])} "
            f"-> {show(r['a_isr'])}, leader {r['b_leader']} -> {r['a_leader']}, adding {show(r['b_adding'])} -> "
            f"{show(r['a_adding'])}, removing {show(r['b_removing'])} -> {show(r['a_removing'])}")
