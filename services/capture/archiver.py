"""The archiver: the events topic -> hourly Avro object container files with manifests.

Offsets are committed only after the files holding the events are fsynced and their manifests
written (ArchiveWriter does temp file, fsync, rename, manifest, fsync). A file is finished when its
hour ends and at every checkpoint (``flush_seconds``, and when the topic is drained), so there is at
most one file per hour per checkpoint; names stay `events-<hour>-<first seq>.avro`. After a crash
the consumer re-reads from the last committed offset and skips every event whose seq the archive
already holds, so the archive never holds a duplicate and misses nothing; an event that does not
continue the chain (a seq gap, a foreign prev_hash), and a record that is not an event (a tombstone,
bytes that are not Avro), stops the archiver with one error naming it (topic, partition, offset)
instead of being written or skipped. A consumer left without partitions while nobody archives the topic is replaced
(services/capture/stall.py).

Run: ``python -m services.capture archiver`` (`main`) or ``ctrlaudit archive``.
"""
from __future__ import annotations

import logging
import signal
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from schemas import codec as event_codec, entry, names
from schemas.errors import CodecError, ContractError
from schemas.archive import ArchiveWriter
from services.capture import connect
from services.capture.security import ClientSecurity
from services.capture.stall import Stall, group_progress
from services.capture.settings import Settings

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message

log = logging.getLogger(__name__)


class TopicDoesNotContinue(ContractError):
    """The events topic does not continue the archive's chain."""


class Archive:
    """One writer per cluster, resumed from the archive's last finished file; plain and testable."""

    def __init__(self, root: str | Path, fsync: bool = True) -> None:
        self.root = Path(root)
        self.fsync = fsync
        self.writers: dict[str, ArchiveWriter] = {}
        self.appended = 0
        self.skipped = 0

    def _writer(self, cluster: str) -> ArchiveWriter:
        w = self.writers.get(cluster)
        if w is None:
            w = ArchiveWriter.resume(self.root, cluster, fsync=self.fsync)
            self.writers[cluster] = w
        return w

    def add(self, value: bytes | None, where: str = "") -> bool:
        """Append one events-topic value; False when the archive already holds it. `where` names the
        record (topic, partition, offset) in the error a value that is not an event raises: the archiver
        stops there, as for any record that does not continue the chain, and commits nothing past it."""
        if value is None:  # a tombstone: no producer of the topic writes one, and skipping it could hide a loss
            raise CodecError("a record without a value (a tombstone), not an event", where)
        event = event_codec.decode(value, where)
        # the archive's directory is named after the event's cluster id: never a path elsewhere
        names.cluster_id(event.cluster_id, "cluster_id", f"{where or 'events topic'}: event seq {event.seq}")
        w = self._writer(event.cluster_id)
        if event.seq < w.next_seq:
            self.skipped += 1
            return False
        if event.seq > w.next_seq:
            raise TopicDoesNotContinue(f"cluster {event.cluster_id}: event seq {event.seq} arrives but the archive "
                             f"expects seq {w.next_seq} (the events topic lost events)")
        try:
            w.append(event)
        except ValueError as exc:
            raise TopicDoesNotContinue(str(exc)) from None
        self.appended += 1
        return True

    def checkpoint(self) -> int:
        """Finish (fsync) every open file; afterwards offsets may be committed."""
        n = 0
        for cluster, w in list(self.writers.items()):
            n += len(w.close())
            del self.writers[cluster]
        return n


def commit(consumer: Consumer, retry_seconds: float = 30.0, pause: float = 0.5) -> bool:
    """Commit the consumed offsets (the files are fsynced already). A transient failure -- the group
    coordinator loading or moving after a broker restart -- is retried for `retry_seconds`, then left
    to the next checkpoint: the archive skips events it already holds by seq, so an offset left
    uncommitted only means reading those events again. Any other failure is raised."""
    from confluent_kafka import KafkaError, KafkaException  # extra: capture

    transient = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR,
                 KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT,
                 KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError.REBALANCE_IN_PROGRESS}
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            consumer.commit(asynchronous=False)
            return True
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError._NO_OFFSET:
                return True  # nothing consumed since the last commit
            if err.code() not in transient and not err.retriable():
                raise
            if time.monotonic() >= deadline:
                log.warning("commit still failing (%s); the next checkpoint commits", err)
                return False
            time.sleep(pause)


