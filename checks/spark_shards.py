"""Spark: the sharded invariants (checks.catalog, `sharded`) checked one shard of partitions per task.

Why: as Spark SQL each of those invariants shuffles and sorts the partition events for windows and joins of
its own, ten passes over every event and more: 43k events/s at 10M events on local[2] (bench/RESULTS.md).
Each judges one partition's events (PartitionChange, OffsetSample) with its cluster's other events, so the
history can be cut by partition. The driver's handoff (checks.spark_handoff) already keeps every partition
event in one of 64 buckets by (cluster id, topic, partition), a row group per bucket, and every other event
(controller, broker, topic, config and feature changes, capture gaps, unknown records: few) in bucket -1.
A topic's partitions are spread over the buckets, so one large topic is not one task's. A Spark job of
one task per shard (a range of buckets) then has each task read its buckets' row groups and bucket -1 into
an embedded DuckDB (one thread: Spark runs one task per core), run the catalog's SQL through the plan
DuckDBEngine runs (checks.plan), and write its findings as Parquet beside the handoff, as the Spark SQL
queries do. No event passes through Spark's rows: its shuffle and its Arrow conversion of the list columns
cost more than the queries (a shuffle into shards and mapInArrow: 217 s at 10M events, bench/RESULTS.md).

Why the rows are DuckDB's: a sharded invariant's finding, and every event its judgement reads, belong to one
partition's history or to the events every shard holds, so the shard holding that partition gives the
same rows as the whole history (keys such as fragments/topic_numbers.sql's are numbered per shard, and never
shown). A finding made of every topic's partitions (fenced_broker_not_in_isr's at a fence) comes from one
aggregate CTE of its query (checks.catalog, `merged`): each task writes its rows of that CTE too, and the
driver merges them by the catalog's functions and runs the query over the merged rows and no events
(merge_partials), as DuckDB would over the whole history. Two guards keep it so:
- a task answers for its own partition events only: a finding at any other event stops the job (an
  invariant marked sharded that is not), never becomes a row, or a row counted twice;
- a topic id seen under two topic names, or with and without one, would split a history that
  state_continuity and reassignment_legal key by topic id over two shards: the handoff finds it as it
  writes the buckets (Handoff.unbucketable), and the engine then runs every invariant as Spark SQL.

Shards need the handoff (executors sharing the driver's disk: a local master, a standalone cluster on this
host, CTRLAUDIT_SPARK_HANDOFF) and executors whose Python has duckdb (ctrlaudit's requirement; a local
master's executors run the driver's Python). Elsewhere every invariant runs as Spark SQL. This module and
checks.plan are shipped to the executors by value, not imported from this repository.
"""
from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

import checks.plan
from checks.catalog import merge_select, with_merged, wrapped
from checks.findings import _DDL
from checks.spark_handoff import BUCKET_COLUMN, BUCKETS, SHARD_KINDS
from schemas.archive import flat

# Events per shard at most (a task holds its shard in DuckDB), as long as buckets allow: at 10M events 8 shards
# took 34.2 s on local[2], 4 shards 35.3 s, 16 shards 45.7 s (bench/RESULTS.md).
SHARD_EVENTS = 1_250_000


_READY: dict[str, str | None] = {}  # per Spark application: executors_unready's answer


def executors_unready(spark: Any) -> str | None:
    """Why the executors cannot check shards (their Python has no duckdb), None when they can: asked once per
    application, by a one-task job, so that a cluster whose Python lacks it is checked as Spark SQL rather
    than failing."""
    app = spark.sparkContext.applicationId
    if app not in _READY:
        _READY[app] = _probe(spark)
    return _READY[app]


def _probe(spark: Any) -> str | None:
    def probe(_: Any) -> str:
        return duckdb.__version__

    try:
        spark.sparkContext.parallelize([0], 1).map(probe).collect()
    except Exception as exc:  # noqa: BLE001 - Py4J and PySpark wrap the worker's ImportError in their own types
        last = [line for line in str(exc).splitlines() if "Error" in line][-1:] or [type(exc).__name__]
        return f"the executors' Python cannot run DuckDB ({last[0].strip()[:200]})"
    return None


def shard_count(spark: Any, events: int) -> int:
    """A shard per SHARD_EVENTS events and at least two tasks per core (a slow shard then waits less),
    at most one per bucket."""
    cores: int = spark.sparkContext.defaultParallelism
    return min(BUCKETS, max(2 * cores, math.ceil(events / SHARD_EVENTS), 1))


