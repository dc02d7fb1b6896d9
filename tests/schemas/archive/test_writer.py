"""ArchiveWriter: files readable by schemas.archive.container and fastavro alike, chain = schemas.archive.chain."""
from __future__ import annotations

import hashlib
from dataclasses import replace
import json
from pathlib import Path

import fastavro
import pytest

from schemas import loader
from schemas.archive.chain import Chain, record_hash
from schemas.codec import READ_OPTIONS, to_avro
from schemas.archive.container import iter_records, read_events
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, ElectionType, FeatureLevelChange, LeaderRecoveryState, OffsetSample, PartitionChange,
    PartitionChangeKind, PartitionState, ReplicaOffset, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
    UnknownRecord,
)
from schemas.archive.verified import ArchiveProblem, verify as verified_read
from schemas.archive import ArchiveWriter, iter_events, list_files, read_manifest
from schemas.archive.encoder import FastavroSplitEncoder, FastV1Encoder
from schemas.archive.manifest import manifest_path
from services.simulator import SimConfig, simulate

HOUR = 3_600_000
T0 = 1_700_000_000_000


def ev(i: int, payload, t: int = T0, **kw) -> ControllerEvent:
    src = kw.pop("source", SourcePosition(SourceKind.KRAFT_LOG, 100 + i))
    return ControllerEvent(f"{i:032x}", "c1", 0, src, t, t + 5, 3000, 7, payload, **kw)


def all_payloads() -> list[ControllerEvent]:
    s1 = PartitionState((1, 2, 3), (1, 2), 1, 3, 7)
    s2 = PartitionState((1, 2, 3, 4), (1, 2, 3), 2, 4, 8, adding_replicas=(4,), removing_replicas=(3,),
                        elr=(5,), last_known_elr=(6,), leader_recovery_state=LeaderRecoveryState.RECOVERING)
    b1 = BrokerState(1, 10, False, rack="r1", incarnation_id="x", endpoints=("PLAINTEXT://h:1", "SSL://h:2"))
    return [
        ev(0, PartitionChange("t", "tid", 0, None, s1, (PartitionChangeKind.CREATE,), ElectionType.NONE)),
        ev(1, PartitionChange("tö", "tid", 2**20, s1, s2, (PartitionChangeKind.ISR, PartitionChangeKind.ELR),
                              ElectionType.UNCLEAN, "why")),
        ev(2, PartitionChange("t", "tid", 0, s2, None, (PartitionChangeKind.DELETE,))),
        ev(3, BrokerChange(1, BrokerChangeKind.FENCED, b1, BrokerState(1, 10, True, in_controlled_shutdown=True))),
        ev(4, BrokerChange(1, BrokerChangeKind.UNREGISTERED, b1, None)),
        ev(5, TopicChange(TopicChangeKind.CREATED, "t", "AAAAAAAAAAAAAAAAAAAAAA")),
        ev(6, ConfigChange(ConfigResourceType.TOPIC, "t", "min.insync.replicas", "2", None)),
        ev(7, ConfigChange(ConfigResourceType.BROKER, "", "x", None, "y", True)),
        ev(8, FeatureLevelChange("metadata.version", 21, 20)),
        ev(9, FeatureLevelChange("kraft.version", 0)),
        ev(10, ControllerChange(3001, 8, 3000, 7, (3000, 3001, 3002), (3001, 3002))),
        ev(11, OffsetSample("t", 0, 1, 3, 2**40, T0, (ReplicaOffset(1, 2**40 + 5, T0 + 1), ReplicaOffset(2, -1, T0 + 2)))),
        ev(12, CaptureGap(-1, 2**50, "segment deleted")),
        ev(13, UnknownRecord(99, 2, bytes(range(256)), "unknown")),
        ev(14, FeatureLevelChange("x", -5), metadata_version=None, bootstrap=True,
           source=SourcePosition(SourceKind.ZOOKEEPER, -1, 3, node_id=2, zxid=2**45, file="f.log", line=77)),
    ]


def sim_events(n: int = 3000, **kw) -> list[ControllerEvent]:
    return list(simulate(SimConfig(seed=kw.pop("seed", 3), events=n, cluster_id="c1", **kw)))


def chained(events: list[ControllerEvent]) -> list[ControllerEvent]:
    chain = Chain("c1")
    return [chain.append(e) for e in events]


