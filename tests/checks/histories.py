"""Handmade tiny histories: a clean baseline and, per invariant, one that breaks exactly it.

`History` tracks each partition's current state so a change only names what it changes; the
partition epoch (and the leader epoch, on a leader change) are bumped the way KRaft does unless a
test overrides them. `bad` marks the events a violation must be reported at.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from schemas.archive.chain import Chain

from schemas.event_ids import event_id
from tests.archive_files import write_archive_file as write_events
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, ElectionType, LeaderRecoveryState, OffsetSample, PartitionChange, PartitionChangeKind,
    PartitionState, ReplicaOffset, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
)

K = PartitionChangeKind
RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b"}


class History:
    def __init__(self, cluster: str, mv: int | None = 21) -> None:
        self.cluster = cluster
        self.mv = mv
        self.controller = (100, 1)
        self.events: list[ControllerEvent] = []
        self.parts: dict[tuple[str, int], PartitionState] = {}
        self.brokers: dict[int, BrokerState] = {}
        self.bad: list[tuple[str, int]] = []  # (rule, index)
        # what the case breaks of another invariant on its way (invariant, rule, index): ELR laundering needs an
        # ELR that could not exist, itself isr_elr_sanity's breach
        self.bad_other: list[tuple[str, str, int]] = []
        self.topic_ids: dict[str, str] = {}  # name -> id of its current incarnation
        self.source = SourceKind.SIMULATOR  # ZOOKEEPER for the ZooKeeper-mode cases
        # time and metadata log offsets passed beyond one millisecond and one offset per event (`wait`)
        self.waited_ms = 0
        self.skipped_offsets = 0

    def tid(self, topic: str) -> str:
        return self.topic_ids.get(topic) or topic.upper().ljust(22, "A")[:22]

    # --- envelope -------------------------------------------------------------------------------
    def _emit(self, payload, *, epoch: int | None = None, controller: int | None = None,
              bootstrap: bool = False) -> int:
        n = len(self.events)
        src = SourcePosition(self.source, offset=1000 + n + self.skipped_offsets)
        cid, cep = self.controller
        t = 1_700_000_000_000 + n + self.waited_ms
        self.events.append(ControllerEvent(
            event_id=event_id(self.cluster, src), cluster_id=self.cluster, seq=n, source=src,
            event_time_ms=t, capture_time_ms=t,
            controller_id=cid if controller is None else controller, controller_epoch=cep if epoch is None else epoch,
            payload=payload, metadata_version=self.mv, bootstrap=bootstrap))
        return n

    def wait(self, ms: int, noops: bool = True) -> None:
        """Let `ms` pass before the next event; with `noops`, the controller's NoOpRecords (one per 500 ms,
        metadata.max.idle.interval.ms) take metadata log offsets meanwhile, as on a working cluster."""
        self.waited_ms += ms
        if noops:
            self.skipped_offsets += max(1, ms // 500)

    def mark(self, rule: str, index: int | None = None, invariant: str | None = None) -> None:
        """The event at `index` (default: the last) must be reported as breaking `rule` of the case's invariant,
        or of `invariant`."""
        at = len(self.events) - 1 if index is None else index
        if invariant is None:
            self.bad.append((rule, at))
        else:
            self.bad_other.append((invariant, rule, at))

    # --- payloads -------------------------------------------------------------------------------
    def elect_controller(self, leader: int, epoch: int) -> int:
        prev = self.controller
        self.controller = (leader, epoch)
        return self._emit(ControllerChange(leader, epoch, prev[0], prev[1], (100, 101, 102)))

    def broker(self, bid: int, kind: BrokerChangeKind, fenced: bool, rack: str | None = "auto",
               shutdown: bool = False) -> int:
        before = self.brokers.get(bid)
        rack = RACKS.get(bid) if rack == "auto" else rack
        if kind == BrokerChangeKind.UNREGISTERED:
            after = None
            self.brokers.pop(bid, None)
        else:
            after = BrokerState(bid, epoch=10 + bid, fenced=fenced, in_controlled_shutdown=shutdown, rack=rack)
            self.brokers[bid] = after
        return self._emit(BrokerChange(bid, kind, before, after))

    def register(self, *bids: int) -> None:
        for b in bids:
            self.broker(b, BrokerChangeKind.REGISTERED, fenced=True)
            self.broker(b, BrokerChangeKind.UNFENCED, fenced=False)

    def topic(self, name: str, topic_id: str | None = None) -> int:
        if topic_id is not None:
            self.topic_ids[name] = topic_id
        return self._emit(TopicChange(TopicChangeKind.CREATED, name, self.tid(name)))

    def delete_topic(self, name: str) -> int:
        """KRaft's order: every partition's delete, then the topic's."""
        for (t, p) in sorted(k for k in self.parts if k[0] == name):
            self.delete(t, p)
        return self._emit(TopicChange(TopicChangeKind.DELETED, name, self.tid(name)))

    def create(self, topic: str, p: int, replicas: tuple[int, ...], isr: tuple[int, ...] | None = None,
               leader: int | None = None, bootstrap: bool = False) -> int:
        isr = replicas if isr is None else isr
        st = PartitionState(replicas=replicas, isr=isr, leader=replicas[0] if leader is None else leader,
                            leader_epoch=0, partition_epoch=0)
        self.parts[(topic, p)] = st
        return self._emit(PartitionChange(topic, self.tid(topic), p, None, st, (K.CREATE,),
                                          ElectionType.NONE), bootstrap=bootstrap)

    def change(self, topic: str, p: int, changes: tuple[K, ...] = (), election: ElectionType = ElectionType.NONE,
               before: PartitionState | None = None, bootstrap: bool = False, **fields) -> int:
        cur = self.parts[(topic, p)]
        b = cur if before is None else before
        if "leader" in fields and fields["leader"] != b.leader and "leader_epoch" not in fields:
            fields["leader_epoch"] = b.leader_epoch + 1
        fields.setdefault("partition_epoch", b.partition_epoch + 1)
        after = replace(b, **fields)
        self.parts[(topic, p)] = after
        return self._emit(PartitionChange(topic, self.tid(topic), p, b, after, changes, election),
                          bootstrap=bootstrap)

    def delete(self, topic: str, p: int) -> int:
        b = self.parts.pop((topic, p))
        return self._emit(PartitionChange(topic, self.tid(topic), p, b, None, (K.DELETE,)))

    def config(self, rtype: ConfigResourceType, resource: str, name: str, value: str | None) -> int:
        return self._emit(ConfigChange(rtype, resource, name, value))

    def sample(self, topic: str, p: int, hw: int, leos: dict[int, int], leader: int | None = None) -> int:
        st = self.parts[(topic, p)]
        return self._emit(OffsetSample(topic, p, st.leader if leader is None else leader, st.leader_epoch, hw,
                                       1, tuple(ReplicaOffset(b, o, 2) for b, o in leos.items())))

    def gap(self) -> int:
        return self._emit(CaptureGap(5, 9, "segment deleted before it was read"))

    def request_log_gap(self) -> int:
        """Lines of a node's request log not read (ctrlaudit import requests): who asked is unknown there, the
        controller's state is not."""
        n = len(self.events)
        src = SourcePosition(SourceKind.REQUEST_LOG, offset=1_700_000_000_000 + n, index=-1, node_id=1,
                             file="kafka-request.log", line=7)
        self.events.append(ControllerEvent(
            event_id=event_id(self.cluster, src), cluster_id=self.cluster, seq=n, source=src,
            event_time_ms=src.offset, capture_time_ms=src.offset, controller_id=-1, controller_epoch=-1,
            payload=CaptureGap(7, 7, "kafka-request.log: line 7 not read: a line cut short")))
        return n

    # --- output ---------------------------------------------------------------------------------
    def chained(self) -> list[ControllerEvent]:
        chain = Chain(self.cluster)
        return [chain.append(e) for e in self.events]

    def write(self, path: Path) -> Path:
        write_events(path, self.chained())
        return path


