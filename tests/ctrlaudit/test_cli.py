"""The CLI end to end on a simulated history: outputs, exit codes, one-line user errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay import queries
from replay.store import Store
from tests.ctrlaudit.conftest import run


def test_help_lists_every_command() -> None:
    out = run("--help").output
    for command in ("simulate", "load", "state", "diff", "timeline", "explain", "check"):
        assert command in out


def test_state_describe_matches_the_store(history: dict[str, Path]) -> None:
    store = str(history["store"])
    with Store(store, read_only=True) as s:
        point = s.point(offset=500)
        expected = queries.state_as_of(s, point)
    done = run("state", "--store", store, "--offset", "500")
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0].startswith(f"# cluster sim-3 as of seq {point.seq} (offset {point.source_offset},")
    partition_lines = [l for l in lines if l.startswith("\tTopic: ")]
    assert len(partition_lines) == len(expected.partitions)
    first = expected.partitions[0]
    leader = first.state.leader if first.state.leader >= 0 else "none"
    assert any(l.startswith(f"\tTopic: {first.topic}\tPartition: {first.partition}\tLeader: {leader}\t")
               for l in partition_lines)


def test_state_json_is_as_of_the_requested_time(history: dict[str, Path]) -> None:
    store = str(history["store"])
    with Store(store, read_only=True) as s:
        point = s.point(seq=1200)
    done = run("state", "--store", store, "--time", str(point.event_time_ms), "--format", "json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert doc["as_of"]["event_time_ms"] == point.event_time_ms
    assert doc["as_of"]["seq"] >= point.seq


def test_time_as_date_prints_it(history: dict[str, Path]) -> None:
    """`--time "$(date -u)"`: date's own layout is a time; a zone that names no one offset is one line, exit 2."""
    store = str(history["store"])
    iso = run("state", "--store", store, "--time", "2025-01-01T00:01:00Z", "--format", "json")
    dated = run("state", "--store", store, "--time", "Wed Jan  1 00:01:00 UTC 2025", "--format", "json")
    assert dated.exit_code == 0, dated.output
    assert json.loads(dated.output)["as_of"] == json.loads(iso.output)["as_of"]
    refused = run("state", "--store", store, "--time", "Wed Jan  1 01:01:00 CET 2025")
    assert refused.exit_code == 2 and refused.output.count("\n") == 1
    assert refused.output.startswith("ctrlaudit: error: time 'Wed Jan  1 01:01:00 CET 2025': the zone CET")


def test_diff_timeline_explain(history: dict[str, Path]) -> None:
    store = str(history["store"])
    diff = run("diff", "--store", store, "--from-offset", "100", "--to-offset", "900")
    assert diff.exit_code == 0, diff.output
    assert " -> " in diff.output
    topic = json.loads(run("state", "--store", store, "--format", "json").output)["partitions"][0]["topic"]
    timeline = run("timeline", "--store", store, "--topic", topic, "--partition", "0", "--format", "json")
    assert timeline.exit_code == 0, timeline.output
    changes = json.loads(timeline.output)["changes"]
    assert changes and [c["seq"] for c in changes] == sorted(c["seq"] for c in changes)
    explain = run("explain", "--store", store, "--seq", str(changes[-1]["seq"]), "--format", "json")
    assert explain.exit_code == 0, explain.output
    assert json.loads(explain.output)["change"]["seq"] == changes[-1]["seq"]


@pytest.mark.parametrize("args, message", [
    (["state", "--store", "{root}/missing.duckdb"], "missing.duckdb: no such store"),
    (["state", "--store", "{store}", "--time", "last tuesday"], "last tuesday"),
    (["state", "--store", "{store}", "--topic", "no-such-topic"], "topic 'no-such-topic' does not exist"),
    (["state", "--store", "{store}", "--partition", "1"], "--partition needs --topic"),
    (["state", "--store", "{store}", "--offset", "-5"], "at or before offset -5"),
    (["explain", "--store", "{store}"], "exactly one of seq, event id, offset"),
    (["load", "{root}/notes.avro", "--store", "{root}/x.duckdb"], "notes.avro: not an Avro object container file"),
    (["simulate", "--out", "{root}/o", "--inject", "nonsense@5"], "unknown invariant 'nonsense'"),
    (["simulate", "--out", "{root}/o", "--inject", "leader_in_isr"], "expected NAME@EVENT_INDEX"),
])
def test_user_errors_are_one_line_and_exit_2(history: dict[str, Path], args: list[str], message: str) -> None:
    (history["root"] / "notes.avro").write_text("not an archive\n")
    args = [a.format(root=history["root"], store=history["store"]) for a in args]
    done = run(*args)
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    errors = [l for l in done.output.splitlines() if l.startswith("ctrlaudit: error: ")]
    assert len(errors) == 1 and message in errors[0], done.output


def test_loading_twice_adds_nothing(history: dict[str, Path]) -> None:
    store = str(history["root"] / "twice.duckdb")
    first = run("load", str(history["archive"]), "--store", store, "--workers", "1")
    second = run("load", str(history["archive"]), "--store", store, "--workers", "1")
    assert "added 3,000" in first.output
    assert "added 0, already present 3,000" in second.output
