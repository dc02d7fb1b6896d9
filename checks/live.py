"""Live checks: the catalog's invariants judged one event at a time, for the pipeline's `watch` agent.

    checker = LiveChecker()
    for event in events_in_seq_order:          # ControllerEvent, Avro record dict, or flat row dict
        for alert in checker.observe(event):
            publish(alert.to_dict())           # invariant, seq, event id, topic/partition, evidence, status

Every invariant of the catalog whose SQL can be evaluated with bounded state (per partition, broker,
controller epoch and config key, never per event of the history) is here, under the same name, with
the same rules, the same allowances and the same `related_seq`. The definition of record stays the SQL
in checks/invariants/; this module mirrors it clause by clause (the comments name the SQL rule), so that on
one history the set of (invariant, seq, rule, status, related_seq, allowance) observed live equals the
batch report's rows (tests/checks/test_live.py proves it on simulator histories with every breach
injected and on clean seeds). Two knowing differences, both in evidence only:

- `election_safety`'s batch magnitude counts all events of the second controller in its epoch; live
  reports the breach at its first event, with magnitude 1.
- `expected` / `actual` are worded like the SQL's but not byte-identical.

Plain Python, no Faust or Kafka: the agent keeps one LiveChecker per worker (state is per cluster, so
one checker serves any number of clusters) and rebuilds it by re-observing the events topic on restart.
Events of one cluster must arrive in seq order.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from checks.catalog import CATALOG
from schemas import flat

# Invariants LiveChecker judges: those the catalog marks live=True (today all of them); one list, the catalog's.
LIVE_INVARIANTS: tuple[str, ...] = tuple(inv.name for inv in CATALOG if inv.live)

UNCLEAN_KEY = "unclean.leader.election.enable"
_LEVEL_NAMES = {1: "topic", 2: "controller node", 3: "cluster default"}
_MEMBER_LISTS = ("isr", "elr", "last_known_elr", "adding", "removing")  # in the SQL's union order
_STATE_FIELDS = ("replicas", "isr", "adding", "removing", "elr", "last_known_elr", "leader", "leader_epoch",
                 "partition_epoch", "recovery")


@dataclass(frozen=True)
class Alert:
    invariant: str
    cluster_id: str
    seq: int
    event_id: str
    kind: str
    rule: str
    status: str  # "violated" | "allowed"
    allowance: str | None
    related_seq: int | None
    expected: str
    actual: str
    magnitude: int
    topic: str | None = None
    partition: int | None = None
    source_kind: str | None = None
    source_offset: int | None = None
    source_index: int | None = None
    event_time_ms: int | None = None

    @property
    def allowed(self) -> bool:
        return self.status == "allowed"

    def key(self) -> tuple[Any, ...]:
        """What must equal the batch row: (invariant, cluster_id, seq, related_seq, rule, status, allowance)."""
        return (self.invariant, self.cluster_id, self.seq, self.related_seq, self.rule, self.status, self.allowance)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["allowed"] = self.allowed
        return d


def _show(xs: Iterable[int] | None) -> str:
    return "[" + ", ".join(str(x) for x in (xs or ())) + "]"


def _tp(r: Mapping[str, Any]) -> str:
    return f"{r['topic']}-{r['partition']}"


def _broker_state(r: Mapping[str, Any]) -> str:
    if r["broker_change"] == "UNREGISTERED" or r["broker_fenced"] is None:
        return "unregistered"
    if r["broker_fenced"]:
        return "fenced"
    return "shutting_down" if r["broker_shutdown"] else "active"


def _int_or_none(value: str | None) -> int | None:
    """SQL's TRY_CAST(value AS INT)."""
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def _last_replica_standing(r: Mapping[str, Any]) -> bool:
    """fenced_broker_not_in_isr's exemption: no leader and at most one ISR member, that member already
    in the ISR before (or a bootstrap state)."""
    isr = r["a_isr"]
    return (r["a_leader"] == -1 and len(isr) <= 1
            and bool(r["bootstrap"] or (r["has_before"] and set(isr) <= set(r["b_isr"]))))


def _zk_assignment_only(r: Mapping[str, Any]) -> bool:
    """A ZooKeeper-mode change of the assignment znode alone: the state znode, and its version (the
    partition epoch), untouched (see partition_epoch_monotonic.sql)."""
    return (r["source_kind"] in ("ZOOKEEPER", "BROKER_LOG") and r["a_partition_epoch"] == r["b_partition_epoch"]
            and r["a_leader"] == r["b_leader"] and r["a_leader_epoch"] == r["b_leader_epoch"]
            and len(r["a_isr"]) == len(r["b_isr"]) and set(r["a_isr"]) <= set(r["b_isr"]))


def _is_unclean(r: Mapping[str, Any]) -> bool:
    """The unclean-election test of unclean_election_allowed.sql and high_watermark_monotonic.sql
    (the caller has checked: PartitionChange, not bootstrap, before and after present)."""
    a_leader = r["a_leader"]
    if a_leader == -1 or a_leader == r["b_leader"]:
        return False
    outside = (a_leader not in r["b_isr"] and a_leader not in r["b_elr"]
               and not (a_leader in r["b_adding"] and a_leader not in r["a_adding"] and a_leader in r["a_isr"]))
    return (outside or r["election"] == "UNCLEAN"
            or (r["a_recovery"] == "RECOVERING" and r["b_recovery"] is not None
                and r["b_recovery"] != "RECOVERING"))


