"""`ctrlaudit`: the command line. One module per command group under ctrlaudit/commands/.

Exit codes: 0 success, 1 the command ran and found something wrong (violations, a broken chain),
2 bad input or usage (one line on stderr, never a traceback).
"""
from __future__ import annotations

import typer

from ctrlaudit import __version__
from ctrlaudit.commands import capture, check, imports, query, simulate, store

app = typer.Typer(
    name="ctrlaudit",
    help="Event-sourced audit and replay of Apache Kafka controller state.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


for group in (simulate, imports, store, query, check, capture):
    group.register(app)


def main() -> None:
    app()
