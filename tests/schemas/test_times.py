"""schemas.times: the one parser of the times users type, the one format of the times ctrlaudit prints."""
from __future__ import annotations

import pytest

from schemas import times


@pytest.mark.parametrize("text, ms", [
    ("2023-11-14T22:13:20Z", 1_700_000_000_000),
    ("2023-11-14T22:13:20.123z", 1_700_000_000_123),
    ("2023-11-14 22:13:20", 1_700_000_000_000),  # a space for the T, no zone: UTC
    ("2023-11-14T23:13:20.5+01:00", 1_700_000_000_500),
    ("1700000000123", 1_700_000_000_123),  # epoch millis
    (" 1700000000123 ", 1_700_000_000_123),
    ("2023-11-14 22:13:20 UTC", 1_700_000_000_000),  # date -u
    ("2023-11-14T22:13:20.123456789Z", 1_700_000_000_123),  # nanoseconds, as Kafka's logs and tools print
])
def test_parse(text: str, ms: int) -> None:
    assert times.parse(text) == times.Parsed(ms)


@pytest.mark.parametrize("text", [
    "Tue Nov 14 22:13:20 UTC 2023",  # date -u (C and POSIX locales, BSD, busybox)
    "Tue Nov 14 22:13:20  UTC 2023",
    "Tue 14 Nov 2023 10:13:20 PM UTC",  # glibc's en_US
    "Tue 14 Nov 22:13:20 UTC 2023",  # glibc's en_GB
    "Tue, 14 Nov 2023 22:13:20 +0000",  # date -R
    "Tue, 14 Nov 2023 23:13:20 +0100",
    "Tue Nov 14 22:13:20 GMT 2023",
    "Tue Nov 14 22:13:20 2023",  # no zone: UTC, as for ISO-8601
])
def test_parse_what_date_prints(text: str) -> None:
    assert times.parse(text) == times.Parsed(1_700_000_000_000)


def test_parse_the_real_date_command() -> None:
    import shutil
    import subprocess

    if shutil.which("date") is None:
        pytest.skip("no date command")
    printed = subprocess.run(["date", "-u"], capture_output=True, text=True, check=True,
                             env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    import time

    assert abs(times.parse(printed).ms - time.time() * 1000) < 5_000, printed


@pytest.mark.parametrize("text, says", [
    ("Tue Nov 14 22:13:20 CET 2023", "the zone CET names no one offset"),  # `date` in a zone: which CET?
    ("Mon Nov 14 22:13:20 UTC 2023", "2023-11-14 is a Tuesday, not a Monday"),
    ("Tue Nov 31 22:13:20 UTC 2023", "day is out of range for month"),
    ("Tue Nov 14 22:13:20 UTC UTC 2023", "not a time"),
    ("Tue Nov 14 UTC 2023", "not a time"),  # no clock
    ("Tue 14 Nov 2023 13:13:20 PM UTC", "not a time"),
    ("Tue Nov 14 22:13:20 UTC 2023 tomorrow", "not a time"),
])
def test_date_output_that_is_ambiguous_or_wrong_is_refused(text: str, says: str) -> None:
    with pytest.raises(times.TimeError, match=says) as caught:
        times.parse(text)
    assert "\n" not in str(caught.value)


def test_epoch_seconds_are_read_as_seconds_and_say_so() -> None:
    p = times.parse("1700000000")
    assert p.ms == 1_700_000_000_000 and "read as epoch seconds (2023-11-14T22:13:20.000Z)" in p.note
    assert times.parse(str(times.SECONDS_BELOW)).note == ""  # 10^11: epoch millis (1973)
    p = times.parse("1700000000.25")  # date +%s.%N
    assert p.ms == 1_700_000_000_250 and "read as epoch seconds" in p.note


def test_not_a_time_names_what_to_give() -> None:
    with pytest.raises(times.TimeError, match="ISO-8601 like 2026-11-20T03:14:00Z, or epoch millis"):
        times.parse("last tuesday")


def test_show_in_either_format() -> None:
    assert times.iso(1_700_000_000_007) == "2023-11-14T22:13:20.007Z"
    times.use("epoch-ms")
    try:
        assert times.show(1_700_000_000_007) == "1700000000007" and times.show(None) == "-"
    finally:
        times.use("iso")
    assert times.show(1_700_000_000_007) == "2023-11-14T22:13:20.007Z"
    with pytest.raises(times.TimeError):
        times.use("rfc2822")