def write(tmp_path: Path, events, **kw) -> list:
    with ArchiveWriter(tmp_path, "c1", fsync=kw.pop("fsync", False), **kw) as w:
        for e in events:
            w.append(e)
    return w.files


@pytest.mark.parametrize("events", [all_payloads(), sim_events(1500)], ids=["all-payloads", "simulated"])
def test_fast_encoder_matches_fastavro(events):
    fast, ref = FastV1Encoder(), FastavroSplitEncoder()
    for e in events:
        assert fast.split(e, 12345, "ab" * 32) == ref.split(e, 12345, "ab" * 32)


@pytest.mark.parametrize("encoder", [FastV1Encoder, FastavroSplitEncoder])
def test_body_is_the_avro_encoding_and_hash_is_record_hash(encoder):
    """The chain's body and hash, with either encoder, are fastavro's encoding of the record and the hash
    the verified read computes (record_hash): an independent implementation of the chain rule."""
    chain = Chain("c1", encoder=encoder())
    prev = ""
    for i, e in enumerate(all_payloads()):
        linked, body = chain.append_with_body(e)
        rec = to_avro(linked)
        assert (linked.seq, linked.prev_hash) == (i, prev)
        assert body == fastavro_body(rec)
        assert linked.hash == record_hash(rec)
        prev = linked.hash


def test_a_chained_event_that_does_not_continue_the_chain_is_refused_and_the_chain_kept():
    chain = Chain("c1")
    first = chain.append(all_payloads()[0])
    other = Chain("c1", next_seq=1, head_hash=first.hash).append(all_payloads()[1])
    with pytest.raises(ValueError, match="does not continue the chain"):
        Chain("c1").append(other)  # seq 1 after first, given to an empty chain
    again = Chain("c1", next_seq=1, head_hash=first.hash)
    assert again.append(other) is other and (again.next_seq, again.head_hash) == (2, other.hash)
    tampered = replace(other, hash="0" * 64)
    fresh = Chain("c1", next_seq=1, head_hash=first.hash)
    with pytest.raises(ValueError, match="computed"):
        fresh.append(tampered)
    assert (fresh.next_seq, fresh.head_hash) == (1, first.hash)


def fastavro_body(rec) -> bytes:
    import io
    out = io.BytesIO()
    fastavro.schemaless_writer(out, loader.current().parsed, rec)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_files_read_back_identically_by_container_and_fastavro(tmp_path, codec):
    events = all_payloads() + sim_events(2500)
    events = [e for e in events if e.cluster_id == "c1"]
    files = write(tmp_path, events, codec=codec, max_events_per_file=700)
    expected = chained(events)
    got: list[ControllerEvent] = []
    for path, man in list_files(tmp_path / "c1"):
        ours = list(iter_records(path))
        with open(path, "rb") as fo:
            theirs = list(fastavro.reader(fo, **READ_OPTIONS))
        assert ours == theirs
        assert len(ours) == man.count
        got.extend(read_events(path))
    assert got == expected
    assert [e.seq for e in got] == list(range(len(events)))
    assert len(files) == len(list_files(tmp_path / "c1"))
    assert list(iter_events(tmp_path / "c1")) == expected


def test_every_hash_is_schemas_chain_record_hash(tmp_path):
    write(tmp_path, sim_events(2000))
    prev = ""
    for rec in (r for p, _ in list_files(tmp_path / "c1") for r in iter_records(p)):
        assert rec["prev_hash"] == prev
        assert rec["hash"] == record_hash(rec)
        prev = rec["hash"]