def run(settings: Settings, idle_exit: float | None = None, fsync: bool = True) -> Archive:
    """Consume until SIGTERM/SIGINT (or `idle_exit` seconds without a message)."""
    from confluent_kafka import Consumer, KafkaError  # extra: capture

    archive = Archive(settings.archive_dir, fsync=fsync)
    conf, access = connect.config(settings.bootstrap_servers, settings.security, extra={
        "group.id": settings.archive_group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", "fetch.max.bytes": 64 * 1024 * 1024,
        # Partitions added to the topic later are seen at this interval (default 5 minutes).
        "topic.metadata.refresh.interval.ms": 5000,
        # sorts the archiver's members of a group by name (range assignment); shown in the brokers' logs
        "client.id": "ctrlaudit-archiver",
    })
    consumer = Consumer(conf)
    # another archiver of the group commits only at its checkpoints: its offsets may rest for a flush interval
    stall = Stall(max(settings.archive_rejoin_seconds, 2 * settings.archive_flush_seconds))
    stop = {"now": False}

    def _stop(*_: object) -> None:
        stop["now"] = True
    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    pending = subscribed = waited = False
    last_checkpoint = last_msg = time.monotonic()
    try:
        while not stop["now"]:
            if not subscribed:
                # Subscribe only once the topic exists. An archiver started before the capture worker has
                # created it joins its group with nothing to assign, and librdkafka's later metadata refresh
                # does not always rejoin when the topic appears: seen against Kafka 3.9, an archiver that
                # archived nothing for 4 minutes while the topic filled (and the ZooKeeper demo's first
                # events waited up to 5 minutes).
                subscribed = topic_exists(consumer, settings.events_topic)
                consumer.poll(0)  # serves the error callback
                access.check()
                if subscribed:
                    consumer.subscribe([settings.events_topic])
                else:
                    if not waited:
                        log.info("waiting for the events topic %s to be created", settings.events_topic)
                    waited = True
                    time.sleep(1)
                    if idle_exit is not None and time.monotonic() - last_msg > idle_exit:
                        break
                    continue
            msgs = consumer.consume(10_000, timeout=0.5)
            access.check()  # refused credentials: one line (AccessDenied), not a retry loop
            if not msgs and stall.stalled(time.monotonic(), bool(consumer.assignment()),
                                          partial(group_progress, consumer, settings.events_topic)):
                log.warning("no partitions of %s assigned for %.0f s while the group's committed offsets stay "
                            "behind the topic's end: rejoining the group with a new consumer",
                            settings.events_topic, stall.after)
                if pending:  # what this consumer read is fsynced; its successor skips it by seq
                    archive.checkpoint()
                    pending = False
                consumer.close()
                consumer = Consumer(conf)
                consumer.subscribe([settings.events_topic])
                stall.reset()
                continue
            for m in msgs:
                err = m.error()
                if err:
                    if err.code() != KafkaError._PARTITION_EOF:
                        log.warning("consume: %s", err)
                    continue
                archive.add(m.value(), record_where(m))
                pending = True
                last_msg = time.monotonic()
            now = time.monotonic()
            if pending and now - last_checkpoint >= settings.archive_flush_seconds:
                archive.checkpoint()
                commit(consumer)  # only after the files are fsynced
                pending, last_checkpoint = False, now
            if idle_exit is not None and not msgs and now - last_msg > idle_exit:
                break
        if pending:
            archive.checkpoint()
            commit(consumer)
    finally:
        consumer.close()
        for s, h in old.items():
            signal.signal(s, h)
    return archive


def record_where(m: Message) -> str:
    """A consumed record's place, for an error about it."""
    return f"topic {m.topic()} partition {m.partition()} offset {m.offset()}"


