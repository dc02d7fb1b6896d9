"""The capture pipeline on the real 3-node KRaft cluster, on both pinned Kafka versions (4.x and 3.9).

One scenario for the module: topics, a reassignment, a preferred election, a kill -9'd broker and a
controller failover, while the normalize worker (a subprocess) is killed with SIGKILL three times at
random moments and restarted, and garbage lands on the raw topic. Afterwards the archive holds every
change exactly once (positions equal to the offline decode of the same metadata log), verify passes,
and the garbage is on the dead-letter topic with its reason. The workers are laid out as `ctrlaudit
capture` runs them: the watch agent in its own worker (killed once too), whose alerts must be those of
the catalog's live checker over the archived history. The offset sampler test pauses a follower.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from devtools.cluster import observe
from devtools.cluster.testing import copy_node_metadata, heal, stop_process
from devtools.cluster.testing import wait_until as _wait

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.parametrize("kafka_cluster", ["4.x", "3.9"], indirect=True)]

ROOT = Path(__file__).resolve().parents[3]
PY = sys.executable


def _env(c, prefix: str, work: Path, source_node: int) -> dict:
    return dict(
        os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
        CTRLAUDIT_METADATA_DIR=str(c.metadata_dir(source_node)), CTRLAUDIT_APP_ID=f"{prefix}-app",
        CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw", CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events",
        CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts", CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq",
        CTRLAUDIT_DATA_DIR=str(work / "faust"), CTRLAUDIT_ARCHIVE_DIR=str(work / "archive"),
        CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver", CTRLAUDIT_ARCHIVE_FLUSH_SECONDS="1",
        CTRLAUDIT_SAMPLE_INTERVAL="1",
        CTRLAUDIT_CHECKPOINT_SECONDS="1",  # so that the kill -9'd worker's successors start from checkpoints
    )


class Worker:
    def __init__(self, env: dict, log: Path) -> None:
        self.env, self.log, self.proc, self.kills = env, log, None, 0

    def start(self) -> None:
        self.proc = subprocess.Popen([PY, "-m", "services.capture", "worker", "-l", "info", "--without-web"], env=self.env,
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, cwd=ROOT)

    def keep_running(self) -> None:
        """Like a supervisor (`ctrlaudit capture`, compose's restart: unless-stopped): a worker that exited
        by itself, e.g. at start-up while a broker was down, is started again (not counted as a kill)."""
        if self.proc.poll() is not None:
            self.start()

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.kills += 1

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _watermarks(bootstrap: str, *topics: str) -> dict[str, int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t", "enable.auto.commit": False})
    try:
        return {t: c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)[1] for t in topics}
    finally:
        c.close()


def _messages(bootstrap: str, topic: str) -> list:
    from confluent_kafka import Consumer, TopicPartition
    end = _watermarks(bootstrap, topic)[topic]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    while len(out) < end and time.monotonic() < deadline:
        out += [m for m in c.consume(1000, timeout=1) if not m.error()]
    c.close()
    return out


def _committed(bootstrap: str, group: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()


def _produce(bootstrap: str, topic: str, key: bytes, values: list[bytes]) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, key=key, value=v)
    p.flush(10)


def _archive_events(root: Path):
    from schemas.archive import clusters, iter_events
    out = []
    for cl in clusters(root):
        out += list(iter_events(root / cl))
    return out


@pytest.fixture(scope="module")
def run(kafka_cluster, tmp_path_factory):
    c = heal(kafka_cluster)
    work = tmp_path_factory.mktemp("capture")
    prefix = "cap" + uuid.uuid4().hex[:6]
    controller = c.wait_for_controller()
    others = [i for i in c.nodes if i != controller]
    source, broker = others[0], others[1]  # read `source`'s log; kill `broker`; fail over `controller`
    env = _env(c, prefix, work, source)
    worker = Worker(dict(env, CTRLAUDIT_ROLES="normalize"), work / "worker.log")
    worker.start()
    watcher = Worker(dict(env, CTRLAUDIT_ROLES="watch"), work / "watch.log")
    watcher.start()
    archiver = subprocess.Popen([PY, "-m", "services.capture", "archiver"], env=env, cwd=ROOT,
                                stdout=open(work / "archiver.log", "wb"), stderr=subprocess.STDOUT)
    rng = random.Random(int(os.environ.get("CAPTURE_SEED", "4")))
    bs = lambda: observe.running_bootstrap(c)  # noqa: E731
    t1, t2, t3 = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"
    stop = threading.Event()
    started = time.monotonic()

    def killer():  # kill -9 the worker 3 times at random moments while the scenario runs
        while worker.kills < 3 and not stop.is_set():
            time.sleep(rng.uniform(3, 9))
            worker.kill9()
            time.sleep(rng.uniform(0, 1.5))
            worker.start()

    k = threading.Thread(target=killer, daemon=True)
    k.start()
    ok = False
    try:
        c.create_topic(t1, 6, 3)
        ids = sorted(c.nodes)
        # An explicit assignment, so that the plan below really moves one replica of every partition
        # (with Kafka's own placement it could be the current assignment already: a no-op).
        c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", t2, "--replica-assignment",
               ",".join(f"{ids[p]}:{ids[(p + 1) % 3]}" for p in range(3)))
        plan = work / "move.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t2, "partition": p, "replicas": [ids[(p + 1) % 3], ids[(p + 2) % 3]]} for p in range(3)]}))
        c.tool("reassign", "--bootstrap-server", bs(), "--reassignment-json-file", str(plan), "--execute")
        c.kill_node(broker)
        observe.wait_describe(c, lambda d: all(broker not in p.isr for p in d.partitions.values()), t1, timeout=60)
        c.start_node(broker)
        c.wait_ready([broker], timeout=90)
        for t in (t1, t2):
            observe.wait_describe(c, lambda d: all(len(p.isr) == len(p.replicas) for p in d.partitions.values()),
                                  t, timeout=90)
        c.tool("leader-election", "--bootstrap-server", bs(), "--election-type", "PREFERRED", "--all-topic-partitions",
               check=False)
        # garbage on the raw topic: not Avro at all, and Avro framing with an unknown fingerprint
        _produce(c.bootstrap_servers, f"{prefix}.raw", b"x", [b"garbage \x00\xff bytes", b"\xc3\x01" + b"\x11" * 8 + b"body"])
        c.kill_node(controller)
        c.wait_for_controller(exclude=controller, timeout=60)
        c.start_node(controller)
        c.wait_ready([controller], timeout=90)
        c.create_topic(t3, 2, 3)
        c.topics("--delete", "--topic", t1)
        _wait(lambda: worker.kills >= 3, 120, "three worker kills")
        stop.set()
        k.join(30)
        # One more kill -9 once the worker has written an image checkpoint to its changelog-backed table
        # (the kills above can come before the first one): its successor must start from it.
        changelog = f"{prefix}-app-normalizer-images-changelog"

        def checkpointed():
            worker.keep_running()
            try:
                return _watermarks(c.bootstrap_servers, changelog)[changelog] > 0
            except Exception:
                return False
        _wait(checkpointed, 120, "an image checkpoint in the changelog table")
        # the watch worker too: its successor rebuilds its checker from the events topic below its offset
        def watch_committed():
            watcher.keep_running()
            return _committed(c.bootstrap_servers, f"{prefix}-app-watch", f"{prefix}.events") > 0
        _wait(watch_committed, 120, "the watch worker to commit an events-topic offset")
        watcher.kill9()
        watcher.start()
        time.sleep(2)
        resumes = lambda: (work / "worker.log").read_text(errors="replace").count("normalize: resumed after")  # noqa: E731
        before = resumes()
        worker.kill9()
        worker.start()
        c.create_topic(f"{prefix}-d", 1, 3)  # something for the successor to capture
        _wait(lambda: resumes() > before, 120, "the restarted worker to resume")
        ok = True
    finally:
        stop.set()
        k.join(30)
        if not ok:  # never leave a worker or an archiver behind
            archiver.kill()
            archiver.wait(10)
            worker.stop()
            watcher.stop()
    scenario_seconds = time.monotonic() - started
    # the cluster is quiet now: copy the source's log and wait for the archive to reach its end
    time.sleep(3)
    copy = copy_node_metadata(c, source, work / "copy")
    from services.kraft.offline import import_events
    offline = list(import_events([copy]))
    last = max(e.source.offset for e in offline)

    def caught_up():
        worker.keep_running()
        watcher.keep_running()
        ev = [e for e in _archive_events(work / "archive") if e.source.kind.value.startswith("KRAFT")]
        return ev if ev and max(e.source.offset for e in ev) >= last else None
    try:
        _wait(caught_up, 240, "the archive to reach the copied log's end", step=1)
        # the watch worker's group has committed the whole events topic (Faust commits every few seconds)
        events = f"{prefix}.events"
        _wait(lambda: _committed(c.bootstrap_servers, f"{prefix}-app-watch", events)
              >= _watermarks(c.bootstrap_servers, events)[events], 120, "the watch worker to reach the end")
    finally:
        time.sleep(2)
        stop_process(archiver)
        worker.stop()
        watcher.stop()
    return dict(cluster=c, work=work, prefix=prefix, offline=offline, last=last, worker=worker, watcher=watcher,
                scenario_seconds=scenario_seconds, archive=_archive_events(work / "archive"))


def _pos(e):
    return (e.source.kind.value, e.source.offset, e.source.index)


def test_archive_holds_every_change_exactly_once(run):
    assert run["worker"].kills >= 4
    kraft = [e for e in run["archive"] if e.source.kind.value.startswith("KRAFT") and e.source.offset <= run["last"]]
    positions = [_pos(e) for e in kraft]
    assert len(positions) == len(set(positions)), "duplicate events in the archive"
    expected = [_pos(e) for e in run["offline"]]
    assert positions == expected
    # same content, not only the same positions
    assert [(e.kind, e.payload) for e in kraft] == [(e.kind, e.payload) for e in run["offline"]]
    seqs = [e.seq for e in run["archive"]]
    assert seqs == list(range(len(seqs)))


def test_restarts_start_from_image_checkpoints_in_the_changelog_table(run):
    log = (run["work"] / "worker.log").read_text(errors="replace")
    starts = re.findall(r"image from (the checkpoint at raw offset \d+|the raw topic's start)", log)
    assert starts and starts[-1].startswith("the checkpoint"), starts  # the start after the last kill -9
    # the table is changelog-backed: a compacted topic of the worker's app id holds the checkpoints
    from confluent_kafka.admin import AdminClient, ConfigResource
    topic = f"{run['prefix']}-app-normalizer-images-changelog"
    admin = AdminClient({"bootstrap.servers": run["cluster"].bootstrap_servers})
    conf = admin.describe_configs([ConfigResource("topic", topic)])
    (fut,) = conf.values()
    assert fut.result(30)["cleanup.policy"].value == "compact"
    assert _watermarks(run["cluster"].bootstrap_servers, topic)[topic] > 0


def test_watch_worker_alerts_are_the_live_checks_of_the_events_topic(run):
    from checks.live import LiveChecker
    from services.capture.serializers import decode_event_record

    def key(a: dict) -> tuple:
        return (a["invariant"], a["cluster_id"], a["seq"], a["related_seq"], a["rule"], a["status"], a["allowance"])
    bootstrap = run["cluster"].bootstrap_servers
    # what the watch worker consumed (its group committed the whole topic), as the Avro records it decodes
    records = [decode_event_record(m.value()) for m in _messages(bootstrap, f"{run['prefix']}.events")]
    assert [r["seq"] for r in records] == [e.seq for e in run["archive"]]
    checker = LiveChecker()
    expected = {a.key() for r in records for a in checker.observe(r)}
    alerts = [json.loads(m.value()) for m in _messages(bootstrap, f"{run['prefix']}.alerts")]
    # a kill -9 can re-publish what it sent after its last commit (at least once), never a different alert
    assert {key(a) for a in alerts} == expected
    # the killed watch worker's successor rebuilt its checker from the real events topic below its offset
    log = (run["work"] / "watch.log").read_text(errors="replace")
    rebuilt = [(int(n), int(o)) for n, o in re.findall(r"watch: re-observed (\d+) events below offset (\d+)", log)]
    assert run["watcher"].kills == 1 and len(rebuilt) >= 2 and rebuilt[-1][0] == rebuilt[-1][1] > 0, rebuilt


def test_scenario_is_in_the_archive(run):
    from schemas.events import ControllerChange, ElectionType, PartitionChange, PartitionChangeKind
    pcs = [e.payload for e in run["archive"] if isinstance(e.payload, PartitionChange)]
    mine = [p for p in pcs if p.topic.startswith(run["prefix"])]
    moves = [(p.topic, p.partition, [c.value for c in p.changes], p.before and p.before.replicas,
              p.after and p.after.replicas) for p in mine if PartitionChangeKind.REPLICAS in p.changes]
    assert any(PartitionChangeKind.REASSIGNMENT_COMPLETE in p.changes for p in mine), moves
    assert any(p.election is ElectionType.PREFERRED for p in mine)
    assert any(PartitionChangeKind.DELETE in p.changes for p in mine)
    assert sum(isinstance(e.payload, ControllerChange) for e in run["archive"]) >= 1


def test_verify_passes_on_the_archive(run):
    from ctrlaudit.cli import app
    from typer.testing import CliRunner
    r = CliRunner().invoke(app, ["verify", str(run["work"] / "archive")])
    assert r.exit_code == 0, r.output
    assert "OK" in r.output


def test_bad_raw_records_went_to_the_dead_letter_topic(run):
    dlq = _messages(run["cluster"].bootstrap_servers, f"{run['prefix']}.dlq")
    reasons = [dict(m.headers() or [])["ctrlaudit-reason"].decode() for m in dlq]
    assert any("not Avro single-object encoding" in r for r in reasons), reasons
    assert any("unknown writer schema fingerprint" in r for r in reasons), reasons
    assert {m.value() for m in dlq} >= {b"garbage \x00\xff bytes"}


def test_events_topic_is_unlimited_and_not_compacted(run):
    from confluent_kafka.admin import AdminClient, ConfigResource
    a = AdminClient({"bootstrap.servers": run["cluster"].bootstrap_servers})
    res = ConfigResource(ConfigResource.Type.TOPIC, f"{run['prefix']}.events")
    cfg = a.describe_configs([res])[res].result()
    assert cfg["retention.ms"].value == "-1"
    assert cfg["cleanup.policy"].value == "delete"


def test_load_reads_the_events_topic(run, tmp_path):
    from ctrlaudit.cli import app
    from typer.testing import CliRunner
    r = CliRunner().invoke(app, ["load", "--store", str(tmp_path / "s.duckdb"), "--bootstrap-server",
                                 run["cluster"].bootstrap_servers, "--topic", f"{run['prefix']}.events"])
    assert r.exit_code == 0, r.output
    assert f"added {len(run['archive']):,}" in r.output


def test_sampler_shows_a_paused_follower_lagging(kafka_cluster, tmp_path):
    from services.capture.sampler import OffsetSampler
    c = heal(kafka_cluster)
    topic = "cap-sampler-" + uuid.uuid4().hex[:6]
    c.create_topic(topic, 1, 3)
    d = observe.wait_describe(c, lambda d: len(d.partitions[(topic, 0)].isr) == 3, topic, timeout=60)
    leader = d.partitions[(topic, 0)].leader
    follower = next(r for r in d.partitions[(topic, 0)].replicas if r != leader)
    sampler = OffsetSampler(c.bootstrap_servers, "test", [topic])
    try:
        _produce(c.bootstrap_servers, topic, b"k", [b"v" * 100] * 50)
        healthy = _wait(lambda: [s for s in sampler.sample() if s.high_watermark >= 50], 30, "HW 50")[0]
        assert all(r.log_end_offset >= healthy.high_watermark for r in healthy.replicas)
        c.pause_node(follower)
        try:
            _produce(observe.running_bootstrap(c), topic, b"k", [b"v" * 100] * 50)
            s = _wait(lambda: [s for s in sampler.sample()
                               if {r.broker_id for r in s.replicas if r.log_end_offset >= 100} >= {leader}], 60,
                      "the leader's LEO to pass 100")[0]
            leo = {r.broker_id: r.log_end_offset for r in s.replicas}
            assert leo[leader] >= 100
            assert leo[follower] <= 50 or leo[follower] == -1, leo  # stopped: lags (or cannot answer)
            assert s.sample_order == "HW_THEN_LEO"
        finally:
            c.resume_node(follower)
    finally:
        sampler.close()