# fenced_broker_not_in_isr.sql's known anomaly (see there: KAFKA-15586, KIP-966)
REREGISTRATION_ALLOWANCE = ("known anomaly: re-registration keeps isr membership below metadata.version 23 "
                            "(KAFKA-15586, KIP-966)")
DATA_LOSS_ALLOWANCE = "unclean election: committed records beyond the log of the new leader are lost"
LAST_KNOWN_ALLOWANCE = "KIP-966 last known leader: ISR and ELR empty, LastKnownElr = [new leader]"


def _last_known_leader(r: Mapping[str, Any]) -> bool:
    """KIP-966's last-known-leader election (see unclean_election_allowed.sql): ISR and ELR empty, the
    last known ELR is exactly the new leader, and it enters RECOVERING."""
    lke = r["b_last_known_elr"] or []
    return (not r["b_isr"] and not r["b_elr"] and len(lke) == 1 and r["a_leader"] in lke
            and r["a_recovery"] == "RECOVERING")


@dataclass
class _Partition:
    # state_continuity: the previous PartitionChange
    last_seq: int | None = None
    last_has_after: bool = False
    last_after: tuple[Any, ...] | None = None
    last_gaps: int = 0
    # valid_high_watermark: ISR as of now (None: deleted), seq of that state
    seen_state: bool = False
    isr: frozenset[int] | None = None
    state_seq: int | None = None
    # fenced_broker_not_in_isr (b): members of the open interval
    members: frozenset[int] = frozenset()
    # high_watermark_monotonic: previous sample of this incarnation, running unclean count
    uncleans: int = 0
    sample: tuple[int, int, int | None, int | None, int] | None = None  # seq, hw, leader, leader_epoch, uncleans
    # high_watermark_monotonic (committed data at elections): ISR ∪ ELR now (None: no state), and the
    # incarnation's last sample: seq, hw, LEO by broker, ISR ∪ ELR as of it
    members_all: frozenset[int] | None = None
    last_full_sample: tuple[int, int, dict[int, Any], frozenset[int] | None] | None = None


@dataclass
class _Cluster:
    ce_max: int | None = None
    last_source: str | None = None  # the source kind of the event before (a migration's cutover)
    cut_over: bool = False
    ce_prev_seq: int | None = None
    epochs: dict[int, tuple[int, int, set[int]]] = field(default_factory=dict)  # epoch -> first leader, seq, all
    gaps: int = 0
    parts: dict[tuple[str, int], _Partition] = field(default_factory=dict)
    topic_open: dict[str, set[int]] = field(default_factory=dict)  # topic -> partitions with an open interval
    brokers: dict[int, tuple[str, str | None, int]] = field(default_factory=dict)  # id -> state, rack, seq
    first_broker_seq: int | None = None
    member_of: dict[int, dict[tuple[str, int], int]] = field(default_factory=dict)  # broker -> partition -> since
    configs: dict[str, tuple[str | None, int]] = field(default_factory=dict)  # scope -> value, seq
    active_racks: set[str] | None = None  # racks of active brokers (cache, reset on a BrokerChange)
    # state_continuity: partitions keyed by topic id (a re-created topic is another lineage), and
    # each topic id's last TopicChange: kind, seq, capture gaps seen by then
    lineage: dict[tuple[str, int], _Partition] = field(default_factory=dict)
    topics: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    first_topic_seq: int | None = None
    min_isr: dict[str, tuple[int | None, int]] = field(default_factory=dict)  # scope -> value, seq
    # reassignment_legal, ZooKeeper mode: per (topic id, partition) the highest leader epoch and latest seq of a start
    zk_starts: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


def as_row(event: Any) -> dict[str, Any]:
    """A flat row (schemas.flat columns) of a ControllerEvent, an Avro record dict or a flat row dict."""
    if isinstance(event, Mapping):
        if "payload" in event:
            return dict(zip(flat.COLUMN_NAMES, flat.flatten(cast(dict[str, Any], event))))
        return event if isinstance(event, dict) else dict(event)
    from schemas import codec

    return dict(zip(flat.COLUMN_NAMES, flat.flatten(codec.to_avro(event))))


