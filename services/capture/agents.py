"""The capture worker's agents and tasks. Each body is a few lines; the logic is in logic.py.

* ``normalize``: raw topic -> events topic (KRaft batches become chained ControllerEvents with state
  before and after); unusable raw messages -> dead-letter topic with the reason.
* ``watch``: events topic -> alerts topic (checks.live.LiveChecker: the catalog's invariants per event;
  its state is rebuilt from the events topic when a worker starts).
* ``kraft_source`` (task): the metadata-directory tailer, when CTRLAUDIT_METADATA_DIR is set.
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.events import ControllerEvent
from services.capture import logic
from checks.live import LiveChecker
from schemas.errors import CodecError
from services.capture.app import alerts_topic, app, dead_letter_topic, events_topic, raw_topic, settings, watch_topic
from services.capture.codec import RawRecord, decode_event_record, decode_raw, encode_raw
from services.capture.logic import CaptureState, DeadLetter, Progress
from services.capture.produce import BatchSender, DeliveryFailed
from services.capture.sources import KRaftTail, QuorumWatermark, run_source

log = logging.getLogger(__name__)
REASON_HEADER = "ctrlaudit-reason"


# --- reading back what the topics hold (restart) ------------------------------------------------

def _consumer() -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers, enable_auto_commit=False,
                            max_partition_fetch_bytes=2 * 16 * 1024 * 1024, fetch_max_bytes=64 * 1024 * 1024)


async def last_message(topic: str):
    """The last message of partition 0 of `topic`, or None."""
    c = _consumer()
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        end = (await c.end_offsets([tp]))[tp]
        if end == 0:
            return None
        c.seek(tp, end - 1)
        return await c.getone()
    finally:
        await c.stop()


async def last_source_record(topic: str, cluster: str, window: int = 200) -> RawRecord | None:
    """The last RawRecord a KRaft source of `cluster` wrote to `topic` (skipping the sampler's EVENTs and
    anything undecodable), scanning back from the end."""
    c = _consumer()
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        hi = (await c.end_offsets([tp]))[tp]
        lo = (await c.beginning_offsets([tp]))[tp]
        while hi > lo:
            start = max(lo, hi - window)
            c.seek(tp, start)
            found = None
            while True:
                batch = await c.getmany(tp, timeout_ms=2000)
                msgs = batch.get(tp, [])
                for msg in msgs:
                    if msg.offset >= hi:
                        break
                    try:
                        r = decode_raw(msg.value)
                    except Exception:
                        continue
                    if r.cluster_id == cluster and r.kind != "EVENT":
                        found = r
                if not msgs or msgs[-1].offset >= hi - 1:
                    break
            if found is not None:
                return found
            hi = start
        return None
    finally:
        await c.stop()


async def read_progress() -> tuple[str | None, Progress]:
    msg = await last_message(settings.events_topic)
    if msg is None:
        return None, Progress()
    return (msg.key.decode() if msg.key else None), Progress.from_headers(msg.headers)


async def read_topic(topic: str, upto: int) -> AsyncIterator[bytes]:
    """Values of `topic`'s partition 0 from its start to `upto` (exclusive)."""
    if upto <= 0:
        return
    c = _consumer()
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        await c.seek_to_beginning(tp)
        while True:
            batch = await c.getmany(tp, timeout_ms=1000)
            for msg in batch.get(tp, []):
                if msg.offset >= upto:
                    return
                yield msg.value
            if await c.position(tp) >= upto:
                return
    finally:
        await c.stop()


def read_raw(upto: int) -> AsyncIterator[bytes]:
    """The raw topic up to `upto` (exclusive)."""
    return read_topic(settings.raw_topic, upto)


async def read_events(upto: int) -> AsyncIterator[dict]:
    """The events topic's Avro records up to `upto` (exclusive); undecodable values are skipped."""
    async for value in read_topic(settings.events_topic, upto):
        try:
            yield decode_event_record(value)
        except CodecError:
            continue


# --- the normalize pipeline ----------------------------------------------------------------------

