"""Broker and controller log lines (services.brokerlogs) -> ControllerEvents, for incidents nobody captured.

A log line states part of the controller's state; the same change is stated by the controller and by every
replica, each in part, in whatever order their clocks put them. What this builds, and what it refuses to:
- **Ordered by the partition epoch**, not by the clock: a partition's state at epoch N (ZooKeeper's zkVersion,
  KRaft's partitionEpoch) is emitted once, when the lines seen so far state it whole: leader, leader epoch and
  ISR at N, and the assignment. A line stating an older epoch than the one emitted (a slow broker, a controller
  replaying its log after a restart) adds nothing.
- **Whole or not at all**: parts of epoch N (a follower's line: leader, no ISR) wait for the rest; a change stated
  as a difference (``Updated leader epoch``, ``UNCLEAN partition change``, ``Replayed partition assignment
  change``) applies only on the state at the epoch it starts from. Epochs never stated whole are a
  ``CaptureGap`` naming the partition, the epochs and the lines that stated them in part; so is the history
  before the oldest line. Nothing is filled in from a guess. The state stated whole after such a gap is a
  restatement (``bootstrap``, as a snapshot's), not a transition: no check judges the step across the gap.
- **Lines that disagree** on an epoch (a controller logs the record it writes, and a leader change may truncate
  it uncommitted, while the brokers state the committed one) make that epoch a gap naming both; no line wins.
- **The assignment** (replicas, adding, removing): a ZooKeeper-mode controller logs every write of
  ``/brokers/topics/<t>`` (creation, reassignment steps), so once its lines are among the logs the assignment
  is the last one they stated (as the ZooKeeper normalizer joins the topic znode with the state znode). A KRaft
  controller does not log every record that changes replicas (one with no adding/removing lists goes
  unlogged at INFO), so there the assignment must be stated at the epoch itself, by a difference from the
  epoch before, or follow from the controller's rules while its lines are among the logs (``brokerlog_kraft``:
  the state before's, unless a reassignment went unlogged). The same holds for ELR and last known ELR once the
  cluster has eligible leader replicas (``eligible.leader.replicas.version`` >= 1, or an ELR stated non-empty;
  empty where the ISR has at least min.insync.replicas); ZooKeeper mode has none.
- **In KRaft mode a later epoch stated in part is a gap at once**, from the line that states it (a broker that lived
  the change) or from its leader's last line applying metadata (any other), until it is stated whole: an answer
  by time in between is not the old state given as fact. A ZooKeeper-mode controller states each write whole
  before any broker learns of it, so there a broker's part first is only clocks apart and waits.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, PartitionChange, PartitionState, Payload, SourceKind, SourcePosition,
    TopicChange, TopicChangeKind,
)
from schemas.times import iso
from services.brokerlogs.evidence import UnreadableLine, evidence, node_of
from services.brokerlogs.said import (
    Assigned, AssignmentReplayed, BrokerRegistered, BrokersAdded, ByTopicId, ConfigStated, ControllerElected,
    ElrEnabled, KRaftController, LiveBrokers, ReassignmentsAltered, ReplicaCreated, Seen, TopicConfigs, TopicCreated,
    TopicDeleted, Unnumbered, ZooKeeperController, ints_of,
)
from services.brokerlogs.lines import LogLine
from services.brokerlogs.kraft_rules import KRaftRules
from services.brokerlogs.parts import Part, at_epoch, partial_reason, whole
from services.normalize.base import Normalizer
from services.normalize.classify import change_kinds, election_type
from schemas.gap_reasons import partition_reason

# how long lines wait for a controller's cache line after it added brokers (it follows within milliseconds)
HOLD_MS = 10_000


class BrokerLogNormalizer(Normalizer):
    """Feed log lines in time order (services.brokerlogs.lines.merged); get ControllerEvents. The controller is the
    image's: the one the logs last named elected."""

    def __init__(self, cluster_id: str, clock: Callable[[], int] | None = None) -> None:
        super().__init__(cluster_id, clock)
        self.deleted_ids: set[str] = set()
        self.assignments: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}
        self.parts: dict[tuple[str, int], dict[int, Part]] = {}
        self.unnumbered: dict[tuple[str, int], int] = {}  # partition -> the epoch an unnumbered write followed
        # partition -> the log record of its last state emitted: a gap found later about it starts after that
        # record (the writes the logs do not state came between), not where the import noticed it
        self.known_at: dict[tuple[str, int], int] = {}
        # partitions with a later epoch stated in part, a gap said (_open): where it starts (the log record)
        self.open: dict[tuple[str, int], int] = {}
        self.records = 0  # lines read: an event's position is the line's place in the merged logs
        self._record = 0  # the place of the line being read
        self.listed: set[tuple[int, int]] = set()  # (broker, epoch) a controller's cache listed
        self.held: list[tuple[LogLine, int]] = []  # lines waiting for a controller's cache line (_hold), with places
        self.gaps: list[str] = []
        self.conflicts: list[str] = []
        self.zookeeper_mode = False  # a ZooKeeper-mode controller's lines are among the logs
        self.kraft = KRaftRules()  # what a KRaft controller's lines let a state stated in part be completed with
        self.elr = False  # the cluster may have eligible leader replicas
        self._line: LogLine | None = None
        self._kraft_line = False  # the line read is a KRaft controller's
        self._index = 0

    # --- input ---------------------------------------------------------------------------------

    def feed(self, line: LogLine) -> list[ControllerEvent]:
        self.records += 1
        if self.held:
            return self._hold(line)
        return self._read(line, self.records)

    def _hold(self, line: LogLine) -> list[ControllerEvent]:
        """While a ZooKeeper-mode controller acts on brokers it added: its cache line, which states their epochs,
        comes after it elected them (KafkaController.processBrokerChange logs it last). The lines between wait for
        it, and the registrations are placed at the line that added the brokers; a controller that never logs the
        cache (killed) releases them as read after HOLD_MS."""
        added, record = self.held[0]
        said = evidence(line.message)
        cache = next((e for e in said if isinstance(e, LiveBrokers)), None)
        if cache is not None and node_of(line.message) == node_of(added.message):
            held, self.held = self.held, []
            self._line, self._index, self._record = added, 0, record
            out = self._brokers(cache)
            for waiting, at in held[1:]:
                out += self._read(waiting, at)
            return out + self._read(line, self.records)
        if line.time_ms - added.time_ms <= HOLD_MS:
            self.held.append((line, self.records))
            return []
        held, self.held = self.held, []
        out = []
        for waiting, at in held[1:]:
            out += self._read(waiting, at)
        return out + self._read(line, self.records)

    def _read(self, line: LogLine, record: int) -> list[ControllerEvent]:
        """What line number `record` of the merged logs states."""
        self._line, self._index, self._record = line, 0, record
        out: list[ControllerEvent] = []
        if record == 1:
            out.append(self._gap(f"history before {iso(line.time_ms)} (the oldest line of the logs given) is not "
                                 f"in them; partitions are known from the first lines that state them whole"))
        try:
            said = evidence(line.message)
        except UnreadableLine as exc:  # a damaged or forged line: not evidence, and said so in the import's gaps
            self.gaps.append(f"{line.file}:{line.line}: not read: {exc}")
            return out
        self.kraft.line(line.file, said, record)
        self._kraft_line = any(isinstance(e, KRaftController) for e in said)
        for ev in said:
            if isinstance(ev, Seen):
                out += self._seen(ev)
            elif isinstance(ev, ByTopicId):
                name = self.delta.topic_name(ev.topic_id)
                if name is not None:  # a topic no line created, or one deleted since: not this history's
                    out += self._seen(replace(ev.seen, topic=name))
            elif isinstance(ev, Unnumbered):
                out += self._unnumbered(ev)
            elif isinstance(ev, Assigned):
                out += self._assigned(ev)
            elif isinstance(ev, ControllerElected):
                out += self._controller(ev)
            elif isinstance(ev, TopicCreated):
                out += self._topic(ev.name, ev.topic_id)
            elif isinstance(ev, TopicDeleted):
                out += self._deleted(ev)
            elif isinstance(ev, LiveBrokers):
                out += self._brokers(ev)
            elif isinstance(ev, ZooKeeperController):
                self.zookeeper_mode = True
            elif isinstance(ev, ElrEnabled):
                self.elr = True
            elif isinstance(ev, KRaftController):
                self.kraft.controller_seen = True
            elif isinstance(ev, ConfigStated):
                self.kraft.config(ev)
            elif isinstance(ev, AssignmentReplayed):  # counted by self.kraft.line; numbered: a Seen follows
                out += self._unnumbered_assignment(ev)
            elif isinstance(ev, ReassignmentsAltered):
                pass  # counted by self.kraft.line
            elif isinstance(ev, ReplicaCreated):
                self.kraft.fresh.add((node_of(line.message), (ev.topic, ev.partition)))
            elif isinstance(ev, TopicConfigs):
                self.kraft.topic_configs(ev)
                out += self._topic_configs(ev)
            elif isinstance(ev, BrokerRegistered):
                out += self._registered(ev)
            elif isinstance(ev, BrokersAdded):
                if ev.added:
                    self.held = [(line, record)]
            else:  # pragma: no cover - an evidence kind without a handler is a bug, never skipped
                raise TypeError(f"no handler for {type(ev).__name__}")
        return out

    def finish(self) -> list[ControllerEvent]:
        """At the end of the logs: lines held for a cache line that never came are read; epochs stated only in part
        are gaps."""
        out = []
        held, self.held = self.held, []
        for waiting, at in held[1:]:
            out += self._read(waiting, at)
        self.kraft.finish()
        for key in sorted(self.parts):
            pending = self.parts.pop(key)
            if pending:
                out.append(self._gap(partial_reason(key, pending, "after the last state the logs give"),
                                     self._unknown_from(key), -1))
        return out

    # --- partitions -------------------------------------------------------------------------------

    def _topic_id(self, name: str, stated: str | None) -> str | None:
        """The id of a live topic; None for a line about a deleted incarnation (a replay, a late broker)."""
        if stated is not None and stated in self.deleted_ids:
            return None
        known = self.topic_id(name)
        if stated is not None and known is not None and stated != known:
            self.conflicts.append(f"{self._where()}: topic {name} has id {stated} here, {known} before")
            return None
        return known or stated or name  # ZooKeeper topics from before Kafka 2.8 have no id: the name serves

    def _live_topic(self, name: str, stated: str | None) -> tuple[str | None, list[ControllerEvent]]:
        """The id of a live topic (None: a line about a deleted incarnation), with the topic's creation when the line
        is the first to name it."""
        tid = self._topic_id(name, stated)
        if tid is None:
            return None, []
        return tid, (self._topic(name, tid) if self.topic_id(name) is None else [])

    def _state(self, name: str, partition: int) -> PartitionState | None:
        tid = self.topic_id(name)
        return self.delta.partition(tid, partition) if tid is not None else None

    def _seen(self, s: Seen) -> list[ControllerEvent]:
        tid, out = self._live_topic(s.topic, s.topic_id)
        if tid is None:
            return out
        key = (s.topic, s.partition)
        line = self._reading()
        node = node_of(line.message)
        prompt = self.kraft.seen(node, key, s, line, self._kraft_line)
        current = self._state(*key)
        if current is not None and s.partition_epoch <= current.partition_epoch:
            self.kraft.applied(node, s, prompt, self._record)
            return out  # an epoch already emitted: stated again by another line
        part = self.parts.setdefault(key, {}).setdefault(s.partition_epoch, Part())
        part.lines.append(self._where())
        if s.replicas is not None and part.replicas_at < 0:
            part.replicas_at = self._record
        # outside ZooKeeper mode a leader's ISR is a set: the controller's order is another line's to state; so is a
        # set of more than four, in either mode
        unordered = (s.leader_update and not self.zookeeper_mode) or s.isr_as_set
        for name in ("leader", "leader_epoch", "isr", "replicas", "adding", "removing", "elr", "last_known_elr",
                     "recovery", "controller_epoch"):
            value = getattr(s, name)
            if name == "isr" and unordered:
                if "isr" in part.fields and set(ints_of(part.fields, "isr")) != set(value):
                    said = f"isr {set(value)} ({self._where()}), {part.fields['isr']} before"
                    part.conflicts.append(said)
                    self.conflicts.append(f"{s.topic}-{s.partition} at partition epoch {s.partition_epoch}: {said}")
                part.isr_unordered = True
                continue
            if value is not None:
                if name in part.fields and part.fields[name] != value and name != "controller_epoch":
                    said = f"{name} {value} ({self._where()}), {part.fields[name]} before"
                    part.conflicts.append(said)
                    self.conflicts.append(f"{s.topic}-{s.partition} at partition epoch {s.partition_epoch}: {said}")
                part.fields.setdefault(name, value)
        if s.from_epoch is not None and part.from_epoch is None:
            part.from_epoch = s.from_epoch
        part.leader_update = part.leader_update or s.leader_update
        if s.elr or s.last_known_elr:
            self.elr = True
        if s.replicas is not None and s.adding is not None and s.removing is not None:
            self.assignments[key] = (s.replicas, s.adding, s.removing)
        out += self._emit_whole(key, tid)
        # a ZooKeeper-mode controller states each write whole when it makes it, before any broker learns of it: a
        # broker's part before it is only clocks apart. A KRaft controller states few at INFO: brokers' parts lead
        if self.parts.get(key) and key not in self.open and not self.zookeeper_mode:
            out.append(self._open(key, s.partition_epoch, prompt))
        self.kraft.applied(node, s, prompt, self._record)
        return out

    def _unnumbered_assignment(self, a: AssignmentReplayed) -> list[ControllerEvent]:
        """Kafka 3.9's ``Replayed partition assignment change`` (no partition epoch) of the active controller, which
        replays each record as it writes it: the partition's assignment changed now, at an epoch after the state
        known, which no line numbers (a standby's or a restarted controller's line of it comes later, if at all)."""
        key, line = (a.topic, a.partition), self._reading()
        if a.numbered or self.topic_id(a.topic) is None or \
                node_of(line.message) not in (self.delta.controller.leader_id, -1):
            return []
        if self.kraft.numbered_just_before(key, line):
            return []  # the same record, numbered by the line before it (its UNCLEAN partition change)
        current = self._state(*key)
        self.kraft.unnumbered_change(key, current, a)
        if key in self.open or self.zookeeper_mode:
            return []
        self.open[key] = self._record
        low = current.partition_epoch + 1 if current is not None else 0
        return [self._gap(partition_reason(key[0], key[1], f"{low} and after not known yet: its assignment changed "
                                           f"({self._where()})"), self._record, -1)]

    def _open(self, key: tuple[str, int], epoch: int, prompt: bool) -> ControllerEvent:
        """A later epoch of `key` is stated in part and not whole: its state is not known from here (a line that
        states the next epoch as its node applies it: the change is this line's) or from just after its last state
        emitted (any other: a restarted node, a replaying controller, may state a change long after it was made;
        and an epoch after the next says the next one was made before it), until its next state emitted. Said now,
        so that an answer by time between is not the old state given as fact."""
        current = self._state(*key)
        low = current.partition_epoch + 1 if current is not None else 0
        high = max(self.parts[key])
        span = f"{low}..{high}" if low < high else str(high)
        reason = partition_reason(key[0], key[1], f"{span} not known yet: stated in part ({self._where()})")
        self.open[key] = self._record if prompt and epoch == low else self._unknown_from(key)
        return self._gap(reason, self.open[key], -1)

    def _unnumbered(self, u: Unnumbered) -> list[ControllerEvent]:
        """A state with no partition epoch (before Kafka 3.1). The same leader epoch as the state emitted: the
        replica was not in the ISR and nothing was written. A newer one: the controller wrote an epoch the line
        does not name, so the partition's state is unknown from here until the next epoch stated whole (a gap
        now, never a guessed epoch)."""
        key = (u.topic, u.partition)
        current = self._state(*key)
        if current is None or u.leader_epoch <= current.leader_epoch:
            return []
        if self.unnumbered.get(key) == current.partition_epoch:
            return []  # the gap from this epoch on is named already
        self.unnumbered[key] = current.partition_epoch
        return [self._gap(partition_reason(u.topic, u.partition,
                                           f"after {current.partition_epoch} are stated whole in no log given; "
                                           f"{self._where()} states leader {u.leader}, leader epoch {u.leader_epoch}, "
                                           f"ISR {list(u.isr)} without the partition epoch written (Kafka before "
                                           f"3.1)"), self._unknown_from(key), -1)]

    def _emit_whole(self, key: tuple[str, int], tid: str) -> list[ControllerEvent]:
        """Emit the newest epoch of `key` the lines state whole; what is skipped to reach it is a gap."""
        pending = self.parts.get(key, {})
        current = self._state(*key)
        for epoch in sorted(pending, reverse=True):
            between = [p.fields for e, p in sorted(pending.items()) if e < epoch]
            after = whole(key, pending[epoch], current, between, zookeeper_mode=self.zookeeper_mode, elr=self.elr,
                          assignment=self.assignments.get(key), kraft=self.kraft)
            if after is None:
                continue
            skipped = {e: p for e, p in pending.items() if e < epoch}
            out = []
            low = current.partition_epoch + 1 if current is not None else None
            restated = bool(skipped or (low is not None and epoch > low))
            part = pending[epoch]
            if restated:  # unknown since the gap said when a line first stated part of it, if one did
                out.append(self._gap(partial_reason(key, skipped, f"before epoch {epoch}", low, epoch - 1),
                                     self.open.get(key, self._unknown_from(key)), self._record - 1))
            elif current is None and epoch > 0:
                # the partition existed before its first state the lines give whole: unknown since the logs begin
                out.append(self._gap(partial_reason(key, {}, f"before epoch {epoch}", 0, epoch - 1), 1,
                                     self._record - 1))
            if part.replicas_at >= 0:
                self.kraft.stated_at[key] = part.replicas_at
            for e in [e for e in pending if e <= epoch]:
                del pending[e]
            # after a gap the state is a restatement (bootstrap, as a snapshot's), not one transition: the
            # writes between are not in the logs, so no check may judge the step from the stale state to it
            return out + self._change(key, tid, at_epoch(after, epoch), restated=restated)
        return []

    def _assigned(self, a: Assigned) -> list[ControllerEvent]:
        tid, out = self._live_topic(a.topic, a.topic_id)
        if tid is None:
            return out
        key = (a.topic, a.partition)
        self.assignments[key] = (a.replicas, a.adding, a.removing)
        current = self._state(*key)
        if current is not None and self.unnumbered.get(key) != current.partition_epoch:
            # ZooKeeper: the topic znode changed, the state znode (and its version) did not. After an unnumbered
            # write the state is not known: the assignment waits for the next epoch stated whole
            after = PartitionState(a.replicas, current.isr, current.leader, current.leader_epoch,
                                   current.partition_epoch, a.adding, a.removing, current.elr, current.last_known_elr,
                                   current.leader_recovery_state)
            out += self._change(key, tid, after)
        return out + self._emit_whole(key, tid)

    def _change(self, key: tuple[str, int], tid: str, after: PartitionState | None,
                restated: bool = False) -> list[ControllerEvent]:
        before = self.delta.partition(tid, key[1])
        if after == before:
            return []
        kinds = change_kinds(before, after)
        return [self._emit(PartitionChange(key[0], tid, key[1], before, after, kinds,
                                           election_type(before, after, kinds)), bootstrap=restated)]

    def _unknown_from(self, key: tuple[str, int]) -> int:
        """The first log record at which `key`'s state is not known: the one after its last state emitted. In KRaft
        mode every broker applies every metadata record and states each change of a partition it holds as it applies
        it: after the last line its leader wrote so (of any partition), if later."""
        start = self.known_at[key] + 1 if key in self.known_at else self._record
        current = self._state(*key)
        if current is not None and current.leader >= 0 and not self.zookeeper_mode:
            start = max(start, self.kraft.applied_at.get(current.leader, -1) + 1)
        return min(start, self._record)

    # --- topics, controllers, brokers --------------------------------------------------------------

    def _topic(self, name: str, tid: str) -> list[ControllerEvent]:
        known = self.topic_id(name)
        if tid in self.deleted_ids or known == tid:
            return []
        if known is not None:  # a new incarnation whose deletion no line stated
            return []
        return [self._emit(TopicChange(TopicChangeKind.CREATED, name, tid))]

    def _deleted(self, d: TopicDeleted) -> list[ControllerEvent]:
        tid = self.topic_id(d.name)
        if tid is None or (d.topic_id is not None and d.topic_id != tid):
            if d.topic_id is not None:
                self.deleted_ids.add(d.topic_id)
            return []
        out = []
        for p in self.delta.partitions_of(tid):
            out += self._change((d.name, p), tid, None)
        for key in [k for k in self.assignments if k[0] == d.name]:
            del self.assignments[key]
        for key in [k for k in self.parts if k[0] == d.name]:
            del self.parts[key]
        self.deleted_ids.add(tid)
        return out + [self._emit(TopicChange(TopicChangeKind.DELETED, d.name, tid))]

    def _topic_configs(self, c: TopicConfigs) -> list[ControllerEvent]:
        """A broker created a replica's log with all of its topic's overrides: a ConfigChange per key that differs
        from the image's (an override gone since is gone from the list). Topic configs hold no secrets."""
        if self.topic_id(c.topic) is None:
            return []  # a log of a topic no line created (or a deleted one): not this history's topic
        new = dict(c.configs)
        held = self.delta.configs_of(ConfigResourceType.TOPIC, c.topic)
        return [self._emit(ConfigChange(ConfigResourceType.TOPIC, c.topic, name, new.get(name), held.get(name)))
                for name in sorted(set(new) | set(held)) if new.get(name) != held.get(name)]

    def _controller(self, c: ControllerElected) -> list[ControllerEvent]:
        previous = self.delta.controller
        if c.epoch <= previous.epoch:
            return []  # the same election stated by another node, or an older one
        self.elected(c.epoch, c.node)
        # the election's event is of the epoch it begins, as a KRaft controller's LeaderChange
        return [self._emit(ControllerChange(c.node, c.epoch, previous.leader_id, previous.epoch), epoch=c.epoch)]

    def _brokers(self, live: LiveBrokers) -> list[ControllerEvent]:
        """ZooKeeper mode: the registered brokers and their epochs (czxids), as the controller's cache holds them.
        The cache is the controller's last read of /brokers/ids: a broker whose own line registered it after that
        read (seen on 2.8: a controller elected as the broker starts) is missing from it, not gone. A broker is
        gone when a cache that listed it at its epoch no longer does."""
        out = []
        now = dict(live.epochs)
        for bid in sorted(set(self.delta.broker_ids()) | set(now)):
            before = self.delta.broker(bid)
            if before is not None and bid not in now and (bid, before.epoch) not in self.listed:
                continue  # registered after the controller's read: not in its cache yet
            if before is not None and (bid not in now or now[bid] != before.epoch):
                out.append(self._emit(BrokerChange(bid, BrokerChangeKind.UNREGISTERED, before, None)))
                before = None
            if before is None and bid in now:
                after = BrokerState(bid, now[bid], fenced=False)
                out.append(self._emit(BrokerChange(bid, BrokerChangeKind.REGISTERED, None, after)))
        self.listed |= set(now.items())
        return out

    def _registered(self, r: BrokerRegistered) -> list[ControllerEvent]:
        """A broker's own registration (ZooKeeper mode): the controller acts on it (elects the broker) before its
        cache line says so, so this is when the history has it. The same epoch the cache states later is no change."""
        before = self.delta.broker(r.broker)
        if before is not None and before.epoch == r.epoch:
            return []
        out = [self._emit(BrokerChange(r.broker, BrokerChangeKind.UNREGISTERED, before, None))] if before else []
        after = BrokerState(r.broker, r.epoch, fenced=False)
        return out + [self._emit(BrokerChange(r.broker, BrokerChangeKind.REGISTERED, None, after))]

    # --- events -----------------------------------------------------------------------------------

    def _reading(self) -> LogLine:
        """The line being read (every evidence comes from one)."""
        line = self._line
        assert line is not None, "evidence outside a line"
        return line

    def _where(self) -> str:
        return f"{self._line.file}:{self._line.line}" if self._line is not None else "?"

    def _gap(self, reason: str, from_record: int | None = None, to_record: int | None = None) -> ControllerEvent:
        """A gap at this line; `from_record`..`to_record` (-1: until stated again), the log records it holds when
        it was found later than it began (replay.gaps reads the stretch from them)."""
        self.gaps.append(reason)
        return self._emit(CaptureGap(self._record if from_record is None else from_record,
                                     self._record if to_record is None else to_record, reason))

    def _emit(self, payload: Payload, bootstrap: bool = False, epoch: int | None = None) -> ControllerEvent:
        line = self._line
        assert line is not None
        source = SourcePosition(SourceKind.BROKER_LOG, self._record, self._index, node_of(line.message), None,
                                line.file, line.line)
        self._index += 1
        if isinstance(payload, PartitionChange):
            self.known_at[(payload.topic, payload.partition)] = self._record
            self.open.pop((payload.topic, payload.partition), None)
        return self.envelope(source, line.time_ms, self.delta.controller.epoch if epoch is None else epoch, payload,
                             bootstrap=bootstrap)

