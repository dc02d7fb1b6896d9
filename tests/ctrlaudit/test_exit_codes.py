"""Bad input is never exit 3 ("internal error"), on the real CLI in a subprocess: the cases that once
were (a block declaring 2**60 bytes to the pure-Python decoder, a manifest that is a symbolic link, a
regex beyond Python's limits, a missing optional module, a reader of standard output that goes away).
Each asserts the exit code, one line on stderr (none for 141), no traceback, and unchanged bytes."""
from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctrlaudit.errors import EXTRAS
from services.simulator import SimConfig, simulate_to_archive
from tests.ctrlaudit.test_bad_inputs import ROOT, ctrlaudit, digest

CL = "sim-31"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """An archive of 800 partitions (a state of about 400 KB as JSON: more than a pipe holds) and its store."""
    root = tmp_path_factory.mktemp("exit-codes")
    simulate_to_archive(root / "a", SimConfig(seed=31, events=3000, topics=40, partitions=20, cluster_id=CL),
                        fsync=False)
    store = root / "s.duckdb"
    assert ctrlaudit("load", str(root / "a"), "--store", str(store)).returncode == 0
    return {"root": root, "archive": root / "a", "store": store}


def one_line(done: subprocess.CompletedProcess, code: int, *says: str) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctrlaudit: error: "), done.stderr
    for s in says:
        assert s in lines[0], lines[0]
    return lines[0]


def copy_of(world, tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a"
    shutil.copytree(world["archive"], a)
    f = next((a / CL).glob("*.avro"))
    return a, f


# --- the pure-Python archive decoder (CTRLAUDIT_NATIVE=0) and the native one -------------------------

def _zigzag(n: int) -> bytes:
    n, out = (n << 1) ^ (n >> 63), bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _varint_end(data: bytes, i: int) -> int:
    while data[i] & 0x80:
        i += 1
    return i + 1


def declare_huge(f: Path, field: str) -> None:
    """The first block of `f` declares 2**60 records ("count") or bytes ("size"); the manifest's sha256
    and size follow, so the only thing wrong is the declaration."""
    data = f.read_bytes()
    start = data.index(data[-16:]) + 16  # the header ends with the sync marker every block ends with
    count_end = _varint_end(data, start)
    size_end = _varint_end(data, count_end)
    if field == "count":
        data = data[:start] + _zigzag(1 << 60) + data[count_end:]
    else:
        data = data[:count_end] + _zigzag(1 << 60) + data[size_end:]
    f.write_bytes(data)
    m = f.with_name(f.name + ".manifest.json")
    d = json.loads(m.read_text())
    import hashlib

    d.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    m.write_text(json.dumps(d))


@pytest.mark.parametrize("native", ["0", "1"], ids=["python", "native"])
@pytest.mark.parametrize("field", ["size", "count"])
@pytest.mark.slow
def test_a_block_declaring_a_huge_size_or_count_is_a_damaged_file(world, tmp_path, field, native):
    a, f = copy_of(world, tmp_path)
    declare_huge(f, field)
    before = digest(a)
    env = {"CTRLAUDIT_NATIVE": native}
    loaded = ctrlaudit("load", str(a), "--store", str(tmp_path / "s.duckdb"), env=env)
    one_line(loaded, 1, f.name, "unreadable")
    one_line(ctrlaudit("check", str(a), env=env), 1, f.name)
    assert digest(a) == before


# --- a manifest that is not a regular file -------------------------------------------------------------

@pytest.mark.parametrize("target", ["copy", "/dev/zero", "missing"])
@pytest.mark.slow
def test_a_manifest_that_is_a_symbolic_link_is_not_followed(world, tmp_path, target):
    a, f = copy_of(world, tmp_path)
    m = f.with_name(f.name + ".manifest.json")
    real = tmp_path / "elsewhere.json"
    shutil.move(m, real)
    m.symlink_to({"copy": str(real), "missing": str(tmp_path / "nope.json")}.get(target, target))
    for cmd in (["load", str(a), "--store", str(tmp_path / "s.duckdb")], ["check", str(a)]):
        one_line(ctrlaudit(*cmd, timeout=60), 1, m.name, "symbolic link", "not followed")
    verified = ctrlaudit("verify", str(a), timeout=60)
    assert verified.returncode == 1 and "BROKEN: manifest" in verified.stdout


def test_an_archive_file_that_is_a_fifo_is_not_read(world, tmp_path):
    a, f = copy_of(world, tmp_path)
    f.unlink()
    os.mkfifo(f)  # opening it for reading would wait for a writer forever
    one_line(ctrlaudit("load", str(a), "--store", str(tmp_path / "s.duckdb"), timeout=60), 1, f.name,
             "not a regular file")


# --- regular expressions ------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, says", [
    ("a{99999999999}", "the repetition number is too large"),  # OverflowError in re
    ("(" * 3000 + "a" + ")" * 3000, "RecursionError"),
    ("topic-[z-a]", "bad character range"),
    ("(?P<x>a)(?P<x>b)", "redefinition of group name"),
])
@pytest.mark.parametrize("command", ["state", "diff"])
@pytest.mark.matrix
def test_a_bad_topic_regex_is_one_line(world, pattern, says, command):
    args = [command, "--store", str(world["store"]), "--topic", pattern]
    if command == "diff":
        args += ["--from-seq", "10", "--to-seq", "20"]
    before = digest(world["store"])
    one_line(ctrlaudit(*args), 2, "not a valid regular expression", says)
    assert digest(world["store"]) == before


