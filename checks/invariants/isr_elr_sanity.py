"""isr_elr_sanity, live (the definition of record: isr_elr_sanity.sql).

Every state after a PartitionChange:
- `leader_from_elr_while_isr_not_empty` (isValidNewLeader): a new leader from the previous ELR (not in
  the previous ISR) while the new ISR holds others; magnitude: how many others;
- `elr_while_isr_at_min_isr`: a non-empty ELR while |ISR| >= min.insync.replicas as of the change (the
  topic's config, else the cluster default; related_seq: the config's event);
- `elr_not_subset_of_replicas`, `isr_elr_overlap`, `adding_removing_overlap`,
  `adding_or_removing_not_in_replicas`: the set rules, magnitude the size of the offending set;
- `elr_member_not_from_isr`: new ELR members that were not in the previous ISR (transitions only);
- `elr_before_metadata_version_22`: an ELR or last known ELR at a known metadata.version below 22;
- `elr_in_zookeeper_mode`: an ELR or last known ELR in a ZooKeeper source's state;
- `isr_empty_without_elr`: an empty ISR where no ELR can exist: a ZooKeeper source's state, or a known
  metadata.version below 22.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show


def _int_or_none(value: str | None) -> int | None:
    """SQL's TRY_CAST(value AS INT)."""
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def on_config_change(c: Cluster, r: Row) -> None:
    """min.insync.replicas by scope: a topic's, or the cluster default (the BROKER config with no resource)."""
    if r["config_name"] == "min.insync.replicas" and (
            r["config_type"] == "TOPIC" or (r["config_type"] == "BROKER" and r["config_resource"] == "")):
        scope = f"topic:{r['config_resource']}" if r["config_type"] == "TOPIC" else "cluster:"
        c.min_isr[scope] = (_int_or_none(r["config_value"]), r["seq"])


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not r["has_after"]:
        return
    leader, b_elr = r["a_leader"], r["b_elr"]
    if (r["has_before"] and not r["bootstrap"] and leader != -1 and leader != r["b_leader"] and b_elr
            and leader in b_elr and leader not in r["b_isr"]):
        others = set(r["a_isr"]) - {leader}
        if others:  # isValidNewLeader: an ELR member only when the target ISR is empty
            alert(out, r, "isr_elr_sanity", "leader_from_elr_while_isr_not_empty",
                  f"a leader from the elr {show(b_elr)} only when the isr is empty",
                  f"leader {r['b_leader']} -> {leader}, isr {show(r['b_isr'])} -> {show(r['a_isr'])}",
                  len(others))
    if r["a_elr"]:
        for scope in (f"topic:{r['topic']}", "cluster:"):
            found = c.min_isr.get(scope)
            if found is not None and found[0] is not None:
                if len(r["a_isr"]) >= found[0]:
                    alert(out, r, "isr_elr_sanity", "elr_while_isr_at_min_isr",
                          f"elr empty while |isr| >= min.insync.replicas {found[0]}",
                          f"isr {show(r['a_isr'])}, elr {show(r['a_elr'])}", len(r["a_elr"]),
                          related_seq=found[1])
                break
    mv = r["metadata_version"]
    if not r["a_isr"] and (r["source_kind"] == "ZOOKEEPER" or (mv is not None and mv < 22)):
        where = ", ZooKeeper mode" if r["source_kind"] == "ZOOKEEPER" else f", metadata.version {mv}"
        alert(out, r, "isr_elr_sanity", "isr_empty_without_elr",
              "a non-empty isr where no elr can exist (ZooKeeper mode, metadata.version below 22)",
              f"isr [], leader {r['a_leader']}, replicas {show(r['a_replicas'])}{where}", 1)
    if not r["a_elr"] and not r["a_adding"] and not r["a_removing"] and not r["a_last_known_elr"]:
        return  # every other rule needs a non-empty ELR, last known ELR, adding or removing list
    isr, elr, reps = set(r["a_isr"]), set(r["a_elr"]), set(r["a_replicas"])
    adding, removing = set(r["a_adding"]), set(r["a_removing"])
    name = "isr_elr_sanity"
    if elr - reps:
        alert(out, r, name, "elr_not_subset_of_replicas", f"elr ⊆ replicas {show(r['a_replicas'])}",
              f"elr {show(r['a_elr'])}", len(elr - reps))
    if isr & elr:
        alert(out, r, name, "isr_elr_overlap", "isr ∩ elr = []",
              f"isr {show(r['a_isr'])}, elr {show(r['a_elr'])}", len(isr & elr))
    if adding & removing:
        alert(out, r, name, "adding_removing_overlap", "adding ∩ removing = []",
              f"adding {show(r['a_adding'])}, removing {show(r['a_removing'])}", len(adding & removing))
    if (adding | removing) - reps:
        alert(out, r, name, "adding_or_removing_not_in_replicas",
              f"adding ∪ removing ⊆ replicas {show(r['a_replicas'])}",
              f"adding {show(r['a_adding'])}, removing {show(r['a_removing'])}",
              len((adding | removing) - reps))
    if r["has_before"] and not r["bootstrap"]:
        entered = (elr - set(r["b_elr"])) - set(r["b_isr"])
        if entered:
            alert(out, r, name, "elr_member_not_from_isr",
                  f"new elr members from the previous isr {show(r['b_isr'])}",
                  f"elr {show(r['b_elr'])} -> {show(r['a_elr'])}", len(entered))
    lke = r["a_last_known_elr"] or []
    if mv is not None and mv < 22 and (elr or lke):
        alert(out, r, name, "elr_before_metadata_version_22",
              "no elr or last known elr below metadata.version 22 (4.0-IV0)",
              f"metadata.version {mv}, elr {show(r['a_elr'])}, last known elr {show(lke)}",
              len(r["a_elr"]) + len(lke))
    if r["source_kind"] == "ZOOKEEPER" and (elr or lke):
        alert(out, r, name, "elr_in_zookeeper_mode", "no elr or last known elr in ZooKeeper mode (the state znode has none)",
              f"elr {show(r['a_elr'])}, last known elr {show(lke)}", len(r["a_elr"]) + len(lke))
