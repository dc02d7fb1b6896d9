"""Queries over the store: state as of a point, diff, timeline, explain, health lists.

Every result carries the `Point` it is current to, so any rendering can say "as of seq/offset/time".
State comes from the interval tables (one range query), never from a fold.
"""
from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from immutables import Map

from schemas.events import BrokerState, ConfigResourceType, LeaderRecoveryState, PartitionState
from replay.errors import StoreError
from schemas.fastbuild import int_tuples, objects
from schemas.state.image import (
    CaptureGapSeen, ClusterImage, ControllerImage, Provenance, TopicImage, TopicsImage,
)
from replay.gaps import STATE_GAP
from replay.store import Point, Store

_AT = "cluster_id = $c AND from_seq <= $s AND (to_seq IS NULL OR to_seq > $s)"
_STATE_COLS = "replicas, isr, adding, removing, elr, last_known_elr, leader, leader_epoch, partition_epoch, recovery"
MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
KAFKA_DEFAULTS = {MIN_ISR: "1", UNCLEAN: "false"}


def state_of(row: tuple[Any, ...] | list[Any]) -> PartitionState:
    """A PartitionState from the 10 state columns, in _STATE_COLS order."""
    r, i, ad, rm, elr, lk, leader, le, pe, rec = row
    return PartitionState(
        replicas=tuple(r), isr=tuple(i), leader=leader, leader_epoch=le, partition_epoch=pe,
        adding_replicas=tuple(ad or ()), removing_replicas=tuple(rm or ()), elr=tuple(elr or ()),
        last_known_elr=tuple(lk or ()), leader_recovery_state=LeaderRecoveryState(rec),
    )


@dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    topic_id: str
    partition: int
    state: PartitionState
    since_seq: int
    since_time_ms: int


@dataclass(frozen=True, slots=True)
class StateResult:
    point: Point
    partitions: tuple[PartitionRow, ...]
    # Non-default config values per topic as of the point (topic overrides only, as Kafka's
    # describe shows under "Configs:"), and the effective min ISR / unclean flag per topic.
    topic_configs: dict[str, dict[str, str]]
    effective: dict[str, dict[str, str]]
    cluster_defaults: dict[str, str]  # dynamic cluster-wide broker configs (BROKER "")
    # Partitions of each topic as of the point, also when only some of them were asked for (--partition).
    partition_counts: dict[str, int] = None  # type: ignore[assignment]
    # the cluster ran in ZooKeeper mode at the point: no eligible leader replicas there (describe says N/A)
    zookeeper_mode: bool = False


Topics = str | list[str] | tuple[str, ...] | None  # one topic, several (a --topic regex resolved), or all


def _topic_filter(topic: Topics, params: dict[str, Any]) -> str:
    if topic is None:
        return ""
    if isinstance(topic, str):
        params["t"] = topic
        return " AND topic = $t"
    params["t"] = list(topic)
    return " AND list_contains($t, topic)"


def state_arrow(store: Store, point: Point, topic: Topics = None, partition: int | None = None,
                ordered: bool = True) -> pa.Table:
    """The partition states as of `point` as an Arrow table (one range query, no Python objects):
    topic, topic_id, partition, from_seq, from_time_ms and the state columns; by topic and partition
    unless `ordered` is False (DuckDB's sort carries every state column: half the query's time)."""
    params: dict[str, Any] = {"c": point.cluster_id, "s": point.seq}
    where = _AT + _topic_filter(topic, params)
    if partition is not None:
        where += ' AND "partition" = $p'
        params["p"] = partition
    return store.con.sql(f"""
        SELECT topic, topic_id, "partition", from_seq, from_time_ms, {_STATE_COLS}
        FROM partition_intervals WHERE {where}{' ORDER BY topic, "partition"' if ordered else ''}""",
        params=params).to_arrow_table()


_RECOVERY = {s.value: s for s in LeaderRecoveryState}


