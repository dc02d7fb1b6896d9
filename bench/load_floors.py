"""What a load cannot beat on this machine (not a test): the floors of the load target, ≥ 1M events/s.

The load (bench/replay.py) decodes and verifies the archive, then writes the rows into the store. This
measures the writing alone, from rows already decoded, for the store's layout and for narrower ones the
issue allows, and for Parquet beside the archive:

- DuckDB making a table of the same rows from a Parquet file and checkpointing it (bench/replay.py's
  floor, with the load's settings), for: the store's 77 columns; hashes as 32-byte BLOBs; no list
  columns (the states' lists in a table of their own); no lists and no hashes or ids;
- the rows written as Parquet from Arrow in memory (pyarrow, uncompressed and snappy; one file on one
  thread, and two halves on two threads);
- the rows written as Arrow IPC files from Arrow in memory (uncompressed and lz4, two halves on two
  threads): a store whose events are files DuckDB scans memory-mapped, written at the speed of the disk;
- decoding the archive without verifying (2 threads), and reading it verified (schemas.archive.verified).

With --ipc-check, the price of such a store: the 14 invariants' findings (checks.duckdb_engine) over the
memory-mapped IPC files, registered as the `events` view, against the same rows as a DuckDB table, in one
process, rows compared.

    .venv/bin/python bench/load_floors.py --events 1000000 --keep /work/bench-data
    .venv/bin/python bench/load_floors.py --events 10000000 --keep /work/bench-data --ipc-check

Appends its table, with the machine and the date, to bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# bench/replay.py's history, floor and machine line (its name is the package `replay`'s: loaded by path)
_spec = importlib.util.spec_from_file_location("bench_replay", Path(__file__).with_name("replay.py"))
bench_replay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_replay)
history, machine, parquet_of = bench_replay.history, bench_replay.machine, bench_replay.parquet_of
table_seconds, verify_rates, RESULTS = bench_replay.table_seconds, bench_replay.verify_rates, bench_replay.RESULTS

HASHES = ("prev_hash", "hash")
IDS = ("event_id",)


def layouts(columns: dict[str, str]) -> dict[str, str]:
    """Name -> SELECT list over the Parquet file's columns (name -> DuckDB type)."""
    lists = {c for c, t in columns.items() if t.endswith("[]")}
    return {
        "the store's layout (77 columns)": "*",
        "hashes as 32-byte BLOBs": ", ".join(f"unhex({c}) AS {c}" if c in HASHES else c for c in columns),
        "no list columns": ", ".join(c for c in columns if c not in lists),
        "no lists, no hashes or ids": ", ".join(c for c in columns if c not in lists | set(HASHES) | set(IDS)),
    }


def parquet_writes(table, root: Path) -> dict[str, float]:
    import pyarrow.parquet as pq

    out = {}
    for comp in ("none", "snappy"):
        t = time.perf_counter()
        pq.write_table(table, root / "w0", compression=comp)
        out[f"Parquet from Arrow, {comp}, 1 thread"] = time.perf_counter() - t
        out[f"Parquet from Arrow, {comp}, 2 threads"] = _halves(
            table, root, lambda part, path, comp=comp: pq.write_table(part, path, compression=comp))
    return out


def _halves(table, root: Path, write) -> float:
    """Seconds to write the two halves of `table` on two threads, as root/w0 and root/w1 (`write(table, path)`)."""
    half = table.num_rows // 2
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda job: write(*job), [(table.slice(0, half), root / "w0"), (table.slice(half), root / "w1")]))
    return time.perf_counter() - t


def write_ipc(table, path: Path, compression: str | None = None) -> None:
    import pyarrow as pa

    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema, options=options) as w:
        w.write_table(table)


def ipc_writes(table, root: Path) -> dict[str, float]:
    """The uncompressed files, written last, stay for ipc_check (memory-mapped, read without a copy)."""
    return {f"Arrow IPC from Arrow, {comp or 'none'}, 2 threads":
            _halves(table, root, lambda part, path, comp=comp: write_ipc(part, path, comp)) for comp in ("lz4", None)}


