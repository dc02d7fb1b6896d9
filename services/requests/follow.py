"""Following a node's authorizer and request logs as Kafka writes them (live capture), position by position.

A `LogFollower` reads one log of one directory (``kafka-request.log`` or ``kafka-authorizer.log``) with the reader
of the offline import (reader.py: the same parsers, the same gaps), whole lines only: a last line still being written
waits for its newline. Each line about a controller-state-changing request becomes `Kept`: its ``ClientRequest``
event (event.py, the import's id: node, log, millisecond and place, so capture and import agree) and the `Position`
after it. What cannot be read becomes `Lost` with the position after it: lines the reader refuses or cannot read
(its gaps), a file truncated under the follower, the file a resumed follower was in gone (rotated away, compressed
or deleted before it was read).

Log4j rolls a log by renaming the live file (``kafka-request.log.2026-11-29-23``, or a number) and opening a new
one. The follower keeps the file it reads open: when the live name points to another file, it reads what is left
of the old one under its new name (a last line without a newline too: nothing will finish it), then the files
rolled after it (found after it by name, the old one by its inode; opened at once, as log4j's numbered files are
renamed at every roll), then the live one. A `Position` names its file by device, inode and a digest of its first
bytes (an inode is reused once a file is deleted), so a follower resumed after a kill -9 finds the file it was in
among the live and rotated ones, reads on from the byte after the last item it handed over, and then the newer
files in order.

`Position.seq` counts a log's kept lines; the capture's normalizer appends a line's event only when its seq is past
the last one the events topic holds for that log (services/capture/logic.py), so a line handed over twice (a
restart re-reads from the last position the raw topic holds) is appended once.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import BinaryIO
from zoneinfo import ZoneInfo

from schemas.event_ids import event_id
from schemas.events import CaptureGap, ControllerEvent, SourceKind, SourcePosition
from services.brokerlogs.layout import KAFKA, Layout
from services.brokerlogs.lines import named_logs
from services.requests.event import to_event
from services.requests.reader import UTC, BadRequestLogs, Reading, read_lines
from schemas.requests.record import RequestLine

log = logging.getLogger(__name__)

HEAD_BYTES = 256  # a file's first bytes whose digest, with its inode, tells it from another
CHUNK_BYTES = 16 << 20  # read per poll and log at most (more than reader.MAX_LINE_BYTES)


@dataclass(frozen=True)
class Position:
    """Where one log is read up to: enough to resume there after a kill -9. `dev` and `ino` 0: the live file from its
    start (nothing read yet)."""
    log: str  # the log's name (kafka-request.log)
    file: str = ""  # the name of the file read (the live one, or a rotated one)
    dev: int = 0
    ino: int = 0
    head: str = ""  # sha256 of the file's first min(HEAD_BYTES, offset) bytes
    offset: int = 0  # the next byte to read
    line: int = 0  # the file's lines read
    seq: int = 0  # the log's lines kept so far (its events' order for the normalizer)
    ms: int = -1  # the last kept line's time, and how many kept lines had that millisecond
    count: int = 0
    lost: int = 0  # the stretches named lost since the last kept line (their order for the normalizer)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @staticmethod
    def from_json(data: bytes) -> Position:
        """The position `to_json` wrote; ValueError for anything else."""
        try:
            d = json.loads(data)
            p = Position(**d)
        except (TypeError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not a request log position: {exc}") from None
        if not all(isinstance(getattr(p, f), int) and not isinstance(getattr(p, f), bool)
                   for f in ("dev", "ino", "offset", "line", "seq", "ms", "count", "lost")) or \
                not all(isinstance(getattr(p, f), str) for f in ("log", "file", "head")):
            raise ValueError("not a request log position: a field of another type")
        return p


@dataclass(frozen=True)
class Kept:
    """A line about a request that changes controller state: its event, and the position after the line."""
    event: ControllerEvent
    line: RequestLine
    position: Position


@dataclass(frozen=True)
class Lost:
    """Lines not read (`first_line`..`last_line` of `file`; -1: unknown), why, and the position after them."""
    file: str
    first_line: int
    last_line: int
    reason: str
    position: Position
    event: ControllerEvent | None = None  # its CaptureGap (a gap of attribution, lost_event) for the chain

    def __str__(self) -> str:
        if self.first_line < 0:
            where = self.file
        elif self.last_line == self.first_line:
            where = f"{self.file}:{self.first_line}"
        else:
            where = f"{self.file}:{self.first_line}..{self.last_line if self.last_line >= 0 else ''}"
        return f"{where}: not read: {self.reason}"


Item = Kept | Lost


def lost_event(cluster_id: str, node_id: int, lost: Lost, now_ms: int) -> ControllerEvent:
    """Lines lost to the follower as a CaptureGap of source REQUEST_LOG (a gap of attribution, as import's gap_events
    make): in the log's order after its kept line `seq` (`offset`), the `lost`-th stretch since (`index` -lost, so its
    id is no line's), noticed at `now_ms`."""
    p = lost.position
    source = SourcePosition(SourceKind.REQUEST_LOG, p.seq, -p.lost, node_id, None, Path(lost.file).name,
                            lost.first_line if lost.first_line > 0 else None)
    return ControllerEvent(event_id(cluster_id, source), cluster_id, 0, source, now_ms, now_ms, -1, -1,
                           CaptureGap(lost.first_line, lost.last_line, str(lost)))


