"""Offline import: file planning, snapshot bootstrap, capture gaps, bad files."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.kraft.batch import build_batch
from services.normalize.imports import BadImport, ImportReport
from services.kraft.offline import import_events, plan
from tests.services.kraft.helpers import control_key, control_value
from tests.services.normalize.logs import T1, LogBuilder, broker, change, partition


def history(b: LogBuilder) -> LogBuilder:
    b.leader_change(leader=1, epoch=1)
    b.record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21)
    for bid in (1, 2, 3):
        broker(b, bid)
    b.record("TopicRecord", 0, name="orders", topicId=T1)
    partition(b, T1, 0, [1, 2, 3], [1, 2, 3], leader=1)
    partition(b, T1, 1, [2, 3, 1], [2, 3, 1], leader=2)
    return b


def snapshot(path: Path, end_offset: int, records: list[bytes]) -> Path:
    """A .checkpoint: header control batch, data batch(es), footer control batch (offsets from 0)."""
    header = control_value("SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": 1_700_000_000_000})
    footer = control_value("SnapshotFooterRecord", {"version": 0})
    batches = [build_batch([(control_key(3), header)], base_offset=0, leader_epoch=1, control=True)]
    for i, value in enumerate(records):
        batches.append(build_batch([(None, value)], base_offset=1 + i, leader_epoch=1, timestamp=1_700_000_000_000))
    batches.append(build_batch([(control_key(4), footer)], base_offset=1 + len(records), leader_epoch=1,
                               control=True))
    name = path / f"{end_offset:020d}-{1:010d}.checkpoint"
    name.write_bytes(b"".join(batches))
    return name


def test_log_from_offset_zero_needs_no_snapshot(tmp_path: Path) -> None:
    history(LogBuilder()).write(tmp_path / "00000000000000000000.log")
    snapshot(tmp_path, 5, [])
    assert [p.name for p in plan([tmp_path])] == ["00000000000000000000.log"]


def test_bootstrap_from_snapshot_when_old_segments_are_gone(tmp_path: Path) -> None:
    from tests.services.kraft.helpers import metadata_value

    # The snapshot at offset 100 knows partition 0 (leader 2) and broker 1..3; partition 1 is gone.
    snap_records = [
        metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1}),
        metadata_value("PartitionRecord", 1, {
            "partitionId": 0, "topicId": T1, "replicas": [1, 2, 3], "isr": [2, 3], "removingReplicas": [],
            "addingReplicas": [], "leader": 2, "leaderEpoch": 4, "partitionEpoch": 9,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3}),
    ]
    snapshot(tmp_path, 100, snap_records)
    b = LogBuilder()
    b.offset = 100
    change(b, T1, 0, isr=[2, 3, 1])
    b.write(tmp_path / "00000000000000000100.log")
    report = ImportReport()
    events = list(import_events([tmp_path], "c1", report=report))
    gap, topic, part, after = events
    assert gap.kind == "CaptureGap" and (gap.payload.from_offset, gap.payload.to_offset) == (0, 99)
    assert topic.bootstrap and part.bootstrap and part.source.kind.value == "KRAFT_SNAPSHOT"
    assert part.payload.after.leader_epoch == 4
    assert not after.bootstrap and after.source.offset == 100
    assert after.payload.before.isr == (2, 3) and after.payload.after.partition_epoch == 10
    assert report.gaps and report.records == 5


def test_snapshot_after_history_deletes_what_it_does_not_mention(tmp_path: Path) -> None:
    from services.kraft import LogReader
    from services.kraft.normalizer import KRaftNormalizer
    from tests.services.kraft.helpers import metadata_value

    log = history(LogBuilder()).write(tmp_path / "00000000000000000000.log")
    norm = KRaftNormalizer("c1")
    norm.feed_all(LogReader(log))
    snap = snapshot(tmp_path, 50, [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1}),
                                   metadata_value("PartitionRecord", 1, {
                                       "partitionId": 0, "topicId": T1, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                       "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                                       "partitionEpoch": 0, "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3})])
    norm.begin_snapshot(50)
    events = norm.feed_all(LogReader(snap)) + norm.end_snapshot(1)
    # partition 0 is restated unchanged (no event); partition 1 and brokers 1..3 are gone
    kinds = [(e.kind, e.bootstrap) for e in events]
    assert kinds == [("PartitionChange", True)] + [("BrokerChange", True)] * 3
    assert events[0].payload.partition == 1 and events[0].payload.after is None


def test_corrupt_batch_with_skip_becomes_a_capture_gap(tmp_path: Path) -> None:
    b = history(LogBuilder())
    change(b, T1, 0, isr=[1, 2])
    change(b, T1, 0, isr=[1])
    path = b.write(tmp_path / "00000000000000000000.log")
    data = bytearray(path.read_bytes())
    eighth = sum(len(x) for x in b.batches[:8])  # the batch of offset 8 (isr [1, 2])
    data[eighth + 70] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BadImport, match=r"00000000000000000000.log.*(crc|CRC)"):
        list(import_events([path], "c1"))
    events = list(import_events([path], "c1", on_error="skip"))
    gap = [e for e in events if e.kind == "CaptureGap"]
    assert len(gap) == 1 and (gap[0].payload.from_offset, gap[0].payload.to_offset) == (8, 8)
    last = events[-1].payload
    assert last.after.isr == (1,) and last.before.isr == (1, 2, 3)  # the lost change shows as a jump


def test_not_a_metadata_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(BadImport, match="notes.txt: not a metadata log segment"):
        plan([tmp_path / "notes.txt"])
    with pytest.raises(BadImport, match="no metadata log segments or snapshots"):
        plan([tmp_path / "empty"] if (tmp_path / "empty").mkdir() is None else [])


def test_garbage_named_like_a_segment(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(b"this is not a kafka log at all, not even close" * 3)
    with pytest.raises(BadImport, match="00000000000000000000.log"):
        list(import_events([tmp_path], "c1"))
