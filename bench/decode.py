"""Decode benchmark: our KRaft decoder against Kafka's DumpLogSegments on the same segment files.

    python bench/kraft_workload.py --out DIR [--records N]               # real cluster -> DIR
    python bench/decode.py --dir DIR [--rounds 3] [--workers 2]           # measure, append RESULTS.md
    python bench/decode.py --dir DIR --synthetic N ...    # first write N synthetic records to DIR
    python bench/zk_workload.py --out ZDIR [--txns 20000]                 # ZooKeeper-mode cluster -> ZDIR
    python bench/decode.py --zk-dir ZDIR/version-2 [--rounds 3]           # ZooKeeper txn log vs TxnLogToolkit

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

from bench.results import append, cpu_model  # noqa: E402
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
    from devtools.cluster.tools import KafkaTools
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


# --- the ZooKeeper transaction log ------------------------------------------------------------------

def measure_zk(directory: Path, rounds: int) -> dict:
    """services.zookeeper.TxnLogReader over every log.* against TxnLogToolkit -d (one JVM per file: the
    tool reads one file), transactions per second of wall time."""
    from devtools.cluster.tools import KafkaTools
    from services.zookeeper import TxnLogReader, txn_logs
    files = txn_logs(directory)
    size = sum(p.stat().st_size for p in files)
    tools = KafkaTools("3.9", workdir=directory.parent)
    n = sum(len(list(TxnLogReader(f))) for f in files)  # warm the page cache and learn the count
    times: dict[str, list[float]] = {"ours (TxnLogReader)": [], "TxnLogToolkit -d": []}
    load = [os.getloadavg()[0]]
    for r in range(rounds):
        t = time.perf_counter()
        assert sum(sum(1 for _ in TxnLogReader(f)) for f in files) == n
        times["ours (TxnLogReader)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for f in files:
            subprocess.run(tools.command("txnlog-toolkit", "-d", str(f)), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
        times["TxnLogToolkit -d"].append(time.perf_counter() - t)
        load.append(os.getloadavg()[0])
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items())
              + f", load {load[-1]:.1f}", flush=True)
    return {"records": n, "bytes": size, "files": len(files), "times": times, "load": load,
            "ref": "TxnLogToolkit -d", "unit": "txns", "what": "transaction log file(s) (pre-allocated size)"}


def table(res: dict) -> str:
    n = res["records"]
    ref_name = res.get("ref", "DumpLogSegments")
    ref = min(res["times"][ref_name])
    lines = [f"{n:,} {res.get('unit', 'records')}, {res['bytes'] / 1e6:.1f} MB in {res['files']} "
             f"{res.get('what', 'segment file(s)')}; "
             f"1-minute load average {min(res['load']):.1f}-{max(res['load']):.1f} "
             f"(before and after each round)", "",
             f"| decoder | best s | median s | {res.get('unit', 'records')}/s (best) | vs {ref_name} |"
             + (" CPU s (best) | CPU µs/record | records/CPU-s | vs DumpLogSegments, CPU |" if "cpu" in res else ""),
             "|---|---|---|---|---|" + ("---|---|---|---|" if "cpu" in res else "")]
    ref_cpu = min(res["cpu"][ref_name]) if "cpu" in res else 0.0
    for name, ts in res["times"].items():
        best = min(ts)
        row = f"| {name} | {best:.2f} | {statistics.median(ts):.2f} | {n / best:,.0f} | {ref / best:.2f}x |"
        if "cpu" in res:
            c = min(res["cpu"][name])
            row += f" {c:.2f} | {c / n * 1e6:.2f} | {n / c:,.0f} | {ref_cpu / c:.2f}x |"
        lines.append(row)
    return "\n".join(lines)


def append_results(text: str, args: argparse.Namespace) -> Path:
    cpu = cpu_model()
    if args.zk_dir:
        head = (f"\n## decode (ZooKeeper transaction log)\n\n{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, "
                f"{platform.node()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
                f"ZooKeeper 3.8.4 under Kafka 3.9.2 (bench/zk_workload.py); `python bench/decode.py --zk-dir "
                f"{args.zk_dir} --rounds {args.rounds}`. Wall time, the same log files, alternating runs; "
                f"TxnLogToolkit -d once per file (it reads one), output to /dev/null, JVM starts included; "
                f"ours decodes every transaction fully (header, record, multi's sub-records, checksum).\n\n")
        return append(head + text + "\n")
    head = (f"\n## decode\n\n{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, {platform.node()}, "
            f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, Kafka {args.version}; "
            f"`python bench/decode.py --dir {args.dir} --rounds {args.rounds} --workers {args.workers}"
            f"{f' --synthetic {args.synthetic}' if args.synthetic else ''}`. "
            f"Wall time, the same segment files, alternating runs; DumpLogSegments with "
            f"--cluster-metadata-decoder, output to /dev/null, JVM start included. "
            f"Native path: {'on' if native.available() else 'off (not built or CTRLAUDIT_NATIVE=0)'}."
            f"\n\n")
    return append(head + text + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, help="segments to measure")
    ap.add_argument("--zk-dir", type=Path, help="a ZooKeeper version-2 directory (bench/zk_workload.py)")
    ap.add_argument("--version", default="4.x")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--synthetic", type=int, metavar="N",
                    help="if DIR has no segment yet, write one of N records from "
                         "devtools.synthetic_kraft.synthetic_log (no cluster needed)")
    args = ap.parse_args(argv)
    if not args.dir and not args.zk_dir:
        ap.error("give --dir (make one with bench/kraft_workload.py) or --zk-dir (bench/zk_workload.py)")
    if args.zk_dir:
        res = measure_zk(args.zk_dir, args.rounds)
    else:
        if args.synthetic and not any(segment_base_offset(p) is not None for p in
                                      (args.dir.iterdir() if args.dir.exists() else ())):
            from devtools.synthetic_kraft import synthetic_log
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
