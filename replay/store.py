"""The DuckDB store: the flat `events` table (schemas.archive.flat layout, shared with the checks) plus
state intervals, in one file in the working directory.

`Store.load(paths)` is idempotent (events are unique by cluster and seq; a re-loaded file adds
nothing, a different event at a stored seq is refused as a chain fork) and incremental (intervals
of the keys new events touch are rebuilt). `Store.point(...)` turns a seq, a source offset or a
time into the seq bound every query takes.
"""
from __future__ import annotations

import time as _time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from schemas.archive.flat import FLAT_COLUMNS, STORE_LAYOUT_VERSION
from schemas.archive.signatures import Trust
from schemas.archive.verified import Gap, VerifiedRead
from replay import chainstate, gaps, intervals, opening
from replay import who_asked
from replay.gaps import CaptureStretch
from schemas import times
from replay.errors import ChainFork, LayoutVersionError, StoreError

LAYOUT_VERSION = STORE_LAYOUT_VERSION  # schemas.archive.flat: the one place, shared with the check engines
# Archive bytes per insert batch (Arrow rows take ~2.2x the Avro bytes; two batches are alive at a
# time, the one being stored and the next being decoded).
BATCH_BYTES = 128 * 1024 * 1024
DEFAULT_PATH = "ctrlaudit.duckdb"
# DuckDB's default is 80% of RAM; a load's window functions over a large history would take it.
# With this cap they spill to <store>.tmp instead, so load memory stays bounded (the target: <= 4 GB
# at 10M events including the decoded batches).
LOAD_MEMORY_LIMIT = "2GB"


@dataclass(frozen=True, slots=True)
class Point:
    """A position in one cluster's history: state as of (and including) event `seq`."""

    cluster_id: str
    seq: int
    source_offset: int
    event_time_ms: int
    event_id: str
    source_kind: str = ""
    verified_to: int = -1  # the chain is verified unbroken from seq 0 to here
    gaps: tuple[Gap, ...] = ()  # stretches at or before seq that are not verified data
    note: str = ""  # e.g. event times that go backwards, for a point chosen by time
    # stretches nobody read (CaptureGap events) that the point falls in or the answer depends on
    uncertain: tuple[CaptureStretch, ...] = ()

    def describe(self) -> str:
        when = times.show(self.event_time_ms)
        # An offset sample's source position is its sampling round (epoch millis), a request log line's its time:
        # neither is a log offset.
        where = {"OFFSET_SAMPLER": "an offset sample", "REQUEST_LOG": "a request log line"}.get(
            self.source_kind, f"offset {self.source_offset}")
        text = f"as of seq {self.seq} ({where}, {when}), {self.verified()}"
        for g in self.gaps:
            text += f"; WARNING {g.describe()}"
        for u in self.uncertain:
            if u.partitions:  # a gap about some partitions: their state here is not known, the rest's is
                text += f"; WARNING state of {u.names()} not known here (shown: the last known), {u.describe()}"
            else:
                text += f"; WARNING state may be incomplete, {u.describe()}"
        if self.note:
            text += f"; {self.note}"
        return text

    def uncertain_about(self, topic: str, partition: int) -> tuple[CaptureStretch, ...]:
        """The stretches this point falls in that hold `topic`-`partition`'s state (every partition's or its own)."""
        return tuple(u for u in self.uncertain if u.about(topic, partition))

    def about(self, topic: str, partition: int) -> Point:
        """This point, for an answer about `topic`-`partition` only: the stretches that hold other partitions go."""
        held = self.uncertain_about(topic, partition)
        return self if held == self.uncertain else replace(self, uncertain=held)

    def depending_on(self, stretches: Iterable[CaptureStretch]) -> Point:
        """This point, for an answer that also depends on `stretches` (the changes of a span holding them)."""
        more = tuple(s for s in stretches if s not in self.uncertain)
        return replace(self, uncertain=tuple(sorted(self.uncertain + more, key=lambda s: s.gap_seq))) if more else self

    def verified(self) -> str:
        if self.verified_to >= self.seq:
            return f"chain verified to seq {self.verified_to}"
        if self.verified_to < 0:
            return "chain NOT verified from seq 0"
        return f"chain verified only to seq {self.verified_to}"


