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

The archiver also reads the checkpoints topic, where the capture worker publishes signed checkpoints of the events'
Merkle tree, and stores each beside the files once they reach it and its root is the archive's
(services/capture/checkpoint_shelf.py). With a signing key of its own it also signs a checkpoint at every file it
finishes (ArchiveWriter's signers).

Run: ``python -m services.capture archiver`` (`main`) or ``ctrlaudit archive``.
"""
from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from schemas import codec as event_codec, entry, names
from schemas.errors import CodecError, ContractError
from schemas.archive import ArchiveWriter
from schemas.archive.listing import list_files
from schemas.archive.note import Signer, Verifier
from schemas.archive.signed import TREE_DIR, load_verifiers
from services.capture import connect
from services.capture.checkpoint_shelf import CheckpointShelf
from services.capture.security import ClientSecurity
from services.capture.stall import Stall, group_progress, group_served
from services.capture.settings import Settings

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message, TopicPartition

log = logging.getLogger(__name__)


class TopicDoesNotContinue(ContractError):
    """The events topic does not continue the archive's chain."""


class Archive:
    """One writer per cluster, resumed from the archive's last finished file; plain and testable. `signers`: the
    archiver's own key, a checkpoint signed at every finished file; `shelf`: capture's checkpoints waiting to be
    stored."""

    def __init__(self, root: str | Path, fsync: bool = True, signers: Sequence[Signer] = (),
                 shelf: CheckpointShelf | None = None) -> None:
        self.root = Path(root)
        self.fsync = fsync
        self.signers = list(signers)
        self.shelf = shelf if shelf is not None else CheckpointShelf()
        self.writers: dict[str, ArchiveWriter] = {}
        self.appended = 0
        self.skipped = 0
        self._treed: set[str] = set()  # clusters whose Merkle tree is kept: checkpoints of them are read

    def _keeps_tree(self, cluster: str) -> bool:
        # a tree once kept is kept in step: one left behind is rebuilt from every event of the archive
        return cluster in self._treed or (self.root / cluster / TREE_DIR).is_dir()

    def _writer(self, cluster: str) -> ArchiveWriter:
        w = self.writers.get(cluster)
        if w is None:
            w = ArchiveWriter.resume(self.root, cluster, fsync=self.fsync, signers=self.signers,
                                     keep_tree=self._keeps_tree(cluster))
            self.writers[cluster] = w
        return w

    def add_checkpoint(self, key: bytes | None, value: bytes | None, partition: int, offset: int,
                       where: str = "") -> None:
        """One checkpoints-topic message: it waits until the archive reaches it (`checkpoint` stores it)."""
        before = set(self.shelf.waiting)
        self.shelf.add(key, value, partition, offset, where)
        self._treed |= set(self.shelf.waiting) - before

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
        """Finish (fsync) every open file and store the checkpoints they reach; afterwards offsets may be committed
        (the checkpoints topic's only up to the oldest still waiting: `hold`)."""
        n = 0
        for cluster, w in list(self.writers.items()):
            n += len(w.close())
            del self.writers[cluster]
        for cluster in list(self.shelf.waiting):
            directory = self.root / cluster
            if not list_files(directory):
                continue  # nothing archived of it yet
            w = ArchiveWriter.resume(self.root, cluster, fsync=self.fsync, keep_tree=True)
            try:
                self.shelf.settle(cluster, w.dir, w.next_seq, w.tree_root, fsync=self.fsync)
            finally:
                w.close()
        return n

    def hold(self) -> dict[int, int]:
        """Checkpoints-topic partition -> the offset its commit must not pass."""
        return self.shelf.hold()


def commit(consumer: Consumer, retry_seconds: float = 30.0, pause: float = 0.5,
           offsets: list[TopicPartition] | None = None) -> bool:
    """Commit the consumed offsets (the files are fsynced already). A transient failure -- the group
    coordinator loading or moving after a broker restart -- is retried for `retry_seconds`, then left
    to the next checkpoint: the archive skips events it already holds by seq, so an offset left
    uncommitted only means reading those events again. Any other failure is raised. `offsets`: these, not every
    consumed position (held_offsets)."""
    from confluent_kafka import KafkaError, KafkaException  # extra: capture

    transient = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR,
                 KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT,
                 KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError.REBALANCE_IN_PROGRESS}
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            if offsets is None:
                consumer.commit(asynchronous=False)
            elif offsets:
                consumer.commit(offsets=offsets, asynchronous=False)
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


def held_offsets(consumer: Consumer, topic: str, hold: dict[int, int]) -> list[TopicPartition] | None:
    """The positions to commit when checkpoints wait (None: commit every position as usual): `topic`'s partitions in
    `hold` only up to the oldest waiting checkpoint, so that an archiver started again reads it again."""
    if not hold:
        return None
    from confluent_kafka import TopicPartition  # extra: capture

    out = []
    for tp in consumer.position(consumer.assignment()):
        if tp.topic == topic and tp.partition in hold:
            tp = TopicPartition(topic, tp.partition, min(hold[tp.partition], tp.offset) if tp.offset >= 0
                                else hold[tp.partition])
        if tp.offset >= 0:
            out.append(tp)
    return out


