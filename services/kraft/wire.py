"""Wire primitives: protobuf-style varints (unsigned, and zigzag-signed for the record layer),
Kafka's UUID text form, and the matching encoders used by tests and synthetic files."""

from __future__ import annotations

import base64
import mmap
import struct

# What the readers index into: a whole file (bytes, or mmap when resuming mid-file), a decompressed
# batch, or what a caller hands in (bytearray, memoryview). Indexing gives an int in every case.
Buf = bytes | bytearray | memoryview | mmap.mmap

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class VarintError(ValueError):
    pass


def read_uvarint(buf: Buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned LEB128 at ``pos``; returns (value, next_pos). An int32 takes at most 5 bytes."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    end = pos + max_bytes
    pos += 1
    while True:
        if pos >= end:
            raise VarintError(f"varint longer than {max_bytes} bytes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def read_varint(buf: Buf, pos: int) -> tuple[int, int]:
    """Zigzag-signed int32 varint (record layer lengths and deltas)."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    u, pos = read_uvarint(buf, pos, 5)
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: Buf, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    u, pos = read_uvarint(buf, pos, 10)
    return (u >> 1) ^ -(u & 1), pos


def write_uvarint(n: int) -> bytes:
    if n < 0:
        raise VarintError("unsigned varint cannot be negative")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_varint(n: int) -> bytes:
    """Zigzag then LEB128 (works for int32 and int64 alike)."""
    return write_uvarint((n << 1) ^ (n >> 63))


_uuid_cache: dict[bytes, str] = {}


def uuid_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    s = _uuid_cache.get(raw)
    if s is None:
        s = base64.urlsafe_b64encode(raw)[:22].decode("ascii")
        if len(_uuid_cache) < 1_000_000:  # topic/dir ids repeat; bound memory anyway
            _uuid_cache[raw] = s
    return s


def uuid_bytes(s: str) -> bytes:
    raw = base64.urlsafe_b64decode(s + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {s!r}")
    return raw


_I64 = struct.Struct(">q")


def uuid_from_longs(msb: int, lsb: int) -> str:
    return uuid_str(_I64.pack(msb) + _I64.pack(lsb))
