"""Signed capture on a real 3-node KRaft cluster of its own, on both pinned Kafka versions: the normalize worker signs with a key
(a checkpoint every 25 events or second), two archivers run beside it (one storing capture's checkpoints only, with
--trusted-key; one also signing every file with a key of its own), and the worker is killed with SIGKILL four times
while topics are created, grown and deleted — twice the moment a new checkpoint appears on the checkpoints topic,
when the next one is being made. Afterwards every change is in the archive exactly once (the positions of an offline
decode of the same metadata log), `ctrlaudit verify --trusted-key` passes with every event signed by capture's
checkpoints, every checkpoint published matches the archive and was stored, each restart resumed the tree from the
newest checkpoint, and an edited, re-chained archive is refused."""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from devtools.cluster.testing import copy_node_metadata, java_available, running_cluster, stop_process
from devtools.cluster.testing import wait_until as _wait
from tests.services.capture.test_pipeline_kafka import (
    PY, ROOT, Worker, _archive_events, _env, _messages, _watermarks,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture(scope="module", params=["4.x", "3.9"])
def own_cluster(tmp_path_factory, request):
    """A 3-node cluster of this module's own, with Kafka's default metadata segments: a follower appends what one
    fetch brings whole, so on the session's shared cluster (4 KiB segments) a node restarted after this module's
    topic churn stops with RecordBatchTooLargeException, as would every later module's restart."""
    if not java_available():
        pytest.skip("needs java and mvn")
    with running_cluster(tmp_path_factory.mktemp("signing-cluster"), request.param,
                         overrides={"auto.leader.rebalance.enable": "false"}) as c:
        yield c


class Tracked(Worker):
    """A worker whose every process is remembered, so that none outlives the test."""

    def __init__(self, env: dict, log: Path) -> None:
        super().__init__(env, log)
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        super().start()
        self.procs.append(self.proc)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


def _key(work: Path, name: str) -> tuple[Path, str]:
    from schemas.archive.note import generate_key

    skey, vkey = generate_key(name)
    path = work / name.replace("/", "_")
    path.write_text(skey + "\n")
    path.chmod(0o600)
    return path, vkey


def _verify(archive: Path, *keys: str) -> subprocess.CompletedProcess[str]:
    args = [a for k in keys for a in ("--trusted-key", k)]
    return subprocess.run([PY, "-m", "ctrlaudit", "verify", str(archive), *args, "--json", "-"], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)


@pytest.fixture(scope="module")
def run(own_cluster, tmp_path_factory):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    c = own_cluster
    work = tmp_path_factory.mktemp("signed")
    prefix = "sig" + uuid.uuid4().hex[:6]
    source = next(i for i in c.nodes if i != c.wait_for_controller())
    capture_key, capture_pub = _key(work, "capture.example/" + prefix)
    archiver_key, archiver_pub = _key(work, "archiver.example/" + prefix)
    env = _env(c, prefix, work, source)
    checkpoints = f"{prefix}.checkpoints"
    env.update(CTRLAUDIT_CHECKPOINTS_TOPIC=checkpoints, CTRLAUDIT_SIGN_EVERY_EVENTS="25",
               CTRLAUDIT_SIGN_EVERY_SECONDS="1")
    worker = Tracked(dict(env, CTRLAUDIT_ROLES="normalize", CTRLAUDIT_SIGNING_KEY=str(capture_key)),
                     work / "worker.log")
    worker.start()
    archivers = [
        subprocess.Popen([PY, "-m", "services.capture", "archiver", "--trusted-key", capture_pub], env=env, cwd=ROOT,
                         stdout=open(work / "archiver.log", "wb"), stderr=subprocess.STDOUT),
        subprocess.Popen([PY, "-m", "services.capture", "archiver", "--signing-key", str(archiver_key),
                          "--archive-dir", str(work / "archive-b")],
                         env=dict(env, CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver-b"), cwd=ROOT,
                         stdout=open(work / "archiver-b.log", "wb"), stderr=subprocess.STDOUT)]
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    rng = random.Random(int(os.environ.get("CAPTURE_SEED", "7")))
    stop = threading.Event()
    kill_lags: list[float] = []  # seconds from a checkpoint's appearance to the kill that followed it

    def killer():
        """kill -9 the worker: twice as soon as a new checkpoint shows on the topic (the next is being made),
        twice at random moments; each time started again after up to a second."""
        while worker.kills < 4 and not stop.is_set():
            time.sleep(rng.uniform(3, 6))
            if worker.kills % 2 == 0:
                seen = _watermarks(c.bootstrap_servers, checkpoints)[checkpoints]
                deadline = time.monotonic() + 30
                while _watermarks(c.bootstrap_servers, checkpoints)[checkpoints] == seen and \
                        time.monotonic() < deadline and not stop.is_set():
                    time.sleep(0.02)
                appeared = time.monotonic()
                worker.kill9()
                kill_lags.append(time.monotonic() - appeared)
            else:
                worker.kill9()
            time.sleep(rng.uniform(0, 1))
            worker.start()
            # the next kill only once this one has restored its tree: each kill then tests a resumption
            pid = worker.proc.pid
            deadline = time.monotonic() + 90
            while f"[{pid}] [INFO] signing: cluster" not in worker.log.read_text(errors="replace") and \
                    time.monotonic() < deadline and not stop.is_set():
                time.sleep(0.2)

    def wait(futures: dict) -> None:
        for f in futures.values():
            f.result(60)

    k = threading.Thread(target=killer, daemon=True)
    ok = False
    try:
        _wait(lambda: _watermarks(c.bootstrap_servers, checkpoints)[checkpoints] > 0, 120, "a first checkpoint")
        k.start()
        started = time.monotonic()
        n = 0
        while worker.kills < 4 and time.monotonic() - started < 240:  # the killer starts the worker again
            names = [f"{prefix}-t{n}-{i}" for i in range(3)]
            wait(admin.create_topics([NewTopic(t, 2 + i, 3) for i, t in enumerate(names)]))
            time.sleep(rng.uniform(0.2, 1))
            wait(admin.create_partitions([NewPartitions(names[0], 5)]))
            wait(admin.delete_topics(names[1:]))  # the cluster keeps one small topic per round
            n += 1
        assert worker.kills >= 4, "the worker was not killed four times"
        stop.set()
        k.join(30)
        worker.keep_running()
        ok = True
    finally:
        stop.set()
        if not ok:
            worker.stop()
            for a in archivers:
                a.kill()
                a.wait(10)
    # the cluster is quiet: everything in the source's log must reach the events topic, be signed and archived
    time.sleep(3)
    copy = copy_node_metadata(c, source, work / "copy")
    from schemas.archive.signed import list_checkpoints
    from services.kraft.offline import import_events
    offline = list(import_events([copy]))
    last = max(e.source.offset for e in offline)
    events_topic = f"{prefix}.events"

    def done():
        worker.keep_running()
        ev = _archive_events(work / "archive")
        kraft = [e for e in ev if e.source.kind.value.startswith("KRAFT")]
        if not kraft or max(e.source.offset for e in kraft) < last:
            return None
        total = _watermarks(c.bootstrap_servers, events_topic)[events_topic]
        stored = [size for cl in {e.cluster_id for e in ev} for size, _ in list_checkpoints(work / "archive" / cl)]
        return ev if len(ev) == total and max(stored, default=0) == len(ev) else None
    try:
        archive = _wait(done, 240, "the archive to hold every event, signed by a stored checkpoint", step=1)
        _wait(lambda: len(_archive_events(work / "archive-b")) == len(archive), 120, "the second archive")
    finally:
        time.sleep(2)
        for a in archivers:
            stop_process(a)
        worker.stop()
    return dict(cluster=c, work=work, prefix=prefix, offline=offline, last=last, archive=archive, worker=worker,
                capture_pub=capture_pub, archiver_pub=archiver_pub, kill_lags=kill_lags,
                checkpoints=_messages(c.bootstrap_servers, checkpoints))


def _pos(e):
    return (e.source.kind.value, e.source.offset, e.source.index)


def test_every_change_is_archived_exactly_once(run):
    kraft = [e for e in run["archive"] if e.source.kind.value.startswith("KRAFT") and e.source.offset <= run["last"]]
    assert [_pos(e) for e in kraft] == [_pos(e) for e in run["offline"]]
    assert [(e.kind, e.payload) for e in kraft] == [(e.kind, e.payload) for e in run["offline"]]
    assert [e.seq for e in run["archive"]] == list(range(len(run["archive"])))


def test_verify_with_captures_key_passes_with_every_event_signed(run):
    done = _verify(run["work"] / "archive", run["capture_pub"])
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    ((signed),) = report["signed"]
    n = len(run["archive"])
    assert (signed["signed_to"], signed["events"], signed["unsigned"]) == (n, n, 0)
    assert signed["keys"] == ["+".join(run["capture_pub"].split("+")[:2])]  # name+id
    assert signed["checkpoints"] == len({m.value() for m in run["checkpoints"]}) > 5
    assert f"seq 0..{n - 1} signed" in done.stderr


def test_every_checkpoint_published_holds_for_the_archive_and_was_stored(run):
    from schemas.archive.checkpoint import open_checkpoint
    from schemas.archive.merkle import event_leaf_hashes, tree_hash
    from schemas.archive.note import Verifier
    from schemas.archive.signed import list_checkpoints

    leaves = event_leaf_hashes([e.hash for e in run["archive"]])
    key = Verifier.parse(run["capture_pub"])
    cluster = run["archive"][0].cluster_id
    sizes = []
    for m in run["checkpoints"]:
        assert m.key() == cluster.encode()
        cp, _ = open_checkpoint(m.value(), key, origin=f"ctrlaudit/{cluster}")
        assert cp.root_hash == tree_hash(leaves[:cp.size]), f"offset {m.offset()}: a checkpoint of {cp.size} events"
        sizes.append(cp.size)
    # never a smaller tree after a larger one: each restart resumed from the newest checkpoint
    assert sizes == sorted(sizes) and len(sizes) > 5
    assert sorted(s for s, _ in list_checkpoints(run["work"] / "archive" / cluster)) == sorted(set(sizes))
    log = (run["work"] / "archiver.log").read_text(errors="replace")
    assert "not stored" not in log


def test_signing_resumed_from_the_newest_checkpoint_after_every_kill(run):
    log = (run["worker"].log).read_text(errors="replace")
    resumed = re.findall(r"signing: cluster \S+: tree of (\d+) events, from the checkpoint of (\d+)", log)
    # the killer kills a restarted worker only once it has restored: every restart resumed from a checkpoint
    assert run["worker"].kills >= 4 and len(resumed) >= run["worker"].kills, resumed
    assert all(int(tree) >= int(cp) > 0 for tree, cp in resumed)
    assert not re.search(r"ERROR.*signing", log) and "no more checkpoints" not in log  # never out of step
    assert len(run["kill_lags"]) >= 2 and min(run["kill_lags"]) < 1.0, run["kill_lags"]


def test_an_edited_rechained_archive_is_refused_by_verify_with_the_key(run, tmp_path):
    from schemas.archive import ArchiveWriter, iter_events
    from schemas.archive.signed import list_checkpoints

    src = run["work"] / "archive"
    cluster = run["archive"][0].cluster_id
    middle = len(run["archive"]) // 2
    edited = [replace(e, event_time_ms=e.event_time_ms + (1 if e.seq == middle else 0), seq=0, prev_hash="", hash="")
              for e in iter_events(src / cluster)]
    with ArchiveWriter(tmp_path / "edited", cluster, fsync=False) as w:
        w.extend(edited)
    for _, p in list_checkpoints(src / cluster):
        shutil.copy(p, tmp_path / "edited" / cluster / p.name)
    plain = _verify(tmp_path / "edited")
    assert plain.returncode == 0, plain.stderr  # the chain was made anew: without the key nothing tells
    refused = _verify(tmp_path / "edited", run["capture_pub"])
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "BROKEN: signature" in refused.stderr and "do not hash to the root this checkpoint signs" in refused.stderr


def test_the_archiver_that_signs_too_verifies_with_both_keys(run):
    from schemas.archive.listing import list_files
    from schemas.archive.note import parse_note
    from schemas.archive.signed import list_checkpoints

    both = _verify(run["work"] / "archive-b", run["capture_pub"], run["archiver_pub"])
    assert both.returncode == 0, both.stdout + both.stderr
    ((signed),) = json.loads(both.stdout)["signed"]
    assert signed["signed_to"] == len(run["archive"]) and len(signed["keys"]) == 2
    # the archiver signed at the end of every file it finished, capture's checkpoints joined them where the sizes met
    directory = run["work"] / "archive-b" / run["archive"][0].cluster_id
    signers = {size: {sig.name for sig in parse_note(p.read_text())[1]} for size, p in list_checkpoints(directory)}
    archiver, capture = (k.split("+")[0] for k in (run["archiver_pub"], run["capture_pub"]))
    assert {size for size, names in signers.items() if archiver in names} == \
        {m.last_seq + 1 for _, m in list_files(directory)}
    # trusting capture's key alone, a checkpoint the archiver alone signed is refused
    alone = _verify(run["work"] / "archive-b", run["capture_pub"])
    if any(capture not in names for names in signers.values()):
        assert alone.returncode == 1 and "no signature by a trusted key" in alone.stderr, alone.stderr
    else:
        assert alone.returncode == 0, alone.stderr


def test_the_checkpoints_topic_keeps_everything(run):
    from confluent_kafka.admin import AdminClient, ConfigResource

    a = AdminClient({"bootstrap.servers": run["cluster"].bootstrap_servers})
    res = ConfigResource(ConfigResource.Type.TOPIC, f"{run['prefix']}.checkpoints")
    cfg = a.describe_configs([res])[res].result()
    assert (cfg["retention.ms"].value, cfg["cleanup.policy"].value) == ("-1", "delete")


def test_a_capture_that_ran_unsigned_signs_everything_once_it_has_a_key(own_cluster, tmp_path):
    """No checkpoint of the worker's key on the topic (signing starts on a capture that ran without, or with a new
    key): the tree is rebuilt from the events topic's start, and the first checkpoint covers every event."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from schemas import codec
    from schemas.archive.checkpoint import open_checkpoint
    from schemas.archive.merkle import event_leaf_hashes, tree_hash
    from schemas.archive.note import Verifier

    c = own_cluster
    prefix = "uns" + uuid.uuid4().hex[:6]
    key, pub = _key(tmp_path, "capture.example/" + prefix)
    env = dict(_env(c, prefix, tmp_path, next(iter(c.nodes))), CTRLAUDIT_ROLES="normalize",
               CTRLAUDIT_CHECKPOINTS_TOPIC=f"{prefix}.checkpoints", CTRLAUDIT_SIGN_EVERY_SECONDS="1")
    events, checkpoints = f"{prefix}.events", f"{prefix}.checkpoints"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    unsigned = Tracked(env, tmp_path / "unsigned.log")
    signed = Tracked(dict(env, CTRLAUDIT_SIGNING_KEY=str(key)), tmp_path / "signed.log")
    try:
        unsigned.start()
        _wait(lambda: _watermarks(c.bootstrap_servers, events)[events] > 0, 120, "the unsigned capture's events")
        for f in admin.create_topics([NewTopic(f"{prefix}-a{i}", 3, 3) for i in range(3)]).values():
            f.result(60)
        time.sleep(3)
        unsigned.stop()
        before = _watermarks(c.bootstrap_servers, events)[events]
        assert _watermarks(c.bootstrap_servers, checkpoints)[checkpoints] == 0
        signed.start()
        for f in admin.create_topics([NewTopic(f"{prefix}-b{i}", 2, 3) for i in range(2)]).values():
            f.result(60)

        def covered():
            total = _watermarks(c.bootstrap_servers, events)[events]
            msgs = _messages(c.bootstrap_servers, checkpoints)
            if not msgs:
                return None
            newest, _ = open_checkpoint(msgs[-1].value(), Verifier.parse(pub),
                                        origin=f"ctrlaudit/{msgs[-1].key().decode()}")
            return (newest, total) if newest.size == total > before else None
        checkpoint, total = _wait(covered, 120, "a checkpoint of every event, those of the unsigned capture too")
    finally:
        unsigned.stop()
        signed.stop()
    hashes = [codec.decode(m.value()).hash for m in _messages(c.bootstrap_servers, events)]
    assert len(hashes) == total and checkpoint.root_hash == tree_hash(event_leaf_hashes(hashes))
    log = signed.log.read_text(errors="replace")
    assert re.search(r"signing: cluster \S+: tree of \d+ events, from the events topic's start", log), log[-2000:]
