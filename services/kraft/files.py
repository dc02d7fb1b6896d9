"""Reading ``__cluster_metadata-0`` segments (``*.log``) and snapshots (``*.checkpoint``).

Both are plain sequences of v2 record batches. A segment that is still being written can end
in a partial batch: with ``live=True`` that is reported as ``partial_tail`` ("wait for more",
resume from ``next_position``); otherwise it is a ``TruncatedLogError`` raised after every whole
batch has been yielded. ``on_error="skip"`` steps over a corrupt batch, records the skipped byte
range in ``skipped`` and goes on.
"""

from __future__ import annotations

import logging
import mmap
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, TypedDict, Unpack, cast

from schemas.raw import SkippedBytes

from .batch import HEADER_SIZE, LOG_OVERHEAD, MAX_BATCH_BYTES, Batch, read_batch
from .control import decode_control_batch
from .errors import (CompressionError, CorruptBatchError, KRaftError, NotAKafkaLogError,
                     RecordDecodeError, TruncatedLogError, UnsupportedFormatError)
from . import native
from .records import Record, decode_data_batch
from .wire import Buf

log = logging.getLogger(__name__)

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class SkippedRange(SkippedBytes):
    """A stretch of a metadata log segment skipped with --on-error skip."""


@dataclass(frozen=True)
class PartialTail:
    """The file ends inside a batch: ``available`` bytes of it are there, ``missing`` are not."""

    file: str
    position: int
    available: int
    missing: int | None


@dataclass(frozen=True)
class SnapshotId:
    end_offset: int  # exclusive: the snapshot holds every record with offset < end_offset
    epoch: int


def snapshot_id(path: Path | str) -> SnapshotId | None:
    m = SNAPSHOT_RE.match(Path(path).name)
    return SnapshotId(int(m.group(1)), int(m.group(2))) if m else None


def segment_base_offset(path: Path | str) -> int | None:
    m = SEGMENT_RE.match(Path(path).name)
    return int(m.group(1)) if m else None


def bootstrap_snapshot(first_segment: int | None, snapshots: Iterable[Path],
                       passed_over: dict[Path, str] | None = None) -> Path | None:
    """The snapshot a reader starts from when the retained segments do not begin at offset 0: the oldest
    whole one (``snapshot_problem``) whose end offset reaches the first segment (Kafka writes one before
    retention deletes what it covers), so that the stretch before it is the only gap. None when no whole
    snapshot reaches it (yet). The offline import and the live tail both bootstrap by this rule; the ones not
    whole that would have been chosen go into `passed_over` (path -> why)."""
    # the casts: only paths that snapshot_id names pass the filter's first test
    reaching = sorted((cast(SnapshotId, snapshot_id(p)).end_offset, p) for p in snapshots
                      if snapshot_id(p) is not None
                      and (first_segment is None or cast(SnapshotId, snapshot_id(p)).end_offset >= first_segment))
    for _, p in reaching:
        problem = snapshot_problem(p)
        if problem is None:
            return p
        if passed_over is not None:
            passed_over[p] = problem
    return None


