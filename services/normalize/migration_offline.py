"""One history across a ZooKeeper -> KRaft migration (KIP-866): ZooKeeper's transaction logs up to the cutover,
then the KRaft controller's metadata log.

What each side says, and which one is the history where:
- Before the KRaft controller claims ZooKeeper, the ZooKeeper-mode controller (a broker) decides, and ZooKeeper's
  transactions are the history. The claim is a multi that bumps ``/controller_epoch`` and writes ``/controller``
  with ``kraftControllerEpoch`` (KafkaZkClient.tryRegisterKRaftControllerAsActiveController): from there on no
  broker writes controller state to ZooKeeper any more.
- The controller then copies ZooKeeper's metadata into its log as one metadata transaction
  (BeginTransactionRecord "ZK Migration" ... ZkMigrationStateRecord MIGRATION, EndTransactionRecord). Those
  records restate what ZooKeeper held; they are no events of their own but are checked equal to the image the
  ZooKeeper part built: a difference is an error naming the partition, the record's offset and both states,
  never a silent choice of one side.
- What the metadata log held before that transaction (the controller's election, its bootstrap records, the
  migrating brokers' registrations) was the controller waiting, not deciding: applied, not emitted. At the
  transaction's end the cutover is emitted: the KRaft controller (its quorum's leader epoch, a counter of its own:
  the ControllerChange's previous epoch is ZooKeeper's ``/controller_epoch`` of the claim), the features, and each
  broker whose registration the controller knows differently from ZooKeeper (KRaft's broker epochs).
- After it the metadata log is the history; ZooKeeper's later transactions are the controller's dual-writes of
  what the log already holds (and the brokers' own registrations) and are not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypedDict

from schemas.events import (
    BrokerChange, BrokerChangeKind, ConfigResourceType, ControllerChange, ControllerEvent, FeatureLevelChange,
    PartitionState, Payload,
)
from schemas.state.image import ClusterImage
from services.kraft import MetadataRecord, Record
from services.kraft.transactions import ABORT, BEGIN, END
from services.kraft.normalizer import KRaftNormalizer
from services.normalize.imports import BadImport, ImportReport
from services.kraft.offline import cluster_id_of, import_events
from services.zookeeper.offline import cluster_id_of_zk, import_zk_events
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import Txn, znodes

MIGRATION_TXN = "ZK Migration"  # QuorumController.MigrationRecordConsumer.beginMigration's name
ZK_MIGRATION_STATE = 21  # ZkMigrationStateRecord
MIGRATION = 1  # ZkMigrationState.MIGRATION: the copy is committed, dual-write follows
TOPIC, PARTITION, CONFIG = 2, 3, 4


def claim_epoch(txn: Txn) -> int | None:
    """The KRaft leader epoch a KRaft controller's claim of ``/controller`` states, or None for any other txn (a
    ZooKeeper-mode broker's ``/controller`` has no ``kraftControllerEpoch``, or -1)."""
    for op in txn.ops:
        if op.kind in ("create", "create2", "setData") and op.path == "/controller":
            try:
                d = znodes.json_object(op.data)
            except znodes.ZnodeError:  # not JSON (or nested beyond Python's stack): not a claim; read as a znode later
                continue
            epoch = d.get("kraftControllerEpoch")
            if isinstance(epoch, int) and type(epoch) is int and epoch >= 0:  # (a bool is no epoch)
                return epoch
    return None


class Cutover(TypedDict, total=False):
    """Where a migrated history's ZooKeeper part ends and its metadata log's begins (filled in once read)."""
    claim_zxid: int  # the KRaft controller's claim of /controller
    zookeeper_epoch: int  # /controller_epoch then
    offset: int  # of the migration transaction's EndTransactionRecord
    kraft_controller: int
    kraft_epoch: int
    held_back_events: int  # of the metadata log's records before the cutover: applied, not emitted
    compared: dict[str, int]  # what was found equal: topics, partitions, topic configs


class MigrationMismatch(BadImport):
    """The migration's records do not restate what ZooKeeper's transaction logs hold."""


def _show(state: PartitionState | None) -> str:
    return "absent" if state is None else state.describe()


