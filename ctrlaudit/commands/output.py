"""What every command prints, the same way: times in one format, JSON on standard output or to a file
(`--json -` / `--json FILE`), tables that fit the terminal, and the one rule for every file a command
writes (`--json`, `--out`, `--junit`, `--csv`, `--truth`).

With `--json -` standard output holds the JSON document alone (a script pipes it to jq); the lines a
person reads go to standard error then. Errors are one line "ctrlaudit: error: ..." (ctrlaudit.errors).

Output files (`refuse_outputs`, checked before the command does any work, so a refused output leaves
nothing written): '-' is standard output, for one output at most; an existing file is replaced only with
`--force`; never an input of the command (its store, anything under an archive it reads, the report it
reads: by resolved path and by inode, so a hard link counts), never a symbolic link, a FIFO, a device or
a directory (ctrlaudit writes regular files; `-` and a shell redirection reach anything else), and never
two outputs of one command to one file. A file is written beside its path and renamed into place
(`into_place`), so a reader never sees half of it and a failed command leaves the old file as it was.
A reader of standard output that goes away (`| head`) costs no file: the command writes them all, then
exits 141 (ctrlaudit.errors).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import secrets
import sys
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from ctrlaudit.errors import UsageError, reader_may_leave
from schemas import times

if TYPE_CHECKING:
    from rich.table import Table


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
FORCE = typer.Option(False, "--force", help="Replace an output file that exists (never an input of the command, a "
                                            "link, a FIFO or a device).")


def use_time_format(fmt: TimeFormat | None) -> None:
    if fmt is not None:
        times.use(fmt.value)


class Output:
    """A command's two outputs: lines for a person, and (with --json) one JSON document."""

    def __init__(self, json_path: Path | None, stdout_taken: bool = False) -> None:
        """`stdout_taken`: another output of the command went to standard output (`report --out -`), so the
        lines for a person go to standard error."""
        self.json_path = json_path
        self.json_to_stdout = is_stdout(json_path)
        self.stdout_taken = stdout_taken or self.json_to_stdout

    def say(self, text: str = "", end: str = "\n") -> None:
        if self.stdout_taken:
            print(text, end=end, file=sys.stderr)
            return
        with reader_may_leave():  # a reader gone costs no file still to be written
            print(text, end=end)

    def json(self, body: object) -> bool:
        """Write the JSON document if --json was given (`body` may be a callable making it): to standard
        output, or to the file by way of a temporary file beside it, so a reader never sees half a
        document. True when it went to standard output (nothing else may go there then)."""
        if self.json_path is None:
            return False
        if callable(body):
            body = body()
        text = (body if isinstance(body, str) else json.dumps(body, sort_keys=True, indent=2, default=str)) + "\n"
        write_text(self.json_path, text)
        return self.json_to_stdout


