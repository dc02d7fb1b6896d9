"""Jute's BinaryInputArchive, the encoding of every ZooKeeper record: big-endian int/long, one-byte
boolean, ``buffer`` and ``ustring`` as an int length (-1 = null) and the bytes, ``vector`` as an int
count (-1 = null) and the elements. Only reading; positions are relative to the buffer given."""

from __future__ import annotations

import builtins
import struct

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


class JuteError(ValueError):
    """A record does not fit its bytes (a length past the end, a negative count)."""


class JuteReader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise JuteError(f"needs {n} bytes at {p}, {self.end - p} left")
        self.pos = p + n
        return p

    # Below, int and bool in the class body name these methods: the types are builtins.int and builtins.bool.

    def int(self) -> int:
        return _INT.unpack_from(self.buf, self._need(4))[0]  # type: ignore[no-any-return]  # ">i" unpacks an int

    def long(self) -> builtins.int:
        return _LONG.unpack_from(self.buf, self._need(8))[0]  # type: ignore[no-any-return]  # ">q" unpacks an int

    def bool(self) -> builtins.bool:
        return self.buf[self._need(1)] != 0

    def buffer(self) -> bytes | None:
        n = self.int()
        if n == -1:
            return None
        p = self._need(n)
        return bytes(self.buf[p:p + n])

    def ustring(self) -> str | None:
        b = self.buffer()
        if b is None:
            return None
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JuteError(f"string is not UTF-8 ({e.reason})") from None

    def count(self) -> builtins.int:
        """A vector's element count; null (-1) reads as empty."""
        n = self.int()
        if n < -1 or n > self.remaining():  # every element is at least one byte
            raise JuteError(f"vector count {n} does not fit in {self.remaining()} bytes")
        return max(n, 0)
