"""On a real Kafka 4.x cluster (eligible leader replicas on): an ELR member's log, as the offset sampler sees it,
holds the HW sampled before it entered the ELR — `valid_high_watermark`'s elr_member_behind_hw_at_entry judges
real samples and finds nothing.

Scenario (topic ``elr-member``, replicas x, y, neither the active controller; min.insync.replicas=2): records
are written with both in sync and sampled; y is paused (SIGSTOP) until it is fenced and out of the ISR, which is
then below min ISR, so y enters the ELR; records are written to x alone (acks=1: the HW stays, KIP-966); y comes
back throttled to 1 byte/s (Kafka's replication quota), so it stays in the ELR answering the sampler with its
LEO; then the throttle goes and y rejoins the ISR. Kafka 3.9 (metadata.version 21) has no ELR: skipped there."""
from __future__ import annotations

import heapq

import pytest

from checks.catalog import NAMES
from devtools.cluster import observe
from devtools.cluster.testing import copy_node_metadata, heal
from devtools.cluster.testing import wait_until as _wait
from tests.checks.test_real_cluster_data_loss import COLS, _alter

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "elr-member"


def _produce(bootstrap: str, n: int, acks: str, size: int = 200) -> None:
    """`n` records, every one acknowledged (a failed delivery fails the test, naming Kafka's error)."""
    from confluent_kafka import Producer
    errors: list[str] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks})
    for i in range(n):
        p.produce(TOPIC, key=b"k", value=b"v" * size, on_delivery=lambda err, _: err and errors.append(str(err)))
        if i % 1000 == 999:
            p.poll(0)
    assert p.flush(60) == 0 and not errors, errors[:3]


def _waited(take, pred, timeout: float, what: str):
    """wait_until on sample rounds; on a time-out, what the last round gave (or raised)."""
    try:
        return _wait(lambda: [s for s in take() if pred(s)], timeout, what)
    except AssertionError:
        raise AssertionError(f"timed out waiting for {what}; a round now: {take()!r}") from None


@pytest.fixture(scope="module")
def history(kafka_cluster, tmp_path_factory):
    from schemas.archive.writer import ArchiveWriter
    from services.capture.sampler import OffsetSampler
    from services.kraft.offline import cluster_id_of, import_events

    c = heal(kafka_cluster)
    if c.label.startswith("3."):
        pytest.skip("Kafka 3.9 (metadata.version 21) has no eligible leader replicas")
    work = tmp_path_factory.mktemp(f"elr-{c.label}")
    bs = lambda: observe.running_bootstrap(c)  # noqa: E731
    ctl = c.wait_for_controller()
    x, y = [i for i in sorted(c.nodes) if i != ctl]
    throttles = [("broker", str(x), {"leader.replication.throttled.rate": "1"}),
                 ("broker", str(y), {"follower.replication.throttled.rate": "1"}),
                 ("topic", TOPIC, {"leader.replication.throttled.replicas": "*",
                                   "follower.replication.throttled.replicas": "*"})]
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", TOPIC, "--replica-assignment", f"{x}:{y}",
           "--config", "min.insync.replicas=2")
    observe.wait_describe(c, lambda d: (TOPIC, 0) in d.partitions and d.partitions[(TOPIC, 0)].isr == (x, y),
                          TOPIC, timeout=60)
    sampler = OffsetSampler(c.bootstrap_servers, "probe", [TOPIC])
    samples = []

    def take():
        got = sampler.sample()
        samples.extend(got)
        return got

    try:
        _produce(bs(), 200, "all")
        _waited(take, lambda s: s.high_watermark >= 200, 60, "HW 200 with both in sync")
        for kind, name, configs in throttles:
            _alter(bs(), kind, name, configs)
        c.pause_node(y)
        try:
            _wait(lambda: [p for p in sampler.partitions() if tuple(p.isr) == (x,)], 90, "y out of the ISR")
            _produce(bs(), 5_000, "1", size=1000)  # (no sample while y is paused: its answer would hang)
        finally:
            c.resume_node(y)
        # back, throttled: in the ELR, answering with its LEO (>= 0) while the leader's is far ahead
        _waited(take, lambda s: any(r.broker_id == y and r.log_end_offset >= 0 for r in s.replicas), 120,
                "y sampled while in the ELR")
        for _ in range(3):
            take()
    finally:
        for kind, name, configs in throttles:
            _alter(bs(), kind, name, dict.fromkeys(configs))
        sampler.close()
    observe.wait_describe(c, lambda d: set(d.partitions[(TOPIC, 0)].isr) == {x, y}, TOPIC, timeout=180)

    node = c.wait_for_controller()
    copy = copy_node_metadata(c, node, work / "copy")
    cluster = cluster_id_of([copy])
    meta = list(import_events([copy], cluster, node_id=node))
    sampler.cluster_id = cluster
    with ArchiveWriter(work / "archive", cluster) as w:
        for e in heapq.merge(meta, sampler.events(samples, 0), key=lambda e: e.event_time_ms):
            w.append(e)
    return work / "archive", y


def test_elr_members_sampled_hold_the_hw_of_their_entry(history):
    from checks.duckdb_engine import DuckDBEngine
    from checks.inputs import resolve
    from checks.live import LiveChecker
    from schemas.archive.container import read_events
    from schemas.events import OffsetSample, PartitionChange

    archive, y = history
    # the rule had evidence: a sample of y, while in the ELR after a sample before its entry, with its LEO
    elr, entered_after_sample, judged, sampled = False, False, 0, False
    events = [e for f in resolve([archive]).archives for e in read_events(f)]
    for e in events:
        p = e.payload
        if isinstance(p, PartitionChange) and p.topic == TOPIC and p.after is not None:
            now = y in p.after.elr
            if now and not elr:
                entered_after_sample = sampled
            elr = now
        elif isinstance(p, OffsetSample) and p.topic == TOPIC and p.high_watermark >= 0:
            sampled = True
            judged += elr and entered_after_sample and any(r.broker_id == y and r.log_end_offset >= 0
                                                           for r in p.replicas)
    assert judged > 0, "no sample of y while in the ELR"
    eng = DuckDBEngine.from_inputs(resolve([archive]))
    try:
        rows = eng.violations(NAMES)
    finally:
        eng.close()
    assert not [dict(zip(COLS, r)) for r in rows if r[5] == "violated"]
    assert not [r for r in rows if r[4] == "elr_member_behind_hw_at_entry"]
    checker = LiveChecker()
    assert not [a for e in events for a in checker.observe(e) if a.rule == "elr_member_behind_hw_at_entry"]
