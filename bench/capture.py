"""Capture benchmark (not a test): latency from a change's commit (batch append time) to its event on the
events topic (the message's CreateTime, set when the worker sends it), p50/p99 at steady state, and
throughput during a burst of partition changes (topics with many partitions, then a mass preferred
election after a broker restart).

    .venv/bin/python bench/capture.py [--burst-partitions 100000] [--steady 30]

Starts its own 3-node 4.x cluster on 127.0.0.1 and a worker subprocess; appends to bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def events(bootstrap: str, topic: str, start: int = 0):
    from confluent_kafka import Consumer, TopicPartition

    from schemas import codec
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    c.assign([TopicPartition(topic, 0, start)])
    out = []
    while len(out) < hi - start:
        for m in c.consume(10000, timeout=1):
            if not m.error():
                e = codec.decode(m.value())
                out.append((e, m.timestamp()[1]))
    c.close()
    return out, hi


def wait_quiet(bootstrap, topic, quiet=3.0, timeout=600):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        if hi != last:
            last, since = hi, time.monotonic()
        elif time.monotonic() - since > quiet:
            break
        time.sleep(0.5)
    c.close()
    return last


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst-partitions", type=int, default=100_000)
    ap.add_argument("--partitions-per-topic", type=int, default=1000)
    ap.add_argument("--steady", type=int, default=30, help="steady-state changes (one topic every 0.3 s)")
    a = ap.parse_args()
    from services.cluster import observe
    from services.cluster.testing import running_cluster
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    prefix = "bench" + uuid.uuid4().hex[:4]
    with running_cluster(work / "cluster", "4.x", heap="1g",
                         overrides={"auto.leader.rebalance.enable": "false"}) as c:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
                   CTRLAUDIT_METADATA_DIR=str(c.metadata_dir(1)), CTRLAUDIT_APP_ID=prefix,
                   CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw", CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events",
                   CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts", CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq",
                   CTRLAUDIT_DATA_DIR=str(work / "faust"))
        worker = subprocess.Popen([sys.executable, "-m", "services.capture", "worker", "-l", "warn"], env=env,
                                  cwd=ROOT, stdout=open(work / "worker.log", "wb"), stderr=subprocess.STDOUT)
        try:
            ev_topic = f"{prefix}.events"
            time.sleep(15)
            start = wait_quiet(c.bootstrap_servers, ev_topic)
            # steady state: one change at a time
            from kafka.admin import KafkaAdminClient, NewTopic
            admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
            for i in range(a.steady):
                admin.create_topics([NewTopic(f"{prefix}-s{i}", 1, 3)])
                time.sleep(0.3)
            end = wait_quiet(c.bootstrap_servers, ev_topic)
            steady, _ = events(c.bootstrap_servers, ev_topic, start)
            lat = [ts - e.event_time_ms for e, ts in steady if e.source.kind.value == "KRAFT_LOG"]
            if not lat:
                raise SystemExit(f"no events captured; see {work / 'worker.log'}")
            # burst: many partitions at once, then a mass election
            t0 = time.time()
            n = 0
            while n < a.burst_partitions:
                k = min(a.partitions_per_topic, a.burst_partitions - n)
                admin.create_topics([NewTopic(f"{prefix}-b{n}", k, 1)])
                n += k
            end2 = wait_quiet(c.bootstrap_servers, ev_topic, quiet=5, timeout=1800)
            burst, _ = events(c.bootstrap_servers, ev_topic, end)
            admin.close()
            sends = [ts for _, ts in burst]
            appends = [e.event_time_ms for e, _ in burst]
            span = (max(sends) - min(sends)) / 1000 if len(sends) > 1 else float("nan")
            commit_span = (max(appends) - min(appends)) / 1000 if len(appends) > 1 else float("nan")
            blat = [ts - e.event_time_ms for e, ts in burst]
            segs = sorted(p.name for p in c.metadata_dir(1).iterdir() if p.suffix == ".log")
            result = {
                "steady_events": len(lat), "p50_ms": statistics.median(lat) if lat else None,
                "p99_ms": pct(lat, 99) if lat else None, "burst_partitions": a.burst_partitions,
                "burst_events": len(burst), "burst_emit_seconds": round(span, 2),
                "burst_commit_seconds": round(commit_span, 2),
                "events_per_s": round(len(burst) / span) if span and span == span else None,
                "burst_p99_lag_ms": pct(blat, 99) if blat else None, "max_lag_ms": max(blat) if blat else None,
                "first_segment_still_present": segs[:1] == ["00000000000000000000.log"],
                "wall_s": round(time.time() - t0, 1),
                "load_average_1_5_15": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            }
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
    line = (f"\n### capture — {time.strftime('%Y-%m-%d %H:%M')} — {platform.node()} ({platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs), Kafka 4.x 3 nodes local\n\n"
            f"`.venv/bin/python bench/capture.py --burst-partitions {a.burst_partitions} --steady {a.steady}`\n\n"
            + "\n".join(f"- {k}: {v}" for k, v in result.items()) + "\n")
    print(line)
    res = ROOT / "bench" / "RESULTS.md"
    text = res.read_text() if res.exists() else "# Benchmark results\n"
    if "## capture" not in text:
        text += "\n## capture\n"
    res.write_text(text + line)


if __name__ == "__main__":
    main()
