"""The simulator: a seeded random workload driving Kafka's controller rules, emitting events.

One step = one operator/cluster action (a sample, an ISR shrink, a broker fence, ...), which may
emit many events (a fence touches every partition of the broker). Follow-ups that Kafka performs
later (unfence after a session timeout, RECOVERED after an unclean election, a restart after a
controlled shutdown) sit in a schedule keyed by step. Everything is drawn from one
`random.Random(seed)` and iterated in insertion order, so a seed fixes the history.

The controller's view it decides from is the journal's image (`self.j.delta`, see model.py): a change is
made by emitting its event. Its own registries are workload state: `brokers` (the truth, see model.py),
`topics` and the working sets (`live`, `lagging`, `reassigning`, `offline`) are what it draws from, in
the order it added to them (the image's are sorted: drawing from them would change every history), and
breaches make topics it must never draw from (a stray partition's, a duplicate-replica topic).
"""
from __future__ import annotations

import base64
import heapq
import random
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from schemas.state.image import ClusterImage
from schemas.events import (
    BrokerChange, BrokerChangeKind, ConfigChange, ConfigResourceType, ControllerChange, ControllerEvent,
    ElectionType, FeatureLevelChange, LeaderRecoveryState, OffsetSample, PartitionChange, PartitionChangeKind,
    PartitionState, ReplicaOffset, TopicChange, TopicChangeKind,
)
from schemas.fastbuild import fast_constructor
from services.normalize.classify import change_kinds
from services.simulator import partition_rules as rules
from services.simulator.model import (
    MIN_ISR, UNCLEAN, Broker, IndexedSet, Partition, Reassignment, Topic, catch_up, on_leader_change, produce,
)
from services.simulator.config import SimConfig
from services.simulator.journal import Journal
from services.simulator.placement import place

K = PartitionChangeKind
_REASSIGNMENT = frozenset((K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE, K.REASSIGNMENT_CANCEL))
_ORDER = tuple(K)
_NONE, _UNCLEAN = ElectionType.NONE, ElectionType.UNCLEAN  # (an enum member read off its class: ~0.17 us)
_RECOVERED = LeaderRecoveryState.RECOVERED
# One per change or sample: slots stored directly, half the cost of a frozen dataclass's __init__.
_new_change, _new_sample = fast_constructor(PartitionChange), fast_constructor(OffsetSample)
_new_offset = fast_constructor(ReplicaOffset)
_HW_THEN_LEO = OffsetSample.__dataclass_fields__["sample_order"].default  # the field's default, as __init__ sets it


def _kinds(before: PartitionState | None, after: PartitionState | None,
           decided: tuple[PartitionChangeKind, ...]) -> tuple[PartitionChangeKind, ...]:
    """The one classifier's kinds (services.normalize.classify, what an import infers from the states); a
    reassignment step the simulator decided overrides the inferred one (the same in a normal run; an
    injected breach claims a step its states do not show, as a faulty controller would)."""
    kinds = change_kinds(before, after)
    if not decided:
        return kinds
    chosen = {k for k in kinds if k not in _REASSIGNMENT} | set(decided)
    return tuple(k for k in _ORDER if k in chosen)
CONTROLLER_BASE_ID = 3000


def kafka_uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


class BreachInjector(Protocol):
    """What the simulator asks of services.simulator.breaches.Injector (which imports this module)."""

    def due(self, seq: int) -> bool: ...
    def run(self, sim: Simulator) -> None: ...


