"""Which files of the given nodes' log directories are authorizer and request logs, in which order, and their records
merged in time order across nodes.

Kafka's configs write ``kafka-authorizer.log`` and ``kafka-request.log`` in the node's log directory and roll them
hourly (``kafka-request.log.2026-11-20-03``; an operator's size rolling numbers them ``.1``, ``.2``; either may be
``.gz``). A log's files are read oldest first, the live file last; the logs of all nodes are merged by their lines'
times (each node's own clock: services/requests/clocks.py holds the nodes' clocks to each other).
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from services.brokerlogs.layout import KAFKA, Layout
from services.brokerlogs.offline import cluster_id_of_logs
from services.requests.reader import UTC, BadRequestLogs, Reading, read_file
from services.requests.record import RequestLine

LOG_NAMES = ("kafka-authorizer.log", "kafka-request.log")


def log_files(paths: Sequence[Path]) -> list[list[Path]]:
    """The logs to read, one list per log (a directory's ``kafka-request.log`` with its rotated files, oldest
    first). Directories are searched (and their ``logs/``) for LOG_NAMES; files are taken as they are."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            dirs = [p] + ([p / "logs"] if (p / "logs").is_dir() else [])
            found += [f for d in dirs for f in sorted(d.iterdir()) if f.is_file() and _base(f) in LOG_NAMES]
        elif p.is_file():
            found.append(p)
        else:
            raise BadRequestLogs(f"{p}: no such file or directory")
    if not found:
        raise BadRequestLogs("no kafka-authorizer.log or kafka-request.log (or rotated ones) in " +
                             ", ".join(map(str, paths)))
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in dict.fromkeys(found):
        groups.setdefault((f.parent, _base(f)), []).append(f)
    return [sorted(fs, key=_age) for _, fs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]


def cluster_of(paths: Sequence[Path]) -> str | None:
    """The cluster id the nodes' ``server.log`` beside their request logs state (the request and authorizer logs
    name none); logs of two clusters are refused (BadImport, naming both), None when no server.log says it."""
    beside = sorted({f.parent / "server.log" for log in log_files(paths) for f in log})
    found = [f for f in beside if f.is_file()]
    return cluster_id_of_logs(found) if found else None


def _base(f: Path) -> str:
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    return next((b for b in LOG_NAMES if name == b or name.startswith(b + ".")), name)


def _age(f: Path) -> tuple[int, int, str]:
    """Oldest first: dated suffixes in date order (yyyy-MM-dd-HH sorts as text), numbered ones highest first, the
    live file last."""
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    suffix = name[len(_base(f)) + 1:]
    if not suffix:
        return (2, 0, "")
    if suffix.isdigit():
        return (1, -int(suffix), "")
    return (0, 0, suffix)


def read_log(files: Iterable[Path], reading: Reading, tz: ZoneInfo = UTC,
             layout: Layout = KAFKA) -> Iterator[RequestLine]:
    for f in files:
        yield from read_file(f, reading, tz, layout)


def read_logs(paths: Sequence[Path], reading: Reading, tz: ZoneInfo = UTC,
              layout: Layout = KAFKA) -> Iterator[RequestLine]:
    """Every log's records merged by time; records of the same millisecond keep their log's and file's order."""
    logs = log_files(paths)
    keyed = [((r.time_ms, i, r) for r in read_log(log, reading, tz, layout)) for i, log in enumerate(logs)]
    for _, _, record in heapq.merge(*keyed, key=lambda k: (k[0], k[1])):
        yield record
