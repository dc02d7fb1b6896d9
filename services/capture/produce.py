"""Events-topic sends in record batches, straight to the aiokafka producer under Faust.

Why: a Faust `topic.send()` per event costs ~100 µs of Python (PendingMessage, codec lookups, callbacks,
then aiokafka's `send`, which serializes and appends one message at a time) — at a burst's rate that is
most of a core. A raw message holds a whole KRaft batch (up to thousands of records), so its events are
appended to one aiokafka BatchBuilder (C record-batch builder) and queued with one `send_batch`.

Order: every batch goes to the events topic's only partition through the one producer; aiokafka keeps a
partition's queue in order and has one request in flight per partition, so events land in chain order
(and in order with the replayed ones a restarted worker sends first). Delivery is not awaited per batch
(that would serialize on a round trip); the delivery futures are checked before each new send, and a
failed one raises `DeliveryFailed` so that the pipeline rebuilds itself from the events topic (the
restart story in logic.py) instead of chaining on past a hole.
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
    """`await send(out)` queues CaptureState.process output [(event, progress header, value)] in record
    batches. `producer` is an aiokafka AIOKafkaProducer (or anything with create_batch/send_batch)."""

    def __init__(self, producer_of, topic: str, partition: int = 0) -> None:
        self.producer_of = producer_of  # called per send: Faust creates its producer when the app starts
        self.topic = topic
        self.partition = partition
        self.pending: list[asyncio.Future] = []
        self.batches = 0

    def check(self) -> None:
        """Raise DeliveryFailed for the first failed delivery; forget the delivered ones."""
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
        batch = producer.create_batch()
        for event, header, value in out:
            item: dict[str, Any] = {"timestamp": None, "key": event.cluster_id.encode(), "value": value,
                                    "headers": [(PROGRESS_HEADER, header)]}
            if batch.append(**item) is None:  # full: queue it, start the next one
                await self._queue(producer, batch)
                batch = producer.create_batch()
                if batch.append(**item) is None:
                    raise DeliveryFailed(f"an event of {len(value)} bytes does not fit in an empty batch")
        await self._queue(producer, batch)

    async def _queue(self, producer, batch) -> None:
        self.pending.append(await producer.send_batch(batch, self.topic, partition=self.partition))
        self.batches += 1

    async def flush(self) -> None:
        """Wait for every queued batch (tests, shutdown)."""
        if self.pending:
            await asyncio.wait(self.pending)
        self.check()
