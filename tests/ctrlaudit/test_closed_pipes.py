"""A reader of standard output that goes away (`ctrlaudit check --junit r.xml | head`) costs no file: on the real
CLI, with standard output a pipe closed before the command writes to it, every command that writes files writes
them whole, then exits 141 with nothing on standard error. Both with Python's block-buffered standard output
(a pipe's default: the lines are still in the buffer when the command ends) and unbuffered (PYTHONUNBUFFERED=1:
the first line already finds no reader)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import ROOT, ctrlaudit

ZK_LOG = ROOT / "tests" / "services" / "zookeeper" / "data" / "log.1"
BUFFERING = pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("closed-pipes")
    simulate_to_archive(root / "a", SimConfig(seed=5, events=600, topics=2, partitions=2, cluster_id="sim-5"),
                        fsync=False)
    store = root / "s.duckdb"
    assert ctrlaudit("load", str(root / "a"), "--store", str(store)).returncode == 0
    return {"archive": root / "a", "store": store}


def closed(args: list[str], unbuffered: str) -> tuple[int, str]:
    """Run the CLI with standard output a pipe whose reader left before anything came; (exit code, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | (
        {"PYTHONUNBUFFERED": unbuffered} if unbuffered else {})
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def _commands(world: dict[str, Path], out: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Per command: its arguments and the files it must write (name -> what the file starts with)."""
    store, archive = str(world["store"]), str(world["archive"])
    j = str(out / "r.json")
    return {
        "check": (["check", store, "--junit", str(out / "r.xml"), "--json", j], {"r.xml": "<?xml", "r.json": "{"}),
        "verify": (["verify", archive, "--json", j], {"r.json": "{"}),
        "load": (["load", archive, "--store", str(out / "t.duckdb"), "--json", j], {"r.json": "{"}),
        "import": (["import", "zk", str(ZK_LOG), "--out", str(out / "zk"), "--json", j], {"r.json": "{"}),
        "simulate": (["simulate", "--out", str(out / "sim"), "--events", "50", "--json", j,
                      "--truth", str(out / "t.json")], {"r.json": "{", "t.json": "["}),
        "export": (["export", "--store", store, "--out", str(out / "e.csv"), "--format", "csv", "--json", j],
                   {"e.csv": "seq,", "r.json": "{"}),
        "export -": (["export", "--store", store, "--out", "-", "--format", "csv", "--json", j], {"r.json": "{"}),
        "report": (["report", "--store", store, "--out", str(out / "r.html"), "--json", j],
                   {"r.html": "<!DOCTYPE html>", "r.json": "{"}),
        "report -": (["report", "--store", store, "--out", "-", "--json", j], {"r.json": "{"}),
        "state": (["state", "--store", store, "--json", j], {"r.json": "{"}),
    }


@BUFFERING
@pytest.mark.parametrize("command", ["check", "verify", "load", "import", "simulate", "export", "export -", "report",
                                     "report -", "state"])
@pytest.mark.matrix
def test_a_reader_that_left_costs_no_file(world, tmp_path, command, unbuffered):
    args, files = _commands(world, tmp_path)[command]
    code, err = closed(args, unbuffered)
    assert code == 141
    if "-" in args:  # standard output is the data; the lines for a person are on standard error, as always
        assert "error" not in err and "Traceback" not in err, err
    else:
        assert err == ""
    for name, start in files.items():
        assert (tmp_path / name).read_text(errors="replace").startswith(start), name
    if files.get("r.json") == "{":
        json.loads((tmp_path / "r.json").read_text())  # whole


@BUFFERING
@pytest.mark.parametrize("args", [
    ["state", "--topic", "topic-00006", "--partition", "0"],  # a few lines: all still in the buffer at the end
    ["timeline", "--topic", "topic-00006", "--partition", "0", "--limit", "2"],
    ["check"],
])
def test_a_short_answer_whose_reader_left_exits_141(world, args, unbuffered):
    args = [*args, str(world["store"])] if args == ["check"] else [*args, "--store", str(world["store"])]
    assert closed(args, unbuffered) == (141, "")


def test_a_reader_that_stays_sees_the_exit_code_of_the_command(world, tmp_path):
    done = ctrlaudit("check", str(world["store"]), "--junit", str(tmp_path / "r.xml"))
    assert done.returncode == 0 and "ctrlaudit check" in done.stdout and done.stderr == ""
