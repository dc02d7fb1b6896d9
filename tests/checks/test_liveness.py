"""The bounded-liveness checks (severity warning) as the report and the CLI show them: an obligation met late is a
warning that leaves the exit code alone unless `--fail-on warning`; one still open at the end of the history is
pending, never a violation; a source that records nothing to judge is "no data"; `--deadline NAME=DURATION`
moves the line, the same for DuckDB and the live checker. (Each check's rules: the handmade histories of
cases_liveness.py, through test_duckdb_cases, test_live and test_spark.)"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from checks.catalog import BY_NAME, CATALOG, DEFAULT_DEADLINES, NAMES
from checks.deadlines import parse, parse_duration, show_duration
from checks.duckdb_engine import DuckDBEngine
from checks.inputs import BadInput
from checks.live import LiveChecker
from checks.report import FAIL, NO_DATA, PASS, WARN, junit_xml
from checks.run import check
from ctrlaudit.cli import app
from schemas.archive import flat
from schemas.codec import to_avro
from tests.checks.cases import CLEAN, VIOLATING

LIVENESS = [inv.name for inv in CATALOG if inv.deadline]


def _history(case: str):
    make = VIOLATING[case][1] if case in VIOLATING else CLEAN[case]
    return make(case)


def _rows(case: str, deadlines=()):
    eng = DuckDBEngine.from_arrow(flat.to_arrow([flat.flatten(to_avro(e)) for e in _history(case).chained()]))
    eng.deadlines = deadlines
    try:
        return eng.violations(NAMES)
    finally:
        eng.close()


def test_the_catalog_gives_every_liveness_check_a_warning_severity_a_default_and_a_reason():
    assert set(LIVENESS) == {"leader_elected", "reassignment_completes", "broker_unfenced", "replication_progress",
                             "controller_heartbeat"}
    for name in LIVENESS:
        inv = BY_NAME[name]
        assert inv.severity == "warning" and inv.deadline is not None and len(inv.deadline.why) > 80
        assert DEFAULT_DEADLINES[name] == inv.deadline.default_ms > 0
        assert "{deadline_ms()}" in inv.sql_path.read_text()
    assert all(BY_NAME[n].severity == "error" and BY_NAME[n].deadline is None for n in NAMES if n not in LIVENESS)


@pytest.mark.parametrize("text,ms", [("500ms", 500), ("5s", 5000), ("10m", 600_000), ("10min", 600_000),
                                     ("1h30m", 5_400_000), ("2d", 172_800_000), ("0", 0), ("1.5s", 1500)])
def test_durations(text, ms):
    assert parse_duration(text) == ms
    assert parse_duration(show_duration(ms)) == ms


@pytest.mark.parametrize("text", ["", "10", "5 parsecs", "s", "1h 30x", "-5s"])
def test_bad_durations_are_refused(text):
    with pytest.raises(BadInput):
        parse_duration(text)


def test_deadline_flags_name_a_liveness_check():
    assert parse(["broker_unfenced=30m", "leader_elected=0", "broker_unfenced=1h"]) == (
        ("broker_unfenced", 3_600_000), ("leader_elected", 0))
    for bad in (["leader_in_isr=5s"], ["nonsense=5s"], ["broker_unfenced"], ["broker_unfenced=soon"]):
        with pytest.raises(BadInput):
            parse(bad)


def test_an_obligation_open_at_the_end_is_pending_never_violated():
    rows = _rows("clean_reassignment_open_at_the_end")
    mine = [r for r in rows if r[0] == "reassignment_completes"]
    assert [(r[4], r[5], r[3]) for r in mine] == [("reassignment_not_ended", "pending", None)]
    assert mine[0][9] >= 2 * 3_600_000  # how long it has been open, to the last event
    # live: pending too, at the end
    checker = LiveChecker()
    checker.observe_all(_history("clean_reassignment_open_at_the_end").chained())
    assert [(a.invariant, a.status, a.seq) for a in checker.finish() if a.invariant == "reassignment_completes"] == \
        [("reassignment_completes", "pending", mine[0][2])]


@pytest.mark.parametrize("case,name,deadline,violated", [
    ("clean_leader_elected_within_deadline", "leader_elected", 3000, True),
    ("leader_not_elected_in_time", "leader_elected", 10_000, False),
    ("clean_reassignment_cancelled_in_time", "reassignment_completes", 40 * 60_000, True),
    ("broker_fenced_too_long", "broker_unfenced", 20 * 60_000, False),
    ("clean_replica_catches_up_in_time", "replication_progress", 30_000, True),
    ("metadata_log_silent", "controller_heartbeat", 20_000, False),
])
def test_a_deadline_given_moves_the_line_for_duckdb_and_live(case, name, deadline, violated):
    deadlines = ((name, deadline),)
    got = [r for r in _rows(case, deadlines) if r[0] == name and r[5] == "violated"]
    assert bool(got) == violated
    live = LiveChecker(deadlines=deadlines).observe_all(_history(case).chained())
    assert [(a.seq, a.related_seq, a.magnitude) for a in live if a.invariant == name and a.status == "violated"] == \
        [(r[2], r[3], r[9]) for r in got]


def test_zookeeper_mode_has_no_metadata_log_to_judge_silence_by():
    rows = [r for r in _rows("zk_baseline") if r[0] == "controller_heartbeat"]
    assert [(r[4], r[5], r[2]) for r in rows] == [("no_metadata_log", "no data", 0)]


@pytest.fixture(scope="module")
def late(tmp_path_factory):
    """An archive with one late obligation (a reassignment of two hours) and nothing else wrong."""
    return _history("reassignment_outlasts_deadline").write(tmp_path_factory.mktemp("late") / "events.avro")


def test_a_late_obligation_is_a_warning_that_leaves_the_report_valid(late):
    report = check(late)
    by = {r.invariant.name: r for r in report.results}
    assert by["reassignment_completes"].status == WARN and by["reassignment_completes"].violations == 1
    assert report.valid and report.warnings == 1
    assert all(r.status != FAIL for r in report.results)
    j = report.to_json()
    assert j["valid"] is True and j["warnings"] == 1 and j["fail_on"] == "error"
    inv = next(i for i in j["invariants"] if i["name"] == "reassignment_completes")
    assert (inv["severity"], inv["status"], inv["deadline_ms"], inv["pending"]) == ("warning", WARN, 3_600_000, 0)
    assert inv["examples"][0]["rule"] == "reassignment_not_ended"
    # JUnit: said in the case's output, not a failure
    suite = junit_xml(report).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "reassignment_completes")
    assert case.find("failure") is None and "WARNING" in (case.findtext("system-err") or "")


def test_fail_on_warning_makes_it_fail(late):
    report = check(late, fail_on="warning")
    assert not report.valid and report.to_json()["valid"] is False
    suite = junit_xml(report).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "reassignment_completes")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "LivenessWarning"
    with pytest.raises(BadInput):
        check(late, fail_on="info")


def test_a_longer_deadline_passes_it(late):
    report = check(late, deadlines=(("reassignment_completes", 3 * 3_600_000),))
    by = {r.invariant.name: r for r in report.results}
    assert by["reassignment_completes"].status == PASS and report.warnings == 0
    assert by["reassignment_completes"].to_json()["deadline_ms"] == 3 * 3_600_000


def test_no_data_and_pending_in_the_report(tmp_path):
    zk = check(_history("zk_baseline").write(tmp_path / "zk.avro"))
    beat = next(r for r in zk.results if r.invariant.name == "controller_heartbeat")
    assert beat.status == NO_DATA and beat.missing_data == ["no_metadata_log (1)"]
    open_end = check(_history("clean_reassignment_open_at_the_end").write(tmp_path / "open.avro"))
    rc = next(r for r in open_end.results if r.invariant.name == "reassignment_completes")
    assert (rc.status, rc.violations, rc.pending) == (PASS, 0, 1) and open_end.valid
    assert rc.pending_examples[0]["rule"] == "reassignment_not_ended"


def test_cli_exit_codes_and_flags(late, tmp_path):
    runner = CliRunner()
    done = runner.invoke(app, ["check", str(late), "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")])
    assert done.exit_code == 0, done.output
    assert "warning" in done.output
    assert json.loads((tmp_path / "r.json").read_text())["warnings"] == 1
    assert ET.parse(tmp_path / "r.xml").getroot().get("failures") == "0"
    done = runner.invoke(app, ["check", str(late), "--fail-on", "warning"])
    assert done.exit_code == 1, done.output
    done = runner.invoke(app, ["check", str(late), "--fail-on", "warning", "--deadline", "reassignment_completes=3h"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["check", str(late), "--deadline", "reassignment_completes=soon"])
    assert done.exit_code == 2


@pytest.mark.spark
def test_spark_takes_the_deadlines_given(spark):
    """Spark runs the bounded-liveness queries with the deadlines given, as DuckDB (the handmade histories at the
    default deadlines: tests/checks/test_spark.py)."""
    from checks.spark_engine import SparkEngine

    cases = ["clean_leader_elected_within_deadline", "clean_reassignment_cancelled_in_time",
             "clean_replica_catches_up_in_time", "broker_fenced_too_long", "clean_reassignment_open_at_the_end",
             "zk_baseline"]
    table = flat.to_arrow([flat.flatten(to_avro(e)) for c in cases for e in _history(c).chained()])
    deadlines = (("broker_unfenced", 20 * 60_000), ("leader_elected", 3000), ("reassignment_completes", 40 * 60_000),
                 ("replication_progress", 30_000))
    duck = DuckDBEngine.from_arrow(table)
    duck.deadlines = deadlines
    eng = SparkEngine.from_arrow(spark, table)
    eng.deadlines = deadlines
    try:
        want = duck.violations(LIVENESS)
        assert eng.violations(LIVENESS) == want
        assert {r[0] for r in want if r[5] == "violated"} == {"leader_elected", "reassignment_completes",
                                                             "replication_progress"}
        assert {r[5] for r in want} == {"violated", "pending", "no data"}
    finally:
        eng.close()
        duck.close()
