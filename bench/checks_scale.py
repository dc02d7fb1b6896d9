"""Checks at scale (not a test): every invariant over an `events` table on disk, under a DuckDB memory limit,
one at a time, with each one's time and the process's peak RSS while it ran.

The 100M-event table is made from bench/checks_queries.py's cached 10M table (`sim-10000000.events.duckdb`):
ten copies, each under its own cluster id (`0-<id>` .. `9-<id>`), i.e. ten clusters of 10M events and
100k partitions each. The copy's number leads the id: DuckDB keeps an 8-byte prefix of a string column's
min and max per row group, so only then can a scan of one cluster (DuckDBEngine.one_cluster) skip the
others' row groups (a 1M-event cluster of ten: 6 ms with the number first, 33 ms last). Every invariant partitions by cluster, so the copies are independent histories;
the findings are ten times the 10M table's.

    .venv/bin/python bench/checks_scale.py --make-copies 10 --keep /work/bench-data
    .venv/bin/python bench/checks_scale.py --make-one-cluster 10 --keep /work/bench-data

--make-one-cluster K makes one cluster of K x 10M events and K x 100k partitions instead: each topic's
events (its partitions' changes and samples, its topic and config changes) K times, copy k under the topic
name `<name>~k` and topic id `<id>~k` (copy 0 as it was), at seq `seq * K + k`, so the copies interleave
along one history; the cluster's own events (controllers, brokers, features) once, at `seq * K`. Every
partition sees the same brokers, controllers and cluster configs at the same point of its history as in
the 10M table, so the findings of a partition's rules are K times the 10M table's and the cluster's rules'
as many as there. Written in seq order, 1M source seqs at a time.
    .venv/bin/python bench/checks_scale.py /work/bench-data/sim-100000000-x10.events.duckdb --memory-limit 6GB
    .venv/bin/python bench/checks_scale.py /work/bench-data/sim-10000000.events.duckdb --memory-limit 6GB

With --spark MASTER the same invariants then run on Spark in the same process, over the same table handed over
as `ctrlaudit check --engine spark STORE` hands a store's (Parquet files), and the two engines' rows are compared:
    .venv/bin/python bench/checks_scale.py /work/bench-data/sim-100000000-one-cluster.events.duckdb --memory-limit 6GB --spark 'local[2]'

By default the findings go where `ctrlaudit check` puts them (checks.findings: a temporary DuckDB table),
then the report is built from them (counts, worst examples and their evidence) and, with --csv, every
finding is written out, each phase timed with its peak RSS. --count-only only counts each query's rows.
(Before checks.findings the report held every finding as a Python dict: 13.5M at 100M, and the run
passed 10 GB in high_watermark_monotonic's 5.6M rows.)
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from checks.catalog import NAMES, last_readers, wrapped_sql  # noqa: E402
from checks.duckdb_engine import DuckDBEngine  # noqa: E402
from checks.findings import TABLE, Findings  # noqa: E402
from checks.report import build  # noqa: E402
from ctrlaudit.check_run import write_csv  # noqa: E402


def _make_table(keep: Path, name: str, fill) -> Path:
    """`keep`/`name`, made once from the 10M table (attached as `src`) by `fill(con)` into an empty `events`
    table of its layout; written under a temporary name and renamed when complete."""
    dst = keep / name
    if dst.exists():
        return dst
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp), config={"threads": 2, "memory_limit": "8GB",
                                            "temp_directory": str(keep / "duck-spill")})
    con.execute(f"ATTACH '{keep / 'sim-10000000.events.duckdb'}' AS src (READ_ONLY)")
    con.execute("CREATE TABLE events AS SELECT * FROM src.events WHERE false")
    fill(con)
    con.execute("CHECKPOINT")
    con.close()
    os.replace(tmp, dst)
    return dst


def make_copies(keep: Path, copies: int) -> Path:
    def fill(con) -> None:
        t = time.perf_counter()
        for k in range(copies):
            con.execute(f"INSERT INTO events SELECT * REPLACE ('{k}-' || cluster_id AS cluster_id) "
                        "FROM src.events ORDER BY rowid")
            print(f"copy {k}: {time.perf_counter() - t:.0f} s", flush=True)
    return _make_table(keep, f"sim-{10_000_000 * copies}-x{copies}.events.duckdb", fill)


_PER_TOPIC = "kind IN ('PartitionChange', 'OffsetSample', 'TopicChange') OR (kind = 'ConfigChange' AND config_type = 'TOPIC')"


def make_one_cluster(keep: Path, copies: int) -> Path:
    suffix = "CASE WHEN c.k = 0 THEN {col} ELSE {col} || '~' || CAST(c.k AS VARCHAR) END"

    def fill(con) -> None:
        last = con.execute("SELECT max(seq) FROM src.events").fetchone()[0]
        t, step = time.perf_counter(), 1_000_000
        for lo in range(0, last + 1, step):
            con.execute(f"""
                INSERT INTO events
                SELECT * EXCLUDE (k) FROM (
                  SELECT e.* REPLACE (e.seq * {copies} + c.k AS seq,
                                      {suffix.format(col='e.event_id')} AS event_id,
                                      {suffix.format(col='e.topic')} AS topic,
                                      {suffix.format(col='e.topic_id')} AS topic_id,
                                      CASE WHEN e.kind = 'ConfigChange' THEN {suffix.format(col='e.config_resource')}
                                           ELSE e.config_resource END AS config_resource),
                         c.k
                  FROM src.events e, range({copies}) c(k)
                  WHERE e.seq >= {lo} AND e.seq < {lo + step} AND (c.k = 0 OR {_PER_TOPIC})
                ) ORDER BY seq""")
            print(f"source seqs < {lo + step:,}: {time.perf_counter() - t:.0f} s", flush=True)
    return _make_table(keep, f"sim-{10_000_000 * copies}-one-cluster.events.duckdb", fill)


def rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path, nargs="?", help="a DuckDB file with an `events` table (flat layout)")
    ap.add_argument("--make-copies", type=int, metavar="K", help="make the K x 10M table first (see above)")
    ap.add_argument("--make-one-cluster", type=int, metavar="K", help="make one cluster of K x 10M events first")
    ap.add_argument("--keep", type=Path, default=Path("/work/bench-data"))
    ap.add_argument("--memory-limit", default="6GB")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--count-only", action="store_true")
    ap.add_argument("--csv", type=Path, help="write every finding here (as `ctrlaudit check --csv`)")
    ap.add_argument("--rss-cap-mb", type=int, default=10_000, help="stop (exit 3) when the process passes this")
    ap.add_argument("--only", action="append", choices=NAMES)
    ap.add_argument("--spark", metavar="MASTER", help="then the same invariants on Spark (e.g. local[2]) over the "
                    "same table, handed over as `ctrlaudit check --engine spark STORE` does; rows compared (see below)")
    ap.add_argument("--driver-memory", default="14g", help="with --spark")
    args = ap.parse_args()
    table = make_copies(args.keep, args.make_copies) if args.make_copies else args.table
    if args.make_one_cluster:
        table = make_one_cluster(args.keep, args.make_one_cluster)
    if table is None:
        ap.error("a table, --make-copies or --make-one-cluster")
    spill = args.keep / "duck-spill"
    spill.mkdir(exist_ok=True)
    con = duckdb.connect(str(table), read_only=True, config={
        "threads": args.threads, "memory_limit": args.memory_limit, "temp_directory": str(spill),
        "autoinstall_known_extensions": False, "autoload_known_extensions": False})
    peak = {"run": 0, "phase": 0}

    def watch() -> None:
        while True:
            r = rss_mb()
            peak["run"], peak["phase"] = max(peak["run"], r), max(peak["phase"], r)
            if r > args.rss_cap_mb:
                print(f"RSS {r:,} MB passed --rss-cap-mb: stopped", flush=True)
                os._exit(3)
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()
    names = args.only or list(NAMES)
    eng = DuckDBEngine(con)
    n, clusters = con.execute("SELECT count(*), count(DISTINCT cluster_id) FROM events").fetchone()
    print(f"{table}: {n:,} events, {clusters} cluster(s); memory_limit {args.memory_limit}, {args.threads} threads; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    started = time.perf_counter()
    found = None if args.count_only else Findings.create(con)
    spent: dict[str, float] = {}
    peaks: dict[str, int] = {}
    counts: dict[str, int] = {}
    every = eng.clusters()
    with eng.unordered():  # as DuckDBEngine.findings runs the queries: one cluster at a time
        for cluster in every if len(every) > 1 else [None]:
            with eng.one_cluster(cluster):
                peak["phase"], t = rss_mb(), time.perf_counter()
                built = eng.build_shared(names)
                spent["shared relations"] = spent.get("shared relations", 0.0) + time.perf_counter() - t
                peaks["shared relations"] = max(peaks.get("shared relations", 0), peak["phase"])
                done = last_readers(names, built)
                for name in names:
                    peak["phase"], t = rss_mb(), time.perf_counter()
                    sql = wrapped_sql(name, "duckdb", built)
                    if found is None:
                        rows = con.execute(f"SELECT count(*) FROM ({sql}) q").fetchone()[0]
                    else:
                        before = con.execute("SELECT count(*) FROM check_findings").fetchone()[0]
                        found.add_query(sql)
                        rows = con.execute("SELECT count(*) FROM check_findings").fetchone()[0] - before
                    eng.drop_shared(frozenset(done[name]))
                    spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
                    peaks[name] = max(peaks.get(name, 0), peak["phase"])
                    counts[name] = counts.get(name, 0) + rows
                eng.drop_shared(built)
    for name, seconds in spent.items():
        rows_note = f"  rows {counts[name]:,}" if name in counts else ""
        print(f"  {name:32s} {seconds:7.1f} s  peak {peaks[name]:,} MB{rows_note}", flush=True)
    if found is not None:
        peak["phase"], t = rss_mb(), time.perf_counter()
        kinds = eng.kind_counts()
        report = build("duckdb", [str(table)], kinds, eng.clusters(), names, found, [], eng.events_at)
        worst = sum(len(r.examples) + len(r.allowed_examples) for r in report.results)
        print(f"  {'report (counts, worst, evidence)':32s} {time.perf_counter() - t:7.1f} s  peak {peak['phase']:,} MB  "
              f"examples {worst}; " + ", ".join(f"{r.invariant.name}={r.status}" for r in report.results), flush=True)
        if args.csv:
            peak["phase"], t = rss_mb(), time.perf_counter()
            write_csv(found, args.csv)
            print(f"  {'csv':32s} {time.perf_counter() - t:7.1f} s  peak {peak['phase']:,} MB  "
                  f"{args.csv.stat().st_size / 1e9:.2f} GB", flush=True)
    total = time.perf_counter() - started
    print(f"total {total:.1f} s ({n / total:,.0f} events/s); peak RSS {peak['run']:,} MB; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.spark:
        spark_side(args, table, eng, found, names, n, peak)
    if found is not None:
        found.close()
    con.close()


def spark_side(args, table: Path, eng: DuckDBEngine, found: Findings | None, names: list[str], n: int, peak: dict) -> None:
    """Spark over the same table: its load (DuckDB's rows handed over as Parquet, SparkEngine.from_duckdb, as for a
    store) and its findings (SparkEngine.findings, what `ctrlaudit check --engine spark` computes), timed apart;
    then its rows against DuckDB's, compared in DuckDB (EXCEPT ALL both ways: 13.5M rows at 100M events)."""
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {args.driver_memory} pyspark-shell")
    from checks.spark_engine import SparkEngine, build_session

    spark = build_session(args.spark, app_name="ctrlaudit-bench-checks-scale",
                          shuffle_partitions=max(8, 2 * (os.cpu_count() or 2)))
    try:
        peak["phase"], t = rss_mb(), time.perf_counter()
        seng = SparkEngine.from_duckdb(spark, eng, str(table))
        load = time.perf_counter() - t
        print(f"  spark load (rows handed over)   {load:7.1f} s  peak {peak['phase']:,} MB (this process)", flush=True)
        try:
            peak["phase"], t = rss_mb(), time.perf_counter()
            sfound = seng.findings(names)
            check = time.perf_counter() - t
            print(f"  spark check ({args.spark})  {check:7.1f} s ({n / check:,.0f} events/s)  parts "
                  + ", ".join(f"{k} {v:.1f} s" for k, v in seng.timings.items()), flush=True)
        finally:
            seng.close()
        try:
            if found is not None:
                eng.con.register("spark_findings", sfound.con.sql(f"SELECT * FROM {TABLE}").to_arrow_table())
                only = [eng.con.execute(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})")
                        .fetchall()[0][0] for a, b in ((TABLE, "spark_findings"), ("spark_findings", TABLE))]
                rows = eng.con.execute("SELECT count(*) FROM spark_findings").fetchall()[0][0]
                print(f"  rows: Spark {rows:,}; only DuckDB's {only[0]:,}, only Spark's {only[1]:,}: "
                      f"equal {only == [0, 0]}", flush=True)
                eng.con.unregister("spark_findings")
        finally:
            sfound.close()
        print(f"spark load + check {load + check:.1f} s ({n / (load + check):,.0f} events/s); "
              f"load average {os.getloadavg()[0]:.1f}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