class Pipeline:
    """Per-cluster CaptureStates, rebuilt on the first raw message a worker sees (logic.py explains)."""

    def __init__(self, progress_reader=read_progress, raw_reader=read_raw) -> None:
        self.progress_reader = progress_reader
        self.raw_reader = raw_reader
        self.states: dict[str, CaptureState] = {}
        self.ready = False
        self._progress: tuple[str | None, Progress] = (None, Progress())
        # one call per raw message with all its events: [(event, progress header, encoded value)]
        self.sink_events: Callable[[list[tuple[ControllerEvent, bytes, bytes]]], Awaitable] = self._send_events
        self.sink_dead: Callable[[bytes | None, bytes, str], Awaitable] = self._send_dead
        self.sink_alert: Callable[[dict], Awaitable] = self._send_alert

    async def prepare(self, first_offset: int) -> None:
        self._progress = await self.progress_reader()
        n = 0
        async for value in self.raw_reader(first_offset):
            n += 1
            try:
                out = self.process(value)
            except DeadLetter:
                continue  # sent to the dead-letter topic when it was first seen
            await self.sink_events(out)
        self.ready = True
        log.info("normalize: resumed after seq %d; replayed %d raw messages", self._progress[1].seq, n)

    def state(self, raw: RawRecord) -> CaptureState:
        st = self.states.get(raw.cluster_id)
        if st is None:
            cluster, progress = self._progress
            st = CaptureState(raw.cluster_id, raw.node_id, progress if cluster in (None, raw.cluster_id) else None)
            self.states[raw.cluster_id] = st
        return st

    def process(self, value: bytes) -> list[tuple[ControllerEvent, bytes, bytes]]:
        raw = logic.parse_raw(value)
        return self.state(raw).process(raw)

    async def handle(self, offset: int, key: bytes | None, value: bytes) -> int:
        if not self.ready:
            await self.prepare(offset)
        try:
            out = self.process(value)
        except DeadLetter as d:
            log.warning("raw offset %d -> dead letter: %s", offset, d.reason)
            await self.sink_dead(key, value, f"raw offset {offset}: {d.reason}")
            return 0
        try:
            await self.sink_events(out)
        except DeliveryFailed:
            # Some events may be missing from the topic: forget the image and chain, so that the next
            # message rebuilds them from the events topic's last message and the raw topic (logic.py),
            # which re-sends whatever the topic lacks.
            log.error("normalize: events not delivered at raw offset %d; rebuilding from the events topic", offset)
            self.states, self.ready = {}, False
            raise
        return len(out)

    @staticmethod
    async def _send_events(out: list[tuple[ControllerEvent, bytes, bytes]]) -> None:
        # Straight to aiokafka in record batches (produce.py says why). Not Faust "attachments" of the raw
        # message either: attached sends wait for that message's offset commit (this made a burst crawl at
        # ~120 events/s). Exactly-once does not rest on delivery before the raw offset commit: a restarted
        # worker re-sends whatever the events topic lacks (see logic.py).
        await events_sender.send(out)

    @staticmethod
    async def _send_dead(key: bytes | None, value: bytes, reason: str):
        return await dead_letter_topic.send(key=key, value=value, headers={REASON_HEADER: reason.encode()})

    @staticmethod
    async def _send_alert(alert: dict):
        (log.info if alert["allowed"] else log.warning)(
            "alert %s (%s, %s) at seq %s: expected %s, actual %s", alert["invariant"], alert["rule"], alert["status"],
            alert["seq"], alert["expected"], alert["actual"])
        return await alerts_topic.send(key=alert["cluster_id"].encode(), value=alert)


events_sender = BatchSender(lambda: app.producer._ensure_producer(), settings.events_topic)
pipeline = Pipeline()


class Watch:
    """The worker's LiveChecker (checks/live.py: the catalog's invariants, event by event). Its state is
    rebuilt on the first event a worker sees by re-observing the events topic below that offset (their
    alerts were published before); events of a cluster arrive in seq order (one partition)."""

    def __init__(self, history_reader=read_events) -> None:
        self.history_reader = history_reader
        self.checker = LiveChecker()
        self.ready = False

    async def observe(self, offset: int, event) -> list[dict]:
        """Alert dicts (Alert.to_dict) of `event` (a ControllerEvent or its Avro record) at `offset`."""
        if not self.ready:
            n = 0
            async for record in self.history_reader(offset):
                self.checker.observe(record)
                n += 1
            self.ready = True
            log.info("watch: re-observed %d events below offset %d", n, offset)
        return [a.to_dict() for a in self.checker.observe(event)]


watcher = Watch()


@app.agent(raw_topic)
async def normalize(stream):
    """Raw records -> chained ControllerEvents (or the dead-letter topic)."""
    async for event in stream.events():
        await pipeline.handle(event.message.offset, event.key, event.value)
        yield event.message.offset


@app.agent(watch_topic)
async def watch(stream):
    """Per-event invariants (checks.live.LiveChecker) -> alerts."""
    async for event in stream.events():
        alerts = await watcher.observe(event.message.offset, event.value)
        for a in alerts:
            await pipeline.sink_alert(a)
        yield alerts


# --- sources ---------------------------------------------------------------------------------

async def declare_topics() -> None:
    for t in (raw_topic, events_topic, alerts_topic, dead_letter_topic):
        await t.maybe_declare()


@app.task
async def kraft_source() -> None:
    """Tail CTRLAUDIT_METADATA_DIR into the raw topic, resuming after the raw topic's last message."""
    await declare_topics()
    if not settings.metadata_dir:
        return
    from services.normalize.offline import cluster_id_of
    from pathlib import Path
    directory = Path(settings.metadata_dir)
    cluster = settings.cluster_id or cluster_id_of([directory]) or "unknown-cluster"
    resume = await last_source_record(settings.raw_topic, cluster)
    tail = KRaftTail(directory, cluster, settings.node_id, resume)
    gate = QuorumWatermark(settings.bootstrap_servers) if settings.commit_gate == "quorum" else None
    log.info("kraft source: %s (cluster %s) from offset %d", directory, cluster, tail.next_offset)

    async def send(r: RawRecord):
        return await raw_topic.send(key=r.cluster_id.encode(), value=encode_raw(r))

    await run_source(tail, send, gate, settings.poll_interval, lambda: False)
