"""Spark, one invariant at a time (not a test): where the Spark check's time goes, and what the way the
events are held changes. For the Spark target (≥ 100k events/s on local[2]).

The events of a replay store are written once to Parquet (not timed); Spark then holds them one of three
ways, runs the shared relations and each invariant `--repeat` times through the engine's own path
(SparkEngine: the same SQL, CTEs computed once, job groups), and prints the seconds of every run:

- ``cache``: read and cached as the engine does (`cache()`, Spark's in-memory columnar cache);
- ``partitioned``: cached after a repartition by (cluster_id, topic, partition) and a sort by seq
  within partitions, so that windows over a partition's history could skip their exchange and sort;
- ``keyed``: cached after a repartition by (cluster_id, seq) and a sort by it, the key of every join that
  fetches rows by key, so that only the other side would be shuffled (slower: bench/RESULTS.md, 2026-11-27);
- ``bucketed``: written by Spark as a table bucketed by (cluster_id, seq) (a shuffle of every event, timed
  as the holding), so that a join fetching events by key shuffles only its keys (not kept: with the
  handoff writing the buckets itself the command's check was no faster, bench/RESULTS.md, 2026-11-27);
- ``parquet``: not cached, every query reads the Parquet file (vectorized reader).

    .venv/bin/python bench/spark_invariants.py STORE [--hold cache|partitioned|keyed|bucketed|parquet] [--repeat 3]
        [--shuffle-partitions 8] [--conf spark.sql.adaptive.enabled=false ...] [INVARIANT ...]

The rows of each invariant are counted so that runs can be compared; nothing is appended to RESULTS.md.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checks.catalog import NAMES, shared_for, shared_sql, shared_table  # noqa: E402
from checks.spark_engine import DIALECT, SparkEngine, build_session, materialized, release  # noqa: E402


def store_as_parquet(store: Path, directory: Path) -> tuple[Path, int]:
    """The store's events table written to `directory`/events.parquet (read only), and its row count."""
    import duckdb

    parquet = directory / "events.parquet"
    con = duckdb.connect(str(store), read_only=True)
    try:
        con.execute(f"COPY events TO '{parquet}' (FORMAT parquet)")
        return parquet, con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()


def held(spark, parquet: Path, how: str):
    df = spark.read.parquet(str(parquet))
    if how == "parquet":
        return df
    if how == "bucketed":  # a table bucketed by (cluster_id, seq): a fetch by key shuffles only the keys
        n = int(spark.conf.get("spark.sql.shuffle.partitions"))
        df.write.bucketBy(n, "cluster_id", "seq").format("parquet").mode("overwrite").saveAsTable("events_bucketed")
        return spark.table("events_bucketed")
    if how == "keyed":  # by (cluster_id, seq), the key of every fetch-by-key join
        n = int(spark.conf.get("spark.sql.shuffle.partitions"))
        df = df.repartition(n, "cluster_id", "seq").sortWithinPartitions("cluster_id", "seq")
    if how == "partitioned":
        n = int(spark.conf.get("spark.sql.shuffle.partitions"))
        df = df.repartition(n, "cluster_id", "topic", "partition").sortWithinPartitions(
            "cluster_id", "topic", "partition", "seq")
    df = df.cache()
    df.count()
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--hold", choices=("cache", "partitioned", "keyed", "bucketed", "parquet"), default="cache")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each invariant (the first compiles)")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark SQL setting (repeatable)")
    ap.add_argument("names", nargs="*", help="invariants (default: all)")
    args = ap.parse_intermixed_args()  # the invariants' names may follow the options
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-spark-inv-") as tmp:
        parquet, events = store_as_parquet(args.store, Path(tmp))
        spark = build_session("local[2]", shuffle_partitions=args.shuffle_partitions)
        for kv in args.conf:
            spark.conf.set(*kv.split("=", 1))
        t = time.perf_counter()
        engine = SparkEngine(spark, held(spark, parquet, args.hold))
        print(f"{events:,} events held as {args.hold}: {time.perf_counter() - t:.1f} s", flush=True)
        names = args.names or list(NAMES)
        t = time.perf_counter()
        shared = {}
        for s in shared_for(names):
            with engine._computed_once(shared_sql(s, DIALECT)) as sql:
                shared[s] = materialized(spark.sql(sql))
            shared[s].createOrReplaceTempView(shared_table(s))
        print(f"{'shared relations':32s} {time.perf_counter() - t:6.2f} s", flush=True)
        first = 0.0
        for name in names:
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                rows = sum(1 for _ in engine._rows(name, frozenset(shared)))
                runs.append(time.perf_counter() - t)
            first += runs[0]
            print(f"{name:32s} " + " ".join(f"{r:6.2f} s" for r in runs) + f"   rows {rows}", flush=True)
        print(f"{'invariants, first runs':32s} {first:6.2f} s ({events / first:,.0f} events/s)")
        for df in shared.values():
            release(df)
        spark.stop()


if __name__ == "__main__":
    main()
