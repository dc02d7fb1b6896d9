"""valid_high_watermark, live (the definition of record: valid_high_watermark.sql).

- The ISR of the partition's latest state before the sample (none before the first state, and none
  after a delete: not judged), kept from each PartitionChange.
- `hw_above_isr_member_leo`: an OffsetSample's HW above the lowest LEO among the ISR members it lists
  that answered (LEO -1 or missing is no evidence); magnitude HW - that LEO, related_seq the state's
  change.
- `elr_member_behind_hw_at_entry`: a sample while a broker is in the ELR (as of the sample's state) whose LEO
  for it (not -1) is below the HW sampled last before the change that put it in the ELR, in the same
  incarnation (none for a member that entered at a create or bootstrap); one alert per such member, magnitude
  that HW - its LEO, related_seq the entering change.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    """The ISR as of later samples."""
    part.seen_state = True
    part.isr = frozenset(r["a_isr"]) if r["has_after"] else None
    part.state_seq = r["seq"]
    # the ELR rule: who entered the ELR here, with the incarnation's last sampled HW (the SQL's elr_entries);
    # an entry is kept until the broker enters again, as the SQL's last entry at or before the sample
    if r["has_after"] and r["a_elr"]:
        entered = set(r["a_elr"]) - set(r["b_elr"]) if transition else set(r["a_elr"])
        hw = part.vhw_last_hw if transition else None
        for b in entered:
            part.elr_entries[b] = (r["seq"], hw)
    part.elr = frozenset(r["a_elr"]) if r["has_after"] else frozenset()
    if not r["has_before"] or not r["has_after"]:
        part.vhw_last_hw = None  # a new incarnation: no sample of it yet


def on_offset_sample(c: Cluster, part: Partition, r: Row, out: list[Alert]) -> None:
    """HW <= min LEO over the ISR members that answered; ELR members' LEO >= the HW when they entered."""
    part.vhw_last_hw = r["s_hw"]
    if part.seen_state and part.isr is not None and part.elr:
        reps, leos = r["s_replicas"] or [], r["s_leos"] or []
        for i, b in enumerate(reps):
            leo = leos[i] if i < len(leos) else None
            entry = part.elr_entries.get(b)
            if b in part.elr and leo is not None and leo >= 0 and entry is not None and entry[1] is not None \
                    and leo < entry[1]:
                alert(out, r, "valid_high_watermark", "elr_member_behind_hw_at_entry",
                      f"elr member {b} LEO >= hw {entry[1]} sampled before it entered the elr",
                      f"{tp(r)} broker {b} LEO {leo} (sampled hw now {r['s_hw']})", entry[1] - leo,
                      related_seq=entry[0])
    if part.seen_state and part.isr is not None:
        hw = r["s_hw"]
        reps, leos = r["s_replicas"] or [], r["s_leos"] or []
        judged = [(leo, b) for i, b in enumerate(reps)
                  if i < len(leos) and leos[i] is not None and leos[i] >= 0 and b in part.isr
                  for leo in (leos[i],)]
        if judged:
            min_leo = min(leo for leo, _ in judged)
            if hw > min_leo:
                broker = min(b for leo, b in judged if leo == min_leo)
                alert(out, r, "valid_high_watermark", "hw_above_isr_member_leo",
                      f"hw <= min LEO over isr {show(sorted(part.isr))} = {min_leo}",
                      f"{tp(r)} hw {hw} from leader {r['s_leader']}; broker {broker} LEO {min_leo}",
                      hw - min_leo, related_seq=part.state_seq)
