"""log4j PatternLayouts read back into regexes: Kafka's shipped one, and the layouts operators configure instead
(--log-pattern), each on a line written in it; patterns that cannot place or read a line are refused."""
from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from services.brokerlogs.layout import KAFKA, BadLayout, layout

UTC = ZoneInfo("UTC")
MSG = "[Partition t-0 broker=3] ISR updated to 3,2,1  and version updated to 4"


@pytest.mark.parametrize("pattern, line", [
    ("[%d] %p %m (%c)%n", f"[2026-11-20 03:10:00,123] INFO {MSG} (kafka.cluster.Partition)"),
    ("%d{ISO8601} %-5p [%t] %c - %m%n", f"2026-11-20 03:10:00,123 INFO  [data-plane-kafka-request-handler-3] "
                                         f"kafka.cluster.Partition - {MSG}"),
    ("%d{yyyy-MM-dd'T'HH:mm:ss.SSS} [%p] %c: %m%n", f"2026-11-20T03:10:00.123 [INFO] kafka.cluster.Partition: {MSG}"),
    ("%d{yyyy/MM/dd HH:mm:ss} %5p %m [%c]%n", f"2026/11/20 03:10:00  INFO {MSG} [kafka.cluster.Partition]"),
])
def test_layouts_read_time_level_message_and_logger(pattern, line):
    lay = layout(pattern)
    m = lay.regex.match(line)
    assert m is not None, lay.regex.pattern
    assert (m.group("level"), m.group("message"), m.group("logger")) == ("INFO", MSG, "kafka.cluster.Partition")
    at = lay.time_ms(m, UTC)
    assert at - at % 1000 == 1_795_144_200_000 and at % 1000 in (0, 123)
    assert lay.start is not None and lay.start.match(line[:30])


def test_kafkas_layout_is_the_default_and_another_layouts_line_is_not_read():
    assert KAFKA.pattern == "[%d] %p %m (%c)%n"
    assert KAFKA.regex.match(f"2026-11-20 03:10:00,123 INFO  [main] kafka.cluster.Partition - {MSG}") is None
    assert KAFKA.regex.match(f"[2026-11-20 03:10:00,123] INFO {MSG}") is None  # cut before its logger


@pytest.mark.parametrize("pattern, says", [
    ("%p %m%n", "no %d (date)"), ("%d %p (%c)%n", "no %m (message)"), ("%d{dd MMM yyyy} %m%n", "'M' is not one of"),
])
def test_a_pattern_that_cannot_place_or_read_a_line_is_refused(pattern, says):
    with pytest.raises(BadLayout, match=says.replace("(", r"\(").replace(")", r"\)")):
        layout(pattern)
