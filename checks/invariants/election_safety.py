"""election_safety, live (the definition of record: election_safety.sql).

- The observation: a ControllerChange's (cc_leader, cc_epoch), any other non-bootstrap event's
  (controller_id, controller_epoch); a null or negative epoch or controller is no observation.
- `two_controllers_in_one_epoch`: a controller other than those seen in its epoch, at its first event;
  related_seq is the first event of the epoch's first controller. (The SQL's magnitude counts all
  events of the extra controller in the epoch; live reports the breach at its first event with 1.)
- The migration's cutover (fragments/migration_cutover.sql, detected by the dispatcher): epochs of
  ZooKeeper's counter and of the KRaft quorum's are not the same epoch, so the epochs seen start over.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Row, alert


def on_event(c: Cluster, r: Row, cutover: bool, out: list[Alert]) -> None:
    if cutover:
        c.epochs = {}
    if r["kind"] == "ControllerChange":
        epoch, leader = r["cc_epoch"], r["cc_leader"]
    else:
        epoch, leader = r["controller_epoch"], r["controller_id"]
    if epoch is None or epoch < 0 or r["bootstrap"] or leader is None or leader < 0:
        return
    seen = c.epochs.get(epoch)
    if seen is None:
        c.epochs[epoch] = (leader, r["seq"], {leader})
    elif leader not in seen[2]:
        seen[2].add(leader)
        alert(out, r, "election_safety", "two_controllers_in_one_epoch",
              f"only controller {seen[0]} in epoch {epoch}", f"controller {leader} in epoch {epoch}",
              1, related_seq=seen[1])
