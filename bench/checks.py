"""Checks benchmark (not a test): the whole invariant catalog over simulated histories of N events.

Per history size it times, separately:
  decode       archive files -> the flat Arrow table (checks.inputs.archives_to_arrow: Avro decode + flatten)
  duck table   Arrow table -> DuckDB in-memory `events` table (what a replay store already holds)
  duck check   all the catalog's invariant queries over the loaded table (= `ctrlaudit check STORE` minus the report)
  spark load   SparkEngine.from_archives: the driver's verified read, its rows handed to Spark as Parquet
               (checks.spark_handoff; on a master elsewhere: executors read the Avro with spark-avro), count
  spark check  all the catalog's invariants as one Spark job over the cached table
  live         checks.live.LiveChecker over flat rows (no decode), events/s on the first --live-events
and reports events/s and the growth factor of each stage from the smallest size to each larger one.
Both engines' rows are compared (they must be equal).

    .venv/bin/python bench/checks.py --events 1000000 --keep /work/bench-data
    .venv/bin/python bench/checks.py --events 1000000 --events 10000000 --keep /work/bench-data

Histories are bench/replay.py's (same directory names, cluster ids and settings: ~100k partitions, 12
brokers on 3 racks), so one --keep directory serves both benchmarks; an archive directory is reused
when it holds a COMPLETE marker. A directory that another process is still writing (no marker, files
changed in the last 2 minutes) is waited for, never deleted.

Targets: DuckDB check <= 30 s at 10M events on 2 cores; Spark's cost grows linearly.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checks.catalog import NAMES  # noqa: E402
from checks.duckdb_engine import DuckDBEngine  # noqa: E402
from checks.inputs import archives_to_arrow, resolve  # noqa: E402
from checks.live import LiveChecker  # noqa: E402
from bench.results import append, machine  # noqa: E402



def _bench_replay():
    """bench/replay.py as a module (its name clashes with the `replay` package)."""
    spec = importlib.util.spec_from_file_location("bench_replay", Path(__file__).with_name("replay.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BR = _bench_replay()


def history(root: Path, events: int, topics: int, partitions: int, seed: int) -> tuple[Path, float | None]:
    """bench/replay.py's history(), but never deleting a directory another process is still writing."""
    out = root / f"sim-{events}"
    marker = out / "COMPLETE"
    waited = False
    while out.exists() and not marker.exists():
        newest = max((p.stat().st_mtime for p in out.rglob("*") if p.is_file()), default=0)
        if time.time() - newest > 120:
            break  # abandoned: bench/replay.history() regenerates it
        if not waited:
            print(f"    {out} is being written by another process; waiting for its COMPLETE marker", flush=True)
            waited = True
        time.sleep(20)
    return BR.history(root, events, topics, partitions, seed)


def rate(n: int, seconds: float) -> str:
    return f"{seconds:,.1f} s ({n / seconds:,.0f}/s)"


def live_rate(table, limit: int) -> tuple[int, float]:
    """LiveChecker throughput over flat rows already in memory (conversion to dicts not timed)."""
    checker, done, seconds = LiveChecker(), 0, 0.0
    for batch in table.slice(0, limit).to_batches(max_chunksize=100_000):
        rows = batch.to_pylist()
        gc.freeze()
        t = time.perf_counter()
        for r in rows:
            checker.observe(r)
        seconds += time.perf_counter() - t
        gc.unfreeze()
        done += len(rows)
    return done, seconds


def bench(n: int, root: Path, args, spark) -> dict:
    archive, sim_rate = history(root, n, args.topics, args.partitions, args.seed)
    files = list(resolve([archive]).archives)
    res: dict = {"events": n, "sim_rate": sim_rate, "files": files}
    if args.no_duckdb:
        return res

    t = time.perf_counter()
    table = archives_to_arrow(files)
    res["decode"] = time.perf_counter() - t
    n = res["events"] = table.num_rows
    print(f"    decode {rate(n, res['decode'])}", flush=True)

    if args.live_events:
        done, secs = live_rate(table, args.live_events)
        res["live"] = (done, secs)
        print(f"    live {done:,} events: {rate(done, secs)}", flush=True)

    t = time.perf_counter()
    eng = DuckDBEngine.from_arrow(table, threads=args.threads)
    res["duck_table"] = time.perf_counter() - t
    del table
    gc.collect()
    try:
        duck_rows = _timed_findings(eng, res, "duck")
        # the relations several queries share (shared:NAME) count as queries of their own
        res["duck_per_invariant"] = {k: v for k, v in eng.timings.items() if k in NAMES or k.startswith("shared:")}
    finally:
        eng.close()
    print(f"    duckdb table {res['duck_table']:.1f} s, check {rate(n, res['duck_check'])} "
          f"(then its rows to Python, sorted: {res['duck_rows_s']:.1f} s)", flush=True)
    res["violated"] = sum(1 for r in duck_rows if r[5] == "violated")
    res["allowed"] = sum(1 for r in duck_rows if r[5] == "allowed")
    res["duck_rows"] = duck_rows

    if spark is not None and not args.spark_events:
        res.update(spark_run(spark, files))
        res["engines_agree"] = res.pop("spark_rows") == duck_rows
        print(f"    spark load {rate(n, res['spark_load'])}, check {rate(n, res['spark_check'])}, "
              f"rows equal DuckDB's: {res['engines_agree']}; Spark's parts: "
              + ", ".join(f"{k} {v:.1f} s" for k, v in res["spark_parts"].items()), flush=True)
    return res


