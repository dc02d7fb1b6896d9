"""Drive a real 3-node KRaft cluster until its metadata log holds >= N real records, then keep the
segments for bench/decode.py.

    .venv/bin/python bench/kraft_workload.py [--out /work/bench-data/kraft-1m] [--records 1000000]
                                             [--topics 7] [--partitions 2000] [--version 4.x]
    .venv/bin/python bench/decode.py --dir /work/bench-data/kraft-1m --rounds 2

What it does (Kafka 4.x dev cluster from devtools/cluster, ports from find_free_base_port, data in
OUT.cluster/, metadata segments of 16 MiB, no metadata retention, no auto leader rebalancing):

1. creates ``--topics`` topics ``w-<t>`` of ``--partitions`` partitions, RF 3 (one
   PartitionRecord per partition);
2. then rounds, each over every partition of those topics:
   a. a replica-order rotation with ReassignPartitionsCommand (same replica set, new order: one
      PartitionChangeRecord per partition, setting Replicas);
   b. a PREFERRED leader election with the AdminClient (the new first replica becomes leader:
      one PartitionChangeRecord per partition);
   c. every third round one disruption, in turn: kill -9 of a broker (the active controller
      every other time: a KRaft election too) and restart; a controlled shutdown (SIGTERM) of a
      broker and restart; creating a topic of 1000 partitions and deleting it. A kill or a
      shutdown costs ~2 records per partition (ISR shrink and leader moves when the broker is
      fenced, ISR expand when it catches up again); the script waits until every ISR is full.
3. after every round it counts the metadata log's records with our decoder (NoOpRecords apart:
   the controller writes one every metadata.max.idle.interval.ms, left at its 500 ms default);
   it stops when the real (non-NoOp, non-control) records reach ``--records``.
4. kills the cluster, copies the ``*.log`` segments of the node with the longest log to OUT
   (cutting a partial last batch), writes OUT/MANIFEST.json (records by type, parameters) and
   removes OUT.cluster unless ``--keep-cluster``.

Requests are cut into chunks of <= 5000 partitions: the controller refuses a user operation that
would write more than 10000 records at once (QuorumController's MAX_RECORDS_PER_USER_OP).

Resumable: progress is kept in OUT.cluster/state.json. Running the command again after an
interruption restarts the same cluster (its data is kept) and continues with the next round.
Partition count: with RF 3 on 3 brokers every broker holds every partition, one open segment file
each, and the hard limit on open files here is 20000, so 7 x 2000 = 14000 partitions leaves room.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from services.kraft import LogReader, metadata_files  # noqa: E402
from services.kraft.files import segment_base_offset  # noqa: E402
from devtools.cluster.testing import cut_partial_tails  # noqa: E402

CHUNK = 5000
SEGMENT_BYTES = 16 * 2**20
CHURN_PARTITIONS = 1000


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


# --- counting ------------------------------------------------------------------------------------

_closed: dict[tuple[str, int], Counter] = {}


def count_types(directory: Path) -> Counter:
    """Records by type over every segment of ``directory``. Closed segments are counted once."""
    total: Counter = Counter()
    segs = [p for p in metadata_files(directory) if segment_base_offset(p) is not None]
    for i, p in enumerate(segs):
        key = (p.name, p.stat().st_size)
        c = _closed.get(key)
        if c is None:
            c = Counter()
            for _, recs in LogReader(p, live=True).batches():
                for r in recs:
                    c[("control:" + r.type) if r.is_control else r.type] += 1
            if i < len(segs) - 1:  # not the active segment: it will not change any more
                _closed[key] = c
        total.update(c)
    return total


def real(c: Counter) -> int:
    """Metadata records that are not NoOp padding (KRaft control records not counted either)."""
    return sum(n for t, n in c.items() if t != "NO_OP_RECORD" and not t.startswith("control:"))


# --- cluster actions -----------------------------------------------------------------------------

class Workload:
    def __init__(self, c, topics: int, partitions: int, work: Path):
        from confluent_kafka.admin import AdminClient
        self.c = c
        self.topics = [f"w-{t}" for t in range(topics)]
        self.partitions = partitions
        self.work = work
        self.admin = AdminClient({"bootstrap.servers": c.bootstrap_servers,
                                  "socket.timeout.ms": 300000})
        self.admin_props = work / "admin.properties"  # for the Java tools
        self.admin_props.write_text("default.api.timeout.ms=600000\nrequest.timeout.ms=300000\n")

    @staticmethod
    def _retry(fn, attempts: int = 3):
        for attempt in range(attempts):
            try:
                return fn()
            except Exception as e:  # timeouts while the brokers are loaded: wait and retry
                if attempt == attempts - 1:
                    raise
                log(f"retrying after {type(e).__name__}: {e}")
                time.sleep(10)

    def all_partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in self.topics for p in range(self.partitions)]

    def create(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic
        fut = self.admin.create_topics([NewTopic(name, partitions, 3)], request_timeout=300,
                                       operation_timeout=300)[name]
        try:
            fut.result()
        except Exception as e:  # resumed run: the topic is already there
            if "TOPIC_ALREADY_EXISTS" not in str(e) and "already exists" not in str(e):
                raise

    def delete(self, name: str) -> None:
        self.admin.delete_topics([name], request_timeout=300, operation_timeout=300)[name].result()

    def rotate(self, rnd: int) -> None:
        """Same replica set, order rotated by (partition + round): one Replicas change each."""
        parts = self.all_partitions()
        for i in range(0, len(parts), CHUNK):
            plan = {"version": 1, "partitions": [
                {"topic": t, "partition": p, "replicas": _rot([1, 2, 3], p + rnd + 1)}
                for t, p in parts[i:i + CHUNK]]}
            f = self.work / "rotate.json"
            f.write_text(json.dumps(plan))
            for attempt in range(3):  # a busy controller can time the tool's admin calls out
                res = self.c.tool("reassign", "--bootstrap-server", self.c.bootstrap_servers,
                                  "--reassignment-json-file", str(f), "--execute", "--timeout", "300000",
                                  "--command-config", str(self.admin_props), check=False, timeout=900)
                if res.returncode == 0:
                    break
                err = [l for l in (res.stderr or res.stdout).splitlines() if "Error" in l or "Exception" in l]
                log(f"reassign chunk {i} attempt {attempt}: rc {res.returncode}: {err[:1]}")
                time.sleep(10)

    def elect(self) -> Counter:
        from confluent_kafka import ElectionType, TopicPartition
        parts = self.all_partitions()
        outcome: Counter = Counter()
        for i in range(0, len(parts), CHUNK):
            tps = [TopicPartition(t, p) for t, p in parts[i:i + CHUNK]]
            # (confluent-kafka 2.16 rejects keyword timeouts here; socket.timeout.ms applies)
            res = self._retry(lambda tps=tps: self.admin.elect_leaders(ElectionType.PREFERRED, tps).result())
            for err in res.values():  # KafkaError or None
                outcome["elected" if err is None else _err_name(err)] += 1
        return outcome

    def isr_full(self) -> bool:
        md = self._retry(lambda: self.admin.list_topics(timeout=120))
        for name in self.topics:
            t = md.topics.get(name)
            if t is None or any(len(p.isrs) < 3 for p in t.partitions.values()):
                return False
        return True

    def wait_isr_full(self, timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        while not self.isr_full():
            if time.monotonic() > deadline:
                raise RuntimeError("ISRs not full again after %ss" % timeout)
            time.sleep(5)

    def bounce(self, victim: int, kill: bool) -> None:
        c = self.c
        if kill:
            c.kill_node(victim)
            time.sleep(c.settings.broker_session_timeout_ms / 1000 + 5)  # fenced by timeout
        else:
            c.stop_node(victim, timeout=300)  # controlled shutdown
        c.start_node(victim)
        _ready(c, victim)
        self.wait_isr_full()


def _ready(c, node: int, attempts: int = 3) -> None:
    """Wait until ``node`` has started; start it again if it gave up while the box was busy."""
    from devtools.cluster.manager import ClusterError
    for attempt in range(attempts):
        try:
            c.wait_ready([node], timeout=900)
            return
        except ClusterError as e:
            if attempt == attempts - 1:
                raise
            log(f"node {node} did not start ({str(e)[:120]}); starting it again")
            c.start_node(node)


def _err_name(e) -> str:
    """KafkaError, or a KafkaException wrapping one (the client returns either)."""
    if callable(getattr(e, "name", None)):
        return e.name()
    inner = e.args[0] if getattr(e, "args", None) else None
    return inner.name() if callable(getattr(inner, "name", None)) else str(e)


def _rot(xs: list[int], k: int) -> list[int]:
    k %= len(xs)
    return xs[k:] + xs[:k]


# --- main ----------------------------------------------------------------------------------------

def run(out: Path, records: int, topics: int, partitions: int, version: str, keep_cluster: bool) -> dict:
    from devtools.cluster.manager import KafkaCluster, find_free_base_port
    work = out.parent / (out.name + ".cluster")
    work.mkdir(parents=True, exist_ok=True)
    state_f = work / "state.json"
    state = json.loads(state_f.read_text()) if state_f.exists() else {
        "round": 0, "created": False, "base_port": find_free_base_port(), "disruptions": 0}
    overrides = {
        # keep every segment: the point is a long log
        "metadata.max.retention.bytes": str(50 * 2**30), "metadata.max.retention.ms": str(30 * 86400_000),
        "auto.leader.rebalance.enable": "false",
        # a loaded 2-core box must not fence brokers or shrink ISRs by accident
        "broker.session.timeout.ms": "9000", "replica.lag.time.max.ms": "30000",
        # a broker loading 14000 partitions on a busy box needs more than the default 60 s to
        # catch up with the metadata log, or it exits during startup
        "initial.broker.registration.timeout.ms": "900000",
        "num.network.threads": "2", "num.io.threads": "2", "num.recovery.threads.per.data.dir": "2",
        "log.segment.bytes": str(1 << 20), "log.index.size.max.bytes": "65536",
    }
    c = KafkaCluster(work, version, base_port=state["base_port"], heap="1536m",
                     metadata_segment_bytes=SEGMENT_BYTES, overrides=overrides)
    c.settings.broker_session_timeout_ms = 9000
    c.down()  # JVMs of an interrupted earlier run (pid-file checked)
    started = time.monotonic()
    try:
        c.format()
        for i in c.nodes:
            c.start_node(i)
        for i in c.nodes:
            _ready(c, i)
        w = Workload(c, topics, partitions, work)
        if not state["created"]:
            for t in w.topics:
                w.create(t, partitions)
                log(f"created {t} ({partitions} partitions)")
            w.wait_isr_full()
            state["created"] = True
            state_f.write_text(json.dumps(state))
        while True:
            ctl = c.active_controller()
            counts = count_types(c.metadata_dir(ctl))
            n = real(counts)
            log(f"round {state['round']}: {n:,} real records, {counts['NO_OP_RECORD']:,} NoOps "
                f"({time.monotonic() - started:.0f} s)")
            if n >= records:
                break
            rnd = state["round"]
            try:
                step(c, w, state, rnd)
            except Exception as e:  # keep the cluster (restarting 14000 partitions costs minutes)
                log(f"round {rnd} failed: {type(e).__name__}: {str(e)[:300]}; going on")
                time.sleep(10)
            state["round"] = rnd + 1
            state_f.write_text(json.dumps(state))
        time.sleep(2)
    finally:
        c.down()
    _copy_out(c, out)
    _closed.clear()
    counts = count_types(out)
    manifest = {"records_total": sum(counts.values()), "records_real": real(counts),
                "by_type": dict(counts.most_common()), "topics": topics, "partitions_per_topic": partitions,
                "rounds": state["round"], "disruptions": state["disruptions"], "kafka": c.version,
                "seconds_this_run": round(time.monotonic() - started)}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if not keep_cluster:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def step(c, w: Workload, state: dict, rnd: int) -> None:
    """One round: rotate, elect, and every third round a disruption."""
    t0 = time.monotonic()
    w.rotate(rnd)
    t1 = time.monotonic()
    outcome = w.elect()
    log(f"  rotate {t1 - t0:.0f} s, elect {time.monotonic() - t1:.0f} s: {dict(outcome)}")
    if rnd % 3 == 2:
        d = state["disruptions"]
        kind = d % 3
        t0 = time.monotonic()
        if kind == 2:
            name = f"churn-{d}"
            w.create(name, CHURN_PARTITIONS)
            time.sleep(10)
            w.delete(name)
            log(f"  created and deleted {name} ({time.monotonic() - t0:.0f} s)")
        else:
            ctl = c.active_controller()
            victim = ctl if (kind == 0 and (d // 3) % 2 == 1) else next(
                i for i in sorted(c.nodes, reverse=True) if i != ctl)
            w.bounce(victim, kill=kind == 0)
            log(f"  {'kill -9' if kind == 0 else 'controlled shutdown'} of node {victim}"
                f"{' (active controller)' if victim == ctl else ''} and restart "
                f"({time.monotonic() - t0:.0f} s)")
        state["disruptions"] = d + 1


def _copy_out(c, out: Path) -> None:
    """All nodes hold the same log; copy the longest one's segments, cut a partial last batch."""
    src = max((c.metadata_dir(i) for i in c.nodes),
              key=lambda d: sum(p.stat().st_size for p in d.glob("*.log")))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for p in metadata_files(src):
        if segment_base_offset(p) is not None:
            shutil.copyfile(p, out / p.name)
    cut_partial_tails(out)  # a kill -9 can leave half a batch at the end


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/work/bench-data/kraft-1m"))
    ap.add_argument("--records", type=int, default=1_000_000, help="real records (NoOps not counted)")
    ap.add_argument("--topics", type=int, default=7)
    ap.add_argument("--partitions", type=int, default=2000, help="per topic")
    ap.add_argument("--version", default="4.x")
    ap.add_argument("--keep-cluster", action="store_true")
    a = ap.parse_args(argv)
    m = run(a.out, a.records, a.topics, a.partitions, a.version, a.keep_cluster)
    print(json.dumps(m, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