class Simulator:
    def __init__(self, config: SimConfig) -> None:
        self.cfg = config
        self.rng = random.Random(config.seed)
        self.j = Journal(config.cluster, self.rng, config.start_time_ms, config.metadata_version,
                         zookeeper=config.zookeeper)
        self.mv = config.metadata_version
        self.elr = config.elr
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, Topic] = {}
        self.live: IndexedSet[Partition] = IndexedSet()
        self.lagging: IndexedSet[tuple[Partition, int]] = IndexedSet()  # replica out of its ISR
        self.reassigning: IndexedSet[Partition] = IndexedSet()
        self.offline: IndexedSet[Partition] = IndexedSet()
        self.voters = tuple(CONTROLLER_BASE_ID + i for i in range(config.controllers))
        self.controller_history: dict[int, int] = {}  # epoch -> controller id
        self.step = 0
        self._schedule: list[tuple[int, int, Callable[..., Any], tuple[object, ...]]] = []
        self._tiebreak = 0
        self._topic_counter = 0
        self.max_down = config.max_down_brokers if config.max_down_brokers is not None else max(1, config.brokers // 4)
        self.injector: BreachInjector | None = None  # services.simulator.breaches.Injector, set by the API
        per_broker = config.topics * config.partitions * config.replication_factor / config.brokers
        # Burst operations touch ~per_broker partitions: keep them to a modest share of events.
        self.w_fence = max(0.002, 4.0 / max(per_broker, 1.0))
        self.w_topic = max(0.002, 1.0 / max(config.partitions, 1))
        self._ops: tuple[tuple[float, Callable[[], None]], ...] | None = None

    @property
    def image(self) -> ClusterImage:
        """The controller's view as of the last event made (also those made past `cfg.events`)."""
        return self.j.delta.apply()

    # -- the event stream ---------------------------------------------------------------------
    def events(self) -> Iterator[ControllerEvent]:
        limit = self.cfg.events
        out = self.j.out
        self.startup()
        while True:
            while out:
                e = out.popleft()
                if e.seq >= limit:
                    return
                yield e
            self.next_step()

    def next_step(self) -> None:
        self.step += 1
        self.j.advance(1 + int(self.rng.expovariate(1.0 / self.cfg.mean_gap_ms)))
        if self.injector is not None and self.injector.due(self.j.seq):
            self.injector.run(self)
            return
        if self._schedule and self._schedule[0][0] <= self.step:
            _, _, fn, args = heapq.heappop(self._schedule)
            fn(*args)
            return
        self.random_op()

    def later(self, steps: int, fn: Callable[..., Any], *args: Any) -> None:
        self._tiebreak += 1
        heapq.heappush(self._schedule, (self.step + steps, self._tiebreak, fn, args))

    def random_op(self) -> None:
        """One operation, drawn by its weight in percent; the rest of the hundred, and a topic operation without
        topic churn, a sample."""
        r = self.rng.random() * 100.0
        for weight, op in self._weighted_ops():
            if r < weight:
                return op()
            r -= weight
        return self.op_sample()

    def _weighted_ops(self) -> tuple[tuple[float, Callable[[], None]], ...]:
        """The operations and their weights, made once (a table per step is a tenth of the simulator's time).
        A topic operation without topic churn weighs its weight but falls to a sample, as the table says."""
        if self._ops is None:
            churn = self.cfg.topic_churn
            topic_op = (lambda op: op) if churn else (lambda op: self.op_sample)
            self._ops = (
                (45, self.op_sample), (12, self.op_isr_shrink), (18, self.op_isr_expand),
                (6, self.op_preferred_election), (2.5, self.op_reassign_start), (8, self.op_reassign_progress),
                (self.w_fence, self.op_fence), (self.w_fence, self.op_controlled_shutdown),
                (0.05, self.op_controller_failover), (0.1, self.op_toggle_unclean),
                (self.w_topic, topic_op(self.op_create_topic)), (self.w_topic, topic_op(self.op_delete_topic)))
        return self._ops

    # -- helpers ------------------------------------------------------------------------------
    def active(self, b: int) -> bool:
        broker = self.brokers.get(b)
        return broker is not None and broker.active

    def acceptable_except(self, excluded: int) -> Callable[[int], bool]:
        brokers = self.brokers
        return lambda r: r != excluded and r in brokers and brokers[r].active

    def build(self, p: Partition, **kw: Any) -> rules.Change | None:
        kw.setdefault("acceptable", self.active)
        return rules.build(p.state, mv=self.mv, elr_enabled=self.elr,
                           min_isr=p.topic.min_isr(self.cfg.min_insync_replicas), **kw)

    def pick_partition(self, ok: Callable[[Partition], bool], tries: int = 8) -> Partition | None:
        if not len(self.live):
            return None
        for _ in range(tries):
            p = self.live.choice(self.rng)
            if not p.frozen and ok(p):
                return p
        return None

    def apply(self, p: Partition, after: PartitionState, election: ElectionType = _NONE,
              extra: tuple[PartitionChangeKind, ...] = (), reason: str | None = None,
              follow_up: bool = True) -> ControllerEvent:
        """Make `after` the partition's state and emit the change (then complete a reassignment
        if this change made it completable, as maybeCompleteReassignment does)."""
        before = p.state  # (`after` becomes the state when its event is emitted, below)
        if after.leader != before.leader:
            on_leader_change(p, after.leader, election is _UNCLEAN)
            if after.leader < 0:
                self.offline.add(p)
            else:
                self.offline.discard(p)
        if after.replicas != before.replicas:
            for b in set(before.replicas) - set(after.replicas):
                self.brokers[b].replicas -= 1
                p.leo.pop(b, None)
            for b in set(after.replicas) - set(before.replicas):
                self.brokers[b].replicas += 1
        for r in before.isr:
            if r not in after.isr and r in after.replicas:
                self.lagging.add((p, r))
        if after.elr:
            for r in set(after.elr) - set(before.elr):
                p.elr_entry_hw[r] = p.sampled_hw
        e = self.j.record(_new_change(p.topic.name, p.topic.topic_id, p.id, before, after,
                                      _kinds(before, after, extra), election, reason))
        if follow_up and p.reassignment is not None and not p.reassignment.cancel and rules.can_complete(after):
            self.complete_reassignment(p)
        return e

    def apply_change(self, p: Partition, ch: rules.Change | None, reason: str) -> ControllerEvent | None:
        if ch is None:
            return None
        e = self.apply(p, ch.after, ch.election, reason=reason)
        if ch.election is _UNCLEAN:
            self.later(2 + self.rng.randrange(20), self.mark_recovered, p)
        return e

    def broker_event(self, b: Broker, kind: BrokerChangeKind, before: Any) -> ControllerEvent:
        return self.j.record(BrokerChange(broker_id=b.id, kind=kind, before=before, after=b.state()))

    # -- startup ------------------------------------------------------------------------------
    def startup(self) -> None:
        cfg = self.cfg
        self.become_controller(self.voters[0])
        self.j.record(FeatureLevelChange("metadata.version", self.mv))
        if self.elr:
            self.j.record(FeatureLevelChange("eligible.leader.replicas.version", 1))
        for i in range(cfg.brokers):
            self.add_broker(i, f"rack-{i % cfg.racks}" if cfg.racks else None)
        for _ in range(cfg.topics):
            self.create_topic(cfg.partitions, cfg.replication_factor)

    def become_controller(self, leader: int) -> ControllerEvent:
        prev_id, prev_epoch = self.j.controller_id, self.j.controller_epoch
        epoch = max(prev_epoch, 0) + 1
        self.j.controller_id, self.j.controller_epoch = leader, epoch
        self.controller_history[epoch] = leader
        majority = len(self.voters) // 2 + 1
        others = [v for v in self.voters if v != leader]
        granting = tuple(sorted([leader] + self.rng.sample(others, majority - 1)))
        return self.j.record(ControllerChange(leader_id=leader, epoch=epoch, previous_leader_id=prev_id,
                                              previous_epoch=prev_epoch, voters=self.voters, granting_voters=granting))

    def add_broker(self, broker_id: int, rack: str | None) -> Broker:
        b = Broker(broker_id, rack)
        self.brokers[broker_id] = b
        self.register(b)
        self.unfence(b)
        return b

    def register(self, b: Broker) -> None:
        before = b.state()
        b.registered, b.fenced, b.in_controlled_shutdown = True, True, False
        b.epoch = self.j.offset + 1  # the offset of its RegisterBrokerRecord
        b.incarnation += 1
        self.broker_event(b, BrokerChangeKind.REGISTERED, before)

    # -- topics -------------------------------------------------------------------------------
    def create_topic(self, partitions: int, rf: int) -> Topic | None:
        usable = sorted(b.id for b in self.brokers.values() if b.active)
        rf = min(rf, len(usable))
        if rf < 1 or (rf > 1 and len({self.brokers[b].rack for b in usable}) == 1 < self.rack_count()):
            return None  # Kafka would stack replicas on the one rack that is up; create it later
        name = f"topic-{self._topic_counter:05d}"
        self._topic_counter += 1
        configs = {MIN_ISR: str(min(self.cfg.min_insync_replicas, rf))}
        if self.rng.random() < self.cfg.unclean_topic_fraction:
            configs[UNCLEAN] = "true"
        t = Topic(name, kafka_uuid(self.rng), self.j.delta)
        self.topics[name] = t
        self.j.record(TopicChange(TopicChangeKind.CREATED, name, t.topic_id))
        for key, value in configs.items():
            self.j.record(ConfigChange(ConfigResourceType.TOPIC, name, key, value, None))
        assignment = place(self.rng, usable, {b: self.brokers[b].rack for b in usable}, partitions, rf)
        for pid in range(partitions):
            state = rules.new_partition(assignment[pid], self.active)
            p = Partition(t, pid, leo={r: 0 for r in state.replicas})
            t.partitions.append(p)
            for r in state.replicas:
                self.brokers[r].replicas += 1
            self.live.add(p)
            self.j.record(PartitionChange(topic=name, topic_id=t.topic_id, partition=pid, before=None, after=state,
                                          changes=(K.CREATE,), election=ElectionType.NONE))
        return t

    def delete_topic(self, t: Topic) -> None:
        """One RemoveTopicRecord: a DELETE per partition, then the topic, all at one offset."""
        self.j.next_offset()
        for i, p in enumerate(t.partitions):
            p.deleted = True
            self.live.discard(p)
            self.reassigning.discard(p)
            self.offline.discard(p)
            for r in p.state.replicas:
                self.brokers[r].replicas -= 1
            self.j.record(PartitionChange(topic=t.name, topic_id=t.topic_id, partition=p.id, before=p.state,
                                          after=None, changes=(K.DELETE,), election=ElectionType.NONE),
                          index=i, new_offset=False)
        t.deleted = True
        del self.topics[t.name]
        self.j.record(TopicChange(TopicChangeKind.DELETED, t.name, t.topic_id), index=len(t.partitions),
                      new_offset=False)

    def op_create_topic(self) -> None:
        self.create_topic(1 + self.rng.randrange(self.cfg.partitions), self.cfg.replication_factor)

    def op_delete_topic(self) -> None:
        if len(self.topics) > max(1, self.cfg.topics // 2):
            names = list(self.topics)
            self.delete_topic(self.topics[names[self.rng.randrange(len(names))]])

    # -- offsets ------------------------------------------------------------------------------
    def op_sample(self) -> None:
        p = self.pick_partition(lambda q: q.state.leader >= 0)
        if p is not None:
            self.sample(p)

    def sample(self, p: Partition, hw: int | None = None) -> ControllerEvent:
        """HW first, then each replica's LEO (-1 from a broker that is down)."""
        strict = p.topic.min_isr(self.cfg.min_insync_replicas) if self.elr else None
        s, t = p.state, self.j.time_ms
        produce(p, s, self.rng, strict)
        brokers, leo, isr = self.brokers, p.leo, s.isr
        reps = []
        for r in s.replicas:
            t += 1
            b = brokers.get(r)
            up = r in isr or (b is not None and b.registered and not b.fenced)
            reps.append(_new_offset(r, leo.get(r, 0) if up else -1, t))
        t = self.j.time_ms
        offsets = tuple(reps)
        p.sampled_hw = p.hw if hw is None else hw
        return self.j.sample(_new_sample(p.topic.name, p.id, s.leader, s.leader_epoch,
                                         p.sampled_hw, t, offsets, _HW_THEN_LEO))

    # -- ISR and elections --------------------------------------------------------------------
    def op_isr_shrink(self) -> None:
        p = self.pick_partition(lambda q: (s := q.state).leader >= 0 and len(s.isr) > 1)  # (a state is an image read: once)
        if p is None:
            return
        s = p.state
        followers = [r for r in s.isr if r != s.leader]
        r = followers[self.rng.randrange(len(followers))]
        self.apply_change(p, self.build(p, target_isr=tuple(x for x in s.isr if x != r)), "isr shrink: follower lagging")

    def op_isr_expand(self) -> None:
        for _ in range(4):
            if not len(self.lagging):
                return
            pair = self.lagging.choice(self.rng)
            p, r = pair
            s = p.state
            if p.deleted or r not in s.replicas or r in s.isr:
                self.lagging.discard(pair)
                continue
            if s.leader < 0 or not self.active(r) or s.leader_recovery_state is not _RECOVERED or p.frozen:
                continue
            self.expand(p, r)
            self.lagging.discard(pair)
            return

    def expand(self, p: Partition, r: int, reason: str = "isr expand: follower caught up") -> ControllerEvent | None:
        catch_up(p, r)
        return self.apply_change(p, self.build(p, target_isr=p.state.isr + (r,)), reason)

    def op_preferred_election(self) -> None:
        p = self.pick_partition(lambda q: (s := q.state).leader >= 0 and s.leader != s.replicas[0], tries=16)
        if p is not None:
            self.apply_change(p, self.build(p, preferred=True), "preferred leader election")

    def mark_recovered(self, p: Partition) -> None:
        s = p.state
        if p.deleted or s.leader < 0 or s.leader_recovery_state != LeaderRecoveryState.RECOVERING:
            return
        self.apply_change(p, self.build(p, recovered=True), "leader recovered after unclean election")

    # -- brokers ------------------------------------------------------------------------------
    def down_brokers(self) -> int:
        return sum(1 for b in self.brokers.values() if not b.active)

    def pick_active_broker(self) -> Broker | None:
        ids = [b for b in sorted(self.brokers) if self.brokers[b].active]
        return self.brokers[ids[self.rng.randrange(len(ids))]] if ids else None

    def remove_from_isrs(self, broker_id: int, clean_type: ElectionType, reason: str) -> None:
        """generateLeaderAndIsrUpdates(brokerToRemove): drop it from every ISR, move leaderships."""
        acceptable = self.acceptable_except(broker_id)
        for p in list(self.live):
            s = p.state
            if broker_id in s.isr or s.leader == broker_id:
                ch = self.build(p, target_isr=tuple(x for x in s.isr if x != broker_id), acceptable=acceptable,
                                unclean_ok=p.topic.unclean_allowed, clean_type=clean_type)
                self.apply_change(p, ch, reason)

    def elect_offline(self, reason: str, only: Topic | None = None) -> None:
        for p in list(self.offline):
            if p.deleted or (only is not None and p.topic is not only):
                continue
            self.apply_change(p, self.build(p, unclean_ok=p.topic.unclean_allowed), reason)

    def fence(self, b: Broker, reason: str) -> None:
        self.remove_from_isrs(b.id, ElectionType.CLEAN, reason)
        before = b.state()
        b.fenced, b.in_controlled_shutdown = True, False
        self.broker_event(b, BrokerChangeKind.FENCED, before)

    def unfence(self, b: Broker) -> None:
        before = b.state()
        b.fenced = False
        self.broker_event(b, BrokerChangeKind.UNFENCED, before)
        self.elect_offline(f"broker {b.id} unfenced")

    def broker_to_take_down(self) -> Broker | None:
        """An active broker; None when as many as may be down are already (or none is active)."""
        return None if self.down_brokers() >= self.max_down else self.pick_active_broker()

    def op_fence(self) -> None:
        b = self.broker_to_take_down()
        if b is None:
            return
        self.fence(b, f"broker {b.id} session timed out")
        # It comes back: either its session resumes (same epoch) or it restarts (new epoch).
        if self.rng.random() < 0.5:
            self.later(20 + self.rng.randrange(400), self.resume, b)
        else:
            self.later(20 + self.rng.randrange(400), self.restart, b)

    def resume(self, b: Broker) -> None:
        if b.registered and b.fenced:
            self.unfence(b)

    def restart(self, b: Broker) -> None:
        if b.registered and b.fenced:
            self.register(b)
            self.later(1 + self.rng.randrange(30), self.resume, b)

    def op_controlled_shutdown(self) -> None:
        b = self.broker_to_take_down()
        if b is None:
            return
        before = b.state()
        b.in_controlled_shutdown = True
        self.broker_event(b, BrokerChangeKind.CONTROLLED_SHUTDOWN, before)
        self.remove_from_isrs(b.id, ElectionType.CONTROLLED_SHUTDOWN, f"broker {b.id} controlled shutdown")
        self.later(1 + self.rng.randrange(10), self.finish_shutdown, b)

    def finish_shutdown(self, b: Broker) -> None:
        if b.registered and b.in_controlled_shutdown:
            self.fence(b, f"broker {b.id} shut down")
            self.later(20 + self.rng.randrange(300), self.restart, b)

    def unregister(self, b: Broker) -> None:
        """Decommission a broker that holds no replicas (kafka-cluster unregister)."""
        if b.replicas:
            raise ValueError(f"broker {b.id} still holds {b.replicas} replicas")
        if b.active:
            self.fence(b, f"broker {b.id} decommissioned")
        before = b.state()
        b.registered = False
        self.broker_event(b, BrokerChangeKind.UNREGISTERED, before)
        del self.brokers[b.id]

    # -- controller and configs ---------------------------------------------------------------
    def op_controller_failover(self) -> None:
        others = [v for v in self.voters if v != self.j.controller_id]
        if others:
            self.become_controller(others[self.rng.randrange(len(others))])

    def set_topic_config(self, t: Topic, key: str, value: str | None) -> ControllerEvent:
        previous = t.config(key)
        return self.j.record(ConfigChange(ConfigResourceType.TOPIC, t.name, key, value, previous))

    def op_toggle_unclean(self) -> None:
        names = list(self.topics)
        if not names:
            return
        t = self.topics[names[self.rng.randrange(len(names))]]
        if t.unclean_allowed:
            self.set_topic_config(t, UNCLEAN, None)
        else:
            self.set_topic_config(t, UNCLEAN, "true")
            self.elect_offline(f"unclean.leader.election.enable set on {t.name}", only=t)

    # -- reassignment -------------------------------------------------------------------------
    def choose_target(self, s: PartitionState, cancel: bool) -> tuple[int, ...] | None:
        current = list(s.replicas)
        k = 1 if len(current) < 3 or self.rng.random() < 0.8 else 2
        if cancel:
            # Removing a sorted suffix keeps Kafka's revert (replicas minus adding) equal to OAR.
            removed = current[-k:]
            if removed != sorted(removed):
                k, removed = 1, current[-1:]
        else:
            removed = self.rng.sample(current, k)
        kept = [r for r in current if r not in removed]
        used_racks = {self.brokers[r].rack for r in (kept or removed)}
        candidates = [b for b in sorted(self.brokers) if self.brokers[b].active and b not in current]
        if len(candidates) < k:
            return None
        target = list(kept)
        for _ in range(k):
            # Like rack-aware placement: a broker on a rack without a replica while there is one.
            fresh = [b for b in candidates if self.brokers[b].rack not in used_racks]
            pool = fresh or candidates
            b = pool[self.rng.randrange(len(pool))]
            candidates.remove(b)
            used_racks.add(self.brokers[b].rack)
            target.insert(self.rng.randrange(len(target) + 1), b)
        racks = self.rack_count()
        if any(len(rs) > 1 and len({self.brokers[r].rack for r in rs}) == 1 < racks for rs in (target, target + removed)):
            return None  # the other racks' brokers are down: wait rather than pile onto one rack
        return tuple(target)

    def rack_count(self) -> int:
        return len({b.rack for b in self.brokers.values() if b.rack is not None})

    def op_reassign_start(self) -> None:
        if len(self.reassigning) >= max(4, len(self.live) // 50):
            return
        p = self.pick_partition(lambda q: q.reassignment is None and q.state.leader >= 0
                                and q.state.leader_recovery_state is _RECOVERED)
        if p is None:
            return
        cancel = self.rng.random() < 0.25
        target = self.choose_target(p.state, cancel)
        if target is None:
            return
        self.start_reassignment(p, target, cancel)

    def start_reassignment(self, p: Partition, target: tuple[int, ...], cancel: bool) -> ControllerEvent:
        p.reassignment = Reassignment(original=p.state.replicas, target=target, cancel=cancel)
        self.reassigning.add(p)
        after = rules.start_reassignment(p.state, target)
        for a in after.adding_replicas:
            p.leo[a] = 0
            self.lagging.add((p, a))
        return self.apply(p, after, extra=(K.REASSIGNMENT_START,), reason=f"reassignment to {list(target)}")

    def op_reassign_progress(self) -> None:
        if not len(self.reassigning):
            return
        p = self.reassigning.choice(self.rng)
        ra, s = p.reassignment, p.state
        if p.deleted or ra is None:
            self.reassigning.discard(p)
            return
        if ra.cancel and (self.rng.random() < 0.3 or rules.can_complete(s)):
            ch = rules.cancel_reassignment(s, self.active)
            if ch is not None:
                self.finish_reassignment(p)
                self.apply(p, ch.after, ch.election, extra=(K.REASSIGNMENT_CANCEL,), reason="reassignment cancelled")
            return
        waiting = [a for a in s.replicas if a not in s.isr and self.active(a)]
        if waiting and s.leader >= 0 and s.leader_recovery_state is _RECOVERED:
            self.expand(p, waiting[0], "isr expand: reassignment target caught up")

    def finish_reassignment(self, p: Partition) -> None:
        p.reassignment = None
        self.reassigning.discard(p)

    def complete_reassignment(self, p: Partition) -> ControllerEvent:
        ch = rules.complete_reassignment(p.state, self.active)
        self.finish_reassignment(p)
        return self.apply(p, ch.after, ch.election, extra=(K.REASSIGNMENT_COMPLETE,),
                          reason="reassignment completed")
