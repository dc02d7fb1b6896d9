"""Writers never overwrite: simulate and import refuse an output that already holds another
history (exit 2, naming it), and leave every byte there as it was."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path


def ctrlaudit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctrlaudit", *args], capture_output=True, text=True, timeout=120)


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_simulate_into_an_existing_archive_is_refused(tmp_path):
    out = tmp_path / "arch"
    assert ctrlaudit("simulate", "--out", str(out), "--seed", "3", "--events", "3000").returncode == 0
    before = digest(out)
    done = ctrlaudit("simulate", "--out", str(out), "--seed", "3", "--events", "100")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(out / "sim-3") in done.stderr and "Traceback" not in done.stderr
    assert digest(out) == before


def test_import_into_a_directory_that_is_not_an_intact_archive_is_refused(tmp_path):
    out = tmp_path / "arch"
    (out / "c1").mkdir(parents=True)
    (out / "c1" / "notes.txt").write_text("mine\n")
    meta = tmp_path / "meta" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    before = digest(out)
    done = ctrlaudit("import", "kraft", str(meta), "--out", str(out), "--cluster-id", "c1")
    assert done.returncode == 2 and "refusing to write into it" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert digest(out) == before


def test_verify_names_a_flipped_byte_and_exits_1(tmp_path):
    out = tmp_path / "arch"
    assert ctrlaudit("simulate", "--out", str(out), "--seed", "4", "--events", "2000").returncode == 0
    f = next((out / "sim-4").glob("*.avro"))
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 1
    f.write_bytes(bytes(data))
    done = ctrlaudit("verify", str(out))
    assert done.returncode == 1 and f.name in done.stdout and "Traceback" not in done.stdout + done.stderr
    ok = ctrlaudit("verify", str(tmp_path / "nope"))
    assert ok.returncode == 2 and "Traceback" not in ok.stderr
