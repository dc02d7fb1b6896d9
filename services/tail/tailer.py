"""Follow a live ``__cluster_metadata-0`` directory.

`LogTailer.step()` reads whatever is on disk now and returns it as items, never blocking:
  * `Batch` — one record batch's decoded records (only records after the last one returned);
  * `Gap` — offsets that were deleted (retention) before they were read: recorded, never hidden;
  * `Snapshot` — a `.checkpoint`'s full image, read to bootstrap after a gap (or at a fresh start
    on a directory whose segment 0 is already gone).
`follow()` is the plain synchronous generator around it (sleeps `poll_interval` when idle).

What it copes with: new batches in the active segment; a partial batch at the end of the active
segment (it waits at that batch's position and re-reads it when complete); segment rolls (a
newer segment exists: the older one is read to its end once more, then left); segments deleted
before they were read; a restart from a stored `TailPosition` (file, byte position, last offset).

What it does not: Raft truncation of uncommitted records on a follower (a file that shrinks below
the read position) is reported as `TailError`, since records already handed out can then have
been uncommitted; tail the active controller's directory, or a node with a stable leader.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from services.kraft import KRaftError, LogReader, snapshot_id
from services.kraft.batch import Batch as RawBatch
from services.kraft.files import SEGMENT_RE, SNAPSHOT_RE, segment_base_offset


class TailError(KRaftError):
    """The directory changed in a way the tailer cannot follow without losing or inventing records."""


@dataclass(frozen=True)
class TailPosition:
    """Where to continue: the segment file name, the byte position of the next batch in it, and
    the offset of the last record returned (-1: none yet)."""

    file: str
    position: int
    last_offset: int

    def to_dict(self) -> dict:
        return {"file": self.file, "position": self.position, "last_offset": self.last_offset}

    @classmethod
    def from_dict(cls, d: dict) -> "TailPosition":
        return cls(d["file"], int(d["position"]), int(d["last_offset"]))


@dataclass(frozen=True)
class Batch:
    file: str
    batch: RawBatch
    records: list


@dataclass(frozen=True)
class Gap:
    from_offset: int
    to_offset: int
    reason: str
    event_time_ms: int = -1


@dataclass(frozen=True)
class Snapshot:
    path: str
    end_offset: int
    batches: list = field(default_factory=list)  # [(RawBatch, [records])]

    @property
    def last_time(self) -> int:
        return max((b.max_timestamp for b, _ in self.batches), default=-1)


def _segments(d: Path) -> list[tuple[int, Path]]:
    out = []
    for name in os.listdir(d):
        if SEGMENT_RE.match(name):
            out.append((int(name[:20]), d / name))
    return sorted(out)


def _snapshots(d: Path) -> list[tuple[int, Path]]:
    out = []
    for name in os.listdir(d):
        if SNAPSHOT_RE.match(name):
            out.append((snapshot_id(name).end_offset, d / name))
    return sorted(out)


class LogTailer:
    """Tails one node's metadata partition directory. Not thread-safe."""

    def __init__(self, directory: str | Path, *, start: TailPosition | None = None, poll_interval: float = 0.5,
                 on_error: str = "raise", sleep: Callable[[float], None] = time.sleep) -> None:
        self.dir = Path(directory)
        self.poll_interval = poll_interval
        self.on_error = on_error
        self.sleep = sleep
        self.file: Path | None = self.dir / start.file if start else None
        self.pos = start.position if start else 0
        self.last_offset = start.last_offset if start else -1
        self.waiting_partial: int | None = None  # byte position of a partial batch we wait on
        self.records_read = 0

    # --- state ---------------------------------------------------------------------------------

    @property
    def position(self) -> TailPosition | None:
        if self.file is None:
            return None
        return TailPosition(self.file.name, self.pos, self.last_offset)

    # --- driving -------------------------------------------------------------------------------

    def follow(self, stop: Callable[[], bool] | None = None) -> Iterator[Batch | Gap | Snapshot]:
        """Yield items forever (or until `stop()`), sleeping `poll_interval` when there is nothing new."""
        while stop is None or not stop():
            items = self.step()
            yield from items
            if not items:
                self.sleep(self.poll_interval)

    def step(self) -> list[Batch | Gap | Snapshot]:
        """Everything readable now (possibly nothing)."""
        out: list[Batch | Gap | Snapshot] = []
        for _ in range(10_000):  # segments per step, a bound against a directory changing under us
            segments = _segments(self.dir)
            if not segments:
                return out
            if self.file is None or not self.file.exists():
                if not self._locate(segments, out):
                    return out
                continue
            n = self._read_current(out)
            base = segment_base_offset(self.file)
            newer = [p for b, p in segments if b > base]
            if self.waiting_partial is not None or not newer:
                return out
            # The segment rolled. Anything appended to it happened before the roll, which happened
            # before we listed the newer segment: one more read sees all of it.
            if n:
                continue
            self.file, self.pos = newer[0], 0
        return out

    # --- internals -----------------------------------------------------------------------------

    def _locate(self, segments: list[tuple[int, Path]], out: list) -> bool:
        """Pick the segment holding offset last_offset + 1 (fresh start or file gone). Bootstraps
        from a snapshot when those offsets were deleted. False: nothing to read yet."""
        want = self.last_offset + 1
        first = segments[0][0]
        if first <= want:
            holding = [p for b, p in segments if b <= want][-1]
            self.file, self.pos = holding, 0  # records <= last_offset are skipped while reading
            return True
        # Offsets [want, first) are gone. Bootstrap from the first snapshot that reaches the retained
        # segments (the "next" snapshot: the smallest gap), recording what was lost.
        snaps = [(e, p) for e, p in _snapshots(self.dir) if e >= first]
        if not snaps:
            if want == 0:
                raise TailError(f"the segments start at offset {first} and no snapshot covers the history "
                                f"before it", file=str(self.dir))
            raise TailError(f"offsets {want}..{first - 1} were deleted before they were read and no snapshot "
                            f"reaches offset {first}", file=str(self.dir))
        end, path = snaps[0]
        try:
            reader = LogReader(path, on_error=self.on_error)
            batches = list(reader.batches())
        except FileNotFoundError:
            return True  # deleted while we looked: list again
        except OSError:
            return True
        if end > want:
            t = batches[0][0].max_timestamp if batches else -1
            out.append(Gap(want, end - 1, f"offsets {want}..{end - 1} were deleted (retention) before they were "
                                          f"read; state bootstrapped from snapshot {path.name}", t))
        out.append(Snapshot(str(path), end, batches))
        self.last_offset = max(self.last_offset, end - 1)
        holding = [p for b, p in segments if b <= end]
        self.file, self.pos = (holding[-1] if holding else segments[0][1]), 0
        return True

    def _read_current(self, out: list) -> int:
        """Read the current segment from `pos`; returns the number of batches appended to `out`."""
        try:
            size = os.stat(self.file).st_size
        except FileNotFoundError:
            return 0
        if size < self.pos:
            raise TailError(f"the segment shrank to {size} bytes below the read position {self.pos} "
                            f"(Raft truncation?)", file=str(self.file))
        if size == self.pos:
            return 0
        reader = LogReader(self.file, on_error=self.on_error, live=True, start_position=self.pos)
        n = 0
        try:
            for batch, records in reader.batches():
                self.pos = reader.next_position
                if batch.last_offset <= self.last_offset:
                    continue
                fresh = [r for r in records if r.offset > self.last_offset]
                self.last_offset = batch.last_offset
                if fresh:
                    self.records_read += len(fresh)
                    out.append(Batch(str(self.file), batch, fresh))
                    n += 1
        except FileNotFoundError:
            return n
        self.pos = reader.next_position
        self.waiting_partial = reader.partial_tail.position if reader.partial_tail is not None else None
        return n
