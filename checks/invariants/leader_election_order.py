"""leader_election_order, live (the definition of record: leader_election_order.sql).

- Judged: transitions whose new leader (not -1) changed, was in the previous ISR and is a replica;
  not unclean or ELR elections (labelled UNCLEAN or ELR) nor one entering RECOVERING (those are I12's
  and I6's).
- `leader_not_first_eligible`: members of the new ISR ahead of the new leader in the replica list,
  other than the previous leader, that were live as of the election (the broker registry: registered,
  unfenced, not in controlled shutdown; a broker the history never registered is not judged);
  magnitude: how many, related_seq: the earliest of their registry events.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Partition, Row, alert, show, tp


def on_partition_change(c: Cluster, part: Partition, r: Row, transition: bool, unclean: bool,
                        out: list[Alert]) -> None:
    if not transition:
        return
    leader, replicas, isr = r["a_leader"], r["a_replicas"], r["a_isr"]
    if (leader < 0 or leader == r["b_leader"] or leader not in r["b_isr"] or leader not in replicas
            or (r["election"] or "") in ("UNCLEAN", "ELR")
            or (r["a_recovery"] == "RECOVERING" and (r["b_recovery"] or "") != "RECOVERING")):
        return
    ahead = replicas[:list(replicas).index(leader)]
    live = [(i, b, c.brokers[b][2]) for i, b in enumerate(ahead)
            if b != r["b_leader"] and b in isr and b in c.brokers and c.brokers[b][0] == "active"]
    if live:
        alert(out, r, "leader_election_order", "leader_not_first_eligible",
              f"leader {live[0][1]}, the first live isr member in replicas {show(replicas)}",
              f"{tp(r)} elected {leader} over live isr member(s) {show(sorted(b for _, b, _ in live))}",
              len(live), related_seq=min(since for _, _, since in live))
