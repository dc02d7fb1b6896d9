"""`ctrlaudit who`: who asked for each controller change of an archive, from the nodes' request and authorizer logs
given, or else from the requests the archive keeps (`ctrlaudit import requests`); replay/attribution.py
says how a change is matched, and what it answers when it cannot be."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ctrlaudit.commands.output import FORCE, JSON_OUT, TIME_FORMAT, Output, TimeFormat, refuse_outputs, use_time_format
from ctrlaudit.errors import UsageError, user_errors
from schemas import times
from schemas.archive.listing import clusters, iter_events, list_files
from schemas.events import CaptureGap, ClientRequest, ControllerEvent, SourceKind
from replay.attribution import (
    AMBIGUOUS, REQUEST, UNATTRIBUTED, WINDOW_MS, Attribution, attribute, denied, requested_by,
)
from services.requests.clocks import disagreements
from schemas.requests.kept import line_of
from services.requests.files import cluster_of, node_ids, read_logs
from services.requests.reader import BadRequestLogs, Reading
from schemas.requests.record import RequestLine


def _what(e: ControllerEvent) -> str:
    p = e.payload
    kind = type(p).__name__
    for field in ("kind", "changes"):
        v = getattr(p, field, None)
        if v:
            kind += " " + (v.value if hasattr(v, "value") else ",".join(c.value for c in v))
            break
    where = getattr(p, "topic", None) or getattr(p, "resource_name", None) or getattr(p, "feature", None) or (
        "(default)" if hasattr(p, "resource_name") else "")
    part = getattr(p, "partition", None)
    name = getattr(p, "name", None)
    return f"{kind} {where}{'-' + str(part) if part is not None else ''}{' ' + name if name else ''}".rstrip()


def _asked(r: RequestLine, decisions: tuple[RequestLine, ...], node: int | None) -> str:
    host = r.host or next((d.host for d in decisions if d.principal == r.principal and d.host), None)
    return (requested_by(r.principal, host, r.client_id, r.software_name, r.software_version, r.time_ms, node, r.api,
                         r.listener) + f" ({r.file}:{r.line})")


def _line(a: Attribution, e: ControllerEvent, node_of: dict[int, int]) -> str:
    head = f"seq {a.seq} {times.show(a.event_time_ms)} {_what(e)}: "
    if a.cause == REQUEST and a.requests:
        return head + _asked(a.requests[0][0], a.decisions, node_of.get(id(a.requests[0][0])))
    return head + f"{a.cause}: {a.why}"


def _record(a: Attribution) -> dict[str, Any]:
    def line(r: RequestLine) -> dict[str, Any]:
        return {"file": r.file, "line": r.line, "time": times.show(r.time_ms), "principal": r.principal,
                "host": r.host, "client_id": r.client_id, "api": r.api, "listener": r.listener,
                "software": r.software_name, "software_version": r.software_version, "forwarded": r.forwarded,
                "outcome": r.outcome}
    return {"seq": a.seq, "time": times.show(a.event_time_ms), "cause": a.cause, "why": a.why,
            "requests": [[line(r) for r in g] for g in a.requests], "decisions": [line(d) for d in a.decisions]}


def cluster_directory(given: Path) -> Path:
    """The one cluster's directory `given` names: that directory, or an archive root holding a single cluster
    (what `import requests --out` and `capture` write to); a file or a root of several clusters is refused."""
    if given.is_file():
        raise UsageError(f"{given}: a file; give its cluster's directory ({given.parent})")
    if not given.is_dir():
        raise UsageError(f"{given}: no such directory")
    if list_files(given):
        return given
    held = clusters(given)
    if len(held) == 1:
        return given / held[0]
    if held:
        raise UsageError(f"{given}: holds {len(held)} clusters ({', '.join(held)}): give one's directory")
    raise UsageError(f"{given}: no events")


def register(app: typer.Typer) -> None:
    @app.command("who")
    @user_errors
    def who(
        archive: Path = typer.Argument(..., help="One cluster's archive directory, or an archive root holding one "
                                                 "cluster (verified whole before it is read)."),
        logs: list[Path] = typer.Option([], "--logs", help="A broker's or controller's log directory (its "
                                        "kafka-request.log and kafka-authorizer.log, rotated ones too, and the "
                                        "server.log that names its cluster); repeatable. Default: the requests the "
                                        "archive keeps (ctrlaudit import requests)."),
        principal: str | None = typer.Option(None, "--principal", help="Only what this principal changed or "
                                                                       "tried (User:alice)."),
        from_time: str | None = typer.Option(None, "--from", help="Window start: ISO-8601 or epoch millis."),
        to_time: str | None = typer.Option(None, "--to", help="Window end: ISO-8601 or epoch millis."),
        clock_skew: int = typer.Option(0, "--clock-skew", min=0, help="How far the nodes' clocks may disagree, ms: "
                                                                      "widens each change's window both ways."),
        window: int = typer.Option(WINDOW_MS, "--window", min=1, help="How long before a change its request may "
                                                                       "have been received, ms."),
        json_path: Path | None = JSON_OUT, force: bool = FORCE, time_format: TimeFormat | None = TIME_FORMAT,
    ) -> None:
        """Who asked for each controller change: the request (principal, host, client, when, which node), the
        controller's own doing, or what the logs cannot tell; and the requests the authorizer denied."""
        use_time_format(time_format)
        refuse_outputs({"--json": json_path}, force=force, inputs=[archive, *logs])
        lo = times.parse_time(from_time) if from_time else None
        hi = times.parse_time(to_time) if to_time else None
        if lo is not None and hi is not None and hi < lo:
            raise UsageError(f"--to {to_time} is before --from {from_time}")
        archive = cluster_directory(archive)
        events = list(iter_events(archive))
        if not events:
            raise UsageError(f"{archive}: no events")
        reading = Reading()
        if logs:
            theirs = cluster_of(logs)
            if theirs is not None and theirs != events[0].cluster_id:
                raise UsageError(f"the logs are of cluster {theirs}, the archive of {events[0].cluster_id}")
            lines = list(read_logs(logs, reading))
            try:
                dirs = node_ids(logs)
            except BadRequestLogs:  # a directory no server.log names: its lines' node is not said
                dirs = {}
            node_of = {id(r): dirs[Path(r.file).parent] for r in lines if Path(r.file).parent in dirs}
        else:
            kept = [(line_of(e), e.source.node_id) for e in events if isinstance(e.payload, ClientRequest)]
            lines = [r for r, _ in kept]
            node_of = {id(r): n for r, n in kept}
            if not lines:
                raise UsageError(f"{archive}: keeps no requests (ctrlaudit import requests LOGDIR... --out ARCHIVE "
                                 "adds them) and no --logs given")
            reading.kept = len(lines)
        by_seq = {e.seq: e for e in events}
        # the lines not read, as the reader found them or as the archive keeps them: gaps of attribution
        unread = [str(g) for g in reading.gaps.values()] if logs else [
            e.payload.reason for e in events
            if isinstance(e.payload, CaptureGap) and e.source.kind is SourceKind.REQUEST_LOG]
        got = [a for a in attribute(events, lines, window, clock_skew, unread=unread)
               if (lo is None or a.event_time_ms >= lo) and (hi is None or a.event_time_ms <= hi)]
        if principal is not None:
            got = [a for a in got if any(r.principal == principal for g in a.requests for r in g)
                   or any(d.principal == principal for d in a.decisions)]
        refused = [d for d in denied(lines) if (principal is None or d.principal == principal)
                   and (lo is None or d.time_ms >= lo) and (hi is None or d.time_ms <= hi)]
        out = Output(json_path)
        for a in got:
            out.say(_line(a, by_seq[a.seq], node_of))
        for d in refused:
            out.say(f"denied: {d.principal}{' from ' + d.host if d.host else ''} {d.operation} on "
                    f"{', '.join(f'{r.type}:{r.name}' for r in d.resources)} ({d.api}) at {times.show(d.time_ms)}")
        counts = {c: sum(1 for a in got if a.cause == c) for c in (REQUEST, AMBIGUOUS, UNATTRIBUTED)}
        out.say(f"{len(got)} changes: {counts[REQUEST]} requested, {len(got) - sum(counts.values())} the "
                f"controller's own or the cluster's start, {counts[AMBIGUOUS]} ambiguous, {counts[UNATTRIBUTED]} "
                f"unattributed; {len(refused)} denied; {reading.kept} request lines read, "
                + (f"{reading.not_read} not read" if logs else f"{len(unread)} stretch(es) of the logs not read"))
        for u in unread:
            out.say(f"not read: {u}")
        clocks = [str(x) for x in disagreements(lines)]
        for c in clocks:
            out.say(f"clocks: {c}")
        out.json({"archive": str(archive), "cluster_id": events[0].cluster_id, "window_ms": window,
                  "clock_skew_ms": clock_skew, "changes": [_record(a) for a in got],
                  "denied": [{"principal": d.principal, "host": d.host, "operation": d.operation, "api": d.api,
                              "time": times.show(d.time_ms), "file": d.file, "line": d.line} for d in refused],
                  "not_read": unread,
                  "clocks": clocks})
