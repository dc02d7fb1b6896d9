"""The CLI refuses, in one line, a sibling top-level package (schemas, services, replay, checks) that another
distribution shadows, instead of running someone else's code or failing with a traceback deep in a command."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctrlaudit.packages import SIBLINGS, foreign_packages


def test_the_installed_siblings_are_ctrlaudits_own() -> None:
    assert foreign_packages() == []


@pytest.mark.parametrize("name", SIBLINGS)
def test_a_shadowing_package_is_one_error_line(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("raise SystemExit('the foreign package ran')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "ctrlaudit", "--help"], capture_output=True, text=True, env=env,
                          cwd=tmp_path,  # (with -m, the working directory is first on the path)
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctrlaudit: error: ")
    assert f"{name} (from {tmp_path / name})" in lines[0] and "own virtual environment" in lines[0]
