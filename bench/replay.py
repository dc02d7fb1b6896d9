"""Replay benchmark (not a test): simulated histories of N events over ~100k partitions.

Measures, per history size: simulator throughput (for context), store load throughput, state as of
a point (median of 20 random points, all partitions), the pure-Python fold, and peak memory.
Prints a table and appends it, with the machine and the date, to bench/RESULTS.md.

    .venv/bin/python bench/replay.py                       # 1M and 10M events (the 10M run takes long)
    .venv/bin/python bench/replay.py --events 1000000      # one size
    .venv/bin/python bench/replay.py --events 1000000 --keep /tmp/bench   # keep archives, reuse them next time

Targets: load >= 1M events/s; as-of <= 1 s at 10M; fold >= 500k events/s; peak <= 4 GB.
Also: as-of with objects <= 200 ms at 10M; the load beside its floor, DuckDB making a table of the
same rows from Parquet (no verification, no intervals, no chain state).
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.state.delta import ImageBuilder  # noqa: E402
from schemas.state.image import EMPTY  # noqa: E402
from replay.queries import state_arrow, state_as_of  # noqa: E402
from replay.store import Store  # noqa: E402
from schemas.archive import fastflat, verified  # noqa: E402
from schemas.archive.container import read_events  # noqa: E402
from services.simulator import SimConfig, simulate_to_archive  # noqa: E402
from bench.results import append, machine  # noqa: E402

def peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, child


def phase_peak_mb(reset: bool = True) -> float | None:
    """Peak RSS (VmHWM) since the last reset, then reset it (Linux: "5" to clear_refs), so each
    phase's peak is seen apart; None where /proc does not offer it. The "queries" phase includes
    everything after the load until the fold: points, as-of queries and closing the store."""
    try:
        status = Path("/proc/self/status").read_text()
        peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
        if reset:
            Path("/proc/self/clear_refs").write_text("5")
        return peak
    except (OSError, IndexError, ValueError):
        return None


def history(root: Path, events: int, topics: int, partitions: int, seed: int) -> tuple[Path, float | None]:
    out = root / f"sim-{events}"
    marker = out / "COMPLETE"
    if marker.exists():
        return out, None
    shutil.rmtree(out, ignore_errors=True)
    config = SimConfig(seed=seed, events=events, brokers=12, racks=3, topics=topics, partitions=partitions,
                       topic_churn=False, cluster_id=f"bench-{events}")
    t = time.perf_counter()
    simulate_to_archive(out, config)
    rate = events / (time.perf_counter() - t)
    marker.write_text("ok\n")
    return out, rate


def fold_rate(archive: Path, limit: int) -> tuple[int, float, float]:
    """Fold throughput on decoded events held in memory (decoding is not timed), up to `limit`."""
    builder, folded, seconds, cpu_seconds = ImageBuilder(EMPTY), 0, 0.0, 0.0
    chunk: list = []

    def run() -> None:
        nonlocal folded, seconds, cpu_seconds
        gc.freeze()  # decoded events are long-lived: keep the collector off them while timing
        t, c = time.perf_counter(), time.process_time()
        builder.replay_all(chunk)
        seconds += time.perf_counter() - t
        cpu_seconds += time.process_time() - c
        folded += len(chunk)
        chunk.clear()
        gc.unfreeze()

    for f in sorted(archive.rglob("*.avro")):
        for e in read_events(f):
            chunk.append(e)
            if len(chunk) >= 250_000:
                run()
            if folded + len(chunk) >= limit:
                break
        if folded + len(chunk) >= limit:
            break
    if chunk:
        run()
    builder.apply()
    return folded, folded / seconds, folded / cpu_seconds


def verify_rates(archive: Path, workers: int) -> tuple[float, float]:
    """Seconds to decode every file without verification (2 threads, as the verified read uses),
    and to read it verified (schemas.archive.verified: sha256 of each file, every event's hash and link)."""
    from concurrent.futures import ThreadPoolExecutor

    files = sorted(archive.rglob("*.avro"))
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(2, workers)) as pool:
        for table in pool.map(fastflat.decode_file, files):
            del table
    decode_s = time.perf_counter() - t
    t = time.perf_counter()
    verified.verify([archive], workers=min(2, workers))
    return decode_s, time.perf_counter() - t


