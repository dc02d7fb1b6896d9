"""How the CLI turns errors into exit codes and one line on stderr (never a traceback).

Exit codes:
  0  success
  1  the command ran and found something (violations, a history that is not what it claims)
  2  bad input or environment: a user error (arguments, files, settings) or a place that does not
     work (a store that is locked, damaged or read-only; a full disk; a Kafka cluster that does not
     answer; a Spark that does not start). One line naming the place.
  3  a bug (any other exception): one line "internal error: ..."; with CTRLAUDIT_DEBUG=1 the
     exception propagates with its traceback instead.
130  Ctrl-C (SIGINT): one line "interrupted". A load is one transaction, so the store keeps its
     old content.
141  the reader of standard output went away (`ctrlaudit state | head`): no line, as for cat. A command
     whose reader leaves still writes its files (--json FILE, --junit, --out) first: a line for standard
     output that finds no reader is dropped (`reader_may_leave`), the command carries on, and exits 141
     at its end, also when the reader left with lines still in the buffer.

`describe` is the one mapping; `user_errors` (every typer command) and `main_errors` (an entry point
that is not a `ctrlaudit` command: the Spark job, `spark-submit ctrlaudit/spark_job.py`) both use it, so a new kind of error is added once.
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import duckdb
import typer
from rich.console import Console

from schemas.errors import ContractError
# the exit codes are the one table of schemas/errors.py, given on to the commands from here
from schemas.errors import (EXIT_BAD_INPUT as EXIT_BAD_INPUT, EXIT_BROKEN_PIPE as EXIT_BROKEN_PIPE,
                            EXIT_FOUND as EXIT_FOUND, EXIT_INTERNAL as EXIT_INTERNAL,
                            EXIT_INTERRUPTED as EXIT_INTERRUPTED, EXIT_OK as EXIT_OK)
from replay.errors import ChainFork
from schemas.archive.proofs import ProofFailed
from schemas.archive.verified import ArchiveProblem

P = ParamSpec("P")
R = TypeVar("R")

PREFIX = "ctrlaudit: error: "  # the start of every error line, whichever command or entry point prints it


class UsageError(ContractError):
    """Arguments that do not make sense together, or name something that does not exist."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """The message as one line: a control character (a newline, a terminal escape) that a name from
    untrusted input carries into it is shown escaped (\\n, \\x1b)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    print(PREFIX + one_line(message), file=sys.stderr)
    return typer.Exit(code)


def debugging() -> bool:
    return os.environ.get("CTRLAUDIT_DEBUG", "").strip() not in ("", "0")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _origin(exc: BaseException) -> str:
    """The top-level package that raised `exc`'s type ("confluent_kafka", "py4j", ...), without
    importing those packages here (they are heavy and optional)."""
    return type(exc).__module__.split(".", 1)[0]


# Modules of the optional extras (pyproject.toml): offline forensics needs none of them.
# (tests/ctrlaudit/test_exit_codes.py checks this table against every import of the product.)
EXTRAS = {
    "faust": "capture", "aiokafka": "capture", "confluent_kafka": "capture", "kafka": "capture",
    "cryptography": "capture", "kazoo": "capture", "pyspark": "spark", "py4j": "spark",
}


def describe(exc: BaseException, store: object = None) -> tuple[str, int] | None:
    """(one line, exit code) for an error a user can cause or fix; None for a bug.

    `store`: the store path of the command, named in a DuckDB error raised past opening the store
    (replay.opening names the errors of opening it)."""
    if isinstance(exc, (ArchiveProblem, ChainFork, ProofFailed)):  # the history is not what it claims: a finding
        return str(exc), EXIT_FOUND
    if isinstance(exc, ContractError):
        return str(exc), EXIT_BAD_INPUT
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in EXTRAS:
        module = (exc.name or "").split(".")[0]
        return (f"this command needs the '{EXTRAS[module]}' extra ({module} is not installed): "
                f"pip install 'ctrlaudit[{EXTRAS[module]}]'"), EXIT_BAD_INPUT
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(exc, OSError):  # on the user's paths: missing, a directory, read-only, full disk, ...
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or _first_line(exc)}", EXIT_BAD_INPUT
    if isinstance(exc, duckdb.InterruptException) or (
            isinstance(exc, RuntimeError) and "interrupted" in str(exc).lower()):
        return "interrupted", EXIT_INTERRUPTED  # DuckDB turns Ctrl-C inside a query into these
    if isinstance(exc, duckdb.Error):
        return f"{store or 'store'}: {_first_line(exc)}", EXIT_BAD_INPUT
    origin = _origin(exc)
    if origin in ("confluent_kafka", "kafka"):  # a cluster that went away mid-command, a refused request
        return f"Kafka: {_first_line(exc)}", EXIT_BAD_INPUT
    if origin == "kazoo":  # a ZooKeeper that went away mid-command (capture --zookeeper)
        return f"ZooKeeper: {_first_line(exc)}", EXIT_BAD_INPUT
    if origin in ("py4j", "pyspark"):  # a JVM that did not start or died
        return f"Spark: {_first_line(exc)}", EXIT_BAD_INPUT
    return None


