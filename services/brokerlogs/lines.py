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
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

from schemas.errors import ContractError
from services.brokerlogs.layout import KAFKA, Layout

# server.log holds the leaders' own ISR updates (kafka.cluster.Partition): from Kafka 3.3 the only line of them
# in a ZooKeeper-mode cluster at the shipped log levels
LOG_NAMES = ("state-change.log", "controller.log", "server.log")


class BadLogs(ContractError):
    """The given paths hold no Kafka state-change, controller or server log, or one that cannot be read."""


@dataclass(frozen=True, slots=True)
class LogLine:
    file: str  # the path as given, which names the broker's directory
    line: int  # 1-based line number in that file
    time_ms: int
    level: str
    message: str
    logger: str


def log_files(paths: Sequence[Path], layout: Layout = KAFKA) -> list[list[Path]]:
    """The logs to read, one list per log (a directory's ``state-change.log`` with its rotated files, oldest
    first): `named_logs` of the LOG_NAMES."""
    return [_in_order(fs, layout) for fs in named_logs(paths, LOG_NAMES, BadLogs)]


def named_logs(paths: Sequence[Path], names: Sequence[str], refuse: Callable[[str], Exception]) -> list[list[Path]]:
    """The files of each log named one of `names` (rotated ones too, `base_name`), one list per log in directory
    and name order, each by its files' names, oldest first (`age`). Directories are searched (not recursively
    beyond ``logs/``); files are taken as they are; `refuse(reason)` is raised for a path that is not there, or
    when nothing is found."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            dirs = [p] + ([p / "logs"] if (p / "logs").is_dir() else [])
            found += [f for d in dirs for f in sorted(d.iterdir()) if f.is_file() and base_name(f, names) in names]
        elif p.is_file():
            found.append(p)
        else:
            raise refuse(f"{p}: no such file or directory")
    if not found:
        listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
        raise refuse(f"no {listed} (or rotated ones) in " + ", ".join(map(str, paths)))
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in dict.fromkeys(found):
        groups.setdefault((f.parent, base_name(f, names)), []).append(f)
    return [sorted(fs, key=lambda f: age(f, names)) for _, fs in sorted(groups.items(),
                                                                      key=lambda kv: (str(kv[0][0]), kv[0][1]))]


def _in_order(files: list[Path], layout: Layout) -> list[Path]:
    """One log's files oldest first by what they hold (the time of their first line), not by their names: a rotated
    file renamed, copied under another name or numbered by another scheme still comes in its place. Files with
    no line in the layout keep the place their names give (_age), among the others by it."""
    by_name = sorted(files, key=lambda f: age(f, LOG_NAMES))
    if len(files) < 2:
        return by_name
    firsts = {f: _first_time(f, layout) for f in files}
    dated = sorted((f for f in by_name if firsts[f] is not None), key=lambda f: firsts[f] or 0)
    it = iter(dated)
    return [next(it) if firsts[f] is not None else f for f in by_name]


def _first_time(f: Path, layout: Layout, head_lines: int = 1000) -> int | None:
    """The time of the first line in the layout, read as UTC (the zone does not matter: one log, one clock)."""
    lines = text_lines(f)
    try:
        for n, raw in enumerate(lines):
            m = layout.regex.match(raw.rstrip("\r\n"))
            if m is not None:
                try:
                    return layout.time_ms(m, _UTC)
                except (ValueError, OverflowError):
                    return None
            if n >= head_lines:
                break
    except (OSError, EOFError):
        return None  # read_log says what is wrong with it, where
    finally:
        lines.close()
    return None


_UTC = ZoneInfo("UTC")


def base_name(f: Path, names: Sequence[str]) -> str:
    """The log of `names` file `f` is of (``server.log.2026-11-20-03.gz`` is of ``server.log``), or its name."""
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    return next((b for b in names if name == b or name.startswith(b + ".")), name)


def age(f: Path, names: Sequence[str]) -> tuple[int, int, str]:
    """Sort key, oldest first: dated suffixes in date order, numbered ones highest first, the live file last."""
    name = f.name[:-3] if f.name.endswith(".gz") else f.name
    suffix = name[len(base_name(f, names)) + 1:]
    if not suffix:
        return (2, 0, "")
    if suffix.isdigit():
        return (1, -int(suffix), "")
    return (0, 0, suffix)  # log4j's dated suffixes (yyyy-MM-dd-HH) sort as text


def read_log(files: Sequence[Path], tz: ZoneInfo, unparsed: list[str] | None = None,
             layout: Layout = KAFKA) -> Iterator[LogLine]:
    """The lines of one log's files in order; lines in no known layout are counted in `unparsed` (their
    file and number), never guessed at. A file that is not a text log is refused (``_not_text``)."""
    for f in files:
        # a line that opens in the layout but does not close in it: the first line of a message on several lines
        # (server.log's config dumps), closed by a later line that ends as the layout does; or one cut short, or
        # another layout's, which no later line closes
        opened: str | None = None
        for n, text, m in _matched(f, layout):
            if m is None:
                if layout.start is not None and layout.start.match(text):
                    if opened is not None and unparsed is not None:
                        unparsed.append(opened)
                    opened = f"{f}:{n}"
                elif opened is not None and (layout.end is None or layout.end.search(text)):
                    opened = None  # a message on several lines, whole: no state is stated that way
                continue  # a continuation (stack trace) or a blank line
            if opened is not None and unparsed is not None:
                unparsed.append(opened)
            opened = None
            try:
                at = layout.time_ms(m, tz)
            except (ValueError, OverflowError):  # a date no calendar has (month 13)
                if unparsed is not None:
                    unparsed.append(f"{f}:{n}")
                continue
            yield LogLine(str(f), n, at, m.group("level"), m.group("message"), m.group("logger"))
        if opened is not None and unparsed is not None:
            unparsed.append(opened)


def check_text(files: Iterable[Path], head_bytes: int = 1 << 16, layout: Layout = KAFKA) -> None:
    """Refuse a file that is not a text log from its first `head_bytes`, before anything is imported (read_log
    refuses one whose damage comes later when it gets there)."""
    for f in files:
        read = 0
        lines = _matched(f, layout)
        for _, text, _ in lines:
            read += len(text) + 1
            if read > head_bytes:  # the layout rule is judged at the end of a file: read_log's, for a longer one
                lines.close()
                break


def _matched(f: Path, layout: Layout) -> Generator[tuple[int, str, re.Match[str] | None], None, None]:
    """(line number, text, its match of the layout or None) of each line of a file that is a text log; a file
    that is not is refused (_TextCheck)."""
    opener = gzip.open if f.name.endswith(".gz") else open
    try:
        with opener(f, "rt", encoding="utf-8", errors="surrogateescape", newline="\n") as fh:
            text_check = _TextCheck(f, layout)
            for n, raw in enumerate(_lines(fh, f), 1):
                text = text_check.line(n, raw.rstrip("\r\n"))
                m = layout.regex.match(text)
                text_check.in_layout = text_check.in_layout or m is not None
                yield n, text, m
            text_check.end()
    except (OSError, EOFError) as exc:
        raise BadLogs(f"{f}: cannot be read: {exc}") from None


# The longest line read: Kafka's longest (a controller's TRACE line listing a request's partitions) are some
# hundred KB; a rotated log's .gz that inflates to one endless line (a bomb, or a binary file) stops here.
MAX_LINE_CHARS = 16 << 20


def text_lines(f: Path) -> Generator[str, None, None]:
    """The lines of a log file, rotated .gz ones too, each at most MAX_LINE_CHARS (BadLogs past that): every
    reader of a log's text goes through this bound."""
    opener = gzip.open if f.name.endswith(".gz") else open
    with opener(f, "rt", encoding="utf-8", errors="replace", newline="\n") as fh:
        yield from _lines(fh, f)


