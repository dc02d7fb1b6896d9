"""Decode benchmark: our KRaft decoder against Kafka's DumpLogSegments on the same segment files.

    python bench/decode.py --generate DIR [--records N] [--version 4.x]   # real cluster -> DIR
    python bench/decode.py --dir DIR [--rounds 3] [--workers 2]           # measure, append RESULTS.md

--generate runs a real 3-node cluster (jars from Maven Central, 127.0.0.1) with large metadata
segments and no metadata retention, and drives mass controller activity until the metadata log
holds N records: topics with thousands of partitions, then rounds of replica-order rotations
(ReassignPartitionsCommand, one PartitionChangeRecord per partition) and preferred elections
(LeaderElectionCommand, one per partition), with a kill -9 / restart of a broker every few rounds
(fencing, ISR shrink and expand). The segments are copied to DIR and the cluster is killed.

Measuring alternates the contenders in one go (ours sequential, ours in worker processes,
DumpLogSegments with --cluster-metadata-decoder writing to /dev/null), `rounds` times each, and
reports records per second of wall time (best and median) and the ratio. Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from services.kraft import LogReader, metadata_files  # noqa: E402
from services.kraft.files import segment_base_offset  # noqa: E402


# --- generation ----------------------------------------------------------------------------------

def _count(paths: list[Path]) -> int:
    return sum(_decode_one(str(p)) for p in paths)


def generate(out: Path, records: int, version: str, partitions_per_topic: int = 2000, topics: int = 3) -> None:
    from services.cluster import observe
    from services.cluster.manager import KafkaCluster, find_free_base_port

    work = out.parent / (out.name + ".cluster")
    overrides = {"metadata.max.retention.bytes": str(50 * 2**30), "metadata.max.retention.ms": str(30 * 86400_000),
                 "auto.leader.rebalance.enable": "false", "num.network.threads": "2", "num.io.threads": "2",
                 "log.segment.bytes": str(1 << 20), "log.index.size.max.bytes": "65536"}
    c = KafkaCluster(work, version, base_port=find_free_base_port(), heap="1g",
                     metadata_segment_bytes=512 * 2**20, overrides=overrides)
    try:
        c.up(timeout=180)
        bs = c.bootstrap_servers
        for t in range(topics):
            c.tool("topics", "--bootstrap-server", bs, "--create", "--topic", f"b-{t}", "--partitions",
                   str(partitions_per_topic), "--replication-factor", "3", timeout=600)
        rnd = 0
        ctl = c.active_controller()
        while True:
            n = _count([p for p in metadata_files(c.metadata_dir(ctl)) if p.suffix == ".log"])
            print(f"round {rnd}: {n:,} records in the metadata log", flush=True)
            if n >= records:
                break
            plan = out.parent / "rotate.json"
            parts = []
            for t in range(topics):
                for p in range(partitions_per_topic):
                    base = [1, 2, 3]
                    k = (p + rnd + 1) % 3
                    parts.append({"topic": f"b-{t}", "partition": p, "replicas": base[k:] + base[:k]})
            plan.write_text(json.dumps({"version": 1, "partitions": parts}))
            c.tool("reassign", "--bootstrap-server", bs, "--reassignment-json-file", str(plan), "--execute",
                   check=False, timeout=600)
            time.sleep(2)
            c.tool("leader-election", "--bootstrap-server", bs, "--election-type", "PREFERRED",
                   "--all-topic-partitions", check=False, timeout=600)
            if rnd % 4 == 3:
                victim = next(i for i in c.nodes if i != c.active_controller())
                c.kill_node(victim)
                time.sleep(6)
                c.start_node(victim)
                c.wait_ready([victim], timeout=300)
            rnd += 1
            ctl = c.active_controller()
        time.sleep(2)
        out.mkdir(parents=True, exist_ok=True)
        src = c.metadata_dir(ctl)
        for p in metadata_files(src):
            if p.suffix == ".log":
                data = p.read_bytes()
                (out / p.name).write_bytes(data)
        # cut a partial last batch (the copy raced an append)
        for p in metadata_files(out):
            r = LogReader(p, live=True)
            for _ in r.batches():
                pass
            if r.partial_tail is not None:
                with open(p, "r+b") as f:
                    f.truncate(r.partial_tail.position)
        del observe
    finally:
        c.down()


# --- measuring -----------------------------------------------------------------------------------

def _decode_one(path: str) -> int:
    return sum(len(recs) for _, recs in LogReader(path, live=True).batches())


def ours_sequential(files: list[Path]) -> int:
    return sum(_decode_one(str(f)) for f in files)


def ours_parallel(files: list[Path], pool: ProcessPoolExecutor) -> int:
    return sum(pool.map(_decode_one, [str(f) for f in files]))


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
    times: dict[str, list[float]] = {"ours": [], f"ours x{workers} procs": [], "DumpLogSegments": []}
    n = ours_sequential(files)  # warm the page cache and learn the count
    with ProcessPoolExecutor(workers) as pool:
        ours_parallel(files, pool)
        for r in range(rounds):
            t = time.perf_counter()
            assert ours_sequential(files) == n
            times["ours"].append(time.perf_counter() - t)
            t = time.perf_counter()
            assert ours_parallel(files, pool) == n
            times[f"ours x{workers} procs"].append(time.perf_counter() - t)
            t = time.perf_counter()
            dumplog(files, tools)
            times["DumpLogSegments"].append(time.perf_counter() - t)
            print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()), flush=True)
    return {"records": n, "bytes": size, "files": len(files), "times": times}


def table(res: dict) -> str:
    n = res["records"]
    ref = min(res["times"]["DumpLogSegments"])
    lines = [f"{n:,} records, {res['bytes'] / 1e6:.1f} MB in {res['files']} segment file(s)", "",
             "| decoder | best s | median s | records/s (best) | vs DumpLogSegments |",
             "|---|---|---|---|---|"]
    for name, ts in res["times"].items():
        best = min(ts)
        lines.append(f"| {name} | {best:.2f} | {statistics.median(ts):.2f} | {n / best:,.0f} | {ref / best:.2f}x |")
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
            f"`python bench/decode.py --dir {args.dir} --rounds {args.rounds} --workers {args.workers}`. "
            f"Wall time, the same segment files, alternating runs; DumpLogSegments with "
            f"--cluster-metadata-decoder, output to /dev/null, JVM start included.\n\n")
    with open(path, "a") as f:
        f.write(head + text + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generate", type=Path, help="drive a real cluster and copy its metadata segments here")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, help="segments to measure")
    ap.add_argument("--version", default="4.x")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args(argv)
    if args.generate:
        generate(args.generate, args.records, args.version)
        args.dir = args.dir or args.generate
    if not args.dir:
        ap.error("give --dir or --generate")
    res = measure(args.dir, args.rounds, args.workers, args.version)
    text = table(res)
    print(text)
    if not args.no_append:
        print(f"appended to {append_results(text, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
