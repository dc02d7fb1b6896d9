"""On real clusters: committed records lost by an unclean election, as the offset sampler sees it.

Scenario (topic ``dl-loss``, replicas x, y, neither the active controller; min.insync.replicas=1 and
unclean.leader.election.enable=true): records are written while both are in sync, then y's fetches
are throttled to 1 byte/s (Kafka's own replication quota) so it falls out of the ISR but keeps
answering; more records are written to x alone, so the HW passes y's log end. The sampler (the one
`ctrlaudit capture` runs) samples HW and LEOs. x is killed: the controller elects y uncleanly, and the
records between y's LEO and the old HW are gone. The metadata log of the controller is imported, the
samples are merged into it in time order (as the capture pipeline's raw topic orders them), and:
- `high_watermark_monotonic` reports `unclean_election_data_loss` as allowed at the election, its
  magnitude the sampled HW minus y's sampled LEO, and the HW going back after it as allowed;
- no committed-data rule is violated: nothing on this topic is reported as a violation;
- DuckDB, Spark and the live checker give the same rows.
"""
from __future__ import annotations

import heapq
import time
from collections import Counter

import pytest

from checks.catalog import NAMES
from checks.live import DATA_LOSS_ALLOWANCE, LiveChecker
from devtools.cluster import observe
from devtools.cluster.testing import copy_node_metadata, heal
from devtools.cluster.testing import wait_until as _wait

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

TOPIC = "dl-loss"
COLS = ("invariant", "cluster_id", "seq", "related_seq", "rule", "status", "allowance", "expected", "actual",
        "magnitude")


def _produce(bootstrap: str, n: int, acks: str, size: int = 200) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks})
    for i in range(n):
        p.produce(TOPIC, key=b"k", value=b"v" * size)
        if i % 1000 == 999:
            p.poll(0)
    assert p.flush(60) == 0


