"""The DuckDB store: the flat `events` table (schemas.flat layout, shared with the checks) plus
state intervals, in one file in the working directory.

`Store.load(paths)` is idempotent (events are unique by cluster and seq; a re-loaded file adds
nothing, a different event at a stored seq is refused as a chain fork) and incremental (intervals
of the keys new events touch are rebuilt). `Store.point(...)` turns a seq, a source offset or a
time into the seq bound every query takes.
"""
from __future__ import annotations

import time as _time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from schemas.flat import FLAT_COLUMNS
from replay import intervals
from replay.decode import archive_files, decode_files
from replay.errors import LayoutVersionError, StoreError

LAYOUT_VERSION = 1
DEFAULT_PATH = "ctrlaudit.duckdb"


@dataclass(frozen=True, slots=True)
class Point:
    """A position in one cluster's history: state as of (and including) event `seq`."""

    cluster_id: str
    seq: int
    source_offset: int
    event_time_ms: int
    event_id: str

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.event_time_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
        return f"as of seq {self.seq} (offset {self.source_offset}, {when})"


@dataclass
class LoadReport:
    files: list[str] = field(default_factory=list)
    events_read: int = 0
    events_added: int = 0
    clusters: list[str] = field(default_factory=list)
    decode_seconds: float = 0.0
    store_seconds: float = 0.0

    @property
    def duplicates(self) -> int:
        return self.events_read - self.events_added


