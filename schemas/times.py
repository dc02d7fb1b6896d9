"""Times in and out: one format in every output, one parser for every time a user types.

Out: ISO-8601 UTC with milliseconds (`2026-11-20T03:14:00.000Z`), what an operator lines up with broker
logs; `epoch-ms` for scripts (`--time-format`, env CTRLAUDIT_TIME_FORMAT). JSON keeps its `*_ms` fields
as numbers whatever the format, and adds the shown form beside a point's time.

In: ISO-8601 (naive = UTC, `Z` or an offset, a space instead of `T`), or epoch millis. A number too small
to be epoch millis of any Kafka era (< 10^11, i.e. before 1973) is read as epoch seconds, and the answer
says so (`Parsed.note`), since both are what `date +%s` and Kafka's own timestamps give.
"""
from __future__ import annotations

import os
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
        raise TimeError(f"not a time: {value!r} (use ISO-8601 like 2026-11-20T03:14:00Z, or epoch millis)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return Parsed(round(dt.timestamp() * 1000))


def parse_time(value: str | int) -> int:
    return parse(value).ms
