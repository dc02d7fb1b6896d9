"""Stamps simulated controller decisions as ControllerEvents: position, times, who decided.

Every metadata record gets the next simulated metadata log offset (index 0, or 0..n-1 for the
events one record expands to, e.g. a topic deletion); offset samples are not records, so they carry
the offset current when sampled and a running index after it, which keeps event ids unique.
The offset also skips ahead with time, as the controller's periodic NoOpRecords do.
"""
from __future__ import annotations

import random
from collections import deque

from hashlib import sha256

from schemas.events import ControllerEvent, Payload, SourceKind, SourcePosition

_SIM = SourceKind.SIMULATOR
NOOP_INTERVAL_MS = 500  # metadata.max.idle.interval.ms: a NoOpRecord per half second of quiet


class Journal:
    def __init__(self, cluster_id: str, rng: random.Random, start_time_ms: int, metadata_version: int) -> None:
        self.cluster_id = cluster_id
        self.rng = rng
        self.time_ms = start_time_ms
        self.offset = -1  # last metadata record written
        self.sample_index = 0
        self.seq = 0  # events created so far = seq of the next one
        self.controller_id = -1
        self.controller_epoch = -1
        self.metadata_version = metadata_version
        self.out: deque[ControllerEvent] = deque()
        self._idle_ms = 0
        self._id_prefix = f"{cluster_id}|{SourceKind.SIMULATOR.value}|"

    def advance(self, gap_ms: int) -> None:
        self.time_ms += gap_ms
        self._idle_ms += gap_ms
        if self._idle_ms >= NOOP_INTERVAL_MS:
            self.offset += self._idle_ms // NOOP_INTERVAL_MS
            self._idle_ms %= NOOP_INTERVAL_MS

    def next_offset(self) -> int:
        self.offset += 1
        self.sample_index = 0
        self._idle_ms = 0
        return self.offset

    def record(self, payload: Payload, *, index: int = 0, new_offset: bool = True,
               controller: tuple[int, int] | None = None) -> ControllerEvent:
        """A metadata record's event. `new_offset=False` for the 2nd.. events of one record."""
        offset = self.next_offset() if new_offset else self.offset
        return self._emit(SourcePosition(_SIM, offset, index), payload, controller)

    def sample(self, payload: Payload) -> ControllerEvent:
        self.sample_index += 1
        return self._emit(SourcePosition(_SIM, max(self.offset, 0), self.sample_index), payload, None)

    def _emit(self, src: SourcePosition, payload: Payload, controller: tuple[int, int] | None) -> ControllerEvent:
        cid, cepoch = controller if controller is not None else (self.controller_id, self.controller_epoch)
        # = schemas.chain.event_id(cluster_id, src) for a simulator position (tested), without the
        # generic formatting.
        eid = sha256(f"{self._id_prefix}{src.offset}|{src.index}|None|None|None".encode()).hexdigest()[:32]
        e = ControllerEvent(eid, self.cluster_id, self.seq, src, self.time_ms,
                            self.time_ms + 3 + int(self.rng.random() * 40), cid, cepoch, payload,
                            self.metadata_version)  # positional: twice as fast for frozen dataclasses
        self.seq += 1
        self.out.append(e)
        return e