def baseline(cluster: str, mv: int | None = 21) -> History:
    """Every kind of legal step: failover, registrations, creates, ISR shrink/expand, a preferred
    election, a full reassignment, a proper fence, samples, an allowed unclean election."""
    h = History(cluster, mv)
    h.elect_controller(100, 1)
    h.register(1, 2, 3, 4)
    h.topic("t")
    h.create("t", 0, (1, 2, 3))
    h.create("t", 1, (2, 3, 4))
    h.sample("t", 0, 100, {1: 120, 2: 110, 3: 100})
    h.change("t", 0, (K.ISR,), isr=(1, 2))                     # shrink: no leader-epoch bump at MV 21
    h.sample("t", 0, 130, {1: 150, 2: 140, 3: -1})             # 3 left the ISR; -1 = no answer
    h.change("t", 0, (K.ISR,), isr=(1, 2, 3))
    h.change("t", 0, (K.LEADER,), ElectionType.PREFERRED, leader=2)
    h.sample("t", 0, 140, {1: 150, 2: 150, 3: 145})
    # reassignment of t-0 from [1,2,3] to [2,3,4]: grow, catch up, complete
    h.change("t", 0, (K.REPLICAS, K.REASSIGNMENT_START), replicas=(2, 3, 4, 1), adding_replicas=(4,),
             removing_replicas=(1,))
    h.change("t", 0, (K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE), replicas=(2, 3, 4), isr=(2, 3, 4),
             adding_replicas=(), removing_replicas=(), leader_epoch=h.parts[("t", 0)].leader_epoch + 1)
    # controller failover
    h.elect_controller(101, 2)
    # broker 3 goes away: leave ISRs first, then the fence (KRaft's order)
    h.change("t", 0, (K.ISR,), isr=(2, 4))
    h.change("t", 1, (K.LEADER, K.ISR), ElectionType.CLEAN, leader=4, isr=(2, 4))
    h.broker(3, BrokerChangeKind.FENCED, fenced=True)
    h.sample("t", 0, 150, {2: 160, 4: 150})
    # an allowed unclean election on t-1: topic config says so
    h.config(ConfigResourceType.TOPIC, "t", "unclean.leader.election.enable", "true")
    h.change("t", 1, (K.ISR,), isr=(4,))
    h.change("t", 1, (K.LEADER,), ElectionType.CLEAN, leader=-1)  # 4 lost; ISR keeps its last member
    h.broker(3, BrokerChangeKind.UNFENCED, fenced=False)
    h.change("t", 1, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN, leader=3, isr=(3,),
             leader_recovery_state=LeaderRecoveryState.RECOVERING)
    h.change("t", 1, (K.RECOVERY_STATE,), leader_recovery_state=LeaderRecoveryState.RECOVERED)
    h.sample("t", 1, 50, {3: 60})
    return h
