"""`ctrlaudit`: the command line. One module per command group under ctrlaudit/commands/.

Exit codes: 0 success, 1 the command ran and found something wrong (violations, a broken chain),
2 bad input, usage or environment (one line on stderr, never a traceback), 3 a bug (one line; the traceback
with CTRLAUDIT_DEBUG=1), 130 Ctrl-C. ctrlaudit/errors.py has the details.
"""
from __future__ import annotations

import sys

import typer

from ctrlaudit import __version__
from ctrlaudit.packages import refuse_foreign_packages

refuse_foreign_packages()  # before any command module imports schemas, services, replay or checks

from ctrlaudit.commands import capture, check, export, imports, query, report, simulate, store  # noqa: E402
from ctrlaudit.errors import fail, let_rich_raise_broken_pipe  # noqa: E402
from schemas import entry, times  # noqa: E402

app = typer.Typer(
    name="ctrlaudit",
    help="Event-sourced audit and replay of Apache Kafka controller state.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: flag names never cut, wrapped to the terminal
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


for group in (simulate, imports, store, query, check, capture, report, export):
    group.register(app)

# The click command typer builds from `app`: what `ctrlaudit` runs, and what the documentation's CLI reference
# (mkdocs-click, docs/reference/cli.md) reads every command, argument and flag from.
cli = typer.main.get_command(app)


def main() -> None:
    """Run the app; click's usage errors (a bad option value, a missing option, an unknown command) are one
    line "ctrlaudit: error: ..." with exit 2 like every other user error, not typer's boxed panel
    (schemas/entry.py, as for every entry point)."""
    let_rich_raise_broken_pipe()  # `ctrlaudit check | head`: 141 after the files are written, as every command
    sys.exit(entry.run(app, None, None, "ctrlaudit"))