class MigratedKRaftNormalizer(KRaftNormalizer):
    """The KRaft normalizer of a migrated cluster's metadata log, after the ZooKeeper part (see the module doc)."""

    def __init__(self, cluster_id: str, zookeeper: ZooKeeperNormalizer, claim_zxid: int, node_id: int = -1):
        super().__init__(cluster_id, node_id=node_id)
        self.zookeeper = zookeeper
        self.claim_zxid = claim_zxid
        self.cut_at: int | None = None  # offset of the migration transaction's EndTransactionRecord
        self.cut_epoch = -1  # the KRaft quorum's leader epoch then
        self.held_back = 0  # events of the records before the cutover (applied, not emitted)
        self._in_migration = False
        self._state: int | None = None
        # what the migration restated (a topic id, or a topic id and partition) -> its record's offset
        self._offsets: dict[str | tuple[str, int], int] = {}
        self.compared: dict[str, int] = {}  # what was found equal: topics, partitions, topic configs

    def begin_snapshot(self, end_offset: int) -> None:
        if self.cut_at is None:
            raise BadImport(f"the metadata log starts with a snapshot at offset {end_offset}: the migration's "
                            f"transaction before it is gone (retention), so it cannot be checked against ZooKeeper")
        super().begin_snapshot(end_offset)

    def feed(self, record: Record) -> list[ControllerEvent]:
        if self.cut_at is not None:
            return super().feed(record)
        key, data = (record.api_key, record.data) if isinstance(record, MetadataRecord) else (None, {})
        if key == BEGIN and data.get("name") == MIGRATION_TXN:
            self._in_migration, self._state, self._offsets = True, None, {}
        elif self._in_migration and key == PARTITION:
            self._offsets[(data["topicId"], data["partitionId"])] = record.offset
        elif self._in_migration and key == TOPIC:
            self._offsets[data["topicId"]] = record.offset
        elif self._in_migration and key == ZK_MIGRATION_STATE:
            self._state = data.get("zkMigrationState")
        self.held_back += len(super().feed(record))
        if key == ABORT and self._in_migration:
            self._in_migration = False  # Kafka discards it and migrates again later
        if key == END and self._in_migration:
            self._in_migration = False
            if self._state != MIGRATION:
                raise BadImport(f"the migration transaction ending at offset {record.offset} sets no "
                                f"ZkMigrationState MIGRATION (it says {self._state})")
            self._compare(record.offset)
            self.cut_at, self.cut_epoch = record.offset, self.epoch
            return self._cutover(record)
        return []

    def _compare(self, end: int) -> None:
        zk, kr = self.zookeeper.image, self.image
        at = f"ZooKeeper's history up to zxid {self.claim_zxid:#x}"
        problems = []
        for tid in sorted(set(zk.topic_names) | set(kr.topic_names)):
            if zk.topic_names.get(tid) != kr.topic_names.get(tid):
                problems.append(f"topic id {tid}: the migration's TopicRecord at offset {self._offsets.get(tid, end)} "
                                f"names it {kr.topic_names.get(tid)!r}, {at} {zk.topic_names.get(tid)!r}")
        for key in sorted(set(zk.partitions) | set(kr.partitions)):
            z, k = zk.partitions.get(key), kr.partitions.get(key)
            if z != k:
                name = kr.topic_names.get(key[0]) or zk.topic_names.get(key[0]) or key[0]
                problems.append(f"partition {name}-{key[1]}: the migration's PartitionRecord at offset "
                                f"{self._offsets.get(key, end)} has {_show(k)}; {at} has {_show(z)}")
        zk_configs, topic_configs = _topic_configs(zk), _topic_configs(kr)
        for ckey in sorted(set(zk_configs) | set(topic_configs)):
            # (a secret is "[redacted]" in both images: its digests tell whether the values are equal)
            zc, kc = zk_configs.get(ckey), topic_configs.get(ckey)
            secret = ("TOPIC", *ckey)
            if zc != kc or self.zookeeper.secrets.digests.get(secret) != self.secrets.digests.get(secret):
                problems.append(f"topic {ckey[0]} config {ckey[1]}: the migration (ending at offset {end}) has "
                                f"{kc!r}; {at} has {zc!r}" + (" (values differ)" if zc == kc else ""))
        if problems:
            more = f" (and {len(problems) - 1} more difference(s))" if len(problems) > 1 else ""
            raise MigrationMismatch(f"migration check failed: {problems[0]}{more}")
        self.compared = {"topics": len(kr.topic_names), "partitions": len(kr.partitions),
                         "topic_configs": len(topic_configs)}

    def _cutover(self, end: Record) -> list[ControllerEvent]:
        zk, kr = self.zookeeper.image, self.image
        payloads: list[Payload] = [ControllerChange(kr.controller.leader_id, kr.controller.epoch, self.zookeeper.controller_node,
                                           self.zookeeper.epoch)]
        payloads += [FeatureLevelChange(name, level, None) for name, level in sorted(kr.features.items())]
        for bid in sorted(set(zk.brokers) | set(kr.brokers)):
            before, after = zk.brokers.get(bid), kr.brokers.get(bid)
            if before != after:
                kind = (BrokerChangeKind.REGISTERED if before is None else BrokerChangeKind.UNREGISTERED
                        if after is None else BrokerChangeKind.UPDATED)
                payloads.append(BrokerChange(bid, kind, before, after))
        return [self.event_for(end, p, i) for i, p in enumerate(payloads)]