def write_text(path: str | Path, text: str) -> None:
    """Text to standard output ('-') or into the file (`into_place`)."""
    if is_stdout(path):
        with reader_may_leave():
            sys.stdout.write(text)
            sys.stdout.flush()
        return
    with into_place(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def is_stdout(path: str | Path | None) -> bool:
    return path is not None and str(path) == "-"


@contextlib.contextmanager
def into_place(path: str | Path) -> Iterator[Path]:
    """A new temporary file beside `path` to write (its own name: never an existing `<name>.part` of
    someone else's), renamed over `path` when the block ends; removed when it raises. Only ever over a
    regular file: a link, a FIFO, a device or a directory there is refused here too (for callers that do
    not go through `refuse_outputs`: a rename would replace a device node by a file)."""
    path = Path(path)
    _refuse_not_regular(path, str(path))
    while True:  # O_EXCL: a name of its own; mode 0o666 less the umask, as a file the shell makes
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        _refuse_not_regular(path, str(path))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def copy_to_stdout(path: str | Path) -> None:
    """A file's bytes to standard output (for a writer that can only write to a path: DuckDB's COPY)."""
    sys.stdout.flush()
    with open(path, "rb") as src:
        shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
    sys.stdout.buffer.flush()


_NOT_REGULAR = ((stat.S_ISLNK, "a symbolic link"),
                (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _identity(path: Path) -> tuple[str, int, int] | tuple[str, str]:
    """What makes two paths one file: the inode when it exists (hard links, other spellings), else the
    resolved path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.realpath(path))


def _is_input(path: Path, given: Path) -> bool:
    """Is `path` the input `given`, or inside it (a directory the command reads)?"""
    target, source = Path(os.path.realpath(path)), Path(os.path.realpath(given))
    if target == source or target.is_relative_to(source) and source.is_dir():
        return True
    try:
        return os.path.samefile(path, given)
    except OSError:
        return False


def refuse_outputs(outputs: Mapping[str, str | Path | None], *, force: bool = False,
                   inputs: Iterable[str | Path | None] = (), directories: Mapping[str, Path] | None = None) -> None:
    """UsageError (one line naming the path and the option) for an output the command must not write; see
    the module doc. `outputs`: option -> path as given (None: not given); `inputs`: every file or directory
    the command reads (URIs such as hdfs://... are not local files and are left out); `directories`: option ->
    an output directory (an archive the command writes), which must not be, or be inside, an input either, and
    which no file output may be in."""
    read = [Path(p) for p in inputs if p is not None and "://" not in str(p)]
    for option, directory in (directories or {}).items():
        for source in read:
            if _is_input(directory, source):
                raise UsageError(f"{directory} ({option}): an input of this command ({source}); an archive is "
                                 "never written into what the command reads")
    given = {option: Path(p) for option, p in outputs.items() if p is not None}
    to_stdout = [option for option, p in given.items() if is_stdout(p)]
    if len(to_stdout) > 1:
        raise UsageError(f"only one of {', '.join(to_stdout)} can go to standard output ('-')")
    seen: dict[tuple[str, int, int] | tuple[str, str], str] = {}
    for option, path in given.items():
        if is_stdout(path):
            continue
        where = f"{path} ({option})"
        same = seen.setdefault(_identity(path), option)
        if same != option:
            raise UsageError(f"{where}: also given to {same}; each output needs a file of its own")
        for source in read:
            if _is_input(path, source):
                raise UsageError(f"{where}: an input of this command ({source}); it is never written over")
        for other, directory in (directories or {}).items():
            if _is_input(path, directory):
                raise UsageError(f"{where}: inside the archive directory {directory} ({other}), which holds "
                                 "archive files only")
        if not path.parent.is_dir():
            raise UsageError(f"{where}: no such directory {path.parent}")
        if _refuse_not_regular(path, where) and not force:
            raise UsageError(f"{where}: exists; give --force to replace it")


def _refuse_not_regular(path: Path, where: str) -> bool:
    """True when `path` is an existing regular file, False when nothing is there; UsageError for anything
    else."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise UsageError(f"{where}: {what}, not a regular file; give a file's path, or '-' for standard output")
    return True


def print_table(table: Table, console: Console | None = None) -> None:
    """A rich table on a terminal: at its width, long cells folded onto more lines, never cut with '…'.
    Into a pipe or a file: as wide as the table needs, one line per row."""
    for column in table.columns:
        column.overflow = "fold"
    console = console or Console()
    if not console.is_terminal:
        width = Console(file=io.StringIO(), width=100_000).measure(table).maximum
        console = Console(file=console.file, width=max(width, len(str(table.title or "")), 20),
                          color_system=None)  # no colours into a pipe or a file
    console.print(table)


def store_files(store: str | Path) -> list[Path]:
    """A DuckDB store as an input: its file and its write-ahead log."""
    return [Path(store), Path(f"{store}.wal")]


def check_inputs(inputs: Iterable[str]) -> list[Path]:
    """What `check` reads: archive files and directories, or a store (with its write-ahead log)."""
    return [p for i in inputs for p in (store_files(i) if i.endswith(".duckdb") else [Path(i)])]
