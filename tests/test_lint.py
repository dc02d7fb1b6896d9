"""Lint and types as part of the suite: ruff over the whole tree, mypy --strict over the
packages that hold the contract and the answers (schemas, replay, checks), the decoders and the simulator
that feed them (services.kraft, services.zookeeper, services.simulator), the capture service
(services.capture) and the CLI (ctrlaudit); pyproject.toml [tool.mypy]."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    pytest.importorskip("ruff")
    done = _run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_mypy_strict_is_clean():
    pytest.importorskip("mypy")
    done = _run("mypy")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
    assert "Success: no issues found" in done.stdout
