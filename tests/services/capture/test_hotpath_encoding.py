"""The capture hot path's shortcuts give exactly what the plain code gives: on a burst-shaped log (bench/capture.py's
synthetic input: creates, then a mass election whose `before` states are the creates' `after` objects) every value
equals fastavro's encoding of its event (schemas.codec), every id equals schemas.event_ids.event_id, the hash chain
equals schemas.archive.chain.Chain's, every progress header equals its json.dumps; fastencode's per-partition state cache
never hands out the bytes of another (equal-but-different or changed) state; the table varints equal the loop's."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import random
from pathlib import Path

import pytest

from schemas import codec as event_codec
from schemas.archive.chain import Chain
from schemas.event_ids import event_id, offset_event_id
from schemas.events import (
    ControllerEvent, ElectionType, PartitionChange, PartitionChangeKind, PartitionState, SourceKind, SourcePosition,
)
from schemas.archive import fastencode
from services.capture import logic
from services.kraft import read_batch
from services.kraft.records import decode_data_batch
from services.kraft.normalizer import KRaftNormalizer

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def raws() -> list:
    spec = importlib.util.spec_from_file_location("ctrlaudit_bench_capture_hotpath", ROOT / "bench/capture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [logic.parse_raw(v) for v in mod.synthetic_raw(3000, 1000)]  # 3 topics of 1000, then 3 election batches


@pytest.fixture(scope="module")
def processed(raws) -> list:
    st = logic.CaptureState(raws[0].cluster_id, raws[0].node_id, clock=lambda: 1_700_000_001_000)
    return [out for r in raws for out in st.process(r)]


def unchained(e: ControllerEvent) -> ControllerEvent:
    return dataclasses.replace(e, seq=0, prev_hash="", hash="")


def test_values_are_fastavros_bytes(processed):
    assert len(processed) == 3 + 3 + 6000
    kinds = {type(e.payload).__name__ for e, _, _ in processed}
    assert kinds == {"BrokerChange", "TopicChange", "PartitionChange"}
    for e, _, value in processed:
        assert value == event_codec.encode(e)
        assert event_codec.decode(value) == e


def test_ids_hashes_and_headers_are_the_plain_codes(processed):
    chain = Chain(processed[0][0].cluster_id)
    last = {}
    for e, header, _ in processed:
        assert e.event_id == event_id(e.cluster_id, e.source)
        assert chain.append(unchained(e)) == e  # seq, prev_hash, hash
        last[logic.stream_of(e)] = list(logic.position_key(e))
        assert header == json.dumps({"seq": e.seq, "hash": e.hash, "last": last}, separators=(",", ":")).encode()


def test_elections_reuse_the_created_states(processed):
    # the shape the per-partition cache is for: each election's `before` is its partition's created `after`
    created = {(e.payload.topic_id, e.payload.partition): e.payload.after for e, _, _ in processed
               if type(e.payload) is PartitionChange and e.payload.before is None}
    elections = [e.payload for e, _, _ in processed if type(e.payload) is PartitionChange and e.payload.before]
    assert len(elections) == 3000
    assert all(p.before is created[(p.topic_id, p.partition)] for p in elections)
    assert {p.changes for p in elections} == {(PartitionChangeKind.LEADER,)}


def test_batch_feed_equals_record_by_record_feed(raws):
    # feed_all skips the transaction buffer outside transactions: the same events as feed() per record
    a = KRaftNormalizer(raws[0].cluster_id, raws[0].node_id, clock=lambda: 5)
    b = KRaftNormalizer(raws[0].cluster_id, raws[0].node_id, clock=lambda: 5)
    for r in raws:
        recs = decode_data_batch(r.data, read_batch(r.data, 0, r.file))
        one_by_one = [e for rec in recs for e in b.feed(rec)]
        assert a.feed_all(recs) == one_by_one
    assert a.image.partitions == b.image.partitions


def test_built_events_are_whole_dataclasses(processed):
    # the normalizer builds events through the slot descriptors: every field is set, equality and hashing hold
    for e, _, _ in processed[::500]:
        for obj in (e, e.source, e.payload, getattr(e.payload, "after", None)):
            if obj is None:
                continue
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            assert type(obj)(**fields) == obj and repr(type(obj)(**fields)) == repr(obj)
        assert hash(e.source) == hash(dataclasses.replace(e.source))


def test_offset_event_id_is_event_id():
    for kind in (SourceKind.KRAFT_LOG, SourceKind.KRAFT_SNAPSHOT, SourceKind.SIMULATOR, SourceKind.OFFSET_SAMPLER):
        for offset, index in ((0, 0), (123456789, 17), (2**40, 10**6)):
            src = SourcePosition(kind, offset, index, 3, None, "/data/00000000000000000000.log", None)
            assert offset_event_id("c1", kind, offset, index) == event_id("c1", src)
    with pytest.raises(KeyError):
        offset_event_id("c1", SourceKind.ZOOKEEPER, 1, 0)  # its id depends on the file


def fast_value(e: ControllerEvent) -> bytes:
    head, tail = fastencode.parts(e, e.seq, e.prev_hash)
    return event_codec.MAGIC + event_codec.loader.current().fingerprint + head + fastencode.string(e.hash) + tail


def change(before, after, tid="tid", pid=0) -> ControllerEvent:
    return ControllerEvent("id", "c", 7, SourcePosition(SourceKind.KRAFT_LOG, 5), 1, 2, 1, 1,
                           PartitionChange("t", tid, pid, before, after, (PartitionChangeKind.LEADER,),
                                           ElectionType.CLEAN))


def test_state_cache_never_returns_stale_bytes():
    a = PartitionState((1, 2, 3), (1, 2, 3), 1, 0, 0)
    equal_a = PartitionState((1, 2, 3), (1, 2, 3), 1, 0, 0)
    b = PartitionState((1, 2, 3), (1, 2), 2, 1, 1)
    c = PartitionState((1, 2, 3), (2, 3), 2, 1, 2)
    cases = [
        (None, a), (a, b),        # the cached `after` reused as the next `before`
        (equal_a, b),             # an equal but different object as `before`: encoded afresh (same bytes)
        (c, a),                   # a `before` that is not the partition's cached `after` (b): its own bytes
        (b, c),                   # b was the cached `after` two events ago, not now
        (a, None),                # a delete: nothing cached for the partition afterwards
        (a, c),
    ]
    for before, after in cases:
        for tid, pid in (("tid", 0), ("tid", 1), ("other", 0)):
            e = change(before, after, tid, pid)
            assert fast_value(e) == event_codec.encode(e), (before, after, tid, pid)


def test_state_cache_with_recycled_objects():
    # states made and dropped in turn (CPython may give a new one a dropped one's id): each encodes as itself
    rnd = random.Random(4)
    before = None
    for i in range(300):
        isr = tuple(rnd.sample([1, 2, 3], rnd.randint(1, 3)))
        after = PartitionState((1, 2, 3), isr, isr[0], i, i * 1000)
        if rnd.random() < 0.3:
            before = PartitionState(before.replicas, before.isr, before.leader, before.leader_epoch,
                                    before.partition_epoch) if before is not None else None  # a copy
        e = change(before, after, "tid", i % 3)
        assert fast_value(e) == event_codec.encode(e)
        before = after if rnd.random() < 0.7 else None


def test_state_cache_bound(monkeypatch):
    monkeypatch.setattr(fastencode, "_last_after", {("x", i): None for i in range(500_001)})
    monkeypatch.setattr(fastencode, "_last_after_bytes", {})
    a, b = PartitionState((1,), (1,), 1, 0, 0), PartitionState((1,), (1,), 1, 1, 1)
    for before, after in ((None, a), (a, b), (b, a)):
        e = change(before, after)
        assert fast_value(e) == event_codec.encode(e)
    assert len(fastencode._last_after) == 1  # cleared, then this partition's last `after`


def test_long_tables_equal_the_loop():
    edges = [s * 2**k + d for k in range(12, 66) for s in (1, -1) for d in (-1, 0, 1)]
    rnd = random.Random(5)
    for n in [*range(-70_000, 70_000), *edges, *(rnd.randint(-2**63, 2**63 - 1) for _ in range(10_000))]:
        assert fastencode.long_(n) == fastencode._varlong(n), n
