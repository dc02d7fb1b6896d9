"""Record batch v2 (magic 2): header, CRC-32C check, decompression, and the record layout.

Layout and constants follow Kafka's DefaultRecordBatch / DefaultRecord. ``build_batch`` writes
batches the way KRaft's BatchBuilder does, for tests and synthetic files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from . import compression
from .crc import crc32c
from .errors import (CompressionError, CorruptBatchError, NotAKafkaLogError, TruncatedLogError,
                     UnsupportedFormatError)
from .wire import Buf, VarintError, read_varint, read_varlong, write_varint

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = 61          # RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12         # baseOffset + batchLength
CRC_START = 21            # the CRC covers attributes .. end of batch
MAX_BATCH_BYTES = 1 << 30  # anything larger is not a batch we could have written

ATTR_COMPRESSION = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


class Batch:
    """One record batch as found in a file: header fields plus where it sits."""

    __slots__ = ("file", "position", "base_offset", "batch_length", "leader_epoch", "magic",
                 "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "count")

    file: str | None
    position: int
    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    def __init__(self, file: str | None, position: int, fields: tuple[int, ...]) -> None:
        self.file = file
        self.position = position
        (self.base_offset, self.batch_length, self.leader_epoch, self.magic, self.crc,
         self.attributes, self.last_offset_delta, self.base_timestamp, self.max_timestamp,
         self.producer_id, self.producer_epoch, self.base_sequence, self.count) = fields

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def end_position(self) -> int:
        return self.position + self.size

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION

    @property
    def compression_name(self) -> str:
        return compression.CODECS.get(self.compression, f"unknown({self.compression})")

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"

    @property
    def append_time(self) -> int:
        """KRaft's BatchBuilder writes the append time as both base and max timestamp."""
        return self.max_timestamp

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    def __repr__(self) -> str:
        return (f"Batch(file={self.file!r}, position={self.position}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, epoch={self.leader_epoch}, count={self.count}, "
                f"control={self.is_control}, codec={self.compression_name})")


def read_batch(buf: Buf, pos: int, file: str | None = None, *, verify_crc: bool = True,
               limit: int | None = None) -> Batch:
    """Parse and check the batch at ``pos``. ``limit`` is where the readable bytes end.

    Raises TruncatedLogError when the batch extends past ``limit`` (the caller decides whether
    that is "wait for more"), CorruptBatchError on a CRC or framing mismatch, and
    UnsupportedFormatError for magic 0/1.
    """
    limit = len(buf) if limit is None else limit
    avail = limit - pos
    if avail < LOG_OVERHEAD:
        raise TruncatedLogError(f"{avail} byte(s) at the end, less than a batch header",
                                file=file, position=pos, missing=LOG_OVERHEAD - avail)
    base_offset, length = struct.unpack_from(">qi", buf, pos)
    if length < HEADER_SIZE - LOG_OVERHEAD or length > MAX_BATCH_BYTES or base_offset < 0:
        raise CorruptBatchError(f"implausible batch header (baseOffset {base_offset}, "
                                f"batchLength {length})", file=file, position=pos,
                                batch_offset=base_offset)
    if avail < LOG_OVERHEAD + length:
        raise TruncatedLogError(f"batch needs {LOG_OVERHEAD + length} bytes, only {avail} present",
                                file=file, position=pos, batch_offset=base_offset,
                                missing=LOG_OVERHEAD + length - avail)
    magic = buf[pos + 16]
    if magic != 2:
        if magic in (0, 1):
            raise UnsupportedFormatError(f"message set magic {magic} (only v2 batches are read)",
                                         file=file, position=pos, batch_offset=base_offset)
        raise CorruptBatchError(f"unknown magic byte {magic}", file=file, position=pos,
                                batch_offset=base_offset)
    b = Batch(file, pos, HEADER.unpack_from(buf, pos))
    if verify_crc:
        actual = crc32c(memoryview(buf)[pos + CRC_START:pos + LOG_OVERHEAD + length])
        if actual != b.crc:
            raise CorruptBatchError(f"CRC-32C mismatch: stored {b.crc}, computed {actual}",
                                    file=file, position=pos, batch_offset=base_offset)
    if b.count < 0 or b.last_offset_delta < 0:
        raise CorruptBatchError(f"negative record count {b.count} or last offset delta",
                                file=file, position=pos, batch_offset=base_offset)
    return b


