"""The capture worker's agents and tasks. Each body is a few lines; the logic is in logic.py.

* ``normalize``: raw topic -> events topic (KRaft batches become chained ControllerEvents with state
  before and after); unusable raw messages -> dead-letter topic with the reason.
* ``watch``: events topic -> alerts topic (checks.live.LiveChecker: the catalog's invariants per event;
  its state is rebuilt from the events topic when a worker starts).
* ``kraft_source`` (task): the metadata-directory tailer, when CTRLAUDIT_METADATA_DIR is set.
* ``request_log_source`` (task): the nodes' request and authorizer logs, when CTRLAUDIT_REQUEST_LOG_DIRS is set.
"""
from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.events import ControllerEvent
from services.capture import checkpoint, logic
from checks.live import LiveChecker
from schemas.errors import CodecError, ContractError
from services.capture.app import (
    alerts_topic, app, checkpoints_topic, dead_letter_topic, events_topic, image_table, raw_topic, security, settings,
    watch_topic,
)
from schemas.raw import RawRecord
from services.capture.serializers import decode_event_record, decode_raw, encode_raw
from services.capture.image_store import ImageStore
from services.capture.logic import CaptureState, DeadLetter, Progress, wait_settled
from services.capture.security import aiokafka_kwargs
from services.capture.produce import BatchSender, DeliveryFailed
from services.capture.kafka_protocol import ProtocolClient
from services.capture.request_source import run_requests
from services.capture.sources import QuorumWatermark, run_source
from services.kraft.live import KRaftTail
from services.kraft.offline import cluster_id_of
from services.requests.files import cluster_of
from services.zookeeper.watch import LIVE, ZooKeeperWatch, to_raw

if TYPE_CHECKING:
    from services.capture.signing import CaptureSigner, Publisher
    from faust.types import RecordMetadata, StreamT

log = logging.getLogger(__name__)
REASON_HEADER = "ctrlaudit-reason"


class _Record(Protocol):
    """aiokafka's ConsumerRecord (aiokafka ships no type information), the fields read here."""

    offset: int
    key: bytes | None
    value: bytes
    headers: Sequence[tuple[str, bytes]]


# --- reading back what the topics hold (restart) ------------------------------------------------

def _consumer() -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers, enable_auto_commit=False,
                            max_partition_fetch_bytes=2 * 16 * 1024 * 1024, fetch_max_bytes=64 * 1024 * 1024,
                            **aiokafka_kwargs(security))


@asynccontextmanager
async def _partition0(topic: str) -> AsyncIterator[tuple[AIOKafkaConsumer, TopicPartition]]:
    """A started consumer assigned partition 0 of `topic` (the capture's topics have one), stopped after."""
    c = _consumer()
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        yield c, tp
    finally:
        await c.stop()


async def last_message(topic: str) -> _Record | None:
    """The last message of partition 0 of `topic`, or None."""
    async with _partition0(topic) as (c, tp):
        end = (await c.end_offsets([tp]))[tp]
        if end == 0:
            return None
        c.seek(tp, end - 1)
        last: _Record = await c.getone()
        return last


async def last_source_record(topic: str, cluster: str, window: int = 200) -> RawRecord | None:
    """The last RawRecord a KRaft source of `cluster` wrote to `topic` (skipping the sampler's EVENTs and
    anything undecodable), scanning back from the end."""
    async with _partition0(topic) as (c, tp):
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
                    if r.cluster_id == cluster and r.kind != "EVENT":  # (the sampler's, the request logs')
                        found = r
                if not msgs or msgs[-1].offset >= hi - 1:
                    break
            if found is not None:
                return found
            hi = start
        return None


def _events_settled() -> None:
    """logic.wait_settled on the events topic: nothing a killed predecessor sent is still uncommitted."""
    client = ProtocolClient(settings.bootstrap_servers, security, client_id="ctrlaudit-restart")

    try:
        waited = wait_settled(lambda: client.log_ends(settings.events_topic))
    finally:
        client.close()
    if waited:
        log.warning("normalize: waited for %d message(s) of the events topic a previous worker sent to be "
                    "committed before reading it back", waited)


async def events_settled() -> None:
    await asyncio.get_running_loop().run_in_executor(None, _events_settled)


