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
from services.brokerlogs.lines import named_logs
from services.brokerlogs.offline import cluster_id_of_logs
from services.requests.reader import UTC, BadRequestLogs, Reading, read_file
from services.requests.record import RequestLine

LOG_NAMES = ("kafka-authorizer.log", "kafka-request.log")


def log_files(paths: Sequence[Path]) -> list[list[Path]]:
    """The logs to read, one list per log (a directory's ``kafka-request.log`` with its rotated files, oldest
    first): services.brokerlogs.lines.named_logs of the LOG_NAMES."""
    return named_logs(paths, LOG_NAMES, BadRequestLogs)


def cluster_of(paths: Sequence[Path]) -> str | None:
    """The cluster id the nodes' ``server.log`` beside their request logs state (the request and authorizer logs
    name none); logs of two clusters are refused (BadImport, naming both), None when no server.log says it."""
    beside = sorted({f.parent / "server.log" for log in log_files(paths) for f in log})
    found = [f for f in beside if f.is_file()]
    return cluster_id_of_logs(found) if found else None


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