def ipc_check(table, root: Path) -> tuple[float, float, bool]:
    """Seconds of the findings of every invariant over root/w0 and w1 memory-mapped (a DuckDB view of
    the Arrow table), then over the same rows as a DuckDB table (in memory, as bench/checks.py makes it);
    and whether the rows are equal."""
    import duckdb
    import pyarrow as pa

    from checks.catalog import NAMES
    from checks.duckdb_engine import DuckDBEngine

    def findings(engine) -> tuple[float, list]:
        t = time.perf_counter()
        found = engine.findings(NAMES)
        seconds = time.perf_counter() - t
        try:
            return seconds, found.rows()
        finally:
            found.close()
            engine.close()

    mapped = pa.concat_tables(pa.ipc.open_file(pa.memory_map(str(root / w))).read_all() for w in ("w0", "w1"))
    con = duckdb.connect(config={"threads": 2})
    con.register("events_ipc", mapped)
    con.execute("CREATE VIEW events AS SELECT * FROM events_ipc")
    over_ipc, ipc_rows = findings(DuckDBEngine.from_connection(con))
    con.close()
    del mapped
    over_table, table_rows = findings(DuckDBEngine.from_arrow(table, threads=2))
    return over_ipc, over_table, ipc_rows == table_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100, help="per topic")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep (and reuse) the archive here")
    ap.add_argument("--ipc-check", action="store_true", help="also the checks over the IPC files (see above)")
    args = ap.parse_args()
    import duckdb
    import pyarrow.parquet as pq

    from checks.catalog import NAMES

    root = args.keep or Path(tempfile.mkdtemp(prefix="ctrlaudit-floors-"))
    root.mkdir(parents=True, exist_ok=True)
    archive, _ = history(root, args.events, args.topics, args.partitions, args.seed)
    decode_s, verify_s = verify_rates(archive, args.workers)
    parquet = root / "floors.parquet"
    parquet_of(archive, parquet, args.workers)
    try:
        columns = {r[0]: r[1] for r in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{parquet}')").fetchall()}
        timed = {"decode the archive, no verification (2 threads)": decode_s,
                 "read the archive verified (schemas.archive.verified)": verify_s}
        for name, select in layouts(columns).items():
            timed[f"DuckDB table, {name}"] = min(table_seconds(parquet, root / "floors.duckdb", select)
                                                 for _ in range(2))
            print(name, f"{timed[f'DuckDB table, {name}']:.2f} s", flush=True)
        rows = pq.read_table(parquet)
        timed.update(parquet_writes(rows, root))
        timed.update(ipc_writes(rows, root))
        checked = ipc_check(rows, root) if args.ipc_check else None
        del rows
    finally:
        parquet.unlink(missing_ok=True)
        for w in ("w0", "w1"):
            (root / w).unlink(missing_ok=True)
    n = args.events
    lines = [f"| {name} | {s:.2f} s | {n / s:,.0f} rows/s |" for name, s in timed.items()]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n### load floors — {when}\n\nMachine: {machine()}; load average at the end "
            f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}. Command: `.venv/bin/python bench/load_floors.py "
            f"{' '.join(sys.argv[1:])}`. {n:,} events (bench/replay.py's history).\n\n"
            "| step (the writes from rows already decoded) | time | rate |\n|---|---|---|\n" + "\n".join(lines) + "\n")
    if checked:
        over_ipc, over_table, equal = checked
        text += (f"\nThe {len(NAMES)} invariants' findings over the uncompressed IPC files memory-mapped: "
                 f"{over_ipc:.2f} s; over the same rows as a DuckDB table (in memory), same process: {over_table:.2f} s; "
                 f"rows equal: {equal}.\n")
    print(text)
    with RESULTS.open("a") as fo:
        fo.write(text)


if __name__ == "__main__":
    main()