def parquet_of(archive: Path, parquet: Path, workers: int) -> None:
    """The archive's rows (decoded without verification) as one Parquet file: the floors' input."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    files = sorted(archive.rglob("*.avro"))
    writer = None
    with ThreadPoolExecutor(max_workers=min(2, workers)) as pool:
        for table in pool.map(fastflat.decode_file, files):
            writer = writer or pq.ParquetWriter(parquet, table.schema, compression="snappy")
            writer.write_table(table)
    assert writer is not None
    writer.close()


def table_seconds(parquet: Path, db: Path, select: str = "*") -> float:
    """Seconds for DuckDB to make a table of `select` over the Parquet file and checkpoint it, under the
    load's memory limit and without keeping the rows' order (as the load)."""
    import duckdb

    from replay.store import LOAD_MEMORY_LIMIT

    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"SET memory_limit = '{LOAD_MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")  # as the load sets it (replay.store)
    t = time.perf_counter()
    con.execute(f"CREATE TABLE events AS SELECT {select} FROM read_parquet('{parquet}')")
    con.execute("CHECKPOINT")
    seconds = time.perf_counter() - t
    con.close()
    db.unlink()
    return seconds


def parquet_floor(archive: Path, root: Path, workers: int) -> float:
    """The load's anchor: seconds for DuckDB to make a table of the same rows from a Parquet
    file (table_seconds), with no verification, no intervals and no chain state. Writing the Parquet file
    is not timed."""
    parquet = root / "floor.parquet"
    parquet_of(archive, parquet, workers)
    try:
        return table_seconds(parquet, root / "floor.duckdb")
    finally:
        parquet.unlink()


def bench(events: int, root: Path, topics: int, partitions: int, workers: int, seed: int) -> dict[str, str]:
    archive, sim_rate = history(root, events, topics, partitions, seed)
    decode_s, verify_s = verify_rates(archive, workers)
    floor_s = parquet_floor(archive, root, workers)
    store_path = root / f"store-{events}.duckdb"
    store_path.unlink(missing_ok=True)
    phase_peak_mb()
    with Store(store_path) as store:
        load_avg_before = os.getloadavg()[0]
        t, cpu = time.perf_counter(), time.process_time()
        report = store.load([archive], workers=workers)
        load_s, load_cpu = time.perf_counter() - t, time.process_time() - cpu
        load_avg_after = os.getloadavg()[0]
        load_peak = phase_peak_mb()
        last = store.point()
        rnd = random.Random(seed)
        points = [store.point(seq=rnd.randrange(last.seq + 1)) for _ in range(20)]
        times, sql_times, rows = [], [], []
        for p in points:
            t = time.perf_counter()
            state_arrow(store, p)
            sql_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            rows.append(len(state_as_of(store, p).partitions))
            times.append(time.perf_counter() - t)
    query_peak = phase_peak_mb()
    folded, fold, fold_cpu = fold_rate(archive, limit=min(events, 2_000_000))
    fold_peak = phase_peak_mb()
    own, child = peak_mb()
    return {
        "events": f"{events:,}",
        "partitions": f"{topics * partitions:,}",
        "simulate": f"{sim_rate:,.0f}/s" if sim_rate else "(reused)",
        "load": f"{report.events_added / load_s:,.0f}/s ({load_s:.1f} s; decode wait {report.decode_seconds:.1f} s)",
        "floor: DuckDB table from the same rows in Parquet": f"{events / floor_s:,.0f}/s ({floor_s:.1f} s)",
        "verify (no store)": f"{events / verify_s:,.0f}/s ({verify_s:.2f} s)",
        "decode without verifying": f"{events / decode_s:,.0f}/s ({decode_s:.2f} s)",
        "verification / load time": f"{max(0.0, verify_s - decode_s) / load_s:.1%}",
        "load CPU (all threads)": f"{load_cpu:.1f} s ({report.events_added / load_cpu:,.0f} events/CPU-s)",
        "load average (1 min) before / after load": f"{load_avg_before:.1f} / {load_avg_after:.1f}",
        "as-of query (Arrow), median (max)": f"{statistics.median(sql_times) * 1000:,.0f} ms "
                                             f"({max(sql_times) * 1000:,.0f} ms)",
        "as-of with Python objects, median (max)": f"{statistics.median(times) * 1000:,.0f} ms "
                                                   f"({max(times) * 1000:,.0f} ms)",
        "partitions at the points": f"{min(rows):,}–{max(rows):,}",
        "fold": f"{fold:,.0f}/s wall, {fold_cpu:,.0f}/CPU-s (first {folded:,})",
        "peak RSS in load / queries / fold": " / ".join("?" if v is None else f"{v:,.0f} MB"
                                                        for v in (load_peak, query_peak, fold_peak)),
        # ru_maxrss is reset along with VmHWM, so the run's peak is the largest phase peak.
        "peak RSS of the run": f"{max(v or 0 for v in (load_peak, query_peak, fold_peak, own)):,.0f} MB main, "
                               f"{child:,.0f} MB decode worker",
        "load average at the end (1/5/15 min)": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, action="append", help="history size (repeatable); default 1M and 10M")
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100, help="per topic")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep (and reuse) archives and stores here")
    args = ap.parse_args()
    sizes = args.events or [1_000_000, 10_000_000]
    root = args.keep or Path(tempfile.mkdtemp(prefix="ctrlaudit-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for n in sizes:
            print(f"... {n:,} events", flush=True)
            rows.append(bench(n, root, args.topics, args.partitions, args.workers, args.seed))
            print(rows[-1], flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    cols = list(rows[0])
    table = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    table += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n### replay — {when}\n\nMachine: {machine()}. Command: `.venv/bin/python bench/replay.py "
            f"{' '.join(sys.argv[1:])}`.\n\n" + "\n".join(table) + "\n")
    print(text)
    append(text)


if __name__ == "__main__":
    main()
