"""Progress bars: on a terminal the long commands show one (rich, on standard error); in a pipe or
a CI log they print only their result lines."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from services.simulator import SimConfig, simulate_to_archive


def on_a_terminal(args: list[str]) -> str:
    """Output of `python -m ctrlaudit args` run with a pseudo-terminal as stdout and stderr."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], stdout=follower, stderr=follower,
                            env={**os.environ, "COLUMNS": "100"})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("progress")
    simulate_to_archive(root, SimConfig(seed=9, events=60_000, topics=4, partitions=8), fsync=False)
    return root


@pytest.mark.parametrize("command, label", [("verify", "verifying"), ("load", "loading"),
                                            ("check", "reading and verifying")])
@pytest.mark.slow
def test_a_bar_on_a_terminal_and_none_in_a_pipe(archive, tmp_path, command, label):
    args = [command, str(archive)] + (["--store", str(tmp_path / "s.duckdb")] if command == "load" else [])
    assert label in on_a_terminal(args)
    if command == "load":
        (tmp_path / "s.duckdb").unlink()
    piped = subprocess.run([sys.executable, "-m", "ctrlaudit", *args], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and label not in piped.stdout + piped.stderr
