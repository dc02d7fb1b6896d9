"""Events-topic sends in record batches, straight to the aiokafka producer under Faust.

Why: a Faust `topic.send()` per event costs ~100 µs of Python (PendingMessage, codec lookups, callbacks,
then aiokafka's `send`, which serializes and appends one message at a time) — at a burst's rate that is
most of a core. Events are appended to an aiokafka BatchBuilder (C record-batch builder) instead, and a
batch is handed to the producer (`send_batch`) when it is full or when the producer can take the next
one: aiokafka sends one request per partition at a time and `send_batch` waits until the batch before
is on its way, so the open batch collects whatever the pipeline emits during one round trip. A batch per
raw message would cap a burst at one raw message (~1000 events) per acks=all round trip.

Order: there is one open batch; batches are taken from it and queued under one lock, all to the events
topic's only partition through the one producer, whose partition queue keeps them in order — so events
land in chain order (and after the replayed ones a restarted worker sends first). Delivery is not awaited
(that would serialize on round trips); failures are checked before each new send and raise
`DeliveryFailed`, and the pipeline then rebuilds itself from the events topic (the restart story in
logic.py) instead of chaining on past a hole.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from schemas.events import ControllerEvent
from services.capture.logic import PROGRESS_HEADER


class DeliveryFailed(Exception):
    """A batch of events was not written to the events topic."""


class BatchSender:
    """`await send(out)` appends CaptureState.process output [(event, progress header, value)] to the open
    batch. `producer_of()` gives an aiokafka AIOKafkaProducer (or anything with create_batch/send_batch);
    it is called per send because Faust creates its producer when the app starts."""

    def __init__(self, producer_of, topic: str, partition: int = 0) -> None:
        self.producer_of = producer_of
        self.topic = topic
        self.partition = partition
        self.pending: list[asyncio.Future] = []
        self.batches = 0
        self._open = None  # the batch being filled
        self._lock = asyncio.Lock()  # taking + queueing a batch, in order
        self._flusher: asyncio.Task | None = None
        self._error: BaseException | None = None

    def check(self) -> None:
        """Raise DeliveryFailed for the first failed delivery; forget the delivered ones."""
        if self._error is not None:
            exc, self._error = self._error, None
            self.pending = []
            raise DeliveryFailed(f"events batch not queued: {exc!r}")
        still = []
        for f in self.pending:
            if not f.done():
                still.append(f)
            elif f.cancelled() or f.exception() is not None:
                self.pending = []
                raise DeliveryFailed(f"events batch not delivered: {f.exception() if not f.cancelled() else 'cancelled'}")
        self.pending = still

    async def send(self, out: Sequence[tuple[ControllerEvent, bytes, bytes]]) -> None:
        self.check()
        if not out:
            return
        producer = self.producer_of()
        for event, header, value in out:
            item: dict[str, Any] = {"timestamp": None, "key": event.cluster_id.encode(), "value": value,
                                    "headers": [(PROGRESS_HEADER, header)]}
            if self._open is None:
                self._open = producer.create_batch()
            if self._open.append(**item) is None:  # full: queue it, start the next one
                await self._submit(producer)
                self._open = producer.create_batch()
                if self._open.append(**item) is None:
                    raise DeliveryFailed(f"an event of {len(value)} bytes does not fit in an empty batch")
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_open(producer))

    async def _submit(self, producer) -> None:
        async with self._lock:
            batch, self._open = self._open, None
            if batch is not None:
                # returns once the batch is queued: when the one before it has left for the broker
                self.pending.append(await producer.send_batch(batch, self.topic, partition=self.partition))
                self.batches += 1

    async def _flush_open(self, producer) -> None:
        try:
            while self._open is not None:
                await self._submit(producer)
        except Exception as exc:  # surfaced by the next send (check)
            self._error = exc

    async def flush(self) -> None:
        """Queue the open batch and wait for every delivery (tests, shutdown)."""
        if self._flusher is not None:
            await self._flusher
        await self._flush_open(self.producer_of()) if self._open is not None else None
        if self.pending:
            await asyncio.wait(self.pending)
        self.check()