def run(settings: Settings, idle_exit: float | None = None, fsync: bool = True,
        trusted: Sequence[Verifier] = ()) -> Archive:
    """Consume until SIGTERM/SIGINT (or `idle_exit` seconds without a message). `trusted`: capture's checkpoints are
    stored only when signed by one of these keys (none given: when their roots match the archive's)."""
    from confluent_kafka import Consumer, KafkaError  # extra: capture
    from confluent_kafka.admin import AdminClient  # extra: capture

    archive = Archive(settings.archive_dir, fsync=fsync, signers=settings.signers, shelf=CheckpointShelf(trusted))
    checkpoints = settings.checkpoints_topic
    conf, access = connect.config(settings.bootstrap_servers, settings.security, extra={
        "group.id": settings.archive_group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", "fetch.max.bytes": 64 * 1024 * 1024,
        # Partitions added to the topic later are seen at this interval (default 5 minutes).
        "topic.metadata.refresh.interval.ms": 5000,
        # sorts the archiver's members of a group by name (range assignment); shown in the brokers' logs
        "client.id": "ctrlaudit-archiver",
    })
    consumer = Consumer(conf)
    admin = AdminClient(connect.config(settings.bootstrap_servers, settings.security)[0])  # type: ignore[arg-type]
    # another archiver of the group commits only at its checkpoints: its offsets may rest for a flush interval
    stall = Stall(max(settings.archive_rejoin_seconds, 2 * settings.archive_flush_seconds))
    stop = {"now": False}

    def _stop(*_: object) -> None:
        stop["now"] = True
    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    pending = subscribed = waited = False
    last_checkpoint = last_msg = time.monotonic()
    topics = [settings.events_topic]
    looked = {"at": -math.inf, "said": False}

    def with_checkpoints(now: float) -> bool:
        """Add the checkpoints topic to the subscription once it exists (looked for every 30 s: a capture of an
        older release makes none); True when it was added."""
        if checkpoints in topics or now - looked["at"] < 30:
            return False
        looked["at"] = now
        if topic_exists(consumer, checkpoints):
            topics.append(checkpoints)
            return True
        if not looked["said"]:
            log.info("no checkpoints topic %s (yet): capture's signed checkpoints are stored once it exists",
                     checkpoints)
            looked["said"] = True
        return False
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
                    with_checkpoints(time.monotonic())
                    consumer.subscribe(topics)
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
            holds = any(tp.topic == settings.events_topic for tp in consumer.assignment()) if not msgs else True
            if not msgs and stall.stalled(time.monotonic(), holds,
                                          partial(group_progress, consumer, settings.events_topic),
                                          partial(group_served, admin, settings.archive_group, settings.events_topic,
                                                  consumer.memberid())):
                log.warning("no partitions of %s assigned while events wait and nobody archives them (the group "
                            "gave them to no member, or its committed offsets have not moved for %.0f s): "
                            "rejoining the group with a new consumer", settings.events_topic, stall.after)
                if pending:  # what this consumer read is fsynced; its successor skips it by seq
                    archive.checkpoint()
                    pending = False
                consumer.close()
                consumer = Consumer(conf)
                consumer.subscribe(topics)
                stall.reset()
                continue
            for m in msgs:
                err = m.error()
                if err:
                    if err.code() != KafkaError._PARTITION_EOF:
                        log.warning("consume: %s", err)
                    continue
                if m.topic() == checkpoints:
                    # a record read (not an error) has its partition and offset
                    archive.add_checkpoint(m.key(), m.value(), cast(int, m.partition()), cast(int, m.offset()),
                                           record_where(m))
                else:
                    archive.add(m.value(), record_where(m))
                pending = True
                last_msg = time.monotonic()
            now = time.monotonic()
            if with_checkpoints(now):
                consumer.subscribe(topics)
            if pending and now - last_checkpoint >= settings.archive_flush_seconds:
                archive.checkpoint()
                # only after the files are fsynced; the checkpoints topic only up to the oldest one waiting
                commit(consumer, offsets=held_offsets(consumer, checkpoints, archive.hold()))
                pending, last_checkpoint = False, now
            if idle_exit is not None and not msgs and now - last_msg > idle_exit:
                break
        if pending:
            archive.checkpoint()
            commit(consumer, offsets=held_offsets(consumer, checkpoints, archive.hold()))
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
    signing_key: str | None = typer.Option(None, "--signing-key",
                                           help="Sign a checkpoint at every finished file with this key file "
                                                "(env CTRLAUDIT_SIGNING_KEY)."),
    trusted_key: list[str] = typer.Option([], "--trusted-key", envvar="CTRLAUDIT_TRUSTED_KEY",
                                          help="Store capture's checkpoints only when signed by this public key "
                                               "(repeatable; env CTRLAUDIT_TRUSTED_KEY)."),
) -> None:
    """Consume the events topic into hourly Avro files with manifests (fsync, then commit), and store capture's
    signed checkpoints beside them."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        s = Settings().replace(bootstrap_servers=bootstrap_server, events_topic=topic, archive_dir=archive_dir,
                               archive_flush_seconds=flush_seconds, command_config=command_config,
                               signing_key=signing_key)
        _ = s.signers  # a key that cannot be used: one line now
        trusted = [k for t in trusted_key for k in load_verifiers(t)]
        # at start a cluster that does not answer is one line (the container is restarted); once running,
        # an outage is waited out by the consumer
        connect.require_reachable(s.bootstrap_servers, s.security)
        arch = run(s, idle_exit=idle_exit, trusted=trusted)
    except ContractError as exc:  # a bad properties file, refused credentials, a chain break: one line
        raise SystemExit(f"ctrlaudit archive: {exc}") from None
    log.info("archived %d events (%d already present); %d checkpoints stored, %d refused", arch.appended, arch.skipped,
             arch.shelf.stored, arch.shelf.refused)


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
