"""`ctrlaudit state | diff | timeline | explain`: questions to the store about the past."""
from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from ctrlaudit.commands.options import CLUSTER, PARTITION, STORE, TOPIC
from ctrlaudit.commands.output import (FORCE, JSON_OUT, TIME_FORMAT, Output, TimeFormat, print_table, refuse_outputs,
                                       store_files, use_time_format)
from ctrlaudit.errors import UsageError, user_errors
from replay import changes, formats, queries, topics
from replay.store import Point, Store

if TYPE_CHECKING:
    from rich.table import Table

    from replay.changes import Explanation, TimelineResult
    from replay.queries import DiffResult, HealthResult, StateResult, Topics

    Result = StateResult | HealthResult | DiffResult | TimelineResult | Explanation


class StateFormat(str, Enum):
    describe = "describe"
    json = "json"
    table = "table"
    csv = "csv"


class TextFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    csv = "csv"


SEQ = typer.Option(None, "--seq", help="As of this event: its position in the hash chain.")
OFFSET = typer.Option(None, "--offset", help="As of this metadata log offset (the last event at or before it).")
TIME = typer.Option(None, "--time", help="As of this time: ISO-8601 (UTC when no zone is given) or epoch millis; "
                                         "epoch seconds are read as such, with a note.")
FORMAT_HELP = "Output: {}."


