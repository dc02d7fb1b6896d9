"""The lines of Kafka's log4j files, in the layout Kafka ships (``[%d] %p %m (%c)%n``), merged across files.

A log line's time is the broker's local wall clock without a zone (log4j's ``%d``): the caller says which zone
(``tz``, UTC by default). Rotated files (``state-change.log.2024-10-01-12`` hourly as Kafka's configs roll them,
``.1``/``.2`` by size, either ``.gz``) are read oldest first, the live file last. A line that does not open with
the layout's ``[date] LEVEL`` is the continuation of the one before (a stack trace) and belongs to it.
"""
from __future__ import annotations

import gzip
import heapq
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from schemas.errors import ContractError

LOG_NAMES = ("state-change.log", "controller.log")
_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)[,.](\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) "
                   r"\(([^()\s]+)\)$")
_START = re.compile(r"^\[\d{4}-\d\d-\d\d")


class BadLogs(ContractError):
    """The given paths hold no Kafka state-change or controller log, or one that cannot be read."""


@dataclass(frozen=True, slots=True)
class LogLine:
    file: str  # the path as given, which names the broker's directory
    line: int  # 1-based line number in that file
    time_ms: int
    level: str
    message: str
    logger: str


def log_files(paths: Sequence[Path]) -> list[list[Path]]:
    """The logs to read, one list per log (a directory's ``state-change.log`` with its rotated files, oldest
    first). Directories are searched (not recursively beyond ``logs/``) for the two names; files are taken
    as they are."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            dirs = [p] + ([p / "logs"] if (p / "logs").is_dir() else [])
            found += [f for d in dirs for f in sorted(d.iterdir()) if f.is_file() and _base(f) in LOG_NAMES]
        elif p.is_file():
            found.append(p)
        else:
            raise BadLogs(f"{p}: no such file or directory")
    if not found:
        raise BadLogs("no state-change.log or controller.log (or rotated ones) in " + ", ".join(map(str, paths)))
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in dict.fromkeys(found):
        groups.setdefault((f.parent, _base(f)), []).append(f)
    return [sorted(fs, key=_age) for _, fs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]


def _base(f: Path) -> str:
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    return next((b for b in LOG_NAMES if name == b or name.startswith(b + ".")), name)


def _age(f: Path) -> tuple:
    """Sort key, oldest first: dated suffixes in date order, numbered ones highest first, the live file last."""
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    suffix = name[len(_base(f)) + 1:]
    if not suffix:
        return (2, 0, "")
    if suffix.isdigit():
        return (1, -int(suffix), "")
    return (0, 0, suffix)  # log4j's dated suffixes (yyyy-MM-dd-HH) sort as text


def read_log(files: Sequence[Path], tz: ZoneInfo, unparsed: list[str] | None = None) -> Iterator[LogLine]:
    """The lines of one log's files in order; lines in no known layout are counted in `unparsed` (their
    file and number), never guessed at."""
    for f in files:
        opener = gzip.open if f.name.endswith(".gz") else open
        try:
            with opener(f, "rt", encoding="utf-8", errors="replace") as fh:
                for n, text in enumerate(fh, 1):
                    text = text.rstrip("\r\n")
                    m = _LINE.match(text)
                    if m is None:
                        if unparsed is not None and _START.match(text):
                            unparsed.append(f"{f}:{n}")
                        continue  # a continuation (stack trace) or a blank line
                    try:
                        time_ms = _epoch_ms(m.group(1), m.group(2), tz)
                    except (ValueError, OverflowError):  # a time no clock writes (month 31): not a line of the layout
                        if unparsed is not None:
                            unparsed.append(f"{f}:{n}")
                        continue
                    yield LogLine(str(f), n, time_ms, m.group(3), m.group(4), m.group(5))
        except (OSError, EOFError) as exc:
            raise BadLogs(f"{f}: cannot be read: {exc}") from None


def _epoch_ms(stamp: str, millis: str, tz: ZoneInfo) -> int:
    t = datetime.strptime(stamp.replace("T", " "), "%Y-%m-%d %H:%M:%S").replace(tzinfo=tz)
    return int(t.timestamp()) * 1000 + int(millis)


def merged(logs: Iterable[Iterator[LogLine]]) -> Iterator[LogLine]:
    """All logs' lines in time order; lines of the same millisecond keep their log's and file's order."""
    keyed = [((line.time_ms, i, line) for line in log) for i, log in enumerate(logs)]
    for _, _, line in heapq.merge(*keyed, key=lambda k: (k[0], k[1])):
        yield line
