"""A check's DuckDB statements as data: one plan, run by DuckDBEngine.findings over a whole history and by
every Spark task over its shard of partitions (checks.spark_shards).

A plan is a tuple of steps (kind, name, sql): "build" a shared relation several invariants read (a
temporary table), "query" an invariant's rows (VIOLATION_COLUMNS), "drop" a shared relation once its last
reader has run (checks.catalog.last_readers); in a shard's plan, "partial": the rows of an invariant's merged
CTE (checks.catalog, `merged`) kept as a table, for the driver to merge with the other shards'. `run`
executes it; on the way out, however it ends, every shared relation is dropped.

Spark ships this module to its executors by value (pyspark's cloudpickle), so a task needs DuckDB, not
this repository: nothing of ctrlaudit is imported at the top (`steps` imports the catalog when it is
called, on the driver).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from checks.catalog import (BY_NAME, Deadlines, last_readers, partial_sql, shared_for, shared_sql, shared_table,
                            with_merged, wrapped, wrapped_sql)

Step = tuple[str, str, str]


def partial_table(name: str) -> str:
    """A shard's rows of the invariant's merged CTE (checks.catalog, `merged`), kept for the driver to merge."""
    return f"partial_{name}"


def steps(names: Sequence[str], shard: bool = False, deadlines: Deadlines = ()) -> tuple[Step, ...]:
    """The plan of the named invariants, in their order, in DuckDB's dialect. `shard`: the plan of one shard
    of partitions (checks.spark_shards), where an invariant with a merged CTE first keeps that CTE's rows
    ("partial": a table, partial_table) and then gives its other findings, with the CTE empty. `deadlines`:
    the bounded-liveness deadlines given (checks.deadlines; no invariant with a deadline is sharded)."""
    shared = shared_for(names)
    built = frozenset(shared)
    done = last_readers(names, built)
    out: list[Step] = [("build", s, f"CREATE OR REPLACE TEMP TABLE {shared_table(s)} AS {shared_sql(s, 'duckdb')}")
                       for s in shared]
    for name in names:
        if shard and BY_NAME[name].merged:
            table = partial_table(name)
            out.append(("partial", name,
                        f"CREATE OR REPLACE TEMP TABLE {table} AS {partial_sql(name, 'duckdb', built)}"))
            empty = f"SELECT * FROM {table} WHERE false"
            out.append(("query", name, wrapped(name, with_merged(name, "duckdb", empty, built))))
        else:
            out.append(("query", name, wrapped_sql(name, "duckdb", built, deadlines)))
        out.extend(("drop", s, f"DROP TABLE IF EXISTS {shared_table(s)}") for s in done[name])
    return tuple(out)


def run(con: Any, plan: Sequence[Step], add: Callable[[str], object], timings: dict[str, float]) -> None:
    """Executes `plan` on the DuckDB connection `con`; each query's SQL goes to `add` (which inserts its rows).
    Seconds are added to `timings` by invariant name, and by `shared:NAME` for a shared relation's build."""
    try:
        for kind, name, sql in plan:
            started = time.perf_counter()
            if kind == "query":
                add(sql)
            else:
                con.execute(sql)
            if kind != "drop":
                key = f"shared:{name}" if kind == "build" else name
                timings[key] = timings.get(key, 0.0) + time.perf_counter() - started
    finally:
        for kind, _, sql in plan:
            if kind == "drop":
                con.execute(sql)
