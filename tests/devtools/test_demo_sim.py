"""`make demo-sim` end to end: its own folder under demo-out/, the previous run replaced and said so, another
demo's folder untouched, and the commands it hands over run as printed."""
from __future__ import annotations

from pathlib import Path

import pytest

from devtools import demo
from tests.devtools.handover import handed_over, run_handed_over

pytestmark = pytest.mark.slow


def test_the_demo_writes_its_own_folder_and_hands_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    other = tmp_path / "demo-out" / "kraft" / "demo.duckdb"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"another demo's store")
    demo.main()
    printed = capsys.readouterr().out
    out = tmp_path / "demo-out" / "sim"
    assert {"archive", "demo.duckdb", "check.json", "incident.html", "demo.key", "demo.key.pub",
            "seq-2500.proof"} <= {p.name for p in out.iterdir()}
    assert "seq 0..4999 signed" in printed
    assert "seq-2500.proof: OK: event" in printed
    assert other.read_bytes() == b"another demo's store"
    assert "replacing" not in printed
    assert "Everything is in demo-out/sim/. Try next (first `. .venv/bin/activate`" in printed
    commands = handed_over(printed)
    assert commands[0] == "export CTRLAUDIT_STORE=demo-out/sim/demo.duckdb" and 4 <= len(commands) - 1 <= 5
    assert run_handed_over(commands, tmp_path) == ["timeline", "explain", "state", "check", "verify-proof"]
    assert (out / "check.xml").is_file()

    demo.main()
    assert "replacing demo-out/sim/ (this demo's previous run)" in capsys.readouterr().out
    assert other.read_bytes() == b"another demo's store"
