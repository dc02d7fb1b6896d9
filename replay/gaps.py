"""Stretches of a history nobody read (CaptureGap events), and which answers fall in or depend on one.

A CaptureGap event is verified data (it is in the chain) saying that a stretch of its source was not read:
a deleted segment, corrupt bytes skipped, missing zxids, a cut file. The stretch lies between the last event
read before it and the first event read after it: in chain order (seq), in time and in the source's own
positions (the event's from_offset..to_offset: metadata offsets, zxids or log lines). State as of any point
inside it, by seq, by time or by source position, may miss changes that happened there; so may any answer
that lists or compares the changes of a span containing it. Such answers carry the stretch (``Point.uncertain``)
and say WARNING in their header and an ``uncertain`` entry in JSON.

The stretch is derived from the gap event, its source positions and its neighbours in the chain, so every
CaptureGap (KRaft, ZooKeeper, broker logs, live capture, ``--on-error skip``) is treated alike, with no special case
per source. A gap found late (an import of broker logs notices that a partition's epochs were skipped only when it
reads a later epoch) names the first source position not known (``from_offset``), before the gap event's own: its
stretch starts after the last event read before that position, not at the gap event. A gap about some partitions
only says so in its reason (schemas.gap_reasons; a live ZooKeeper watch's skipped versions of one partition's state
znode): its stretch holds that partition's state only, and ends at its next event.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb

from schemas import times
from schemas.gap_reasons import partitions_of

_KIND_POSITIONS = {"ZOOKEEPER": "zxids", "KRAFT_LOG": "offsets", "KRAFT_SNAPSHOT": "offsets",
                   "BROKER_LOG": "log records"}

# the CaptureGaps that are stretches of the controller's state: not a request log's lines not read (source REQUEST_LOG,
# services/requests/event.py gap_events), which leave who asked unknown and the state all read
STATE_GAP = "AND source_kind <> 'REQUEST_LOG'"


@dataclass(frozen=True, slots=True)
class CaptureStretch:
    """What the history does not know: between event `from_seq` (the last one read before, -1: none) and event
    `to_seq` (the first one read after, -1: none, the history ends in it), the source positions
    `from_offset`..`to_offset` (-1: unknown) were not read. The gap event itself is at `gap_seq`."""

    gap_seq: int
    from_seq: int
    to_seq: int
    from_time_ms: int  # -1: no event before it
    to_time_ms: int  # -1: no event after it
    from_offset: int
    to_offset: int
    positions: str  # what the offsets count: offsets, zxids, log records
    reason: str
    partitions: tuple[tuple[str, int], ...] = ()  # (topic, partition) whose state it holds; (): every partition

    def about(self, topic: str, partition: int) -> bool:
        """Whether this stretch holds the state of `topic`-`partition`."""
        return not self.partitions or (topic, partition) in self.partitions

    def names(self) -> str:
        return ", ".join(f"{t}-{p}" for t, p in self.partitions) if self.partitions else "every partition"

    def contains_seq(self, seq: int) -> bool:
        return self.from_seq < seq and (self.to_seq < 0 or seq < self.to_seq)

    def contains_time(self, ms: int) -> bool:
        return (self.from_time_ms < 0 or self.from_time_ms < ms) and (self.to_time_ms < 0 or ms < self.to_time_ms)

    def contains_offset(self, offset: int) -> bool:
        return 0 <= self.from_offset <= offset and (self.to_offset < 0 or offset <= self.to_offset)

    def describe(self) -> str:
        def pos(n: int) -> str:
            return f"{n:#x}" if self.positions == "zxids" else str(n)
        if self.from_offset < 0:
            source = "source positions unknown"
        elif self.from_offset == self.to_offset:
            source = f"{self.positions} {pos(self.from_offset)}"
        else:
            source = f"{self.positions} {pos(self.from_offset)}..{pos(self.to_offset) if self.to_offset >= 0 else ''}"

        before = (f"after seq {self.from_seq} ({times.show(self.from_time_ms)})" if self.from_seq >= 0
                  else "before the first event read")
        after = (f"before seq {self.to_seq} ({times.show(self.to_time_ms)})" if self.to_seq >= 0
                 else "to the end of the history")
        return f"not read: {source} {before} {after}, gap event seq {self.gap_seq}: {self.reason}"

    def as_json(self) -> dict[str, object]:
        """Since when and until when the state it holds is unknown, and why (a partition's ``uncertain``)."""
        return {"since_seq": self.from_seq, "since_time": times.show(self.from_time_ms) if self.from_time_ms >= 0
                else None, "until_seq": self.to_seq if self.to_seq >= 0 else None,
                "until_time": times.show(self.to_time_ms) if self.to_time_ms >= 0 else None,
                "gap_seq": self.gap_seq, "reason": self.reason}


def stretches(con: duckdb.DuckDBPyConnection, cluster_id: str, *, up_to_seq: int | None = None) -> list[CaptureStretch]:
    """Every stretch of `cluster_id` whose gap event is at or before `up_to_seq` (None: all), in seq order."""
    cond, args = ("AND seq <= ?", [up_to_seq]) if up_to_seq is not None else ("", [])
    # `before`: the last event read (of the gap's source kind) at a position before the gap's first missing one,
    # or a gap found where it begins (open, at its own position) at that very position; earlier than the gap's
    # neighbour for a gap found late
    gap_rows = con.execute(f"""SELECT seq, gap_from, gap_to, source_kind, reason, source_offset,
                                      (SELECT max(e.seq) FROM events e WHERE e.cluster_id = g.cluster_id
                                         AND e.seq < g.seq AND e.source_kind = g.source_kind AND e.source_offset >= 0
                                         AND ((e.kind <> 'CaptureGap' AND e.source_offset < g.gap_from)
                                              OR (e.kind = 'CaptureGap' AND e.source_offset = g.gap_from
                                                  AND e.gap_from = e.source_offset AND e.gap_to = -1))) AS before
                               FROM events g WHERE cluster_id = ? AND kind = 'CaptureGap' {STATE_GAP} {cond}
                               ORDER BY seq""",
                           [cluster_id, *args]).fetchall()
    if not gap_rows:
        return []
    gap_seqs = {r[0] for r in gap_rows}
    bounds: dict[int, tuple[int, int]] = {}  # gap seq -> (last read before, first read after), -1: none
    for seq in sorted(gap_seqs):
        lo = seq - 1
        while lo in gap_seqs:  # gaps in a row are one stretch
            lo -= 1
        hi = seq + 1
        while hi in gap_seqs:
            hi += 1
        bounds[seq] = (lo, hi)
    partitions = {r[0]: partitions_of(r[4] or "") for r in gap_rows}
    own = {r[0]: r[5] for r in gap_rows}  # each gap event's own source position
    ends = _next_partition_events(con, cluster_id, [(seq, p) for seq, ps in partitions.items() for p in ps])
    wanted = sorted({s for b in bounds.values() for s in b if s >= 0} | {r[6] for r in gap_rows if r[6] is not None}
                    | set(ends.values()) | gap_seqs)
    known = dict(con.execute("SELECT seq, event_time_ms FROM events WHERE cluster_id = ? AND seq IN "
                             "(SELECT unnest(?::BIGINT[]))", [cluster_id, wanted]).fetchall())
    out = []
    for seq, gap_from, gap_to, source_kind, reason, _, before in gap_rows:
        lo, hi = bounds[seq]
        if lo not in known:
            lo = _neighbour(con, cluster_id, seq, before=True)
        if before is not None and before < lo:
            lo = before
        if partitions[seq]:  # the partition's state is unknown until its next event, whatever comes between
            hi = ends.get(seq, -1)
            if before is None and gap_from is not None and gap_from >= 0:
                lo = -1  # no event read before its first unknown position: unknown since the history begins
            elif gap_from is not None and gap_from == own[seq] and gap_to == -1:
                lo = seq  # found where it begins (open, at its own position): known up to the gap event itself
        elif hi not in known:
            hi = _neighbour(con, cluster_id, seq, before=False)
        out.append(CaptureStretch(
            seq, lo, hi, known.get(lo, -1) if lo >= 0 else -1, known.get(hi, -1) if hi >= 0 else -1,
            gap_from if gap_from is not None else -1, gap_to if gap_to is not None else -1,
            _KIND_POSITIONS.get(source_kind, "source positions"), reason or "", partitions[seq]))
    return out


# the columns `stretches` reads of the events table: a table of only these, holding the gap events and the
# events near them that `stretches` looks for, gives the same stretches (`stretches_of_rows`)
STRETCH_COLUMNS = ("cluster_id", "seq", "kind", "source_kind", "source_offset", "event_time_ms", "topic",
                   "partition", "gap_from", "gap_to", "reason")


def stretches_of_rows(rows: list[tuple[object, ...]]) -> list[tuple[str, CaptureStretch]]:
    """(cluster id, stretch) of every cluster, from rows of STRETCH_COLUMNS: the gap events and, per gap, the
    events read just before and after it, the last read before its first missing source position and its
    partition's next change (what an engine that holds the events elsewhere, Spark, gives)."""
    types = {"seq": "BIGINT", "source_offset": "BIGINT", "event_time_ms": "BIGINT", "partition": "INTEGER",
             "gap_from": "BIGINT", "gap_to": "BIGINT"}
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        con.execute("CREATE TABLE events (" + ", ".join(f'"{c}" {types.get(c, "VARCHAR")}' for c in STRETCH_COLUMNS)
                    + ")")
        if rows:
            con.executemany(f"INSERT INTO events VALUES ({', '.join('?' * len(STRETCH_COLUMNS))})",
                            [list(r) for r in dict.fromkeys(rows)])
        clusters = [r[0] for r in con.execute("SELECT DISTINCT cluster_id FROM events ORDER BY 1").fetchall()]
        return [(c, s) for c in clusters for s in stretches(con, c)]
    finally:
        con.close()


def _next_partition_events(con: duckdb.DuckDBPyConnection, cluster_id: str,
                           wanted: list[tuple[int, tuple[str, int]]]) -> dict[int, int]:
    """gap seq -> the seq of the first PartitionChange of its partition after it (none: not in the result)."""
    if not wanted:
        return {}
    rows = con.execute("""SELECT w.g, min(e.seq) FROM (SELECT unnest(?::BIGINT[]) AS g, unnest(?::VARCHAR[]) AS t,
                                                              unnest(?::INTEGER[]) AS p) w
                          JOIN events e ON e.cluster_id = ? AND e.kind = 'PartitionChange' AND e.topic = w.t
                                       AND e.partition = w.p AND e.seq > w.g
                          GROUP BY w.g""",
                       [[g for g, _ in wanted], [t for _, (t, _) in wanted], [p for _, (_, p) in wanted],
                        cluster_id]).fetchall()
    return {g: s for g, s in rows}


def _neighbour(con: duckdb.DuckDBPyConnection, cluster_id: str, seq: int, *, before: bool) -> int:
    """The nearest event read (not a gap) before or after `seq`, when the chain itself has a hole next to it."""
    agg, op = ("max", "<") if before else ("min", ">")
    rows = con.execute(f"SELECT {agg}(seq) FROM events WHERE cluster_id = ? AND seq {op} ? AND kind <> 'CaptureGap'",
                      [cluster_id, seq]).fetchall()
    return rows[0][0] if rows and rows[0][0] is not None else -1


def containing(con: duckdb.DuckDBPyConnection, cluster_id: str, seq: int, *, time_ms: int | None = None,
               offset: int | None = None) -> tuple[CaptureStretch, ...]:
    """The stretches a point falls in: the point's seq, or the time or source offset it was asked by."""
    return tuple(s for s in stretches(con, cluster_id)
                 if s.contains_seq(seq) or (time_ms is not None and s.contains_time(time_ms))
                 or (offset is not None and s.contains_offset(offset)))


def between(con: duckdb.DuckDBPyConnection, cluster_id: str, from_seq: int, to_seq: int) -> tuple[CaptureStretch, ...]:
    """The stretches an answer about the changes from seq `from_seq` to `to_seq` depends on: those whose
    gap event lies in that span (changes there may be missing from the answer)."""
    return tuple(s for s in stretches(con, cluster_id, up_to_seq=to_seq) if s.gap_seq > from_seq)
