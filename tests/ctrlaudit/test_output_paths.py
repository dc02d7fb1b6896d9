"""Every file the CLI writes (--json of every command, report --out, export --out, check --junit/--csv,
simulate --truth) goes through one rule (ctrlaudit/commands/output.py): an existing file is replaced only with
--force; never an input of the command (its store, anything under an archive it reads, the report it reads,
also by a hard link); never a symbolic link, a FIFO, a device or a directory; never two outputs to one file;
'-' is standard output, for one output at most. All checked before the command does its work.

On the real CLI in a subprocess, table-driven: each row asserts the exit code, one line on stderr naming the
path and the option, no traceback, that no path was added anywhere under the shared world, and that the bytes
of every file there are unchanged."""
from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import digest

CLI = [sys.executable, "-m", "ctrlaudit"]


def run(*args: str, cwd: Path, limit_file_size: int | None = None) -> subprocess.CompletedProcess:
    def limited() -> None:  # a disk that fills: writes past the limit fail with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=180, env=env,
                          preexec_fn=limited if limit_file_size else None)


def listing(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def world():
    root = Path(tempfile.mkdtemp(prefix="ctrlaudit-outputs-"))
    archive = root / "archive"
    simulate_to_archive(archive, SimConfig(seed=9, events=1500, topics=2, partitions=3), fsync=False,
                        max_events_per_file=500)
    store = root / "s.duckdb"
    assert run("load", str(archive), "--store", str(store), cwd=root).returncode == 0
    assert run("check", str(store), "--json", str(root / "check.json"), cwd=root).returncode in (0, 1)
    (root / "old.txt").write_text("keep me\n")
    avro = sorted(archive.rglob("*.avro"))[0]
    yield {"root": root, "archive": archive, "store": store, "avro": avro, "manifest": Path(f"{avro}.manifest.json"),
           "check_json": root / "check.json", "old": root / "old.txt"}
    shutil.rmtree(root, ignore_errors=True)


# --- setup: (world, here) -> None; `here` is the row's own directory (the command's working directory) -------

def fifo(world, here: Path) -> None:
    os.mkfifo(here / "fifo")


def symlinks(world, here: Path) -> None:
    (here / "to-old").symlink_to(world["old"])
    (here / "dangling").symlink_to(here / "not-yet")


def hard_link_to_store(world, here: Path) -> None:
    os.link(world["store"], here / "hard.json")


def device(world, here: Path) -> None:
    """A character device node of our own (as /dev/null: 1,3), so that a writer gone wrong cannot replace the
    machine's /dev/null or /dev/full."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(here / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def existing(world, here: Path) -> None:
    for name in ("x.json", "x.xml", "x.csv", "x.html", "x.parquet", "incident.html", "truth.json"):
        (here / name).write_text("mine\n")


def a_directory(world, here: Path) -> None:
    (here / "d").mkdir()


@dataclass(frozen=True)
class Row:
    id: str
    args: list[str]
    says: str  # in the one stderr line
    setup: Callable | None = None
    code: int = 2


R = Row
ST = ["--store", "{store}"]
ROWS = [
    # never an input, even with --force
    R("state-json-over-the-store", ["state", *ST, "--json", "{store}", "--force"], "{store} (--json): an input"),
    R("state-json-over-the-stores-wal", ["state", *ST, "--json", "{store}.wal"], "(--json): an input"),
    R("state-json-hard-link-to-the-store", ["state", *ST, "--json", "{here}/hard.json", "--force"],
      "{here}/hard.json (--json): an input of this command ({store})", hard_link_to_store),
    R("check-json-over-an-archive-file", ["check", "{archive}", "--json", "{avro}", "--force"],
      "{avro} (--json): an input of this command ({archive})"),
    R("check-junit-over-a-manifest", ["check", "{archive}", "--junit", "{manifest}", "--force"],
      "{manifest} (--junit): an input"),
    R("check-csv-new-file-inside-the-archive", ["check", "{archive}", "--csv", "{archive}/findings.csv"],
      "{archive}/findings.csv (--csv): an input of this command ({archive})"),
    R("check-json-over-the-store-it-checks", ["check", "{store}", "--json", "{store}", "--force"],
      "{store} (--json): an input"),
    R("report-out-over-its-check-json", ["report", *ST, "--check-json", "{check_json}", "--out", "{check_json}",
                                         "--force"], "{check_json} (--out): an input"),
    R("report-out-over-the-store", ["report", *ST, "--out", "{store}", "--force"], "{store} (--out): an input"),
    R("export-out-over-the-store", ["export", *ST, "--out", "{store}", "--force"], "{store} (--out): an input"),
    R("load-json-over-an-archive-file", ["load", "{archive}", *ST, "--json", "{avro}", "--force"],
      "{avro} (--json): an input"),
    R("verify-json-inside-the-archive", ["verify", "{archive}", "--json", "{archive}/verify.json"],
      "{archive}/verify.json (--json): an input"),
    R("import-json-inside-its-out", ["import", "kraft", "{root}/nothing", "--out", "{archive}", "--json",
                                     "{archive}/i.json"], "{archive}/i.json (--json): inside the archive directory"),
    R("simulate-truth-inside-its-out", ["simulate", "--out", "{archive}", "--truth", "{manifest}", "--force"],
      "{manifest} (--truth): inside the archive directory {archive} (--out)"),
    R("import-out-inside-its-input", ["import", "kraft", "{archive}", "--out", "{archive}/sim-9/again"],
      "{archive}/sim-9/again (--out): an input of this command ({archive})"),
    R("import-out-is-its-input", ["import", "zk", "{archive}", "--out", "{archive}"],
      "{archive} (--out): an input of this command ({archive})"),
    # FIFO, device, symbolic link, directory: refused, never renamed over
    R("report-out-fifo", ["report", *ST, "--out", "{here}/fifo", "--force"], "{here}/fifo (--out): a FIFO", fifo),
    R("export-out-fifo", ["export", *ST, "--out", "{here}/fifo"], "{here}/fifo (--out): a FIFO", fifo),
    R("check-junit-fifo", ["check", "{store}", "--junit", "{here}/fifo"], "{here}/fifo (--junit): a FIFO", fifo),
    R("state-json-device", ["state", *ST, "--json", "{here}/null", "--force"],
      "{here}/null (--json): a character device", device),
    R("report-out-device", ["report", *ST, "--out", "{here}/null"], "{here}/null (--out): a character device",
      device),
    R("check-csv-symlink-to-a-file", ["check", "{store}", "--csv", "{here}/to-old", "--force"],
      "{here}/to-old (--csv): a symbolic link", symlinks),
    R("report-out-dangling-symlink", ["report", *ST, "--out", "{here}/dangling"],
      "{here}/dangling (--out): a symbolic link", symlinks),
    R("state-json-a-directory", ["state", *ST, "--json", "{here}/d", "--force"], "{here}/d (--json): a directory",
      a_directory),
    R("state-json-empty", ["state", *ST, "--json", ""], ". (--json): a directory"),  # '' is '.' to typer
    R("state-json-in-a-missing-directory", ["state", *ST, "--json", "{here}/no/x.json"],
      "{here}/no/x.json (--json): no such directory {here}/no"),
    # two outputs of one command to one file, also spelled differently
    R("check-json-and-junit-one-file", ["check", "{store}", "--json", "{here}/x", "--junit", "{here}/x"],
      "{here}/x (--junit): also given to --json"),
    R("check-csv-and-json-one-file-two-spellings", ["check", "{store}", "--json", "{here}/x",
                                                    "--csv", "{here}/d/../x"], "also given to --json", a_directory),
    R("report-out-and-json-one-file", ["report", *ST, "--out", "{here}/r", "--json", "{here}/r"],
      "{here}/r (--json): also given to --out"),
    R("simulate-json-and-truth-one-file", ["simulate", "--out", "{here}/a", "--json", "{here}/t", "--truth",
                                           "{here}/t"], "{here}/t (--truth): also given to --json"),
    R("report-two-to-stdout", ["report", *ST, "--out", "-", "--json", "-"],
      "only one of --out, --json can go to standard output"),
    R("check-two-to-stdout", ["check", "{store}", "--junit", "-", "--csv", "-"],
      "only one of --junit, --csv can go to standard output"),
    # an existing file without --force
    R("state-json-exists", ["state", *ST, "--json", "{here}/x.json"], "{here}/x.json (--json): exists; give --force",
      existing),
    R("check-junit-exists", ["check", "{store}", "--junit", "{here}/x.xml"], "{here}/x.xml (--junit): exists",
      existing),
    R("check-csv-exists", ["check", "{store}", "--csv", "{here}/x.csv"], "{here}/x.csv (--csv): exists", existing),
    R("report-default-out-exists", ["report", *ST], "incident.html (--out): exists; give --force", existing),
    R("export-out-exists", ["export", *ST, "--out", "{here}/x.parquet"], "{here}/x.parquet (--out): exists",
      existing),
    R("simulate-truth-exists", ["simulate", "--out", "{here}/a", "--truth", "{here}/truth.json"],
      "{here}/truth.json (--truth): exists", existing),
    R("verify-json-exists", ["verify", "{archive}", "--json", "{here}/x.json"], "(--json): exists", existing),
    R("load-json-exists", ["load", "{archive}", "--store", "{here}/n.duckdb", "--json", "{here}/x.json"],
      "(--json): exists", existing),
    R("import-json-exists", ["import", "kraft", "{root}/nothing", "--out", "{here}/i", "--json", "{here}/x.json"],
      "(--json): exists", existing),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
@pytest.mark.slow
def test_a_refused_output_is_one_line_and_nothing_written(world, row):
    here = Path(tempfile.mkdtemp(dir=world["root"], prefix="row-"))
    fill = {**{k: str(v) for k, v in world.items()}, "here": str(here)}
    if row.setup:
        row.setup(world, here)
    before, paths = digest(world["root"]), listing(world["root"])
    done = run(*[a.format(**fill) for a in row.args], cwd=here)
    assert done.returncode == row.code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctrlaudit: error: "), done.stderr
    assert row.says.format(**fill) in lines[0], lines[0]
    assert digest(world["root"]) == before and listing(world["root"]) == paths
    assert done.stdout == ""  # refused before anything ran: not even the lines for a person
    for p in (here / "fifo", here / "null", here / "to-old", here / "dangling"):
        if os.path.lexists(p):  # what was there is still what it was
            assert not stat.S_ISREG(os.lstat(p).st_mode)


def test_the_table_has_one_row_per_id():
    assert len({r.id for r in ROWS}) == len(ROWS)


@pytest.mark.slow
def test_force_replaces_an_existing_file_and_leaves_no_temporary(world, tmp_path):
    existing(world, tmp_path)
    cases = [(["state", "--store", str(world["store"]), "--json", "x.json"], "x.json", "{"),
             (["check", str(world["store"]), "--junit", "x.xml"], "x.xml", "<?xml"),
             (["check", str(world["store"]), "--csv", "x.csv"], "x.csv", "invariant,cluster_id"),
             (["report", "--store", str(world["store"])], "incident.html", "<!DOCTYPE html>"),
             (["export", "--store", str(world["store"]), "--out", "x.parquet"], "x.parquet", "PAR1"),
             (["simulate", "--out", "a", "--events", "50", "--truth", "truth.json"], "truth.json", "[")]
    for args, name, starts in cases:
        refused = run(*args, cwd=tmp_path)
        assert refused.returncode == 2 and (tmp_path / name).read_text() == "mine\n", refused.stderr
        shutil.rmtree(tmp_path / "a", ignore_errors=True)
        done = run(*args, "--force", cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr  # check: 1 = violations found
        assert (tmp_path / name).read_bytes().lstrip().startswith(starts.encode()), name
        mode = (tmp_path / name).stat().st_mode & 0o777
        assert mode == 0o666 & ~_umask(), oct(mode)  # as a file the shell makes, not a private temporary
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".part")]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
def test_dash_is_standard_output_for_every_file_option(world, tmp_path):
    store = str(world["store"])
    html = run("report", "--store", store, "--out", "-", cwd=tmp_path)
    assert html.returncode == 0 and html.stdout.startswith("<!DOCTYPE html>"), html.stderr
    assert "wrote the report to standard output" in html.stderr  # the line for a person is not in the HTML
    csv = run("export", "--store", store, "--out", "-", "--format", "csv", cwd=tmp_path)
    assert csv.returncode == 0 and csv.stdout.startswith("seq,event_id,") and len(csv.stdout.splitlines()) == 1501
    junit = run("check", store, "--junit", "-", cwd=tmp_path)
    assert junit.returncode in (0, 1) and junit.stdout.startswith("<?xml")
    state = run("state", "--store", store, "--json", "-", cwd=tmp_path)
    assert state.returncode == 0 and state.stdout.startswith("{")
    truth = run("simulate", "--out", "a", "--events", "50", "--truth", "-", cwd=tmp_path)
    assert truth.returncode == 0 and truth.stdout.startswith("[") and truth.stderr.startswith("cluster sim-0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # no file named '-'


def test_a_write_that_fails_midway_leaves_the_old_file(world, tmp_path):
    """A disk that fills while the report is written (a file size limit stands in for it): one line, exit 2,
    the file that was there is untouched, no temporary left."""
    (tmp_path / "r.json").write_text("old\n")
    done = run("check", str(world["store"]), "--json", "r.json", "--force", cwd=tmp_path, limit_file_size=4096)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "File too large" in lines[0], done.stderr
    assert (tmp_path / "r.json").read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