async def read_progress() -> tuple[str | None, Progress]:
    msg = await last_message(settings.events_topic)
    if msg is None:
        return None, Progress()
    return (msg.key.decode() if msg.key else None), Progress.from_headers(msg.headers)


async def read_records(topic: str, start: int, upto: int | None = None) -> AsyncGenerator[_Record, None]:
    """The messages of `topic`'s partition 0 from offset `start` up to `upto` (exclusive; None: its end as it is
    when the read starts)."""
    async with _partition0(topic) as (c, tp):
        if upto is None:
            upto = (await c.end_offsets([tp]))[tp]
        # an explicit seek: after end_offsets, aiokafka's seek_to_beginning left this consumer reading nothing
        # (seen against Kafka 4.3: a tree rebuilt from the events topic's start found no event)
        start = max(start, (await c.beginning_offsets([tp]))[tp])
        if upto <= start:
            return
        c.seek(tp, start)
        while True:
            batch = await c.getmany(tp, timeout_ms=1000)
            for msg in batch.get(tp, []):
                if msg.offset >= upto:
                    return
                yield msg
            if await c.position(tp) >= upto:
                return


async def read_backwards(topic: str, window: int = 100) -> AsyncGenerator[_Record, None]:
    """The messages of `topic`'s partition 0, newest first (read forward a window at a time from its end)."""
    async with _partition0(topic) as (c, tp):
        hi = (await c.end_offsets([tp]))[tp]
        lo = (await c.beginning_offsets([tp]))[tp]
    while hi > lo:
        start = max(lo, hi - window)
        msgs = [m async for m in read_records(topic, start, hi)]
        for m in reversed(msgs):
            yield m
        hi = start


def read_raw(upto: int, start: int = 0) -> AsyncGenerator[_Record, None]:
    """The raw topic's messages from `start` up to `upto` (exclusive)."""
    return read_records(settings.raw_topic, start, upto)


async def read_events(upto: int, start: int = 0) -> AsyncIterator[dict[str, Any]]:
    """The events topic's Avro records from `start` up to `upto` (exclusive); undecodable values are skipped."""
    async for msg in read_records(settings.events_topic, start, upto):
        try:
            yield decode_event_record(msg.value)
        except CodecError:
            continue


# --- the normalize pipeline ----------------------------------------------------------------------

