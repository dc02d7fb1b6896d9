import pytest

from services.kraft import (CompressionError, ControlRecord, CorruptBatchError, LogReader,
                            NotAKafkaLogError, TruncatedLogError, UnsupportedFormatError,
                            metadata_files, snapshot_id)
from services.kraft import compression
from services.kraft.batch import build_batch, iter_raw_records, read_batch

from .helpers import control_key, control_value, data_batch, pcr


def _log(tmp_path, *batches: bytes, name="00000000000000000000.log"):
    f = tmp_path / name
    f.write_bytes(b"".join(batches))
    return f


def _three_batches():
    return [data_batch([pcr(p, leader=p) for p in range(3)], base_offset=0, leader_epoch=1),
            data_batch([pcr(3, isr=[1])], base_offset=3, leader_epoch=1),
            data_batch([pcr(4, leader=-1), pcr(5)], base_offset=4, leader_epoch=2)]


def test_reads_batches_with_positions(tmp_path):
    bs = _three_batches()
    f = _log(tmp_path, *bs)
    r = LogReader(f)
    out = list(r.batches())
    assert [b.base_offset for b, _ in out] == [0, 3, 4]
    assert [b.position for b, _ in out] == [0, len(bs[0]), len(bs[0]) + len(bs[1])]
    assert [rec.offset for _, recs in out for rec in recs] == [0, 1, 2, 3, 4, 5]
    assert [rec.leader_epoch for _, recs in out for rec in recs] == [1, 1, 1, 1, 2, 2]
    assert r.next_position == f.stat().st_size and r.partial_tail is None


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_roundtrip(tmp_path, codec):
    if not compression.available(codec):
        pytest.skip(f"{compression.CODECS[codec]} package not installed")
    values = [pcr(p, isr=[1, 2, 3], leader=1) for p in range(50)]
    f = _log(tmp_path, data_batch(values, base_offset=100, codec=codec))
    (b, recs), = LogReader(f).batches()
    assert b.compression_name == compression.CODECS[codec]
    assert [r.data["partitionId"] for r in recs] == list(range(50))
    assert recs[-1].offset == 149


def test_snappy_raw_and_xerial_framing():
    if not compression.available(2):
        pytest.skip("snappy package not installed")
    data = b"kraft" * 10000
    framed = compression.snappy_compress_xerial(data, block=4096)
    assert framed.startswith(compression.XERIAL_MAGIC) and framed.count(b"") > 0
    assert compression.snappy_decompress(framed) == data
    assert compression.snappy_decompress(compression._snappy_raw_compress(data)) == data


def test_missing_codec_package_is_a_clear_error(tmp_path, monkeypatch):
    f = _log(tmp_path, data_batch([pcr()], codec=1))
    def missing(*a):
        raise compression.MissingCodec("lz4 (or cramjam)")
    monkeypatch.setattr(compression, "decompress", missing)
    with pytest.raises(CompressionError, match="lz4 .* is not installed") as e:
        list(LogReader(f))
    assert e.value.batch_offset == 0 and e.value.file == str(f)


def test_bit_flip_names_file_and_batch(tmp_path):
    bs = _three_batches()
    raw = bytearray(b"".join(bs))
    flip_at = len(bs[0]) + 70  # inside the second batch's records
    raw[flip_at] ^= 0x04
    f = _log(tmp_path, bytes(raw))
    r = LogReader(f)
    got = []
    with pytest.raises(CorruptBatchError) as e:
        for rec in r:
            got.append(rec.offset)
    err = e.value
    assert got == [0, 1, 2]
    assert (err.file, err.batch_offset, err.position) == (str(f), 3, len(bs[0]))
    assert "CRC-32C mismatch" in str(err) and str(f) in str(err)
    assert "\n" not in str(err)


def test_skip_mode_reports_the_skipped_range_and_continues(tmp_path):
    bs = _three_batches()
    raw = bytearray(b"".join(bs))
    raw[len(bs[0]) + 70] ^= 0x04
    f = _log(tmp_path, bytes(raw))
    r = LogReader(f, on_error="skip")
    assert [rec.offset for rec in r] == [0, 1, 2, 4, 5]
    (s,) = r.skipped
    assert (s.start, s.end) == (len(bs[0]), len(bs[0]) + len(bs[1]))
    assert "CRC" in s.reason


def test_skip_mode_resyncs_after_a_garbled_length(tmp_path):
    bs = _three_batches()
    raw = bytearray(b"".join(bs))
    raw[len(bs[0]) + 8:len(bs[0]) + 12] = b"\x7f\xff\xff\xff"  # batchLength nonsense
    f = _log(tmp_path, bytes(raw))
    r = LogReader(f, on_error="skip")
    assert [rec.offset for rec in r] == [0, 1, 2, 4, 5]
    assert r.skipped[0].end == len(bs[0]) + len(bs[1])


