"""Capture benchmark (not a test): latency from a change's commit (batch append time) to its event on the
events topic (the message's CreateTime, set when the worker sends it), p50/p99 at steady state, and
throughput during a burst of partition changes (topics with many partitions) while the worker runs, and
the catch-up rate: a second burst committed while the worker is stopped, then read as a backlog.

    .venv/bin/python bench/capture.py [--burst-partitions 100000] [--steady 30] [--metadata-retention-bytes N]

Starts its own 3-node 4.x cluster on 127.0.0.1 and the capture workers (normalize, and watch at a lower
priority, as `ctrlaudit capture` runs them; --inline-watch: one worker); appends to bench/RESULTS.md.
With --metadata-retention-bytes the cluster rolls small metadata segments, snapshots every 5 s and
deletes old segments during the burst; the CaptureGap count says whether capture kept ahead.

    .venv/bin/python bench/capture.py --backlog-dir /work/bench-data/kraft-1m

Sustained capture rate on an existing metadata log (bench/kraft_workload.py's 1M-record log): the
workers tail it through a fresh cluster that carries only the capture topics; CPU per process.

    .venv/bin/python bench/capture.py --offline [--burst-partitions 100000] [--profile]

The normalize path alone, no Kafka, one thread: a synthetic metadata log shaped like the burst (3 brokers,
topics of --partitions-per-topic partitions created one batch per topic as the controller writes them,
then a mass leader election: one PartitionChangeRecord per partition in batches of 1000), each batch as
the RawRecord the KRaft source ships, through the worker's Pipeline.handle (decode, normalize, dedupe, chain,
encode, progress header, aiokafka record batches; the batches are dropped, not sent). Prints events/s (and a cProfile top 25 with --profile); appends nothing.

--sign (any mode): the worker signs with a key made for the run, as `ctrlaudit capture --signing-key` does (the Merkle
tree of every delivered event, a signed checkpoint every --sign-every-events events or 60 s: services/capture/
signing.py); offline, every record batch counts as acknowledged at once and the checkpoints are made and dropped.

    .venv/bin/python bench/capture.py --worker-start [--tree DIR ...] [--rounds 7]

The normalize worker's start alone, no Kafka: `python -m services.capture worker` as the catch-up above starts
it, with the topics' declaration and Faust's main replaced, so the process imports what the worker imports
(Faust's autodiscover included) and stops before it connects; CPU (user + system) per start, each tree's code
in turn (--tree: this tree's by default; e.g. another commit's `git archive`, native decoders built), the
trees alternated --rounds times. The catch-up's CPU per event counts one such start (a 20,000-partition catch-up
is about 2 s of worker CPU), so a change here shows there. Appends nothing.
"""
from __future__ import annotations

import argparse
import gc
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


