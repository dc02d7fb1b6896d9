"""Write a synthetic, hash-chained archive for the store benchmark (not a test).

    python -m tests.replay.make_archive OUT_DIR N_EVENTS [FILES] [TOPICS] [PARTITIONS]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from schemas.archive.chain import Chain
from tests.archive_files import write_archive_file as write_events
from tests.replay.histories import CLUSTER, HistoryGen


def main() -> None:
    out, n = Path(sys.argv[1]), int(sys.argv[2])
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    topics = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    partitions = int(sys.argv[5]) if len(sys.argv) > 5 else 50
    out.mkdir(parents=True, exist_ok=True)
    t = time.time()
    g = HistoryGen(seed=7, brokers=6, topics=topics, partitions=partitions).setup()
    while len(g.events) < n:
        g.step()
    events = g.events[:n]
    chain = Chain(CLUSTER)
    per = -(-n // files)
    for i in range(files):
        part = [chain.append(e) for e in events[i * per:(i + 1) * per]]
        write_events(out / f"events-{i:04d}.avro", part)
    print(f"{n} events in {files} files under {out} in {time.time() - t:.1f}s")


if __name__ == "__main__":
    main()
