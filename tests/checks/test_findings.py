"""checks.findings: the report's counts, worst examples and CSV, computed in DuckDB, equal what the
report computed over Python objects before (the reference below), on findings with ties, NULLs,
gaps and --allow; and the CSV DuckDB writes reads back as those rows."""
from __future__ import annotations

import csv
import random
from collections import Counter
from typing import Any

import pytest

from checks.catalog import BY_NAME, NAMES, VIOLATION_COLUMNS
from checks.findings import BATCH, Findings, sort_key
from checks.report import WORST, build
from ctrlaudit.check_run import write_csv
from schemas.errors import ContractError
from schemas.archive.verified import Gap, no_data_gap

HISTORY = [n for n in NAMES if BY_NAME[n].history]
ONE_EVENT = [n for n in NAMES if not BY_NAME[n].history]


def _rows(seed: int, n: int) -> list[tuple[Any, ...]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        out.append((
            rnd.choice(list(NAMES[:5]) + ONE_EVENT[:1]), rnd.choice(["c1", "c2", "Ä", "c10"]), rnd.randrange(0, 60),
            rnd.choice([None, rnd.randrange(0, 60)]), rnd.choice(["r_a", "r_b", "R"]),
            rnd.choice(["violated", "violated", "allowed"]), rnd.choice([None, "known anomaly", "x"]),
            rnd.choice([None, "", "1", "[1, 2]", "a,b"]), rnd.choice([None, "2", 'say "x"', "line\nbreak"]),
            rnd.choice([None, 0, 1, 5, 5, 5, 9]),
        ))
    return sorted(out, key=sort_key)  # as the engines give them


def _reference(rows, allow, gaps):
    """The report's condensation as it was over Python objects (checks/report.py before findings.py)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    in_gaps: Counter[str] = Counter()
    for values in rows:
        v = dict(zip(VIOLATION_COLUMNS, values))
        if gaps and v["status"] == "violated" and BY_NAME[v["invariant"]].history and \
                no_data_gap(gaps, v["cluster_id"], v["seq"], v["related_seq"]) is not None:
            in_gaps[v["invariant"]] += 1
            continue
        if v["status"] == "violated" and v["invariant"] in allow:
            v["status"], v["allowance"] = "allowed", "--allow " + v["invariant"]
        by_name.setdefault(v["invariant"], []).append(v)

    def rank(v):
        return (-(v["magnitude"] or 0), v["cluster_id"], v["seq"], v["rule"])

    out = {}
    for name, vs in by_name.items():
        mags: Counter[str] = Counter()
        for v in vs:
            if v["magnitude"] is not None:
                mags[v["rule"]] += v["magnitude"]
        out[name] = {
            "violations": sum(v["status"] == "violated" for v in vs),
            "allowed": sum(v["status"] != "violated" for v in vs),
            "rules": dict(Counter(v["rule"] for v in vs)),
            "allowances": dict(Counter(v["allowance"] for v in vs if v["status"] == "allowed")),
            "magnitudes": dict(mags), "in_gaps": in_gaps[name],
            "worst": [(v["cluster_id"], v["seq"], v["rule"], v["related_seq"]) for v in
                      sorted((v for v in vs if v["status"] == "violated"), key=rank)[:WORST]],
            "worst_allowed": [(v["cluster_id"], v["seq"], v["rule"], v["related_seq"]) for v in
                              sorted((v for v in vs if v["status"] == "allowed"), key=rank)[:WORST]],
        }
    for name in in_gaps:
        out.setdefault(name, {"violations": 0, "allowed": 0, "in_gaps": in_gaps[name]})
    findings = sorted((v for vs in by_name.values() for v in vs),
                      key=lambda v: (v["invariant"], v["cluster_id"], v["seq"], v["rule"]))
    return out, findings


@pytest.mark.parametrize("seed,allow,with_gaps", [(1, [], False), (2, [NAMES[1]], True), (3, list(NAMES[:3]), True),
                                                 (4, [], True)])
def test_report_equals_the_python_reference(seed, allow, with_gaps, tmp_path):
    rows = _rows(seed, 3000)
    gaps = [Gap("c1", 10, 20, "a missing file"), Gap("Ä", 40, 41, "a broken link")] if with_gaps else []
    want, want_rows = _reference(rows, allow, gaps)
    found = Findings.of_rows(reversed(rows))  # the table's order must not matter
    try:
        assert found.rows() == rows
        report = build("test", [], {"PartitionChange": 1}, ["c1"], list(NAMES), found, allow, lambda keys: {},
                       gaps=gaps)
        for r in report.results:
            w = want.get(r.invariant.name)
            if w is None:
                assert (r.violations, r.allowed, r.in_gaps) == (0, 0, 0)
                continue
            assert (r.violations, r.allowed, r.in_gaps) == (w["violations"], w["allowed"], w["in_gaps"])
            if "rules" not in w:
                continue
            assert r.rules == w["rules"] and r.allowances == w["allowances"] and r.magnitudes == w["magnitudes"]
            assert [(x["cluster_id"], x["seq"], x["rule"], x["related_seq"]) for x in r.examples] == w["worst"]
            assert [(x["cluster_id"], x["seq"], x["rule"], x["related_seq"]) for x in r.allowed_examples] == \
                w["worst_allowed"]
        write_csv(found, tmp_path / "f.csv")
    finally:
        found.close()
    got = list(csv.reader((tmp_path / "f.csv").open(newline="")))
    assert got[0] == list(VIOLATION_COLUMNS)
    assert got[1:] == [["" if v[c] is None else str(v[c]) for c in VIOLATION_COLUMNS] for v in want_rows]
    assert len(got) > 100  # quotes, commas and line breaks in the values above
    assert not (tmp_path / "f.csv.part").exists()


def test_rows_in_more_than_one_batch_and_their_csv(tmp_path):
    rows = sorted((("leader_in_isr", "c", i, None, "r", "violated", None, "1", "2", None) for i in range(BATCH + 7)),
                  key=sort_key)
    found = Findings.of_rows(reversed(rows))
    try:
        assert found.rows() == rows
        build("test", [], {}, ["c"], ["leader_in_isr"], found, [], lambda keys: {})
        write_csv(found, tmp_path / "f.csv")
    finally:
        found.close()
    got = list(csv.reader((tmp_path / "f.csv").open(newline="")))
    assert len(got) == BATCH + 8 and [int(r[2]) for r in got[1:]] == list(range(BATCH + 7))


def test_a_failed_csv_write_leaves_no_file(tmp_path):
    found = Findings.of_rows([("leader_in_isr", "c", 1, None, "r", "violated", None, "1", "2", None)])
    try:
        build("test", [], {}, ["c"], ["leader_in_isr"], found, [], lambda keys: {})
        (tmp_path / "out.csv").mkdir()  # a directory where the file should go: refused, nothing written
        with pytest.raises(ContractError, match="a directory"):
            write_csv(found, tmp_path / "out.csv")
        (tmp_path / "full.csv").write_text("old\n")
        with pytest.raises(RuntimeError, match="stopped"), pytest.MonkeyPatch.context() as mp:
            mp.setattr(Findings, "write_csv", lambda self, path: (open(path, "w").write("half"),
                                                                    (_ for _ in ()).throw(RuntimeError("stopped"))))
            write_csv(found, tmp_path / "full.csv")
    finally:
        found.close()
    assert (tmp_path / "out.csv").is_dir() and (tmp_path / "full.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.csv", "out.csv"]  # no temporary file left


def test_csv_to_a_missing_directory_is_an_oserror_naming_it(tmp_path):
    found = Findings.of_rows([("leader_in_isr", "c", 1, None, "r", "violated", None, "1", "2", None)])
    try:
        build("test", [], {}, ["c"], ["leader_in_isr"], found, [], lambda keys: {})
        with pytest.raises(OSError, match="nowhere"):
            write_csv(found, tmp_path / "nowhere" / "out.csv")
    finally:
        found.close()


def test_csv_never_replaces_a_fifo_or_a_symlink(tmp_path):
    """The writer itself refuses what is not a regular file (the CLI refuses it before running, too): a
    rename over a FIFO, a device node or a link would replace it by a file."""
    import os
    import stat

    found = Findings.of_rows([("leader_in_isr", "c", 1, None, "r", "violated", None, "1", "2", None)])
    try:
        build("test", [], {}, ["c"], ["leader_in_isr"], found, [], lambda keys: {})
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(ContractError, match="a FIFO"):
            write_csv(found, tmp_path / "fifo")
        real = tmp_path / "real.csv"
        real.write_text("old")
        (tmp_path / "link.csv").symlink_to(real)
        with pytest.raises(ContractError, match="a symbolic link"):
            write_csv(found, tmp_path / "link.csv")
    finally:
        found.close()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode) and (tmp_path / "link.csv").is_symlink()
    assert real.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.csv", "real.csv"]
