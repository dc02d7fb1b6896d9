"""A small, deterministic generator of valid controller histories for the replay tests.

Not the project's simulator (services/simulator): just enough of Kafka's rules (leader in ISR,
epochs that rise, reassignment OAR+RAR then RAR) to exercise every handler, with every payload
type, fixed ids and a seed. `generate(...)` returns events with seq 0..n-1 (optionally hashed).
"""
from __future__ import annotations

import random
from dataclasses import replace

from schemas.archive.chain import Chain

from schemas.event_ids import event_id
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ConfigChange, ConfigResourceType,
    ControllerChange, ControllerEvent, ElectionType, FeatureLevelChange, LeaderRecoveryState,
    OffsetSample, PartitionChange, PartitionChangeKind as K, PartitionState, ReplicaOffset, SourceKind,
    SourcePosition, TopicChange, TopicChangeKind, UnknownRecord,
)

CLUSTER = "sim-cluster-0000000000"
T0 = 1_700_000_000_000


def topic_id(name: str) -> str:
    return (name.replace("-", "") + "A" * 22)[:22]


class HistoryGen:
    def __init__(self, seed: int = 1, brokers: int = 5, topics: int = 3, partitions: int = 4, rf: int = 3) -> None:
        self.rnd = random.Random(seed)
        self.events: list[ControllerEvent] = []
        self.offset = 100
        self.index = 0
        self.time = T0
        self.controller = (3000, 1)
        self.brokers: dict[int, BrokerState] = {}
        self.parts: dict[tuple[str, int], PartitionState] = {}
        self.topics: dict[str, str] = {}
        self.n_brokers, self.n_topics, self.n_partitions, self.rf = brokers, topics, partitions, rf
        self.topic_counter = 0

    # --- envelope -------------------------------------------------------------------------
    def emit(self, payload: object, same_offset: bool = False, bootstrap: bool = False) -> None:
        if same_offset:
            self.index += 1
        else:
            self.offset += self.rnd.choice((1, 1, 1, 2, 5))
            self.index = 0
            self.time += self.rnd.choice((0, 1, 7, 40, 250))
        src = SourcePosition(SourceKind.SIMULATOR, self.offset, self.index)
        self.events.append(ControllerEvent(
            event_id=event_id(CLUSTER, src), cluster_id=CLUSTER, seq=len(self.events), source=src,
            event_time_ms=self.time, capture_time_ms=self.time + 5, controller_id=self.controller[0],
            controller_epoch=self.controller[1], payload=payload, metadata_version=21, bootstrap=bootstrap,
        ))

    def part(self, topic: str, p: int, after: PartitionState | None, changes: tuple[K, ...],
             election: ElectionType = ElectionType.NONE, same_offset: bool = False) -> None:
        before = self.parts.get((topic, p))
        if after is None:
            del self.parts[(topic, p)]
        else:
            self.parts[(topic, p)] = after
        self.emit(PartitionChange(topic, self.topics[topic], p, before, after, changes, election), same_offset)

    # --- setup ----------------------------------------------------------------------------
    def setup(self) -> HistoryGen:
        self.emit(ControllerChange(3000, 1, -1, -1, (3000,), (3000,)))
        self.emit(FeatureLevelChange("metadata.version", 21))
        for b in range(1, self.n_brokers + 1):
            self.register(b)
        self.emit(ConfigChange(ConfigResourceType.BROKER, "", "min.insync.replicas", "1"))
        for _ in range(self.n_topics):
            self.create_topic()
        return self

    def register(self, b: int) -> None:
        old = self.brokers.get(b)
        new = BrokerState(b, self.offset + 1, fenced=False, rack=f"r{b % 2}", endpoints=(f"PLAINTEXT://h{b}:9092",))
        self.brokers[b] = new
        self.emit(BrokerChange(b, BrokerChangeKind.REGISTERED, old, new))

    def create_topic(self) -> None:
        name = f"t{self.topic_counter}"
        self.topic_counter += 1
        self.topics[name] = topic_id(name)
        self.emit(TopicChange(TopicChangeKind.CREATED, name, self.topics[name]))
        if self.rnd.random() < 0.5:
            self.emit(ConfigChange(ConfigResourceType.TOPIC, name, "min.insync.replicas", "2"), same_offset=True)
        ids = sorted(self.brokers)
        for p in range(self.n_partitions):
            reps = tuple(ids[(p + i) % len(ids)] for i in range(min(self.rf, len(ids))))
            self.part(name, p, PartitionState(reps, reps, reps[0], 0, 0), (K.CREATE,), ElectionType.NONE, True)

    # --- random steps ---------------------------------------------------------------------
    def step(self) -> None:
        r = self.rnd.random()
        if not self.parts:
            self.create_topic()
            return
        key = self.rnd.choice(list(self.parts))
        s = self.parts[key]
        if r < 0.30:
            self.shrink(key, s)
        elif r < 0.55:
            self.expand(key, s)
        elif r < 0.70:
            self.elect(key, s)
        elif r < 0.76:
            self.reassign(key, s)
        elif r < 0.80:
            self.emit(OffsetSample(key[0], key[1], s.leader, s.leader_epoch, 10, self.time,
                                   tuple(ReplicaOffset(b, 12, self.time) for b in s.replicas)))
        elif r < 0.84:
            self.fence_cycle()
        elif r < 0.86:
            c = self.controller
            self.controller = (3000 + (c[0] - 2999) % 3, c[1] + 1)
            self.emit(ControllerChange(self.controller[0], self.controller[1], c[0], c[1], (3000, 3001, 3002)))
        elif r < 0.90:
            t = key[0]
            if self.rnd.random() < 0.5:
                name, value = "min.insync.replicas", self.rnd.choice(("1", "2", "3", None))
            else:
                name, value = "unclean.leader.election.enable", self.rnd.choice(("true", "false", None))
            self.emit(ConfigChange(ConfigResourceType.TOPIC, t, name, value))
        elif r < 0.91:
            self.emit(CaptureGap(self.offset + 1, self.offset + 3, "segment deleted before read"))
        elif r < 0.92:
            self.emit(UnknownRecord(99, 0, b"\x00\x01", "unknown apiKey 99"))
        elif r < 0.93:
            self.emit(FeatureLevelChange("eligible.leader.replicas.version", self.rnd.choice((0, 1))))
        elif r < 0.94:
            self.delete_topic(key[0])
        elif r < 0.95:
            self.create_topic()
        else:
            self.shrink(key, s)

    def shrink(self, key: tuple[str, int], s: PartitionState) -> None:
        if len(s.isr) <= 1:
            # The last ISR member fails: offline (leader -1), ISR keeps it (Kafka keeps the last one).
            if s.leader == -1:
                return
            after = replace(s, leader=-1, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
            self.part(*key, after, (K.LEADER,), ElectionType.UNKNOWN)
            return
        out = self.rnd.choice([b for b in s.isr if b != s.leader] or list(s.isr))
        isr = tuple(b for b in s.isr if b != out)
        if out == s.leader:
            return
        self.part(*key, replace(s, isr=isr, partition_epoch=s.partition_epoch + 1), (K.ISR,))

    def expand(self, key: tuple[str, int], s: PartitionState) -> None:
        missing = [b for b in s.replicas if b not in s.isr]
        if not missing:
            return
        if s.leader == -1:
            # Unclean election of a replica outside the ISR.
            b = missing[0]
            after = replace(s, leader=b, isr=(b,), leader_epoch=s.leader_epoch + 1,
                            partition_epoch=s.partition_epoch + 1, leader_recovery_state=LeaderRecoveryState.RECOVERING)
            self.part(*key, after, (K.LEADER, K.ISR, K.RECOVERY_STATE), ElectionType.UNCLEAN)
            return
        isr = s.isr + (missing[0],)
        changes: tuple[K, ...] = (K.ISR,)
        rec = s.leader_recovery_state
        if rec is LeaderRecoveryState.RECOVERING:
            rec, changes = LeaderRecoveryState.RECOVERED, (K.ISR, K.RECOVERY_STATE)
        after = replace(s, isr=isr, partition_epoch=s.partition_epoch + 1, leader_recovery_state=rec)
        if s.adding_replicas and all(b in isr for b in s.adding_replicas):
            # Reassignment completes: replicas = RAR, adding/removing cleared.
            target = tuple(b for b in s.replicas if b not in s.removing_replicas)
            isr2 = tuple(b for b in isr if b in target)
            leader = s.leader if s.leader in target else target[0]
            after = replace(after, replicas=target, isr=isr2, adding_replicas=(), removing_replicas=(), leader=leader,
                            leader_epoch=s.leader_epoch + (leader != s.leader))
            changes = (K.ISR, K.REPLICAS, K.REASSIGNMENT_COMPLETE) + ((K.LEADER,) if leader != s.leader else ())
            self.part(*key, after, changes, ElectionType.REASSIGNMENT if leader != s.leader else ElectionType.NONE)
            return
        self.part(*key, after, changes)

    def elect(self, key: tuple[str, int], s: PartitionState) -> None:
        candidates = [b for b in s.isr if b != s.leader]
        if not candidates:
            return
        new = candidates[0]
        pref = new == s.replicas[0]
        after = replace(s, leader=new, leader_epoch=s.leader_epoch + 1, partition_epoch=s.partition_epoch + 1)
        self.part(*key, after, (K.LEADER,), ElectionType.PREFERRED if pref else ElectionType.CLEAN)

    def reassign(self, key: tuple[str, int], s: PartitionState) -> None:
        if s.adding_replicas or s.leader == -1:
            return
        spare = [b for b in sorted(self.brokers) if b not in s.replicas]
        if not spare:
            return
        add, drop = spare[0], s.replicas[-1]
        target = tuple(b for b in s.replicas if b != drop) + (add,)
        after = replace(s, replicas=target + (drop,), adding_replicas=(add,), removing_replicas=(drop,),
                        partition_epoch=s.partition_epoch + 1)
        self.part(*key, after, (K.REPLICAS, K.REASSIGNMENT_START))

    def fence_cycle(self) -> None:
        b = self.rnd.choice(sorted(self.brokers))
        old = self.brokers[b]
        if old.fenced:
            new = replace(old, fenced=False)
            kind = BrokerChangeKind.UNFENCED
        else:
            new = replace(old, fenced=True)
            kind = BrokerChangeKind.FENCED
        self.brokers[b] = new
        self.emit(BrokerChange(b, kind, old, new))

    def delete_topic(self, name: str) -> None:
        for key in [k for k in self.parts if k[0] == name]:
            self.part(*key, None, (K.DELETE,), same_offset=True)
        self.emit(TopicChange(TopicChangeKind.DELETED, name, self.topics.pop(name)), same_offset=True)


def generate(n: int, seed: int = 1, chain: bool = False, **shape: int) -> list[ControllerEvent]:
    """About `n` events (setup, then random steps) with seq 0..len-1."""
    g = HistoryGen(seed, **shape).setup()
    while len(g.events) < n:
        g.step()
    events = g.events[:n] if len(g.events) >= n else g.events
    if chain:
        c = Chain(CLUSTER)
        events = [c.append(e) for e in events]
    return events