class Pipeline:
    """Per-cluster CaptureStates, rebuilt on the first raw message a worker sees (logic.py explains): from
    the last image checkpoint (image_store.py) when there is one, else from the raw topic's start.

    The raw topic is normalized as one unbroken sequence, whatever order the consumer hands it over in: Faust
    does not hand over every offset around a rebalance (a message fetched before it is dropped after it, seen
    on a restarted worker), and a batch missing from the image would leave later events wrong or missing (a
    topic's deletion without its partitions). `next_raw` is the first raw offset not in the image: a message
    below it is one handed over again, a message above it is preceded by the ones between, read from the topic.
    """

    def __init__(self, progress_reader: Callable[[], Awaitable[tuple[str | None, Progress]]] = read_progress,
                 raw_reader: Callable[[int, int], AsyncIterator[_Record]] = read_raw, images: ImageStore | None = None,
                 checkpoint_seconds: float = 0, flush_events: Callable[[], Awaitable[None]] | None = None,
                 signer: CaptureSigner | None = None, publisher: Publisher | None = None,
                 signing_readers: tuple[Callable[[], AsyncGenerator[_Record, None]],
                                        Callable[[int], AsyncGenerator[_Record, None]]] | None = None,
                 settle: Callable[[], Awaitable[None]] | None = None) -> None:
        self.progress_reader = progress_reader
        self.settle = settle  # before the events topic is read back: what a killed worker sent is committed
        self.raw_reader = raw_reader
        self.images = images
        self.checkpoint_seconds = checkpoint_seconds
        self.flush_events = flush_events
        # signing (signing.py): events are emitted into the tree before they go to the producer; the readers give
        # the checkpoints topic newest first and the events topic from an offset, for the restore
        self.signer = signer
        self.publisher = publisher
        self.signing_readers = signing_readers
        self.signing_ready = False  # the signer's trees are those of the events topic (restore_signing)
        self._signing_lock = asyncio.Lock()
        self.states: dict[str, CaptureState] = {}
        self.ready = False
        self.replayed_from = 0  # raw offset of the image the last rebuild started from (0, or a checkpoint's)
        self.next_raw = 0  # the first raw offset whose message is not in the image (see the class's doc)
        self._epoch = 0  # counts `forget` calls: a prepare or refill under way stops when it changes
        self.refilled = 0  # raw messages read from the topic because the consumer did not hand them over
        self._checkpoint_at = time.monotonic()
        self._progress: tuple[str | None, Progress] = (None, Progress())
        # one call per raw message with all its events: [(event, progress header, encoded value)]
        self.sink_events: Callable[[list[tuple[ControllerEvent, bytes, bytes]]], Awaitable[None]] = self._send_events
        self.sink_dead: Callable[[bytes | None, bytes, str], Awaitable[object]] = self._send_dead
        self.sink_alert: Callable[[dict[str, Any]], Awaitable[object]] = self._send_alert

    async def prepare(self, first_offset: int) -> None:
        """Rebuild the images and chains for the consumer's first message at `first_offset`; left not ready when
        `forget` is called meanwhile (a revocation while the topics are read)."""
        epoch = self._epoch
        if self.flush_events is not None:
            try:  # nothing this worker sent before (before a rebalance) may land after the topic is read back
                await self.flush_events()
            except DeliveryFailed:
                pass  # not written: the topic is read as it is
        if self.settle is not None:
            await self.settle()
        if self.signer is not None:
            # the tree of what the events topic holds, before anything more is sent; read anew every time, as the
            # progress below is: a tree restored earlier (by the timer, or a prepare cut short) may be behind it
            await self.restore_signing(again=True)
        self._progress = await self.progress_reader()
        self.states, start = {}, 0
        restored = self.images.load() if self.images is not None else None
        if restored is not None:
            # A checkpoint can be past where the consumer resumes (taken after the last offset commit):
            # the messages in between are in its image and their events were delivered before it was
            # saved, so they are skipped when the consumer hands them over again.
            start = min(restored.raw_offset, first_offset)
            for cid, normalizer in restored.normalizers.items():
                st = self._new_state(cid, normalizer.node_id)
                normalizer.clock = st.normalizer.clock
                st.normalizer = normalizer
        self.replayed_from = restored.raw_offset if restored is not None else 0
        self.next_raw = max(first_offset, self.replayed_from)
        n = 0
        async for msg in self.raw_reader(first_offset, start):
            if self._epoch != epoch:
                return
            n += 1
            try:
                out = self.process(msg.value)
            except DeadLetter:
                continue  # sent to the dead-letter topic when it was first seen
            await self._emit(out)
        if self._epoch != epoch:
            return
        self.ready = True
        self._checkpoint_at = time.monotonic()
        log.info("normalize: resumed after seq %d; image from %s; replayed %d raw messages from raw offset %d",
                 self._progress[1].seq, f"the checkpoint at raw offset {restored.raw_offset}" if restored else
                 "the raw topic's start", n, start)

    async def restore_signing(self, again: bool = False) -> None:
        """Rebuild the signer's tree from the checkpoints and events topics (signing.py): by `prepare` (`again`:
        always), and by the signing timer when no raw message has come since the worker started (what it sent before
        a restart must be signed all the same); a pipeline that is not prepared emits nothing."""
        if self.signer is None:
            return
        async with self._signing_lock:
            if self.signing_ready and not again:
                return
            cluster, _ = await self.progress_reader()
            if cluster is None or self.signing_readers is None:
                self.signer.logs, self.signer.stopped = {}, set()
            else:
                newest_first, events_from = self.signing_readers
                await self.signer.restore(cluster, newest_first(), events_from)
            self.signing_ready = True

    def _new_state(self, cluster_id: str, node_id: int) -> CaptureState:
        cluster, progress = self._progress
        st = CaptureState(cluster_id, node_id, progress if cluster in (None, cluster_id) else None)
        self.states[cluster_id] = st
        return st

    def state(self, raw: RawRecord) -> CaptureState:
        st = self.states.get(raw.cluster_id)
        return st if st is not None else self._new_state(raw.cluster_id, raw.node_id)

    async def maybe_checkpoint(self, next_offset: int) -> bool:
        """Save the images (the state after the raw messages below `next_offset`) when one is due: after
        the events of those messages are delivered (image_store.py says why)."""
        if self.images is None or self.checkpoint_seconds <= 0 or not self.states:
            return False
        if time.monotonic() - self._checkpoint_at < self.checkpoint_seconds:
            return False
        if any(st.zookeeper is not None for st in self.states.values()):
            # image checkpoints hold a KRaft image only: a ZooKeeper-mode cluster's state is rebuilt from the
            # raw topic on a restart (never skipped past)
            return False
        normalizers = {cid: st.normalizer for cid, st in self.states.items()}
        if not all(checkpoint.quiet(n) for n in normalizers.values()):
            return False  # inside a metadata transaction or a snapshot: still due, tried after the next message
        if self.flush_events is not None:
            await self.flush_events()
        self._checkpoint_at = time.monotonic()
        saved = self.images.save(next_offset, normalizers)
        if saved:
            log.info("normalize: image checkpoint %d at raw offset %d", self.images.saved, next_offset)
        return saved

    def process(self, value: bytes) -> list[tuple[ControllerEvent, bytes, bytes]]:
        raw = logic.parse_raw(value)
        return self.state(raw).process(raw)

    async def handle(self, offset: int, key: bytes | None, value: bytes) -> int:
        if not self.ready:
            await self.prepare(offset)
            if not self.ready:
                return 0  # forgotten meanwhile: the next message prepares again, from the topics
        if offset < self.next_raw:
            return 0  # in the image: below the checkpoint it was restored from, or handed over again
        n = 0
        if offset > self.next_raw:
            log.warning("normalize: raw offset %d handed over before [%d, %d]; reading those from the raw topic",
                        offset, self.next_raw, offset - 1)
            async for msg in self.raw_reader(offset, self.next_raw):
                self._missing(msg.offset)
                self.refilled += 1
                n += await self._normalize(msg.offset, msg.key, msg.value)
            self._missing(offset)
        n += await self._normalize(offset, key, value)
        await self.maybe_checkpoint(offset + 1)
        if self.publisher is not None:
            self.publisher.kick()
        return n

    def forget(self) -> None:
        """Drop the images and chains: the next message rebuilds them from the events topic's last message, the
        last image checkpoint and the raw topic (prepare). After the raw topic's partition was revoked (another
        worker may hold it for a while and send events this one's chain does not know of), and after a message
        that was not normalized whole."""
        self.states, self.ready, self.signing_ready = {}, False, False
        self._epoch += 1

    def _missing(self, offset: int) -> None:
        """Say so when the raw topic gives `offset` next, not `next_raw`: it keeps everything
        (settings.RAW_TOPIC_CONFIG) unless someone shortened its retention."""
        if offset > self.next_raw:
            log.error("normalize: raw offsets [%d, %d] are no longer in the raw topic; the image lacks them",
                      self.next_raw, offset - 1)

    async def _normalize(self, offset: int, key: bytes | None, value: bytes) -> int:
        """One raw message into the image and its events to the events topic, in raw-topic order."""
        if not self.ready:
            return 0  # forgotten during a refill: the next prepare replays this message from the raw topic
        self.next_raw = offset + 1
        try:
            try:
                out = self.process(value)
            except DeadLetter as d:
                log.warning("raw offset %d -> dead letter: %s", offset, d.reason)
                await self.sink_dead(key, value, f"raw offset {offset}: {d.reason}")
                return 0
            await self._emit(out)
        except BaseException as exc:
            # Some events may be missing from the topic (not delivered, or a send cut short) and the image may hold
            # half the message: forget the image and chain, so that the next message rebuilds them from the events
            # topic's last message and the raw topic (logic.py), which re-sends whatever the topic lacks.
            log.error("normalize: raw offset %d not normalized whole (%s); rebuilding from the events topic",
                      offset, type(exc).__name__)
            self.forget()
            raise
        return len(out)

    async def _emit(self, out: list[tuple[ControllerEvent, bytes, bytes]]) -> None:
        if self.signer is not None and out:
            self.signer.emitted(out)  # pending in the tree until the producer reports the batch delivered
        await self.sink_events(out)

    @staticmethod
    async def _send_events(out: list[tuple[ControllerEvent, bytes, bytes]]) -> None:
        # Straight to aiokafka in record batches (produce.py says why). Not Faust "attachments" of the raw
        # message either: attached sends wait for that message's offset commit (this made a burst crawl at
        # ~120 events/s). Exactly-once does not rest on delivery before the raw offset commit: a restarted
        # worker re-sends whatever the events topic lacks (see logic.py).
        await events_sender.send(out)

    @staticmethod
    async def _send_dead(key: bytes | None, value: bytes, reason: str) -> Awaitable[RecordMetadata]:
        return await dead_letter_topic.send(key=key, value=value, headers={REASON_HEADER: reason.encode()})

    @staticmethod
    async def _send_alert(alert: dict[str, Any]) -> RecordMetadata:
        # allowed ones (a controlled shutdown's ISR shrink, a KIP-966 recovery) are routine: debug, not info
        (log.debug if alert["allowed"] else log.warning)(
            "alert %s (%s, %s) at seq %s: expected %s, actual %s", alert["invariant"], alert["rule"], alert["status"],
            alert["seq"], alert["expected"], alert["actual"])
        # force, and waited for: an alert attached to its event's offset commit (Faust's default) was lost once when
        # the group rebalanced between the two, the offset committed and the alert never sent (a successor
        # re-observes the events below that offset without alerting again)
        return await (await alerts_topic.send(key=alert["cluster_id"].encode(), value=alert, force=True))


