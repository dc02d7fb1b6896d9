"""The live tail of the metadata log (services/kraft/live.py) on synthetic logs: appends, partial batches,
rolls, segments deleted before they were read (a gap, then a snapshot bootstrap), logs truncated or rewritten
under the reader, restarts from the last record handed on."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.kraft import KRaftError, live
from services.kraft.live import KRaftTail, TailRecord
from tests.services.kraft.helpers import metadata_value
from tests.services.kraft.test_offline import history, snapshot
from tests.services.normalize.logs import T1, LogBuilder, change


def seg(d: Path, base: int) -> Path:
    return d / f"{base:020d}.log"


def offsets(raws: list[TailRecord]) -> list[int]:
    return [o for r in raws if r.kind == "KRAFT_BATCH" for o in range(r.base_offset, r.last_offset + 1)]


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
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(10))
    assert t.poll() == []
    write(seg(tmp_path, 0), b.batches[10:15])
    assert offsets(t.poll()) == list(range(10, 15))
    assert (t.file, t.position, t.next_offset) == (seg(tmp_path, 0), sum(map(len, b.batches[:15])), 15)


def test_partial_batch_at_the_end_waits_for_the_rest(tmp_path):
    b = build()
    write(seg(tmp_path, 0), b.batches[:5], "wb")
    half = len(b.batches[5]) // 2
    write(seg(tmp_path, 0), [b.batches[5][:half]])
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(5))
    assert t.poll() == []  # still incomplete: nothing, no error
    write(seg(tmp_path, 0), [b.batches[5][half:], b.batches[6][:3]])
    assert offsets(t.poll()) == [5]
    write(seg(tmp_path, 0), [b.batches[6][3:]])
    assert offsets(t.poll()) == [6]


def test_roll_reads_the_old_segment_to_its_end_first(tmp_path):
    b = build()
    write(seg(tmp_path, 0), b.batches[:8], "wb")
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(8))
    # Kafka appends two more batches to segment 0, then rolls to segment 10, all before we look.
    write(seg(tmp_path, 0), b.batches[8:10])
    write(seg(tmp_path, 10), b.batches[10:14], "wb")
    assert offsets(t.poll()) == list(range(8, 14))
    assert t.file == seg(tmp_path, 10)
    write(seg(tmp_path, 10), b.batches[14:16])
    write(seg(tmp_path, 16), b.batches[16:18], "wb")
    write(seg(tmp_path, 18), b.batches[18:20], "wb")  # two rolls between two polls
    assert offsets(t.poll()) == list(range(14, 20))


def test_segments_deleted_before_they_were_read_give_a_gap_and_a_snapshot_bootstrap(tmp_path):
    b = build(20)  # offsets 0..27
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(10))
    write(seg(tmp_path, 0), b.batches[10:12])
    write(seg(tmp_path, 12), b.batches[12:20], "wb")
    write(seg(tmp_path, 20), b.batches[20:], "wb")
    snap_records = [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})]
    snapshot(tmp_path, 18, snap_records)
    snapshot(tmp_path, 22, snap_records)
    # retention removes segments 0 and 12 before the tail looks again
    seg(tmp_path, 0).unlink()
    seg(tmp_path, 12).unlink()
    got = t.poll()
    assert [r.kind for r in got[:2]] == ["GAP", "SNAPSHOT_BEGIN"]
    assert (got[0].base_offset, got[0].last_offset) == (10, 21) and got[1].base_offset == 22
    assert offsets(got) == list(range(22, len(b.batches)))


def test_fresh_start_without_segment_zero_bootstraps_like_the_offline_import(tmp_path):
    b = build(10)
    write(seg(tmp_path, 12), b.batches[12:], "wb")
    snapshot(tmp_path, 12, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})])
    got = KRaftTail(tmp_path, "c1").poll()
    assert got[0].kind == "GAP" and (got[0].base_offset, got[0].last_offset) == (0, 11)
    assert got[1].kind == "SNAPSHOT_BEGIN"
    assert offsets(got) == list(range(12, len(b.batches)))


def test_deleted_history_without_a_snapshot_waits_for_kafka_to_write_one(tmp_path):
    """Kafka writes a snapshot before retention deletes what it covers: until one is there the tail says
    nothing (never a gap it cannot bootstrap after), and then bootstraps from it."""
    b = build(4)
    write(seg(tmp_path, 5), b.batches[5:], "wb")
    t = KRaftTail(tmp_path, "c1")
    assert t.poll() == [] and t.poll() == []
    snapshot(tmp_path, 5, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})])
    got = t.poll()
    assert [r.kind for r in got[:2]] == ["GAP", "SNAPSHOT_BEGIN"] and offsets(got) == list(range(5, len(b.batches)))


def test_a_segment_that_shrinks_below_the_read_position_is_read_again_without_duplicates(tmp_path):
    """A replica's log truncated after a failover (never committed offsets: the gate keeps them out)."""
    b = build(4)
    write(seg(tmp_path, 0), b.batches, "wb")
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(len(b.batches)))
    write(seg(tmp_path, 0), b.batches[:3], "wb")
    assert t.poll() == []  # re-located: nothing below next_offset is published twice
    write(seg(tmp_path, 0), b.batches[3:])
    assert t.poll() == []



