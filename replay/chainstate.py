"""What the store knows about each cluster's chain: up to which seq it is verified, and the
stretches that are not (chain_gaps), so that every answer can say so.

schemas.archive.verified checks every event's hash and the links between the files of one load; the
store adds what only it can see, across loads: after each load it walks the seqs of the clusters
the load touched (one ordered pass over seq, prev_hash and hash) and finds the holes and the
links that do not hold (a file that filled a hole but does not join the event after it). A load
without --allow-gaps that would add such a stretch is refused (rolled back), naming it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import duckdb

from schemas.archive.verified import ArchiveProblem, Gap, VerifiedRead

DDL = """
CREATE TABLE IF NOT EXISTS chain_status (cluster_id VARCHAR PRIMARY KEY, verified_to BIGINT, last_seq BIGINT,
                                         head_hash VARCHAR, events BIGINT, checked_ms BIGINT,
                                         clock_back_count BIGINT, clock_back_first_seq BIGINT);
CREATE TABLE IF NOT EXISTS chain_gaps (cluster_id VARCHAR, from_seq BIGINT, to_seq BIGINT, reason VARCHAR);
"""


@dataclass(frozen=True)
class Status:
    cluster_id: str
    verified_to: int
    last_seq: int
    head_hash: str
    events: int
    gaps: tuple[Gap, ...] = field(default_factory=tuple)
    clock_back_count: int = 0  # events whose time is before the event before them (clock skew, failover)
    clock_back_first_seq: int | None = None

    def clock_note(self) -> str:
        if not self.clock_back_count:
            return ""
        return (f"NOTE event times go backwards {self.clock_back_count} time(s), first at seq "
                f"{self.clock_back_first_seq}: as of a time means the last event at or before it in chain order")

    def describe(self) -> str:
        text = f"cluster {self.cluster_id}: {self.events:,} events, seq 0..{self.last_seq}, "
        if self.verified_to == self.last_seq:
            text += f"chain verified to seq {self.verified_to}"
        elif self.verified_to < 0:
            text += "chain NOT verified from seq 0"
        else:
            text += f"chain verified only to seq {self.verified_to}"
        return text + "".join(f"; {g.describe()}" for g in self.gaps)


def heads(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, str]]:
    """(next seq, hash of the last event) of every cluster the store holds."""
    rows = con.execute("""SELECT e.cluster_id, e.seq, e.hash FROM events e
                          JOIN (SELECT cluster_id, max(seq) AS seq FROM events GROUP BY 1) m
                          ON e.cluster_id = m.cluster_id AND e.seq = m.seq""").fetchall()
    return {c: (s + 1, h) for c, s, h in rows}


def status(con: duckdb.DuckDBPyConnection, cluster_id: str) -> Status:
    row = con.execute("SELECT verified_to, last_seq, head_hash, events, coalesce(clock_back_count, 0), "
                      "clock_back_first_seq FROM chain_status WHERE cluster_id = ?", [cluster_id]).fetchall()
    gaps = tuple(Gap(cluster_id, a, b, r) for a, b, r in con.execute(
        "SELECT from_seq, to_seq, reason FROM chain_gaps WHERE cluster_id = ? ORDER BY from_seq", [cluster_id]).fetchall())
    if not row:
        return Status(cluster_id, -1, -1, "", 0, gaps)
    v, last, head, events, back, back_first = row[0]
    return Status(cluster_id, v, last, head, events, gaps, back, back_first)


def _clock(con: duckdb.DuckDBPyConnection, cluster_id: str) -> tuple[int, int | None]:
    """How often an event's time is earlier than the event before it, and the first such seq."""
    n, first = con.execute("""
        SELECT count(*), min(seq) FROM (
            SELECT seq, event_time_ms < lag(event_time_ms) OVER (ORDER BY seq) AS back
            FROM events WHERE cluster_id = ? AND source_kind NOT IN ('OFFSET_SAMPLER', 'REQUEST_LOG'))
        WHERE back""", [cluster_id]).fetchall()[0]
    return n, first


