"""Peak memory of the CLI on decompression bombs (1 GiB of zeros in a few MB) against the same command on good
input: a KRaft batch (gzip), an archive's deflate block (verify and load) and a rotated broker log (.gz). Each
command runs in its own process; its peak RSS is its own rusage (os.wait4). The bombs are those of
tests/ctrlaudit/test_bombs.py, which asserts the bound (256 MB above good input); this prints the figures.

    .venv/bin/python bench/bombs.py
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ctrlaudit.test_bombs import GIB, bomb_archives, gzip_bomb, measured, raw_batch  # noqa: E402
from tests.ctrlaudit.test_import import metadata_dir  # noqa: E402
from tests.ctrlaudit.test_import_logs import brokers  # noqa: E402


def row(what: str, good: tuple, bad: tuple) -> None:
    print(f"| {what} | {good[3] / 1000:,.0f} MB | {bad[3] / 1000:,.0f} MB | exit {bad[0]} |", flush=True)


def main() -> None:
    print("| input (1 GiB inflated) | peak RSS, good input | peak RSS, bomb | outcome |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-bombs-") as tmp:
        t = Path(tmp)
        good_dir, bad_dir = metadata_dir(t / "good"), metadata_dir(t / "bad")
        seg = bad_dir / "00000000000000000000.log"
        seg.write_bytes(seg.read_bytes() + raw_batch(gzip_bomb(GIB), 1, base_offset=7))
        for native in ("1", "0"):
            env = {"CTRLAUDIT_NATIVE": native}
            good = measured("import", "kraft", str(good_dir), "--out", str(t / f"ga{native}"), env=env)
            bad = measured("import", "kraft", str(bad_dir), "--out", str(t / f"ba{native}"), env=env)
            row(f"KRaft batch, gzip, import kraft ({'native' if native == '1' else 'Python'} decoder)", good, bad)

        dirs = bomb_archives(t / "archives")
        for command in ("verify", "load"):
            good_store = ("--store", str(t / "g.duckdb")) if command == "load" else ()
            bad_store = ("--store", str(t / "b.duckdb")) if command == "load" else ()
            good = measured(command, str(dirs["good"]), *good_store)
            bad = measured(command, str(dirs["bomb"]), *bad_store)
            row(f"archive deflate block, {command}", good, bad)

        ok_nodes, bad_nodes = brokers(t / "logs-good"), brokers(t / "logs-bad")
        (bad_nodes[0] / "logs" / "state-change.log.2026-11-20-02.gz").write_bytes(gzip_bomb(GIB))
        good = measured("import", "logs", *map(str, ok_nodes), "--out", str(t / "lg"))
        bad = measured("import", "logs", *map(str, bad_nodes), "--out", str(t / "lb"))
        row("rotated broker log (.gz), import logs", good, bad)
        shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    main()