def _events_ddl() -> str:
    cols = ", ".join(f'"{name}" {_duck_type(t)}' for name, t, _ in FLAT_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS events ({cols})"


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return _duck_type(t.value_type) + "[]"
    return {pa.int64(): "BIGINT", pa.int32(): "INTEGER", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}[t]


def _sorted_unique(table: pa.Table) -> pa.Table:
    """Rows in (cluster, seq) order, one per (cluster, seq): decode workers return blocks
    interleaved, and the same file may be named twice."""
    table = table.take(pc.sort_indices(table, [("cluster_id", "ascending"), ("seq", "ascending")]))
    if table.num_rows < 2:
        return table
    cluster, seq = table.column("cluster_id").combine_chunks(), table.column("seq").combine_chunks()
    same = pc.and_(pc.equal(cluster[1:], cluster[:-1]), pc.equal(seq[1:], seq[:-1]))
    if not pc.any(same).as_py():
        return table
    return table.filter(pa.concat_arrays([pa.array([True]), pc.invert(same)]))


def parse_time(value: str | int) -> int:
    """Epoch millis from epoch millis (int or digits) or ISO-8601 (naive = UTC)."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise StoreError(f"not a time: {value!r} (use ISO-8601 or epoch millis)") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


class Store:
    """One DuckDB file. Use as a context manager or call close()."""

    def __init__(self, path: str | Path = DEFAULT_PATH, read_only: bool = False) -> None:
        self.path = Path(path)
        config = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no such store (load archive files first)")
        self.con = duckdb.connect(str(self.path), read_only=read_only, config=config)
        self.con.execute("SET enable_progress_bar = false")
        self._check_layout(read_only)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    # --- layout -----------------------------------------------------------------------------

    def _check_layout(self, read_only: bool) -> None:
        tables = {r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "store_meta" in tables:
            rows = self.con.execute("SELECT value FROM store_meta WHERE key = 'layout_version'").fetchall()
            found = rows[0][0] if rows else None
            if found != str(LAYOUT_VERSION):
                raise LayoutVersionError(
                    f"{self.path}: store layout version {found} but this build reads version {LAYOUT_VERSION}; "
                    "load the archive files into a new store")
            return
        if tables:
            raise LayoutVersionError(f"{self.path}: a DuckDB file without ctrlaudit's store_meta table "
                                     f"(tables: {', '.join(sorted(tables))}); not a ctrlaudit store")
        if read_only:
            raise StoreError(f"{self.path}: empty store (load archive files first)")
        self.con.execute("BEGIN")
        self.con.execute("CREATE TABLE store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        self.con.execute("INSERT INTO store_meta VALUES ('layout_version', ?), ('created_ms', ?)",
                         [str(LAYOUT_VERSION), str(int(_time.time() * 1000))])
        self.con.execute(_events_ddl())
        self.con.execute(intervals.DDL)
        self.con.execute("""CREATE TABLE loaded_files (path VARCHAR, size BIGINT, events BIGINT, added BIGINT,
                            first_seq BIGINT, last_seq BIGINT, loaded_ms BIGINT)""")
        self.con.execute("COMMIT")

    # --- loading ----------------------------------------------------------------------------

    def load(self, paths: Iterable[str | Path], workers: int | None = None) -> LoadReport:
        """Load archive files (a directory = its `*.avro`, in name order). All or nothing."""
        report = LoadReport()
        files = archive_files(paths)
        t0 = _time.perf_counter()
        tables: list[pa.Table] = []
        per_file: list[tuple[Path, pa.Table]] = []
        for path, table in decode_files(files, workers):
            per_file.append((path, table))
            tables.append(table)
            report.files.append(str(path))
        report.decode_seconds = _time.perf_counter() - t0
        if not tables:
            return report
        t1 = _time.perf_counter()
        staged = _sorted_unique(pa.concat_tables(tables))
        report.events_read = sum(t.num_rows for t in tables)
        con = self.con
        con.register("staged", staged)
        try:
            con.execute("BEGIN")
            self._refuse_forks()
            fresh = self._new_rows(staged)
            con.register("new_events", fresh)
            report.events_added = fresh.num_rows
            con.execute("INSERT INTO events SELECT * FROM new_events")
            self._rebuild_intervals()
            self._record_files(per_file)
            report.clusters = sorted(set(fresh.column("cluster_id").to_pylist()))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("staged")
            con.unregister("new_events")  # no-op when never registered
        report.store_seconds = _time.perf_counter() - t1
        return report

    def _new_rows(self, staged: pa.Table) -> pa.Table:
        """The staged rows whose (cluster, seq) the store does not hold yet (an Arrow anti-join on
        the keys only: cheaper than moving the wide rows through SQL)."""
        known = self.con.sql("""SELECT e.cluster_id, e.seq FROM events e SEMI JOIN staged s
                                 ON e.cluster_id = s.cluster_id AND e.seq = s.seq""").to_arrow_table()
        known_table = known
        if known_table.num_rows == 0:
            return staged
        keys = pc.binary_join_element_wise(staged.column("cluster_id"), pc.cast(staged.column("seq"), pa.string()), "|")
        old = pc.binary_join_element_wise(known_table.column("cluster_id"), pc.cast(known_table.column("seq"), pa.string()), "|")
        return staged.filter(pc.invert(pc.is_in(keys, value_set=old)))

    def _refuse_forks(self) -> None:
        """Same seq, different hash: two histories claim one position. Never pick one silently."""
        forks = self.con.execute("""
            SELECT cluster_id, seq, min(hash), max(hash) FROM (
                SELECT cluster_id, seq, hash FROM staged
                UNION ALL
                SELECT e.cluster_id, e.seq, e.hash FROM events e SEMI JOIN staged s
                  ON e.cluster_id = s.cluster_id AND e.seq = s.seq)
            GROUP BY cluster_id, seq HAVING count(DISTINCT hash) > 1 ORDER BY seq LIMIT 3""").fetchall()
        if forks:
            lines = "; ".join(f"cluster {c} seq {s}: hashes {a[:12]}… and {b[:12]}…" for c, s, a, b in forks)
            raise StoreError(f"chain fork: different events at the same position ({lines})")

    def _rebuild_intervals(self) -> None:
        con = self.con
        clusters = [r[0] for r in con.execute("SELECT DISTINCT cluster_id FROM new_events").fetchall()]
        if not clusters:
            return
        if con.execute("SELECT count(*) = 0 FROM partition_intervals").fetchall()[0][0]:
            intervals.rebuild_partitions(con, None)
        else:
            # Keys the new events change, and every partition of a topic they delete.
            con.execute("""CREATE OR REPLACE TEMP TABLE touched AS
                SELECT DISTINCT cluster_id, topic_id, "partition" FROM new_events WHERE kind = 'PartitionChange'
                UNION
                SELECT DISTINCT e.cluster_id, e.topic_id, e."partition" FROM events e
                SEMI JOIN (SELECT cluster_id, topic_id FROM new_events
                           WHERE kind = 'TopicChange' AND topic_change = 'DELETED') d
                  ON e.cluster_id = d.cluster_id AND e.topic_id = d.topic_id
                WHERE e.kind = 'PartitionChange'""")
            intervals.rebuild_partitions(con, "touched")
            con.execute("DROP TABLE touched")
        for cluster_id in clusters:
            intervals.rebuild_small(con, cluster_id)

    def _record_files(self, per_file: list[tuple[Path, pa.Table]]) -> None:
        now = int(_time.time() * 1000)
        for path, table in per_file:
            seqs = table.column("seq")
            first = pc.min(seqs).as_py() if table.num_rows else None
            last = pc.max(seqs).as_py() if table.num_rows else None
            self.con.execute("INSERT INTO loaded_files VALUES (?, ?, ?, NULL, ?, ?, ?)",
                             [str(path.resolve()), path.stat().st_size, table.num_rows, first, last, now])

    # --- points -----------------------------------------------------------------------------

    def clusters(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT DISTINCT cluster_id FROM events ORDER BY 1").fetchall()]

    def cluster(self, cluster_id: str | None = None) -> str:
        known = self.clusters()
        if cluster_id is None:
            if len(known) == 1:
                return known[0]
            if not known:
                raise StoreError(f"{self.path}: the store holds no events")
            raise StoreError(f"{self.path}: the store holds {len(known)} clusters ({', '.join(known)}); name one")
        if cluster_id not in known:
            raise StoreError(f"{self.path}: no cluster {cluster_id!r} (known: {', '.join(known) or 'none'})")
        return cluster_id

    def point(self, *, seq: int | None = None, offset: int | None = None, time: str | int | None = None,
              event_id: str | None = None, cluster_id: str | None = None) -> Point:
        """The seq bound for one of: a seq, a source offset (last event with offset <= N), a time
        (last event with event_time_ms <= T), an event id; none = the newest event."""
        cluster = self.cluster(cluster_id)
        given = [n for n, v in (("seq", seq), ("offset", offset), ("time", time), ("event_id", event_id))
                 if v is not None]
        if len(given) > 1:
            raise StoreError(f"give one of seq, offset, time, event id (got {', '.join(given)})")
        args: list[Any]
        if seq is not None:
            cond, args, what = "seq <= ?", [seq], f"seq {seq}"
        elif offset is not None:
            cond, args, what = "source_offset >= 0 AND source_offset <= ?", [offset], f"offset {offset}"
        elif time is not None:
            cond, args, what = "event_time_ms <= ?", [parse_time(time)], f"time {time}"
        elif event_id is not None:
            cond, args, what = "event_id = ?", [event_id], f"event {event_id}"
        else:
            cond, args, what = "TRUE", [], "the newest event"
        rows = self.con.execute(f"""
            SELECT seq, source_offset, event_time_ms, event_id FROM events
            WHERE cluster_id = ? AND seq = (SELECT max(seq) FROM events WHERE cluster_id = ? AND {cond})
        """, [cluster, cluster, *args]).fetchall()
        if not rows:
            raise StoreError(f"no event of cluster {cluster} at or before {what}")
        return Point(cluster, *rows[0])
