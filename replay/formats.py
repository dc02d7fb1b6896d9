"""Renderings of query results: Kafka's `kafka-topics --describe` layout, JSON, rich tables, and
text for diff, timeline and explain.

`describe` prints exactly the lines of Kafka 3.7+'s TopicCommand (TopicDescription.printDescription and
PartitionDescription.printDescription; ``Elr: N/A`` and ``LastKnownElr: N/A`` for a ZooKeeper-mode cluster,
whose brokers answer Metadata without them): nothing else, so its output compares line by line with the
real tool's. Say "as of ..." with `as_of_line` separately (e.g. on stderr).
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from enum import Enum
from typing import Any

from rich.table import Table

from schemas.events import PartitionState
from replay.changes import Change, Explanation, TimelineResult
from replay.queries import DiffResult, HealthResult, PartitionRow, StateResult
from replay.store import Point
from schemas.times import show

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString(): Kafka omits TopicId then

# Topic configs that a cluster-wide dynamic broker default sets (Kafka's ServerTopicConfigSynonyms,
# the common ones): topic name -> broker name. Such a default is not "default" for describe.
TOPIC_SYNONYMS = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.type": "compression.type",
    "cleanup.policy": "log.cleanup.policy",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
}


def _ids(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def describe_configs(result: StateResult, topic: str) -> dict[str, str]:
    """Non-default configs of a topic: its overrides, then cluster-wide defaults it inherits."""
    out = {}
    for name, broker_name in TOPIC_SYNONYMS.items():
        if broker_name in result.cluster_defaults:
            out[name] = result.cluster_defaults[broker_name]
    out.update(result.topic_configs.get(topic, {}))
    # Kafka lists them in its own config map order; sorted by name here (same set, stable order).
    return dict(sorted(out.items()))


def replication_factor(state: PartitionState) -> int:
    """TopicCommand.getReplicationFactor: during a reassignment, |replicas| - |adding|."""
    return len(state.replicas) - len(state.adding_replicas)


# the first release whose kafka-topics --describe prints Elr and LastKnownElr (KIP-966): the default layout
ELR_TOOLS = (3, 7)


def tool_release(text: str) -> tuple[int, ...]:
    """A Kafka release as `--kafka-version` takes it (3.5, 3.5.2, 2.8.0): its numbers; ValueError otherwise."""
    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() and len(p) <= 4 for p in parts):
        raise ValueError(f"{text!r} is not a Kafka release (e.g. 3.5 or 3.9.2)")
    return tuple(int(p) for p in parts)


def describe_partition(row: PartitionRow, zookeeper_mode: bool = False, tool: tuple[int, ...] = ELR_TOOLS) -> str:
    """One partition line as the TopicCommand of release `tool` prints it: from 3.7 on with Elr and
    LastKnownElr, which a ZooKeeper-mode broker does not answer (the tool then prints ``N/A``); before 3.7
    without them."""
    s = row.state
    line = (f"\tTopic: {row.topic}\tPartition: {row.partition}\tLeader: {s.leader if s.leader >= 0 else 'none'}"
            f"\tReplicas: {_ids(s.replicas)}\tIsr: {_ids(s.isr)}")
    if s.adding_replicas or s.removing_replicas:  # listPartitionReassignments has an entry only then
        line += f"\tAdding Replicas: {_ids(s.adding_replicas)}\tRemoving Replicas: {_ids(s.removing_replicas)}"
    if tool < ELR_TOOLS:
        return line
    if zookeeper_mode:
        return line + "\tElr: N/A\tLastKnownElr: N/A"
    return line + f"\tElr: {_ids(s.elr)}\tLastKnownElr: {_ids(s.last_known_elr)}"


def describe(result: StateResult, topics_with_overrides: bool = False, tool: tuple[int, ...] = ELR_TOOLS) -> str:
    """`kafka-topics --describe` output for the partitions in `result`, topics in name order.
    `topics_with_overrides`: as `--topics-with-overrides`, the header lines of the topics whose
    configs differ from the defaults, and no partition lines."""
    lines: list[str] = []
    by_topic: dict[str, list[PartitionRow]] = {}
    for row in result.partitions:
        by_topic.setdefault(row.topic, []).append(row)
    counts = result.partition_counts or {}
    for topic in sorted(by_topic):
        rows = sorted(by_topic[topic], key=lambda r: r.partition)
        configs = describe_configs(result, topic)
        if topics_with_overrides and not configs:
            continue
        head = f"Topic: {topic}"
        if rows[0].topic_id != ZERO_UUID:
            head += f"\tTopicId: {rows[0].topic_id}"
        head += (f"\tPartitionCount: {counts.get(topic, len(rows))}"
                 f"\tReplicationFactor: {replication_factor(rows[0].state)}")
        lines.append(head + "\tConfigs: " + ",".join(f"{k}={v}" for k, v in configs.items()))
        if not topics_with_overrides:
            lines.extend(describe_partition(r, result.zookeeper_mode, tool) for r in rows)
    return "\n".join(lines) + ("\n" if lines else "")


def as_of_line(point: Point) -> str:
    return f"# cluster {point.cluster_id} {point.describe()}, event {point.event_id}"


# --- JSON --------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _point(p: Point) -> dict[str, Any]:
    """A point as JSON: its fields (times as epoch millis) and its time in the output format."""
    return dict(_plain(p), event_time=show(p.event_time_ms))


def _state(s: PartitionState | None) -> dict[str, Any] | None:
    return None if s is None else _plain(s)


def _uncertain(point: Point, topic: str, partition: int) -> dict[str, Any] | None:
    """A partition's state at `point` is not known as fact when the point falls in a stretch nobody read that
    holds it: since when, until when and why (the first such stretch; ``stretches``: how many), else null."""
    held = point.uncertain_about(topic, partition)
    return dict(held[0].as_json(), stretches=len(held)) if held else None


def to_json(result: StateResult | DiffResult | TimelineResult | Explanation | HealthResult) -> str:
    """Stable JSON (sorted keys) of any query result, with the point(s) it is current to."""
    match result:
        case StateResult():
            body: dict[str, Any] = {
                "as_of": _point(result.point),
                "topics": {
                    t: {"configs": describe_configs(result, t), "effective": result.effective[t]}
                    for t in sorted({r.topic for r in result.partitions})
                },
                "partitions": [
                    {"topic": r.topic, "topic_id": r.topic_id, "partition": r.partition, "since_seq": r.since_seq,
                     "since_time_ms": r.since_time_ms, "state": _state(r.state),
                     "uncertain": _uncertain(result.point, r.topic, r.partition)} for r in result.partitions],
            }
        case HealthResult():
            body = {"as_of": _point(result.point), "kind": result.kind, "rule": result.rule,
                    "partitions": [{"topic": r.topic, "partition": r.partition, "state": _state(r.state),
                                    "uncertain": _uncertain(result.point, r.topic, r.partition)}
                                   for r in result.partitions]}
        case DiffResult():
            body = {
                "from": _point(result.a), "to": _point(result.b),
                "partitions": [{"topic": d.topic, "partition": d.partition, "before": _state(d.before),
                                "after": _state(d.after), "line": d.line()} for d in result.partitions],
                "brokers": [{"broker_id": i, "before": _plain(a), "after": _plain(b)} for i, a, b in result.brokers],
                "controller": None if result.controller is None else
                [_plain(result.controller[0]), _plain(result.controller[1])],
            }
        case TimelineResult():
            body = {"as_of": _point(result.point), "topic": result.topic, "partition": result.partition,
                    "changes": [dict(_plain(c), diff=c.diff(), event_time=show(c.event_time_ms))
                                for c in result.changes]}
        case Explanation():
            body = _plain(result)
            body["point"] = _point(result.point)
            body["diff"] = result.change.diff()
            body["change"]["event_time"] = show(result.change.event_time_ms)
        case _:
            raise TypeError(f"no JSON rendering for {type(result).__name__}")
    return json.dumps(body, sort_keys=True, indent=2)


def to_csv(result: StateResult | DiffResult | TimelineResult | HealthResult) -> str:
    """One row per partition (state, health lists, diff) or per change (timeline), with a header;
    lists as Kafka prints them (comma-separated ids), times in ISO-8601 UTC with milliseconds."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    state_cols = ["leader", "replicas", "isr", "adding", "removing", "elr", "leader_epoch", "partition_epoch"]

    def cells(st: PartitionState | None) -> list[Any]:
        if st is None:
            return [""] * len(state_cols)
        return [st.leader, _ids(st.replicas), _ids(st.isr), _ids(st.adding_replicas), _ids(st.removing_replicas),
                _ids(st.elr), st.leader_epoch, st.partition_epoch]

    match result:
        case StateResult() | HealthResult():
            w.writerow(["topic", "partition", *state_cols, "as_of_seq"])
            for r in result.partitions:
                w.writerow([r.topic, r.partition, *cells(r.state), result.point.seq])
        case DiffResult():
            w.writerow(["topic", "partition", *("before_" + c for c in state_cols), *("after_" + c for c in state_cols),
                        "from_seq", "to_seq"])
            for d in result.partitions:
                w.writerow([d.topic, d.partition, *cells(d.before), *cells(d.after), result.a.seq, result.b.seq])
        case TimelineResult():
            w.writerow(["seq", "offset", "time", "controller", "controller_epoch", "changes", "election",
                        *state_cols, "change", "cause", "principal", "host", "client_id", "who_asked"])
            for c in result.changes:
                a = c.asked
                w.writerow([c.seq, c.source_offset, show(c.event_time_ms), c.controller_id, c.controller_epoch,
                            ",".join(c.changes), c.election, *cells(c.after), c.diff(),
                            *((a.cause, a.principal, a.host, a.client_id, a.text) if a else ("",) * 5)])
        case _:
            raise TypeError(f"no CSV rendering for {type(result).__name__}")
    return buf.getvalue()


