"""A live ZooKeeper watch's items on the raw topic and through the capture worker's CaptureState: the same
snapshots, transactions and gaps come out as went in, and become chained events; a second snapshot (a lost
session, a restarted capture) adds only what changed, deletions included."""
from __future__ import annotations

import json

from schemas.events import CaptureGap, PartitionChange, TopicChange, TopicChangeKind
from services.capture.serializers import RawRecord, decode_raw, encode_raw
from services.capture.logic import CaptureState
from services.zookeeper.records import Op, Txn
from services.zookeeper.snapshot import Snapshot, Znode
from services.zookeeper.watch import LIVE, Gap, from_raw, to_raw

CL = "zkc"
TOPIC = "/brokers/topics/orders"
STATE = TOPIC + "/partitions/0/state"


def _assignment(replicas):
    return json.dumps({"version": 3, "partitions": {"0": replicas}, "adding_replicas": {}, "removing_replicas": {},
                       "topic_id": "T0pic1dT0pic1dT0pic1d"}).encode()


def _state(leader, isr, epoch=1):
    return json.dumps({"controller_epoch": epoch, "leader": leader, "version": 1, "leader_epoch": 0,
                       "isr": isr}).encode()


SNAP = Snapshot(LIVE, 0x20, 0, (
    Znode("/controller_epoch", b"1", 0, 5, 5, 1_700_000_000_000, 0),
    Znode("/controller", b'{"version":2,"brokerid":1,"timestamp":"1"}', 0, 6, 6, 1_700_000_000_000, 7),
    Znode("/brokers/ids/1", b'{"version":5,"endpoints":["PLAINTEXT://h:1"]}', 1, 8, 8, 1_700_000_000_001, 7),
    Znode(TOPIC, _assignment([1, 2]), 0, 0x10, 0x10, 1_700_000_000_002, 0),
    Znode(STATE, _state(1, [1, 2]), 0, 0x11, 0x11, 1_700_000_000_003, 0),
))
TXN = Txn(0, 0, 0x21, 1_700_000_000_100, 5, (Op("setData", STATE, _state(1, [1]), 1),), LIVE)
GAP = Gap(0x22, 0x24, f"{STATE}: versions 2..3 changed before they were read", 1_700_000_000_200, 0x25)


def _raw(item) -> RawRecord:
    kind, position, first, last, when, data, reason = to_raw(item)
    raw = RawRecord(CL, -1, kind, position, first, last, -1, when, when, data, LIVE, None, reason)
    return decode_raw(encode_raw(raw))  # through the raw topic's own encoding


def test_items_round_trip_through_the_raw_topic():
    for item in (SNAP, TXN, GAP):
        r = _raw(item)
        assert from_raw(r.kind, r.position, r.base_offset, r.last_offset, r.append_time_ms, r.data, r.reason) == item


def test_capture_state_turns_them_into_chained_events():
    st = CaptureState(CL)
    events = [e for item in (SNAP, TXN, GAP) for e, *_ in st.process(_raw(item))]
    assert [e.seq for e in events] == list(range(len(events)))
    first = [e for e in events if e.source.offset == 0x20]
    assert first and all(e.bootstrap for e in first)
    change = next(e for e in events if e.source.offset == 0x21)
    assert isinstance(change.payload, PartitionChange) and change.payload.after.isr == (1,)
    assert change.payload.after.partition_epoch == 1 and not change.bootstrap
    gap = events[-1].payload
    assert isinstance(gap, CaptureGap) and (gap.from_offset, gap.to_offset) == (0x22, 0x24)
    assert events[-1].source.offset == 0x25  # where the watch learnt it: after what it handed out
    # the same snapshot again (a restarted watch when nothing changed): nothing new
    again = Snapshot(LIVE, 0x21, 0, SNAP.nodes[:4] + (Znode(STATE, _state(1, [1]), 1, 0x11, 0x21, 1, 0),))
    assert st.process(_raw(again)) == []


def test_a_second_snapshot_without_the_topic_deletes_it():
    st = CaptureState(CL)
    st.process(_raw(SNAP))
    later = Snapshot(LIVE, 0x40, 0, SNAP.nodes[:3])  # orders deleted while the watch was disconnected
    events = [e for e, *_ in st.process(_raw(Gap(0x21, 0x40, "the ZooKeeper session expired", 1, 0x40)))]
    events += [e for e, *_ in st.process(_raw(later))]
    assert isinstance(events[0].payload, CaptureGap)
    deleted = [e.payload for e in events[1:]]
    assert any(isinstance(p, PartitionChange) and p.after is None for p in deleted)
    assert any(isinstance(p, TopicChange) and p.kind is TopicChangeKind.DELETED for p in deleted)
    assert all(e.bootstrap for e in events[1:])


def test_a_raw_record_that_is_not_a_watched_item_is_a_dead_letter():
    import pytest

    from services.capture.logic import DeadLetter

    bad = RawRecord(CL, -1, "ZK_TXN", 1, 1, 1, -1, 1, 1, b"{not json", LIVE, None, None)
    with pytest.raises(DeadLetter, match="ZK_TXN does not hold a watched ZooKeeper item"):
        CaptureState(CL).process(bad)
