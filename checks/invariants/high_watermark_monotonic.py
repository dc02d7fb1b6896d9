"""high_watermark_monotonic, live (the definition of record: high_watermark_monotonic.sql).

- A partition incarnation (by topic name and partition) ends at a create or delete (a PartitionChange
  without before or after), which forgets its samples; unclean elections (the dispatcher's
  `is_unclean`, the SQL's test shared with unclean_election_allowed.sql) are counted per partition.
- `hw_decreased` / `hw_decreased_across_leader_change`: an OffsetSample's HW below the previous sample's
  of the incarnation (the leaders both known and different: across a leader change); magnitude the drop,
  related_seq the previous sample. Allowed when an unclean election came between the two samples.
- Committed data at an election (a transition whose leader changes to one other than -1), against the
  incarnation's last sample, where the new leader reported a LEO (not -1) below that sample's HW:
  `new_leader_behind_committed` (violated) for a clean election whose new leader was in the ISR or ELR
  as of that sample; `unclean_election_data_loss` (allowed, DATA_LOSS_ALLOWANCE) for an unclean one.
  Magnitude HW - LEO, related_seq the sample.
"""
from __future__ import annotations

from typing import Any

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp

DATA_LOSS_ALLOWANCE = "unclean election: committed records beyond the log of the new leader are lost"


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    has_a = r["has_after"]
    # committed data at an election, against the incarnation's last sample
    if transition and r["a_leader"] != -1 and r["a_leader"] != r["b_leader"]:
        _committed_at_election(part, r, unclean, out)
    # a create/delete starts a new incarnation; count unclean elections
    if not r["has_before"] or not has_a:
        part.sample = None
        part.last_full_sample = None
    part.members_all = frozenset(r["a_isr"]) | frozenset(r["a_elr"] or ()) if has_a else None
    if unclean:
        part.uncleans += 1


def _committed_at_election(part: Partition, r: Row, unclean: bool, out: list[Alert]) -> None:
    sample = part.last_full_sample
    if sample is None:
        return
    s_seq, hw, leos, members = sample
    leader = r["a_leader"]
    leo = leos.get(leader)
    if leo is None or leo < 0 or leo >= hw:
        return
    if not unclean and (members is None or leader not in members):
        return
    alert(out, r, "high_watermark_monotonic",
          "unclean_election_data_loss" if unclean else "new_leader_behind_committed",
          f"new leader {leader} holds the committed records: LEO >= hw {hw} sampled at related seq",
          f"{tp(r)} leader -> {leader} with sampled LEO {leo}, isr ∪ elr then {show(sorted(members or ()))}",
          hw - leo, related_seq=s_seq, status="allowed" if unclean else "violated",
          allowance=DATA_LOSS_ALLOWANCE if unclean else None)


def on_offset_sample(c: Cluster, part: Partition, r: Row, out: list[Alert]) -> None:
    hw = r["s_hw"]
    # the incarnation's last sample, for the next election
    leos_by_broker: dict[int, Any] = {}
    for i, b in enumerate(r["s_replicas"] or []):
        leos = r["s_leos"] or []
        leos_by_broker.setdefault(b, leos[i] if i < len(leos) else None)
    part.last_full_sample = (r["seq"], hw, leos_by_broker, part.members_all)
    # against the previous sample of this incarnation
    prev = part.sample
    if prev is not None and hw < prev[1]:
        p_seq, p_hw, p_leader, p_le, p_uncleans = prev
        leader = r["s_leader"]
        changed = p_leader is not None and leader is not None and p_leader != leader
        allowed = part.uncleans > p_uncleans
        alert(out, r, "high_watermark_monotonic",
              "hw_decreased_across_leader_change" if changed else "hw_decreased",
              f"hw >= {p_hw}",
              f"{tp(r)} hw {p_hw} -> {hw}, leader {p_leader} (epoch {p_le}) -> {leader} "
              f"(epoch {r['s_leader_epoch']})", p_hw - hw, related_seq=p_seq,
              status="allowed" if allowed else "violated",
              allowance="unclean election between the samples (may truncate)" if allowed else None)
    part.sample = (r["seq"], hw, r["s_leader"], r["s_leader_epoch"], part.uncleans)
