"""A request log line as a `ClientRequest` event of the archive (schemas/requests/kept.py reads it back).

An event's identity (schemas/event_ids.py) is its node, its log, its time and its place among that log's lines of
the same millisecond (`offset`, `index`): not its file or line number, which change when Kafka rolls the log, so
importing the logs again after a roll finds the same events.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from schemas.event_ids import event_id
from schemas.events import CaptureGap, ClientRequest, ControllerEvent, SourceKind, SourcePosition
from schemas.requests.kept import SAME, body_json, resource_text
from schemas.requests.record import RequestLine
from services.requests.reader import Gap


def to_event(cluster_id: str, node_id: int, r: RequestLine, place: int, capture_time_ms: int) -> ControllerEvent:
    """The event of record `r` read on node `node_id`; `place`: its index among its log's lines of its millisecond."""
    source = SourcePosition(SourceKind.REQUEST_LOG, r.time_ms, place, node_id, None, Path(r.file).name, r.line)
    payload = ClientRequest(**{f: getattr(r, f) for f in SAME},
                            resources=tuple(resource_text(x) for x in r.resources),
                            body=None if r.body is None else body_json(r.body))
    return ControllerEvent(event_id(cluster_id, source), cluster_id, 0, source, r.time_ms, capture_time_ms, -1, -1,
                           payload)


def request_events(cluster_id: str, lines: Iterable[RequestLine], node_of: Mapping[Path, int],
                   known: set[str] = frozenset(),  # type: ignore[assignment]
                   clock: Any = time.time) -> Iterator[ControllerEvent]:
    """The events of the records in their merged order (files.read_logs), each with the node of its file's directory
    (`node_of`), less those whose ids are in `known` (already archived)."""
    now = int(clock() * 1000)
    # (node, log, ms) -> its lines so far: one entry per kept line at most (admin requests, not Produce or Fetch);
    # a log whose clock stepped back meets a millisecond again and counts on
    seen: dict[tuple[int, str, int], int] = {}
    for r in lines:
        node = node_of[Path(r.file).parent]
        key = (node, r.log, r.time_ms)
        place = seen.get(key, 0)
        seen[key] = place + 1
        e = to_event(cluster_id, node, r, place, now)
        if e.event_id not in known:
            yield e


def gap_events(cluster_id: str, gaps: Iterable[Gap], node_of: Mapping[Path, int],
               known: set[str] = frozenset(),  # type: ignore[assignment]
               clock: Any = time.time) -> Iterator[ControllerEvent]:
    """Each stretch of a log the reader could not read (reader.Gap: one file, one reason) as a CaptureGap of source
    REQUEST_LOG: a gap of attribution, kept in the chain so that `who` from the archive says who asked may be in it.
    It is not a stretch of the controller's state nobody read (replay/gaps.py, the image and the checks pass it
    over). Its place: its node and log, the time of the last line read before it (`offset`; -1: none) and a
    negative `index`, its place among that log's gaps after that line, so its id is none of a line's and the same
    when the logs are imported again; less those whose ids are in `known`."""
    now = int(clock() * 1000)
    seen: dict[tuple[int, str, int], int] = {}
    for g in gaps:
        node = node_of[Path(g.file).parent]
        name = Path(g.file).name
        key = (node, name[:name.index(".log") + 4] if ".log" in name else name, g.after_ms)
        place = seen.get(key, 0)
        seen[key] = place + 1
        source = SourcePosition(SourceKind.REQUEST_LOG, g.after_ms, -1 - place, node, None, name, g.first_line)
        lines = f"line {g.first_line}" if g.count == 1 else f"{g.count} lines, {g.first_line} to {g.last_line}"
        payload = CaptureGap(g.first_line, g.last_line, f"{name}: {lines} not read: {g.reason}")
        e = ControllerEvent(event_id(cluster_id, source), cluster_id, 0, source, max(g.after_ms, 0), now, -1, -1,
                            payload)
        if e.event_id not in known:
            yield e
