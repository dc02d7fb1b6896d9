"""Fuzzing the reader of the authorizer and request logs (services.requests): golden lines of every form damaged
as text (JSON values swapped for hostile ones, characters dropped, inserted, repeated), whole files damaged as
bytes, and random bytes. Only the project's contract errors may escape (tests/fuzzing.py), every line of a file
is accounted for (kept, passed, another logger's, or in a gap), and no secret of the lines reaches a record."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from hypothesis import given
from hypothesis import strategies as st

from services.normalize.redaction import REDACTED, is_sensitive
from services.requests.reader import Reading, read_file
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER
from tests.fuzzing import damaged, fuzz_settings, only_contract_errors
from tests.services.requests.kafka_lines import (acl_authorizer, completed, log4j, matching_acl, simple_acl,
                                                 standard_authorizer)

SECRET = "Zq9-secret-value"
SALTED = "U2FsdGVkUGFzc3dvcmRTZWNyZXQ="
MESSAGES = [
    (completed(19, "CREATE_TOPICS", 7, {"topics": [{"name": "t", "numPartitions": 3, "replicationFactor": 2,
                                                    "assignments": [{"partitionIndex": 0, "brokerIds": [1, 2]}],
                                                    "configs": [{"name": "x.password", "value": SECRET}]}],
                                        "timeoutMs": 1, "validateOnly": False}, {"topics": [{"errorCode": 0}]}),
     REQUEST_LOGGER),
    (completed(44, "INCREMENTAL_ALTER_CONFIGS", 1, {"resources": [{"resourceType": 4, "resourceName": "",
                                                                   "configs": [{"name": "sasl.jaas.config",
                                                                                "configOperation": 0,
                                                                                "value": SECRET}]}],
                                                    "validateOnly": False}, {"responses": []}, family="4.x"),
     REQUEST_LOGGER),
    (completed(51, "ALTER_USER_SCRAM_CREDENTIALS", 0, {"deletions": [], "upsertions": [
        {"name": "u", "mechanism": 1, "iterations": 4096, "salt": SALTED, "saltedPassword": SALTED}]}, {}),
     REQUEST_LOGGER),
    (completed(45, "ALTER_PARTITION_REASSIGNMENTS", 0, {"timeoutMs": 1, "topics": [{"name": "t", "partitions": [
        {"partitionIndex": 0, "replicas": None}]}]}, {"errorCode": 0}, forwarded=True), REQUEST_LOGGER),
    (completed(43, "ELECT_LEADERS", 2, {"electionType": 1, "topicPartitions": None, "timeoutMs": 1}, {}),
     REQUEST_LOGGER),
    (completed(1, "FETCH", 16, {"replicaId": 2}, {}), REQUEST_LOGGER),
    (acl_authorizer("User:a", True, "Alter", "10.0.0.5", "Topic:LITERAL:t", "CreateTopics"), AUTHORIZER_LOGGER),
    (standard_authorizer("User:a", False, "ALTER", "::1", "Topic:LITERAL:t", "ElectLeaders",
                         matching_acl("TOPIC", "t", "LITERAL", "User:a", "ALTER", "DENY")), AUTHORIZER_LOGGER),
    (simple_acl("User:a", True, "Delete", "10.0.0.5", "Topic:LITERAL:t"), AUTHORIZER_LOGGER),
]
PIECES = ["9" * 5000, "-1", "null", "true", "\"\"", "[]", "{}", "1e999", "\x00", "\ufffd", " is Allowed ",
          " for request = ", "\n", "\r", "(kafka.request.logger)", ",", ":", "\"", "\\", "2147483648", "[" * 2000]


@st.composite
def damaged_message(draw: st.DrawFn) -> tuple[str, str]:
    text, logger = draw(st.sampled_from(MESSAGES))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        n = draw(st.integers(0, 8))
        text = text[:at] + draw(st.sampled_from(PIECES) | st.text(max_size=4)) + text[at + n:]
    return text, logger


def as_log(messages: list[tuple[str, str]]) -> bytes:
    return "".join(log4j(m, logger, "INFO" if " is Denied " in m else "DEBUG") + "\n"
                   for m, logger in messages).encode("utf-8", "surrogatepass")


LOG = as_log(MESSAGES)


def read_bytes(data: bytes, golden: bool = False) -> Reading | None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "kafka-request.log"
        p.write_bytes(data)
        reading = Reading()

        def run() -> Reading:
            for record in read_file(p, reading):
                assert SALTED not in repr(record), record  # never kept, whatever the damage
                for c in record.body.configs if record.body else ():
                    # the archive's rules applied to every config kept (a damaged name may no longer be a
                    # secret's name: then the rules cannot know its value is one)
                    assert not is_sensitive(c.name) or c.value in (REDACTED, None), c
                if golden:
                    assert SECRET not in repr(record), record
            return reading
        return only_contract_errors(run)  # type: ignore[no-any-return]


def test_the_golden_lines_are_all_read():
    reading = read_bytes(LOG, golden=True)
    assert reading is not None and reading.gaps == {} and reading.kept == len(MESSAGES) - 1


@fuzz_settings(300)
@given(st.lists(damaged_message(), min_size=1, max_size=6))
@pytest.mark.slow
def test_fuzz_damaged_lines(messages):
    try:
        data = as_log(messages)
    except UnicodeEncodeError:  # a lone surrogate hypothesis drew: not a file anyone can write
        return
    reading = read_bytes(data)
    if reading is not None:
        # every line in the layout is kept, passed, another logger's, or named in a gap
        assert reading.lines <= reading.kept + sum(reading.passed.values()) + reading.other_loggers \
            + reading.not_read


@fuzz_settings(200)
@given(st.one_of(damaged(LOG), damaged(LOG), st.binary(max_size=4096)))
@pytest.mark.slow
def test_fuzz_damaged_files(data):
    read_bytes(data)
