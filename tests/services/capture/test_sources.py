"""The KRaft source as the capture worker runs it: the live tail (services/kraft/live.py, tested on its own in
tests/services/kraft/test_live.py) read through CaptureState; the events equal the offline import's, across
rolls, partial batches, a restart from the raw topic's last record, and a gap."""
from __future__ import annotations

from schemas.events import CaptureGap, PartitionChange
from services.capture.logic import CaptureState
from services.capture.serializers import RawRecord
from services.capture.serializers import decode_raw, encode_raw
from services.capture.sources import source_loop_step
from services.kraft.live import KRaftTail
from services.kraft.offline import import_events
from tests.services.kraft.helpers import metadata_value
from tests.services.kraft.test_live import build, seg, write
from tests.services.kraft.test_offline import snapshot
from tests.services.normalize.logs import T1


def poll(t: KRaftTail) -> list[RawRecord]:
    """One step of the source without a gate: the tail's records as the raw topic carries them."""
    return source_loop_step(t, None)


def _payloads(events):
    return [(e.source.offset, e.source.index, e.bootstrap, e.payload) for e in events]


def _events(state: CaptureState, raws: list[RawRecord]):
    return [e for r in raws for e, *_ in state.process(r)]


def test_captured_events_equal_the_offline_import_across_rolls_partials_and_a_restart(tmp_path):
    b = build(30)
    # the same history, written piece by piece, read by a tail and a CaptureState that restart once
    write(seg(tmp_path, 0), b.batches[:10] + [b.batches[10][:7]], "wb")
    t, state = KRaftTail(tmp_path, "c1"), CaptureState("c1")
    raws = poll(t)
    write(seg(tmp_path, 0), [b.batches[10][7:]] + b.batches[11:15])
    raws += poll(t)
    events = _events(state, raws)
    write(seg(tmp_path, 15), b.batches[15:30], "wb")
    # a restart: the tail from the raw topic's last record; the state replays the raw topic
    t2, state2 = KRaftTail(tmp_path, "c1", resume=raws[-1]), CaptureState("c1")
    _events(state2, raws)
    more = poll(t2)
    write(seg(tmp_path, 30), b.batches[30:], "wb")
    more += poll(t2)
    events += _events(state2, more)
    offline = list(import_events([tmp_path], "c1"))
    assert _payloads(events) == _payloads(offline)
    changes = [e for e in events if isinstance(e.payload, PartitionChange) and e.payload.before is not None]
    assert changes
    assert [e.seq for e in events] == list(range(len(events)))  # chained once, no duplicate
    assert len({(e.source.offset, e.source.index) for e in events}) == len(events)


def test_a_gap_becomes_a_capture_gap_event_and_the_state_goes_on_from_the_snapshot(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    t, state = KRaftTail(tmp_path, "c1"), CaptureState("c1")
    _events(state, poll(t))
    write(seg(tmp_path, 20), b.batches[20:], "wb")
    snapshot(tmp_path, 20, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})])
    seg(tmp_path, 0).unlink()
    events = _events(state, poll(t))
    gaps = [e for e in events if isinstance(e.payload, CaptureGap)]
    assert len(gaps) == 1 and (gaps[0].payload.from_offset, gaps[0].payload.to_offset) == (10, 19)
    assert any(e.bootstrap for e in events)
    assert max(e.source.offset for e in events) == len(b.batches) - 1


def test_the_raw_topic_carries_the_tails_records_as_they_are(tmp_path):
    b = build(2)
    write(seg(tmp_path, 0), b.batches, "wb")
    got = KRaftTail(tmp_path, "c1", node_id=3).poll()
    assert got and all(type(r) is RawRecord for r in got)
    assert [decode_raw(encode_raw(r)) for r in got] == got
