"""Capture benchmark (not a test): latency from a change's commit (batch append time) to its event on the
events topic (the message's CreateTime, set when the worker sends it), p50/p99 at steady state, and
throughput during a burst of partition changes (topics with many partitions) while the worker runs, and
the catch-up rate: a second burst committed while the worker is stopped, then read as a backlog.

    .venv/bin/python bench/capture.py [--burst-partitions 100000] [--steady 30]

Starts its own 3-node 4.x cluster on 127.0.0.1 and a worker subprocess; appends to bench/RESULTS.md.

    .venv/bin/python bench/capture.py --offline [--burst-partitions 100000] [--profile]

The normalize path alone, no Kafka, one thread: a synthetic metadata log shaped like the burst (3 brokers,
topics of --partitions-per-topic partitions created one batch per topic as the controller writes them,
then a mass leader election: one PartitionChangeRecord per partition in batches of 1000), each batch as
the RawRecord the KRaft source ships, through the worker's Pipeline.handle (decode, normalize, dedupe, chain,
encode, progress header, aiokafka record batches; the batches are dropped, not sent). Prints events/s (and a cProfile top 25 with --profile); appends nothing.
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


def wait_quiet(bootstrap, topic, quiet=3.0, timeout=600, expect=None):
    """The topic's end offset once it reaches `expect` (if given) or has not moved for `quiet` seconds."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        if expect is not None and hi >= expect:
            last = hi
            break
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