def _topic_configs(image: ClusterImage) -> dict[tuple[str, str], str]:
    """(topic, config name) -> value of every topic config an image holds."""
    return {(resource, name): value for (rtype, resource), values in image.configs.items()
            if rtype is ConfigResourceType.TOPIC for name, value in values.items()}


def import_migrated_events(kraft_paths: Sequence[str | Path], zk_paths: Sequence[str | Path], cluster_id: str,
                           on_error: str = "raise", node_id: int = -1, zk_report: ImportReport | None = None,
                           report: ImportReport | None = None,
                           cutover: Cutover | None = None) -> Iterator[ControllerEvent]:
    """ZooKeeper's events up to the KRaft controller's claim, the cutover, then the metadata log's (unchained).
    `cutover` is filled in once the log is read: the claim's zxid, the cutover's offset, both epochs, what was
    compared."""
    zk_report = zk_report if zk_report is not None else ImportReport()
    report = report if report is not None else ImportReport()
    zk_norm = ZooKeeperNormalizer(cluster_id)
    claims: list[int] = []

    def until(txn: Txn) -> bool:
        if claim_epoch(txn) is not None:
            claims.append(txn.zxid)
            return True
        return False

    yield from import_zk_events(zk_paths, cluster_id, on_error, zk_report, normalizer=zk_norm, until=until)
    if not claims:
        raise BadImport("the ZooKeeper logs hold no KRaft controller's claim of /controller (a /controller znode "
                        "with kraftControllerEpoch): they end before the migration, or it never happened")
    norm = MigratedKRaftNormalizer(cluster_id, zk_norm, claims[0], node_id=node_id)
    yield from import_events(kraft_paths, cluster_id, on_error, node_id, report, normalizer=norm)
    if norm.cut_at is None:
        raise BadImport("the metadata log holds no committed ZooKeeper migration (a 'ZK Migration' transaction "
                        "with ZkMigrationState MIGRATION): not the log of the controller that migrated this cluster")
    if cutover is not None:
        cutover.update(Cutover(claim_zxid=claims[0], zookeeper_epoch=zk_norm.epoch, offset=norm.cut_at,
                               kraft_controller=norm.leaders_by_epoch.get(norm.cut_epoch, -1),
                               kraft_epoch=norm.cut_epoch, held_back_events=norm.held_back, compared=norm.compared))


def migration_cluster_id(kraft_paths: Sequence[Path], zk_paths: Sequence[Path]) -> str | None:
    """The one cluster id both sides state (KRaft's meta.properties, ZooKeeper's /cluster/id); two: an error."""
    kraft, zk = cluster_id_of(kraft_paths), cluster_id_of_zk(zk_paths)
    if kraft and zk and kraft != zk:
        raise BadImport(f"two clusters: the metadata log's meta.properties says {kraft}, ZooKeeper's /cluster/id {zk}")
    return kraft or zk