# --- text --------------------------------------------------------------------------------------

def reassignment_json(result: StateResult | HealthResult) -> str:
    """The assignment as of the point in the JSON kafka-reassign-partitions --execute reads
    (ReassignPartitionsCommand.parsePartitionReassignmentData: version 1, topic/partition/replicas).
    A partition in the middle of a reassignment gets its original replicas (|replicas| - adding), the
    assignment a cancel would leave; the order is kept, since the first replica is the preferred leader."""
    parts = [{"topic": p.topic, "partition": p.partition,
              "replicas": [r for r in p.state.replicas if r not in p.state.adding_replicas]}
             for p in result.partitions]
    return json.dumps({"version": 1, "partitions": parts})


def diff_text(d: DiffResult) -> str:
    lines = [f"# from {d.a.describe()} to {d.b.describe()}"]
    if d.controller is not None:
        a, b = d.controller
        lines.append(f"controller: {a.leader_id} (epoch {a.epoch}) -> {b.leader_id} (epoch {b.epoch})")
    for i, was, now in d.brokers:
        lines.append(f"broker {i}: {_broker(was)} -> {_broker(now)}")
    lines.extend(p.line() for p in d.partitions)
    if len(lines) == 1:
        lines.append("no differences")
    return "\n".join(lines) + "\n"


