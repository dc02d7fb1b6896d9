"""Which files of the given nodes' log directories are authorizer and request logs, in which order, and their records
merged in time order across nodes.

Kafka's configs write ``kafka-authorizer.log`` and ``kafka-request.log`` in the node's log directory and roll them
hourly (``kafka-request.log.2026-11-20-03``; an operator's size rolling numbers them ``.1``, ``.2``; either may be
``.gz``). A log's files are read oldest first, the live file last; the logs of all nodes are merged by their lines'
times (each node's own clock: services/requests/clocks.py holds the nodes' clocks to each other).
"""
from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from services.brokerlogs.layout import KAFKA, Layout
from services.brokerlogs.lines import BadLogs, named_logs, text_lines
from services.brokerlogs.offline import cluster_id_of_logs
from services.requests.reader import UTC, BadRequestLogs, Reading, read_file
from schemas.requests.record import RequestLine

LOG_NAMES = ("kafka-authorizer.log", "kafka-request.log")


def log_files(paths: Sequence[Path]) -> list[list[Path]]:
    """The logs to read, one list per log (a directory's ``kafka-request.log`` with its rotated files, oldest
    first): services.brokerlogs.lines.named_logs of the LOG_NAMES."""
    return named_logs(paths, LOG_NAMES, BadRequestLogs)


def cluster_of(paths: Sequence[Path]) -> str | None:
    """The cluster id the nodes' ``server.log`` or ``controller.log`` beside their request logs state (the request
    and authorizer logs name none); logs of two clusters are refused (BadImport, naming both), None when none says
    it."""
    beside = sorted({f.parent / name for log in log_files(paths) for f in log for name in ("server.log",
                                                                                          "controller.log")})
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


# KafkaConfig's dump at a node's start (server.log): `node.id = 1` (KRaft; -1 in ZooKeeper mode before 3.x set it),
# `broker.id = 1` (ZooKeeper mode)
_NODE_ID = re.compile(r"^\s*(node\.id|broker\.id) = (-?\d+)\s*$")


def node_ids(paths: Sequence[Path], given: Mapping[Path, int] | None = None) -> dict[Path, int]:
    """The node id of each directory holding request or authorizer logs: `given` (a directory, or a log file in it,
    -> id), else the id the KafkaConfig dump in its server.log states (node.id, else broker.id; the newest start
    read first). BadRequestLogs for a directory whose id nothing states: a request log line names no node."""
    given = {(p if p.is_dir() else p.parent).resolve(): n for p, n in (given or {}).items()}
    found: dict[Path, int] = {}
    for d in sorted({f.parent for log in log_files(paths) for f in log}):
        n = given.get(d.resolve())
        if n is None:
            n = stated_node_id(d)
        if n is None:
            raise BadRequestLogs(f"{d}: no node id: no server.log there states node.id or broker.id (KafkaConfig "
                                 f"values at a start); say it with --node-id {d}=ID")
        found[d] = n
    return found


def stated_node_id(d: Path) -> int | None:
    """The node id the newest KafkaConfig dump in `d`'s server.log states (node.id, else broker.id), or None."""
    for f in reversed(named_logs([d], ("server.log",), BadRequestLogs)[0] if (d / "server.log").is_file() else []):
        ids: dict[str, int] = {}
        try:
            for text in text_lines(f):
                if " = " in text and ".id = " in text:
                    m = _NODE_ID.match(text)
                    if m:
                        ids.setdefault(m.group(1), int(m.group(2)))
                        if len(ids) == 2:
                            break
        except (BadLogs, EOFError, OSError) as exc:
            raise BadRequestLogs(f"{f}: cannot be read for its node id: {exc}") from None
        for key in ("node.id", "broker.id"):
            if ids.get(key, -1) >= 0:
                return ids[key]
    return None
