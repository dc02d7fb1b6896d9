"""Replay benchmark (not a test): load, as-of latency, fold. Prints measured figures.

    python -m tests.replay.bench_store ARCHIVE_DIR [WORKERS]
"""
from __future__ import annotations

import gc
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from schemas.archive.container import read_events
from schemas.state.delta import fold
from replay.queries import state_as_of
from replay.store import Store


def ms(f, n=20):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    archive = Path(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "bench.duckdb")
        t = time.perf_counter()
        r = store.load([archive], workers=workers)
        total = time.perf_counter() - t
        print(f"load: {r.events_added} events in {total:.1f}s = {r.events_added / total:,.0f} events/s "
              f"(decode {r.decode_seconds:.1f}s, store+intervals {r.store_seconds:.1f}s, workers={workers})")
        n_int = store.con.execute("SELECT count(*), count(DISTINCT (topic_id, \"partition\")) FROM partition_intervals").fetchall()[0]
        print(f"partition_intervals: {n_int[0]} rows, {n_int[1]} partitions")
        last = store.point()
        mid = store.point(seq=last.seq // 2)
        print("point(time) ms median/max: %.1f / %.1f" % ms(lambda: store.point(time=mid.event_time_ms)))
        print("as-of all partitions ms median/max: %.1f / %.1f (rows %d)" % (
            *ms(lambda: state_as_of(store, mid)), len(state_as_of(store, mid).partitions)))
        p0 = state_as_of(store, mid).partitions[0]
        print("as-of one partition ms median/max: %.1f / %.1f" % ms(lambda: state_as_of(store, mid, p0.topic, p0.partition)))
        print("as-of one topic ms median/max: %.1f / %.1f" % ms(lambda: state_as_of(store, mid, p0.topic)))
        again = time.perf_counter()
        r2 = store.load([archive], workers=workers)
        print(f"reload (idempotent): {r2.events_added} added in {time.perf_counter() - again:.1f}s")
        store.close()
    events = [e for f in sorted(archive.rglob("*.avro")) for e in read_events(f)]
    for label in ("gc on", "gc frozen"):
        if label == "gc frozen":
            gc.freeze()  # the 1M decoded events are long-lived: keep the collector off them
        t = time.perf_counter()
        image = fold(events)
        dt = time.perf_counter() - t
        print(f"fold ({label}): {len(events)} events in {dt:.2f}s = {len(events) / dt:,.0f} events/s "
              f"({sum(len(t.partitions) for t in image.topics.by_id.values())} partitions in the image)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: {rss:.0f} MB (this process, includes the 1M decoded events for the fold), "
          f"{child:.0f} MB (largest decode worker)")


if __name__ == "__main__":
    main()