@dataclass
class LoadReport:
    files: list[str] = field(default_factory=list)
    events_read: int = 0
    events_added: int = 0
    clusters: list[str] = field(default_factory=list)
    decode_seconds: float = 0.0
    store_seconds: float = 0.0
    read: Any = None  # the VerifiedRead (its chains, duplicates and skipped files)
    chains: dict[str, Any] = field(default_factory=dict)  # cluster -> chainstate.Status after the load
    unread_requests: dict[str, list[int]] = field(default_factory=dict)  # cluster -> kept requests not read back

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


def _in_order(table: pa.Table) -> pa.Table:
    """Rows in (cluster, seq) order, one per (cluster, seq). Archive files are written in seq order,
    so this usually only checks the order (one vectorised pass) instead of sorting; a batch holding
    the same file twice, or files out of order, is sorted. Two rows at one position with different
    hashes are a fork (StoreError), never deduplicated silently."""
    if table.num_rows < 2:
        return table
    cluster, seq = table.column("cluster_id").combine_chunks(), table.column("seq").combine_chunks()
    c_eq = pc.equal(cluster[1:], cluster[:-1])
    ahead = pc.or_(pc.greater(cluster[1:], cluster[:-1]), pc.and_(c_eq, pc.greater(seq[1:], seq[:-1])))
    if pc.all(ahead).as_py():
        return table
    table = table.take(pc.sort_indices(table, [("cluster_id", "ascending"), ("seq", "ascending")]))
    cluster, seq = table.column("cluster_id").combine_chunks(), table.column("seq").combine_chunks()
    same = pc.and_(pc.equal(cluster[1:], cluster[:-1]), pc.equal(seq[1:], seq[:-1]))
    if not pc.any(same).as_py():
        return table
    hashes = table.column("hash").combine_chunks()
    differ = pc.and_(same, pc.not_equal(hashes[1:], hashes[:-1]))
    if pc.any(differ).as_py():
        at = pc.indices_nonzero(differ).slice(0, 3).to_pylist()
        _raise_fork([(cluster[i].as_py(), seq[i].as_py(), hashes[i].as_py(), hashes[i + 1].as_py()) for i in at])
    return table.filter(pa.concat_arrays([pa.array([True]), pc.invert(same)]))


def _raise_fork(forks: list[tuple[str, int, str, str]]) -> None:
    lines = "; ".join(f"cluster {c} seq {s}: hashes {a[:12]}… and {b[:12]}…" for c, s, a, b in forks)
    raise ChainFork(f"chain fork: different events at the same position ({lines})")


def _ranges(table: pa.Table) -> list[tuple[str, int, int]]:
    """(cluster, min seq, max seq) of each cluster in the table."""
    g = table.select(["cluster_id", "seq"]).group_by("cluster_id").aggregate([("seq", "min"), ("seq", "max")])
    return list(zip(*(g.column(c).to_pylist() for c in ("cluster_id", "seq_min", "seq_max"))))


