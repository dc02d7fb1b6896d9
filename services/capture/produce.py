"""Events-topic sends in record batches, straight to the aiokafka producer under Faust.

Why: a Faust `topic.send()` per event costs ~100 µs of Python (PendingMessage, codec lookups, callbacks,
then aiokafka's `send`, which serializes and appends one message at a time) — at a burst's rate that is
most of a core. Events are appended to an aiokafka BatchBuilder (C record-batch builder) instead, and a
batch is handed to the producer (`send_batch`) when it is full or when the producer can take the next
one: aiokafka sends one request per partition at a time and `send_batch` waits until the batch before
is on its way, so the open batch collects whatever the pipeline emits during one round trip. A batch per
raw message would cap a burst at one raw message (~1000 events) per acks=all round trip.

Order: there is one open batch; batches are taken from it and queued under one lock, all to the events
topic's only partition through the one producer — so events land in chain order (and after the replayed
ones a restarted worker sends first).

No holes: a batch is handed to the producer only once the one before it is acknowledged. aiokafka keeps
one request in flight per broker anyway, so this costs no throughput (the open batch keeps filling while
the previous one is on the wire), but it means a batch that fails for good (retries exhausted, a broker
gone past the request timeout) is never followed by a later batch that succeeds: the events topic ends
with the last batch that was written, the failure raises `DeliveryFailed`, the unsent events are dropped,
and the pipeline rebuilds itself from the events topic's last message (the restart story in logic.py).
Without this, batch N+1 could land after a lost batch N and the chain would have a hole that no restart
can fill (the archiver would stop at it). A failure whose batch was in fact written (a timeout after the
broker appended it) is harmless: the rebuild reads what the topic holds.

Delivered: with `on_delivered`, each acknowledged batch is reported as {cluster id: (the last seq of that cluster in
the batch, its offset)}, in the order the batches were written (one in flight at a time): what the worker's signing
counts as delivered (signing.py). The marks are kept per batch as the events go in (at the end of each `send` and
where a batch fills), not per event.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol, TypedDict

from schemas.events import ControllerEvent
from services.capture.logic import PROGRESS_HEADER


class DeliveryFailed(Exception):
    """A batch of events was not written to the events topic."""


# aiokafka ships no type information: what this module uses of it, as protocols

class EventBatch(Protocol):
    """aiokafka's BatchBuilder: a record batch being filled."""

    def append(self, *, timestamp: float | None, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes]] = ...) -> object | None:
        """The message's metadata, or None when the batch is full (the message is not in it)."""


class BatchProducer(Protocol):
    """aiokafka's AIOKafkaProducer, as far as batches go."""

    def create_batch(self) -> EventBatch: ...

    async def send_batch(self, batch: EventBatch, topic: str, *, partition: int) -> asyncio.Future[object]:
        """Queue the batch (once the partition's metadata is known); the future is done when it is delivered."""


class _Message(TypedDict):
    """EventBatch.append's arguments for one event."""

    timestamp: None  # the producer's clock
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]


class BatchSender:
    """`await send(out)` appends CaptureState.process output [(event, progress header, value)] to the open
    batch. `producer_of()` gives an aiokafka AIOKafkaProducer (or anything with create_batch/send_batch);
    it is called per send because Faust creates its producer when the app starts."""

    def __init__(self, producer_of: Callable[[], BatchProducer], topic: str, partition: int = 0,
                 on_delivered: Callable[[dict[str, tuple[int, int]]], None] | None = None) -> None:
        self.producer_of = producer_of
        self.on_delivered = on_delivered
        self.topic = topic
        self.partition = partition
        self.pending: list[asyncio.Future[object]] = []
        self.batches = 0
        self._open: EventBatch | None = None  # the batch being filled
        # of the open batch: its events so far, and per cluster (its last seq, that event's index in the batch)
        self._open_count = 0
        self._open_marks: dict[str, tuple[int, int]] = {}
        self._generation = 0  # a delivery reported after a failure (_drop) belongs to a forgotten pipeline
        self._lock = asyncio.Lock()  # taking + queueing a batch, in order
        self._flusher: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    def check(self) -> None:
        """Raise DeliveryFailed for the first failed delivery; forget the delivered ones."""
        if self._error is not None:
            exc, self._error = self._error, None
            self._drop()
            raise exc if isinstance(exc, DeliveryFailed) else DeliveryFailed(f"events batch not queued: {exc!r}")
        still = []
        for f in self.pending:
            if not f.done():
                still.append(f)
            elif f.cancelled() or f.exception() is not None:
                self._drop()
                raise DeliveryFailed(f"events batch not delivered: {f.exception() if not f.cancelled() else 'cancelled'}")
        self.pending = still

    def _drop(self) -> None:
        # after a failed delivery nothing more is sent: the rebuilt pipeline re-emits from the topic's end
        self.pending = []
        self._take()
        self._generation += 1

    def _take(self) -> tuple[EventBatch | None, dict[str, tuple[int, int]]]:
        """The open batch and its marks; none open afterwards."""
        taken = self._open, self._open_marks
        self._open, self._open_marks, self._open_count = None, {}, 0
        return taken

    def _mark(self, event: ControllerEvent, appended: int) -> None:
        """`appended` more events went into the open batch, `event` the last of them."""
        self._open_count += appended
        self._open_marks[event.cluster_id] = (event.seq, self._open_count - 1)

    async def send(self, out: Sequence[tuple[ControllerEvent, bytes, bytes]]) -> None:
        self.check()
        if not out:
            return
        producer = self.producer_of()
        start = 0  # out[start:i] went into the open batch
        for i, (event, header, value) in enumerate(out):
            item: _Message = {"timestamp": None, "key": event.cluster_id.encode(), "value": value,
                              "headers": [(PROGRESS_HEADER, header)]}
            if self._open is None:
                self._open = producer.create_batch()
            if self._open.append(**item) is None:  # full: queue it, start the next one
                if i > start:
                    self._mark(out[i - 1][0], i - start)
                await self._submit(producer)
                start = i
                if self._open is None:
                    self._open = producer.create_batch()
                if self._open.append(**item) is None:
                    raise DeliveryFailed(f"an event of {len(value)} bytes does not fit in an empty batch")
        self._mark(out[-1][0], len(out) - start)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_open(producer))

    async def _submit(self, producer: BatchProducer) -> None:
        async with self._lock:
            if self.pending:  # the batch before must be acknowledged first (the module doc: no holes)
                await asyncio.wait(self.pending)
                self.check()  # DeliveryFailed: the open batch is dropped, not sent after the hole
            batch, marks = self._take()  # taken after the wait: it filled meanwhile
            if batch is not None:
                delivery = await producer.send_batch(batch, self.topic, partition=self.partition)
                self.pending.append(delivery)
                self.batches += 1
                if self.on_delivered is not None and marks:
                    delivery.add_done_callback(partial(self._delivered, marks, self._generation))

    def _delivered(self, marks: dict[str, tuple[int, int]], generation: int, delivery: asyncio.Future[object]) -> None:
        if delivery.cancelled() or delivery.exception() is not None or generation != self._generation:
            return  # not written (check() raises DeliveryFailed), or written for a pipeline since rebuilt
        base = getattr(delivery.result(), "offset", None)  # aiokafka's RecordMetadata: the batch's base offset
        assert self.on_delivered is not None
        self.on_delivered({cid: (seq, base + index if isinstance(base, int) else -1)
                           for cid, (seq, index) in marks.items()})

    async def _flush_open(self, producer: BatchProducer) -> None:
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
