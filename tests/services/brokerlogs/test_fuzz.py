"""Fuzzing the brokers' log readers (services.brokerlogs: the line parser and what each line states) and the
import behind `ctrlaudit import logs`: the golden lines of test_evidence.py with their text damaged (numbers
too long for any int, other digits, characters dropped, inserted, repeated), whole log files built from them
damaged as bytes, and random bytes. Only the project's contract errors may escape (tests/fuzzing.py, which
also says how to run longer)."""
from __future__ import annotations

import ast
import gzip
import tempfile
from pathlib import Path

import pytest

from hypothesis import given
from hypothesis import strategies as st

from services.brokerlogs.evidence import evidence
from services.brokerlogs.offline import import_log_events
from tests.fuzzing import damaged, fuzz_settings, only_contract_errors
from tests.services.brokerlogs.test_evidence import KRAFT_LINES


def _golden_messages() -> list[str]:
    """The messages test_evidence.py reads (every string literal given to evidence(), and its table's KRaft lines)."""
    tree = ast.parse((Path(__file__).parent / "test_evidence.py").read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "evidence" and node.args:
            try:
                found.append(ast.literal_eval(node.args[0]))
            except ValueError:
                continue
    return [m for m in found if isinstance(m, str)] + [line for _, line, _ in KRAFT_LINES]


MESSAGES = _golden_messages()
PIECES = ["9" * 5000, "-" + "1" * 4400, "٣", "𝟗", "", " ", ",", "(", ")", "[", "]", "=", "-1", "null", "\x00",
          "\ufffd", "List(", "->", "2147483648", "99999999999999999999"]


@st.composite
def damaged_message(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(MESSAGES))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        n = draw(st.integers(0, 8))
        text = text[:at] + draw(st.sampled_from(PIECES) | st.text(max_size=4)) + text[at + n:]
    return text


def as_log(messages: list[str]) -> bytes:
    return "".join(f"[2026-11-24 10:00:{i % 60:02d},{i % 1000:03d}] INFO {m} (state.change.logger)\n"
                   for i, m in enumerate(messages)).encode()


LOG = as_log(MESSAGES)


def import_logs(data: bytes, gz: bool = False) -> None:
    with tempfile.TemporaryDirectory() as d:
        name = "state-change.log" + (".1.gz" if gz else "")
        f = Path(d) / name
        f.write_bytes(gzip.compress(data) if gz else data)
        only_contract_errors(lambda: list(import_log_events([d], "c")))


def test_the_samples_state_something():
    assert len(MESSAGES) >= 30 and sum(bool(evidence(m)) for m in MESSAGES) >= 25
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "state-change.log").write_bytes(LOG)
        assert len(list(import_log_events([d], "c"))) > 20


@fuzz_settings(ci_examples=600)
@given(message=damaged_message())
@pytest.mark.slow
def test_fuzz_a_damaged_line(message):
    only_contract_errors(lambda: evidence(message))


@fuzz_settings(ci_examples=150)
@given(messages=st.lists(damaged_message() | st.sampled_from(MESSAGES), min_size=1, max_size=30))
@pytest.mark.slow
def test_fuzz_a_log_of_damaged_lines(messages):
    import_logs(as_log(messages))


@fuzz_settings(ci_examples=300)
@given(data=st.one_of(damaged(LOG), st.binary(max_size=2048)), gz=st.booleans())
def test_fuzz_a_damaged_log_file(data, gz):
    import_logs(data, gz)


# --- what the fuzzers found, kept as plain tests ----------------------------------------------------------

def test_a_line_with_a_time_no_clock_writes_is_counted_not_read(tmp_path):
    from services.normalize.imports import ImportReport

    log = LOG.replace(b"[2026-11-24 10:00:00,000]", b"[2026-31-24 10:00:00,000]", 1)
    (tmp_path / "state-change.log").write_bytes(log)
    report = ImportReport()
    assert list(import_log_events([tmp_path], "c", report=report))
    assert any("1 line(s) not in the log4j layout" in g and "state-change.log:1)" in g for g in report.gaps), report.gaps


def test_a_line_with_a_number_beyond_kafkas_types_is_named_not_read(tmp_path):
    from services.normalize.imports import ImportReport

    line = "[Controller id=3] Updated leader epoch for partition t-0 to 2, zkVersion=" + "9"
    for digits in (12, 5000):  # beyond int32, beyond what Python converts
        (tmp_path / "state-change.log").write_bytes(as_log([MESSAGES[0], line + "9" * digits]))
        report = ImportReport()
        list(import_log_events([tmp_path], "c", report=report))
        assert any("state-change.log:2: not read:" in g for g in report.gaps), report.gaps
