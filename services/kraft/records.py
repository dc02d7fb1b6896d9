"""Metadata records: the frame inside a record value, the decoded record objects, and the
per-batch decode loop (the hot path).

Value layout (AbstractApiMessageSerde): uvarint frameVersion (=1) | uvarint apiKey |
uvarint version | message body. Nothing may follow the body.
"""

from __future__ import annotations

import json
import logging
import mmap
import struct
from typing import Any

from .batch import Batch, records_region
from .errors import CorruptBatchError, RecordDecodeError
from .fields import Message
from .messages import CATALOGUE, DecodeFailure, MessageVersion
from .wire import Buf, VarintError, read_uvarint, read_varint, read_varlong

log = logging.getLogger(__name__)

FRAME_VERSION = 1
# apiKey -> schema name, and (apiKey << 16 | version) -> compiled message version
BY_API_KEY: dict[int, str] = {mv.api_key: mv.name for mv in CATALOGUE.values()
                              if mv.api_key is not None}
_DISPATCH: dict[int, MessageVersion] = {mv.api_key << 16 | mv.version: mv
                                        for mv in CATALOGUE.values() if mv.api_key is not None}
_DECODE_ERRORS = (DecodeFailure, IndexError, struct.error, VarintError, UnicodeDecodeError,
                  ValueError)


def dumps(obj: object) -> str:
    """Compact JSON as Jackson writes it (no spaces, non-ASCII kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Record:
    """Common position of every record: which file, batch and offset, and the batch's epoch."""

    __slots__ = ("offset", "timestamp", "batch")

    def __init__(self, offset: int, timestamp: int, batch: Batch) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.batch = batch

    @property
    def file(self) -> str | None:
        return self.batch.file

    @property
    def batch_offset(self) -> int:
        return self.batch.base_offset

    @property
    def position(self) -> int:
        """Byte position of the record's batch in its file."""
        return self.batch.position

    @property
    def leader_epoch(self) -> int:
        """The batch's partitionLeaderEpoch: the KRaft (controller) epoch that appended it."""
        return self.batch.leader_epoch

    @property
    def append_time(self) -> int:
        return self.batch.max_timestamp

    @property
    def is_control(self) -> bool:
        return self.batch.is_control


class MetadataRecord(Record):
    """A decoded metadata record. ``data`` is a dict keyed by Kafka's JSON field names."""

    __slots__ = ("mv", "data")

    def __init__(self, offset: int, timestamp: int, batch: Batch, mv: MessageVersion, data: Message) -> None:
        # not through Record.__init__: one call less per record on the Python decode path
        self.offset = offset
        self.timestamp = timestamp
        self.batch = batch
        self.mv = mv
        self.data = data

    @property
    def api_key(self) -> int:
        return self.mv.api_key  # type: ignore[return-value]  # a metadata record's message version has one

    @property
    def version(self) -> int:
        return self.mv.version

    @property
    def name(self) -> str:
        """Schema name, e.g. ``PartitionChangeRecord``."""
        return self.mv.name

    @property
    def type(self) -> str:
        """MetadataRecordType name, e.g. ``PARTITION_CHANGE_RECORD``."""
        return self.mv.type_name

    def to_dict(self) -> dict[str, Any]:
        """What DumpLogSegments --cluster-metadata-decoder prints as ``payload``."""
        return {"type": self.mv.type_name, "version": self.mv.version,
                "data": self.mv.render(self.data)}

    def to_json(self) -> str:
        return dumps(self.to_dict())

    def __repr__(self) -> str:
        return f"MetadataRecord(offset={self.offset}, {self.mv.name} v{self.mv.version}, {self.data})"


class UnknownRecord(Record):
    """A record this decoder cannot interpret: unknown apiKey/version, or a value that does not
    match its schema. Kept, so nothing is dropped silently; its raw value stays in memory (for
    comparisons with Kafka's own tools) and never reaches an archive (redaction.withheld)."""

    __slots__ = ("api_key", "version", "value", "error")

    def __init__(self, offset: int, timestamp: int, batch: Batch, api_key: int | None,
                 version: int | None, value: bytes, error: str) -> None:
        Record.__init__(self, offset, timestamp, batch)
        self.api_key = api_key
        self.version = version
        self.value = value
        self.error = error

    @property
    def type(self) -> str:
        return "UNKNOWN"

    def __repr__(self) -> str:
        return (f"UnknownRecord(offset={self.offset}, apiKey={self.api_key}, "
                f"version={self.version}, {len(self.value)} bytes: {self.error})")