def internal(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {_first_line(exc)} (set CTRLAUDIT_DEBUG=1 for the traceback)"


class _Reader:
    """Whether the reader of standard output went away during the command that runs."""

    gone = False


def reader_went_away() -> int:
    """What a command does when the reader of standard output went away: no line, exit 141. Standard
    output is pointed at /dev/null, as Python's own flush at exit would fail again."""
    _Reader.gone = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """Around a write to standard output that files are still to follow (a command's lines before its
    --json FILE): when the reader went away, the write is dropped and the command carries on, to exit
    141 once its files are written (`exit_code`)."""
    try:
        yield
    except BrokenPipeError:
        reader_went_away()


def exit_code(code: int) -> int:
    """A finished command's exit code: 141 instead of 0 or 1 when the reader of standard output went away
    during it, or left with lines still in the buffer (flushed here, not at Python's exit)."""
    if code not in (EXIT_OK, EXIT_FOUND):
        return code  # an error, said in its own line
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        reader_went_away()
    return EXIT_BROKEN_PIPE if _Reader.gone else code


def _raise_broken_pipe(self: Console) -> None:  # Console.on_broken_pipe, replaced below
    raise BrokenPipeError(32, "the reader of standard output went away")


def let_rich_raise_broken_pipe() -> None:
    """rich's Console answers a broken pipe with SystemExit(1) (Console.on_broken_pipe, which rich
    documents as the method to override): here it raises BrokenPipeError, so that a command can write its
    files before it stops and user_errors/main_errors exit 141 as for any other write."""
    # mypy refuses any assignment to a method; replacing this one is what rich documents
    Console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Every command goes through this: see the module doc for what becomes which exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _Reader.gone = False
        try:
            result = fn(*args, **kwargs)
        except typer.Exit as done:
            raise typer.Exit(exit_code(done.exit_code)) from None
        except (typer.Abort, SystemExit):
            raise
        except BrokenPipeError:  # `ctrlaudit state | head`: the reader left; stop quietly, as cat does
            raise typer.Exit(reader_went_away()) from None
        except BaseException as exc:  # noqa: BLE001 - mapped to one line by describe(), or a bug
            known = describe(exc, kwargs.get("store"))
            if known is not None:
                raise fail(*known) from None
            if debugging() or not isinstance(exc, Exception):
                raise  # CTRLAUDIT_DEBUG=1: the traceback; GeneratorExit and the like are not ours
            raise fail(internal(exc), EXIT_INTERNAL) from None
        if exit_code(EXIT_OK) != EXIT_OK:
            raise typer.Exit(EXIT_BROKEN_PIPE)
        return result

    return wrapper


def main_errors(fn: Callable[[], int]) -> int:
    """`user_errors` for an entry point that is not a typer command (`python -m ctrlaudit.spark_job`, which
    spark-submit runs): run `fn`, return its exit code, or print the one error line and return the code
    `describe` gives."""
    let_rich_raise_broken_pipe()
    _Reader.gone = False
    try:
        return exit_code(fn())
    except SystemExit:
        raise
    except BrokenPipeError:
        return reader_went_away()
    except BaseException as exc:  # noqa: BLE001 - as user_errors
        known = describe(exc)
        if known is None and (debugging() or not isinstance(exc, Exception)):
            raise
        message, code = known or (internal(exc), EXIT_INTERNAL)
        print(PREFIX + one_line(message), file=sys.stderr)
        return code
