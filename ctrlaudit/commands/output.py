"""What every command prints, the same way: times in one format, JSON on standard output or to a file
(`--json -` / `--json FILE`), tables that fit the terminal.

With `--json -` standard output holds the JSON document alone (a script pipes it to jq); the lines a
person reads go to standard error then. Errors are one line "ctrlaudit: error: ..." (ctrlaudit.errors).
"""
from __future__ import annotations

import io
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer


class TimeFormat(str, Enum):
    iso = "iso"
    epoch_ms = "epoch-ms"


TIME_FORMAT = typer.Option(
    None, "--time-format", envvar="CTRLAUDIT_TIME_FORMAT", show_envvar=False,
    help="Times in the output: iso (ISO-8601 UTC with milliseconds, the default) or epoch-ms "
         "(env CTRLAUDIT_TIME_FORMAT).")
JSON_OUT = typer.Option(
    None, "--json",
    help="Write the result as JSON to this file; '-' = standard output (the text lines then go to standard "
         "error).")


def use_time_format(fmt: TimeFormat | None) -> None:
    from schemas import times

    if fmt is not None:
        times.use(fmt.value)


class Output:
    """A command's two outputs: lines for a person, and (with --json) one JSON document."""

    def __init__(self, json_path: Path | None) -> None:
        self.json_path = json_path
        self.json_to_stdout = json_path is not None and str(json_path) == "-"

    def say(self, text: str = "", end: str = "\n") -> None:
        print(text, end=end, file=sys.stderr if self.json_to_stdout else sys.stdout)

    def json(self, body: Any) -> bool:
        """Write the JSON document if --json was given (`body` may be a callable making it): to standard
        output, or to the file by way of a temporary file beside it, so a reader never sees half a
        document. True when it went to standard output (nothing else may go there then)."""
        if self.json_path is None:
            return False
        if callable(body):
            body = body()
        text = (body if isinstance(body, str) else json.dumps(body, sort_keys=True, indent=2, default=str)) + "\n"
        write_json(self.json_path, text)
        return self.json_to_stdout


def write_json(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def print_table(table: Any, console: Any = None) -> None:
    """A rich table on a terminal: at its width, long cells folded onto more lines, never cut with '…'.
    Into a pipe or a file: as wide as the table needs, one line per row."""
    from rich.console import Console

    for column in table.columns:
        column.overflow = "fold"
    console = console or Console()
    if not console.is_terminal:
        width = Console(file=io.StringIO(), width=100_000).measure(table).maximum
        console = Console(file=console.file, width=max(width, len(str(table.title or "")), 20),
                          color_system=console.color_system and None)
    console.print(table)
