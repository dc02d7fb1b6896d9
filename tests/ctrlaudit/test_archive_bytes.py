"""Golden bytes: the same input makes the same archive, byte for byte, whatever the code inside is moved to.

Every writer is covered: simulate (KRaft- and ZooKeeper-shaped), import kraft, import zk, import logs. The
imports stamp each event with the time they ran (capture_time_ms), so the clock is stopped at one instant.
A digest that changes is a change of the archive format or of what an input is made into: say which in the
commit that updates it (bench/side_by_side.py shows the two commits' archives side by side). Schema v2 changed them
all (each file's header carries the writer schema, each manifest its version and fingerprint) and no event: the
chain heads are v1's (test_simulate)."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from tests.ctrlaudit.conftest import run
from tests.ctrlaudit.test_import import metadata_dir
from tests.ctrlaudit.test_import_logs import brokers

ZK_LOG = Path(__file__).parents[1] / "services" / "zookeeper" / "data" / "log.1"


@pytest.fixture(autouse=True)
def stopped_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    monkeypatch.setattr(time, "time_ns", lambda: 1_800_000_000 * 10**9)


def digest(out: Path) -> str:
    """One sha256 over every file's name and bytes under `out` (archive files and their manifests)."""
    h = hashlib.sha256()
    for p in sorted(q for q in out.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(out)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def written(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "archive"
    done = run(*args, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert list(out.rglob("*.avro")), done.output
    return digest(out)


def test_simulate(tmp_path: Path) -> None:
    assert written(tmp_path, "simulate", "--seed", "7", "--events", "3000") == (
        "c7f6fdd1b2eaacedbcaedc0a718520083ca50685c2893f52e962ee2d63260094")
    # the chain head schema v1 made of this history: the events' bodies did not change with v2
    heads = [json.loads(m.read_text())["chain_head_hash"] for m in sorted((tmp_path / "archive").rglob("*.manifest.json"))]
    assert heads[-1] == "531abe6e9849dd298aa6bb860ed248eab731030292f41f8b5a8f83375a48a3ad"


def test_simulate_zookeeper(tmp_path: Path) -> None:
    assert written(tmp_path, "simulate", "--seed", "7", "--events", "3000", "--zookeeper") == (
        "df3b51acf4035c3bd4f99390089706aa71c2c2a1987808a4b63d988ef6c52edd")


def test_import_kraft(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path, later=((3, [3]), (1, [1, 3])))
    assert written(tmp_path, "import", "kraft", str(d)) == (
        "a16fd41681d906a0893c50d59da02ab2699b9edc62928cb5b6172ede0fddb59a")


def test_import_zk(tmp_path: Path) -> None:
    assert written(tmp_path, "import", "zk", str(ZK_LOG)) == (
        "f7d1ddcc0fe17c3870d775ce53903617006d2e3d2f184c53b867f7c32094e795")


def test_import_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an event read from a broker's log names the file as it was given, with its line: given relative here
    monkeypatch.chdir(tmp_path)
    assert written(tmp_path, "import", "logs", *(str(p.relative_to(tmp_path)) for p in brokers(tmp_path))) == (
        "f79f26838a97d7f1f58dc05eef1e9450c516c69ca60a53df8a68f99ddbfaf680")
