"""ctrlaudit.check_run.run_check: exit codes, bad input as one line, JSON and JUnit output (DuckDB engine)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import duckdb
import pytest
from rich.console import Console

from checks.catalog import NAMES
from schemas.archive.flat import STORE_LAYOUT_VERSION
from ctrlaudit.check_run import run_check
from tests.checks.cases import CLEAN, VIOLATING


def quiet():
    return Console(file=open("/dev/null", "w"))


@pytest.fixture
def clean_file(tmp_path):
    return CLEAN["clean_baseline"]("c1").write(tmp_path / "clean.avro")


@pytest.fixture
def bad_file(tmp_path):
    return VIOLATING["hw_above_leo"][1]("c2").write(tmp_path / "bad.avro")


def test_clean_exits_0(clean_file):
    assert run_check([clean_file], console=quiet()) == 0


def test_violation_exits_1_and_allow_turns_it_to_0(bad_file):
    assert run_check([bad_file], console=quiet()) == 1
    assert run_check([bad_file], allow=["valid_high_watermark"], console=quiet()) == 0


def test_json_and_junit(bad_file, tmp_path):
    j, x = tmp_path / "r.json", tmp_path / "r.xml"
    assert run_check([bad_file], json_path=j, junit_path=x, console=quiet()) == 1
    report = json.loads(j.read_text())
    assert report["valid"] is False and report["events"] > 20
    by = {r["name"]: r for r in report["invariants"]}
    assert set(by) == set(NAMES)
    hw = by["valid_high_watermark"]
    assert hw["status"] == "fail" and hw["violations"] == 1
    ex = hw["examples"][0]
    assert ex["rule"] == "hw_above_isr_member_leo" and ex["magnitude"] == 10
    assert ex["event"]["kind"] == "OffsetSample" and len(ex["event"]["event_id"]) == 32
    assert ex["event"]["source"]["kind"] == "SIMULATOR" and ex["event"]["source"]["offset"] == 1000 + ex["seq"]
    assert ex["related_event"]["kind"] == "PartitionChange" and ex["related_event"]["after"]["isr"] == [2, 4]
    assert by["unclean_election_allowed"]["status"] == "allowed"
    assert any("topic config" in k for k in by["unclean_election_allowed"]["allowances_applied"])

    root = ET.parse(x).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == set(NAMES)
    failure = cases["valid_high_watermark"].find("failure")
    assert failure is not None and "1 violation" in failure.get("message")
    assert "seq" in failure.text and "hw 200" in failure.text
    assert cases["leader_in_isr"].find("failure") is None
    assert "allowed" in cases["unclean_election_allowed"].find("system-out").text


def test_missing_data_is_reported_not_passed(tmp_path):
    from tests.checks.histories import History

    h = History("nodata")
    h.create("t", 0, (1, 2, 3))
    path = h.write(tmp_path / "t.avro")
    j = tmp_path / "r.json"
    assert run_check([path], json_path=j, console=quiet()) == 0
    report = json.loads(j.read_text())
    assert report["summary"]["valid_high_watermark"] == "no data"
    assert report["summary"]["leader_in_isr"] == "pass"


def _bad(capsys, inputs, code=2, **kw):
    assert run_check(inputs, console=quiet(), **kw) == code
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_bad_inputs_exit_2_with_one_line(capsys, tmp_path, clean_file):
    empty = tmp_path / "empty.avro"
    from schemas.archive.container import write_events
    write_events(empty, [])
    # an archive file without its manifest cannot be verified: refused like a broken archive (exit 1)
    assert "no manifest" in _bad(capsys, [empty], code=1)
    assert "no such file" in _bad(capsys, [tmp_path / "nope.avro"])
    junk = tmp_path / "junk.avro"
    junk.write_bytes(b"hello world, not avro")
    assert "neither" in _bad(capsys, [junk])
    corrupt = tmp_path / "corrupt.avro"
    data = clean_file.read_bytes()
    corrupt.write_bytes(data[: len(data) // 2] + b"\xff" * 50)
    manifest = clean_file.with_name(clean_file.name + ".manifest.json")
    (tmp_path / "corrupt.avro.manifest.json").write_text(manifest.read_text())
    assert "corrupt" in _bad(capsys, [corrupt], code=1)
    assert "unknown invariant" in _bad(capsys, [clean_file], allow=["no_such_invariant"])
    (tmp_path / "emptydir").mkdir()
    assert "no *.avro" in _bad(capsys, [tmp_path / "emptydir"])


def test_store_of_another_layout_version(capsys, tmp_path, clean_file):
    from checks.inputs import archives_to_arrow

    table = archives_to_arrow([clean_file])
    good, old, foreign = tmp_path / "good.duckdb", tmp_path / "old.duckdb", tmp_path / "foreign.duckdb"
    for path, version in ((good, STORE_LAYOUT_VERSION), (old, 0)):
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE store_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute("INSERT INTO store_meta VALUES ('layout_version', ?)", [str(version)])
        con.register("t", table)
        con.execute("CREATE TABLE events AS SELECT * FROM t")
        con.close()
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE events (seq BIGINT, x VARCHAR)")
    con.close()
    assert run_check([good], console=quiet()) == 0
    assert "layout version 0" in _bad(capsys, [old])
    assert "store_meta" in _bad(capsys, [foreign])


def test_store_layout_version_is_the_one_replay_writes():
    from replay import store

    assert store.LAYOUT_VERSION is STORE_LAYOUT_VERSION  # one constant (schemas.archive.flat), not two kept equal


def test_a_replay_store_is_checked_like_its_archive(tmp_path, bad_file):
    store = pytest.importorskip("replay.store")
    if not hasattr(store, "Store"):
        pytest.skip("replay.store has no Store class")
    path = tmp_path / "s.duckdb"
    try:
        with store.Store(path) as s:
            s.load([bad_file])
    except (TypeError, AttributeError) as exc:
        pytest.skip(f"replay store API differs: {exc}")
    j1, j2 = tmp_path / "a.json", tmp_path / "b.json"
    assert run_check([path], json_path=j1, console=quiet()) == 1
    assert run_check([bad_file], json_path=j2, console=quiet()) == 1
    a, b = json.loads(j1.read_text()), json.loads(j2.read_text())
    assert a["invariants"] == b["invariants"]


def test_memory_limit_caps_duckdb_and_changes_no_answer(tmp_path, bad_file, capsys):
    from checks.duckdb_engine import DuckDBEngine
    from checks.inputs import resolve

    eng = DuckDBEngine.from_inputs(resolve([bad_file]))
    try:
        eng.limit_memory("64MB")
        limit = eng.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        assert limit.replace(" ", "") in ("61.0MiB", "64.0MB", "61.0MB"), limit
    finally:
        eng.close()
    j1, j2 = tmp_path / "a.json", tmp_path / "b.json"
    assert run_check([bad_file], json_path=j1, console=quiet(), memory_limit="64MB") == 1
    assert run_check([bad_file], json_path=j2, console=quiet()) == 1
    assert json.loads(j1.read_text())["invariants"] == json.loads(j2.read_text())["invariants"]
    capsys.readouterr()
    assert run_check([bad_file], console=quiet(), memory_limit="lots") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--memory-limit 'lots'" in err[0]
    assert run_check([bad_file], console=quiet(), engine="spark", memory_limit="1GB") == 2
    assert "spark.driver.memory" in capsys.readouterr().err