class _Run:
    """What one load knows about the store: the seq span each cluster held before it (only a
    batch overlapping that span, or a batch inserted by this load, can hold known events), the
    clusters it added to, and whether intervals exist already (else they are built from scratch)."""

    def __init__(self, store: Store, incremental: bool) -> None:
        self.incremental = incremental
        self.spans: dict[str, list[tuple[int, int]]] = {
            c: [(lo, hi)] for c, lo, hi in store.con.execute(
                "SELECT cluster_id, min(seq), max(seq) FROM events GROUP BY cluster_id").fetchall()}
        self.clusters: set[str] = set()
        self.file_rows: list[list[Any]] = []  # loaded_files rows, inserted after the events
        self.touched: list[pa.Table] = []  # incremental: (cluster, topic id, partition) of new partition changes
        self.deleted: list[pa.Table] = []  # incremental: (cluster, topic id) of topics new events delete

    def may_hold(self, cluster: str, lo: int, hi: int) -> bool:
        return any(a <= hi and lo <= b for a, b in self.spans.get(cluster, ()))

    def may_hold_any(self, staged: pa.Table) -> bool:
        return any(self.may_hold(c, lo, hi) for c, lo, hi in _ranges(staged))

    def added(self, fresh: pa.Table, report: LoadReport) -> None:
        """Note rows about to be inserted: counts, the seq spans they take, the keys whose intervals change."""
        report.events_added += fresh.num_rows
        for cluster, lo, hi in _ranges(fresh):
            self.clusters.add(cluster)
            self.spans.setdefault(cluster, []).append((lo, hi))
        if self.incremental and fresh.num_rows:
            kind = fresh.column("kind")
            changes = fresh.filter(pc.equal(kind, "PartitionChange")).select(["cluster_id", "topic_id", "partition"])
            self.touched.append(changes.group_by(changes.column_names).aggregate([]))
            deletes = fresh.filter(pc.and_(pc.equal(kind, "TopicChange"), pc.equal(fresh.column("topic_change"), "DELETED")))
            self.deleted.append(deletes.select(["cluster_id", "topic_id"]))


