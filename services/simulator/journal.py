"""Stamps simulated controller decisions as ControllerEvents: position, times, who decided.

Every metadata record gets the next simulated metadata log offset (index 0, or 0..n-1 for the
events one record expands to, e.g. a topic deletion); offset samples are not records, so they carry
the offset current when sampled and a running index after it, which keeps event ids unique.
The offset also skips ahead with time, as the controller's periodic NoOpRecords do.

With `zookeeper`, events come out as a ZooKeeper-mode cluster's history would carry them: sourced
ZOOKEEPER, no metadata.version, and brokers that are only registered or gone (a fence is the broker's
znode going, an unfence its registration; a fenced registration and a controlled shutdown leave no
znode change). Every check then runs with its ZooKeeper exemptions. The znode split of a partition's
state (assignment and LeaderAndIsr written apart) is not modelled: handmade cases cover it.

The journal holds the controller's view, `delta` (a `schemas.state.delta.ImageBuilder`): every event is applied
to it as it is emitted, in the shape emitted (a ZooKeeper-mode broker change as a ZooKeeper cluster shows
it; what it does not show is not applied). `put`, not `replay`: the simulator's events are not chained
yet, and its breaches are meant to break the rules `replay` checks; the image follows what the simulated
controller wrote either way. The controller id and epoch it stamps on events stay its own
(`controller_id`, `controller_epoch`): a breach writes a stale ControllerChange on purpose, which the image
takes as the controller until the quorum's next one, while the journal goes on from the real one. An event a
breach takes back (state_continuity's lost event) stays applied: the change happened, its record was lost.
"""
from __future__ import annotations

import random
from dataclasses import replace
from collections import deque
from typing import TypeGuard

from hashlib import sha256

from schemas.state.delta import ImageBuilder
from schemas.event_ids import event_id
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, ControllerEvent, FeatureLevelChange, Payload, SourceKind,
    SourcePosition,
)

_SIM = SourceKind.SIMULATOR
NOOP_INTERVAL_MS = 500  # metadata.max.idle.interval.ms: a NoOpRecord per half second of quiet


class Journal:
    def __init__(self, cluster_id: str, rng: random.Random, start_time_ms: int, metadata_version: int,
                 zookeeper: bool = False) -> None:
        self.cluster_id = cluster_id
        self.rng = rng
        self.time_ms = start_time_ms
        self.offset = -1  # last metadata record written
        self.sample_index = 0
        self.seq = 0  # events created so far = seq of the next one
        self.controller_id = -1
        self.controller_epoch = -1
        self.metadata_version: int | None = None if zookeeper else metadata_version
        self.zookeeper = zookeeper
        self.kind = SourceKind.ZOOKEEPER if zookeeper else _SIM
        self.out: deque[ControllerEvent] = deque()
        self.delta = ImageBuilder()  # the controller's view: every emitted event, applied as emitted
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
        return self._emit(SourcePosition(self.kind, offset, index), payload, controller)

    def sample(self, payload: Payload) -> ControllerEvent:
        self.sample_index += 1
        return self._emit(SourcePosition(self.kind, max(self.offset, 0), self.sample_index), payload, None)

    def _emit(self, src: SourcePosition, payload: Payload, controller: tuple[int, int] | None) -> ControllerEvent:
        cid, cepoch = controller if controller is not None else (self.controller_id, self.controller_epoch)
        captured = self.time_ms + 3 + int(self.rng.random() * 40)  # drawn for every decision, shown or not
        if self.zookeeper:
            zk_payload = _as_zookeeper(payload)
            if zk_payload is None:  # nothing a ZooKeeper-mode cluster would show: not emitted
                return ControllerEvent("", self.cluster_id, -1, src, self.time_ms, self.time_ms, cid, cepoch, payload)
            payload = zk_payload
            eid = event_id(self.cluster_id, src)
        else:
            # = schemas.event_ids.event_id(cluster_id, src) for a simulator position (tested), without the
            # generic formatting.
            eid = sha256(f"{self._id_prefix}{src.offset}|{src.index}|None|None|None".encode()).hexdigest()[:32]
        e = ControllerEvent(eid, self.cluster_id, self.seq, src, self.time_ms, captured, cid, cepoch, payload,
                            self.metadata_version)  # positional: twice as fast for frozen dataclasses
        self.seq += 1
        self.out.append(e)
        self.delta.put(e)
        return e


def _as_zookeeper(payload: Payload) -> Payload | None:
    """The payload as a ZooKeeper-mode history carries it, or None when such a cluster shows nothing."""
    if isinstance(payload, FeatureLevelChange):
        return None
    if not isinstance(payload, BrokerChange):
        return payload
    def live(s: BrokerState | None) -> TypeGuard[BrokerState]:  # ZooKeeper: registered = live
        return s is not None and not s.fenced
    before = replace(payload.before, in_controlled_shutdown=False) if live(payload.before) else None
    after = replace(payload.after, in_controlled_shutdown=False) if live(payload.after) else None
    if (before is None) == (after is None):
        return None  # a fenced registration, a controlled shutdown, a fence of a fenced broker
    kind = BrokerChangeKind.REGISTERED if after is not None else BrokerChangeKind.UNREGISTERED
    return BrokerChange(payload.broker_id, kind, before, after)
