"""Reading a node's authorizer and request log files: each line kept, counted or named as a gap, never guessed;
cut, enormous and multi-line lines bounded; files that are not text logs refused in one line."""
from __future__ import annotations

import gzip
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from services.brokerlogs.layout import layout
from services.requests import reader
from services.requests.reader import BadRequestLogs, Reading, read_file
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER
from tests.services.requests.kafka_lines import (AT_MS, acl_authorizer, completed, log4j, simple_acl,
                                                 standard_authorizer)

GROW = {"topics": [{"name": "t", "count": 6, "assignments": None}], "timeoutMs": 1, "validateOnly": False}


def write(tmp_path: Path, lines: list[str], name: str = "kafka-request.log", end: str = "\n") -> Path:
    p = tmp_path / name
    p.write_text("".join(line + end for line in lines))
    return p


def read(path: Path, **kw: object) -> tuple[list, Reading]:
    reading = Reading()
    return list(read_file(path, reading, **kw)), reading  # type: ignore[arg-type]


def test_a_mixed_file_is_kept_counted_and_passed(tmp_path):
    p = write(tmp_path, [
        log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {"results": []}), REQUEST_LOGGER),
        log4j(completed(1, "FETCH", 16, {"replicaId": -1}, {"responses": []}), REQUEST_LOGGER),
        log4j(completed(3, "METADATA", 12, {"topics": None}, {"topics": []}), REQUEST_LOGGER),
        log4j("Closing socket connection to /10.0.0.5", "kafka.network.RequestChannel$", "WARN"),
        log4j(acl_authorizer("User:alice", True, "Alter", "10.0.0.5", "Topic:LITERAL:t", "CreatePartitions"),
              AUTHORIZER_LOGGER),
        log4j(acl_authorizer("User:alice", True, "Describe", "10.0.0.5", "Topic:LITERAL:t", "Metadata"),
              AUTHORIZER_LOGGER),
        log4j(standard_authorizer("User:eve", False, "ALTER", "10.0.0.6", "Topic:LITERAL:t", "CreatePartitions",
                                  "DefaultDeny"), AUTHORIZER_LOGGER, "INFO"),
        log4j(standard_authorizer("User:eve", False, "ALTER", "10.0.0.6", "Topic:LITERAL:t", "CreateTopics",
                                  "DefaultDeny"), AUTHORIZER_LOGGER, "TRACE"),  # granted or refused nothing
        "",
    ])
    got, reading = read(p)
    assert [(r.log, r.line, r.api, r.outcome) for r in got] == [
        (REQUEST_LOGGER, 1, "CreatePartitions", None), (AUTHORIZER_LOGGER, 5, "CreatePartitions", "allowed"),
        (AUTHORIZER_LOGGER, 7, "CreatePartitions", "denied")]
    assert all(r.time_ms == AT_MS for r in got)
    assert reading.passed == {"#1": 1, "#3": 1, "Metadata": 1, "(trace)": 1}
    assert (reading.lines, reading.kept, reading.other_loggers, reading.gaps) == (8, 3, 1, {})


def test_the_zone_given_moves_the_time(tmp_path):
    p = write(tmp_path, [log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {}), REQUEST_LOGGER)])
    (utc,), _ = read(p)
    (berlin,), _ = read(p, tz=ZoneInfo("Europe/Berlin"))
    assert utc.time_ms - berlin.time_ms == 3_600_000


def test_a_request_line_at_a_level_kafka_does_not_log_it_at_is_a_gap(tmp_path):
    p = write(tmp_path, [log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {}), REQUEST_LOGGER, "INFO")])
    got, reading = read(p)
    assert got == [] and [str(g) for g in reading.gaps.values()] == [
        f"{p}:1: not read: a request log line at INFO (Kafka logs a completed request at DEBUG)"]


def test_a_file_of_one_enormous_line_is_a_gap_not_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 1024)
    p = write(tmp_path, [log4j(completed(19, "CREATE_TOPICS", 7, {"topics": [], "pad": "x" * 4096}, {}),
                               REQUEST_LOGGER)])
    got, reading = read(p)
    assert got == [] and reading.not_read == 1


def test_a_date_no_calendar_has_is_a_gap(tmp_path):
    line = log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {}), REQUEST_LOGGER)
    p = write(tmp_path, [line.replace("2026-11-20", "2026-13-20"), line])
    got, reading = read(p)
    assert [r.line for r in got] == [2]
    assert [str(g) for g in reading.gaps.values()] == [f"{p}:1: not read: a line whose date no calendar has"]


def test_a_decision_at_a_level_kafka_does_not_log_it_at_is_a_gap(tmp_path):
    p = write(tmp_path, [log4j(acl_authorizer("User:a", True, "Alter", "h", "Topic:LITERAL:t", "CreateTopics"),
                               AUTHORIZER_LOGGER, "INFO")], "kafka-authorizer.log")
    got, reading = read(p)
    assert got == [] and [str(g) for g in reading.gaps.values()] == [
        f"{p}:1: not read: an authorizer decision at INFO (Kafka logs an allowed one at DEBUG, a denied one at INFO)"]


