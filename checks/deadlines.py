"""The deadlines of the bounded-liveness checks: `--deadline NAME=DURATION` parsed and shown.

A bounded-liveness invariant (checks.catalog, `deadline`) says that something the controller owes is done
within a time: a reassignment completes, a fenced broker is unfenced. Its SQL names the deadline as
`{deadline_ms()}`, which checks.catalog.sql_for replaces by the value in force: the catalog's default
unless a `Deadlines` value (pairs of invariant name and milliseconds, a tuple so that queries stay
cacheable) says otherwise. The live checker reads the same values (checks.live.LiveChecker).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from checks.catalog import DEFAULT_DEADLINES, Deadlines
from checks.inputs import BadInput

__all__ = ["Deadlines", "parse", "parse_duration", "resolved", "show_duration"]

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)")


def parse_duration(text: str) -> int:
    """Milliseconds of "500ms", "30s", "10m", "1h", "1h30m" or "0" (a bare number is refused but for 0:
    a unit is what keeps 500 from meaning minutes to one reader and milliseconds to another)."""
    t = text.strip().lower()
    if t == "0":
        return 0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(t) or not t:
        raise BadInput(f"bad duration {text!r}: a number and a unit (ms, s, m, h, d), e.g. 30s, 10m, 1h30m")
    return int(round(total))


def show_duration(ms: int) -> str:
    """The shortest exact spelling of a duration: 500ms, 5s, 10m, 1h, 1h30m."""
    if ms == 0:
        return "0"
    out, left = [], ms
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if left >= size:
            out.append(f"{left // size}{unit}")
            left %= size
    return "".join(out)


def parse(values: Iterable[str], known: Mapping[str, int] = DEFAULT_DEADLINES) -> Deadlines:
    """`--deadline NAME=DURATION` values (repeatable; a later one wins) over `known`, the invariants that have a
    deadline and their defaults; BadInput for an unknown name or a bad duration."""
    given: dict[str, int] = {}
    for v in values:
        name, eq, duration = v.partition("=")
        name = name.strip()
        if not eq:
            raise BadInput(f"--deadline {v!r}: NAME=DURATION, e.g. reassignment_completes=2h")
        if name not in known:
            raise BadInput(f"--deadline {v!r}: no bounded-liveness invariant {name!r}; known: {', '.join(known)}")
        given[name] = parse_duration(duration)
    return tuple(sorted(given.items()))


def resolved(deadlines: Deadlines, known: Mapping[str, int] = DEFAULT_DEADLINES) -> dict[str, int]:
    """Every deadline in force: the defaults of `known`, with `deadlines` over them."""
    return {**known, **dict(deadlines)}
