"""What the live predicates (checks/invariants/<name>.py) share: the alert, the per-cluster and
per-partition state the dispatcher (checks.live.LiveChecker) keeps, and the helpers several use.

State is plain attributes of one `Cluster` per cluster and one `Partition` per partition (attribute
access is the hot path of the watch agent), each field marked with the invariant that keeps it; the
dispatcher keeps the fields marked "shared" (the broker registry, capture gaps, the migration's
cutover), each predicate module the fields of its own invariant.

A predicate module defines, for the event kinds it looks at, hooks the dispatcher calls:

    on_event(c, r, cutover, out)                                   every event (the controller epoch)
    on_partition_change(c, part, r, transition, unclean, out)      PartitionChange
    on_broker_change(c, r, state, out)                             BrokerChange, before the registry update
    on_offset_sample(c, part, r, out)                              OffsetSample with a HW (>= 0)
    on_config_change(c, r)                                         ConfigChange
    on_topic_change(c, r)                                          TopicChange
    at_end(c, out)                                                 the end of the history (LiveChecker.finish):
                                                                   a bounded-liveness check's open obligations

`r` is the event's flat row (schemas.archive.flat columns), `part` the partition's `Partition` (by topic name
and partition), `transition` a PartitionChange with before and after that is not a bootstrap,
`unclean` such a transition that elects uncleanly (`is_unclean`), `state` the broker's state after the
change (`broker_state`), `cutover` the event is a ZooKeeper -> KRaft migration's cutover. Alerts are
appended to `out`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Alert:
    invariant: str
    cluster_id: str
    seq: int
    event_id: str
    kind: str
    rule: str
    status: str  # "violated" | "allowed" | "pending" (bounded liveness, at the end) | "no data"
    allowance: str | None
    related_seq: int | None
    expected: str
    actual: str
    magnitude: int | None
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


def alert(out: list[Alert], r: Row, invariant: str, rule: str, expected: str, actual: str, magnitude: int | None,
          related_seq: int | None = None, status: str = "violated", allowance: str | None = None) -> None:
    """Append the alert of `invariant` at event `r`."""
    out.append(Alert(
        invariant=invariant, cluster_id=r["cluster_id"], seq=r["seq"], event_id=r["event_id"], kind=r["kind"],
        rule=rule, status=status, allowance=allowance, related_seq=related_seq, expected=expected,
        actual=actual, magnitude=None if magnitude is None else int(magnitude), topic=r.get("topic"), partition=r.get("partition"),
        source_kind=r.get("source_kind"), source_offset=r.get("source_offset"),
        source_index=r.get("source_index"), event_time_ms=r.get("event_time_ms"),
    ))


def show(xs: Iterable[int] | None) -> str:
    return "[" + ", ".join(str(x) for x in (xs or ())) + "]"


def tp(r: Row) -> str:
    return f"{r['topic']}-{r['partition']}"


def broker_state(r: Row) -> str:
    """A BrokerChange's broker state after it: unregistered, fenced, shutting_down or active."""
    if r["broker_change"] == "UNREGISTERED" or r["broker_fenced"] is None:
        return "unregistered"
    if r["broker_fenced"]:
        return "fenced"
    return "shutting_down" if r["broker_shutdown"] else "active"


def is_update(r: Row) -> bool:
    """A PartitionChange whose change kinds are known and are not a create (what partition_epoch_monotonic
    and reassignment_legal judge, of the transitions)."""
    changes = r["changes"]
    return changes is not None and "CREATE" not in changes


def is_unclean(r: Row) -> bool:
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


@dataclass
class Partition:
    # state_continuity: the previous PartitionChange (of a lineage, Cluster.lineage)
    last_seq: int | None = None
    last_has_after: bool = False
    last_after: tuple[Any, ...] | None = None
    last_gaps: int = 0
    # valid_high_watermark: ISR as of now (None: deleted), seq of that state
    seen_state: bool = False
    isr: frozenset[int] | None = None
    state_seq: int | None = None
    # valid_high_watermark (ELR members): the ELR now, the incarnation's last sampled HW, and per broker its last
    # entry into the ELR: seq, the HW sampled last before it (None: not known)
    elr: frozenset[int] = frozenset()
    vhw_last_hw: int | None = None
    elr_entries: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    # unclean_election_allowed (ELR laundering): per broker, the seq of the last change that put it in the ELR
    elr_entered_at: dict[int, int] = field(default_factory=dict)
    # fenced_broker_not_in_isr (b): members of the open interval
    members: frozenset[int] = frozenset()
    # high_watermark_monotonic: previous sample of this incarnation, running unclean count
    uncleans: int = 0
    sample: tuple[int, int, int | None, int | None, int] | None = None  # seq, hw, leader, leader_epoch, uncleans
    # high_watermark_monotonic (committed data at elections): ISR ∪ ELR now (None: no state), and the
    # incarnation's last sample: seq, hw, LEO by broker, ISR ∪ ELR as of it
    members_all: frozenset[int] | None = None
    last_full_sample: tuple[int, int, dict[int, Any], frozenset[int] | None] | None = None
    # replication_progress: the HW of the partition's last sample (None: none since its delete), and per
    # replica behind it the sample that opened its obligation
    rp_prev_hw: int | None = None
    rp_open: dict[int, Row] = field(default_factory=dict)