def _shared(column: pa.ChunkedArray, convert: Callable[[Any], Any] = lambda v: v) -> tuple[list[Any], list[Any]]:
    """(the column's values as Python objects, its distinct values): each distinct value converted once
    and shared by its rows (a topic's name is one str for its partitions, not one per partition)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    distinct = [convert(v) for v in encoded.dictionary.to_pylist()]
    indices = encoded.indices
    if indices.null_count:
        indices = pc.fill_null(indices, len(distinct))
        distinct.append(convert(None))
    return list(map(distinct.__getitem__, indices.to_pylist())), distinct


def _by_topic_and_partition(table: pa.Table) -> pa.Table:
    """The table in the row order of ORDER BY topic, "partition" (DuckDB's: byte order, nulls last).
    The few distinct topic names are sorted, then the rows by one int64 key: the name's rank in the
    high 32 bits, the partition (a non-negative int32) in the low ones. Cheaper than DuckDB's sort,
    which carries every state column; and the objects are then made, and later freed, in this order
    (freeing them in another order than they were made cost 40 ms more per 100k partitions)."""
    encoded = pc.dictionary_encode(table.column("topic")).combine_chunks()
    names = encoded.dictionary.to_pylist()
    rank = [0] * (len(names) + 1)  # the last: a null name
    for r, i in enumerate(sorted(range(len(names)), key=names.__getitem__)):
        rank[i] = r << 32
    rank[-1] = len(names) << 32
    topic = pc.fill_null(encoded.indices, len(names))
    key = pc.add(pc.take(pa.array(rank, pa.int64()), topic), pc.cast(table.column("partition"), pa.int64()))
    return table.take(pc.sort_indices(key))


def state_as_of(store: Store, point: Point, topic: Topics = None, partition: int | None = None) -> StateResult:
    """All partitions, one topic's, or one partition's state as of `point`."""
    # ordered in Arrow by the two keys alone, cheaper than DuckDB sorting every state column along
    table = _by_topic_and_partition(state_arrow(store, point, topic, partition, ordered=False))
    # Column-wise, from Arrow's buffers to the objects (schemas.fastbuild, C when it is built): the
    # objects path of 100k partitions was most of this function's time. The objects hold only ints,
    # strings, tuples of ints and enum members, so they are built out of the cyclic GC (atomic), and
    # the GC is paused meanwhile for the Python path: its passes over them took half the time.
    c = table.columns
    paused = gc.isenabled()
    gc.disable()
    try:
        replicas, isr, adding, removing, elr, last_known_elr = (int_tuples(c[i]) for i in range(5, 11))
        partition_, from_seq, from_time, leader, leader_epoch, partition_epoch = (
            c[i].to_pylist() for i in (2, 3, 4, 11, 12, 13))
        (topic_, names), (topic_id, _) = _shared(c[0]), _shared(c[1])
        recovery, _ = _shared(c[14], _RECOVERY.__getitem__)
        states = objects(PartitionState, [replicas, isr, leader, leader_epoch, partition_epoch, adding, removing,
                                          elr, last_known_elr, recovery], atomic=True)
        parts = tuple(objects(PartitionRow, [topic_, topic_id, partition_, states, from_seq, from_time], atomic=True))
    finally:
        if paused:
            gc.enable()
    topics = sorted(n for n in names if n is not None)
    configs = configs_as_of(store, point)
    overrides = {t: dict(configs.get((ConfigResourceType.TOPIC.value, t), {})) for t in topics}
    defaults = configs.get((ConfigResourceType.BROKER.value, ""), {})
    effective = {
        t: {k: overrides[t].get(k, defaults.get(k, v)) for k, v in KAFKA_DEFAULTS.items()} for t in topics
    }
    if partition is None:
        counts = {r["values"]: r["counts"] for r in pc.value_counts(c[0]).to_pylist()}
    else:
        counts = partition_counts(store, point, topics)
    return StateResult(point, parts, overrides, effective, dict(defaults), counts, zookeeper_mode(store, point))


def zookeeper_mode(store: Store, point: Point) -> bool:
    """Whether the cluster ran in ZooKeeper mode at `point`: its event there was read from ZooKeeper, or (an
    import of broker logs, whose events are BROKER_LOG in both modes) the logs held a ZooKeeper-mode controller's
    registered-brokers cache, the only broker registrations a broker-log import makes (KRaft's are not logged
    whole). A migrated history is ZooKeeper's before its cutover and KRaft's after."""
    if point.source_kind == "ZOOKEEPER":
        return True
    if point.source_kind != "BROKER_LOG":
        return False
    return store.con.execute(
        "SELECT 1 FROM events WHERE cluster_id = ? AND source_kind = 'BROKER_LOG' AND kind = 'BrokerChange' LIMIT 1",
        [point.cluster_id]).fetchall() != []


def partition_counts(store: Store, point: Point, topics: list[str]) -> dict[str, int]:
    params: dict[str, Any] = {"c": point.cluster_id, "s": point.seq}
    return dict(store.con.execute(
        f"SELECT topic, count(*) FROM partition_intervals WHERE {_AT}{_topic_filter(topics, params)} GROUP BY topic",
        params).fetchall())


def configs_as_of(store: Store, point: Point) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for rtype, rname, name, value in store.con.execute(
        f"SELECT resource_type, resource_name, name, value FROM config_intervals WHERE {_AT}",
        {"c": point.cluster_id, "s": point.seq},
    ).fetchall():
        out.setdefault((rtype, rname), {})[name] = value
    return out


def brokers_as_of(store: Store, point: Point) -> dict[int, BrokerState]:
    rows = store.con.execute(
        f"SELECT broker_id, epoch, fenced, in_controlled_shutdown, rack FROM broker_intervals WHERE {_AT}",
        {"c": point.cluster_id, "s": point.seq}).fetchall()
    return {b: BrokerState(b, e, f, cs, rack=rack) for b, e, f, cs, rack in rows}


def controller_as_of(store: Store, point: Point) -> ControllerImage:
    rows = store.con.execute(f"SELECT leader_id, epoch, voters FROM controller_intervals WHERE {_AT}",
                             {"c": point.cluster_id, "s": point.seq}).fetchall()
    return ControllerImage(rows[0][0], rows[0][1], tuple(rows[0][2] or ())) if rows else ControllerImage()


# --- health lists --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HealthResult:
    point: Point
    kind: str
    partitions: tuple[PartitionRow, ...]
    rule: str


def under_replicated(store: Store, point: Point, topic: Topics = None) -> HealthResult:
    """Kafka's rule (TopicCommand.isUnderReplicated): |isr| < replication factor, where the
    replication factor during a reassignment is |replicas| - |adding|."""
    s = state_as_of(store, point, topic)
    rows = tuple(p for p in s.partitions
                 if len(p.state.isr) < len(p.state.replicas) - len(p.state.adding_replicas))
    return HealthResult(point, "under-replicated", rows, "|isr| < |replicas| - |adding|")


def under_min_isr(store: Store, point: Point, topic: Topics = None) -> HealthResult:
    """Kafka's rule (TopicCommand.isUnderMinIsr): no leader, or |isr| < min.insync.replicas as of
    the point (topic override, else cluster default, else 1)."""
    s = state_as_of(store, point, topic)
    rows = tuple(p for p in s.partitions
                 if p.state.leader == -1 or len(p.state.isr) < min_isr(s.effective[p.topic][MIN_ISR]))
    return HealthResult(point, "under-min-isr", rows, "leader = -1 or |isr| < min.insync.replicas")


def min_isr(value: str) -> int:
    """The configured value; a value Kafka would have refused counts as the default 1."""
    try:
        return int(value)
    except ValueError:
        return 1


def at_min_isr(store: Store, point: Point, topic: Topics = None) -> HealthResult:
    """Kafka's rule (TopicCommand.isAtMinIsrPartitions): |isr| = min.insync.replicas as of the point:
    one more replica out of the ISR and producers with acks=all are refused."""
    s = state_as_of(store, point, topic)
    rows = tuple(p for p in s.partitions if len(p.state.isr) == min_isr(s.effective[p.topic][MIN_ISR]))
    return HealthResult(point, "at-min-isr", rows, "|isr| = min.insync.replicas")


def offline(store: Store, point: Point, topic: Topics = None) -> HealthResult:
    s = state_as_of(store, point, topic)
    return HealthResult(point, "offline", tuple(p for p in s.partitions if p.state.leader == -1), "leader = -1")


def unavailable(store: Store, point: Point, topic: Topics = None) -> HealthResult:
    """Kafka's rule (TopicCommand.hasUnavailablePartitions): no leader, or a leader that is not a live
    broker (describeCluster lists registered, unfenced brokers). Differs from `offline` only between a
    broker's fencing and the leader moves the controller writes after it."""
    s = state_as_of(store, point, topic)
    brokers = brokers_as_of(store, point)
    if not brokers:  # a history without registrations (an import that began mid-way): no evidence either way
        return HealthResult(point, "unavailable", tuple(p for p in s.partitions if p.state.leader == -1),
                            "leader = -1 (no broker registrations in the history to tell live brokers)")
    live = {b for b, state in brokers.items() if not state.fenced}
    rows = tuple(p for p in s.partitions if p.state.leader == -1 or p.state.leader not in live)
    return HealthResult(point, "unavailable", rows, "leader = -1 or leader not a live (registered, unfenced) broker")


# --- diff ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PartitionDiff:
    topic: str
    partition: int
    before: PartitionState | None
    after: PartitionState | None

    def line(self) -> str:
        name = f"{self.topic}-{self.partition}"
        if self.after is None:
            assert self.before is not None
            return f"{name}: deleted (was {self.before.describe()})"
        return f"{name}: {self.after.diff(self.before)}"


@dataclass(frozen=True, slots=True)
class DiffResult:
    a: Point
    b: Point
    partitions: tuple[PartitionDiff, ...]
    brokers: tuple[tuple[int, BrokerState | None, BrokerState | None], ...]
    controller: tuple[ControllerImage, ControllerImage] | None


def diff(store: Store, a: Point, b: Point) -> DiffResult:
    """What differs between the states as of `a` and as of `b`."""
    if a.cluster_id != b.cluster_id:
        raise StoreError(f"cannot diff two clusters ({a.cluster_id} and {b.cluster_id})")
    at = "cluster_id = $c AND from_seq <= {s} AND (to_seq IS NULL OR to_seq > {s})"
    rows = store.con.execute(f"""
        WITH x AS (SELECT * FROM partition_intervals WHERE {at.format(s='$a')}),
             y AS (SELECT * FROM partition_intervals WHERE {at.format(s='$b')})
        SELECT coalesce(y.topic, x.topic) AS topic, coalesce(y."partition", x."partition") AS p,
               x.from_seq IS NOT NULL, {', '.join('x.' + c.strip() for c in _STATE_COLS.split(','))},
               y.from_seq IS NOT NULL, {', '.join('y.' + c.strip() for c in _STATE_COLS.split(','))}
        FROM x FULL OUTER JOIN y ON x.topic_id = y.topic_id AND x."partition" = y."partition"
        WHERE x.from_seq IS DISTINCT FROM y.from_seq
        ORDER BY topic, p""", {"c": a.cluster_id, "a": a.seq, "b": b.seq}).fetchall()
    parts = []
    for r in rows:
        before = state_of(r[3:13]) if r[2] else None
        after = state_of(r[14:24]) if r[13] else None
        if before != after:
            parts.append(PartitionDiff(r[0], r[1], before, after))
    ba, bb = brokers_as_of(store, a), brokers_as_of(store, b)
    brokers = tuple((i, ba.get(i), bb.get(i)) for i in sorted(set(ba) | set(bb)) if ba.get(i) != bb.get(i))
    ca, cb = controller_as_of(store, a), controller_as_of(store, b)
    return DiffResult(a, b, tuple(parts), brokers, None if ca == cb else (ca, cb))


# --- the whole image, for tests and for `show` -------------------------------------------------

def image_at(store: Store, point: Point) -> ClusterImage:
    """The ClusterImage as of `point`, assembled from the interval tables. Equal to folding the
    events up to point.seq (the store's tests prove it)."""
    con, params = store.con, {"c": point.cluster_id, "s": point.seq}
    topics: dict[str, tuple[str, dict[int, PartitionState]]] = {}
    for tid, name in con.execute(f"SELECT topic_id, topic FROM topic_intervals WHERE {_AT}", params).fetchall():
        topics[tid] = (name, {})
    for r in con.execute(f"""SELECT topic_id, topic, "partition", {_STATE_COLS} FROM partition_intervals
                             WHERE {_AT}""", params).fetchall():
        topics.setdefault(r[0], (r[1], {}))[1][r[2]] = state_of(r[3:])
    by_id = Map({tid: TopicImage(name, tid, Map(parts)) for tid, (name, parts) in topics.items()})
    configs: dict[Any, Map[str, str]] = {
        (ConfigResourceType(t), n): Map(v) for (t, n), v in configs_as_of(store, point).items()}
    features = dict(con.execute(f"SELECT feature, level FROM feature_intervals WHERE {_AT}", params).fetchall())
    brokers = {}
    for b, e, f, cs, rack, inc, _eps in con.execute(f"""
            SELECT i.broker_id, i.epoch, i.fenced, i.in_controlled_shutdown, i.rack, NULL, NULL
            FROM broker_intervals i WHERE {_AT.replace('cluster_id', 'i.cluster_id')}""", params).fetchall():
        brokers[b] = BrokerState(b, e, f, cs, inc, rack)
    gaps = tuple(CaptureGapSeen(*g) for g in con.execute(
        "SELECT seq, gap_from, gap_to, reason FROM events WHERE cluster_id = $c AND seq <= $s AND kind = 'CaptureGap' "
        f"{STATE_GAP} ORDER BY seq", params).fetchall())
    unknown = con.execute("SELECT count(*) FROM events WHERE cluster_id = $c AND seq <= $s AND kind = 'UnknownRecord'",
                          params).fetchall()[0][0]
    prov = con.execute("""SELECT seq, event_id, source_offset, source_index, event_time_ms, controller_id,
                          controller_epoch FROM events WHERE cluster_id = $c AND seq = $s""", params).fetchall()[0]
    return ClusterImage(
        cluster_id=point.cluster_id, provenance=Provenance(*prov), controller=controller_as_of(store, point),
        brokers=Map(brokers), topics=TopicsImage(by_id, Map({n: tid for tid, (n, _) in topics.items()})),
        configs=Map(configs), features=Map(features), gaps=gaps, unknown_records=unknown,
    )