def _broker(b: Any) -> str:
    if b is None:
        return "unregistered"
    flags = ["fenced" if b.fenced else "unfenced"] + (["in controlled shutdown"] if b.in_controlled_shutdown else [])
    return f"epoch {b.epoch} {' '.join(flags)}"


# who asked, on a timeline's line: a request or what the logs cannot tell; the controller's own changes and an
# archive without requests (every line alike) are said by explain
_SAID_IN_TIMELINE = ("request", "ambiguous", "unattributed")


def timeline_text(t: TimelineResult) -> str:
    lines = [f"# {t.topic}-{t.partition} {t.point.describe()}"]
    for c in t.changes:
        kinds = ",".join(c.changes) or "-"
        lines.append(f"seq {c.seq}\toffset {c.source_offset}\t{show(c.event_time_ms)}\tcontroller {c.controller_id}"
                     f"/{c.controller_epoch}\t{kinds}\telection {c.election}\t{c.diff()}"
                     + (f"\t{c.asked.text}" if c.asked is not None and c.asked.cause in _SAID_IN_TIMELINE else ""))
    return "\n".join(lines) + "\n"


def explain_text(e: Explanation) -> str:
    c = e.change
    lines = [
        f"{c.topic}-{c.partition} at seq {c.seq} (offset {c.source_offset}, {show(c.event_time_ms)}, event {c.event_id})",
        f"  decided by:        controller {c.controller_id}, epoch {c.controller_epoch}",
        *([f"  read from:         {c.source_file} ({c.source_kind}"
           + (f", node {c.source_node})" if c.source_node >= 0 else ")")] if c.source_file else []),
        f"  changes:           {', '.join(c.changes) or 'none (partition epoch only)'}",
        f"  change:            {c.diff()}",
        f"  election:          {c.election}",
        *([f"  who asked:         {c.asked.text}"] if c.asked is not None else []),
        f"  previous leader:   {e.previous_leader if e.previous_leader is not None else '-'}",
        *([f"  previous leader's broker: {e.previous_leader_broker}"] if e.previous_leader_broker else []),
        f"  previous ISR:      {list(e.previous_isr) if e.previous_isr is not None else '-'}",
        f"  new leader:        {e.new_leader if e.new_leader is not None else '-'}"
        + ("" if e.new_leader_in_previous_isr is None else
           ("  (was in the previous ISR)" if e.new_leader_in_previous_isr else "  (was NOT in the previous ISR)")),
        f"  reassignment:      {e.reassignment_phase}",
        f"  min.insync.replicas={e.min_insync_replicas} ({e.config_source['min.insync.replicas']}), "
        f"unclean.leader.election.enable={e.unclean_leader_election_enable} "
        f"({e.config_source['unclean.leader.election.enable']}) as of this change",
    ]
    lines.append(f"  chain:             {e.point.verified()}")
    lines += [f"  WARNING:           {g.describe()}" for g in e.point.gaps]
    lines += [f"  WARNING:           the state before this change may be incomplete, {u.describe()}"
              for u in e.point.uncertain]
    if c.bootstrap:
        lines.append("  bootstrap event: describes state read from a snapshot, not a transition")
    if c.reason:
        lines.append(f"  reason:            {c.reason}")
    return "\n".join(lines) + "\n"


