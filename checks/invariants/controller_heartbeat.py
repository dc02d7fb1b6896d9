"""controller_heartbeat, live (the definition of record: controller_heartbeat.sql).

Between consecutive events of a metadata log (KRaft log records or a simulated log's; not offset samples, not
snapshots) whose offsets are adjacent or equal: `metadata_log_silent` when their times are further apart than
the deadline, at the later one (related_seq: the earlier). A cluster with no such event at all: `no data` at
its first event (at_end).
"""
from __future__ import annotations

from checks.invariants._state import Alert, Cluster, Row, alert

NAME = "controller_heartbeat"
LOGS = ("KRAFT_LOG", "SIMULATOR")


def on_event(c: Cluster, r: Row, cutover: bool, out: list[Alert]) -> None:
    if c.hb_first is None:
        c.hb_first = r
    source = r["source_kind"]
    if source not in LOGS or r["kind"] == "OffsetSample" or r["bootstrap"]:
        return
    c.hb_seen = True
    offset, t = r["source_offset"], r["event_time_ms"]
    before = c.hb_last.get(source)
    c.hb_last[source] = (r["seq"], offset, t)
    if before is None:
        return
    seq, prev_offset, prev_t = before
    if (offset is None or prev_offset is None or t is None or prev_t is None
            or not 0 <= offset - prev_offset <= 1 or t - prev_t <= c.deadlines[NAME]):
        return
    alert(out, r, NAME, "metadata_log_silent", f"a metadata record within {c.deadlines[NAME]} ms of the one before",
          f"nothing written between offsets {prev_offset} and {offset} for {t - prev_t} ms", t - prev_t,
          related_seq=seq)


def at_end(c: Cluster, out: list[Alert]) -> None:
    if not c.hb_seen and c.hb_first is not None:
        alert(out, c.hb_first, NAME, "no_metadata_log", "events of a KRaft metadata log",
              "none: the history says nothing of the controller between its writes", None, status="no data")
