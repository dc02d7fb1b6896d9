"""valid_high_watermark, live (the definition of record: valid_high_watermark.sql).

- The ISR of the partition's latest state before the sample (none before the first state, and none
  after a delete: not judged), kept from each PartitionChange.
- `hw_above_isr_member_leo`: an OffsetSample's HW above the lowest LEO among the ISR members it lists
  that answered (LEO -1 or missing is no evidence); magnitude HW - that LEO, related_seq the state's
  change.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    """The ISR as of later samples."""
    part.seen_state = True
    part.isr = frozenset(r["a_isr"]) if r["has_after"] else None
    part.state_seq = r["seq"]


def on_offset_sample(c: Cluster, part: Partition, r: Row, out: list[Alert]) -> None:
    """HW <= min LEO over the ISR members that answered."""
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
