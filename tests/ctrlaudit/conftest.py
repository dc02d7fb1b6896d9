from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A simulated archive loaded into a store, made once through the CLI itself."""
    root = tmp_path_factory.mktemp("cli")
    runner = CliRunner()
    archive, store = root / "archive", root / "s.duckdb"
    done = runner.invoke(app, ["simulate", "--out", str(archive), "--seed", "3", "--events", "3000",
                               "--topics", "3", "--partitions", "4"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["load", str(archive), "--store", str(store), "--workers", "1"])
    assert done.exit_code == 0, done.output
    return {"archive": archive, "store": store, "root": root}


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def subcommands(command) -> dict:
    """A click group's commands by name, through click's API (the CLI's group loads its commands when asked);
    {} for a command that is not a group (typer vendors click: duck-typed, not isinstance(click.Group))."""
    if not hasattr(command, "list_commands"):
        return {}
    ctx = command.make_context("ctrlaudit", [], resilient_parsing=True)
    return {name: command.get_command(ctx, name) for name in command.list_commands(ctx)}