def topic_exists(consumer: Consumer, topic: str) -> bool:
    """Does the cluster list `topic` with partitions? A metadata request that fails or times out is no."""
    try:
        md = consumer.list_topics(topic, timeout=5)
    except Exception:  # KafkaException: the cluster did not answer in time; asked again
        return False
    t = md.topics.get(topic)
    return t is not None and t.error is None and bool(t.partitions)


cli = entry.app("The archiver.")


@cli.command()
def archiver(
    bootstrap_server: str | None = typer.Option(None, "--bootstrap-server",
                                                help="Kafka bootstrap servers (env CTRLAUDIT_BOOTSTRAP_SERVERS)."),
    topic: str | None = typer.Option(None, "--topic", help="Events topic (env CTRLAUDIT_EVENTS_TOPIC)."),
    archive_dir: str | None = typer.Option(None, "--archive-dir", help="Archive root (env CTRLAUDIT_ARCHIVE_DIR)."),
    flush_seconds: float | None = typer.Option(None, "--flush-seconds", help="Finish files and commit every N s."),
    idle_exit: float | None = typer.Option(None, "--idle-exit", help="Stop after N s without events."),
    command_config: str | None = typer.Option(None, "--command-config",
                                              help="Kafka client properties file (env CTRLAUDIT_COMMAND_CONFIG)."),
) -> None:
    """Consume the events topic into hourly Avro files with manifests (fsync, then commit)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        s = Settings().replace(bootstrap_servers=bootstrap_server, events_topic=topic, archive_dir=archive_dir,
                               archive_flush_seconds=flush_seconds, command_config=command_config)
        # at start a cluster that does not answer is one line (the container is restarted); once running,
        # an outage is waited out by the consumer
        connect.require_reachable(s.bootstrap_servers, s.security)
        arch = run(s, idle_exit=idle_exit)
    except ContractError as exc:  # a bad properties file, refused credentials, a chain break: one line
        raise SystemExit(f"ctrlaudit archive: {exc}") from None
    log.info("archived %d events (%d already present)", arch.appended, arch.skipped)


def main(argv: list[str] | None = None) -> int:
    return entry.run(cli, argv, "python -m services.capture archiver", "ctrlaudit archive")


class TopicNotFound(ContractError):
    """The events topic named is not on the cluster (one line, exit 2)."""


def consume_to_archive(bootstrap_servers: str, topic: str, root: Path, timeout: float = 30,
                       security: ClientSecurity | None = None) -> Archive:
    """Read the whole events topic (as it is now) into an archive under `root` (no group, no commit):
    how `ctrlaudit load --bootstrap-server` reads the topic with the same decoder and chain checks.
    `security`: a ClientSecurity (services/capture/security.py), None for PLAINTEXT."""
    from confluent_kafka import Consumer, TopicPartition  # extra: capture

    security = security or ClientSecurity()
    connect.require_reachable(bootstrap_servers, security)
    conf, access = connect.config(bootstrap_servers, security, extra={
        "group.id": "ctrlaudit-load", "enable.auto.commit": False, "fetch.max.bytes": 64 * 1024 * 1024})
    c = Consumer(conf)
    archive = Archive(root, fsync=False)
    try:
        md = c.list_topics(topic, timeout=timeout)
        if topic not in md.topics or md.topics[topic].error is not None:
            raise TopicNotFound(f"topic {topic!r} not found at {bootstrap_servers}")
        ends: dict[int, int] = {}  # partition -> its end offset
        for p in md.topics[topic].partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            if hi > lo:
                ends[p] = hi
        c.assign([TopicPartition(topic, p, 0) for p in ends])
        while ends:
            msgs = c.consume(10_000, timeout=1.0)
            access.check()
            for m in msgs:
                if m.error():
                    continue
                archive.add(m.value(), record_where(m))
                # a record read (not an error) has its partition and offset
                offset, partition = cast(int, m.offset()), cast(int, m.partition())
                if offset + 1 >= ends.get(partition, 0):
                    ends.pop(partition, None)
        archive.checkpoint()
    finally:
        c.close()
    return archive
