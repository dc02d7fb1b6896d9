"""KRaft metadata records -> ControllerEvents with the full state before and after.

`KRaftNormalizer` keeps the current image (topics, partitions, brokers, configs, features, the
active controller) and applies each committed record with Kafka's own merge rules
(PartitionRegistration.merge, ClusterDelta, TopicsDelta): a PartitionChangeRecord is a delta
(Leader -2 and null lists mean unchanged; every record bumps the partition epoch; any Leader other
than -2 bumps the leader epoch), so only a reader that keeps the image can say what the state was.
The image is replay's (`schemas.state.delta.ImageBuilder` over `schemas.state.image.ClusterImage`): every event made
is applied to it at once, so the state each "before" is read from is the fold of the events before.

Records must arrive in log order and already committed (see services.kraft.TransactionBuffer;
`feed` buffers metadata transactions itself). Events come out unchained (seq 0, no hashes): the
archive writer or the normalize agent chains them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from schemas.event_ids import offset_event_id
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, FeatureLevelChange, LeaderRecoveryState, PartitionChange, PartitionState, Payload, SourceKind,
    SourcePosition, TopicChange, TopicChangeKind, UnknownRecord,
)
from services.kraft import ControlRecord, MetadataRecord, Record, TransactionBuffer
from services.kraft.fields import Message
from services.kraft import UnknownRecord as RawUnknown
from schemas.fastbuild import fast_constructor
from services.normalize.base import Normalizer
from services.normalize.classify import change_kinds, election_type
from services.normalize.redaction import redact, withheld

RESOURCE_TYPES = {2: ConfigResourceType.TOPIC, 4: ConfigResourceType.BROKER, 8: ConfigResourceType.BROKER_LOGGER,
                  16: ConfigResourceType.CLIENT_METRICS, 32: ConfigResourceType.GROUP}
RECOVERY = {0: LeaderRecoveryState.RECOVERED, 1: LeaderRecoveryState.RECOVERING}
_UNKNOWN_RECOVERY = LeaderRecoveryState.UNKNOWN
_KRAFT_LOG, _KRAFT_SNAPSHOT = SourceKind.KRAFT_LOG, SourceKind.KRAFT_SNAPSHOT  # (an enum lookup is ~0.17 us per event)
# Records of known types that say nothing about controller state (quotas, ACLs, SCRAM, producer
# ids, delegation tokens, migration state, controller registration and, from Kafka 4.4, unregistration
# (29: the controller quorum's membership is the voters of the LeaderChange messages), the NoOp heartbeat).
NOT_CONTROLLER_STATE = {6, 10, 11, 13, 14, 15, 16, 18, 19, 20, 21, 22, 26, 27, 29}
TXN_MARKERS = {23, 24, 25}
# what a snapshot mentioned: ("b", broker), ("t", topic id), ("p", topic id, partition), ("c", type, name, config)
SeenKey = tuple[str | int, ...]


_new_source = fast_constructor(SourcePosition)
_new_event = fast_constructor(ControllerEvent)
_new_state = fast_constructor(PartitionState)
_new_change = fast_constructor(PartitionChange)


class KRaftNormalizer(Normalizer):
    """Feed decoded records in log order; get ControllerEvents. The epochs are the KRaft quorum's."""

    def __init__(self, cluster_id: str, node_id: int = -1, clock: Callable[[], int] | None = None) -> None:
        super().__init__(cluster_id, clock)
        self.node_id = node_id
        self.txn = TransactionBuffer()
        self.last_offset = -1
        self._snapshot: tuple[int, set[SeenKey]] | None = None  # (end offset, keys seen) while reading a snapshot
        self._batch: object = None  # the data batch of the last record made into an event, and its
        self._batch_facts: tuple[str | None, int, int] = (None, -1, -1)  # file name, time and epoch

    @property
    def epoch(self) -> int:
        """The KRaft quorum's epoch after everything fed so far (-1: no LeaderChange seen)."""
        return self.delta.controller.epoch

    # --- input -----------------------------------------------------------------------------

    def feed(self, record: Record) -> list[ControllerEvent]:
        """One record in log order (metadata, control or unknown); returns the events it commits."""
        out: list[ControllerEvent] = []
        for rec in self.txn.feed(record):
            out.extend(self._apply(rec))
        return out

    def feed_all(self, records: Iterable[Record]) -> list[ControllerEvent]:
        """feed() of each record, the events in one list (the capture worker's per-batch call)."""
        out: list[ControllerEvent] = []
        extend, txn, apply = out.extend, self.txn, self._apply
        for r in records:
            if txn.begin is None and type(r) is MetadataRecord and r.mv.api_key not in TXN_MARKERS:
                extend(apply(r))  # what txn.feed returns outside a transaction: [r]
            else:
                for rec in txn.feed(r):
                    extend(apply(rec))
        return out

    def gap(self, from_offset: int, to_offset: int, reason: str, event_time_ms: int = -1) -> ControllerEvent:
        """A stretch that was not read (deleted segment, corrupt bytes), said at its first offset."""
        return self.gap_event(_new_source(_KRAFT_LOG, from_offset, 0, self.node_id, None, None, None), from_offset,
                              to_offset, reason, event_time_ms, self.epoch, self.delta.feature("metadata.version"),
                              offset_event_id(self.cluster_id, _KRAFT_LOG, from_offset, 0))

    def begin_snapshot(self, end_offset: int) -> None:
        """The records that follow are a snapshot's full image (bootstrap events)."""
        self._snapshot = (end_offset, set())

    def end_snapshot(self, event_time_ms: int) -> list[ControllerEvent]:
        """Whatever the image holds that the snapshot did not mention is gone: bootstrap deletes."""
        assert self._snapshot is not None, "end_snapshot without begin_snapshot"
        end, seen = self._snapshot
        out: list[ControllerEvent] = []
        image, epoch = self.delta, self.epoch
        index = 10**6  # after the snapshot's own record indexes

        def gone(payload: Payload) -> None:
            nonlocal index
            out.append(self._event(SourceKind.KRAFT_SNAPSHOT, end, index, None, event_time_ms, epoch,
                                             payload, bootstrap=True))
            index += 1
        topics = image.topic_ids()
        for tid in topics:
            for pid in image.partitions_of(tid):
                if ("p", tid, pid) not in seen:
                    state = image.partition(tid, pid)
                    gone(PartitionChange(image.topic_name(tid) or "", tid, pid, state, None, change_kinds(state, None)))
        for tid in topics:
            if ("t", tid) not in seen and image.topic_name(tid):
                gone(TopicChange(TopicChangeKind.DELETED, image.topic_name(tid) or "", tid))
        for bid in image.broker_ids():
            if ("b", bid) not in seen:
                gone(BrokerChange(bid, BrokerChangeKind.UNREGISTERED, image.broker(bid), None))
        self._snapshot = None
        self.last_offset = end - 1
        return out

    # --- dispatch ----------------------------------------------------------------------------

    def _apply(self, rec: Record) -> list[ControllerEvent]:
        if self._snapshot is None:
            if rec.offset <= self.last_offset:
                return []  # already applied (a re-read after a restart or a snapshot bootstrap)
            self.last_offset = rec.offset
        if type(rec) is MetadataRecord:  # the common case first (the three record types are siblings)
            handler = _HANDLERS.get(rec.mv.api_key)
            if handler is not None:
                return handler(self, rec, rec.data)
        if isinstance(rec, ControlRecord):
            return self._control(rec)
        if isinstance(rec, RawUnknown):  # kept as what it is, never with its bytes (redaction.withheld)
            return [self._ev(rec, UnknownRecord(rec.api_key if rec.api_key is not None else -1,
                                                rec.version if rec.version is not None else -1,
                                                b"", withheld(rec.error, rec.value)))]
        if not isinstance(rec, MetadataRecord):
            raise TypeError(f"not a decoded KRaft record: {type(rec).__name__}")
        handler = _HANDLERS.get(rec.api_key)
        if handler is not None:
            return handler(self, rec, rec.data)
        if rec.api_key in NOT_CONTROLLER_STATE or rec.api_key in TXN_MARKERS:
            return []
        return [self._ev(rec, UnknownRecord(rec.api_key, rec.version, b"", f"no handler for {rec.name}"))]

    def _control(self, rec: ControlRecord) -> list[ControllerEvent]:
        if rec.type == "LeaderChange" and rec.data is not None:
            epoch, previous = rec.leader_epoch, self.delta.controller
            self.elected(epoch, rec.data["leaderId"])
            cc = ControllerChange(rec.data["leaderId"], epoch, previous.leader_id, previous.epoch,
                                  tuple(v["voterId"] for v in rec.data.get("voters", [])),
                                  tuple(v["voterId"] for v in rec.data.get("grantingVoters", [])))
            return [self._ev(rec, cc)]
        if rec.type == "KRaftVersion" and rec.data is not None:
            return self._feature(rec, "kraft.version", rec.data["kRaftVersion"])
        return []  # snapshot header/footer and voter sets are framing, not controller decisions

    def event_for(self, rec: Record, payload: Payload, index: int = 0) -> ControllerEvent:
        """An event at `rec`'s position that no handler makes (a migration's cutover, services/normalize/
        migration_offline.py): `index` orders several at one record."""
        return self._ev(rec, payload, index)

    # --- helpers -----------------------------------------------------------------------------

    def _ev(self, rec: Record, payload: Payload, index: int = 0) -> ControllerEvent:
        snapshot = self._snapshot
        if snapshot is None:
            kind, offset = _KRAFT_LOG, rec.offset
        else:
            kind, offset = _KRAFT_SNAPSHOT, snapshot[0]
            index = rec.offset * 1000 + index  # offsets inside a snapshot file are record indexes
        if type(rec) is MetadataRecord:  # its file, append_time and leader_epoch are its batch's
            batch = rec.batch
            if batch is self._batch:  # records of one batch come together: read the batch once
                file, event_time_ms, epoch = self._batch_facts
            else:
                file = self.file_name(batch.file)
                event_time_ms, epoch = batch.max_timestamp, batch.leader_epoch
                self._batch, self._batch_facts = batch, (file, event_time_ms, epoch)
        else:
            file, event_time_ms, epoch = self.file_name(rec.file), rec.append_time, rec.leader_epoch
        return self._event(kind, offset, index, file, event_time_ms, epoch, payload, snapshot is not None)

    def _event(self, kind: SourceKind, offset: int, index: int, file: str | None, event_time_ms: int, epoch: int,
               payload: Payload, bootstrap: bool = False) -> ControllerEvent:
        # kind is KRAFT_LOG or KRAFT_SNAPSHOT, no zxid or line: offset_event_id is event_id(cluster, source)
        cluster_id, delta = self.cluster_id, self.delta
        if type(payload) is FeatureLevelChange and payload.feature == "metadata.version":
            mv: int | None = payload.level  # the event is the first at its own level
        else:
            mv = delta.feature("metadata.version")
        # Normalizer.envelope, inlined: this is live capture's path for every record, where the call is 3 % of it
        event = _new_event(
            offset_event_id(cluster_id, kind, offset, index), cluster_id, 0,
            _new_source(kind, offset, index, self.node_id, None, file, None), event_time_ms, self.clock(),
            self.leaders_by_epoch.get(epoch, -1), epoch, payload, mv, bootstrap, "", "")
        delta.put(event)  # the image follows every event made, in the order made
        return event

    def _seen(self, key: SeenKey) -> None:
        if self._snapshot is not None:
            self._snapshot[1].add(key)

    def _feature(self, rec: Record, name: str, level: int) -> list[ControllerEvent]:
        previous = self.delta.feature(name)
        if previous == level and self._snapshot is None:
            return []
        return [self._ev(rec, FeatureLevelChange(name, level, previous))]

    def _partition_event(self, rec: MetadataRecord, tid: str, pid: int, before: PartitionState | None,
                         after: PartitionState | None, index: int = 0) -> ControllerEvent:
        kinds = change_kinds(before, after)
        shutting_down = False
        # (the old leader's broker matters only to an election: most changes keep the leader)
        if before is not None and before.leader >= 0 and after is not None and after.leader != before.leader:
            b = self.delta.broker(before.leader)
            shutting_down = b is not None and b.in_controlled_shutdown
        election = election_type(before, after, kinds, shutting_down)
        topic = self.delta.topic_name(tid) or ""
        return self._ev(rec, _new_change(topic, tid, pid, before, after, kinds, election, None), index)

    # --- handlers, one per record type (Kafka's replay rules) ---------------------------------

    def _register_broker(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        bid = d["brokerId"]
        self._seen(("b", bid))
        before = self.delta.broker(bid)
        after = BrokerState(
            broker_id=bid, epoch=d["brokerEpoch"], fenced=d.get("fenced", True),
            in_controlled_shutdown=d.get("inControlledShutdown", False), incarnation_id=d["incarnationId"],
            rack=d.get("rack"), endpoints=tuple(f"{e['name']}://{e['host']}:{e['port']}" for e in d["endPoints"]),
        )
        return [self._ev(rec, BrokerChange(bid, BrokerChangeKind.REGISTERED, before, after))]

    def _unregister_broker(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        bid = d["brokerId"]
        before = self.delta.broker(bid)
        return [self._ev(rec, BrokerChange(bid, BrokerChangeKind.UNREGISTERED, before, None))]

    def _fence(self, rec: MetadataRecord, d: Message, fenced: bool) -> list[ControllerEvent]:
        return self._broker_change(rec, d["id"], fenced=fenced, shutdown=None)

    def _registration_change(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        fenced = {1: True, -1: False}.get(d.get("fenced", 0))
        shutdown = True if d.get("inControlledShutdown", 0) == 1 else None
        return self._broker_change(rec, d["brokerId"], fenced=fenced, shutdown=shutdown)

    def _broker_change(self, rec: MetadataRecord, bid: int, fenced: bool | None, shutdown: bool | None) -> list[ControllerEvent]:
        before = self.delta.broker(bid)
        if before is None:
            return [self._ev(rec, UnknownRecord(rec.api_key, rec.version, b"",
                                                f"{rec.name} for broker {bid}, which is not registered"))]
        after = before
        if fenced is not None:
            after = replace(after, fenced=fenced, in_controlled_shutdown=False if fenced else after.in_controlled_shutdown)
        if shutdown:
            after = replace(after, in_controlled_shutdown=True)
        kind = (BrokerChangeKind.CONTROLLED_SHUTDOWN if shutdown else BrokerChangeKind.FENCED if fenced
                else BrokerChangeKind.UNFENCED if fenced is False else BrokerChangeKind.UPDATED)
        if after == before:
            return []  # only fields we do not model changed (log dirs): nothing for the record
        return [self._ev(rec, BrokerChange(bid, kind, before, after))]

    def _topic(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        tid = d["topicId"]
        self._seen(("t", tid))
        if self._snapshot is not None and self.delta.topic_name(tid) == d["name"]:
            return []  # already known: a snapshot restates it
        return [self._ev(rec, TopicChange(TopicChangeKind.CREATED, d["name"], tid))]

    def _remove_topic(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        tid = d["topicId"]
        out: list[ControllerEvent] = []
        for i, pid in enumerate(self.delta.partitions_of(tid)):
            out.append(self._partition_event(rec, tid, pid, self.delta.partition(tid, pid), None, index=i))
        name = self.delta.topic_name(tid) or ""
        out.append(self._ev(rec, TopicChange(TopicChangeKind.DELETED, name, tid), index=len(out)))
        return out

    def _partition_record(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        tid, pid = d["topicId"], d["partitionId"]
        self._seen(("p", tid, pid))
        # PartitionState(replicas, isr, leader, leader_epoch, partition_epoch, adding, removing, elr,
        # last_known_elr, leader_recovery_state), built field by field (fast_constructor)
        after = _new_state(
            tuple(d["replicas"]), tuple(d["isr"]), d["leader"], d["leaderEpoch"], d["partitionEpoch"],
            tuple(d["addingReplicas"]), tuple(d["removingReplicas"]), tuple(d.get("eligibleLeaderReplicas") or ()),
            tuple(d.get("lastKnownElr") or ()),
            RECOVERY.get(d.get("leaderRecoveryState", 0), LeaderRecoveryState.UNKNOWN))
        before = self.delta.partition(tid, pid)
        if self._snapshot is not None and before == after:
            return []  # a snapshot restating what we already know
        return [self._partition_event(rec, tid, pid, before, after)]

    def _partition_change(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        tid, pid = d["topicId"], d["partitionId"]
        before = self.delta.partition(tid, pid)
        if before is None:
            return [self._ev(rec, UnknownRecord(rec.api_key, rec.version, b"",
                                                f"PartitionChangeRecord for unknown partition {tid}-{pid}"))]
        return [self._partition_event(rec, tid, pid, before, merge(before, d))]

    def _clear_elr(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        name = d.get("topicName", "")
        out: list[ControllerEvent] = []
        image = self.delta
        for tid in image.topic_ids():
            if name and image.topic_name(tid) != name:
                continue
            for pid in image.partitions_of(tid):
                state = image.partition(tid, pid)
                if state is None or not (state.elr or state.last_known_elr):
                    continue
                after = replace(state, elr=(), last_known_elr=(), partition_epoch=state.partition_epoch + 1)
                out.append(self._partition_event(rec, tid, pid, state, after, index=len(out)))
        return out

    def _config(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        rtype = RESOURCE_TYPES.get(d["resourceType"], ConfigResourceType.UNKNOWN)
        key = (rtype.value, d["resourceName"], d["name"])
        self._seen(("c",) + key)
        # the image holds configs as the archive does, a sensitive value as "[redacted]" (never the secret)
        previous = self.delta.config(rtype, d["resourceName"], d["name"])
        shown, shown_prev, redacted = redact(d["name"], d.get("value"), previous)
        changed_secret = redacted and self.secrets.changed(key, d.get("value"))
        if self._snapshot is not None and previous == shown and not changed_secret:
            return []  # a snapshot restating what we already know
        return [self._ev(rec, ConfigChange(rtype, d["resourceName"], d["name"], shown, shown_prev, redacted))]

    def _feature_level(self, rec: MetadataRecord, d: Message) -> list[ControllerEvent]:
        return self._feature(rec, d["name"], d["featureLevel"])


def merge(before: PartitionState, d: Message) -> PartitionState:
    """PartitionRegistration.merge: apply a PartitionChangeRecord's data to the current state."""
    leader = d.get("leader", -2)
    replicas = d.get("replicas")
    isr = d.get("isr")
    removing, adding = d.get("removingReplicas"), d.get("addingReplicas")
    elr, lkelr = d.get("eligibleLeaderReplicas"), d.get("lastKnownElr")
    recovery = d.get("leaderRecoveryState", -1)
    return _new_state(  # PartitionState's fields in order (see _partition_record)
        before.replicas if replicas is None else tuple(replicas),
        before.isr if isr is None else tuple(isr),
        before.leader if leader == -2 else leader,
        before.leader_epoch if leader == -2 else before.leader_epoch + 1,
        before.partition_epoch + 1,
        before.adding_replicas if adding is None else tuple(adding),
        before.removing_replicas if removing is None else tuple(removing),
        before.elr if elr is None else tuple(elr),
        before.last_known_elr if lkelr is None else tuple(lkelr),
        before.leader_recovery_state if recovery == -1 else RECOVERY.get(recovery, _UNKNOWN_RECOVERY),
    )


# keyed as a record's message version is (its api_key, which only a metadata record's always has)
_HANDLERS: dict[int | None, Callable[[KRaftNormalizer, MetadataRecord, Message], list[ControllerEvent]]] = {
    0: KRaftNormalizer._register_broker,
    1: KRaftNormalizer._unregister_broker,
    2: KRaftNormalizer._topic,
    3: KRaftNormalizer._partition_record,
    4: KRaftNormalizer._config,
    5: KRaftNormalizer._partition_change,
    7: lambda n, r, d: n._fence(r, d, True),
    8: lambda n, r, d: n._fence(r, d, False),
    9: KRaftNormalizer._remove_topic,
    12: KRaftNormalizer._feature_level,
    17: KRaftNormalizer._registration_change,
    28: KRaftNormalizer._clear_elr,
}