def _lines(fh: IO[str], f: Path) -> Iterator[str]:
    n = 0
    while text := fh.readline(MAX_LINE_CHARS + 1):
        n += 1
        if len(text) > MAX_LINE_CHARS:
            raise BadLogs(f"{f}:{n}: a line of more than {MAX_LINE_CHARS} characters: not a Kafka log (a binary "
                          "file, or a compressed one that inflates without end)")
        yield text


# A few bytes that are not UTF-8 are a log line's own (a name in another encoding): read as U+FFFD. More are
# a file that is not a text log (binary, compressed, another encoding), refused rather than read as no lines.
MAX_INVALID_BYTES = 8
_INVALID = re.compile("[\udc80-\udcff]")  # the bytes surrogateescape could not decode


class _TextCheck:
    """Whether one file is a Kafka log4j text log: no NUL byte, at most MAX_INVALID_BYTES bytes that are not
    UTF-8, and, if it holds anything but blank lines, at least one line in the layout."""

    def __init__(self, f: Path, layout: Layout) -> None:
        self.file = f
        self.layout = layout
        self.invalid = 0
        self.first_invalid: int | None = None  # its line
        self.first_text: int | None = None  # the first line that is not blank
        self.in_layout = False

    def line(self, n: int, text: str) -> str:
        if self.first_text is None and text.strip():
            self.first_text = n
        if "\x00" in text:
            raise self._refusal(n, "\x00", "a NUL byte")
        if text.isascii():
            return text
        bad = len(_INVALID.findall(text))
        if not bad:
            return text
        self.invalid += bad
        self.first_invalid = self.first_invalid or n
        if self.invalid > MAX_INVALID_BYTES:
            raise self._refusal(self.first_invalid, None, f"more than {MAX_INVALID_BYTES} bytes that are not UTF-8")
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def end(self) -> None:
        if self.first_text is not None and not self.in_layout:
            shape = "Kafka ships ([yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger))" if self.layout is KAFKA \
                else f"--log-pattern {self.layout.pattern!r}"
            raise BadLogs(f"{self.file}: line {self.first_text}: not read: no line in the log4j layout {shape}; "
                          "give the brokers' layout with --log-pattern (log4j's ConversionPattern)")

    def _refusal(self, n: int, char: str | None, what: str) -> BadLogs:
        return BadLogs(f"{self.file}: byte {self._offset(n, char)} (line {n}): not a text log: {what}")

    def _offset(self, n: int, char: str | None) -> int | str:
        """The byte offset (in the uncompressed text) of the first NUL (`char`) or undecodable byte on line
        `n`: read again, on this rare path only."""
        opener = gzip.open if self.file.name.endswith(".gz") else open
        with opener(self.file, "rb") as fh:
            at = 0
            for i, raw in enumerate(fh, 1):
                if i == n:
                    if char is not None:
                        return at + raw.index(char.encode())
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        return at + e.start
                    return at
                at += len(raw)
        return "?"


def merged(logs: Iterable[Iterator[LogLine]]) -> Iterator[LogLine]:
    """All logs' lines in time order; lines of the same millisecond keep their log's and file's order."""
    keyed = [((line.time_ms, i, line) for line in log) for i, log in enumerate(logs)]
    for _, _, line in heapq.merge(*keyed, key=lambda k: (k[0], k[1])):
        yield line