class LiveChecker:
    """Stateful per-event checker; `observe(event)` returns the alerts the event raises."""

    def __init__(self, invariants: Iterable[str] | None = None) -> None:
        names = tuple(invariants) if invariants is not None else LIVE_INVARIANTS
        unknown = [n for n in names if n not in LIVE_INVARIANTS]
        if unknown:
            raise ValueError(f"not live invariants: {', '.join(unknown)}")
        self.enabled = frozenset(names)
        self.clusters: dict[str, _Cluster] = {}
        self.observed = 0

    # --- entry point ------------------------------------------------------------------------
    def observe(self, event: Any) -> list[Alert]:
        r = as_row(event)
        c = self.clusters.get(r["cluster_id"])
        if c is None:
            c = self.clusters[r["cluster_id"]] = _Cluster()
        self.observed += 1
        out: list[Alert] = []
        kind = r["kind"]
        self._controller(c, r, out)
        if kind == "PartitionChange":
            self._partition_change(c, r, out)
        elif kind == "BrokerChange":
            self._broker_change(c, r, out)
        elif kind == "OffsetSample":
            self._sample(c, r, out)
        elif kind == "ConfigChange":
            if r["config_name"] == "min.insync.replicas" and (
                    r["config_type"] == "TOPIC" or (r["config_type"] == "BROKER" and r["config_resource"] == "")):
                scope = f"topic:{r['config_resource']}" if r["config_type"] == "TOPIC" else "cluster:"
                c.min_isr[scope] = (_int_or_none(r["config_value"]), r["seq"])
            if r["config_name"] == UNCLEAN_KEY and r["config_type"] in ("TOPIC", "BROKER"):
                res = r["config_resource"]
                scope = (f"topic:{res}" if r["config_type"] == "TOPIC" else "cluster:" if res == ""
                         else f"broker:{res}")
                c.configs[scope] = (r["config_value"], r["seq"])
        elif kind == "TopicChange":
            if r["topic_id"] is not None:
                c.topics[r["topic_id"]] = (r["topic_change"], r["seq"], c.gaps)
            if c.first_topic_seq is None:
                c.first_topic_seq = r["seq"]
            if r["topic_change"] == "DELETED":
                for p in c.topic_open.pop(r["topic"], ()):  # fenced (b): a topic delete ends the intervals
                    self._close_interval(c, (r["topic"], p))
        elif kind == "CaptureGap":
            c.gaps += 1
        return [a for a in out if a.invariant in self.enabled]

    def observe_all(self, events: Iterable[Any]) -> list[Alert]:
        out: list[Alert] = []
        for e in events:
            out.extend(self.observe(e))
        return out

    # --- helpers ----------------------------------------------------------------------------
    @staticmethod
    def _alert(out: list[Alert], r: Mapping[str, Any], invariant: str, rule: str, expected: str, actual: str,
               magnitude: int, related_seq: int | None = None, status: str = "violated",
               allowance: str | None = None) -> None:
        out.append(Alert(
            invariant=invariant, cluster_id=r["cluster_id"], seq=r["seq"], event_id=r["event_id"], kind=r["kind"],
            rule=rule, status=status, allowance=allowance, related_seq=related_seq, expected=expected,
            actual=actual, magnitude=int(magnitude), topic=r.get("topic"), partition=r.get("partition"),
            source_kind=r.get("source_kind"), source_offset=r.get("source_offset"),
            source_index=r.get("source_index"), event_time_ms=r.get("event_time_ms"),
        ))

    def _part(self, c: _Cluster, key: tuple[str, int]) -> _Partition:
        p = c.parts.get(key)
        if p is None:
            p = c.parts[key] = _Partition()
        return p

    def _close_interval(self, c: _Cluster, key: tuple[str, int]) -> None:
        p = c.parts.get(key)
        if p is None or not p.members:
            return
        for b in p.members:
            m = c.member_of.get(b)
            if m is not None:
                m.pop(key, None)
                if not m:
                    del c.member_of[b]
        p.members = frozenset()

    # --- controller_epoch_monotonic, election_safety ----------------------------------------
    def _controller(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        seq, boot, kind = r["seq"], r["bootstrap"], r["kind"]
        source, previous_source = r.get("source_kind"), c.last_source
        c.last_source = source
        if (kind == "ControllerChange" and not c.cut_over and previous_source == "ZOOKEEPER"
                and source in ("KRAFT_LOG", "KRAFT_SNAPSHOT") and r["cc_leader"] is not None
                and r["cc_leader"] >= 0 and r["cc_leader"] == r["cc_prev_leader"]):
            # a ZooKeeper -> KRaft migration's cutover (see controller_epoch_monotonic.sql): the KRaft
            # quorum's leader epoch is another counter than ZooKeeper's /controller_epoch
            c.cut_over, c.ce_max, c.ce_prev_seq, c.epochs = True, None, None, {}
        if kind == "ControllerChange":
            epoch, leader = r["cc_epoch"], r["cc_leader"]
        else:
            epoch, leader = r["controller_epoch"], r["controller_id"]
        if epoch is None or epoch < 0:
            return
        # controller_epoch_monotonic: below the running maximum of earlier observations
        if not boot and c.ce_max is not None and epoch < c.ce_max:
            rule = ("controller_change_epoch_regressed" if kind == "ControllerChange"
                    else "event_controller_epoch_regressed")
            self._alert(out, r, "controller_epoch_monotonic", rule, f"controller epoch >= {c.ce_max}",
                        f"controller epoch {epoch} on {kind}", c.ce_max - epoch, related_seq=c.ce_prev_seq)
        c.ce_max = epoch if c.ce_max is None else max(c.ce_max, epoch)
        c.ce_prev_seq = seq
        # election_safety: a second controller in one epoch, at its first event
        if boot or leader is None or leader < 0:
            return
        seen = c.epochs.get(epoch)
        if seen is None:
            c.epochs[epoch] = (leader, seq, {leader})
        elif leader not in seen[2]:
            seen[2].add(leader)
            self._alert(out, r, "election_safety", "two_controllers_in_one_epoch",
                        f"only controller {seen[0]} in epoch {epoch}", f"controller {leader} in epoch {epoch}",
                        1, related_seq=seen[1])

    # --- PartitionChange --------------------------------------------------------------------
    def _partition_change(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        seq, boot = r["seq"], r["bootstrap"]
        has_b, has_a = r["has_before"], r["has_after"]
        key = (r["topic"], r["partition"])
        part = self._part(c, key)
        changes = r["changes"]
        transition = not boot and has_b and has_a
        unclean = transition and _is_unclean(r)
        if transition:
            self._leader_epoch(r, out)
            if changes is not None and "CREATE" not in changes:
                if r["a_partition_epoch"] <= r["b_partition_epoch"] and not _zk_assignment_only(r):
                    self._alert(out, r, "partition_epoch_monotonic", "partition_epoch_not_increased",
                                f"partition epoch > {r['b_partition_epoch']}",
                                f"partition epoch {r['b_partition_epoch']} -> {r['a_partition_epoch']}",
                                r["b_partition_epoch"] - r["a_partition_epoch"] + 1)
                self._reassignment(c, r, out)
            if unclean:
                self._unclean(c, r, out)
            self._election_order(c, r, out)
        if has_a:
            self._leader_in_isr(r, out)
            self._isr_elr(c, r, out)
            self._fenced_joiners(c, r, out)
            self._distinct_replicas(c, r, out)
            self._duplicate_members(r, out)
        lineage_key = (r["topic_id"] if r["topic_id"] is not None else r["topic"], r["partition"])
        lineage = c.lineage.get(lineage_key)
        if lineage is None:
            lineage = c.lineage[lineage_key] = _Partition()
        self._continuity(c, lineage, r, out)
        if has_a and not boot:
            self._live_topic(c, r, out)
        # high_watermark_monotonic: committed data at an election, against the incarnation's last sample
        if transition and r["a_leader"] != -1 and r["a_leader"] != r["b_leader"]:
            self._committed_at_election(part, r, unclean, out)
        # high_watermark_monotonic: a create/delete starts a new incarnation; count unclean elections
        if not has_b or not has_a:
            part.sample = None
            part.last_full_sample = None
        part.members_all = frozenset(r["a_isr"]) | frozenset(r["a_elr"] or ()) if has_a else None
        if unclean:
            part.uncleans += 1
        # valid_high_watermark: the ISR as of later samples
        part.seen_state = True
        part.isr = frozenset(r["a_isr"]) if has_a else None
        part.state_seq = seq
        # fenced_broker_not_in_isr (b): this change ends the open interval and may open one
        self._close_interval(c, key)
        open_ = c.topic_open.setdefault(key[0], set())
        open_.discard(key[1])
        if has_a and not _last_replica_standing(r):
            members = frozenset(b for b in set(r["a_isr"]) | {r["a_leader"]} if b is not None and b >= 0)
            if members:
                part.members = members
                for b in members:
                    c.member_of.setdefault(b, {})[key] = seq
                open_.add(key[1])
        if not open_:
            c.topic_open.pop(key[0], None)

    def _committed_at_election(self, part: _Partition, r: Mapping[str, Any], unclean: bool,
                               out: list[Alert]) -> None:
        sample = part.last_full_sample
        if sample is None:
            return
        s_seq, hw, leos, members = sample
        leader = r["a_leader"]
        leo = leos.get(leader)
        if leo is None or leo < 0 or leo >= hw:
            return
        if not unclean and (members is None or leader not in members):
            return
        self._alert(out, r, "high_watermark_monotonic",
                    "unclean_election_data_loss" if unclean else "new_leader_behind_committed",
                    f"new leader {leader} holds the committed records: LEO >= hw {hw} sampled at related seq",
                    f"{_tp(r)} leader -> {leader} with sampled LEO {leo}, isr ∪ elr then {_show(sorted(members or ()))}",
                    hw - leo, related_seq=s_seq, status="allowed" if unclean else "violated",
                    allowance=DATA_LOSS_ALLOWANCE if unclean else None)

    def _leader_epoch(self, r: Mapping[str, Any], out: list[Alert]) -> None:
        ble, ale = r["b_leader_epoch"], r["a_leader_epoch"]
        rule = None
        if ale < ble:
            rule = "leader_epoch_decreased"
        elif ale == ble:
            mv, sk = r["metadata_version"], r["source_kind"]
            if r["a_leader"] != r["b_leader"]:
                rule = "leader_changed_without_epoch_bump"
            elif (not set(r["b_replicas"]) <= set(r["a_replicas"]) and sk != "ZOOKEEPER"
                  and not (sk == "BROKER_LOG" and r["a_partition_epoch"] == r["b_partition_epoch"])):
                rule = "replicas_removed_without_epoch_bump"
            elif (not set(r["b_isr"]) <= set(r["a_isr"]) and mv is not None and mv < 12
                  and sk is not None and sk != "ZOOKEEPER"):
                rule = "isr_shrink_without_epoch_bump_before_mv12"
        if rule is None:
            return
        expected = f"leader epoch >= {ble}" if rule == "leader_epoch_decreased" else f"leader epoch > {ble}"
        mv = r["metadata_version"]
        self._alert(out, r, "leader_epoch_monotonic", rule, expected,
                    f"leader {r['b_leader']} -> {r['a_leader']}, leader epoch {ble} -> {ale}, metadata.version "
                    f"{'unknown' if mv is None else mv}", ble - ale)

    def _leader_in_isr(self, r: Mapping[str, Any], out: list[Alert]) -> None:
        leader, isr, reps = r["a_leader"], r["a_isr"], r["a_replicas"]
        if leader != -1 and leader not in isr:
            self._alert(out, r, "leader_in_isr", "leader_not_in_isr", f"leader {leader} in isr",
                        f"leader {leader}, isr {_show(isr)}", 1)
        if leader != -1 and leader not in reps:
            self._alert(out, r, "leader_in_isr", "leader_not_in_replicas", f"leader {leader} in replicas",
                        f"leader {leader}, replicas {_show(reps)}", 1)
        outside = set(isr) - set(reps)
        if outside:
            self._alert(out, r, "leader_in_isr", "isr_not_subset_of_replicas", f"isr ⊆ replicas {_show(reps)}",
                        f"isr {_show(isr)}, outside replicas: {_show(sorted(outside))}", len(outside))

    def _isr_elr(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        leader, b_elr = r["a_leader"], r["b_elr"]
        if (r["has_before"] and not r["bootstrap"] and leader != -1 and leader != r["b_leader"] and b_elr
                and leader in b_elr and leader not in r["b_isr"]):
            others = set(r["a_isr"]) - {leader}
            if others:  # isValidNewLeader: an ELR member only when the target ISR is empty
                self._alert(out, r, "isr_elr_sanity", "leader_from_elr_while_isr_not_empty",
                            f"a leader from the elr {_show(b_elr)} only when the isr is empty",
                            f"leader {r['b_leader']} -> {leader}, isr {_show(r['b_isr'])} -> {_show(r['a_isr'])}",
                            len(others))
        if r["a_elr"]:
            for scope in (f"topic:{r['topic']}", "cluster:"):
                found = c.min_isr.get(scope)
                if found is not None and found[0] is not None:
                    if len(r["a_isr"]) >= found[0]:
                        self._alert(out, r, "isr_elr_sanity", "elr_while_isr_at_min_isr",
                                    f"elr empty while |isr| >= min.insync.replicas {found[0]}",
                                    f"isr {_show(r['a_isr'])}, elr {_show(r['a_elr'])}", len(r["a_elr"]),
                                    related_seq=found[1])
                    break
        if not r["a_elr"] and not r["a_adding"] and not r["a_removing"] and not r["a_last_known_elr"]:
            return  # every rule needs a non-empty ELR, last known ELR, adding or removing list
        isr, elr, reps = set(r["a_isr"]), set(r["a_elr"]), set(r["a_replicas"])
        adding, removing = set(r["a_adding"]), set(r["a_removing"])
        name = "isr_elr_sanity"
        if elr - reps:
            self._alert(out, r, name, "elr_not_subset_of_replicas", f"elr ⊆ replicas {_show(r['a_replicas'])}",
                        f"elr {_show(r['a_elr'])}", len(elr - reps))
        if isr & elr:
            self._alert(out, r, name, "isr_elr_overlap", "isr ∩ elr = []",
                        f"isr {_show(r['a_isr'])}, elr {_show(r['a_elr'])}", len(isr & elr))
        if adding & removing:
            self._alert(out, r, name, "adding_removing_overlap", "adding ∩ removing = []",
                        f"adding {_show(r['a_adding'])}, removing {_show(r['a_removing'])}", len(adding & removing))
        if (adding | removing) - reps:
            self._alert(out, r, name, "adding_or_removing_not_in_replicas",
                        f"adding ∪ removing ⊆ replicas {_show(r['a_replicas'])}",
                        f"adding {_show(r['a_adding'])}, removing {_show(r['a_removing'])}",
                        len((adding | removing) - reps))
        if r["has_before"] and not r["bootstrap"]:
            entered = (elr - set(r["b_elr"])) - set(r["b_isr"])
            if entered:
                self._alert(out, r, name, "elr_member_not_from_isr",
                            f"new elr members from the previous isr {_show(r['b_isr'])}",
                            f"elr {_show(r['b_elr'])} -> {_show(r['a_elr'])}", len(entered))
        mv, lke = r["metadata_version"], r["a_last_known_elr"] or []
        if mv is not None and mv < 22 and (elr or lke):
            self._alert(out, r, name, "elr_before_metadata_version_22",
                        "no elr or last known elr below metadata.version 22 (4.0-IV0)",
                        f"metadata.version {mv}, elr {_show(r['a_elr'])}, last known elr {_show(lke)}",
                        len(r["a_elr"]) + len(lke))

    def _fenced_joiners(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        """fenced_broker_not_in_isr (a): brokers that join leader/ISR at this change."""
        leader, isr = r["a_leader"], r["a_isr"]
        if _last_replica_standing(r):
            return
        now = set(isr) | {leader}
        if r["bootstrap"] or not r["has_before"]:
            joined = now
        else:
            joined = (set(isr) - set(r["b_isr"])) | ({leader} - {r["b_leader"]})
        for b in sorted(x for x in joined if x is not None and x >= 0):
            st = c.brokers.get(b)
            if st is None:
                if c.first_broker_seq is None or c.first_broker_seq >= r["seq"]:
                    continue
                state, since = "unregistered", None
            elif st[0] in ("fenced", "unregistered", "shutting_down"):
                state, since = st[0], st[2]
            else:
                continue
            rule = f"{state}_broker_{'became_leader' if b == leader else 'joined_isr'}"
            when = ", never registered" if since is None else f" since seq {since}"
            self._alert(out, r, "fenced_broker_not_in_isr", rule,
                        f"broker {b} neither leader nor in isr ({state}{when})",
                        f"{_tp(r)} leader {leader}, isr {_show(sorted(set(isr)))}", 1, related_seq=since)

    def _election_order(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        """leader_election_order: a clean election takes the first live ISR member in replica order."""
        leader, replicas, isr = r["a_leader"], r["a_replicas"], r["a_isr"]
        if (leader < 0 or leader == r["b_leader"] or leader not in r["b_isr"] or leader not in replicas
                or (r["election"] or "") in ("UNCLEAN", "ELR")
                or (r["a_recovery"] == "RECOVERING" and (r["b_recovery"] or "") != "RECOVERING")):
            return
        ahead = replicas[:list(replicas).index(leader)]
        live = [(i, b, c.brokers[b][2]) for i, b in enumerate(ahead)
                if b != r["b_leader"] and b in isr and b in c.brokers and c.brokers[b][0] == "active"]
        if live:
            self._alert(out, r, "leader_election_order", "leader_not_first_eligible",
                        f"leader {live[0][1]}, the first live isr member in replicas {_show(replicas)}",
                        f"{_tp(r)} elected {leader} over live isr member(s) {_show(sorted(b for _, b, _ in live))}",
                        len(live), related_seq=min(since for _, _, since in live))

    def _distinct_replicas(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        reps = r["a_replicas"]
        has_b, boot = r["has_before"], r["bootstrap"]
        if not (boot or not has_b or list(reps) != list(r["b_replicas"])):
            return
        distinct = set(reps)
        if len(distinct) < len(reps):
            self._alert(out, r, "distinct_replicas", "duplicate_replica", "each broker at most once in replicas",
                        f"{_tp(r)} replicas {_show(reps)}", len(reps) - len(distinct))
            return
        if has_b or boot or not c.brokers:
            return
        # a create: racks as of now of the brokers seen so far
        if c.active_racks is None:
            # distinct_replicas.sql's "active": registered and unfenced (in controlled shutdown or not)
            c.active_racks = {rack for state, rack, _ in c.brokers.values()
                              if state in ("active", "shutting_down") and rack is not None}
        active_racks = c.active_racks
        replica_racks, with_rack = set(), 0
        for b in distinct:
            st = c.brokers.get(b)
            if st is not None and st[1] is not None:
                replica_racks.add(st[1])
                with_rack += 1
        if with_rack != len(reps):
            return
        needed = min(len(reps), len(active_racks))
        if len(replica_racks) < needed:
            self._alert(out, r, "distinct_replicas", "replicas_share_rack",
                        f"replicas on {needed} distinct racks ({len(active_racks)} racks with active brokers)",
                        f"{_tp(r)} replicas {_show(reps)} on {len(replica_racks)} rack(s)",
                        needed - len(replica_racks))

    def _duplicate_members(self, r: Mapping[str, Any], out: list[Alert]) -> None:
        """distinct_replicas: no broker twice in the ISR, ELR, last known ELR, adding or removing list,
        judged where the list is set."""
        judge_all = r["bootstrap"] or not r["has_before"]
        for name in _MEMBER_LISTS:
            members = r[f"a_{name}"]
            if members is None or len(set(members)) == len(members):
                continue
            if judge_all or list(members) != list(r[f"b_{name}"] or ()):
                self._alert(out, r, "distinct_replicas", f"duplicate_in_{name}", f"each broker at most once in {name}",
                            f"{_tp(r)} {name} {_show(members)}", len(members) - len(set(members)))

    def _reassignment(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        changes = r["changes"]
        b_rep, b_isr, b_add, b_rem, b_leader = (set(r["b_replicas"]), set(r["b_isr"]), set(r["b_adding"]),
                                                set(r["b_removing"]), r["b_leader"])
        a_rep, a_isr, a_add, a_rem, a_leader = (set(r["a_replicas"]), set(r["a_isr"]), set(r["a_adding"]),
                                                set(r["a_removing"]), r["a_leader"])
        b_in = bool(b_add or b_rem)
        a_in = bool(a_add or a_rem)
        if not b_in and a_in:
            phase = "start"
        elif b_in and a_in:
            phase = "during"
        elif b_in and "REASSIGNMENT_CANCEL" in changes:
            phase = "cancel"
        elif b_in and "REASSIGNMENT_COMPLETE" in changes:
            phase = "complete"
        elif b_in and a_rep == b_rep - b_add and a_rep != b_rep - b_rem:
            phase = "cancel"
        elif b_in:
            phase = "complete"
        else:
            phase = "none"
        rule = None
        if phase == "start":
            if a_isr & a_add:
                rule = "adding_joined_isr_at_start"
            elif not (a_rep == b_rep | a_add and a_rem <= b_rep and not (a_add & b_rep)):
                rule = "start_not_grow_to_union"
            elif a_leader != b_leader:
                rule = "start_changed_leader"
            elif a_isr != b_isr:
                rule = "start_changed_isr"
        elif phase == "during":
            if a_add == b_add and a_rem == b_rem and a_rep != b_rep:
                rule = "replicas_changed_during_reassignment"
            elif not a_rem <= b_rep:
                rule = "retarget_removing_not_replicas"
            elif not (b_rep - a_rep) <= b_add and not b_add <= a_isr:
                rule = "retarget_shrank_before_adding_in_isr"
            elif (not (a_isr & b_add) <= b_isr and (a_leader != b_leader or a_leader == -1)
                  and not (a_leader != -1 and a_leader not in b_isr)):
                rule = "adding_joined_isr_not_through_leader"
        elif phase == "complete":
            if not b_add <= a_isr:
                rule = "completed_before_adding_in_isr"
            elif a_rep != b_rep - b_rem:
                rule = "completed_replicas_not_target"
            elif a_isr & b_rem:
                rule = "completed_isr_keeps_removing"
        elif phase == "cancel":
            if a_rep != b_rep - b_add:
                rule = "cancel_not_restoring_replicas"
        elif not a_rep <= b_rep:
            rule = "replicas_added_outside_reassignment"
        actual = (f"{_tp(r)} replicas {_show(r['b_replicas'])} -> {_show(r['a_replicas'])}, isr {_show(r['b_isr'])} "
                  f"-> {_show(r['a_isr'])}, leader {b_leader} -> {a_leader}, adding {_show(r['b_adding'])} -> "
                  f"{_show(r['a_adding'])}, removing {_show(r['b_removing'])} -> {_show(r['a_removing'])}")
        if r["source_kind"] == "ZOOKEEPER" and phase in ("start", "complete"):
            # ZooKeeper mode: the controller bumps the leader epoch before the assignment becomes RAR
            key = (r["topic_id"] if r["topic_id"] is not None else r["topic"], r["partition"])
            start = c.zk_starts.get(key)
            if phase == "start":
                epoch = r["a_leader_epoch"] if start is None else max(start[0], r["a_leader_epoch"])
                c.zk_starts[key] = start = (epoch, r["seq"] if start is None else max(start[1], r["seq"]))
            if phase == "complete" and start is not None and r["a_leader_epoch"] <= start[0]:
                self._alert(out, r, "reassignment_legal", "zk_completed_without_leader_epoch_bump",
                            f"complete: leader epoch > {start[0]}, its value at the start (related seq)", actual, 1,
                            related_seq=start[1])
        if rule is None:
            return
        expected = {
            "start": lambda: f"replicas {_show(sorted(b_rep | a_add))}, leader {b_leader}, isr {_show(sorted(b_isr))}",
            "during": lambda: f"replicas {_show(sorted(b_rep))}, removing ⊆ replicas, adding join isr via leader {b_leader}",
            "complete": lambda: (f"adding {_show(sorted(b_add))} ⊆ isr, replicas {_show(sorted(b_rep - b_rem))}, "
                                 f"isr without {_show(sorted(b_rem))}"),
            "cancel": lambda: f"replicas {_show(sorted(b_rep - b_add))}",
            "none": lambda: f"replicas ⊆ {_show(sorted(b_rep))}",
        }[phase]()
        self._alert(out, r, "reassignment_legal", rule, f"{phase}: {expected}", actual, 1)

    def _unclean(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        """unclean_election_allowed: config as of now, topic > controller node > cluster default."""
        level = value = config_seq = None
        for lvl, scope in ((1, f"topic:{r['topic']}"), (2, f"broker:{r['controller_id']}"), (3, "cluster:")):
            found = c.configs.get(scope)
            if found is not None and found[0] is not None:
                level, (value, config_seq) = lvl, found
                break
        allowed = level is not None and value is not None and value.strip(" ").lower() == "true"
        if level is None:
            config_text = "unclean.leader.election.enable=false (Kafka default)"
            allowance = None
        else:
            allowance = f"unclean.leader.election.enable={value} ({_LEVEL_NAMES[level]} config)"
            config_text = f"unclean.leader.election.enable={value} ({_LEVEL_NAMES[level]} config, seq {config_seq})"
        what = (f"{_tp(r)} leader {r['b_leader']} -> {r['a_leader']}, previous isr {_show(sorted(set(r['b_isr'])))}, "
                f"elr {_show(sorted(set(r['b_elr'])))}, recovery {r['a_recovery']}")
        expected = f"new leader in previous isr or elr; {config_text}"
        if allowed:
            self._alert(out, r, "unclean_election_allowed", "unclean_election", expected, what, 1,
                        related_seq=config_seq, status="allowed", allowance=allowance)
        elif _last_known_leader(r):
            self._alert(out, r, "unclean_election_allowed", "last_known_leader_election", expected, what, 1,
                        related_seq=config_seq, status="allowed", allowance=LAST_KNOWN_ALLOWANCE)
        else:
            self._alert(out, r, "unclean_election_allowed", "unclean_election_not_allowed", expected, what, 1,
                        related_seq=config_seq)
        if r["a_recovery"] == "RECOVERED" and r["source_kind"] is not None and r["source_kind"] != "ZOOKEEPER":
            self._alert(out, r, "unclean_election_allowed", "unclean_election_without_recovering",
                        "leader recovery state RECOVERING after an unclean election", what, 1)

    def _live_topic(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        """state_continuity: a change leaving a state needs its topic id created and not deleted."""
        tid = r["topic_id"]
        if tid is None or c.first_topic_seq is None or c.first_topic_seq >= r["seq"]:
            return
        known = c.topics.get(tid)
        if known is not None and known[0] != "DELETED":
            return
        after_gap = c.gaps > (known[2] if known is not None else 0)
        why = "never created" if known is None else f"deleted at seq {known[1]}"
        self._alert(out, r, "state_continuity", "partition_change_without_live_topic",
                    f"topic {r['topic']} (id {tid}) created and not deleted before the change",
                    f"{_tp(r)} under topic id {tid}: {why}", 1,
                    related_seq=None if known is None else known[1],
                    status="allowed" if after_gap else "violated",
                    allowance="capture gap before the change (the topic creation may be lost)" if after_gap else None)

    def _continuity(self, c: _Cluster, part: _Partition, r: Mapping[str, Any], out: list[Alert]) -> None:
        after = tuple(r[f"a_{n}"] for n in _STATE_FIELDS) if r["has_after"] else None
        if not r["bootstrap"] and r["has_before"] and part.last_seq is not None:
            before = tuple(r[f"b_{n}"] for n in _STATE_FIELDS)
            last_after = part.last_after or ()  # a state after every change but a delete
            if not part.last_has_after:
                n_diff = 10
            else:
                n_diff = sum(1 for x, y in zip(before, last_after) if _distinct(x, y))
            if n_diff:
                allowed = c.gaps > part.last_gaps
                rule = "before_of_deleted_partition" if not part.last_has_after else "before_differs_from_previous_after"
                expected = ("no before (partition deleted at related seq)" if not part.last_has_after else
                            "before = previous after: " + _state_text(last_after))
                self._alert(out, r, "state_continuity", rule, expected, f"{_tp(r)} before: {_state_text(before)}",
                            n_diff, related_seq=part.last_seq, status="allowed" if allowed else "violated",
                            allowance="capture gap between the two events" if allowed else None)
        part.last_seq, part.last_has_after, part.last_after, part.last_gaps = r["seq"], bool(r["has_after"]), after, c.gaps

    # --- BrokerChange -----------------------------------------------------------------------
    def _broker_change(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        b, seq = r["broker_id"], r["seq"]
        state = _broker_state(r)
        if state in ("fenced", "unregistered") and not r["bootstrap"] and r["source_kind"] not in ("ZOOKEEPER", "BROKER_LOG"):
            # fenced_broker_not_in_isr (b): fenced or unregistered while still leader or in an ISR
            # (KRaft's order; in ZooKeeper mode the broker's znode goes before the controller's moves)
            held = c.member_of.get(b)
            if held:
                first_seq = min(held.values())
                first_part = min(f"{t}-{p}" for t, p in held)
                mv = r["metadata_version"]
                known = r["broker_change"] == "REGISTERED" and (mv is None or mv < 23)
                self._alert(out, r, "fenced_broker_not_in_isr", f"{state}_while_leader_or_in_isr",
                            f"broker {b} removed from every leader and isr before it is {state}",
                            f"broker {b} still leader or in isr of {len(held)} partition(s), first {first_part}",
                            len(held), related_seq=first_seq, status="allowed" if known else "violated",
                            allowance=REREGISTRATION_ALLOWANCE if known else None)
        c.brokers[b] = (state, r["broker_rack"], seq)
        c.active_racks = None
        if c.first_broker_seq is None:
            c.first_broker_seq = seq

    # --- OffsetSample -----------------------------------------------------------------------
    def _sample(self, c: _Cluster, r: Mapping[str, Any], out: list[Alert]) -> None:
        hw = r["s_hw"]
        if hw is None or hw < 0:
            return
        key = (r["topic"], r["partition"])
        part = self._part(c, key)
        # valid_high_watermark: HW <= min LEO over the ISR members that answered
        if part.seen_state and part.isr is not None:
            reps, leos = r["s_replicas"] or [], r["s_leos"] or []
            judged = [(leo, b) for i, b in enumerate(reps)
                      if i < len(leos) and leos[i] is not None and leos[i] >= 0 and b in part.isr
                      for leo in (leos[i],)]
            if judged:
                min_leo = min(leo for leo, _ in judged)
                if hw > min_leo:
                    broker = min(b for leo, b in judged if leo == min_leo)
                    self._alert(out, r, "valid_high_watermark", "hw_above_isr_member_leo",
                                f"hw <= min LEO over isr {_show(sorted(part.isr))} = {min_leo}",
                                f"{_tp(r)} hw {hw} from leader {r['s_leader']}; broker {broker} LEO {min_leo}",
                                hw - min_leo, related_seq=part.state_seq)
        # high_watermark_monotonic: the incarnation's last sample, for the next election
        leos_by_broker: dict[int, Any] = {}
        for i, b in enumerate(r["s_replicas"] or []):
            leos = r["s_leos"] or []
            leos_by_broker.setdefault(b, leos[i] if i < len(leos) else None)
        part.last_full_sample = (r["seq"], hw, leos_by_broker, part.members_all)
        # high_watermark_monotonic: against the previous sample of this incarnation
        prev = part.sample
        if prev is not None and hw < prev[1]:
            p_seq, p_hw, p_leader, p_le, p_uncleans = prev
            leader = r["s_leader"]
            changed = p_leader is not None and leader is not None and p_leader != leader
            allowed = part.uncleans > p_uncleans
            self._alert(out, r, "high_watermark_monotonic",
                        "hw_decreased_across_leader_change" if changed else "hw_decreased",
                        f"hw >= {p_hw}",
                        f"{_tp(r)} hw {p_hw} -> {hw}, leader {p_leader} (epoch {p_le}) -> {leader} "
                        f"(epoch {r['s_leader_epoch']})", p_hw - hw, related_seq=p_seq,
                        status="allowed" if allowed else "violated",
                        allowance="unclean election between the samples (may truncate)" if allowed else None)
        part.sample = (r["seq"], hw, r["s_leader"], r["s_leader_epoch"], part.uncleans)


def _distinct(x: Any, y: Any) -> bool:
    """SQL's IS DISTINCT FROM (lists compared element by element, in order)."""
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return list(x) != list(y)
    return bool(x != y)


def _state_text(s: tuple[Any, ...]) -> str:
    d = dict(zip(_STATE_FIELDS, s))
    return (f"leader {d['leader']} le {d['leader_epoch']} pe {d['partition_epoch']} isr {_show(d['isr'])} "
            f"replicas {_show(d['replicas'])} adding {_show(d['adding'])} removing {_show(d['removing'])} "
            f"elr {_show(d['elr'])} recovery {d['recovery']}")