def _point(s: Store, cluster: str | None, seq: int | None, offset: int | None, time: str | None,
           side: str = "") -> Point:
    given = [n for n, v in (("seq", seq), ("offset", offset), ("time", time)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"give one of --{side}seq, --{side}offset, --{side}time (got {', '.join(given)})")
    return s.point(seq=seq, offset=offset, time=time, cluster_id=cluster)


def _emit(result: Result, fmt: Enum, json_path: Path | None, text: Callable[[], str],
          table: Callable[[], Table] | None = None) -> None:
    """One result out: as --json asks (standard output or a file), then as --format asks; `text()` and
    `table()` make the text and the rich table only when they are asked for."""
    if Output(json_path).json(lambda: formats.to_json(result)):
        return
    if fmt.value == "json":
        print(formats.to_json(result))
    elif fmt.value == "csv":  # never an explanation: explain refuses --format csv
        print(formats.to_csv(cast("StateResult | HealthResult | DiffResult | TimelineResult", result)), end="")
    elif fmt.value == "table" and table is not None:
        print_table(table())
    else:
        print(text(), end="")


def _open(store: Path) -> Store:
    if not store.exists():
        raise UsageError(f"{store}: no such store; create it with `ctrlaudit load <archive>`")
    return Store(store, read_only=True)


# kafka-topics --describe's partition filters, under Kafka's names: (flag, alias, queries function, help)
_FILTERS = {
    "under_replicated": ("--under-replicated-partitions", "--under-replicated",
                         "Only partitions whose ISR is smaller than the replication factor."),
    "under_min_isr": ("--under-min-isr-partitions", "--under-min-isr",
                      "Only partitions without a leader or with fewer in-sync replicas than min.insync.replicas."),
    "at_min_isr": ("--at-min-isr-partitions", "--at-min-isr",
                   "Only partitions whose ISR size equals min.insync.replicas."),
    "unavailable": ("--unavailable-partitions", None,
                    "Only partitions without a leader or whose leader is not a live (registered, unfenced) broker."),
    "offline": ("--offline", None, "Only partitions without a leader (leader -1), as the report counts them."),
}


def _flag(name: str) -> Any:  # typer.Option's, which is Any: the default of a bool parameter
    flag, alias, text = _FILTERS[name]
    return typer.Option(False, *([flag, alias] if alias else [flag]), help=text)


def register(app: typer.Typer) -> None:
    @app.command("state")
    @user_errors
    def state(
        store: Path = STORE, cluster: str | None = CLUSTER,
        topic: str | None = typer.Option(None, "--topic", help="A topic, or a regular expression over whole names "
                                                               "(as kafka-topics: 'orders.*', 'a,b')."),
        partition: int | None = PARTITION, seq: int | None = SEQ, offset: int | None = OFFSET, time: str | None = TIME,
        under_replicated: bool = _flag("under_replicated"), under_min_isr: bool = _flag("under_min_isr"),
        at_min_isr: bool = _flag("at_min_isr"), unavailable: bool = _flag("unavailable"),
        offline: bool = _flag("offline"),
        with_overrides: bool = typer.Option(False, "--topics-with-overrides",
                                            help="Only the topics whose configs differ from the defaults, "
                                                 "one line each."),
        exclude_internal: bool = typer.Option(False, "--exclude-internal",
                                              help="Leave out internal topics (__consumer_offsets, "
                                                   "__transaction_state, __share_group_state)."),
        fmt: StateFormat = typer.Option(StateFormat.describe, "--format",
                                        help=FORMAT_HELP.format("describe (kafka-topics --describe), json, table, "
                                                                "csv")),
        reassignment_json: bool = typer.Option(
            False, "--reassignment-json",
            help="Print the replica assignment as of the point as kafka-reassign-partitions --execute takes it "
                 "(a reassignment in flight then: its original replicas), to put a cluster back to that layout."),
        kafka_version: str | None = typer.Option(
            None, "--kafka-version",
            help="The release whose kafka-topics --describe layout to print (e.g. 3.5): before 3.7 it prints no "
                 "Elr / LastKnownElr fields. Default: 3.7+'s layout."),
        json_path: Path | None = JSON_OUT, time_format: TimeFormat | None = TIME_FORMAT, force: bool = FORCE,
    ) -> None:
        """The controller's view as of a point (default: the newest event), as kafka-topics --describe."""
        try:
            tool = formats.tool_release(kafka_version) if kafka_version is not None else formats.ELR_TOOLS
        except ValueError as exc:
            raise UsageError(f"--kafka-version: {exc}") from None
        use_time_format(time_format)
        refuse_outputs({"--json": json_path}, force=force, inputs=store_files(store))
        if partition is not None and topic is None:
            raise UsageError("--partition needs --topic")
        picked = [n for n, on in (("under_replicated", under_replicated), ("under_min_isr", under_min_isr),
                                  ("at_min_isr", at_min_isr), ("unavailable", unavailable), ("offline", offline))
                  if on]
        if len(picked) + with_overrides > 1:
            flags = [_FILTERS[n][0] for n in picked] + (["--topics-with-overrides"] if with_overrides else [])
            raise UsageError(f"give at most one of the filters (got {', '.join(flags)}), as kafka-topics")
        with _open(store) as s:
            point = _point(s, cluster, seq, offset, time)
            zookeeper_mode = queries.zookeeper_mode(s, point)
            names: Topics = None
            if topic is not None or exclude_internal:
                listed = (topics.resolve(s, point, topic, exclude_internal) if topic is not None else
                          [n for n in topics.names_as_of(s, point) if n not in topics.INTERNAL])
                # (without a topic there is no --partition: refused above)
                names = listed[0] if partition is not None and len(listed) == 1 else listed
            result: StateResult | HealthResult
            if picked:
                health: Callable[[Store, Point, Topics], HealthResult] = getattr(queries, picked[0])
                result = health(s, point, names)
                if partition is not None:
                    result = type(result)(result.point, result.kind,
                                          tuple(p for p in result.partitions if p.partition == partition), result.rule)
            else:
                result = queries.state_as_of(s, point, names, partition)
                if partition is not None and not result.partitions:
                    assert topic is not None  # --partition needs --topic: refused above
                    raise UsageError(topics.missing_partition(s, point, names if isinstance(names, str) else topic,
                                                              partition))
        if reassignment_json:  # the plan on standard output, unless --json - takes it
            if not Output(json_path).json(lambda: formats.to_json(result)):
                print(formats.reassignment_json(result))
            return

        def describe() -> str:
            body = ("".join(formats.describe_partition(r, zookeeper_mode, tool) + "\n" for r in result.partitions)
                    if isinstance(result, queries.HealthResult)
                    else formats.describe(result, topics_with_overrides=with_overrides, tool=tool))
            return formats.as_of_line(result.point) + "\n" + body

        _emit(result, fmt, json_path, describe, lambda: formats.state_table(result))

    @app.command("diff")
    @user_errors
    def diff(
        store: Path = STORE, cluster: str | None = CLUSTER,
        topic: str | None = typer.Option(None, "--topic", help="Only these topics: a name or a regular expression."),
        from_seq: int | None = typer.Option(None, "--from-seq", help="Start: as of this event (chain position)."),
        from_offset: int | None = typer.Option(None, "--from-offset", help="Start: as of this metadata log offset."),
        from_time: str | None = typer.Option(None, "--from-time",
                                             help="Start: as of this time (ISO-8601 or epoch millis)."),
        to_seq: int | None = typer.Option(None, "--to-seq", help="End: as of this event (default: the newest)."),
        to_offset: int | None = typer.Option(None, "--to-offset", help="End: as of this metadata log offset."),
        to_time: str | None = typer.Option(None, "--to-time", help="End: as of this time (default: the newest event)."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help=FORMAT_HELP.format("text, json, csv")),
        json_path: Path | None = JSON_OUT, time_format: TimeFormat | None = TIME_FORMAT, force: bool = FORCE,
    ) -> None:
        """What changed between two points: partitions, brokers, controller."""
        use_time_format(time_format)
        refuse_outputs({"--json": json_path}, force=force, inputs=store_files(store))
        if fmt is TextFormat.table:
            raise UsageError("diff prints text, json or csv (--format table is for state and timeline)")
        if from_seq is None and from_offset is None and from_time is None:
            raise UsageError("diff needs a start: --from-seq, --from-offset or --from-time")
        with _open(store) as s:
            a = _point(s, cluster, from_seq, from_offset, from_time, "from-")
            b = _point(s, cluster, to_seq, to_offset, to_time, "to-")
            result = queries.diff(s, a, b)
            if topic is not None:
                pattern = topics.kafka_regex(topic)
                known = set(topics.names_as_of(s, a)) | set(topics.names_as_of(s, b))
                if not any(pattern.fullmatch(n) for n in known):
                    topics.resolve(s, b, topic)  # raises, naming the closest topics
                result = type(result)(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                                         "partitions": tuple(p for p in result.partitions
                                                             if pattern.fullmatch(p.topic))})
        _emit(result, fmt, json_path, lambda: formats.diff_text(result))

    @app.command("timeline")
    @user_errors
    def timeline(
        store: Path = STORE, cluster: str | None = CLUSTER,
        topic: str = typer.Option(..., "--topic", help="The partition's topic (its exact name)."),
        partition: int = typer.Option(..., "--partition", help="The partition number."),
        to_offset: int | None = typer.Option(None, "--to-offset", help="Up to this metadata log offset."),
        to_time: str | None = typer.Option(None, "--to-time", help="Up to this time (ISO-8601 or epoch millis)."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="Only the newest N changes."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help=FORMAT_HELP.format("text, json, table, csv")),
        json_path: Path | None = JSON_OUT, time_format: TimeFormat | None = TIME_FORMAT, force: bool = FORCE,
    ) -> None:
        """Every change of one partition, oldest first, with who decided and why."""
        use_time_format(time_format)
        refuse_outputs({"--json": json_path}, force=force, inputs=store_files(store))
        with _open(store) as s:
            point = _point(s, cluster, None, to_offset, to_time)
            result = changes.timeline(s, point, topic, partition)
            if not result.changes:
                raise UsageError(topics.missing_partition(s, point, topic, partition))
        if limit is not None:
            result = type(result)(result.point, result.topic, result.partition, result.changes[-limit:])
        _emit(result, fmt, json_path, lambda: formats.timeline_text(result), lambda: formats.timeline_table(result))

    @app.command("explain")
    @user_errors
    def explain(
        store: Path = STORE, cluster: str | None = CLUSTER,
        seq: int | None = typer.Option(None, "--seq", help="The partition change that is this event (chain position)."),
        event_id: str | None = typer.Option(None, "--event-id", help="The partition change with this event id."),
        offset: int | None = typer.Option(None, "--offset", help="The partition change at this metadata offset."),
        topic: str | None = TOPIC, partition: int | None = PARTITION,
        last_leader_change: bool = typer.Option(False, "--last-leader-change",
                                                help="With --topic/--partition: the newest leader move (at or "
                                                     "before --time)."),
        time: str | None = typer.Option(None, "--time", help="With --last-leader-change: the last move at or before "
                                                             "this time (ISO-8601 or epoch millis)."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help=FORMAT_HELP.format("text, json")),
        json_path: Path | None = JSON_OUT, time_format: TimeFormat | None = TIME_FORMAT, force: bool = FORCE,
    ) -> None:
        """Why one partition change happened: election type, previous ISR, controller and epoch."""
        use_time_format(time_format)
        refuse_outputs({"--json": json_path}, force=force, inputs=store_files(store))
        if fmt in (TextFormat.csv, TextFormat.table):
            raise UsageError("explain answers about one change: --format text or json")
        if time is not None and not last_leader_change:
            raise UsageError("--time is for --last-leader-change (give --seq, --event-id or --offset otherwise)")
        with _open(store) as s:
            if last_leader_change:
                if topic is None or partition is None:
                    raise UsageError("--last-leader-change needs --topic and --partition")
                point = s.point(time=time, cluster_id=cluster)
                history = changes.timeline(s, point, topic, partition).changes
                if not history:
                    raise UsageError(topics.missing_partition(s, point, topic, partition))
                moves = [c for c in history if "LEADER" in c.changes]
                if not moves:
                    raise UsageError(f"the leader of {topic}-{partition} never moved {point.describe()}")
                seq = moves[-1].seq
            result = changes.explain(s, seq=seq, event_id=event_id, offset=offset, cluster_id=cluster)
        _emit(result, fmt, json_path, lambda: formats.explain_text(result))
