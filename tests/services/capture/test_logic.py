"""Plain functions of the capture pipeline: positions and dedupe, raw decoding and dead letters,
chain extension across a restart (and its one-write encoding), the tail's resume and gaps, the archive's dedupe."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemas import codec as event_codec
from schemas.events import (
    CaptureGap, ControllerEvent, OffsetSample, PartitionChange, PartitionState, ReplicaOffset, SourceKind,
    SourcePosition,
)
from services.capture import logic
from services.capture.serializers import RAW_SCHEMA, RawRecord, decode_raw, encode_raw
from services.capture.logic import CaptureState, DeadLetter, Progress
from services.kraft.live import KRaftTail
from services.kraft import build_batch

CL = "c1"


def ev(offset, index=0, kind=SourceKind.KRAFT_LOG, payload=None, bootstrap=False, epoch=1) -> ControllerEvent:
    return ControllerEvent("id", CL, 0, SourcePosition(kind, offset, index), 1000, 1000, 1, epoch,
                           payload or CaptureGap(0, 0, "x"), bootstrap=bootstrap)


def st(leader=1, isr=(1, 2), replicas=(1, 2, 3), le=1, pe=1, **kw) -> PartitionState:
    return PartitionState(tuple(replicas), tuple(isr), leader, le, pe, **kw)


# --- positions -----------------------------------------------------------------------------------

def test_snapshot_sorts_before_the_log_record_at_its_end_offset():
    snap = ev(10, 5, SourceKind.KRAFT_SNAPSHOT, PartitionChange("t", "id", 0, None, st()))
    log = ev(10, 0, payload=PartitionChange("t", "id", 0, None, st()))
    assert logic.position_key(snap) < logic.position_key(log)


def test_progress_drops_at_or_below_the_last_position_per_stream():
    p = Progress()
    a = ev(5, payload=PartitionChange("t", "id", 0, None, st()))
    assert p.is_new(a)
    p.advance(a)
    assert not p.is_new(a) and not p.is_new(ev(4, payload=a.payload))
    sample = ev(1, kind=SourceKind.OFFSET_SAMPLER, payload=OffsetSample("t", 0, 1, 1, 0, 0, ()))
    assert p.is_new(sample)  # another stream
    assert Progress.from_header(p.header()) == p
    assert Progress.from_headers([("other", b"x"), (logic.PROGRESS_HEADER, p.header())]) == p
    assert Progress.from_headers(None) == Progress()


# --- raw records ---------------------------------------------------------------------------------

def raw(kind="KRAFT_BATCH", data=b"", base=0, last=0, **kw) -> RawRecord:
    return RawRecord(CL, 1, kind, 0, base, last, 1, 1000, 1000, data, **kw)


def test_raw_round_trip_and_fingerprint():
    r = raw(data=b"abc", file="f.log", control_type="control", reason=None)
    b = encode_raw(r)
    assert b[:2] == b"\xc3\x01" and b[2:10] == RAW_SCHEMA.fingerprint
    assert decode_raw(b) == r


@pytest.mark.parametrize("value,reason", [
    (b"garbage", "not Avro single-object encoding"),
    (b"\xc3\x01" + b"\x11" * 8 + b"x", "unknown writer schema fingerprint"),
    (b"\xc3\x01" + RAW_SCHEMA.fingerprint + b"\x02", "truncated or corrupt"),
])
def test_parse_raw_dead_letters_with_the_reason(value, reason):
    with pytest.raises(DeadLetter, match=reason):
        logic.parse_raw(value)


def test_a_corrupt_batch_is_a_dead_letter():
    good = build_batch([(None, b"\x01\x02\x00")], base_offset=0)
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    with pytest.raises(DeadLetter, match="bad record batch"):
        logic.batch_records(raw(data=bytes(bad)))


def _topic_record(name: str, tid_byte: int) -> bytes:
    # TopicRecord v0: frame 1, apiKey 2, version 0, name (compact string), topicId (uuid), no tags
    body = bytes([1, 2, 0]) + bytes([len(name) + 1]) + name.encode() + bytes([tid_byte]) * 16 + b"\x00"
    return body


def test_capture_state_chains_dedupes_and_resumes():
    b0 = build_batch([(None, _topic_record("a", 1))], base_offset=0)
    b1 = build_batch([(None, _topic_record("b", 2))], base_offset=1)
    s = CaptureState(CL)
    out0 = s.process(raw(data=b0, base=0, last=0))
    assert [e.payload.topic for e, *_ in out0] == ["a"] and out0[0][0].seq == 0
    assert s.process(raw(data=b0, base=0, last=0)) == []  # a re-published batch adds nothing
    out1 = s.process(raw(data=b1, base=1, last=1))
    assert out1[0][0].seq == 1 and out1[0][0].prev_hash == out0[0][0].hash
    # a restarted worker: progress from the events topic's last header, replay the raw topic from the start
    p = Progress.from_header(out1[0][1])
    s2 = CaptureState(CL, progress=p)
    assert s2.process(raw(data=b0, base=0, last=0)) == [] and s2.process(raw(data=b1, base=1, last=1)) == []
    b2 = build_batch([(None, _topic_record("c", 3))], base_offset=2)
    (e2, *_), = s2.process(raw(data=b2, base=2, last=2))
    assert e2.seq == 2 and e2.prev_hash == out1[0][0].hash and e2.payload.topic == "c"


def test_capture_state_restart_in_the_middle_emits_what_the_topic_lacks():
    batches = [build_batch([(None, _topic_record(n, i + 1))], base_offset=i) for i, n in enumerate("abc")]
    s = CaptureState(CL)
    first = s.process(raw(data=batches[0], base=0, last=0))
    s2 = CaptureState(CL, progress=Progress.from_header(first[0][1]))  # events topic holds only "a"
    out = [e for i, b in enumerate(batches) for e, *_ in s2.process(raw(data=b, base=i, last=i))]
    assert [e.payload.topic for e in out] == ["b", "c"] and [e.seq for e in out] == [1, 2]


def test_event_raw_records_are_chained_and_samples_deduped():
    sample = ev(100, 0, SourceKind.OFFSET_SAMPLER, OffsetSample("t", 0, 1, 1, 5, 1, (ReplicaOffset(1, 5, 1),)))
    r = raw("EVENT", event_codec.encode(sample))
    s = CaptureState(CL)
    (e, *_), = s.process(r)
    assert e.seq == 0 and e.hash
    assert s.process(r) == []
    with pytest.raises(DeadLetter, match="ControllerEvent"):
        s.process(raw("EVENT", b"junk"))
    with pytest.raises(DeadLetter, match="cluster"):
        s.process(replace(r, cluster_id="other"))


def test_gap_raw_record_becomes_a_capture_gap():
    (e, *_), = CaptureState(CL).process(raw("GAP", base=0, last=9, reason="deleted"))
    assert e.payload == CaptureGap(0, 9, "deleted")


# --- the KRaft tail -----------------------------------------------------------------------------

def _segment(d: Path, base: int, names: str) -> None:
    data = b"".join(build_batch([(None, _topic_record(n, base + i + 1))], base_offset=base + i)
                    for i, n in enumerate(names))
    (d / f"{base:020d}.log").write_bytes(data)


def test_tail_follows_rolls_resumes_and_waits_for_the_commit_mark(tmp_path):
    _segment(tmp_path, 0, "ab")
    t = KRaftTail(tmp_path, CL)
    assert [r.base_offset for r in t.poll(committed_end=1)] == [0]  # offset 1 not committed yet
    got = t.poll()
    assert [r.base_offset for r in got] == [1]
    _segment(tmp_path, 2, "cd")
    got = t.poll()
    assert [(r.kind, r.base_offset) for r in got] == [("KRAFT_BATCH", 2), ("KRAFT_BATCH", 3)]
    resumed = KRaftTail(tmp_path, CL, resume=got[0])
    assert [r.base_offset for r in resumed.poll()] == [3]
    with open(tmp_path / f"{2:020d}.log", "ab") as f:  # half a batch: wait for the rest
        f.write(build_batch([(None, _topic_record("e", 9))], base_offset=4)[:20])
    assert t.poll() == []


def _whole_snapshot(*batches: bytes) -> bytes:
    """SnapshotHeader, the batches, SnapshotFooter: what Kafka names .checkpoint."""
    from tests.services.kraft.helpers import control_key, control_value

    header = control_value("SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": 1})
    footer = control_value("SnapshotFooterRecord", {"version": 0})
    return (build_batch([(control_key(3), header)], base_offset=0, control=True) + b"".join(batches)
            + build_batch([(control_key(4), footer)], base_offset=1 + len(batches), control=True))


def test_tail_after_deleted_segments_emits_gap_and_snapshot(tmp_path):
    _segment(tmp_path, 5, "fg")
    snap = _whole_snapshot(build_batch([(None, _topic_record("a", 1))], base_offset=1))
    (tmp_path / f"{5:020d}-{1:010d}.checkpoint").write_bytes(snap[:-20])  # cut short: not an image
    assert KRaftTail(tmp_path, CL).poll() == []  # waits, as for a snapshot not written yet
    (tmp_path / f"{5:020d}-{1:010d}.checkpoint").write_bytes(snap)
    got = KRaftTail(tmp_path, CL).poll()
    assert [r.kind for r in got] == ["GAP", "SNAPSHOT_BEGIN"] + ["SNAPSHOT_BATCH"] * 3 + ["SNAPSHOT_END",
                                                                                         "KRAFT_BATCH", "KRAFT_BATCH"]
    assert (got[0].base_offset, got[0].last_offset) == (0, 4)
    s = CaptureState(CL)
    events = [e for r in got for e, *_ in s.process(r)]
    assert [type(e.payload).__name__ for e in events][0] == "CaptureGap"
    assert [e.payload.topic for e in events[1:]] == ["a", "f", "g"]
    assert events[1].bootstrap


# --- the encoding chain: the same hashes and bytes as schemas.archive.chain + schemas.codec ---------------

def test_encoding_chain_equals_schemas_chain_and_codec():
    from schemas.archive.chain import Chain
    from services.capture.serializers import decode_event, decode_event_record
    from services.simulator import SimConfig, Simulation
    events = [replace(e, seq=0, prev_hash="", hash="") for e in Simulation(SimConfig(seed=5, events=3000)).events()]
    kinds = {type(e.payload).__name__ for e in events}
    assert {"PartitionChange", "BrokerChange", "ControllerChange", "TopicChange", "ConfigChange"} <= kinds
    ref, fast = Chain(events[0].cluster_id), logic.EncodingChain(events[0].cluster_id)
    for e in events:
        want = ref.append(e)
        got, value = fast.append(e)
        assert got == want
        assert value == event_codec.encode(want)
        assert decode_event(value) == want
        assert decode_event_record(value) == event_codec.decode_record(value)[0]
    with pytest.raises(ValueError):
        fast.append(replace(events[0], cluster_id="other"))


def test_progress_header_is_the_json_it_always_was():
    import json
    for p in (Progress(), Progress(7, "ab" * 32, {"kraft": (10, 1, 3), "sampler": (5, 1, 0)})):
        want = json.dumps({"seq": p.seq, "hash": p.hash, "last": {k: list(v) for k, v in p.last.items()}},
                          separators=(",", ":")).encode()
        assert p.header() == want


def test_bad_event_values_keep_their_reasons():
    from schemas.errors import CodecError
    from services.capture.serializers import decode_event
    for value, reason in ((b"junk", "shorter than"), (b"\xc3\x01" + b"\x11" * 8 + b"body", "unknown writer schema"),
                          (event_codec.encode(ev(1))[:-3], "truncated")):
        with pytest.raises(CodecError, match=reason):
            decode_event(value)


def test_hw_within_isr():
    s = OffsetSample("t", 0, 1, 1, 10, 0, (ReplicaOffset(1, 12, 0), ReplicaOffset(2, 9, 0)))
    assert not logic.hw_within_isr(s, (1, 2))
    assert logic.hw_within_isr(s, (1,))


def test_raw_records_of_the_first_raw_schema_still_read():
    """Raw schema 2 appended ZK_SNAPSHOT and ZK_TXN; a raw topic an earlier release wrote reads the same."""
    import io

    import fastavro

    from services.capture import serializers as codec

    r = raw(data=b"abc", file="f.log", control_type="control", reason=None)
    old = codec.schema_from_json(codec._RAW_V1_JSON, 1)
    out = io.BytesIO()
    out.write(codec.MAGIC + old.fingerprint)
    fastavro.schemaless_writer(out, fastavro.parse_schema(codec._RAW_V1_JSON),
                               {k: getattr(r, k) for k in codec._RAW_FIELDS})
    assert old.fingerprint != RAW_SCHEMA.fingerprint and decode_raw(out.getvalue()) == r


class _Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_a_successor_reads_the_events_topic_only_once_a_killed_workers_last_batch_is_committed():
    clock = _Clock()
    # the batch a killed worker sent waits in the leader's log for a follower: committed at t = 2 s
    ends = lambda: (0, 5) if clock.now < 2 else (5, 5)  # noqa: E731
    assert logic.wait_settled(ends, 60, clock.sleep, clock) == 5 and clock.now >= 2
    clock.now = 0.0
    assert logic.wait_settled(lambda: (7, 7), 60, clock.sleep, clock) == 0 and clock.now == 0  # nothing pending


def test_ends_not_known_are_asked_again_and_a_leader_that_never_commits_is_one_line():
    clock = _Clock()
    answers = iter([None, None, (3, 3)])
    assert logic.wait_settled(lambda: next(answers), 60, clock.sleep, clock) == 0 and clock.now == 1.0
    with pytest.raises(logic.Unsettled, match=r"holds 2 message\(s\) not committed \(high watermark 3, log end 5\) "
                                              r"after 10 s"):
        logic.wait_settled(lambda: (3, 5), 10, clock.sleep, clock)
    with pytest.raises(logic.Unsettled, match="an end it did not tell after 10 s"):
        logic.wait_settled(lambda: None, 10, clock.sleep, clock)