@dataclass
class Cluster:
    # shared: the source kind of the event before and whether the migration's cutover is past
    # (fragments/migration_cutover.sql)
    last_source: str | None = None
    cut_over: bool = False
    # controller_epoch_monotonic: running maximum and the seq of the observation before
    ce_max: int | None = None
    ce_prev_seq: int | None = None
    # election_safety: epoch -> first leader, seq, all leaders
    epochs: dict[int, tuple[int, int, set[int]]] = field(default_factory=dict)
    # shared: capture gaps seen so far
    gaps: int = 0
    # shared: partition state by (topic, partition)
    parts: dict[tuple[str, int], Partition] = field(default_factory=dict)
    # shared: the broker registry: id -> state, rack, seq; the seq of the first BrokerChange; racks of
    # active brokers (a cache, reset on a BrokerChange)
    brokers: dict[int, tuple[str, str | None, int]] = field(default_factory=dict)
    first_broker_seq: int | None = None
    active_racks: set[str] | None = None
    # fenced_broker_not_in_isr (b): topic -> partitions with an open interval; broker -> partition -> since
    topic_open: dict[str, set[int]] = field(default_factory=dict)
    member_of: dict[int, dict[tuple[str, int], int]] = field(default_factory=dict)
    # unclean_election_allowed: unclean.leader.election.enable by scope -> value, seq
    configs: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    # state_continuity: partitions keyed by topic id (a re-created topic is another lineage), and
    # each topic id's last TopicChange: kind, seq, capture gaps seen by then
    lineage: dict[tuple[str, int], Partition] = field(default_factory=dict)
    topics: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    first_topic_seq: int | None = None
    # isr_elr_sanity: min.insync.replicas by scope -> value, seq
    min_isr: dict[str, tuple[int | None, int]] = field(default_factory=dict)
    # unclean_election_allowed: the seq of the first BrokerChange read from broker logs (ZooKeeper mode's only)
    zk_broker_log_since: int | None = None
    # reassignment_legal, ZooKeeper mode: per (topic id, partition) the highest leader epoch and latest seq of a start
    zk_starts: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    # shared: the bounded-liveness deadlines in force (ms, by invariant) and the latest event time seen
    deadlines: dict[str, int] = field(default_factory=dict)
    last_ms: int | None = None
    # leader_elected: leaderless partitions' ISR and ELR members, and the event that opened each obligation
    le_members: dict[tuple[str, int], frozenset[int]] = field(default_factory=dict)
    le_open: dict[tuple[str, int], Row] = field(default_factory=dict)
    # reassignment_completes: per partition, the change that opened its obligation
    rc_open: dict[tuple[str, int], Row] = field(default_factory=dict)
    # broker_unfenced: per broker, the change that opened its obligation
    bu_open: dict[int, Row] = field(default_factory=dict)
    # controller_heartbeat: per metadata-log source kind its last event (seq, offset, time); the first event
    # of the cluster and whether any event of a metadata log was seen (none: no data)
    hb_last: dict[str, tuple[int, int | None, int | None]] = field(default_factory=dict)
    hb_first: Row | None = None
    hb_seen: bool = False

    def part(self, key: tuple[str, int]) -> Partition:
        p = self.parts.get(key)
        if p is None:
            p = self.parts[key] = Partition()
        return p


# The hooks' types (see the module docstring).
EventHook = Callable[[Cluster, Row, bool, list[Alert]], None]
PartitionChangeHook = Callable[[Cluster, Partition, Row, bool, bool, list[Alert]], None]
BrokerChangeHook = Callable[[Cluster, Row, str, list[Alert]], None]
OffsetSampleHook = Callable[[Cluster, Partition, Row, list[Alert]], None]
StateHook = Callable[[Cluster, Row], None]
EndHook = Callable[[Cluster, list[Alert]], None]
HOOKS = ("on_event", "on_partition_change", "on_broker_change", "on_offset_sample", "on_config_change",
         "on_topic_change", "at_end")


def elapsed(opened: Row, r: Row) -> int | None:
    """Milliseconds from one event to another (None where a time is unknown)."""
    a, b = opened.get("event_time_ms"), r.get("event_time_ms")
    return None if a is None or b is None else int(b) - int(a)


def settle(open_: dict[Any, Row], key: object, owed: bool, r: Row) -> Row | None:
    """A bounded-liveness obligation's bookkeeping at `r`: opened there when owed and not open yet; when it is open
    and no longer owed, closed, and the row that opened it given back (then `met` judges how long it took)."""
    opened = open_.get(key)
    if owed and opened is None:
        open_[key] = r
    elif not owed and opened is not None:
        del open_[key]
        return opened
    return None


def met(c: Cluster, out: list[Alert], opened: Row, r: Row, invariant: str, rule: str, expected: str,
        actual: Callable[[int], str]) -> None:
    """A bounded-liveness obligation opened at `opened` is met at `r`: a violation (a warning, by the catalog's
    severity) when later than the invariant's deadline, at `r` with related_seq the opening event."""
    took = elapsed(opened, r)
    if took is not None and took > c.deadlines[invariant]:
        alert(out, r, invariant, rule, expected, actual(took), took, related_seq=opened["seq"])


def pending(c: Cluster, out: list[Alert], opened: Row, invariant: str, rule: str, expected: str, actual: str) -> None:
    """An obligation still open at the end: pending at its opening event, magnitude the ms to the last event."""
    t = opened.get("event_time_ms")
    alert(out, opened, invariant, rule, expected, actual,
          None if t is None or c.last_ms is None else c.last_ms - int(t), status="pending")