class Store:
    """One DuckDB file. Use as a context manager or call close()."""

    def __init__(self, path: str | Path = DEFAULT_PATH, read_only: bool = False) -> None:
        self.path = Path(path)
        config = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no such store (load archive files first)")
        self.con = opening.connect(self.path, read_only, config)
        self.created = False  # this open made the store (an empty layout): the load command removes it if it fails
        try:
            self.con.execute("SET enable_progress_bar = false")
            self._check_layout(read_only)
        except duckdb.Error as exc:  # e.g. a truncated or damaged database file
            self.con.close()
            raise StoreError(opening.explain(self.path, exc)) from None
        except BaseException:
            self.con.close()
            raise

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
        self.created = True
        self.con.execute("BEGIN")
        self.con.execute("CREATE TABLE store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        self.con.execute("INSERT INTO store_meta VALUES ('layout_version', ?), ('created_ms', ?)",
                         [str(LAYOUT_VERSION), str(int(_time.time() * 1000))])
        self.con.execute(_events_ddl())
        self.con.execute(intervals.DDL)
        self.con.execute(chainstate.DDL)
        self.con.execute(who_asked.DDL)
        self.con.execute("""CREATE TABLE loaded_files (path VARCHAR, size BIGINT, events BIGINT, added BIGINT,
                            first_seq BIGINT, last_seq BIGINT, loaded_ms BIGINT)""")
        self.con.execute("COMMIT")

    # --- loading ----------------------------------------------------------------------------

    def load(self, paths: Iterable[str | Path], workers: int | None = None,
             batch_bytes: int = BATCH_BYTES, memory_limit: str | None = LOAD_MEMORY_LIMIT,
             allow_gaps: bool = False, progress: Any = None, trust: Trust | None = None) -> LoadReport:
        """Load archive files (a directory = its `*.avro`, in name order). All or nothing.

        Files are decoded and inserted in batches of about `batch_bytes` of archive (at least one
        file each), so memory is bounded by the batch, not the history; everything happens in one
        transaction, and intervals are rebuilt once at the end over the keys the load touched.
        `decode_seconds` is the time spent waiting for the decoder (decoding overlaps inserting).
        `memory_limit` caps DuckDB during the load (it spills to disk beyond it); None = as set.

        Files are read through schemas.archive.verified (manifests, hashes, links, forks); a problem loads
        nothing (ArchiveProblem), unless `allow_gaps`: then the stretch is recorded in chain_gaps
        and every answer touching it says so. `progress(bytes)` is called per file read."""
        report = LoadReport()
        con = self.con
        read = VerifiedRead(paths, allow_gaps=allow_gaps, known=chainstate.heads(con), progress=progress, trust=trust,
                            workers=workers)
        report.read = read
        run = _Run(self, incremental=not con.execute("SELECT count(*) = 0 FROM partition_intervals").fetchall()[0][0])
        batches = verified_batches(read, batch_bytes)
        previous_limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        if memory_limit is not None:
            con.execute(f"SET memory_limit = '{memory_limit}'")
        # Rows need no physical order (every query orders by seq itself): DuckDB then inserts in parallel and
        # writes compressed row groups as it goes, so the COMMIT's checkpoint has little left to do. Making
        # a 10M-row table from Parquet took 28.8 s so and 58.7 s preserving the order (2 GB limit, 2 cores).
        con.execute("SET preserve_insertion_order = false")
        con.execute("BEGIN")
        try:
            if run.incremental:
                con.execute("CREATE OR REPLACE TEMP TABLE touched (cluster_id VARCHAR, topic_id VARCHAR, \"partition\" INTEGER)")
                con.execute("CREATE OR REPLACE TEMP TABLE deleted_topics (cluster_id VARCHAR, topic_id VARCHAR)")
            t = _time.perf_counter()
            waited = report.decode_seconds
            self._insert_all(batches, run, report)
            report.store_seconds += _time.perf_counter() - t - (report.decode_seconds - waited)
            t = _time.perf_counter()
            report.chains = chainstate.record(con, read, sorted(run.clusters | set(read.chains)), allow_gaps)
            self._rebuild_intervals(run)
            for cluster_id in sorted(run.clusters):  # requests and the changes they match may come in any load
                unread = who_asked.rebuild(con, cluster_id)
                if unread:
                    report.unread_requests[cluster_id] = unread
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            # Checkpoint now, under the load's memory limit: left to close() it ran with DuckDB's
            # default limit and took the RSS to 8 GB at 10M events (2.3 GB for the load itself).
            con.execute("CHECKPOINT")
            report.store_seconds += _time.perf_counter() - t
        finally:
            batches.close()
            con.execute(f"SET memory_limit = '{previous_limit}'")
            con.execute("RESET preserve_insertion_order")
        report.clusters = sorted(run.clusters)
        return report

    def _insert_all(self, batches: Iterator[list[tuple[Path, pa.Table]]], run: _Run, report: LoadReport) -> None:
        """Insert the new rows of every batch. Batches that cannot hold a stored event (a first load, or files
        newer than what the store holds: the usual case) go in through one INSERT reading a stream of them,
        so DuckDB fills and compresses whole row groups as it goes. An INSERT per batch left a partial row
        group per batch and thread that the COMMIT's checkpoint rewrote: 1.6 s of a 6.9 s load at 1M events.
        A batch that may hold stored events is compared with the store first (_new_rows), between streams."""
        staged = self._next_staged(batches, run, report)
        while staged is not None:
            if run.may_hold_any(staged):
                fresh = self._new_rows(staged, run)
                if fresh.num_rows:
                    # a relation, not con.register(): a view registered and dropped inside the transaction
                    # keeps its Arrow table alive until COMMIT (measured: RSS grew with every batch)
                    self.con.from_arrow(fresh).insert_into("events")
                    run.added(fresh, report)
                staged = self._next_staged(batches, run, report)
            else:
                staged = self._stream(staged, batches, run, report)
        con = self.con
        if run.file_rows:
            con.executemany("INSERT INTO loaded_files VALUES (?, ?, ?, NULL, ?, ?, ?)", run.file_rows)
        if run.incremental:
            for table, rows in (("touched", run.touched), ("deleted_topics", run.deleted)):
                if rows:
                    con.from_arrow(pa.concat_tables(rows)).insert_into(table)

    def _stream(self, first: pa.Table, batches: Iterator[list[tuple[Path, pa.Table]]], run: _Run,
                report: LoadReport) -> pa.Table | None:
        """One INSERT of `first` and the batches after it up to one that may hold stored events (returned,
        not inserted) or the end (None). The batches are decoded while DuckDB inserts the ones before."""
        schema = first.schema
        pending: list[pa.Table | None] = [first]  # emptied as it goes: no batch is held longer than inserting it
        del first
        failed: list[BaseException] = []

        def rows() -> Iterator[pa.RecordBatch]:
            try:
                while True:
                    staged = pending.pop()
                    assert staged is not None
                    run.added(staged, report)
                    chunks = staged.to_batches()
                    del staged
                    while chunks:
                        yield chunks.pop(0)
                    nxt = self._next_staged(batches, run, report)
                    pending.append(nxt)
                    if nxt is None or run.may_hold_any(nxt):
                        return
                    del nxt
            except BaseException as exc:  # DuckDB reports it as its own error: the caller raises this one
                failed.append(exc)
                raise

        try:
            self.con.from_arrow(pa.RecordBatchReader.from_batches(schema, rows())).insert_into("events")
        except duckdb.Error:
            if failed:
                raise failed[0] from None
            raise
        if failed:
            raise failed[0]
        return pending.pop()

    def _next_staged(self, batches: Iterator[list[tuple[Path, pa.Table]]], run: _Run,
                     report: LoadReport) -> pa.Table | None:
        """The next batch's rows in (cluster, seq) order, its files noted for loaded_files; None at the end."""
        t = _time.perf_counter()
        batch = next(batches, None)
        report.decode_seconds += _time.perf_counter() - t
        if batch is None:
            return None
        report.events_read += sum(table.num_rows for _, table in batch)
        report.files.extend(str(path) for path, _ in batch)
        run.file_rows.extend(_file_rows(batch))
        return _in_order(pa.concat_tables([table for _, table in batch]))

    def _new_rows(self, staged: pa.Table, run: _Run) -> pa.Table:
        """The staged rows whose (cluster, seq) the store does not hold yet; a stored event at a
        staged seq with another hash is a fork (StoreError). The store is asked only about the seq
        range of each cluster in the batch, and not at all when that range cannot overlap what it
        holds (the usual case: a first load, or newer files than those loaded before)."""
        ranges = [(c, lo, hi) for c, lo, hi in _ranges(staged) if run.may_hold(c, lo, hi)]
        if not ranges:
            return staged
        where = " OR ".join("(cluster_id = ? AND seq BETWEEN ? AND ?)" for _ in ranges)
        known = self.con.sql(f"SELECT cluster_id, seq, hash AS stored_hash FROM events WHERE {where}",
                             params=[v for r in ranges for v in r]).to_arrow_table()
        if known.num_rows == 0:
            return staged
        keys = pa.table({"cluster_id": staged.column("cluster_id"), "seq": staged.column("seq"),
                         "hash": staged.column("hash"), "row": pa.array(range(staged.num_rows), pa.int64())})
        both = keys.join(known, ["cluster_id", "seq"], join_type="inner")
        forks = both.filter(pc.not_equal(both.column("hash"), both.column("stored_hash")))
        if forks.num_rows:
            forks = forks.sort_by([("seq", "ascending")]).slice(0, 3)
            _raise_fork(list(zip(*(forks.column(c).to_pylist() for c in ("cluster_id", "seq", "stored_hash", "hash")))))
        keep = pc.invert(pc.is_in(keys.column("row"), value_set=both.column("row").combine_chunks()))
        return staged.filter(keep)

    def _rebuild_intervals(self, run: _Run) -> None:
        con = self.con
        if not run.incremental:
            if run.clusters:
                intervals.rebuild_partitions(con, None)
        elif run.clusters:
            # Keys the new events change, and every partition of a topic they delete.
            con.execute("""CREATE TEMP TABLE touched_keys AS
                SELECT DISTINCT cluster_id, topic_id, "partition" FROM touched
                UNION
                SELECT DISTINCT e.cluster_id, e.topic_id, e."partition" FROM events e
                SEMI JOIN deleted_topics d ON e.cluster_id = d.cluster_id AND e.topic_id = d.topic_id
                WHERE e.kind = 'PartitionChange'""")
            intervals.rebuild_partitions(con, "touched_keys")
        for cluster_id in sorted(run.clusters):
            intervals.rebuild_small(con, cluster_id)
        if run.incremental:  # temp tables outlive the transaction
            con.execute("DROP TABLE IF EXISTS touched_keys")
            con.execute("DROP TABLE touched")
            con.execute("DROP TABLE deleted_topics")

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

    def _one_position_kind(self, cluster: str) -> None:
        """An offset means one thing only in a history of one kind of log: a cluster migrated from ZooKeeper to
        KRaft (`import kraft --zookeeper-data`) has zxids before its cutover and metadata offsets after, which
        overlap; an answer for either would be a guess."""
        if _kinds_present(self.con, cluster, ("ZOOKEEPER",)) and \
                _kinds_present(self.con, cluster, ("KRAFT_LOG", "KRAFT_SNAPSHOT")):
            raise StoreError(f"cluster {cluster} was migrated from ZooKeeper to KRaft: its positions are zxids before "
                             "the cutover and metadata offsets after it; ask by --time or --seq")

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
            self._one_position_kind(cluster)
            # Log positions only: offset samples' positions are sampling times, request log lines' their times.
            cond, args, what = ("source_offset >= 0 AND source_offset <= ? AND source_kind NOT IN ('OFFSET_SAMPLER', "
                                "'REQUEST_LOG')", [offset], f"offset {offset}")
        elif time is not None:
            parsed = times.parse(time)
            # not the requests `import requests` appended after the history: their times are earlier than the
            # controller's events before them in the chain, and would stand for the whole history
            cond, args, what = "event_time_ms <= ? AND source_kind <> 'REQUEST_LOG'", [parsed.ms], f"time {time}"
        elif event_id is not None:
            cond, args, what = "event_id = ?", [event_id], f"event {event_id}"
        else:
            cond, args, what = "TRUE", [], "the newest event"
        rows = self.con.execute(f"""
            SELECT seq, source_offset, event_time_ms, event_id, source_kind FROM events
            WHERE cluster_id = ? AND seq = (SELECT max(seq) FROM events WHERE cluster_id = ? AND {cond})
        """, [cluster, cluster, *args]).fetchall()
        if not rows:
            raise StoreError(f"no event of cluster {cluster} at or before {what}")
        status = chainstate.status(self.con, cluster)
        seq, source_offset, event_time_ms, found_id, source_kind = rows[0]
        return Point(cluster, seq, source_offset, event_time_ms, found_id, source_kind,
                     verified_to=status.verified_to, gaps=tuple(g for g in status.gaps if g.from_seq <= seq + 1),
                     note="; ".join(n for n in (parsed.note, status.clock_note()) if n) if time is not None else "",
                     uncertain=gaps.containing(self.con, cluster, seq, time_ms=parsed.ms if time is not None else None,
                                               offset=offset))


