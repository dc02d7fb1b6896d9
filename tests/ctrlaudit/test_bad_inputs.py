"""Environment and usage errors, table-driven, on the real CLI in a subprocess: each row asserts the
exit code, one line on stderr naming the place (path, variable, host:port), no traceback, and that
the bytes of the archive and the store are unchanged. (Damaged archives: test_bad_archives.py.)"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive

ROOT = Path(__file__).resolve().parents[2]


def ctrlaudit(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctrlaudit", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def digest(*paths: Path) -> dict[str, str]:
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []
        out.update({str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-inputs")
    simulate_to_archive(root / "archive", SimConfig(seed=5, events=4000, topics=3, partitions=4), fsync=False)
    store = root / "s.duckdb"
    assert ctrlaudit("load", str(root / "archive"), "--store", str(store)).returncode == 0
    (root / "garbage.duckdb").write_bytes(bytes(range(256)) * 40)
    (root / "notes.txt").write_text("not an archive\n")
    (root / "notes.avro").write_text("not an archive either\n")
    (root / "empty").mkdir()
    meta = root / "meta" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / "quorum-state").write_text("{}")
    data = store.read_bytes()
    (root / "half.duckdb").write_bytes(data[: len(data) // 2])
    return {"root": root, "archive": root / "archive", "store": store}


@dataclass
class Row:
    id: str
    args: list[str]
    code: int
    says: str  # in the one stderr line (with {root}, {store}, {archive} filled in)
    env: dict[str, str] = field(default_factory=dict)


ROWS = [
    Row("state-missing-store", ["state", "--store", "{root}/nope.duckdb"], 2, "nope.duckdb: no such store"),
    Row("load-store-in-missing-dir", ["load", "{archive}", "--store", "{root}/no/dir/x.duckdb"], 2,
        "the directory {root}/no/dir does not exist"),
    Row("state-garbage-store", ["state", "--store", "{root}/garbage.duckdb"], 2, "not a ctrlaudit store"),
    Row("load-into-garbage-store", ["load", "{archive}", "--store", "{root}/garbage.duckdb"], 2, "not a ctrlaudit store"),
    Row("state-text-file-as-store", ["state", "--store", "{root}/notes.txt"], 2, "notes.txt: not a ctrlaudit store"),
    Row("state-truncated-store", ["state", "--store", "{root}/half.duckdb"], 2, "half.duckdb"),
    Row("store-is-a-directory", ["state"], 2, "{root}/empty: is a directory", {"CTRLAUDIT_STORE": "{root}/empty"}),
    Row("load-store-where-nothing-can-be-written", ["load", "{archive}", "--store", "/sys/x.duckdb"], 2, "/sys/x.duckdb"),
    Row("check-master-bogus", ["check", "{archive}", "--engine", "spark", "--master", "bogus"], 2, "--master 'bogus'"),
    Row("load-unreachable-kafka", ["load", "--bootstrap-server", "127.0.0.1:1", "--topic", "x", "--store",
                                   "{root}/k.duckdb"], 2, "cannot reach Kafka at 127.0.0.1:1 within 2 s",
        {"CTRLAUDIT_CONNECT_TIMEOUT": "2"}),
    Row("connect-timeout-not-a-number", ["load", "--bootstrap-server", "127.0.0.1:1", "--store", "{root}/k.duckdb"],
        2, "CTRLAUDIT_CONNECT_TIMEOUT='soon'", {"CTRLAUDIT_CONNECT_TIMEOUT": "soon"}),
    Row("sample-interval-not-a-number", ["capture", "--metadata-dir", "{root}/meta/__cluster_metadata-0"], 2,
        "CTRLAUDIT_SAMPLE_INTERVAL='abc'", {"CTRLAUDIT_SAMPLE_INTERVAL": "abc"}),
    Row("roles-unknown", ["archive", "--bootstrap-server", "127.0.0.1:1"], 2, "CTRLAUDIT_ROLES='normalise'",
        {"CTRLAUDIT_ROLES": "normalise"}),
    Row("redact-pattern-not-a-regex", ["archive", "--bootstrap-server", "127.0.0.1:1"], 2,
        "CTRLAUDIT_REDACT_PATTERNS: 're:([' is not a valid regex", {"CTRLAUDIT_REDACT_PATTERNS": "re:(["}),
    Row("import-redact-pattern-not-a-regex", ["import", "kraft", "{root}/meta/__cluster_metadata-0", "--out",
                                               "{root}/imported"], 2,
        "CTRLAUDIT_REDACT_PATTERNS: 're:*password' is not a valid regex", {"CTRLAUDIT_REDACT_PATTERNS": "re:*password"}),
    Row("lock-wait-not-a-number", ["state", "--store", "{store}"], 2, "CTRLAUDIT_LOCK_WAIT='forever'",
        {"CTRLAUDIT_LOCK_WAIT": "forever"}),
    Row("time-not-a-time", ["state", "--store", "{store}", "--time", "yesterday"], 2, "yesterday"),
    Row("time-out-of-range", ["state", "--store", "{store}", "--time", "2026-13-45T00:00:00Z"], 2, "2026-13-45"),
    Row("unknown-topic", ["state", "--store", "{store}", "--topic", "no-such-topic"], 2, "no-such-topic"),
    Row("partition-without-topic", ["state", "--store", "{store}", "--partition", "1"], 2, "--partition needs --topic"),
    Row("explain-without-a-point", ["explain", "--store", "{store}"], 2, "exactly one of"),
    Row("check-empty-directory", ["check", "{root}/empty"], 2, "no *.avro"),
    Row("check-text-file", ["check", "{root}/notes.txt"], 2, "notes.txt"),
    Row("check-unknown-allowance", ["check", "{archive}", "--allow", "no_such"], 2, "unknown invariant 'no_such'"),
    Row("check-unknown-invariant", ["check", "{archive}", "--invariant", "no_such"], 2, "unknown invariant 'no_such'"),
    Row("load-text-file-named-avro", ["load", "{root}/notes.avro", "--store", "{root}/t.duckdb"], 2,
        "notes.avro: not an Avro object container file"),
    Row("verify-missing-path", ["verify", "{root}/nope"], 2, "nope"),
    Row("import-missing-path", ["import", "kraft", "{root}/nope", "--out", "{root}/imported"], 2, "nope"),
    Row("simulate-into-the-archive", ["simulate", "--out", "{archive}", "--seed", "5", "--events", "10"], 2,
        "refusing to overwrite"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_one_line_never_a_traceback(world, row):
    fill = {k: str(v) for k, v in world.items()}
    args = [a.format(**fill) for a in row.args]
    env = {k: v.format(**fill) for k, v in row.env.items()}
    before = digest(world["archive"], world["store"], world["root"] / "garbage.duckdb")
    done = ctrlaudit(*args, env=env)
    assert done.returncode == row.code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert row.says.format(**fill) in lines[0], lines[0]
    assert digest(world["archive"], world["store"], world["root"] / "garbage.duckdb") == before


def _interrupt_after(args: list[str], seconds: float) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("big")
    # large enough that a load (about 4 s) and a check (about 3 s) are still running when Ctrl-C comes
    simulate_to_archive(root, SimConfig(seed=6, events=600_000, topics=50, partitions=20), fsync=False)
    return root


def test_ctrl_c_during_a_load_exits_130_and_keeps_the_store(world, big, tmp_path):
    store = tmp_path / "s.duckdb"
    assert ctrlaudit("load", str(world["archive"]), "--store", str(store)).returncode == 0
    before = ctrlaudit("state", "--store", str(store), "--format", "json").stdout
    done = _interrupt_after(["load", str(big), "--store", str(store)], 2.0)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["ctrlaudit: error: interrupted"]
    # one transaction: the store still holds exactly what it held
    assert ctrlaudit("state", "--store", str(store), "--format", "json").stdout == before
    again = ctrlaudit("load", str(big), "--store", str(store))
    assert again.returncode == 0, again.stderr


def test_ctrl_c_during_a_check_exits_130(big):
    done = _interrupt_after(["check", str(big)], 2.0)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_second_load_waits_for_the_first_and_a_reader_can_give_up(world, big, tmp_path):
    store = tmp_path / "s.duckdb"
    first = subprocess.Popen([sys.executable, "-m", "ctrlaudit", "load", str(big), "--store", str(store)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    impatient = ctrlaudit("state", "--store", str(store), env={"CTRLAUDIT_LOCK_WAIT": "0"})
    assert impatient.returncode == 2 and "the store is in use" in impatient.stderr
    assert len(impatient.stderr.strip().splitlines()) == 1
    second = ctrlaudit("load", str(big), "--store", str(store))  # waits (CTRLAUDIT_LOCK_WAIT, 30 s) for the first
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert second.returncode == 0, second.stderr
    assert "added 0" in second.stdout
