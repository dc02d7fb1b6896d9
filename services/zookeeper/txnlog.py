"""Reading ZooKeeper's transaction logs, ``dataDir/version-2/log.<first zxid, hex>`` (FileTxnLog).

A log is a FileHeader {int magic "ZKLG"; int version 2; long dbid} and then entries, each
``long checksum`` (Adler32 of the transaction bytes), ``int length`` + the transaction bytes, and the
end-of-record byte ``'B'``. Files are pre-allocated: zeros follow the last entry, and a zero length is
the end (as FileTxnIterator reads it). A file that ends inside an entry (a copy that raced an append)
is reported as ``partial_tail``, not an error: ZooKeeper itself drops such a last transaction.

``on_error="skip"`` steps over a corrupt entry: it searches forward for the next entry whose length,
end-of-record byte and checksum all hold, records the skipped bytes (and the zxids around them) in
``skipped`` and goes on.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from schemas.raw import SkippedBytes

from .errors import CorruptTxnError, NotAZooKeeperFileError, ZooKeeperFileError
from .jute import JuteError
from .records import Txn, decode_txn

LOG_MAGIC = 0x5A4B4C47  # "ZKLG"
SNAP_MAGIC = 0x5A4B534E  # "ZKSN"
FILE_VERSION = 2
HEADER = struct.Struct(">iiq")
ENTRY = struct.Struct(">qi")  # checksum, length
EOR = 0x42  # 'B'
MAX_TXN_BYTES = 0xFFFFF + 1024 * 1024  # jute.maxbuffer's default (1 MB - 1) and room for the header

LOG_RE = re.compile(r"^log\.([0-9a-fA-F]+)$")
SNAPSHOT_RE = re.compile(r"^snapshot\.([0-9a-fA-F]+)(\.gz|\.snappy)?$")


@dataclass(frozen=True)
class SkippedTxns(SkippedBytes):
    """A stretch of a transaction log skipped with --on-error skip, between the transactions it lies between."""

    after_zxid: int | None  # the last good transaction before the stretch (None: none in this file)
    next_zxid: int | None  # the first good one after it (None: the file ended)

    def around(self) -> str:
        around = ", ".join(f"{k} zxid {z:#x}" for k, z in (("after", self.after_zxid), ("before", self.next_zxid))
                           if z is not None)
        return f" ({around})" if around else ""


def log_start_zxid(path: Path | str) -> int | None:
    m = LOG_RE.match(Path(path).name)
    return int(m.group(1), 16) if m else None


def snapshot_zxid(path: Path | str) -> int | None:
    m = SNAPSHOT_RE.match(Path(path).name)
    return int(m.group(1), 16) if m else None


def txn_logs(directory: Path | str) -> list[Path]:
    """The ``log.*`` files of a ``version-2`` directory, in zxid order."""
    d = Path(directory)
    return sorted((p for p in d.iterdir() if log_start_zxid(p) is not None),
                  key=log_start_zxid)  # type: ignore[arg-type]  # not None for every path the filter keeps


class TxnLogReader:
    """The transactions of one log file, in file order (which is zxid order)."""

    def __init__(self, path: Path | str, *, on_error: str = "raise"):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be raise or skip, not {on_error!r}")
        self.path = Path(path)
        self.name = str(self.path)
        self.on_error = on_error
        self.dbid: int | None = None
        self.skipped: list[SkippedTxns] = []
        self.partial_tail: int | None = None  # byte position of an entry the file ends inside
        self.end_position: int | None = None  # where the entries end (the pre-allocated zeros begin)
        self.count = 0

    def __iter__(self) -> Iterator[Txn]:
        # read whole: a log is at most its pre-allocated size (64 MB by default), and the entries'
        # bodies are sliced from it without copying
        data = self.path.read_bytes()
        if not data:
            raise NotAZooKeeperFileError("empty file, not a ZooKeeper transaction log", file=self.name, position=0)
        yield from self._entries(memoryview(data), len(data))

    def _header(self, buf: memoryview, size: int) -> None:
        if size < HEADER.size:
            raise NotAZooKeeperFileError(f"{size} bytes, shorter than the {HEADER.size}-byte file header",
                                         file=self.name, position=0)
        magic, version, self.dbid = HEADER.unpack_from(buf, 0)
        if magic != LOG_MAGIC:
            what = "a ZooKeeper snapshot" if magic == SNAP_MAGIC else f"magic {magic:#010x}"
            raise NotAZooKeeperFileError(f"not a ZooKeeper transaction log ({what}, expected ZKLG)",
                                         file=self.name, position=0)
        if version != FILE_VERSION:
            raise NotAZooKeeperFileError(f"transaction log format version {version}, expected 2",
                                         file=self.name, position=4)

    def _entries(self, buf: memoryview, size: int) -> Iterator[Txn]:
        self._header(buf, size)
        pos, last_zxid = HEADER.size, None
        while True:
            if pos + ENTRY.size > size:
                if any(buf[pos:size]):
                    self.partial_tail = pos
                self.end_position = pos
                return
            checksum, length = ENTRY.unpack_from(buf, pos)
            if length == 0 and checksum == 0:
                self.end_position = pos
                return
            try:
                txn = self._entry(buf, size, pos, checksum, length)
            except _PartialEntry:
                self.partial_tail = self.end_position = pos
                return
            except CorruptTxnError as e:
                if self.on_error == "raise":
                    raise CorruptTxnError(e.reason, file=self.name, position=pos, after_zxid=last_zxid) from None
                nxt = self._resync(buf, size, pos + 1)
                nxt_txn = None if nxt is None else self._entry(buf, size, nxt, *ENTRY.unpack_from(buf, nxt))
                self.skipped.append(SkippedTxns(self.name, pos, size if nxt is None else nxt, e.reason, last_zxid,
                                                None if nxt_txn is None else nxt_txn.zxid))
                if nxt is None:
                    self.end_position = size
                    return
                pos = nxt
                continue
            self.count += 1
            last_zxid = txn.zxid
            yield txn
            pos += ENTRY.size + length + 1

    def _entry(self, buf: memoryview, size: int, pos: int, checksum: int, length: int) -> Txn:
        if length < 0 or length > MAX_TXN_BYTES:
            raise CorruptTxnError(f"transaction length {length} is not possible (max {MAX_TXN_BYTES})")
        body_at = pos + ENTRY.size
        if body_at + length + 1 > size:
            raise _PartialEntry()
        body = buf[body_at:body_at + length]
        actual = zlib.adler32(body)
        if actual != checksum & 0xFFFFFFFF or checksum >> 32:
            raise CorruptTxnError(f"Adler32 checksum mismatch: stored {checksum:#x}, computed {actual:#x}")
        if buf[body_at + length] != EOR:
            raise CorruptTxnError(f"end-of-record byte is {buf[body_at + length]:#04x}, expected 0x42 ('B')")
        try:
            return decode_txn(body, file=self.name, position=pos)
        except (JuteError, ValueError) as e:
            raise CorruptTxnError(f"transaction record does not parse: {e}") from None

    def _resync(self, buf: memoryview, size: int, start: int) -> int | None:
        """The next position at which a whole, checksum-valid entry starts."""
        for p in range(start, size - ENTRY.size):
            checksum, length = ENTRY.unpack_from(buf, p)
            if length <= 0 or length > MAX_TXN_BYTES or checksum >> 32 or p + ENTRY.size + length >= size:
                continue
            if buf[p + ENTRY.size + length] != EOR:
                continue
            if zlib.adler32(buf[p + ENTRY.size:p + ENTRY.size + length]) == checksum:
                try:
                    decode_txn(buf[p + ENTRY.size:p + ENTRY.size + length])
                except (JuteError, ValueError):
                    continue
                return p
        return None


class _PartialEntry(Exception):
    """The file ends inside this entry."""


def read_txn_log(path: Path | str, *, on_error: str = "raise") -> list[Txn]:
    return list(TxnLogReader(path, on_error=on_error))


__all__ = ["LOG_MAGIC", "SNAP_MAGIC", "SkippedTxns", "TxnLogReader", "ZooKeeperFileError", "log_start_zxid",
           "read_txn_log", "snapshot_zxid", "txn_logs"]
