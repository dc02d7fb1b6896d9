"""CRC-32C (Castagnoli), the checksum of record batch v2.

Uses the ``crc32c`` package (hardware-accelerated) when installed, else ``google_crc32c``, else
a table-driven pure-Python fallback that is correct but slow (~10 MB/s)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .wire import Buf as Buffer  # what the readers hand over: bytes, bytearray, memoryview, mmap


def _table() -> list[int]:
    poly = 0x82F63B78  # reversed Castagnoli polynomial
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c_pure(data: Buffer, crc: int = 0) -> int:
    c = crc ^ 0xFFFFFFFF
    t = _TABLE
    for b in bytes(data):
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


crc32c: Callable[[Buffer], int]
try:
    import crc32c as _c
    crc32c, BACKEND = _c.crc32c, "crc32c"
except ImportError:
    try:
        import google_crc32c as _g
        crc32c, BACKEND = (lambda d: _g.value(bytes(d))), "google_crc32c"
    except ImportError:
        crc32c, BACKEND = crc32c_pure, "pure-python"