def test_a_segment_that_shrinks_and_is_deleted_before_the_relocate_waits_for_a_file(tmp_path):
    """The shrunk segment is gone by the time the tail looks for the file holding its next offset, and no
    other file holds it yet: the poll returns what it has, and a later poll reads the rewritten log."""
    b = build(4)
    write(seg(tmp_path, 0), b.batches, "wb")
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(len(b.batches)))
    write(seg(tmp_path, 0), b.batches[:3], "wb")
    segments = t._segments

    def deleted_meanwhile():
        seg(tmp_path, 0).unlink(missing_ok=True)
        return segments()
    t._segments = deleted_meanwhile
    assert t.poll() == [] and t.file is None
    t._segments = segments
    write(seg(tmp_path, 0), b.batches, "wb")  # the rewritten log, as long again
    assert t.poll() == [] and t.file == seg(tmp_path, 0)  # nothing below next_offset published twice

def other_history(n_changes: int = 20) -> LogBuilder:
    """The same offsets as build(), another history from offset 9 on (a replica's rewritten suffix): its
    changes carry a longer ISR, so its batches are longer and a position of build() falls inside one."""
    b = history(LogBuilder())
    for i in range(n_changes):
        change(b, T1, i % 2, epoch=2, isr=[1, 2, 3, 4, 5], leader=-2)
    return b


def boundaries(batches: list[bytes]) -> set[int]:
    return {sum(map(len, batches[:i])) for i in range(len(batches) + 1)}


def test_a_segment_rewritten_past_the_read_position_between_two_polls_is_not_read_from_mid_batch(tmp_path, caplog):
    """The CI failure of 2026-11-26 (Kafka 3.9, test_tailed_events_equal_the_offline_import): the log was
    truncated and written again beyond our position before the next poll, which then read the middle of
    a batch as its start ("message set magic 0"). The tail now checks the last batch it read is still
    there, and re-locates its next offset when it is not."""
    b, b2 = build(), other_history()
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(12))
    position = t.position
    write(seg(tmp_path, 0), b.batches[:9] + b2.batches[9:], "r+b")  # same file (inode), rewritten in place
    assert position not in boundaries(b.batches[:9] + b2.batches[9:])  # the old position is inside a batch
    got = t.poll()
    assert offsets(got) == list(range(12, len(b2.batches)))
    assert [r.data for r in got] == b2.batches[12:]
    assert "rewritten under the reader" in caplog.text


