"""leader_epoch_monotonic, live (the definition of record: leader_epoch_monotonic.sql).

Judged on transitions (a PartitionChange with before and after, not a bootstrap), first rule that holds:
- `leader_epoch_decreased`: the leader epoch goes down;
- kept, `leader_changed_without_epoch_bump`: the leader changed (to or from -1 included);
- kept, `replicas_removed_without_epoch_bump`: replicas left, except in ZooKeeper mode (the bump went
  to the state znode before the assignment znode shrinks) and in a ZooKeeper cluster's broker-log
  import where the partition epoch is kept (the assignment znode's change of its own);
- kept, `isr_shrink_without_epoch_bump_before_mv12`: the ISR shrank at a known KRaft metadata.version
  below 12 (3.6-IV0, KAFKA-15021).
Magnitude: the drop (before - after).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not transition:
        return
    ble, ale = r["b_leader_epoch"], r["a_leader_epoch"]
    rule = None
    if ale < ble:
        rule = "leader_epoch_decreased"
    elif ale == ble:
        mv, sk = r["metadata_version"], r["source_kind"]
        if r["a_leader"] != r["b_leader"]:
            rule = "leader_changed_without_epoch_bump"
        elif (not set(r["b_replicas"]) <= set(r["a_replicas"]) and sk != "ZOOKEEPER"
              and not (sk == "BROKER_LOG" and r["a_partition_epoch"] == r["b_partition_epoch"])):
            rule = "replicas_removed_without_epoch_bump"
        elif (not set(r["b_isr"]) <= set(r["a_isr"]) and mv is not None and mv < 12
              and sk is not None and sk != "ZOOKEEPER"):
            rule = "isr_shrink_without_epoch_bump_before_mv12"
    if rule is None:
        return
    expected = f"leader epoch >= {ble}" if rule == "leader_epoch_decreased" else f"leader epoch > {ble}"
    mv = r["metadata_version"]
    alert(out, r, "leader_epoch_monotonic", rule, expected,
          f"leader {r['b_leader']} -> {r['a_leader']}, leader epoch {ble} -> {ale}, metadata.version "
          f"{'unknown' if mv is None else mv}", ble - ale)