def test_gaps_are_named_once_per_file_and_reason(tmp_path):
    cut = log4j(completed(19, "CREATE_TOPICS", 7, {"topics": []}, {}), REQUEST_LOGGER)[:90]
    p = write(tmp_path, [
        log4j("Principal = User:a is Allowed to do anything", AUTHORIZER_LOGGER),
        log4j(completed(19, "CREATE_TOPICS", 7, {"topics": [{"name": 1}]}, {}), REQUEST_LOGGER),
        log4j("Principal = User:b is Allowed to do anything", AUTHORIZER_LOGGER),
        cut,  # cut short: the next line opens before it closes
        log4j(simple_acl("User:a", True, "Create", "h", "Topic:LITERAL:t"), AUTHORIZER_LOGGER),
        cut,  # the file's last line, still being written
    ])
    got, reading = read(p)
    assert [r.form for r in got] == ["simple-acl"]
    assert sorted(str(g) for g in reading.gaps.values()) == sorted([
        f"{p}:1: not read: an authorizer line in none of Kafka's forms (2 lines, the last line 3)",
        f"{p}:2: not read: a request log line not in the JSON form of Kafka 2.8 to 4.x "
        "(request.topics[0].name: not a string)",
        f"{p}:4: not read: a line cut short (it opens in the log4j layout, does not close)",
        f"{p}:6: not read: a line cut short (it opens in the log4j layout, does not close): the file's last"])
    assert reading.not_read == 5


def test_a_message_on_several_lines_of_these_loggers_is_a_gap_a_stack_trace_is_not(tmp_path):
    p = write(tmp_path, [
        "[2026-11-20 03:10:00,123] DEBUG Principal = User:two",
        "lines is Allowed Operation = Alter from host = h on resource = Topic:LITERAL:t for request = CreateTopics "
        "with resourceRefCount = 1 (kafka.authorizer.logger)",
        log4j("Unexpected error", "kafka.network.RequestChannel$", "ERROR"),
        "java.lang.IllegalStateException: x",
        "\tat kafka.network.RequestChannel.foo(RequestChannel.scala:1)",
    ])
    got, reading = read(p)
    assert got == [] and [str(g) for g in reading.gaps.values()] == [
        f"{p}:1: not read: a message on several lines (a name holding a line break)"]


def test_an_enormous_line_is_read_past_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 4096)
    huge = {"topics": [{"name": f"t{i}", "numPartitions": 1, "replicationFactor": 1, "assignments": [],
                        "configs": []} for i in range(2000)], "timeoutMs": 1, "validateOnly": False}
    p = write(tmp_path, [log4j(completed(19, "CREATE_TOPICS", 7, huge, {}), REQUEST_LOGGER),
                         log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {}), REQUEST_LOGGER)])
    got, reading = read(p)
    assert [r.line for r in got] == [2]
    assert [str(g) for g in reading.gaps.values()] == [
        f"{p}:1: not read: a line longer than 4096 bytes (an enormous request), not held"]


def test_crlf_gz_and_a_last_line_without_its_newline(tmp_path):
    line = log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {}), REQUEST_LOGGER)
    assert len(read(write(tmp_path, [line, line], end="\r\n"))[0]) == 2
    (tmp_path / "k.log").write_text(line + "\n" + line)
    assert len(read(tmp_path / "k.log")[0]) == 2
    gz = tmp_path / "kafka-request.log.2026-11-20-03.gz"
    gz.write_bytes(gzip.compress((line + "\n").encode()))
    assert len(read(gz)[0]) == 1


def test_an_operators_layout(tmp_path):
    lay = layout("%d{ISO8601} %-5p [%t] %c - %m%n")
    message = completed(37, "CREATE_PARTITIONS", 3, GROW, {})
    p = write(tmp_path, [f"2026-11-20 03:10:00,123 DEBUG [data-plane-kafka-request-handler-1] {REQUEST_LOGGER} - "
                         f"{message}"])
    (got,), _ = read(p, layout=lay)
    assert got.api == "CreatePartitions" and got.time_ms == AT_MS


@pytest.mark.parametrize("data, says", [
    (b"[2026-11-20 03:10:00,123] DEBUG a\x00b (kafka.request.logger)\n", "line 1: not a text log: a NUL byte"),
    (b"x\n" + b"\xff\xfe" * 8 + b"\n", "line 2: not a text log: more than 8 bytes that are not UTF-8"),
    (b"\n2026-11-20 03:10:00 DEBUG something else\n", "line 2: not read: no line in the log4j layout"),
])
def test_files_that_are_not_text_logs_are_refused_in_one_line(tmp_path, data, says):
    p = tmp_path / "kafka-request.log"
    p.write_bytes(data)
    with pytest.raises(BadRequestLogs) as e:
        read(p)
    assert str(e.value).startswith(f"{p}: ") and says in str(e.value) and "\n" not in str(e.value)


def test_a_gz_cut_short_is_refused_in_one_line(tmp_path):
    gz = tmp_path / "kafka-request.log.1.gz"
    gz.write_bytes(gzip.compress(b"[2026-11-20 03:10:00,123] DEBUG x (kafka.request.logger)\n" * 100)[:40])
    with pytest.raises(BadRequestLogs, match="cannot be read"):
        read(gz)