def cpu_s(pid: int) -> float:
    """utime + stime of a process so far (seconds), 0 if it is gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def box_idle_s() -> float:
    """Idle CPU-seconds of the whole machine so far (all cores; /proc/stat idle + iowait)."""
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(f[4]) + int(f[5])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def synthetic_raw(partitions: int, per_topic: int, cluster: str = "bench-cluster") -> list[bytes]:
    """Raw-topic values (encoded RawRecords) of a burst-shaped metadata log (see the module doc)."""
    from services.capture.serializers import RawRecord, encode_raw
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


WORKER = [sys.executable, "-m", "services.capture", "worker", "-l", "warn", "--without-web"]


def signing_env(a, work: Path) -> dict:
    """With --sign: a key made for the run, for the normalize worker (CTRLAUDIT_SIGNING_KEY)."""
    if not a.sign:
        return {}
    from schemas.archive.note import generate_key
    key = work / "signing.key"
    if not key.exists():  # one key for the run: a restarted worker resumes from its checkpoints
        key.write_text(generate_key("bench.example/capture")[0] + "\n")
        key.chmod(0o600)
    return {"CTRLAUDIT_SIGNING_KEY": str(key), "CTRLAUDIT_SIGN_EVERY_EVENTS": str(a.sign_every_events)}


def start_worker(a, env: dict, log: Path) -> subprocess.Popen:
    """The normalize worker (both agents with --inline-watch). --without-web: like `ctrlaudit capture`
    (two workers cannot both bind Faust's web port)."""
    roles = "normalize,watch" if a.inline_watch else "normalize"
    return subprocess.Popen(WORKER, env=dict(env, CTRLAUDIT_ROLES=roles, **signing_env(a, log.parent)), cwd=ROOT,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)


def start_watcher(a, env: dict, log: Path) -> subprocess.Popen | None:
    """The watch worker at a lower priority, as `ctrlaudit capture` runs it (None with --inline-watch)."""
    if a.inline_watch:
        return None
    return subprocess.Popen(WORKER, env=dict(env, CTRLAUDIT_ROLES="watch"), cwd=ROOT, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(10))


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


# --worker-start: the worker's command line up to Faust's start, Kafka left out (see the module doc)
WORKER_START = """
import runpy, sys
import services.capture.settings as settings
settings.ensure_topics = lambda *a, **k: None
import services.capture.app as app
def started():
    import services.capture.agents
    raise SystemExit(0)
app.main = started
sys.argv = ["services.capture", "worker", "-l", "warn", "--without-web"]
runpy.run_module("services.capture", run_name="__main__")
"""


def worker_start(a) -> None:
    import resource
    trees = [str(Path(t).resolve()) for t in (a.tree or [ROOT])]
    env = dict(os.environ, CTRLAUDIT_BOOTSTRAP_SERVERS="127.0.0.1:1", CTRLAUDIT_ROLES="normalize")
    cpu: dict[str, list[float]] = {t: [] for t in trees}
    load0 = os.getloadavg()
    for _ in range(a.rounds):
        for t in trees:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", WORKER_START], cwd=t, env=dict(env, PYTHONPATH=t), check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[t].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for t in trees:
        print(f"{t}: worker start, CPU s: {' · '.join(f'{x:.3f}' for x in cpu[t])}; median "
              f"{statistics.median(cpu[t]):.3f}, best {min(cpu[t]):.3f}")
    print(f"load average {' '.join(f'{x:.2f}' for x in load0)} -> {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


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

    if not a.gc_default:
        from services.capture.settings import GC_THRESHOLDS
        gc.set_threshold(*GC_THRESHOLDS)  # what the worker's main() sets
    signer = published = None
    if a.sign:
        from schemas.archive.note import Signer, generate_key
        from services.capture.signing import CaptureSigner, Publisher
        signer = CaptureSigner([Signer.parse(generate_key("bench.example/capture")[0])], a.sign_every_events)
        published = []

        async def publish(key, note, headers):  # the checkpoints topic: made, signed and dropped
            published.append(len(note))

        # the CPU time inside signing's own calls (per raw message and per record batch, so the timing costs
        # nothing that matters): the share of the path that signing is, without the run-to-run noise of an A/B
        signing_cpu = [0.0]

        def timed(fn):
            def call(*args):
                t0 = time.process_time()
                try:
                    return fn(*args)
                finally:
                    signing_cpu[0] += time.process_time() - t0
            return call
        signer.emitted, signer.delivered = timed(signer.emitted), timed(signer.delivered)
    sender = BatchSender(Producer, "events", on_delivered=signer.delivered if signer else None)
    pipe = Pipeline(signer=signer, publisher=Publisher(signer, publish) if signer else None)
    pipe.ready = pipe.signing_ready = True
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
        await sender.flush()
        if pipe.publisher is not None:  # what the worker's signing timer does once a second
            await asyncio.sleep(0)
            pipe.publisher.kick()
            await asyncio.sleep(0)
    asyncio.run(run())
    if prof:
        prof.disable()
    dt, cpu = time.perf_counter() - t, time.process_time() - cpu
    if signer is not None:
        (clog,) = signer.logs.values()
        assert clog.size == n, (clog.size, n)  # every event delivered is in the tree
    # the box is shared: CPU time says what the code costs, wall time what this run got
    print(f"offline normalize{f' signed ({len(published)} checkpoints)' if signer else ''}: {len(values)} raw messages -> {n} events ({sender.batches} record batches) in {dt:.2f} s wall = {n / dt:,.0f} events/s; "
          f"{cpu:.2f} s CPU = {n / cpu:,.0f} events per CPU-second "
          f"(input built in {build_s:.1f} s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if signer is not None:
        print(f"signing's own calls (the tree's pending list, leaf and node hashing): {signing_cpu[0]:.3f} s CPU = "
              f"{signing_cpu[0] / n * 1e6:.3f} us per event, {signing_cpu[0] / cpu * 100:.1f} % of the run's CPU")
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def backlog_run(a) -> None:
    """--backlog-dir DIR: the capture's sustained rate on a real metadata log that already exists (e.g. the
    1M-record log of bench/kraft_workload.py). A fresh 3-node cluster carries only the capture topics, so
    its brokers are not also maintaining the burst's partitions (in the burst runs above they took ~3.4x
    the worker's CPU on the same 2 cores); the worker tails DIR with the commit gate off (the log is
    complete and committed) through the raw topic, normalize and the events topic, like any backlog."""
    from confluent_kafka import Consumer, TopicPartition

    from devtools.cluster.testing import running_cluster
    from services.kraft.offline import cluster_id_of
    src = Path(a.backlog_dir).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    prefix = "bench" + uuid.uuid4().hex[:4]
    ev_topic = f"{prefix}.events"
    with running_cluster(work / "cluster", "4.x", heap="1g") as c:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
                   CTRLAUDIT_METADATA_DIR=str(src), CTRLAUDIT_COMMIT_GATE="none",
                   CTRLAUDIT_CLUSTER_ID=cluster_id_of([src]) or f"backlog-{src.name}", CTRLAUDIT_APP_ID=prefix,
                   CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw", CTRLAUDIT_EVENTS_TOPIC=ev_topic,
                   CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts", CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq",
                   CTRLAUDIT_DATA_DIR=str(work / "faust"))
        brokers0, idle0, started = sum(cpu_s(p.pid) for p in c.procs.values()), box_idle_s(), time.time()
        worker = start_worker(a, env, work / "worker.log")
        watcher = start_watcher(a, env, work / "watch.log")
        try:
            cons = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "bench",
                             "enable.auto.commit": False})
            tp = TopicPartition(ev_topic, 0)
            # CPU figures are taken when the topic last grew, so the quiet wait at the end is not in them
            hi, seen = 0, (time.monotonic(), 0.0, 0.0, 0.0, time.time())
            while time.monotonic() - seen[0] < a.quiet and time.time() - started < 3600:
                try:
                    now = cons.get_watermark_offsets(tp, timeout=10)[1]
                except Exception:  # the topic does not exist until the worker has started
                    now = 0
                if now != hi:
                    hi = now
                    seen = (time.monotonic(), cpu_s(worker.pid), sum(cpu_s(p.pid) for p in c.procs.values()),
                            box_idle_s(), time.time())
                time.sleep(0.5)
            _, worker_cpu, brokers_cpu, idle, t_end = seen
            # the watch worker lags during the backlog (lower priority): its total when the alerts stop
            alerts, since = -1, time.monotonic()
            while watcher is not None and time.monotonic() - since < 30:
                n = cons.get_watermark_offsets(TopicPartition(f"{prefix}.alerts", 0), timeout=10)[1]
                if n != alerts:
                    alerts, since, watch_cpu, watch_end = n, time.monotonic(), cpu_s(watcher.pid), time.time()
                time.sleep(1)

            def stamp(offset):
                cons.assign([TopicPartition(ev_topic, 0, offset)])
                while True:
                    m = cons.poll(10)
                    if m is not None and not m.error():
                        return m.timestamp()[1]
            first, last = stamp(0), stamp(hi - 1)
            cons.close()
        finally:
            for w in (worker, watcher):
                if w is not None:
                    w.send_signal(signal.SIGKILL)
                    w.wait(10)
    span = (last - first) / 1000
    result = {
        "backlog_dir": str(src), "events": hi, "emit_seconds": round(span, 2),
        "events_per_s": round(hi / span) if span > 0 else None,
        "start_to_last_event_s": round(last / 1000 - started, 1),
        "worker_cpu_s": round(worker_cpu, 1), "events_per_worker_cpu_s": round(hi / worker_cpu) if worker_cpu else None,
        "watch": "inline (one worker)" if a.inline_watch else
        f"own worker (nice 10): {alerts} alerts, done {watch_end - t_end:.0f} s after the last event, "
        f"{watch_cpu:.1f} CPU-s",
        "brokers_cpu_s": round(brokers_cpu - brokers0, 1),
        "box_idle_cpu_s": f"{idle - idle0:.1f} of {os.cpu_count() * (t_end - started):.1f}",
        "load_average_1_5_15": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    record(f"`.venv/bin/python bench/capture.py --backlog-dir {a.backlog_dir}"
           + (" --inline-watch" if a.inline_watch else "") + (" --sign" if a.sign else "") + "`", result, "backlog")


def record(command: str, result: dict, what: str) -> None:
    line = (f"\n### capture ({what}) — {time.strftime('%Y-%m-%d %H:%M')} — {platform.node()} "
            f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs), Kafka 4.x 3 nodes local\n\n"
            f"{command}\n\n" + "\n".join(f"- {k}: {v}" for k, v in result.items()) + "\n")
    print(line)
    res = ROOT / "bench" / "RESULTS.md"
    text = res.read_text() if res.exists() else "# Benchmark results\n"
    if "## capture" not in text:
        text += "\n## capture\n"
    res.write_text(text + line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst-partitions", type=int, default=100_000)
    ap.add_argument("--partitions-per-topic", type=int, default=1000)
    ap.add_argument("--steady", type=int, default=30, help="steady-state changes (one topic every 0.3 s)")
    ap.add_argument("--catch-up-partitions", type=int, default=None,
                    help="partitions created while the worker is stopped (default: --burst-partitions; 0: skip)")
    ap.add_argument("--metadata-retention-bytes", type=int, default=0,
                    help="metadata.max.retention.bytes for the bench cluster (small: retention runs during the burst)")
    ap.add_argument("--offline", action="store_true", help="the normalize path alone (no Kafka); see the doc")
    ap.add_argument("--profile", action="store_true", help="with --offline: cProfile top 25 by own time")
    ap.add_argument("--gc-default", action="store_true",
                    help="with --offline: Python's default GC thresholds, not the worker's (A/B)")
    ap.add_argument("--worker-start", action="store_true", help="the normalize worker's start alone; see the doc")
    ap.add_argument("--tree", action="append", help="with --worker-start: this tree's code (repeat: alternated)")
    ap.add_argument("--rounds", type=int, default=7, help="with --worker-start: starts of each tree")
    ap.add_argument("--src", help="with --offline: CaptureState.process only, code from this tree (A/B)")
    ap.add_argument("--backlog-dir", help="catch up on this existing metadata log instead (see backlog_run())")
    ap.add_argument("--inline-watch", action="store_true", help="one worker runs both agents (normalize, watch)")
    ap.add_argument("--quiet", type=float, default=60, help="with --backlog-dir: done after N s without events")
    ap.add_argument("--sign", action="store_true", help="the worker signs (a key made for the run); see the doc")
    ap.add_argument("--sign-every-events", type=int, default=10_000, help="with --sign: a checkpoint every N events")
    a = ap.parse_args()
    if a.backlog_dir:
        return backlog_run(a)
    if a.worker_start:
        return worker_start(a)
    if a.offline:
        return offline(a)
    from devtools.cluster.testing import running_cluster
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    prefix = "bench" + uuid.uuid4().hex[:4]
    overrides = {"auto.leader.rebalance.enable": "false"}
    segment = None
    if a.metadata_retention_bytes:
        # small segments, frequent snapshots and a small retention: the controller deletes metadata
        # segments during the burst, so capture must read them before they go (or record a CaptureGap)
        segment = max(a.metadata_retention_bytes // 4, 1 << 20)
        overrides.update({"metadata.max.retention.bytes": str(a.metadata_retention_bytes),
                          "metadata.log.max.record.bytes.between.snapshots": str(segment),
                          # by bytes alone 4.3.1 wrote no snapshot during a 100k burst: also every 5 s
                          "metadata.log.max.snapshot.interval.ms": "5000"})
    with running_cluster(work / "cluster", "4.x", heap="1g", metadata_segment_bytes=segment,
                         overrides=overrides) as c:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
                   CTRLAUDIT_METADATA_DIR=str(c.metadata_dir(1)), CTRLAUDIT_APP_ID=prefix,
                   CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw", CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events",
                   CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts", CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq",
                   CTRLAUDIT_DATA_DIR=str(work / "faust"))

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

        # the watch worker is started once; the catch-up below restarts the normalize worker only
        worker = start_worker(a, env, work / "worker.log")
        watcher = start_watcher(a, env, work / "watch.log")
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
                brokers0, idle0 = sum(cpu_s(p.pid) for p in c.procs.values()), box_idle_s()
                worker = start_worker(a, env, work / "worker2.log")
                # a restart first replays the raw topic; with retention a gap changes the count: stop at 60 s quiet
                wait_quiet(c.bootstrap_servers, ev_topic, quiet=60 if a.metadata_retention_bytes else 300, timeout=1800,
                                  expect=end2 + n_catch + topics)
                # CPU while the worker caught up (start to quiet, incl. its start and the raw-topic replay):
                # what the worker itself costs per event, and what the three brokers on the same cores took
                worker_cpu, brokers_cpu = cpu_s(worker.pid), sum(cpu_s(p.pid) for p in c.procs.values()) - brokers0
                idle, window = box_idle_s() - idle0, time.time() - started
                backlog, _ = events(c.bootstrap_servers, ev_topic, end2)
                cspan, _, ceps = rates(backlog)
                catch = {
                    "catch_up_partitions": n_catch, "catch_up_events": len(backlog),
                    "catch_up_commit_seconds_worker_stopped": round(committed_s, 1),
                    "catch_up_emit_seconds": round(cspan, 2), "catch_up_events_per_s": ceps,
                    "catch_up_start_to_last_event_s": round(max(ts for _, ts in backlog) / 1000 - started, 1)
                    if backlog else None,
                    "catch_up_worker_cpu_s": round(worker_cpu, 1),
                    "catch_up_events_per_worker_cpu_s": round(len(backlog) / worker_cpu) if worker_cpu else None,
                    "catch_up_brokers_cpu_s": round(brokers_cpu, 1),
                    "catch_up_box_idle_cpu_s": f"{idle:.1f} of {os.cpu_count() * window:.1f}",
                }
            admin.close()
            segs = sorted(p.name for p in c.metadata_dir(1).iterdir() if p.suffix == ".log")
            snapshots = sorted(p.name for p in c.metadata_dir(1).iterdir() if p.suffix == ".checkpoint")
            # a CaptureGap is a stretch retention deleted before capture read it (recorded, never hidden)
            gaps_burst = [e.payload for e, _ in burst if type(e.payload).__name__ == "CaptureGap"]
            gaps_catch = [e.payload for e, _ in (backlog if n_catch else []) if type(e.payload).__name__ == "CaptureGap"]
            result = {
                "steady_events": len(lat), "p50_ms": statistics.median(lat) if lat else None,
                "p99_ms": pct(lat, 99) if lat else None, "burst_partitions": a.burst_partitions,
                "burst_events": len(burst), "burst_emit_seconds": round(span, 2),
                "burst_commit_seconds": round(commit_span, 2), "events_per_s": eps,
                "burst_p99_lag_ms": pct(blat, 99) if blat else None, "max_lag_ms": max(blat) if blat else None,
                **catch,
                "metadata_retention_bytes": a.metadata_retention_bytes,
                "metadata_segments_left": len(segs), "metadata_snapshots": len(snapshots),
                "first_segment_still_present": segs[:1] == ["00000000000000000000.log"],
                "oldest_segment_left": segs[0] if segs else None,
                "capture_gaps_burst": len(gaps_burst), "capture_gaps_catch_up": len(gaps_catch),
                "gap_offsets": [f"{g.from_offset}-{g.to_offset}" for g in gaps_burst + gaps_catch][:5],
                "wall_s": round(time.time() - t0, 1),
                "load_average_1_5_15": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            }
        finally:
            for w in (worker, watcher):
                if w is not None:
                    w.send_signal(signal.SIGKILL)
                    w.wait(10)
    record(f"`.venv/bin/python bench/capture.py --burst-partitions {a.burst_partitions} --steady {a.steady}"
           + (f" --catch-up-partitions {a.catch_up_partitions}" if a.catch_up_partitions is not None else "")
           + (f" --metadata-retention-bytes {a.metadata_retention_bytes}" if a.metadata_retention_bytes else "")
           + (" --inline-watch" if a.inline_watch else "") + (" --sign" if a.sign else "") + "`", result, "burst")


if __name__ == "__main__":
    main()