def test_a_redaction_regex_beyond_pythons_limits_is_one_line(world, tmp_path):
    meta = tmp_path / "meta" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    done = ctrlaudit("import", "kraft", str(meta), "--out", str(tmp_path / "out"),
                     env={"CTRLAUDIT_REDACT_PATTERNS": "re:a{99999999999}"})
    one_line(done, 2, "CTRLAUDIT_REDACT_PATTERNS", "is not a valid regex")
    assert not (tmp_path / "out").exists()


# --- optional dependencies ----------------------------------------------------------------------------

def _product_imports() -> dict[str, set[str]]:
    """Top-level module -> the product files importing it outside a try/except ImportError (a fallback)."""
    found: dict[str, set[str]] = {}
    for package in ("schemas", "services", "replay", "checks", "ctrlaudit"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                       for h in t.handlers if h.type is not None and "ImportError" in ast.unparse(h.type)
                       for s in t.body for n in ast.walk(s)}
            for node in ast.walk(tree):
                if id(node) in guarded:
                    continue
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


# the core install's modules (pyproject.toml's dependencies), under their import names
CORE = {"fastavro", "duckdb", "pyarrow", "typer", "rich", "immutables", "crc32c", "snappy", "lz4", "zstandard",
        "plotly", "click"}  # click: typer's own (typer vendors it or depends on it)
OURS = {"schemas", "services", "replay", "checks", "ctrlaudit", "tests"}


def test_every_optional_import_names_its_extra():
    optional = {m: where for m, where in _product_imports().items()
                if m not in sys.stdlib_module_names and m not in CORE and m not in OURS}
    assert "kazoo" in optional  # the scan sees the imports inside functions (capture --zookeeper's)
    missing = {m: sorted(where)[:3] for m, where in optional.items() if m not in EXTRAS}
    assert not missing, f"modules of an extra that ctrlaudit/errors.py EXTRAS does not name: {missing}"


def test_capture_zookeeper_without_kazoo_names_the_extra():
    hide = ("import runpy, sys; sys.modules['kazoo'] = None; sys.argv[0] = 'ctrlaudit'; "
            "runpy.run_module('ctrlaudit', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", hide, "capture", "--zookeeper", "127.0.0.1:1",
                           "--bootstrap-server", "127.0.0.1:1"], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    one_line(done, 2, "needs the 'capture' extra (kazoo is not installed)", "pip install 'ctrlaudit[capture]'")


# --- the reader of standard output goes away ----------------------------------------------------------