def _alter(bootstrap: str, kind: str, name: str, configs: dict[str, str | None]) -> None:
    """Set (or, for None, delete) configs; retried for a while: a broker that was just restarted may
    drop the first requests (the shared cluster must not be left throttled for the modules after)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    entries = [ConfigEntry(k, v or "", incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in configs.items()]
    deadline = time.monotonic() + 90
    while True:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            for f in admin.incremental_alter_configs([ConfigResource(kind, name, incremental_configs=entries)]).values():
                f.result(timeout=30)
            return
        except (KafkaException, TimeoutError):  # (a future's result(timeout) raises TimeoutError)
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


@pytest.fixture(scope="module")
def lost(kafka_cluster, tmp_path_factory):
    from schemas.archive.writer import ArchiveWriter
    from services.capture.sampler import OffsetSampler
    from services.kraft.offline import cluster_id_of, import_events

    c = heal(kafka_cluster)
    work = tmp_path_factory.mktemp(f"loss-{c.label}")
    bs = lambda: observe.running_bootstrap(c)  # noqa: E731
    ctl = c.wait_for_controller()
    x, y = [i for i in sorted(c.nodes) if i != ctl]
    throttles = [("broker", str(x), {"leader.replication.throttled.rate": "1"}),
                 ("broker", str(y), {"follower.replication.throttled.rate": "1"}),
                 ("topic", TOPIC, {"leader.replication.throttled.replicas": "*",
                                   "follower.replication.throttled.replicas": "*"})]
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", TOPIC, "--replica-assignment", f"{x}:{y}",
           "--config", "unclean.leader.election.enable=true", "--config", "min.insync.replicas=1")
    observe.wait_describe(c, lambda d: (TOPIC, 0) in d.partitions and d.partitions[(TOPIC, 0)].isr == (x, y),
                          TOPIC, timeout=60)
    sampler = OffsetSampler(c.bootstrap_servers, "probe", [TOPIC])
    samples, killed = [], False

    def take():
        got = sampler.sample()
        samples.extend(got)
        return got

    try:
        _produce(bs(), 50, "all")
        _wait(lambda: [s for s in take() if s.high_watermark >= 50], 30, "HW 50 with both in sync")
        # Replication quotas spare in-sync replicas: y is paused until it is out of the ISR, then comes
        # back throttled behind ~20 MB (one fetch of at most replica.fetch.max.bytes, then the quota).
        for kind, name, configs in throttles:
            _alter(bs(), kind, name, configs)
        c.pause_node(y)
        try:
            _produce(bs(), 20_000, "1", size=1000)
            # (the sampler's metadata, not kafka-topics: on 3.9 the tool can hang on the paused node)
            _wait(lambda: [p for p in sampler.partitions() if tuple(p.isr) == (x,)], 90, "y out of the ISR")
        finally:
            c.resume_node(y)

        def behind(s):
            leo = {r.broker_id: r.log_end_offset for r in s.replicas}
            return s.leader == x and s.high_watermark >= 20_050 and 0 <= leo.get(y, -1) < s.high_watermark
        # (y was fenced while paused; it answers once unfenced and back in the sampler's metadata)
        last = _wait(lambda: [s for s in take() if behind(s)], 120, "y sampled behind the HW")[-1]
        killed = True
        c.kill_node(x)  # the only ISR member dies: y can only be elected uncleanly
        observe.wait_describe(c, lambda d: d.partitions[(TOPIC, 0)].leader == y, TOPIC, timeout=90)
        _wait(lambda: [s for s in take() if s.leader == y], 60, "a sample from the new leader")
    finally:
        sampler.close()
        if killed:
            c.start_node(x)
            c.wait_ready([x])
        for kind, name, configs in throttles:
            _alter(bs(), kind, name, dict.fromkeys(configs))
    observe.wait_describe(c, lambda d: set(d.partitions[(TOPIC, 0)].isr) == {x, y}, TOPIC, timeout=120)

    node = c.wait_for_controller()
    copy = copy_node_metadata(c, node, work / "copy")
    cluster = cluster_id_of([copy])
    meta = list(import_events([copy], cluster, node_id=node))
    sampler.cluster_id = cluster
    sampled = sampler.events(samples, 0)
    with ArchiveWriter(work / "archive", cluster) as w:
        for e in heapq.merge(meta, sampled, key=lambda e: e.event_time_ms):
            w.append(e)
    y_leo = next(r.log_end_offset for r in last.replicas if r.broker_id == y)
    return work / "archive", {"x": x, "y": y, "hw": last.high_watermark, "y_leo": y_leo}


def _duck_rows(archive):
    from checks.duckdb_engine import DuckDBEngine
    from checks.inputs import resolve
    eng = DuckDBEngine.from_inputs(resolve([archive]))
    try:
        rows = eng.violations(NAMES)
        evidence = eng.events_at((r[1], r[2]) for r in rows)
    finally:
        eng.close()
    return rows, evidence


def test_unclean_election_loss_is_measured_and_allowed(lost):
    archive, facts = lost
    rows, evidence = _duck_rows(archive)
    mine = [dict(zip(COLS, r)) for r in rows if (evidence.get((r[1], r[2])) or {}).get("topic") == TOPIC]
    loss = [v for v in mine if v["rule"] == "unclean_election_data_loss"]
    assert len(loss) == 1, mine
    v = loss[0]
    assert (v["status"], v["allowance"]) == ("allowed", DATA_LOSS_ALLOWANCE)
    # the records between y's log end and the HW it never had, as the last sample before the election saw
    assert v["magnitude"] >= facts["hw"] - facts["y_leo"] > 0
    e = evidence[(v["cluster_id"], v["seq"])]
    assert (e["kind"], e["a_leader"]) == ("PartitionChange", facts["y"]), e  # the election of y
    assert not [m for m in mine if m["status"] == "violated"], mine
    assert [m["status"] for m in mine if m["rule"] == "hw_decreased_across_leader_change"] in ([], ["allowed"])


def test_duckdb_spark_and_live_agree(lost, spark):
    from checks.spark_engine import SparkEngine
    from checks.inputs import resolve
    from schemas.archive.container import read_events

    archive, _ = lost
    rows, _ = _duck_rows(archive)
    eng = SparkEngine.from_inputs(spark, resolve([archive]))
    try:
        assert eng.violations(NAMES) == rows
    finally:
        eng.close()
    checker = LiveChecker()
    alerts = [a for f in resolve([archive]).archives for e in read_events(f) for a in checker.observe(e)]
    alerts += checker.finish()  # what is open at the end: pending, as the batch's rows
    assert Counter(a.key() for a in alerts) == Counter(tuple(r[:7]) for r in rows)
    assert Counter(a.key() + (a.magnitude,) for a in alerts if a.invariant == "high_watermark_monotonic") == \
        Counter(tuple(r[:7]) + (r[9],) for r in rows if r[0] == "high_watermark_monotonic")
