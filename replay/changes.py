"""Single-partition history: the timeline of one partition and the explanation of one change.

Read from the `events` table (each PartitionChange row carries full before/after state), with the
topic's configs as of the change from the interval tables.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from schemas.events import PartitionState
from replay.errors import StoreError
from replay import gaps, who_asked
from replay.who_asked import Asked
from replay.queries import KAFKA_DEFAULTS, MIN_ISR, UNCLEAN, configs_as_of, state_of
from replay.store import Point, Store
from schemas.times import show

_B = "b_replicas, b_isr, b_adding, b_removing, b_elr, b_last_known_elr, b_leader, b_leader_epoch, b_partition_epoch, b_recovery"
_A = _B.replace("b_", "a_")
_COLS = (f"seq, event_id, source_offset, event_time_ms, controller_id, controller_epoch, topic, topic_id, "
         f"\"partition\", changes, election, reason, bootstrap, has_before, {_B}, has_after, {_A}, source_kind, "
         f"source_file, source_node")


@dataclass(frozen=True, slots=True)
class Change:
    """One PartitionChange as stored."""

    seq: int
    event_id: str
    source_offset: int
    event_time_ms: int
    controller_id: int
    controller_epoch: int
    topic: str
    topic_id: str
    partition: int
    changes: tuple[str, ...]
    election: str
    reason: str | None
    bootstrap: bool
    before: PartitionState | None
    after: PartitionState | None
    source_kind: str = ""
    source_file: str = ""  # the file an import read it from (a broker log, a ZooKeeper log), if any
    source_node: int = -1
    asked: Asked | None = None  # who asked for it (replay/who_asked.py)

    def diff(self) -> str:
        if self.after is None:
            return "deleted" if self.before is None else f"deleted (was {self.before.describe()})"
        return self.after.diff(self.before)


def _change(r: tuple[Any, ...]) -> Change:
    before = state_of(r[14:24]) if r[13] else None
    after = state_of(r[25:35]) if r[24] else None
    return Change(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], tuple(r[9] or ()), r[10] or "NONE",
                  r[11], bool(r[12]), before, after, r[35] or "", r[36] or "", -1 if r[37] is None else r[37])


def _with_asked(store: Store, cluster: str, found: list[Change]) -> tuple[Change, ...]:
    said = who_asked.asked(store.con, cluster, (c.seq for c in found))
    return tuple(replace(c, asked=said.get(c.seq)) for c in found)


@dataclass(frozen=True, slots=True)
class TimelineResult:
    point: Point
    topic: str
    partition: int
    changes: tuple[Change, ...]


def timeline(store: Store, point: Point, topic: str, partition: int, since_seq: int = 0) -> TimelineResult:
    """Every change of `topic`-`partition` from `since_seq` up to `point`, oldest first."""
    rows = store.con.execute(f"""
        SELECT {_COLS} FROM events
        WHERE cluster_id = $c AND kind = 'PartitionChange' AND topic = $t AND "partition" = $p
          AND seq BETWEEN $f AND $s ORDER BY seq""",
        {"c": point.cluster_id, "t": topic, "p": partition, "f": since_seq, "s": point.seq}).fetchall()
    found = _with_asked(store, point.cluster_id, [_change(r) for r in rows])
    if found:  # changes of the partition may be missing wherever a stretch was not read after its first one
        point = point.depending_on(gaps.between(store.con, point.cluster_id, found[0].seq, point.seq))
    return TimelineResult(point.about(topic, partition), topic, partition, found)


@dataclass(frozen=True, slots=True)
class Explanation:
    point: Point  # the change itself: state as of this event
    change: Change
    previous_leader: int | None
    previous_isr: tuple[int, ...] | None
    new_leader: int | None
    leader_changed: bool
    new_leader_in_previous_isr: bool | None
    reassignment_phase: str
    min_insync_replicas: str
    unclean_leader_election_enable: str
    config_source: dict[str, str]  # "topic", "cluster default" or "Kafka default" per config
    # The previous leader's broker as of the change, when the leader moved: why it could not stay leader
    # (fenced, in controlled shutdown, unregistered at seq N), or that it was live (then the election
    # type or a reassignment moved it).
    previous_leader_broker: str | None = None


def explain(store: Store, *, seq: int | None = None, event_id: str | None = None, offset: int | None = None,
            cluster_id: str | None = None) -> Explanation:
    """Why one partition change happened, as far as the record tells: by seq, event id or the
    first partition change at a source offset."""
    cluster = store.cluster(cluster_id)
    if sum(v is not None for v in (seq, event_id, offset)) != 1:
        raise StoreError("explain takes exactly one of seq, event id, offset")
    cond, arg = ("seq = $v", seq) if seq is not None else (
        ("event_id = $v", event_id) if event_id is not None else ("source_offset = $v", offset))
    rows = store.con.execute(f"""SELECT kind, seq FROM events WHERE cluster_id = $c AND {cond}
                                 ORDER BY (kind <> 'PartitionChange'), seq LIMIT 1""",
                             {"c": cluster, "v": arg}).fetchall()
    what = f"seq {seq}" if seq is not None else (f"event {event_id}" if event_id else f"offset {offset}")
    if not rows:
        raise StoreError(f"no event at {what} in cluster {cluster}")
    if rows[0][0] != "PartitionChange":
        raise StoreError(f"the event at {what} (seq {rows[0][1]}) is a {rows[0][0]}, not a partition change")
    r = store.con.execute(f"SELECT {_COLS} FROM events WHERE cluster_id = $c AND seq = $s",
                          {"c": cluster, "s": rows[0][1]}).fetchall()[0]
    ch = _with_asked(store, cluster, [_change(r)])[0]
    # The state before the change is the normalizer's fold: a stretch not read since the partition's previous
    # change may have changed it unseen.
    previous = store.con.execute("""SELECT max(seq) FROM events WHERE cluster_id = $c AND kind = 'PartitionChange'
                                     AND topic = $t AND "partition" = $p AND seq < $s""",
                                 {"c": cluster, "t": ch.topic, "p": ch.partition, "s": ch.seq}).fetchall()[0][0]
    point = store.point(seq=ch.seq, cluster_id=cluster).depending_on(
        gaps.between(store.con, cluster, previous, ch.seq) if previous is not None else ()).about(ch.topic, ch.partition)
    b, a = ch.before, ch.after
    prev_leader = b.leader if b else None
    new_leader = a.leader if a else None
    changed = prev_leader != new_leader
    in_isr = (new_leader in b.isr) if (b is not None and new_leader is not None and new_leader >= 0 and changed) else None
    configs = configs_as_of(store, point)
    topic_cfg = configs.get(("TOPIC", ch.topic), {})
    default_cfg = configs.get(("BROKER", ""), {})
    values, sources = {}, {}
    for name, kafka_default in KAFKA_DEFAULTS.items():
        if name in topic_cfg:
            values[name], sources[name] = topic_cfg[name], "topic"
        elif name in default_cfg:
            values[name], sources[name] = default_cfg[name], "cluster default"
        else:
            values[name], sources[name] = kafka_default, "Kafka default"
    broker = (broker_as_of(store, cluster, prev_leader, ch.seq, ch.event_time_ms)
              if changed and prev_leader is not None and prev_leader >= 0 else None)
    return Explanation(point, ch, prev_leader, b.isr if b else None, new_leader, changed, in_isr,
                       reassignment_phase(ch), values[MIN_ISR], values[UNCLEAN], sources, broker)


def broker_as_of(store: Store, cluster: str, broker: int, seq: int, time_ms: int) -> str:
    """Why broker `broker` stopped leading at event `seq`: its change in the same metadata batch (Kafka's
    controller writes the leader moves of a fencing or a controlled shutdown first and the broker's own
    record last, in one atomic batch: ReplicationControlManager.handleBrokerFenced / handleBrokerShutdown),
    else its state as of `seq`, with the change that made it so (seq, offset, time)."""
    params = {"c": cluster, "b": broker, "s": seq, "t": time_ms}
    # The batch: the events after `seq` that share its append time, up to the first one that does not.
    same_batch = store.con.execute("""
        SELECT e.seq, e.source_offset, e.event_time_ms, e.broker_change FROM events e
        WHERE e.cluster_id = $c AND e.kind = 'BrokerChange' AND e.broker_id = $b AND e.seq > $s
          AND e.event_time_ms = $t
          AND e.seq < coalesce((SELECT min(seq) FROM events WHERE cluster_id = $c AND seq > $s
                                AND event_time_ms <> $t), 9223372036854775807)
        ORDER BY e.seq LIMIT 1""", params).fetchall()
    if same_batch and same_batch[0][3] in ("FENCED", "CONTROLLED_SHUTDOWN", "UNREGISTERED"):
        at, offset, ms, change = same_batch[0]
        what = {"FENCED": "fenced", "CONTROLLED_SHUTDOWN": "in controlled shutdown",
                "UNREGISTERED": "unregistered"}[change]
        return f"broker {broker} {what} in the same metadata batch, at seq {at} (offset {offset}, {show(ms)})"
    rows = store.con.execute("""
        SELECT i.from_seq, e.source_offset, e.event_time_ms, i.fenced, i.in_controlled_shutdown
        FROM broker_intervals i JOIN events e ON e.cluster_id = i.cluster_id AND e.seq = i.from_seq
        WHERE i.cluster_id = $c AND i.broker_id = $b AND i.from_seq <= $s AND (i.to_seq IS NULL OR i.to_seq > $s)""",
        {"c": cluster, "b": broker, "s": seq}).fetchall()
    if not rows:
        last = store.con.execute("""
            SELECT seq, source_offset, event_time_ms FROM events WHERE cluster_id = $c AND kind = 'BrokerChange'
              AND broker_id = $b AND broker_change = 'UNREGISTERED' AND seq <= $s ORDER BY seq DESC LIMIT 1""",
            {"c": cluster, "b": broker, "s": seq}).fetchall()
        if last:
            at, offset, ms = last[0]
            return f"broker {broker} unregistered at seq {at} (offset {offset}, {show(ms)})"
        return f"broker {broker} not registered (no registration in the history before this change)"
    at, offset, ms, fenced, shutting = rows[0]
    when = f"at seq {at} (offset {offset}, {show(ms)})"
    if fenced:
        return f"broker {broker} fenced {when}"
    if shutting:
        return f"broker {broker} in controlled shutdown {when}"
    return (f"broker {broker} live (registered, unfenced since seq {at}): not a broker failure; the election "
            "type or a reassignment moved the leader")


def reassignment_phase(ch: Change) -> str:
    if "REASSIGNMENT_START" in ch.changes:
        return "start: replicas grow to target + removing (OAR + RAR)"
    if "REASSIGNMENT_COMPLETE" in ch.changes:
        return "complete: replicas = target, adding/removing cleared"
    if "REASSIGNMENT_CANCEL" in ch.changes:
        return "cancel: replicas restored to the original assignment"
    s = ch.after or ch.before
    if s is not None and (s.adding_replicas or s.removing_replicas):
        return (f"in progress: adding [{', '.join(map(str, s.adding_replicas))}], "
                f"removing [{', '.join(map(str, s.removing_replicas))}]")
    return "none"