def read_then_close(args: list[str], keep: int) -> tuple[int, str]:
    """Run the CLI with its standard output a pipe whose reader takes `keep` bytes (0: none), then leaves,
    as `| head -c` does; (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if keep:
        got = os.read(proc.stdout.fileno(), keep)
        assert got, "nothing was written"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("args, keep", [
    (["state", "--format", "json"], 4),  # ~400 KB: the reader leaves while it is written
    (["state"], 0),
    (["timeline", "--topic", "topic-00001", "--partition", "0"], 0),
])
def test_a_query_whose_reader_leaves_exits_141(world, args, keep):
    code, err = read_then_close([*args, "--store", str(world["store"])], keep)
    assert (code, err) == (141, "")


@pytest.mark.slow
def test_check_whose_reader_leaves_writes_its_files_then_exits_141(world, tmp_path):
    junit, report = tmp_path / "r.xml", tmp_path / "r.json"
    code, err = read_then_close(["check", str(world["archive"]), "--junit", str(junit), "--json", str(report)], 0)
    assert (code, err) == (141, "")
    assert junit.read_text().startswith("<?xml") and json.loads(report.read_text())["events"] == 3000
    junit.unlink()
    code, err = read_then_close(["check", str(world["archive"]), "--csv", "-", "--junit", str(junit)], 0)
    assert (code, err) == (141, "")
    assert junit.read_text().startswith("<?xml")  # written after the CSV found its reader gone


def test_export_to_standard_output_whose_reader_leaves_exits_141(world, tmp_path):
    out = tmp_path / "e.json"
    code, err = read_then_close(["export", "--store", str(world["store"]), "--out", str(out), "--format", "json",
                                 "--json", "-"], 0)
    assert code == 141 and "Traceback" not in err and "error" not in err
    assert len(out.read_text().splitlines()) == 3000  # the file is whole


# --- crafted bad inputs, one or two per reader, on the real CLI (the fuzzers try many more in-process) -------

def kraft_random(here: Path) -> list[str]:
    meta = here / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "00000000000000000000.log").write_bytes(random.Random(1).randbytes(5000))
    return ["import", "kraft", str(meta), "--out", str(here / "out")]


def kraft_header_loop(here: Path) -> list[str]:
    from tests.services.kraft.helpers import pcr
    from tests.services.kraft.test_fuzz import batch_of_raw_record
    from services.kraft.wire import write_varint

    value = pcr(0)
    body = (b"\x00" + write_varint(0) + write_varint(0) + write_varint(-1) + write_varint(len(value)) + value
            + write_varint(2**31 - 1) + write_varint(-5) + b"\x00" * 6)
    meta = here / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "00000000000000000000.log").write_bytes(batch_of_raw_record(body))
    return ["import", "kraft", str(meta), "--out", str(here / "out")]


def zk_mistyped_znode(here: Path) -> list[str]:
    from tests.services.zookeeper.test_fuzz import ZNODES, _bootstrapped, snapshot

    nodes = [(p, b'{"version":2,"brokerid":1.5,"timestamp":"1"}' if p == "/controller" else d) for p, d in ZNODES]
    (here / "in").mkdir()
    return ["import", "zk", str(_bootstrapped(here / "in", snapshot(nodes))), "--out", str(here / "out")]


def zk_random(here: Path) -> list[str]:
    (here / "in" / "version-2").mkdir(parents=True)
    (here / "in" / "version-2" / "log.1").write_bytes(random.Random(2).randbytes(3000))
    return ["import", "zk", str(here / "in"), "--out", str(here / "out")]


def logs_huge_number(here: Path) -> list[str]:
    line = ("[Controller id=3] Updated leader epoch for partition t-0 to 2, zkVersion=" + "9" * 5000)
    (here / "in").mkdir()
    (here / "in" / "state-change.log").write_text(f"[2026-11-24 10:00:00,000] INFO {line} (state.change.logger)\n")
    return ["import", "logs", str(here / "in"), "--out", str(here / "out")]


def _archive_with_manifest(here: Path, world, text: str) -> list[str]:
    a = here / "a"
    shutil.copytree(world["archive"], a)
    next((a / CL).glob("*.manifest.json")).write_text(text)
    return ["load", str(a), "--store", str(here / "s.duckdb")]


CRAFTED = [  # (id, make(here, world) -> args, exit code, what the one line says)
    ("kraft-random-bytes", lambda h, w: kraft_random(h), 2, "not a Kafka record-batch file"),
    ("kraft-header-count-beyond-the-record", lambda h, w: kraft_header_loop(h), 2, "headers in"),
    ("zk-mistyped-znode", lambda h, w: zk_mistyped_znode(h), 2, "zxid 0x1ff: /controller: brokerid '1.5' is not a 32-bit"),
    ("zk-random-bytes", lambda h, w: zk_random(h), 2, "not a ZooKeeper transaction log"),
    ("manifest-nested-beyond-the-stack", lambda h, w: _archive_with_manifest(h, w, "[" * 30000 + "]" * 30000), 1,
     "RecursionError"),
    ("manifest-larger-than-a-manifest", lambda h, w: _archive_with_manifest(h, w, " " * 70000 + "{}"), 1,
     "larger than 65536 bytes"),
]


@pytest.mark.parametrize("make, code, says", [c[1:] for c in CRAFTED], ids=[c[0] for c in CRAFTED])
@pytest.mark.matrix
def test_a_crafted_bad_input_is_one_line(world, tmp_path, make, code, says):
    args = make(tmp_path, world)
    before = digest(tmp_path)
    one_line(ctrlaudit(*args, timeout=60), code, says)
    after = digest(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # the inputs are as they were


def test_a_broker_log_line_with_an_impossible_number_is_named_not_read(tmp_path):
    done = ctrlaudit(*logs_huge_number(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "state-change.log:1: not read: a number longer than any Kafka writes" in done.stdout + done.stderr