def test_truncated_file_yields_whole_batches_then_reports(tmp_path):
    bs = _three_batches()
    raw = b"".join(bs)
    f = _log(tmp_path, raw[:-10])
    got = []
    with pytest.raises(TruncatedLogError) as e:
        for rec in LogReader(f):
            got.append(rec.offset)
    assert got == [0, 1, 2, 3]
    assert e.value.position == len(bs[0]) + len(bs[1]) and e.value.missing == 10
    assert e.value.batch_offset == 4


def test_live_segment_partial_batch_means_wait_for_more(tmp_path):
    bs = _three_batches()
    raw = b"".join(bs)
    f = _log(tmp_path, raw[:-10])
    r = LogReader(f, live=True)
    assert [rec.offset for rec in r] == [0, 1, 2, 3]
    assert r.partial_tail is not None and r.partial_tail.missing == 10
    # the writer finishes the batch; resume where we stopped
    f.write_bytes(raw)
    r2 = LogReader(f, live=True, start_position=r.next_position)
    assert [rec.offset for rec in r2] == [4, 5]
    assert r2.partial_tail is None and r2.next_position == len(raw)


def test_partial_header_at_end(tmp_path):
    bs = _three_batches()
    f = _log(tmp_path, bs[0] + bs[1][:7])
    r = LogReader(f, live=True)
    assert [rec.offset for rec in r] == [0, 1, 2]
    assert r.partial_tail.available == 7


@pytest.mark.parametrize("content", [b"hello, this is not a kafka log file at all\n" * 3,
                                     b'{"json": true}', bytes(100)])
def test_not_a_kafka_log(tmp_path, content):
    f = _log(tmp_path, content, name="notes.txt")
    with pytest.raises(NotAKafkaLogError) as e:
        list(LogReader(f))
    assert str(f) in str(e.value) and e.value.position == 0


def test_empty_file_has_no_records(tmp_path):
    assert list(LogReader(_log(tmp_path, b""))) == []


def test_old_magic_is_unsupported(tmp_path):
    b = bytearray(data_batch([pcr()]))
    b[16] = 1
    f = _log(tmp_path, bytes(b), _three_batches()[1])
    with pytest.raises(UnsupportedFormatError, match="magic 1"):
        list(LogReader(f))


def test_record_count_mismatch_is_corruption(tmp_path):
    b = bytearray(data_batch([pcr(), pcr(1)]))
    b[57:61] = (3).to_bytes(4, "big")  # claims 3 records, has 2
    from services.kraft.crc import crc32c
    b[17:21] = crc32c(bytes(b[21:])).to_bytes(4, "big")
    f = _log(tmp_path, bytes(b))
    with pytest.raises(CorruptBatchError, match="batch"):
        list(LogReader(f))


def test_snapshot_file_with_control_records(tmp_path):
    header = control_value("SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": 77})
    footer = control_value("SnapshotFooterRecord", {"version": 0})
    f = _log(tmp_path,
             build_batch([(control_key(3), header)], base_offset=0, leader_epoch=4, control=True),
             data_batch([pcr(0, leader=1)], base_offset=1, leader_epoch=4),
             build_batch([(control_key(4), footer)], base_offset=2, leader_epoch=4, control=True),
             name="00000000000000000123-0000000004.checkpoint")
    recs = list(LogReader(f))
    assert isinstance(recs[0], ControlRecord) and recs[0].type == "SnapshotHeader"
    assert recs[0].to_json() == '{"version":0,"lastContainedLogTimestamp":77}'
    assert recs[2].to_json() == '{"version":0}' and recs[2].is_control
    assert snapshot_id(f).end_offset == 123 and snapshot_id(f).epoch == 4


def test_metadata_files_order(tmp_path):
    for n in ["00000000000000000000.log", "00000000000000000100.log",
              "00000000000000000100-0000000002.checkpoint", "00000000000000000000.index",
              "quorum-state"]:
        (tmp_path / n).write_bytes(b"")
    assert [p.name for p in metadata_files(tmp_path)] == [
        "00000000000000000000.log", "00000000000000000100-0000000002.checkpoint",
        "00000000000000000100.log"]


def test_generic_raw_record_iterator_handles_keys_and_headers():
    b = build_batch([(b"k", b"v"), (None, None)], base_offset=7, timestamp=5)
    batch = read_batch(b, 0)
    recs = list(iter_raw_records(b, batch))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [(7, b"k", b"v", 5),
                                                                       (8, None, None, 5)]