_warned: set[tuple[int | None, int | None, str]] = set()


def _unknown(offset: int, ts: int, b: Batch, value: Buf, api_key: int | None, version: int | None,
             why: str) -> UnknownRecord:
    key = (api_key, version, why.split(":")[0])
    if key not in _warned:
        _warned.add(key)
        log.warning("%s: offset %d: %s; kept without its value", b.file, offset, why)
    return UnknownRecord(offset, ts, b, api_key, version, bytes(value), why)


def decode_value(buf: Buf, start: int, end: int) -> tuple[MessageVersion | None, int, int, Message | None]:
    """Decode one framed metadata value. Returns (mv or None if unknown, apiKey, version, data)."""
    frame, pos = read_uvarint(buf, start)
    if frame != FRAME_VERSION:
        if frame == 0:
            raise DecodeFailure("Could not deserialize metadata record with frame version 0 "
                                "(the 2.8 KRaft preview format)")
        raise DecodeFailure(f"unknown metadata record frame version {frame}")
    api_key, pos = read_uvarint(buf, pos)
    version, pos = read_uvarint(buf, pos)
    if api_key > 0x7FFF or version > 0x7FFF:
        raise DecodeFailure(f"apiKey {api_key} / version {version} out of range")
    mv = _DISPATCH.get(api_key << 16 | version)
    if mv is None:
        return None, api_key, version, None
    data, pos = mv.decode(buf, pos, end)
    if pos != end:
        if pos > end:
            raise DecodeFailure(f"{mv.name} v{version} runs {pos - end} byte(s) past the value")
        raise DecodeFailure(f"Found {end - pos} byte(s) of garbage after {mv.name} v{version}")
    return mv, api_key, version, data


# Zigzag value of every one- and two-byte varint, indexed by the unsigned value: one list index
# instead of the shifts and xor (lengths and offset deltas under 8192 take at most two bytes).
_ZZ = [(u >> 1) ^ -(u & 1) for u in range(1 << 14)]
# The three frame bytes of a value (frame version 1, one-byte apiKey and version) -> decoder:
# one slice and one lookup instead of three indexings and checks.
_FRAMES: dict[bytes, MessageVersion] = {bytes([FRAME_VERSION, mv.api_key, mv.version]): mv
                                        for mv in _DISPATCH.values()
                                        if mv.api_key is not None  # always, in _DISPATCH
                                        and mv.api_key < 0x80 and mv.version < 0x80}