def bucket_ranges(shards: int) -> list[tuple[int, int]]:
    """The buckets of each shard, first and last: contiguous, together every bucket once."""
    return [(i * BUCKETS // shards, (i + 1) * BUCKETS // shards - 1) for i in range(shards)]


def check_shards(spark: Any, files: Sequence[Path], names: Sequence[str], shards: int, out: Path) -> list[str]:
    """Runs the named sharded invariants over the handoff's `files`, one task per shard; each task writes its
    findings (VIOLATION_COLUMNS) as a Parquet file into the directory `out`, and its rows of each merged CTE
    (checks.catalog, `merged`) as another, which the driver then merges into findings (merge_partials). The
    findings' files written."""
    from pyspark import cloudpickle  # extra: spark

    for module in (checks.plan, sys.modules[__name__]):  # executors need not import this repository
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
    plan = checks.plan.steps(names, shard=True)
    task = partial(check_shard, files=[str(f) for f in files], columns=read_columns(plan, flat.ARROW_SCHEMA),
                   plan=plan, run=checks.plan.run, partial_table=checks.plan.partial_table, ddl=_DDL, out=str(out))
    ranges = bucket_ranges(shards)
    written: list[str] = spark.sparkContext.parallelize(ranges, len(ranges)).mapPartitionsWithIndex(task).collect()
    findings = [w for w in written if Path(w).name.startswith("shard-")]
    for name in dict.fromkeys(n for kind, n, _ in plan if kind == "partial"):
        findings.append(merge_partials(name, [w for w in written if Path(w).name.startswith(f"partial-{name}-")], out))
    return findings


def merge_partials(name: str, partials: Sequence[str], out: Path) -> str:
    """The findings of the invariant's merged CTE from every shard's rows of it (`partials`, Parquet files),
    written as Parquet into `out`: its query runs over the merged rows and no events (on the driver, in DuckDB;
    a few rows per fence)."""
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        con.execute(f"CREATE TABLE events AS SELECT {', '.join(read_columns((), flat.ARROW_SCHEMA))} LIMIT 0")
        con.execute(f"CREATE VIEW partials AS SELECT * FROM {_parquet(partials)}")
        path = str(out / f"merged-{name}.parquet")
        _copy(con, f"({wrapped(name, with_merged(name, 'duckdb', merge_select(name, 'partials')))})", path)
        return path
    finally:
        con.close()


_DUCK_TYPES = {"bool": "BOOLEAN", "int32": "INTEGER", "int64": "BIGINT", "string": "VARCHAR"}


def read_columns(plan: Sequence[tuple[str, str, str]], schema: Any) -> list[str]:
    """The events table's columns as a task reads them: those the plan's SQL names, and NULLs of their type for
    the others (the hashes, event ids and source files are most of what a file holds, and no query reads them:
    a shard's read took 3.8 s of its 8.4 s at 10M events)."""
    text = " ".join(sql for _, _, sql in plan)
    out = []
    for field in schema:
        if re.search(rf"\b{re.escape(field.name)}\b", text):
            out.append(f'"{field.name}"')
        else:
            t = str(field.type)
            duck = f"{_DUCK_TYPES[t[len('list<item: '):-1]]}[]" if t.startswith("list<") else _DUCK_TYPES[t]
            out.append(f'CAST(NULL AS {duck}) AS "{field.name}"')
    return out


def check_shard(index: int, ranges: Iterator[tuple[int, int]], files: list[str], columns: list[str],
                plan: Sequence[tuple[str, str, str]], run: Any, partial_table: Any, ddl: str,
                out: str) -> Iterator[str]:
    """One task: the events of its buckets and of bucket -1 read into an in-memory DuckDB, the plan run over
    them (`run`, `partial_table`: checks.plan's, shipped by value), its findings written to `out`, and its rows
    of each merged CTE (the plan's "partial" steps); yields the files written. On an executor: needs DuckDB
    only."""
    for first, last in ranges:
        con = duckdb.connect(":memory:", config={"threads": 1, "preserve_insertion_order": False,
                                                 "autoinstall_known_extensions": False,
                                                 "autoload_known_extensions": False})
        try:
            source = _parquet(files)
            cols = ", ".join(columns)
            # two scans, each filtered by one range of the bucket column: DuckDB then skips the row groups
            # of other buckets by their statistics
            con.execute(f"CREATE TABLE events AS SELECT {cols} FROM {source} "
                        f"WHERE {BUCKET_COLUMN} BETWEEN {first} AND {last} "
                        f"UNION ALL SELECT {cols} FROM {source} WHERE {BUCKET_COLUMN} = -1")
            kinds = ", ".join(f"'{k}'" for k in SHARD_KINDS)
            con.execute(f"CREATE TEMP TABLE shard_findings ({ddl})")
            run(con, plan, lambda sql, con=con: con.execute(f"INSERT INTO shard_findings {sql}"), {})
            stray = con.execute(
                "SELECT invariant, cluster_id, seq FROM shard_findings f WHERE NOT EXISTS (SELECT 1 FROM events e "
                f"WHERE e.cluster_id = f.cluster_id AND e.seq = f.seq AND e.kind IN ({kinds})) LIMIT 1").fetchall()
            if stray:
                inv, cluster, seq = stray[0]
                raise RuntimeError(f"{inv}: a finding at seq {seq} of cluster {cluster}, not a partition event of "
                                   "this shard: the invariant is not sharded (checks.catalog)")
            path = f"{out}/shard-{index:03d}.parquet"
            _copy(con, "shard_findings", path)
            yield path
            for kind, name, _ in plan:
                if kind == "partial":
                    path = f"{out}/partial-{name}-{index:03d}.parquet"
                    _copy(con, partial_table(name), path)
                    yield path
        finally:
            con.close()


def _quoted(text: str) -> str:
    """A DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def _parquet(paths: Sequence[str]) -> str:
    return f"read_parquet([{', '.join(_quoted(p) for p in paths)}])"


def _copy(con: Any, relation: str, path: str) -> None:
    """`relation` (a table, or a query in parentheses) written as a Parquet file."""
    con.execute(f"COPY {relation} TO {_quoted(path)} (FORMAT parquet)")
