"""As-of benchmark (not a test): `state_as_of` (the objects path) on an existing store, at random points,
optionally against replay/queries.py at a base git revision, alternating in one process so both are
measured under the same load. The points are the same for both; the rows are compared.

    .venv/bin/python bench/asof.py /work/bench-data/store-10000000.duckdb --base f268c97 --rounds 2

The store is one bench/replay.py made (`--keep`); it is opened read-only for the queries.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from replay import queries  # noqa: E402
from replay.store import Store  # noqa: E402


def queries_at(rev: str):
    """replay/queries.py as it was at `rev`, as a module beside the current one."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:replay/queries.py"], check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"queries_{rev}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"queries_{rev}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--base", help="git revision of replay/queries.py to compare against")
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--last", action="store_true", help="every point the store's last seq (all partitions live)")
    args = ap.parse_args()
    paths = {"now": queries}
    if args.base:
        paths["base " + args.base] = queries_at(args.base)
    store = Store(args.store)
    last = store.point()
    rnd = random.Random(args.seed)
    points = [last if args.last else store.point(seq=rnd.randrange(last.seq + 1)) for _ in range(args.points)]
    times: dict[str, list[float]] = {k: [] for k in paths}
    sizes = []
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for p in points:
            results = {}
            for name, mod in paths.items():
                t = time.perf_counter()
                rows = mod.state_as_of(store, p).partitions
                times[name].append((time.perf_counter() - t) * 1000)
                # PartitionRow is a class of each module: compared by its fields
                results[name] = [(r.topic, r.topic_id, r.partition, r.state, r.since_seq, r.since_time_ms) for r in rows]
                del rows
            if r == 0:
                sizes.append(len(results["now"]))
                first = next(iter(results.values()))
                assert all(v == first for v in results.values()), f"rows differ at seq {p.seq}"
            del results
    load.append(os.getloadavg()[0])
    print(f"{args.store}: {len(points)} points x {args.rounds} rounds, {min(sizes):,}–{max(sizes):,} partitions, "
          f"load average {load[0]:.1f} → {load[1]:.1f}; rows equal: yes")
    for name, ts in times.items():
        print(f"  {name:16s} median {statistics.median(ts):6.0f} ms   min {min(ts):6.0f}   max {max(ts):6.0f}")


if __name__ == "__main__":
    main()