def test_rolls_by_hour_and_count_with_manifests(tmp_path):
    events = [ev(i, FeatureLevelChange("f", i), t=T0 + (i // 5) * HOUR // 2) for i in range(40)]
    files = write(tmp_path, events, max_events_per_file=4)
    names = [m.file for m in files]
    assert names == sorted(names)
    for m in files:
        hours = {t // HOUR for t in (m.first_event_time_ms, m.last_event_time_ms)}
        assert len(hours) == 1 and m.count <= 4
        assert m.file == f"events-{_hour(m.first_event_time_ms)}-{m.first_seq:012d}.avro"
        path = tmp_path / "c1" / m.file
        assert read_manifest(manifest_path(path)) == m
        assert m.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert m.schema_fingerprint == loader.current().fingerprint_hex
        assert m.last_seq - m.first_seq + 1 == m.count
        assert m.first_source.offset == 100 + m.first_seq and m.last_source.offset == 100 + m.last_seq
    assert sum(m.count for m in files) == 40
    for a, b in zip(files, files[1:]):
        assert b.prev_hash == a.chain_head_hash and b.first_seq == a.last_seq + 1
    chain = verified_read([tmp_path / "c1"]).chains["c1"]
    assert chain.events == 40 and chain.files == len(files) and chain.verified_to == 39
    json.loads((tmp_path / "c1" / (files[0].file + ".manifest.json")).read_text())


def _hour(t: int) -> str:
    import time
    return time.strftime("%Y%m%dT%H", time.gmtime(t // 1000))


def test_verify_detects_tampering(tmp_path):
    files = write(tmp_path, sim_events(500), max_events_per_file=200)
    path = tmp_path / "c1" / files[1].file
    data = bytearray(path.read_bytes())
    data[-100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveProblem):
        verified_read([tmp_path / "c1"])


def test_same_events_give_identical_files(tmp_path):
    events = sim_events(800)
    a = write(tmp_path / "a", events)
    b = write(tmp_path / "b", events)
    assert [m.sha256 for m in a] == [m.sha256 for m in b]


def test_accepts_already_chained_events_and_rejects_a_broken_chain(tmp_path):
    good = chained(all_payloads())
    files = write(tmp_path / "ok", good)
    assert files[-1].chain_head_hash == good[-1].hash
    with pytest.raises(ValueError, match="does not continue the chain"):
        write(tmp_path / "bad", [good[0], good[2]])


def test_resume_continues_the_chain_and_skips_unfinished_files(tmp_path):
    events = all_payloads()
    write(tmp_path, events[:6])
    (tmp_path / "c1" / "events-x.avro.part").write_bytes(b"junk")
    with ArchiveWriter.resume(tmp_path, "c1", fsync=False) as w:
        assert w.next_seq == 6
        for e in events[6:]:
            w.append(e)
    assert not list((tmp_path / "c1").glob("*.part"))
    assert list(iter_events(tmp_path / "c1")) == chained(events)
    verified_read([tmp_path / "c1"])  # raises unless intact


def test_fsync_path_and_wrong_cluster(tmp_path):
    files = write(tmp_path, all_payloads()[:3], fsync=True)
    assert files[0].count == 3
    with pytest.raises(ValueError, match="cluster"):
        write(tmp_path / "x", [ControllerEvent("a", "other", 0, SourcePosition(SourceKind.UNKNOWN, 1), 1, 1, 1, 1,
                                               FeatureLevelChange("f", 1))])


_INTERRUPTED_AT_THE_RENAME = """
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, os.getcwd())
from schemas.archive import ArchiveWriter
from schemas.events import FeatureLevelChange
from tests.schemas.archive.test_writer import ev
real = os.replace
def replace(a, b):  # Ctrl-C the moment the finished file has its name, before its manifest is written
    real(a, b)
    if str(b).endswith(".avro"):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # where the KeyboardInterrupt lands unless it is held off
        print("past the rename", flush=True)
os.replace = replace
try:
    with ArchiveWriter(Path(sys.argv[1]), "c1", max_events_per_file=2) as w:
        for i in range(5):
            w.append(ev(i, FeatureLevelChange("f", i)))
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_as_a_finished_file_is_named_comes_after_its_manifest(tmp_path):
    """A file without its manifest would stop the next writer (a finished file is never overwritten), so Ctrl-C is
    held off from the rename to the manifest: the archive is then the first file, whole, and the writer resumes."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_AT_THE_RENAME, str(tmp_path)], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.stdout.split() == ["past", "the", "rename", "interrupted"], done.stdout + done.stderr
    (only,) = list_files(tmp_path / "c1")
    assert only[1].count == 2 and sorted(p.name for p in (tmp_path / "c1").iterdir()) == [
        only[0].name, only[0].name + ".manifest.json"]
    with ArchiveWriter.resume(tmp_path, "c1") as w:
        for i in range(2, 5):
            w.append(ev(i, FeatureLevelChange("f", i)))
    assert verified_read([tmp_path / "c1"]).chains["c1"].events == 5
