"""Two commits side by side: the same inputs give the same archive bytes, and how long each commit takes.

    python bench/side_by_side.py --before REV --after REV --kraft DIR --logs DIR --zk DIR [--events N] [--rounds 3]

Each commit is exported (`git archive`) into its own directory, its native decoders built there, and its own
`python -m ctrlaudit` run with that directory first on the path, so the two never share code.

Same bytes: each commit writes archives from the same inputs (a seeded `simulate`, `import kraft` of a copied
metadata log, `import zk` of a ZooKeeper data directory, `import logs` of brokers' log directories); every file
under them (archive files and manifests) is compared by sha256.

Timings, the two commits alternated round by round so that the machine's load falls on both alike (best and
median of wall seconds): simulate N events (the write path: normalizing, chaining, encoding), decode of a
synthetic metadata log of N records through the log reader, load of the simulated archive into a fresh store,
check of that store with DuckDB. Capture's end-to-end figures need a live cluster: bench/capture.py.
Appends a section to bench/RESULTS.md unless --no-append. Not a test.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.results import append, machine  # noqa: E402
from devtools.synthetic_kraft import synthetic_log  # noqa: E402

# An import stamps each event with the time it ran (capture_time_ms): both commits' imports run with the clock
# stopped at one instant, so that what is compared is what they make of the input.
STOPPED_CLOCK = ("import runpy, sys, time; time.time = lambda: 1_800_000_000.0; "
                 "time.time_ns = lambda: 1_800_000_000 * 10**9; sys.argv[0] = 'ctrlaudit'; "
                 "runpy.run_module('ctrlaudit', run_name='__main__')")
# Decoding every record of the synthetic log with the commit's own reader: the same call at both commits.
DECODE = ("import sys; from pathlib import Path; from services.kraft import LogReader; "
          "n = sum(1 for _ in LogReader(Path(sys.argv[1]))); print(n)")


def export(rev: str, into: Path) -> tuple[str, Path]:
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = into / sha
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tree, check=True,
                   capture_output=True)
    return sha, tree


def run(tree: Path, *args: str, cwd: Path | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=cwd or tree, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a check that found something, or an import with gaps
        raise SystemExit(f"side_by_side: {' '.join(args)} at {tree.name} exited {done.returncode}: "
                         f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return took


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def same_bytes(trees: dict[str, Path], work: Path, args: argparse.Namespace) -> list[str]:
    """One line per input: identical, or the files that differ."""
    inputs = {
        "simulate": ["simulate", "--seed", "7", "--events", "20000"],
        "import kraft": ["import", "kraft", str(args.kraft)],
        "import zk": ["import", "zk", str(args.zk)],
        "import logs": ["import", "logs", *map(str, sorted(p for p in args.logs.iterdir() if p.is_dir()))],
    }
    lines = []
    for name, cli in inputs.items():
        seen = {}
        for sha, tree in trees.items():
            out = work / "bytes" / sha / name.replace(" ", "-")
            run(tree, "-c", STOPPED_CLOCK, *cli, "--out", str(out))
            seen[sha] = digests(out)
        (a, da), (b, db) = seen.items()
        differ = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
        lines.append(f"| {name} | {len(da)} | " + ("identical" if not differ and da else
                                                    f"DIFFER: {', '.join(differ[:5])}") + " |")
    return lines


def timings(trees: dict[str, Path], work: Path, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    log = work / "synthetic.log"
    synthetic_log(log, args.records)  # this checkout's (dev tooling): the same file for both commits
    took: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for sha, tree in trees.items():
            t = took.setdefault(sha, {})
            scratch = work / "round" / sha
            shutil.rmtree(scratch, ignore_errors=True)
            sim, store = scratch / "sim", scratch / "store.duckdb"
            t.setdefault("simulate", []).append(
                run(tree, "-m", "ctrlaudit", "simulate", "--seed", "7", "--events", str(args.events), "--out", str(sim)))
            t.setdefault("decode", []).append(run(tree, "-c", DECODE, str(log)))
            t.setdefault("load", []).append(run(tree, "-m", "ctrlaudit", "load", str(sim), "--store", str(store)))
            t.setdefault("check", []).append(run(tree, "-m", "ctrlaudit", "check", str(store)))
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--kraft", type=Path, required=True, help="a copied __cluster_metadata-0 (meta.properties above)")
    ap.add_argument("--logs", type=Path, required=True, help="a folder of brokers' log directories")
    ap.add_argument("--zk", type=Path, required=True, help="a ZooKeeper data directory")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--records", type=int, default=1_000_000, help="synthetic metadata records to decode")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bytes-only", action="store_true", help="compare the archives, time nothing")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        work = Path(tmp)
        trees = dict(export(rev, work / "trees") for rev in (args.before, args.after))
        same = same_bytes(trees, work, args)
        took = {} if args.bytes_only else timings(trees, work, args)
    (a, b) = trees
    if args.bytes_only:
        print("\n".join(same))
        return 0 if all("identical" in line for line in same) else 1
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    rows = [f"| {step} | {min(took[a][step]):.2f} / {statistics.median(took[a][step]):.2f} | "
            f"{min(took[b][step]):.2f} / {statistics.median(took[b][step]):.2f} | "
            f"{min(took[b][step]) / min(took[a][step]):.2f} |" for step in took[a]]
    text = (f"\n### side by side: {a} and {b} — {when} — {machine()}\n\n"
            f"`.venv/bin/python bench/side_by_side.py --before {args.before} --after {args.after} --kraft ... "
            f"--logs ... --zk ... --events {args.events} --records {args.records} --rounds {args.rounds}`; "
            f"load average at the end {load[0]:.1f}.\n\n"
            "| input | files | archive bytes |\n|---|---|---|\n" + "\n".join(same) + "\n\n"
            f"| step (wall s, best / median of {args.rounds}) | {a} | {b} | best {b}/{a} |\n|---|---|---|---|\n"
            + "\n".join(rows) + f"\n\nsimulate, load, check: {args.events:,} events; decode: "
            f"{args.records:,} synthetic metadata records.\n")
    print(text)
    if not args.no_append:
        append(text)
    return 0 if all("identical" in line for line in same) else 1


if __name__ == "__main__":
    sys.exit(main())