def snapshot_problem(path: Path | str) -> str | None:
    """Why a ``.checkpoint`` is not a whole image of the metadata (None: it is). Kafka writes a snapshot as a
    SnapshotHeader control batch, the records, and a SnapshotFooter control batch, and names it .checkpoint
    only once the footer is written; a copy without either end was cut short (or is not a snapshot), and
    used as an image it would drop everything after the cut. Reads the two end batches, not the records."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open, a device never end
            return "not a regular file"
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return "the snapshot is empty (no SnapshotHeader)"
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        return f"cannot read: {e.strerror}"
    try:
        first = last = pos = 0
        while pos < size:  # the batches' own lengths, to the last one
            length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True) if size - pos >= LOG_OVERHEAD else -1
            if not HEADER_SIZE - LOG_OVERHEAD <= length <= MAX_BATCH_BYTES or pos + LOG_OVERHEAD + length > size:
                return f"the snapshot is cut inside the batch at byte {pos} (no SnapshotFooter)"
            last, pos = pos, pos + LOG_OVERHEAD + length
        ends = []
        for at in (first, last):
            try:
                b = read_batch(buf, at, str(path), limit=size)
                ends.append(decode_control_batch(buf, b) if b.is_control else [])
            except KRaftError as e:
                return f"the batch at byte {at} is unreadable ({e.reason})"
        head, tail = ends
        if not head or getattr(head[0], "type", None) != "SnapshotHeader":
            return "the snapshot does not begin with a SnapshotHeader"
        if not tail or getattr(tail[-1], "type", None) != "SnapshotFooter":
            return f"the snapshot ends at byte {size} without its SnapshotFooter (cut short)"
        return None
    finally:
        buf.close()


def metadata_files(directory: Path | str) -> list[Path]:
    """Segments and snapshots of a ``__cluster_metadata-0`` directory, ordered by offset
    (a snapshot sorts at its end offset, before the segment starting there)."""
    d = Path(directory)
    out: list[tuple[int, int, Path]] = []
    for p in d.iterdir():
        if (s := snapshot_id(p)) is not None:
            out.append((s.end_offset, 0, p))
        elif (b := segment_base_offset(p)) is not None:
            out.append((b, 1, p))
    return [p for _, _, p in sorted(out)]


class LogReader:
    """Iterate the decoded records (metadata and control) of one segment or snapshot file."""

    def __init__(self, path: Path | str, *, on_error: str = "raise", live: bool = False,
                 start_position: int = 0, verify_crc: bool = True, data: bytes | None = None,
                 native_decode: bool | None = None) -> None:
        """``native_decode``: data batches through services.kraft.native (None: when it is built
        and not turned off by CTRLAUDIT_NATIVE=0; False: the Python path, the reference)."""
        if on_error not in ("raise", "skip"):
            raise ValueError("on_error must be 'raise' or 'skip'")
        if native_decode and not native.built():
            raise ValueError("the native KRaft decoder (services.kraft._kraftdecode) is not built")
        self._decode_data = (native.decode_data_batch if (native.available() if native_decode is None
                                                          else native_decode)
                             else decode_data_batch)
        self.path, self.file, self._data = Path(path), str(path), data
        self.on_error, self.live, self.verify_crc = on_error, live, verify_crc
        self.start_position = self.next_position = start_position
        self.partial_tail: PartialTail | None = None
        self.skipped: list[SkippedRange] = []
        self.batch_count = 0
        self.record_count = 0

    @property
    def snapshot(self) -> SnapshotId | None:
        return snapshot_id(self.path)

    def _read(self) -> bytes | mmap.mmap:
        """The file's bytes, indexed by file position. Resuming mid-file maps the file instead
        of copying it, so positions stay absolute at no cost."""
        if self._data is not None:
            return self._data
        with open(self.path, "rb") as f:
            if self.start_position and os.fstat(f.fileno()).st_size > self.start_position:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return f.read()

    def batches(self) -> Iterator[tuple[Batch, list[Record]]]:
        try:
            buf = self._read()
        except OSError as e:
            raise KRaftError(f"cannot read: {e.strerror}", file=self.file) from None
        base = self.start_position
        pos = base
        n = len(buf)
        while pos < n:
            try:
                b = read_batch(buf, pos, self.file, verify_crc=self.verify_crc, limit=n)
                recs = (decode_control_batch(buf, b) if b.is_control
                        else self._decode_data(buf, b, on_error=self.on_error))
            except TruncatedLogError as e:
                self._first_check(buf, pos, base, e)
                self.partial_tail = PartialTail(self.file, pos, n - pos, e.missing)
                self.next_position = pos
                if self.live:
                    return
                if self.on_error == "skip":
                    self._skip(pos, n, e.reason)
                    return
                raise TruncatedLogError(
                    f"file ends inside a batch ({e.reason}); everything before byte {pos} was read",
                    file=self.file, position=pos, batch_offset=e.batch_offset,
                    missing=e.missing) from None
            except (CorruptBatchError, CompressionError, RecordDecodeError, KRaftError) as e:
                self._first_check(buf, pos, base, e)
                if self.on_error != "skip":
                    raise
                nxt = self._resume_after(buf, pos, e)
                self._skip(pos, nxt, e.reason)
                pos = nxt
                self.next_position = pos
                continue
            pos = b.end_position
            self.next_position = pos
            self.batch_count += 1
            self.record_count += len(recs)
            yield b, recs

    def __iter__(self) -> Iterator[Record]:
        for _, recs in self.batches():
            yield from recs

    def read_all(self) -> list[Record]:
        return list(self)

    # ---- error handling -----------------------------------------------------------------------
    def _first_check(self, buf: Buf, pos: int, base: int, err: KRaftError) -> None:
        """A file whose very first batch header is nonsense is not a Kafka log at all."""
        if pos != base or self.batch_count or isinstance(err, UnsupportedFormatError):
            return
        magic_ok = len(buf) > pos + 16 and buf[pos + 16] == 2
        if not magic_ok or "implausible" in err.reason:
            raise NotAKafkaLogError("not a Kafka record-batch file (no v2 batch header at the "
                                    "start)", file=self.file, position=pos) from None

    def _skip(self, start: int, end: int, reason: str) -> None:
        r = SkippedRange(self.file, start, end, reason)
        self.skipped.append(r)
        log.warning("%s", r)

    def _resume_after(self, buf: Buf, pos: int, err: KRaftError) -> int:
        """Where to continue after a bad batch: its declared end if that lands on a good batch
        header (or the end of the file), else the next offset where a valid batch starts."""
        n = len(buf)
        if n - pos >= LOG_OVERHEAD:
            length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
            end = pos + LOG_OVERHEAD + length
            if HEADER_SIZE - LOG_OVERHEAD <= length <= MAX_BATCH_BYTES and end <= n:
                if end == n or self._valid_at(buf, end):
                    return end
        for p in range(pos + 1, n - HEADER_SIZE + 1):
            if buf[p + 16] == 2 and self._valid_at(buf, p):
                return p
        return n

    def _valid_at(self, buf: Buf, p: int) -> bool:
        try:
            read_batch(buf, p, self.file, verify_crc=True)
            return True
        except KRaftError:
            return False


class ReaderOptions(TypedDict, total=False):
    """LogReader's keyword arguments."""

    on_error: str
    live: bool
    start_position: int
    verify_crc: bool
    data: bytes | None
    native_decode: bool | None


def read_records(path: Path | str, **kw: Unpack[ReaderOptions]) -> list[Record]:
    return LogReader(path, **kw).read_all()


def is_active_segment(path: Path | str) -> bool:
    """The highest-offset ``.log`` in its directory is the one Kafka may still be appending to."""
    p = Path(path)
    segs = [q for q in p.parent.iterdir() if SEGMENT_RE.match(q.name)]
    return bool(segs) and max(segs, key=lambda q: q.name).name == p.name


def file_size(path: Path | str) -> int:
    return os.stat(path).st_size
