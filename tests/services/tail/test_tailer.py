"""The tailer on synthetic files: appends, partial batches, rolls, deleted segments, restarts."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.events import CaptureGap, PartitionChange
from services.normalize.offline import import_events
from services.tail import Batch, EventTailer, Gap, LogTailer, Snapshot, TailError, TailPosition
from tests.services.kraft.helpers import metadata_value
from tests.services.normalize.logs import T1, LogBuilder, change
from tests.services.normalize.test_offline import history, snapshot


def seg(d: Path, base: int) -> Path:
    return d / f"{base:020d}.log"


def offsets(items) -> list[int]:
    return [r.offset for i in items if isinstance(i, Batch) for r in i.records]


def build(n_changes: int = 20) -> LogBuilder:
    b = history(LogBuilder())  # offsets 0..8: leader change, feature, 3 brokers, topic, 2 partitions
    for i in range(n_changes):
        change(b, T1, i % 2, isr=[1, 2, 3] if i % 2 else [1, 2], leader=-2)
    return b


def write(path: Path, batches: list[bytes], mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(b"".join(batches))


def test_new_batches_in_the_active_segment(tmp_path):
    b = build()
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    t = LogTailer(tmp_path)
    assert offsets(t.step()) == list(range(10))
    assert t.step() == []
    write(seg(tmp_path, 0), b.batches[10:15])
    assert offsets(t.step()) == list(range(10, 15))
    assert t.position == TailPosition(seg(tmp_path, 0).name, sum(map(len, b.batches[:15])), 14)


def test_partial_batch_at_the_end_waits_for_the_rest(tmp_path):
    b = build()
    write(seg(tmp_path, 0), b.batches[:5], "wb")
    half = len(b.batches[5]) // 2
    write(seg(tmp_path, 0), [b.batches[5][:half]])
    t = LogTailer(tmp_path)
    assert offsets(t.step()) == list(range(5))
    assert t.waiting_partial == sum(map(len, b.batches[:5]))
    assert t.step() == []  # still incomplete: nothing, no error
    write(seg(tmp_path, 0), [b.batches[5][half:], b.batches[6][:3]])
    assert offsets(t.step()) == [5]
    write(seg(tmp_path, 0), [b.batches[6][3:]])
    assert offsets(t.step()) == [6] and t.waiting_partial is None


def test_roll_reads_the_old_segment_to_its_end_first(tmp_path):
    b = build()
    write(seg(tmp_path, 0), b.batches[:8], "wb")
    t = LogTailer(tmp_path)
    assert offsets(t.step()) == list(range(8))
    # Kafka appends two more batches to segment 0, then rolls to segment 10, all before we look.
    write(seg(tmp_path, 0), b.batches[8:10])
    write(seg(tmp_path, 10), b.batches[10:14], "wb")
    assert offsets(t.step()) == list(range(8, 14))
    assert t.position.file == seg(tmp_path, 10).name
    write(seg(tmp_path, 10), b.batches[14:16])
    write(seg(tmp_path, 16), b.batches[16:18], "wb")
    write(seg(tmp_path, 18), b.batches[18:20], "wb")  # two rolls between two steps
    assert offsets(t.step()) == list(range(14, 20))


def test_segments_deleted_before_they_were_read_give_a_gap_and_a_snapshot_bootstrap(tmp_path):
    b = build(20)  # offsets 0..27
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    t = LogTailer(tmp_path)
    assert offsets(t.step()) == list(range(10))
    write(seg(tmp_path, 0), b.batches[10:12])
    write(seg(tmp_path, 12), b.batches[12:20], "wb")
    write(seg(tmp_path, 20), b.batches[20:], "wb")
    snap_records = [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})]
    snapshot(tmp_path, 18, snap_records)
    snapshot(tmp_path, 22, snap_records)
    # retention removes segments 0 and 12 before the tailer looks again
    seg(tmp_path, 0).unlink()
    seg(tmp_path, 12).unlink()
    items = t.step()
    gap, snap = items[0], items[1]
    assert isinstance(gap, Gap) and (gap.from_offset, gap.to_offset) == (10, 21)
    assert isinstance(snap, Snapshot) and snap.end_offset == 22
    assert offsets(items[2:]) == list(range(22, len(b.batches)))


def test_fresh_start_without_segment_zero_bootstraps_like_the_offline_import(tmp_path):
    b = build(10)
    tail = LogBuilder()
    tail.batches = b.batches[12:]
    write(seg(tmp_path, 12), b.batches[12:], "wb")
    snapshot(tmp_path, 12, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})])
    items = LogTailer(tmp_path).step()
    assert isinstance(items[0], Gap) and (items[0].from_offset, items[0].to_offset) == (0, 11)
    assert isinstance(items[1], Snapshot)
    assert offsets(items) == list(range(12, len(b.batches)))


def test_no_snapshot_for_deleted_history_is_an_error(tmp_path):
    b = build(4)
    write(seg(tmp_path, 5), b.batches[5:], "wb")
    with pytest.raises(TailError):
        LogTailer(tmp_path).step()


def test_a_segment_that_shrinks_below_the_read_position_is_an_error(tmp_path):
    b = build(4)
    write(seg(tmp_path, 0), b.batches, "wb")
    t = LogTailer(tmp_path)
    t.step()
    write(seg(tmp_path, 0), b.batches[:3], "wb")
    with pytest.raises(TailError, match="shrank"):
        t.step()


def test_restart_from_a_stored_position_continues_without_gap_or_duplicate(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    t = LogTailer(tmp_path)
    first = offsets(t.step())
    stored = TailPosition.from_dict(t.position.to_dict())
    write(seg(tmp_path, 0), b.batches[12:15])
    write(seg(tmp_path, 15), b.batches[15:], "wb")
    again = LogTailer(tmp_path, start=stored)
    assert first + offsets(again.step()) == list(range(len(b.batches)))


def test_restart_after_the_stored_file_was_deleted_resumes_from_the_next_segment(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    t = LogTailer(tmp_path)
    t.step()
    stored = t.position
    write(seg(tmp_path, 12), b.batches[12:], "wb")
    snapshot(tmp_path, 12, [])
    seg(tmp_path, 0).unlink()  # deleted after it was read completely: no gap
    items = LogTailer(tmp_path, start=stored).step()
    assert not any(isinstance(i, Gap) for i in items)
    assert offsets(items) == list(range(12, len(b.batches)))


def _payloads(events):
    return [(e.source.offset, e.source.index, e.bootstrap, e.payload) for e in events]


def test_event_tailer_equals_the_offline_import_across_rolls_partials_and_a_restart(tmp_path):
    b = build(30)
    # the same history, written piece by piece, read by a tailer that is restarted once
    write(seg(tmp_path, 0), b.batches[:10] + [b.batches[10][:7]], "wb")
    et = EventTailer(tmp_path, "c1")
    events = et.step()
    write(seg(tmp_path, 0), [b.batches[10][7:]] + b.batches[11:15])
    events += et.step()
    stored = et.position
    write(seg(tmp_path, 15), b.batches[15:30], "wb")
    et2 = EventTailer(tmp_path, "c1", start=stored)  # a restart: the image is rebuilt silently
    events += et2.step()
    write(seg(tmp_path, 30), b.batches[30:], "wb")
    events += et2.step()
    offline = list(import_events([tmp_path], "c1"))
    assert _payloads(events) == _payloads(offline)
    changes = [e for e in events if isinstance(e.payload, PartitionChange) and e.payload.before is not None]
    assert changes and all(e.payload.before is not None for e in changes)
    assert len({(e.source.offset, e.source.index) for e in events}) == len(events)


def test_event_tailer_records_a_gap_event(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    et = EventTailer(tmp_path, "c1")
    et.step()
    write(seg(tmp_path, 20), b.batches[20:], "wb")
    snapshot(tmp_path, 20, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})])
    seg(tmp_path, 0).unlink()
    events = et.step()
    gaps = [e for e in events if isinstance(e.payload, CaptureGap)]
    assert len(gaps) == 1 and (gaps[0].payload.from_offset, gaps[0].payload.to_offset) == (10, 19)
    assert any(e.bootstrap for e in events)
    assert max(e.source.offset for e in events) == len(b.batches) - 1


def test_follow_is_a_generator_with_a_poll_interval(tmp_path):
    b = build(2)
    write(seg(tmp_path, 0), b.batches[:3], "wb")
    sleeps = []
    state = {"n": 0}

    def sleep(s):
        sleeps.append(s)
        if len(sleeps) == 1:
            write(seg(tmp_path, 0), b.batches[3:])

    t = LogTailer(tmp_path, poll_interval=0.25, sleep=sleep)
    got = []
    for item in t.follow(stop=lambda: len(sleeps) >= 3):
        got += [r.offset for r in item.records]
    assert got == list(range(len(b.batches))) and sleeps[0] == 0.25
    del state