def _kinds_present(con: duckdb.DuckDBPyConnection, cluster: str, kinds: tuple[str, ...]) -> bool:
    marks = ", ".join("?" for _ in kinds)
    return con.execute(f"SELECT 1 FROM events WHERE cluster_id = ? AND source_kind IN ({marks}) LIMIT 1",
                       [cluster, *kinds]).fetchone() is not None


def _file_rows(batch: list[tuple[Path, pa.Table]]) -> list[list[Any]]:
    """loaded_files rows of a batch's files (added: NULL, a file's rows may be stored by several batches)."""
    now = int(_time.time() * 1000)
    rows = []
    for path, table in batch:
        seqs = table.column("seq")
        first = pc.min(seqs).as_py() if table.num_rows else None
        last = pc.max(seqs).as_py() if table.num_rows else None
        rows.append([str(path.resolve()), path.stat().st_size, table.num_rows, first, last, now])
    return rows


def verified_batches(read: VerifiedRead, batch_bytes: int) -> Generator[list[tuple[Path, pa.Table]], None, None]:
    """The verified files of a read, grouped into batches of about batch_bytes of archive."""
    batch: list[tuple[Path, pa.Table]] = []
    size = 0
    for path, table in read:
        n = path.stat().st_size
        if batch and size + n > batch_bytes:
            yield batch
            batch, size = [], 0
        batch.append((path, table))
        size += n
    if batch:
        yield batch
