"""partition_epoch_monotonic, live (the definition of record: partition_epoch_monotonic.sql).

- `partition_epoch_not_increased`: a transition (before and after, not a bootstrap) that is not a create
  keeps or lowers the partition epoch; magnitude before - after + 1.
- Exempt, as in the SQL: a ZooKeeper-mode change of the assignment znode alone (ZooKeeper source or a
  ZooKeeper cluster's broker logs; partition epoch, leader, leader epoch and ISR as they were), which
  leaves the state znode's version as it was.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, is_update


def _zk_assignment_only(r: Row) -> bool:
    """A ZooKeeper-mode change of the assignment znode alone: the state znode, and its version (the
    partition epoch), untouched (see partition_epoch_monotonic.sql)."""
    return (r["source_kind"] in ("ZOOKEEPER", "BROKER_LOG") and r["a_partition_epoch"] == r["b_partition_epoch"]
            and r["a_leader"] == r["b_leader"] and r["a_leader_epoch"] == r["b_leader_epoch"]
            and len(r["a_isr"]) == len(r["b_isr"]) and set(r["a_isr"]) <= set(r["b_isr"]))


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not transition or not is_update(r):
        return
    if r["a_partition_epoch"] <= r["b_partition_epoch"] and not _zk_assignment_only(r):
        alert(out, r, "partition_epoch_monotonic", "partition_epoch_not_increased",
              f"partition epoch > {r['b_partition_epoch']}",
              f"partition epoch {r['b_partition_epoch']} -> {r['a_partition_epoch']}",
              r["b_partition_epoch"] - r["a_partition_epoch"] + 1)
