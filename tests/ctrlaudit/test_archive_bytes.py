"""Golden bytes: the same input makes the same archive, byte for byte, whatever the code inside is moved to.

Every writer is covered: simulate (KRaft- and ZooKeeper-shaped), import kraft, import zk, import logs. The
imports stamp each event with the time they ran (capture_time_ms), so the clock is stopped at one instant.
A digest that changes is a change of the archive format or of what an input is made into: say which in the
commit that updates it (bench/side_by_side.py shows the two commits' archives side by side)."""
from __future__ import annotations

import hashlib
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
        "37207933be0aded37bb8f242f708765d8035d25023aca718b3f46a10c5c68651")


def test_simulate_zookeeper(tmp_path: Path) -> None:
    assert written(tmp_path, "simulate", "--seed", "7", "--events", "3000", "--zookeeper") == (
        "46d6095848d5e1333db632cf08071644d05df04f5d8b57e4ed8f10703e5b6150")


def test_import_kraft(tmp_path: Path) -> None:
    d = metadata_dir(tmp_path, later=((3, [3]), (1, [1, 3])))
    assert written(tmp_path, "import", "kraft", str(d)) == (
        "acbded0a91d2f49689abded3a01e16fd448a83274338a92007b8711362c46fe8")


def test_import_zk(tmp_path: Path) -> None:
    assert written(tmp_path, "import", "zk", str(ZK_LOG)) == (
        "9fb2fc1b1fe267ae7452fed4d4de68d06c4328f3070d8c6f8b0ca7c6db52bddd")


def test_import_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an event read from a broker's log names the file as it was given, with its line: given relative here
    monkeypatch.chdir(tmp_path)
    assert written(tmp_path, "import", "logs", *(str(p.relative_to(tmp_path)) for p in brokers(tmp_path))) == (
        "5703adb877bce6c7f4b445f20a17657dbc641724f63f1d70f564da877f942dbd")
