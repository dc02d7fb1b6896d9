"""Tailed records -> ControllerEvents (KRaftNormalizer), with restart from a stored position.

`EventTailer.step()` returns the events the newly read records commit. After a restart from a
stored `TailPosition`, the normalizer's image is first rebuilt silently from the directory (the
snapshot/segments up to the stored last offset; their events were emitted before the restart),
so the first event after the restart carries the right state before, and none is emitted twice.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from schemas.events import ControllerEvent
from services.normalize.kraft import KRaftNormalizer
from services.tail.tailer import Batch, Gap, LogTailer, Snapshot, TailPosition


class EventTailer:
    def __init__(self, directory: str | Path, cluster_id: str, *, node_id: int = -1,
                 start: TailPosition | None = None, poll_interval: float = 0.5, on_error: str = "raise",
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.norm = KRaftNormalizer(cluster_id, node_id=node_id)
        self.tailer = LogTailer(directory, start=start, poll_interval=poll_interval, on_error=on_error, sleep=sleep)
        self.sleep = sleep
        self.poll_interval = poll_interval
        if start is not None and start.last_offset >= 0:
            self._rebuild(Path(directory), start.last_offset, on_error)

    @property
    def position(self) -> TailPosition | None:
        return self.tailer.position

    def _rebuild(self, directory: Path, upto: int, on_error: str) -> None:
        """Replay the directory from its beginning up to `upto` into the image; drop the events."""
        catch_up = LogTailer(directory, on_error=on_error)
        while catch_up.last_offset < upto:
            items = catch_up.step()
            if not items:
                break
            for item in items:
                if isinstance(item, Snapshot) and item.end_offset - 1 > upto:
                    # The image at the stored offset is gone; the real tailer will record the gap.
                    self.norm = KRaftNormalizer(self.norm.cluster_id, node_id=self.norm.node_id)
                    return
                self._apply(item, limit=upto)
        self.norm.last_offset = max(self.norm.last_offset, upto)

    def _apply(self, item, limit: int | None = None) -> list[ControllerEvent]:
        norm = self.norm
        out: list[ControllerEvent] = []
        if isinstance(item, Batch):
            for rec in item.records:
                if limit is not None and rec.offset > limit:
                    break
                out.extend(norm.feed(rec))
        elif isinstance(item, Gap):
            out.append(norm.gap(item.from_offset, item.to_offset, item.reason, item.event_time_ms))
        elif isinstance(item, Snapshot):
            norm.begin_snapshot(item.end_offset)
            for _, records in item.batches:
                for rec in records:
                    out.extend(norm.feed(rec))
            out.extend(norm.end_snapshot(item.last_time))
        return out

    def step(self) -> list[ControllerEvent]:
        out: list[ControllerEvent] = []
        for item in self.tailer.step():
            out.extend(self._apply(item))
        return out

    def follow(self, stop: Callable[[], bool] | None = None) -> Iterator[ControllerEvent]:
        while stop is None or not stop():
            events = self.step()
            yield from events
            if not events:
                self.sleep(self.poll_interval)