def test_a_rewrite_that_keeps_the_batch_boundary_is_found_too(tmp_path, caplog):
    b = build()
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    t = KRaftTail(tmp_path, "c1")
    t.poll()
    same_sizes = history(LogBuilder())  # same lengths, other values: [2, 1] for [1, 2], [3, 2, 1] for [1, 2, 3]
    for i in range(20):
        change(same_sizes, T1, i % 2, isr=[3, 2, 1] if i % 2 else [2, 1], leader=-2)
    assert [len(x) for x in same_sizes.batches] == [len(x) for x in b.batches]
    write(seg(tmp_path, 0), same_sizes.batches[:14], "r+b")
    got = t.poll()
    assert [r.data for r in got] == same_sizes.batches[12:14]
    assert "rewritten under the reader" in caplog.text


def test_a_segment_replaced_by_a_new_file_of_the_same_name_is_read_from_its_start(tmp_path):
    b, b2 = build(), other_history()
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    t = KRaftTail(tmp_path, "c1")
    t.poll()
    seg(tmp_path, 0).unlink()  # Kafka's truncateFullyAndStartAt: the segment deleted, a new one created
    write(seg(tmp_path, 0), b2.batches[:16], "wb")
    assert [r.data for r in t.poll()] == b2.batches[12:16]


def test_an_unreadable_batch_in_an_unchanged_file_is_read_again_then_an_error_naming_file_and_byte(
        tmp_path, monkeypatch):
    b = build()
    write(seg(tmp_path, 0), b.batches[:10], "wb")
    bad = bytearray(b.batches[10])
    bad[-1] ^= 0xFF  # CRC mismatch
    write(seg(tmp_path, 0), [bytes(bad)])
    t = KRaftTail(tmp_path, "c1")
    assert offsets(t.poll()) == list(range(10))
    assert t.poll() == []  # within the grace: read again later, no error yet
    monkeypatch.setattr(live, "UNREADABLE_GRACE_S", 0.0)
    at = sum(map(len, b.batches[:10]))
    with pytest.raises(KRaftError, match=rf"cannot read .*{seg(tmp_path, 0).name} at byte {at}: .*CRC-32C mismatch"):
        t.poll()


def test_resume_where_the_log_was_rewritten_since_relocates_instead_of_reading_mid_batch(tmp_path):
    b, b2 = build(), other_history()
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    first = KRaftTail(tmp_path, "c1").poll()
    write(seg(tmp_path, 0), b.batches[:9] + b2.batches[9:], "r+b")
    got = KRaftTail(tmp_path, "c1", resume=_resume_from(first)).poll()
    assert [r.data for r in got] == b2.batches[12:]


def _resume_from(raws: list[TailRecord]) -> TailRecord:
    return raws[-1]  # what the worker finds as the raw topic's last record


def test_restart_from_the_last_raw_record_continues_without_gap_or_duplicate(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    first = KRaftTail(tmp_path, "c1").poll()
    write(seg(tmp_path, 0), b.batches[12:15])
    write(seg(tmp_path, 15), b.batches[15:], "wb")
    again = KRaftTail(tmp_path, "c1", resume=_resume_from(first)).poll()
    assert offsets(first) + offsets(again) == list(range(len(b.batches)))
    assert not any(r.kind == "GAP" for r in again)


def test_restart_after_the_last_file_was_deleted_resumes_from_the_next_segment(tmp_path):
    b = build(20)
    write(seg(tmp_path, 0), b.batches[:12], "wb")
    first = KRaftTail(tmp_path, "c1").poll()
    write(seg(tmp_path, 12), b.batches[12:], "wb")
    snapshot(tmp_path, 12, [])
    seg(tmp_path, 0).unlink()  # deleted after it was read completely: no gap
    got = KRaftTail(tmp_path, "c1", resume=_resume_from(first)).poll()
    assert not any(r.kind == "GAP" for r in got)
    assert offsets(got) == list(range(12, len(b.batches)))
