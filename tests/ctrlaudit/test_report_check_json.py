"""`ctrlaudit report --check-json` on the real CLI: a check report is bound to the history it judged.

Another cluster's check and another history's (a fork: same cluster id, another chain) are refused with
one line naming both; a check that does not say what it judged (an older ctrlaudit's, a hand-made one)
or that judged past the end of the store is shown labelled "verdict not bound to this history"; one that
covers part of the window is labelled so. A file that is not a check report's shape is one line naming
the file and the field. Every refusal: exit 2, one line, no traceback, no page written, nothing changed."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from ctrlaudit.check_run import write_json
from checks.catalog import CATALOG
from checks.run import check
from replay.store import Store
from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import ctrlaudit, digest

N = len(CATALOG)  # the report counts every invariant of the catalog, the bounded-liveness ones too

SIM = {"topics": 3, "partitions": 4}


def _history(root: Path, name: str, seed: int, events: int, inject=(), **sim: Any) -> dict[str, Path]:
    """An archive, its store, and the check report of each."""
    archive, store = root / name, root / f"{name}.duckdb"
    simulate_to_archive(archive, SimConfig(seed=seed, events=events, **(SIM | sim)), inject, fsync=False)
    with Store(store) as s:
        s.load([archive], workers=1)
    write_json(check([str(store)]), root / f"{name}.check.json")
    return {"archive": archive, "store": store, "check": root / f"{name}.check.json"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("bound")
    w = {
        "root": root,
        "main": _history(root, "main", 3, 3000, [("leader_in_isr", 2000)]),  # cluster sim-3, seq 0..2999
        "other": _history(root, "other", 4, 2000),  # cluster sim-4
        "fork": _history(root, "fork", 3, 3000, topics=4),  # cluster sim-3 again, another history
        "prefix": _history(root, "prefix", 3, 2000),  # the main history's seq 0..1999
    }
    # the main history's archive copied elsewhere and checked there: the same identity
    copy = root / "elsewhere" / "copied"
    shutil.copytree(w["main"]["archive"], copy)
    write_json(check([str(copy)]), root / "copied.check.json")
    w["copied"] = root / "copied.check.json"
    # one store of two clusters, checked as one
    both = root / "both.duckdb"
    with Store(both) as s:
        s.load([w["main"]["archive"], w["other"]["archive"]], workers=1)
    write_json(check([str(both)]), root / "both.check.json")
    w["both"] = {"store": both, "check": root / "both.check.json"}
    return w


def _report(store: Path, checks: Path, out: Path, *args: str):
    return ctrlaudit("report", "--store", str(store), "--check-json", str(checks), "--out", str(out), *args)


def _refused(done, out: Path, *says: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctrlaudit: error: "), done.stderr
    for s in says:
        assert s in lines[0], (s, lines[0])
    assert not out.exists()
    return lines[0]


def _shown(done, out: Path) -> tuple[str, dict[str, Any]]:
    """The page and its window data block (with the verdict's binding)."""
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    block = page.split('<script type="application/json" id="report-window">', 1)[1].split("</script>", 1)[0]
    return page, json.loads(block)


def _edit(src: Path, dst: Path, change) -> Path:
    doc = json.loads(src.read_text())
    change(doc)
    dst.write_text(json.dumps(doc))
    return dst


@pytest.mark.slow
def test_the_check_json_names_the_history_it_judged(world):
    """Per cluster: the seq range and the chain's hash at its last seq, the same whichever copy was checked."""
    store = world["main"]["store"]
    with Store(store, read_only=True) as s:
        last = s.point()
        head = s.con.execute("SELECT hash FROM events WHERE seq = ?", [last.seq]).fetchone()[0]
    for path in (world["main"]["check"], world["copied"]):
        doc = json.loads(path.read_text())
        assert doc["clusters"] == ["sim-3"]
        assert [{k: c[k] for k in ("cluster_id", "first_seq", "last_seq", "head_hash")} for c in doc["chains"]] == [
            {"cluster_id": "sim-3", "first_seq": 0, "last_seq": last.seq, "head_hash": head}]
    assert json.loads(world["main"]["check"].read_text())["inputs"] == [str(store)]


@pytest.mark.parametrize("which", ["main", "copied"])
@pytest.mark.slow
def test_the_check_of_this_history_is_its_verdict(world, tmp_path, which):
    checks = world["main"]["check"] if which == "main" else world["copied"]
    out = tmp_path / "r.html"
    page, window = _shown(_report(world["main"]["store"], checks, out), out)
    assert window["verdict"] == {"bound": True, "notes": []}
    assert f"Invariants: {N - 1} of {N} hold; violated: leader_in_isr." in page
    assert 'class="verdict-note"' not in page
    assert re.search(r"<li>As of seq 2999 \(offset \d+, 2025-\d\d-\d\dT[\d:.]+Z\)", page)  # as the CLI says it
    # each invariant's row says where it comes from (the catalog's anchors)
    row = page.split("<td>leader_in_isr</td>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="anchor-name">LeaderInIsr</span>' in row and "hachikuji/kafka-specification" in row


@pytest.mark.slow
def test_another_clusters_check_is_refused(world, tmp_path):
    out = tmp_path / "r.html"
    before = digest(world["main"]["store"], world["other"]["check"])
    line = _refused(_report(world["main"]["store"], world["other"]["check"], out), out,
                    str(world["other"]["check"]), "cluster sim-4", "not of cluster sim-3", str(world["main"]["store"]))
    assert "not this history's" in line
    assert digest(world["main"]["store"], world["other"]["check"]) == before
    # so is an older ctrlaudit's report of it: it names its clusters, if not its chain
    old = _edit(world["other"]["check"], tmp_path / "old.json", lambda d: d.pop("chains"))
    _refused(_report(world["main"]["store"], old, out), out, "cluster sim-4", "not of cluster sim-3")
    # a name made to forge a second line, or to drown the first, stays within one readable line
    forged = _edit(world["other"]["check"], tmp_path / "forged.json", lambda d: d.update(
        clusters=["sim-4\nctrlaudit: report written\x1b[2K", "x" * 100_000], chains=[]))
    line = _refused(_report(world["main"]["store"], forged, out), out, "sim-4\\nctrlaudit: report written\\x1b[2K",
                    "…(100000 characters)")
    assert len(line) < 1000


def test_a_check_of_another_history_of_the_cluster_is_refused(world, tmp_path):
    """A fork: the same cluster id, another chain; at the check's last seq the hashes differ."""
    out = tmp_path / "r.html"
    fork = json.loads(world["fork"]["check"].read_text())["chains"][0]
    with Store(world["main"]["store"], read_only=True) as s:
        ours = s.con.execute("SELECT hash FROM events WHERE seq = ?", [fork["last_seq"]]).fetchone()[0]
    _refused(_report(world["main"]["store"], world["fork"]["check"], out), out, "another history of cluster sim-3",
             f"at seq {fork['last_seq']}", fork["head_hash"][:16], ours[:16], str(world["main"]["store"]))


@pytest.mark.slow
def test_a_check_that_does_not_say_what_it_judged_is_labelled_not_bound(world, tmp_path):
    out = tmp_path / "r.html"
    def older(doc: dict[str, Any]) -> None:  # its chains say how far they were verified, not what they were
        for c in doc["chains"]:
            del c["first_seq"], c["head_hash"]

    for name, change in (("older", older), ("before-chains", lambda d: d.pop("chains")), ("by-hand", older)):
        if name == "by-hand":
            change = lambda d: (older(d), d.pop("clusters"), d.pop("inputs"))  # noqa: E731 - names nothing at all
        unbound = _edit(world["main"]["check"], tmp_path / f"{name}.json", change)
        page, window = _shown(_report(world["main"]["store"], unbound, out), out)
        assert window["verdict"]["bound"] is False and window["verdict"]["notes"] == ["verdict not bound to this history"]
        assert f"Invariants (VERDICT NOT BOUND TO THIS HISTORY): {N - 1} of {N} hold" in page
        assert page.count('class="verdict-note"') == 2  # under the title and above the verdict table
        out.unlink()


@pytest.mark.slow
def test_a_check_of_part_of_the_window_is_labelled(world, tmp_path):
    out = tmp_path / "r.html"
    page, window = _shown(_report(world["main"]["store"], world["prefix"]["check"], out), out)
    assert window["verdict"] == {"bound": True, "notes": ["the check covers only seq 0..1999 of this window's seq 0..2999"]}
    assert f"Invariants (the check covers only seq 0..1999 of this window&#x27;s seq 0..2999): {N} of {N} hold." in page
    # a window inside what it judged is not labelled
    out.unlink()
    with Store(world["main"]["store"], read_only=True) as s:
        to = str(s.point(seq=1500).event_time_ms)
    _, window = _shown(_report(world["main"]["store"], world["prefix"]["check"], out, "--to", to), out)
    assert window["verdict"] == {"bound": True, "notes": []} and window["to_seq"] <= 1999


@pytest.mark.slow
def test_run_checks_is_bound_as_its_json_would_be(world, tmp_path):
    out = tmp_path / "r.html"
    done = ctrlaudit("report", "--store", str(world["main"]["store"]), "--run-checks", "--out", str(out))
    page, window = _shown(done, out)
    assert window["verdict"] == {"bound": True, "notes": []}
    assert f"Invariants: {N - 1} of {N} hold; violated: leader_in_isr." in page


@pytest.mark.slow
def test_a_check_of_several_clusters_is_labelled_and_marks_only_this_ones_violations(world, tmp_path):
    out = tmp_path / "r.html"
    both = world["both"]
    page, window = _shown(_report(both["store"], both["check"], out, "--cluster", "sim-4"), out)
    assert window["verdict"] == {"bound": True, "notes": ["verdicts over clusters sim-4, sim-3 together"]}
    # sim-3's leader_in_isr breach at seq 2000 is a violation of the report, not a mark on sim-4's history
    assert "leader_in_isr" in page and 'id="evidence"></ul>' in page
    assert not re.search(r'"name":"invariant violation"', page)
    out.unlink()
    page, window = _shown(_report(both["store"], both["check"], out, "--cluster", "sim-3"), out)
    assert window["verdict"]["notes"] == ["verdicts over clusters sim-3, sim-4 together"]
    assert re.search(r'<ul id="evidence"><li>[^<]*leader_in_isr at seq 2000', page)
    assert re.search(r'"name":"invariant violation"', page)


@pytest.mark.slow
def test_a_check_with_unverified_stretches_in_the_window_is_labelled(world, tmp_path):
    out = tmp_path / "r.html"
    gappy = _edit(world["main"]["check"], tmp_path / "gaps.json", lambda d: d["chains"][0]["gaps"].append(
        {"from_seq": 100, "to_seq": 199, "reason": "missing"}))
    _, window = _shown(_report(world["main"]["store"], gappy, out), out)
    assert window["verdict"] == {"bound": True, "notes": ["the check had no verified data for seq 100..199 of this window"]}


def test_a_check_past_the_end_of_the_store_is_labelled_not_bound(world, tmp_path):
    """The store holds seq 0..1999; the check judged to seq 2999: its hash there cannot be compared."""
    out = tmp_path / "r.html"
    page, window = _shown(_report(world["prefix"]["store"], world["main"]["check"], out), out)
    assert window["verdict"]["bound"] is False
    assert window["verdict"]["notes"] == ["verdict not bound to this history"]
    assert "past the end of" in page


# --- shapes: each is one line naming the file and the field -----------------------------------------

def _set(path: list[Any], value: Any):
    def change(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value
    return change


def _failing(doc: dict[str, Any]) -> int:
    """The index of the invariant that has an example (leader_in_isr)."""
    return next(i for i, inv in enumerate(doc["invariants"]) if inv["examples"])


SHAPES = [
    # (id, the file's content: bytes, or an edit of the good report, what the line says)
    ("a-list", b"[]", "the document: expected an object, found a list"),
    ("no-invariants", b"{}", "invariants: missing"),
    ("invariants-an-object", _set(["invariants"], {}), "invariants: expected a list, found an object"),
    ("invariant-a-string", _set(["invariants", 0], "leader_in_isr"), "invariants[0]: expected an object"),
    ("name-a-number", _set(["invariants", 0, "name"], 7), "invariants[0].name: expected a string, found an integer"),
    ("name-missing", lambda d: d["invariants"][1].pop("name"), "invariants[1].name: missing"),
    ("status-unknown", _set(["invariants", 0, "status"], "<b>pass</b>"), "invariants[0].status: '<b>pass</b>' is none of"),
    ("status-two-lines", _set(["invariants", 0, "status"], "pass\nctrlaudit: ok"), "'pass\\nctrlaudit: ok' is none of"),
    ("violations-a-string", _set(["invariants", 2, "violations"], "0"), "invariants[2].violations: expected an integer"),
    ("violations-a-boolean", _set(["invariants", 2, "violations"], False), "expected an integer, found a boolean"),
    ("violations-a-fraction", _set(["invariants", 2, "violations"], 0.5), "expected an integer, found a number"),
    ("violations-huge", _set(["invariants", 2, "violations"], 10**30), "invariants[2].violations: 1000000000000000000000000000000 is out of range"),
    ("allowed-negative", _set(["invariants", 2, "allowed"], -1), "invariants[2].allowed: -1 is out of range"),
    ("rules-a-list", _set(["invariants", 0, "rules"], [1]), "invariants[0].rules: expected an object"),
    ("rule-count-a-string", _set(["invariants", 0, "rules"], {"x": "1"}), "invariants[0].rules.'x': expected an integer"),
    ("examples-an-object", lambda d: _set(["invariants", _failing(d), "examples"], {"seq": 1})(d), "examples: expected a list"),
    ("example-a-list", lambda d: _set(["invariants", _failing(d), "examples", 0], [2000])(d), "examples[0]: expected an object"),
    ("seq-negative", lambda d: _set(["invariants", _failing(d), "examples", 0, "seq"], -1)(d), "examples[0].seq: -1 is out of range"),
    ("seq-past-int64", lambda d: _set(["invariants", _failing(d), "examples", 0, "seq"], 2**64)(d), "examples[0].seq: 18446744073709551616 is out of range"),
    ("time-past-year-9999", lambda d: _set(["invariants", _failing(d), "examples", 0, "event", "event_time_ms"], 10**17)(d),
     "examples[0].event.event_time_ms: 100000000000000000 is out of range"),
    ("event-a-string", lambda d: _set(["invariants", _failing(d), "examples", 0, "event"], "x")(d), "examples[0].event: expected an object"),
    ("actual-a-list", lambda d: _set(["invariants", _failing(d), "examples", 0, "actual"], [1])(d), "examples[0].actual: expected a string or a number"),
    ("chains-strings", _set(["chains"], ["sim-3"]), "chains[0]: expected an object, found a string"),
    ("cluster-id-null", _set(["chains", 0, "cluster_id"], None), "chains[0].cluster_id: expected a string, found null"),
    ("head-hash-not-hex", _set(["chains", 0, "head_hash"], "</script>"), "chains[0].head_hash: '</script>' is not a sha256"),
    ("head-hash-a-number", _set(["chains", 0, "head_hash"], 5), "chains[0].head_hash: expected a string"),
    ("first-after-last", _set(["chains", 0, "first_seq"], 5000), "chains[0].first_seq: 5000 is out of range (0..2999)"),
    ("clusters-numbers", _set(["clusters"], [3]), "clusters[0]: expected a string, found an integer"),
    ("nan", b'{"invariants": [{"name": "x", "status": "pass", "violations": NaN, "allowed": 0}]}', "NaN is not a JSON number"),
    ("infinity", b'{"invariants": [], "chains": [{"cluster_id": "x", "last_seq": Infinity}]}', "Infinity is not a JSON number"),
    ("digits-beyond-any-integer", b'{"invariants": [], "x": ' + b"9" * 5000 + b"}", "not a `ctrlaudit check --json` report"),
    ("nested-too-deeply", b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    ("not-utf8", b'{"invariants": [{"name": "\xff"}]}', "not UTF-8 at byte 26"),
    ("not-json", b"hello", "Expecting value: line 1 column 1"),
    ("empty", b"", "Expecting value: line 1 column 1"),
    ("larger-than-any-report", b"[" + b"[]," * (3 << 20) + b"[]]", "9,437,188 bytes, larger than any check report (8,388,608)"),
]


@pytest.mark.parametrize("row", SHAPES, ids=[r[0] for r in SHAPES])
@pytest.mark.matrix
def test_a_file_of_another_shape_is_one_line_naming_the_field(world, tmp_path, row):
    name, content, says = row
    bad = tmp_path / f"{name}.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        _edit(world["main"]["check"], bad, content)
    out = tmp_path / "r.html"
    before = digest(world["main"]["store"], bad)
    _refused(_report(world["main"]["store"], bad, out), out, str(bad), says)
    assert digest(world["main"]["store"], bad) == before


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "missing"])
def test_a_check_json_that_is_not_a_file_is_one_line(world, tmp_path, kind):
    """A FIFO or a device is refused before it is read: it would block, or never end."""
    path = {"directory": tmp_path / "d.json", "fifo": tmp_path / "pipe", "device": Path("/dev/zero"),
            "missing": tmp_path / "nope.json"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    out = tmp_path / "r.html"
    says = {"missing": "No such file or directory", "directory": "Is a directory"}.get(kind, "not a regular file")
    _refused(_report(world["main"]["store"], path, out), out, str(path), says)


def test_a_check_whose_last_seq_the_store_does_not_hold_is_labelled_not_bound(world):
    """Inside the store's range but not in it (a file left out of the load): nothing to compare with."""
    from ctrlaudit import verdict

    checks = verdict.read(world["main"]["check"])
    judged = verdict.bind(checks, "c.json", "s.duckdb", "sim-3", (0, 4000), lambda seq: None, 4000)
    assert not judged.bound
    assert judged.notes[0] == (verdict.UNBOUND, "c.json judged cluster sim-3 to seq 2999, which s.duckdb does not "
                                                "hold: the two histories cannot be compared")