async def _publish_checkpoint(key: bytes, note: bytes, headers: list[tuple[str, bytes]]) -> object:
    """Send one checkpoint message and wait until the brokers acknowledge it. force: sent now, not attached to the raw
    message being processed (the publisher's task inherits the agent's context), which Faust would send only at
    that message's offset commit, and the publisher would wait for it."""
    return await (await checkpoints_topic.send(key=key, value=note, headers=headers, force=True))


def _signing() -> tuple[CaptureSigner | None, Publisher | None]:
    """The worker's signer and checkpoint publisher when it has a key (read and checked when the worker started,
    __main__.py: a bad one never gets here); none without."""
    if not settings.signing_key:
        return None, None
    # deferred: signing, only with a key (the Merkle tree and signed notes would cost every worker's start CPU)
    from services.capture.signing import CaptureSigner, Publisher
    signing = CaptureSigner(settings.signers, settings.sign_every_events, settings.sign_every_seconds)
    return signing, Publisher(signing, _publish_checkpoint)


signer, publisher = _signing()
# app.producer is typed as Faust's ProducerT; the worker's (a kafka:// broker) is Faust's aiokafka Producer, whose
# _ensure_producer gives its AIOKafkaProducer
events_sender = BatchSender(lambda: app.producer._ensure_producer(),  # type: ignore[attr-defined]
                            settings.events_topic, on_delivered=signer.delivered if signer is not None else None)
