"""The embedded engine: runs the catalog's SQL over a DuckDB `events` table (flat.py layout).

The table comes from a replay store (opened read-only, its layout checked), from archive files
(decoded with schemas.archive.container, flattened with schemas.archive.flat), or from a pyarrow Table.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from checks import plan
from checks.catalog import EVIDENCE_COLUMNS, VIOLATION_COLUMNS, Deadlines, shared_table
from schemas.archive.flat import STORE_LAYOUT_VERSION
from checks.findings import Findings, sort_key  # noqa: F401 - sort_key re-exported
from checks.inputs import (BadInput, Inputs, chain_summary, chains_of, read_archives, refuse_trust_for_store,
                           check_layout)
from replay import gaps, opening
from replay.gaps import CaptureStretch
from schemas.archive.signatures import Trust
from schemas.archive.verified import Gap

DIALECT = "duckdb"
# per wanted (cluster, topic, partition, after seq): the partition's first change after that seq (both engines)
FIRST_CHANGES = """SELECT w.k_cluster, w.k_topic, w.k_partition, w.k_after, min(e.seq) FROM events e
                   JOIN wanted_changes w ON e.cluster_id = w.k_cluster AND e.kind = 'PartitionChange'
                    AND e.topic = w.k_topic AND e.`partition` = w.k_partition AND e.seq > w.k_after
                   GROUP BY w.k_cluster, w.k_topic, w.k_partition, w.k_after"""
_ONE_CLUSTER = "ctrlaudit_one_cluster"  # the attached database of DuckDBEngine.one_cluster


class DuckDBEngine:
    name = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection, owned: bool = True) -> None:
        self.con = con
        self._owned = owned
        self.timings: dict[str, float] = {}
        self.gaps: list[Gap] = []  # stretches of the history that are not verified data
        self.chains: list[dict[str, Any]] = []  # per cluster: verified to, last seq, gaps
        self.deadlines: Deadlines = ()  # the bounded-liveness deadlines given (checks.deadlines)

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    def from_arrow(cls, table: pa.Table, threads: int | None = None) -> DuckDBEngine:
        con = _connect(":memory:", threads=threads)
        con.register("flat_arrow", table)
        con.execute("CREATE TABLE events AS SELECT * FROM flat_arrow")
        con.unregister("flat_arrow")
        return cls(con)

    @classmethod
    def from_archives(cls, archives: Sequence[Path], threads: int | None = None, allow_gaps: bool = False,
                      progress: Any = None, trust: Trust | None = None) -> DuckDBEngine:
        started = time.perf_counter()
        table, read = read_archives(archives, allow_gaps=allow_gaps, progress=progress, trust=trust)
        engine = cls.from_arrow(table, threads=threads)
        engine.gaps, engine.chains = chains_of(read)
        engine.timings["load"] = time.perf_counter() - started
        return engine

    @classmethod
    def from_store(cls, path: str | Path, threads: int | None = None) -> DuckDBEngine:
        # as every command opens the store: a store locked by a load (DuckDB: one writer process or any
        # number of readers) is waited for up to CTRLAUDIT_LOCK_WAIT, then named with the process holding it
        config: dict[str, str | bool | int | float | list[str]] = {
            "autoinstall_known_extensions": False, "autoload_known_extensions": False}
        if threads:
            config["threads"] = threads
        con = opening.connect(Path(path), True, config)
        engine = cls(con)
        try:
            engine.check_store(str(path), require_meta=True)
        except BadInput:
            con.close()
            raise
        engine.read_chain_status()
        return engine

    def read_chain_status(self) -> None:
        """A store's chain verdicts (replay.chainstate's tables), as the archives' read gives them."""
        tables = {r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if not {"chain_gaps", "chain_status"} <= tables:  # a hand-made events table: no verdicts to report
            return
        gaps = [Gap(*r) for r in self.con.execute(
            "SELECT cluster_id, from_seq, to_seq, reason FROM chain_gaps ORDER BY 1, 2").fetchall()]
        self.gaps = gaps
        self.chains = [chain_summary(c, v, last, [g for g in gaps if g.cluster_id == c], first, head)
                       for c, v, last, head, first in self.con.execute(
                           "SELECT s.cluster_id, s.verified_to, s.last_seq, s.head_hash, e.first_seq FROM chain_status s "
                           "JOIN (SELECT cluster_id, min(seq) AS first_seq FROM events GROUP BY 1) e USING (cluster_id) "
                           "ORDER BY 1").fetchall()]

    @classmethod
    def from_connection(cls, con: duckdb.DuckDBPyConnection) -> DuckDBEngine:
        """Use a connection that already has an `events` table or view (the caller keeps it)."""
        engine = cls(con, owned=False)
        engine.check_store("connection")
        return engine

    @classmethod
    def from_inputs(cls, inputs: Inputs, threads: int | None = None, allow_gaps: bool = False,
                    progress: Any = None, trust: Trust | None = None) -> DuckDBEngine:
        if inputs.store is not None:
            refuse_trust_for_store(trust, inputs.store)
            return cls.from_store(inputs.store, threads=threads)
        if inputs.uris:  # DuckDB reads local (or mounted) files; Spark reads through Hadoop (checks.hadoop)
            raise BadInput(f"{inputs.uris[0]}: an archive on a Hadoop filesystem is checked with --engine spark "
                           "(DuckDB reads local or mounted paths)")
        return cls.from_archives(inputs.sources(), threads=threads, allow_gaps=allow_gaps, progress=progress,
                                 trust=trust)

    def limit_memory(self, limit: str) -> None:
        """Cap DuckDB's memory (e.g. '6GB'): beyond it the queries and the findings table spill to DuckDB's
        temporary directory (beside a store: STORE.tmp), so a history larger than memory is checked."""
        try:
            self.con.execute(f"SET memory_limit = '{limit.replace(chr(39), '')}'")
        except duckdb.Error as exc:
            raise BadInput(f"--memory-limit {limit!r}: {str(exc).splitlines()[0]}") from None

    def check_store(self, where: str, require_meta: bool = False) -> None:
        tables = {r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "store_meta" in tables:
            found = self.con.execute("SELECT value FROM store_meta WHERE key = 'layout_version'").fetchall()
            version = found[0][0] if found else None
            if version != str(STORE_LAYOUT_VERSION):
                raise BadInput(f"{where}: store layout version {version}, this build reads version "
                               f"{STORE_LAYOUT_VERSION}; rebuild the store from the archive files")
        elif require_meta:
            raise BadInput(f"{where}: a DuckDB file without ctrlaudit's store_meta table: not a ctrlaudit store")
        cols = self.con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'events' ORDER BY ordinal_position"
        ).fetchall()
        if not cols:
            raise BadInput(f"{where}: no `events` table: not a ctrlaudit store")
        check_layout(cols, where)
        if self.con.execute("SELECT count(*) FROM events").fetchall()[0][0] == 0:
            raise BadInput(f"{where}: store holds no events")

    # --- queries --------------------------------------------------------------------------------
    def kind_counts(self) -> dict[str, int]:
        return dict(self.con.execute("SELECT kind, count(*) FROM events GROUP BY kind").fetchall())

    def clusters(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT DISTINCT cluster_id FROM events ORDER BY 1").fetchall()]

    def findings(self, names: Sequence[str]) -> Findings:
        """The named invariants' rows (VIOLATION_COLUMNS) in a temporary table of this connection: they
        never leave DuckDB unless asked for (checks.findings). Each query is timed by its name.

        A store of several clusters is checked one cluster at a time (`one_cluster`): no invariant looks
        across clusters, so the rows are the same, and time and memory grow with the clusters one by one.
        All at once, the windows sorted every cluster's rows together (spilling at 100M events under a 6 GB
        limit), and DuckDB, estimating a join on (cluster id, seq) from the seq alone, took the ten clusters'
        repeated seqs for ten times the rows at each join of a chain and built hash tables on the large side."""
        found = Findings.create(self.con)
        timings: dict[str, float] = {}
        try:
            with self.unordered():
                clusters = self.clusters() if self._events_table() else []  # a view: checked as it is
                for cluster in clusters if len(clusters) > 1 else [None]:
                    with self.one_cluster(cluster):
                        plan.run(self.con, plan.steps(names, deadlines=self.deadlines), found.add_query, timings)
        except BaseException:
            found.close()
            raise
        self.timings.update(timings)
        return found

    def _events_table(self) -> tuple[str, str] | None:
        """(database, schema) of the `events` table the queries read; None when `events` is a view (of the
        caller's: its body may name tables only the caller's default database holds)."""
        rows = self.con.execute("""
            SELECT database_name, schema_name, kind FROM (
                SELECT database_name, schema_name, 'table' AS kind FROM duckdb_tables() WHERE table_name = 'events'
                UNION ALL
                SELECT database_name, schema_name, 'view' FROM duckdb_views() WHERE view_name = 'events')
            ORDER BY database_name <> 'temp', database_name <> current_database() LIMIT 1""").fetchall()
        return (rows[0][0], rows[0][1]) if rows and rows[0][2] == "table" else None

    @contextlib.contextmanager
    def one_cluster(self, cluster: str | None) -> Iterator[None]:
        """Within: `events` is one cluster's events (None: all of them). A view of the table filtered by
        cluster, in an attached in-memory database made the default one, so the queries' unqualified
        `events` finds it; temporary tables (findings, shared relations) are found as before. For an
        `events` table only (_events_table)."""
        if cluster is None:
            yield
            return
        home = self.con.execute("SELECT current_database()").fetchall()[0][0]
        found = self._events_table()
        if found is None:
            raise BadInput("`events` is a view: it is checked as it is, not one cluster at a time")
        db, schema = found
        literal = "'" + cluster.replace("'", "''") + "'"
        self.con.execute(f"ATTACH ':memory:' AS {_ONE_CLUSTER} (READ_WRITE)")  # beside a read-only store too
        try:
            self.con.execute(f'CREATE VIEW {_ONE_CLUSTER}.main.events AS SELECT * FROM "{db}"."{schema}".events '
                             f"WHERE cluster_id = {literal}")
            self.con.execute(f"USE {_ONE_CLUSTER}")
            try:
                yield
            finally:
                self.con.execute(f'USE "{home}"')
        finally:
            self.con.execute(f"DETACH {_ONE_CLUSTER}")

    @contextlib.contextmanager
    def unordered(self) -> Iterator[None]:
        """Within: DuckDB need not keep rows in their input order. The queries' rows need none (the report and
        the CSV order them), and DuckDB then materializes CTEs and temporary tables in parallel, unordered
        (reassignment_legal 1.8 -> 1.3 s at 10M events). Only for the queries: the CSV's COPY keeps its ORDER
        BY with the setting on."""
        preserve = self.con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
        self.con.execute("SET preserve_insertion_order = false")
        try:
            yield
        finally:
            self.con.execute(f"SET preserve_insertion_order = {'true' if preserve else 'false'}")

    def violations(self, names: Sequence[str]) -> list[tuple[Any, ...]]:
        """Rows of VIOLATION_COLUMNS for the named invariants, sorted (as Python objects: for small
        histories and tests; the report reads `findings`)."""
        found = self.findings(names)
        try:
            return found.rows()
        finally:
            found.close()

    def build_shared(self, names: Sequence[str], timings: dict[str, float] | None = None) -> frozenset[str]:
        """The relations two or more of these invariants read, each built once as a temporary table
        (timed as `shared:NAME`, added to `timings`, else to self.timings); the queries then read the table
        instead of computing it each."""
        into = {} if timings is None else timings
        builds = [s for s in plan.steps(names) if s[0] == "build"]
        plan.run(self.con, builds, self.con.execute, into)
        if timings is None:
            self.timings.update(into)
        return frozenset(name for _, name, _ in builds)

    def drop_shared(self, built: frozenset[str]) -> None:
        for shared in built:
            self.con.execute(f"DROP TABLE IF EXISTS {shared_table(shared)}")

    def events_at(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
        keys = sorted(set(keys))
        if not keys:
            return {}
        wanted = pa.table({"k_cluster": [k[0] for k in keys], "k_seq": pa.array([k[1] for k in keys], pa.int64())})
        self.con.register("wanted_keys", wanted)
        try:
            cols = ", ".join(f"e.{c}" for c in EVIDENCE_COLUMNS)
            res = self.con.execute(
                f"SELECT {cols} FROM events e JOIN wanted_keys w ON e.cluster_id = w.k_cluster AND e.seq = w.k_seq"
            ).fetchall()
        finally:
            self.con.unregister("wanted_keys")
        return {(r[0], r[1]): dict(zip(EVIDENCE_COLUMNS, r)) for r in res}

    def capture_stretches(self) -> list[tuple[str, CaptureStretch]]:
        """Every cluster's stretches nobody read (replay.gaps, from the CaptureGap events)."""
        return [(c, s) for c in self.clusters() for s in gaps.stretches(self.con, c)]

    def first_changes(self, keys: Iterable[tuple[str, str, int, int]]) -> dict[tuple[str, str, int, int], int]:
        """(cluster id, topic, partition, after seq) -> the seq of that partition's first change after it."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        self.con.register("wanted_changes", pa.table({
            "k_cluster": [k[0] for k in keys], "k_topic": [k[1] for k in keys],
            "k_partition": pa.array([k[2] for k in keys], pa.int32()),
            "k_after": pa.array([k[3] for k in keys], pa.int64())}))
        try:
            rows = self.con.execute(FIRST_CHANGES).fetchall()
        finally:
            self.con.unregister("wanted_changes")
        return {(c, t, p, a): s for c, t, p, a, s in rows}

    def confirm_sources(self) -> None:
        """Nothing to confirm: DuckDB holds the verified rows themselves (SparkEngine.confirm_sources)."""

    def close(self) -> None:
        if self._owned:
            self.con.close()


def _connect(database: str, read_only: bool = False, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    # No extension may try the network (ecosystem.md §5).
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if threads:
        config["threads"] = threads
    return duckdb.connect(database, read_only=read_only, config=config)


VIOLATION_COLUMNS = VIOLATION_COLUMNS  # re-exported for callers that only import the engine