class _Lines(io.BytesIO):
    """Whole lines, with where each ends (`ends[k]`: the byte after line k + 1), as the reader reads them."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.ends: list[int] = []
        self._open = False  # the last read ended inside a line (a line longer than the reader holds)

    def readline(self, size: int | None = -1) -> bytes:
        b = super().readline(-1 if size is None else size)
        if b:
            if self._open:
                self.ends[-1] = self.tell()
            else:
                self.ends.append(self.tell())
            self._open = not b.endswith(b"\n")
        return b


@dataclass
class _Seen(Reading):
    """A Reading that also keeps each gap as the reader finds it, in order."""
    found: list[tuple[int, str]] = field(default_factory=list)

    def gap(self, file: str, line: int, reason: str, after_ms: int = -1) -> None:
        super().gap(file, line, reason, after_ms)
        self.found.append((line, reason))


def _head(fd: int, offset: int) -> str:
    return hashlib.sha256(os.pread(fd, min(HEAD_BYTES, offset), 0)).hexdigest() if offset else ""


class LogFollower:
    """One log of one node's log directory, followed from `resume` (None: the live file from its start)."""

    def __init__(self, directory: Path, name: str, node_id: int, cluster_id: str, resume: Position | None = None,
                 tz: ZoneInfo = UTC, layout: Layout = KAFKA, clock: Callable[[], float] = time.time) -> None:
        self.directory, self.name, self.node_id, self.cluster_id = directory, name, node_id, cluster_id
        self.tz, self.layout, self.clock = tz, layout, clock
        self.pos = resume if resume is not None else Position(name)
        self.fh: BinaryIO | None = None
        self.pending: list[tuple[BinaryIO, str]] = []  # rolled files to read after the one open, and their names
        self._resumed = False

    @property
    def live(self) -> Path:
        return self.directory / self.name

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def poll(self) -> list[Item]:
        """What the files hold past the position now, in order (about CHUNK_BYTES of them at most)."""
        out: list[Item] = []
        if not self._resumed:
            self._resumed = True
            self._resume(out)
        budget = CHUNK_BYTES
        while budget > 0:
            if self.fh is None and not self._next_file():
                break
            assert self.fh is not None
            if self._truncated(out):
                continue
            if self.pos.file == self.name:
                self._named_now()
            n = self._read(out, final=False)
            if n:
                budget -= n
                continue
            if not self._rotated():
                break
            budget -= self._read(out, final=True)  # the rest of a file nothing writes to any more
            self._rolled_on()
        return out

    # --- files ---------------------------------------------------------------------------------

    def _files(self) -> list[Path]:
        """The log's files, oldest first by their names (the live one last); not the compressed ones."""
        try:
            return [f for f in named_logs([self.directory], (self.name,), BadRequestLogs)[0]
                    if not f.name.endswith(".gz")]
        except BadRequestLogs:
            return []

    def _open_all(self, files: list[Path]) -> list[tuple[BinaryIO, str]]:
        """`files` opened now, so that a later rename (log4j's numbered files shift at every roll) changes nothing."""
        out: list[tuple[BinaryIO, str]] = []
        for f in files:
            try:
                out.append((open(f, "rb"), f.name))  # noqa: SIM115 - read in turn, closed after
            except OSError:
                continue
        return out

    def _rolled_on(self) -> None:
        """The open file was rolled and is read to its end: the files rolled after it are read next, then the live
        one. They are the ones after it by name (log4j's dated or numbered suffixes), found by its inode; when it is
        gone already, those changed since it was."""
        assert self.fh is not None
        st = os.fstat(self.fh.fileno())
        self.close()
        for fh, _ in self.pending:
            fh.close()
        ids = self._stats()
        at = next((i for i, (_, s) in enumerate(ids) if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)), None)
        newer = [f for f, _ in ids[at + 1:]] if at is not None else \
            [f for f, s in ids if s.st_mtime_ns >= st.st_mtime_ns and s.st_ino != st.st_ino]
        self.pending = self._open_all(newer)

    def _named_now(self) -> None:
        """The open file's name since log4j renamed it at a roll: the lines read from it now are in that file (kept
        as it was named when it is gone already)."""
        assert self.fh is not None
        st = os.fstat(self.fh.fileno())
        try:
            live = os.stat(self.live)
            if (live.st_dev, live.st_ino) == (st.st_dev, st.st_ino):
                return  # still the live file
        except FileNotFoundError:
            pass  # renamed, the new one not made yet
        now = next((f.name for f, s in self._stats() if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)), None)
        if now is not None:
            self.pos = replace(self.pos, file=now)

    def _stats(self) -> list[tuple[Path, os.stat_result]]:
        """The log's files (`_files`) with their stat, less those renamed or deleted since they were listed."""
        out = []
        for f in self._files():
            try:
                out.append((f, f.stat()))
            except OSError:
                continue
        return out

    def _resume(self, out: list[Item]) -> None:
        p = self.pos
        if p.ino == 0:
            return  # nothing read yet: the live file from its start
        files = self._files()
        for i, f in enumerate(files):
            try:
                st = f.stat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) != (p.dev, p.ino) or st.st_size < p.offset:
                continue
            fh = open(f, "rb")  # noqa: SIM115 - kept open while the file is read
            if _head(fh.fileno(), p.offset) != p.head:
                fh.close()
                continue
            self.fh, self.pending = fh, self._open_all(files[i + 1:])
            self.pos = replace(p, file=f.name)
            log.info("request log %s: resumed in %s at line %d (byte %d)", self.live, f.name, p.line, p.offset)
            return
        self.pos = replace(p, file=self.name, dev=0, ino=0, head="", offset=0, line=0)
        out.append(self._lost(p.file, p.line + 1, -1, f"the file read up to line {p.line} (byte {p.offset}, inode "
                              f"{p.ino}) is gone or was rewritten before the rest was read (rotated away, compressed or "
                              f"deleted): any lines it held after line {p.line}, and those of any file rolled after it, "
                              f"are not read; reading on at the start of {self.name}"))

    def _next_file(self) -> bool:
        """Open the next file to read: a rolled one still pending, else the live one (from its start, unless it
        is the one the position names: the first poll)."""
        p = self.pos
        if self.pending:
            self.fh, name = self.pending.pop(0)
            st = os.fstat(self.fh.fileno())
            self.pos = replace(p, file=name, dev=st.st_dev, ino=st.st_ino, head="", offset=0, line=0)
            return True
        try:
            fh = open(self.live, "rb")  # noqa: SIM115
        except FileNotFoundError:
            return False  # not there yet, or between a rename and the new file
        st = os.fstat(fh.fileno())
        if (st.st_dev, st.st_ino) == (p.dev, p.ino) and p.ino:
            fh.close()
            return False  # the file just finished, not rolled yet: only after a rotation is a file closed
        self.fh = fh
        self.pos = replace(p, file=self.name, dev=st.st_dev, ino=st.st_ino, head="", offset=0, line=0)
        return True

    def _rotated(self) -> bool:
        """Whether the open file is one nothing writes to any more: a rotated one, or the live name now another's."""
        if self.pending:
            return True
        try:
            st = os.stat(self.live)
        except FileNotFoundError:
            return False  # between the rename and the new file: wait for the new one
        return (st.st_dev, st.st_ino) != (self.pos.dev, self.pos.ino)

    def _truncated(self, out: list[Item]) -> bool:
        assert self.fh is not None
        p, fd = self.pos, self.fh.fileno()
        if os.fstat(fd).st_size >= p.offset and _head(fd, p.offset) == p.head:
            return False
        self.pos = replace(p, head="", offset=0, line=0)
        out.append(self._lost(p.file, p.line + 1, -1, f"the file was truncated or rewritten under the follower (read "
                              f"up to line {p.line}, byte {p.offset}): what it held after that is lost; reading on at "
                              "its start"))
        return True

    # --- lines ---------------------------------------------------------------------------------

    def _read(self, out: list[Item], final: bool) -> int:
        """Read the open file's whole lines past the position (`final`: a last line without its newline too);
        the bytes read."""
        assert self.fh is not None
        start = self.pos.offset
        self.fh.seek(start)
        data = self.fh.read(CHUNK_BYTES)
        if not final:
            cut = data.rfind(b"\n") + 1
            if cut or len(data) < CHUNK_BYTES:  # (a chunk with no newline at all: a line longer than the reader holds)
                data = data[:cut]  # a partial last line waits for its newline
        if not data:
            return 0
        done = 0
        while done < len(data):
            done += self._parse(data, start, done, out)
        return len(data)

    def _parse(self, data: bytes, start: int, done: int, out: list[Item]) -> int:
        """Read `data[done:]` (the open file's bytes from `start`): its bytes read, all of them unless a line is
        refused (a NUL byte, too much that is not UTF-8), which is named lost and read past."""
        assert self.fh is not None
        fd, name = self.fh.fileno(), self.pos.file
        path = str(self.directory / name)  # its name now, not when it was opened (a roll renames the live file)
        lines, seen, first = _Lines(data[done:]), _Seen(), self.pos.line

        def after(k: int) -> int:  # the file's offset after the chunk's line k (1-based; 0: its start)
            return start + done + (lines.ends[k - 1] if k else 0)

        def gaps(current: int | None) -> None:
            for line, reason in seen.found:
                # the position after the gap: after the line being read when the gap was found if it is that line's
                # own (a refused line), else after the one before (an earlier line found cut short by it)
                k = len(lines.ends) if current is None or line == current else len(lines.ends) - 1
                self._move(fd, after(k), first + k)
                out.append(self._lost(name, line, line, reason))
            seen.found.clear()
        try:
            for r in read_lines(lines, path, seen, self.tz, self.layout, first):
                gaps(r.line)
                self._move(fd, after(len(lines.ends)), first + len(lines.ends))
                out.append(self._kept(r))
            gaps(None)
            self._move(fd, after(len(lines.ends)), first + len(lines.ends))
            return len(data) - done
        except BadRequestLogs as exc:
            gaps(first + len(lines.ends))
            k = len(lines.ends)
            self._move(fd, after(k), first + k)
            out.append(self._lost(name, first + k, first + k, str(exc).split(": ", 2)[-1]))
            return lines.ends[-1] if lines.ends else len(data) - done

    def _move(self, fd: int, offset: int, line: int) -> None:
        p = self.pos
        head = p.head if p.offset >= HEAD_BYTES else _head(fd, offset)
        self.pos = replace(p, offset=offset, line=line, head=head)

    def _lost(self, file: str, first: int, last: int, reason: str) -> Lost:
        self.pos = replace(self.pos, lost=self.pos.lost + 1)
        lost = Lost(file, first, last, reason, self.pos)
        return replace(lost, event=lost_event(self.cluster_id, self.node_id, lost, int(self.clock() * 1000)))

    def _kept(self, r: RequestLine) -> Kept:
        p = self.pos
        place = p.count if r.time_ms == p.ms else 0
        self.pos = replace(p, seq=p.seq + 1, ms=r.time_ms, count=place + 1, lost=0)
        return Kept(to_event(self.cluster_id, self.node_id, r, place, int(self.clock() * 1000)), r, self.pos)
