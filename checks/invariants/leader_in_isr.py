"""leader_in_isr, live (the definition of record: leader_in_isr.sql).

Every state after a PartitionChange, bootstrap states included (they are states):
- `leader_not_in_isr`, `leader_not_in_replicas`: a leader other than -1 (no leader is legal, with any
  ISR) outside the ISR, outside the replicas;
- `isr_not_subset_of_replicas`: ISR members outside the replicas (magnitude: how many).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not r["has_after"]:
        return
    leader, isr, reps = r["a_leader"], r["a_isr"], r["a_replicas"]
    if leader != -1 and leader not in isr:
        alert(out, r, "leader_in_isr", "leader_not_in_isr", f"leader {leader} in isr",
              f"leader {leader}, isr {show(isr)}", 1)
    if leader != -1 and leader not in reps:
        alert(out, r, "leader_in_isr", "leader_not_in_replicas", f"leader {leader} in replicas",
              f"leader {leader}, replicas {show(reps)}", 1)
    outside = set(isr) - set(reps)
    if outside:
        alert(out, r, "leader_in_isr", "isr_not_subset_of_replicas", f"isr ⊆ replicas {show(reps)}",
              f"isr {show(isr)}, outside replicas: {show(sorted(outside))}", len(outside))