def synthetic_raw(partitions: int, per_topic: int, cluster: str = "bench-cluster") -> list[bytes]:
    """Raw-topic values (encoded RawRecords) of a burst-shaped metadata log (see the module doc)."""
    from services.capture.codec import RawRecord, encode_raw
    from services.kraft import CATALOGUE, build_batch
    from services.kraft.wire import uuid_str, write_uvarint

    def value(name, version, data):
        mv = CATALOGUE[(name, version)]
        return write_uvarint(1) + write_uvarint(mv.api_key) + write_uvarint(version) + mv.encode(data)

    out, offset, t = [], 0, 1_700_000_000_000
    pos = 0

    def ship(values):
        nonlocal offset, t, pos
        b = build_batch([(None, v) for v in values], base_offset=offset, leader_epoch=1, timestamp=t)
        out.append(encode_raw(RawRecord(cluster, 1, "KRAFT_BATCH", pos, offset, offset + len(values) - 1, 1, t,
                                        t, b, file="00000000000000000000.log")))
        offset += len(values)
        pos += len(b)
        t += 5

    ship([value("RegisterBrokerRecord", 3, {
        "brokerId": b, "incarnationId": uuid_str(bytes([b]) * 16), "brokerEpoch": b,
        "endPoints": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9090 + b, "securityProtocol": 0}],
        "features": [], "rack": None, "fenced": False, "inControlledShutdown": False}) for b in (1, 2, 3)])
    topics = []
    n = 0
    while n < partitions:
        k = min(per_topic, partitions - n)
        tid = uuid_str(len(topics).to_bytes(16, "big"))
        topics.append((tid, k))
        recs = [value("TopicRecord", 0, {"name": f"burst-{len(topics)}", "topicId": tid})]
        for p in range(k):
            reps = [1 + (p + i) % 3 for i in range(3)]
            recs.append(value("PartitionRecord", 1, {
                "partitionId": p, "topicId": tid, "replicas": reps, "isr": reps, "removingReplicas": [],
                "addingReplicas": [], "leader": reps[0], "leaderEpoch": 0, "partitionEpoch": 0,
                "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3}))
        ship(recs)
        n += k
    # mass election: every partition's leader moves to its second replica
    changes = [value("PartitionChangeRecord", 0, {"partitionId": p, "topicId": tid, "leader": 1 + (p + 1) % 3})
               for tid, k in topics for p in range(k)]
    for i in range(0, len(changes), 1000):
        ship(changes[i:i + 1000])
    return out


def offline_process_only(a) -> None:
    """--src DIR: CaptureState.process alone (no producer batches) with services/ and schemas/ taken from
    DIR, e.g. an older commit: `git archive 9d4cec4 services schemas | tar -x -C /tmp/old` (A/B on one box)."""
    values = synthetic_raw(a.burst_partitions, a.partitions_per_topic)
    for m in [m for m in sys.modules if m.split(".")[0] in ("services", "schemas")]:
        del sys.modules[m]
    sys.path.insert(0, str(Path(a.src).resolve()))
    from services.capture import logic
    st, n = None, 0
    t, cpu = time.perf_counter(), time.process_time()
    for v in values:
        r = logic.parse_raw(v)
        st = st or logic.CaptureState(r.cluster_id, r.node_id)
        n += len(st.process(r))
    dt, cpu = time.perf_counter() - t, time.process_time() - cpu
    print(f"process only ({logic.__file__}): {n} events, {cpu:.2f} s CPU = {n / cpu:,.0f} events per CPU-second; "
          f"{dt:.2f} s wall = {n / dt:,.0f}/s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def offline(a) -> None:
    import cProfile
    import pstats

    if a.src:
        return offline_process_only(a)

    from services.capture.agents import Pipeline
    t = time.perf_counter()
    values = synthetic_raw(a.burst_partitions, a.partitions_per_topic)
    build_s = time.perf_counter() - t
    import asyncio

    from aiokafka.producer.message_accumulator import BatchBuilder

    from services.capture.produce import BatchSender

    class Producer:  # aiokafka's own record-batch builder; the batches are dropped instead of sent
        def create_batch(self):
            return BatchBuilder(1_000_000, 0)  # no compression (the worker's default)

        async def send_batch(self, batch, topic, *, partition):
            f = asyncio.get_running_loop().create_future()
            f.set_result(None)
            return f

    sender = BatchSender(Producer, "events")
    pipe = Pipeline()
    pipe.ready = True
    pipe.sink_events = sender.send
    prof = cProfile.Profile(time.process_time) if a.profile else None  # CPU time: the box is shared
    t, cpu = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    n = 0

    async def run():
        nonlocal n
        for i, v in enumerate(values):
            n += await pipe.handle(i, None, v)
    asyncio.run(run())
    if prof:
        prof.disable()
    dt, cpu = time.perf_counter() - t, time.process_time() - cpu
    # the box is shared: CPU time says what the code costs, wall time what this run got
    print(f"offline normalize: {len(values)} raw messages -> {n} events ({sender.batches} record batches) in {dt:.2f} s wall = {n / dt:,.0f} events/s; "
          f"{cpu:.2f} s CPU = {n / cpu:,.0f} events per CPU-second "
          f"(input built in {build_s:.1f} s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst-partitions", type=int, default=100_000)
    ap.add_argument("--partitions-per-topic", type=int, default=1000)
    ap.add_argument("--steady", type=int, default=30, help="steady-state changes (one topic every 0.3 s)")
    ap.add_argument("--catch-up-partitions", type=int, default=None,
                    help="partitions created while the worker is stopped (default: --burst-partitions; 0: skip)")
    ap.add_argument("--offline", action="store_true", help="the normalize path alone (no Kafka); see the doc")
    ap.add_argument("--profile", action="store_true", help="with --offline: cProfile top 25 by own time")
    ap.add_argument("--src", help="with --offline: CaptureState.process only, code from this tree (A/B)")
    a = ap.parse_args()
    if a.offline:
        return offline(a)
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
        def start_worker(log):
            # --without-web: another worker on this box may hold Faust's web port
            return subprocess.Popen([sys.executable, "-m", "services.capture", "worker", "-l", "warn", "--without-web"],
                                    env=env, cwd=ROOT, stdout=open(work / log, "wb"), stderr=subprocess.STDOUT)

        def create(name, partitions):
            """Topics of --partitions-per-topic partitions, RF 1; returns how many topics."""
            n = topics = 0
            while n < partitions:
                k = min(a.partitions_per_topic, partitions - n)
                admin.create_topics([NewTopic(f"{prefix}-{name}{n}", k, 1)])
                n, topics = n + k, topics + 1
            return topics

        def rates(evs):
            sends = [ts for _, ts in evs]
            appends = [e.event_time_ms for e, _ in evs]
            span = (max(sends) - min(sends)) / 1000 if len(sends) > 1 else float("nan")
            commit_span = (max(appends) - min(appends)) / 1000 if len(appends) > 1 else float("nan")
            return span, commit_span, (round(len(evs) / span) if span and span == span else None)

        worker = start_worker("worker.log")
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
            # live burst: many partitions at once (topics of --partitions-per-topic partitions); its rate is
            # bounded by how fast the controller commits them, so the lag says how far capture falls behind
            t0 = time.time()
            topics = create("b", a.burst_partitions)
            end2 = wait_quiet(c.bootstrap_servers, ev_topic, quiet=60, timeout=1800,
                              expect=end + a.burst_partitions + topics)
            burst, _ = events(c.bootstrap_servers, ev_topic, end)
            span, commit_span, eps = rates(burst)
            blat = [ts - e.event_time_ms for e, ts in burst]
            # catch-up: the worker is stopped while a second burst is committed, then started: it reads the
            # backlog from the metadata log as fast as it can (source -> raw topic -> normalize -> events
            # topic, every hop through Kafka), which is the capture's sustained rate, not the controller's
            catch = {}
            n_catch = a.burst_partitions if a.catch_up_partitions is None else a.catch_up_partitions
            if n_catch:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(60)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait(10)
                t1 = time.time()
                topics = create("c", n_catch)
                committed_s = time.time() - t1
                started = time.time()
                worker = start_worker("worker2.log")
                end3 = wait_quiet(c.bootstrap_servers, ev_topic, quiet=300, timeout=1800,  # a restart first replays the raw topic
                                  expect=end2 + n_catch + topics)
                backlog, _ = events(c.bootstrap_servers, ev_topic, end2)
                cspan, _, ceps = rates(backlog)
                catch = {
                    "catch_up_partitions": n_catch, "catch_up_events": len(backlog),
                    "catch_up_commit_seconds_worker_stopped": round(committed_s, 1),
                    "catch_up_emit_seconds": round(cspan, 2), "catch_up_events_per_s": ceps,
                    "catch_up_start_to_last_event_s": round(max(ts for _, ts in backlog) / 1000 - started, 1)
                    if backlog else None,
                }
            admin.close()
            segs = sorted(p.name for p in c.metadata_dir(1).iterdir() if p.suffix == ".log")
            result = {
                "steady_events": len(lat), "p50_ms": statistics.median(lat) if lat else None,
                "p99_ms": pct(lat, 99) if lat else None, "burst_partitions": a.burst_partitions,
                "burst_events": len(burst), "burst_emit_seconds": round(span, 2),
                "burst_commit_seconds": round(commit_span, 2), "events_per_s": eps,
                "burst_p99_lag_ms": pct(blat, 99) if blat else None, "max_lag_ms": max(blat) if blat else None,
                **catch,
                "metadata_segments": len(segs),
                "first_segment_still_present": segs[:1] == ["00000000000000000000.log"],
                "wall_s": round(time.time() - t0, 1),
                "load_average_1_5_15": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            }
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
    line = (f"\n### capture — {time.strftime('%Y-%m-%d %H:%M')} — {platform.node()} ({platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs), Kafka 4.x 3 nodes local\n\n"
            f"`.venv/bin/python bench/capture.py --burst-partitions {a.burst_partitions} --steady {a.steady}"
            + (f" --catch-up-partitions {a.catch_up_partitions}" if a.catch_up_partitions is not None else "")
            + "`\n\n"
            + "\n".join(f"- {k}: {v}" for k, v in result.items()) + "\n")
    print(line)
    res = ROOT / "bench" / "RESULTS.md"
    text = res.read_text() if res.exists() else "# Benchmark results\n"
    if "## capture" not in text:
        text += "\n## capture\n"
    res.write_text(text + line)


if __name__ == "__main__":
    main()
