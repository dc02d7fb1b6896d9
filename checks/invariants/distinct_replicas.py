"""distinct_replicas, live (the definition of record: distinct_replicas.sql).

Judged where a list is set (a create, a bootstrap state, or a change of that list):
- `duplicate_replica`: a broker twice in the replica list (magnitude: the extra entries);
- `replicas_share_rack`: at a create (not a bootstrap) with brokers seen, replicas on fewer distinct
  racks than min(RF, racks of the active — registered, unfenced — brokers); not judged when any
  replica's rack is unknown;
- `duplicate_in_<list>`: a broker twice in the ISR, ELR, last known ELR, adding or removing list.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp

_MEMBER_LISTS = ("isr", "elr", "last_known_elr", "adding", "removing")  # in the SQL's union order


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not r["has_after"]:
        return
    boot, has_b = r["bootstrap"], r["has_before"]
    reps = r["a_replicas"]
    if boot or not has_b or list(reps) != list(r["b_replicas"]):
        _replicas(c, r, reps, out)
    # no broker twice in the ISR, ELR, last known ELR, adding or removing list, judged where the list is set
    judge_all = boot or not has_b
    for name in _MEMBER_LISTS:
        members = r[f"a_{name}"]
        if members is None or len(set(members)) == len(members):
            continue
        if judge_all or list(members) != list(r[f"b_{name}"] or ()):
            alert(out, r, "distinct_replicas", f"duplicate_in_{name}", f"each broker at most once in {name}",
                  f"{tp(r)} {name} {show(members)}", len(members) - len(set(members)))


def _replicas(c: Cluster, r: Row, reps: list[int], out: list[Alert]) -> None:
    """The replica list, where it is set."""
    distinct = set(reps)
    if len(distinct) < len(reps):
        alert(out, r, "distinct_replicas", "duplicate_replica", "each broker at most once in replicas",
              f"{tp(r)} replicas {show(reps)}", len(reps) - len(distinct))
        return
    if r["has_before"] or r["bootstrap"] or not c.brokers:
        return
    # a create: racks as of now of the brokers seen so far
    if c.active_racks is None:
        # distinct_replicas.sql's "active": registered and unfenced (in controlled shutdown or not)
        c.active_racks = {rack for state, rack, _ in c.brokers.values()
                          if state in ("active", "shutting_down") and rack is not None}
    active_racks = c.active_racks
    replica_racks, with_rack = set(), 0
    for b in distinct:
        st = c.brokers.get(b)
        if st is not None and st[1] is not None:
            replica_racks.add(st[1])
            with_rack += 1
    if with_rack != len(reps):
        return
    needed = min(len(reps), len(active_racks))
    if len(replica_racks) < needed:
        alert(out, r, "distinct_replicas", "replicas_share_rack",
              f"replicas on {needed} distinct racks ({len(active_racks)} racks with active brokers)",
              f"{tp(r)} replicas {show(reps)} on {len(replica_racks)} rack(s)",
              needed - len(replica_racks))
