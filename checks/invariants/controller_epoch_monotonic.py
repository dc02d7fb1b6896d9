"""controller_epoch_monotonic, live (the definition of record: controller_epoch_monotonic.sql).

- The observation: a ControllerChange's new epoch (cc_epoch), any other event's controller_epoch; an
  epoch that is null or negative is no observation.
- `controller_change_epoch_regressed` / `event_controller_epoch_regressed`: a non-bootstrap observation
  below the running maximum of the observations before it (bootstrap events count towards the maximum);
  related_seq is the previous observation's event, magnitude the drop.
- The migration's cutover (fragments/migration_cutover.sql, detected by the dispatcher) starts the
  KRaft quorum's counter: the running maximum starts over.
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Row, alert


def on_event(c: Cluster, r: Row, cutover: bool, out: list[Alert]) -> None:
    if cutover:
        c.ce_max = c.ce_prev_seq = None
    kind = r["kind"]
    epoch = r["cc_epoch"] if kind == "ControllerChange" else r["controller_epoch"]
    if epoch is None or epoch < 0:
        return
    if not r["bootstrap"] and c.ce_max is not None and epoch < c.ce_max:
        rule = ("controller_change_epoch_regressed" if kind == "ControllerChange"
                else "event_controller_epoch_regressed")
        alert(out, r, "controller_epoch_monotonic", rule, f"controller epoch >= {c.ce_max}",
              f"controller epoch {epoch} on {kind}", c.ce_max - epoch, related_seq=c.ce_prev_seq)
    c.ce_max = epoch if c.ce_max is None else max(c.ce_max, epoch)
    c.ce_prev_seq = r["seq"]