def _timed_findings(engine, res: dict, key: str) -> list:
    """The engine's findings (what `ctrlaudit check` computes before its report), timed as `<key>_check`; then
    every row in Python, sorted, for the engines' comparison, timed apart as `<key>_rows_s` (1.35M rows at 10M
    events: not the check's cost, and until 2026-11-28 inside it)."""
    t = time.perf_counter()
    found = engine.findings(NAMES)
    res[f"{key}_check"] = time.perf_counter() - t
    try:
        t = time.perf_counter()
        rows = found.rows()
        res[f"{key}_rows_s"] = time.perf_counter() - t
    finally:
        found.close()
    return rows


def spark_run(spark, files) -> dict:
    from checks.spark_engine import SparkEngine

    out: dict = {}
    t = time.perf_counter()
    seng = SparkEngine.from_archives(spark, files)
    out["spark_load"] = time.perf_counter() - t
    try:
        out["spark_n"] = seng.df.count()
        out["spark_rows"] = _timed_findings(seng, out, "spark")
        out["spark_parts"] = dict(seng.timings)  # the shards' job, each Spark SQL query, all
    finally:
        seng.close()
    return out


def prefix_files(files: list[Path], events: int) -> list[Path]:
    """The first archive files of a history holding about `events` events (whole files; manifests count)."""
    import json

    picked, total = [], 0
    for f in files:
        if total >= events:
            break
        manifest = Path(str(f) + ".manifest.json")
        count = json.loads(manifest.read_text()).get("count") if manifest.exists() else None
        picked.append(f)
        total += count if count is not None else events
    return picked


def spark_growth(spark, largest: dict, sizes: list[int]) -> list[dict]:
    """Spark over prefixes of the largest history (a history's first files are a history)."""
    out = []
    for want in sorted(sizes):
        files = prefix_files(largest["files"], want)
        r = spark_run(spark, files)
        n = r["spark_n"]
        keys = {(x[0], x[2]) for x in r.pop("spark_rows")}
        r["events"] = n
        r["prefix_of"] = largest["events"]
        out.append(r)
        print(f"    spark on the first {n:,} events of the {largest['events']:,}-event history: load "
              f"{rate(n, r['spark_load'])}, check {rate(n, r['spark_check'])} ({len(keys):,} rows)", flush=True)
    return out


def growth(base: dict, cur: dict, key: str) -> str:
    if key not in base or key not in cur or base is cur:
        return ""
    return f" ×{cur[key] / base[key]:.1f}"