pipeline = Pipeline(images=ImageStore(image_table), checkpoint_seconds=settings.checkpoint_seconds,
                    flush_events=events_sender.flush, signer=signer,
                    publisher=publisher,
                    signing_readers=(lambda: read_backwards(settings.checkpoints_topic),
                                     lambda offset: read_records(settings.events_topic, offset)),
                    settle=events_settled)


def forget_on_revoke(sender: Any, *args: Any, **kwargs: Any) -> None:
    """A revoked partition may be worked on by another worker until it comes back: the raw topic's pipeline and
    the events topic's checker are rebuilt then. (Faust sends the revoked partitions as the one argument after
    the app.)"""
    revoked = args[0] if args else kwargs.get("revoked", ())
    if pipeline.ready and any(tp.topic == settings.raw_topic for tp in revoked):
        log.info("normalize: the raw topic's partition was revoked; rebuilding on the next message")
        pipeline.forget()
    if any(tp.topic == settings.events_topic for tp in revoked):
        watcher.forget()


# (mode's signal types the receiver with a keyword-only `signal` mypy does not match to **kwargs)
app.on_partitions_revoked.connect(cast(Any, forget_on_revoke))


class Watch:
    """The worker's LiveChecker (checks/live.py: the catalog's invariants, event by event). Its state is
    rebuilt on the first event a worker sees by re-observing the events topic below that offset (their
    alerts were published before); events of a cluster arrive in seq order (one partition).

    The checker must see each offset once and in order. A rebalance inside one worker hands the partition
    back from its last committed offset, so events it has observed come again: they are passed over (their
    alerts were sent). A revoked partition may be checked by another worker until it comes back (its alerts
    sent there): the checker is forgotten and rebuilt, silently, below the offset it resumes at. An offset past
    the next one without a revocation is one Faust did not hand over (see Pipeline): the events between are
    read from the topic and checked, their alerts sent."""

    def __init__(self, history_reader: Callable[[int, int], AsyncIterator[dict[str, Any]]] = read_events) -> None:
        self.history_reader = history_reader
        self.checker = LiveChecker()
        self.next_offset: int | None = None  # None: not rebuilt yet

    async def _rebuild(self, offset: int) -> None:
        self.checker, n = LiveChecker(), 0
        async for record in self.history_reader(offset, 0):
            self.checker.observe(record)
            n += 1
        log.info("watch: re-observed %d events below offset %d", n, offset)

    def forget(self) -> None:
        """The events partition was revoked: rebuild at the next event."""
        self.next_offset = None

    async def observe(self, offset: int, event: ControllerEvent | dict[str, Any]) -> list[dict[str, Any]]:
        """Alert dicts (Alert.to_dict) of `event` (a ControllerEvent or its Avro record) at `offset`, after those of
        the events before it that were not handed over."""
        if self.next_offset is not None and offset < self.next_offset:
            return []  # observed before a rebalance re-delivered it
        alerts = []
        if self.next_offset is None:
            await self._rebuild(offset)
        elif offset > self.next_offset:
            log.warning("watch: event offset %d handed over before [%d, %d]; checking those from the events topic",
                        offset, self.next_offset, offset - 1)
            async for record in self.history_reader(offset, self.next_offset):
                alerts += [a.to_dict() for a in self.checker.observe(record)]
        self.next_offset = offset + 1
        return alerts + [a.to_dict() for a in self.checker.observe(event)]