# --- rich --------------------------------------------------------------------------------------

def state_table(result: StateResult | HealthResult) -> Table:
    title = (f"{result.kind} partitions " if isinstance(result, HealthResult) else "partitions ") + result.point.describe()
    table = Table(title=title)
    for col in ("topic", "partition", "leader", "replicas", "isr", "adding", "removing", "elr",
                "leader epoch", "partition epoch", "since seq"):
        table.add_column(col, justify="right" if col not in ("topic",) else "left")
    for r in result.partitions:
        s = r.state
        table.add_row(r.topic, str(r.partition), str(s.leader) if s.leader >= 0 else "none", _ids(s.replicas),
                      _ids(s.isr), _ids(s.adding_replicas), _ids(s.removing_replicas), _ids(s.elr),
                      str(s.leader_epoch), str(s.partition_epoch), str(r.since_seq) if hasattr(r, "since_seq") else "")
    return table


def _who(c: Change) -> str:
    """Who asked, in a table's cell: the principal of a request, else the cause."""
    a = c.asked
    return "" if a is None else (a.principal or a.cause)


def timeline_table(t: TimelineResult) -> Table:
    table = Table(title=f"{t.topic}-{t.partition} {t.point.describe()}")
    # a column of who asked when the history tells some of it (an archive that keeps requests)
    who = any(c.asked is not None and c.asked.cause in _SAID_IN_TIMELINE for c in t.changes)
    for col in ("seq", "offset", "time", "controller/epoch", "changes", "election", "before -> after",
                *(("who asked",) if who else ())):
        table.add_column(col)
    for c in t.changes:
        table.add_row(str(c.seq), str(c.source_offset), show(c.event_time_ms), f"{c.controller_id}/{c.controller_epoch}",
                      ",".join(c.changes), c.election, c.diff(), *((_who(c),) if who else ()))
    return table