def decode_data_batch(buf: Buf, b: Batch, *, on_error: str = "raise") -> list[Record]:
    """Decode every record of a (non-control) batch. This loop is the decoder's hot path: one-
    and two-byte varints are read inline (offset deltas of batches over 63 records take two
    bytes), and the frame of a typical value costs three indexings."""
    rbuf, pos, end = records_region(buf, b)
    if rbuf.__class__ is not bytes and rbuf.__class__ is not mmap.mmap:
        # a bytearray or memoryview: slices would be unhashable (frame lookup, tail caches)
        rbuf = bytes(rbuf[pos:end]); pos, end = 0, end - pos
    out: list[Record] = []
    append = out.append
    base_off = b.base_offset
    base_ts = b.base_timestamp
    frames = _FRAMES
    zz = _ZZ
    MR = MetadataRecord
    errors = _DECODE_ERRORS
    try:
        for _ in range(b.count):
            c = rbuf[pos]
            if c < 0x80:
                length = zz[c]; pos += 1
            elif rbuf[pos + 1] < 0x80:  # records of 64..8191 bytes: two-byte varint
                length = zz[(c & 0x7F) | (rbuf[pos + 1] << 7)]; pos += 2
            else:
                length, pos = read_varint(rbuf, pos)
            rec_end = pos + length
            c = rbuf[pos + 1]  # after the attributes byte (unused)
            if c < 0x80:
                tsd = zz[c]; pos += 2
            else:
                tsd, pos = read_varlong(rbuf, pos + 1)
            c = rbuf[pos]
            if c < 0x80:
                offd = zz[c]; pos += 1
            elif rbuf[pos + 1] < 0x80:
                offd = zz[(c & 0x7F) | (rbuf[pos + 1] << 7)]; pos += 2
            else:
                offd, pos = read_varint(rbuf, pos)
            if rbuf[pos] == 1:  # null key, as BatchBuilder always writes
                pos += 1
            else:
                klen, pos = read_varint(rbuf, pos)
                pos += max(klen, 0)
            c = rbuf[pos]
            if c < 0x80:
                vlen = zz[c]; pos += 1
            elif rbuf[pos + 1] < 0x80:
                vlen = zz[(c & 0x7F) | (rbuf[pos + 1] << 7)]; pos += 2
            else:
                vlen, pos = read_varint(rbuf, pos)
            vstart = pos
            pos += vlen
            vend = pos
            if rbuf[pos] == 0:
                pos += 1
            else:
                pos = _skip_headers(rbuf, pos, rec_end)
            if pos != rec_end or vlen < 0 or rec_end > end:
                raise CorruptBatchError(
                    f"record at offset {base_off + offd} declared {length} bytes but used "
                    f"{length + pos - rec_end}", file=b.file, position=b.position,
                    batch_offset=base_off, record_offset=base_off + offd)
            # frame: three one-byte uvarints in every record Kafka writes today
            if vlen >= 3:
                mv = frames.get(rbuf[vstart:vstart + 3])
                if mv is not None:
                    try:
                        data, p = mv.decode(rbuf, vstart + 3, vend)
                    except errors as e:
                        append(_bad_value(rbuf, vstart, vend, b, base_off + offd, base_ts + tsd, e,
                                          on_error))
                        continue
                    if p == vend:
                        append(MR(base_off + offd, base_ts + tsd, b, mv, data))
                        continue
            append(_slow_value(rbuf, vstart, vend, b, base_off + offd, base_ts + tsd, on_error))
    except (IndexError, VarintError) as e:
        raise CorruptBatchError(f"record framing runs past the batch ({e})", file=b.file,
                                position=b.position, batch_offset=base_off) from None
    if pos != end:
        raise CorruptBatchError(f"{end - pos} byte(s) after the last of {b.count} records",
                                file=b.file, position=b.position, batch_offset=base_off)
    return out


def _skip_headers(buf: Buf, pos: int, end: int) -> int:
    n, pos = read_varint(buf, pos)
    if n < 0 or n > end - pos:  # each header takes at least two bytes: a count beyond the record is damage
        raise VarintError(f"{n} headers in {end - pos} bytes")
    for _ in range(n):
        k, pos = read_varint(buf, pos)
        if k < 0:  # a header key is never null; a negative length would step back and loop
            raise VarintError(f"header key of length {k}")
        pos += k
        v, pos = read_varint(buf, pos)
        pos += max(v, 0)
    return pos


def _slow_value(buf: Buf, vstart: int, vend: int, b: Batch, offset: int, ts: int, on_error: str) -> Record:
    """Multi-byte frame varints, unknown apiKey/version, or trailing bytes."""
    try:
        mv, api_key, version, data = decode_value(buf, vstart, vend)
    except _DECODE_ERRORS as e:
        return _bad_value(buf, vstart, vend, b, offset, ts, e, on_error)
    if mv is None:
        known = BY_API_KEY.get(api_key)
        why = (f"unknown version {version} of {known} (apiKey {api_key})" if known
               else f"unknown metadata apiKey {api_key} (version {version})")
        return _unknown(offset, ts, b, buf[vstart:vend], api_key, version, why)
    return MetadataRecord(offset, ts, b, mv, data)  # type: ignore[arg-type]  # data is set whenever mv is


def _bad_value(buf: Buf, vstart: int, vend: int, b: Batch, offset: int, ts: int, e: Exception,
               on_error: str) -> Record:
    msg = f"cannot decode metadata record: {e}"
    if on_error == "raise":
        raise RecordDecodeError(msg, file=b.file, position=b.position, batch_offset=b.base_offset,
                                record_offset=offset) from None
    api_key = buf[vstart + 1] if vend - vstart > 1 else None
    version = buf[vstart + 2] if vend - vstart > 2 else None
    return _unknown(offset, ts, b, buf[vstart:vend], api_key, version, msg)