watcher = Watch()


ROLES = settings.role_set


async def normalize(stream: StreamT[bytes]) -> None:
    """Raw records -> chained ControllerEvents (or the dead-letter topic)."""
    # No `yield`: an agent that yields is drained by Faust's _slurp, which formats a debug log line and
    # looks for a reply-to per value (~5% of the worker's samples in a catch-up profile).
    async for event in stream.events():
        await pipeline.handle(event.message.offset, event.key, event.value)


async def watch(stream: StreamT[dict[str, Any]]) -> None:
    """Per-event invariants (checks.live.LiveChecker) -> alerts."""
    async for event in stream.events():
        alerts = await watcher.observe(event.message.offset, event.value)
        for a in alerts:
            await pipeline.sink_alert(a)


# this worker's agents (settings.roles); a module-level name stays for tests either way
# (the agent takes the function's name, which mypy holds to the function's type)
if "normalize" in ROLES:
    normalize = app.agent(raw_topic)(normalize)  # type: ignore[assignment]
if "watch" in ROLES:
    watch = app.agent(watch_topic)(watch)  # type: ignore[assignment]


# --- sources ---------------------------------------------------------------------------------

async def declare_topics() -> None:
    for t in (raw_topic, events_topic, alerts_topic, dead_letter_topic, checkpoints_topic):
        await t.maybe_declare()


if signer is not None and "normalize" in ROLES:
    # the time half of "every N events or T seconds": a checkpoint of whatever was delivered since the last
    @app.timer(interval=min(1.0, settings.sign_every_seconds))  # type: ignore[untyped-decorator]  # as below
    async def sign_checkpoints() -> None:
        if not pipeline.signing_ready and not pipeline.ready:
            await pipeline.restore_signing()  # a worker started with no new raw message still signs what was sent
        if pipeline.signing_ready and pipeline.publisher is not None:
            pipeline.publisher.kick()


