"""`ctrlaudit state | diff | timeline | explain`: questions to the store about the past."""
from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from ctrlaudit.commands.options import CLUSTER, PARTITION, STORE, TOPIC
from ctrlaudit.errors import UsageError, user_errors


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


def _point(s, cluster: str | None, seq: int | None, offset: int | None, time: str | None, side: str = ""):
    given = [n for n, v in (("seq", seq), ("offset", offset), ("time", time)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"give one of --{side}seq, --{side}offset, --{side}time (got {', '.join(given)})")
    return s.point(seq=seq, offset=offset, time=time, cluster_id=cluster)


def _open(store: Path):
    from replay.store import Store

    if not store.exists():
        raise UsageError(f"{store}: no such store; create it with `ctrlaudit load <archive>`")
    return Store(store, read_only=True)


def _topic_exists(result, topic: str | None, partition: int | None) -> None:
    if topic is not None and not result.partitions:
        what = f"{topic}-{partition}" if partition is not None else f"topic {topic!r}"
        raise UsageError(f"{what} does not exist {result.point.describe()}")


def register(app: typer.Typer) -> None:
    @app.command("state")
    @user_errors
    def state(
        store: Path = STORE, cluster: str = CLUSTER, topic: str = TOPIC, partition: int = PARTITION,
        seq: int = typer.Option(None, "--seq", help="As of this event (chain position)."),
        offset: int = typer.Option(None, "--offset", help="As of this metadata log offset."),
        time: str = typer.Option(None, "--time", help="As of this time: ISO-8601 or epoch millis."),
        under_replicated: bool = typer.Option(False, "--under-replicated-partitions", "--under-replicated"),
        under_min_isr: bool = typer.Option(False, "--under-min-isr-partitions", "--under-min-isr"),
        offline: bool = typer.Option(False, "--unavailable-partitions", "--offline"),
        fmt: StateFormat = typer.Option(StateFormat.describe, "--format", help="describe | json | table | csv"),
        reassignment_json: bool = typer.Option(
            False, "--reassignment-json",
            help="Print the replica assignment as of the point as kafka-reassign-partitions --execute takes it "
                 "(a reassignment in flight then: its original replicas), to put a cluster back to that layout."),
    ) -> None:
        """The controller's view as of a point (default: the newest event), as kafka-topics --describe."""
        from replay import formats, queries

        if partition is not None and topic is None:
            raise UsageError("--partition needs --topic")
        if sum((under_replicated, under_min_isr, offline)) > 1:
            raise UsageError("give at most one of --under-replicated, --under-min-isr, --offline")
        with _open(store) as s:
            point = _point(s, cluster, seq, offset, time)
            if under_replicated or under_min_isr or offline:
                pick = queries.under_replicated if under_replicated else (
                    queries.under_min_isr if under_min_isr else queries.offline)
                result = pick(s, point, topic)
                if partition is not None:
                    result = type(result)(result.point, result.kind,
                                          tuple(p for p in result.partitions if p.partition == partition), result.rule)
            else:
                result = queries.state_as_of(s, point, topic, partition)
                _topic_exists(result, topic, partition)
        if reassignment_json:
            print(formats.reassignment_json(result))
        elif fmt is StateFormat.json:
            print(formats.to_json(result))
        elif fmt is StateFormat.csv:
            print(formats.to_csv(result), end="")
        elif fmt is StateFormat.table:
            Console().print(formats.state_table(result))
        else:
            print(formats.as_of_line(result.point))
            if isinstance(result, queries.HealthResult):
                print("".join(formats.describe_partition(r) + "\n" for r in result.partitions), end="")
            else:
                print(formats.describe(result), end="")

    @app.command("diff")
    @user_errors
    def diff(
        store: Path = STORE, cluster: str = CLUSTER, topic: str = TOPIC,
        from_seq: int = typer.Option(None, "--from-seq"), from_offset: int = typer.Option(None, "--from-offset"),
        from_time: str = typer.Option(None, "--from-time"),
        to_seq: int = typer.Option(None, "--to-seq"), to_offset: int = typer.Option(None, "--to-offset"),
        to_time: str = typer.Option(None, "--to-time", help="Default: the newest event."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help="text | json | csv"),
    ) -> None:
        """What changed between two points: partitions, brokers, controller."""
        from replay import formats, queries

        if from_seq is None and from_offset is None and from_time is None:
            raise UsageError("diff needs a start: --from-seq, --from-offset or --from-time")
        with _open(store) as s:
            a = _point(s, cluster, from_seq, from_offset, from_time, "from-")
            b = _point(s, cluster, to_seq, to_offset, to_time, "to-")
            result = queries.diff(s, a, b)
        if topic is not None:
            result = type(result)(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                                     "partitions": tuple(p for p in result.partitions if p.topic == topic)})
        if fmt is TextFormat.csv:
            print(formats.to_csv(result), end="")
        else:
            print(formats.to_json(result) if fmt is TextFormat.json else formats.diff_text(result), end="\n"
                  if fmt is TextFormat.json else "")

    @app.command("timeline")
    @user_errors
    def timeline(
        store: Path = STORE, cluster: str = CLUSTER,
        topic: str = typer.Option(..., "--topic"), partition: int = typer.Option(..., "--partition"),
        to_offset: int = typer.Option(None, "--to-offset"), to_time: str = typer.Option(None, "--to-time"),
        limit: int = typer.Option(None, "--limit", min=1, help="Only the newest N changes."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help="text | json | table | csv"),
    ) -> None:
        """Every change of one partition, oldest first, with who decided and why."""
        from replay import changes, formats

        with _open(store) as s:
            point = _point(s, cluster, None, to_offset, to_time)
            result = changes.timeline(s, point, topic, partition)
        if not result.changes:
            raise UsageError(f"no changes of {topic}-{partition} {point.describe()}")
        if limit is not None:
            result = type(result)(result.point, result.topic, result.partition, result.changes[-limit:])
        if fmt is TextFormat.json:
            print(formats.to_json(result))
        elif fmt is TextFormat.csv:
            print(formats.to_csv(result), end="")
        elif fmt is TextFormat.table:
            Console(width=200).print(formats.timeline_table(result))
        else:
            print(formats.timeline_text(result), end="")

    @app.command("explain")
    @user_errors
    def explain(
        store: Path = STORE, cluster: str = CLUSTER,
        seq: int = typer.Option(None, "--seq"), event_id: str = typer.Option(None, "--event-id"),
        offset: int = typer.Option(None, "--offset", help="The partition change at this metadata offset."),
        topic: str = TOPIC, partition: int = PARTITION,
        last_leader_change: bool = typer.Option(False, "--last-leader-change",
                                                help="With --topic/--partition: the newest leader move."),
        fmt: TextFormat = typer.Option(TextFormat.text, "--format", help="text | json"),
    ) -> None:
        """Why one partition change happened: election type, previous ISR, controller and epoch."""
        from replay import changes, formats

        if fmt is TextFormat.csv:
            raise UsageError("explain answers about one change: --format text or json")

        with _open(store) as s:
            if last_leader_change:
                if topic is None or partition is None:
                    raise UsageError("--last-leader-change needs --topic and --partition")
                history = changes.timeline(s, s.point(cluster_id=cluster), topic, partition).changes
                moves = [c for c in history if "LEADER" in c.changes]
                if not moves:
                    raise UsageError(f"the leader of {topic}-{partition} never moved")
                seq = moves[-1].seq
            result = changes.explain(s, seq=seq, event_id=event_id, offset=offset, cluster_id=cluster)
        print(formats.to_json(result) if fmt is TextFormat.json else formats.explain_text(result), end="\n"
              if fmt is TextFormat.json else "")