def _stretches(con: duckdb.DuckDBPyConnection, cluster_id: str) -> list[tuple[int, int, str]]:
    """Holes in the cluster's seqs, and events whose prev_hash is not the hash of seq - 1. Each event meets
    the one at seq - 1 by a hash join: a window over the cluster in seq order sorted every hash and spilled
    under the load's memory limit (10M events, 2 GB: 8.0 s, the join 2.3 s). The event before a hole is
    then found for the few events that follow one."""
    rows = con.execute("""
        SELECT e.seq, p.seq IS NOT NULL, e.prev_hash = p.hash
        FROM events e LEFT JOIN (SELECT seq, hash FROM events WHERE cluster_id = $1) p ON p.seq = e.seq - 1
        WHERE e.cluster_id = $1 AND ((p.seq IS NULL AND e.seq > 0) OR e.prev_hash <> p.hash)""",
                       {"1": cluster_id}).fetchall()
    after_hole = sorted(seq for seq, has_prev, _ in rows if not has_prev)
    before: dict[int, int | None] = {}
    if after_hole:
        before = dict(con.execute("""
            SELECT h.seq, x.seq FROM (SELECT unnest($1::BIGINT[]) AS seq) h
            ASOF LEFT JOIN (SELECT seq FROM events WHERE cluster_id = $2) x ON h.seq > x.seq""",
                                  {"1": after_hole, "2": cluster_id}).fetchall())
    out = []
    for seq, has_prev, linked in sorted(rows):
        if not has_prev:
            prev = before[seq]
            out.append((0 if prev is None else prev + 1, seq - 1, ""))
        elif not linked:
            out.append((seq, seq, f"unchained: seq {seq} does not continue the hash of seq {seq - 1}"))
    return out


def _reason(a: int, b: int, sources: list[Gap]) -> str:
    for g in sources:
        if g.from_seq <= b and a <= g.to_seq:
            return g.reason
    return "missing: no loaded file holds them"


def record(con: duckdb.DuckDBPyConnection, read: VerifiedRead, clusters: list[str], allow_gaps: bool) -> dict[str, Status]:
    """Recompute chain_status and chain_gaps of `clusters` after a load (inside its transaction).
    Without allow_gaps, a stretch this load would add raises ArchiveProblem."""
    out: dict[str, Status] = {}
    for cluster in clusters:
        old = status(con, cluster)
        found = _stretches(con, cluster)
        chain = read.chains.get(cluster)
        sources = list(chain.gaps if chain else []) + list(old.gaps)
        gaps = [Gap(cluster, a, b, reason or _reason(a, b, sources)) for a, b, reason in found]
        last = con.execute("SELECT max(seq), count(*) FROM events WHERE cluster_id = ?", [cluster]).fetchall()[0]
        # a stretch after the last event loaded (the newest file damaged and left out) is no hole between
        # events, but the history claims it all the same: kept until a load reaches past it
        gaps += sorted({g for g in sources if last[0] is not None and g.from_seq > last[0]},
                       key=lambda g: g.from_seq)
        new = [g for g in gaps if not any(o.from_seq <= g.from_seq and g.to_seq <= o.to_seq for o in old.gaps)]
        if new and not allow_gaps:
            g = new[0]
            raise ArchiveProblem(g.reason.split(":")[0], f"cluster {cluster}", g.from_seq,
                                 f"{g.describe()}; nothing was loaded (--allow-gaps loads the rest and records "
                                 "the stretch)", cluster)
        if last[0] is None:
            continue
        head = con.execute("SELECT hash FROM events WHERE cluster_id = ? AND seq = ?", [cluster, last[0]]).fetchall()[0][0]
        verified_to = gaps[0].from_seq - 1 if gaps else last[0]
        con.execute("DELETE FROM chain_gaps WHERE cluster_id = ?", [cluster])
        con.execute("DELETE FROM chain_status WHERE cluster_id = ?", [cluster])
        if gaps:
            con.executemany("INSERT INTO chain_gaps VALUES (?, ?, ?, ?)",
                            [[g.cluster_id, g.from_seq, g.to_seq, g.reason] for g in gaps])
        back, back_first = _clock(con, cluster)
        con.execute("INSERT INTO chain_status VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [cluster, verified_to, last[0], head, last[1], int(time.time() * 1000), back, back_first])
        out[cluster] = Status(cluster, verified_to, last[0], head, last[1], tuple(gaps), back, back_first)
    return out


def all_status(con: duckdb.DuckDBPyConnection) -> list[Status]:
    return [status(con, c) for (c,) in con.execute("SELECT cluster_id FROM chain_status ORDER BY 1").fetchall()]


def gaps_table(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute("SELECT cluster_id, from_seq, to_seq, reason FROM chain_gaps ORDER BY 1, 2").fetchall()