# Faust's App.task is typed as giving a decorator or a task (a Union): applied to a function, it gives the task
@app.task  # type: ignore[untyped-decorator]
async def kraft_source() -> None:
    """Tail CTRLAUDIT_METADATA_DIR into the raw topic, resuming after the raw topic's last message (the
    normalize worker's job)."""
    await declare_topics()
    if not settings.metadata_dir or "normalize" not in ROLES:
        return
    directory = Path(settings.metadata_dir)
    cluster = capture_cluster_id()
    resume = await last_source_record(settings.raw_topic, cluster)
    tail = KRaftTail(directory, cluster, settings.node_id, resume)
    gate = QuorumWatermark(settings.bootstrap_servers, security) if settings.commit_gate == "quorum" else None
    log.info("kraft source: %s (cluster %s) from offset %d", directory, cluster, tail.next_offset)

    async def send(r: RawRecord) -> Awaitable[RecordMetadata]:
        return await raw_topic.send(key=r.cluster_id.encode(), value=encode_raw(r))

    await run_source(tail, send, gate, settings.poll_interval, lambda: False)


def capture_cluster_id() -> str:
    """The cluster the KRaft source files its records under (one chain for it and the request logs)."""
    if settings.cluster_id:
        return settings.cluster_id
    if settings.metadata_dir:
        return cluster_id_of([Path(settings.metadata_dir)]) or "unknown-cluster"
    try:
        return cluster_of([Path(d) for d, _ in settings.request_logs]) or "unknown-cluster"
    except ContractError as exc:  # no logs there yet, or logs of two clusters
        log.warning("request log source: cluster id not found beside the logs (%s)", exc)
        return "unknown-cluster"


@app.task  # type: ignore[untyped-decorator]  # as kraft_source's
async def request_log_source() -> None:
    """Follow CTRLAUDIT_REQUEST_LOG_DIRS' request and authorizer logs into the raw topic, each log resuming after
    the raw topic's last record of it (services/capture/request_source.py; the normalize worker's job)."""
    if not settings.request_log_dirs or "normalize" not in ROLES:
        return
    await declare_topics()
    cluster = settings.cluster_id or await asyncio.get_running_loop().run_in_executor(None, capture_cluster_id)

    async def send(r: RawRecord, headers: list[tuple[str, bytes]]) -> Awaitable[RecordMetadata]:
        return await raw_topic.send(key=r.cluster_id.encode(), value=encode_raw(r), headers=headers)

    async def streams() -> set[str]:
        held, progress = await read_progress()
        return set(progress.last) if held == cluster else set()

    await run_requests([(Path(d), n) for d, n in settings.request_logs], cluster, settings.node_id,
                       lambda: read_backwards(settings.raw_topic, window=1000), send,
                       max(settings.poll_interval, 0.2), streams=streams)


@app.task  # type: ignore[untyped-decorator]  # as kraft_source's
async def zookeeper_source() -> None:
    """Watch a ZooKeeper-mode cluster's controller znodes (CTRLAUDIT_ZOOKEEPER) into the raw topic; after a
    restart, a snapshot of the tree and a gap back to the raw topic's last zxid (services/zookeeper/watch.py)."""
    if not settings.zookeeper or "normalize" not in ROLES:
        return
    await declare_topics()
    watcher = ZooKeeperWatch(settings.zookeeper)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, watcher.start)
    # (mypy types the right of `or` in the context of its left, a str: here it is the id found, or None)
    cluster = settings.cluster_id or await loop.run_in_executor(
        None, watcher.cluster_id) or "unknown-cluster"  # type: ignore[arg-type]
    resume = await last_source_record(settings.raw_topic, cluster)
    if resume is not None:
        watcher.resume_after(resume.last_offset)
    log.info("zookeeper source: %s (cluster %s)%s", settings.zookeeper, cluster,
             f" after zxid {resume.last_offset:#x}" if resume is not None else "")

    while True:
        items = await loop.run_in_executor(None, watcher.poll)
        futures = []
        for item in items:
            kind, position, first, last, when, data, reason = to_raw(item)
            r = RawRecord(cluster, -1, kind, position, first, last, -1, when, int(time.time() * 1000), data,
                          LIVE, None, reason)
            futures.append(await raw_topic.send(key=cluster.encode(), value=encode_raw(r)))
        if futures:
            await asyncio.gather(*futures)
        else:
            await asyncio.sleep(settings.poll_interval)
