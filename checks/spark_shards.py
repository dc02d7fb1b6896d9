"""Spark: the sharded invariants (checks.catalog, `sharded`) checked one shard of topics at a time.

Why: as Spark SQL, each of those invariants shuffles and sorts the partition events for windows and joins
of its own, ten passes over every event and more: 43k events/s at 10M events on local[2] (bench/RESULTS.md).
Each judges one topic's partition events (PartitionChange, OffsetSample) with its cluster's other events,
so Spark shuffles the partition events once, by (cluster id, topic), into shards; every other event
(controller, broker, topic, config and feature changes, capture gaps, unknown records: few) goes to every
shard, broadcast. A task loads its shard into an embedded DuckDB (one thread: Spark runs one task per
core) and runs the catalog's SQL through the plan DuckDBEngine runs (checks.plan).

Why the rows are DuckDB's: a sharded invariant's finding, and every event its judgement reads, belong to
one topic's partition history or to the events every shard holds, so the shard holding that topic gives
the same rows as the whole history (keys such as the topic numbers of fragments/topic_numbers.sql are
numbered per shard, and never shown). Two guards keep it so:
- a task answers for its own partition events only: a finding at any other event stops the job (an
  invariant marked sharded that is not), never becomes a row, or a row counted twice;
- a topic id seen under two topic names, or with and without one, would split a history that
  state_continuity and reassignment_legal key by topic id over two shards: `unshardable` finds it first,
  and the engine then runs every invariant as Spark SQL (checks.spark_engine).

Executors need duckdb and pyarrow (ctrlaudit's requirements) in the Python Spark starts for them
(spark.pyspark.python; a local master gets the driver's own); this module and checks.plan are shipped to
them by value, not imported from this repository.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

SHARD_KINDS = ("PartitionChange", "OffsetSample")
# Partition events per shard at most: a task holds its shard twice (Arrow, DuckDB's table) while it loads it.
SHARD_EVENTS = 1_000_000
RESULT_DDL = ("invariant STRING, cluster_id STRING, seq BIGINT, related_seq BIGINT, rule STRING, status STRING, "
              "allowance STRING, expected STRING, actual STRING, magnitude BIGINT")


def unshardable(spark: Any) -> str | None:
    """Why the `events` view cannot be checked by shards (None: it can)."""
    rows = spark.sql(
        "SELECT cluster_id, topic_id FROM events WHERE kind = 'PartitionChange' AND topic_id IS NOT NULL "
        "GROUP BY cluster_id, topic_id "
        "HAVING COUNT(DISTINCT topic) + MAX(CASE WHEN topic IS NULL THEN 1 ELSE 0 END) > 1 LIMIT 1").collect()
    if not rows:
        return None
    return f"topic id {rows[0][1]} of cluster {rows[0][0]} comes under more than one topic name"


def executors_unready(spark: Any) -> str | None:
    """Why the executors cannot check shards (their Python has no duckdb or pyarrow), None when they can:
    asked once, by a one-task job, so that a cluster whose Python lacks them is checked as Spark SQL
    rather than failing task after task."""
    def probe(_: Any) -> str:
        import duckdb
        import pyarrow

        return f"{duckdb.__version__} {pyarrow.__version__}"

    try:
        spark.sparkContext.parallelize([0], 1).map(probe).collect()
    except Exception as exc:  # noqa: BLE001 - Py4J and PySpark wrap the worker's ImportError in their own types
        last = [line for line in str(exc).splitlines() if "Error" in line][-1:] or [type(exc).__name__]
        return f"the executors' Python cannot run DuckDB ({last[0].strip()[:200]})"
    return None


def shard_count(spark: Any, events: int) -> int:
    """A shard per SHARD_EVENTS events, and at least two tasks per core (a slow shard then waits less)."""
    return max(2 * spark.sparkContext.defaultParallelism, math.ceil(events / SHARD_EVENTS), 1)


def sharded_rows(spark: Any, df: Any, names: Sequence[str], shards: int) -> Any:
    """The rows (RESULT_DDL) of the named sharded invariants over the events `df`, as a Spark DataFrame."""
    from pyspark import cloudpickle
    from pyspark.sql import functions as F

    import checks.plan
    import checks.spark_shards
    from checks.findings import VIOLATION_COLUMNS, _DDL
    from schemas import flat

    for module in (checks.plan, checks.spark_shards):  # executors need not import this repository
        cloudpickle.register_pickle_by_value(module)
    assert [c.split()[0] for c in RESULT_DDL.split(", ")] == list(VIOLATION_COLUMNS)
    context = df.where(~F.col("kind").isin(*SHARD_KINDS)).toArrow()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, context.schema) as out:
        out.write_table(context)
    task = partial(check_shard, plan=checks.plan.steps(names), run=checks.plan.run, schema=flat.ARROW_SCHEMA, ddl=_DDL,
                   context=spark.sparkContext.broadcast(sink.getvalue().to_pybytes()))
    own = df.where(F.col("kind").isin(*SHARD_KINDS)).repartition(shards, "cluster_id", "topic")
    return own.mapInArrow(task, RESULT_DDL)


def check_shard(batches: Iterator[pa.RecordBatch], plan: Sequence[tuple[str, str, str]], run: Any,
                schema: pa.Schema, ddl: str, context: Any) -> Iterator[pa.RecordBatch]:
    """One task: its shard's partition events and every context event in an in-memory DuckDB, the plan run
    over them (`run`: checks.plan.run, shipped by value), its rows out. On an executor: DuckDB and pyarrow."""
    import duckdb

    held = list(batches)
    if not sum(b.num_rows for b in held):
        return
    own = pa.Table.from_batches(held)
    del held
    shared = pa.ipc.open_stream(context.value).read_all()
    con = duckdb.connect(":memory:", config={"threads": 1, "preserve_insertion_order": False,
                                             "autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        con.register("own_rows", own.cast(schema))
        con.register("context_rows", shared.cast(schema))
        con.execute("CREATE TABLE events AS SELECT * FROM own_rows UNION ALL SELECT * FROM context_rows")
        con.execute("CREATE TABLE own_keys AS SELECT DISTINCT cluster_id, seq FROM own_rows")
        con.unregister("own_rows")
        con.unregister("context_rows")
        del own, shared
        con.execute(f"CREATE TEMP TABLE shard_findings ({ddl})")
        run(con, plan, lambda sql: con.execute(f"INSERT INTO shard_findings {sql}"), {})
        stray = con.execute("SELECT invariant, cluster_id, seq FROM shard_findings f ANTI JOIN own_keys k "
                            "ON k.cluster_id = f.cluster_id AND k.seq = f.seq LIMIT 1").fetchall()
        if stray:
            inv, cluster, seq = stray[0]
            raise RuntimeError(f"{inv}: a finding at seq {seq} of cluster {cluster}, not a partition event of "
                               "this shard: the invariant is not sharded (checks.catalog)")
        yield from con.sql("SELECT * FROM shard_findings").to_arrow_reader(1 << 16)
    finally:
        con.close()
