"""Reading a node's authorizer and request log files into RequestLines, strictly, at speed.

Each line is read in the log4j layout (Kafka's ``[%d] %p %m (%c)%n`` or the one given, services/brokerlogs/layout.py,
which both of Kafka's log sources share), told apart by its logger, and read by the parser of its log
(authorizer.py, requestlog.py). What is not read is counted and named, never guessed at:

- a line of the two loggers in none of their forms, or with words that repeat: a gap naming its form;
- a line that opens in the layout and does not close in it (cut short, the file's last line still being written,
  or a message on several lines, such as a principal holding a newline): a gap;
- a line longer than MAX_LINE_BYTES (an enormous request body): read past without being held, a gap;
- the lines of every other API (Produce, Fetch...), and an authorizer's TRACE decisions (which granted or refused
  nothing: Kafka logs at TRACE what only filters a list or computes authorized operations): counted, not kept;
- lines of other loggers (the request log's file also takes ``kafka.network.RequestChannel$``): counted.

Gaps are kept per file and reason (how many, the first and last line), so a file of millions of lines in another
layout costs one entry. A file that is not a text log (a NUL byte, more than MAX_INVALID_BYTES bytes that are not
UTF-8) or holds no line in the layout is refused: BadRequestLogs, one line naming file and line.
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

from schemas.errors import ContractError
from services.brokerlogs.layout import KAFKA, Layout
from services.requests.apis import KEPT, KEY_OF
from services.requests.authorizer import Passed, Unread, api_of, decision
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER, RequestLine
from services.requests.requestlog import api_key_of, completed

# Kafka's largest admin requests (a reassignment of every partition of a large cluster, a CreateTopics of
# thousands of topics with explicit assignments) are some MB of JSON; past this a line is not held
MAX_LINE_BYTES = 8 << 20
MAX_INVALID_BYTES = 8  # bytes not UTF-8 a log may hold (a name in another encoding) before it is not a text log
UTC = ZoneInfo("UTC")
# what Kafka's decisions are logged at (logAuditMessage): allowed at DEBUG, denied at INFO, either at TRACE when
# the decision granted or refused nothing
_DECISION_LEVEL = {"allowed": "DEBUG", "denied": "INFO"}


def _completed(message: str, file: str, line: int, time_ms: int, level: str) -> RequestLine | Unread | Passed:
    """A request log line, read only at the level Kafka writes it."""
    got = completed(message, file, line, time_ms, level)
    if isinstance(got, RequestLine) and level and level != "DEBUG":
        return Unread(f"a request log line at {level} (Kafka logs a completed request at DEBUG)")
    return got


def _decision(message: str, file: str, line: int, time_ms: int, level: str) -> RequestLine | Unread | Passed:
    """An authorizer line, read only at the level Kafka writes its decision (TRACE: how it decided, passed)."""
    got = decision(message, file, line, time_ms, level)
    if isinstance(got, RequestLine) and level and level != _DECISION_LEVEL[got.outcome or ""]:
        return Passed("(trace)") if level == "TRACE" else Unread(
            f"an authorizer decision at {level} (Kafka logs an allowed one at DEBUG, a denied one at INFO)")
    return got


class BadRequestLogs(ContractError):
    """A file that is not a Kafka log4j text log: one line naming file and line."""


@dataclass
class Gap:
    """Lines of one file not read for one reason: how many, the first and the last."""
    file: str
    reason: str
    count: int
    first_line: int
    last_line: int
    after_ms: int = -1  # the time of the last line read before its first one in its file (-1: none)

    def __str__(self) -> str:
        more = f" ({self.count} lines, the last line {self.last_line})" if self.count > 1 else ""
        return f"{self.file}:{self.first_line}: not read: {self.reason}{more}"


@dataclass
class Reading:
    """What a reading found besides its records."""
    lines: int = 0
    kept: int = 0
    passed: dict[str, int] = field(default_factory=dict)  # API (or "#key", "(trace)") -> lines counted, not kept
    other_loggers: int = 0
    gaps: dict[tuple[str, str], Gap] = field(default_factory=dict)

    def gap(self, file: str, line: int, reason: str, after_ms: int = -1) -> None:
        g = self.gaps.get((file, reason))
        if g is None:
            self.gaps[(file, reason)] = Gap(file, reason, 1, line, line, after_ms)
        else:
            g.count += 1
            g.last_line = line

    @property
    def not_read(self) -> int:
        return sum(g.count for g in self.gaps.values())


class _Clock:
    """A line's time in ms: the layout's (strptime) once per second of the log, the millis read off the text."""

    def __init__(self, layout: Layout, tz: ZoneInfo) -> None:
        self.layout, self.tz = layout, tz
        self.seconds: dict[str, int] = {}

    def ms(self, m: re.Match[str]) -> int:
        date = m.group("date")
        if len(date) > 4 and date[-4] in ",." and date[-3:].isdigit():
            base = self.seconds.get(date[:-4])
            if base is None:
                if len(self.seconds) > 4096:  # bounded: one entry per second of the log
                    self.seconds.clear()
                base = self.seconds[date[:-4]] = self.layout.time_ms(m, self.tz) - int(date[-3:])
            return base + int(date[-3:])
        return self.layout.time_ms(m, self.tz)


def read_file(path: Path, reading: Reading, tz: ZoneInfo = UTC, layout: Layout = KAFKA) -> Iterator[RequestLine]:
    """The requests one file's lines state, in the file's order (a rotated ``.gz`` too)."""
    f = str(path)
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as fh:
            yield from _lines(fh, f, reading, _Clock(layout, tz), layout)
    except (OSError, EOFError) as exc:  # a .gz cut short or not gzip
        raise BadRequestLogs(f"{f}: cannot be read: {exc}") from None


def read_lines(fh: IO[bytes], f: str, reading: Reading, tz: ZoneInfo = UTC, layout: Layout = KAFKA,
               first_line: int = 0) -> Iterator[RequestLine]:
    """The requests the lines of `fh` state, numbered after `first_line`: a stretch of a file being followed
    (services/requests/follow.py), whole lines only. Not refused for holding no line in the layout: a stretch of
    a log in the layout may hold none."""
    return _lines(fh, f, reading, _Clock(layout, tz), layout, first_line, whole=False)


def _lines(fh: IO[bytes] | gzip.GzipFile, f: str, reading: Reading, clock: _Clock,
           layout: Layout, first_line: int = 0, whole: bool = True) -> Iterator[RequestLine]:
    regex, start, end = layout.regex, layout.start, layout.end
    invalid, first_text, in_layout = 0, 0, False
    opened = 0  # the line that opened in the layout and has not closed (0: none)
    n = first_line
    last_at = -1  # the time of the last line read: where a gap after it is in time

    def gap(line: int, reason: str) -> None:
        reading.gap(f, line, reason, last_at)
    readline, passed = fh.readline, reading.passed
    while raw := readline(MAX_LINE_BYTES + 1):
        n += 1
        if len(raw) > MAX_LINE_BYTES:
            while (rest := readline(MAX_LINE_BYTES + 1)) and not rest.endswith(b"\n"):
                pass  # read past, not held
            gap(n, f"a line longer than {MAX_LINE_BYTES} bytes (an enormous request), not held")
            continue  # not held, so not judged: a file of one enormous line is not refused as another layout's
        if b"\x00" in raw:
            raise BadRequestLogs(f"{f}: line {n}: not a text log: a NUL byte")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            invalid += len(raw.decode("utf-8", "surrogateescape")) - len(raw.decode("utf-8", "ignore"))
            if invalid > MAX_INVALID_BYTES:
                raise BadRequestLogs(f"{f}: line {n}: not a text log: more than {MAX_INVALID_BYTES} bytes that are "
                                     "not UTF-8") from None
            line = raw.decode("utf-8", "replace")
        m = regex.match(line)
        if m is None and line.endswith("\r\n"):  # a file written on Windows
            m = regex.match(line[:-2])
        if m is None:
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            first_text = first_text or n
            if start is not None and start.match(text):
                if opened:
                    gap(opened, "a line cut short (it opens in the log4j layout, does not close)")
                opened = n
            elif opened and (end is None or end.search(text)):
                if text.endswith((f"({AUTHORIZER_LOGGER})", f"({REQUEST_LOGGER})")):
                    gap(opened, "a message on several lines (a name holding a line break)")
                opened = 0
            continue  # a stack trace's line, or a message's middle
        in_layout = True
        first_text = first_text or n
        if opened:
            gap(opened, "a line cut short (it opens in the log4j layout, does not close)")
            opened = 0
        reading.lines += 1
        logger = m.group("logger")
        if logger == REQUEST_LOGGER:
            message = m.group("message")
            key = api_key_of(message)
            if key is not None and key not in KEPT:
                name = f"#{key}"
                passed[name] = passed.get(name, 0) + 1
                continue
            read_message = _completed
        elif logger == AUTHORIZER_LOGGER:
            message = m.group("message")
            api = api_of(message)
            if api is not None and api not in KEY_OF:
                passed[api] = passed.get(api, 0) + 1
                continue
            read_message = _decision
        else:
            reading.other_loggers += 1
            continue
        at = _time(clock, m, reading, f, n, last_at)
        if at is None:
            continue
        last_at = at
        got = read_message(message, f, n, at, m.group("level"))
        if isinstance(got, RequestLine):
            reading.kept += 1
            yield got
        elif isinstance(got, Passed):
            passed[got.api] = passed.get(got.api, 0) + 1
        else:
            gap(n, got.reason)
    if opened:
        gap(opened, "a line cut short (it opens in the log4j layout, does not close): the file's last")
    if whole and first_text and not in_layout:
        raise BadRequestLogs(f"{f}: line {first_text}: not read: no line in the log4j layout {layout.pattern!r}; "
                             "give the nodes' layout with --log-pattern (log4j's ConversionPattern)")


def _time(clock: _Clock, m: re.Match[str], reading: Reading, f: str, n: int, last_at: int) -> int | None:
    try:
        return clock.ms(m)
    except (ValueError, OverflowError):  # a date no calendar has (month 13), or past datetime's years
        reading.gap(f, n, "a line whose date no calendar has", last_at)
        return None
