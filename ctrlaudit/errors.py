"""How the CLI turns errors into exit codes: a user error is one line on stderr and exit 2."""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import duckdb
import typer

from schemas.errors import ContractError
from replay.errors import ChainFork
from schemas.verified import ArchiveProblem

P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK, EXIT_FOUND, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(ContractError):
    """Arguments that do not make sense together, or name something that does not exist."""


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    print(f"ctrlaudit: error: {message}", file=sys.stderr)
    return typer.Exit(code)


EXIT_INTERNAL, EXIT_INTERRUPTED = 3, 130


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Every command goes through this: project errors (bad files, bad arguments) and OS errors on
    the user's paths become one line and exit 2; a history that is not what it claims, exit 1;
    Ctrl-C, one line and 130 (a load is one transaction: the store keeps its content). Anything
    else is a bug: one line and exit 3, the traceback only with CTRLAUDIT_DEBUG=1."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except (ArchiveProblem, ChainFork) as exc:  # the history is not what it claims: a finding (exit 1)
            raise fail(str(exc), EXIT_FOUND) from None
        except ContractError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:  # on the user's paths: missing, a directory, read-only, full disk, ...
            where = f"{exc.filename}: " if exc.filename else ""
            raise fail(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            raise fail("interrupted", EXIT_INTERRUPTED) from None
        except RuntimeError as exc:
            if "interrupted" not in str(exc).lower():  # DuckDB turns Ctrl-C inside a query into this
                raise _internal(exc) from None
            raise fail("interrupted", EXIT_INTERRUPTED) from None
        except duckdb.Error as exc:  # the store, past opening it (replay.opening names those)
            raise fail(f"store: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from None
        except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, keep the traceback for debugging
            raise _internal(exc) from None

    return wrapper


def _internal(exc: BaseException) -> BaseException:
    if os.environ.get("CTRLAUDIT_DEBUG", "").strip() not in ("", "0"):
        return exc
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return fail(f"internal error: {type(exc).__name__}: {first} (set CTRLAUDIT_DEBUG=1 for the traceback)",
                EXIT_INTERNAL)
