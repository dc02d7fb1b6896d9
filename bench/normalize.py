"""The KRaft normalizer alone: decoded records -> unchained ControllerEvents, records per second.

    python bench/normalize.py [--records 500000] [--rounds 3] [--no-gc]

The log is devtools.synthetic_kraft.synthetic_log (55 % PartitionChangeRecords, 25 % NoOps, ...), decoded once
before timing; each round feeds all of it to a new KRaftNormalizer (the capture worker's and every import's
per-batch call, `feed_all`). `--no-gc` pauses the cyclic GC during a round: the events are kept, as an
import keeps them until written, so the collector's passes over them are part of the default figure.
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.kraft import LogReader  # noqa: E402
from devtools.synthetic_kraft import synthetic_log  # noqa: E402
from services.kraft.normalizer import KRaftNormalizer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-gc", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "00000000000000000000.log"
        synthetic_log(path, args.records)
        records = list(LogReader(path))
    times, events = [], 0
    for _ in range(args.rounds):
        gc.collect()
        if args.no_gc:
            gc.disable()
        n = KRaftNormalizer("bench", clock=lambda: 0)
        t = time.perf_counter()
        events = len(n.feed_all(records))
        times.append(time.perf_counter() - t)
        gc.enable()
        del n
    best = min(times)
    print(f"{len(records):,} records -> {events:,} events; best {best:.2f} s = {len(records) / best:,.0f} records/s "
          f"(rounds: {', '.join(f'{t:.2f}' for t in times)}; gc {'paused' if args.no_gc else 'on'})")


if __name__ == "__main__":
    main()
