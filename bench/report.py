"""Benchmark `ctrlaudit report` over existing stores (bench/replay.py --keep DIR makes them).

Runs the CLI in a child process per store (wall time, the child's peak RSS, the HTML's size) and
appends a table, with the machine, the date, the load average and the command, to bench/RESULTS.md.
Target: a 10M-event, 100k-partition history in under 30 s and under 10 MB.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import RESULTS, machine  # noqa: E402


def run(store: Path, out: Path, extra: list[str]) -> dict[str, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ctrlaudit", "report", "--store", str(store), "--out", str(out), "--force",
                    *extra],
                   check=True, cwd=Path(__file__).resolve().parents[1])
    seconds = time.perf_counter() - started
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        events, parts = con.execute("SELECT (SELECT count(*) FROM events), (SELECT count(DISTINCT (topic_id, "
                                    "\"partition\")) FROM partition_intervals)").fetchone()
    return {"store": store.name, "events": f"{events:,}", "partitions": f"{parts:,}", "window": " ".join(extra) or "all",
            "wall": f"{seconds:.1f} s", "peak RSS": f"{peak:,.0f} MB", "HTML": f"{out.stat().st_size / 1e6:.1f} MB",
            "load avg after": f"{os.getloadavg()[0]:.1f}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-report-bench-") as tmp:
        for store in args.stores:
            for i in range(args.repeat):
                rows.append(run(store, Path(tmp) / f"{store.stem}-{i}.html", []))
                print(rows[-1], flush=True)
    cols = list(rows[0])
    table = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    table += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n### report — {when}\n\nMachine: {machine()}. Command: `.venv/bin/python bench/report.py "
            f"{' '.join(sys.argv[1:])}`. The machine is shared with other jobs: the load average says how much.\n\n"
            + "\n".join(table) + "\n")
    print(text)
    with RESULTS.open("a") as fo:
        fo.write(text)


if __name__ == "__main__":
    main()
