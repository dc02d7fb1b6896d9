"""Decode benchmark: our KRaft decoder against Kafka's DumpLogSegments on the same segment files.

    python bench/kraft_workload.py --out DIR [--records N]               # real cluster -> DIR
    python bench/decode.py --dir DIR [--rounds 3] [--workers 2]           # measure, append RESULTS.md
    python bench/decode.py --dir DIR --synthetic N ...    # first write N synthetic records to DIR

bench/kraft_workload.py makes the log: a real 3-node 4.x cluster driven through mass replica
rotations, preferred elections, broker kills and controlled shutdowns, and topic churn until
the metadata log holds N real records (its docstring has the details).

Measuring alternates the contenders in one go (ours in one process, ours in ``--workers``
processes one segment file each, DumpLogSegments with --cluster-metadata-decoder writing to
/dev/null), ``rounds`` times each, and reports records per second of wall time (best and median)
and the ratio, and CPU time (user+sys of the process, and of its children for the workers and the
JVM) per record, since wall time on a shared machine depends on the load. Every run of ours starts cold: the decoders' tail caches and the uuid cache are
emptied first, and the worker pool is started inside the timed section (as the JVM start is for
DumpLogSegments). Records are all records of the files, NoOps and control records included,
since both decoders decode all of them. Not a test.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from services.kraft import LogReader, metadata_files, native  # noqa: E402
from services.kraft.files import segment_base_offset  # noqa: E402
from services.kraft.messages import clear_tail_caches  # noqa: E402
from services.kraft.wire import _uuid_cache  # noqa: E402


# --- measuring -----------------------------------------------------------------------------------

def _cpu() -> float:
    """User+sys seconds of this process and of its waited-for children (workers, the JVM)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _decode_one(path: str, native_decode: bool | None = None) -> int:
    return sum(len(recs) for _, recs in
               LogReader(path, live=True, native_decode=native_decode).batches())


def _cold() -> None:
    clear_tail_caches()
    _uuid_cache.clear()


def ours_sequential(files: list[Path], native_decode: bool | None = None) -> int:
    _cold()
    return sum(_decode_one(str(f), native_decode) for f in files)


def ours_parallel(files: list[Path], workers: int) -> int:
    """Largest files first, so a long one does not start last."""
    _cold()  # forked workers inherit the parent's (empty) caches
    order = sorted(files, key=lambda p: -p.stat().st_size)
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_decode_one, [str(f) for f in order]))


def dumplog(files: list[Path], tools) -> None:
    cmd = tools.command("dump-log", "--files", ",".join(map(str, files)), "--cluster-metadata-decoder",
                        jvm_opts=["-Xmx2g"])
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def measure(directory: Path, rounds: int, workers: int, version: str) -> dict:
    from services.cluster.tools import KafkaTools
    files = [p for p in metadata_files(directory) if segment_base_offset(p) is not None]
    size = sum(p.stat().st_size for p in files)
    tools = KafkaTools(version, workdir=directory.parent)
    # Split big segments' work across workers by file: more files than workers balances better.
    runs = {"ours": lambda: ours_sequential(files),
            "ours, Python path": lambda: ours_sequential(files, native_decode=False),
            f"ours x{workers} procs": lambda: ours_parallel(files, workers),
            "DumpLogSegments": lambda: dumplog(files, tools)}
    if not native.available():
        del runs["ours, Python path"]  # "ours" is the Python path already
    times: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    n = ours_sequential(files)  # warm the page cache and learn the count
    load = [os.getloadavg()[0]]
    for r in range(rounds):
        for name, run in runs.items():
            c, t = _cpu(), time.perf_counter()
            got = run()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(_cpu() - c)
            assert got in (None, n), (name, got, n)
        load.append(os.getloadavg()[0])
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items())
              + f", load {load[-1]:.1f}", flush=True)
    return {"records": n, "bytes": size, "files": len(files), "times": times, "cpu": cpu,
            "load": load}


def table(res: dict) -> str:
    n = res["records"]
    ref = min(res["times"]["DumpLogSegments"])
    lines = [f"{n:,} records, {res['bytes'] / 1e6:.1f} MB in {res['files']} segment file(s); "
             f"1-minute load average {min(res['load']):.1f}-{max(res['load']):.1f} "
             f"(before and after each round)", "",
             "| decoder | best s | median s | records/s (best) | vs DumpLogSegments | CPU s (best) "
             "| CPU µs/record | records/CPU-s | vs DumpLogSegments, CPU |",
             "|---|---|---|---|---|---|---|---|---|"]
    ref_cpu = min(res["cpu"]["DumpLogSegments"])
    for name, ts in res["times"].items():
        best, c = min(ts), min(res["cpu"][name])
        lines.append(f"| {name} | {best:.2f} | {statistics.median(ts):.2f} | {n / best:,.0f} | "
                     f"{ref / best:.2f}x | {c:.2f} | {c / n * 1e6:.2f} | {n / c:,.0f} | "
                     f"{ref_cpu / c:.2f}x |")
    return "\n".join(lines)


def append_results(text: str, args: argparse.Namespace) -> Path:
    path = REPO / "bench" / "RESULTS.md"
    if not path.exists():
        path.write_text("# Benchmark results\n\nMeasured on the project's machines; each section names the "
                        "command that produced it.\n")
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    head = (f"\n## decode\n\n{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, {platform.node()}, "
            f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, Kafka {args.version}; "
            f"`python bench/decode.py --dir {args.dir} --rounds {args.rounds} --workers {args.workers}"
            f"{f' --synthetic {args.synthetic}' if args.synthetic else ''}`. "
            f"Wall time, the same segment files, alternating runs; DumpLogSegments with "
            f"--cluster-metadata-decoder, output to /dev/null, JVM start included. "
            f"Native path: {'on' if native.available() else 'off (not built or CTRLAUDIT_NATIVE=0)'}."
            f"\n\n")
    with open(path, "a") as f:
        f.write(head + text + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, help="segments to measure")
    ap.add_argument("--version", default="4.x")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--synthetic", type=int, metavar="N",
                    help="if DIR has no segment yet, write one of N records from "
                         "services.kraft.bench.synthetic_log (no cluster needed)")
    args = ap.parse_args(argv)
    if not args.dir:
        ap.error("give --dir (make one with bench/kraft_workload.py)")
    if args.synthetic and not any(segment_base_offset(p) is not None for p in
                                  (args.dir.iterdir() if args.dir.exists() else ())):
        from services.kraft.bench import synthetic_log
        args.dir.mkdir(parents=True, exist_ok=True)
        synthetic_log(args.dir / "00000000000000000000.log", args.synthetic)
    res = measure(args.dir, args.rounds, args.workers, args.version)
    text = table(res)
    print(text)
    if not args.no_append:
        print(f"appended to {append_results(text, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
