"""`ctrlaudit`: the command line. One module per command group under ctrlaudit/commands/.

Exit codes: 0 success, 1 the command ran and found something wrong (violations, a broken chain),
2 bad input, usage or environment (one line on stderr, never a traceback), 3 a bug (one line; the traceback
with CTRLAUDIT_DEBUG=1), 130 Ctrl-C. ctrlaudit/errors.py has the details.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import MutableMapping
from functools import cache
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from ctrlaudit import __version__
from ctrlaudit.packages import refuse_foreign_packages

if TYPE_CHECKING:  # the click that typer vendors (typer._click, typer >= 0.22), which mypy checks against
    from typer._click.core import Command, Context
    from typer._click.formatting import HelpFormatter

refuse_foreign_packages()  # before anything imports schemas, services, replay or checks

from ctrlaudit.errors import fail, let_rich_raise_broken_pipe  # noqa: E402
from schemas import entry, times  # noqa: E402

# Each module of ctrlaudit/commands/, the commands it registers, and their lines in `ctrlaudit --help` (in this
# order). Why not every module imported here: a command module imports what its commands run (DuckDB, pyarrow,
# plotly, the simulator, the capture's settings) at its top, and `ctrlaudit --help` or one command should not
# pay for all of them.
MODULES: dict[str, dict[str, str]] = {
    "simulate": {"simulate": "Simulate a controller history into an archive."},
    "store": {"load": "Load archive files into the DuckDB store."},
    "query": {"state": "The controller's view as of a point.", "diff": "What changed between two points.",
              "timeline": "Every change of one partition.", "explain": "Why one partition change happened."},
    "check": {"check": "Check the invariant catalog over a history."},
    "capture": {"capture": "Capture a live cluster (KRaft log or ZooKeeper).",
                "archive": "Keep the events topic as hourly Avro files.",
                "verify": "Verify an archive's hash chain and manifests."},
    "report": {"report": "A self-contained HTML incident report."},
    "export": {"export": "Write the events table (Parquet, CSV, JSON)."},
    "imports": {"import": "Turn controller state from elsewhere into an archive."},
    "keys": {"keygen": "Create a key to sign archives with."},
    "proofs": {"prove": "Prove an event, or the log's growth, to anyone.",
               "verify-proof": "Check a proof with public keys alone."},
    "witness": {"witness": "Co-sign checkpoints that extend the last one."},
    "who": {"who": "Who asked for each change, from the request logs."},
}
SHORT_HELP = {command: short for commands in MODULES.values() for command, short in commands.items()}
MODULE_OF = {command: module for module, commands in MODULES.items() for command in commands}
SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,  # click's plain help: flag names never cut, wrapped to the terminal
}


@cache
def _commands_of(module: str) -> MutableMapping[str, Command]:
    """The click commands one module of ctrlaudit/commands/ registers (built once per process)."""
    group = typer.Typer(**SETTINGS)
    importlib.import_module(f"ctrlaudit.commands.{module}").register(group)
    built = typer.main.get_group(group).commands
    for name, command in built.items():
        command.short_help = SHORT_HELP[name]
    return built


class LazyGroup(TyperGroup):
    """click's lazily loading group: a command's module is imported when that command is looked up."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(SHORT_HELP)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        return _commands_of(MODULE_OF[cmd_name])[cmd_name] if cmd_name in MODULE_OF else None

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        with formatter.section("Commands"):  # from the table: the listing imports no command module
            formatter.write_dl(list(SHORT_HELP.items()))


app = typer.Typer(
    name="ctrlaudit",
    help="Event-sourced audit and replay of Apache Kafka controller state.",
    no_args_is_help=True,
    cls=LazyGroup,
    **SETTINGS,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"ctrlaudit {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Capture, replay and check the controller decisions of a Kafka cluster."""
    try:  # each invocation starts from the default (the tests run many in one process)
        times.use(times.default_format())
    except times.TimeError as exc:
        raise fail(f"CTRLAUDIT_TIME_FORMAT: {exc}") from None


# The click command typer builds from `app`: what `ctrlaudit` runs, and what the documentation's CLI reference
# (mkdocs-click, docs/reference/cli.md) reads every command, argument and flag from.
cli = typer.main.get_command(app)


def main() -> None:
    """Run the app; click's usage errors (a bad option value, a missing option, an unknown command) are one
    line "ctrlaudit: error: ..." with exit 2 like every other user error, not typer's boxed panel
    (schemas/entry.py, as for every entry point)."""
    let_rich_raise_broken_pipe()  # `ctrlaudit check | head`: 141 after the files are written, as every command
    sys.exit(entry.run(app, None, None, "ctrlaudit"))
