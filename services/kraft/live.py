"""The live tail of a KRaft node's ``__cluster_metadata-0`` directory: each committed record batch, with its
position, as the files grow.

``KRaftTail``, given where its reader stands (the last record it handed on, after a restart), finds its place
again in the files, follows segment rolls, and when the segment holding the next offset was deleted by
retention before it was read, says so (a GAP) and bootstraps from the oldest snapshot that reaches the
retained segments. Given the quorum's high watermark it hands on only batches below it: a replica's log may
hold an uncommitted tail that a new controller truncates after a failover, and that must never become an
event. A log truncated or rewritten under the reader is found and read again from the right place.

It reads files only; publishing its records (services/capture/sources.py, to the raw topic) and the high
watermark (DescribeQuorum) are the capture's.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import IO, Protocol, cast

from schemas.raw import RawRecord
from services.kraft.errors import KRaftError, TruncatedLogError
from services.kraft.batch import read_batch
from services.kraft.files import SnapshotId, bootstrap_snapshot, metadata_files, segment_base_offset, snapshot_id

log = logging.getLogger(__name__)

CHUNK = 16 * 1024 * 1024  # > KRaft's largest batch (8 MiB)
ANCHOR = 21  # a batch's base offset, length, leader epoch, magic and CRC: what says which batch it is
UNREADABLE_GRACE_S = 30.0  # how long an unreadable batch in an unchanged file is read again before it is an error


def now_ms() -> int:
    return int(time.time() * 1000)


def _snapshot_id(path: Path) -> SnapshotId:
    """The id in the name of a snapshot file (every path given here is one: listed as one, or read as one)."""
    return cast(SnapshotId, snapshot_id(path))


# What the tail reads is the raw topic's record as the capture publishes it (schemas/raw.py).
TailRecord = RawRecord


class Resumable(Protocol):
    """What the tail resumes after: the last record its reader kept (a TailRecord, or the capture's RawRecord
    read back from the raw topic)."""

    @property
    def kind(self) -> str: ...
    @property
    def position(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def data(self) -> bytes: ...
    @property
    def file(self) -> str | None: ...


class KRaftTail:
    """Where a KRaft source stands, and what it reads next. Not thread-safe."""

    def __init__(self, directory: str | Path, cluster_id: str, node_id: int = -1,
                 resume: Resumable | None = None) -> None:
        self.dir = Path(directory)
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.next_offset = 0
        self.file: Path | None = None
        self.position = 0
        self._snapshot_redo: Path | None = None
        # (inode or None, start, first ANCHOR bytes) of the last batch read in self.file: before reading on,
        # the tail checks that batch is still there, so a log truncated and rewritten past our position
        # between two polls (a replica after a failover) is found, not read from the middle of a batch
        self._anchor: tuple[int | None, int, bytes] | None = None
        self._unreadable: tuple[int, int, float] | None = None  # (inode, position, first seen) of a bad batch
        if resume is not None:
            self._resume(resume)

    # -- resume ---------------------------------------------------------------------------------
    def _resume(self, r: Resumable) -> None:
        if r.kind == "KRAFT_BATCH":
            self.next_offset = r.last_offset + 1
            f = Path(r.file) if r.file else None
            if f is not None and f.parent == self.dir and f.exists():
                self.file, self.position = f, r.position + len(r.data)
                self._anchor = (None, r.position, bytes(r.data[:ANCHOR]))
        elif r.kind in ("SNAPSHOT_BEGIN", "SNAPSHOT_BATCH"):
            # the worker died inside a snapshot: publish it again from its start (events dedupe by position)
            self.next_offset = r.base_offset
            self._snapshot_redo = Path(r.file) if r.file else None
        elif r.kind == "SNAPSHOT_END":
            self.next_offset = r.base_offset
        elif r.kind == "GAP":
            self.next_offset = r.last_offset + 1

    # -- reading --------------------------------------------------------------------------------
    def _raw(self, kind: str, data: bytes = b"", file: Path | None = None, position: int = 0, base: int = 0,
             last: int = 0, epoch: int = -1, append: int = -1, control: str | None = None,
             reason: str | None = None) -> TailRecord:
        return TailRecord(self.cluster_id, self.node_id, kind, position, base, last, epoch,
                         append if append >= 0 else now_ms(), now_ms(), data,
                         str(file) if file else None, control, reason)

    def _segments(self) -> list[tuple[int, Path]]:
        return sorted((base, p) for p in metadata_files(self.dir) if (base := segment_base_offset(p)) is not None)

    def _snapshot(self, path: Path) -> list[TailRecord]:
        sid = _snapshot_id(path)
        out = [self._raw("SNAPSHOT_BEGIN", file=path, base=sid.end_offset, last=sid.end_offset, epoch=sid.epoch)]
        buf = path.read_bytes()
        pos, last_time = 0, -1
        while pos < len(buf):
            b = read_batch(buf, pos, str(path))
            out.append(self._raw("SNAPSHOT_BATCH", bytes(buf[pos:b.end_position]), path, pos, b.base_offset,
                                 b.last_offset, b.leader_epoch, b.max_timestamp,
                                 "control" if b.is_control else None))
            last_time = max(last_time, b.max_timestamp)
            pos = b.end_position
        out.append(self._raw("SNAPSHOT_END", file=path, base=sid.end_offset, last=sid.end_offset,
                             epoch=sid.epoch, append=last_time))
        return out

    def _locate(self) -> list[TailRecord]:
        """Find the file holding next_offset; a GAP and a snapshot when it is gone."""
        out: list[TailRecord] = []
        snap: Path | None
        if self._snapshot_redo is not None:
            snap, self._snapshot_redo = self._snapshot_redo, None
            if snap.exists():
                out += self._snapshot(snap)
                self.next_offset = _snapshot_id(snap).end_offset
        segs = self._segments()
        if not segs:
            return out
        first = segs[0][0]
        if first > self.next_offset:
            cut: dict[Path, str] = {}
            snap = bootstrap_snapshot(first, metadata_files(self.dir), cut)
            for p, why in cut.items():  # never an image: a newer whole one, or a later poll, is waited for
                log.warning("%s: %s; not used as an image", p, why)
            if snap is None:
                return out  # no usable snapshot yet: Kafka writes one before deleting; try again
            end = _snapshot_id(snap).end_offset
            if end > self.next_offset:
                out.append(self._raw("GAP", base=self.next_offset, last=end - 1,
                                     reason=f"offsets [{self.next_offset}, {end - 1}] were deleted from {self.dir} "
                                            f"before they were read; state bootstrapped from {snap.name}"))
                out += self._snapshot(snap)
                self.next_offset = end
        holder = [p for base, p in segs if base <= self.next_offset]
        self.file, self.position, self._anchor = (holder[-1] if holder else segs[0][1]), 0, None
        return out

    def _rewritten(self, fo: IO[bytes], inode: int) -> bool:
        """The last batch we read is no longer where we read it: the file was truncated and written
        again, or replaced, since (our position may now be inside another batch)."""
        if self._anchor is None:
            return False
        ino, start, head = self._anchor
        if ino is not None and ino != inode:
            return True
        fo.seek(start)
        return fo.read(ANCHOR) != head

    def _rewritten_since(self, inode: int) -> bool:
        assert self.file is not None  # poll's, which it was reading
        try:
            with open(self.file, "rb") as fo:
                return self._rewritten(fo, inode) or os.fstat(fo.fileno()).st_ino != inode
        except FileNotFoundError:
            return True

    def _relocate_rewritten(self) -> list[TailRecord]:
        log.warning("%s was rewritten under the reader at or before byte %d (a replica's log truncated after a "
                    "failover); re-locating offset %d", self.file, self.position, self.next_offset)
        self.file, self._anchor, self._unreadable = None, None, None
        return self._locate()

    def _bad_batch(self, inode: int, at: int, exc: KRaftError) -> None:
        """An unreadable batch in a file that was not rewritten: read it again on the next polls (a write
        in progress), and fail when it stays unreadable at the same place for UNREADABLE_GRACE_S."""
        now = time.monotonic()
        if self._unreadable is None or self._unreadable[:2] != (inode, at):
            self._unreadable = (inode, at, now)
            log.warning("%s: unreadable batch at byte %d (%s); reading it again for up to %.0f s",
                        self.file, at, exc.reason, UNREADABLE_GRACE_S)
        if now - self._unreadable[2] >= UNREADABLE_GRACE_S:
            raise KRaftError(f"cannot read {self.file} at byte {at}: {exc}") from None

    def poll(self, committed_end: int | None = None, max_batches: int = 100_000) -> list[TailRecord]:
        """The next batches whose offsets are all below `committed_end` (None: no gate)."""
        out: list[TailRecord] = []
        if self.file is None or not self.file.exists():
            out += self._locate()
            if self.file is None:
                return out
        while len(out) < max_batches:
            # set: each re-locate below that may find no file returns then
            assert self.file is not None
            try:
                with open(self.file, "rb") as fo:
                    st = os.fstat(fo.fileno())
                    size, inode = st.st_size, st.st_ino
                    rewritten = size >= self.position and self._rewritten(fo, inode)
                    fo.seek(self.position)
                    buf = fo.read(CHUNK)
            except FileNotFoundError:
                self.file = None
                out += self._locate()
                if self.file is None:
                    return out
                continue
            if size < self.position:
                log.warning("%s shrank to %d bytes below our position %d (truncated); re-locating",
                            self.file, size, self.position)
                self.file = None
                out += self._locate()
                if self.file is None:  # deleted too since, and nothing yet to go on from
                    return out
                continue
            if rewritten:
                out += self._relocate_rewritten()
                if self.file is None:
                    return out
                continue
            pos, blocked, last, bad = 0, False, -1, None
            while pos < len(buf) and len(out) < max_batches:
                try:
                    b = read_batch(buf, pos, str(self.file))
                except TruncatedLogError:
                    break  # the writer is inside this batch: wait for the rest
                except KRaftError as exc:
                    bad = exc
                    break
                if committed_end is not None and b.last_offset >= committed_end:
                    blocked = True
                    break
                if b.last_offset >= self.next_offset:
                    if b.base_offset > self.next_offset:
                        out.append(self._raw("GAP", base=self.next_offset, last=b.base_offset - 1,
                                             reason=f"offsets [{self.next_offset}, {b.base_offset - 1}] missing "
                                                    f"before {self.file.name}:{self.position + pos}"))
                    out.append(self._raw("KRAFT_BATCH", bytes(buf[pos:b.end_position]), self.file,
                                         self.position + pos, b.base_offset, b.last_offset, b.leader_epoch,
                                         b.max_timestamp, "control" if b.is_control else None))
                    self.next_offset = b.last_offset + 1
                last, pos = pos, b.end_position
            if last >= 0:
                self._anchor = (inode, self.position + last, bytes(buf[last:last + ANCHOR]))
                self._unreadable = None
            self.position += pos
            if bad is not None:
                if self._rewritten_since(inode):  # between our check and our read
                    out += self._relocate_rewritten()
                    if self.file is None:
                        return out
                    continue
                self._bad_batch(inode, self.position, bad)
                return out
            if blocked or len(out) >= max_batches:
                return out
            if pos < len(buf) or len(buf) == CHUNK:
                if pos == 0:
                    return out  # partial batch at the tail
                continue
            # at the end of this file: move on if a later segment exists
            later = [(base, p) for base, p in self._segments() if p.name > self.file.name]
            if not later:
                return out
            if os.stat(self.file).st_size != self.position:
                continue  # appended to between our read and the roll: read the rest first
            self.file, self.position, self._anchor = later[0][1], 0, None
        return out
