"""The log4j layout of a log's lines: Kafka's shipped one (``[%d] %p %m (%c)%n``), or the one an operator configured,
given as its log4j PatternLayout (``--log-pattern '%d{ISO8601} %-5p [%c] %m%n'``) and read back into a regex.

Only what a line needs to be evidence is taken from it: the time (``%d``), the level (``%p``), the message (``%m``)
and the logger (``%c``, whose name tells Kafka's loggers apart); every other conversion (thread, MDC, location,
...) is matched and dropped. A pattern without ``%d`` or ``%m`` cannot place or read a line and is refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from schemas.errors import ContractError

KAFKA_PATTERN = "[%d] %p %m (%c)%n"


class BadLayout(ContractError):
    """A --log-pattern this reader cannot turn into a regex."""


@dataclass(frozen=True)
class Layout:
    pattern: str
    regex: re.Pattern[str]
    start: re.Pattern[str] | None  # the opening of a line, up to its date: a line in the layout, even when cut
    # what follows the message (``(logger)`` in Kafka's): the last line of a message that spans several ends
    # with it; None when the message ends the line
    end: re.Pattern[str] | None
    date_format: str  # strptime's, applied to the date text with "T" and "." read as " " and ","

    def time_ms(self, m: re.Match[str], tz: ZoneInfo) -> int:
        stamp = m.group("date").replace("T", " ").replace(".", ",")
        t = datetime.strptime(stamp, self.date_format).replace(tzinfo=tz)
        return int(t.replace(microsecond=0).timestamp()) * 1000 + t.microsecond // 1000


# SimpleDateFormat letters -> (regex, strptime); ISO8601 and DEFAULT are log4j's named formats (its %d default)
_DATE_LETTERS = {"yyyy": (r"\d{4}", "%Y"), "MM": (r"\d\d", "%m"), "dd": (r"\d\d", "%d"), "HH": (r"\d\d", "%H"),
                 "mm": (r"\d\d", "%M"), "ss": (r"\d\d", "%S"), "SSS": (r"\d{3}", "%f")}
_NAMED_DATES = {name: "yyyy-MM-dd HH:mm:ss,SSS" for name in ("ISO8601", "DEFAULT", "")}
_CONVERSION = re.compile(r"%(-?\d*(?:\.\d+)?)([a-zA-Z]+|%)(\{[^}]*\})?")
_LEVEL = r"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL)"


def _date(fmt: str) -> tuple[str, str]:
    fmt = _NAMED_DATES.get(fmt, fmt)
    regex, strp, i = "", "", 0
    while i < len(fmt):
        if fmt[i] == "'":  # SimpleDateFormat's quoted literal ('T')
            end = fmt.find("'", i + 1)
            quoted = fmt[i + 1:end if end > i else len(fmt)]
            for c in quoted:
                regex += r"[ T]" if c in " T" else re.escape(c)
                strp += " " if c in " T" else c.replace("%", "%%")
            i = (end if end > i else len(fmt)) + 1
            continue
        letters = next((k for k in _DATE_LETTERS if fmt.startswith(k, i)), None)
        if letters is not None:
            regex, strp, i = regex + _DATE_LETTERS[letters][0], strp + _DATE_LETTERS[letters][1], i + len(letters)
        elif fmt[i].isalpha():
            raise BadLayout(f"--log-pattern: date format {fmt!r}: {fmt[i]!r} is not one of yyyy MM dd HH mm ss SSS")
        else:
            # Kafka's own: "T" or " " between date and time, "," or "." before the millis
            regex += r"[ T]" if fmt[i] in " T" else r"[,.]" if fmt[i] in ",." else re.escape(fmt[i])
            strp += " " if fmt[i] in " T" else "," if fmt[i] in ",." else fmt[i].replace("%", "%%")
            i += 1
    return regex, strp


def layout(pattern: str = KAFKA_PATTERN) -> Layout:
    """The Layout of a log4j PatternLayout; refused with one line when it cannot place or read a line."""
    regex, start, date_format, seen, at, after_message = "^", None, "", set(), 0, 0
    for m in _CONVERSION.finditer(pattern):
        regex += _literal(pattern[at:m.start()])
        at = m.end()
        width, name, option = m.group(1), m.group(2), (m.group(3) or "{}")[1:-1]
        if name == "%":
            regex += "%"
        elif name == "n":
            regex += "$"
        elif name in ("d", "date") and "date" not in seen:
            date_regex, date_format = _date(option)
            regex += f"(?P<date>{date_regex})"
            start = re.compile(regex)
            seen.add("date")
        elif name in ("p", "level") and "level" not in seen:
            regex += r"\s*" + _LEVEL + r"\s*" if width else _LEVEL
            seen.add("level")
        elif name in ("m", "msg", "message") and "message" not in seen:
            regex += "(?P<message>.*)"
            after_message = len(regex)
            seen.add("message")
        elif name in ("c", "logger") and "logger" not in seen:
            regex += r"(?P<logger>[^()\s]+)"
            seen.add("logger")
        else:  # thread, MDC, NDC, location, elapsed time: matched, not read
            regex += ".*?"
    regex += _literal(pattern[at:])
    missing = [what for what in ("date", "message") if what not in seen]
    if missing:
        raise BadLayout(f"--log-pattern {pattern!r}: no %{'d' if missing[0] == 'date' else 'm'} ({missing[0]}): "
                        "a line could not be placed in time or read")
    if not regex.endswith("$"):
        regex += "$"
    if "level" not in seen:
        regex = regex.replace("(?P<date>", "(?P<level>)(?P<date>", 1)
    if "logger" not in seen:
        regex = regex[:-1] + "(?P<logger>)$"
    tail = regex[after_message:].replace("(?P<logger>", "(")
    try:
        return Layout(pattern, re.compile(regex), start, re.compile(tail) if tail != "$" else None, date_format)
    except re.error as exc:
        raise BadLayout(f"--log-pattern {pattern!r}: cannot be read: {exc}") from None


def _literal(text: str) -> str:
    # a space in a layout is often padding's: one or more
    return "".join(r"\s+" if c == " " else re.escape(c) for c in text)


KAFKA = layout()