def render(results: list[dict], args, spark_rows: list[dict] = ()) -> str:
    if args.no_duckdb:
        results = []
    base = results[0] if results else {}
    scale = lambda r: r["events"] / base["events"]  # noqa: E731
    head = ["events", "decode archive→Arrow", "DuckDB table", f"DuckDB check ({len(NAMES)} invariants)",
            "Spark load (verified read → Spark)", "Spark check", "live checker", "violated / allowed", "engines equal"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        sc = f" (events ×{scale(r):.0f})" if r is not base else ""
        cells = [
            f"{r['events']:,}{sc}",
            rate(r["events"], r["decode"]) + growth(base, r, "decode"),
            f"{r['duck_table']:.1f} s" + growth(base, r, "duck_table"),
            rate(r["events"], r["duck_check"]) + growth(base, r, "duck_check"),
            (rate(r["events"], r["spark_load"]) + growth(base, r, "spark_load")) if "spark_load" in r else "—",
            (rate(r["events"], r["spark_check"]) + growth(base, r, "spark_check")) if "spark_check" in r else "—",
            (f"{r['live'][0] / r['live'][1]:,.0f}/s (first {r['live'][0]:,})") if "live" in r else "—",
            f"{r['violated']} / {r['allowed']}",
            str(r.get("engines_agree", "—")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    slowest: list[str] = []
    for r in results:
        top = sorted(r["duck_per_invariant"].items(), key=lambda kv: -kv[1])[:4]
        slowest.append(f"{r['events']:,}: " + ", ".join(f"{k} {v:.1f} s" for k, v in top))
    text = "\n".join(lines) + "\n\nSlowest DuckDB queries — " + "; ".join(slowest) + "\n"
    sorts = [f"{r['events']:,}: DuckDB {r['duck_rows_s']:.1f} s"
             + (f", Spark {r['spark_rows_s']:.1f} s" if "spark_rows_s" in r else "") for r in results]
    text += ("\nA check is the engine's findings, what `ctrlaudit check` computes before its report; the rows in "
             "Python, sorted for the engines' comparison, are not in it (since 2026-11-28): "
             + "; ".join(sorts) + ".\n")
    parts = [f"{r['events']:,}: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["spark_parts"].items())
             for r in results if r.get("spark_parts")]
    if parts:
        text += "Spark's check by part (the shards' job, each query run as Spark SQL, all) — " + "; ".join(parts) + "\n"
    if args.no_duckdb:
        text = "(DuckDB and decode not run: --no-duckdb)\n"
    if spark_rows:
        b = spark_rows[0]
        text += ("\nSpark " + args.master + " over prefixes of one history (cost per event constant = linear):\n\n"
                 "| events (prefix of) | Spark load | Spark check | check µs/event |\n|---|---|---|---|\n")
        for r in spark_rows:
            g = "" if r is b else f" ×{r['spark_check'] / b['spark_check']:.1f} for events ×{r['events'] / b['events']:.1f}"
            text += (f"| {r['events']:,} (of {r['prefix_of']:,}) | {rate(r['events'], r['spark_load'])} | "
                     f"{rate(r['events'], r['spark_check'])}{g} | {r['spark_check'] / r['events'] * 1e6:,.0f} |\n")
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, action="append", help="history size (repeatable); default 1M")
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100, help="per topic")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="DuckDB threads")
    ap.add_argument("--master", default=f"local[{os.cpu_count() or 2}]", help="Spark master")
    ap.add_argument("--spark-cluster", type=int, metavar="WORKERS", default=0,
                    help="start a Spark standalone cluster (checks.spark_cluster) with this many 1-core workers "
                         "and run Spark there instead of --master")
    ap.add_argument("--executor-memory", default="3g", help="with --spark-cluster: memory per worker")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-duckdb", action="store_true", help="only Spark (with --spark-events: prefixes)")
    ap.add_argument("--spark-events", type=int, action="append",
                    help="run Spark on prefixes of the largest history of about N events (repeatable) instead of "
                         "on every full history")
    ap.add_argument("--live-events", type=int, default=1_000_000, help="0 = skip the live checker")
    ap.add_argument("--keep", type=Path, help="keep (and reuse) archives here")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    sizes = sorted(args.events or [1_000_000])
    root = args.keep or Path(tempfile.mkdtemp(prefix="ctrlaudit-bench-checks-"))
    root.mkdir(parents=True, exist_ok=True)
    spark = cluster = None
    if not args.no_spark and args.spark_cluster:
        from checks.spark_cluster import SparkCluster

        cluster = SparkCluster.start(root / "spark-cluster", workers=args.spark_cluster, memory=args.executor_memory)
        args.master = cluster.master_url
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {args.driver_memory} --executor-memory "
                              f"{args.executor_memory} pyspark-shell")
    if not args.no_spark:
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {args.driver_memory} pyspark-shell")
        from checks.spark_engine import build_session

        spark = build_session(args.master, app_name="ctrlaudit-bench-checks",
                              shuffle_partitions=max(8, 2 * (os.cpu_count() or 2)))
    results, spark_rows = [], []
    try:
        for n in sizes:
            print(f"... {n:,} events", flush=True)
            results.append(bench(n, root, args, spark))
            results[-1].pop("duck_rows", None)
        if spark is not None and args.spark_events:
            print("... Spark growth", flush=True)
            spark_rows = spark_growth(spark, results[-1], args.spark_events)
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            cluster.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    text = (f"\n### checks — {when}\n\nMachine: {machine()}; load average at the end {load[0]:.1f}. "
            f"Command: `.venv/bin/python bench/checks.py {' '.join(sys.argv[1:])}`. DuckDB threads "
            f"{args.threads}, Spark {'(skipped)' if spark is None else (f'standalone cluster, {args.spark_cluster} workers x 1 core' if cluster else args.master)}. "
            "Histories: bench/replay.py's (1000 topics × 100 partitions, 12 brokers, 3 racks). "
            f"\"DuckDB check\" is the {len(NAMES)} queries over a loaded table; decode and table load are timed apart. "
            "×k = time relative to the smallest size.\n\n" + render(results, args, spark_rows))
    print(text)
    if not args.no_results:
        append(text)


if __name__ == "__main__":
    main()