def records_region(buf: Buf, b: Batch) -> tuple[Buf, int, int]:
    """(buffer, start, end) holding the batch's records, decompressing if needed."""
    start = b.position + HEADER_SIZE
    end = b.position + b.size
    codec = b.attributes & ATTR_COMPRESSION
    if codec == 0:
        return buf, start, end
    try:
        data = compression.decompress(codec, memoryview(buf)[start:end])
    except compression.MissingCodec as e:
        raise CompressionError(f"batch is {compression.CODECS.get(codec)}-compressed but the "
                               f"Python package {e} is not installed", file=b.file,
                               position=b.position, batch_offset=b.base_offset) from None
    except Exception as e:  # any codec failure is corrupt input, not a bug of ours
        raise CompressionError(f"cannot decompress {b.compression_name} batch: {e}",
                               file=b.file, position=b.position, batch_offset=b.base_offset) from None
    return data, 0, len(data)


@dataclass(frozen=True)
class RawRecord:
    """A record with key/value as bytes (None for null), before any metadata decoding."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def iter_raw_records(buf: Buf, b: Batch) -> Iterator[RawRecord]:
    """All records of a batch, generic (any key/value/headers). Checks the declared sizes."""
    rbuf, pos, end = records_region(buf, b)
    base_ts = b.base_timestamp
    for _ in range(b.count):
        try:
            length, pos = read_varint(rbuf, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise ValueError(f"record length {length} runs past the batch")
            pos += 1  # attributes, unused
            ts_delta, pos = read_varlong(rbuf, pos)
            off_delta, pos = read_varint(rbuf, pos)
            klen, pos = read_varint(rbuf, pos)
            key = None if klen < 0 else bytes(rbuf[pos:pos + klen])
            pos += max(klen, 0)
            vlen, pos = read_varint(rbuf, pos)
            value = None if vlen < 0 else bytes(rbuf[pos:pos + vlen])
            pos += max(vlen, 0)
            nh, pos = read_varint(rbuf, pos)
            if nh < 0 or nh > rec_end - pos:  # each header takes at least two bytes
                raise ValueError(f"{nh} headers in {rec_end - pos} bytes")
            headers = []
            for _h in range(nh):
                hk, pos = read_varint(rbuf, pos)
                if hk < 0:  # a header key is never null; a negative length would step back and loop
                    raise ValueError(f"header key of length {hk}")
                hkey = bytes(rbuf[pos:pos + hk]).decode()
                pos += hk
                hv, pos = read_varint(rbuf, pos)
                headers.append((hkey, None if hv < 0 else bytes(rbuf[pos:pos + hv])))
                pos += max(hv, 0)
            if pos != rec_end:
                raise ValueError(f"record declared {length} bytes but used {length + pos - rec_end}")
        except (ValueError, IndexError, VarintError, UnicodeDecodeError) as e:
            raise CorruptBatchError(f"bad record framing: {e}", file=b.file, position=b.position,
                                    batch_offset=b.base_offset) from None
        yield RawRecord(b.base_offset + off_delta, base_ts + ts_delta, key, value, tuple(headers))
    if pos != end:
        raise CorruptBatchError(f"{end - pos} byte(s) after the last of {b.count} records "
                                "(Incorrect declared batch size)", file=b.file,
                                position=b.position, batch_offset=b.base_offset)


def encode_record(offset_delta: int, key: bytes | None, value: bytes | None,
                  timestamp_delta: int = 0,
                  headers: Sequence[tuple[str, bytes | None]] = ()) -> bytes:
    body = bytearray(b"\x00")
    body += write_varint(timestamp_delta) + write_varint(offset_delta)
    body += write_varint(-1) if key is None else write_varint(len(key)) + key
    body += write_varint(-1) if value is None else write_varint(len(value)) + value
    body += write_varint(len(headers))
    for hk, hv in headers:
        kb = hk.encode()
        body += write_varint(len(kb)) + kb
        body += write_varint(-1) if hv is None else write_varint(len(hv)) + hv
    return write_varint(len(body)) + bytes(body)


def build_batch(records: list[tuple[bytes | None, bytes | None]], *, base_offset: int = 0,
                leader_epoch: int = 0, timestamp: int = 0, control: bool = False,
                codec: int = 0) -> bytes:
    """A v2 batch as KRaft writes it: CreateTime, producer fields -1, record timestamps = batch."""
    body = b"".join(encode_record(i, k, v) for i, (k, v) in enumerate(records))
    body = compression.compress(codec, body)
    attributes = codec | (ATTR_CONTROL if control else 0)
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, timestamp, timestamp,
                            -1, -1, -1, len(records)) + body
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # epoch + magic + crc + rest
    return struct.pack(">qiibI", base_offset, length, leader_epoch, 2, crc) + after_crc


__all__ = ["Batch", "RawRecord", "build_batch", "encode_record", "iter_raw_records",
           "read_batch", "records_region", "HEADER_SIZE", "NotAKafkaLogError"]
