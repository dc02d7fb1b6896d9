"""Times in and out: one format in every output, one parser for every time a user types.

Out: ISO-8601 UTC with milliseconds (`2026-11-20T03:14:00.000Z`), what an operator lines up with broker
logs; `epoch-ms` for scripts (`--time-format`, env CTRLAUDIT_TIME_FORMAT). JSON keeps its `*_ms` fields
as numbers whatever the format, and adds the shown form beside a point's time.

In: ISO-8601 (naive = UTC, `Z` or an offset, a space instead of `T`), or epoch millis. A number too small
to be epoch millis of any Kafka era (< 10^11, i.e. before 1973) is read as epoch seconds, and the answer
says so (`Parsed.note`), since both are what `date +%s` and Kafka's own timestamps give. And what `date -u`
prints in English (`Sun Nov 29 03:45:12 UTC 2026`, glibc's `Sun 29 Nov 2026 03:45:12 AM UTC`, `date -R`'s
`Sun, 29 Nov 2026 03:45:12 +0000`): a zone name other than UTC/GMT names no one offset (CET, EST, IST...),
so it is refused, as is a weekday the date does not fall on.
"""
from __future__ import annotations

import os
import re
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone

from schemas.errors import ContractError

FORMATS = ("iso", "epoch-ms")


class TimeError(ContractError):
    """A time that cannot be read, or an output format that does not exist."""

SECONDS_BELOW = 10**11  # epoch millis 10^11 is 1973-03-03; epoch seconds 10^11 is the year 5138



def default_format() -> str:
    """The format when --time-format is not given: env CTRLAUDIT_TIME_FORMAT, else iso."""
    return os.environ.get("CTRLAUDIT_TIME_FORMAT", "").strip() or "iso"


_format: ContextVar[str] = ContextVar("time_format", default="iso")


def use(fmt: str) -> None:
    """Set the output format of `show` for this process (the CLI's --time-format)."""
    if fmt not in FORMATS:
        raise TimeError(f"time format {fmt!r}: use one of {', '.join(FORMATS)}")
    _format.set(fmt)


def iso(ms: int) -> str:
    """UTC, millisecond precision, `Z`: the format of every human-readable output."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def show(ms: int | None) -> str:
    """A time as the chosen output format gives it ('-' when there is none)."""
    if ms is None:
        return "-"
    return str(ms) if _format.get() == "epoch-ms" else iso(ms)


@dataclass(frozen=True, slots=True)
class Parsed:
    ms: int
    note: str = ""  # how the input was read, when that is not obvious (epoch seconds)


def parse(value: str | int) -> Parsed:
    """Epoch millis from ISO-8601, epoch millis or epoch seconds (with a note)."""
    if isinstance(value, int):
        return Parsed(value)
    text = value.strip()
    if text[:1].isalpha():  # `date -u`'s own layout: a weekday or a month name first
        return Parsed(_date_output(text, value))
    if text.upper().endswith("UTC"):  # `date -u` style: 2026-11-20 03:14:00 UTC
        text = text[:-3].rstrip() + "Z"
    whole, dot, fraction = text.partition(".")
    if dot and whole.lstrip("-").isdigit() and fraction.isdigit():  # `date +%s.%N`: seconds with a fraction
        ms = round(float(text) * 1000)
        return Parsed(ms, f"time {text} read as epoch seconds ({iso(ms)})")
    if text.lstrip("-").isdigit():
        number = int(text)
        if abs(number) < SECONDS_BELOW:
            ms = number * 1000
            return Parsed(ms, f"time {text} read as epoch seconds ({iso(ms)}); give epoch millis or ISO-8601 "
                              "to be exact")
        return Parsed(number)
    try:
        dt = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    except ValueError:
        raise TimeError(_not_a_time(value)) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return Parsed(round(dt.timestamp() * 1000))


def parse_time(value: str | int) -> int:
    return parse(value).ms


def _not_a_time(value: object) -> str:
    return (f"not a time: {value!r} (use ISO-8601 like 2026-11-20T03:14:00Z, or epoch millis, or what "
            "`date -u` prints)")


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), 1)}
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_UTC = ("utc", "gmt", "ut", "z")
_CLOCK = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?")
_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")


def _date_output(text: str, value: object) -> int:
    """Epoch millis of `date`'s English output, its words in any of its locales' orders: a weekday, a month
    name, a day, a clock time (with AM/PM or not), a year and a zone (UTC/GMT or +hhmm; none = UTC, as for
    ISO-8601). Each at most once; anything else is not a time."""
    found: dict[str, int] = {}  # weekday, month, day, year, zone (minutes east), pm (0/1)
    clock: re.Match[str] | None = None

    def once(kind: str, got: int) -> None:
        if kind in found:
            raise TimeError(_not_a_time(value))
        found[kind] = got

    for word in text.replace(",", " ").split():
        low = word.lower()
        if low[:3] in _DAYS and low in (low[:3], _FULL_DAYS[_DAYS.index(low[:3])]):
            once("weekday", _DAYS.index(low[:3]))
        elif low[:3] in _MONTHS and _FULL_MONTHS[_MONTHS[low[:3]] - 1].startswith(low):
            once("month", _MONTHS[low[:3]])
        elif low in ("am", "pm"):
            once("pm", int(low == "pm"))
        elif low in _UTC:
            once("zone", 0)
        elif m := _OFFSET.fullmatch(word):
            once("zone", (-1 if m[1] == "-" else 1) * (int(m[2]) * 60 + int(m[3])))
        elif (m := _CLOCK.fullmatch(word)) and clock is None:
            clock = m
        elif word.isdigit() and len(word) == 4:
            once("year", int(word))
        elif word.isdigit() and len(word) <= 2:
            once("day", int(word))
        elif word.isalpha() and word.isupper() and 2 <= len(word) <= 5:
            raise TimeError(f"time {value!r}: the zone {word} names no one offset; give `date -u`'s output (UTC), "
                            "or ISO-8601 with an offset (+01:00)")
        else:
            raise TimeError(_not_a_time(value))
    if clock is None or not {"month", "day", "year"} <= found.keys():
        raise TimeError(_not_a_time(value))
    hour, minute, second = int(clock[1]), int(clock[2]), int(clock[3])
    if "pm" in found:
        if not 1 <= hour <= 12:
            raise TimeError(_not_a_time(value))
        hour = hour % 12 + 12 * found["pm"]
    micro = int((clock[4] or "0").ljust(6, "0")[:6])
    try:
        dt = datetime(found["year"], found["month"], found["day"], hour, minute, second, micro, tzinfo=timezone.utc)
    except ValueError as exc:
        raise TimeError(f"not a time: {value!r} ({exc})") from None
    if "weekday" in found and dt.weekday() != found["weekday"]:
        raise TimeError(f"time {value!r}: {dt.date()} is a {dt.strftime('%A')}, not a "
                        f"{_FULL_DAYS[found['weekday']].title()}")
    return round(dt.timestamp() * 1000) - found.get("zone", 0) * 60_000


_FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_FULL_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
