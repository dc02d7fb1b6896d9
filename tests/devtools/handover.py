"""Running the commands a demo hands over, as a user pastes them into a shell (each its own process)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def handed_over(printed: str) -> list[str]:
    """The commands a demo printed after "Try next", one per indented line."""
    assert "Try next" in printed, printed[-2000:]
    return [line.strip() for line in printed.split("Try next", 1)[1].splitlines()[1:] if line.startswith("  ")]


def run_handed_over(commands: list[str], cwd: Path) -> list[str]:
    """Run each command (an `export` sets the environment of the next ones); returns the subcommands run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CTRLAUDIT_STORE", None)
    ran = []
    for command in commands:
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            env[name] = shlex.split(value)[0]
            continue
        args = shlex.split(command)
        assert args[0] == "ctrlaudit", command
        done = subprocess.run([sys.executable, "-m", "ctrlaudit", *args[1:]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode in ((0, 1) if args[1] == "check" else (0,)), f"{command}\n{done.stderr[-2000:]}"
        assert done.stdout.strip(), command
        ran.append(args[1])
    return ran
